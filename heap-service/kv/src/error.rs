//! What a table operation can refuse or fail with, each named for what went wrong.
//! Plain values only; this file must never decide what to do about an error.

use amber_nvm::NvmError;
use core::fmt;

/// Why a table operation did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvError {
    /// Every entry holds a live key, and the key to put is not one of them.
    TableFull,
    /// The value has `len` bytes, more than the table's `max`.
    ValueTooLong { len: usize, max: u16 },
    /// The caller's buffer has room for `room` bytes, the value has `len`.
    BufferTooSmall { len: usize, room: usize },
    /// The configuration cannot make a table (or not on this NVM).
    BadConfig { reason: &'static str },
    /// `open`: no table header at this offset (wrong magic or checksum).
    NoTable { at: u32 },
    /// `open`: a table of another format version.
    UnknownVersion { version: u16 },
    /// An entry record that no table writes: unknown state, or a length above the
    /// maximum.
    Corrupt { slot: u32 },
    /// The NVM refused an access.
    Nvm(NvmError),
}

impl From<NvmError> for KvError {
    fn from(e: NvmError) -> Self {
        KvError::Nvm(e)
    }
}

impl fmt::Display for KvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            KvError::TableFull => f.write_str("the key-value table is full"),
            KvError::ValueTooLong { len, max } => {
                write!(f, "a value of {len} bytes is longer than the table's {max}")
            }
            KvError::BufferTooSmall { len, room } => {
                write!(f, "the value has {len} bytes, the buffer room for {room}")
            }
            KvError::BadConfig { reason } => {
                write!(f, "bad key-value table configuration: {reason}")
            }
            KvError::NoTable { at } => write!(f, "no key-value table header at offset {at:#x}"),
            KvError::UnknownVersion { version } => {
                write!(
                    f,
                    "key-value table format version {version} is not supported"
                )
            }
            KvError::Corrupt { slot } => write!(f, "entry record {slot} is corrupt"),
            KvError::Nvm(e) => write!(f, "key-value table storage: {e}"),
        }
    }
}
