//! The kernel console: the `log` facade printed on the board's console, and what
//! tasks write with `DebugWrite`.
//!
//! Every line is `[seconds.millis LEVEL] message`. The console is locked only with
//! interrupts off, so an interrupt handler may log without deadlocking on a lock held
//! by the code it interrupted. This file must never block on anything but the console.

use crate::arch;
use crate::board::{Board, Chosen};
use core::fmt::Write;
use log::{LevelFilter, Log, Metadata, Record};

struct Console;

static LOGGER: Console = Console;

impl Log for Console {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let ms = Chosen::uptime_us() / 1000;
        arch::without_interrupts(|| {
            let mut uart = Chosen::console().lock();
            // A UART write cannot fail; there is nowhere to report it if it did.
            let _ = writeln!(
                uart,
                "[{:>4}.{:03} {:<5}] {}",
                ms / 1000,
                ms % 1000,
                record.level(),
                record.args()
            );
        });
    }

    fn flush(&self) {}
}

/// Sets up the console and installs the logger at `Info`.
pub fn init() {
    arch::without_interrupts(Chosen::init_console);
    // SAFETY: called once, on the only hart, before interrupts are enabled, so no
    // other code can be inside `log` at the same time (the racy setters' contract).
    unsafe {
        // Only fails when a logger is already set, which cannot happen here.
        let _ = log::set_logger_racy(&LOGGER);
        log::set_max_level_racy(LevelFilter::Info);
    }
}

/// Changes the log level (from the `amber.log` boot option).
pub fn set_level(level: LevelFilter) {
    // SAFETY: as in `init`: single hart, interrupts still off at boot.
    unsafe { log::set_max_level_racy(level) };
}

/// Writes a panic message directly, whatever state the lock is in.
pub fn panic_write(args: core::fmt::Arguments) {
    arch::interrupts_off();
    let console = Chosen::console();
    if console.is_locked() {
        // SAFETY: one hart, interrupts off: the holder is this very context or one it
        // interrupted, and neither will run again, since a panic stops the kernel.
        unsafe { console.force_unlock() };
    }
    let _ = writeln!(console.lock(), "{args}");
}

/// Prints what a task wrote to its console, one log line per call.
pub fn task_output(task: &str, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let text = core::str::from_utf8(bytes).unwrap_or("<output that is not UTF-8>");
    log::info!("[{task}] {}", text.trim_end_matches('\n'));
}
