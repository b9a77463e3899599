//! The heap service's portable part: everything the `heapsvc` task does that does not
//! need the kernel, so that it runs and is tested on the host.
//!
//! - `service.rs`: the requests of the `amber-heap-api` protocol on a vNV-Heap of
//!   untyped byte objects, owned by the badge of the client that allocated them, and
//!   the service's side of the client's pin page (pins of resident objects without IPC);
//! - `storage.rs`: the heap's storage, the SPI FRAM through the SPI driver task, as an
//!   `Nvm` that splits accesses into the driver's 256-byte calls and counts them;
//! - `bound.rs`: the worst persist and request (bytes, writes, instructions) from the
//!   configuration alone, and the ring space kept free so a persist never meets a full
//!   ring;
//! - `declared.rs`: the `heapsvc` task's heap configuration and the bounds it declares,
//!   from its build settings (also computed by `cargo xtask` for an app's description);
//! - `stats.rs`: the record of persists the task prints.
//!
//! Dependencies point down: this crate -> `vnv-heap` -> `amber-nvm`, plus the two
//! protocol crates (`amber-heap-api`, `amber-spi-api`) for their numbers. It must never
//! make a syscall (the task does) nor hold a client's object in any form but the heap's.

#![cfg_attr(not(test), no_std)]

mod bound;
pub mod declared;
mod service;
mod stats;
mod storage;

pub use bound::{
    apply_instructions, max_dirty_for_ring, persist_bound, persist_work, phase_bound, reload_work,
    request_extra_work, request_work, ring_overhead, ring_reserve, InstrModel, PersistBound,
    PhaseBound, Work,
};
pub use service::{Service, MAX_IDS};
pub use stats::{Overrun, PersistCost, PersistLog};
pub use storage::{Counted, SpiPort, SpiStorage, StorageStats};
