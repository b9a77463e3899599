//! Injected power cuts on a device: an `Nvm` wrapper that counts stores and, at the
//! chosen one, lets only its first bytes reach NVM and then stops the machine at once,
//! exactly as a power failure in the middle of that store would (the kernel's boot
//! option `amber.cut=K:B`). The crash harness uses it to cut at chosen stores,
//! reproducibly; SIGKILL of QEMU gives the random instants. (The host's [`crate::sim`]
//! cuts simulated devices.) A brown-out hook (`with_brown_out`, the harvesting
//! harness's energy budget) cuts instead at the first store made once it says the
//! energy is spent, before any of its bytes land. This wrapper must never change a
//! store it does not cut.

use crate::{Nvm, NvmError};

/// A power cut at a store: the `store`-th (counted from 1) reaches NVM with only its
/// first `keep` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutAt {
    pub store: u64,
    pub keep: usize,
}

/// An `Nvm` that may be cut at one store.
pub struct CutNvm<N> {
    inner: N,
    stores: u64,
    cut: Option<CutAt>,
    stop: fn(u32) -> !,
    brown_out: Option<fn() -> bool>,
}

impl<N: Nvm> CutNvm<N> {
    /// Wraps `inner`; at the store `cut` names, calls `stop` with the store's offset
    /// (so the machine can say where it was cut); `stop` must not return.
    pub fn new(inner: N, cut: Option<CutAt>, stop: fn(u32) -> !) -> Self {
        CutNvm {
            inner,
            stores: 0,
            cut,
            stop,
            brown_out: None,
        }
    }

    /// Also stops, with nothing of the store written, at every store made once
    /// `spent` says the energy is gone.
    pub fn with_brown_out(self, spent: fn() -> bool) -> Self {
        CutNvm {
            brown_out: Some(spent),
            ..self
        }
    }

    /// Whether a cut at a chosen store is armed (the stores are being numbered for it).
    pub fn cut_armed(&self) -> bool {
        self.cut.is_some()
    }

    /// Stores made since boot.
    pub fn stores(&self) -> u64 {
        self.stores
    }

    /// The device underneath.
    pub fn inner(&self) -> &N {
        &self.inner
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
                (self.stop)(offset)
            }
            _ if self.brown_out.is_some_and(|spent| spent()) => {
                self.inner.fence();
                (self.stop)(offset)
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
    use crate::sim::VecNvm;

    fn stop(offset: u32) -> ! {
        panic!("power cut at {offset}")
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
