//! What the kernel measures its own work in, and whether that is an instruction count.
//!
//! A board's counter may count retired instructions exactly (QEMU under `-icount`) or
//! not (QEMU without it derives `minstret` from the host's clock; the ESP32-C3 counts
//! cycles): the board says which ([`Board::counter_exact`]). When it is exact a
//! [`Cost`] is instructions of that counter; otherwise it is microseconds of the
//! board's timer, and it says so when printed. This file must never guess: a figure is
//! called "instructions" only when the board vouches for it.

use crate::board::{Board, Chosen};
use core::fmt;

/// Now, in the unit costs are measured in (what `Platform::counter` gives the core).
pub fn now() -> u64 {
    if Chosen::counter_exact() {
        Chosen::counter()
    } else {
        Chosen::uptime_us()
    }
}

/// A moment to measure from.
#[derive(Clone, Copy)]
pub struct Stamp(u64);

/// Now, to measure from.
pub fn stamp() -> Stamp {
    Stamp(now())
}

impl Stamp {
    /// The cost from this moment until now.
    pub fn elapsed(self) -> Cost {
        Cost::counted(now().saturating_sub(self.0))
    }
}

/// Work measured by the kernel: exact instructions, or microseconds of board time.
#[derive(Clone, Copy, Default)]
pub struct Cost {
    amount: u64,
    exact: bool,
}

impl Cost {
    /// A difference of [`now`] values.
    pub fn counted(amount: u64) -> Cost {
        Cost {
            amount,
            exact: Chosen::counter_exact(),
        }
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
