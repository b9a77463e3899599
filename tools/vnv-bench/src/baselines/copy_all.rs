//! Copy-all-RAM checkpointing: unmanaged RAM saved whole on every persist (Fig. 4
//! baseline).
//!
//! Without modification tracking the system must assume every byte changed, so a
//! checkpoint writes the whole RAM region to NVM. It must never skip bytes: its cost
//! grows with the RAM size by design.

use super::Device;
use crate::cost::Meter;
use amber_nvm::Nvm;

/// Cycles of entering the checkpoint routine (save a few registers, set up the loop).
pub const PERSIST_CYCLES: u64 = 50;

/// `ram.len()` bytes of unmanaged RAM with an NVM image of the same size.
pub struct CopyAllRam {
    nvm: Device,
    /// The application's RAM, modified freely.
    pub ram: Vec<u8>,
    /// CPU work charged so far.
    pub meter: Meter,
}

impl CopyAllRam {
    /// `size` bytes of RAM, all zero.
    pub fn new(size: usize) -> Self {
        CopyAllRam {
            nvm: super::device(size),
            ram: vec![0; size],
            meter: Meter::new(),
        }
    }

    /// The storage traffic so far.
    pub fn nvm(&self) -> &Device {
        &self.nvm
    }

    /// The reactive checkpoint: every RAM byte to NVM.
    pub fn persist(&mut self) {
        self.meter.op(PERSIST_CYCLES);
        self.nvm
            .write(0, &self.ram)
            .expect("the image fits the device");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persist_writes_every_ram_byte_to_nvm() {
        let mut r = CopyAllRam::new(100);
        r.ram[42] = 9;
        r.persist();
        assert_eq!(r.nvm().counts().write_bytes, 100);
        assert_eq!(r.nvm().inner().image()[42], 9);
    }
}
