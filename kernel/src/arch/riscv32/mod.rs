//! RV32IMC, machine mode: the reset entry (`entry`), the trap path and its contract
//! (`trap`), the PMP registers (`pmp`), and the few CSR operations the kernel needs
//! (interrupts on and off, waiting for one, making new code visible). Nothing here
//! may name a device address or the kernel; `board/` names devices, and the kernel
//! names itself to this code once, through [`trap::init`] and `boot_entry!`.

mod entry;
pub mod pmp;
pub mod trap;

/// Interrupts off (`mstatus.MIE`).
pub fn interrupts_off() {
    riscv::interrupt::disable();
}

/// Sleeps with interrupts on until one has been taken, then turns them off again.
pub fn wait_for_interrupt() {
    // SAFETY: the trap vector is installed; enabling interrupts here is what lets the
    // timer and devices wake the kernel, and the trap path handles them on this stack.
    unsafe { riscv::interrupt::enable() };
    riscv::asm::wfi();
    riscv::interrupt::disable();
}

/// Runs `f` with interrupts off.
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    riscv::interrupt::free(f)
}
