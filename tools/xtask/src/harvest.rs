//! `cargo xtask harvest --app APP --trace FILE [--cap UF] [--cycles N [--repeat]]
//! [--name NAME] [--no-build]`: an app run on harvested energy. A host-side model of
//! the capacitor, charged by the trace's harvested power and drained by the device,
//! decides when the device boots (V_ON), when it gets the power-failure interrupt
//! (V_WARN) and how many instructions it has left until it dies (V_OFF); QEMU
//! (`-icount`, one boot per power cycle, on one NVM image) runs each on-phase with the
//! boot options `amber.warn=N` (the interrupt at the first trap once N instructions
//! have retired) and `amber.energy=B` (the machine dies at its first kernel NVM store
//! once B more have, counted from instruction N). It
//! prints the power cycles, the checkpoints completed after a warning and those the
//! energy cut short, forward progress against continuous power, the host time the
//! boots took, and writes an SVG of the voltage with warnings, checkpoints and cuts
//! marked. It fails the run when a boot does not resume the newest committed
//! checkpoint (the one the last power failure committed; after a cut, one at least as
//! new as the last boot's start), when the app's work goes back across a completed
//! checkpoint, and on any VIOLATION line. `--repeat` plays the trace again until
//! `--cycles` are done (`--cycles 0` only calibrates and sizes); `--name` names the
//! run's NVM image and SVG (runs of different names can go at once). The calibration
//! boot is done once per image (kept in `target/amber/harvest/APP.calibration`, keyed
//! by the image's SHA-256).
//!
//! This file only models and drives; it must never reach into the guest other than by
//! boot options, and never invent a figure it did not read from the guest or compute
//! from the constants below (each with its source).

use crate::sizing::Sizing;
use amber_qemu::Machine;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The device boots when the capacitor reaches this (the ESP32-C3's highest
/// recommended supply, 3.6 V: ESP32-C3 datasheet, "Recommended operating conditions",
/// VDD 3.0 to 3.6 V).
pub const V_ON: f64 = 3.6;
/// The power-failure interrupt: a brown-out detector level in the C3's range (about
/// 2.51 to 3.27 V, ESP32-C3 TRM, brown-out detector; see DESIGN.md).
pub const V_WARN: f64 = 3.2;
/// The device dies: the C3's lowest recommended supply (datasheet, as for V_ON).
pub const V_OFF: f64 = 3.0;
/// The C3's clock; the harness takes one instruction per cycle.
pub const CPU_HZ: f64 = 160e6;
/// Power of the C3 running at 160 MHz, radio off: 40 mA at 3.3 V, the maximum the
/// vNV-Heap paper assumes for its WCEC (section 7.4, "a maximum of 40 mA at 3.3 V");
/// a measured empty loop at 160 MHz draws 26.8 mA on average (R. Dobson,
/// "Investigating ESP32-C3 power management", 2023), so this is an upper bound.
pub const P_CPU_W: f64 = 0.040 * 3.3;
/// The FRAM while a byte is on the wire: 2.5 mA at 3.3 V at 40 MHz, the maximum
/// operating current of Fujitsu's SPI FRAM at 40 MHz in the MB85RS256TY datasheet
/// (DS501-00046); the MB85RS4MT's own figure was not checked here. A byte takes
/// 200 ns on the wire.
pub const E_FRAM_BYTE_J: f64 = 0.0025 * 3.3 * 200e-9;
/// Energy per instruction: the CPU's, plus the FRAM charged as if the SPI bus were
/// busy all the time at the emulated chip's pace (`spidrv` spends 32 instructions per
/// wire byte): an upper bound for the mix a persist makes.
pub const E_INSTR_J: f64 = P_CPU_W / CPU_HZ + E_FRAM_BYTE_J / 32.0;
/// Guest instructions per kernel timer tick (10 ms of QEMU virtual time under
/// `-icount shift=0`, one instruction per nanosecond).
const TICK_INSTR: u64 = 10_000_000;
/// Model time step while charging or running (seconds of device time).
const DT: f64 = 1e-4;
/// The longest on-phase one boot runs (ticks): beyond it the harvest keeps the
/// device up, and the harness warns it anyway (reported as sustained).
const MAX_TICKS: u64 = 400;
/// Host time one boot may take before the harness gives up on it.
const BOOT_TIMEOUT: Duration = Duration::from_secs(300);
/// The console lines that count the apps' work, by app.
const WORK_KEYS: [&str; 2] = ["kv: ", "counter: "];

/// A trace: harvested power over time, piecewise constant.
#[derive(Debug)]
struct Trace {
    /// (start time in seconds, power in watts), in time order.
    points: Vec<(f64, f64)>,
    /// Where the trace ends.
    end: f64,
    /// Whether it plays again from the start after its end (`--repeat`).
    repeat: bool,
}

impl Trace {
    /// Reads `time_s,power_uw` rows; `#` lines are comments (provenance), the first
    /// other row is the header.
    fn load(path: &Path) -> Result<Trace, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read trace {}: {e}", path.display()))?;
        let mut points = Vec::new();
        let mut header = false;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if !header {
                if line != "time_s,power_uw" {
                    return Err(format!(
                        "{}: the header must be `time_s,power_uw`, not `{line}`",
                        path.display()
                    ));
                }
                header = true;
                continue;
            }
            let bad = || {
                format!(
                    "{}:{}: `{line}` is not `seconds,microwatts`",
                    path.display(),
                    n + 1
                )
            };
            let (t, p) = line.split_once(',').ok_or_else(bad)?;
            let t: f64 = t.trim().parse().map_err(|_| bad())?;
            let p: f64 = p.trim().parse().map_err(|_| bad())?;
            if p < 0.0 || points.last().is_some_and(|&(last, _)| t <= last) {
                return Err(format!(
                    "{}:{}: times must grow and power be >= 0",
                    path.display(),
                    n + 1
                ));
            }
            points.push((t, p * 1e-6));
        }
        if points.len() < 2 {
            return Err(format!(
                "{}: a trace needs two rows at least",
                path.display()
            ));
        }
        let end = points.last().map_or(0.0, |p| p.0);
        Ok(Trace {
            points,
            end,
            repeat: false,
        })
    }

    /// The power at `t`; past the end the trace plays again from its start when
    /// `repeat` is set (`--repeat`), else it stays at its last row.
    fn power(&self, t: f64) -> f64 {
        let t = if self.repeat { t % self.end } else { t };
        match self.points.partition_point(|&(s, _)| s <= t) {
            0 => self.points[0].1,
            i => self.points[i - 1].1,
        }
    }

    fn mean(&self) -> f64 {
        let e: f64 = self
            .points
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) * w[0].1)
            .sum();
        e / self.end
    }
}

/// What one boot did.
#[derive(Default)]
struct Boot {
    lines: Vec<String>,
    code: Option<i32>,
    /// Host time from starting QEMU to its exit.
    host: Duration,
}

impl Boot {
    fn find(&self, key: &str) -> Option<&String> {
        self.lines.iter().find(|l| l.contains(key))
    }

    /// The last work count the app printed (the number after the first work key).
    fn work(&self) -> Option<u64> {
        self.lines
            .iter()
            .rev()
            .find_map(|l| WORK_KEYS.iter().find_map(|k| number_after(l, k)))
    }

    /// The work the boot started from: the app's "restored at N" after a restore,
    /// else its first count.
    fn restored_work(&self) -> Option<u64> {
        self.lines.iter().find_map(|l| {
            WORK_KEYS
                .iter()
                .filter(|k| l.contains(*k))
                .find_map(|k| number_after(l, "restored at ").or_else(|| number_after(l, k)))
        })
    }

    /// The checkpoint version this boot's recovery resumed, if it recovered one.
    fn recovered(&self) -> Option<u64> {
        self.find("recovered checkpoint ")
            .and_then(|l| number_after(l, "recovered checkpoint "))
    }

    /// The app's steady work rate in units per instruction: the counts it printed
    /// against their console time stamps (virtual seconds under `-icount shift=0`,
    /// one instruction per nanosecond), first to last.
    fn work_rate(&self) -> Option<f64> {
        let mut points = self.lines.iter().filter_map(|l| {
            let w = WORK_KEYS.iter().find_map(|k| number_after(l, k))?;
            let t: f64 = l
                .strip_prefix('[')?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some((t, w))
        });
        let (t0, w0) = points.next()?;
        let (t1, w1) = points.next_back()?;
        (t1 > t0 && w1 > w0).then(|| (w1 - w0) as f64 / ((t1 - t0) * 1e9))
    }
}

fn number_after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn boot(machine: &Machine) -> Result<Boot, String> {
    let started = Instant::now();
    let mut cmd: Command = machine.command().map_err(|e| e.to_string())?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().map_err(|e| format!("cannot start QEMU: {e}"))?;
    let out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let until = Instant::now() + BOOT_TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("a boot did not end within {BOOT_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let lines = reader.join().unwrap_or_default();
    if let Some(v) = lines
        .iter()
        .find(|l| l.contains("VIOLATION") || l.contains("panicked"))
    {
        return Err(format!("the app reports: {v}"));
    }
    Ok(Boot {
        lines,
        code: status.code(),
        host: started.elapsed(),
    })
}

/// What the boot before left for the next one to be checked against.
#[derive(Default)]
struct Before {
    /// No boot yet (the first starts fresh).
    first: bool,
    /// The checkpoint its power failure committed (None: the energy cut it short).
    committed: Option<u64>,
    /// The checkpoint it recovered.
    recovered: Option<u64>,
    /// The last work count printed so far.
    work: Option<u64>,
}

impl Before {
    /// Checks that boot `b` resumes the newest committed checkpoint (the one the last
    /// power failure committed, or, if the energy cut that one short, one at least as
    /// new as the last boot's own start) and that the app's work never goes back past
    /// a committed checkpoint (after one the power failure committed, the boot starts
    /// from at least the last count printed before). Returns the work the boot no
    /// longer had (the lost part of a cut), if both counts are known.
    fn check(&self, b: &Boot) -> Result<Option<u64>, String> {
        if !self.first {
            let v = b
                .recovered()
                .ok_or("the boot did not recover a checkpoint")?;
            match (self.committed, self.recovered) {
                (Some(c), _) if v != c => {
                    return Err(format!(
                        "the boot recovered checkpoint {v}, but the last power failure committed {c}"
                    ))
                }
                (None, Some(l)) if v < l => {
                    return Err(format!(
                        "the boot recovered checkpoint {v}, older than the {l} the boot before started from"
                    ))
                }
                _ => {}
            }
        }
        let (Some(before), Some(now)) = (self.work, b.restored_work()) else {
            return Ok(None);
        };
        if self.committed.is_some() && now < before {
            return Err(format!(
                "the work went back from {before} to {now} across a completed checkpoint"
            ));
        }
        Ok(Some(before.saturating_sub(now)))
    }
}

/// What the calibration boot on continuous power found.
struct Calibration {
    /// Instructions from the warning the guest declared (persist phase and
    /// checkpoint).
    bound: u64,
    /// The app's work per instruction.
    rate: f64,
    /// Host time the calibration took (zero when reused).
    host: Duration,
}

/// Timer ticks the calibration boot runs before its power failure (300 ms of virtual
/// time: some 30 work counts of the heap app to take the rate from).
const CALIBRATE_TICKS: u64 = 30;

/// The calibration for the image `elf`: read back from `cache` if that was written
/// for the same image bytes (its SHA-256) and calibration length, else booted on
/// `machine` (a fresh NVM image) and written there.
fn calibrate(elf: &Path, cache: &Path, machine: &Machine) -> Result<Calibration, String> {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(elf).map_err(|e| format!("cannot read {}: {e}", elf.display()))?;
    let key: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let key = format!("{key} {CALIBRATE_TICKS}");
    if let Ok(text) = std::fs::read_to_string(cache) {
        let mut w = text.split_whitespace();
        let same = w.next().zip(w.next()).map(|(a, b)| format!("{a} {b}")) == Some(key.clone());
        let bound = w.next().and_then(|b| b.parse().ok());
        let rate = w.next().and_then(|r| r.parse().ok());
        if let (true, Some(bound), Some(rate)) = (same, bound, rate) {
            println!(
                "harvest: calibration of this image reused from {}",
                cache.display()
            );
            return Ok(Calibration {
                bound,
                rate,
                host: Duration::ZERO,
            });
        }
    }
    let cal = boot(machine)?;
    let bound = cal
        .find("power failure: persist and checkpoint bound ")
        .and_then(|l| number_after(l, "checkpoint bound "))
        .ok_or_else(|| {
            format!(
                "the calibration boot printed no bound:\n{}",
                cal.lines.join("\n")
            )
        })?;
    let rate = cal.work_rate().unwrap_or(0.0);
    std::fs::write(cache, format!("{key} {bound} {rate:e}\n")).map_err(|e| e.to_string())?;
    Ok(Calibration {
        bound,
        rate,
        host: cal.host,
    })
}

/// A mark on the voltage plot.
#[derive(Clone, Copy, PartialEq)]
enum Mark {
    Warn,
    Checkpoint,
    Cut,
}

/// The harness's findings.
#[derive(Default)]
struct Run {
    cycles: u32,
    completed: u32,
    cut_short: u32,
    sustained: u32,
    lost: Vec<u64>,
    /// Marks for the SVG.
    marks: Vec<(f64, f64, Mark)>,
    on_instr: u64,
}

/// The capacitor as the model runs it: time, voltage, and samples for the plot.
struct Model<'t> {
    trace: &'t Trace,
    /// Farads.
    cap: f64,
    t: f64,
    v: f64,
    next_sample: f64,
    samples: Vec<(f64, f64)>,
}

impl Model<'_> {
    /// One step of `DT`, the device drawing `draw` watts from the harvest's.
    fn step(&mut self, draw: f64) {
        let e = 0.5 * self.cap * self.v * self.v + (self.trace.power(self.t) - draw) * DT;
        self.v = (2.0 * e.max(0.0) / self.cap).sqrt();
        self.t += DT;
        if self.t >= self.next_sample {
            self.samples.push((self.t, self.v));
            self.next_sample = self.t + self.trace.end / 2000.0;
        }
    }
}

/// The capacitor needed for `instructions` between V_WARN and V_OFF.
pub fn capacitor_for(instructions: u64) -> f64 {
    2.0 * instructions as f64 * E_INSTR_J / (V_WARN * V_WARN - V_OFF * V_OFF)
}

pub fn run(args: &[String], build: impl Fn(&str) -> Result<PathBuf, String>) -> Result<(), String> {
    let mut app = None;
    let mut trace = None;
    let mut cap_uf = None;
    let mut max_cycles = u32::MAX;
    let mut no_build = false;
    let mut repeat = false;
    let mut name = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().cloned().ok_or(format!("{name} takes a value"));
        match a.as_str() {
            "--app" => app = Some(val("--app")?),
            "--trace" => trace = Some(PathBuf::from(val("--trace")?)),
            "--cap" => {
                let v = val("--cap")?;
                cap_uf = Some(v.parse::<f64>().ok().filter(|&c| c > 0.0).ok_or(format!(
                    "--cap takes microfarads (a positive number), not `{v}`"
                ))?)
            }
            "--cycles" => {
                let v = val("--cycles")?;
                max_cycles = v
                    .parse()
                    .map_err(|_| format!("--cycles takes a number, not `{v}`"))?
            }
            "--no-build" => no_build = true,
            "--repeat" => repeat = true,
            "--name" => name = Some(val("--name")?),
            other => return Err(format!("unknown option for harvest: `{other}`")),
        }
    }
    let app = app.ok_or("harvest needs --app APP")?;
    let trace_path = trace.ok_or("harvest needs --trace FILE (see tools/xtask/traces/)")?;
    let mut trace = Trace::load(&trace_path)?;
    if repeat && max_cycles == u32::MAX {
        return Err("--repeat plays the trace again and again: give --cycles N too".into());
    }
    trace.repeat = repeat;
    let elf = if no_build {
        crate::root().join(format!("target/amber/apps/{app}.elf"))
    } else {
        build(&app)?
    };
    if !elf.exists() {
        return Err(format!(
            "{} does not exist: build it first (cargo xtask build {app})",
            elf.display()
        ));
    }
    let dir = crate::root().join("target/amber/harvest");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let stem = trace_path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("trace");
    // The run's files (NVM image, SVG): runs of different names may go at once.
    let name = name.unwrap_or(format!("{app}-{stem}"));
    let image = dir.join(format!("{name}.img"));
    let _ = std::fs::remove_file(&image);
    let machine = |bootargs: String| {
        let mut m = Machine::new(&elf)
            .nvm(&image, amber_qemu::DEFAULT_NVM_SIZE)
            .bootargs(&bootargs);
        m.icount = true;
        m
    };

    // Calibration on continuous power: the declared bound (persist phase and
    // checkpoint), and the app's work per instruction.
    let cal = calibrate(
        &elf,
        &dir.join(format!("{app}.calibration")),
        &machine(format!("amber.warn={}", CALIBRATE_TICKS * TICK_INSTR)),
    )?;
    let _ = std::fs::remove_file(&image);
    // The bound the app's description gives on the host, which must be the one the
    // guest declared.
    let rate = cal.rate;
    let bound = match crate::sizing::power_failure_bound(&crate::load_app(&app)?)? {
        Sizing::Bounded(b) if b.total() != cal.bound => {
            return Err(format!(
                "the host computes a bound of {} instructions for app {app} (tools/xtask/src/sizing.rs), but the guest declared {}",
                b.total(),
                cal.bound
            ))
        }
        Sizing::Bounded(b) => b.total(),
        Sizing::Undeclared(tasks) => {
            println!(
                "harvest: the persist callbacks {} declare no bound: the capacitor is sized from the kernel's checkpoint bound alone, which leaves their part out",
                tasks.join(", ")
            );
            cal.bound
        }
    };
    // Whole microfarads, rounded up: the size printed is the one a run uses.
    let needed_uf = (capacitor_for(bound) * 1e6).ceil();
    println!(
        "harvest: app {app}: declared bound {bound} instructions from the warning (persist phase and checkpoint), {:.1} µJ at {:.3} nJ per instruction: needs >= {needed_uf:.0} µF between V_warn {V_WARN} V and V_off {V_OFF} V",
        bound as f64 * E_INSTR_J * 1e6,
        E_INSTR_J * 1e9
    );
    let cap = cap_uf.unwrap_or(needed_uf) * 1e-6;
    println!(
        "harvest: trace {} ({:.0} s, mean {:.1} µW), capacitor {:.0} µF, device {:.0} mW on",
        trace_path.display(),
        trace.end,
        trace.mean() * 1e6,
        cap * 1e6,
        P_CPU_W * 1e3
    );
    if max_cycles == 0 {
        return Ok(());
    }

    let mut r = Run::default();
    let mut m = Model {
        trace: &trace,
        cap,
        t: 0.0,
        v: 0.0,
        next_sample: 0.0,
        samples: Vec::new(),
    };
    let energy = |v: f64| 0.5 * cap * v * v;
    let volts = |e: f64| (2.0 * e.max(0.0) / cap).sqrt();
    // Where the model stops: the trace's end, or never when it repeats.
    let end = if repeat { f64::INFINITY } else { trace.end };
    let mut before = Before {
        first: true,
        ..Before::default()
    };
    let mut boots_host = Duration::ZERO;
    let mut recovery_instr = 0u64;
    let mut after_warn_instr = 0u64;
    let mut budgets = 0u64;
    while r.cycles < max_cycles {
        // Off: charge to V_ON.
        while m.v < V_ON && m.t < end {
            m.step(0.0);
        }
        if m.t >= end {
            break;
        }
        // On: run until V_WARN, where the interrupt comes (at the first trap after that
        // many instructions; the energy budget runs from the crossing).
        let t_on = m.t;
        while m.v > V_WARN && m.t < end && (m.t - t_on) * CPU_HZ < (MAX_TICKS * TICK_INSTR) as f64 {
            m.step(P_CPU_W);
        }
        if m.t >= end {
            break;
        }
        let (t_warn, v_warn) = (m.t, m.v);
        let ran = ((t_warn - t_on) * CPU_HZ) as u64;
        if v_warn > V_WARN {
            r.sustained += 1;
        }
        let budget = ((energy(v_warn) - energy(V_OFF)) / E_INSTR_J).max(0.0) as u64;
        budgets += budget;
        r.marks.push((t_warn, v_warn, Mark::Warn));
        let b = boot(&machine(format!("amber.warn={ran} amber.energy={budget}")))?;
        r.cycles += 1;
        r.on_instr += ran;
        boots_host += b.host;
        let lost = before
            .check(&b)
            .map_err(|what| format!("cycle {}: {what}:\n{}", r.cycles, b.lines.join("\n")))?;
        r.lost.extend(lost);
        recovery_instr += b
            .find("recovered checkpoint ")
            .and_then(|l| number_after(l, " in "))
            .unwrap_or(0);
        before.first = false;
        before.recovered = b.recovered();
        before.work = b.work().or(before.work);
        match (b.code, b.find("since the interrupt; halting")) {
            (Some(0), Some(done)) => {
                let used = number_after(done, "NVM bytes; ").unwrap_or(budget);
                before.committed = number_after(done, "checkpoint ");
                after_warn_instr += used;
                r.completed += 1;
                m.t = t_warn + used as f64 / CPU_HZ;
                m.v = volts(energy(v_warn) - used as f64 * E_INSTR_J);
                r.marks.push((m.t, m.v, Mark::Checkpoint));
            }
            (Some(6), _) => {
                before.committed = None;
                after_warn_instr += budget;
                r.cut_short += 1;
                m.t = t_warn + budget as f64 / CPU_HZ;
                m.v = V_OFF;
                r.marks.push((m.t, m.v, Mark::Cut));
            }
            (code, _) => {
                return Err(format!(
                    "cycle {}: QEMU ended with {code:?}, neither a halt after a checkpoint nor an energy cut:\n{}",
                    r.cycles,
                    b.lines.join("\n")
                ))
            }
        }
    }
    // The time modelled: up to the end of the trace (or of its repeats) or the last
    // cycle `--cycles` asked for.
    let span = if repeat { m.t } else { m.t.min(trace.end) };
    // Continuous power over the same time: the calibration's work rate over it at
    // 160 MHz.
    let continuous = rate * span * CPU_HZ;
    let done = before.work.unwrap_or(0) as f64;
    let lost_mean = if r.lost.is_empty() {
        0.0
    } else {
        r.lost.iter().sum::<u64>() as f64 / r.lost.len() as f64
    };
    println!(
        "harvest: {} power cycles ({} sustained by the harvest until the harness warned), {} checkpoints completed after the warning, {} cut short by the energy (each next boot recovered the newest committed checkpoint), 0 violations, work never went back past a completed checkpoint",
        r.cycles, r.sustained, r.completed, r.cut_short
    );
    println!(
        "harvest: forward progress {:.2} % ({done:.0} of {continuous:.0} work units on continuous power over {span:.0} s{}; on {:.1} % of the time), work lost per failure {lost_mean:.1} units (mean)",
        if continuous > 0.0 { 100.0 * done / continuous } else { 0.0 },
        if repeat { ", the trace repeated" } else { "" },
        100.0 * r.on_instr as f64 / CPU_HZ / span
    );
    let n = u64::from(r.cycles.max(1));
    println!(
        "harvest: energy left at the warnings: on average {} instructions' worth ({:.3} x the bound's {bound}; the model's step is {} instructions)",
        budgets / n,
        (budgets / n) as f64 / bound as f64,
        (DT * CPU_HZ) as u64
    );
    println!(
        "harvest: host time {:.1} s for the calibration{}, {:.1} s for {} boots ({:.2} s each; on average a boot runs {} instructions to the warning, {} of them the recovery, and {} after it)",
        cal.host.as_secs_f64(),
        if cal.host.is_zero() { " (reused)" } else { "" },
        boots_host.as_secs_f64(),
        r.cycles,
        boots_host.as_secs_f64() / n as f64,
        r.on_instr / n,
        recovery_instr / n,
        after_warn_instr / n
    );
    let svg = dir.join(format!("{name}.svg"));
    let drawing = plot(
        &m.samples,
        &r,
        span,
        &format!("{app} on {stem}, {:.0} µF", cap * 1e6),
    )
    .map_err(|e| format!("cannot draw the voltage plot: {e}"))?;
    std::fs::write(&svg, drawing).map_err(|e| format!("cannot write {}: {e}", svg.display()))?;
    println!("harvest: voltage plot {}", svg.display());
    Ok(())
}

/// The voltage over time with the warnings (orange), completed checkpoints (green)
/// and cuts (red), drawn with plotters; 2.8 to 3.8 V, where the cycles are (the first
/// charge from 0 V is clipped).
fn plot(
    samples: &[(f64, f64)],
    r: &Run,
    end: f64,
    title: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    use plotters::prelude::{
        ChartBuilder, Circle, Color, IntoDrawingArea, LineSeries, PathElement, RGBColor,
        SVGBackend, SeriesLabelPosition, BLACK, WHITE,
    };
    const VOLTAGE: RGBColor = RGBColor(31, 119, 180);
    const LEVEL: RGBColor = RGBColor(170, 170, 170);
    let colour = |mark: Mark| match mark {
        Mark::Warn => RGBColor(255, 127, 14),
        Mark::Checkpoint => RGBColor(44, 160, 44),
        Mark::Cut => RGBColor(214, 39, 40),
    };
    let (lo, hi) = (2.8, 3.8);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 360)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title}: capacitor voltage"), ("sans-serif", 14))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(45)
            .build_cartesian_2d(0.0..end.max(1e-9), lo..hi)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_desc("seconds")
            .y_desc("volts")
            .draw()?;
        for (v, name) in [(V_ON, "V_on"), (V_WARN, "V_warn"), (V_OFF, "V_off")] {
            chart
                .draw_series([PathElement::new(vec![(0.0, v), (end, v)], LEVEL)])?
                .label(format!("{name} {v} V"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], LEVEL));
        }
        // At most about 4,000 points (a repeated trace samples many more).
        let points = samples
            .iter()
            .step_by(samples.len() / 4000 + 1)
            .map(|&(t, v)| (t, v.clamp(lo, hi)));
        chart
            .draw_series(LineSeries::new(points, VOLTAGE))?
            .label("voltage")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], VOLTAGE));
        for (mark, name) in [
            (Mark::Warn, "warning"),
            (Mark::Checkpoint, "checkpoint completed"),
            (Mark::Cut, "cut before the checkpoint completed"),
        ] {
            let c = colour(mark);
            chart
                .draw_series(
                    r.marks
                        .iter()
                        .filter(|m| m.2 == mark)
                        .map(|&(t, v, _)| Circle::new((t, v.clamp(lo, hi)), 3, c.filled())),
                )?
                .label(name)
                .legend(move |(x, y)| Circle::new((x + 8, y), 3, c.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capacitor_holds_the_bound_between_warning_and_brown_out() {
        let c = capacitor_for(1_000_000);
        let window = 0.5 * c * (V_WARN * V_WARN - V_OFF * V_OFF);
        assert!((window - 1e6 * E_INSTR_J).abs() < 1e-12);
        assert!(capacitor_for(2_000_000) > c);
    }

    fn boot(lines: &[&str]) -> Boot {
        Boot {
            lines: lines.iter().map(|l| l.to_string()).collect(),
            ..Boot::default()
        }
    }

    #[test]
    fn a_boot_must_resume_the_checkpoint_committed_and_keep_the_work() {
        let after = |committed| Before {
            first: false,
            committed,
            recovered: Some(40),
            work: Some(6848),
        };
        let good = boot(&[
            "[   0.003 INFO ] recovered checkpoint 45 in 2722147 instructions",
            "[   0.005 INFO ] [kvstore] kv: restored at 6848 updates",
            "[   0.008 INFO ] [kvstore] kv: 6912 updates",
        ]);
        assert_eq!(after(Some(45)).check(&good), Ok(Some(0)));
        let e = after(Some(46)).check(&good).unwrap_err();
        assert!(e.contains("recovered checkpoint 45, but the last power failure committed 46"));
        let back = boot(&[
            "recovered checkpoint 45 in 1 instructions",
            "kv: restored at 6800 updates",
        ]);
        assert!(after(Some(45))
            .check(&back)
            .unwrap_err()
            .contains("went back"));
        // After a cut, work may be lost back to the last periodic checkpoint, but the
        // boot must not go behind the one the boot before started from.
        assert_eq!(after(None).check(&back), Ok(Some(48)));
        let older = boot(&["recovered checkpoint 39 in 1 instructions"]);
        assert!(after(None)
            .check(&older)
            .unwrap_err()
            .contains("older than the 40"));
        assert!(after(None)
            .check(&boot(&["kv: 1 updates"]))
            .unwrap_err()
            .contains("did not recover"));
        let first = Before {
            first: true,
            ..Before::default()
        };
        assert_eq!(first.check(&boot(&["kv: 64 updates"])), Ok(None));
    }

    #[test]
    fn the_work_rate_is_taken_from_the_time_stamps_of_the_counts() {
        let b = boot(&[
            "[   0.000 INFO ] app heap",
            "[   0.016 INFO ] [kvstore] kv: 64 updates",
            "[   0.028 INFO ] [kvstore] kv: 128 updates",
            "[   0.116 INFO ] [kvstore] kv: 704 updates",
        ]);
        let rate = b.work_rate().unwrap();
        assert!((rate - 640.0 / 0.1e9).abs() < 1e-15, "{rate}");
        assert_eq!(boot(&["kv: 5 updates"]).work_rate(), None);
    }

    #[test]
    fn a_trace_is_piecewise_constant_and_its_errors_name_the_line() {
        let dir = std::env::temp_dir().join(format!("amber-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.csv");
        std::fs::write(&p, "# made up\ntime_s,power_uw\n0,10\n5,20\n10,0\n").unwrap();
        let t = Trace::load(&p).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(t.power(0.0), 10e-6) && close(t.power(4.9), 10e-6));
        assert!(close(t.power(5.0), 20e-6), "each row holds until the next");
        assert!((t.mean() - 15e-6).abs() < 1e-12);
        assert!(
            close(t.power(12.0), 0.0),
            "the last row holds after the end"
        );
        let t = Trace { repeat: true, ..t };
        assert!(
            close(t.power(12.0), 10e-6) && close(t.power(16.0), 20e-6),
            "--repeat"
        );
        std::fs::write(&p, "time_s,power_uw\n0,10\n0,20\n").unwrap();
        assert!(Trace::load(&p).unwrap_err().contains(":3:"));
        std::fs::write(&p, "t,p\n0,1\n").unwrap();
        assert!(Trace::load(&p).is_err());
    }

    #[test]
    fn the_voltage_plot_marks_each_warning_checkpoint_and_cut() {
        let samples: Vec<(f64, f64)> = (0..100)
            .map(|i| (f64::from(i), 3.0 + f64::from(i % 7) * 0.1))
            .collect();
        let r = Run {
            marks: vec![
                (10.0, V_WARN, Mark::Warn),
                (10.5, 3.1, Mark::Checkpoint),
                (40.0, V_WARN, Mark::Warn),
                (40.5, V_OFF, Mark::Cut),
            ],
            ..Run::default()
        };
        let svg = plot(&samples, &r, 100.0, "heap on rf, 100 µF").unwrap();
        assert!(
            svg.contains("heap on rf, 100 µF: capacitor voltage"),
            "{svg}"
        );
        // Each mark and its legend entry: two warnings, one checkpoint, one cut.
        assert_eq!(svg.matches("<circle").count(), 4 + 3);
        for (colour, n) in [("#FF7F0E", 2 + 1), ("#2CA02C", 1 + 1), ("#D62728", 1 + 1)] {
            assert_eq!(
                svg.matches(&format!(r#"fill="{colour}""#)).count(),
                n,
                "{colour}"
            );
        }
        for label in [
            "V_warn 3.2 V",
            "warning",
            "checkpoint completed",
            "cut before the checkpoint completed",
        ] {
            assert!(svg.contains(&format!(">\n{label}\n<")), "{label}");
        }
    }
}
