//! `MmioNvm`: NVM that the CPU reaches by plain loads and stores in a memory window
//! (QEMU's ivshmem BAR backed by a host file, or MRAM on a microcontroller).
//!
//! Every access is volatile and bounds-checked; this file must never hand out a
//! pointer into the window, so all NVM traffic stays visible at the `Nvm` interface.

use crate::{check_range, Nvm, NvmError};
use core::sync::atomic::{fence, Ordering};

/// A memory-mapped NVM window of `size` bytes at `base`.
pub struct MmioNvm {
    base: *mut u8,
    size: u32,
    stores: u64,
}

// SAFETY: `MmioNvm` owns its window exclusively (promised by `new`'s caller), so moving
// it to another context moves that ownership with it.
unsafe impl Send for MmioNvm {}

impl MmioNvm {
    /// Wraps the window `[base, base + size)`.
    ///
    /// # Safety
    /// The range must be mapped device memory or RAM, valid for volatile reads and
    /// writes for as long as the `MmioNvm` lives, and no other code may access it.
    pub unsafe fn new(base: *mut u8, size: u32) -> Self {
        MmioNvm {
            base,
            size,
            stores: 0,
        }
    }

    /// Number of `write` calls that reached the device since `new` (a store counter
    /// used by crash harnesses to pick the store to cut at).
    pub fn stores(&self) -> u64 {
        self.stores
    }

    /// Physical address of the window (for boot messages).
    pub fn base(&self) -> usize {
        self.base as usize
    }
}

impl Nvm for MmioNvm {
    fn size(&self) -> u32 {
        self.size
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        check_range(offset, buf.len(), self.size)?;
        let mut at = offset as usize;
        let mut chunks = buf.chunks_mut(4);
        for chunk in &mut chunks {
            if chunk.len() == 4 && at.is_multiple_of(4) {
                // SAFETY: `check_range` proved `[at, at + 4)` lies in the window, which
                // `new`'s contract makes valid for volatile reads; `at` is 4-aligned.
                let w = unsafe { (self.base.add(at) as *const u32).read_volatile() };
                chunk.copy_from_slice(&w.to_le_bytes());
            } else {
                for (i, b) in chunk.iter_mut().enumerate() {
                    // SAFETY: as above, byte by byte.
                    *b = unsafe { self.base.add(at + i).read_volatile() };
                }
            }
            at += chunk.len();
        }
        Ok(())
    }

    /// Stores whole aligned words where it can (one bus store per word, as an SPI FRAM
    /// driver sends words), bytes elsewhere. A power cut may tear the store between
    /// any two bus stores, which the formats above allow for.
    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        check_range(offset, data.len(), self.size)?;
        let mut at = offset as usize;
        for chunk in data.chunks(4) {
            if chunk.len() == 4 && at.is_multiple_of(4) {
                let w = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                // SAFETY: in bounds and 4-aligned, as in `read`; the window is ours to
                // write.
                unsafe { (self.base.add(at) as *mut u32).write_volatile(w) };
            } else {
                for (i, &b) in chunk.iter().enumerate() {
                    // SAFETY: as above, byte by byte.
                    unsafe { self.base.add(at + i).write_volatile(b) };
                }
            }
            at += chunk.len();
        }
        self.stores += 1;
        Ok(())
    }

    fn fence(&mut self) {
        fence(Ordering::SeqCst);
    }

    fn flush(&mut self) -> Result<(), NvmError> {
        // The window has no write cache: a store that retired is in the backing file.
        fence(Ordering::SeqCst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unaligned_and_partial_word_accesses_round_trip() {
        let mut ram = [0u32; 8];
        // SAFETY: `ram` outlives `nvm` and is only reached through it below.
        let mut nvm = unsafe { MmioNvm::new(ram.as_mut_ptr() as *mut u8, 32) };
        let data: Vec<u8> = (1..=11).collect();
        nvm.write(3, &data).unwrap();
        let mut out = [0u8; 13];
        nvm.read(2, &mut out).unwrap();
        assert_eq!(out[0], 0, "the byte before the write is untouched");
        assert_eq!(&out[1..12], &data[..]);
        assert_eq!(out[12], 0, "the byte after the write is untouched");
    }

    #[test]
    fn mmio_nvm_round_trips_bytes_and_rejects_out_of_window_accesses() {
        let mut ram = [0u8; 32];
        // SAFETY: `ram` outlives `nvm` and is only reached through it below.
        let mut nvm = unsafe { MmioNvm::new(ram.as_mut_ptr(), 32) };
        nvm.write(30, &[1, 2]).unwrap();
        let mut out = [0u8; 2];
        nvm.read(30, &mut out).unwrap();
        assert_eq!(out, [1, 2]);
        assert!(
            nvm.write(31, &[1, 2]).is_err(),
            "a write past the window must fail"
        );
        assert_eq!(
            nvm.stores(),
            1,
            "only the successful write counts as a store"
        );
    }
}
