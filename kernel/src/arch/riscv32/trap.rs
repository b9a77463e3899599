//! The trap path: save every register, dispatch in Rust, restore, `mret`.
//!
//! All traps enter at `_trap_entry` (mtvec direct mode), which stores x1..x31 and
//! mepc, mcause and mtval in a [`TrapFrame`] on the current stack. Interrupts go to
//! the board; an exception in kernel code is a broken kernel invariant and panics.
//! Interrupt handlers must never allocate (the heap lock may be held by the code they
//! interrupted).

use crate::board;
use riscv::interrupt::machine::Exception;
use riscv::register::mtvec::{self, Mtvec, TrapMode};
use riscv::ExceptionNumber;

/// Registers saved on trap entry. `regs[i]` is `x{i}`; `regs[0]` is unused.
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

core::arch::global_asm!(
    r#"
    .section .text.trap, "ax"
    .align 4
    .global _trap_entry
_trap_entry:
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
    call {handler}
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
    handler = sym trap_handler,
);

unsafe extern "C" {
    fn _trap_entry();
}

/// Points mtvec at `_trap_entry`.
pub fn init() {
    let entry = _trap_entry as *const () as usize;
    // SAFETY: `_trap_entry` is a complete trap handler (above) and 16-byte aligned.
    unsafe { mtvec::write(Mtvec::new(entry, TrapMode::Direct)) };
}

/// mcause bit 31: the trap is an interrupt.
const INTERRUPT_BIT: usize = 1 << 31;
const MACHINE_TIMER: usize = 7;
const MACHINE_EXTERNAL: usize = 11;

extern "C" fn trap_handler(frame: &mut TrapFrame) {
    let code = frame.mcause & !INTERRUPT_BIT;
    if frame.mcause & INTERRUPT_BIT != 0 {
        match code {
            MACHINE_TIMER => board::timer_interrupt(),
            MACHINE_EXTERNAL => board::external_interrupt(),
            _ => panic!("unexpected interrupt {code}"),
        }
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
