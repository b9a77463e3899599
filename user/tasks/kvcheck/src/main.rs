//! kvcheck: a client of the key-value service (endpoint, slot 0, badge 1; its buffer
//! shared with the service, slot 2) and the kv app's crash workload. It keeps, in its
//! own checkpointed memory, the table it expects: for each of `KEYS` keys the version
//! of its value (0: absent), values being a function of key and version, versions
//! never reused. The key space is larger than the table, so the table fills up and
//! puts of new keys must be refused as full.
//!
//! It puts (new versions of random keys, of random lengths up to the largest value),
//! deletes, gets and, now and then, puts a value one byte too long; every answer must
//! be the one its expected table predicts, typed errors included. Every `SCAN_EVERY`
//! operations it scans the whole table, which must hold exactly the expected keys with
//! their expected values; it prints `kv: N ops, K keys`. Every `COMMIT_EVERY`
//! operations it takes a checkpoint itself (the syscall returns after the commit) and
//! prints `kv: committed N ops`: no later restore may come back with fewer. After a
//! restore it prints `kv: restored at N ops` and scans at once: every put acknowledged
//! before the restored checkpoint must be there and nothing done after it. Any
//! mismatch prints `kv: VIOLATION ...` and ends the task; it must never repair what it
//! finds, only report it.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_kv_api::{Endpoint, Kv, KvError, BUFFER_BYTES, SCAN_END};
use amber_user::{checkpoint, exit, memory, println, signalled, watch_restores, Rng, WatchFlags};
use core::fmt;

amber_user::main!(main);

const KV: u32 = 0;
const NOTIFICATION: u32 = 1;
const RESTORED: u32 = 1 << 1;
/// Keys used: more than the table holds (128 in the kv app).
const KEYS: u32 = 160;
/// The first key (keys are `KEY_BASE + i`).
const KEY_BASE: u32 = 0x4B56_0000;
/// The table's largest value as the service reports it must be this (kv app).
const MAX_VALUE: usize = 120;
const SCAN_EVERY: u32 = 100;
const COMMIT_EVERY: u32 = 500;
const SEED: u32 = 0x4B56_4348;

/// What this task expects of the table; all of it is checkpointed with the task.
struct Expected {
    /// The version of each key's value; 0 when the key is absent.
    versions: [u32; KEYS as usize],
    /// Keys present.
    live: u32,
    /// The last version given out (versions are never reused).
    last_version: u32,
    ops: u32,
    capacity: u32,
}

/// The commit watch: [operations done (for the restore line), kernel-written].
static mut WATCH: [u64; 2] = [0; 2];

fn violation(what: fmt::Arguments<'_>) -> ! {
    println!("kv: VIOLATION {what}");
    exit(1);
}

/// The value of key `i` at `version`: its length and bytes, written into `out`.
fn value(i: u32, version: u32, out: &mut [u8; MAX_VALUE + 1]) -> usize {
    let mut h = Rng::new(i.wrapping_mul(0x9E37_79B1) ^ version.wrapping_mul(0x85EB_CA6B));
    let len = h.below(MAX_VALUE as u32 + 1) as usize;
    for b in &mut out[..len] {
        *b = h.next_u32() as u8;
    }
    len
}

/// Checks the answer of one call against what was expected of it.
fn expect<T: fmt::Debug + PartialEq>(
    got: Result<T, KvError>,
    want: Result<T, KvError>,
    what: &str,
) {
    if got != want {
        violation(format_args!("{what}: got {got:?}, expected {want:?}"));
    }
}

impl Expected {
    fn put(&mut self, kv: &mut Kv, i: u32) {
        let version = self.last_version + 1;
        let mut v = [0u8; MAX_VALUE + 1];
        let len = value(i, version, &mut v);
        let absent = self.versions[i as usize] == 0;
        let want = if absent && self.live == self.capacity {
            Err(KvError::TableFull)
        } else {
            Ok(())
        };
        let got = kv.put(KEY_BASE + i, &v[..len]);
        expect(got, want, "put");
        self.last_version = version;
        if got.is_ok() {
            self.versions[i as usize] = version;
            self.live += u32::from(absent);
        }
    }

    fn delete(&mut self, kv: &mut Kv, i: u32) {
        let present = self.versions[i as usize] != 0;
        let want = if present {
            Ok(())
        } else {
            Err(KvError::NoSuchKey)
        };
        expect(kv.delete(KEY_BASE + i), want, "delete");
        if present {
            self.versions[i as usize] = 0;
            self.live -= 1;
        }
    }

    fn get(&self, kv: &mut Kv, i: u32) {
        let mut got = [0u8; MAX_VALUE + 1];
        let mut want = [0u8; MAX_VALUE + 1];
        match self.versions[i as usize] {
            0 => expect(
                kv.get(KEY_BASE + i, &mut got),
                Err(KvError::NoSuchKey),
                "get",
            ),
            version => {
                let len = value(i, version, &mut want);
                expect(kv.get(KEY_BASE + i, &mut got), Ok(len), "get");
                if got[..len] != want[..len] {
                    violation(format_args!("get of key {i}: not version {version}"));
                }
            }
        }
    }

    /// Scans the whole table: exactly the expected keys, each with its value.
    fn scan(&self, kv: &mut Kv, when: &str) {
        let mut into = [0u8; BUFFER_BYTES];
        let mut want = [0u8; MAX_VALUE + 1];
        let (mut cursor, mut seen) = (0, 0);
        while cursor != SCAN_END {
            let batch = match kv.scan(cursor, &mut into) {
                Ok(b) => b,
                Err(e) => violation(format_args!("{when}: scan failed: {e}")),
            };
            for (key, v) in batch.entries() {
                let i = key.wrapping_sub(KEY_BASE);
                let version = match self.versions.get(i as usize) {
                    Some(&0) => violation(format_args!("{when}: deleted key {i} is visible")),
                    Some(&version) => version,
                    None => violation(format_args!("{when}: unknown key {key:#x}")),
                };
                let len = value(i, version, &mut want);
                if v != &want[..len] {
                    violation(format_args!(
                        "{when}: key {i} does not hold its version {version}"
                    ));
                }
                seen += 1;
            }
            cursor = batch.next;
        }
        if seen != self.live {
            violation(format_args!(
                "{when}: {seen} keys in the table, {} expected",
                self.live
            ));
        }
    }
}

fn main() {
    // SAFETY: one thread per task; the kernel never writes WATCH[0], and WATCH[1] only
    // while this task is stopped.
    let watch = unsafe { &mut *core::ptr::addr_of_mut!(WATCH) };
    watch_restores(watch, NOTIFICATION, RESTORED, WatchFlags::empty()).expect("commit watch");
    // SAFETY: the app grants this task the part of the service's memory `kv` that
    // badge 1 names, shared with the service alone, with the endpoint capability of
    // badge 1; only `kv` uses it.
    let mut kv =
        Kv::new(unsafe { Endpoint::new(KV, memory!("KV")) }.expect("a buffer of BUFFER_BYTES"));
    let info = match kv.info() {
        Ok(i) if i.max_value as usize == MAX_VALUE && i.live == 0 => i,
        r => violation(format_args!(
            "a new table with values up to {MAX_VALUE} bytes expected: {r:?}"
        )),
    };
    let mut e = Expected {
        versions: [0; KEYS as usize],
        live: 0,
        last_version: 0,
        ops: 0,
        capacity: info.capacity,
    };
    println!("kv: table of {} keys, {} keys used", info.capacity, KEYS);
    let mut rng = Rng::new(SEED);
    loop {
        if signalled(NOTIFICATION, RESTORED) {
            println!("kv: restored at {} ops, {} keys", e.ops, e.live);
            e.scan(&mut kv, "after a restore");
        }
        let i = rng.below(KEYS);
        match rng.below(32) {
            // Puts outweigh deletes enough that the table is full now and then.
            0..=20 => e.put(&mut kv, i),
            21..=25 => e.delete(&mut kv, i),
            26..=30 => e.get(&mut kv, i),
            _ => expect(
                kv.put(KEY_BASE + i, &[0x55; MAX_VALUE + 1]),
                Err(KvError::ValueTooLong { len: MAX_VALUE + 1 }),
                "put of a value too long",
            ),
        }
        e.ops += 1;
        watch[0] = e.ops.into();
        if e.ops.is_multiple_of(SCAN_EVERY) {
            e.scan(&mut kv, "scan");
            println!("kv: {} ops, {} keys", e.ops, e.live);
        }
        if e.ops.is_multiple_of(COMMIT_EVERY) {
            match checkpoint() {
                Ok(()) => println!("kv: committed {} ops", e.ops),
                Err(err) => println!("kv: checkpoint failed: {err}"),
            }
        }
    }
}
