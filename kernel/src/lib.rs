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
//! so tools and tests can share the kernel's definitions (exit codes, boot options,
//! the boards' memory maps).
//!
//! Layers, each using only those below it: `kmain` (the boot sequence) and `system`
//! (the one owner of run-time state, the trap handler) at the top; `writer` (what a
//! checkpoint holds), `console`, `heap`, `ckbench` beneath; then `board` (the board
//! contract and its implementation) and `arch` (the CPU and the trap contract), which
//! name nothing above them; and at the bottom the portable `bootargs`, `console_in`,
//! `exit`, `pages`, `pmp_layout` and `app` (the generated task table).

#![cfg_attr(target_os = "none", no_std)]

pub mod bootargs;
pub mod console_in;
pub mod exit;
pub mod pages;
pub mod pmp_layout;

#[cfg(target_os = "none")]
extern crate alloc;

pub mod board;

#[cfg(target_os = "none")]
mod app;
#[cfg(target_os = "none")]
pub mod arch;
#[cfg(target_os = "none")]
mod ckbench;
#[cfg(target_os = "none")]
mod console;
#[cfg(target_os = "none")]
mod cost;
#[cfg(target_os = "none")]
mod energy;
#[cfg(target_os = "none")]
mod heap;
#[cfg(target_os = "none")]
mod kmain;
#[cfg(target_os = "none")]
mod panic;
#[cfg(target_os = "none")]
mod system;
#[cfg(target_os = "none")]
mod writer;
