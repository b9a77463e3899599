//! One benchmark boot: a kernel image under QEMU `-icount shift=0,sleep=off` on a
//! fresh NVM image, its console read line by line until the lines the benchmark
//! prints have all come. Under `-icount` the guest's instruction counts repeat
//! exactly run to run, which is what makes its figures fit for a baseline.
//!
//! This file only boots and collects lines; it must never read a figure out of them
//! (that is `parse.rs`) and never wait on host time except as a bound on a guest that
//! stopped printing.

use amber_qemu::{ensure_nvm_image, Machine, DEFAULT_NVM_SIZE};
use std::io::BufRead;
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

/// The longest a benchmark guest may print nothing (host time; generous, since under
/// `-icount` the guest runs far behind real time and the machine may be busy).
const SILENCE: Duration = Duration::from_secs(600);

/// The lines of one run.
pub struct Lines {
    /// Every console line containing the marker, in order.
    pub found: Vec<String>,
    /// The per-call sample lines (`amber_user::sample`) that came before the last
    /// marker line.
    pub samples: Vec<String>,
}

/// Boots `kernel` with `bootargs` on a fresh NVM image in `dir`, prints every console
/// line containing `marker` until `count` of them have come, and returns them. Fails
/// when the kernel panics, a task stops, the guest falls silent or the machine stops
/// before `count` lines.
pub fn run(
    kernel: &Path,
    bootargs: &str,
    marker: &str,
    count: usize,
    dir: &Path,
) -> Result<Lines, String> {
    let mut out = Lines {
        found: Vec::new(),
        samples: Vec::new(),
    };
    let last = console(kernel, bootargs, dir, |line| {
        if line.contains(marker) {
            println!("{}", line.trim_end());
            out.found.push(line);
        } else if line.contains("] samples ") {
            out.samples.push(line);
        }
        out.found.len() == count
    })?;
    if out.found.len() < count {
        return Err(format!(
            "expected {count} `{marker}` lines, got {}; the last lines:\n{}",
            out.found.len(),
            last.join("\n")
        ));
    }
    Ok(out)
}

/// Every console line of `kernel` booted as [`run`] boots it, up to and with the first
/// that contains `last`.
pub fn lines_until(
    kernel: &Path,
    bootargs: &str,
    last: &str,
    dir: &Path,
) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    let mut done = false;
    console(kernel, bootargs, dir, |line| {
        done = line.contains(last);
        lines.push(line);
        done
    })?;
    if !done {
        return Err(format!(
            "the guest stopped before printing `{last}`; its last lines:\n{}",
            lines[lines.len().saturating_sub(20)..].join("\n")
        ));
    }
    Ok(lines)
}

/// Boots `kernel` under `-icount` with `bootargs` on a fresh NVM image in `dir` and
/// hands each console line to `line` until it returns true (or the machine stops);
/// returns the last lines seen. A kernel panic, a task that panics or ends, and a guest
/// silent for [`SILENCE`] are errors.
fn console(
    kernel: &Path,
    bootargs: &str,
    dir: &Path,
    mut line: impl FnMut(String) -> bool,
) -> Result<Vec<String>, String> {
    let nvm = dir.join("nvm.img");
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&nvm);
    ensure_nvm_image(&nvm, DEFAULT_NVM_SIZE)
        .map_err(|e| format!("cannot create {}: {e}", nvm.display()))?;
    let mut machine = Machine::new(kernel)
        .nvm(&nvm, DEFAULT_NVM_SIZE)
        .bootargs(bootargs);
    machine.icount = true;
    let mut child = machine
        .command()
        .map_err(|e| e.to_string())?
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start QEMU: {e}"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    // The lines arrive through a thread, so that a guest that stops printing (a
    // benchmark that hangs) ends the run after SILENCE instead of never.
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut last: Vec<String> = Vec::new();
    let result = loop {
        let next = match rx.recv_timeout(SILENCE) {
            Ok(next) => next,
            Err(RecvTimeoutError::Timeout) => {
                break Err(format!(
                    "the guest printed nothing for {SILENCE:?}; its last lines:\n{}",
                    last.join("\n")
                ));
            }
            Err(RecvTimeoutError::Disconnected) => break Ok(()),
        };
        if last.len() == 20 {
            last.remove(0);
        }
        last.push(next.clone());
        if next.contains("KERNEL PANIC") {
            break Err(format!("the kernel panicked: {next}"));
        }
        // A benchmark task that panics or faults would never print its figures.
        if next.contains("panicked") || next.contains("; task ended") {
            break Err(format!("a benchmark task stopped: {next}"));
        }
        if line(next) {
            break Ok(());
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    result.map(|()| last)
}
