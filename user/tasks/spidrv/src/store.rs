//! Where the driver's ring and FRAM partition are reached: directly (loads and stores
//! on the memory-mapped NVM, the FRAM chip emulated by this task) or, when the kernel's
//! own NVM is on the SPI bus, through the kernel (`NvmRead`/`NvmWrite` on the eternal
//! areas' capabilities), which then drives the one chip for everyone and numbers these
//! stores in one sequence with its own. This file only moves bytes; it must never
//! decide what to store.

use amber_nvm::{check_range, Either, Nvm, NvmError};
use amber_user::abi::MAX_NVM_TRANSFER;
use amber_user::{nvm_read, nvm_write};

/// An NVM grant reached through the kernel: the capability slot of an eternal area
/// and its size.
pub struct Grant {
    pub slot: u32,
    pub size: u32,
}

/// Runs `op` on each chunk of at most `MAX_NVM_TRANSFER` bytes of `[offset, offset +
/// len)`, in order. A kernel refusal or device error is a lost device to the ring.
fn chunks(
    offset: u32,
    len: usize,
    size: u32,
    mut op: impl FnMut(u32, core::ops::Range<usize>) -> Result<(), amber_user::Error>,
) -> Result<(), NvmError> {
    check_range(offset, len, size)?;
    let mut done = 0;
    while done < len {
        let n = (len - done).min(MAX_NVM_TRANSFER as usize);
        op(offset + done as u32, done..done + n).map_err(|_| NvmError::PowerLost)?;
        done += n;
    }
    Ok(())
}

impl Nvm for Grant {
    fn size(&self) -> u32 {
        self.size
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        let slot = self.slot;
        chunks(offset, buf.len(), self.size, |at, r| {
            nvm_read(slot, at, &mut buf[r])
        })
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        let slot = self.slot;
        chunks(offset, data.len(), self.size, |at, r| {
            nvm_write(slot, at, &data[r])
        })
    }

    /// The kernel fences after each of its stores.
    fn fence(&mut self) {}

    fn flush(&mut self) -> Result<(), NvmError> {
        Ok(())
    }
}

/// The ring's or the FRAM partition's store: `M` directly (`Left`), or a [`Grant`]
/// (`Right`).
pub type Store<M> = Either<M, Grant>;
