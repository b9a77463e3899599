//! Slot descriptors: the 32 bytes on NVM that say what one backup slot of an item holds.
//!
//! Decoding must never trust bytes it cannot vouch for: anything that fails the CRC
//! or has an impossible field decodes to [`Copy::Invalid`], never to a copy.

use crate::error::Problem;
use crate::layout::{BlockNo, Extent, Layout, DESC_LEN};
use crate::Version;
use amber_format::crc32;

/// Descriptor state byte values.
const STATE_DATA: u8 = 1;
const STATE_TOMBSTONE: u8 = 2;
const STATE_ERASED: u8 = 3;

/// What one backup slot holds.
///
/// Encoding (32 bytes; all zero = [`Copy::Empty`]):
///
/// | offset | size | field                                                        |
/// |--------|------|--------------------------------------------------------------|
/// | 0      | 8    | version the copy belongs to (0 for an erased slot)           |
/// | 8      | 2    | item id (must equal the ORoot's index)                       |
/// | 10     | 1    | kind byte (data only)                                        |
/// | 11     | 1    | state: 1 = data, 2 = tombstone (item deleted), 3 = erased    |
/// | 12     | 4    | data length in bytes                                         |
/// | 16     | 4    | extent: first block                                          |
/// | 20     | 4    | extent: blocks (0, or a power of two)                        |
/// | 24     | 4    | CRC-32 of the data                                           |
/// | 28     | 4    | CRC-32 of bytes 0..28                                        |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Copy {
    /// Never written since the area was formatted: the item had no copy here, ever.
    Empty,
    /// Deliberately cleared (it held an uncommitted or rolled-back copy): no copy.
    Erased,
    /// Unreadable: torn by a power cut or corrupt.
    Invalid(Problem),
    /// The item did not exist at `version` (it was deleted then).
    Tombstone { version: Version },
    /// The item's bytes at `version`.
    Data {
        version: Version,
        kind: u8,
        len: u32,
        extent: Extent,
        crc: u32,
    },
}

impl Copy {
    /// The version this copy belongs to, if it is a copy.
    pub fn version(&self) -> Option<Version> {
        match *self {
            Copy::Tombstone { version } | Copy::Data { version, .. } => Some(version),
            _ => None,
        }
    }

    /// The blocks this copy owns.
    pub fn extent(&self) -> Option<Extent> {
        match *self {
            Copy::Data { extent, .. } if extent.blocks > 0 => Some(extent),
            _ => None,
        }
    }

    pub fn encode(&self, id: u16) -> [u8; DESC_LEN] {
        let mut b = [0u8; DESC_LEN];
        let (version, kind, state, len, extent, crc) = match *self {
            Copy::Empty | Copy::Invalid(_) => return b,
            Copy::Erased => (Version(0), 0, STATE_ERASED, 0, Extent::NONE, 0),
            Copy::Tombstone { version } => (version, 0, STATE_TOMBSTONE, 0, Extent::NONE, 0),
            Copy::Data {
                version,
                kind,
                len,
                extent,
                crc,
            } => (version, kind, STATE_DATA, len, extent, crc),
        };
        b[0..8].copy_from_slice(&version.0.to_le_bytes());
        b[8..10].copy_from_slice(&id.to_le_bytes());
        b[10] = kind;
        b[11] = state;
        b[12..16].copy_from_slice(&len.to_le_bytes());
        b[16..20].copy_from_slice(&extent.first.0.to_le_bytes());
        b[20..24].copy_from_slice(&extent.blocks.to_le_bytes());
        b[24..28].copy_from_slice(&crc.to_le_bytes());
        let c = crc32(&b[..28]);
        b[28..32].copy_from_slice(&c.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8], id: u16, layout: &Layout) -> Copy {
        if b.len() != DESC_LEN {
            return Copy::Invalid(Problem::DescriptorField {
                what: "descriptor has the wrong length",
            });
        }
        if b.iter().all(|&x| x == 0) {
            return Copy::Empty;
        }
        let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        if u32_at(28) != crc32(&b[..28]) {
            return Copy::Invalid(Problem::DescriptorChecksum);
        }
        let bad = |what| Copy::Invalid(Problem::DescriptorField { what });
        let mut v = [0u8; 8];
        v.copy_from_slice(&b[0..8]);
        let version = Version(u64::from_le_bytes(v));
        if u16::from_le_bytes([b[8], b[9]]) != id {
            return bad("it names another item");
        }
        let len = u32_at(12);
        let extent = Extent {
            first: BlockNo(u32_at(16)),
            blocks: u32_at(20),
        };
        let no_payload = b[10] == 0 && len == 0 && extent == Extent::NONE && u32_at(24) == 0;
        match b[11] {
            STATE_ERASED if version.0 == 0 && no_payload => Copy::Erased,
            STATE_ERASED => bad("an erased slot carries fields"),
            STATE_TOMBSTONE if version.0 > 0 && no_payload => Copy::Tombstone { version },
            STATE_TOMBSTONE => bad("a tombstone carries data or no version"),
            STATE_DATA => {
                if version.0 == 0 {
                    return bad("a copy tagged version 0");
                }
                if !layout.extent_ok(extent) {
                    return bad("its extent lies outside the extent space or is misaligned");
                }
                if len as u64 > extent.bytes() || (len > 0) != (extent.blocks > 0) {
                    return bad("its length does not fit its extent");
                }
                Copy::Data {
                    version,
                    kind: b[10],
                    len,
                    extent,
                    crc: u32_at(24),
                }
            }
            _ => bad("unknown state byte"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amber_format::Region;

    fn layout() -> Layout {
        Layout::new(Region {
            offset: 0,
            len: 64 * 1024,
        })
        .unwrap()
    }

    fn data() -> Copy {
        Copy::Data {
            version: Version(7),
            kind: 3,
            len: 100,
            extent: Extent {
                first: BlockNo(8),
                blocks: 4,
            },
            crc: 0xDEAD_BEEF,
        }
    }

    #[test]
    fn every_kind_of_descriptor_decodes_to_what_was_encoded() {
        let l = layout();
        for c in [
            Copy::Empty,
            Copy::Erased,
            Copy::Tombstone {
                version: Version(3),
            },
            data(),
        ] {
            assert_eq!(Copy::decode(&c.encode(5), 5, &l), c);
        }
        assert_eq!(Copy::Empty.encode(5), [0; DESC_LEN], "empty is all zero");
    }

    #[test]
    fn every_single_bit_flip_of_a_descriptor_is_detected() {
        let l = layout();
        for c in [
            data(),
            Copy::Erased,
            Copy::Tombstone {
                version: Version(9),
            },
        ] {
            let good = c.encode(5);
            for bit in 0..DESC_LEN * 8 {
                let mut b = good;
                b[bit / 8] ^= 1 << (bit % 8);
                assert!(
                    matches!(Copy::decode(&b, 5, &l), Copy::Invalid(_)),
                    "flipping bit {bit} of {c:?} went unnoticed: a corrupt copy would be trusted"
                );
            }
        }
    }

    #[test]
    fn every_torn_prefix_of_a_descriptor_over_another_is_not_a_copy() {
        // A descriptor being overwritten by power-cut-torn bytes must never decode as a
        // copy other than the old or the new one.
        let l = layout();
        let old = Copy::Tombstone {
            version: Version(2),
        }
        .encode(5);
        let new = data().encode(5);
        for keep in 1..DESC_LEN {
            let mut b = old;
            b[..keep].copy_from_slice(&new[..keep]);
            assert!(
                matches!(Copy::decode(&b, 5, &l), Copy::Invalid(_)),
                "torn at {keep}"
            );
        }
    }

    #[test]
    fn a_descriptor_in_the_wrong_oroot_is_refused() {
        let l = layout();
        assert!(matches!(
            Copy::decode(&data().encode(5), 6, &l),
            Copy::Invalid(Problem::DescriptorField { .. })
        ));
    }

    #[test]
    fn a_checksummed_descriptor_with_an_impossible_extent_is_refused() {
        let l = layout();
        let c = Copy::Data {
            version: Version(1),
            kind: 0,
            len: 10,
            extent: Extent {
                first: BlockNo(l.blocks),
                blocks: 1,
            },
            crc: 0,
        };
        assert!(matches!(
            Copy::decode(&c.encode(0), 0, &l),
            Copy::Invalid(Problem::DescriptorField { .. })
        ));
    }
}
