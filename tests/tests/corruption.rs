//! Corrupted NVM on QEMU: an image of the `ckcounter` app holding hundreds of
//! checkpoints, made once and stopped cleanly by a power-failure interrupt, has one
//! byte changed (commit record and format marker, ORoot table, every copy's data)
//! and is booted, again and again from a fresh copy. Every boot must resume (no
//! refusal, no fresh start), at most one version back and never silently, with the
//! counter no lower than the last value printed as committed before the image was
//! made. Two bytes changed in two different items may be refused, but only with a
//! message naming both. Each boot is stopped as soon as its verdict is read (the
//! resume line and the counter's first line, or the refusal).
//!
//! Seeded: the seed is printed, `AMBER_SEED` repeats a run. The summary line goes to
//! stderr directly, not through `eprintln!`, so that `cargo test` (which captures the
//! print macros of passing tests) shows it in `cargo xtask test`'s output.

use amber_ckpt::layout::{EXTENT_OFFSET, FORMAT_MARKER_LEN, FORMAT_MARKER_OFFSET, OROOT_OFFSET};
use amber_ckpt::CopyPlace;
use amber_kernel::exit::ExitCode;
use amber_tests::{app_machine, number_after, record, Qemu, Rng};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// The console byte that raises the power-failure interrupt (Ctrl-P).
const POWER_FAIL: u8 = 0x10;
/// The counter value after which the image is made (about 100 explicit checkpoints
/// plus the periodic ones, several hundred in all).
const BASELINE_COUNT: u64 = 10_000;
/// Single-byte trials by place, and two-byte trials.
const IN_COMMIT_SLOTS: usize = 24;
const IN_MARKER: usize = 6;
const IN_DESCRIPTORS: usize = 20;
const IN_TABLE: usize = 10;
const SINGLES: usize = 120;
const DOUBLES: usize = 16;

/// The image the trials start from.
struct Baseline {
    image: Vec<u8>,
    /// Its committed version G.
    committed: u64,
    /// The last counter value printed as committed before the power failure.
    printed: u64,
    area: u32,
    copies: Vec<CopyPlace>,
}

fn baseline(machine: &amber_qemu::Machine, image: &Path) -> Baseline {
    let mut q = Qemu::boot(machine);
    q.expect("fresh start");
    let printed = loop {
        let line = q.expect("counter: ");
        let n = number_after(&line, "counter: ").expect("a count");
        if n >= BASELINE_COUNT {
            break n;
        }
    };
    q.send(&[POWER_FAIL]);
    let done = q.expect("power failure: checkpoint");
    let committed = number_after(&done, "power failure: checkpoint ").expect("a version");
    assert_eq!(q.exit_code(), 0, "the power failure halts the machine");
    let bytes = std::fs::read(image).expect("the NVM image");
    let report = nvm_inspect::inspect(&bytes);
    assert!(
        report.is_consistent(),
        "{:?}\n{}",
        report.problems,
        report.text
    );
    assert_eq!(report.committed, Some(committed));
    Baseline {
        area: report.kernel_area.expect("a superblock").offset,
        copies: report.copies,
        image: bytes,
        committed,
        printed,
    }
}

/// How one boot of a damaged image ended.
enum Verdict {
    /// Resumed `version`; the counter's first line said `count`; `warnings` are the
    /// recovery's findings.
    Resumed {
        version: u64,
        count: u64,
        warnings: Vec<String>,
    },
    /// Recovery stopped with this message.
    Refused(String),
    /// Anything else: a fresh start, a panic, a wrong exit.
    Broken(String),
}

fn boot(machine: &amber_qemu::Machine) -> Verdict {
    let mut q = Qemu::boot(machine);
    let mut warnings = Vec::new();
    let timeout = Duration::from_secs(30);
    let version = loop {
        let Some(line) = q.next_line(timeout) else {
            return Verdict::Broken(format!(
                "no resume line within {timeout:?}\n{}",
                q.transcript()
            ));
        };
        if line.contains("checkpoint area: ") {
            warnings.push(line.clone());
        }
        if line.contains("cannot recover from the NVM") {
            let code = q.exit_code();
            if code != ExitCode::NvmRefused.code() {
                return Verdict::Broken(format!("refused with exit code {code}: {line}"));
            }
            return Verdict::Refused(line);
        }
        if line.contains("fresh start")
            || line.contains("KERNEL PANIC")
            || line.contains("refusing")
        {
            return Verdict::Broken(q.transcript());
        }
        if let Some(v) = number_after(&line, "recovered checkpoint ") {
            break v;
        }
    };
    let line = q.expect_within("counter: ", timeout);
    let count = number_after(&line, "counter: ").expect("a count");
    q.kill();
    Verdict::Resumed {
        version,
        count,
        warnings,
    }
}

#[derive(Default)]
struct Tally {
    refused: usize,
    silent_resets: usize,
    counters_below: usize,
    silent_rollbacks: usize,
    rolled_back: usize,
    from_twin: usize,
    cleared: usize,
    unchanged: usize,
}

impl Tally {
    /// Checks a resumed boot; returns why it is wrong, if it is.
    fn resumed(
        &mut self,
        b: &Baseline,
        version: u64,
        count: u64,
        warnings: &[String],
    ) -> Option<String> {
        let g = b.committed;
        if count < b.printed {
            self.counters_below += 1;
            return Some(format!("counter {count} below the committed {}", b.printed));
        }
        if version + 1 < g || version > g {
            return Some(format!("resumed version {version}, committed was {g}"));
        }
        if version < g {
            self.rolled_back += 1;
            let said = format!("resuming version {version}");
            if !warnings.iter().any(|w| w.contains(&said)) {
                self.silent_rollbacks += 1;
                return Some(format!("version {g} lost without a word: {warnings:?}"));
            }
        } else if warnings
            .iter()
            .any(|w| w.contains("restored from the twin"))
        {
            self.from_twin += 1;
        } else if warnings.is_empty() {
            // Every byte tried is checked by a CRC or compared with zero.
            self.unchanged += 1;
            return Some("the damage went unreported".into());
        } else {
            self.cleared += 1;
        }
        None
    }
}

/// A random byte of `r` (offset, length) relative to nothing: a device offset.
fn byte_in(rng: &mut Rng, offset: u32, len: u32) -> u32 {
    offset + rng.below(u64::from(len.max(1))) as u32
}

/// A random byte of one copy: its descriptor or its data.
fn byte_of(rng: &mut Rng, c: &CopyPlace) -> u32 {
    let n = c.descriptor.len + c.data.len;
    let k = rng.below(u64::from(n)) as u32;
    if k < c.descriptor.len {
        c.descriptor.offset + k
    } else {
        c.data.offset + k - c.descriptor.len
    }
}

fn flip(rng: &mut Rng, image: &mut [u8], at: u32) {
    image[at as usize] ^= 1 + rng.below(255) as u8;
}

#[test]
fn a_corrupted_byte_anywhere_in_the_checkpoint_area_loses_at_most_the_newest_version_and_never_silently(
) {
    let mut rng = Rng::from_env("corruption");
    let machine = app_machine("ckcounter");
    let image = machine.nvm.as_ref().expect("an NVM").0.clone();
    let b = baseline(&machine, &image);
    let area = b.area;
    let live: Vec<&CopyPlace> = b.copies.iter().filter(|c| c.live).collect();
    assert!(
        live.len() >= 8,
        "the counter app has more copies: {}",
        live.len()
    );

    // Where the single bytes go: the commit record's two slots and the marker, the
    // descriptors of copies and the table at large, then every copy's data once and
    // more at random.
    let mut singles = Vec::new();
    let slot_len = FORMAT_MARKER_OFFSET / 2;
    for i in 0..IN_COMMIT_SLOTS {
        let slot = (i % 2) as u32;
        singles.push(byte_in(&mut rng, area + slot * slot_len, slot_len));
    }
    for _ in 0..IN_MARKER {
        singles.push(byte_in(
            &mut rng,
            area + FORMAT_MARKER_OFFSET,
            FORMAT_MARKER_LEN as u32,
        ));
    }
    for _ in 0..IN_DESCRIPTORS {
        let c = b.copies[rng.below(b.copies.len() as u64) as usize];
        singles.push(byte_in(&mut rng, c.descriptor.offset, c.descriptor.len));
    }
    for _ in 0..IN_TABLE {
        singles.push(byte_in(
            &mut rng,
            area + OROOT_OFFSET,
            EXTENT_OFFSET - OROOT_OFFSET,
        ));
    }
    let with_data: Vec<&CopyPlace> = b.copies.iter().filter(|c| c.data.len > 0).collect();
    for c in &with_data {
        singles.push(byte_in(&mut rng, c.data.offset, c.data.len));
    }
    while singles.len() < SINGLES {
        let c = with_data[rng.below(with_data.len() as u64) as usize];
        singles.push(byte_in(&mut rng, c.data.offset, c.data.len));
    }

    let mut t = Tally::default();
    let mut failures = Vec::new();
    for (i, &at) in singles.iter().enumerate() {
        let mut bad = b.image.clone();
        flip(&mut rng, &mut bad, at);
        std::fs::write(&image, &bad).expect("write the trial image");
        let what = format!("single byte {i} at {at:#x} (area + {:#x})", at - area);
        match boot(&machine) {
            Verdict::Resumed {
                version,
                count,
                warnings,
            } => {
                if let Some(why) = t.resumed(&b, version, count, &warnings) {
                    failures.push(format!("{what}: {why}"));
                }
            }
            Verdict::Refused(line) => {
                t.refused += 1;
                failures.push(format!("{what}: refused: {line}"));
            }
            Verdict::Broken(why) => {
                if why.contains("fresh start") {
                    t.silent_resets += 1;
                }
                failures.push(format!("{what}: {why}"));
            }
        }
    }

    // Two bytes in two different items.
    let mut items: Vec<u16> = b.copies.iter().map(|c| c.item.0).collect();
    items.sort();
    items.dedup();
    let (mut d_refused, mut d_back, mut d_newest) = (0, 0, 0);
    for i in 0..DOUBLES {
        let a = items[rng.below(items.len() as u64) as usize];
        let c = loop {
            let c = items[rng.below(items.len() as u64) as usize];
            if c != a {
                break c;
            }
        };
        let pick = |rng: &mut Rng, item: u16| {
            let of: Vec<&CopyPlace> = b.copies.iter().filter(|p| p.item.0 == item).collect();
            let k = rng.below(of.len() as u64) as usize;
            byte_of(rng, of[k])
        };
        let (xa, xc) = (pick(&mut rng, a), pick(&mut rng, c));
        let mut bad = b.image.clone();
        flip(&mut rng, &mut bad, xa);
        flip(&mut rng, &mut bad, xc);
        std::fs::write(&image, &bad).expect("write the trial image");
        let what = format!("two bytes {i}: {xa:#x} (item {a}) and {xc:#x} (item {c})");
        let mut tally = Tally::default();
        match boot(&machine) {
            Verdict::Resumed {
                version,
                count,
                warnings,
            } => match tally.resumed(&b, version, count, &warnings) {
                Some(why) => failures.push(format!("{what}: {why}")),
                None if version < b.committed => d_back += 1,
                None => d_newest += 1,
            },
            Verdict::Refused(line) => {
                d_refused += 1;
                if !(line.contains(&format!("item {a} slot"))
                    && line.contains(&format!("item {c} slot")))
                {
                    failures.push(format!("{what}: refused without naming both items: {line}"));
                }
            }
            Verdict::Broken(why) => failures.push(format!("{what}: {why}")),
        }
    }

    let summary = format!(
        "corruption test (seed {}; ckcounter, checkpoint {} committed, counter {}): {} single-byte flips \
         ({} in the commit record, {IN_MARKER} in the format marker, {} in the ORoot table, {} in \
         the data of all {} copies): {} refusals, {} silent resets, {} counters below the last \
         committed value, {} rolled back one version ({} of them silently), {} restored from a \
         twin, {} other damage reported (nothing lost), {} unreported; {DOUBLES} two-flip trials in different items: \
         {d_refused} refused naming both, {d_back} rolled back, {d_newest} resumed the newest; \
         {} failures",
        rng.seed(),
        b.committed,
        b.printed,
        singles.len(),
        IN_COMMIT_SLOTS,
        IN_DESCRIPTORS + IN_TABLE,
        singles.len() - IN_COMMIT_SLOTS - IN_MARKER - IN_DESCRIPTORS - IN_TABLE,
        with_data.len(),
        t.refused,
        t.silent_resets,
        t.counters_below,
        t.rolled_back,
        t.silent_rollbacks,
        t.from_twin,
        t.cleared,
        t.unchanged,
        failures.len()
    );
    // Straight to stderr: `cargo test` captures only the print macros.
    let _ = writeln!(std::io::stderr(), "{summary}");
    record(&format!("corrupted NVM (QEMU): {summary}"));
    assert!(
        failures.is_empty(),
        "{summary}\nfirst failures:\n{}",
        failures[..failures.len().min(5)].join("\n")
    );
    assert!(
        t.rolled_back > 0 && t.from_twin > 0,
        "{summary}: the trials missed a case"
    );
}
