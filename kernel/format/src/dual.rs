//! `DualRecord`: a small record kept twice on NVM so that a torn write never loses it.
//!
//! Each update goes to the slot that does *not* hold the newest valid copy, with the
//! next sequence number and a checksum. A power cut tears at most the slot being
//! written, whose checksum then fails, and the reader falls back to the other slot,
//! which holds the previous value. This file must never write the slot it read the
//! newest value from.

use crate::{crc32, get_u32, get_u64, put_u32, put_u64};
use amber_nvm::{Nvm, NvmError};

/// Largest slot this type handles (payload + 12 bytes of sequence and checksum).
const MAX_SLOT: usize = 80;

/// A record of `N` payload bytes in two slots starting at `base`.
///
/// One slot:
///
/// | offset | size | field                                              |
/// |--------|------|----------------------------------------------------|
/// | 0      | 8    | sequence number (0 = never written)                |
/// | 8      | N    | payload                                            |
/// | 8 + N  | 4    | CRC-32 of bytes 0..8 + N                           |
///
/// Slot 0 lies at `base`, slot 1 right after it at `base + SLOT_LEN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DualRecord<const N: usize> {
    pub base: u32,
}

/// The newest valid copy of a [`DualRecord`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Newest<const N: usize> {
    pub seq: u64,
    /// Which slot (0 or 1) holds it.
    pub slot: u32,
    pub payload: [u8; N],
}

impl<const N: usize> DualRecord<N> {
    /// Bytes per slot.
    pub const SLOT_LEN: usize = {
        assert!(N + 12 <= MAX_SLOT, "DualRecord payload too large");
        N + 12
    };

    fn slot_offset(&self, slot: u32) -> u32 {
        self.base + slot * Self::SLOT_LEN as u32
    }

    /// Reads one slot: `Some((seq, payload))` when it holds a valid copy.
    pub fn read_slot(
        &self,
        nvm: &mut impl Nvm,
        slot: u32,
    ) -> Result<Option<(u64, [u8; N])>, NvmError> {
        let mut buf = [0u8; MAX_SLOT];
        let b = &mut buf[..Self::SLOT_LEN];
        nvm.read(self.slot_offset(slot), b)?;
        let seq = get_u64(b, 0);
        if seq == 0 || get_u32(b, 8 + N) != crc32(&b[..8 + N]) {
            return Ok(None);
        }
        let mut payload = [0u8; N];
        payload.copy_from_slice(&b[8..8 + N]);
        Ok(Some((seq, payload)))
    }

    /// Reads both slots and returns the valid copy with the higher sequence number,
    /// or `None` when neither slot is valid.
    pub fn read(&self, nvm: &mut impl Nvm) -> Result<Option<Newest<N>>, NvmError> {
        let a = self.read_slot(nvm, 0)?;
        let b = self.read_slot(nvm, 1)?;
        let pick = |slot, (seq, payload)| Newest { seq, slot, payload };
        Ok(match (a, b) {
            (Some(a), Some(b)) if b.0 > a.0 => Some(pick(1, b)),
            (Some(a), _) => Some(pick(0, a)),
            (None, Some(b)) => Some(pick(1, b)),
            (None, None) => None,
        })
    }

    /// Writes `payload` as the successor of `newest` (or as the first copy when there is
    /// none) into the other slot, and flushes. Returns the new newest copy.
    pub fn write(
        &self,
        nvm: &mut impl Nvm,
        newest: Option<&Newest<N>>,
        payload: &[u8; N],
    ) -> Result<Newest<N>, NvmError> {
        let (seq, slot) = match newest {
            Some(n) => (n.seq + 1, 1 - n.slot),
            None => (1, 0),
        };
        let mut buf = [0u8; MAX_SLOT];
        let b = &mut buf[..Self::SLOT_LEN];
        put_u64(b, 0, seq);
        b[8..8 + N].copy_from_slice(payload);
        let crc = crc32(&b[..8 + N]);
        put_u32(b, 8 + N, crc);
        nvm.write(self.slot_offset(slot), b)?;
        nvm.flush()?;
        Ok(Newest {
            seq,
            slot,
            payload: *payload,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amber_nvm::sim::{Cut, PowerCut, VecNvm};

    const REC: DualRecord<4> = DualRecord { base: 16 };

    #[test]
    fn an_empty_device_has_no_record() {
        assert_eq!(REC.read(&mut VecNvm::new(64)).unwrap(), None);
    }

    #[test]
    fn updates_alternate_slots_and_the_newest_wins() {
        let mut nvm = VecNvm::new(64);
        let first = REC.write(&mut nvm, None, &[1; 4]).unwrap();
        let second = REC.write(&mut nvm, Some(&first), &[2; 4]).unwrap();
        assert_ne!(
            first.slot, second.slot,
            "an update must not overwrite the newest copy"
        );
        assert_eq!(REC.read(&mut nvm).unwrap(), Some(second));
    }

    #[test]
    fn a_write_torn_at_any_byte_leaves_the_old_or_the_new_value() {
        // Write value 1, 2, then tear the write of 3 at every byte.
        let len = DualRecord::<4>::SLOT_LEN;
        for keep in 0..=len {
            let mut nvm = VecNvm::new(64);
            let one = REC.write(&mut nvm, None, &[1; 4]).unwrap();
            let two = REC.write(&mut nvm, Some(&one), &[2; 4]).unwrap();
            let mut cut = PowerCut::at(
                nvm,
                Cut {
                    at_store: 0,
                    keep_bytes: keep,
                },
            );
            assert!(REC.write(&mut cut, Some(&two), &[3; 4]).is_err());
            let mut after = cut.into_inner();
            let got = REC
                .read(&mut after)
                .unwrap()
                .expect("a torn write lost the record");
            let expect = if keep == len { [3; 4] } else { [2; 4] };
            assert_eq!(
                got.payload, expect,
                "torn after {keep} bytes: got a value that was never written whole"
            );
        }
    }
}
