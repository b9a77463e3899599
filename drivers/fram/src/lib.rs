//! `amber-fram`: a protocol driver for MB85RS-class SPI FRAM, portable to any board
//! that offers an `embedded_hal::spi::SpiDevice`, an emulated chip for boards without
//! one, and a host simulation of the chip.
//!
//! [`Fram`] speaks the six-command MB85RS protocol ([`opcode`]) for a validated
//! [`Part`] (size and 2- or 3-byte addresses) and implements `amber_nvm::Nvm`, so the
//! checkpoint manager and the vNV-Heap run on FRAM unchanged. [`EmuFram`] is the chip
//! itself, emulated over any `Nvm` (on QEMU, the FRAM partition of the NVM window),
//! with SPI wire time charged per byte. `sim::SimFram` (the `sim` feature, or this
//! crate's tests) is `EmuFram` over a `Vec` plus power cuts that tear a transfer at
//! byte granularity. Both run the one protocol state machine in `chip.rs`.
//!
//! [`id`] names the chips a board may find on its bus by their RDID answer.
//!
//! Dependencies point down only: this crate knows `amber-nvm` and `embedded-hal`,
//! never a board, a kernel or an SPI peripheral. It must never allocate outside
//! `sim`, and never busy-wait: FRAM has nothing to wait for, and `EmuFram` spends its
//! modelled wire time only through the hook its owner supplies.

#![cfg_attr(not(test), no_std)]

#[cfg(any(test, feature = "sim"))]
extern crate alloc;

mod chip;
mod driver;
mod emu;
mod error;
pub mod id;
pub mod opcode;
mod part;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
mod stats;
mod status;

#[cfg(test)]
mod tests;

pub use driver::Fram;
pub use emu::{EmuError, EmuFram, EmuStats, MemoryTooSmall, DEFAULT_CYCLES_PER_BYTE};
pub use error::FramError;
pub use part::{AddressWidth, Part, PartError};
pub use stats::FramStats;
pub use status::{BlockProtect, Status};
