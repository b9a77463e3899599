//! The exhaustive crash test of the checkpoint manager: for several workloads, cut
//! power at every store of checkpoint N -> N+1, torn at chosen byte counts, recover,
//! and require exactly the state of version N or N+1 (N+1 only when the commit record
//! was written whole; the twins and erasures after it then may be cut anywhere).
//! Each recovery is itself cut at every store and recovered again. It also checks
//! that every image a cut leaves is consistent for `amber_ckpt::inspect`, that no
//! cut makes recovery roll back, and that the recovered manager takes further
//! checkpoints. This file must never weaken an assertion to make a crash state pass.

use amber_ckpt::{inspect, ItemId, Manager, Source, Version, MAX_RECORD, META_LEN};
use amber_format::Region;
use amber_nvm::sim::{Cut, PowerCut, VecNvm};
use amber_nvm::Nvm;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

const AREA: Region = Region {
    offset: 0x100,
    len: 40 * 1024,
};
const NVM_SIZE: u32 = 0x100 + 40 * 1024;

type State = BTreeMap<u16, (u8, Vec<u8>)>;

/// A kernel stand-in: items, and which changed since the last checkpoint.
#[derive(Clone, Default)]
struct Model {
    items: State,
    dirty: BTreeSet<u16>,
}

impl Model {
    fn set(&mut self, id: u16, kind: u8, len: usize, seed: u8) {
        let bytes = (0..len)
            .map(|i| seed.wrapping_mul(37).wrapping_add(i as u8 ^ 0x5A))
            .collect();
        self.items.insert(id, (kind, bytes));
        self.dirty.insert(id);
    }
    fn delete(&mut self, id: u16) {
        self.items.remove(&id);
        self.dirty.remove(&id);
    }
}

impl Source for Model {
    fn items(&self, f: &mut dyn FnMut(ItemId, u8, bool)) {
        for (id, (kind, _)) in &self.items {
            f(ItemId(*id), *kind, self.dirty.contains(id));
        }
    }
    fn bytes<'a>(&'a self, id: ItemId, scratch: &'a mut [u8]) -> &'a [u8] {
        let b = &self.items[&id.0].1;
        if b.len() <= MAX_RECORD {
            scratch[..b.len()].copy_from_slice(b);
            &scratch[..b.len()]
        } else {
            b
        }
    }
}

/// A workload: how the model changes before each checkpoint. Checkpoints 1..=n build
/// version N = n; the change for n+1 is the checkpoint that is cut.
struct Workload {
    name: &'static str,
    n: u64,
    change: fn(&mut Model, u64),
}

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "first checkpoint creates items",
        n: 0,
        change: |m, _| {
            m.set(0, 1, 40, 1);
            m.set(1, 2, 0, 2);
            m.set(127, 3, 100, 3);
        },
    },
    Workload {
        name: "many items, all modified",
        n: 2,
        change: |m, v| {
            for id in 0..8 {
                m.set(id, 1, 24 + id as usize, v as u8);
            }
        },
    },
    Workload {
        name: "many items, one modified",
        n: 2,
        change: |m, v| {
            if v < 3 {
                for id in 0..8 {
                    m.set(id, 1, 24, v as u8);
                }
            } else {
                m.set(5, 1, 24, 99);
            }
        },
    },
    Workload {
        name: "items created and deleted, ids reused with another kind",
        n: 3,
        change: |m, v| match v {
            1 => {
                for id in 0..6 {
                    m.set(id, 1, 30, 1);
                }
            }
            2 => {
                m.delete(1);
                m.set(2, 1, 80, 2);
            }
            3 => m.set(3, 1, 30, 3),
            _ => {
                m.delete(0);
                m.delete(4);
                m.set(1, 7, 20, 4); // deleted at 2, back with another kind
                m.set(2, 1, 10, 4); // shrinks to another size class
                m.set(9, 2, 50, 4);
            }
        },
    },
    Workload {
        name: "big memory-like items and a record",
        n: 2,
        change: |m, v| {
            m.set(100, 0xF0, 4096, v as u8);
            m.set(101, 0xF0, 8000 + v as usize, v as u8);
            m.set(3, 1, 200, v as u8);
        },
    },
    Workload {
        name: "items growing past their extents",
        n: 2,
        change: |m, v| {
            m.set(10, 1, 30 * v as usize, v as u8);
            m.set(11, 1, 100 * v as usize, v as u8);
        },
    },
    Workload {
        name: "twins of a big and a small item and erasure of a deleted one after the commit",
        n: 2,
        change: |m, v| match v {
            1 => {
                m.set(100, 0xF0, 4096, 1);
                m.set(101, 1, 300, 1);
                m.set(7, 2, 50, 1);
            }
            2 => {
                m.set(101, 1, 300, 2);
                m.delete(7);
            }
            _ => m.set(3, 1, 20, 3),
        },
    },
    Workload {
        name: "empty checkpoint",
        n: 2,
        change: |m, v| {
            if v < 3 {
                m.set(0, 1, 50, v as u8);
                m.set(1, 1, 50, v as u8);
            }
        },
    },
];

fn meta(v: u64) -> [u8; META_LEN] {
    [v as u8; META_LEN]
}

/// What a recovered manager says: version, metadata and every item (CRC-checked).
fn recovered(m: &Manager, nvm: &mut impl Nvm) -> (Version, [u8; META_LEN], State) {
    let mut state = State::new();
    for (id, kind, len) in m.live_items() {
        let mut buf = vec![0u8; len as usize];
        m.read_item(nvm, id, &mut buf)
            .expect("a live item reads back");
        state.insert(id.0, (kind, buf));
    }
    (m.committed(), m.meta(), state)
}

/// The byte counts a cut store keeps: every one for small stores, else the edges and
/// the middle. `len` itself means the store completed and power failed right after.
fn splits(len: usize, every_up_to: usize) -> Vec<usize> {
    if len <= every_up_to {
        (0..=len).collect()
    } else {
        let mut s = vec![0, 1, len / 2, len - 1, len];
        s.dedup();
        s
    }
}

/// Stores of one call, counted on a copy.
fn store_lens(image: &[u8], f: impl FnOnce(&mut PowerCut<VecNvm>)) -> Vec<usize> {
    let mut nvm = PowerCut::never(VecNvm::from_image(image.to_vec()));
    f(&mut nvm);
    nvm.store_lens().to_vec()
}

/// An NVM that remembers where each store went.
struct Offsets(VecNvm, Vec<u32>);

impl Nvm for Offsets {
    fn size(&self) -> u32 {
        self.0.size()
    }
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), amber_nvm::NvmError> {
        self.0.read(offset, buf)
    }
    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), amber_nvm::NvmError> {
        self.1.push(offset);
        self.0.write(offset, data)
    }
    fn fence(&mut self) {}
    fn flush(&mut self) -> Result<(), amber_nvm::NvmError> {
        self.0.flush()
    }
}

#[derive(Default)]
struct Tally {
    explored: u64,
    /// Cuts after the commit record store (in the twins and erasures that follow it).
    after_commit: u64,
    failed: u64,
}

fn run(w: &Workload, tally: &mut Tally) {
    let mut nvm = VecNvm::new(NVM_SIZE);
    let mut mgr = Manager::format(&mut nvm, AREA).expect("format");
    let mut model = Model::default();
    for v in 1..=w.n {
        (w.change)(&mut model, v);
        mgr.checkpoint(&mut nvm, &model, meta(v))
            .expect("setup checkpoint");
        model.dirty.clear();
    }
    let old = (Version(w.n), meta(w.n), model.items.clone());
    (w.change)(&mut model, w.n + 1);
    let new = (Version(w.n + 1), meta(w.n + 1), model.items.clone());
    let base = nvm.into_image();
    let fresh = |image: Vec<u8>| {
        let mut nvm = VecNvm::from_image(image);
        let (m, _) = Manager::recover(&mut nvm, AREA).expect("recover the base image");
        (m, nvm)
    };
    let lens = store_lens(&base, |nvm| {
        let (mut m, _) = Manager::recover(nvm, AREA).unwrap();
        m.checkpoint(nvm, &model, meta(w.n + 1))
            .expect("uncut checkpoint");
    });
    let last = lens.len() - 1;
    // The commit record store: the one into the record's two slots.
    let commit_store = {
        let mut nvm = Offsets(VecNvm::from_image(base.clone()), Vec::new());
        let (mut m, _) = Manager::recover(&mut nvm, AREA).unwrap();
        nvm.1.clear();
        m.checkpoint(&mut nvm, &model, meta(w.n + 1)).unwrap();
        let record = AREA.offset..AREA.offset + 2 * 76;
        let at: Vec<usize> = (0..nvm.1.len())
            .filter(|&i| record.contains(&nvm.1[i]))
            .collect();
        assert_eq!(at.len(), 1, "{}: one commit record store", w.name);
        at[0]
    };
    for (k, &len) in lens.iter().enumerate() {
        for keep in splits(len, 64) {
            let (mut m, nvm) = fresh(base.clone());
            let cut = Cut {
                at_store: k as u64,
                keep_bytes: keep,
            };
            let mut cutting = PowerCut::at(nvm, cut);
            let result = m.checkpoint(&mut cutting, &model, meta(w.n + 1));
            assert!(result.is_err(), "{}: {cut:?} did not cut", w.name);
            let crashed = cutting.into_inner().into_image();
            let committed = k > commit_store || (k == commit_store && keep == len);
            if k > commit_store {
                tally.after_commit += 1;
            }
            let expect = if committed { &new } else { &old };
            tally.explored += 1;
            let what = format!(
                "{}: cut at store {k} of {}, {keep} of {len} bytes kept",
                w.name,
                last + 1
            );
            if !check(&crashed, expect, &what, &model, w.n) {
                tally.failed += 1;
            }
            // Nested: cut the recovery too, at each of its stores, then recover again.
            let rec_lens = store_lens(&crashed, |nvm| {
                Manager::recover(nvm, AREA).expect("recovery");
            });
            for (j, &rlen) in rec_lens.iter().enumerate() {
                for rkeep in splits(rlen, 8) {
                    let rcut = Cut {
                        at_store: j as u64,
                        keep_bytes: rkeep,
                    };
                    let mut nvm = PowerCut::at(VecNvm::from_image(crashed.clone()), rcut);
                    assert!(
                        Manager::recover(&mut nvm, AREA).is_err(),
                        "{what}: {rcut:?} did not cut recovery"
                    );
                    let twice = nvm.into_inner().into_image();
                    tally.explored += 1;
                    let what =
                        format!("{what}; recovery cut at store {j}, {rkeep} of {rlen} bytes");
                    if !check(&twice, expect, &what, &model, w.n) {
                        tally.failed += 1;
                    }
                }
            }
        }
    }
}

/// Recovers `image` and compares with `expect`; then takes one more checkpoint on the
/// recovered manager and recovers that, to show the area keeps working.
fn check(
    image: &[u8],
    expect: &(Version, [u8; META_LEN], State),
    what: &str,
    model: &Model,
    n: u64,
) -> bool {
    let mut nvm = VecNvm::from_image(image.to_vec());
    let insp = inspect(&mut nvm, AREA);
    if !insp.is_consistent() {
        eprintln!(
            "FAIL {what}: inspect finds the image inconsistent: {:?}",
            insp.violations
        );
        return false;
    }
    let (mut m, report) = match Manager::recover(&mut nvm, AREA) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("FAIL {what}: recovery failed: {e}");
            return false;
        }
    };
    let got = recovered(&m, &mut nvm);
    if &got != expect {
        eprintln!(
            "FAIL {what}: recovered {} with {} items, expected {} with {} items (a mix or a lost commit)",
            got.0,
            got.2.len(),
            expect.0,
            expect.2.len()
        );
        return false;
    }
    if report.lost_versions.is_some() || report.resumed != expect.0 {
        eprintln!("FAIL {what}: a cut made recovery roll back: {report:?}");
        return false;
    }
    // Go on: change one item (not necessarily dirty in the cut checkpoint) and commit.
    let mut next = Model {
        items: expect.2.clone(),
        dirty: BTreeSet::new(),
    };
    let _ = model;
    next.set(50, 9, 12, n as u8);
    if let Err(e) = m.checkpoint(&mut nvm, &next, meta(99)) {
        eprintln!("FAIL {what}: the recovered manager cannot checkpoint: {e}");
        return false;
    }
    let (m2, _) = match Manager::recover(&mut nvm, AREA) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("FAIL {what}: recovery after the next checkpoint failed: {e}");
            return false;
        }
    };
    let after = recovered(&m2, &mut nvm);
    if after != (expect.0.next(), meta(99), next.items.clone()) || m2.usage() != m.usage() {
        eprintln!("FAIL {what}: the checkpoint after recovery did not come back whole");
        return false;
    }
    true
}

#[test]
fn every_cut_of_a_checkpoint_and_of_its_recovery_recovers_version_n_or_n_plus_1() {
    let start = Instant::now();
    let mut total = Tally::default();
    for w in WORKLOADS {
        let mut t = Tally::default();
        run(w, &mut t);
        println!(
            "workload '{}': crash states explored: {} ({} cut after the commit), failed: {}",
            w.name, t.explored, t.after_commit, t.failed
        );
        total.explored += t.explored;
        total.after_commit += t.after_commit;
        total.failed += t.failed;
    }
    println!(
        "crash states explored: {} ({} cut after the commit), failed: {} ({:.1} s)",
        total.explored,
        total.after_commit,
        total.failed,
        start.elapsed().as_secs_f64()
    );
    assert_eq!(
        total.failed, 0,
        "some crash states recovered a state that was never committed"
    );
    amber_test_summary::record(&format!(
        "checkpoint manager (host, kernel/ckpt): {} crash states explored over {} workloads, {} failed",
        total.explored,
        WORKLOADS.len(),
        total.failed
    ));
}
