//! What can go wrong when the driver talks to the FRAM, and how that is reported
//! through the `Nvm` interface.
//!
//! `amber_nvm::NvmError` has two variants and this crate must never add to it, so the
//! mapping is deliberate: a failed SPI transaction is [`NvmError::PowerLost`] (on an
//! intermittently powered board a bus that stops answering is almost always a chip
//! that lost power, and the caller's only sound reaction is the same: stop and recover
//! from the last commit), and a write into a block-protected range is
//! [`NvmError::OutOfBounds`] with `size` = the first protected address (block
//! protection always covers the top of the array, so the writable device really does
//! end there).

use crate::status::Status;
use amber_nvm::NvmError;
use core::fmt;
use embedded_hal::spi;

/// An error from a [`crate::Fram`] operation; `E` is the SPI device's error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramError<E> {
    /// The access `[offset, offset + len)` does not lie inside the `size`-byte part.
    OutOfBounds { offset: u32, len: usize, size: u32 },
    /// The write `[offset, offset + len)` reaches the block-protected top of the array,
    /// which starts at `protected_from`; the chip would silently drop those bytes, so
    /// the driver sends nothing.
    WriteProtected {
        offset: u32,
        len: usize,
        protected_from: u32,
    },
    /// WRSR did not take: reading the register back gave `actual` instead of `wanted`
    /// (the /WP pin is low with WPEN set, or the chip is not answering properly).
    StatusRejected { wanted: Status, actual: Status },
    /// The SPI transaction failed.
    Bus(E),
}

impl<E: spi::Error> fmt::Display for FramError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FramError::OutOfBounds { offset, len, size } => write!(
                f,
                "FRAM access of {len} bytes at {offset:#x} is outside the {size}-byte part"
            ),
            FramError::WriteProtected {
                offset,
                len,
                protected_from,
            } => write!(
                f,
                "FRAM write of {len} bytes at {offset:#x} reaches the block-protected range from {protected_from:#x}"
            ),
            FramError::StatusRejected { wanted, actual } => write!(
                f,
                "FRAM status register write of {:#04x} did not take (it reads {:#04x})",
                wanted.bits(),
                actual.bits()
            ),
            FramError::Bus(e) => write!(f, "SPI transaction to the FRAM failed: {}", e.kind()),
        }
    }
}

impl<E> From<FramError<E>> for NvmError {
    /// See the file comment for why each variant maps where it does.
    fn from(e: FramError<E>) -> NvmError {
        match e {
            FramError::OutOfBounds { offset, len, size } => {
                NvmError::OutOfBounds { offset, len, size }
            }
            FramError::WriteProtected {
                offset,
                len,
                protected_from,
            } => NvmError::OutOfBounds {
                offset,
                len,
                size: protected_from,
            },
            // Not produced by `Nvm` methods (only by `set_status`); a chip that ignores
            // what it is told is treated like one that stopped answering.
            FramError::StatusRejected { .. } | FramError::Bus(_) => NvmError::PowerLost,
        }
    }
}
