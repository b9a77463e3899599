//! `cargo xtask bench [--fast] [--check | --save-baseline] [--baseline FILE] [--out DIR]
//! [--no-build]`: Amber's benchmarks, their report and their baseline.
//!
//! Parts ([`Part`]), each a QEMU boot under `-icount shift=0,sleep=off` (one
//! instruction per nanosecond of virtual time; `minstret` counts retired instructions
//! exactly, and the same image prints the same figures every run):
//! `syscall` (the bench app: null syscall and IPC round trips, means of 1,000 calls
//! and per-call samples), `checkpoint` (`amber.test=ckpt-bench`: the pause and NVM
//! bytes of one checkpoint of synthetic systems, and their recovery), `memtrack` (the
//! bank app's 500 checkpoints with PMP write protection or whole copies), `nvm-bus`
//! (the demo and bank apps' 500 checkpoints on memory-mapped NVM and on SPI FRAM),
//! `heap` (the heapbench apps: heap service against library, swap-ins, FRAM words per
//! checkpoint), `kv` (the kvbench app's key-value stores) and `sqlite` (SQLite's two
//! ways of persisting, `sqlite_bench.rs`: its table is printed, not yet figures of the
//! baseline); then two host tools
//! whose figures are models, not counts, and stay out of the baseline: `tools/kv-bench`
//! prices the kvbench run with datasheet timings, `tools/vnv-bench` runs the vNV-Heap
//! figures of the paper. `--fast` runs the first two parts only (seconds of guest
//! time; `cargo xtask test` runs them with `--check`); part names on the command line
//! run those parts only (`cargo xtask bench sqlite`).
//!
//! Every figure the guests print is an exact cost (instructions, or bytes or words
//! written; lower is better). The run writes `report.md`, `report.csv` and
//! `report.svg` (and `latency.svg`, the per-call distributions) into its output folder,
//! `target/amber/bench` (`target/amber/bench-fast` for `--fast`), each naming the
//! commit measured. The committed baseline [`BASELINE`] holds every figure of the last
//! accepted run: `--save-baseline` writes it (the parts that ran replace theirs),
//! `--check` fails naming every figure more than 3 % above it
//! ([`baseline::TOLERANCE_PERCENT`]) or no longer printed, and passes when figures
//! improve, listing them so that the baseline can be saved to guard them. A change that
//! moves a figure commits the baseline with it.
//!
//! Dependencies point down: this file runs the parts and ties them together; `guest`
//! boots, `parse` and `latency` read lines into figures, `baseline` compares,
//! `report` writes; `figure` is beneath them all. Nothing here judges a figure except
//! against the baseline.

mod baseline;
mod figure;
mod guest;
mod latency;
mod parse;
mod report;

use crate::{app_image, build_app, build_kernel, cargo, root};
use amber_qemu::{NvmBus, DEFAULT_NVM_SIZE};
use baseline::{compare, Baseline, Verdict, TOLERANCE_PERCENT};
use figure::{Figure, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The committed baseline, relative to the workspace root.
pub const BASELINE: &str = "tools/xtask/bench-baseline.toml";

/// One part of the bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Syscall,
    Checkpoint,
    Memtrack,
    NvmBus,
    Heap,
    Kv,
    Sqlite,
    VnvHeap,
}

impl Part {
    pub const ALL: [Part; 8] = [
        Part::Syscall,
        Part::Checkpoint,
        Part::Memtrack,
        Part::NvmBus,
        Part::Heap,
        Part::Kv,
        Part::Sqlite,
        Part::VnvHeap,
    ];

    /// Its name: the first component of its figures' ids.
    pub fn name(self) -> &'static str {
        match self {
            Part::Syscall => "syscall",
            Part::Checkpoint => "checkpoint",
            Part::Memtrack => "memtrack",
            Part::NvmBus => "nvm-bus",
            Part::Heap => "heap",
            Part::Kv => "kv",
            Part::Sqlite => "sqlite",
            Part::VnvHeap => "vnv-heap",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Part::Syscall => "syscall and IPC cost (bench app)",
            Part::Checkpoint => "checkpoint pause and recovery (amber.test=ckpt-bench)",
            Part::Memtrack => {
                "task memory tracking on the bank app: PMP write protection vs whole copy"
            }
            Part::NvmBus => "checkpoint pause on the two NVM buses: memory-mapped vs SPI FRAM",
            Part::Heap => "heap service vs library, FRAM words per checkpoint (heapbench apps)",
            Part::Kv => "key-value stores: amber-kv against sequential-storage's map (kvbench app)",
            Part::Sqlite => {
                "SQLite: whole-system persistence vs its own journal on NVM (sqlite-bench apps)"
            }
            Part::VnvHeap => "the vNV-Heap figures of the paper (tools/vnv-bench, host model)",
        }
    }

    /// Whether `--fast` (and so `cargo xtask test`) runs it.
    pub fn fast(self) -> bool {
        matches!(self, Part::Syscall | Part::Checkpoint)
    }
}

/// The options of one run.
struct Options {
    /// The parts named on the command line (none: every part, or `--fast`'s).
    only: Vec<Part>,
    fast: bool,
    check: bool,
    save: bool,
    build: bool,
    baseline: PathBuf,
    out: Option<PathBuf>,
    command: String,
}

const USAGE: &str = "usage: cargo xtask bench [PART..] [--fast] [--check | --save-baseline] [--baseline FILE] [--out DIR] [--no-build]";

/// `cargo xtask bench ARGS`.
pub fn cmd(args: &[String]) -> Result<(), String> {
    let mut o = Options {
        only: Vec::new(),
        fast: false,
        check: false,
        save: false,
        build: true,
        baseline: root().join(BASELINE),
        out: None,
        command: format!("cargo xtask bench {}", args.join(" "))
            .trim_end()
            .to_owned(),
    };
    let here =
        std::env::current_dir().map_err(|e| format!("cannot tell the current directory: {e}"))?;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut path = || {
            it.next()
                .map(|p| here.join(p))
                .ok_or_else(|| format!("{a} needs a path\n{USAGE}"))
        };
        match a.as_str() {
            "--fast" => o.fast = true,
            "--check" => o.check = true,
            "--save-baseline" => o.save = true,
            "--no-build" => o.build = false,
            "--baseline" => o.baseline = path()?,
            "--out" => o.out = Some(path()?),
            name => match Part::ALL.into_iter().find(|p| p.name() == name) {
                Some(part) => o.only.push(part),
                None => {
                    return Err(format!(
                        "unknown part or option `{name}` for bench\n{USAGE}"
                    ))
                }
            },
        }
    }
    if o.check && o.save {
        return Err(format!(
            "--check compares with the baseline and --save-baseline replaces it: give one\n{USAGE}"
        ));
    }
    run(&o)
}

/// The fast part of the check, for `cargo xtask test`: the syscall and checkpoint
/// parts on the images the test command has just built, against the baseline.
pub fn check_fast() -> Result<(), String> {
    run(&Options {
        only: Vec::new(),
        fast: true,
        check: true,
        save: false,
        build: false,
        baseline: root().join(BASELINE),
        out: None,
        command: "cargo xtask bench --fast --check --no-build (by cargo xtask test)".to_owned(),
    })
}

/// Where the images come from: built now, or as the last build left them.
struct Images {
    build: bool,
}

impl Images {
    fn existing(path: PathBuf) -> Result<PathBuf, String> {
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "--no-build: there is no image at {} (build it first, or run without --no-build)",
                path.display()
            ))
        }
    }

    /// The image of app `name`.
    fn app(&self, name: &str) -> Result<PathBuf, String> {
        if self.build {
            build_app(name, DEFAULT_NVM_SIZE)
        } else {
            Images::existing(app_image(name))
        }
    }

    /// The bare kernel (the checkpoint benchmark is a boot option of it).
    fn kernel(&self) -> Result<PathBuf, String> {
        if self.build {
            build_kernel(None)
        } else {
            Images::existing(root().join("target/amber/amber-kernel.elf"))
        }
    }
}

/// What the parts produced.
#[derive(Default)]
struct Measured {
    figures: Vec<Figure>,
    /// Per-call samples to draw, by label.
    series: Vec<latency::Drawn>,
    /// The host tools' output, by title.
    models: Vec<(String, String)>,
}

/// Runs `cmd`, its stdout captured (and printed), its stderr to the terminal.
fn capture(what: &str, cmd: &mut Command) -> Result<String, String> {
    eprintln!("xtask: {what}");
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{text}");
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{what} failed ({})", out.status))
    }
}

impl Part {
    /// Runs this part, adding what it measured to `m`; NVM images go to `dir`.
    fn measure(self, images: &Images, dir: &Path, m: &mut Measured) -> Result<(), String> {
        println!("== {} ==", self.title());
        let checkpoints = "checkpoints: 500 since boot";
        match self {
            Part::Syscall => {
                let run = guest::run(&images.app("bench")?, "", "[bench] bench:", 4, dir)?;
                m.figures.extend(parse::bench_app(&run.found)?);
                let (figures, series) = latency::read(&run.samples, &latency::SYSCALL_SERIES)?;
                m.figures.extend(figures);
                m.series.extend(series);
            }
            Part::Checkpoint => {
                let run = guest::run(
                    &images.kernel()?,
                    "amber.test=ckpt-bench",
                    "ckbench:",
                    24,
                    dir,
                )?;
                m.figures.extend(parse::ckbench(&run.found)?);
            }
            Part::Memtrack => {
                let kernel = images.app("bank")?;
                for mode in ["protect", "copy"] {
                    print!("memtrack={mode}: ");
                    let run = guest::run(
                        &kernel,
                        &format!("amber.memtrack={mode}"),
                        checkpoints,
                        1,
                        dir,
                    )?;
                    m.figures.extend(parse::checkpoint_summary(
                        &run.found[0],
                        self.name(),
                        &format!("bank-{mode}"),
                    )?);
                }
            }
            Part::NvmBus => {
                for app in ["demo", "bank"] {
                    let kernel = images.app(app)?;
                    for bus in [NvmBus::Mmio, NvmBus::Spi] {
                        print!("app {app}, --nvm-bus {}: ", bus.name());
                        let args = format!("amber.nvm-bus={}", bus.name());
                        let run = guest::run(&kernel, &args, checkpoints, 1, dir)?;
                        m.figures.extend(parse::checkpoint_summary(
                            &run.found[0],
                            self.name(),
                            &format!("{app}-{}", bus.name()),
                        )?);
                    }
                }
            }
            Part::Heap => {
                // Each run prints 7 best-case lines, 1 worst-case line, 1 workload line
                // and `heapbench: done`; the marker carries the task's console prefix,
                // so the kernel's `app heapbench:` line does not count.
                for app in ["heapbench", "heapbench-nolimit"] {
                    let run = guest::run(&images.app(app)?, "", "[heapbench] heapbench:", 10, dir)?;
                    m.figures.extend(parse::heapbench(&run.found, app)?);
                    if app == "heapbench" {
                        let (figures, series) = latency::read(&run.samples, &latency::HEAP_SERIES)?;
                        m.figures.extend(figures);
                        m.series.extend(series);
                    }
                }
            }
            Part::Kv => {
                // 50 result lines (10 workloads x 5 stores) and `kvbench: done`.
                let run = guest::run(&images.app("kvbench")?, "", "[kvbench] kvbench:", 51, dir)?;
                m.figures.extend(parse::kvbench(&run.found)?);
                let out = root().join("target/kv-bench");
                std::fs::create_dir_all(&out)
                    .and_then(|()| std::fs::write(out.join("kvbench.txt"), run.found.join("\n")))
                    .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
                let priced = capture(
                    "pricing the key-value runs (tools/kv-bench)",
                    cargo().args([
                        "run",
                        "--release",
                        "-p",
                        "kv-bench",
                        "--",
                        "target/kv-bench/kvbench.txt",
                        "--out",
                        "target/kv-bench",
                    ]),
                )?;
                m.models.push(("key-value stores priced with datasheet timings (tools/kv-bench; CSV and SVG in target/kv-bench)".to_owned(), priced));
            }
            Part::Sqlite => {
                // Its table and verdict are printed by sqlite_bench.rs (not yet figures
                // of the baseline).
                crate::sqlite_bench::run(
                    |app| images.app(app),
                    |kernel, bootargs, last| guest::lines_until(kernel, bootargs, last, dir),
                )?;
            }
            Part::VnvHeap => {
                let text = capture(
                    "running the vNV-Heap benchmarks (tools/vnv-bench)",
                    cargo().args([
                        "run",
                        "--release",
                        "-p",
                        "vnv-bench",
                        "--",
                        "--out",
                        "target/vnv-bench",
                    ]),
                )?;
                m.models.push((
                    "the vNV-Heap figures (tools/vnv-bench; CSV and SVG in target/vnv-bench)"
                        .to_owned(),
                    text,
                ));
            }
        }
        Ok(())
    }
}

/// The tree measured: `git describe --always --dirty`.
fn commit() -> String {
    Command::new("git")
        .current_dir(root())
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "an unknown commit (git describe failed)".to_owned())
}

/// `path` relative to the workspace root when it lies inside it.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn run(o: &Options) -> Result<(), String> {
    crate::setup::ensure("bench")?;
    let parts: Vec<Part> = Part::ALL
        .into_iter()
        .filter(|p| {
            if o.only.is_empty() {
                !o.fast || p.fast()
            } else {
                o.only.contains(p)
            }
        })
        .collect();
    let names: Vec<&str> = parts.iter().map(|p| p.name()).collect();
    let dir = o.out.clone().unwrap_or_else(|| {
        root().join(if o.fast {
            "target/amber/bench-fast"
        } else {
            "target/amber/bench"
        })
    });
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Before any measuring: a check without a baseline to check against stops here.
    let base = match (Baseline::load(&o.baseline), o.check) {
        (Ok(b), _) => b,
        (Err(e), true) => return Err(e),
        (Err(_), false) => Baseline::default(),
    };
    let images = Images { build: o.build };
    let mut m = Measured::default();
    for part in &parts {
        part.measure(&images, &dir, &mut m)?;
    }
    if !m.series.is_empty() {
        println!("== latency distributions: the per-call samples above ==");
        latency::draw(&m.series, &dir.join("latency.svg"))?;
    }
    let comparison = compare(&base, &names, &m.figures);
    let baseline_shown = shown(&o.baseline);
    let commit = commit();
    report::write(
        &report::Report {
            commit: &commit,
            command: &o.command,
            parts: &parts,
            figures: &m.figures,
            comparison: &comparison,
            baseline: &baseline_shown,
            models: &m.models,
        },
        &dir,
    )?;
    let count = |v| comparison.with(&m.figures, v).count();
    println!(
        "bench: {} exact figures of {} against {baseline_shown}: {} worse by more than {TOLERANCE_PERCENT} %, {} better by more, {} not in it, {} in it but not measured",
        m.figures.len(),
        names.join(", "),
        count(Verdict::Worse),
        count(Verdict::Better),
        count(Verdict::New),
        comparison.missing.len()
    );
    for (what, v) in [("better", Verdict::Better), ("worse", Verdict::Worse)] {
        for (f, row) in comparison.with(&m.figures, v) {
            println!(
                "bench: {what}: {} = {} (baseline {}, {})",
                f.id,
                Value(f.value),
                Value(row.baseline.unwrap_or(0.0)),
                baseline::change(f.value, row)
            );
        }
    }
    if !o.save && (count(Verdict::Better) > 0 || count(Verdict::New) > 0) {
        println!(
            "bench: `cargo xtask bench{} --save-baseline` records the new figures, so that the check guards them; commit the baseline with the change that moved them",
            if o.fast { " --fast" } else { "" }
        );
    }
    if o.save {
        let new = base.updated(&names, &m.figures, &commit);
        let text = new.render();
        // What is written must read back as the same figures.
        if Baseline::parse(&text).as_ref() != Ok(&new) {
            return Err(
                "the baseline would not read back as written (a figure id clashes with a table)"
                    .to_owned(),
            );
        }
        std::fs::write(&o.baseline, text)
            .map_err(|e| format!("cannot write {}: {e}", o.baseline.display()))?;
        println!(
            "bench: baseline {baseline_shown} saved ({} figures; those of {} replaced)",
            new.figures.len(),
            names.join(", ")
        );
    }
    if o.check {
        comparison.check(&m.figures, &baseline_shown)?;
        println!(
            "bench: check passed: no figure is more than {TOLERANCE_PERCENT} % above the baseline"
        );
    }
    Ok(())
}
