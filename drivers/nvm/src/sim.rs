//! Host simulations of NVM for tests: a RAM-backed device and a power-cut injector.
//!
//! [`VecNvm`] is a device made of a `Vec<u8>`. [`PowerCut`] wraps any `Nvm` and cuts
//! power at a chosen store, tearing that store after a chosen number of bytes, the
//! way a power failure tears an SPI transfer at byte granularity. Crash tests run a
//! workload once to count its stores, then once per (store, tear) pair, and reopen
//! the image left behind. Nothing here may be used by device code.

use crate::{check_range, Nvm, NvmError};
use alloc::vec;
use alloc::vec::Vec;

/// An NVM device held in host memory. Every write is durable at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VecNvm {
    bytes: Vec<u8>,
}

impl VecNvm {
    /// A device of `size` bytes, all zero (a fresh, never-formatted part).
    pub fn new(size: u32) -> Self {
        VecNvm {
            bytes: vec![0; size as usize],
        }
    }

    /// A device whose contents are `image` (for reopening what a crash left behind).
    ///
    /// # Panics
    /// If the image is larger than 4 GiB, which no `Nvm` can address.
    pub fn from_image(image: Vec<u8>) -> Self {
        assert!(u32::try_from(image.len()).is_ok(), "NVM image too large");
        VecNvm { bytes: image }
    }

    /// The device's current contents.
    pub fn image(&self) -> &[u8] {
        &self.bytes
    }

    /// The device's contents, consuming it.
    pub fn into_image(self) -> Vec<u8> {
        self.bytes
    }
}

impl Nvm for VecNvm {
    fn size(&self) -> u32 {
        self.bytes.len() as u32
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        check_range(offset, buf.len(), self.size())?;
        let start = offset as usize;
        buf.copy_from_slice(&self.bytes[start..start + buf.len()]);
        Ok(())
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        check_range(offset, data.len(), self.size())?;
        let start = offset as usize;
        self.bytes[start..start + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn fence(&mut self) {}

    fn flush(&mut self) -> Result<(), NvmError> {
        Ok(())
    }
}

/// Where a [`PowerCut`] cuts power.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// Index (from 0) of the store that is torn; every earlier store completes.
    pub at_store: u64,
    /// How many leading bytes of that store reach the device (0 = none of it).
    pub keep_bytes: usize,
}

/// Wraps an `Nvm`, counts its stores, and cuts power at a chosen one.
///
/// After the cut every access fails with [`NvmError::PowerLost`]; the inner device
/// keeps exactly the bytes written before the cut, plus the torn prefix.
#[derive(Debug)]
pub struct PowerCut<N> {
    inner: N,
    cut: Option<Cut>,
    store_lens: Vec<usize>,
    bytes_written: u64,
    dead: bool,
}

impl<N: Nvm> PowerCut<N> {
    /// Counts stores and never cuts (the run that measures a workload).
    pub fn never(inner: N) -> Self {
        PowerCut {
            inner,
            cut: None,
            store_lens: Vec::new(),
            bytes_written: 0,
            dead: false,
        }
    }

    /// Cuts power as `cut` says.
    pub fn at(inner: N, cut: Cut) -> Self {
        PowerCut {
            cut: Some(cut),
            ..Self::never(inner)
        }
    }

    /// Whether power has been cut.
    pub fn is_cut(&self) -> bool {
        self.dead
    }

    /// Length of each store issued so far, in order (including a torn one).
    pub fn store_lens(&self) -> &[usize] {
        &self.store_lens
    }

    /// Number of stores issued so far.
    pub fn stores(&self) -> u64 {
        self.store_lens.len() as u64
    }

    /// Bytes that reached the device.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// The wrapped device, as the cut left it.
    pub fn into_inner(self) -> N {
        self.inner
    }

    /// The wrapped device.
    pub fn inner(&self) -> &N {
        &self.inner
    }
}

impl<N: Nvm> Nvm for PowerCut<N> {
    fn size(&self) -> u32 {
        self.inner.size()
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        if self.dead {
            return Err(NvmError::PowerLost);
        }
        self.inner.read(offset, buf)
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        if self.dead {
            return Err(NvmError::PowerLost);
        }
        check_range(offset, data.len(), self.size())?;
        let index = self.stores();
        self.store_lens.push(data.len());
        match self.cut {
            Some(cut) if cut.at_store == index => {
                let keep = cut.keep_bytes.min(data.len());
                self.inner.write(offset, &data[..keep])?;
                self.bytes_written += keep as u64;
                self.dead = true;
                Err(NvmError::PowerLost)
            }
            _ => {
                self.inner.write(offset, data)?;
                self.bytes_written += data.len() as u64;
                Ok(())
            }
        }
    }

    fn fence(&mut self) {
        self.inner.fence();
    }

    fn flush(&mut self) -> Result<(), NvmError> {
        if self.dead {
            return Err(NvmError::PowerLost);
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vec_nvm_keeps_what_was_written_and_reopens_from_its_image() {
        let mut nvm = VecNvm::new(64);
        nvm.write(10, b"amber").unwrap();
        let mut again = VecNvm::from_image(nvm.into_image());
        let mut out = [0u8; 5];
        again.read(10, &mut out).unwrap();
        assert_eq!(&out, b"amber");
    }

    #[test]
    fn vec_nvm_rejects_accesses_past_its_end() {
        let mut nvm = VecNvm::new(8);
        assert_eq!(
            nvm.write(6, &[0; 4]),
            Err(NvmError::OutOfBounds {
                offset: 6,
                len: 4,
                size: 8
            })
        );
        assert_eq!(nvm.image(), &[0; 8], "a rejected write must change nothing");
    }

    #[test]
    fn a_cut_store_is_torn_after_the_kept_bytes_and_everything_after_fails() {
        let cut = Cut {
            at_store: 1,
            keep_bytes: 2,
        };
        let mut nvm = PowerCut::at(VecNvm::new(16), cut);
        nvm.write(0, &[1, 1, 1, 1]).unwrap();
        assert_eq!(nvm.write(4, &[2, 2, 2, 2]), Err(NvmError::PowerLost));
        assert!(nvm.is_cut());
        assert_eq!(nvm.write(8, &[3]), Err(NvmError::PowerLost));
        assert_eq!(nvm.read(0, &mut [0; 1]), Err(NvmError::PowerLost));
        let image = nvm.into_inner().into_image();
        assert_eq!(&image[..10], &[1, 1, 1, 1, 2, 2, 0, 0, 0, 0]);
    }

    #[test]
    fn an_uncut_run_counts_every_store_and_its_length() {
        let mut nvm = PowerCut::never(VecNvm::new(16));
        nvm.write(0, &[1; 3]).unwrap();
        nvm.write(3, &[1; 5]).unwrap();
        assert_eq!(nvm.store_lens(), &[3, 5]);
        assert_eq!(nvm.bytes_written(), 8);
    }
}
