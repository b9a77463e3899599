//! The `Nvm` interface: the one way Amber's portable code reaches non-volatile memory.
//!
//! Everything that persists (the superblock, checkpoints, the vNV-Heap) talks to an
//! `Nvm` and never to a device directly, so the same code runs on the QEMU ivshmem
//! window ([`MmioNvm`]), on SPI FRAM (a later driver), and on the host simulations in
//! [`sim`] that the crash tests use. This crate must never know which board it runs on.
//!
//! Durability model: a `write` that returned `Ok` has reached the device in program
//! order with respect to other writes separated from it by a `fence`; `flush` waits
//! until every earlier write is durable. Byte-addressable NVM and FRAM have no write
//! cache, so on them `flush` is a fence; an implementation with a cache must do more.

#![cfg_attr(not(test), no_std)]

#[cfg(feature = "sim")]
extern crate alloc;

mod cut;
mod either;
mod mmio;
#[cfg(feature = "sim")]
pub mod sim;

pub use cut::{CutAt, CutNvm};
pub use either::Either;
pub use mmio::MmioNvm;

use core::fmt;

/// What went wrong in an NVM access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NvmError {
    /// The access `[offset, offset + len)` does not lie inside the device of `size` bytes.
    OutOfBounds { offset: u32, len: usize, size: u32 },
    /// The device stopped answering: power was cut (simulations) or the bus failed.
    PowerLost,
}

impl fmt::Display for NvmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NvmError::OutOfBounds { offset, len, size } => write!(
                f,
                "NVM access of {len} bytes at offset {offset:#x} is outside the {size}-byte device"
            ),
            NvmError::PowerLost => f.write_str("NVM device lost power"),
        }
    }
}

/// A byte-addressable non-volatile memory.
///
/// Offsets are byte offsets from the start of the device. Reads take `&mut self`
/// because a bus (SPI) must be owned to be used.
pub trait Nvm {
    /// Size of the device in bytes.
    fn size(&self) -> u32;

    /// Reads `buf.len()` bytes starting at `offset`.
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError>;

    /// Writes `data` starting at `offset`. The bytes may reach the device in any
    /// order and a power cut may leave any prefix of them written (a torn write).
    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError>;

    /// Orders writes: every write issued before the fence reaches the device before
    /// any write issued after it.
    fn fence(&mut self);

    /// Waits until every write issued so far is durable.
    fn flush(&mut self) -> Result<(), NvmError>;
}

/// Checks that `[offset, offset + len)` lies inside a device of `size` bytes.
///
/// Every implementation calls this before touching the device, so a bad offset is an
/// error value, never a wild access.
pub fn check_range(offset: u32, len: usize, size: u32) -> Result<(), NvmError> {
    let end = (offset as u64).checked_add(len as u64);
    match end {
        Some(end) if end <= size as u64 => Ok(()),
        _ => Err(NvmError::OutOfBounds { offset, len, size }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_inside_the_device_are_accepted_and_others_rejected() {
        assert_eq!(check_range(0, 16, 16), Ok(()));
        assert_eq!(
            check_range(16, 0, 16),
            Ok(()),
            "an empty access at the end is fine"
        );
        assert!(
            check_range(1, 16, 16).is_err(),
            "one byte past the end must fail"
        );
        assert!(
            check_range(u32::MAX, 2, u32::MAX).is_err(),
            "offset + len must not wrap around"
        );
    }
}
