//! The table's configuration and the geometry that follows from it: where the header,
//! each entry record and each value lies on the NVM. Pure arithmetic: this file must
//! never touch the NVM, and every other file asks it for an offset instead of
//! computing one.

use crate::format::{HEADER_BYTES, RECORD_BYTES};
use crate::KvError;

/// The most entries a bucket of [`Layout::Bucketed`] holds (64 bytes of records: one
/// 64-byte SPI transfer, or one cache line of the paper's MCU).
pub const MAX_BUCKET_ENTRIES: u8 = 8;

/// How entries are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// LPHT: one entry per bucket, its value stored right after its record.
    Linear,
    /// CLHT-like: buckets of `entries` records (2 to [`MAX_BUCKET_ENTRIES`]) read in one
    /// transfer; values in an array after all buckets.
    Bucketed { entries: u8 },
}

impl Layout {
    /// Entries per bucket.
    pub const fn entries(self) -> u32 {
        match self {
            Layout::Linear => 1,
            Layout::Bucketed { entries } => entries as u32,
        }
    }
}

/// What a table is made of. Stored in its header, so `Table::open` needs only the
/// place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    pub layout: Layout,
    /// Buckets (each of `layout.entries()` entries): capacity = buckets × entries.
    pub buckets: u32,
    /// Largest value in bytes (at most 65,535).
    pub max_value: u16,
}

impl Config {
    /// The most keys the table holds.
    pub const fn capacity(&self) -> u32 {
        self.buckets * self.layout.entries()
    }
}

/// Where everything of a table lies on its NVM, from [`Config`] and the table's base
/// offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub config: Config,
    /// Offset of the header on the NVM.
    pub base: u32,
    /// Offset of bucket 0's first record.
    records: u32,
    /// Bytes from one bucket to the next.
    bucket_stride: u32,
    /// Offset of entry 0's value (Bucketed) or of entry 0's value relative to its record
    /// (Linear: 8).
    values: u32,
    /// Bytes from one value slot to the next (Bucketed only).
    value_stride: u32,
    /// First byte past the table.
    end: u32,
}

const fn align4(n: u32) -> u32 {
    (n + 3) & !3
}

impl Geometry {
    /// The geometry of a table with `config` at `base`, checked: at least one bucket, a
    /// valid bucket size, and everything inside `nvm_size` bytes.
    pub fn new(config: Config, base: u32, nvm_size: u32) -> Result<Geometry, KvError> {
        let bad = |reason| Err(KvError::BadConfig { reason });
        if let Layout::Bucketed { entries } = config.layout {
            if !(2..=MAX_BUCKET_ENTRIES).contains(&entries) {
                return bad("a bucket holds 2 to 8 entries");
            }
        }
        if config.buckets == 0 {
            return bad("a table needs at least one bucket");
        }
        let value_slot = align4(u32::from(config.max_value));
        let records = base.checked_add(HEADER_BYTES).ok_or(KvError::BadConfig {
            reason: "the table does not fit the NVM",
        })?;
        let (bucket_stride, values, value_stride, bytes) = match config.layout {
            Layout::Linear => {
                let slot = RECORD_BYTES + value_slot;
                (
                    slot,
                    RECORD_BYTES,
                    0,
                    u64::from(slot) * u64::from(config.buckets),
                )
            }
            Layout::Bucketed { entries } => {
                let stride = RECORD_BYTES * u32::from(entries);
                let record_bytes = u64::from(stride) * u64::from(config.buckets);
                let value_bytes = u64::from(value_slot) * u64::from(config.capacity());
                let values = u64::from(records) + record_bytes;
                if values > u64::from(u32::MAX) {
                    return bad("the table does not fit the NVM");
                }
                (
                    stride,
                    values as u32,
                    value_slot,
                    record_bytes + value_bytes,
                )
            }
        };
        let end = u64::from(records) + bytes;
        if end > u64::from(nvm_size) {
            return bad("the table does not fit the NVM");
        }
        Ok(Geometry {
            config,
            base,
            records,
            bucket_stride,
            values,
            value_stride,
            end: end as u32,
        })
    }

    /// Entries per bucket.
    pub fn entries(&self) -> u32 {
        self.config.layout.entries()
    }

    /// Offset of the record of entry `slot` (bucket `slot / entries`).
    pub fn record(&self, slot: u32) -> u32 {
        let e = self.entries();
        self.records + (slot / e) * self.bucket_stride + (slot % e) * RECORD_BYTES
    }

    /// Offset of the records of bucket `bucket` (contiguous, `entries` of them).
    pub fn bucket(&self, bucket: u32) -> u32 {
        self.records + bucket * self.bucket_stride
    }

    /// Offset of the value of entry `slot`.
    pub fn value(&self, slot: u32) -> u32 {
        match self.config.layout {
            Layout::Linear => self.record(slot) + self.values,
            Layout::Bucketed { .. } => self.values + slot * self.value_stride,
        }
    }

    /// Whether a record's value follows it directly (so a put can write both at once).
    pub fn value_follows_record(&self) -> bool {
        self.config.layout == Layout::Linear
    }

    /// Bytes from the header to the end of the table.
    pub fn bytes(&self) -> u32 {
        self.end - self.base
    }

    /// First offset past the table.
    pub fn end(&self) -> u32 {
        self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_slots_hold_record_and_value_side_by_side() {
        let c = Config {
            layout: Layout::Linear,
            buckets: 10,
            max_value: 13,
        };
        let g = Geometry::new(c, 100, 1 << 20).unwrap();
        assert_eq!(g.record(0), 100 + HEADER_BYTES);
        assert_eq!(g.value(0), g.record(0) + 8);
        assert_eq!(
            g.record(1) - g.record(0),
            8 + 16,
            "values are padded to 4 bytes"
        );
        assert_eq!(g.bytes(), HEADER_BYTES + 10 * 24);
        assert!(g.value_follows_record());
    }

    #[test]
    fn bucketed_records_are_one_transfer_per_bucket_and_values_follow_all_buckets() {
        let c = Config {
            layout: Layout::Bucketed { entries: 4 },
            buckets: 8,
            max_value: 64,
        };
        let g = Geometry::new(c, 0, 1 << 20).unwrap();
        assert_eq!(g.bucket(1) - g.bucket(0), 32);
        assert_eq!(g.record(5), g.bucket(1) + 8);
        assert_eq!(g.value(0), g.bucket(8), "values start past the last bucket");
        assert_eq!(g.value(31) + 64, g.end());
        assert_eq!(c.capacity(), 32);
    }

    #[test]
    fn impossible_configurations_are_refused() {
        let ok = Config {
            layout: Layout::Bucketed { entries: 4 },
            buckets: 8,
            max_value: 64,
        };
        for bad in [
            Config { buckets: 0, ..ok },
            Config {
                layout: Layout::Bucketed { entries: 1 },
                ..ok
            },
            Config {
                layout: Layout::Bucketed { entries: 9 },
                ..ok
            },
        ] {
            assert!(matches!(
                Geometry::new(bad, 0, 1 << 20),
                Err(KvError::BadConfig { .. })
            ));
        }
        assert!(Geometry::new(ok, 0, 100).is_err(), "too small a device");
        assert!(
            Geometry::new(ok, u32::MAX - 4, u32::MAX).is_err(),
            "no overflow"
        );
    }
}
