//! Fig. 3: average latency of one push plus one pop on a FIFO queue of 256-byte
//! elements that already holds 1 to 32 elements, with 4 KiB of RAM: RAM-only,
//! NVM-only and vNV-Heap.
//!
//! Each system is filled to the length, warmed up, and then measured over many
//! push+pop pairs; the figure is the mean. This file must never let the fill or the
//! warm-up into the measurement.

use super::{us, Check, Figure, Output};
use crate::baselines::nvm_queue::NvmQueue;
use crate::baselines::ram_queue::RamQueue;
use crate::cost::Cost;
use crate::plot::{Kind, Panel, Series};
use crate::table::{num, Table};
use crate::vnv;

/// Element size of the paper's queue.
pub const ELEM: usize = 256;
/// RAM budget of every queue.
pub const RAM: usize = 4096;
/// Longest initial length.
pub const MAX_LEN: usize = 32;
/// Push+pop pairs before measuring (the ring turns over at least once).
const WARMUP: usize = 2 * (MAX_LEN + 1);
/// Push+pop pairs measured.
const MEASURED: usize = 64;
/// The bound on vNV-Heap / RAM-only while the queue fits in RAM.
pub const RATIO_TARGET: f64 = 1.3;

/// Something with FIFO push and pop, and a way to read its meter and device.
pub trait Fifo {
    /// Appends; `false` if full.
    fn push(&mut self, value: &[u8]) -> bool;
    /// Removes the oldest; `false` if empty.
    fn pop(&mut self, out: &mut [u8]) -> bool;
    /// Cycles charged and storage traffic so far.
    fn snapshot(&self) -> (crate::cost::Meter, crate::counting::NvmCounts);
}

impl Fifo for RamQueue {
    fn push(&mut self, value: &[u8]) -> bool {
        RamQueue::push(self, value)
    }
    fn pop(&mut self, out: &mut [u8]) -> bool {
        RamQueue::pop(self, out)
    }
    fn snapshot(&self) -> (crate::cost::Meter, crate::counting::NvmCounts) {
        (self.meter, Default::default())
    }
}

impl Fifo for NvmQueue {
    fn push(&mut self, value: &[u8]) -> bool {
        NvmQueue::push(self, value)
    }
    fn pop(&mut self, out: &mut [u8]) -> bool {
        NvmQueue::pop(self, out)
    }
    fn snapshot(&self) -> (crate::cost::Meter, crate::counting::NvmCounts) {
        (self.meter, self.nvm().counts())
    }
}

/// Mean cost of one push+pop at initial length `len`, checking FIFO order on the way.
/// `None` if the queue cannot hold `len + 1` elements.
pub fn mean_push_pop(q: &mut dyn Fifo, len: usize) -> Option<Mean> {
    let mut next = 0u64;
    let mut expect = 0u64;
    let value = |n: u64| {
        let mut v = [0u8; ELEM];
        v[..8].copy_from_slice(&n.to_le_bytes());
        v[ELEM - 1] = n as u8;
        v
    };
    for _ in 0..len {
        if !q.push(&value(next)) {
            return None;
        }
        next += 1;
    }
    let mut out = [0u8; ELEM];
    let mut pair = |q: &mut dyn Fifo| -> Option<()> {
        if !q.push(&value(next)) {
            return None;
        }
        next += 1;
        assert!(
            q.pop(&mut out),
            "a queue that just took a push is not empty"
        );
        assert_eq!(
            out,
            value(expect),
            "the queue must return elements in order"
        );
        expect += 1;
        Some(())
    };
    for _ in 0..WARMUP {
        pair(q)?;
    }
    let before = q.snapshot();
    for _ in 0..MEASURED {
        pair(q)?;
    }
    Some(Mean {
        total: Cost::between(before, q.snapshot()),
        n: MEASURED as u64,
    })
}

/// A total cost over `n` repetitions.
pub struct Mean {
    /// Everything the `n` repetitions cost together.
    pub total: Cost,
    /// How many repetitions.
    pub n: u64,
}

impl Mean {
    /// Mean latency in microseconds.
    pub fn us(&self) -> f64 {
        us(&self.total) / self.n as f64
    }

    /// Mean NVM bytes moved (both directions).
    pub fn nvm_bytes(&self) -> f64 {
        (self.total.nvm.read_bytes + self.total.nvm.write_bytes) as f64 / self.n as f64
    }
}

/// Runs the benchmark.
pub fn run() -> Output {
    let mut table = Table::new(&[
        "length",
        "ram_only_us",
        "nvm_only_us",
        "vnv_heap_us",
        "vnv_over_ram",
        "vnv_nvm_bytes_per_pair",
        "vnv_fits_in_ram",
    ]);
    let (mut ram_s, mut nvm_s, mut vnv_s) = (Vec::new(), Vec::new(), Vec::new());
    let mut worst_fit: Option<(usize, f64)> = None;
    let mut longest_fit = 0;
    for len in 1..=MAX_LEN {
        let ram = mean_push_pop(&mut RamQueue::new(RAM, ELEM), len);
        let nvm = mean_push_pop(&mut NvmQueue::new(len + 1, ELEM), len)
            .expect("an NVM queue of len + 1 slots holds len + 1 elements");
        let vnv = vnv::queue_mean(RAM, len + 1, len);
        let fits = vnv.as_ref().is_some_and(|m| m.nvm_bytes() == 0.0);
        let ratio = match (&ram, &vnv) {
            (Some(r), Some(v)) => Some(v.us() / r.us()),
            _ => None,
        };
        if fits {
            longest_fit = len;
            if let Some(r) = ratio {
                if worst_fit.is_none_or(|(_, w)| r > w) {
                    worst_fit = Some((len, r));
                }
            }
        }
        let cell = |m: &Option<Mean>| m.as_ref().map_or(String::new(), |m| num(m.us(), 2));
        table.push(vec![
            len.to_string(),
            cell(&ram),
            num(nvm.us(), 2),
            cell(&vnv),
            ratio.map_or(String::new(), |r| num(r, 3)),
            vnv.as_ref()
                .map_or(String::new(), |m| num(m.nvm_bytes(), 1)),
            fits.to_string(),
        ]);
        ram_s.push((len as f64, ram.as_ref().map(Mean::us)));
        nvm_s.push((len as f64, Some(nvm.us())));
        vnv_s.push((len as f64, vnv.as_ref().map(Mean::us)));
    }
    let check = match worst_fit {
        Some((len, r)) => Check {
            target: format!(
                "queue: vNV-Heap within {RATIO_TARGET}x RAM-only while the queue fits in RAM"
            ),
            met: r <= RATIO_TARGET,
            detail: format!(
                "worst ratio {r:.3} at length {len}; the vNV-Heap queue fits in RAM (no NVM \
                 traffic) up to length {longest_fit}"
            ),
        },
        None => Check {
            target: format!(
                "queue: vNV-Heap within {RATIO_TARGET}x RAM-only while the queue fits in RAM"
            ),
            met: false,
            detail: "no length at which the vNV-Heap queue ran without NVM traffic".into(),
        },
    };
    Output {
        figures: vec![Figure {
            name: "fig3_queue",
            title: "Fig. 3: push+pop latency of a queue of 256 B elements, 4 KiB RAM".into(),
            table,
            panels: vec![Panel {
                title: "queue of 256 B elements, 4 KiB RAM".into(),
                x_label: "initial queue length".into(),
                y_label: "latency of push + pop [µs] (log)".into(),
                kind: Kind::Lines { log_y: true },
                series: vec![
                    Series {
                        name: "RAM only".into(),
                        points: ram_s,
                    },
                    Series {
                        name: "NVM only".into(),
                        points: nvm_s,
                    },
                    Series {
                        name: "vNV-Heap".into(),
                        points: vnv_s,
                    },
                ],
            }],
        }],
        checks: vec![check],
    }
}
