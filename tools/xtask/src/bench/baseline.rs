//! The bench baseline: the exact figures of the last accepted run, in one committed
//! TOML file (`tools/xtask/bench-baseline.toml`, [`super::BASELINE`]), and the check
//! of a run against it.
//!
//! The file holds one number per figure id (`[syscall.null] mean = 132` is the figure
//! `syscall.null.mean`; units in the report), sorted by id so that its diffs read
//! figure by figure. `cargo xtask bench --save-baseline` writes it; nobody edits it by
//! hand. The check fails naming every figure more than [`TOLERANCE_PERCENT`] above its
//! baseline, and every baseline figure of a part that ran but no longer printed it;
//! figures lower than the baseline by more than the tolerance pass, and are listed so
//! that the baseline can be saved to guard them. Every figure is a cost, so lower is
//! always better. This file compares; it must never measure or round a figure.

use super::figure::{part_of, Figure, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// How much worse than its baseline a figure may be before the check fails, in
/// percent of the baseline. Under `-icount` the figures repeat exactly run to run, so
/// the tolerance is not for noise: it lets a change move a hot path by a few
/// instructions (the compiler lays code out anew) without a new baseline, and catches
/// anything larger.
pub const TOLERANCE_PERCENT: f64 = 3.0;

/// The figures of a baseline by id, and the commit they were measured on.
#[derive(Debug, Default, PartialEq)]
pub struct Baseline {
    pub figures: BTreeMap<String, f64>,
    pub measured_on: Option<String>,
}

/// Flattens `table` into `out`, the keys of nested tables joined with dots.
fn flatten(
    prefix: &str,
    table: &toml::Table,
    out: &mut BTreeMap<String, f64>,
) -> Result<(), String> {
    for (key, value) in table {
        let id = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(t) => flatten(&id, t, out)?,
            toml::Value::Integer(i) => {
                out.insert(id, *i as f64);
            }
            toml::Value::Float(f) => {
                out.insert(id, *f);
            }
            other => {
                return Err(format!(
                    "`{id}` is {other}, not a number (the baseline holds only figures)"
                ))
            }
        }
    }
    Ok(())
}

impl Baseline {
    /// Reads a baseline's text.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let table: toml::Table = text.parse().map_err(|e| format!("{e}"))?;
        let mut figures = BTreeMap::new();
        flatten("", &table, &mut figures)?;
        let measured_on = text
            .lines()
            .find_map(|l| l.strip_prefix("# measured on: "))
            .map(str::to_owned);
        Ok(Baseline {
            figures,
            measured_on,
        })
    }

    /// Reads the baseline at `path`.
    pub fn load(path: &Path) -> Result<Baseline, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the bench baseline {}: {e}", path.display()))?;
        Baseline::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// This baseline with the figures of `parts` replaced by `figures` (the parts that
    /// ran; the others keep theirs), as measured on `commit`.
    pub fn updated(&self, parts: &[&str], figures: &[Figure], commit: &str) -> Baseline {
        let mut out: BTreeMap<String, f64> = self
            .figures
            .iter()
            .filter(|(id, _)| !parts.contains(&part_of(id)))
            .map(|(id, v)| (id.clone(), *v))
            .collect();
        out.extend(figures.iter().map(|f| (f.id.clone(), f.value)));
        Baseline {
            figures: out,
            measured_on: Some(commit.to_owned()),
        }
    }

    /// The file's text: a header, then one table per figure id without its last
    /// component, tables and keys in order.
    pub fn render(&self) -> String {
        let mut out = format!(
            "# Amber's bench baseline: the exact figures (instructions retired under QEMU\n\
             # -icount, and bytes or words written) of the last accepted `cargo xtask bench`.\n\
             # Written by `cargo xtask bench --save-baseline`; never edit it by hand.\n\
             # `cargo xtask bench --check` (and `cargo xtask test`, for the syscall and\n\
             # checkpoint parts) fails on a figure more than {TOLERANCE_PERCENT} % above its value here.\n\
             # What each figure is: target/amber/bench/report.md after `cargo xtask bench`;\n\
             # how they are counted: the doc comment of tools/xtask/src/bench/mod.rs.\n"
        );
        if let Some(commit) = &self.measured_on {
            let _ = writeln!(out, "# measured on: {commit}");
        }
        let mut tables: BTreeMap<&str, Vec<(&str, f64)>> = BTreeMap::new();
        for (id, value) in &self.figures {
            let (table, key) = id.rsplit_once('.').unwrap_or(("", id));
            tables.entry(table).or_default().push((key, *value));
        }
        for (table, keys) in tables {
            let _ = write!(out, "\n[{table}]\n");
            for (key, value) in keys {
                let _ = writeln!(out, "{key} = {}", Value(value));
            }
        }
        out
    }
}

/// How one figure compares with its baseline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// More than the tolerance above the baseline: the check fails.
    Worse,
    /// More than the tolerance below it: the check passes; saving the baseline
    /// would guard the new figure.
    Better,
    /// Within the tolerance either way.
    Within,
    /// Not in the baseline.
    New,
}

/// The baseline of one measured figure and its verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub baseline: Option<f64>,
    pub verdict: Verdict,
}

impl Row {
    /// The change from the baseline, in percent (`None` without one, or from 0).
    pub fn change_percent(&self, value: f64) -> Option<f64> {
        let b = self.baseline?;
        (b != 0.0).then(|| (value - b) / b * 100.0)
    }
}

/// The verdict on `value` against `baseline`.
pub fn judge(value: f64, baseline: Option<f64>) -> Verdict {
    let Some(b) = baseline else {
        return Verdict::New;
    };
    let limit = TOLERANCE_PERCENT / 100.0 * b.abs();
    if value > b + limit {
        Verdict::Worse
    } else if value < b - limit {
        Verdict::Better
    } else {
        Verdict::Within
    }
}

/// A run against a baseline.
#[derive(Debug)]
pub struct Comparison {
    /// One row per measured figure, in the run's order.
    pub rows: Vec<Row>,
    /// Baseline figures of the parts that ran which the run did not print.
    pub missing: Vec<(String, f64)>,
}

/// Compares `figures`, measured by `parts`, with `baseline`.
pub fn compare(baseline: &Baseline, parts: &[&str], figures: &[Figure]) -> Comparison {
    let rows = figures
        .iter()
        .map(|f| {
            let b = baseline.figures.get(&f.id).copied();
            Row {
                baseline: b,
                verdict: judge(f.value, b),
            }
        })
        .collect();
    let missing = baseline
        .figures
        .iter()
        .filter(|(id, _)| parts.contains(&part_of(id)) && !figures.iter().any(|f| &f.id == *id))
        .map(|(id, v)| (id.clone(), *v))
        .collect();
    Comparison { rows, missing }
}

impl Comparison {
    /// The figures with verdict `v`, with their rows.
    pub fn with<'a>(
        &'a self,
        figures: &'a [Figure],
        v: Verdict,
    ) -> impl Iterator<Item = (&'a Figure, &'a Row)> + 'a {
        figures
            .iter()
            .zip(&self.rows)
            .filter(move |(_, r)| r.verdict == v)
    }

    /// The check's verdict: `Err` naming every figure that got worse and every one
    /// no longer measured.
    pub fn check(&self, figures: &[Figure], baseline_path: &str) -> Result<(), String> {
        let mut problems = Vec::new();
        for (f, r) in self.with(figures, Verdict::Worse) {
            problems.push(format!(
                "{} = {} {}, baseline {} ({}): {}",
                f.id,
                Value(f.value),
                f.unit.name(),
                Value(r.baseline.unwrap_or(0.0)),
                change(f.value, r),
                f.label
            ));
        }
        for (id, v) in &self.missing {
            problems.push(format!(
                "{id} (baseline {}) was not measured: the benchmark no longer prints it",
                Value(*v)
            ));
        }
        if problems.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{} figure(s) worse than the baseline {baseline_path} by more than {TOLERANCE_PERCENT} %, or gone:\n  {}\n\
             If the change is meant, run `cargo xtask bench --save-baseline` and commit the \
             baseline with the change that moved it.",
            problems.len(),
            problems.join("\n  ")
        ))
    }
}

/// The change of `value` from its row's baseline, in words.
pub fn change(value: f64, row: &Row) -> String {
    match (row.change_percent(value), row.baseline) {
        (Some(p), _) => format!("{p:+.1} %"),
        (None, Some(_)) if value == 0.0 => "±0".to_owned(),
        (None, Some(_)) => "from 0".to_owned(),
        (None, None) => "new".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::figure::Unit;

    fn fig(id: &str, value: f64) -> Figure {
        let path: Vec<&str> = id.split('.').collect();
        Figure::new(&path, id, value, Unit::Instructions).unwrap()
    }

    #[test]
    fn a_baseline_reads_back_what_it_wrote() {
        let b = Baseline::default().updated(
            &["syscall", "heap"],
            &[
                fig("syscall.null.mean", 132.0),
                fig("syscall.ipc-round-trip.mean", 989.0),
                fig("heap.heapbench.fram-words-per-checkpoint.mean", 699.4),
                fig(
                    "heap.heapbench.fram-words-per-checkpoint.write-back-mean",
                    0.0,
                ),
            ],
            "abc1234",
        );
        let text = b.render();
        assert!(text.contains("\n[syscall.null]\nmean = 132\n"), "{text}");
        assert!(text.contains("mean = 699.4\n"), "{text}");
        assert_eq!(Baseline::parse(&text).unwrap(), b);
    }

    #[test]
    fn saving_replaces_the_parts_that_ran_and_keeps_the_others() {
        let old = Baseline::default().updated(
            &["syscall", "kv"],
            &[
                fig("syscall.null.mean", 140.0),
                fig("syscall.gone.mean", 1.0),
                fig("kv.a.b.instructions", 5.0),
            ],
            "old",
        );
        let new = old.updated(&["syscall"], &[fig("syscall.null.mean", 132.0)], "new");
        let ids: Vec<(&str, f64)> = new.figures.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            ids,
            [("kv.a.b.instructions", 5.0), ("syscall.null.mean", 132.0)]
        );
        assert_eq!(new.measured_on.as_deref(), Some("new"));
    }

    #[test]
    fn worse_means_more_than_three_percent_above_and_better_passes() {
        assert_eq!(judge(103.0, Some(100.0)), Verdict::Within);
        assert_eq!(judge(103.1, Some(100.0)), Verdict::Worse);
        assert_eq!(judge(97.0, Some(100.0)), Verdict::Within);
        assert_eq!(judge(96.9, Some(100.0)), Verdict::Better);
        assert_eq!(judge(1.0, Some(0.0)), Verdict::Worse);
        assert_eq!(judge(0.0, Some(0.0)), Verdict::Within);
        assert_eq!(judge(5.0, None), Verdict::New);
    }

    #[test]
    fn the_check_names_every_worse_figure_and_every_one_gone() {
        let base = Baseline::default().updated(
            &["syscall", "checkpoint", "kv"],
            &[
                fig("syscall.null.mean", 120.0),
                fig("syscall.ipc-round-trip.mean", 1200.0),
                fig("syscall.removed.mean", 5.0),
                fig("checkpoint.idle.pause", 3000.0),
                fig("kv.a.b.instructions", 1.0),
            ],
            "x",
        );
        let run = [
            fig("syscall.null.mean", 132.0),
            fig("syscall.ipc-round-trip.mean", 989.0),
            fig("syscall.new.mean", 7.0),
            fig("checkpoint.idle.pause", 3911.0),
        ];
        // kv did not run: its figure is neither missing nor compared.
        let c = compare(&base, &["syscall", "checkpoint"], &run);
        let e = c.check(&run, "b.toml").unwrap_err();
        assert!(e.starts_with("3 figure(s) worse"), "{e}");
        assert!(
            e.contains("syscall.null.mean = 132 instructions, baseline 120 (+10.0 %)"),
            "{e}"
        );
        assert!(
            e.contains("checkpoint.idle.pause = 3911 instructions, baseline 3000 (+30.4 %)"),
            "{e}"
        );
        assert!(
            e.contains("syscall.removed.mean (baseline 5) was not measured"),
            "{e}"
        );
        assert!(
            !e.contains("ipc-round-trip") && !e.contains("kv.a.b"),
            "{e}"
        );
        let better: Vec<&str> = c
            .with(&run, Verdict::Better)
            .map(|(f, _)| f.id.as_str())
            .collect();
        assert_eq!(better, ["syscall.ipc-round-trip.mean"]);
        let new: Vec<&str> = c
            .with(&run, Verdict::New)
            .map(|(f, _)| f.id.as_str())
            .collect();
        assert_eq!(new, ["syscall.new.mean"]);
        // Against a baseline of the run itself, the check passes.
        let same = Baseline::default().updated(&["syscall", "checkpoint"], &run, "y");
        assert!(compare(&same, &["syscall", "checkpoint"], &run)
            .check(&run, "b.toml")
            .is_ok());
    }

    #[test]
    fn a_baseline_holds_only_numbers() {
        assert!(Baseline::parse("[syscall.null]\nmean = \"fast\"\n")
            .unwrap_err()
            .contains("not a number"));
        assert!(Baseline::parse("[syscall.null\n").is_err());
    }
}
