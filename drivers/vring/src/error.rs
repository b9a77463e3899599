//! What can go wrong with the request ring, each failure named and shown in words.
//!
//! Two kinds matter to the caller: [`RingError::Full`] is back-pressure (request a
//! checkpoint, apply, retry: nothing was written), and [`RingError::Nvm`] with
//! `PowerLost` ends the run. Everything else is a broken ring or a caller bug, and the
//! ring refuses to touch the device rather than guess.

use amber_nvm::NvmError;
use core::fmt;

/// Why a record in the data area was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryFault {
    /// The kind field is neither an entry nor a pad (torn, dropped, or never written).
    BadKind { found: [u8; 4] },
    /// The record belongs to another position of the log (a stale lap or a dropped one).
    WrongIndex { found: u64 },
    /// The data length runs past the end of the data area.
    BadLength { len: u32 },
    /// The CRC-32 over header and data does not match: the record is garbage.
    BadChecksum { stored: u32, computed: u32 },
}

/// What went wrong in a ring operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// The ring or the device failed (power lost, or an access out of the device).
    Nvm(NvmError),
    /// The region does not lie inside the ring's NVM.
    RegionOutsideNvm { offset: u32, len: u32, size: u32 },
    /// The region is too small to hold the header and a useful data area.
    RegionTooSmall { len: u32, min: u32 },
    /// No ring header here: a blank region, or a format that was cut short.
    NotFormatted,
    /// The header names a format version this code does not read.
    UnsupportedVersion { found: u32 },
    /// The header's checksum fails or its fields are impossible.
    BadHeader,
    /// The header was written for a region of another length.
    RegionMismatch { formatted_len: u32, len: u32 },
    /// Neither copy of the applied index is valid (corruption: format cannot tear it).
    AppliedRecordLost,
    /// An entry can never fit in the ring, even empty.
    EntryTooLarge { len: usize, max: u32 },
    /// A write to `[addr, addr + len)` does not lie inside the device.
    OutsideDevice { addr: u32, len: usize, size: u32 },
    /// Back-pressure: the entry needs `needed` bytes and only `free` are free. Request a
    /// checkpoint, apply up to its visible index, and retry; nothing was written.
    Full { needed: u32, free: u32 },
    /// The visible index lies below the applied index: the kernel's committed index
    /// went backwards, which a committed checkpoint never does.
    VisibleBehindApplied { visible: u64, applied: u64 },
    /// The visible index lies beyond the writer index (or beyond one ring's worth of
    /// entries after the applied index, at restore).
    VisibleBeyondWriter { visible: u64, writer: u64 },
    /// The visible index falls inside the record starting at `record`, not between two.
    VisibleInsideRecord { visible: u64, record: u64 },
    /// A record below the visible index is corrupt; nothing of the range was applied.
    CorruptEntry { index: u64, fault: EntryFault },
    /// The pending-entry index given to `IndexedRing::open` has fewer slots than the
    /// ring can hold entries.
    IndexTooSmall { slots: usize, needed: usize },
}

impl From<NvmError> for RingError {
    fn from(e: NvmError) -> Self {
        RingError::Nvm(e)
    }
}

impl fmt::Display for EntryFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EntryFault::BadKind { found } => write!(f, "unknown record kind {found:02x?}"),
            EntryFault::WrongIndex { found } => {
                write!(f, "record belongs to log index {found}")
            }
            EntryFault::BadLength { len } => {
                write!(f, "data length {len} runs past the data area")
            }
            EntryFault::BadChecksum { stored, computed } => write!(
                f,
                "checksum {stored:#010x} stored, {computed:#010x} computed"
            ),
        }
    }
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RingError::Nvm(e) => write!(f, "ring NVM or device failed: {e}"),
            RingError::RegionOutsideNvm { offset, len, size } => write!(
                f,
                "ring region of {len} bytes at {offset:#x} is outside the {size}-byte NVM"
            ),
            RingError::RegionTooSmall { len, min } => {
                write!(
                    f,
                    "ring region of {len} bytes is below the minimum of {min}"
                )
            }
            RingError::NotFormatted => f.write_str("no request ring is formatted here"),
            RingError::UnsupportedVersion { found } => {
                write!(f, "request ring format version {found} is not supported")
            }
            RingError::BadHeader => f.write_str("request ring header is corrupt"),
            RingError::RegionMismatch { formatted_len, len } => write!(
                f,
                "ring was formatted for a {formatted_len}-byte region, opened with {len} bytes"
            ),
            RingError::AppliedRecordLost => {
                f.write_str("both copies of the ring's applied index are corrupt")
            }
            RingError::EntryTooLarge { len, max } => write!(
                f,
                "a write of {len} bytes can never fit in the ring (at most {max})"
            ),
            RingError::OutsideDevice { addr, len, size } => write!(
                f,
                "a write of {len} bytes at {addr:#x} is outside the {size}-byte device"
            ),
            RingError::Full { needed, free } => write!(
                f,
                "request ring full: {needed} bytes needed, {free} free; take a checkpoint and apply"
            ),
            RingError::VisibleBehindApplied { visible, applied } => write!(
                f,
                "visible index {visible} is behind the applied index {applied}"
            ),
            RingError::VisibleBeyondWriter { visible, writer } => write!(
                f,
                "visible index {visible} is beyond the writer index {writer}"
            ),
            RingError::VisibleInsideRecord { visible, record } => write!(
                f,
                "visible index {visible} falls inside the record at {record}"
            ),
            RingError::CorruptEntry { index, fault } => {
                write!(f, "ring record at log index {index} is corrupt: {fault}")
            }
            RingError::IndexTooSmall { slots, needed } => write!(
                f,
                "the pending-entry index has {slots} slots, the ring can hold {needed} entries"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_shown_in_words() {
        let full = RingError::Full {
            needed: 40,
            free: 12,
        };
        assert_eq!(
            full.to_string(),
            "request ring full: 40 bytes needed, 12 free; take a checkpoint and apply"
        );
        let corrupt = RingError::CorruptEntry {
            index: 96,
            fault: EntryFault::BadChecksum {
                stored: 1,
                computed: 2,
            },
        };
        assert!(
            corrupt.to_string().contains("log index 96"),
            "a corrupt entry must say where it is"
        );
    }
}
