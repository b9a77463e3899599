//! `kmain`: the boot sequence, from a bare hart to the idle loop.
//!
//! Order: console, trap vector, heap, boot options, the app's check (before anything
//! touches the NVM), NVM (find, open or format, count the boot), interrupts, then the
//! mode the options chose. Every failure on the way
//! is reported in words and ends with its own exit code; nothing here formats an NVM
//! unless the device is blank or the user asked for it.

use crate::bootargs::{self, Mode};
use crate::cut::CutNvm;
use crate::exit::ExitCode;
use crate::task::SystemNvm;
use crate::{arch, board, console, cost, heap, task};
use alloc::vec::Vec;
use amber_format::{FormatPolicy, NvmHeader, Opened};
use amber_nvm::Nvm;
use core::fmt::Display;
use log::{error, info};

/// Idle-test mode: timer ticks to wait for before passing.
const IDLE_TEST_TICKS: u32 = 10;
/// NVM-stress mode: print the committed count every this many rewrites.
const STRESS_PRINT_EVERY: u64 = 16;

/// Reports `why` and stops with `code`.
pub(crate) fn fatal(code: ExitCode, why: impl Display) -> ! {
    error!("{why}");
    error!("boot stopped (exit code {})", code.code());
    board::exit(code)
}

pub extern "C" fn kmain(_hartid: usize, dtb: usize) -> ! {
    console::init();
    arch::riscv32::trap::init();
    heap::init();
    let cmdline = board::bootargs(dtb);
    let args = bootargs::parse(cmdline).unwrap_or_else(|e| fatal(ExitCode::BadBootArgs, e));
    console::set_level(args.log);
    cost::set_exact(args.icount);
    // `parse` accepted it: it is UTF-8.
    let shown = core::str::from_utf8(cmdline).unwrap_or_default();
    info!("Amber on QEMU virt (RV32IMC, M-mode); boot options `{shown}`");
    heap_self_check();

    let run_app = args.mode == Mode::Normal && task::have_tasks();
    if run_app {
        task::check_app();
    }
    let window = board::find_nvm().unwrap_or_else(|e| fatal(ExitCode::NoNvmDevice, e));
    crate::cut::set_energy(args.energy, args.warn);
    let mut nvm = CutNvm::new(window, args.cut, power_cut);
    let (mut header, how) = open_nvm(&mut nvm, args.format);

    board::init_interrupts();
    match args.mode {
        Mode::Normal if run_app => task::start(nvm, &header, how == Opened::Formatted, &args),
        Mode::Normal | Mode::IdleTest => idle(args.mode),
        Mode::NvmStress => nvm_stress(&mut nvm, &mut header),
        Mode::PanicTest => panic!("panic requested by amber.test=panic"),
        Mode::CkptBench => crate::ckbench::run(&mut nvm, header.superblock.kernel_area),
    }
}

/// An injected power cut (`amber.cut`): the torn store is written; stop at once.
fn power_cut() -> ! {
    board::exit(ExitCode::PowerCut)
}

/// Allocates and frees through the kernel heap, so a broken heap stops boot here.
fn heap_self_check() {
    let v: Vec<u32> = (0..256).collect();
    assert_eq!(
        v.iter().sum::<u32>(),
        255 * 256 / 2,
        "kernel heap returned bad memory"
    );
    let (total, used) = heap::usage();
    drop(v);
    info!(
        "kernel heap: {} KiB, self-check used {used} bytes",
        total / 1024
    );
}

/// Opens (or formats) the NVM and counts this boot in its boot record.
fn open_nvm(nvm: &mut SystemNvm, format: bool) -> (NvmHeader, Opened) {
    let policy = if format {
        FormatPolicy::Always
    } else {
        FormatPolicy::IfBlank
    };
    let (mut header, how) = match amber_format::open(nvm, policy) {
        Ok(opened) => opened,
        Err(amber_format::OpenError::Nvm(e)) => fatal(ExitCode::NvmIo, e),
        Err(e) => fatal(
            ExitCode::NvmRefused,
            format_args!(
                "refusing to use the NVM: {e}. Nothing was written. To erase it and start \
                 over, boot with amber.format (cargo xtask run --format)"
            ),
        ),
    };
    let mut rec = header.boot_record();
    rec.boots += 1;
    header
        .update(nvm, rec)
        .unwrap_or_else(|e| fatal(ExitCode::NvmIo, e));
    match how {
        Opened::Formatted => info!(
            "formatted a new NVM of {} bytes (format v{}), boot {}",
            nvm.size(),
            header.superblock.version,
            rec.boots
        ),
        Opened::Found => info!(
            "found NVM format v{}, boot {}, stress count {}",
            header.superblock.version, rec.boots, rec.stress
        ),
    }
    (header, how)
}

/// The idle loop: sleep until an interrupt, forever (or until the idle test passes).
fn idle(mode: Mode) -> ! {
    info!("entering the idle loop");
    loop {
        riscv::asm::wfi();
        if mode == Mode::IdleTest
            && board::ticks() >= IDLE_TEST_TICKS
            && board::uart_bytes_received() > 0
        {
            info!(
                "idle test passed: {} timer ticks, {} console bytes received",
                board::ticks(),
                board::uart_bytes_received()
            );
            board::exit_success();
        }
    }
}

/// Rewrites the boot record as fast as possible, printing the committed count, so
/// that the host can cut power at any instant and check nothing committed is lost.
fn nvm_stress(nvm: &mut SystemNvm, header: &mut NvmHeader) -> ! {
    info!("nvm-stress: rewriting the boot record in a loop");
    let mut rec = header.boot_record();
    loop {
        rec.stress += 1;
        header
            .update(nvm, rec)
            .unwrap_or_else(|e| fatal(ExitCode::NvmIo, e));
        if rec.stress.is_multiple_of(STRESS_PRINT_EVERY) {
            info!("nvm-stress: committed {}", rec.stress);
        }
    }
}
