//! RAM-only FIFO queue: a ring of fixed-size slots in a RAM budget (Fig. 3 baseline).
//!
//! Fast and volatile, and limited to as many elements as fit in the budget. It must
//! never touch NVM: it has no device at all.

use crate::cost::Meter;

/// Cycles of one push or pop besides the copy: index arithmetic, a full/empty check
/// and the call itself.
pub const OP_CYCLES: u64 = 20;

/// A FIFO of `elem`-byte elements held in a RAM budget.
pub struct RamQueue {
    ram: Vec<u8>,
    elem: usize,
    head: usize,
    len: usize,
    /// CPU work charged so far.
    pub meter: Meter,
}

impl RamQueue {
    /// A queue using at most `ram_budget` bytes for `elem`-byte elements. The head and
    /// length indices take 8 bytes of the budget, so 4 KiB holds 15 elements of 256 B,
    /// as in the paper.
    pub fn new(ram_budget: usize, elem: usize) -> Self {
        let slots = ram_budget.saturating_sub(8) / elem;
        RamQueue {
            ram: vec![0; slots * elem],
            elem,
            head: 0,
            len: 0,
            meter: Meter::new(),
        }
    }

    /// How many elements fit.
    pub fn capacity(&self) -> usize {
        self.ram.len() / self.elem
    }

    /// Appends `value`; `false` (and nothing stored) if the queue is full.
    pub fn push(&mut self, value: &[u8]) -> bool {
        self.meter.op(OP_CYCLES);
        if self.len == self.capacity() {
            return false;
        }
        let slot = (self.head + self.len) % self.capacity();
        self.ram[slot * self.elem..][..self.elem].copy_from_slice(value);
        self.meter.copy(self.elem);
        self.len += 1;
        true
    }

    /// Removes the oldest element into `out`; `false` if the queue is empty.
    pub fn pop(&mut self, out: &mut [u8]) -> bool {
        self.meter.op(OP_CYCLES);
        if self.len == 0 {
            return false;
        }
        out.copy_from_slice(&self.ram[self.head * self.elem..][..self.elem]);
        self.meter.copy(self.elem);
        self.head = (self.head + 1) % self.capacity();
        self.len -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_kib_hold_fifteen_elements_of_256_bytes_in_fifo_order() {
        let mut q = RamQueue::new(4096, 256);
        assert_eq!(q.capacity(), 15);
        for i in 0..15u8 {
            assert!(q.push(&[i; 256]));
        }
        assert!(!q.push(&[99; 256]), "a full queue must refuse");
        let mut out = [0; 256];
        for i in 0..15u8 {
            assert!(q.pop(&mut out));
            assert_eq!(out[0], i, "elements leave in the order they came");
        }
        assert!(!q.pop(&mut out));
    }
}
