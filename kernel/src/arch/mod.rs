//! CPU support. Amber runs on one ISA, RV32IMC in M-mode (the ESP32-C3's), so this
//! folder holds one architecture, and every architecture offers the same names,
//! re-exported here: the trap contract ([`Trap`], [`TrapHandler`], [`init_traps`],
//! [`resume_user`]), `boot_entry!`, the PMP layer and interrupt control. Code here
//! knows the CPU but never a board (devices belong in `board/`) and never the kernel.

pub mod riscv32;

pub use riscv32::trap::{init as init_traps, resume_user, Trap, TrapHandler, TrapVector};
pub use riscv32::{interrupts_off, pmp, wait_for_interrupt, without_interrupts};
