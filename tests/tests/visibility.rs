//! Delayed external visibility on QEMU: the writer task sends numbered records to the
//! FRAM through the SPI driver task (record n holds n, at 4 * (n mod SLOTS) of the
//! FRAM). Reading the NVM file after every power cut, no record may be on the chip
//! that the checkpoint the system comes back to does not cover; and after a recovery,
//! every record that checkpoint covers must reach the chip. A full ring is refused and
//! the writer's own checkpoint makes it visible.

use amber_tests::{app_machine, number_after, Qemu, Rng};
use std::time::{Duration, Instant};

/// Host time the guest may take to reach a line it will print: a generous bound on a
/// wait that guest progress ends first (the machine may be busy).
const GUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// Where the FRAM partition lies in a 4 MiB NVM image (superblock format v3).
const FRAM_OFFSET: usize = 0x38_0000;
/// Records the writer keeps before wrapping (`user/tasks/writer`).
const SLOTS: usize = 64 * 1024;

/// Record n as the FRAM holds it (0 where no record was written).
fn record(image: &[u8], n: usize) -> u32 {
    let at = FRAM_OFFSET + 4 * (n % SLOTS);
    u32::from_le_bytes(image[at..at + 4].try_into().unwrap())
}

/// The highest record number on the chip.
fn highest(image: &[u8]) -> u32 {
    (0..SLOTS).map(|n| record(image, n)).max().unwrap_or(0)
}

/// Reads console lines until `deadline`, returning the first that contains one of
/// `needles`; `None` when the deadline passes or QEMU stops (a store cut fired).
fn wait_for_any(q: &mut Qemu, needles: &[&str], deadline: Instant) -> Option<String> {
    while let Some(line) = q.next_line(deadline.saturating_duration_since(Instant::now())) {
        if needles.iter().any(|n| line.contains(n)) {
            return Some(line);
        }
        assert!(!line.contains("KERNEL PANIC"), "{}", q.transcript());
    }
    None
}

/// As [`wait_for_any`] for one needle.
fn wait_for(q: &mut Qemu, needle: &str, deadline: Instant) -> Option<String> {
    wait_for_any(q, &[needle], deadline)
}

#[test]
fn no_fram_write_reaches_the_chip_before_its_checkpoint_commits() {
    let machine = app_machine("spiring");
    let image = machine.nvm.as_ref().unwrap().0.clone();
    let mut rng = Rng::from_env("visibility");
    let mut on_chip_at_cut: Option<u32> = None;
    let mut checked = 0;
    let mut most_on_chip = 0;
    for cycle in 0..30 {
        let mut m = machine.clone();
        if cycle % 2 == 1 {
            m.bootargs = format!("amber.cut={}:{}", 1 + rng.below(600), rng.below(5));
        }
        let mut q = Qemu::boot(&m);
        let deadline = Instant::now() + GUEST_TIMEOUT;
        // The boot ends in a fresh start (the first, or after a cut before the first
        // commit) or in the recovery of a checkpoint, unless a store cut stops it
        // first. The random instant of the cut below counts from there, so that the
        // cut falls while the system runs, however long the boot took.
        let recovered = wait_for_any(&mut q, &["recovered checkpoint", "fresh start"], deadline)
            .is_some_and(|l| l.contains("recovered checkpoint"));
        if let (true, Some(max)) = (recovered, on_chip_at_cut) {
            // The writer says which record it had written in that checkpoint. Nothing
            // beyond it may have been on the chip.
            if let Some(line) = wait_for(&mut q, "writer: restored at ", deadline) {
                let resumed = number_after(&line, "restored at ").unwrap() as u32;
                assert!(
                    max <= resumed,
                    "cycle {cycle}: record {max} was on the FRAM, but the checkpoint the \
                     system came back to had written only {resumed}"
                );
                checked += 1;
            }
        }
        let run = Duration::from_millis(100 + rng.below(300));
        let until = Instant::now() + run;
        while q
            .next_line(until.saturating_duration_since(Instant::now()))
            .is_some()
        {}
        q.kill();
        let bytes = std::fs::read(&image).unwrap();
        let report = nvm_inspect::inspect(&bytes);
        assert!(
            report.is_consistent(),
            "cycle {cycle}: {:?}",
            report.problems
        );
        let max = highest(&bytes);
        most_on_chip = most_on_chip.max(max);
        on_chip_at_cut = Some(max);
    }
    assert!(
        checked > 5,
        "too few cycles reached a recovery to check anything"
    );
    assert!(
        most_on_chip > 0,
        "no record ever reached the FRAM: the check above proved nothing"
    );
    amber_tests::record(&format!(
        "FRAM visibility (QEMU, app spiring): 30 power cuts, {checked} recoveries checked against the FRAM \
         (up to record {most_on_chip} on the chip), violations: 0"
    ));
}

#[test]
fn every_committed_write_reaches_the_chip_after_recovery() {
    let machine = app_machine("spiring");
    let image = machine.nvm.as_ref().unwrap().0.clone();
    let mut q = Qemu::boot(&machine);
    q.expect_within("writer: 3000 written", GUEST_TIMEOUT);
    q.send(&[0x10]); // the power-failure interrupt: commit, then halt
    q.expect("power failure: checkpoint");
    assert_eq!(q.exit_code(), 0);
    let first = q.transcript();

    let mut q = Qemu::boot(&machine);
    // Both tasks report the restore, in either order.
    let (mut committed, mut driver_restored) = (None, false);
    let until = Instant::now() + GUEST_TIMEOUT;
    while committed.is_none() || !driver_restored {
        let line = wait_for(&mut q, "restored at ", until).expect("both tasks report the restore");
        if line.contains("writer: restored at ") {
            committed = number_after(&line, "writer: restored at ").map(|n| n as usize);
        }
        driver_restored |= line.contains("spidrv: restored at writer index");
    }
    let committed = committed.unwrap();
    // Let the driver apply after the next commits, then cut.
    let next = (committed / 1000 + 2) * 1000;
    q.expect_within(&format!("writer: {next} written"), GUEST_TIMEOUT);
    q.kill();
    let bytes = std::fs::read(&image).unwrap();
    assert!((3000..SLOTS).contains(&committed));
    for n in 1..=committed {
        assert_eq!(
            record(&bytes, n),
            n as u32,
            "record {n} was committed (the system resumed at {committed}) but is not on the FRAM\n\
             before the power failure:\n{first}\nafter it:\n{}",
            q.transcript()
        );
    }
}

/// App `spiring-full` takes no periodic checkpoints: the driver's ring fills, the
/// driver refuses the write (it never waits for a checkpoint itself, so that it keeps
/// serving persist callbacks), and the writer asks for the checkpoint and writes the
/// record again. Every record the last such checkpoint covers reaches the chip, none
/// is lost or skipped, and none beyond what was written does.
#[test]
fn a_full_ring_is_refused_and_the_writers_checkpoint_makes_it_visible() {
    let machine = app_machine("spiring-full");
    let image = machine.nvm.as_ref().unwrap().0.clone();
    let mut q = Qemu::boot(&machine);
    let deadline = Instant::now() + GUEST_TIMEOUT;
    let mut fulls = Vec::new();
    while fulls.len() < 3 {
        let line = wait_for(&mut q, "writer: ring full at record ", deadline)
            .unwrap_or_else(|| panic!("the ring never filled\n{}", q.transcript()));
        assert!(
            line.contains("checkpoint taken"),
            "{line}\n{}",
            q.transcript()
        );
        fulls.push(number_after(&line, "at record ").unwrap() as usize);
    }
    // Each fill holds the same number of records (one 28-byte entry each).
    assert_eq!(fulls[2] - fulls[1], fulls[1] - fulls[0], "{fulls:?}");
    // The driver applies the ring at its next call after the commit: the retry.
    let last = fulls[2];
    q.expect_within(
        &format!("writer: {} written", (last / 1000 + 1) * 1000),
        GUEST_TIMEOUT,
    );
    q.kill();
    let bytes = std::fs::read(&image).unwrap();
    for n in 1..last {
        assert_eq!(
            record(&bytes, n),
            n as u32,
            "record {n} was covered by the writer's checkpoint at record {last} but is not on the FRAM"
        );
    }
    let top = highest(&bytes) as usize;
    assert!(
        top < last + (last - fulls[1]),
        "record {top} is on the FRAM, beyond what the next checkpoint could cover"
    );
    eprintln!(
        "ring full at records {fulls:?}; records 1 to {} on the FRAM",
        top
    );
}
