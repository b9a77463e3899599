//! The trap path and its contract with the kernel: every trap is saved, decoded into a
//! [`Trap`] and handed to the kernel's [`TrapHandler`], which the kernel names once
//! ([`init`]); this file never names the kernel.
//!
//! All traps enter at [`entry`]: directly (mtvec direct mode), or, on a CPU that only
//! has vectored mode (the ESP32-C3), through [`vectors`], a 256-byte aligned table of
//! 32 jumps to it ([`TrapVector`]). `mscratch` tells where from: it
//! holds the current task's [`Context`] while a task runs in U-mode, and 0 while the
//! kernel runs.
//!
//! - From U-mode, x1..x31 and the pc go straight into the task's `Context`, the kernel
//!   switches to a fresh kernel stack and calls [`TrapHandler::user_trap`], which never
//!   returns: it resumes a task ([`resume_user`]). No kernel state lives on the stack
//!   across a return to U-mode. An `ecall` is first offered to
//!   [`TrapHandler::fast_syscall`]: when it names a task to resume, the entry jumps
//!   straight to the register restore, skipping the trap decode and `resume_user`
//!   (the trap from U-mode left `mstatus` as `mret` to U-mode needs it).
//! - From M-mode (boot, idle), a [`TrapFrame`] is pushed on the current stack and only
//!   interrupts are expected ([`TrapHandler::kernel_interrupt`]); an exception in
//!   kernel code is a broken invariant that panics.
//!
//! Interrupt handlers must never allocate (the heap lock may be held by the code they
//! interrupted).

use amber_core::{Context, Fault};
use core::ptr::NonNull;
use riscv::interrupt::machine::Exception;
use riscv::register::mtvec::{self, Mtvec, TrapMode};
use riscv::ExceptionNumber;

/// What trapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trap {
    /// An interrupt, by its cause number (mcause without the interrupt bit): the
    /// board decodes it.
    Interrupt(u32),
    /// `ecall` from U-mode: a syscall.
    Syscall,
    /// An exception of the task at `addr` (mtval).
    Fault { fault: Fault, addr: u32 },
}

/// The kernel's half of the trap contract.
pub trait TrapHandler {
    /// A trap from U-mode, whose registers are saved in the running task's `Context`.
    /// Must resume a task ([`resume_user`]), on this fresh kernel stack.
    fn user_trap(trap: Trap) -> !;
    /// An `ecall` from U-mode, whose registers are saved in `caller` (the running
    /// task's `Context`; `nr` is its a7), before anything else: the context of the
    /// task to resume at once, its PMP set, or `None`, having changed nothing, for
    /// `user_trap` to handle it. Must not touch `mstatus`.
    fn fast_syscall(caller: NonNull<Context>, nr: u32) -> Option<NonNull<Context>>;
    /// An interrupt taken while the kernel ran (booting or idle).
    fn kernel_interrupt(cause: u32);
}

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

/// mcause bit 31: the trap is an interrupt.
const INTERRUPT_BIT: usize = 1 << 31;
const ECALL_FROM_U: usize = 8;

/// The trap entry for the kernel's handler `H`.
#[unsafe(naked)]
#[unsafe(link_section = ".text.trap")]
extern "C" fn entry<H: TrapHandler>() {
    core::arch::naked_asm!(
        r#"
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
    li a1, {ecall}
    bne a0, a1, 2f
    # An ecall: the fast path resumes a task (a0 = its Context) or declines (a0 = 0).
    # a7 still holds the syscall number.
    mv a0, t6
    mv a1, a7
    call {fast_syscall}
    beqz a0, 3f
    j _resume_user
3:  csrr a0, mcause
2:  csrr a1, mtval
    call {user_trap}

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
"#,
        frame = const FRAME_SIZE,
        ecall = const ECALL_FROM_U,
        kernel_trap = sym kernel_trap::<H>,
        user_trap = sym user_trap::<H>,
        fast_syscall = sym fast_syscall::<H>,
    )
}

core::arch::global_asm!(
    r#"
    .section .text.resume, "ax"
    # a0 = the Context to run in U-mode. mstatus.MPP must already be U and MPIE set
    # (as `resume_user` sets them, and as a trap from U-mode leaves them).
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
"#
);

unsafe extern "C" {
    fn _resume_user(ctx: *mut Context) -> !;
}

/// How mtvec reaches the entry: the board says which its CPU has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrapVector {
    /// Every trap at the entry itself.
    Direct,
    /// Exceptions at the table's base, interrupt line n at base + 4n: the table jumps
    /// to the entry from each slot (one jump more per trap).
    Vectored,
}

/// The vector table for handler `H`: 32 jumps to its entry. `.balign 256` at the
/// start of its own section makes the section, and so the table, 256-byte aligned.
#[unsafe(naked)]
#[unsafe(link_section = ".text.vectors")]
extern "C" fn vectors<H: TrapHandler>() {
    core::arch::naked_asm!(
        r#"
    .balign 256
    .option push
    .option norvc
    .rept 32
    j {entry}
    .endr
    .option pop
"#,
        entry = sym entry::<H>,
    )
}

/// Points mtvec at the entry for handler `H`, the way `vector` says, and marks the
/// kernel as running (mscratch = 0).
pub fn init<H: TrapHandler>(vector: TrapVector) {
    let (base, mode) = match vector {
        TrapVector::Direct => (entry::<H> as *const () as usize, TrapMode::Direct),
        TrapVector::Vectored => (vectors::<H> as *const () as usize, TrapMode::Vectored),
    };
    // SAFETY: `entry` is a complete trap handler (above), 4-byte aligned by the link
    // script, and `vectors` a table of 4-byte jumps to it, 256-byte aligned; mscratch
    // = 0 is how the entry knows a trap comes from the kernel.
    unsafe {
        riscv::register::mscratch::write(0);
        mtvec::write(Mtvec::new(base, mode));
    }
}

/// Runs `ctx` in U-mode. Never returns: the task's next trap enters the handler on a
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

extern "C" fn fast_syscall<H: TrapHandler>(
    caller: NonNull<Context>,
    nr: u32,
) -> Option<NonNull<Context>> {
    H::fast_syscall(caller, nr)
}

extern "C" fn user_trap<H: TrapHandler>(mcause: usize, mtval: usize) -> ! {
    let code = mcause & !INTERRUPT_BIT;
    H::user_trap(if mcause & INTERRUPT_BIT != 0 {
        Trap::Interrupt(code as u32)
    } else if code == ECALL_FROM_U {
        Trap::Syscall
    } else {
        Trap::Fault {
            fault: Fault::from_mcause(code as u32),
            addr: mtval as u32,
        }
    })
}

extern "C" fn kernel_trap<H: TrapHandler>(frame: &mut TrapFrame) {
    let code = frame.mcause & !INTERRUPT_BIT;
    if frame.mcause & INTERRUPT_BIT != 0 {
        return H::kernel_interrupt(code as u32);
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
