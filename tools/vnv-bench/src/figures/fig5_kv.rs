//! Figs. 5 and 6: a key-value store of 256 values (58 KiB) with a dirty limit of one
//! fifth of the user data, updated sequentially, unequally and randomly; vNV-Heap
//! against a ManagedState-style page heap with pages of 32 to 512 bytes. Fig. 5 is the
//! mean latency of an update, Fig. 6 the metadata bytes of each system.
//!
//! Every system gets the same value sizes and the same key sequence. Each run inserts
//! all values, persists, warms up with the pattern, then measures. This file must
//! never give one system a key sequence, a warm-up or a limit the others do not get.

use super::{us, Check, Figure, Output};
use crate::baselines::managed_state::PageHeap;
use crate::cost::{Cost, Meter};
use crate::counting::NvmCounts;
use crate::plot::{Kind, Panel, Series};
use crate::table::{num, Table};
use crate::vnv;
use crate::workload::{key_sequence, value_sizes, Pattern};

/// Page sizes of the baseline.
pub const PAGE_SIZES: [usize; 5] = [32, 64, 128, 256, 512];
/// Seed of the value order and of the key sequences.
const SEED: u64 = 0x5eed_0005;
/// Updates before measuring.
const WARMUP: usize = 1024;
/// Updates measured.
const MEASURED: usize = 4096;
/// The paper's assumption for an optimised vNV-Heap: 3 metadata bytes per object.
pub const PAPER_VNV_META_PER_OBJECT: usize = 3;

/// A key-value store under test.
pub trait Kv {
    /// Overwrites the whole value of `key` with `value`.
    fn update(&mut self, key: usize, value: &[u8]);
    /// The reactive checkpoint.
    fn persist(&mut self);
    /// Cycles charged and storage traffic so far.
    fn snapshot(&self) -> (Meter, NvmCounts);
}

/// The key-value store on the page heap: values laid out back to back in key order.
pub struct PageKv {
    heap: PageHeap,
    offsets: Vec<usize>,
}

impl PageKv {
    /// A store for values of `sizes` in pages of `page` bytes, dirty limit `dirty`.
    pub fn new(sizes: &[usize], page: usize, dirty: usize) -> Self {
        let mut offsets = Vec::with_capacity(sizes.len());
        let mut at = 0;
        for &s in sizes {
            offsets.push(at);
            at += s;
        }
        let max = sizes.iter().copied().max().unwrap_or(0);
        let heap = PageHeap::new(at, page, dirty, max).expect("the dirty limit fits a value");
        PageKv { heap, offsets }
    }

    /// Bytes of metadata of the page heap.
    pub fn metadata_bytes(&self) -> usize {
        self.heap.metadata_bytes()
    }
}

impl Kv for PageKv {
    fn update(&mut self, key: usize, value: &[u8]) {
        self.heap.write(self.offsets[key], value);
    }
    fn persist(&mut self) {
        self.heap.persist();
    }
    fn snapshot(&self) -> (Meter, NvmCounts) {
        (self.heap.meter, self.heap.nvm().counts())
    }
}

/// Inserts all values, persists, warms up and measures `kv` on `keys`.
/// Returns the measured total cost (over [`MEASURED`] updates).
pub fn measure(kv: &mut dyn Kv, sizes: &[usize], keys: &[usize]) -> Cost {
    let mut buf = vec![0u8; 1024];
    for (key, &size) in sizes.iter().enumerate() {
        buf[..size].fill(key as u8);
        kv.update(key, &buf[..size]);
    }
    kv.persist();
    let (warm, measured) = keys.split_at(WARMUP);
    for (i, &key) in warm.iter().enumerate() {
        buf[..sizes[key]].fill(i as u8);
        kv.update(key, &buf[..sizes[key]]);
    }
    let before = kv.snapshot();
    for (i, &key) in measured.iter().enumerate() {
        buf[..sizes[key]].fill((i + WARMUP) as u8);
        kv.update(key, &buf[..sizes[key]]);
    }
    Cost::between(before, kv.snapshot())
}

/// The dirty limit: one fifth of the user data.
pub fn dirty_limit(sizes: &[usize]) -> usize {
    sizes.iter().sum::<usize>() / 5
}

/// Runs the benchmark.
pub fn run() -> Output {
    let sizes = value_sizes(SEED);
    let dirty = dirty_limit(&sizes);
    let mut table = Table::new(&[
        "pattern",
        "system",
        "page_bytes",
        "us_per_update",
        "nvm_write_bytes_per_update",
        "vnv_over_system",
    ]);
    let mut panels = Vec::new();
    let mut worst: Option<(f64, String)> = None;
    let n = MEASURED as f64;
    for pattern in Pattern::ALL {
        let keys = key_sequence(
            pattern,
            sizes.len(),
            WARMUP + MEASURED,
            SEED ^ pattern as u64,
        );
        let vnv = vnv::kv_measure(&sizes, dirty, &keys);
        let vnv_us = us(&vnv) / n;
        table.push(vec![
            pattern.name().into(),
            "vNV-Heap".into(),
            String::new(),
            num(vnv_us, 2),
            num(vnv.nvm.write_bytes as f64 / n, 1),
            num(1.0, 3),
        ]);
        let (mut vnv_s, mut ms_s) = (Vec::new(), Vec::new());
        for page in PAGE_SIZES {
            let ms = measure(&mut PageKv::new(&sizes, page, dirty), &sizes, &keys);
            let ms_us = us(&ms) / n;
            let ratio = vnv_us / ms_us;
            if worst.as_ref().is_none_or(|(w, _)| ratio > *w) {
                worst = Some((ratio, format!("{} pattern, {page} B pages", pattern.name())));
            }
            table.push(vec![
                pattern.name().into(),
                "ManagedState".into(),
                page.to_string(),
                num(ms_us, 2),
                num(ms.nvm.write_bytes as f64 / n, 1),
                num(ratio, 3),
            ]);
            vnv_s.push((0.0, Some(vnv_us)));
            ms_s.push((0.0, Some(ms_us)));
        }
        panels.push(Panel {
            title: format!("{} access", pattern.name()),
            x_label: "ManagedState page size [bytes]".into(),
            y_label: "mean latency per update [µs]".into(),
            kind: Kind::Bars {
                categories: PAGE_SIZES.iter().map(|p| p.to_string()).collect(),
            },
            series: vec![
                Series {
                    name: "vNV-Heap".into(),
                    points: vnv_s,
                },
                Series {
                    name: "ManagedState".into(),
                    points: ms_s,
                },
            ],
        });
    }
    let (ratio, at) = worst.expect("at least one page size");
    let check = Check {
        target: "key-value store: vNV-Heap never slower than the page heap at any page size".into(),
        met: ratio <= 1.0,
        detail: format!("worst vNV-Heap / ManagedState latency ratio {ratio:.3} ({at})"),
    };
    Output {
        figures: vec![
            Figure {
                name: "fig5_kv",
                title: format!(
                    "Fig. 5: key-value update latency, 256 values of 58 KiB, dirty limit {dirty} B"
                ),
                table,
                panels,
            },
            metadata_figure(&sizes, dirty),
        ],
        checks: vec![check],
    }
}

fn metadata_figure(sizes: &[usize], dirty: usize) -> Figure {
    let mut table = Table::new(&[
        "page_bytes",
        "managed_state_ram_bytes",
        "vnv_heap_ram_bytes",
        "vnv_heap_paper_3b_bytes",
        "managed_state_nvm_bytes",
        "vnv_heap_nvm_bytes",
    ]);
    let (vnv, vnv_nvm) = vnv::kv_metadata(sizes, dirty);
    let paper = sizes.len() * PAPER_VNV_META_PER_OBJECT;
    let (mut ms_s, mut vnv_s, mut paper_s) = (Vec::new(), Vec::new(), Vec::new());
    for page in PAGE_SIZES {
        let ms = PageKv::new(sizes, page, dirty).metadata_bytes();
        table.push(vec![
            page.to_string(),
            ms.to_string(),
            vnv.to_string(),
            paper.to_string(),
            ms.to_string(),
            vnv_nvm.to_string(),
        ]);
        ms_s.push((0.0, Some(ms as f64)));
        vnv_s.push((0.0, Some(vnv as f64)));
        paper_s.push((0.0, Some(paper as f64)));
    }
    Figure {
        name: "fig6_metadata",
        title: "Fig. 6: metadata bytes of the key-value store, vNV-Heap vs ManagedState".into(),
        table,
        panels: vec![Panel {
            title: "metadata of 256 values".into(),
            x_label: "ManagedState page size [bytes]".into(),
            y_label: "metadata [bytes]".into(),
            kind: Kind::Bars {
                categories: PAGE_SIZES.iter().map(|p| p.to_string()).collect(),
            },
            series: vec![
                Series {
                    name: "vNV-Heap (this library)".into(),
                    points: vnv_s,
                },
                Series {
                    name: "vNV-Heap (paper: 3 B/object)".into(),
                    points: paper_s,
                },
                Series {
                    name: "ManagedState (1 B/page)".into(),
                    points: ms_s,
                },
            ],
        }],
    }
}
