//! Fig. 4: worst-case energy of the reactive checkpoint (`persist`), vNV-Heap against
//! copying all RAM: (a) over the dirty limit with 4 KiB of RAM, (b) over the RAM size
//! with a 2 KiB dirty limit.
//!
//! The vNV-Heap side is driven into its worst case (as much dirty data as its limit
//! allows) and then persisted once; the measured cost is shown beside the library's
//! own static bound. This file must never report a bound as a measurement.

use super::{model, Check, Figure, Output};
use crate::baselines::copy_all::CopyAllRam;
use crate::cost::Cost;
use crate::plot::{Kind, Panel, Series};
use crate::table::{num, Table};
use crate::vnv;

/// RAM of panel (a).
pub const RAM_A: usize = 4096;
/// Dirty limits of panel (a).
pub const DIRTY_LIMITS: [usize; 8] = [512, 1024, 1536, 2048, 2560, 3072, 3584, 4096];
/// Dirty limit of panel (b).
pub const DIRTY_B: usize = 2048;
/// RAM sizes of panel (b).
pub const RAM_SIZES: [usize; 7] = [2048, 4096, 6144, 8192, 10240, 12288, 16384];

fn copy_all(ram: usize) -> Cost {
    let mut r = CopyAllRam::new(ram);
    r.ram.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    let before = (r.meter, r.nvm().counts());
    r.persist();
    Cost::between(before, (r.meter, r.nvm().counts()))
}

fn panel(
    panel_a: bool,
    name: &'static str,
    x_label: &str,
    points: &[(usize, usize)],
    over_bound: &mut Vec<String>,
) -> Figure {
    let sizes = vnv::PERSIST_OBJECT_SIZES;
    let mut header: Vec<String> = vec!["ram_bytes".into(), "dirty_limit_bytes".into()];
    header.extend(sizes.iter().map(|s| format!("vnv_{s}b_objects_uj")));
    header.extend(
        [
            "vnv_worst_uj",
            "vnv_worst_object_bytes",
            "vnv_worst_write_bytes",
            "vnv_bound_uj",
            "copy_all_uj",
            "copy_all_write_bytes",
        ]
        .map(String::from),
    );
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new(&header);
    let mut per_size: Vec<Vec<(f64, Option<f64>)>> = vec![Vec::new(); sizes.len()];
    let (mut bound, mut base) = (Vec::new(), Vec::new());
    let m = model();
    for &(ram, dirty) in points {
        let x = if panel_a { dirty } else { ram } as f64;
        let b = copy_all(ram);
        let runs = vnv::persist_worst_case(ram, dirty);
        let mut row = vec![ram.to_string(), dirty.to_string()];
        for (i, r) in runs.iter().enumerate() {
            let uj = r.as_ref().map(|r| r.measured.energy_uj(&m));
            row.push(uj.map_or(String::new(), |u| num(u, 1)));
            per_size[i].push((x, uj));
            if let Some(r) = r {
                let u = r.measured.energy_uj(&m);
                if u > r.bound_uj * (1.0 + 1e-9) {
                    over_bound.push(format!(
                        "RAM {ram} B, dirty limit {dirty} B, {} B objects: measured {u:.1} µJ > bound {:.1} µJ",
                        r.object_bytes, r.bound_uj
                    ));
                }
            }
        }
        let worst = runs
            .iter()
            .flatten()
            .max_by_key(|r| r.measured.time_ns(&m))
            .expect("some object size fits");
        row.extend([
            num(worst.measured.energy_uj(&m), 1),
            worst.object_bytes.to_string(),
            worst.measured.nvm.write_bytes.to_string(),
            num(worst.bound_uj, 1),
            num(b.energy_uj(&m), 1),
            b.nvm.write_bytes.to_string(),
        ]);
        table.push(row);
        bound.push((x, Some(worst.bound_uj)));
        base.push((x, Some(b.energy_uj(&m))));
    }
    let (title, caption) = if panel_a {
        (
            format!("Fig. 4a: persist WCEC over the dirty limit, {RAM_A} B RAM"),
            format!("(a) {RAM_A} B RAM"),
        )
    } else {
        (
            format!("Fig. 4b: persist WCEC over the RAM size, {DIRTY_B} B dirty limit"),
            format!("(b) dirty limit {DIRTY_B} B"),
        )
    };
    let mut series: Vec<Series> = sizes
        .iter()
        .zip(per_size)
        .map(|(s, points)| Series {
            name: format!("vNV-Heap, {s} B objects"),
            points,
        })
        .collect();
    series.push(Series {
        name: "vNV-Heap static bound".into(),
        points: bound,
    });
    series.push(Series {
        name: "copy all RAM".into(),
        points: base,
    });
    Figure {
        name,
        title,
        table,
        panels: vec![Panel {
            title: caption,
            x_label: x_label.into(),
            y_label: "energy of persist [µJ]".into(),
            kind: Kind::Lines { log_y: false },
            series,
        }],
    }
}

/// Runs the benchmark.
pub fn run() -> Output {
    let mut over = Vec::new();
    let a: Vec<(usize, usize)> = DIRTY_LIMITS.iter().map(|&d| (RAM_A, d)).collect();
    let b: Vec<(usize, usize)> = RAM_SIZES.iter().map(|&r| (r, DIRTY_B)).collect();
    let figures = vec![
        panel(
            true,
            "fig4a_persist_dirty",
            "dirty limit [bytes]",
            &a,
            &mut over,
        ),
        panel(
            false,
            "fig4b_persist_ram",
            "RAM size [bytes]",
            &b,
            &mut over,
        ),
    ];
    let checks = vec![Check {
        target: "persist: measured worst case within the library's static bound (not an issue \
                 target, a consistency check)"
            .into(),
        met: over.is_empty(),
        detail: if over.is_empty() {
            format!("all {} configurations", a.len() + b.len())
        } else {
            over.join("; ")
        },
    }];
    Output { figures, checks }
}
