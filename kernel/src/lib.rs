//! Amber: a microkernel for intermittently powered RISC-V devices.
//!
//! Design principles, in the order they win when they conflict:
//!
//! 1. **Correct after any power cut.** Every byte the kernel puts on NVM is written so
//!    that a cut at any store, torn at any byte, leaves a state the next boot accepts
//!    or refuses by name. The kernel never guesses and never formats silently.
//! 2. **Portable logic is host code.** Formats, the capability tree, the checkpoint
//!    manager and the drivers' protocols live in crates that build and are tested on
//!    the host; only `arch/` and `board/` are target-only.
//! 3. **Static configuration, simple algorithms.** Sizes are fixed at build time; we
//!    prefer a loop with a stated bound to a clever structure.
//! 4. **No panics on input.** Boot options, NVM contents and (later) syscall arguments
//!    are allegations to be checked; a bad one gets a named error.
//!
//! This crate is `no_std` on the device. On the host only the portable modules build,
//! so tools and tests can share the kernel's definitions (exit codes, boot options).

#![cfg_attr(target_os = "none", no_std)]

/// The most tasks an app may have: the kernel's per-task tables (task threads, PMP
/// images, dirty pages, checkpoint items) have this many entries. It is here, outside
/// the target-only modules, so that `cargo xtask` checks app descriptions against the
/// kernel's own value (`amber_core::MAX_TASKS` is the capability tree's, larger).
pub const MAX_TASKS: usize = 8;

pub mod bootargs;
pub mod cut;
pub mod exit;
pub mod pages;
pub mod pmp;

#[cfg(target_os = "none")]
extern crate alloc;

#[cfg(target_os = "none")]
pub mod arch;
#[cfg(target_os = "none")]
pub mod board;
#[cfg(target_os = "none")]
mod boot;
#[cfg(target_os = "none")]
mod checkpoint;
#[cfg(target_os = "none")]
mod ckbench;
#[cfg(target_os = "none")]
mod console;
#[cfg(target_os = "none")]
mod cost;
#[cfg(target_os = "none")]
mod heap;
#[cfg(target_os = "none")]
mod panic;
#[cfg(target_os = "none")]
mod task;
