//! The harvesting harness's power (`cargo xtask harvest`): `amber.warn=T` raises the
//! power-failure interrupt at timer tick T, as the harness's capacitor model reaches
//! its warning voltage, and `amber.energy=B` says the energy left then lasts B
//! instructions: from the interrupt on, the first kernel NVM store at or after that
//! deadline is not made and the machine stops (`CutNvm::with_brown_out`), as at
//! brown-out while the persist or the checkpoint was still going. Only the harness's
//! options arm it; this file must never stop a machine that was not told to.

use crate::board::{Board, Chosen};

/// `amber.energy`: instructions the machine lasts after the interrupt.
static ENERGY: spin::Mutex<Option<u64>> = spin::Mutex::new(None);
/// The counter value from which no store lands, once the interrupt armed it.
static BROWN_OUT: spin::Mutex<Option<u64>> = spin::Mutex::new(None);
/// `amber.warn`: the tick since boot of the power-failure interrupt, until raised.
static WARN: spin::Mutex<Option<u64>> = spin::Mutex::new(None);

/// The boot options' energy budget and warning tick.
pub fn set(budget: Option<u64>, warn: Option<u64>) {
    *ENERGY.lock() = budget;
    *WARN.lock() = warn;
}

/// Whether the warning `amber.warn` names is due at `tick` (ticks since boot); true
/// once.
pub fn warn_due(tick: u64) -> bool {
    WARN.lock().take_if(|&mut at| tick >= at).is_some()
}

/// The power-failure interrupt: the budget runs from now (the first interrupt only).
pub fn arm() {
    if let Some(b) = *ENERGY.lock() {
        BROWN_OUT
            .lock()
            .get_or_insert(Chosen::counter().saturating_add(b));
    }
}

/// Whether the energy is spent: no store may land any more.
pub fn spent() -> bool {
    BROWN_OUT.lock().is_some_and(|at| Chosen::counter() >= at)
}
