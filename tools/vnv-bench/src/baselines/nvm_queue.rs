//! NVM-only FIFO queue: every element lives in NVM and every push and pop goes to the
//! device (Fig. 3 baseline).
//!
//! Only the head and length indices are in RAM, as they are for the other queues. It
//! must never cache an element in RAM.

use super::Device;
use crate::cost::Meter;
use amber_nvm::Nvm;

/// Cycles of one push or pop besides the transfer: index arithmetic, a full/empty
/// check and the call itself.
pub const OP_CYCLES: u64 = 20;

/// A FIFO of `elem`-byte elements stored in NVM.
pub struct NvmQueue {
    nvm: Device,
    elem: usize,
    slots: usize,
    head: usize,
    len: usize,
    /// CPU work charged so far.
    pub meter: Meter,
}

impl NvmQueue {
    /// A queue of up to `slots` elements of `elem` bytes.
    pub fn new(slots: usize, elem: usize) -> Self {
        NvmQueue {
            nvm: super::device(slots * elem),
            elem,
            slots,
            head: 0,
            len: 0,
            meter: Meter::new(),
        }
    }

    /// The storage traffic so far.
    pub fn nvm(&self) -> &Device {
        &self.nvm
    }

    /// Appends `value`; `false` if the queue is full.
    pub fn push(&mut self, value: &[u8]) -> bool {
        self.meter.op(OP_CYCLES);
        if self.len == self.slots {
            return false;
        }
        let slot = (self.head + self.len) % self.slots;
        let at = (slot * self.elem) as u32;
        self.nvm.write(at, value).expect("slot lies on the device");
        self.len += 1;
        true
    }

    /// Removes the oldest element into `out`; `false` if the queue is empty.
    pub fn pop(&mut self, out: &mut [u8]) -> bool {
        self.meter.op(OP_CYCLES);
        if self.len == 0 {
            return false;
        }
        let at = (self.head * self.elem) as u32;
        self.nvm.read(at, out).expect("slot lies on the device");
        self.head = (self.head + 1) % self.slots;
        self.len -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_round_trip_through_nvm_in_fifo_order() {
        let mut q = NvmQueue::new(3, 8);
        let mut out = [0; 8];
        for round in 0..4u8 {
            assert!(q.push(&[round; 8]));
            assert!(q.push(&[round + 100; 8]));
            assert!(q.pop(&mut out));
            assert_eq!(out, [round; 8]);
            assert!(q.pop(&mut out));
            assert_eq!(out, [round + 100; 8]);
        }
        let c = q.nvm().counts();
        assert_eq!(
            (c.write_bytes, c.read_bytes),
            (64, 64),
            "each element once each way"
        );
    }
}
