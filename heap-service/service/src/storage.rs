//! The heap's storage: the SPI FRAM reached through the SPI driver task, as an `Nvm`.
//!
//! Reads and writes are split into calls of at most [`MAX_CHUNK`] bytes (the driver's
//! limit), and every call and byte is counted, so the service can compare what a
//! persist did with its bound. `fence` and `flush` do nothing: the driver's ring keeps
//! the order of writes, and durability comes with the checkpoint that covers them
//! (the service persists right before every checkpoint). This file must never talk to
//! the kernel itself (the [`SpiPort`] does) and never retry a call.

use amber_nvm::{check_range, Nvm, NvmError};
use amber_spi_api::{ring_bytes, SpiError, MAX_CHUNK};
use core::cell::Cell;

/// One request to the SPI driver. The task implements it with `amber-spi-api`; tests
/// with memory.
pub trait SpiPort {
    /// Writes `data` (at most [`MAX_CHUNK`] bytes) at `addr`; returns the bytes the
    /// driver's ring can still take.
    fn write(&mut self, addr: u32, data: &[u8]) -> Result<u32, SpiError>;
    /// Reads `buf.len()` bytes (at most [`MAX_CHUNK`]) at `addr`, pending writes
    /// included.
    fn read(&mut self, addr: u32, buf: &mut [u8]) -> Result<(), SpiError>;
}

/// What went through the storage so far (driver calls, not `Nvm` calls: one `Nvm`
/// access of more than [`MAX_CHUNK`] bytes counts as several).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StorageStats {
    /// Read calls to the driver.
    pub reads: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Write calls to the driver.
    pub writes: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Bytes of the driver's ring the writes took (`amber_spi_api::ring_bytes` each).
    pub ring_written: u64,
    /// The driver's free ring bytes as its last write reply said; `None` when not
    /// known (nothing written since the service last learned the ring was emptied).
    pub ring_free: Option<u32>,
    /// The driver's last refusal, for the service's console line.
    pub failure: Option<SpiError>,
}

impl StorageStats {
    /// The calls and bytes of `self` not already in `before`.
    pub fn since(&self, before: &StorageStats) -> StorageStats {
        StorageStats {
            reads: self.reads - before.reads,
            bytes_read: self.bytes_read - before.bytes_read,
            writes: self.writes - before.writes,
            bytes_written: self.bytes_written - before.bytes_written,
            ring_written: self.ring_written - before.ring_written,
            ring_free: self.ring_free,
            failure: self.failure,
        }
    }
}

/// Storage that counts its driver calls and can tell the counts through a shared
/// reference (the heap owns its storage; the service looks at it with
/// `VnvHeap::with_storage` to answer `OP_STATS` and to split off what persists wrote).
pub trait Counted {
    /// What went through the storage so far.
    fn counted(&self) -> StorageStats;
}

impl<P> Counted for SpiStorage<'_, P> {
    fn counted(&self) -> StorageStats {
        self.stats.get()
    }
}

/// The FRAM as an `Nvm`, through an [`SpiPort`], counting into a cell the service
/// reads while the heap owns the storage.
pub struct SpiStorage<'s, P> {
    port: P,
    size: u32,
    stats: &'s Cell<StorageStats>,
}

impl<'s, P: SpiPort> SpiStorage<'s, P> {
    /// A device of `size` bytes (the FRAM's size) behind `port`.
    pub fn new(port: P, size: u32, stats: &'s Cell<StorageStats>) -> Self {
        SpiStorage { port, size, stats }
    }

    fn update(&self, f: impl FnOnce(&mut StorageStats)) {
        let mut s = self.stats.get();
        f(&mut s);
        self.stats.set(s);
    }

    fn refused(&self, offset: u32, len: usize, e: SpiError) -> NvmError {
        self.update(|s| s.failure = Some(e));
        match e {
            SpiError::OutsideDevice => NvmError::OutOfBounds {
                offset,
                len,
                size: self.size,
            },
            // The bus (or the driver) failed: nothing more can be trusted.
            _ => NvmError::PowerLost,
        }
    }
}

impl<P: SpiPort> Nvm for SpiStorage<'_, P> {
    fn size(&self) -> u32 {
        self.size
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        check_range(offset, buf.len(), self.size)?;
        let mut at = offset;
        for piece in buf.chunks_mut(MAX_CHUNK) {
            let n = piece.len();
            self.port
                .read(at, piece)
                .map_err(|e| self.refused(at, n, e))?;
            self.update(|s| {
                s.reads += 1;
                s.bytes_read += n as u64;
            });
            at += n as u32;
        }
        Ok(())
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        check_range(offset, data.len(), self.size)?;
        let mut at = offset;
        for piece in data.chunks(MAX_CHUNK) {
            let free = self
                .port
                .write(at, piece)
                .map_err(|e| self.refused(at, piece.len(), e))?;
            self.update(|s| {
                s.writes += 1;
                s.bytes_written += piece.len() as u64;
                s.ring_written += u64::from(ring_bytes(piece.len() as u32));
                s.ring_free = Some(free);
            });
            at += piece.len() as u32;
        }
        Ok(())
    }

    /// The driver applies its ring in order: nothing to do.
    fn fence(&mut self) {}

    /// Durability comes with the checkpoint that covers the writes: nothing to do.
    fn flush(&mut self) -> Result<(), NvmError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// A driver over memory that records every call and can refuse from call k on.
    struct MemPort {
        mem: Vec<u8>,
        calls: Vec<(bool, u32, usize)>,
        refuse_from: usize,
    }

    impl MemPort {
        fn new(size: usize) -> Self {
            MemPort {
                mem: vec![0; size],
                calls: Vec::new(),
                refuse_from: usize::MAX,
            }
        }
    }

    impl SpiPort for &mut MemPort {
        fn write(&mut self, addr: u32, data: &[u8]) -> Result<u32, SpiError> {
            assert!(
                data.len() <= MAX_CHUNK,
                "the driver takes at most 256 bytes"
            );
            if self.calls.len() >= self.refuse_from {
                return Err(SpiError::Device);
            }
            self.calls.push((true, addr, data.len()));
            self.mem[addr as usize..][..data.len()].copy_from_slice(data);
            Ok(1000 - self.calls.len() as u32)
        }

        fn read(&mut self, addr: u32, buf: &mut [u8]) -> Result<(), SpiError> {
            assert!(buf.len() <= MAX_CHUNK, "the driver reads at most 256 bytes");
            self.calls.push((false, addr, buf.len()));
            buf.copy_from_slice(&self.mem[addr as usize..][..buf.len()]);
            Ok(())
        }
    }

    #[test]
    fn long_accesses_are_split_into_driver_calls_of_at_most_256_bytes_and_counted() {
        let mut port = MemPort::new(4096);
        let stats = Cell::new(StorageStats::default());
        let mut s = SpiStorage::new(&mut port, 4096, &stats);
        let data: Vec<u8> = (0..600u32).map(|i| i as u8).collect();
        s.write(100, &data).unwrap();
        let mut back = vec![0u8; 600];
        s.read(100, &mut back).unwrap();
        assert_eq!(back, data, "the pieces must land where they belong");
        let st = stats.get();
        assert_eq!((st.writes, st.bytes_written), (3, 600));
        assert_eq!(
            st.ring_written,
            u64::from(2 * ring_bytes(256) + ring_bytes(88)),
            "each call takes its own entry in the ring"
        );
        assert_eq!((st.reads, st.bytes_read), (3, 600));
        assert_eq!(
            st.ring_free,
            Some(1000 - 3),
            "the last write's reply counts"
        );
        assert_eq!(
            port.calls[..3],
            [(true, 100, 256), (true, 356, 256), (true, 612, 88)]
        );
    }

    #[test]
    fn an_access_outside_the_device_is_refused_before_any_driver_call() {
        let mut port = MemPort::new(512);
        let stats = Cell::new(StorageStats::default());
        let mut s = SpiStorage::new(&mut port, 512, &stats);
        assert!(matches!(
            s.write(500, &[0; 13]),
            Err(NvmError::OutOfBounds { .. })
        ));
        assert!(s.read(u32::MAX, &mut [0; 2]).is_err());
        assert!(port.calls.is_empty());
    }

    #[test]
    fn a_driver_failure_stops_the_access_and_is_kept_for_the_console() {
        let mut port = MemPort::new(2048);
        port.refuse_from = 1;
        let stats = Cell::new(StorageStats::default());
        let mut s = SpiStorage::new(&mut port, 2048, &stats);
        assert_eq!(s.write(0, &[1; 600]), Err(NvmError::PowerLost));
        assert_eq!(port.calls.len(), 1, "no call after the refused one");
        assert_eq!(stats.get().failure, Some(SpiError::Device));
        assert_eq!(stats.get().writes, 1);
    }
}
