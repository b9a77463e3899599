//! Slot descriptors: the 16 bytes on NVM that say what one backup slot of an item holds,
//! sealed together with the data they describe by one checksum.
//!
//! One CRC covers the item id, the descriptor's fields and the data, so a copy is
//! written as its data and 16 bytes, and checked as a whole: a torn or corrupt
//! descriptor and torn or corrupt data look alike (the copy is [`Copy::Invalid`]),
//! which is all recovery needs to know. Decoding must never trust bytes it cannot
//! vouch for: anything that fails the CRC or has an impossible field decodes to
//! [`Copy::Invalid`], never to a copy.
//!
//! # Twins
//!
//! A *twin* is a second copy of the same bytes and version as the item's designated
//! copy, in its other slot. The manager writes one right after the commit of the
//! first checkpoint at which the item is clean, into the slot that held the item's
//! previous version (which no kept commit uses any more), so that from then on a
//! corrupt designated copy falls back to its twin and no version is lost. Its state
//! says "twin", so that recovery can tell it from the previous version, which sits in
//! the same place until then and must never stand in for the newest one. A twin is
//! never in the designated slot: the next write of the item overwrites it.

use crate::checksum::Digest;
use crate::error::{BadField, Problem};
use crate::layout::{blocks_for, BlockNo, Extent, Layout, DESC_LEN, LEN_BITS, MAX_VERSION};
use crate::Version;

/// Descriptor state values (bits 38..40 of the place field).
const STATE_COPY: u32 = 1;
const STATE_TWIN: u32 = 2;
const STATE_ERASED: u32 = 3;

/// Bytes of a descriptor before its CRC.
pub(crate) const HEAD_LEN: usize = 12;

const FIELD_MASK: u64 = (1 << LEN_BITS) - 1;

/// What one backup slot holds.
///
/// Encoding (16 bytes; all zero = [`Copy::Empty`]):
///
/// | offset | size | field                                                        |
/// |--------|------|--------------------------------------------------------------|
/// | 0      | 6    | version the copy belongs to, 48 bits (0 for an erased slot)  |
/// | 6      | 1    | kind byte (copies only, else 0)                              |
/// | 7      | 5    | place, 40 bits: bits 0..19 data length in bytes; bits 19..38 first block of the extent; bits 38..40 state: 1 = copy, 2 = twin (a second copy of the designated one), 3 = erased; 0 is not used |
/// | 12     | 4    | CRC-32 of the item id (2 bytes), bytes 0..12, and the data   |
///
/// The extent holds `blocks_for(length)` blocks (0 when the length is 0, and then its
/// first block is 0); erased slots have length 0 and no data. The version bound is
/// [`MAX_VERSION`]; lengths and block numbers are below 2^19 (`layout::MAX_DATA_LEN`,
/// `layout::MAX_BLOCKS`). (Format 2 used state 2 for tombstones; format 3 records
/// deletion in the commit record's live bitmap instead.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Copy {
    /// Never written since the area was formatted: the item had no copy here, ever.
    Empty,
    /// Deliberately cleared (it held an uncommitted, unused or unreadable copy).
    Erased,
    /// Unreadable: torn by a power cut or corrupt.
    Invalid(Problem),
    /// The item's bytes at `version`; `crc` seals them with the descriptor. `twin`:
    /// a second copy of the designated one (see the file documentation).
    Data {
        version: Version,
        kind: u8,
        len: u32,
        extent: Extent,
        crc: u32,
        twin: bool,
    },
}

impl Copy {
    /// The version this copy belongs to, if it is a copy.
    pub fn version(&self) -> Option<Version> {
        match *self {
            Copy::Data { version, .. } => Some(version),
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

    /// Whether the slot holds anything recovery or a checkpoint must look at (not
    /// empty, not erased).
    pub fn is_stored(&self) -> bool {
        !matches!(self, Copy::Empty | Copy::Erased)
    }

    /// Whether this is a twin.
    pub fn is_twin(&self) -> bool {
        matches!(self, Copy::Data { twin: true, .. })
    }

    /// A copy of `bytes` for item `id` at `extent`, and its descriptor: the CRC is
    /// computed once, over the id, the head and `bytes`. `bytes.len()` must be at most
    /// `MAX_DATA_LEN` and fit the extent.
    #[inline]
    pub fn data(
        id: u16,
        version: Version,
        kind: u8,
        extent: Extent,
        bytes: &[u8],
        twin: bool,
    ) -> (Copy, [u8; DESC_LEN]) {
        let sealed: Result<_, core::convert::Infallible> =
            Copy::sealed(id, version, kind, extent, bytes.len() as u32, twin, |d| {
                d.update(bytes);
                Ok(())
            });
        match sealed {
            Ok(c) => c,
        }
    }

    /// As [`Copy::data`] for `len` bytes that `feed` puts into the digest (data that
    /// is copied in pieces, which may fail).
    pub fn sealed<E>(
        id: u16,
        version: Version,
        kind: u8,
        extent: Extent,
        len: u32,
        twin: bool,
        feed: impl FnOnce(&mut Digest) -> Result<(), E>,
    ) -> Result<(Copy, [u8; DESC_LEN]), E> {
        let mut c = Copy::Data {
            version,
            kind,
            len,
            extent,
            crc: 0,
            twin,
        };
        let mut b = c.prefixed_head(id);
        let mut d = Digest::new();
        d.update(&b[..2 + HEAD_LEN]);
        feed(&mut d)?;
        let sum = d.finalize();
        if let Copy::Data { crc, .. } = &mut c {
            *crc = sum;
        }
        b.copy_within(2..2 + HEAD_LEN, 0);
        b[HEAD_LEN..].copy_from_slice(&sum.to_le_bytes());
        Ok((c, b))
    }

    /// The first 12 bytes of the encoding (zero for `Empty` and `Invalid`).
    pub fn head(&self) -> [u8; HEAD_LEN] {
        let b = self.prefixed_head(0);
        let mut h = [0u8; HEAD_LEN];
        h.copy_from_slice(&b[2..2 + HEAD_LEN]);
        h
    }

    /// The id (2 bytes), then the head, then two zero bytes: what the CRC covers
    /// before the data.
    #[inline]
    fn prefixed_head(&self, id: u16) -> [u8; DESC_LEN] {
        let mut b = [0u8; DESC_LEN];
        let (version, kind, state, len, first) = match *self {
            Copy::Empty | Copy::Invalid(_) => return b,
            Copy::Erased => (0, 0, STATE_ERASED, 0, 0),
            Copy::Data {
                version,
                kind,
                len,
                extent,
                twin,
                ..
            } => (
                version.0,
                kind,
                if twin { STATE_TWIN } else { STATE_COPY },
                len,
                extent.first.0,
            ),
        };
        b[0..2].copy_from_slice(&id.to_le_bytes());
        b[2..8].copy_from_slice(&version.to_le_bytes()[..6]);
        b[8] = kind;
        // The 40-bit place field in 32-bit pieces (RV32 has no 64-bit shifts):
        // length in bits 0..19, first block in 19..38, state in 38..40.
        let low = len | first << LEN_BITS;
        b[9..13].copy_from_slice(&low.to_le_bytes());
        b[13] = (first >> (32 - LEN_BITS)) as u8 | (state << (2 * LEN_BITS - 32)) as u8;
        b
    }

    /// The checksum over the item id and the head, before the data.
    fn digest(&self, id: u16) -> Digest {
        let mut d = Digest::new();
        d.update(&self.prefixed_head(id)[..2 + HEAD_LEN]);
        d
    }

    /// Whether `bytes` are this copy's data for item `id` (true for copies with no data).
    pub fn seals(&self, id: u16, bytes: &[u8]) -> bool {
        match *self {
            Copy::Data { crc, .. } => {
                let mut d = self.digest(id);
                d.update(bytes);
                d.finalize() == crc
            }
            _ => true,
        }
    }

    pub fn encode(&self, id: u16) -> [u8; DESC_LEN] {
        let mut b = [0u8; DESC_LEN];
        let crc = match *self {
            Copy::Empty | Copy::Invalid(_) => return b,
            Copy::Data { crc, .. } => crc,
            Copy::Erased => self.digest(id).finalize(),
        };
        b[..HEAD_LEN].copy_from_slice(&self.head());
        b[HEAD_LEN..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes the descriptor `b` of item `id`. For a copy, `data` must feed the `len`
    /// bytes at `extent` into the digest (from NVM); it is called only for a
    /// well-formed extent inside the area.
    pub fn decode<E>(
        b: &[u8; DESC_LEN],
        id: u16,
        layout: &Layout,
        data: impl FnOnce(&mut Digest, Extent, u32) -> Result<(), E>,
    ) -> Result<Copy, E> {
        if b.iter().all(|&x| x == 0) {
            return Ok(Copy::Empty);
        }
        let bad = |what| Ok(Copy::Invalid(Problem::DescriptorField { what }));
        let mut v = [0u8; 8];
        v[..6].copy_from_slice(&b[0..6]);
        let version = Version(u64::from_le_bytes(v));
        let kind = b[6];
        let mut p = [0u8; 8];
        p[..5].copy_from_slice(&b[7..12]);
        let place = u64::from_le_bytes(p);
        let len = (place & FIELD_MASK) as u32;
        let first = ((place >> LEN_BITS) & FIELD_MASK) as u32;
        let state = (place >> (2 * LEN_BITS)) as u32;
        let stored = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
        let copy = match state {
            STATE_ERASED if version.0 == 0 && kind == 0 && len == 0 && first == 0 => Copy::Erased,
            STATE_ERASED => return bad(BadField::ErasedWithFields),
            STATE_COPY | STATE_TWIN => {
                let extent = Extent {
                    first: BlockNo(first),
                    blocks: blocks_for(len as usize) as u32,
                };
                if version.0 == 0 {
                    return bad(BadField::VersionZero);
                }
                if !layout.extent_ok(extent) {
                    return bad(BadField::Extent);
                }
                Copy::Data {
                    version,
                    kind,
                    len,
                    extent,
                    crc: stored,
                    twin: state == STATE_TWIN,
                }
            }
            _ => return bad(BadField::State),
        };
        debug_assert!(version.0 <= MAX_VERSION);
        let mut d = copy.digest(id);
        if let Copy::Data { len, extent, .. } = copy {
            data(&mut d, extent, len)?;
        }
        Ok(if d.finalize() == stored {
            copy
        } else {
            Copy::Invalid(Problem::Checksum)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use amber_format::Region;
    use core::convert::Infallible;

    fn layout() -> Layout {
        Layout::new(Region {
            offset: 0,
            len: 64 * 1024,
        })
        .unwrap()
    }

    fn bytes() -> Vec<u8> {
        (0..100u8).map(|i| i.wrapping_mul(13)).collect()
    }

    fn data_as(twin: bool) -> Copy {
        let (c, b) = Copy::data(
            5,
            Version(0x1234_5678_9ABC),
            3,
            Extent {
                first: BlockNo(8),
                blocks: 4,
            },
            &bytes(),
            twin,
        );
        assert_eq!(c.encode(5), b, "the descriptor is the copy's encoding");
        c
    }

    fn data() -> Copy {
        data_as(false)
    }

    /// Decodes `desc` of item `id` with `bytes` as the data on NVM.
    fn decode(desc: &[u8; DESC_LEN], id: u16, bytes: &[u8]) -> Copy {
        let r: Result<Copy, Infallible> = Copy::decode(desc, id, &layout(), |d, _, len| {
            d.update(&bytes[..(len as usize).min(bytes.len())]);
            Ok(())
        });
        r.unwrap()
    }

    fn copies() -> [Copy; 3] {
        [data(), data_as(true), Copy::Erased]
    }

    #[test]
    fn every_kind_of_descriptor_decodes_to_what_was_encoded() {
        for c in [Copy::Empty, Copy::Erased, data(), data_as(true)] {
            assert_eq!(decode(&c.encode(5), 5, &bytes()), c);
        }
        assert_ne!(
            data().encode(5),
            data_as(true).encode(5),
            "a twin is told from the copy it doubles"
        );
        assert_eq!(Copy::Empty.encode(5), [0; DESC_LEN], "empty is all zero");
        assert_ne!(Copy::Erased.encode(5), [0; DESC_LEN], "erased is not empty");
        assert!(data().seals(5, &bytes()) && !data().seals(5, &bytes()[1..]));
    }

    #[test]
    fn the_largest_version_length_and_block_round_trip() {
        let l = Layout::new(Region {
            offset: 0,
            len: 32 << 20,
        })
        .unwrap();
        let big = alloc::vec![7u8; crate::layout::MAX_DATA_LEN as usize];
        let (c, _) = Copy::data(
            1,
            Version(MAX_VERSION),
            0xFF,
            Extent {
                first: BlockNo(crate::layout::MAX_BLOCKS - (1 << 14)),
                blocks: 1 << 14,
            },
            &big,
            false,
        );
        let r: Result<Copy, Infallible> = Copy::decode(&c.encode(1), 1, &l, |d, _, _| {
            d.update(&big);
            Ok(())
        });
        assert_eq!(r.unwrap(), c);
    }

    #[test]
    fn every_single_bit_flip_of_a_descriptor_or_its_data_is_detected() {
        for c in copies() {
            let good = c.encode(5);
            for bit in 0..DESC_LEN * 8 {
                let mut b = good;
                b[bit / 8] ^= 1 << (bit % 8);
                assert!(
                    matches!(decode(&b, 5, &bytes()), Copy::Invalid(_)),
                    "flipping bit {bit} of {c:?} went unnoticed: a corrupt copy would be trusted"
                );
            }
        }
        let good = data().encode(5);
        for bit in 0..100 * 8 {
            let mut d = bytes();
            d[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(
                decode(&good, 5, &d),
                Copy::Invalid(Problem::Checksum),
                "flipping data bit {bit} went unnoticed"
            );
        }
    }

    #[test]
    fn every_torn_prefix_of_a_descriptor_over_another_is_not_a_copy() {
        // A descriptor being overwritten by power-cut-torn bytes must never decode as a
        // copy other than the old or the new one, whatever the data holds.
        for old in copies() {
            for new in copies() {
                if old == new {
                    continue;
                }
                let (o, n) = (old.encode(5), new.encode(5));
                for keep in 1..DESC_LEN {
                    let mut b = o;
                    b[..keep].copy_from_slice(&n[..keep]);
                    if b == o || b == n {
                        continue;
                    }
                    let got = decode(&b, 5, &bytes());
                    assert!(
                        matches!(got, Copy::Invalid(_)),
                        "{old:?} torn by {new:?} at {keep}: {got:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_descriptor_in_the_wrong_oroot_is_refused() {
        for c in copies() {
            assert!(matches!(
                decode(&c.encode(5), 6, &bytes()),
                Copy::Invalid(_)
            ));
        }
    }

    #[test]
    fn a_checksummed_descriptor_with_an_impossible_extent_is_refused() {
        let l = layout();
        let (c, _) = Copy::data(
            0,
            Version(1),
            0,
            Extent {
                first: BlockNo(l.blocks),
                blocks: 1,
            },
            &[1; 10],
            false,
        );
        assert!(matches!(
            decode(&c.encode(0), 0, &[1; 10]),
            Copy::Invalid(Problem::DescriptorField { .. })
        ));
        let (misaligned, _) = Copy::data(
            0,
            Version(1),
            0,
            Extent {
                first: BlockNo(2),
                blocks: 4,
            },
            &[1; 100],
            false,
        );
        assert!(matches!(
            decode(&misaligned.encode(0), 0, &[1; 100]),
            Copy::Invalid(Problem::DescriptorField { .. })
        ));
    }
}
