//! The kernel console: the `log` facade printed on the board's UART.
//!
//! Every line is `[seconds.millis LEVEL] message`. The UART is locked only with
//! interrupts off, so an interrupt handler may log without deadlocking on a lock held
//! by the code it interrupted. This file must never block on anything but the UART.

use crate::board;
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
        let ms = board::uptime_ms();
        riscv::interrupt::free(|| {
            let mut uart = board::CONSOLE_UART.lock();
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

/// Sets up the UART and installs the logger at `Info`.
pub fn init() {
    riscv::interrupt::free(|| board::CONSOLE_UART.lock().init());
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
    riscv::interrupt::disable();
    if board::CONSOLE_UART.is_locked() {
        // SAFETY: one hart, interrupts off: the holder is this very context or one it
        // interrupted, and neither will run again, since a panic stops the kernel.
        unsafe { board::CONSOLE_UART.force_unlock() };
    }
    let _ = writeln!(board::CONSOLE_UART.lock(), "{args}");
}
