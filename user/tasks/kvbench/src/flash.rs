//! An emulated SPI NOR flash over RAM, implementing `embedded-storage-async`'s NOR
//! flash traits for `sequential-storage`, with the geometry and command set of the
//! Winbond W25Q32JV (3 V 32 Mbit serial flash, datasheet revision F, 2017): 256-byte
//! program pages, 4 KiB erase sectors, any byte programmable once per erase (a program
//! only clears bits). Its timings are applied on the host (`tools/kv-bench`, from the
//! same datasheet); here every command is counted as it would go on the bus:
//!
//! - a read is one READ (03h) transaction: opcode, 3 address bytes, the data;
//! - a write is, per 256-byte page it touches, WRITE ENABLE (06h), PAGE PROGRAM (02h:
//!   opcode, address, data) and one READ STATUS (05h) that finds the chip done;
//! - an erase is, per 4 KiB sector, WRITE ENABLE, SECTOR ERASE (20h: opcode, address)
//!   and one READ STATUS.
//!
//! The instructions the emulation itself spends (copying into and out of RAM) are
//! measured and kept apart, so that a benchmark can leave them out. This file must
//! never accept what the chip would not: an erase off sector boundaries or an access
//! past the end is an error, as on the chip's driver.

use crate::counts::DeviceCounts;
use amber_user::instret;
use core::cell::Cell;
use embedded_storage_async::nor_flash::{
    ErrorType, MultiwriteNorFlash, NorFlash, NorFlashError, NorFlashErrorKind, ReadNorFlash,
};

/// Bytes of a program page.
pub const PAGE_BYTES: u32 = 256;
/// Bytes of an erase sector.
pub const SECTOR_BYTES: u32 = 4096;
/// Opcode and 24-bit address.
const COMMAND_BYTES: u64 = 4;

/// What the emulated chip refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashError {
    OutOfBounds,
    NotAligned,
}

impl NorFlashError for FlashError {
    fn kind(&self) -> NorFlashErrorKind {
        match self {
            FlashError::OutOfBounds => NorFlashErrorKind::OutOfBounds,
            FlashError::NotAligned => NorFlashErrorKind::NotAligned,
        }
    }
}

/// The flash: its array (RAM, all 0xFF when new) and the bus traffic so far.
pub struct NorFlashEmu<'m> {
    array: &'m mut [u8],
    counts: &'m Cell<DeviceCounts>,
}

impl<'m> NorFlashEmu<'m> {
    /// A chip over `array` (a whole number of sectors), erased, counting into `counts`.
    pub fn new(array: &'m mut [u8], counts: &'m Cell<DeviceCounts>) -> Self {
        assert!(
            array.len().is_multiple_of(SECTOR_BYTES as usize),
            "a whole number of sectors"
        );
        array.fill(0xFF);
        NorFlashEmu { array, counts }
    }

    fn count(&self, start: u32, f: impl FnOnce(&mut DeviceCounts)) {
        let mut c = self.counts.get();
        f(&mut c);
        c.emulation_instructions += u64::from(instret().wrapping_sub(start));
        self.counts.set(c);
    }

    fn range(&self, offset: u32, len: usize) -> Result<core::ops::Range<usize>, FlashError> {
        let start = offset as usize;
        match start.checked_add(len) {
            Some(end) if end <= self.array.len() => Ok(start..end),
            _ => Err(FlashError::OutOfBounds),
        }
    }
}

impl ErrorType for NorFlashEmu<'_> {
    type Error = FlashError;
}

impl ReadNorFlash for NorFlashEmu<'_> {
    const READ_SIZE: usize = 1;

    async fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), FlashError> {
        let t = instret();
        let r = self.range(offset, bytes.len())?;
        bytes.copy_from_slice(&self.array[r]);
        self.count(t, |c| {
            c.transactions += 1;
            c.wire_bytes += COMMAND_BYTES + bytes.len() as u64;
        });
        Ok(())
    }

    fn capacity(&self) -> usize {
        self.array.len()
    }
}

impl NorFlash for NorFlashEmu<'_> {
    const WRITE_SIZE: usize = 1;
    const ERASE_SIZE: usize = SECTOR_BYTES as usize;

    async fn erase(&mut self, from: u32, to: u32) -> Result<(), FlashError> {
        let t = instret();
        if !from.is_multiple_of(SECTOR_BYTES) || !to.is_multiple_of(SECTOR_BYTES) || to < from {
            return Err(FlashError::NotAligned);
        }
        let r = self.range(from, (to - from) as usize)?;
        self.array[r].fill(0xFF);
        let sectors = u64::from((to - from) / SECTOR_BYTES);
        self.count(t, |c| {
            c.transactions += 3 * sectors;
            c.wire_bytes += (1 + COMMAND_BYTES + 2) * sectors;
            c.erases += sectors;
        });
        Ok(())
    }

    async fn write(&mut self, offset: u32, bytes: &[u8]) -> Result<(), FlashError> {
        let t = instret();
        let r = self.range(offset, bytes.len())?;
        for (cell, &b) in self.array[r].iter_mut().zip(bytes) {
            *cell &= b;
        }
        // One program command per page touched.
        let (mut at, end) = (offset, offset + bytes.len() as u32);
        let mut pages = 0u64;
        while at < end {
            at = ((at / PAGE_BYTES) + 1) * PAGE_BYTES;
            pages += 1;
        }
        self.count(t, |c| {
            c.transactions += 3 * pages;
            c.wire_bytes += (1 + COMMAND_BYTES + 2) * pages + bytes.len() as u64;
            c.programs += pages;
            c.bytes_written += bytes.len() as u64;
        });
        Ok(())
    }
}

/// A NOR flash may program a byte again (bits only go from 1 to 0).
impl MultiwriteNorFlash for NorFlashEmu<'_> {}
