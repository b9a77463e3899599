//! The ring's on-NVM formats, byte by byte: the ring header and the record header.
//!
//! Everything the ring stores is encoded and decoded here, next to its table, so that a
//! host tool can read the same definition. Decoding never accepts bytes it cannot vouch
//! for: a blank header, an unknown version and a failed checksum are distinct errors.

use crate::error::RingError;

/// The format version this code reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// The first eight bytes of a formatted ring region.
pub const RING_MAGIC: [u8; 8] = *b"AMBRVRNG";
/// Encoded size of the ring header.
pub const RING_HEADER_LEN: usize = 64;
/// Where the applied index's two `DualRecord` slots start, from the region start.
pub const APPLIED_RECORD_OFFSET: u32 = 64;
/// Where the data area starts, from the region start.
pub const DATA_OFFSET: u32 = 128;
/// Encoded size of a record header.
pub const ENTRY_HEADER_LEN: u32 = 24;
/// Records start at multiples of this many bytes.
pub const ALIGN: u32 = 4;
/// The smallest data area `format` accepts: two records of 64 data bytes.
pub const MIN_CAPACITY: u32 = 2 * (ENTRY_HEADER_LEN + 64);
/// The smallest region `format` accepts.
pub const MIN_REGION_LEN: u32 = DATA_OFFSET + MIN_CAPACITY;

/// Kind of a record carrying a device write.
pub const KIND_ENTRY: [u8; 4] = *b"VRE1";
/// Kind of a record that fills the rest of a lap (entries never wrap).
pub const KIND_PAD: [u8; 4] = *b"VRP1";

/// The checksum of every ring structure: CRC-32/ISO-HDLC, as in `amber_format`.
pub(crate) const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

fn get_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Rounds `n` up to the record alignment.
pub const fn align_up(n: u32) -> u32 {
    n.div_ceil(ALIGN) * ALIGN
}

/// Bytes of the ring one entry of `len` data bytes takes: its record header and the
/// data, rounded up to the record alignment.
pub const fn entry_span(len: u32) -> u32 {
    align_up(ENTRY_HEADER_LEN + len)
}

/// The data capacity of a region of `len` bytes.
pub const fn capacity_for(len: u32) -> u32 {
    len.saturating_sub(DATA_OFFSET) / ALIGN * ALIGN
}

/// The ring header, format version 1, at the start of the region.
///
/// | offset | size | field                                                   |
/// |--------|------|---------------------------------------------------------|
/// | 0      | 8    | magic `"AMBRVRNG"`                                      |
/// | 8      | 4    | format version (1)                                      |
/// | 12     | 4    | header length in bytes (64)                             |
/// | 16     | 4    | region length in bytes when formatted                   |
/// | 20     | 4    | data area offset from the region start (128)            |
/// | 24     | 4    | data capacity in bytes (a multiple of 4)                |
/// | 28     | 32   | reserved, zero                                          |
/// | 60     | 4    | CRC-32 of bytes 0..60                                   |
///
/// It is written once by `format`, after everything else, and only read after that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingHeader {
    pub region_len: u32,
    pub data_offset: u32,
    pub capacity: u32,
}

impl RingHeader {
    /// The header of a region of `region_len` bytes.
    pub const fn for_region(region_len: u32) -> Self {
        RingHeader {
            region_len,
            data_offset: DATA_OFFSET,
            capacity: capacity_for(region_len),
        }
    }

    /// Encodes the header.
    pub fn encode(&self) -> [u8; RING_HEADER_LEN] {
        let mut b = [0u8; RING_HEADER_LEN];
        b[0..8].copy_from_slice(&RING_MAGIC);
        put_u32(&mut b, 8, FORMAT_VERSION);
        put_u32(&mut b, 12, RING_HEADER_LEN as u32);
        put_u32(&mut b, 16, self.region_len);
        put_u32(&mut b, 20, self.data_offset);
        put_u32(&mut b, 24, self.capacity);
        let crc = CRC32.checksum(&b[..60]);
        put_u32(&mut b, 60, crc);
        b
    }

    /// Decodes a header, refusing anything it cannot vouch for.
    pub fn decode(b: &[u8; RING_HEADER_LEN]) -> Result<Self, RingError> {
        if b[0..8] != RING_MAGIC {
            return Err(RingError::NotFormatted);
        }
        if get_u32(b, 60) != CRC32.checksum(&b[..60]) {
            return Err(RingError::BadHeader);
        }
        let version = get_u32(b, 8);
        if version != FORMAT_VERSION {
            return Err(RingError::UnsupportedVersion { found: version });
        }
        let header = RingHeader {
            region_len: get_u32(b, 16),
            data_offset: get_u32(b, 20),
            capacity: get_u32(b, 24),
        };
        if get_u32(b, 12) != RING_HEADER_LEN as u32 || header != Self::for_region(header.region_len)
        {
            return Err(RingError::BadHeader);
        }
        Ok(header)
    }
}

/// What a record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// A device write of `len` data bytes to `addr`; the data follows the header.
    Entry { addr: u32, len: u32 },
    /// Filler up to the end of the lap; no data.
    Pad,
}

/// A record header, format version 1, at a 4-byte aligned position of the data area.
///
/// | offset | size | field                                                         |
/// |--------|------|---------------------------------------------------------------|
/// | 0      | 4    | kind: `"VRE1"` entry, `"VRP1"` pad                            |
/// | 4      | 8    | log index of the record (its start in the unbounded log)      |
/// | 12     | 4    | device address (pad: 0)                                       |
/// | 16     | 4    | data length in bytes (pad: 0)                                 |
/// | 20     | 4    | CRC-32 of bytes 0..20 followed by the data bytes              |
/// | 24     | len  | data (entries only)                                           |
///
/// An entry occupies `align_up(24 + len)` bytes; a pad occupies the rest of its lap.
/// The log index in the header (covered by the CRC) tells a record of this lap from a
/// stale one of an earlier lap or of a dropped, rolled-back run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryHeader {
    pub index: u64,
    pub kind: RecordKind,
    pub crc: u32,
}

impl EntryHeader {
    /// A header for `kind` at log `index` whose data is `data` (empty for a pad).
    pub fn new(index: u64, kind: RecordKind, data: &[u8]) -> Self {
        let mut h = EntryHeader {
            index,
            kind,
            crc: 0,
        };
        let mut digest = CRC32.digest();
        digest.update(&h.encode()[..20]);
        digest.update(data);
        h.crc = digest.finalize();
        h
    }

    /// Encodes the header.
    pub fn encode(&self) -> [u8; ENTRY_HEADER_LEN as usize] {
        let mut b = [0u8; ENTRY_HEADER_LEN as usize];
        let (kind, addr, len) = match self.kind {
            RecordKind::Entry { addr, len } => (KIND_ENTRY, addr, len),
            RecordKind::Pad => (KIND_PAD, 0, 0),
        };
        b[0..4].copy_from_slice(&kind);
        put_u64(&mut b, 4, self.index);
        put_u32(&mut b, 12, addr);
        put_u32(&mut b, 16, len);
        put_u32(&mut b, 20, self.crc);
        b
    }

    /// Decodes the fields of a header; the caller checks index, length and CRC.
    pub fn decode(b: &[u8; ENTRY_HEADER_LEN as usize]) -> Result<Self, crate::EntryFault> {
        let mut found = [0u8; 4];
        found.copy_from_slice(&b[0..4]);
        let kind = match found {
            KIND_ENTRY => RecordKind::Entry {
                addr: get_u32(b, 12),
                len: get_u32(b, 16),
            },
            KIND_PAD => RecordKind::Pad,
            _ => return Err(crate::EntryFault::BadKind { found }),
        };
        Ok(EntryHeader {
            index: get_u64(b, 4),
            kind,
            crc: get_u32(b, 20),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_header_round_trips_and_any_flipped_byte_is_refused() {
        let h = RingHeader::for_region(1024);
        let bytes = h.encode();
        assert_eq!(RingHeader::decode(&bytes), Ok(h));
        for i in 0..RING_HEADER_LEN {
            let mut bad = bytes;
            bad[i] ^= 0x01;
            assert!(
                RingHeader::decode(&bad).is_err(),
                "a header with byte {i} flipped was accepted"
            );
        }
    }

    #[test]
    fn a_blank_region_is_not_formatted_rather_than_corrupt() {
        assert_eq!(
            RingHeader::decode(&[0; RING_HEADER_LEN]),
            Err(RingError::NotFormatted)
        );
    }

    #[test]
    fn an_entry_header_round_trips_its_fields() {
        let h = EntryHeader::new(4096, RecordKind::Entry { addr: 7, len: 3 }, b"abc");
        assert_eq!(EntryHeader::decode(&h.encode()), Ok(h));
        let pad = EntryHeader::new(12, RecordKind::Pad, &[]);
        assert_eq!(EntryHeader::decode(&pad.encode()), Ok(pad));
    }

    #[test]
    fn capacity_is_the_region_after_the_header_area_in_whole_words() {
        assert_eq!(capacity_for(DATA_OFFSET + 203), 200);
        assert_eq!(
            capacity_for(10),
            0,
            "a tiny region has no data area, not a wrapped one"
        );
    }
}
