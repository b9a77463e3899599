//! The service's storage counters as [`OP_STATS`](crate::OP_STATS) carries them: what
//! the heap service has written to and read from its storage (the SPI FRAM, through the
//! driver) since it started, with the part its persists wrote, so that a client (a
//! benchmark) can tell how much of the FRAM traffic persists cause and how much the
//! heap's write-backs between persists. Numbers and their encoding only: this file must
//! never hold counting logic (the service counts) and never panic on a short reply.

/// The counters one [`OP_STATS`](crate::OP_STATS) reply carries, each since the
/// service started (as of the checkpoint the system runs from: they are part of the
/// service's checkpointed memory, so after a restore they go back with it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceStats {
    /// The heap's dirty limit (`max_dirty_bytes` of its configuration), in bytes.
    pub dirty_limit: u64,
    /// Persists made (one before every checkpoint, and one per checkpoint the service
    /// asked for itself).
    pub persists: u64,
    /// Bytes the persists wrote to storage.
    pub persist_bytes: u64,
    /// Write calls to the driver the persists made.
    pub persist_writes: u64,
    /// Bytes written to storage in all: persists, the heap's write-backs of dirty
    /// objects between persists (to stay under the dirty limit or make cache room),
    /// allocations (written through) and the format.
    pub bytes_written: u64,
    /// Write calls to the driver in all.
    pub writes: u64,
    /// Bytes read from storage.
    pub bytes_read: u64,
    /// Read calls to the driver.
    pub reads: u64,
}

impl ServiceStats {
    /// Bytes of the encoded counters in the reply: eight little-endian `u64`, in field
    /// order.
    pub const BYTES: usize = 64;

    fn fields(&self) -> [u64; 8] {
        [
            self.dirty_limit,
            self.persists,
            self.persist_bytes,
            self.persist_writes,
            self.bytes_written,
            self.writes,
            self.bytes_read,
            self.reads,
        ]
    }

    /// The reply's bytes.
    pub fn encode(&self) -> [u8; Self::BYTES] {
        let mut out = [0u8; Self::BYTES];
        for (dst, v) in out.chunks_exact_mut(8).zip(self.fields()) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// The counters from a reply's bytes, or `None` unless there are exactly
    /// [`Self::BYTES`] of them.
    pub fn decode(bytes: &[u8]) -> Option<ServiceStats> {
        if bytes.len() != Self::BYTES {
            return None;
        }
        let mut f = [0u64; 8];
        for (v, src) in f.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(src);
            *v = u64::from_le_bytes(b);
        }
        let [dirty_limit, persists, persist_bytes, persist_writes, bytes_written, writes, bytes_read, reads] =
            f;
        Some(ServiceStats {
            dirty_limit,
            persists,
            persist_bytes,
            persist_writes,
            bytes_written,
            writes,
            bytes_read,
            reads,
        })
    }

    /// The counts of `self` not already in `before` (the dirty limit is `self`'s).
    pub fn since(&self, before: &ServiceStats) -> ServiceStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        ServiceStats {
            dirty_limit: self.dirty_limit,
            persists: d(self.persists, before.persists),
            persist_bytes: d(self.persist_bytes, before.persist_bytes),
            persist_writes: d(self.persist_writes, before.persist_writes),
            bytes_written: d(self.bytes_written, before.bytes_written),
            writes: d(self.writes, before.writes),
            bytes_read: d(self.bytes_read, before.bytes_read),
            reads: d(self.reads, before.reads),
        }
    }

    /// Bytes written outside persists: write-backs, allocations, the format.
    pub fn other_bytes(&self) -> u64 {
        self.bytes_written.saturating_sub(self.persist_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::ServiceStats;

    #[test]
    fn the_counters_round_trip_through_their_encoding_in_field_order() {
        let s = ServiceStats {
            dirty_limit: 1024,
            persists: 2,
            persist_bytes: 3,
            persist_writes: 4,
            bytes_written: 5,
            writes: 6,
            bytes_read: 7,
            reads: u64::MAX,
        };
        let b = s.encode();
        assert_eq!(b[..8], 1024u64.to_le_bytes());
        assert_eq!(b[56..], u64::MAX.to_le_bytes());
        assert_eq!(ServiceStats::decode(&b), Some(s));
        assert_eq!(ServiceStats::decode(&b[..63]), None, "a short reply");
    }

    #[test]
    fn since_subtracts_every_counter_and_keeps_the_limit() {
        let a = ServiceStats {
            dirty_limit: 1024,
            persists: 1,
            persist_bytes: 100,
            bytes_written: 300,
            ..ServiceStats::default()
        };
        let b = ServiceStats {
            persists: 3,
            persist_bytes: 250,
            bytes_written: 700,
            ..a
        };
        let d = b.since(&a);
        assert_eq!(
            (d.persists, d.persist_bytes, d.bytes_written),
            (2, 150, 400)
        );
        assert_eq!(d.other_bytes(), 250);
        assert_eq!(d.dirty_limit, 1024);
    }
}
