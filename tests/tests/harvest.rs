//! `cargo xtask harvest` on the heap app (RF trace): with the capacitor the declared
//! bound needs, every power failure's checkpoint completes before the modelled
//! brown-out; with a capacitor too small for the persist phase and checkpoint, the
//! energy cut (`amber.energy`) stops each one before it commits, and every next boot
//! comes back to the checkpoint before (the harness fails a cycle whose boot does not
//! recover a checkpoint, and any VIOLATION the apps print).

use amber_tests::{number_after, record, xtask};
use std::process::Command;

/// Runs the harness and returns its `harvest:` lines.
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

#[test]
fn the_sized_capacitor_completes_every_checkpoint_and_a_small_one_is_survived() {
    let sized = harvest(&["--cycles", "5"]);
    let needs = number_after(line(&sized, "needs >= "), "needs >= ").expect("a size");
    let cycles = line(&sized, " power cycles");
    assert_eq!(number_after(cycles, "harvest: "), Some(5), "{cycles}");
    assert_eq!(number_after(cycles, "warned), "), Some(5), "{cycles}");
    assert!(cycles.contains(", 0 cut short"), "{cycles}");

    // A seventh of it: less than the persist phase and checkpoint take.
    let small = (needs / 7).to_string();
    let cut = harvest(&["--cycles", "4", "--cap", &small]);
    let cycles = line(&cut, " power cycles");
    assert_eq!(number_after(cycles, "harvest: "), Some(4), "{cycles}");
    assert!(cycles.contains(", 4 cut short by the energy"), "{cycles}");
    record(&format!(
        "harvest (heap app, RF trace, QEMU -icount): {needs} µF (sized from the bound): 5 of 5 checkpoints completed; {small} µF: 4 of 4 cut short, every next boot recovered the checkpoint before"
    ));
}
