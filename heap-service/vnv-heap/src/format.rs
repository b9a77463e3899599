//! The on-NVM format of a heap: where its records lie and how each one is encoded.
//!
//! This file only encodes and decodes bytes; it never touches the storage and never
//! decides which copy of a record is current (that is `heap.rs`). Changing any layout
//! here requires a new [`FORMAT_VERSION`].
//!
//! # Layout (format version 2)
//!
//! All integers are little-endian. `base` is [`Config::nvm_offset`](crate::Config),
//! `N` is `max_objects`, `R = 32 + 4 * ceil(N / 32)` the size of a commit record copy
//! and `P = 16 * blocks` (`blocks = nvm_data_bytes / 32`) the size of a plane.
//!
//! | offset                   | size  | meaning |
//! |--------------------------|-------|---------|
//! | `base + 0`               | `R`   | commit record, copy 0 ([`Header`], then the slot bitmap) |
//! | `base + R`               | `R`   | commit record, copy 1 |
//! | `base + 2R + 32 * id`    | 32    | entry pair of object `id`: half 0 at +0, half 1 at +16 ([`Half`]) |
//! | `base + 2R + 32 * N`     | `P`   | plane 0: slot 0 of every object |
//! | `base + 2R + 32 * N + P` | `P`   | plane 1: slot 1 of every object |
//!
//! The data area is `blocks` blocks of 16 bytes in each plane. An object of `len`
//! bytes owns `ceil(len / 16)` blocks (at least one) from block `b` on, in both
//! planes: slot `s` is the `len` bytes at `plane s + 16 * b`. Objects allocated one
//! after another own consecutive blocks, so the copies they write in one plane are
//! contiguous and can go to the storage in one write.
//!
//! # Versioning rule
//!
//! The valid commit record with the highest epoch `G` is the committed state. For every
//! object, the valid half with the highest epoch `<= G` describes it (live or free,
//! where its blocks are, its length and type tag); bit `id` of `G`'s slot bitmap says
//! which slot holds a live object's bytes. Work after the commit happens in epoch
//! `W = G + 1`: it writes only the *other* half of an entry pair and the *other* slot
//! of an object, so the committed descriptions and bytes are never overwritten, and
//! the commit writes the new slot bitmap with the record copy that does not hold `G`.
//! The next commit makes every half tagged `W` current at once, and every slot the
//! epoch wrote. Halves tagged above `G` found by `open` come from an epoch that never
//! committed and are erased before anything else is written.
//!
//! A half changes only when an object is created or freed: writing an object back
//! writes its bytes and nothing else. The heap keeps in RAM, per id, which half and
//! which slot the working epoch writes and whether it has written them (so it never
//! reads a pair or a record to choose), and a live object's location travels with its
//! handle and its cache header, so loading or writing back an object reads nothing
//! but its bytes.
//!
//! # Version history
//!
//! - 1: a slot bit in each half (so every first write-back of an epoch rewrote the
//!   half), both slots of an object side by side in 32-byte blocks, 32-byte commit
//!   records. Version 2 heaps are not read by version 1 code and the reverse: `open`
//!   reports [`HeapError::UnsupportedVersion`].

use crate::HeapError;
use crc::{Crc, CRC_32_ISO_HDLC};

/// Version of the layout described in this file.
pub const FORMAT_VERSION: u16 = 2;
/// `b"VNVH"` read as a little-endian `u32`.
pub const MAGIC: u32 = u32::from_le_bytes(*b"VNVH");
/// Bytes of a commit record besides its slot bitmap: the fixed part ([`Header`]) and the
/// checksum.
pub const HEADER_BYTES: u32 = 32;
/// Size of one half of an object's entry pair.
pub const HALF_BYTES: u32 = 16;
/// Size of an object's entry pair (two halves).
pub const ENTRY_BYTES: u32 = 2 * HALF_BYTES;
/// Bytes of NVM data area one block takes: 16 bytes in each of the two planes.
pub const BLOCK_BYTES: u32 = 32;
/// Bytes of a block in one plane: the granule of an object's slot.
pub const PLANE_BLOCK_BYTES: u32 = BLOCK_BYTES / 2;
/// Largest object (or array chunk) in bytes.
pub const MAX_OBJECT_BYTES: u32 = u16::MAX as u32;
/// Most blocks a data area may have (block indices are `u16` in RAM: the heap keeps
/// 2 bits of RAM per block, 16 KiB at this size, so no cache that fits a small device
/// goes with a larger area). A [`Half`] has room for 24 bits.
pub const MAX_BLOCKS: u32 = 1 << 16;

pub(crate) const CRC32: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);

/// Offset, inside a half, of its description (location word, length, tag): what the
/// heap reads of a half whose epoch it already knows from RAM (2 SPI words, not 4).
pub(crate) const DESC_OFFSET: u32 = 4;
/// Size of that description.
pub(crate) const DESC_BYTES: usize = 8;

/// Flag bits in the top byte of a half's location word.
pub(crate) mod flag {
    /// The object exists (a free id has this clear).
    pub const LIVE: u8 = 1;
    /// The object is a chunk of an array.
    pub const CHUNK: u8 = 4;
    /// The chunk is not the first of its array.
    pub const CONT: u8 = 8;
    /// Every defined bit (bit 2 named the slot in version 1 and must be clear now).
    pub const ALL: u8 = LIVE | CHUNK | CONT;
}

/// Bytes of the slot bitmap of a heap with `max_objects` ids: one bit per id, in
/// little-endian `u32` words.
pub(crate) const fn bitmap_bytes(max_objects: u16) -> u32 {
    (max_objects as u32).div_ceil(32) * 4
}

/// Where the parts of a heap lie on the device, derived from its configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub base: u32,
    pub max_objects: u16,
    /// Bytes of one commit record copy, slot bitmap included.
    pub record_bytes: u32,
    pub data_base: u32,
    pub data_bytes: u32,
    pub blocks: u32,
}

impl Layout {
    pub fn new(base: u32, max_objects: u16, data_bytes: u32) -> Result<Layout, HeapError> {
        let bad = HeapError::BadConfig {
            reason: "the heap does not fit in a 32-bit NVM address space",
        };
        if max_objects == 0 || max_objects == u16::MAX {
            return Err(HeapError::BadConfig {
                reason: "max_objects must be between 1 and 65534",
            });
        }
        let record_bytes = HEADER_BYTES + bitmap_bytes(max_objects);
        let table = u32::from(max_objects) * ENTRY_BYTES;
        let data_base = base
            .checked_add(2 * record_bytes)
            .and_then(|v| v.checked_add(table))
            .ok_or(bad)?;
        let blocks = data_bytes / BLOCK_BYTES;
        if blocks == 0 {
            return Err(HeapError::BadConfig {
                reason: "nvm_data_bytes must hold at least one 32-byte block",
            });
        }
        if blocks > MAX_BLOCKS {
            return Err(HeapError::BadConfig {
                reason: "nvm_data_bytes must be at most 2 MiB (65,536 blocks of 32 bytes)",
            });
        }
        data_base.checked_add(blocks * BLOCK_BYTES).ok_or(bad)?;
        Ok(Layout {
            base,
            max_objects,
            record_bytes,
            data_base,
            data_bytes,
            blocks,
        })
    }

    /// First byte after the heap.
    pub fn end(&self) -> u32 {
        self.data_base + self.blocks * BLOCK_BYTES
    }

    pub fn header_at(&self, copy: u8) -> u32 {
        self.base + u32::from(copy) * self.record_bytes
    }

    pub fn pair_at(&self, id: u16) -> u32 {
        self.base + 2 * self.record_bytes + u32::from(id) * ENTRY_BYTES
    }

    pub fn half_at(&self, id: u16, half: u8) -> u32 {
        self.pair_at(id) + u32::from(half) * HALF_BYTES
    }

    /// Offset of slot `slot` of the object whose first block is `block`.
    pub fn slot_at(&self, block: u16, slot: u8) -> u32 {
        self.data_base
            + u32::from(slot) * self.blocks * PLANE_BLOCK_BYTES
            + u32::from(block) * PLANE_BLOCK_BYTES
    }
}

/// Blocks an object of `len` bytes owns (its slot in each plane, in 16-byte granules).
pub(crate) fn blocks_for(len: u16) -> u32 {
    u32::from(len).div_ceil(PLANE_BLOCK_BYTES).max(1)
}

/// A commit record: the epoch of the last completed persist, the geometry and the slot
/// bitmap.
///
/// | offset   | size | meaning |
/// |----------|------|---------|
/// | 0        | 4    | magic `b"VNVH"` |
/// | 4        | 2    | format version ([`FORMAT_VERSION`]) |
/// | 6        | 2    | `max_objects` |
/// | 8        | 4    | committed epoch `G` (0 = freshly formatted, nothing persisted) |
/// | 12       | 4    | `nvm_data_bytes` |
/// | 16       | 12   | reserved, zero |
/// | 28       | `S = 4 * ceil(N / 32)` | slot bitmap: bit `id % 32` of word `id / 32` is the slot holding live object `id`'s bytes as of `G` |
/// | `28 + S` | 4    | CRC-32/ISO-HDLC of bytes `0..28 + S` |
///
/// Two copies exist; a commit overwrites the one that does not hold `G`, front to back
/// (in writes of any size), so a torn commit leaves that copy with a new epoch and an
/// old checksum, detectably invalid, or still the older record, and the copy holding
/// `G` intact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u16,
    pub max_objects: u16,
    pub epoch: u32,
    pub data_bytes: u32,
}

/// Bytes of a commit record before its slot bitmap.
pub(crate) const RECORD_FIXED: usize = 28;

/// What a commit record copy holds, judged by its fixed part and the checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeaderState {
    /// The fixed part is all zero: never written.
    Blank,
    /// Bytes present but the magic or checksum is wrong (torn or corrupt).
    Invalid,
    Valid(Header),
}

impl Header {
    /// The record's fixed part.
    pub fn encode(&self) -> [u8; RECORD_FIXED] {
        let mut b = [0u8; RECORD_FIXED];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&self.version.to_le_bytes());
        b[6..8].copy_from_slice(&self.max_objects.to_le_bytes());
        b[8..12].copy_from_slice(&self.epoch.to_le_bytes());
        b[12..16].copy_from_slice(&self.data_bytes.to_le_bytes());
        b
    }

    /// The record whose fixed part is `b`, slot bitmap the words `bitmap` and checksum
    /// `crc`.
    pub(crate) fn decode(
        b: &[u8; RECORD_FIXED],
        bitmap: impl Iterator<Item = u32>,
        crc: u32,
    ) -> HeaderState {
        if b.iter().all(|&x| x == 0) {
            return HeaderState::Blank;
        }
        let magic = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if magic != MAGIC || crc != record_crc(b, bitmap) {
            return HeaderState::Invalid;
        }
        HeaderState::Valid(Header {
            version: u16::from_le_bytes([b[4], b[5]]),
            max_objects: u16::from_le_bytes([b[6], b[7]]),
            epoch: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
            data_bytes: u32::from_le_bytes([b[12], b[13], b[14], b[15]]),
        })
    }
}

/// The checksum of a record with fixed part `b` and the slot bitmap words `bitmap`.
pub(crate) fn record_crc(b: &[u8; RECORD_FIXED], bitmap: impl Iterator<Item = u32>) -> u32 {
    let mut d = CRC32.digest();
    d.update(b);
    for w in bitmap {
        d.update(&w.to_le_bytes());
    }
    d.finalize()
}

/// One half of an object's entry pair: the object as of one epoch.
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0      | 4    | epoch that wrote this half (0 = never written) |
/// | 4      | 4    | bits 0..24: first block; bits 24..32: flags (1 live, 4 array chunk, 8 not the first chunk; 2 must be clear) |
/// | 8      | 2    | object length in bytes |
/// | 10     | 2    | type tag (see [`type_tag`](crate::type_tag)) |
/// | 12     | 4    | CRC-32/ISO-HDLC of the object id (2 bytes, LE) followed by bytes 0..12 |
///
/// A free id's half has the live flag clear and every other field zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Half {
    pub epoch: u32,
    pub block: u32,
    pub flags: u8,
    pub len: u16,
    pub tag: u16,
}

impl Half {
    /// The half of a freed id, written by epoch `epoch`.
    pub fn dead(epoch: u32) -> Half {
        Half {
            epoch,
            block: 0,
            flags: 0,
            len: 0,
            tag: 0,
        }
    }

    pub fn live(&self) -> bool {
        self.flags & flag::LIVE != 0
    }

    pub fn encode(&self, id: u16) -> [u8; HALF_BYTES as usize] {
        let mut b = [0u8; HALF_BYTES as usize];
        b[0..4].copy_from_slice(&self.epoch.to_le_bytes());
        let loc = (self.block & 0x00ff_ffff) | (u32::from(self.flags) << 24);
        b[4..8].copy_from_slice(&loc.to_le_bytes());
        b[8..10].copy_from_slice(&self.len.to_le_bytes());
        b[10..12].copy_from_slice(&self.tag.to_le_bytes());
        let crc = half_crc(id, &b[0..12]);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// The description in bytes 4..12 of an encoded half (see [`DESC_OFFSET`]), tagged
    /// with `epoch`, which the caller knows from elsewhere. No checksum is checked: the
    /// heap reads a half this way only after `open` checked it or after writing it.
    pub fn decode_desc(epoch: u32, b: &[u8; DESC_BYTES]) -> Half {
        let loc = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        Half {
            epoch,
            block: loc & 0x00ff_ffff,
            flags: (loc >> 24) as u8,
            len: u16::from_le_bytes([b[4], b[5]]),
            tag: u16::from_le_bytes([b[6], b[7]]),
        }
    }

    /// The half, or `None` if it was never written or its checksum fails (torn).
    pub fn decode(id: u16, b: &[u8]) -> Option<Half> {
        let crc = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
        if crc != half_crc(id, &b[0..12]) {
            return None;
        }
        let epoch = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if epoch == 0 {
            return None;
        }
        let desc: &[u8; DESC_BYTES] = b[DESC_OFFSET as usize..][..DESC_BYTES].try_into().ok()?;
        Some(Half::decode_desc(epoch, desc))
    }
}

fn half_crc(id: u16, body: &[u8]) -> u32 {
    let mut d = CRC32.digest();
    d.update(&id.to_le_bytes());
    d.update(body);
    d.finalize()
}

/// Both halves of an entry pair as read from NVM, and the rules that pick among them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pair {
    pub halves: [Option<Half>; 2],
}

impl Pair {
    pub fn decode(id: u16, b: &[u8; ENTRY_BYTES as usize]) -> Pair {
        Pair {
            halves: [
                Half::decode(id, &b[0..HALF_BYTES as usize]),
                Half::decode(id, &b[HALF_BYTES as usize..]),
            ],
        }
    }

    /// Index and content of the newest half with epoch `<= upto`.
    pub fn newest(&self, upto: u32) -> Option<(u8, Half)> {
        let mut best: Option<(u8, Half)> = None;
        for (i, h) in self.halves.iter().enumerate() {
            if let Some(h) = h {
                if h.epoch <= upto && best.is_none_or(|(_, b)| h.epoch > b.epoch) {
                    best = Some((i as u8, *h));
                }
            }
        }
        best
    }

    /// The half that epoch `working` may write: the one it already wrote, else the one
    /// that does not hold the committed description (epoch `<= working - 1`).
    pub fn working_half(&self, working: u32) -> u8 {
        for (i, h) in self.halves.iter().enumerate() {
            if h.is_some_and(|h| h.epoch == working) {
                return i as u8;
            }
        }
        match self.newest(working - 1) {
            Some((i, _)) => 1 - i,
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_any_torn_prefix_reads_as_old_or_invalid() {
        let h = Header {
            version: FORMAT_VERSION,
            max_objects: 40,
            epoch: 77,
            data_bytes: 4096,
        };
        let bits = [0x5u32, 0x80];
        let record = |h: &Header| {
            let mut r = h.encode().to_vec();
            bits.iter().for_each(|w| r.extend(w.to_le_bytes()));
            let fixed = h.encode();
            r.extend(record_crc(&fixed, bits.into_iter()).to_le_bytes());
            r
        };
        let decode = |r: &[u8]| {
            let fixed: [u8; RECORD_FIXED] = r[..RECORD_FIXED].try_into().unwrap();
            let w =
                |i: usize| u32::from_le_bytes(r[RECORD_FIXED + 4 * i..][..4].try_into().unwrap());
            let crc = u32::from_le_bytes(r[RECORD_FIXED + 8..][..4].try_into().unwrap());
            Header::decode(&fixed, (0..2).map(w), crc)
        };
        let new = record(&h);
        assert_eq!(new.len(), 32 + 8);
        assert_eq!(decode(&new), HeaderState::Valid(h));
        let mut flipped = new.clone();
        flipped[RECORD_FIXED] ^= 1;
        assert_eq!(
            decode(&flipped),
            HeaderState::Invalid,
            "the checksum covers the slot bitmap"
        );
        let old = record(&Header { epoch: 76, ..h });
        for keep in 0..new.len() {
            let mut torn = old.clone();
            torn[..keep].copy_from_slice(&new[..keep]);
            let got = decode(&torn);
            assert!(
                got == HeaderState::Valid(Header { epoch: 76, ..h }) || got == HeaderState::Invalid,
                "a commit record torn after {keep} bytes must read as the old record or as invalid, got {got:?}"
            );
        }
    }

    #[test]
    fn a_half_checks_its_id_so_a_misplaced_entry_is_rejected() {
        let h = Half {
            epoch: 3,
            block: 12,
            flags: flag::LIVE | flag::CHUNK,
            len: 40,
            tag: 0xBEEF,
        };
        let b = h.encode(5);
        assert_eq!(Half::decode(5, &b), Some(h));
        assert_eq!(
            Half::decode(6, &b),
            None,
            "the entry of id 5 must not pass as id 6"
        );
        assert_eq!(Half::decode(5, &[0; 16]), None, "a blank half is no half");
        let desc: [u8; DESC_BYTES] = b[DESC_OFFSET as usize..][..DESC_BYTES].try_into().unwrap();
        assert_eq!(
            Half::decode_desc(3, &desc),
            h,
            "the description alone gives every field but the epoch"
        );
    }

    #[test]
    fn the_working_half_is_never_the_committed_one() {
        let mk = |epoch| {
            Some(Half {
                epoch,
                block: 0,
                flags: flag::LIVE,
                len: 4,
                tag: 0,
            })
        };
        let pair = Pair {
            halves: [mk(4), mk(2)],
        };
        assert_eq!(
            pair.working_half(5),
            1,
            "half 0 holds epoch 4, the committed one"
        );
        let pair = Pair {
            halves: [mk(4), mk(5)],
        };
        assert_eq!(
            pair.working_half(5),
            1,
            "epoch 5 keeps writing the half it wrote"
        );
        let pair = Pair {
            halves: [None, None],
        };
        assert_eq!(pair.working_half(1), 0);
    }

    #[test]
    fn an_object_owns_its_slot_in_both_planes_in_whole_blocks() {
        assert_eq!(blocks_for(1), 1);
        assert_eq!(blocks_for(16), 1);
        assert_eq!(blocks_for(17), 2);
        let l = Layout::new(0, 3, 320).unwrap();
        assert_eq!(l.record_bytes, 36);
        assert_eq!(l.data_base, 2 * 36 + 3 * 32);
        assert_eq!(l.slot_at(2, 0), l.data_base + 32, "plane 0, block 2");
        assert_eq!(l.slot_at(2, 1), l.data_base + 160 + 32, "plane 1, block 2");
        assert_eq!(l.end(), l.data_base + 320);
        assert!(
            Layout::new(0, 3, 32 * (MAX_BLOCKS + 1)).is_err(),
            "block indices must fit u16"
        );
    }
}
