//! The user runtime: what every Amber task links against.
//!
//! It provides the task entry (`_start`, which calls the function named by
//! [`main!`] and exits with 0 when it returns), one safe wrapper per syscall of
//! [`amber_abi`], `print!`/`println!` through the kernel console, and a panic handler
//! that prints the message and ends the task with exit code [`PANIC_EXIT`]. It runs in
//! U-mode: it must never use atomics that need interrupt masking (no `portable-atomic`
//! single-core feature) and never assume any memory but the task's own.
//!
//! Dependencies point down: apps -> this runtime -> `amber-abi`.

#![cfg_attr(not(test), no_std)]

mod console;
mod counters;
mod ipc_buffer;
mod rng;
#[cfg(target_os = "none")]
mod rt;
mod samples;
mod setting;
mod sys;

pub use amber_abi as abi;
pub use amber_abi::{Error, IpcBuffer, IpcDesc, Rights, WatchFlags};
pub use console::{_print, Console};
pub use counters::{cycles, instret, spend_cycles};
pub use ipc_buffer::IpcBuf;
pub use rng::Rng;
pub use samples::sample;
pub use setting::{build_setting, Memory};
pub use sys::*;

/// Exit code of a task that panicked.
pub const PANIC_EXIT: u32 = 101;

/// Names the task's main function: `amber_user::main!(main);`. On the host (where a
/// task only has to compile, and `main` is the ordinary entry point) it expands to
/// nothing.
#[macro_export]
macro_rules! main {
    ($f:path) => {
        #[cfg(target_os = "none")]
        #[unsafe(no_mangle)]
        pub extern "C" fn amber_main() {
            $f()
        }
    };
}

/// Prints to the kernel console (one console line per call at most 256 bytes).
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::_print(format_args!($($arg)*)) };
}

/// Prints a line to the kernel console.
#[macro_export]
macro_rules! println {
    () => { $crate::_print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::_print(format_args!("{}\n", format_args!($($arg)*))) };
}
