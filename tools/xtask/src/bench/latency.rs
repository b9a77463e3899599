//! The latency view of `cargo xtask bench`: reads the per-call samples the guest
//! prints (`samples NAME TOTAL: v*k v …`, run-length encoded in call order by
//! `amber_user::sample`), sums each series up (min, median, p99, max: nearest-rank
//! percentiles, each a figure of the bench) and draws their distributions with
//! plotters: a panel per series with its empirical CDF and the four figures marked.
//! It reads and draws; it must never judge a figure (that is the baseline's check).

use super::figure::{Figure, Unit};
use plotters::coord::Shift;
use plotters::prelude::{
    ChartBuilder, Color, DrawingArea, DrawingBackend, IntoDrawingArea, IntoFont, LineSeries,
    PathElement, SVGBackend, Text, TextStyle, BLUE, RED, WHITE,
};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// The samples of series `name` from the guest's lines, in call order. Fails unless
/// the lines add up to exactly the total they declare.
pub fn samples(lines: &[String], name: &str) -> Result<Vec<u32>, String> {
    let head = format!("samples {name} ");
    let mut total = None;
    let mut out = Vec::new();
    for line in lines {
        let Some((_, rest)) = line.split_once(&head) else {
            continue;
        };
        let bad = || format!("a samples line of `{name}` the bench cannot read: {line}");
        let (declared, runs) = rest.split_once(':').ok_or_else(bad)?;
        let declared: usize = declared.parse().map_err(|_| bad())?;
        if *total.get_or_insert(declared) != declared {
            return Err(bad());
        }
        for run in runs.split_whitespace() {
            let (v, k) = run.split_once('*').unwrap_or((run, "1"));
            let (v, k): (u32, usize) =
                (v.parse().map_err(|_| bad())?, k.parse().map_err(|_| bad())?);
            out.extend(std::iter::repeat_n(v, k));
        }
    }
    match total {
        None => Err(format!("the guest printed no samples of `{name}`")),
        Some(t) if t != out.len() || t == 0 => Err(format!(
            "the samples of `{name}` add up to {} calls, not the {t} declared (a call failed?)",
            out.len()
        )),
        Some(_) => Ok(out),
    }
}

/// The figures of one series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub min: u32,
    pub median: u32,
    pub p99: u32,
    pub max: u32,
    pub mean: f64,
}

/// The nearest-rank `p`-th percentile of `sorted` (not empty): the smallest value
/// with at least `p` % of the samples at or below it.
pub fn percentile(sorted: &[u32], p: f64) -> u32 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The figures of `samples` (not empty).
pub fn summary(samples: &[u32]) -> Summary {
    let mut s = samples.to_vec();
    s.sort_unstable();
    Summary {
        n: s.len(),
        min: s[0],
        median: percentile(&s, 50.0),
        p99: percentile(&s, 99.0),
        max: s[s.len() - 1],
        mean: s.iter().map(|&v| f64::from(v)).sum::<f64>() / s.len() as f64,
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "min {}, median {}, p99 {}, max {}, mean {:.1} instructions ({} samples)",
            self.min, self.median, self.p99, self.max, self.mean, self.n
        )
    }
}

/// A series the bench draws: the guest's sample name, the figure id it gives (its
/// `ID.min`, `.median`, `.p99` and `.max` are figures; `ID.mean` is the guest's own
/// mean over its measuring loop, read from its figure line) and its label.
pub struct Series {
    pub name: &'static str,
    pub id: &'static [&'static str],
    pub label: &'static str,
}

/// The bench app's series (the `syscall` part).
pub const SYSCALL_SERIES: [Series; 4] = [
    Series {
        name: "null",
        id: &["syscall", "null"],
        label: "null syscall",
    },
    Series {
        name: "ipc",
        id: &["syscall", "ipc-round-trip"],
        label: "IPC round trip (Call + ReplyRecv, 4 words)",
    },
    Series {
        name: "ipc64",
        id: &["syscall", "ipc-64b-descriptors"],
        label: "IPC round trip with 64 B each way (descriptors)",
    },
    Series {
        name: "ipc64buf",
        id: &["syscall", "ipc-64b-buffers"],
        label: "IPC round trip with 64 B each way (IPC buffers)",
    },
];

/// The heap benchmark's series (the `heap` part, app heapbench).
pub const HEAP_SERIES: [Series; 1] = [Series {
    name: "get_ref",
    id: &["heap", "heapbench", "get-ref-4-b-resident"],
    label: "heap service get_ref, 4 B, object resident",
}];

/// A series to draw: its label and its samples in call order.
pub type Drawn = (&'static str, Vec<u32>);

/// The samples of each of `series` from the guest's `lines`, and their figures
/// (`ID.min`, `.median`, `.p99`, `.max`). Fails when a series is missing or
/// incomplete.
pub fn read(lines: &[String], series: &[Series]) -> Result<(Vec<Figure>, Vec<Drawn>), String> {
    let mut figures = Vec::new();
    let mut drawn = Vec::new();
    for s in series {
        let values = samples(lines, s.name)?;
        let sum = summary(&values);
        println!("{}: {sum}", s.label);
        for (measure, v) in [
            ("min", sum.min),
            ("median", sum.median),
            ("p99", sum.p99),
            ("max", sum.max),
        ] {
            figures.push(Figure::new(
                &[s.id, &[measure]].concat(),
                format!(
                    "{}: {measure} of {} calls, each counted alone",
                    s.label, sum.n
                ),
                f64::from(v),
                Unit::Instructions,
            )?);
        }
        drawn.push((s.label, values));
    }
    Ok((figures, drawn))
}

type PlotError = Box<dyn std::error::Error>;

/// The SVG: one panel per `(label, samples)` (none empty), each with the empirical
/// CDF of its samples (x: instructions, from min to max; y: share of calls at or
/// below) and min, median, p99 and max marked and labelled (figures that coincide
/// share one mark).
pub fn svg(title: &str, series: &[(&str, &[u32])]) -> Result<String, PlotError> {
    let mut out = String::new();
    {
        let height = 40 + 200 * series.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut out, (800, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 16))?;
        let panels = root.split_evenly((series.len().max(1), 1));
        for (area, (label, samples)) in panels.iter().zip(series) {
            panel(area, label, samples)?;
        }
        root.present()?;
    }
    Ok(out)
}

/// One series' panel.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    label: &str,
    samples: &[u32],
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let s = summary(samples);
    // The x range: min to max, widened to one instruction either side when every
    // call cost the same.
    let (lo, hi) = if s.min == s.max {
        (f64::from(s.min) - 1.0, f64::from(s.max) + 1.0)
    } else {
        (f64::from(s.min), f64::from(s.max))
    };
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{label}: {s}"), ("sans-serif", 13))
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(40)
        .build_cartesian_2d(lo..hi, 0.0..1.0)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        // Whole instructions only: no more labels than the range has of them.
        .x_labels(((hi - lo) as usize + 1).min(5))
        .y_labels(3)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .x_desc("instructions")
        .draw()?;
    // The CDF as steps: after the j-th smallest sample, (j + 1) / n of the calls.
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let n = sorted.len() as f64;
    let mut points = vec![(lo, 0.0)];
    for (j, &v) in sorted.iter().enumerate() {
        if sorted.get(j + 1) != Some(&v) {
            let before = (j as f64 + 1.0 - count_of(&sorted, v)) / n;
            points.push((f64::from(v), before));
            points.push((f64::from(v), (j as f64 + 1.0) / n));
        }
    }
    points.push((hi, 1.0));
    chart.draw_series(LineSeries::new(points, BLUE.stroke_width(2)))?;
    // The marks, coinciding figures merged, labels staggered so they do not overlap.
    let mut marks: Vec<(u32, Vec<&str>)> = Vec::new();
    for (name, v) in [
        ("min", s.min),
        ("median", s.median),
        ("p99", s.p99),
        ("max", s.max),
    ] {
        match marks.iter_mut().find(|(m, _)| *m == v) {
            Some((_, names)) => names.push(name),
            None => marks.push((v, vec![name])),
        }
    }
    for (k, (v, names)) in marks.iter().enumerate() {
        let x = f64::from(*v);
        chart.draw_series([PathElement::new(vec![(x, 0.0), (x, 1.0)], RED)])?;
        let at = (x, 0.92 - 0.12 * k as f64);
        let text = format!("{} {v}", names.join(" = "));
        let right = (x - lo) / (hi - lo) > 0.7;
        let style = TextStyle::from(("sans-serif", 11).into_font()).color(&RED);
        let style = if right {
            style.pos(Pos::new(HPos::Right, VPos::Center))
        } else {
            style.pos(Pos::new(HPos::Left, VPos::Center))
        };
        chart.draw_series([Text::new(text, at, style)])?;
    }
    Ok(())
}

/// Writes the SVG of `series` to `path`.
pub fn draw(series: &[(&str, Vec<u32>)], path: &Path) -> Result<(), String> {
    let refs: Vec<(&str, &[u32])> = series.iter().map(|(l, s)| (*l, s.as_slice())).collect();
    let doc = svg(
        "Amber: instructions per call under QEMU -icount (CDF of each series)",
        &refs,
    )
    .map_err(|e| format!("cannot draw the latency distributions: {e}"))?;
    std::fs::write(path, doc).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("latency distributions drawn in {}", path.display());
    Ok(())
}

/// How many of `sorted` equal `v`.
fn count_of(sorted: &[u32], v: u32) -> f64 {
    let lo = sorted.partition_point(|&s| s < v);
    let hi = sorted.partition_point(|&s| s <= v);
    (hi - lo) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn samples_are_read_back_in_call_order_across_lines() {
        let lines = owned(&[
            "[   0.010 INFO ] [bench] samples null 6: 462*3 1203",
            "[   0.010 INFO ] [bench] samples ipc 1: 2272",
            "[   0.010 INFO ] [bench] samples null 6: 470 462",
        ]);
        assert_eq!(
            samples(&lines, "null").unwrap(),
            [462, 462, 462, 1203, 470, 462]
        );
        assert_eq!(samples(&lines, "ipc").unwrap(), [2272]);
    }

    #[test]
    fn a_series_cut_short_or_missing_or_garbled_fails() {
        let short = owned(&["[bench] samples null 1000: 462*999"]);
        assert!(samples(&short, "null")
            .unwrap_err()
            .contains("999 calls, not the 1000"));
        assert!(samples(&short, "ipc")
            .unwrap_err()
            .contains("no samples of `ipc`"));
        let garbled = owned(&["[bench] samples null 2: 462*x"]);
        assert!(samples(&garbled, "null")
            .unwrap_err()
            .contains("cannot read"));
        let two_totals = owned(&["[bench] samples null 2: 1", "[bench] samples null 3: 1"]);
        assert!(samples(&two_totals, "null").is_err());
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        // 1..=100: the p-th percentile is p itself.
        let s: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&s, 50.0), 50);
        assert_eq!(percentile(&s, 99.0), 99);
        assert_eq!(percentile(&s, 100.0), 100);
        assert_eq!(percentile(&s, 0.0), 1);
        // 990 calls of 462 and 10 outliers: p99 is still 462, max the largest.
        let mut v = vec![462u32; 990];
        v.extend((0..10).map(|i| 1200 + i));
        let sum = summary(&v);
        assert_eq!(
            (sum.min, sum.median, sum.p99, sum.max),
            (462, 462, 462, 1209)
        );
        // One more outlier and p99 moves onto them.
        v[0] = 5000;
        assert_eq!(summary(&v).p99, 1200);
        assert_eq!(summary(&[7]).median, 7);
        assert!((summary(&[1, 2, 3, 6]).mean - 3.0).abs() < 1e-9);
    }

    #[test]
    fn each_series_gives_its_four_figures() {
        let lines = owned(&["[bench] samples null 4: 133*3 140"]);
        let series = [Series {
            name: "null",
            id: &["syscall", "null"],
            label: "null syscall",
        }];
        let (figures, drawn) = read(&lines, &series).unwrap();
        let got: Vec<(&str, f64)> = figures.iter().map(|f| (f.id.as_str(), f.value)).collect();
        assert_eq!(
            got,
            [
                ("syscall.null.min", 133.0),
                ("syscall.null.median", 133.0),
                ("syscall.null.p99", 140.0),
                ("syscall.null.max", 140.0)
            ]
        );
        assert_eq!(drawn, [("null syscall", vec![133, 133, 133, 140])]);
    }

    #[test]
    fn the_svg_has_one_curve_and_its_marks_per_series() {
        let a: Vec<u32> = (0..1000)
            .map(|i| 462 + u32::from(i % 100 == 0) * 700)
            .collect();
        let b = vec![2272u32; 1000];
        let c: Vec<u32> = (0..1000).map(|i| 13_000 + i).collect();
        let doc = svg("t", &[("null syscall", &a), ("IPC", &b), ("get_ref", &c)]).unwrap();
        assert!(doc.starts_with("<svg") && doc.trim_end().ends_with("</svg>"));
        // a: min = median = p99 462 and max 1162 (two marks); b: all four coincide
        // (one); c: four distinct values.
        for label in [
            "min = median = p99 462",
            "max 1162",
            "min = median = p99 = max 2272",
            "median 13499",
            "p99 13989",
            "min 13000",
        ] {
            let text = format!(">\n{label}\n</text>");
            assert_eq!(doc.matches(&text).count(), 1, "{label} in {doc}");
        }
        assert!(doc.contains("null syscall: min 462, median 462, p99 462, max 1162"));
        // One CDF (blue, 2 px) per series, one red line per mark.
        assert_eq!(
            doc.matches(r##"stroke="#0000FF" stroke-width="2""##)
                .count(),
            3
        );
        assert_eq!(
            doc.matches(r##"stroke="#FF0000" stroke-width="1" points"##)
                .count(),
            2 + 1 + 4
        );
    }
}
