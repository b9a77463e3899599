//! What a store asked of its device, in terms every device model can price: bus
//! transactions and wire bytes (SPI), page programs and sector erases (NOR flash),
//! 16-bit accesses (a memory-mapped bus), data bytes stored, and the instructions the
//! device emulation itself spent (left out of the store's count). The wrappers here
//! count for the FRAM (around the emulated chip's SPI transactions) and for the
//! memory-mapped NVM (around every access). This file must never estimate: each
//! figure is what went through the wrapper.

use amber_nvm::{Nvm, NvmError};
use amber_user::instret;
use core::cell::Cell;
use embedded_hal::spi::{ErrorType, Operation, SpiDevice};

/// Device traffic so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCounts {
    /// SPI transactions (chip-select cycles).
    pub transactions: u64,
    /// Bytes clocked on the SPI wire: opcodes, addresses, data.
    pub wire_bytes: u64,
    /// Data bytes stored on the device (programmed or written).
    pub bytes_written: u64,
    /// NOR page programs.
    pub programs: u64,
    /// NOR sector erases.
    pub erases: u64,
    /// 16-bit accesses of a memory-mapped NVM.
    pub halfwords: u64,
    /// Instructions spent inside the emulated device (not the store's).
    pub emulation_instructions: u64,
}

impl DeviceCounts {
    /// The traffic of `self` not already in `before`.
    pub fn since(&self, before: &DeviceCounts) -> DeviceCounts {
        DeviceCounts {
            transactions: self.transactions - before.transactions,
            wire_bytes: self.wire_bytes - before.wire_bytes,
            bytes_written: self.bytes_written - before.bytes_written,
            programs: self.programs - before.programs,
            erases: self.erases - before.erases,
            halfwords: self.halfwords - before.halfwords,
            emulation_instructions: self.emulation_instructions - before.emulation_instructions,
        }
    }
}

/// An SPI device (the emulated FRAM chip) whose transactions' instructions are
/// measured into a shared counter: they are the emulation's, not the driver's.
pub struct Metered<'c, D> {
    inner: D,
    spent: &'c Cell<DeviceCounts>,
}

impl<'c, D> Metered<'c, D> {
    pub fn new(inner: D, spent: &'c Cell<DeviceCounts>) -> Self {
        Metered { inner, spent }
    }
}

impl<D: ErrorType> ErrorType for Metered<'_, D> {
    type Error = D::Error;
}

impl<D: SpiDevice> SpiDevice for Metered<'_, D> {
    fn transaction(&mut self, ops: &mut [Operation<'_, u8>]) -> Result<(), Self::Error> {
        let t = instret();
        let r = self.inner.transaction(ops);
        let mut c = self.spent.get();
        c.emulation_instructions += u64::from(instret().wrapping_sub(t));
        self.spent.set(c);
        r
    }
}

/// A memory-mapped NVM whose accesses are counted in 16-bit accesses (the paper's
/// parallel MRAM, AS3004316, is 16 bits wide).
pub struct CountingNvm<'c, N> {
    inner: N,
    counts: &'c Cell<DeviceCounts>,
}

impl<'c, N> CountingNvm<'c, N> {
    pub fn new(inner: N, counts: &'c Cell<DeviceCounts>) -> Self {
        CountingNvm { inner, counts }
    }

    /// Its traffic so far.
    pub fn counted(&self) -> DeviceCounts {
        self.counts.get()
    }

    fn add(&self, len: usize, written: bool) {
        let mut c = self.counts.get();
        c.halfwords += len.div_ceil(2) as u64;
        if written {
            c.bytes_written += len as u64;
        }
        self.counts.set(c);
    }
}

impl<N: Nvm> Nvm for CountingNvm<'_, N> {
    fn size(&self) -> u32 {
        self.inner.size()
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        self.inner.read(offset, buf)?;
        self.add(buf.len(), false);
        Ok(())
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        self.inner.write(offset, data)?;
        self.add(data.len(), true);
        Ok(())
    }

    fn fence(&mut self) {
        self.inner.fence();
    }

    fn flush(&mut self) -> Result<(), NvmError> {
        self.inner.flush()
    }
}
