//! `kmain`: the boot sequence, from a bare hart to the idle loop, on the chosen board.
//!
//! Order: console, trap vector, heap, boot options, the app's check (before anything
//! touches the NVM), NVM (find, open or format, count the boot), interrupts, then the
//! mode the options chose. Every failure on the way
//! is reported in words and ends with its own exit code; nothing here formats an NVM
//! unless the device is blank or the user asked for it.

use crate::board::{Board, Chosen};
use crate::bootargs::{self, Mode};
use crate::exit::ExitCode;
use crate::system::{self, SystemNvm};
use crate::{arch, console, energy, heap};
use alloc::vec::Vec;
use amber_format::{FormatPolicy, NvmHeader, Opened};
use amber_nvm::CutNvm;
use amber_nvm::Nvm;
use core::fmt::Display;
use log::{error, info};

/// Idle-test mode: timer ticks to wait for before passing.
const IDLE_TEST_TICKS: u64 = 10;
/// NVM-stress mode: print the committed count every this many rewrites.
const STRESS_PRINT_EVERY: u64 = 16;

/// Reports `why` and stops with `code`.
pub(crate) fn fatal(code: ExitCode, why: impl Display) -> ! {
    error!("{why}");
    error!("boot stopped (exit code {})", code.code());
    Chosen::exit(code)
}

crate::boot_entry!(kmain);

/// The kernel's main, called by the reset entry with the loader's a0 and a1.
extern "C" fn kmain(a0: usize, a1: usize) -> ! {
    console::init();
    arch::init_traps::<system::Traps>(Chosen::TRAP_VECTOR);
    heap::init();
    let cmdline = Chosen::boot_options([a0, a1]);
    let args = bootargs::parse(cmdline).unwrap_or_else(|e| fatal(ExitCode::BadBootArgs, e));
    console::set_level(args.log);
    // `parse` accepted it: it is UTF-8.
    let shown = core::str::from_utf8(cmdline).unwrap_or_default();
    info!(
        "Amber on {}; boot options `{shown}`; counter exact: {}",
        Chosen::NAME,
        Chosen::counter_exact()
    );
    heap_self_check();

    let run_app = args.mode == Mode::Normal && system::have_tasks();
    if run_app {
        system::check_app();
    }
    let device = Chosen::nvm().unwrap_or_else(|e| fatal(ExitCode::NoNvmDevice, e));
    energy::set(args.energy, args.warn);
    let mut nvm = CutNvm::new(device, args.cut, power_cut);
    // Only the harvesting harness's energy budget asks every store about the energy.
    if args.energy.is_some() {
        nvm = nvm.with_brown_out(energy::spent);
    }
    let (mut header, how) = open_nvm(&mut nvm, args.format);

    Chosen::start_interrupts();
    match args.mode {
        Mode::Normal if run_app => system::start(nvm, &header, how == Opened::Formatted, &args),
        Mode::Normal | Mode::IdleTest => idle(args.mode),
        Mode::NvmStress => nvm_stress(&mut nvm, &mut header),
        Mode::PanicTest => panic!("panic requested by amber.test=panic"),
        Mode::CkptBench => crate::ckbench::run(&mut nvm, header.superblock.kernel_area),
    }
}

/// An injected power cut (`amber.cut`, or the harvesting harness's brown-out): the
/// torn store at NVM offset `offset` is written; say where, and stop at once.
fn power_cut(offset: u32) -> ! {
    info!("power cut at the store to NVM offset {offset:#x}");
    Chosen::exit(ExitCode::PowerCut)
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
        arch::wait_for_interrupt();
        let (ticks, bytes) = system::with_system(|s| s.activity());
        if mode == Mode::IdleTest && ticks >= IDLE_TEST_TICKS && bytes > 0 {
            info!("idle test passed: {ticks} timer ticks, {bytes} console bytes received");
            Chosen::exit_success();
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
