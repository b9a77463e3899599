//! The latency view of `cargo xtask bench`: reads the figure lines of the bench app
//! (every one must carry its number, "N instructions", so a benchmark that could not
//! measure fails the bench instead of printing nothing quietly) and the per-call
//! samples the guest prints (`samples NAME TOTAL: v*k v …`, run-length encoded in
//! call order by `amber_user::sample`), sums each series up (min, median, p99, max,
//! nearest-rank percentiles) and draws their distributions as one hand-written SVG:
//! a panel per series with its empirical CDF and the four figures marked. It reads,
//! reports and draws; it must never judge a figure against a target.

use std::fmt::Write;

/// The number a figure line carries: the integer right before " instructions".
pub fn figure(line: &str) -> Option<u64> {
    let (before, _) = line.split_once(" instructions")?;
    before.rsplit(' ').next()?.parse().ok()
}

/// Fails naming the first line that carries no figure.
pub fn require_figures(lines: &[String]) -> Result<(), String> {
    match lines.iter().find(|l| figure(l).is_none()) {
        Some(l) => Err(format!("a benchmark printed no figure: {}", l.trim_end())),
        None => Ok(()),
    }
}

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

const WIDTH: f64 = 760.0;
const PANEL: f64 = 190.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 46.0;
const PLOT: f64 = 110.0;

/// Escapes text for SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The SVG: one panel per `(label, samples)` (none empty), each with the empirical
/// CDF of its samples (x: instructions, linear from min to max; y: share of calls at
/// or below) and min, median, p99 and max marked and labelled (figures that coincide
/// share one mark).
pub fn svg(title: &str, series: &[(&str, &[u32])]) -> String {
    let height = TOP + PANEL * series.len() as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="22" font-size="14" font-weight="bold">{}</text>"#,
        esc(title)
    );
    let w = WIDTH - LEFT - RIGHT;
    for (i, (label, samples)) in series.iter().enumerate() {
        let s = summary(samples);
        let top = TOP + PANEL * i as f64 + 28.0;
        let bottom = top + PLOT;
        // The x range: min to max, widened to one instruction either side when every
        // call cost the same.
        let (lo, hi) = if s.min == s.max {
            (f64::from(s.min) - 1.0, f64::from(s.max) + 1.0)
        } else {
            (f64::from(s.min), f64::from(s.max))
        };
        let x = |v: f64| LEFT + (v - lo) / (hi - lo) * w;
        let y = |share: f64| bottom - share * PLOT;
        let _ = writeln!(
            out,
            r#"<text x="{LEFT}" y="{}" font-size="12" font-weight="bold">{}</text>"#,
            top - 14.0,
            esc(&format!("{label}: {s}"))
        );
        let _ = writeln!(
            out,
            r##"<rect x="{LEFT}" y="{top}" width="{w}" height="{PLOT}" fill="none" stroke="#999"/>"##
        );
        for share in [0.0, 0.5, 1.0] {
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" text-anchor="end">{share}</text>"#,
                LEFT - 6.0,
                y(share) + 4.0
            );
        }
        // Five ticks across the range, each at a whole number of instructions (fewer
        // when the range is that narrow).
        let mut ticks: Vec<f64> = (0..=4)
            .map(|k| (lo + (hi - lo) * f64::from(k) / 4.0).round())
            .collect();
        ticks.dedup();
        for v in ticks {
            let _ = writeln!(
                out,
                r#"<text class="tick" x="{:.1}" y="{}" text-anchor="middle">{v}</text>"#,
                x(v),
                bottom + 14.0,
            );
        }
        // The CDF as steps: after the j-th smallest sample, (j + 1) / n of the calls.
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let n = sorted.len() as f64;
        let mut d = format!("M{:.1},{:.1}", x(lo), y(0.0));
        for (j, &v) in sorted.iter().enumerate() {
            let last_of_value = sorted.get(j + 1) != Some(&v);
            if last_of_value {
                let (px, before) = (x(f64::from(v)), j as f64 + 1.0 - count_of(&sorted, v));
                let _ = write!(
                    d,
                    " L{px:.1},{:.1} L{px:.1},{:.1}",
                    y(before / n),
                    y((j as f64 + 1.0) / n)
                );
            }
        }
        let _ = write!(d, " L{:.1},{:.1}", x(hi), y(1.0));
        let _ = writeln!(
            out,
            r##"<path class="cdf" d="{d}" fill="none" stroke="#1f5fa8" stroke-width="2"/>"##
        );
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
            let px = x(f64::from(*v));
            let anchor = if px > LEFT + w * 0.7 { "end" } else { "start" };
            let dx = if anchor == "end" { -4.0 } else { 4.0 };
            let _ = writeln!(
                out,
                r##"<line class="mark" x1="{px:.1}" y1="{top}" x2="{px:.1}" y2="{bottom}" stroke="#c0392b" stroke-dasharray="4 3"/>"##
            );
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{}" text-anchor="{anchor}" fill="#c0392b">{} {v}</text>"##,
                px + dx,
                top + 14.0 + 13.0 * k as f64,
                names.join(" = ")
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

/// The series `cargo xtask bench` draws: the guest's sample name and its label.
const SERIES: [(&str, &str); 5] = [
    ("null", "null syscall"),
    ("ipc", "IPC round trip (Call + ReplyRecv, 4 words)"),
    ("ipc64", "IPC round trip with 64 B each way (descriptors)"),
    (
        "ipc64buf",
        "IPC round trip with 64 B each way (IPC buffers)",
    ),
    ("get_ref", "heap service get_ref, 4 B, object resident"),
];

/// Prints each series' figures and writes their SVG to `path`. Fails when a series is
/// missing or incomplete.
pub fn report(lines: &[String], path: &std::path::Path) -> Result<(), String> {
    println!("== latency distributions (per-call samples of the above, -icount) ==");
    let mut series = Vec::new();
    for (name, label) in SERIES {
        let s = samples(lines, name)?;
        println!("{label}: {}", summary(&s));
        series.push((label, s));
    }
    let refs: Vec<(&str, &[u32])> = series.iter().map(|(l, s)| (*l, s.as_slice())).collect();
    let doc = svg(
        "Amber: instructions per call under QEMU -icount (CDF of each series)",
        &refs,
    );
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
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

    #[test]
    fn a_figure_is_the_number_before_instructions() {
        assert_eq!(
            figure("[bench] bench: null syscall 462 instructions (mean of 1000)"),
            Some(462)
        );
        assert_eq!(
            figure("[bench] bench: IPC round trip with 64 B each way 3100 instructions (…)"),
            Some(3100)
        );
    }

    #[test]
    fn a_line_without_a_figure_fails_the_bench() {
        let lines = vec![
            "[bench] bench: null syscall 462 instructions (mean of 1000)".to_string(),
            "[bench] bench: IPC round trip with 64 B each way: not measured (the Call failed)"
                .to_string(),
        ];
        let e = require_figures(&lines).unwrap_err();
        assert!(e.contains("not measured (the Call failed)"), "{e}");
        assert!(require_figures(&lines[..1]).is_ok());
    }

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
    fn the_svg_has_one_curve_and_its_marks_per_series() {
        let a: Vec<u32> = (0..1000)
            .map(|i| 462 + u32::from(i % 100 == 0) * 700)
            .collect();
        let b = vec![2272u32; 1000];
        let c: Vec<u32> = (0..1000).map(|i| 13_000 + i).collect();
        let doc = svg("t", &[("null syscall", &a), ("IPC", &b), ("get_ref", &c)]);
        assert!(doc.starts_with("<svg") && doc.ends_with("</svg>\n"));
        assert_eq!(doc.matches(r#"class="cdf""#).count(), 3);
        // a: min = median = p99 462 and max 1162 (two marks); b: all four coincide (one);
        // c: four distinct values.
        assert_eq!(doc.matches(r#"class="mark""#).count(), 2 + 1 + 4);
        assert!(doc.contains(">min = median = p99 462<"), "{doc}");
        assert!(doc.contains(">max 1162<"));
        assert!(doc.contains(">min = median = p99 = max 2272<"));
        assert!(doc.contains(">p99 13989<") && doc.contains(">median 13499<"));
        assert!(doc.contains("null syscall: min 462, median 462, p99 462, max 1162"));
        // b's range is 2271 to 2273: three ticks, each named once.
        for t in ["2271", "2272", "2273"] {
            assert_eq!(doc.matches(&format!(r#"middle">{t}<"#)).count(), 1, "{t}");
        }
        assert_eq!(doc.matches(r#"class="tick""#).count(), 5 + 3 + 5);
        // Every coordinate is a finite number inside the picture.
        for d in doc.split(" d=\"").skip(1) {
            let path = &d[..d.find('"').unwrap()];
            for n in path.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')) {
                if !n.is_empty() {
                    let v: f64 = n.parse().unwrap();
                    assert!((0.0..=WIDTH.max(TOP + 3.0 * PANEL)).contains(&v), "{v}");
                }
            }
        }
    }
}
