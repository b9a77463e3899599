//! The workloads, the same seeded operations for every store: 10,000 puts of 4, 16,
//! 64 or 256-byte values over 1,000 keys (uniform, or skewed: 80 % of the puts to 20 %
//! of the keys), a read-mostly mix (90 % gets, 10 % puts, 16-byte values) and scans
//! of 1,000 keys of 16 bytes. Every store is first filled with all 1,000 keys (not
//! measured), so that the measured operations run on a store in use. Each get is
//! checked against the version the runner last put: a store that returns wrong data
//! stops the benchmark.

use crate::counts::DeviceCounts;
use crate::stores::{Store, KEYS};
use amber_user::{instret, Rng};

/// Measured operations of a put or read-mostly workload.
pub const OPS: u32 = 10_000;
const SEED: u32 = 0x4B56_4245;

/// What a workload does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Puts { skewed: bool },
    ReadMostly,
    Scan,
}

#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub name: &'static str,
    pub kind: Kind,
    /// Bytes of every value.
    pub value: usize,
}

const fn puts(name: &'static str, skewed: bool, value: usize) -> Workload {
    Workload {
        name,
        kind: Kind::Puts { skewed },
        value,
    }
}

pub const WORKLOADS: [Workload; 10] = [
    puts("put-uniform-4", false, 4),
    puts("put-uniform-16", false, 16),
    puts("put-uniform-64", false, 64),
    puts("put-uniform-256", false, 256),
    puts("put-skewed-4", true, 4),
    puts("put-skewed-16", true, 16),
    puts("put-skewed-64", true, 64),
    puts("put-skewed-256", true, 256),
    Workload {
        name: "read-mostly-16",
        kind: Kind::ReadMostly,
        value: 16,
    },
    Workload {
        name: "scan-16",
        kind: Kind::Scan,
        value: 16,
    },
];

/// The `i`-th key: the murmur3 finalizer of `i` (a bijection, so 1,000 distinct keys
/// spread over the whole key space).
pub fn key(i: u32) -> u32 {
    let mut h = i ^ 0xA5A5_0000;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// The value of key `i` at `version`.
pub fn value(i: u32, version: u32, out: &mut [u8]) {
    let mut r = Rng::new(key(i) ^ version.wrapping_mul(0x9E37_79B1));
    for b in out {
        *b = r.next_u32() as u8;
    }
}

/// What one workload cost one store.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    /// Operations measured (puts and gets; for scans, items read).
    pub ops: u64,
    /// Instructions the store spent in them (the device emulation's left out).
    pub instructions: u64,
    /// The device traffic of the measured operations.
    pub device: DeviceCounts,
}

/// Fills `store` with every key, then runs `w` on it with `ops` operations (puts and
/// read-mostly; `ops / 1000` whole scans, at least one, for a scan), measuring each
/// store call. The benchmark runs [`OPS`].
pub fn run(store: &mut dyn Store, w: &Workload, ops_wanted: u32) -> Outcome {
    let mut versions = [0u32; KEYS];
    let mut v = [0u8; 256];
    let mut out = [0u8; 256];
    let n = w.value;
    for i in 0..KEYS as u32 {
        value(i, 0, &mut v[..n]);
        store.put(key(i), &v[..n]);
    }
    let before = store.counts();
    let mut rng = Rng::new(SEED);
    let (mut spent, mut ops) = (0u64, 0u64);
    let mut measure = |f: &mut dyn FnMut()| {
        let t = instret();
        f();
        spent += u64::from(instret().wrapping_sub(t));
    };
    match w.kind {
        Kind::Puts { skewed } => {
            for _ in 0..ops_wanted {
                let i = if skewed && rng.below(10) < 8 {
                    rng.below(KEYS as u32 / 5)
                } else if skewed {
                    KEYS as u32 / 5 + rng.below(KEYS as u32 * 4 / 5)
                } else {
                    rng.below(KEYS as u32)
                };
                versions[i as usize] += 1;
                value(i, versions[i as usize], &mut v[..n]);
                measure(&mut || store.put(key(i), &v[..n]));
                ops += 1;
            }
        }
        Kind::ReadMostly => {
            for _ in 0..ops_wanted {
                let i = rng.below(KEYS as u32);
                if rng.below(10) == 0 {
                    versions[i as usize] += 1;
                    value(i, versions[i as usize], &mut v[..n]);
                    measure(&mut || store.put(key(i), &v[..n]));
                } else {
                    let mut got = None;
                    measure(&mut || got = store.get(key(i), &mut out));
                    value(i, versions[i as usize], &mut v[..n]);
                    assert!(
                        got == Some(n) && out[..n] == v[..n],
                        "a store returned a wrong value for key {i}"
                    );
                }
                ops += 1;
            }
        }
        Kind::Scan => {
            for _ in 0..(ops_wanted / 1000).max(1) {
                let mut items = 0;
                measure(&mut || items = store.scan());
                assert!(items >= KEYS as u32, "a scan found {items} of {KEYS} keys");
                ops += u64::from(items);
            }
        }
    }
    let device = store.counts().since(&before);
    Outcome {
        ops,
        instructions: spent - device.emulation_instructions,
        device,
    }
}
