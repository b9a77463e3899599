//! Injected power cuts (`amber.cut=K:B`): an `Nvm` wrapper that counts stores and, at
//! the K-th, lets only its first B bytes reach NVM and then stops the machine at once,
//! exactly as a power failure in the middle of that store would.
//!
//! The crash harness uses it to cut at chosen stores, reproducibly; SIGKILL of QEMU
//! gives the random instants. `amber.energy=B` (the harvesting harness) cuts by energy
//! instead: the power-failure interrupt arms a deadline B instructions later, and the
//! first store at or after it is not made (the capacitor reached brown-out while the
//! persist or the checkpoint was still going); `amber.warn=T` raises that interrupt at
//! tick T, as the harness's capacitor model reaches its warning voltage. This wrapper
//! must never change a store it does not cut.

use crate::bootargs::CutAt;
use amber_nvm::{Nvm, NvmError};

/// The energy cut's state (target only: it reads `minstret`; host tests have no
/// power-failure interrupt, so nothing ever arms it there).
#[cfg(target_os = "none")]
mod energy {
    /// `amber.energy`: instructions the machine lasts after the interrupt.
    static ENERGY: spin::Mutex<Option<u64>> = spin::Mutex::new(None);
    /// The `minstret` value from which no store lands, once the interrupt armed it.
    static BROWN_OUT: spin::Mutex<Option<u64>> = spin::Mutex::new(None);
    /// `amber.warn`: the tick since boot of the power-failure interrupt, until raised.
    static WARN: spin::Mutex<Option<u64>> = spin::Mutex::new(None);

    pub fn set(budget: Option<u64>, warn: Option<u64>) {
        *ENERGY.lock() = budget;
        *WARN.lock() = warn;
    }

    pub fn warn_due(tick: u64) -> bool {
        WARN.lock().take_if(|&mut at| tick >= at).is_some()
    }

    pub fn arm() {
        if let Some(b) = *ENERGY.lock() {
            let mut at = BROWN_OUT.lock();
            if at.is_none() {
                *at = Some(riscv::register::minstret::read64().saturating_add(b));
            }
        }
    }

    pub fn spent() -> bool {
        BROWN_OUT
            .lock()
            .is_some_and(|at| riscv::register::minstret::read64() >= at)
    }
}

#[cfg(not(target_os = "none"))]
mod energy {
    pub fn spent() -> bool {
        false
    }
}

/// Sets the energy the power-failure interrupt leaves (boot option `amber.energy`)
/// and the tick it comes at (`amber.warn`).
#[cfg(target_os = "none")]
pub fn set_energy(budget: Option<u64>, warn: Option<u64>) {
    energy::set(budget, warn)
}

/// Whether the power-failure interrupt `amber.warn` names is due at `tick` (timer
/// ticks since boot); true once.
#[cfg(target_os = "none")]
pub fn warn_due(tick: u64) -> bool {
    energy::warn_due(tick)
}

/// The power-failure interrupt: arms the energy cut, if there is one, from now.
#[cfg(target_os = "none")]
pub fn arm_energy() {
    energy::arm()
}

/// An `Nvm` that may be cut at one store.
pub struct CutNvm<N> {
    inner: N,
    stores: u64,
    cut: Option<CutAt>,
    stop: fn() -> !,
}

impl<N: Nvm> CutNvm<N> {
    /// Wraps `inner`; at the store `cut` names, calls `stop`, which must not return.
    pub fn new(inner: N, cut: Option<CutAt>, stop: fn() -> !) -> Self {
        CutNvm {
            inner,
            stores: 0,
            cut,
            stop,
        }
    }

    /// Stores made since boot.
    pub fn stores(&self) -> u64 {
        self.stores
    }
}

impl<N: Nvm> Nvm for CutNvm<N> {
    fn size(&self) -> u32 {
        self.inner.size()
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        self.inner.read(offset, buf)
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        self.stores += 1;
        match self.cut {
            Some(cut) if cut.store == self.stores => {
                let keep = cut.keep.min(data.len());
                // A failed torn write changes nothing the cut would not.
                let _ = self.inner.write(offset, &data[..keep]);
                self.inner.fence();
                (self.stop)()
            }
            _ if energy::spent() => {
                self.inner.fence();
                (self.stop)()
            }
            _ => self.inner.write(offset, data),
        }
    }

    fn fence(&mut self) {
        self.inner.fence()
    }

    fn flush(&mut self) -> Result<(), NvmError> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amber_nvm::sim::VecNvm;

    fn stop() -> ! {
        panic!("power cut")
    }

    #[test]
    fn the_chosen_store_is_torn_and_the_machine_stops_there() {
        let mut nvm = CutNvm::new(VecNvm::new(16), Some(CutAt { store: 2, keep: 1 }), stop);
        nvm.write(0, &[1, 1]).unwrap();
        let cut = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = nvm.write(2, &[2, 2, 2]);
        }));
        assert!(cut.is_err(), "the second store must stop the machine");
        assert_eq!(
            &nvm.inner.image()[..5],
            &[1, 1, 2, 0, 0],
            "only one byte of it may land"
        );
    }

    #[test]
    fn without_a_cut_every_store_passes_and_is_counted() {
        let mut nvm = CutNvm::new(VecNvm::new(16), None, stop);
        for i in 0..5 {
            nvm.write(i, &[9]).unwrap();
        }
        assert_eq!(nvm.stores(), 5);
        assert_eq!(&nvm.inner.image()[..5], &[9; 5]);
    }
}
