//! The on-NVM format of a heap: where its records lie and how each one is encoded.
//!
//! This file only encodes and decodes bytes; it never touches the storage and never
//! decides which copy of a record is current (that is `heap.rs`). Changing any layout
//! here requires a new [`FORMAT_VERSION`].
//!
//! # Layout (format version 1)
//!
//! All integers are little-endian. `base` is [`Config::nvm_offset`](crate::Config).
//!
//! | offset                         | size                  | meaning |
//! |--------------------------------|-----------------------|---------|
//! | `base + 0`                     | 32                    | commit record, copy 0 ([`Header`]) |
//! | `base + 32`                    | 32                    | commit record, copy 1 |
//! | `base + 64 + 32 * id`          | 32                    | entry pair of object `id`: half 0 at +0, half 1 at +16 ([`Half`]) |
//! | `base + 64 + 32 * max_objects` | `nvm_data_bytes`      | data area: 32-byte blocks; an object owns a run of blocks holding its two slots |
//!
//! An object of `len` bytes owns `ceil(2 * round_up(len, 4) / 32)` blocks starting at
//! block `b`: slot 0 at `data + 32 * b`, slot 1 right after it at
//! `+ round_up(len, 4)`.
//!
//! # Versioning rule
//!
//! The valid commit record with the highest epoch `G` is the committed state. For every
//! object, the valid half with the highest epoch `<= G` describes it (live or free,
//! where its blocks are, which slot holds its bytes). Work after the commit happens in
//! epoch `W = G + 1`: it writes only the *other* half and the *other* slot, so the
//! committed description and bytes are never overwritten. The next commit makes every
//! half tagged `W` current at once. Halves tagged above `G` found by `open` come from an
//! epoch that never committed and are erased before anything else is written.
//!
//! The heap keeps in RAM, per id, which half the working epoch writes and whether it
//! has written it yet (so it never reads a pair to choose a half), and then reads only
//! the 8-byte description of the current half (bytes 4..12: location, length, tag).
//! This is a way of reading the format, not a change of it.

use crate::HeapError;
use crc::{Crc, CRC_32_ISO_HDLC};

/// Version of the layout described in this file.
pub const FORMAT_VERSION: u16 = 1;
/// `b"VNVH"` read as a little-endian `u32`.
pub const MAGIC: u32 = u32::from_le_bytes(*b"VNVH");
/// Size of one commit record copy.
pub const HEADER_BYTES: u32 = 32;
/// Size of one half of an object's entry pair.
pub const HALF_BYTES: u32 = 16;
/// Size of an object's entry pair (two halves).
pub const ENTRY_BYTES: u32 = 2 * HALF_BYTES;
/// Granule of the NVM data area.
pub const BLOCK_BYTES: u32 = 32;
/// Largest object (or array chunk) in bytes.
pub const MAX_OBJECT_BYTES: u32 = u16::MAX as u32;
/// Largest block index a [`Half`] can name (24 bits).
pub const MAX_BLOCKS: u32 = 1 << 24;

pub(crate) const CRC32: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);

/// Offset, inside a half, of its description (location word, length, tag): what the
/// heap reads of a half whose epoch it already knows from RAM (2 SPI words, not 8).
pub(crate) const DESC_OFFSET: u32 = 4;
/// Size of that description.
pub(crate) const DESC_BYTES: usize = 8;

/// Flag bits in the top byte of [`Half::loc`].
pub(crate) mod flag {
    /// The object exists (a free id has this clear).
    pub const LIVE: u8 = 1;
    /// The object's bytes are in slot 1 (else slot 0).
    pub const SLOT1: u8 = 2;
    /// The object is a chunk of an array.
    pub const CHUNK: u8 = 4;
    /// The chunk is not the first of its array.
    pub const CONT: u8 = 8;
    /// Every defined bit.
    pub const ALL: u8 = LIVE | SLOT1 | CHUNK | CONT;
}

/// Where the parts of a heap lie on the device, derived from its configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub base: u32,
    pub max_objects: u16,
    pub data_base: u32,
    pub data_bytes: u32,
    pub blocks: u32,
}

impl Layout {
    pub fn new(base: u32, max_objects: u16, data_bytes: u32) -> Result<Layout, HeapError> {
        let bad = HeapError::BadConfig {
            reason: "the heap does not fit in a 32-bit NVM address space",
        };
        let table = u32::from(max_objects) * ENTRY_BYTES;
        let data_base = base
            .checked_add(2 * HEADER_BYTES)
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
                reason: "nvm_data_bytes must be below 512 MiB",
            });
        }
        if max_objects == 0 || max_objects == u16::MAX {
            return Err(HeapError::BadConfig {
                reason: "max_objects must be between 1 and 65534",
            });
        }
        data_base.checked_add(blocks * BLOCK_BYTES).ok_or(bad)?;
        Ok(Layout {
            base,
            max_objects,
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
        self.base + u32::from(copy) * HEADER_BYTES
    }

    pub fn pair_at(&self, id: u16) -> u32 {
        self.base + 2 * HEADER_BYTES + u32::from(id) * ENTRY_BYTES
    }

    pub fn half_at(&self, id: u16, half: u8) -> u32 {
        self.pair_at(id) + u32::from(half) * HALF_BYTES
    }

    /// Offset of slot `slot` of an object of `len` bytes starting at `block`.
    pub fn slot_at(&self, block: u32, len: u16, slot: u8) -> u32 {
        self.data_base + block * BLOCK_BYTES + u32::from(slot) * slot_bytes(len)
    }
}

/// Bytes one slot of an object of `len` bytes takes (4-byte aligned).
pub(crate) fn slot_bytes(len: u16) -> u32 {
    (u32::from(len) + 3) & !3
}

/// Blocks an object of `len` bytes owns (both slots).
pub(crate) fn blocks_for(len: u16) -> u32 {
    (2 * slot_bytes(len)).div_ceil(BLOCK_BYTES).max(1)
}

/// A commit record: the epoch of the last completed persist and the geometry.
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0      | 4    | magic `b"VNVH"` |
/// | 4      | 2    | format version ([`FORMAT_VERSION`]) |
/// | 6      | 2    | `max_objects` |
/// | 8      | 4    | committed epoch `G` (0 = freshly formatted, nothing persisted) |
/// | 12     | 4    | `nvm_data_bytes` |
/// | 16     | 12   | reserved, zero |
/// | 28     | 4    | CRC-32/ISO-HDLC of bytes 0..28 |
///
/// Two copies exist; a commit overwrites the one that does not hold `G`, so a torn
/// commit leaves the previous record intact and detectably older.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u16,
    pub max_objects: u16,
    pub epoch: u32,
    pub data_bytes: u32,
}

/// What a commit record copy holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeaderState {
    /// All bytes zero: never written.
    Blank,
    /// Bytes present but the magic or checksum is wrong (torn or corrupt).
    Invalid,
    Valid(Header),
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_BYTES as usize] {
        let mut b = [0u8; HEADER_BYTES as usize];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&self.version.to_le_bytes());
        b[6..8].copy_from_slice(&self.max_objects.to_le_bytes());
        b[8..12].copy_from_slice(&self.epoch.to_le_bytes());
        b[12..16].copy_from_slice(&self.data_bytes.to_le_bytes());
        let crc = CRC32.checksum(&b[0..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8; HEADER_BYTES as usize]) -> HeaderState {
        if b.iter().all(|&x| x == 0) {
            return HeaderState::Blank;
        }
        let crc = u32::from_le_bytes([b[28], b[29], b[30], b[31]]);
        let magic = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if magic != MAGIC || crc != CRC32.checksum(&b[0..28]) {
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

/// One half of an object's entry pair: the object as of one epoch.
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0      | 4    | epoch that wrote this half (0 = never written) |
/// | 4      | 4    | bits 0..24: first block; bits 24..32: flags (1 live, 2 bytes in slot 1, 4 array chunk, 8 not the first chunk) |
/// | 8      | 2    | object length in bytes |
/// | 10     | 2    | type tag (see [`type_tag`](crate::type_tag)) |
/// | 12     | 4    | CRC-32/ISO-HDLC of the object id (2 bytes, LE) followed by bytes 0..12 |
///
/// A free id's half has the live flag clear; its other fields are kept for reuse checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Half {
    pub epoch: u32,
    pub block: u32,
    pub flags: u8,
    pub len: u16,
    pub tag: u16,
}

impl Half {
    pub fn live(&self) -> bool {
        self.flags & flag::LIVE != 0
    }

    pub fn slot(&self) -> u8 {
        u8::from(self.flags & flag::SLOT1 != 0)
    }

    pub fn encode(&self, id: u16) -> [u8; HALF_BYTES as usize] {
        let mut b = [0u8; HALF_BYTES as usize];
        b[0..4].copy_from_slice(&self.epoch.to_le_bytes());
        let loc = (self.block & (MAX_BLOCKS - 1)) | (u32::from(self.flags) << 24);
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
            block: loc & (MAX_BLOCKS - 1),
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
        let loc = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        Some(Half {
            epoch,
            block: loc & (MAX_BLOCKS - 1),
            flags: (loc >> 24) as u8,
            len: u16::from_le_bytes([b[8], b[9]]),
            tag: u16::from_le_bytes([b[10], b[11]]),
        })
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
    fn a_header_round_trips_and_any_torn_prefix_is_rejected() {
        let h = Header {
            version: FORMAT_VERSION,
            max_objects: 9,
            epoch: 77,
            data_bytes: 4096,
        };
        let bytes = h.encode();
        assert_eq!(Header::decode(&bytes), HeaderState::Valid(h));
        let old = Header { epoch: 76, ..h }.encode();
        for keep in 0..bytes.len() {
            let mut torn = old;
            torn[..keep].copy_from_slice(&bytes[..keep]);
            let got = Header::decode(&torn);
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
            flags: flag::LIVE | flag::SLOT1,
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
    fn an_object_owns_both_slots_in_whole_blocks() {
        assert_eq!(blocks_for(1), 1);
        assert_eq!(blocks_for(16), 1);
        assert_eq!(blocks_for(17), 2);
        assert_eq!(slot_bytes(5), 8);
    }
}
