//! Shared test helpers: a storage wrapper that counts operations, and small configs.
//!
//! Only tests use this; it must never hide an operation from the count.
#![allow(dead_code)]

use amber_nvm::sim::VecNvm;
use amber_nvm::{Nvm, NvmError};
use vnv_heap::Config;

/// Counts every storage operation and byte passed through it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub reads: u64,
    pub bytes_read: u64,
    pub writes: u64,
    pub bytes_written: u64,
    pub flushes: u64,
    pub fences: u64,
}

impl Counts {
    pub fn since(self, before: Counts) -> Counts {
        Counts {
            reads: self.reads - before.reads,
            bytes_read: self.bytes_read - before.bytes_read,
            writes: self.writes - before.writes,
            bytes_written: self.bytes_written - before.bytes_written,
            flushes: self.flushes - before.flushes,
            fences: self.fences - before.fences,
        }
    }
}

/// An `Nvm` that forwards to `inner` and counts into a shared cell.
pub struct Counting<N> {
    pub inner: N,
    pub counts: std::rc::Rc<std::cell::Cell<Counts>>,
}

impl<N> Counting<N> {
    pub fn new(inner: N) -> Self {
        Counting {
            inner,
            counts: Default::default(),
        }
    }

    fn bump(&self, f: impl FnOnce(&mut Counts)) {
        let mut c = self.counts.get();
        f(&mut c);
        self.counts.set(c);
    }
}

impl<N: Nvm> Nvm for Counting<N> {
    fn size(&self) -> u32 {
        self.inner.size()
    }
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        self.bump(|c| {
            c.reads += 1;
            c.bytes_read += buf.len() as u64;
        });
        self.inner.read(offset, buf)
    }
    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        self.bump(|c| {
            c.writes += 1;
            c.bytes_written += data.len() as u64;
        });
        self.inner.write(offset, data)
    }
    fn fence(&mut self) {
        self.bump(|c| c.fences += 1);
        self.inner.fence()
    }
    fn flush(&mut self) -> Result<(), NvmError> {
        self.bump(|c| c.flushes += 1);
        self.inner.flush()
    }
}

/// A small heap: 32 ids, 4 KiB of data, the given dirty limit and cache length.
pub fn small_config(max_dirty_bytes: u32, cache_bytes: usize) -> Config {
    Config {
        max_dirty_bytes,
        max_objects: 32,
        nvm_offset: 0,
        nvm_data_bytes: 4096,
        cache_bytes: cache_bytes as u32,
    }
}

/// A blank device just large enough for `config`.
pub fn device(config: &Config) -> VecNvm {
    VecNvm::new(config.nvm_end().expect("test configs fit"))
}
