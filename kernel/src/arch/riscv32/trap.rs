//! The trap path: save every register, dispatch in Rust, restore, `mret`.
//!
//! All traps enter at `_trap_entry` (mtvec direct mode). `mscratch` tells where from:
//! it holds the current task's [`Context`] while a task runs in U-mode, and 0 while
//! the kernel runs.
//!
//! - From U-mode, x1..x31 and the pc go straight into the task's `Context`, the kernel
//!   switches to a fresh kernel stack and calls `user_trap`, which returns the context
//!   to resume (maybe another task's); `_resume_user` loads it and `mret`s. No kernel
//!   state lives on the stack across a return to U-mode.
//! - From M-mode (boot, idle), a [`TrapFrame`] is pushed on the current stack and
//!   `kernel_trap` runs; only interrupts are expected there, and an exception in
//!   kernel code is a broken invariant that panics.
//!
//! Interrupt handlers must never allocate (the heap lock may be held by the code they
//! interrupted).

use amber_core::Context;
use riscv::interrupt::machine::Exception;
use riscv::register::mtvec::{self, Mtvec, TrapMode};
use riscv::ExceptionNumber;

/// Registers saved on a trap from M-mode. `regs[i]` is `x{i}`; `regs[0]` is unused.
#[repr(C)]
pub struct TrapFrame {
    pub regs: [usize; 32],
    pub mepc: usize,
    pub mcause: usize,
    pub mtval: usize,
    _pad: usize,
}

const FRAME_SIZE: usize = core::mem::size_of::<TrapFrame>();
const _: () = assert!(FRAME_SIZE == 144 && FRAME_SIZE.is_multiple_of(16));
// The assembly below stores x_i at 4*i and the pc at 128 of a `Context`.
const _: () = assert!(core::mem::offset_of!(Context, pc) == 128);

core::arch::global_asm!(
    r#"
    .section .text.trap, "ax"
    .align 4
    .global _trap_entry
_trap_entry:
    csrrw t6, mscratch, t6
    beqz t6, 1f

    # From U-mode: t6 = the task's Context, mscratch = the task's t6.
    .irp n, 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30
    sw x\n, (\n*4)(t6)
    .endr
    csrr t5, mscratch
    sw t5, 124(t6)
    csrr t5, mepc
    sw t5, 128(t6)
    csrw mscratch, zero
    la sp, _stack_top
    csrr a0, mcause
    csrr a1, mtval
    call {user_trap}
    j _resume_user

1:  # From M-mode: restore t6 (mscratch goes back to 0) and use the current stack.
    csrrw t6, mscratch, t6
    addi sp, sp, -{frame}
    sw x1, 4(sp)
    .irp n, 3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    sw x\n, (\n*4)(sp)
    .endr
    addi t0, sp, {frame}
    sw t0, 8(sp)
    csrr t0, mepc
    sw t0, 128(sp)
    csrr t0, mcause
    sw t0, 132(sp)
    csrr t0, mtval
    sw t0, 136(sp)
    mv a0, sp
    call {kernel_trap}
    lw t0, 128(sp)
    csrw mepc, t0
    lw x1, 4(sp)
    .irp n, 3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    lw x\n, (\n*4)(sp)
    .endr
    addi sp, sp, {frame}
    mret

    # a0 = the Context to run in U-mode. mstatus.MPP must already be U and MPIE set.
    .global _resume_user
_resume_user:
    lw t0, 128(a0)
    csrw mepc, t0
    csrw mscratch, a0
    .irp n, 1,2,3,4,5,6,7,8,9,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    lw x\n, (\n*4)(a0)
    .endr
    lw a0, 40(a0)
    mret
"#,
    frame = const FRAME_SIZE,
    kernel_trap = sym kernel_trap,
    user_trap = sym crate::task::user_trap,
);

unsafe extern "C" {
    fn _trap_entry();
    fn _resume_user(ctx: *mut Context) -> !;
}

/// Points mtvec at `_trap_entry` and marks the kernel as running (mscratch = 0).
pub fn init() {
    let entry = _trap_entry as *const () as usize;
    // SAFETY: `_trap_entry` is a complete trap handler (above) and 16-byte aligned;
    // mscratch = 0 is how it knows a trap comes from the kernel.
    unsafe {
        riscv::register::mscratch::write(0);
        mtvec::write(Mtvec::new(entry, TrapMode::Direct));
    }
}

/// Runs `ctx` in U-mode. Never returns: the task's next trap enters `user_trap` on a
/// fresh kernel stack.
///
/// # Safety
/// `ctx` must point to a task's `Context` that stays valid while the task runs, and
/// the PMP must already be set for that task.
pub unsafe fn resume_user(ctx: *mut Context) -> ! {
    // SAFETY: MPP = U makes `mret` drop to U-mode; MPIE = 1 keeps interrupts on there.
    unsafe {
        riscv::register::mstatus::set_mpp(riscv::register::mstatus::MPP::User);
        riscv::register::mstatus::set_mpie();
        _resume_user(ctx)
    }
}

/// mcause bit 31: the trap is an interrupt.
pub const INTERRUPT_BIT: usize = 1 << 31;
pub const MACHINE_TIMER: usize = 7;
pub const MACHINE_EXTERNAL: usize = 11;
pub const ECALL_FROM_U: usize = 8;

extern "C" fn kernel_trap(frame: &mut TrapFrame) {
    let code = frame.mcause & !INTERRUPT_BIT;
    if frame.mcause & INTERRUPT_BIT != 0 {
        crate::task::interrupt(code);
        return;
    }
    match Exception::from_number(code) {
        Ok(cause) => panic!(
            "kernel exception {cause:?} at pc {:#010x}, mtval {:#010x}",
            frame.mepc, frame.mtval
        ),
        Err(_) => panic!(
            "kernel exception with unknown cause {code} at pc {:#010x}",
            frame.mepc
        ),
    }
}
