//! kv-bench: the report of the key-value peer comparison. `cargo xtask bench` runs the
//! `kvbench` app under `-icount` and hands its console lines to this program, which
//! prices each run's counts with the device models of `model.rs` and prints, as
//! Markdown tables: modelled throughput per workload and store, device bytes written
//! per put, erases per 1,000 puts, instructions per operation and each store's RAM;
//! then whether `amber-kv` on SPI FRAM reaches 20x the flash map's throughput for puts
//! of 4 to 64 bytes, and where the flash map wins. It writes `DIR/kv.csv` and
//! `DIR/kv.svg` (throughput, log scale).
//!
//! Usage: `kv-bench LINES --out DIR` (LINES: a file holding the `kvbench:` lines). It
//! prices counts; it must never measure anything itself.

use kv_bench_model as model;
mod plot;

use model::{throughput, Counts, Device};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// The stores, in table order: the name `kvbench` prints, a label, the device.
const STORES: [(&str, &str, Device); 5] = [
    ("kv-lpht-spi", "amber-kv LPHT, SPI FRAM", Device::SpiFram),
    ("kv-clht-spi", "amber-kv CLHT-4, SPI FRAM", Device::SpiFram),
    (
        "kv-lpht-mmio",
        "amber-kv LPHT, memory-mapped",
        Device::MemoryMapped,
    ),
    (
        "kv-clht-mmio",
        "amber-kv CLHT-4, memory-mapped",
        Device::MemoryMapped,
    ),
    ("map-nor", "sequential-storage map, SPI NOR", Device::SpiNor),
];
const FLASH: &str = "map-nor";
/// Workloads whose target is 20x the flash map (puts of 4 to 64 bytes).
const TARGET_WORKLOADS: [&str; 6] = [
    "put-uniform-4",
    "put-uniform-16",
    "put-uniform-64",
    "put-skewed-4",
    "put-skewed-16",
    "put-skewed-64",
];
const TARGET: f64 = 20.0;

/// One `kvbench:` result line.
#[derive(Clone, Debug, Default)]
struct Run {
    counts: Counts,
    written: f64,
    ram_state: u64,
    ram_buffer: u64,
}

/// The fields of a result line, or `None` for any other line.
fn parse(line: &str) -> Option<(String, String, Run)> {
    let rest = &line[line.find("kvbench: store=")? + "kvbench: ".len()..];
    let fields: BTreeMap<&str, &str> = rest
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let num = |k: &str| -> Option<f64> { fields.get(k)?.parse().ok() };
    let run = Run {
        counts: Counts {
            ops: num("ops")?,
            instructions: num("instructions")?,
            wire_bytes: num("wire")?,
            programs: num("programs")?,
            erases: num("erases")?,
            halfwords: num("halfwords")?,
        },
        written: num("written")?,
        ram_state: num("ram_state")? as u64,
        ram_buffer: num("ram_buffer")? as u64,
    };
    Some((
        fields.get("store")?.to_string(),
        fields.get("workload")?.to_string(),
        run,
    ))
}

fn device_of(store: &str) -> Option<Device> {
    STORES.iter().find(|s| s.0 == store).map(|s| s.2)
}

/// Ops per second with three significant digits and thousands separators.
fn ops(v: f64) -> String {
    let digits = v.abs().log10().floor() as i32;
    let scale = 10f64.powi((digits - 2).max(0));
    let rounded = ((v / scale).round() * scale) as u64;
    let s = rounded.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

struct Report {
    /// (store, workload) -> run
    runs: BTreeMap<(String, String), Run>,
    /// Workloads in the order they came.
    workloads: Vec<String>,
}

impl Report {
    fn run(&self, store: &str, w: &str) -> Option<&Run> {
        self.runs.get(&(store.to_owned(), w.to_owned()))
    }

    fn throughput(&self, store: &str, w: &str) -> Option<f64> {
        Some(throughput(device_of(store)?, &self.run(store, w)?.counts))
    }

    fn tables(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "Modelled throughput (operations per second; scans: items per second):\n"
        );
        let _ = write!(t, "| workload |");
        for s in STORES {
            let _ = write!(t, " {} |", s.1);
        }
        let _ = writeln!(t, " LPHT FRAM / map |");
        let _ = writeln!(t, "|---|{}---|", "---|".repeat(STORES.len()));
        for w in &self.workloads {
            let _ = write!(t, "| {w} |");
            for s in STORES {
                let v = self.throughput(s.0, w).map_or("–".into(), ops);
                let _ = write!(t, " {v} |");
            }
            let ratio = self
                .throughput("kv-lpht-spi", w)
                .zip(self.throughput(FLASH, w));
            let r = ratio.map_or("–".into(), |(a, b)| format!("{:.1}x", a / b));
            let _ = writeln!(t, " {r} |");
        }
        let _ = writeln!(
            t,
            "\nPer put (put workloads): device bytes written per put / erases per 1,000 puts / instructions per operation:\n"
        );
        let _ = write!(t, "| workload |");
        for s in STORES {
            let _ = write!(t, " {} |", s.1);
        }
        let _ = writeln!(t, "\n|---|{}", "---|".repeat(STORES.len()));
        for w in self.workloads.iter().filter(|w| w.starts_with("put")) {
            let _ = write!(t, "| {w} |");
            for s in STORES {
                let cell = self.run(s.0, w).map_or("–".into(), |r| {
                    let c = &r.counts;
                    format!(
                        "{:.1} B / {:.2} / {:.0}",
                        r.written / c.ops,
                        c.erases * 1000.0 / c.ops,
                        c.instructions / c.ops
                    )
                });
                let _ = write!(t, " {cell} |");
            }
            let _ = writeln!(t);
        }
        let _ = writeln!(
            t,
            "\nRAM per store (bytes kept between operations + buffer an operation needs):\n"
        );
        let _ = writeln!(t, "| store | state | buffer |\n|---|---|---|");
        for s in STORES {
            if let Some(r) = self.runs.iter().find(|((st, _), _)| st == s.0).map(|x| x.1) {
                let _ = writeln!(t, "| {} | {} | {} |", s.1, r.ram_state, r.ram_buffer);
            }
        }
        t
    }

    /// The target line and where the flash map wins.
    fn verdict(&self) -> (String, bool) {
        let mut t = String::new();
        let mut met = true;
        for store in ["kv-lpht-spi", "kv-clht-spi"] {
            let worst = TARGET_WORKLOADS
                .iter()
                .filter_map(|w| Some((w, self.throughput(store, w)? / self.throughput(FLASH, w)?)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            match worst {
                Some((w, r)) => {
                    let ok = r >= TARGET;
                    met &= ok;
                    let _ = writeln!(
                        t,
                        "target: {store} puts of 4 to 64 bytes at >= {TARGET}x the flash map: {} (lowest {r:.1}x, {w})",
                        if ok { "met" } else { "NOT met" }
                    );
                }
                None => {
                    met = false;
                    let _ = writeln!(t, "target: {store}: no figures");
                }
            }
        }
        for w in &self.workloads {
            for s in STORES.iter().filter(|s| s.0 != FLASH) {
                if let (Some(a), Some(b)) = (self.throughput(s.0, w), self.throughput(FLASH, w)) {
                    if b > a {
                        let _ = writeln!(
                            t,
                            "the flash map is faster than {} on {w}: {} against {} per second",
                            s.1,
                            ops(b),
                            ops(a)
                        );
                    }
                }
            }
        }
        let ram = |s: &str| {
            self.runs
                .iter()
                .find(|((st, _), _)| st == s)
                .map(|(_, r)| r.ram_state + r.ram_buffer)
        };
        if let (Some(kv), Some(map)) = (ram("kv-lpht-spi"), ram(FLASH)) {
            let _ = writeln!(
                t,
                "RAM: amber-kv {kv} bytes (its state and the stack of one operation), the flash map {map} bytes (its caches and its buffer)"
            );
        }
        (t, met)
    }

    fn csv(&self) -> String {
        let mut t = String::from(
            "store,workload,ops,instructions,wire_bytes,programs,erases,halfwords,bytes_written,ops_per_s\n",
        );
        for ((s, w), r) in &self.runs {
            let c = &r.counts;
            let tp = self.throughput(s, w).unwrap_or(f64::NAN);
            let _ = writeln!(
                t,
                "{s},{w},{},{},{},{},{},{},{},{tp:.1}",
                c.ops, c.instructions, c.wire_bytes, c.programs, c.erases, c.halfwords, r.written
            );
        }
        t
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (input, out) = match args.as_slice() {
        [input, flag, out] if flag == "--out" => (PathBuf::from(input), PathBuf::from(out)),
        _ => {
            eprintln!("usage: kv-bench LINES --out DIR");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(&input) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("kv-bench: cannot read {}: {e}", input.display());
            return ExitCode::from(2);
        }
    };
    let mut report = Report {
        runs: BTreeMap::new(),
        workloads: Vec::new(),
    };
    for (store, w, run) in text.lines().filter_map(parse) {
        if !report.workloads.contains(&w) {
            report.workloads.push(w.clone());
        }
        report.runs.insert((store, w), run);
    }
    if report.runs.is_empty() {
        eprintln!("kv-bench: no kvbench result lines in {}", input.display());
        return ExitCode::from(2);
    }
    print!("{}", report.tables());
    let (verdict, met) = report.verdict();
    print!("\n{verdict}");
    let written = std::fs::create_dir_all(&out)
        .and_then(|()| std::fs::write(out.join("kv.csv"), report.csv()))
        .map_err(|e| e.to_string())
        .and_then(|()| {
            let series: Vec<(String, Vec<Option<f64>>)> = STORES
                .iter()
                .map(|s| {
                    let v = report
                        .workloads
                        .iter()
                        .map(|w| report.throughput(s.0, w))
                        .collect();
                    (s.1.to_owned(), v)
                })
                .collect();
            plot::bars(&out.join("kv.svg"), &report.workloads, &series).map_err(|e| e.to_string())
        });
    match written {
        Ok(()) => println!(
            "wrote {} and {}",
            out.join("kv.csv").display(),
            out.join("kv.svg").display()
        ),
        Err(e) => {
            eprintln!("kv-bench: cannot write the figures: {e}");
            return ExitCode::from(2);
        }
    }
    if met {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_line_is_parsed_and_others_are_not() {
        let line = "[   0.073 INFO ] [kvbench] kvbench: store=kv-lpht-spi workload=put-uniform-4 ops=10000 instructions=20680800 emulation=39586444 transactions=40316 wire=333792 written=40000 programs=0 erases=0 halfwords=0 ram_state=40 ram_buffer=328 ticks=7";
        let (s, w, r) = parse(line).unwrap();
        assert_eq!((s.as_str(), w.as_str()), ("kv-lpht-spi", "put-uniform-4"));
        assert_eq!(r.counts.instructions, 20_680_800.0);
        assert_eq!(r.counts.wire_bytes, 333_792.0);
        assert_eq!((r.ram_state, r.ram_buffer), (40, 328));
        assert!(parse("[kvbench] kvbench: done").is_none());
        assert!(
            parse("kvbench: store=x workload=y ops=1").is_none(),
            "fields missing"
        );
    }

    #[test]
    fn figures_have_three_significant_digits() {
        assert_eq!(ops(1_234_567.0), "1,230,000");
        assert_eq!(ops(98.76), "99");
        assert_eq!(ops(4321.0), "4,320");
    }
}
