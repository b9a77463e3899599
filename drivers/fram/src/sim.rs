//! `SimFram`: a host simulation of an MB85RS-class FRAM chip behind an
//! `embedded_hal::spi::SpiDevice`, for the driver's tests and for crash tests of
//! anything that stores through [`crate::Fram`].
//!
//! It enforces the chip's rules, byte by byte as they are clocked:
//!
//! - WRITE and WRSR change nothing unless the write-enable latch (WEL) was set by an
//!   earlier WREN transaction; WEL is reset when chip select rises after WRITE, WRSR
//!   or WRDI, and at power-up. WREN/WRDI take effect when chip select rises; extra
//!   bytes after their opcode are ignored.
//! - Addresses are masked to the array size, and READ and WRITE wrap from the last
//!   byte to byte 0.
//! - WRITE stores each data byte as it arrives (no page limit, no busy wait), except
//!   at addresses in the block-protected top of the array, which are skipped.
//! - WRSR stores WPEN, BP1, BP0 when chip select rises after its data byte, unless
//!   WPEN is set and the /WP pin is low; RDSR shifts the register out (repeatedly).
//! - Unknown opcodes make the chip ignore the rest of the transaction.
//! - MOSI during an `Operation::Read` is 0x00; MISO where the chip does not drive it is
//!   0xFF (pulled up).
//!
//! Power cuts: [`SimFram::cut_after_bytes`] lets `n` more bytes complete on the wire,
//! then power fails in front of the next byte: that transaction returns
//! [`SimError::PowerLost`] without its chip-select effects, the array keeps exactly
//! the bytes stored so far, and every later transaction fails until
//! [`SimFram::power_on`]. The array and the non-volatile status bits survive;
//! WEL does not.
//!
//! Nothing here may be used by device code.

use crate::opcode;
use crate::part::Part;
use crate::status::Status;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use embedded_hal::spi::{self, ErrorType, Operation, SpiDevice};

/// Why a simulated transaction failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The simulated chip has no power (a cut happened and `power_on` was not called).
    PowerLost,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("simulated FRAM lost power")
    }
}

impl spi::Error for SimError {
    fn kind(&self) -> spi::ErrorKind {
        spi::ErrorKind::Other
    }
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

/// A simulated FRAM chip. See the file comment for the rules it enforces.
#[derive(Clone, Debug)]
pub struct SimFram {
    part: Part,
    array: Vec<u8>,
    /// The non-volatile bits of the status register (WPEN, BP1, BP0).
    status: u8,
    wel: bool,
    wp_low: bool,
    powered: bool,
    /// Bytes that may still complete before power fails; `None` = no cut planned.
    cut_after: Option<u64>,
    wire_bytes: u64,
    transactions: u64,
    log: Vec<Vec<u8>>,
}

impl SimFram {
    /// A fresh chip: all bytes zero, no protection, powered.
    pub fn new(part: Part) -> Self {
        Self::from_image(part, vec![0; part.size() as usize])
    }

    /// A chip whose array holds `image` (to reopen what a crash left behind), with
    /// the status register cleared.
    ///
    /// # Panics
    /// If `image` is not exactly `part.size()` bytes.
    pub fn from_image(part: Part, image: Vec<u8>) -> Self {
        assert_eq!(
            image.len(),
            part.size() as usize,
            "an FRAM image must be exactly the part's size"
        );
        SimFram {
            part,
            array: image,
            status: 0,
            wel: false,
            wp_low: false,
            powered: true,
            cut_after: None,
            wire_bytes: 0,
            transactions: 0,
            log: Vec::new(),
        }
    }

    /// The part this chip simulates.
    pub fn part(&self) -> Part {
        self.part
    }

    /// The array's contents.
    pub fn image(&self) -> &[u8] {
        &self.array
    }

    /// The array's contents, consuming the chip.
    pub fn into_image(self) -> Vec<u8> {
        self.array
    }

    /// The status register as RDSR would return it (WEL included).
    pub fn status_register(&self) -> Status {
        Status::from_bits(self.status | if self.wel { Status::WEL } else { 0 })
    }

    /// Drives the /WP pin low (`true`) or high. With WPEN set and /WP low, WRSR is
    /// ignored.
    pub fn set_wp_low(&mut self, low: bool) {
        self.wp_low = low;
    }

    /// Lets `n` more bytes complete on the wire, then cuts power in front of the next
    /// one (`n = 0`: the very next byte is lost).
    pub fn cut_after_bytes(&mut self, n: u64) {
        self.cut_after = Some(n);
    }

    /// Whether the chip has power.
    pub fn is_powered(&self) -> bool {
        self.powered
    }

    /// Powers the chip (back) up: the array and the non-volatile status bits are
    /// kept, WEL is reset, any planned cut is cancelled.
    pub fn power_on(&mut self) {
        self.powered = true;
        self.wel = false;
        self.cut_after = None;
    }

    /// Bytes that completed on the wire since the chip was made.
    pub fn wire_bytes(&self) -> u64 {
        self.wire_bytes
    }

    /// Transactions that started with power on.
    pub fn transactions(&self) -> u64 {
        self.transactions
    }

    /// The MOSI bytes of every transaction so far, one entry per chip-select cycle
    /// (a torn one holds the bytes that completed).
    pub fn wire_log(&self) -> &[Vec<u8>] {
        &self.log
    }

    /// Forgets the wire log.
    pub fn clear_wire_log(&mut self) {
        self.log.clear();
    }

    fn power_off(&mut self) {
        self.powered = false;
        self.wel = false;
        self.cut_after = None;
    }

    fn protected_from(&self) -> u32 {
        Status::from_bits(self.status)
            .block_protect()
            .protected_from(self.part.size())
    }

    /// Clocks one byte: `mosi` in, the returned byte out on MISO.
    fn clock(&mut self, phase: &mut Phase, mosi: u8) -> Result<u8, SimError> {
        match self.cut_after {
            Some(0) => {
                self.power_off();
                return Err(SimError::PowerLost);
            }
            Some(ref mut left) => *left -= 1,
            None => {}
        }
        self.wire_bytes += 1;
        if let Some(current) = self.log.last_mut() {
            current.push(mosi);
        }
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
                miso = self.array[address as usize];
                Phase::ReadData {
                    address: self.part.wrap(address + 1),
                }
            }
            Phase::WriteData { address, enabled } => {
                if enabled && address < self.protected_from() {
                    self.array[address as usize] = mosi;
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

    fn run(
        &mut self,
        phase: &mut Phase,
        operations: &mut [Operation<'_, u8>],
    ) -> Result<(), SimError> {
        for operation in operations.iter_mut() {
            match operation {
                Operation::Write(words) => {
                    for &word in words.iter() {
                        self.clock(phase, word)?;
                    }
                }
                Operation::Read(words) => {
                    for word in words.iter_mut() {
                        *word = self.clock(phase, 0x00)?;
                    }
                }
                Operation::Transfer(read, write) => {
                    for i in 0..read.len().max(write.len()) {
                        let miso = self.clock(phase, write.get(i).copied().unwrap_or(0x00))?;
                        if let Some(slot) = read.get_mut(i) {
                            *slot = miso;
                        }
                    }
                }
                Operation::TransferInPlace(words) => {
                    for word in words.iter_mut() {
                        *word = self.clock(phase, *word)?;
                    }
                }
                Operation::DelayNs(_) => {}
            }
        }
        Ok(())
    }
}

impl ErrorType for SimFram {
    type Error = SimError;
}

impl SpiDevice for SimFram {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), SimError> {
        if !self.powered {
            return Err(SimError::PowerLost);
        }
        self.transactions += 1;
        self.log.push(Vec::new());
        let mut phase = Phase::Opcode;
        self.run(&mut phase, operations)?;
        self.deselect(phase);
        Ok(())
    }
}
