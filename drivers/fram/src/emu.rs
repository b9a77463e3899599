//! `EmuFram`: an emulated MB85RS-class FRAM chip behind an
//! `embedded_hal::spi::SpiDevice`, whose memory array is any `Nvm`. On the QEMU board
//! the SPI driver task wraps an `amber_nvm::MmioNvm` over the FRAM partition of the
//! ivshmem NVM window in it, and runs the unchanged [`crate::Fram`] driver on top.
//!
//! The chip's rules are those of `chip.rs` (WEL latch, status register with WPEN and
//! BP1:BP0, 2- or 3-byte addresses from the [`Part`], address wrap, unknown opcodes
//! ignored), the same code [`crate::sim::SimFram`] runs. The status register is held
//! in this struct, not in the memory: a new `EmuFram` (a reboot) starts with it
//! cleared, unlike a real chip whose WPEN and BP bits are non-volatile. Every data
//! byte a WRITE stores is one `Nvm::write` of one byte, so a power cut (a SIGKILL of
//! QEMU, or a cut at the k-th NVM store) tears a transfer at byte granularity, as on
//! the real bus; a transaction that stored bytes flushes the memory before it returns.
//!
//! Timing: every transaction costs `cycles_per_byte` CPU cycles per 8-bit word on the
//! wire (opcode, address, data and dummy bytes alike), spent by calling the `spend`
//! hook the caller supplies once per transaction, after its bytes have been clocked.
//! [`DEFAULT_CYCLES_PER_BYTE`] models an SPI FRAM clocked at 40 MHz next to a 160 MHz
//! CPU. On the device `spend` is a busy-wait on the cycle counter, e.g.
//!
//! ```text
//! fn spend(cycles: u32) {
//!     let start = riscv::register::mcycle::read();
//!     while riscv::register::mcycle::read().wrapping_sub(start) < cycles as usize {}
//! }
//! ```
//!
//! The cycles the emulation itself takes come on top. Transactions, wire bytes and
//! cycles charged are counted in [`EmuStats`], aborted transactions included.
//!
//! This file must never allocate: it builds for `riscv32imc-unknown-none-elf` without
//! the `sim` feature.

use crate::chip::{Abort, Chip};
use crate::part::Part;
use crate::status::Status;
use amber_nvm::{Nvm, NvmError};
use core::convert::Infallible;
use core::fmt;
use embedded_hal::spi::{self, ErrorType, Operation, SpiDevice};

/// Cycles per byte on the wire for an SPI FRAM at 40 MHz next to a 160 MHz CPU: 8 bits
/// at 40 MHz take 200 ns, which is 32 cycles at 160 MHz.
pub const DEFAULT_CYCLES_PER_BYTE: u32 = 32;

/// What an [`EmuFram`] has carried since it was made or since
/// [`EmuFram::reset_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmuStats {
    /// SPI transactions (chip-select cycles), aborted ones included.
    pub transactions: u64,
    /// Bytes clocked on the wire: opcodes, addresses, data and dummy bytes.
    pub wire_bytes: u64,
    /// CPU cycles handed to the `spend` hook: always `wire_bytes * cycles_per_byte`.
    pub cycles: u64,
}

/// Why an emulated transaction failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmuError {
    /// The memory array refused an access (it lost power, or its bus failed). The
    /// transaction stopped in front of that byte, as if power had been cut there.
    Memory(NvmError),
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmuError::Memory(e) => write!(f, "emulated FRAM's memory array failed: {e}"),
        }
    }
}

impl spi::Error for EmuError {
    fn kind(&self) -> spi::ErrorKind {
        spi::ErrorKind::Other
    }
}

/// [`EmuFram::new`] was given a memory smaller than the part it is to emulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryTooSmall {
    /// Bytes the part needs.
    pub part_size: u32,
    /// Bytes the memory has.
    pub memory_size: u32,
}

impl fmt::Display for MemoryTooSmall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "an emulated FRAM of {} bytes cannot live in a memory of {} bytes",
            self.part_size, self.memory_size
        )
    }
}

/// An emulated FRAM chip over the memory array `M`. See the file comment.
#[derive(Clone, Debug)]
pub struct EmuFram<M> {
    chip: Chip<M>,
    cycles_per_byte: u32,
    spend: fn(u32),
    stats: EmuStats,
}

impl<M: Nvm> EmuFram<M> {
    /// A powered-up `part` whose array is the first `part.size()` bytes of `memory`
    /// (the rest is never touched), with the status register cleared. Each byte on
    /// the wire costs `cycles_per_byte` cycles, handed to `spend` once per transaction.
    pub fn new(
        part: Part,
        memory: M,
        cycles_per_byte: u32,
        spend: fn(u32),
    ) -> Result<Self, MemoryTooSmall> {
        if memory.size() < part.size() {
            return Err(MemoryTooSmall {
                part_size: part.size(),
                memory_size: memory.size(),
            });
        }
        Ok(EmuFram {
            chip: Chip::new(part, memory),
            cycles_per_byte,
            spend,
            stats: EmuStats::default(),
        })
    }

    /// The part this chip emulates.
    pub fn part(&self) -> Part {
        self.chip.part()
    }

    /// Cycles charged per byte on the wire.
    pub fn cycles_per_byte(&self) -> u32 {
        self.cycles_per_byte
    }

    /// What the chip has carried so far.
    pub fn stats(&self) -> EmuStats {
        self.stats
    }

    /// Sets every counter back to zero.
    pub fn reset_stats(&mut self) {
        self.stats = EmuStats::default();
    }

    /// The memory array.
    pub fn memory(&self) -> &M {
        self.chip.memory()
    }

    /// The memory array, consuming the chip.
    pub fn into_memory(self) -> M {
        self.chip.into_memory()
    }

    /// The status register as RDSR would return it (WEL included).
    pub fn status_register(&self) -> Status {
        self.chip.status_register()
    }

    /// Drives the /WP pin low (`true`) or high. With WPEN set and /WP low, WRSR is
    /// ignored.
    pub fn set_wp_low(&mut self, low: bool) {
        self.chip.set_wp_low(low);
    }

    /// Power went away or came back: WEL is reset, the array and status are kept.
    #[cfg(any(test, feature = "sim"))]
    pub(crate) fn reset_wel(&mut self) {
        self.chip.reset_wel();
    }

    /// One transaction with `before_byte` called in front of every byte (the
    /// simulation's power cuts); counted and charged for the bytes that were clocked.
    pub(crate) fn transaction_with<E>(
        &mut self,
        operations: &mut [Operation<'_, u8>],
        mut before_byte: impl FnMut(u8) -> Result<(), E>,
    ) -> Result<(), Abort<E>> {
        self.stats.transactions += 1;
        let mut clocked = 0u64;
        let result = self.chip.transaction(operations, |mosi| {
            before_byte(mosi)?;
            clocked += 1;
            Ok(())
        });
        self.stats.wire_bytes += clocked;
        self.charge(clocked);
        result
    }

    /// Spends the wire time of `bytes` bytes through the hook, in `u32` pieces.
    fn charge(&mut self, bytes: u64) {
        let mut cycles = bytes * self.cycles_per_byte as u64;
        self.stats.cycles += cycles;
        while cycles > 0 {
            let piece = cycles.min(u32::MAX as u64);
            (self.spend)(piece as u32);
            cycles -= piece;
        }
    }
}

impl<M> ErrorType for EmuFram<M> {
    type Error = EmuError;
}

impl<M: Nvm> SpiDevice for EmuFram<M> {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), EmuError> {
        self.transaction_with(operations, |_| Ok::<(), Infallible>(()))
            .map_err(|abort| match abort {
                Abort::Hook(never) => match never {},
                Abort::Memory(e) => EmuError::Memory(e),
            })
    }
}
