//! Fig. 2: latency of reference retrieval (best, bad and worst case) for 32 to 1024-byte
//! objects, vNV-Heap against module swapping, both with 1 KiB of RAM.
//!
//! Best: the object is resident. Bad: it is not, and loading it evicts nothing dirty.
//! Worst: loading it first writes back a dirty object (module) as large as the RAM.
//! This file only sets up those states and measures one retrieval; it must never
//! count the set-up in the measurement.

use super::{us, Figure, Output};
use crate::baselines::module_swap::ModuleSwap;
use crate::cost::Cost;
use crate::plot::{Kind, Panel, Series};
use crate::table::{num, Table};
use crate::vnv::{self, RefCase};

/// Object sizes of the paper's Fig. 2.
pub const SIZES: [usize; 4] = [32, 128, 512, 1024];
/// RAM of both systems: the largest object, the limit for resident and modified data.
pub const RAM: usize = 1024;

/// One retrieval from the module baseline in `case`.
fn module_retrieval(case: RefCase) -> Cost {
    let mut m = ModuleSwap::new(2, RAM);
    match case {
        RefCase::Best => {
            m.get(0);
        }
        RefCase::Bad => {
            m.get(1);
        }
        RefCase::Worst => {
            m.get_mut(1);
        }
    }
    let before = (m.meter, m.nvm().counts());
    m.get(0);
    Cost::between(before, (m.meter, m.nvm().counts()))
}

/// Runs the benchmark.
pub fn run() -> Output {
    let mut table = Table::new(&[
        "case",
        "object_bytes",
        "vnv_heap_us",
        "module_swap_us",
        "vnv_nvm_read_bytes",
        "vnv_nvm_write_bytes",
        "module_nvm_read_bytes",
        "module_nvm_write_bytes",
    ]);
    let mut panels = Vec::new();
    for case in [RefCase::Best, RefCase::Bad, RefCase::Worst] {
        let module = module_retrieval(case);
        let mut heap_series = Vec::new();
        let mut module_series = Vec::new();
        for size in SIZES {
            let heap = vnv::reference_retrieval(size, RAM, case);
            // Sanity check of the baseline, not of the heap: nothing touches the
            // device in the best case.
            debug_assert!(case != RefCase::Best || module.nvm.read_bytes == 0);
            table.push(vec![
                case.name().into(),
                size.to_string(),
                num(us(&heap), 2),
                num(us(&module), 2),
                heap.nvm.read_bytes.to_string(),
                heap.nvm.write_bytes.to_string(),
                module.nvm.read_bytes.to_string(),
                module.nvm.write_bytes.to_string(),
            ]);
            heap_series.push((0.0, Some(us(&heap))));
            module_series.push((0.0, Some(us(&module))));
        }
        panels.push(Panel {
            title: format!("{} case", case.name()),
            x_label: "object size [bytes]".into(),
            y_label: "latency [µs]".into(),
            kind: Kind::Bars {
                categories: SIZES.iter().map(|s| s.to_string()).collect(),
            },
            series: vec![
                Series {
                    name: "vNV-Heap".into(),
                    points: heap_series,
                },
                Series {
                    name: "module swapping".into(),
                    points: module_series,
                },
            ],
        });
    }
    Output {
        figures: vec![Figure {
            name: "fig2_reference",
            title: "Fig. 2: reference retrieval latency, vNV-Heap vs module swapping (1 KiB RAM)"
                .into(),
            table,
            panels,
        }],
        checks: Vec::new(),
    }
}
