//! The reset entry: the first instructions the kernel runs.
//!
//! The loader (QEMU with `-bios none`) jumps to `_start` in M-mode. The entry parks
//! every hart but hart 0, turns interrupts off through `mstatus.MIE` (the ESP32-C3 has
//! no `mie` CSR), sets up the stack, clears `.bss` and calls the kernel's main
//! with a0 and a1 as the loader left them (the board reads its boot protocol from
//! them). The kernel names its main once, with [`crate::boot_entry!`]; this file never
//! names the kernel. It must never touch memory beyond the kernel image: the device
//! tree lies above it.

/// Defines `_start`, calling `$main: extern "C" fn(usize, usize) -> !`.
#[macro_export]
macro_rules! boot_entry {
    ($main:path) => {
        const _: extern "C" fn(usize, usize) -> ! = $main;
        core::arch::global_asm!(
            r#"
    .section .text.init, "ax"
    .global _start
_start:
    csrci mstatus, 8
    csrr t0, mhartid
    bnez t0, 3f
    la sp, _stack_top
    la t0, _sbss
    la t1, _ebss
1:
    bgeu t0, t1, 2f
    sw zero, 0(t0)
    addi t0, t0, 4
    j 1b
2:
    call {main}
3:
    wfi
    j 3b
"#,
            main = sym $main,
        );
    };
}
