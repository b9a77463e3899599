//! faulter: makes one forbidden access per run, and is restarted by the kernel after
//! each fault (its app sets fault = "restart"). A counter in its own .bss, which a
//! restart keeps, says which access is next: kernel memory, another task's memory, a
//! device register it holds no capability for, an illegal instruction, its own code
//! written through the data bus, and its own RAM executed through the instruction bus
//! (on a board with one bus, such as QEMU `virt`, the same addresses as its regions).
//! Then it says it is done and exits. Each line it prints before an access names the
//! address, so a test can match it with the kernel's fault report. Every address comes
//! from the board's memory map, which `cargo xtask` passes at build time; none is
//! written here.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{build_setting, println};
use core::sync::atomic::{AtomicU32, Ordering};

amber_user::main!(main);

/// Kernel memory: the start of the kernel's RAM.
const KERNEL_MEMORY: usize = build_setting(option_env!("AMBER_BOARD_KERNEL"), 0) as usize;
/// Another task's memory: the start of task RAM, the RAM of the first task of the
/// faulter app (heartbeat).
const OTHER_TASK: usize = build_setting(option_env!("AMBER_BOARD_TASK_RAM"), 0) as usize;
/// A device: the console UART, which only the kernel may touch.
const DEVICE: usize = build_setting(option_env!("AMBER_BOARD_CONSOLE"), 0) as usize;
/// Instruction-bus address = data-bus address + this (0 on a one-bus board).
const CODE_ALIAS: usize = build_setting(option_env!("AMBER_BOARD_CODE_ALIAS"), 0) as usize;
/// This task's own code on the data bus: PMP grants it only at its instruction-bus
/// address, to execute.
const OWN_CODE_AS_DATA: usize =
    build_setting(option_env!("AMBER_TASK_CODE"), 0) as usize - CODE_ALIAS;
/// This task's own RAM on the instruction bus: PMP grants it only at its data-bus
/// address, to read and write.
const OWN_RAM_AS_CODE: usize =
    build_setting(option_env!("AMBER_TASK_RAM"), 0) as usize + CODE_ALIAS;

/// How many forbidden accesses there are.
const ACCESSES: u32 = 6;

static STEP: AtomicU32 = AtomicU32::new(0);

fn main() {
    let step = STEP.load(Ordering::Relaxed);
    STEP.store(step + 1, Ordering::Relaxed);
    match step {
        0 => {
            println!("faulter: reading kernel memory at {KERNEL_MEMORY:#010x}");
            // SAFETY: meant to fault: PMP stops the load before it happens, and the
            // kernel restarts this task.
            let v = unsafe { (KERNEL_MEMORY as *const u32).read_volatile() };
            println!("faulter: ERROR read {v:#x} from kernel memory");
        }
        1 => {
            println!("faulter: writing another task's memory at {OTHER_TASK:#010x}");
            // SAFETY: meant to fault, as above; the other task's memory is untouched.
            unsafe { (OTHER_TASK as *mut u32).write_volatile(0xDEAD_BEEF) };
            println!("faulter: ERROR wrote another task's memory");
        }
        2 => {
            println!("faulter: reading a device register at {DEVICE:#010x}");
            // SAFETY: meant to fault, as above.
            let v = unsafe { (DEVICE as *const u32).read_volatile() };
            println!("faulter: ERROR read {v:#x} from a device");
        }
        3 => {
            println!("faulter: executing an illegal instruction");
            illegal_instruction();
            println!("faulter: ERROR executed an illegal instruction");
        }
        4 => {
            println!(
                "faulter: writing its own code through the data bus at {OWN_CODE_AS_DATA:#010x}"
            );
            // SAFETY: meant to fault, as above; the code is not changed.
            unsafe { (OWN_CODE_AS_DATA as *mut u32).write_volatile(0) };
            println!("faulter: ERROR wrote its own code");
        }
        5 => {
            println!("faulter: executing its own RAM through the instruction bus at {OWN_RAM_AS_CODE:#010x}");
            // SAFETY: meant to fault: PMP refuses the fetch of the first instruction,
            // so nothing at that address runs.
            let f: extern "C" fn() = unsafe { core::mem::transmute(OWN_RAM_AS_CODE) };
            f();
            println!("faulter: ERROR executed its own RAM");
        }
        _ => println!("faulter: done, all {ACCESSES} forbidden accesses were stopped"),
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
