//! The key-value peer comparison's device side (run by `cargo xtask bench` in the
//! `kvbench` app, under `-icount`, where `instret` counts exactly): the stores, the
//! emulated devices that count their traffic, and the workloads. `main.rs` runs every
//! workload on every store and prints one line each; `tools/kv-bench` turns the lines
//! into modelled throughput with each device's datasheet timings.
//!
//! - `flash.rs`: an SPI NOR flash (W25Q32JV) emulated over RAM for
//!   `sequential-storage`, counting commands, programs and erases;
//! - `counts.rs`: the device counters, and the wrappers that count FRAM transactions
//!   and memory-mapped accesses;
//! - `stores.rs`: `amber-kv` tables and the `sequential-storage` map behind one trait;
//! - `workload.rs`: the seeded workloads and the runner that measures them.
//!
//! It runs on the host too (where `instret` reads 0), so that its tests check that
//! every store gives the same answers. It measures and prints; it must never judge a
//! figure.

#![cfg_attr(not(test), no_std)]

pub mod counts;
pub mod flash;
pub mod stores;
pub mod workload;

#[cfg(test)]
mod tests;
