//! What the kernel measures its own work in, and whether that is an instruction count.
//!
//! `minstret` counts retired instructions exactly only under QEMU's `-icount`; without
//! it QEMU derives the counter from the host's clock, so its figures are no
//! instruction count at all. The launcher says which with the boot option `amber.icount` (`amber-qemu`
//! adds it whenever it runs QEMU with `-icount`): then a [`Cost`] is `minstret`
//! instructions; otherwise it is microseconds of host time from the board's timer, and
//! it says so when printed. This file is the one place that knows whether the counter
//! is exact (a board will answer it for itself); it must never guess: without the
//! option every figure is host time.

use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering};

static EXACT: AtomicBool = AtomicBool::new(false);

/// Records whether `minstret` counts instructions exactly (boot option
/// `amber.icount`). Called once at boot, before anything is measured.
pub fn set_exact(exact: bool) {
    EXACT.store(exact, Ordering::Relaxed);
}

/// Whether costs are exact instruction counts (also what the `Now` syscall tells
/// tasks, which read the same counter).
pub fn exact() -> bool {
    EXACT.load(Ordering::Relaxed)
}

/// A moment to measure from.
#[derive(Clone, Copy)]
pub struct Stamp {
    at: u64,
    exact: bool,
}

/// Now, in the unit costs are measured in.
pub fn stamp() -> Stamp {
    let exact = exact();
    let at = if exact {
        riscv::register::minstret::read64()
    } else {
        crate::board::uptime_us()
    };
    Stamp { at, exact }
}

impl Stamp {
    /// The cost from this moment until now.
    pub fn elapsed(self) -> Cost {
        let now = stamp();
        Cost {
            amount: now.at.saturating_sub(self.at),
            exact: self.exact,
        }
    }
}

/// Work measured by the kernel: exact instructions, or microseconds of host time.
#[derive(Clone, Copy, Default)]
pub struct Cost {
    amount: u64,
    exact: bool,
}

impl Cost {
    /// The instruction count, when the cost is one.
    pub fn instructions(self) -> Option<u64> {
        self.exact.then_some(self.amount)
    }

    /// This cost shared out over `n` (a mean; `n` = 0 gives 0).
    pub fn per(self, n: u64) -> Cost {
        Cost {
            amount: self.amount.checked_div(n).unwrap_or(0),
            ..self
        }
    }
}

impl core::ops::AddAssign for Cost {
    fn add_assign(&mut self, other: Cost) {
        self.amount += other.amount;
        self.exact = other.exact;
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.exact {
            write!(f, "{} instructions", self.amount)
        } else {
            write!(f, "{} µs host time", self.amount)
        }
    }
}
