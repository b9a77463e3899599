//! `cargo xtask bench --fast --check` (the syscall and checkpoint parts) against the
//! committed baseline passes, and a second run prints every exact figure equal to the
//! first (`-icount` makes them repeat); against a doctored copy of the baseline that
//! says two figures were lower than they are and one higher, it fails naming exactly
//! those two, and lists the third as better without failing on it.

use amber_tests::{record, scratch, xtask};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const BASELINE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tools/xtask/bench-baseline.toml"
);

/// Runs the fast check against `baseline`, the report into `out`: whether it passed,
/// and its stdout and stderr.
fn check(baseline: &Path, out: &Path) -> (bool, String, String) {
    let run = Command::new(xtask())
        .args(["bench", "--fast", "--check", "--no-build", "--baseline"])
        .arg(baseline)
        .arg("--out")
        .arg(out)
        .output()
        .expect("cannot run xtask");
    (
        run.status.success(),
        String::from_utf8_lossy(&run.stdout).into_owned(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

/// The figures of a run's `report.csv`: id to value, as printed.
fn figures(out: &Path) -> BTreeMap<String, String> {
    let csv = std::fs::read_to_string(out.join("report.csv")).expect("the run wrote report.csv");
    csv.lines()
        .skip(1)
        .map(|l| {
            // commit,id,label,value,...: the label may hold quoted commas, so the value
            // is taken from the end (value,unit,baseline,change,verdict).
            let id = l.split(',').nth(1).expect("an id").to_owned();
            let tail: Vec<&str> = l.rsplitn(6, ',').collect();
            (id, tail[4].to_owned())
        })
        .collect()
}

/// `text` (a baseline) with `key` of table `[table]` set to `value`.
fn doctor(text: &str, table: &str, key: &str, value: u64) -> String {
    let header = format!("[{table}]");
    let mut inside = false;
    let mut done = false;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            if l.starts_with('[') {
                inside = l == header;
            } else if inside && l.starts_with(&format!("{key} = ")) {
                done = true;
                return format!("{key} = {value}");
            }
            l.to_owned()
        })
        .collect();
    assert!(done, "the baseline has no {table}.{key}");
    lines.join("\n") + "\n"
}

#[test]
fn the_check_passes_on_the_baseline_and_names_each_figure_a_doctored_copy_undercuts() {
    let dir = scratch("bench-check");
    let (ok, stdout, stderr) = check(Path::new(BASELINE), &dir.join("real"));
    assert!(
        ok && stdout.contains("bench: check passed"),
        "the fast check fails against the committed baseline:\n{stdout}\n{stderr}"
    );
    let real = figures(&dir.join("real"));
    let value = |id: &str| -> u64 {
        real.get(id)
            .unwrap_or_else(|| panic!("the run has no figure {id}"))
            .parse()
            .expect("a whole number")
    };
    // Two figures the baseline now says were 10 % lower, one it says was 50 % higher.
    let (ipc, idle, recovery) = (
        value("syscall.ipc-round-trip.mean"),
        value("checkpoint.idle-nothing-dirty.pause"),
        value("checkpoint.recovery.validate"),
    );
    let text = std::fs::read_to_string(BASELINE).expect("the baseline");
    let text = doctor(&text, "syscall.ipc-round-trip", "mean", ipc * 9 / 10);
    let text = doctor(
        &text,
        "checkpoint.idle-nothing-dirty",
        "pause",
        idle * 9 / 10,
    );
    let text = doctor(&text, "checkpoint.recovery", "validate", recovery * 3 / 2);
    let doctored = dir.join("doctored.toml");
    std::fs::write(&doctored, text).expect("write the doctored baseline");

    let (ok, stdout, stderr) = check(&doctored, &dir.join("doctored"));
    assert!(
        !ok,
        "the check passed against a baseline that undercuts two figures:\n{stdout}"
    );
    assert!(
        stderr.contains("2 figure(s) worse than the baseline")
            && stderr.contains(&format!(
                "syscall.ipc-round-trip.mean = {ipc} instructions, baseline {}",
                ipc * 9 / 10
            ))
            && stderr.contains(&format!(
                "checkpoint.idle-nothing-dirty.pause = {idle} instructions, baseline {}",
                idle * 9 / 10
            )),
        "the failure must name both undercut figures with their values:\n{stderr}"
    );
    assert!(
        !stderr.contains("checkpoint.recovery.validate ="),
        "a figure better than its baseline must not fail the check:\n{stderr}"
    );
    assert!(
        stdout.contains("bench: better: checkpoint.recovery.validate"),
        "a figure better than its baseline is listed:\n{stdout}"
    );

    // Exact figures: the second run printed every figure exactly as the first.
    let again = figures(&dir.join("doctored"));
    assert_eq!(
        real, again,
        "two runs under -icount printed different figures"
    );
    record(&format!(
        "bench check (fast part): {} exact figures equal in two runs, within 3 % of the baseline; a doctored baseline fails naming its 2 undercut figures",
        real.len()
    ));
}
