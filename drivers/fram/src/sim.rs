//! `SimFram`: a host simulation of an MB85RS-class FRAM chip behind an
//! `embedded_hal::spi::SpiDevice`, for the driver's tests and for crash tests of
//! anything that stores through [`crate::Fram`].
//!
//! It is an [`EmuFram`] over a `Vec`-backed memory (`amber_nvm::sim::VecNvm`) whose
//! wire time is counted but not spent, so it enforces exactly the chip rules the QEMU
//! board's emulated chip does (see `chip.rs`), and adds what only a host test needs:
//! power cuts at a chosen byte on the wire, the /WP pin, and a log of every byte sent.
//!
//! Power cuts: [`SimFram::cut_after_bytes`] lets `n` more bytes complete on the wire,
//! then power fails in front of the next byte: that transaction returns
//! [`SimError::PowerLost`] without its chip-select effects, the array keeps exactly
//! the bytes stored so far, and every later transaction fails until
//! [`SimFram::power_on`]. The array and the non-volatile status bits survive;
//! WEL does not.
//!
//! Nothing here may be used by device code.

use crate::chip::Abort;
use crate::emu::{EmuFram, EmuStats, DEFAULT_CYCLES_PER_BYTE};
use crate::part::Part;
use crate::status::Status;
use alloc::vec;
use alloc::vec::Vec;
use amber_nvm::sim::VecNvm;
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

/// A simulated FRAM chip. See the file comment for what it adds to [`EmuFram`].
#[derive(Clone, Debug)]
pub struct SimFram {
    chip: EmuFram<VecNvm>,
    powered: bool,
    /// Bytes that may still complete before power fails; `None` = no cut planned.
    cut_after: Option<u64>,
    log: Vec<Vec<u8>>,
}

/// The simulation counts wire time ([`SimFram::stats`]) but never waits for it.
fn no_wait(_cycles: u32) {}

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
        let memory = VecNvm::from_image(image);
        let Ok(chip) = EmuFram::new(part, memory, DEFAULT_CYCLES_PER_BYTE, no_wait) else {
            unreachable!("the memory is exactly the part's size, checked above");
        };
        SimFram {
            chip,
            powered: true,
            cut_after: None,
            log: Vec::new(),
        }
    }

    /// The part this chip simulates.
    pub fn part(&self) -> Part {
        self.chip.part()
    }

    /// The array's contents.
    pub fn image(&self) -> &[u8] {
        self.chip.memory().image()
    }

    /// The array's contents, consuming the chip.
    pub fn into_image(self) -> Vec<u8> {
        self.chip.into_memory().into_image()
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
        self.chip.reset_wel();
        self.cut_after = None;
    }

    /// Bytes that completed on the wire since the chip was made.
    pub fn wire_bytes(&self) -> u64 {
        self.chip.stats().wire_bytes
    }

    /// Transactions that started with power on.
    pub fn transactions(&self) -> u64 {
        self.chip.stats().transactions
    }

    /// Transactions, wire bytes and the cycles they would take at
    /// [`DEFAULT_CYCLES_PER_BYTE`], as [`EmuFram::stats`] counts them on the board.
    pub fn stats(&self) -> EmuStats {
        self.chip.stats()
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
}

impl ErrorType for SimFram {
    type Error = SimError;
}

impl SpiDevice for SimFram {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), SimError> {
        if !self.powered {
            return Err(SimError::PowerLost);
        }
        self.log.push(Vec::new());
        let (cut_after, log) = (&mut self.cut_after, &mut self.log);
        let result = self.chip.transaction_with(operations, |mosi| {
            match cut_after {
                Some(0) => return Err(SimError::PowerLost),
                Some(left) => *left -= 1,
                None => {}
            }
            if let Some(current) = log.last_mut() {
                current.push(mosi);
            }
            Ok(())
        });
        match result {
            Ok(()) => Ok(()),
            Err(Abort::Hook(SimError::PowerLost)) => {
                self.powered = false;
                self.chip.reset_wel();
                self.cut_after = None;
                Err(SimError::PowerLost)
            }
            Err(Abort::Memory(e)) => {
                unreachable!("a VecNvm of the part's size refused an in-part access: {e}")
            }
        }
    }
}
