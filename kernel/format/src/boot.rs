//! Opening an NVM at boot: accept a valid Amber NVM, format a blank one, refuse the rest.
//!
//! The rule this file keeps: a device that holds anything but a valid superblock or
//! blank bytes is never formatted unless the caller says so explicitly
//! ([`FormatPolicy::Always`]). It also keeps the boot record, a [`DualRecord`] holding
//! the boot counter, which survives a power cut during any of its updates.

use crate::dual::{DualRecord, Newest};
use crate::superblock::{Superblock, SuperblockError, SUPERBLOCK_LEN};
use crate::{get_u64, put_u64};
use amber_nvm::{Nvm, NvmError};
use core::fmt;

/// Payload bytes of the boot record.
const BOOT_PAYLOAD: usize = 16;
/// Bytes of one boot record slot.
pub(crate) const BOOT_SLOT_LEN: usize = DualRecord::<BOOT_PAYLOAD>::SLOT_LEN;

/// The boot record's payload.
///
/// | offset | size | field                                                     |
/// |--------|------|-----------------------------------------------------------|
/// | 0      | 8    | boots since the device was formatted, this one included   |
/// | 8      | 8    | completed iterations of the NVM stress loop (a test mode) |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BootRecord {
    pub boots: u64,
    pub stress: u64,
}

impl BootRecord {
    fn encode(&self) -> [u8; BOOT_PAYLOAD] {
        let mut b = [0u8; BOOT_PAYLOAD];
        put_u64(&mut b, 0, self.boots);
        put_u64(&mut b, 8, self.stress);
        b
    }

    fn decode(b: &[u8; BOOT_PAYLOAD]) -> Self {
        BootRecord {
            boots: get_u64(b, 0),
            stress: get_u64(b, 8),
        }
    }
}

/// When `open` may format the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatPolicy {
    /// Only a blank device (all 0x00 or all 0xFF superblock) is formatted.
    IfBlank,
    /// Format whatever the device holds (the user asked for it).
    Always,
}

/// What `open` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opened {
    /// The device was formatted now.
    Formatted,
    /// A valid Amber NVM was found.
    Found,
}

/// Why a device could not be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The superblock is not valid and the policy forbids formatting.
    Superblock(SuperblockError),
    /// The superblock is valid but neither boot record slot passes its checksum.
    NoBootRecord { at: u32 },
    /// The device failed.
    Nvm(NvmError),
}

impl From<NvmError> for OpenError {
    fn from(e: NvmError) -> Self {
        OpenError::Nvm(e)
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Superblock(e) => write!(f, "{e}"),
            OpenError::NoBootRecord { at } => write!(
                f,
                "both copies of the boot record at {at:#x} fail their checksum: the NVM header is corrupt"
            ),
            OpenError::Nvm(e) => write!(f, "{e}"),
        }
    }
}

/// An opened device's header: its superblock and the newest boot record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvmHeader {
    pub superblock: Superblock,
    record: DualRecord<BOOT_PAYLOAD>,
    newest: Newest<BOOT_PAYLOAD>,
}

impl NvmHeader {
    /// The newest committed boot record.
    pub fn boot_record(&self) -> BootRecord {
        BootRecord::decode(&self.newest.payload)
    }

    /// Sequence number of the newest boot record copy (for `nvm-inspect`).
    pub fn boot_record_seq(&self) -> u64 {
        self.newest.seq
    }

    /// Replaces the boot record; after `Ok` the new value survives any power cut, and
    /// until then the old one does.
    pub fn update(&mut self, nvm: &mut impl Nvm, rec: BootRecord) -> Result<(), NvmError> {
        self.newest = self.record.write(nvm, Some(&self.newest), &rec.encode())?;
        Ok(())
    }
}

/// Reads both boot record slots of a device with this superblock, without changing
/// anything: `Some((seq, record))` for each slot that passes its checksum. For tools
/// that inspect an image.
pub fn boot_record_slots(
    nvm: &mut impl Nvm,
    superblock: &Superblock,
) -> Result<[Option<(u64, BootRecord)>; 2], NvmError> {
    let record = DualRecord::<BOOT_PAYLOAD> {
        base: superblock.boot_record.offset,
    };
    let slot = |nvm: &mut _, i| {
        Ok::<_, NvmError>(
            record
                .read_slot(nvm, i)?
                .map(|(seq, p)| (seq, BootRecord::decode(&p))),
        )
    };
    Ok([slot(nvm, 0)?, slot(nvm, 1)?])
}

/// Opens the device: reads the superblock and boot record, formatting as `policy` allows.
pub fn open(nvm: &mut impl Nvm, policy: FormatPolicy) -> Result<(NvmHeader, Opened), OpenError> {
    if policy == FormatPolicy::Always {
        return Ok((format(nvm)?, Opened::Formatted));
    }
    let mut b = [0u8; SUPERBLOCK_LEN];
    nvm.read(0, &mut b)?;
    let superblock = match Superblock::decode(&b, nvm.size()) {
        Ok(sb) => sb,
        Err(SuperblockError::Blank) => return Ok((format(nvm)?, Opened::Formatted)),
        Err(e) => return Err(OpenError::Superblock(e)),
    };
    let record = DualRecord {
        base: superblock.boot_record.offset,
    };
    let newest = record
        .read(nvm)?
        .ok_or(OpenError::NoBootRecord { at: record.base })?;
    Ok((
        NvmHeader {
            superblock,
            record,
            newest,
        },
        Opened::Found,
    ))
}

/// Writes a fresh header: the superblock last, so that a cut during formatting leaves
/// a device that is blank or visibly corrupt, never one that looks formatted.
fn format(nvm: &mut impl Nvm) -> Result<NvmHeader, OpenError> {
    let superblock = Superblock::for_device(nvm.size()).map_err(OpenError::Superblock)?;
    // Invalidate the old superblock first, then both old boot record slots, whose
    // sequence numbers could otherwise outrank the new record.
    nvm.write(0, &[0; SUPERBLOCK_LEN])?;
    nvm.fence();
    let record = DualRecord {
        base: superblock.boot_record.offset,
    };
    nvm.write(record.base, &[0; 2 * BOOT_SLOT_LEN])?;
    nvm.fence();
    let newest = record.write(nvm, None, &BootRecord::default().encode())?;
    nvm.write(0, &superblock.encode())?;
    nvm.flush()?;
    Ok(NvmHeader {
        superblock,
        record,
        newest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use amber_nvm::sim::{Cut, PowerCut, VecNvm};

    const SIZE: u32 = 64 * 1024;

    fn boot(nvm: &mut VecNvm) -> (u64, Opened) {
        let (mut h, how) = open(nvm, FormatPolicy::IfBlank).unwrap();
        let mut rec = h.boot_record();
        rec.boots += 1;
        h.update(nvm, rec).unwrap();
        (rec.boots, how)
    }

    #[test]
    fn a_blank_device_is_formatted_and_later_boots_count_up() {
        let mut nvm = VecNvm::new(SIZE);
        assert_eq!(boot(&mut nvm), (1, Opened::Formatted));
        assert_eq!(boot(&mut nvm), (2, Opened::Found));
        assert_eq!(boot(&mut nvm), (3, Opened::Found));
    }

    #[test]
    fn a_corrupt_superblock_is_refused_and_left_untouched() {
        let mut nvm = VecNvm::new(SIZE);
        boot(&mut nvm);
        let mut b = [0u8; 1];
        nvm.read(20, &mut b).unwrap();
        nvm.write(20, &[b[0] ^ 0x40]).unwrap();
        let before = nvm.clone();
        let err = open(&mut nvm, FormatPolicy::IfBlank).unwrap_err();
        assert!(
            matches!(
                err,
                OpenError::Superblock(SuperblockError::BadChecksum { .. })
            ),
            "{err:?}"
        );
        assert_eq!(
            nvm, before,
            "refusing to boot must not change a byte of the NVM"
        );
    }

    #[test]
    fn an_explicit_format_replaces_a_corrupt_device_and_restarts_the_count() {
        let mut nvm = VecNvm::new(SIZE);
        for _ in 0..5 {
            boot(&mut nvm);
        }
        nvm.write(0, b"garbage!").unwrap();
        let (h, how) = open(&mut nvm, FormatPolicy::Always).unwrap();
        assert_eq!(how, Opened::Formatted);
        assert_eq!(
            h.boot_record().boots,
            0,
            "old boot records must not outlive a format"
        );
        assert_eq!(boot(&mut nvm), (1, Opened::Found));
    }

    #[test]
    fn a_header_with_both_boot_records_corrupt_is_refused() {
        let mut nvm = VecNvm::new(SIZE);
        boot(&mut nvm);
        nvm.write(0x100, &[0xAA; 2 * BOOT_SLOT_LEN]).unwrap();
        assert_eq!(
            open(&mut nvm, FormatPolicy::IfBlank),
            Err(OpenError::NoBootRecord { at: 0x100 })
        );
    }

    #[test]
    fn a_cut_at_any_store_of_a_boot_never_loses_a_completed_boot() {
        // Boot twice, then cut the third boot at every store and torn split.
        let mut base = VecNvm::new(SIZE);
        boot(&mut base);
        boot(&mut base);
        let mut probe = PowerCut::never(base.clone());
        let (mut h, _) = open(&mut probe, FormatPolicy::IfBlank).unwrap();
        h.update(
            &mut probe,
            BootRecord {
                boots: 3,
                stress: 0,
            },
        )
        .unwrap();
        let lens = probe.store_lens().to_vec();
        let mut explored = 0;
        for (k, &len) in lens.iter().enumerate() {
            for keep in 0..=len {
                let cut = Cut {
                    at_store: k as u64,
                    keep_bytes: keep,
                };
                let mut nvm = PowerCut::at(base.clone(), cut);
                let _ = open(&mut nvm, FormatPolicy::IfBlank).and_then(|(mut h, _)| {
                    Ok(h.update(
                        &mut nvm,
                        BootRecord {
                            boots: 3,
                            stress: 0,
                        },
                    )?)
                });
                let mut after = nvm.into_inner();
                let (h, how) = open(&mut after, FormatPolicy::IfBlank).unwrap();
                assert_eq!(how, Opened::Found, "a cut made the device look blank");
                let boots = h.boot_record().boots;
                assert!(
                    boots == 2 || boots == 3,
                    "cut at store {k} byte {keep}: boots = {boots}"
                );
                explored += 1;
            }
        }
        assert!(explored > 0);
    }
}
