//! The MB85RS protocol as the chip runs it: one state machine, clocked byte by byte,
//! over a memory array that is any `Nvm`. [`crate::EmuFram`] (the QEMU board's
//! emulated chip) and [`crate::sim::SimFram`] (the host simulation with power cuts)
//! both run this code, so the two can never disagree about a rule.
//!
//! The rules, as each byte is clocked:
//!
//! - WRITE and WRSR change nothing unless the write-enable latch (WEL) was set by an
//!   earlier WREN transaction; WEL is reset when chip select rises after WRITE, WRSR
//!   or WRDI, and at power-up. WREN/WRDI take effect when chip select rises; extra
//!   bytes after their opcode are ignored.
//! - READ and WRITE take 2 or 3 address bytes, as the [`Part`] says. Addresses are
//!   masked to the array size, and READ and WRITE wrap from the last byte to byte 0.
//! - WRITE stores each data byte as it arrives (no page limit, no busy wait), except
//!   at addresses in the block-protected top of the array, which are skipped.
//! - WRSR stores WPEN, BP1, BP0 when chip select rises after its data byte, unless
//!   WPEN is set and the /WP pin is low; RDSR shifts the register out (repeatedly).
//!   The status register lives here, not in the array.
//! - Unknown opcodes make the chip ignore the rest of the transaction.
//! - MOSI during an `Operation::Read` is 0x00; MISO where the chip does not drive it is
//!   0xFF (pulled up). `Operation::DelayNs` clocks nothing.
//!
//! A transaction can be aborted in front of any byte, by the caller's hook (a power
//! cut) or by the memory refusing an access: then chip select never "rises", so WREN,
//! WRDI and WRSR do not act, and the array keeps exactly the bytes stored so far. The
//! memory array only ever sees addresses in `[0, part.size())`.

use crate::opcode;
use crate::part::Part;
use crate::status::Status;
use amber_nvm::{Nvm, NvmError};
use core::slice;
use embedded_hal::spi::Operation;

/// Why a transaction stopped before chip select rose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Abort<E> {
    /// The per-byte hook refused the next byte (a simulated power cut).
    Hook(E),
    /// The memory array refused an access.
    Memory(NvmError),
}

/// Where the chip is within the current transaction.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Chip select just fell: the next byte is an opcode.
    Opcode,
    /// WREN seen: WEL is set when chip select rises.
    Wren,
    /// WRDI seen: WEL is reset when chip select rises.
    Wrdi,
    /// RDSR seen: every further byte shifts the status register out.
    StatusOut,
    /// WRSR seen; `value` is its data byte once it has arrived.
    StatusIn { value: Option<u8> },
    /// READ or WRITE seen, `got` address bytes of it so far.
    Address {
        write: bool,
        got: usize,
        address: u32,
    },
    /// READ data: the next byte comes from `address`.
    ReadData { address: u32 },
    /// WRITE data: the next byte goes to `address` if `enabled` (WEL was set).
    WriteData { address: u32, enabled: bool },
    /// Unknown opcode: ignore everything until chip select rises.
    Ignore,
}

/// The chip's state: its memory array, the status register and the pin it reads.
#[derive(Clone, Debug)]
pub(crate) struct Chip<M> {
    part: Part,
    memory: M,
    /// The non-volatile bits of the status register (WPEN, BP1, BP0).
    status: u8,
    wel: bool,
    wp_low: bool,
}

impl<M: Nvm> Chip<M> {
    /// A powered-up chip over `memory`, which must hold at least `part.size()` bytes
    /// (the caller checks), with the status register cleared.
    pub(crate) fn new(part: Part, memory: M) -> Self {
        debug_assert!(memory.size() >= part.size());
        Chip {
            part,
            memory,
            status: 0,
            wel: false,
            wp_low: false,
        }
    }

    pub(crate) fn part(&self) -> Part {
        self.part
    }

    pub(crate) fn memory(&self) -> &M {
        &self.memory
    }

    pub(crate) fn into_memory(self) -> M {
        self.memory
    }

    /// The status register as RDSR would return it (WEL included).
    pub(crate) fn status_register(&self) -> Status {
        Status::from_bits(self.status | if self.wel { Status::WEL } else { 0 })
    }

    pub(crate) fn set_wp_low(&mut self, low: bool) {
        self.wp_low = low;
    }

    /// Power went away or came back: WEL is volatile, everything else is kept.
    #[cfg(any(test, feature = "sim"))]
    pub(crate) fn reset_wel(&mut self) {
        self.wel = false;
    }

    /// One chip-select cycle. `before_byte(mosi)` is called in front of every byte;
    /// if it fails, the byte and the rest of the transaction never reach the chip.
    pub(crate) fn transaction<E>(
        &mut self,
        operations: &mut [Operation<'_, u8>],
        mut before_byte: impl FnMut(u8) -> Result<(), E>,
    ) -> Result<(), Abort<E>> {
        let mut phase = Phase::Opcode;
        let mut stored = false;
        let mut clock = |chip: &mut Self, mosi: u8| -> Result<u8, Abort<E>> {
            before_byte(mosi).map_err(Abort::Hook)?;
            chip.clock(&mut phase, &mut stored, mosi)
                .map_err(Abort::Memory)
        };
        for operation in operations.iter_mut() {
            match operation {
                Operation::Write(words) => {
                    for &word in words.iter() {
                        clock(self, word)?;
                    }
                }
                Operation::Read(words) => {
                    for word in words.iter_mut() {
                        *word = clock(self, 0x00)?;
                    }
                }
                Operation::Transfer(read, write) => {
                    for i in 0..read.len().max(write.len()) {
                        let miso = clock(self, write.get(i).copied().unwrap_or(0x00))?;
                        if let Some(slot) = read.get_mut(i) {
                            *slot = miso;
                        }
                    }
                }
                Operation::TransferInPlace(words) => {
                    for word in words.iter_mut() {
                        *word = clock(self, *word)?;
                    }
                }
                Operation::DelayNs(_) => {}
            }
        }
        if stored {
            // Chip select rises only once the bytes are durable in the array: a
            // returned transaction is complete (see driver.rs).
            self.memory.flush().map_err(Abort::Memory)?;
        }
        self.deselect(phase);
        Ok(())
    }

    fn protected_from(&self) -> u32 {
        Status::from_bits(self.status)
            .block_protect()
            .protected_from(self.part.size())
    }

    /// Clocks one byte: `mosi` in, the returned byte out on MISO. Sets `stored` when
    /// the byte went into the array.
    fn clock(&mut self, phase: &mut Phase, stored: &mut bool, mosi: u8) -> Result<u8, NvmError> {
        let mut miso = 0xFF;
        *phase = match *phase {
            Phase::Opcode => match mosi {
                opcode::WREN => Phase::Wren,
                opcode::WRDI => Phase::Wrdi,
                opcode::RDSR => Phase::StatusOut,
                opcode::WRSR => Phase::StatusIn { value: None },
                opcode::READ | opcode::WRITE => Phase::Address {
                    write: mosi == opcode::WRITE,
                    got: 0,
                    address: 0,
                },
                _ => Phase::Ignore,
            },
            Phase::StatusOut => {
                miso = self.status_register().bits();
                Phase::StatusOut
            }
            Phase::StatusIn { value: None } => Phase::StatusIn { value: Some(mosi) },
            Phase::Address {
                write,
                got,
                address,
            } => {
                let address = (address << 8) | mosi as u32;
                let got = got + 1;
                if got < self.part.address_width().bytes() {
                    Phase::Address {
                        write,
                        got,
                        address,
                    }
                } else {
                    let address = self.part.wrap(address);
                    if write {
                        Phase::WriteData {
                            address,
                            enabled: self.wel,
                        }
                    } else {
                        Phase::ReadData { address }
                    }
                }
            }
            Phase::ReadData { address } => {
                self.memory.read(address, slice::from_mut(&mut miso))?;
                Phase::ReadData {
                    address: self.part.wrap(address + 1),
                }
            }
            Phase::WriteData { address, enabled } => {
                if enabled && address < self.protected_from() {
                    self.memory.write(address, &[mosi])?;
                    *stored = true;
                }
                Phase::WriteData {
                    address: self.part.wrap(address + 1),
                    enabled,
                }
            }
            other @ (Phase::Wren | Phase::Wrdi | Phase::StatusIn { .. } | Phase::Ignore) => other,
        };
        Ok(miso)
    }

    /// Chip select rises: the commands that act at the end of a transaction act.
    fn deselect(&mut self, phase: Phase) {
        match phase {
            Phase::Wren => self.wel = true,
            Phase::Wrdi => self.wel = false,
            Phase::StatusIn { value } => {
                let locked = self.status & Status::WPEN != 0 && self.wp_low;
                if let Some(value) = value {
                    if self.wel && !locked {
                        self.status = value & Status::WRITABLE;
                    }
                }
                self.wel = false;
            }
            Phase::WriteData { .. } | Phase::Address { write: true, .. } => self.wel = false,
            Phase::Opcode
            | Phase::StatusOut
            | Phase::Address { write: false, .. }
            | Phase::ReadData { .. }
            | Phase::Ignore => {}
        }
    }
}
