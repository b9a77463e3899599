//! faulter: makes one forbidden access per run, and is restarted by the kernel after
//! each fault (its app sets fault = "restart"). A counter in its own .bss, which a
//! restart keeps, says which access is next: kernel memory, another task's memory, a
//! device register it holds no capability for, and an illegal instruction. Then it
//! says it is done and exits.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::println;
use core::sync::atomic::{AtomicU32, Ordering};

amber_user::main!(main);

/// Kernel memory: the start of DRAM, where the kernel image lies.
const KERNEL_MEMORY: usize = 0x8000_0000;
/// Another task's memory: the RAM of the first task of the faulter app (heartbeat),
/// which xtask places at the start of task RAM.
const OTHER_TASK: usize = 0x8180_0000;
/// A device: the console UART, which only the kernel may touch.
const DEVICE: usize = 0x1000_0000;

static STEP: AtomicU32 = AtomicU32::new(0);

fn main() {
    let step = STEP.load(Ordering::Relaxed);
    STEP.store(step + 1, Ordering::Relaxed);
    match step {
        0 => {
            println!("faulter: reading kernel memory at {KERNEL_MEMORY:#x}");
            // SAFETY: meant to fault: PMP stops the load before it happens, and the
            // kernel restarts this task.
            let v = unsafe { (KERNEL_MEMORY as *const u32).read_volatile() };
            println!("faulter: ERROR read {v:#x} from kernel memory");
        }
        1 => {
            println!("faulter: writing another task's memory at {OTHER_TASK:#x}");
            // SAFETY: meant to fault, as above; the other task's memory is untouched.
            unsafe { (OTHER_TASK as *mut u32).write_volatile(0xDEAD_BEEF) };
            println!("faulter: ERROR wrote another task's memory");
        }
        2 => {
            println!("faulter: reading a device register at {DEVICE:#x}");
            // SAFETY: meant to fault, as above.
            let v = unsafe { (DEVICE as *const u8).read_volatile() };
            println!("faulter: ERROR read {v:#x} from a device");
        }
        3 => {
            println!("faulter: executing an illegal instruction");
            illegal_instruction();
            println!("faulter: ERROR executed an illegal instruction");
        }
        _ => println!("faulter: done, all 4 forbidden accesses were stopped"),
    }
}

#[cfg(target_arch = "riscv32")]
fn illegal_instruction() {
    // SAFETY: `unimp` always raises an illegal-instruction exception; the kernel
    // restarts this task.
    unsafe { core::arch::asm!("unimp") };
}

/// The host build of a task only has to compile.
#[cfg(not(target_arch = "riscv32"))]
fn illegal_instruction() {}
