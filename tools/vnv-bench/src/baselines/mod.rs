//! The baselines the paper compares the vNV-Heap against, one per file.
//!
//! Each baseline does its real work on a [`CountingNvm`] over a `VecNvm` (real bytes
//! move) and charges its CPU work to a [`Meter`](crate::cost::Meter). They depend on `counting` and `cost`
//! only, never on the vNV-Heap, so that no heap behaviour leaks into a baseline.

pub mod clock_cache;
pub mod copy_all;
pub mod managed_state;
pub mod module_swap;
pub mod nvm_queue;
pub mod ram_queue;

use crate::counting::CountingNvm;
use amber_nvm::sim::VecNvm;

/// The storage every baseline and heap runs on: RAM-backed, counted.
pub type Device = CountingNvm<VecNvm>;

/// A fresh counted device of `size` bytes.
pub fn device(size: usize) -> Device {
    CountingNvm::new(VecNvm::new(
        u32::try_from(size).expect("device fits in 4 GiB"),
    ))
}
