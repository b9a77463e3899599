//! The kernel binary. On the device everything starts at `_start` (arch/riscv32/entry)
//! and continues in `amber_kernel`'s `kmain`; this file only pulls the library in. On
//! the host it is an empty program, so `cargo test --workspace` can build it.

#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
use amber_kernel as _;

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("amber-kernel runs on riscv32imc-unknown-none-elf: use `cargo xtask run`");
}
