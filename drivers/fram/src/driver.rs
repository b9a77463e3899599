//! `Fram`: the MB85RS protocol on top of an `embedded_hal::spi::SpiDevice`, and the
//! `Nvm` implementation that lets the checkpoint code and the vNV-Heap run on FRAM
//! unchanged.
//!
//! Transactions issued (each is one chip-select cycle):
//!
//! | operation | transactions |
//! |---|---|
//! | `read(addr, buf)` | `[READ, addr..]` then `buf.len()` bytes read |
//! | `write(addr, data)` | `[WREN]`, then `[WRITE, addr.., data..]` |
//! | `status()` | `[RDSR]` then 1 byte read |
//! | `set_status(s)` | `[WREN]`, `[WRSR, s]`, then `status()` to check it took |
//!
//! FRAM stores each byte as it is clocked in: no page limit, no busy wait, no write
//! buffer. When `transaction` returns `Ok`, chip select has risen and every byte is in
//! the array, so `fence` and `flush` have nothing left to do. A power cut tears a
//! WRITE at byte granularity: a prefix of the data is stored, never anything else.
//!
//! This file must never wait on the chip, retry behind the caller's back, or send an
//! opcode that `opcode.rs` does not list.

use crate::error::FramError;
use crate::opcode;
use crate::part::Part;
use crate::stats::FramStats;
use crate::status::{BlockProtect, Status};
use amber_nvm::{check_range, Nvm, NvmError};
use embedded_hal::spi::{Operation, SpiDevice};

/// An MB85RS-class FRAM on an SPI device.
pub struct Fram<SPI> {
    spi: SPI,
    part: Part,
    /// First block-protected address as last read from the chip; `None` until the
    /// status register has been read (the first write reads it).
    protected_from: Option<u32>,
    stats: FramStats,
}

impl<SPI: SpiDevice> Fram<SPI> {
    /// The FRAM `part` on `spi`. Sends nothing: the block protection is learnt from
    /// the status register on the first write (or on [`Fram::status`]).
    pub fn new(spi: SPI, part: Part) -> Self {
        Fram {
            spi,
            part,
            protected_from: None,
            stats: FramStats::default(),
        }
    }

    /// The part this driver was made for.
    pub fn part(&self) -> Part {
        self.part
    }

    /// Bus traffic issued so far.
    pub fn stats(&self) -> FramStats {
        self.stats
    }

    /// Sets every traffic counter back to zero.
    pub fn reset_stats(&mut self) {
        self.stats = FramStats::default();
    }

    /// Gives the SPI device back.
    pub fn release(self) -> SPI {
        self.spi
    }

    /// Reads `buf.len()` bytes starting at `offset` with one READ.
    pub fn read_at(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), FramError<SPI::Error>> {
        self.check(offset, buf.len())?;
        if buf.is_empty() {
            return Ok(());
        }
        let (header, n) = self.part.header(opcode::READ, offset);
        self.stats.reads += 1;
        self.stats.bytes_read += buf.len() as u64;
        let len = buf.len();
        self.transact(
            &mut [Operation::Write(&header[..n]), Operation::Read(buf)],
            n + len,
        )
    }

    /// Writes `data` starting at `offset`: WREN, then one WRITE. An empty write sends
    /// nothing. A write reaching the block-protected range is refused before anything
    /// is sent ([`FramError::WriteProtected`]).
    pub fn write_at(&mut self, offset: u32, data: &[u8]) -> Result<(), FramError<SPI::Error>> {
        self.check(offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let protected_from = match self.protected_from {
            Some(from) => from,
            None => self
                .status()?
                .block_protect()
                .protected_from(self.part.size()),
        };
        if offset as u64 + data.len() as u64 > protected_from as u64 {
            return Err(FramError::WriteProtected {
                offset,
                len: data.len(),
                protected_from,
            });
        }
        self.write_enable()?;
        let (header, n) = self.part.header(opcode::WRITE, offset);
        self.stats.writes += 1;
        self.stats.bytes_written += data.len() as u64;
        self.transact(
            &mut [Operation::Write(&header[..n]), Operation::Write(data)],
            n + data.len(),
        )
    }

    /// Reads the status register (RDSR) and remembers its block protection.
    pub fn status(&mut self) -> Result<Status, FramError<SPI::Error>> {
        let mut value = [0u8; 1];
        self.transact(
            &mut [
                Operation::Write(&[opcode::RDSR]),
                Operation::Read(&mut value),
            ],
            2,
        )?;
        let status = Status::from_bits(value[0]);
        self.protected_from = Some(status.block_protect().protected_from(self.part.size()));
        Ok(status)
    }

    /// Writes the non-volatile status bits (WPEN, BP1, BP0) of `wanted` with WREN +
    /// WRSR, reads the register back and returns it. If the writable bits read back
    /// differ from `wanted`'s, the write did not take: [`FramError::StatusRejected`].
    pub fn set_status(&mut self, wanted: Status) -> Result<Status, FramError<SPI::Error>> {
        let wanted = wanted.writable();
        self.write_enable()?;
        // The register changes now or not at all: forget what we knew until read back.
        self.protected_from = None;
        self.transact(&mut [Operation::Write(&[opcode::WRSR, wanted.bits()])], 2)?;
        let actual = self.status()?;
        if actual.writable() != wanted {
            return Err(FramError::StatusRejected { wanted, actual });
        }
        Ok(actual)
    }

    /// Sets the block protection, keeping WPEN as it is.
    pub fn set_block_protect(
        &mut self,
        protect: BlockProtect,
    ) -> Result<Status, FramError<SPI::Error>> {
        let current = self.status()?;
        self.set_status(current.with_block_protect(protect))
    }

    /// Sets the write-enable latch (WREN). `write_at` and `set_status` do this
    /// themselves; it is public for tests and bring-up.
    pub fn write_enable(&mut self) -> Result<(), FramError<SPI::Error>> {
        self.transact(&mut [Operation::Write(&[opcode::WREN])], 1)
    }

    /// Resets the write-enable latch (WRDI), so that no stray WRITE can land.
    pub fn write_disable(&mut self) -> Result<(), FramError<SPI::Error>> {
        self.transact(&mut [Operation::Write(&[opcode::WRDI])], 1)
    }

    fn check(&self, offset: u32, len: usize) -> Result<(), FramError<SPI::Error>> {
        check_range(offset, len, self.part.size()).map_err(|_| FramError::OutOfBounds {
            offset,
            len,
            size: self.part.size(),
        })
    }

    /// One chip-select cycle of `wire_bytes` bytes, counted whether or not it succeeds.
    fn transact(
        &mut self,
        operations: &mut [Operation<'_, u8>],
        wire_bytes: usize,
    ) -> Result<(), FramError<SPI::Error>> {
        self.stats.transactions += 1;
        self.stats.wire_bytes += wire_bytes as u64;
        self.spi.transaction(operations).map_err(FramError::Bus)
    }
}

/// The FRAM as NVM. Errors map as described in `error.rs`: a bus failure is
/// `PowerLost`, a write into the protected top of the array is `OutOfBounds`.
impl<SPI: SpiDevice> Nvm for Fram<SPI> {
    fn size(&self) -> u32 {
        self.part.size()
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        self.read_at(offset, buf).map_err(NvmError::from)
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        self.write_at(offset, data).map_err(NvmError::from)
    }

    /// Nothing to do: every transaction has finished (chip select high, bytes in the
    /// array) before `write` returns, and FRAM has no write buffer to reorder them.
    fn fence(&mut self) {}

    /// Nothing to do, for the same reason as `fence`: a returned `write` is durable.
    fn flush(&mut self) -> Result<(), NvmError> {
        Ok(())
    }
}
