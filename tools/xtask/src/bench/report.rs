//! The report of one `cargo xtask bench` run, in three forms in its output folder
//! (`target/amber/bench/` by default): `report.md` (every figure with its baseline and
//! change, part by part, then the modelled figures of the host tools as they printed
//! them), `report.csv` (the same figures, one row each) and `report.svg` (every
//! figure's change from its baseline, drawn with plotters, the tolerance marked). Each
//! names the commit it measured.
//!
//! This file only formats what it is given; it must never measure or judge.

use super::baseline::{change, Comparison, Verdict, TOLERANCE_PERCENT};
use super::figure::{Figure, Value};
use super::Part;
use plotters::prelude::{
    ChartBuilder, Circle, Color, IntoDrawingArea, IntoSegmentedCoord, PathElement, RGBColor,
    SVGBackend, SegmentValue, BLACK, WHITE,
};
use std::fmt::Write as _;
use std::path::Path;

/// What a report is made of.
pub struct Report<'a> {
    /// `git describe --always --dirty` of the tree measured.
    pub commit: &'a str,
    /// The command line, as the user would type it.
    pub command: &'a str,
    /// The parts that ran, in order.
    pub parts: &'a [Part],
    /// Every figure measured, in the run's order.
    pub figures: &'a [Figure],
    pub comparison: &'a Comparison,
    /// Where the baseline is, as the report names it.
    pub baseline: &'a str,
    /// Text the host tools printed (modelled figures, not in the baseline), by title.
    pub models: &'a [(String, String)],
}

/// Escapes `|` for a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Quotes a CSV field.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// The Markdown report.
pub fn markdown(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Amber bench report\n");
    let _ = writeln!(
        out,
        "Measured on `{}` by `{}`: every figure below is counted by the guest under QEMU \
         `-icount shift=0,sleep=off` and repeats exactly run to run. Baseline: `{}`; a \
         figure more than {TOLERANCE_PERCENT} % above its baseline fails `--check`.\n",
        r.commit, r.command, r.baseline
    );
    let worse = r.comparison.with(r.figures, Verdict::Worse).count();
    let better = r.comparison.with(r.figures, Verdict::Better).count();
    let new = r.comparison.with(r.figures, Verdict::New).count();
    let _ = writeln!(
        out,
        "{} figures: {worse} worse than the baseline, {better} better, {new} not in it, {} \
         in it but not measured.\n",
        r.figures.len(),
        r.comparison.missing.len()
    );
    for part in r.parts {
        let rows: Vec<_> = r
            .figures
            .iter()
            .zip(&r.comparison.rows)
            .filter(|(f, _)| f.part() == part.name())
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "## {} (`{}`)\n", part.title(), part.name());
        let _ = writeln!(out, "| figure | what | value | unit | baseline | change |");
        let _ = writeln!(out, "|---|---|---:|---|---:|---:|");
        for (f, row) in rows {
            let mark = match row.verdict {
                Verdict::Worse => " **worse**",
                Verdict::Better => " better",
                _ => "",
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} | {}{mark} |",
                f.id,
                cell(&f.label),
                Value(f.value),
                f.unit.name(),
                row.baseline
                    .map_or("–".to_owned(), |b| Value(b).to_string()),
                change(f.value, row),
            );
        }
        let _ = writeln!(out);
    }
    if !r.comparison.missing.is_empty() {
        let _ = writeln!(out, "## In the baseline, not measured\n");
        for (id, v) in &r.comparison.missing {
            let _ = writeln!(out, "- `{id}` (baseline {})", Value(*v));
        }
        let _ = writeln!(out);
    }
    for (title, text) in r.models {
        let _ = writeln!(
            out,
            "## {title} (modelled on the host, not in the baseline)\n\n```text\n{}\n```\n",
            text.trim_end()
        );
    }
    out
}

/// The CSV report: one row per figure.
pub fn csv(r: &Report) -> String {
    let mut out = String::from("commit,id,label,value,unit,baseline,change_percent,verdict\n");
    for (f, row) in r.figures.iter().zip(&r.comparison.rows) {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{:?}",
            csv_field(r.commit),
            f.id,
            csv_field(&f.label),
            Value(f.value),
            f.unit.name(),
            row.baseline.map_or(String::new(), |b| Value(b).to_string()),
            row.change_percent(f.value)
                .map_or(String::new(), |p| format!("{p:.2}")),
            row.verdict
        );
    }
    out
}

const GREY: RGBColor = RGBColor(120, 120, 120);
const RED: RGBColor = RGBColor(192, 57, 43);
const GREEN: RGBColor = RGBColor(39, 174, 96);

/// The SVG: one row per figure that has a baseline, its change from it in percent,
/// the tolerance drawn as a red line; worse figures red, better ones green.
pub fn svg(r: &Report) -> Result<String, Box<dyn std::error::Error>> {
    let rows: Vec<(&Figure, f64)> = r
        .figures
        .iter()
        .zip(&r.comparison.rows)
        .filter_map(|(f, row)| {
            let p = match (row.change_percent(f.value), row.baseline) {
                (Some(p), _) => p,
                (None, Some(_)) => 0.0,
                (None, None) => return None,
            };
            Some((f, p))
        })
        .collect();
    let n = rows.len().max(1) as i32;
    // Symmetric, at least twice the tolerance, at most ±100 % (beyond is clipped).
    let reach = rows
        .iter()
        .map(|(_, p)| p.abs())
        .fold(2.0 * TOLERANCE_PERCENT, f64::max)
        .min(100.0)
        * 1.1;
    let mut out = String::new();
    {
        let height = 90 + 14 * n as u32;
        let root = SVGBackend::with_string(&mut out, (1000, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "Amber bench at {}: each figure's change from the baseline (red line: +{TOLERANCE_PERCENT} %, the check's limit)",
                    r.commit
                ),
                ("sans-serif", 14),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(430)
            .build_cartesian_2d(-reach..reach, (0..n).into_segmented())?;
        let label = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => usize::try_from(n - 1 - i)
                .ok()
                .and_then(|k| rows.get(k))
                .map_or(String::new(), |(f, _)| f.id.clone()),
            SegmentValue::Last => String::new(),
        };
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .y_labels(n as usize)
            .y_label_formatter(&label)
            .y_label_style(("monospace", 10))
            .x_desc("change from the baseline, %")
            .disable_y_mesh()
            .draw()?;
        let y = |k: usize| SegmentValue::CenterOf(n - 1 - k as i32);
        chart.draw_series([
            PathElement::new(
                vec![(0.0, SegmentValue::Exact(0)), (0.0, SegmentValue::Last)],
                BLACK.stroke_width(1),
            ),
            PathElement::new(
                vec![
                    (TOLERANCE_PERCENT, SegmentValue::Exact(0)),
                    (TOLERANCE_PERCENT, SegmentValue::Last),
                ],
                RED.stroke_width(1),
            ),
        ])?;
        chart.draw_series(rows.iter().enumerate().map(|(k, (_, p))| {
            let colour = if *p > TOLERANCE_PERCENT {
                RED
            } else if *p < -TOLERANCE_PERCENT {
                GREEN
            } else {
                GREY
            };
            Circle::new((p.clamp(-reach, reach), y(k)), 4, colour.filled())
        }))?;
        root.present()?;
    }
    Ok(out)
}

/// Writes `report.md`, `report.csv` and `report.svg` into `dir`.
pub fn write(r: &Report, dir: &Path) -> Result<(), String> {
    let svg = svg(r).map_err(|e| format!("cannot draw the report: {e}"))?;
    for (name, text) in [
        ("report.md", markdown(r)),
        ("report.csv", csv(r)),
        ("report.svg", svg),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    println!(
        "bench report: {} (also .csv, .svg)",
        dir.join("report.md").display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::baseline::{compare, Baseline};
    use crate::bench::figure::Unit;

    fn fig(id: &str, label: &str, value: f64) -> Figure {
        let path: Vec<&str> = id.split('.').collect();
        Figure::new(&path, label, value, Unit::Instructions).unwrap()
    }

    #[test]
    fn every_figure_is_in_each_form_with_its_baseline_and_the_commit() {
        let figures = [
            fig("syscall.null.mean", "null syscall | mean", 140.0),
            fig("syscall.ipc-round-trip.mean", "round trip, 4 words", 900.0),
            fig("checkpoint.idle.pause", "idle", 3911.0),
            fig("checkpoint.new.pause", "new", 5.0),
        ];
        let base = Baseline::default().updated(
            &["syscall", "checkpoint"],
            &[
                fig("syscall.null.mean", "", 132.0),
                fig("syscall.ipc-round-trip.mean", "", 989.0),
                fig("checkpoint.idle.pause", "", 3911.0),
                fig("checkpoint.gone.pause", "", 1.0),
            ],
            "base",
        );
        let comparison = compare(&base, &["syscall", "checkpoint"], &figures);
        let r = Report {
            commit: "abc1234-dirty",
            command: "cargo xtask bench --fast",
            parts: &[Part::Syscall, Part::Checkpoint],
            figures: &figures,
            comparison: &comparison,
            baseline: "b.toml",
            models: &[("kv".to_owned(), "| a | b |".to_owned())],
        };
        let md = markdown(&r);
        assert!(md.contains("`abc1234-dirty`"), "{md}");
        assert!(md.contains("4 figures: 1 worse than the baseline, 1 better, 1 not in it, 1 in it but not measured"), "{md}");
        assert!(md.contains("| `syscall.null.mean` | null syscall \\| mean | 140 | instructions | 132 | +6.1 % **worse** |"), "{md}");
        assert!(md.contains("| `syscall.ipc-round-trip.mean` | round trip, 4 words | 900 | instructions | 989 | -9.0 % better |"), "{md}");
        assert!(
            md.contains("| `checkpoint.new.pause` | new | 5 | instructions | – | new |"),
            "{md}"
        );
        assert!(
            md.contains("- `checkpoint.gone.pause` (baseline 1)"),
            "{md}"
        );
        assert!(
            md.contains("## kv (modelled on the host, not in the baseline)"),
            "{md}"
        );
        let csv = csv(&r);
        assert_eq!(csv.lines().count(), 1 + 4);
        assert!(csv.contains("abc1234-dirty,syscall.ipc-round-trip.mean,\"round trip, 4 words\",900,instructions,989,-9.00,Better"), "{csv}");
        let svg = svg(&r).unwrap();
        // A point per figure with a baseline (three of the four), each named.
        assert_eq!(svg.matches("<circle").count(), 3, "{svg}");
        for id in [
            "syscall.null.mean",
            "syscall.ipc-round-trip.mean",
            "checkpoint.idle.pause",
        ] {
            assert!(svg.contains(&format!(">\n{id}\n<")), "{id} in {svg}");
        }
        assert!(!svg.contains("checkpoint.new.pause"));
        assert!(svg.contains("abc1234-dirty"));
    }
}
