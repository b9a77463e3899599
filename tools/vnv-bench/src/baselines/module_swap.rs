//! Module swapping: the application is split into modules that each fill the RAM, and
//! the resident one is swapped as a whole (paper §7.2, the baseline of Fig. 2).
//!
//! Accessing anything in a module that is not resident writes the resident module
//! back to NVM if it was touched mutably, then reads the whole requested module in.
//! This file must never load or write less than a whole module: that granularity is
//! the point of the baseline.

use super::Device;
use crate::cost::Meter;
use amber_nvm::Nvm;

/// Cycles of the residency check every access pays (compare the module id, return a
/// pointer): a load, a compare and a branch plus call overhead.
pub const CHECK_CYCLES: u64 = 10;

/// A RAM of `module_size` bytes that holds one module at a time.
pub struct ModuleSwap {
    nvm: Device,
    ram: Vec<u8>,
    resident: Option<usize>,
    dirty: bool,
    /// CPU work charged so far.
    pub meter: Meter,
}

impl ModuleSwap {
    /// `modules` modules of `module_size` bytes each, stored back to back in NVM; no
    /// module is resident.
    pub fn new(modules: usize, module_size: usize) -> Self {
        ModuleSwap {
            nvm: super::device(modules * module_size),
            ram: vec![0; module_size],
            resident: None,
            dirty: false,
            meter: Meter::new(),
        }
    }

    /// The storage traffic so far.
    pub fn nvm(&self) -> &Device {
        &self.nvm
    }

    fn offset(&self, module: usize) -> u32 {
        (module * self.ram.len()) as u32
    }

    fn swap_in(&mut self, module: usize) {
        self.meter.op(CHECK_CYCLES);
        if self.resident == Some(module) {
            return;
        }
        if let (Some(old), true) = (self.resident, self.dirty) {
            let at = self.offset(old);
            self.nvm
                .write(at, &self.ram)
                .expect("module lies on the device");
        }
        let at = self.offset(module);
        self.nvm
            .read(at, &mut self.ram)
            .expect("module lies on the device");
        self.resident = Some(module);
        self.dirty = false;
    }

    /// The RAM image of `module`, for reading.
    pub fn get(&mut self, module: usize) -> &[u8] {
        self.swap_in(module);
        &self.ram
    }

    /// The RAM image of `module`, for writing: it will be written back when evicted.
    pub fn get_mut(&mut self, module: usize) -> &mut [u8] {
        self.swap_in(module);
        self.dirty = true;
        &mut self.ram
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modified_module_survives_being_swapped_out_and_in() {
        let mut m = ModuleSwap::new(2, 16);
        m.get_mut(0).copy_from_slice(&[7; 16]);
        assert_eq!(m.get(1), &[0; 16]);
        assert_eq!(m.get(0), &[7; 16], "module 0 must come back as it was left");
    }

    #[test]
    fn a_swap_moves_whole_modules_and_writes_back_only_dirty_ones() {
        let mut m = ModuleSwap::new(3, 64);
        m.get(0);
        m.get(1); // 0 was clean: read only
        let c = m.nvm().counts();
        assert_eq!((c.read_bytes, c.write_bytes), (128, 0));
        m.get_mut(1);
        m.get(2); // 1 was dirty: written back whole
        let c = m.nvm().counts();
        assert_eq!((c.read_bytes, c.write_bytes), (192, 64));
        m.get(2); // resident: no traffic
        assert_eq!(m.nvm().counts(), c);
    }
}
