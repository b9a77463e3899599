//! The checkpoint area's layout on NVM and the commit record's payload, byte by byte.
//!
//! Checkpoint format version [`CKPT_FORMAT`] (3). Offsets are relative to the start of
//! the kernel area (`Superblock::kernel_area`); all integers are little-endian; all
//! checksums are CRC-32/ISO-HDLC (`amber_format::crc32`).
//!
//! | offset  | size            | what                                                   |
//! |---------|-----------------|--------------------------------------------------------|
//! | 0x0000  | 2 x 76          | commit record: `DualRecord<64>` ([`CommitPayload`])    |
//! | 0x0098  | 8               | format marker: [`FORMATTING`] while `Manager::format` runs, else zero |
//! | 0x00A0  | 96              | reserved, zero                                         |
//! | 0x0100  | 128 x 32        | ORoot table: ORoot i = item i, two 16-byte slot descriptors (`desc`) |
//! | 0x1100  | rest, in blocks | extent space: [`BLOCK`]-byte blocks, buddy-allocated, at most [`MAX_BLOCKS`] |
//!
//! An ORoot (32 bytes at `0x100 + 32 * i`) is slot 0's descriptor followed by slot 1's.
//! The item's identity is its index; it is not stored but covered by each copy's
//! checksum, so a descriptor in the wrong ORoot fails it. Its kind is kept per copy, in
//! the descriptor. An extent is a power-of-two run of blocks aligned to its size (the
//! buddy invariant), numbered from the start of the extent space. Blocks past
//! [`MAX_BLOCKS`] (an area above 16 MiB) are not used: a descriptor cannot name them.
//!
//! The format marker is eight bytes, not one, so that no single corrupted byte can
//! turn a checkpoint into "a format was cut short" (which recovery answers by
//! formatting): from zero, all eight bytes must change. Eight bytes that are neither
//! zero nor the marker are a damaged marker (a marker store torn by a power cut, or
//! corruption), which recovery reports and ignores: a torn marker store at the start
//! of a format left the old area whole, one at its end left the new one whole.
//!
//! Format history: 1 had 32-byte descriptors with their own CRC; 2 halved them (one
//! CRC over descriptor and data) and had a one-byte marker at 0x78, tombstones for
//! deleted items and a 48-byte commit payload; 3 adds the live-item bitmap to the
//! commit record (deletion is a cleared bit, so tombstones are gone), twin copies
//! (`desc`), and the eight-byte marker. A format 2 area is refused by name
//! ([`CkptError::FormatMismatch`]); there is no converter (`--format` starts afresh).
//!
//! This file must never write to NVM: it only computes where things are and encodes
//! or decodes the commit payload.

use crate::error::CkptError;
use crate::set::ItemSet;
use crate::{NvmOffset, Version, MAX_ITEMS, META_LEN};
use amber_format::{crc32, DualRecord, Region};

/// The checkpoint area's format version.
pub const CKPT_FORMAT: u16 = 3;
/// The format before this one, recognised so that its areas are refused by name.
pub const CKPT_FORMAT_2: u16 = 2;
/// Tag in every commit record: `"CK"`.
pub const CKPT_TAG: [u8; 2] = *b"CK";
/// Bytes of the commit record's payload.
pub const COMMIT_PAYLOAD: usize = 64;
/// The commit record's type.
pub type CommitRecord = DualRecord<COMMIT_PAYLOAD>;
/// Bytes of one commit record slot.
pub const COMMIT_SLOT_LEN: usize = CommitRecord::SLOT_LEN;
/// Where the format marker lies, relative to the area.
pub const FORMAT_MARKER_OFFSET: u32 = 0x98;
/// Bytes of the format marker.
pub const FORMAT_MARKER_LEN: usize = 8;
/// The format marker while a format is in progress ("Amber format": all eight bytes
/// differ from zero, so no single corrupted byte makes it).
pub const FORMATTING: [u8; FORMAT_MARKER_LEN] = *b"AMBERFMT";
/// Where the ORoot table starts, relative to the area.
pub const OROOT_OFFSET: u32 = 0x100;
/// Bytes of one slot descriptor.
pub const DESC_LEN: usize = 16;
/// Bytes of one ORoot (two descriptors).
pub const OROOT_LEN: usize = 2 * DESC_LEN;
/// Bytes of the whole ORoot table.
pub const OROOT_TABLE_LEN: usize = MAX_ITEMS * OROOT_LEN;
/// Where the extent space starts, relative to the area.
pub const EXTENT_OFFSET: u32 = OROOT_OFFSET + OROOT_TABLE_LEN as u32;
/// Bytes of one allocation block.
pub const BLOCK: u32 = 32;
/// Bits of a descriptor that hold a copy's length, and its extent's first block.
pub const LEN_BITS: u32 = 19;
/// The longest item a copy can hold: 512 KiB - 1 (more than the ESP32-C3's SRAM).
pub const MAX_DATA_LEN: u32 = (1 << LEN_BITS) - 1;
/// The most blocks the extent space uses: 16 MiB.
pub const MAX_BLOCKS: u32 = 1 << LEN_BITS;
/// The highest version a descriptor can hold (48 bits). At one checkpoint every 20 us,
/// back to back, it lasts 178 years; at the default 10 ms, 89,000 years. The manager
/// refuses to commit past it ([`CkptError::VersionsExhausted`]).
pub const MAX_VERSION: u64 = (1 << 48) - 1;

const _: () = assert!(2 * COMMIT_SLOT_LEN as u32 <= FORMAT_MARKER_OFFSET);
const _: () = assert!(FORMAT_MARKER_OFFSET + FORMAT_MARKER_LEN as u32 <= OROOT_OFFSET);
const _: () = assert!(EXTENT_OFFSET.is_multiple_of(BLOCK));
const _: () = assert!(MAX_ITEMS == 128, "the commit record's bitmaps are 16 bytes");

/// A block number inside the extent space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockNo(pub u32);

/// A run of blocks holding one copy's data: `blocks` is 0 (empty data) or a power of
/// two, and `first` is a multiple of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Extent {
    pub first: BlockNo,
    pub blocks: u32,
}

impl Extent {
    /// No data.
    pub const NONE: Extent = Extent {
        first: BlockNo(0),
        blocks: 0,
    };

    /// Capacity in bytes.
    pub fn bytes(&self) -> u64 {
        self.blocks as u64 * BLOCK as u64
    }
}

/// Blocks a copy of `len` bytes occupies: the buddy size class (0 for no data).
pub fn blocks_for(len: usize) -> u64 {
    if len == 0 {
        0
    } else {
        (len as u64).div_ceil(BLOCK as u64).next_power_of_two()
    }
}

/// Where everything lies for one concrete area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub area: Region,
    /// Blocks in the extent space (at most [`MAX_BLOCKS`]).
    pub blocks: u32,
    /// [`Layout::check`], computed once.
    check: u32,
}

impl Layout {
    /// Smallest area this format accepts: the table plus one block.
    pub const MIN_LEN: u32 = EXTENT_OFFSET + BLOCK;

    pub fn new(area: Region) -> Result<Layout, CkptError> {
        if area.len < Self::MIN_LEN || area.end().is_none() {
            return Err(CkptError::AreaTooSmall {
                len: area.len,
                need: Self::MIN_LEN,
            });
        }
        Ok(Layout {
            area,
            blocks: ((area.len - EXTENT_OFFSET) / BLOCK).min(MAX_BLOCKS),
            check: Self::compute_check(area),
        })
    }

    pub fn commit_record(&self) -> CommitRecord {
        DualRecord {
            base: self.area.offset,
        }
    }

    /// Where commit slot `slot` starts.
    pub fn commit_slot(&self, slot: u32) -> NvmOffset {
        NvmOffset(self.area.offset + slot * COMMIT_SLOT_LEN as u32)
    }

    pub fn format_marker(&self) -> NvmOffset {
        NvmOffset(self.area.offset + FORMAT_MARKER_OFFSET)
    }

    pub fn oroot_table(&self) -> NvmOffset {
        NvmOffset(self.area.offset + OROOT_OFFSET)
    }

    /// Where the descriptor of `slot` of item `id` lies.
    #[inline]
    pub fn desc(&self, id: u16, slot: u8) -> NvmOffset {
        NvmOffset(
            self.area.offset
                + OROOT_OFFSET
                + id as u32 * OROOT_LEN as u32
                + slot as u32 * DESC_LEN as u32,
        )
    }

    /// Where block `b` lies.
    #[inline]
    pub fn block(&self, b: BlockNo) -> NvmOffset {
        NvmOffset(self.area.offset + EXTENT_OFFSET + b.0 * BLOCK)
    }

    /// Whether `e` is a well-formed extent inside the extent space.
    pub fn extent_ok(&self, e: Extent) -> bool {
        if e.blocks == 0 {
            return e.first.0 == 0;
        }
        e.blocks.is_power_of_two()
            && e.first.0.is_multiple_of(e.blocks)
            && (e.first.0 as u64 + e.blocks as u64) <= self.blocks as u64
    }

    /// The value that ties a commit record to this layout.
    pub fn check(&self) -> u32 {
        self.check
    }

    fn compute_check(area: Region) -> u32 {
        let mut b = [0u8; 24];
        let fields = [
            area.offset,
            area.len,
            MAX_ITEMS as u32,
            BLOCK,
            OROOT_OFFSET,
            EXTENT_OFFSET,
        ];
        for (i, v) in fields.iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        crc32(&b)
    }
}

/// The commit record's payload.
///
/// | offset | size | field                                                          |
/// |--------|------|----------------------------------------------------------------|
/// | 0      | 8    | committed version G                                            |
/// | 8      | 16   | kernel metadata of version G (opaque)                          |
/// | 24     | 16   | designated-slot bitmap: bit i (byte i/8, bit i%8) = the slot of item i holding its copy at G |
/// | 40     | 16   | live bitmap: bit i set = item i exists at G (its designated copy is part of G) |
/// | 56     | 2    | tag `"CK"`                                                     |
/// | 58     | 2    | checkpoint format version (3)                                  |
/// | 60     | 4    | layout check: CRC-32 of area offset, area length, MAX_ITEMS, BLOCK, ORoot and extent offsets (u32 each) |
///
/// The `DualRecord` around it adds a sequence number and a CRC (see `amber_format`).
/// The designated bit of an item that is not live is kept as it was, so that an item
/// deleted at G still names the slot of its copy at G-1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitPayload {
    pub version: Version,
    pub meta: [u8; META_LEN],
    pub designated: ItemSet,
    pub live: ItemSet,
}

impl CommitPayload {
    /// Version 0 with nothing live: a freshly formatted area.
    pub const EMPTY: CommitPayload = CommitPayload {
        version: Version(0),
        meta: [0; META_LEN],
        designated: ItemSet::EMPTY,
        live: ItemSet::EMPTY,
    };

    pub fn encode(&self, layout: &Layout) -> [u8; COMMIT_PAYLOAD] {
        let mut b = [0u8; COMMIT_PAYLOAD];
        b[0..8].copy_from_slice(&self.version.0.to_le_bytes());
        b[8..24].copy_from_slice(&self.meta);
        b[24..40].copy_from_slice(&self.designated.to_le_bytes());
        b[40..56].copy_from_slice(&self.live.to_le_bytes());
        b[56..58].copy_from_slice(&CKPT_TAG);
        b[58..60].copy_from_slice(&CKPT_FORMAT.to_le_bytes());
        b[60..64].copy_from_slice(&layout.check().to_le_bytes());
        b
    }

    pub fn decode(b: &[u8; COMMIT_PAYLOAD], layout: &Layout) -> Result<Self, CkptError> {
        let format = u16::from_le_bytes([b[58], b[59]]);
        let check = u32::from_le_bytes([b[60], b[61], b[62], b[63]]);
        let layout_matches = check == layout.check();
        if b[56..58] != CKPT_TAG || format != CKPT_FORMAT || !layout_matches {
            return Err(CkptError::FormatMismatch {
                found_format: if b[56..58] == CKPT_TAG { format } else { 0 },
                layout_matches,
            });
        }
        let mut v = [0u8; 8];
        v.copy_from_slice(&b[0..8]);
        let mut meta = [0u8; META_LEN];
        meta.copy_from_slice(&b[8..24]);
        let set = |at: usize| {
            let mut d = [0u8; MAX_ITEMS / 8];
            d.copy_from_slice(&b[at..at + MAX_ITEMS / 8]);
            ItemSet::from_le_bytes(&d)
        };
        Ok(CommitPayload {
            version: Version(u64::from_le_bytes(v)),
            meta,
            designated: set(24),
            live: set(40),
        })
    }

    /// The slot holding item `id`'s committed copy (when it is live).
    #[inline]
    pub fn slot_of(&self, id: u16) -> u8 {
        self.designated.contains(id) as u8
    }
}

/// Whether `slot` holds a format 2 commit record (`DualRecord<48>` at the same base,
/// its tag at payload offset 40 and its format at 42): such an area is refused by
/// name rather than called corrupt.
pub fn holds_format_2(raw: &[u8; 2 * COMMIT_SLOT_LEN]) -> bool {
    const SLOT2: usize = 60;
    (0..2).any(|s| {
        let b = &raw[s * SLOT2..(s + 1) * SLOT2];
        let seq = u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
        let crc = u32::from_le_bytes(b[56..60].try_into().unwrap_or([0; 4]));
        seq != 0
            && crc == crc32(&b[..56])
            && b[48..50] == CKPT_TAG
            && u16::from_le_bytes([b[50], b[51]]) == CKPT_FORMAT_2
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout::new(Region {
            offset: 0x1000,
            len: 64 * 1024,
        })
        .unwrap()
    }

    #[test]
    fn the_table_of_offsets_is_what_the_code_computes() {
        let l = layout();
        assert_eq!(
            COMMIT_SLOT_LEN, 76,
            "commit slot = 8 seq + 64 payload + 4 crc"
        );
        assert_eq!(2 * COMMIT_SLOT_LEN as u32, FORMAT_MARKER_OFFSET);
        assert_eq!(EXTENT_OFFSET, 0x1100);
        assert_eq!(l.desc(0, 0), NvmOffset(0x1000 + 0x100));
        assert_eq!(l.desc(1, 1), NvmOffset(0x1000 + 0x100 + 32 + 16));
        assert_eq!(l.block(BlockNo(2)), NvmOffset(0x1000 + 0x1100 + 64));
        assert_eq!(l.blocks, (64 * 1024 - 0x1100) / 32);
        let huge = Layout::new(Region {
            offset: 0,
            len: 64 << 20,
        })
        .unwrap();
        assert_eq!(
            huge.blocks, MAX_BLOCKS,
            "a descriptor names at most 2^19 blocks"
        );
    }

    #[test]
    fn a_commit_payload_decodes_to_what_was_encoded() {
        let l = layout();
        let p = CommitPayload {
            version: Version(77),
            meta: [9; META_LEN],
            designated: ItemSet([5, 0, 0, 1 << 31]),
            live: ItemSet([1, 2, 3, 4]),
        };
        assert_eq!(CommitPayload::decode(&p.encode(&l), &l), Ok(p));
        assert_eq!(p.slot_of(127), 1);
        assert_eq!(p.slot_of(1), 0);
        assert_eq!(p.slot_of(2), 1);
    }

    #[test]
    fn a_commit_record_of_another_format_or_layout_is_refused() {
        let l = layout();
        let p = CommitPayload {
            version: Version(1),
            ..CommitPayload::EMPTY
        };
        let mut other_format = p.encode(&l);
        other_format[58] = 2;
        assert_eq!(
            CommitPayload::decode(&other_format, &l),
            Err(CkptError::FormatMismatch {
                found_format: 2,
                layout_matches: true
            }),
            "a format 2 payload must not be read as format 3"
        );
        let moved = Layout::new(Region {
            offset: 0x2000,
            len: 64 * 1024,
        })
        .unwrap();
        assert_eq!(
            CommitPayload::decode(&p.encode(&l), &moved),
            Err(CkptError::FormatMismatch {
                found_format: 3,
                layout_matches: false
            }),
            "a record written for another area must not be trusted"
        );
    }

    #[test]
    fn a_format_2_commit_record_is_recognised_in_either_slot() {
        // Format 2's DualRecord<48>: seq, payload (tag "CK" and format 2 at 40..44), CRC.
        let mut slot = [0u8; 60];
        slot[0] = 7;
        slot[48..50].copy_from_slice(b"CK");
        slot[50] = 2;
        let crc = crc32(&slot[..56]);
        slot[56..60].copy_from_slice(&crc.to_le_bytes());
        for at in [0, 60] {
            let mut raw = [0u8; 2 * COMMIT_SLOT_LEN];
            raw[at..at + 60].copy_from_slice(&slot);
            assert!(holds_format_2(&raw), "slot at {at}");
            raw[at + 20] ^= 1;
            assert!(
                !holds_format_2(&raw),
                "a damaged slot is not a format 2 record"
            );
        }
        let mut raw = [0u8; 2 * COMMIT_SLOT_LEN];
        let l = layout();
        raw[8..8 + COMMIT_PAYLOAD].copy_from_slice(&CommitPayload::EMPTY.encode(&l));
        assert!(!holds_format_2(&raw));
    }

    #[test]
    fn extents_must_be_aligned_powers_of_two_inside_the_space() {
        let l = layout();
        let ok = |first, blocks| {
            l.extent_ok(Extent {
                first: BlockNo(first),
                blocks,
            })
        };
        assert!(ok(0, 0) && ok(4, 4) && ok(0, 1));
        assert!(!ok(2, 4), "misaligned");
        assert!(!ok(0, 3), "not a power of two");
        assert!(!ok(l.blocks, 1), "past the end");
        assert!(!ok(5, 0), "an empty extent has no position");
        assert_eq!(blocks_for(0), 0);
        assert_eq!(blocks_for(1), 1);
        assert_eq!(blocks_for(33), 2);
        assert_eq!(blocks_for(65), 4);
    }

    #[test]
    fn tiny_areas_are_refused() {
        assert!(matches!(
            Layout::new(Region {
                offset: 0,
                len: 0x1000
            }),
            Err(CkptError::AreaTooSmall { .. })
        ));
    }
}
