//! `cargo xtask harvest` on the heap app (RF trace, played again until the cycles are
//! done): with the capacitor the declared bound needs, 200 harvested power failures
//! (two runs of 100 at once, each on its own NVM image) lose nothing: every
//! checkpoint after a warning completes before the modelled brown-out, every next boot
//! resumes the checkpoint the power failure committed, and the app's work never goes
//! back (the harness fails the run otherwise, and on any VIOLATION line the apps
//! print). With a capacitor too small for the persist phase and checkpoint (a
//! fourteenth: the heap app's own phases are far below the worst case the bound
//! covers, and half the sized capacitor, even a seventh, still completes nearly all of
//! them: docs/energy-harvesting.md), the energy cut
//! (`amber.energy`) stops each one before it commits, and every next boot comes back
//! to a checkpoint at least as new as the one before.
//!
//! `AMBER_HARVEST_CYCLES` sets the power failures of the sized runs (200 when unset,
//! split over the two runs).

use amber_tests::{number_after, record, xtask};
use std::process::Command;

/// Runs the harness on the RF trace and returns its `harvest:` lines.
fn harvest(extra: &[&str]) -> Vec<String> {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/xtask/traces/rf.csv");
    let out = Command::new(xtask())
        .args(["harvest", "--app", "heap", "--trace", trace, "--no-build"])
        .args(extra)
        .output()
        .expect("cannot run xtask");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "xtask harvest {extra:?} failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter(|l| l.starts_with("harvest:"))
        .map(String::from)
        .collect()
}

fn line<'a>(lines: &'a [String], key: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.contains(key))
        .unwrap_or_else(|| panic!("no line with {key:?} in {lines:?}"))
}

/// A sized run of `cycles` power failures named `name`: every one completed its
/// checkpoint. Returns the capacitor and the harness's host-time line.
fn sized(name: &str, cycles: u32) -> (u64, String) {
    let n = cycles.to_string();
    let lines = harvest(&["--cycles", &n, "--repeat", "--name", name]);
    let needs = number_after(line(&lines, "needs >= "), "needs >= ").expect("a size");
    let cap = line(&lines, ", capacitor ");
    assert_eq!(
        number_after(cap, ", capacitor "),
        Some(needs),
        "the run uses the size the bound needs: {cap}"
    );
    let c = line(&lines, " power cycles");
    assert_eq!(number_after(c, "harvest: "), Some(u64::from(cycles)), "{c}");
    assert_eq!(number_after(c, "warned), "), Some(u64::from(cycles)), "{c}");
    assert!(c.contains(", 0 cut short"), "{c}");
    assert!(c.contains("work never went back"), "{c}");
    // The warning comes at the model's crossing of V_warn: the energy left then is
    // the window's, what the bound needs (to the model's step of 16,000 instructions).
    let left = line(&lines, "energy left at the warnings");
    let ratio: f64 = left
        .split_once(" instructions' worth (")
        .and_then(|(_, r)| r.split_once(" x the bound"))
        .and_then(|(r, _)| r.parse().ok())
        .unwrap_or_else(|| panic!("no ratio in {left}"));
    assert!((0.998..=1.001).contains(&ratio), "{left}");
    let progress = line(&lines, "forward progress");
    assert!(
        progress.contains("work lost per failure 0.0 units"),
        "{progress}"
    );
    (needs, line(&lines, "host time").to_owned())
}

#[test]
fn two_hundred_power_failures_on_the_sized_capacitor_lose_nothing_and_a_small_one_is_survived() {
    let total: u32 = std::env::var("AMBER_HARVEST_CYCLES")
        .ok()
        .map(|v| v.parse().expect("AMBER_HARVEST_CYCLES is a number"))
        .unwrap_or(200);
    let (a, b) = (total.div_ceil(2), total / 2);
    // The calibration boot once (`--cycles 0` only calibrates and sizes), for both
    // runs to reuse.
    let cal = harvest(&["--cycles", "0", "--name", "heap-rf-calibration"]);
    line(&cal, "needs >= ");
    let other = std::thread::spawn(move || sized("heap-rf-b", b));
    let (needs, host_a) = sized("heap-rf-a", a);
    let (needs_b, host_b) = other.join().expect("the second run");
    assert_eq!(needs, needs_b);

    // A fourteenth of it (energy for about 0.69 M instructions at the warning, which
    // comes about 1.6 M instructions after boot, inside the phase after the restore):
    // less than that phase and the checkpoint take.
    let small = (needs / 14).to_string();
    let cut = harvest(&["--cycles", "4", "--cap", &small, "--name", "heap-rf-small"]);
    let cycles = line(&cut, " power cycles");
    assert_eq!(number_after(cycles, "harvest: "), Some(4), "{cycles}");
    assert!(cycles.contains(", 4 cut short by the energy"), "{cycles}");
    record(&format!(
        "harvest (heap app, RF trace repeated, QEMU -icount): {needs} µF (sized from the bound): {total} of {total} power failures completed their checkpoint ({a} and {b} in two runs at once), every next boot resumed the checkpoint committed, the work never went back, the energy at each warning the bound's; {small} µF: 4 of 4 cut short, every next boot recovered; {} / {}",
        host_a.trim_start_matches("harvest: "),
        host_b.trim_start_matches("harvest: ")
    ));
}
