//! The reset entry: the first instructions the kernel runs.
//!
//! QEMU (`-bios none`) jumps here in M-mode with a0 = hart id and a1 = the device tree
//! address. The entry parks every hart but hart 0, sets up the stack, clears `.bss`
//! and calls `kmain`. It must never touch memory beyond the kernel image: the device
//! tree lies above it.

core::arch::global_asm!(
    r#"
    .section .text.init, "ax"
    .global _start
_start:
    csrw mie, zero
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
    call {kmain}
3:
    wfi
    j 3b
"#,
    kmain = sym crate::boot::kmain,
);
