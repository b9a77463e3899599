//! The storage-traffic table of issue 16: what the vNV-Heap asks of its storage, call by
//! call and byte by byte, for a key-value workload, a FIFO and a full-budget persist,
//! beside a second-chance object cache (`baselines/clock_cache.rs`) on the same keys.
//!
//! - Key-value: `N` objects of `S` bytes (`S` = 32 to 512, `N * S` = 6 times the 4 KiB
//!   cache), dirty limit 2 KiB, allocated and persisted, then [`UPDATES`]
//!   read-modify-write updates of whole values, keys uniform or partitioned
//!   (`workload::Traffic`). Per update: bytes and calls written and read, misses (the
//!   object was not resident), read calls per miss, host nanoseconds.
//! - FIFO: Fig. 3's queue of 256-byte elements (4 KiB of cache, lengths 1 to 32), as a
//!   ring of preallocated objects and with an object allocated per push and freed by
//!   its pop. Per push + pop pair, after a warm-up.
//! - Persist: a full 2 KiB budget of dirty `S`-byte objects, one persist.
//!
//! Storage figures are exact counts (`counting.rs`); host times are the least of
//! [`TIMED_RUNS`] runs on this machine (the only figures of the benchmark that depend
//! on the host and vary run to run). This file must never let a set-up or warm-up into
//! a measurement.

use super::{Check, Figure, Output};
use crate::baselines::clock_cache::ClockCache;
use crate::counting::NvmCounts;
use crate::figures::fig3_queue::{Fifo, ELEM, MAX_LEN};
use crate::plot::{Kind, Panel, Series};
use crate::table::{num, Table};
use crate::vnv::{self, FifoKind};
use crate::workload::{traffic_keys, Traffic as Pattern};
use std::time::Instant;

/// Object sizes of the key-value rows and the persist rows.
pub const SIZES: [usize; 5] = [32, 64, 128, 256, 512];
/// The key-value workload's objects hold this many times the cache.
pub const CACHE_MULTIPLE: usize = 6;
/// Updates measured per key-value row.
pub const UPDATES: usize = 10_000;
/// Host time: the least of this many runs.
pub const TIMED_RUNS: usize = 3;
/// FIFO pairs before measuring (the ring turns over at least once), and measured.
const FIFO_WARMUP: usize = 2 * (MAX_LEN + 1);
const FIFO_MEASURED: usize = 64;
const SEED: u64 = 0x7261_6666_6963;

/// Targets of the issue.
pub const MAX_READ_CALLS_PER_MISS: f64 = 1.1;
/// Partitioned writes per update: at most 40 B at 128-byte objects, 16 B at 256.
pub const PARTITIONED_WRITE_TARGETS: [(usize, f64); 2] = [(128, 40.0), (256, 16.0)];
/// A full-budget persist of 32-byte objects in at most this many write calls.
pub const PERSIST_32_MAX_CALLS: u64 = 12;

/// Storage traffic of `ops` operations, the misses among them and the host time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Traffic {
    /// What the storage saw.
    pub nvm: NvmCounts,
    /// Operations measured (updates, or push + pop pairs).
    pub ops: u64,
    /// Updates whose object was not resident (key-value only).
    pub misses: u64,
    /// Host nanoseconds per operation.
    pub host_ns: f64,
}

impl Traffic {
    fn per(&self, x: u64) -> f64 {
        x as f64 / self.ops as f64
    }

    /// Read calls per miss (0 without misses).
    pub fn reads_per_miss(&self) -> f64 {
        if self.misses == 0 {
            0.0
        } else {
            self.nvm.reads as f64 / self.misses as f64
        }
    }

    fn cells(&self) -> Vec<String> {
        vec![
            num(self.per(self.nvm.write_bytes), 1),
            num(self.per(self.nvm.writes), 3),
            num(self.per(self.nvm.read_bytes), 1),
            num(self.per(self.nvm.reads), 3),
            num(self.host_ns, 0),
        ]
    }
}

/// Fills `q` to `len`, runs the warm-up pairs, then measures [`FIFO_MEASURED`] push +
/// pop pairs (checking FIFO order) with their host time. `None` if the queue cannot
/// hold `len + 1` elements.
pub fn push_pop_traffic(q: &mut dyn Fifo, len: usize) -> Option<Traffic> {
    let value = |n: u64| {
        let mut v = [0u8; ELEM];
        v[..8].copy_from_slice(&n.to_le_bytes());
        v[ELEM - 1] = n as u8;
        v
    };
    let (mut next, mut expect) = (0u64, 0u64);
    for _ in 0..len {
        if !q.push(&value(next)) {
            return None;
        }
        next += 1;
    }
    let mut out = [0u8; ELEM];
    let mut pairs = |q: &mut dyn Fifo, n: usize| -> Option<()> {
        for _ in 0..n {
            if !q.push(&value(next)) {
                return None;
            }
            next += 1;
            assert!(
                q.pop(&mut out),
                "a queue that just took a push is not empty"
            );
            assert_eq!(out, value(expect), "the queue returns elements in order");
            expect += 1;
        }
        Some(())
    };
    pairs(q, FIFO_WARMUP)?;
    let before = q.snapshot().1;
    let t0 = Instant::now();
    pairs(q, FIFO_MEASURED)?;
    let took = t0.elapsed();
    Some(Traffic {
        nvm: q.snapshot().1.since(&before),
        ops: FIFO_MEASURED as u64,
        misses: 0,
        host_ns: took.as_nanos() as f64 / FIFO_MEASURED as f64,
    })
}

/// The second-chance reference on the same keys (one untimed run for the counts,
/// [`TIMED_RUNS`] for the time).
fn clock_traffic(size: usize, n: usize, keys: &[usize]) -> Traffic {
    let run = |count: bool| {
        let mut c = ClockCache::new(n, size, vnv::TRAFFIC_CACHE, vnv::TRAFFIC_DIRTY as usize);
        let value = vec![0xa5u8; size];
        let mut misses = 0;
        let t0 = Instant::now();
        for &k in keys {
            if count && !c.is_resident(k) {
                misses += 1;
            }
            c.update(k, &value);
        }
        (c.nvm().counts(), misses, t0.elapsed())
    };
    let (nvm, misses, _) = run(true);
    let host = (0..TIMED_RUNS).map(|_| run(false).2).min().expect("runs");
    Traffic {
        nvm,
        ops: keys.len() as u64,
        misses,
        host_ns: host.as_nanos() as f64 / keys.len() as f64,
    }
}

const TRAFFIC_COLUMNS: [&str; 5] = [
    "write_bytes",
    "write_calls",
    "read_bytes",
    "read_calls",
    "host_ns",
];

fn kv_figure(checks: &mut Vec<Check>) -> Figure {
    let mut header = vec!["pattern", "object_bytes", "objects", "system"];
    header.extend(TRAFFIC_COLUMNS.map(|c| c));
    header.extend(["misses", "read_calls_per_miss"]);
    let mut table = Table::new(&header);
    let mut worst_miss: Option<(f64, String)> = None;
    let mut panels = Vec::new();
    for pattern in Pattern::ALL {
        let (mut heap_s, mut clock_s) = (Vec::new(), Vec::new());
        for size in SIZES {
            let n = CACHE_MULTIPLE * vnv::TRAFFIC_CACHE / size;
            let keys = traffic_keys(pattern, n, UPDATES, SEED ^ size as u64);
            for (system, t) in [
                ("vNV-Heap", vnv::kv_traffic(size, n, &keys)),
                ("second-chance reference", clock_traffic(size, n, &keys)),
            ] {
                let mut row = vec![
                    pattern.name().to_string(),
                    size.to_string(),
                    n.to_string(),
                    system.to_string(),
                ];
                row.extend(t.cells());
                row.extend([num(t.per(t.misses), 3), num(t.reads_per_miss(), 3)]);
                table.push(row);
                let wb = Some(t.per(t.nvm.write_bytes));
                if system == "vNV-Heap" {
                    heap_s.push((0.0, wb));
                    let r = t.reads_per_miss();
                    if worst_miss.as_ref().is_none_or(|(w, _)| r > *w) {
                        worst_miss = Some((r, format!("{} keys, {size} B", pattern.name())));
                    }
                    if pattern == Pattern::Partitioned {
                        for (s, limit) in PARTITIONED_WRITE_TARGETS {
                            if s == size {
                                let got = t.per(t.nvm.write_bytes);
                                checks.push(Check {
                                    target: format!(
                                        "traffic: partitioned keys, {s} B objects: at most {limit} B written per update"
                                    ),
                                    met: got <= limit,
                                    detail: format!("{got:.1} B per update"),
                                });
                            }
                        }
                    }
                } else {
                    clock_s.push((0.0, wb));
                }
            }
        }
        panels.push(Panel {
            title: format!("{} keys", pattern.name()),
            x_label: "object size [bytes]".into(),
            y_label: "bytes written per update".into(),
            kind: Kind::Bars {
                categories: SIZES.iter().map(|s| s.to_string()).collect(),
            },
            series: vec![
                Series {
                    name: "vNV-Heap".into(),
                    points: heap_s,
                },
                Series {
                    name: "second-chance reference".into(),
                    points: clock_s,
                },
            ],
        });
    }
    let (r, at) = worst_miss.expect("some rows");
    checks.push(Check {
        target: format!("traffic: at most {MAX_READ_CALLS_PER_MISS} read calls per miss"),
        met: r <= MAX_READ_CALLS_PER_MISS,
        detail: format!("worst {r:.3} ({at})"),
    });
    Figure {
        name: "traffic_kv",
        title: format!(
            "Storage traffic per key-value update: {UPDATES} updates, {} B cache, {} B dirty limit, objects {CACHE_MULTIPLE}x the cache",
            vnv::TRAFFIC_CACHE,
            vnv::TRAFFIC_DIRTY
        ),
        table,
        panels,
    }
}

fn fifo_figure(checks: &mut Vec<Check>) -> Figure {
    let mut header = vec!["kind", "length"];
    header.extend(TRAFFIC_COLUMNS.map(|c| c));
    let mut table = Table::new(&header);
    let mut series = Vec::new();
    let mut longest_ring_fit = 0;
    let mut alloc_traffic_while_fit: Vec<usize> = Vec::new();
    for kind in [FifoKind::Ring, FifoKind::AllocPerPush] {
        let mut points = Vec::new();
        for len in 1..=MAX_LEN {
            let t = vnv::fifo_traffic(kind, len);
            let mut row = vec![kind.name().to_string(), len.to_string()];
            match &t {
                Some(t) => row.extend(t.cells()),
                None => row.extend([""; 5].map(String::from)),
            }
            table.push(row);
            let moved = t.map(|t| t.nvm.read_bytes + t.nvm.write_bytes);
            match kind {
                FifoKind::Ring if moved == Some(0) => longest_ring_fit = len,
                FifoKind::AllocPerPush if len <= longest_ring_fit && moved != Some(0) => {
                    alloc_traffic_while_fit.push(len)
                }
                _ => {}
            }
            points.push((len as f64, t.map(|t| t.per(t.nvm.write_bytes))));
        }
        series.push(Series {
            name: kind.name().into(),
            points,
        });
    }
    checks.push(Check {
        target: "traffic: an alloc-per-push FIFO moves no storage bytes while it fits in RAM"
            .into(),
        met: alloc_traffic_while_fit.is_empty(),
        detail: format!(
            "the ring fits up to length {longest_ring_fit}; alloc-per-push moved bytes at lengths {alloc_traffic_while_fit:?} of those"
        ),
    });
    Figure {
        name: "traffic_fifo",
        title: format!(
            "Storage traffic per push + pop of a FIFO of {ELEM} B elements, {} B cache",
            crate::figures::fig3_queue::RAM
        ),
        table,
        panels: vec![Panel {
            title: "FIFO of 256 B elements".into(),
            x_label: "initial queue length".into(),
            y_label: "bytes written per push + pop".into(),
            kind: Kind::Lines { log_y: false },
            series,
        }],
    }
}

fn persist_figure(checks: &mut Vec<Check>) -> Figure {
    let mut table = Table::new(&[
        "object_bytes",
        "write_calls",
        "write_bytes",
        "read_calls",
        "read_bytes",
    ]);
    let mut points = Vec::new();
    for size in SIZES {
        let c = vnv::persist_traffic(size);
        table.push(vec![
            size.to_string(),
            c.writes.to_string(),
            c.write_bytes.to_string(),
            c.reads.to_string(),
            c.read_bytes.to_string(),
        ]);
        points.push((0.0, Some(c.writes as f64)));
        if size == 32 {
            checks.push(Check {
                target: format!(
                    "traffic: a full-budget persist of 32 B objects in at most {PERSIST_32_MAX_CALLS} write calls"
                ),
                met: c.writes <= PERSIST_32_MAX_CALLS,
                detail: format!("{} write calls, {} bytes", c.writes, c.write_bytes),
            });
        }
    }
    Figure {
        name: "traffic_persist",
        title: format!(
            "Storage traffic of one persist of a full {} B dirty budget",
            vnv::TRAFFIC_DIRTY
        ),
        table,
        panels: vec![Panel {
            title: "persist of a full dirty budget".into(),
            x_label: "object size [bytes]".into(),
            y_label: "write calls".into(),
            kind: Kind::Bars {
                categories: SIZES.iter().map(|s| s.to_string()).collect(),
            },
            series: vec![Series {
                name: "vNV-Heap".into(),
                points,
            }],
        }],
    }
}

/// Runs the benchmark.
pub fn run() -> Output {
    let mut checks = Vec::new();
    let figures = vec![
        kv_figure(&mut checks),
        fifo_figure(&mut checks),
        persist_figure(&mut checks),
    ];
    Output { figures, checks }
}
