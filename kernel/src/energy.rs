//! The harvesting harness's power (`cargo xtask harvest`): `amber.warn=N` raises the
//! power-failure interrupt at the first trap (a syscall, a fault, an interrupt) once N
//! instructions have retired since boot, as the harness's capacitor model reaches its
//! warning voltage, and `amber.energy=B` says the energy left then lasts B
//! instructions: from the interrupt on, the first kernel NVM store at or after that
//! deadline is not made and the machine stops (`CutNvm::with_brown_out`), as at
//! brown-out while the persist or the checkpoint was still going. Only the harness's
//! options arm it; this file must never stop a machine that was not told to.

use crate::board::{Board, Chosen};
use core::sync::atomic::{AtomicBool, Ordering};

/// `amber.energy`: instructions the machine lasts after the interrupt.
static ENERGY: spin::Mutex<Option<u64>> = spin::Mutex::new(None);
/// The counter value from which no store lands, once the interrupt armed it.
static BROWN_OUT: spin::Mutex<Option<u64>> = spin::Mutex::new(None);
/// `amber.warn`: the counter value from which the power-failure interrupt is due,
/// until raised.
static WARN: spin::Mutex<Option<u64>> = spin::Mutex::new(None);

/// Whether `amber.warn` set a warning not raised yet: the one word every trap reads
/// (a plain load), so that a kernel without the option pays nothing more.
static WARN_PENDING: AtomicBool = AtomicBool::new(false);

/// The boot options' energy budget and warning instant.
pub fn set(budget: Option<u64>, warn: Option<u64>) {
    *ENERGY.lock() = budget;
    *WARN.lock() = warn;
    WARN_PENDING.store(warn.is_some(), Ordering::Relaxed);
}

/// The counter value `amber.warn` named, once its interrupt was raised.
static WARNED_AT: spin::Mutex<Option<u64>> = spin::Mutex::new(None);

/// Whether `amber.warn` set a warning not raised yet (the syscall fast path stays off
/// until it is: every trap must look at it).
#[inline]
pub fn warn_pending() -> bool {
    WARN_PENDING.load(Ordering::Relaxed)
}

/// Whether the warning `amber.warn` names is due now; true once.
pub fn warn_due() -> bool {
    if !warn_pending() {
        return false;
    }
    let due = WARN.lock().take_if(|&mut at| Chosen::counter() >= at);
    if due.is_some() {
        WARN_PENDING.store(false, Ordering::Relaxed);
        *WARNED_AT.lock() = due;
    }
    due.is_some()
}

/// The power-failure interrupt: the budget runs from now (the first interrupt only),
/// or, for the interrupt `amber.warn` raised, from the instant it named (the trap
/// that raised it came a little later, and the energy was draining meanwhile).
pub fn arm() {
    if let Some(b) = *ENERGY.lock() {
        let from = WARNED_AT.lock().unwrap_or_else(Chosen::counter);
        BROWN_OUT.lock().get_or_insert(from.saturating_add(b));
    }
}

/// Whether the energy is spent: no store may land any more.
pub fn spent() -> bool {
    BROWN_OUT.lock().is_some_and(|at| Chosen::counter() >= at)
}
