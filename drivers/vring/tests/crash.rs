//! Power cuts at every store of a driver's life, and what the device may hold after each.
//!
//! A model system runs a fixed plan: clients append writes, a checkpoint commits
//! visible = writer index (the kernel's commit is atomic and makes no store on these
//! devices, so the test just records the committed value), and the driver applies up
//! to the committed index; a full ring makes the system take a checkpoint and apply, as
//! the driver task would. The plan is run once to count the stores on the ring NVM and
//! on the device, then once per cut: every store of either, torn after every byte for
//! stores of up to 24 bytes and after 0, 1, 2, len-1 and len bytes for longer ones.
//! After each cut the ring is restored with the last committed index, and that restore
//! is itself cut at each of its stores (a nested cut) and restored again.
//!
//! Every device write carries a distinct serial number as its data bytes, so any
//! device byte names the write that put it there. At every cut the device may only
//! hold bytes of writes below the visible index committed at that time; after a
//! restore it must hold exactly the in-order result of all those writes, the writer
//! index must be the committed index, and the ring must keep working.

use amber_nvm::sim::{Cut, PowerCut, VecNvm};
use amber_nvm::{Nvm, NvmError};
use amber_vring::layout::DATA_OFFSET;
use amber_vring::{Region, Ring, RingError, RingIndex};

const RING_NVM_LEN: u32 = 512;
const DEVICE_LEN: u32 = 96;
/// 192 data bytes: a handful of entries per lap, so the plan wraps and fills the ring.
const REGION: Region = Region {
    offset: 32,
    len: DATA_OFFSET + 192,
};

#[derive(Clone, Copy, Debug)]
enum Op {
    Append {
        addr: u32,
        len: u32,
    },
    /// A checkpoint commits: visible = writer index.
    Commit,
    /// The driver applies up to the committed index.
    Apply,
}

/// One write that `append` accepted.
#[derive(Clone, Copy, Debug)]
struct Write {
    serial: u8,
    addr: u32,
    len: u32,
    /// The writer index after it: committed visible >= end means it must be applied.
    end: u64,
}

/// What the system had done when the run ended (by a cut or at the end of the plan).
#[derive(Clone, Debug, Default)]
struct Outcome {
    committed: u64,
    writes: Vec<Write>,
    cut: bool,
    /// Appends refused as full (each followed by a checkpoint and an apply).
    fulls: u32,
}

/// A fixed plan: several rounds with appends before and after the commit, a burst that
/// fills the ring, and an uncommitted tail that a restore must drop.
fn plan() -> Vec<Op> {
    let mut seed = 0x2545_f491_u32;
    let mut next = move |n: u32| {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (seed >> 16) % n
    };
    let mut append = |ops: &mut Vec<Op>, count: usize| {
        for _ in 0..count {
            let len = 1 + next(24);
            let addr = next(DEVICE_LEN - len + 1);
            ops.push(Op::Append { addr, len });
        }
    };
    let mut ops = Vec::new();
    append(&mut ops, 2);
    ops.push(Op::Commit);
    append(&mut ops, 1);
    ops.push(Op::Apply);
    append(&mut ops, 3);
    ops.push(Op::Commit);
    ops.push(Op::Apply);
    append(&mut ops, 7); // more than a ring's worth: back-pressure
    ops.push(Op::Commit);
    append(&mut ops, 2);
    ops.push(Op::Apply);
    ops.push(Op::Commit);
    ops.push(Op::Apply);
    append(&mut ops, 2); // never committed
    ops
}

/// Runs `plan` from a freshly formatted ring until it ends or power is cut.
fn run(plan: &[Op], nvm: &mut impl Nvm, dev: &mut impl Nvm) -> Outcome {
    let mut out = Outcome::default();
    match drive(plan, nvm, dev, &mut out) {
        Ok(()) => {}
        Err(RingError::Nvm(NvmError::PowerLost)) => out.cut = true,
        Err(e) => panic!("the system failed without a power cut: {e}"),
    }
    out
}

fn drive(
    plan: &[Op],
    nvm: &mut impl Nvm,
    dev: &mut impl Nvm,
    out: &mut Outcome,
) -> Result<(), RingError> {
    let (mut ring, _) = Ring::open(nvm, dev, REGION, RingIndex(0))?;
    for op in plan {
        match *op {
            Op::Append { addr, len } => {
                let serial = out.writes.len() as u8 + 1;
                let data = vec![serial; len as usize];
                let end = match ring.append(nvm, addr, &data) {
                    Err(RingError::Full { .. }) => {
                        out.fulls += 1;
                        assert!(
                            matches!(ring.append(nvm, addr, &data), Err(RingError::Full { .. })),
                            "a full ring took an append before apply freed space"
                        );
                        out.committed = ring.writer_index().0;
                        ring.apply(nvm, dev, RingIndex(out.committed))?;
                        match ring.append(nvm, addr, &data) {
                            Err(RingError::Full { .. }) => {
                                panic!("an emptied ring refused an append")
                            }
                            other => other?,
                        }
                    }
                    other => other?,
                };
                out.writes.push(Write {
                    serial,
                    addr,
                    len,
                    end: end.0,
                });
            }
            Op::Commit => out.committed = ring.writer_index().0,
            Op::Apply => {
                ring.apply(nvm, dev, RingIndex(out.committed))?;
            }
        }
    }
    Ok(())
}

/// The device after every write below `visible`, in order.
fn expected(writes: &[Write], visible: u64) -> Vec<u8> {
    let mut image = vec![0u8; DEVICE_LEN as usize];
    for w in writes.iter().filter(|w| w.end <= visible) {
        image[w.addr as usize..(w.addr + w.len) as usize].fill(w.serial);
    }
    image
}

/// Every device byte is untouched or was put there by a write below `committed`.
fn check_visibility(device: &[u8], writes: &[Write], committed: u64) -> Result<(), String> {
    for (addr, &v) in device.iter().enumerate() {
        if v == 0 {
            continue;
        }
        let Some(w) = writes.get(v as usize - 1) else {
            return Err(format!("device byte {addr} holds {v}, no accepted write"));
        };
        if w.end > committed {
            return Err(format!(
                "device byte {addr} holds write {v} (ends at {}) beyond the committed index {committed}",
                w.end
            ));
        }
        if !(w.addr..w.addr + w.len).contains(&(addr as u32)) {
            return Err(format!(
                "device byte {addr} holds write {v}, which never covered it"
            ));
        }
    }
    Ok(())
}

/// Restores without a cut and checks the committed state, then keeps using the ring.
fn check_restore(ring_image: &[u8], dev_image: &[u8], out: &Outcome) -> Result<(), String> {
    let mut nvm = VecNvm::from_image(ring_image.to_vec());
    let mut dev = VecNvm::from_image(dev_image.to_vec());
    let (mut ring, _) = Ring::open(&mut nvm, &mut dev, REGION, RingIndex(out.committed))
        .map_err(|e| format!("restore failed: {e}"))?;
    if ring.writer_index().0 != out.committed {
        return Err(format!(
            "writer index {} after restore, committed {}",
            ring.writer_index().0,
            out.committed
        ));
    }
    if dev.image() != expected(&out.writes, out.committed) {
        return Err("the restored device is not the committed writes in order".into());
    }
    // The ring keeps working: two more writes are read back pending, then applied.
    let mut serial = out.writes.len() as u8;
    let mut writes: Vec<Write> = out
        .writes
        .iter()
        .copied()
        .filter(|w| w.end <= out.committed)
        .collect();
    for (addr, len) in [(3u32, 20u32), (10, 5)] {
        serial += 1;
        let end = ring
            .append(&mut nvm, addr, &vec![serial; len as usize])
            .map_err(|e| format!("append after restore failed: {e}"))?;
        writes.push(Write {
            serial,
            addr,
            len,
            end: end.0,
        });
    }
    let mut seen = vec![0u8; DEVICE_LEN as usize];
    ring.read(&mut nvm, &mut dev, 0, &mut seen)
        .map_err(|e| format!("read after restore failed: {e}"))?;
    if seen != expected(&writes, u64::MAX) {
        return Err("a read after restore does not show the pending writes".into());
    }
    let visible = ring.writer_index();
    ring.apply(&mut nvm, &mut dev, visible)
        .map_err(|e| format!("apply after restore failed: {e}"))?;
    if dev.image() != expected(&writes, visible.0) {
        return Err("writes after restore did not reach the device in order".into());
    }
    Ok(())
}

/// How much of a store of `len` bytes a cut keeps.
fn tears(len: usize) -> Vec<usize> {
    if len <= 24 {
        (0..=len).collect()
    } else {
        vec![0, 1, 2, len - 1, len]
    }
}

#[derive(Clone, Copy, Debug)]
enum Target {
    Ring,
    Device,
}

/// Both devices, one of them cut as `cut` says (or neither).
fn devices(
    ring_image: &[u8],
    dev_image: &[u8],
    cut: Option<(Target, Cut)>,
) -> (PowerCut<VecNvm>, PowerCut<VecNvm>) {
    let nvm = VecNvm::from_image(ring_image.to_vec());
    let dev = VecNvm::from_image(dev_image.to_vec());
    match cut {
        None => (PowerCut::never(nvm), PowerCut::never(dev)),
        Some((Target::Ring, cut)) => (PowerCut::at(nvm, cut), PowerCut::never(dev)),
        Some((Target::Device, cut)) => (PowerCut::never(nvm), PowerCut::at(dev, cut)),
    }
}

/// Every (target, store, kept bytes) cut of a run whose stores had these lengths.
fn cuts(ring_lens: &[usize], dev_lens: &[usize]) -> Vec<(Target, Cut)> {
    let mut all = Vec::new();
    for (target, lens) in [(Target::Ring, ring_lens), (Target::Device, dev_lens)] {
        for (at, &len) in lens.iter().enumerate() {
            for keep_bytes in tears(len) {
                let cut = Cut {
                    at_store: at as u64,
                    keep_bytes,
                };
                all.push((target, cut));
            }
        }
    }
    all
}

fn fresh_images() -> (Vec<u8>, Vec<u8>) {
    let mut nvm = VecNvm::new(RING_NVM_LEN);
    Ring::format(&mut nvm, REGION).unwrap();
    (nvm.into_image(), vec![0; DEVICE_LEN as usize])
}

#[test]
fn every_power_cut_leaves_the_device_at_committed_writes_and_restore_completes_them() {
    let plan = plan();
    let (ring0, dev0) = fresh_images();
    let (mut nvm, mut dev) = devices(&ring0, &dev0, None);
    let whole = run(&plan, &mut nvm, &mut dev);
    assert!(!whole.cut);
    assert!(whole.fulls > 0, "the plan must fill the ring at least once");
    assert!(
        whole.committed > 2 * 192,
        "the plan must go around the ring more than twice"
    );
    assert!(
        whole.writes.last().unwrap().end > whole.committed,
        "the plan must end with uncommitted writes for the restore to drop"
    );
    let first_cuts = cuts(nvm.store_lens(), dev.store_lens());

    let first = first_cuts.len() as u64;
    let mut explored = 0u64;
    let mut failures: Vec<String> = Vec::new();
    for (target, cut) in first_cuts {
        let (mut nvm, mut dev) = devices(&ring0, &dev0, Some((target, cut)));
        let out = run(&plan, &mut nvm, &mut dev);
        explored += 1;
        let what = format!(
            "cut at {target:?} store {} keeping {}",
            cut.at_store, cut.keep_bytes
        );
        if !out.cut {
            failures.push(format!("{what}: the cut never happened"));
            continue;
        }
        let ring_image = nvm.into_inner().into_image();
        let dev_image = dev.into_inner().into_image();
        if let Err(e) = check_visibility(&dev_image, &out.writes, out.committed) {
            failures.push(format!("{what}: {e}"));
        }
        if let Err(e) = check_restore(&ring_image, &dev_image, &out) {
            failures.push(format!("{what}, then restore: {e}"));
        }
        // Cut the restore itself at each of its stores, then restore again.
        let (mut nvm, mut dev) = devices(&ring_image, &dev_image, None);
        Ring::open(&mut nvm, &mut dev, REGION, RingIndex(out.committed)).unwrap();
        for (target2, cut2) in cuts(nvm.store_lens(), dev.store_lens()) {
            let (mut nvm, mut dev) = devices(&ring_image, &dev_image, Some((target2, cut2)));
            explored += 1;
            let what = format!(
                "{what}, then restore cut at {target2:?} store {} keeping {}",
                cut2.at_store, cut2.keep_bytes
            );
            match Ring::open(&mut nvm, &mut dev, REGION, RingIndex(out.committed)) {
                Err(RingError::Nvm(NvmError::PowerLost)) => {}
                other => {
                    failures.push(format!("{what}: the cut restore returned {other:?}"));
                    continue;
                }
            }
            let ring_image = nvm.into_inner().into_image();
            let dev_image = dev.into_inner().into_image();
            if let Err(e) = check_visibility(&dev_image, &out.writes, out.committed) {
                failures.push(format!("{what}: {e}"));
            }
            if let Err(e) = check_restore(&ring_image, &dev_image, &out) {
                failures.push(format!("{what}, then restore: {e}"));
            }
        }
    }
    println!(
        "({first} cuts in append and apply, {} nested cuts in the restores after them)",
        explored - first
    );
    println!(
        "crash states explored: {explored}, failed: {}",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} crash states broke delayed visibility, first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
    amber_test_summary::record(&format!(
        "write ring (host, drivers/vring): {explored} crash states explored, {} failed",
        failures.len()
    ));
}

#[test]
fn a_format_cut_anywhere_leaves_no_ring_or_an_empty_one() {
    // A used ring (applied index far from 0, entries everywhere) is formatted again.
    let (ring0, dev0) = fresh_images();
    let (mut nvm, mut dev) = devices(&ring0, &dev0, None);
    run(&plan(), &mut nvm, &mut dev);
    let used = nvm.into_inner().into_image();
    let mut count = PowerCut::never(VecNvm::from_image(used.clone()));
    Ring::format(&mut count, REGION).unwrap();
    let mut explored = 0;
    for (_, cut) in cuts(count.store_lens(), &[]) {
        let mut nvm = PowerCut::at(VecNvm::from_image(used.clone()), cut);
        assert_eq!(
            Ring::format(&mut nvm, REGION),
            Err(RingError::Nvm(NvmError::PowerLost))
        );
        explored += 1;
        let mut nvm = nvm.into_inner();
        if nvm.image() == &used[..] {
            continue; // cut before the first byte changed: the old ring, untouched
        }
        let mut dev = VecNvm::new(DEVICE_LEN);
        match Ring::open(&mut nvm, &mut dev, REGION, RingIndex(0)) {
            Err(RingError::NotFormatted) => {}
            Ok((ring, report)) => {
                assert_eq!(ring.applied_index(), RingIndex(0), "{cut:?}");
                assert_eq!(report.replayed, 0, "{cut:?}");
            }
            Err(e) => panic!("format cut at {cut:?} left a broken ring: {e}"),
        }
        assert_eq!(dev.image(), &vec![0; DEVICE_LEN as usize][..], "{cut:?}");
    }
    amber_test_summary::record(&format!(
        "write ring format (host, drivers/vring): {explored} crash states explored, 0 failed"
    ));
}
