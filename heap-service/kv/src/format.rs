//! The table's on-NVM format, version 1: a header, then the entry records and values
//! at the offsets `config.rs` computes. All integers are little-endian. This file
//! encodes and decodes; it must never decide where a record goes.
//!
//! Header (at the table's base, [`HEADER_BYTES`] = 32 bytes, written once by
//! `Table::format`):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `AMBERKV1` |
//! | 8 | 2 | format version, 1 |
//! | 10 | 1 | layout: 1 linear (LPHT), 2 bucketed |
//! | 11 | 1 | entries per bucket (1 for linear) |
//! | 12 | 4 | buckets |
//! | 16 | 2 | largest value in bytes |
//! | 18 | 2 | 0 |
//! | 20 | 4 | CRC-32 (ISO-HDLC) of bytes 0..20 |
//! | 24 | 8 | 0 |
//!
//! Entry record ([`RECORD_BYTES`] = 8 bytes; linear: followed by its value slot of the
//! largest value rounded up to 4 bytes; bucketed: the records of a bucket are
//! contiguous, values lie in an array after the last bucket):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | state: 0 empty, 1 full, 2 tombstone (a deleted entry) |
//! | 1 | 1 | 0 |
//! | 2 | 2 | value length (full entries) |
//! | 4 | 4 | key (full entries) |
//!
//! Every byte of a new table's records is 0 (`format` writes them): empty. A delete
//! writes the state byte alone; tombstones that no probe sequence needs are written back
//! to empty.

use crate::config::{Config, Layout};
use crate::KvError;

/// Bytes of the header (the records start this far after the base).
pub const HEADER_BYTES: u32 = 32;
/// Bytes of one entry record.
pub const RECORD_BYTES: u32 = 8;
/// The format version this crate writes and reads.
pub const VERSION: u16 = 1;

const MAGIC: [u8; 8] = *b"AMBERKV1";
const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// The state byte of an entry record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryState {
    /// Never used since the table was formatted (or reclaimed): ends a probe sequence.
    Empty = 0,
    /// Holds a live key.
    Full = 1,
    /// Held a key that was deleted: reusable, but a probe sequence goes on past it.
    Tombstone = 2,
}

/// A decoded entry record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub state: EntryState,
    pub len: u16,
    pub key: u32,
}

impl Record {
    /// Decodes the 8 bytes of entry `slot`; unknown states are corrupt.
    pub fn decode(b: &[u8], slot: u32) -> Result<Record, KvError> {
        let state = match b[0] {
            0 => EntryState::Empty,
            1 => EntryState::Full,
            2 => EntryState::Tombstone,
            _ => return Err(KvError::Corrupt { slot }),
        };
        Ok(Record {
            state,
            len: u16::from_le_bytes([b[2], b[3]]),
            key: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        })
    }

    /// The record of a full entry.
    pub fn full(key: u32, len: u16) -> [u8; RECORD_BYTES as usize] {
        let [l0, l1] = len.to_le_bytes();
        let [k0, k1, k2, k3] = key.to_le_bytes();
        [EntryState::Full as u8, 0, l0, l1, k0, k1, k2, k3]
    }
}

/// Encodes the header of a table with `config`.
pub fn encode_header(config: &Config) -> [u8; HEADER_BYTES as usize] {
    let mut h = [0u8; HEADER_BYTES as usize];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    let (layout, entries) = match config.layout {
        Layout::Linear => (1, 1),
        Layout::Bucketed { entries } => (2, entries),
    };
    h[10] = layout;
    h[11] = entries;
    h[12..16].copy_from_slice(&config.buckets.to_le_bytes());
    h[16..18].copy_from_slice(&config.max_value.to_le_bytes());
    let crc = CRC32.checksum(&h[0..20]);
    h[20..24].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Decodes a header read at `at`: its configuration, or why it is none.
pub fn decode_header(h: &[u8; HEADER_BYTES as usize], at: u32) -> Result<Config, KvError> {
    let crc = u32::from_le_bytes([h[20], h[21], h[22], h[23]]);
    if h[0..8] != MAGIC || CRC32.checksum(&h[0..20]) != crc {
        return Err(KvError::NoTable { at });
    }
    let version = u16::from_le_bytes([h[8], h[9]]);
    if version != VERSION {
        return Err(KvError::UnknownVersion { version });
    }
    let layout = match (h[10], h[11]) {
        (1, 1) => Layout::Linear,
        (2, entries) => Layout::Bucketed { entries },
        _ => {
            return Err(KvError::BadConfig {
                reason: "unknown layout in the header",
            })
        }
    };
    Ok(Config {
        layout,
        buckets: u32::from_le_bytes([h[12], h[13], h[14], h[15]]),
        max_value: u16::from_le_bytes([h[16], h[17]]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_any_flipped_bit_is_no_table() {
        let c = Config {
            layout: Layout::Bucketed { entries: 4 },
            buckets: 77,
            max_value: 300,
        };
        let h = encode_header(&c);
        assert_eq!(decode_header(&h, 0), Ok(c));
        for bit in 0..(20 * 8) {
            let mut bad = h;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(
                decode_header(&bad, 5),
                Err(KvError::NoTable { at: 5 }),
                "bit {bit}"
            );
        }
    }

    #[test]
    fn records_round_trip_and_unknown_states_are_corrupt() {
        let r = Record::full(0xDEAD_BEEF, 513);
        assert_eq!(
            Record::decode(&r, 0),
            Ok(Record {
                state: EntryState::Full,
                len: 513,
                key: 0xDEAD_BEEF
            })
        );
        assert_eq!(Record::decode(&[0; 8], 0).unwrap().state, EntryState::Empty);
        assert_eq!(
            Record::decode(&[3, 0, 0, 0, 0, 0, 0, 0], 9),
            Err(KvError::Corrupt { slot: 9 })
        );
    }
}
