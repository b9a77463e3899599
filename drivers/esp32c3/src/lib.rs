//! ESP32-C3 register sequences, written once over a register-access trait ([`Regs`])
//! so that the host tests check every address and value against the ESP32-C3
//! Technical Reference Manual (TRM, v1.x; the section is cited at each sequence) and
//! the kernel's board (`kernel/src/board/esp32c3/`) runs the same code on [`Mmio`].
//!
//! Modules (each depends only on [`regs`]): [`brownout`] (the power-failure
//! interrupt), [`clock`] (the CPU clock: 160 MHz from the BBPLL, from power-on), [`watchdog`] (RWDT, MWDT0/1, super watchdog), [`systimer`] (the
//! periodic tick and the 16 MHz counter), [`intmatrix`] (peripheral source → CPU
//! interrupt line, enable, type, priority, threshold), [`gpio`] (IO MUX and GPIO
//! matrix routing, a push-pull output pin for chip select), [`spi`] (GP-SPI2 as an
//! embedded-hal `SpiBus`), [`uart`] (UART0 as the ROM left it). This crate holds
//! sequences, never
//! policy: which line the tick uses, what the period is, is the board's choice.

#![cfg_attr(not(test), no_std)]

pub mod brownout;
pub mod clock;
pub mod gpio;
pub mod intmatrix;
pub mod regs;
pub mod spi;
pub mod systimer;
pub mod uart;
pub mod watchdog;

#[cfg(test)]
mod fake;

pub use regs::{Mmio, Regs};
