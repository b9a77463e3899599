//! The table: get, put, delete and scan on entry records probed bucket after bucket
//! from the key's home bucket, with tombstones.
//!
//! The invariant every operation keeps (and the model test checks through its
//! results): a live key lies in its home bucket or further along the probe sequence,
//! and no bucket between its home and its own holds an empty entry. So a lookup reads
//! buckets from the home until it finds the key or has read a bucket with an empty
//! entry; a put goes to the first free (empty or tombstone) entry of that walk, so the
//! table is full exactly when every entry is live. A delete leaves a tombstone and then
//! writes back to empty the tombstones of the buckets that no probe sequence passes
//! through any more (the next bucket has an empty entry and only keys at home), walking
//! backwards, so that deletes do not slowly turn every lookup of a missing key into a
//! scan of the whole table.
//!
//! The live and tombstone counts are the only state kept off the NVM (recounted by
//! [`Table::open`]); everything else is read from the NVM when needed. This file must
//! never cache a record across operations: on Amber the NVM under it is the truth the
//! checkpoint restores.

use crate::config::{Config, Geometry, Layout, MAX_BUCKET_ENTRIES};
use crate::format::{decode_header, encode_header, EntryState, Record, HEADER_BYTES, RECORD_BYTES};
use crate::KvError;
use amber_nvm::Nvm;

/// Values up to this size are written together with their record in one NVM write
/// (linear layout), through a stack buffer of this size plus the record.
const COMBINED_WRITE: usize = 256;
/// Zeros written per call when a table is formatted.
const ZERO_CHUNK: usize = 256;
/// The most stack an operation uses for NVM bytes: a bucket's records, or a record and
/// a small value written together (for RAM figures; the table keeps no buffer).
pub const OP_STACK_BYTES: usize =
    (RECORD_BYTES * MAX_BUCKET_ENTRIES as u32) as usize + RECORD_BYTES as usize + COMBINED_WRITE;

/// A live entry found by [`Table::next_entry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its entry index (0 to capacity - 1): scan on from `slot + 1`.
    pub slot: u32,
    pub key: u32,
    /// Bytes of its value.
    pub len: usize,
}

/// Where a key is, or where it would go.
enum Found {
    Key {
        slot: u32,
        len: u16,
    },
    /// Absent; `free` is the first free entry of its probe walk (and whether it is a
    /// tombstone), `None` when every entry is live.
    Absent {
        free: Option<(u32, bool)>,
    },
}

/// A bucket's records as read in one NVM access.
struct Bucket {
    bytes: [u8; (RECORD_BYTES * MAX_BUCKET_ENTRIES as u32) as usize],
    entries: u32,
    first_slot: u32,
}

impl Bucket {
    fn record(&self, i: u32) -> Result<Record, KvError> {
        let at = (i * RECORD_BYTES) as usize;
        Record::decode(
            &self.bytes[at..at + RECORD_BYTES as usize],
            self.first_slot + i,
        )
    }
}

/// The murmur3 finalizer: every key bit reaches every hash bit, so seeded or
/// sequential keys spread over the buckets.
fn hash(key: u32) -> u32 {
    let mut h = key;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// A table on `N`, from its header at `Geometry::base`.
pub struct Table<N> {
    nvm: N,
    geo: Geometry,
    live: u32,
    tombstones: u32,
}

impl<N: Nvm> Table<N> {
    /// Makes a new, empty table with `config` at offset `base` of `nvm` (whatever was
    /// there): zeroes its records, then writes its header.
    pub fn format(mut nvm: N, base: u32, config: Config) -> Result<Self, KvError> {
        let geo = Geometry::new(config, base, nvm.size())?;
        let zeros = [0u8; ZERO_CHUNK];
        match config.layout {
            Layout::Linear => {
                for slot in 0..config.capacity() {
                    nvm.write(geo.record(slot), &zeros[..RECORD_BYTES as usize])?;
                }
            }
            Layout::Bucketed { .. } => {
                let (mut at, end) = (geo.bucket(0), geo.bucket(config.buckets));
                while at < end {
                    let n = (end - at).min(ZERO_CHUNK as u32);
                    nvm.write(at, &zeros[..n as usize])?;
                    at += n;
                }
            }
        }
        nvm.fence();
        nvm.write(base, &encode_header(&config))?;
        nvm.flush()?;
        Ok(Table {
            nvm,
            geo,
            live: 0,
            tombstones: 0,
        })
    }

    /// Opens the table whose header is at `base` of `nvm`, counting its live entries
    /// and tombstones (one read per bucket).
    pub fn open(mut nvm: N, base: u32) -> Result<Self, KvError> {
        let mut h = [0u8; HEADER_BYTES as usize];
        nvm.read(base, &mut h)?;
        let config = decode_header(&h, base)?;
        let geo = Geometry::new(config, base, nvm.size())?;
        let mut t = Table {
            nvm,
            geo,
            live: 0,
            tombstones: 0,
        };
        for b in 0..config.buckets {
            let bucket = t.read_bucket(b)?;
            for i in 0..bucket.entries {
                let r = bucket.record(i)?;
                match r.state {
                    EntryState::Full if r.len > config.max_value => {
                        return Err(KvError::Corrupt {
                            slot: bucket.first_slot + i,
                        })
                    }
                    EntryState::Full => t.live += 1,
                    EntryState::Tombstone => t.tombstones += 1,
                    EntryState::Empty => {}
                }
            }
        }
        Ok(t)
    }

    /// The value of `key` into the start of `buf`: its length, or `None` when the key
    /// is absent.
    pub fn get(&mut self, key: u32, buf: &mut [u8]) -> Result<Option<usize>, KvError> {
        match self.find(key)? {
            Found::Key { slot, len } => {
                let len = usize::from(len);
                if len > buf.len() {
                    return Err(KvError::BufferTooSmall {
                        len,
                        room: buf.len(),
                    });
                }
                self.nvm.read(self.geo.value(slot), &mut buf[..len])?;
                Ok(Some(len))
            }
            Found::Absent { .. } => Ok(None),
        }
    }

    /// Sets the value of `key` (inserting it, or replacing its value in place).
    pub fn put(&mut self, key: u32, value: &[u8]) -> Result<(), KvError> {
        let max = self.geo.config.max_value;
        if value.len() > usize::from(max) {
            return Err(KvError::ValueTooLong {
                len: value.len(),
                max,
            });
        }
        let len = value.len() as u16;
        match self.find(key)? {
            Found::Key { slot, len: old } => {
                if old == len {
                    self.nvm.write(self.geo.value(slot), value)?;
                } else {
                    self.write_entry(slot, key, value)?;
                }
            }
            Found::Absent { free: None } => return Err(KvError::TableFull),
            Found::Absent {
                free: Some((slot, was_tombstone)),
            } => {
                self.write_entry(slot, key, value)?;
                self.live += 1;
                if was_tombstone {
                    self.tombstones -= 1;
                }
            }
        }
        Ok(())
    }

    /// Deletes `key`; whether it was there.
    pub fn delete(&mut self, key: u32) -> Result<bool, KvError> {
        let Found::Key { slot, .. } = self.find(key)? else {
            return Ok(false);
        };
        self.nvm
            .write(self.geo.record(slot), &[EntryState::Tombstone as u8])?;
        self.live -= 1;
        self.tombstones += 1;
        self.reclaim(slot / self.geo.entries())?;
        Ok(true)
    }

    /// The first live entry at index `from` or after, its value read into the start of
    /// `buf`; `None` past the last one. Iterate with `from = entry.slot + 1`. Entries
    /// come in table order, not key order.
    pub fn next_entry(&mut self, from: u32, buf: &mut [u8]) -> Result<Option<Entry>, KvError> {
        let e = self.geo.entries();
        let mut slot = from;
        while slot < self.capacity() {
            let bucket = self.read_bucket(slot / e)?;
            for i in slot % e..e {
                let r = bucket.record(i)?;
                if r.state != EntryState::Full {
                    continue;
                }
                let (slot, len) = (bucket.first_slot + i, usize::from(r.len));
                if len > buf.len() {
                    return Err(KvError::BufferTooSmall {
                        len,
                        room: buf.len(),
                    });
                }
                self.nvm.read(self.geo.value(slot), &mut buf[..len])?;
                return Ok(Some(Entry {
                    slot,
                    key: r.key,
                    len,
                }));
            }
            slot = (slot / e + 1) * e;
        }
        Ok(None)
    }

    /// Live keys.
    pub fn len(&self) -> u32 {
        self.live
    }

    /// Whether no key is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Tombstones (deleted entries not yet reused or reclaimed).
    pub fn tombstones(&self) -> u32 {
        self.tombstones
    }

    /// The most keys the table holds.
    pub fn capacity(&self) -> u32 {
        self.geo.config.capacity()
    }

    /// The table's configuration.
    pub fn config(&self) -> Config {
        self.geo.config
    }

    /// Where the table lies on its NVM.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }

    /// The NVM under the table (for counters; writing it behind the table's back
    /// breaks the table).
    pub fn nvm(&self) -> &N {
        &self.nvm
    }

    /// The NVM under the table, mutably (same warning).
    pub fn nvm_mut(&mut self) -> &mut N {
        &mut self.nvm
    }

    /// Gives the NVM back.
    pub fn into_nvm(self) -> N {
        self.nvm
    }

    fn home(&self, key: u32) -> u32 {
        ((u64::from(hash(key)) * u64::from(self.geo.config.buckets)) >> 32) as u32
    }

    fn read_bucket(&mut self, b: u32) -> Result<Bucket, KvError> {
        let entries = self.geo.entries();
        let mut bucket = Bucket {
            bytes: [0; (RECORD_BYTES * MAX_BUCKET_ENTRIES as u32) as usize],
            entries,
            first_slot: b * entries,
        };
        let n = (entries * RECORD_BYTES) as usize;
        self.nvm.read(self.geo.bucket(b), &mut bucket.bytes[..n])?;
        Ok(bucket)
    }

    /// Walks the probe sequence of `key` (see the file doc).
    fn find(&mut self, key: u32) -> Result<Found, KvError> {
        let n = self.geo.config.buckets;
        let mut b = self.home(key);
        let mut free = None;
        for _ in 0..n {
            let bucket = self.read_bucket(b)?;
            let mut saw_empty = false;
            for i in 0..bucket.entries {
                let r = bucket.record(i)?;
                let slot = bucket.first_slot + i;
                match r.state {
                    EntryState::Full if r.key == key => {
                        if r.len > self.geo.config.max_value {
                            return Err(KvError::Corrupt { slot });
                        }
                        return Ok(Found::Key { slot, len: r.len });
                    }
                    EntryState::Full => {}
                    EntryState::Tombstone => {
                        free.get_or_insert((slot, true));
                    }
                    EntryState::Empty => {
                        free.get_or_insert((slot, false));
                        saw_empty = true;
                    }
                }
            }
            if saw_empty {
                break;
            }
            b = if b + 1 == n { 0 } else { b + 1 };
        }
        Ok(Found::Absent { free })
    }

    /// Writes a full entry: value and record, in one write where the layout puts them
    /// side by side and the value is small, else the value first.
    fn write_entry(&mut self, slot: u32, key: u32, value: &[u8]) -> Result<(), KvError> {
        let record = Record::full(key, value.len() as u16);
        let at = self.geo.record(slot);
        if self.geo.value_follows_record() && value.len() <= COMBINED_WRITE {
            let mut both = [0u8; RECORD_BYTES as usize + COMBINED_WRITE];
            both[..record.len()].copy_from_slice(&record);
            both[record.len()..][..value.len()].copy_from_slice(value);
            self.nvm.write(at, &both[..record.len() + value.len()])?;
        } else {
            self.nvm.write(self.geo.value(slot), value)?;
            self.nvm.write(at, &record)?;
        }
        Ok(())
    }

    /// Whether no probe sequence passes from the bucket before `b` into `b` and on: `b`
    /// has an empty entry (so no sequence goes past it) and every live key in it is at
    /// home (so none came from before).
    fn passes_nothing_into(&mut self, b: u32) -> Result<bool, KvError> {
        let bucket = self.read_bucket(b)?;
        let mut empty = false;
        for i in 0..bucket.entries {
            let r = bucket.record(i)?;
            match r.state {
                EntryState::Empty => empty = true,
                EntryState::Full if self.home(r.key) != b => return Ok(false),
                _ => {}
            }
        }
        Ok(empty)
    }

    /// After a delete in bucket `b`: writes back to empty the tombstones of `b`, then of
    /// the buckets before it, as long as no probe sequence needs them (file doc).
    fn reclaim(&mut self, mut b: u32) -> Result<(), KvError> {
        let n = self.geo.config.buckets;
        for _ in 0..n {
            let next = if b + 1 == n { 0 } else { b + 1 };
            // One bucket: every lookup reads all of it anyway.
            if n > 1 && !self.passes_nothing_into(next)? {
                break;
            }
            let bucket = self.read_bucket(b)?;
            let mut reclaimed = 0;
            for i in 0..bucket.entries {
                if bucket.record(i)?.state == EntryState::Tombstone {
                    let slot = bucket.first_slot + i;
                    self.nvm
                        .write(self.geo.record(slot), &[EntryState::Empty as u8])?;
                    reclaimed += 1;
                }
            }
            if reclaimed == 0 {
                break;
            }
            self.tombstones -= reclaimed;
            b = if b == 0 { n - 1 } else { b - 1 };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amber_nvm::sim::VecNvm;

    fn table(layout: Layout, buckets: u32) -> Table<VecNvm> {
        let config = Config {
            layout,
            buckets,
            max_value: 32,
        };
        Table::format(VecNvm::new(64 * 1024), 64, config).unwrap()
    }

    fn layouts() -> [Layout; 2] {
        [Layout::Linear, Layout::Bucketed { entries: 4 }]
    }

    #[test]
    fn put_get_replace_delete() {
        for layout in layouts() {
            let mut t = table(layout, 16);
            let mut buf = [0u8; 32];
            assert_eq!(t.get(7, &mut buf), Ok(None));
            t.put(7, b"seven").unwrap();
            assert_eq!(t.get(7, &mut buf), Ok(Some(5)));
            assert_eq!(&buf[..5], b"seven");
            t.put(7, b"SEVEN").unwrap();
            t.put(7, b"a longer seven").unwrap();
            assert_eq!(t.get(7, &mut buf), Ok(Some(14)));
            assert_eq!(&buf[..14], b"a longer seven");
            t.put(7, b"").unwrap();
            assert_eq!(t.get(7, &mut buf), Ok(Some(0)), "empty values are values");
            assert_eq!(t.len(), 1);
            assert_eq!(t.delete(7), Ok(true));
            assert_eq!(t.delete(7), Ok(false));
            assert_eq!(t.get(7, &mut buf), Ok(None));
            assert!(t.is_empty());
        }
    }

    #[test]
    fn a_full_table_refuses_new_keys_but_takes_updates_and_reuses_tombstones() {
        for layout in layouts() {
            let mut t = table(layout, 2);
            let cap = t.capacity();
            for k in 0..cap {
                t.put(k * 977, &k.to_le_bytes()).unwrap();
            }
            assert_eq!(t.put(123_456, b"x"), Err(KvError::TableFull));
            t.put(977, b"updated").unwrap();
            assert!(t.delete(0).unwrap());
            t.put(123_456, b"x").unwrap();
            assert_eq!(t.len(), cap);
            let mut buf = [0u8; 32];
            for k in 1..cap {
                assert!(t.get(k * 977, &mut buf).unwrap().is_some(), "key {k}");
            }
            assert_eq!(t.get(0, &mut buf), Ok(None));
            assert_eq!(t.get(123_456, &mut buf), Ok(Some(1)));
        }
    }

    #[test]
    fn values_above_the_maximum_and_small_buffers_are_refused_without_writing() {
        let mut t = table(Layout::Linear, 4);
        assert_eq!(
            t.put(1, &[0; 33]),
            Err(KvError::ValueTooLong { len: 33, max: 32 })
        );
        assert!(t.is_empty());
        t.put(1, &[9; 32]).unwrap();
        assert_eq!(
            t.get(1, &mut [0; 8]),
            Err(KvError::BufferTooSmall { len: 32, room: 8 })
        );
    }

    #[test]
    fn deleting_the_end_of_a_run_reclaims_its_tombstones() {
        // A single-entry-bucket table where every key collides into one run.
        let mut t = table(Layout::Linear, 64);
        let keys: Vec<u32> = (0..10_000u32).filter(|&k| t.home(k) == 5).take(4).collect();
        for &k in &keys {
            t.put(k, b"v").unwrap();
        }
        // Deleting from the middle leaves a tombstone (the run goes on past it).
        assert!(t.delete(keys[1]).unwrap());
        assert_eq!(t.tombstones(), 1);
        // Deleting the last two ends the run: the tombstones behind them go too.
        assert!(t.delete(keys[3]).unwrap());
        assert!(t.delete(keys[2]).unwrap());
        assert_eq!(
            t.tombstones(),
            0,
            "every tombstone of the run's end is reclaimed"
        );
        let mut buf = [0u8; 32];
        assert_eq!(t.get(keys[0], &mut buf), Ok(Some(1)));
    }

    #[test]
    fn a_reopened_table_has_the_same_keys_and_counts() {
        for layout in layouts() {
            let mut t = table(layout, 32);
            for k in 0..20u32 {
                t.put(k, &[k as u8; 3]).unwrap();
            }
            for k in (0..20u32).step_by(3) {
                t.delete(k).unwrap();
            }
            let (live, tomb) = (t.len(), t.tombstones());
            let mut t = Table::open(t.into_nvm(), 64).unwrap();
            assert_eq!((t.len(), t.tombstones()), (live, tomb));
            let mut buf = [0u8; 32];
            for k in 0..20u32 {
                let want = (k % 3 != 0).then_some(3);
                assert_eq!(t.get(k, &mut buf), Ok(want), "key {k}");
            }
        }
    }

    #[test]
    fn open_refuses_what_is_not_a_table() {
        assert_eq!(
            Table::open(VecNvm::new(4096), 0).err(),
            Some(KvError::NoTable { at: 0 })
        );
        let mut t = table(Layout::Linear, 4);
        t.put(1, b"x").unwrap();
        let slot = match t.find(1).unwrap() {
            Found::Key { slot, .. } => slot,
            Found::Absent { .. } => unreachable!(),
        };
        let at = t.geometry().record(slot);
        let mut nvm = t.into_nvm();
        nvm.write(at, &[7]).unwrap();
        assert_eq!(Table::open(nvm, 64).err(), Some(KvError::Corrupt { slot }));
    }

    #[test]
    fn a_scan_visits_every_live_key_once() {
        for layout in layouts() {
            let mut t = table(layout, 40);
            for k in 0..30u32 {
                t.put(k * 31, &k.to_le_bytes()).unwrap();
            }
            t.delete(31).unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 32];
            let mut from = 0;
            while let Some(e) = t.next_entry(from, &mut buf).unwrap() {
                assert_eq!(e.len, 4);
                assert_eq!(u32::from_le_bytes(buf[..4].try_into().unwrap()) * 31, e.key);
                seen.push(e.key);
                from = e.slot + 1;
            }
            seen.sort();
            let want: Vec<u32> = (0..30u32).filter(|&k| k != 1).map(|k| k * 31).collect();
            assert_eq!(seen, want);
        }
    }
}
