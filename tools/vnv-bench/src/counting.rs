//! A counting `Nvm` wrapper: every benchmark's storage traffic is measured here.
//!
//! [`CountingNvm`] forwards each call to the device it wraps and adds it to an
//! [`NvmCounts`]: calls, bytes and SPI word transfers per direction, fences and
//! flushes. The counts are turned into time by `cost.rs`; this file must never
//! estimate, scale or skip anything, so that a count is exactly what the code under
//! test asked of the device.

use amber_nvm::{Nvm, NvmError};
use std::cell::Cell;
use std::rc::Rc;

/// Bytes moved by one SPI call in the paper's set-up (§7.1: "a separate SPI call for
/// every word (4 bytes) transferred").
pub const SPI_WORD: usize = 4;

/// What a piece of code asked of the storage device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NvmCounts {
    /// `read` calls that returned `Ok`.
    pub reads: u64,
    /// `write` calls that returned `Ok`.
    pub writes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// SPI word transfers for reads: `ceil(len / 4)` per read.
    pub read_words: u64,
    /// SPI word transfers for writes: `ceil(len / 4)` per write.
    pub write_words: u64,
    /// `fence` calls.
    pub fences: u64,
    /// `flush` calls.
    pub flushes: u64,
}

impl NvmCounts {
    /// The traffic between `earlier` and `self` (both taken from the same device).
    pub fn since(&self, earlier: &NvmCounts) -> NvmCounts {
        NvmCounts {
            reads: self.reads - earlier.reads,
            writes: self.writes - earlier.writes,
            read_bytes: self.read_bytes - earlier.read_bytes,
            write_bytes: self.write_bytes - earlier.write_bytes,
            read_words: self.read_words - earlier.read_words,
            write_words: self.write_words - earlier.write_words,
            fences: self.fences - earlier.fences,
            flushes: self.flushes - earlier.flushes,
        }
    }
}

/// SPI word transfers needed for `len` bytes, one call per started 4-byte word.
pub fn spi_words(len: usize) -> u64 {
    len.div_ceil(SPI_WORD) as u64
}

/// A shared view of a [`CountingNvm`]'s counts, readable while the device itself is
/// owned by the code under test (a heap that takes its storage by value).
#[derive(Clone, Debug, Default)]
pub struct Counter(Rc<Cell<NvmCounts>>);

impl Counter {
    /// Everything counted so far.
    pub fn get(&self) -> NvmCounts {
        self.0.get()
    }

    fn add(&self, f: impl FnOnce(&mut NvmCounts)) {
        let mut c = self.0.get();
        f(&mut c);
        self.0.set(c);
    }
}

/// An `Nvm` that counts what passes through it to the device `N`.
#[derive(Debug)]
pub struct CountingNvm<N> {
    inner: N,
    counter: Counter,
}

impl<N: Nvm> CountingNvm<N> {
    /// Wraps `inner` with all counts at zero.
    pub fn new(inner: N) -> Self {
        CountingNvm {
            inner,
            counter: Counter::default(),
        }
    }

    /// Everything counted since creation.
    pub fn counts(&self) -> NvmCounts {
        self.counter.get()
    }

    /// A handle that keeps reading the counts after the device is moved away.
    pub fn counter(&self) -> Counter {
        self.counter.clone()
    }

    /// The wrapped device (tests look at its image).
    #[cfg(test)]
    pub fn inner(&self) -> &N {
        &self.inner
    }
}

impl<N: Nvm> Nvm for CountingNvm<N> {
    fn size(&self) -> u32 {
        self.inner.size()
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        self.inner.read(offset, buf)?;
        self.counter.add(|c| {
            c.reads += 1;
            c.read_bytes += buf.len() as u64;
            c.read_words += spi_words(buf.len());
        });
        Ok(())
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        self.inner.write(offset, data)?;
        self.counter.add(|c| {
            c.writes += 1;
            c.write_bytes += data.len() as u64;
            c.write_words += spi_words(data.len());
        });
        Ok(())
    }

    fn fence(&mut self) {
        self.counter.add(|c| c.fences += 1);
        self.inner.fence();
    }

    fn flush(&mut self) -> Result<(), NvmError> {
        self.counter.add(|c| c.flushes += 1);
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amber_nvm::sim::VecNvm;

    #[test]
    fn every_call_byte_and_spi_word_is_counted_exactly_once() {
        let mut nvm = CountingNvm::new(VecNvm::new(64));
        nvm.write(0, &[1; 9]).unwrap();
        nvm.write(12, &[2; 4]).unwrap();
        let mut buf = [0; 5];
        nvm.read(0, &mut buf).unwrap();
        nvm.fence();
        nvm.flush().unwrap();
        let c = nvm.counts();
        assert_eq!((c.writes, c.write_bytes, c.write_words), (2, 13, 3 + 1));
        assert_eq!((c.reads, c.read_bytes, c.read_words), (1, 5, 2));
        assert_eq!((c.fences, c.flushes), (1, 1));
        assert_eq!(buf, [1; 5], "the wrapper must pass data through unchanged");
    }

    #[test]
    fn failed_accesses_are_not_counted_as_traffic() {
        let mut nvm = CountingNvm::new(VecNvm::new(8));
        assert!(nvm.write(6, &[0; 4]).is_err());
        assert_eq!(nvm.counts(), NvmCounts::default());
    }

    #[test]
    fn a_counter_keeps_counting_after_the_device_moves() {
        let nvm = CountingNvm::new(VecNvm::new(8));
        let counter = nvm.counter();
        let mut owner = Box::new(nvm);
        owner.write(0, &[0; 8]).unwrap();
        assert_eq!(counter.get().write_words, 2);
    }

    #[test]
    fn since_subtracts_field_by_field() {
        let mut nvm = CountingNvm::new(VecNvm::new(16));
        nvm.write(0, &[0; 8]).unwrap();
        let before = nvm.counts();
        nvm.write(0, &[0; 3]).unwrap();
        let d = nvm.counts().since(&before);
        assert_eq!((d.writes, d.write_bytes, d.write_words), (1, 3, 1));
    }
}
