//! The hart's cycle and retired-instruction counters, as U-mode reads them (the kernel
//! enables them in `mcounteren`). Without `-icount`, QEMU's counters follow the host
//! clock; with `-icount shift=0,sleep=off` they count instructions exactly, and
//! [`crate::counters_exact`] says which. A task must never print a difference of them
//! as instructions unless it is. Reading them never changes anything.

/// The low 32 bits of `cycle`.
#[cfg(target_arch = "riscv32")]
pub fn cycles() -> u32 {
    let v: u32;
    // SAFETY: reading `cycle` has no side effect; the kernel enables it for U-mode.
    unsafe { core::arch::asm!("rdcycle {}", out(reg) v) };
    v
}

/// The low 32 bits of `instret`.
#[cfg(target_arch = "riscv32")]
pub fn instret() -> u32 {
    let v: u32;
    // SAFETY: reading `instret` has no side effect; the kernel enables it for U-mode.
    unsafe { core::arch::asm!("rdinstret {}", out(reg) v) };
    v
}

/// On the host a task only has to compile: the counters read 0.
#[cfg(not(target_arch = "riscv32"))]
pub fn cycles() -> u32 {
    0
}

/// On the host a task only has to compile: the counters read 0.
#[cfg(not(target_arch = "riscv32"))]
pub fn instret() -> u32 {
    0
}

/// Spends `cycles` CPU cycles of the `cycle` counter: the time a device transfer
/// would take where a task emulates the device (exact only under `-icount`; without
/// it, ticks of the host's clock).
pub fn spend_cycles(n: u32) {
    let start = cycles();
    while cycles().wrapping_sub(start) < n {
        core::hint::spin_loop();
    }
}
