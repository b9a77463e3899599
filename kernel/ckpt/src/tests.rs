//! Specifications of the manager as a whole: checkpoint, recover, roll back, refuse.
//! Host-only; it must never depend on anything but the simulated NVM.

use crate::desc::Copy;
use crate::layout::{Layout, DESC_LEN};
use crate::{
    inspect, BadCopy, CkptError, Damage, Fallback, Finding, ItemId, Manager, Problem, Source,
    Version, MAX_RECORD,
};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec;
use alloc::vec::Vec;
use amber_format::Region;
use amber_nvm::sim::{Cut, PowerCut, VecNvm};
use amber_nvm::Nvm;

const AREA: Region = Region {
    offset: 0x1000,
    len: 48 * 1024,
};

/// Items by id: kind and bytes.
type State = BTreeMap<u16, (u8, Vec<u8>)>;

/// A kernel stand-in: items in a map, and which changed since the last checkpoint.
#[derive(Clone, Default)]
struct Model {
    items: State,
    dirty: BTreeSet<u16>,
}

impl Model {
    fn set(&mut self, id: u16, kind: u8, bytes: Vec<u8>) {
        self.items.insert(id, (kind, bytes));
        self.dirty.insert(id);
    }
    fn delete(&mut self, id: u16) {
        self.items.remove(&id);
    }
    fn state(&self) -> State {
        self.items.clone()
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
            // Exercise the scratch path for records.
            scratch[..b.len()].copy_from_slice(b);
            &scratch[..b.len()]
        } else {
            b
        }
    }
}

fn take(
    m: &mut Manager,
    nvm: &mut impl Nvm,
    model: &mut Model,
    meta: u8,
) -> crate::CheckpointStats {
    let s = m.checkpoint(nvm, model, [meta; 16]).expect("checkpoint");
    model.dirty.clear();
    s
}

/// Everything the manager says is committed, read back with CRC checks.
fn committed_state(m: &Manager, nvm: &mut impl Nvm) -> State {
    let mut out = BTreeMap::new();
    for (id, kind, len) in m.live_items() {
        let mut buf = vec![0u8; len as usize];
        let n = m.read_item(nvm, id, &mut buf).expect("read a live item");
        assert_eq!(n, len as usize);
        out.insert(id.0, (kind, buf));
    }
    out
}

fn recover(nvm: &mut VecNvm) -> (Manager, crate::RecoveryReport) {
    Manager::recover(nvm, AREA).expect("recovery")
}

fn bytes(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_mul(31).wrapping_add(i as u8))
        .collect()
}

/// Three versions: v1 creates 0,1,2; v2 changes 1 and deletes 2; v3 changes 1 again.
fn three_versions(nvm: &mut VecNvm) -> (Manager, Vec<State>) {
    let mut m = Manager::format(nvm, AREA).unwrap();
    let mut model = Model::default();
    let mut states = vec![model.state()];
    model.set(0, 1, bytes(0, 40));
    model.set(1, 2, bytes(1, 100));
    model.set(2, 3, bytes(2, 700));
    take(&mut m, nvm, &mut model, 1);
    states.push(model.state());
    model.set(1, 2, bytes(11, 90));
    model.delete(2);
    take(&mut m, nvm, &mut model, 2);
    states.push(model.state());
    model.set(1, 2, bytes(21, 300));
    take(&mut m, nvm, &mut model, 3);
    states.push(model.state());
    (m, states)
}

#[test]
fn recovery_gives_back_exactly_the_committed_items_and_metadata() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (m, states) = three_versions(&mut nvm);
    let (r, report) = recover(&mut nvm);
    assert_eq!(report.committed, Version(3));
    assert_eq!(report.resumed, Version(3));
    assert_eq!(report.lost_versions, None);
    assert_eq!(r.committed(), Version(3));
    assert_eq!(r.meta(), [3; 16]);
    assert_eq!(committed_state(&r, &mut nvm), states[3]);
    assert_eq!(
        r.usage(),
        m.usage(),
        "the rebuilt allocator differs from the live one"
    );
    assert!(inspect(&mut nvm, AREA).is_consistent());
}

#[test]
fn a_fresh_area_is_version_zero_with_nothing_live() {
    let mut nvm = VecNvm::new(64 * 1024);
    let m = Manager::format(&mut nvm, AREA).unwrap();
    assert_eq!(m.committed(), Version(0));
    let (r, _) = recover(&mut nvm);
    assert_eq!(r.committed(), Version(0));
    assert_eq!(r.live_items().count(), 0);
    assert_eq!(r.usage().used_bytes, 0);
}

/// A checkpoint of the committed state with nothing dirty, which writes the twins of
/// what the last one wrote; its cost.
fn settle(m: &mut Manager, nvm: &mut VecNvm, meta: u8) -> crate::CheckpointStats {
    let clean = Model {
        items: committed_state(m, nvm),
        dirty: BTreeSet::new(),
    };
    m.checkpoint(nvm, &clean, [meta; 16]).unwrap()
}

#[test]
fn the_first_clean_checkpoint_of_an_item_writes_its_twin_after_the_commit() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (mut m, _) = three_versions(&mut nvm);
    // v3 wrote item 1 (300 bytes); item 0 got its twin at v2, the first checkpoint
    // at which it was clean.
    assert_eq!(m.untwinned(), 1, "only item 1, written at v3, has no twin");
    let s = settle(&mut m, &mut nvm, 4);
    assert_eq!(
        (s.items_written, s.twins_written, s.twin_bytes),
        (0, 1, 300)
    );
    assert_eq!(
        s.nvm_bytes,
        crate::layout::COMMIT_SLOT_LEN as u64 + 300 + DESC_LEN as u64,
        "the commit record, then the twin's data and descriptor"
    );
    assert_eq!(m.untwinned(), 0);
    let d = m.commit.slot_of(1) as usize;
    assert!(
        matches!(
            m.copies[1][1 - d],
            Copy::Data {
                twin: true,
                version: Version(3),
                len: 300,
                ..
            }
        ),
        "the twin holds the v3 copy: {:?}",
        m.copies[1][1 - d]
    );
    let (r, _) = recover(&mut nvm);
    assert_eq!(r.untwinned(), 0, "recovery finds the twins");
    assert_eq!(r.usage(), m.usage());
}

#[test]
fn an_empty_checkpoint_stores_only_the_commit_record() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (mut m, _) = three_versions(&mut nvm);
    settle(&mut m, &mut nvm, 4);
    let s = settle(&mut m, &mut nvm, 5);
    assert_eq!(s.version, Version(5));
    assert_eq!((s.stores, s.items_written, s.twins_written), (1, 0, 0));
    assert_eq!(s.nvm_bytes, crate::layout::COMMIT_SLOT_LEN as u64);
}

#[test]
fn a_dirty_item_costs_its_bytes_plus_one_descriptor() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (mut m, states) = three_versions(&mut nvm);
    settle(&mut m, &mut nvm, 4);
    let mut model = Model {
        items: states[3].clone(),
        dirty: BTreeSet::new(),
    };
    model.set(0, 1, bytes(5, 40));
    let s = m.checkpoint(&mut nvm, &model, [5; 16]).unwrap();
    assert_eq!((s.stores, s.items_written, s.data_bytes), (3, 1, 40));
    assert_eq!(
        s.nvm_bytes,
        40 + DESC_LEN as u64 + crate::layout::COMMIT_SLOT_LEN as u64
    );
}

#[test]
fn a_deleted_item_costs_nothing_and_its_copies_are_erased_once_no_kept_version_has_it() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (mut m, states) = three_versions(&mut nvm);
    settle(&mut m, &mut nvm, 4);
    let mut model = Model {
        items: states[3].clone(),
        dirty: BTreeSet::new(),
    };
    model.delete(0);
    let s = m.checkpoint(&mut nvm, &model, [5; 16]).unwrap();
    assert_eq!((s.stores, s.items_deleted, s.items_erased), (1, 1, 0));
    assert!(
        m.copies[0].iter().all(Copy::is_stored),
        "version 4, the fallback, still has item 0"
    );
    let s = m.checkpoint(&mut nvm, &model, [6; 16]).unwrap();
    assert_eq!(
        (s.stores, s.items_erased),
        (3, 1),
        "commit, then two erasures"
    );
    assert_eq!(m.copies[0], [Copy::Erased; 2]);
    let (r, _) = recover(&mut nvm);
    assert_eq!(committed_state(&r, &mut nvm), model.state());
    assert_eq!(r.usage(), m.usage(), "the erased copies' extents are free");
}

#[test]
fn a_checkpoint_cut_before_its_commit_leaves_the_previous_version_and_its_descriptors_are_erased() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (m, states) = three_versions(&mut nvm);
    let mut model = Model {
        items: states[3].clone(),
        dirty: BTreeSet::new(),
    };
    model.set(0, 1, bytes(9, 40));
    model.set(5, 1, bytes(9, 20));
    model.delete(1);
    // Stores: 0 data, 1 desc, 2 data, 3 desc, 4 commit (item 1's deletion is in the
    // commit record). Cut at the commit.
    let mut m = m;
    let mut cut = PowerCut::at(
        nvm,
        Cut {
            at_store: 4,
            keep_bytes: 10,
        },
    );
    assert_eq!(
        m.checkpoint(&mut cut, &model, [4; 16]),
        Err(CkptError::Nvm(amber_nvm::NvmError::PowerLost))
    );
    assert_eq!(
        m.checkpoint(&mut cut, &model, [4; 16]),
        Err(CkptError::Interrupted),
        "a manager whose checkpoint stopped half-way must not go on"
    );
    let mut nvm = cut.into_inner();
    assert!(
        inspect(&mut nvm, AREA).is_consistent(),
        "a cut leaves a consistent image"
    );
    let (r, report) = recover(&mut nvm);
    assert_eq!(r.committed(), Version(3));
    assert_eq!(report.erased_uncommitted, 2, "two copies never committed");
    assert!(
        report.findings.iter().any(|f| matches!(
            f,
            Finding::CommitSlotDamaged {
                resumed: Version(3),
                ..
            }
        )),
        "the torn commit is reported: {:?}",
        report.findings
    );
    let said = alloc::format!("{}", report.findings[0]);
    assert!(
        said.starts_with("commit slot ")
            && said.contains("fails its checksum")
            && said.contains("resuming version 3 from slot"),
        "{said}"
    );
    assert_eq!(committed_state(&r, &mut nvm), states[3]);
    let (_, again) = recover(&mut nvm);
    assert_eq!(
        again.erased_uncommitted, 0,
        "recovery left nothing to erase"
    );
}

#[test]
fn after_recovery_a_new_checkpoint_reuses_the_lost_version_number_safely() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (mut m, states) = three_versions(&mut nvm);
    let mut model = Model {
        items: states[3].clone(),
        dirty: BTreeSet::new(),
    };
    model.set(0, 1, bytes(9, 40));
    model.set(7, 1, bytes(9, 20));
    let mut cut = PowerCut::at(
        nvm,
        Cut {
            at_store: 4,
            keep_bytes: 0,
        },
    );
    assert!(m.checkpoint(&mut cut, &model, [4; 16]).is_err());
    let mut nvm = cut.into_inner();
    let (mut r, _) = recover(&mut nvm);
    // Version 4 again, but only item 1 changes: the stale v4 copies of 0 and 7 must
    // not come back.
    let mut model = Model {
        items: states[3].clone(),
        dirty: BTreeSet::new(),
    };
    model.set(1, 2, bytes(44, 10));
    take(&mut r, &mut nvm, &mut model, 4);
    let (r2, _) = recover(&mut nvm);
    assert_eq!(r2.committed(), Version(4));
    assert_eq!(committed_state(&r2, &mut nvm), model.state());
}

#[test]
fn items_that_grow_and_shrink_move_extents_and_the_allocator_matches_the_tree() {
    let mut nvm = VecNvm::new(64 * 1024);
    let mut m = Manager::format(&mut nvm, AREA).unwrap();
    let mut model = Model::default();
    for round in 0..12u8 {
        let len = [10usize, 200, 33, 2000, 0, 64, 65, 1][round as usize % 8];
        model.set(3, 9, bytes(round, len));
        model.set(4, 9, bytes(round, 100 + round as usize));
        take(&mut m, &mut nvm, &mut model, round);
        let (r, _) = recover(&mut nvm);
        assert_eq!(
            committed_state(&r, &mut nvm),
            model.state(),
            "round {round}"
        );
        assert_eq!(
            r.usage(),
            m.usage(),
            "round {round}: rebuilt allocator differs"
        );
    }
    // Two items, two slots each: at most four extents are ever held.
    assert!(m.usage().extents <= 4, "{:?}", m.usage());
}

#[test]
fn an_item_too_large_for_the_free_space_fails_without_committing_anything() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (mut m, states) = three_versions(&mut nvm);
    let before = m.usage();
    let mut model = Model {
        items: states[3].clone(),
        dirty: BTreeSet::new(),
    };
    model.set(0, 1, bytes(1, 50));
    model.set(9, 1, bytes(1, 20 * 1024));
    model.set(10, 1, bytes(2, 20 * 1024));
    let err = m.checkpoint(&mut nvm, &model, [9; 16]).unwrap_err();
    assert!(matches!(err, CkptError::NoSpace { .. }), "{err}");
    assert_eq!(m.committed(), Version(3));
    // Item 0's new copy overwrote its twin before the space ran out: undoing it
    // erases that slot, so the twin's extent is free now (the next checkpoint twins
    // item 0 again). Nothing else may change.
    assert_eq!(
        m.usage().used_bytes,
        before.used_bytes - 64,
        "the failed checkpoint leaked extents"
    );
    let (r, _) = recover(&mut nvm);
    assert_eq!(committed_state(&r, &mut nvm), states[3]);
    assert_eq!(r.usage(), m.usage());
    // The manager is still usable.
    model.delete(10);
    take(&mut m, &mut nvm, &mut model, 4);
    let (r, _) = recover(&mut nvm);
    assert_eq!(committed_state(&r, &mut nvm), model.state());
    let big = bytes(0, 60 * 1024);
    model.set(11, 1, big);
    assert!(matches!(
        m.checkpoint(&mut nvm, &model, [0; 16]),
        Err(CkptError::TooLarge { .. })
    ));
}

#[test]
fn item_ids_beyond_the_table_are_refused_before_anything_is_written() {
    struct Bad;
    impl Source for Bad {
        fn items(&self, f: &mut dyn FnMut(ItemId, u8, bool)) {
            f(ItemId(128), 0, true);
        }
        fn bytes<'a>(&'a self, _: ItemId, s: &'a mut [u8]) -> &'a [u8] {
            &s[..0]
        }
    }
    let mut nvm = VecNvm::new(64 * 1024);
    let mut m = Manager::format(&mut nvm, AREA).unwrap();
    let image = nvm.image().to_vec();
    assert_eq!(
        m.checkpoint(&mut nvm, &Bad, [0; 16]),
        Err(CkptError::BadItem { id: 128 })
    );
    assert_eq!(nvm.image(), &image[..]);
}

#[test]
fn reading_items_checks_buffer_size_existence_and_data_crc() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (m, _) = three_versions(&mut nvm);
    let mut small = [0u8; 10];
    assert_eq!(
        m.read_item(&mut nvm, ItemId(1), &mut small),
        Err(CkptError::BufferTooSmall {
            item: ItemId(1),
            len: 300
        })
    );
    assert_eq!(
        m.read_item(&mut nvm, ItemId(2), &mut small),
        Err(CkptError::NoSuchItem { item: ItemId(2) }),
        "item 2 was deleted"
    );
    let Copy::Data { extent, .. } = m.copies[0][m.commit.slot_of(0) as usize] else {
        panic!("item 0 is live")
    };
    let at = Layout::new(AREA).unwrap().block(extent.first).0;
    nvm.write(at + 3, &[0xEE]).unwrap();
    let mut buf = [0u8; 64];
    assert!(matches!(
        m.read_item(&mut nvm, ItemId(0), &mut buf),
        Err(CkptError::ReadBack {
            bad: BadCopy {
                item: ItemId(0),
                problem: Problem::DataChecksum,
                ..
            }
        })
    ));
}

/// Flips one byte of the descriptor of the committed copy of `id`.
fn corrupt_committed_descriptor(m: &Manager, nvm: &mut VecNvm, id: u16) {
    let at = m.layout.desc(id, m.commit.slot_of(id)).0 + 12;
    let mut b = [0u8; 1];
    nvm.read(at, &mut b).unwrap();
    nvm.write(at, &[b[0] ^ 0x40]).unwrap();
}

#[test]
fn a_corrupt_newest_copy_rolls_back_to_the_previous_version_and_names_the_lost_one() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (m, states) = three_versions(&mut nvm);
    corrupt_committed_descriptor(&m, &mut nvm, 1); // item 1 was written at v3
    assert!(!inspect(&mut nvm, AREA).is_consistent());
    let (r, report) = recover(&mut nvm);
    assert_eq!(report.committed, Version(3));
    assert_eq!(report.resumed, Version(2));
    assert_eq!(report.lost_versions, Some((Version(2), Version(3))));
    let said = alloc::format!("{}", report.findings[0]);
    assert!(
        said.contains("version 3 is incomplete: item 1 slot")
            && said.contains("version 3 is lost, resuming version 2"),
        "the rollback is reported in words: {said}"
    );
    assert_eq!(r.committed(), Version(2));
    assert_eq!(r.meta(), [2; 16], "the metadata must be version 2's");
    assert_eq!(committed_state(&r, &mut nvm), states[2]);
    assert!(
        inspect(&mut nvm, AREA).is_consistent(),
        "{:?}",
        inspect(&mut nvm, AREA).violations
    );
    // The rolled-back area works on: v3 again, and it recovers as v3.
    let (mut r, _) = recover(&mut nvm);
    assert_eq!(
        r.committed(),
        Version(2),
        "a second recovery keeps the rollback"
    );
    let mut model = Model {
        items: states[2].clone(),
        dirty: BTreeSet::new(),
    };
    model.set(6, 6, bytes(6, 6));
    take(&mut r, &mut nvm, &mut model, 3);
    let (r, report) = recover(&mut nvm);
    assert_eq!((r.committed(), report.lost_versions), (Version(3), None));
    assert_eq!(committed_state(&r, &mut nvm), model.state());
}

#[test]
fn corrupt_data_of_the_newest_copy_also_rolls_back() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (m, states) = three_versions(&mut nvm);
    let Copy::Data { extent, .. } = m.copies[1][m.commit.slot_of(1) as usize] else {
        panic!("item 1 is live")
    };
    nvm.write(m.layout.block(extent.first).0, &[0xFF; 4])
        .unwrap();
    let (r, report) = recover(&mut nvm);
    assert_eq!(report.lost_versions, Some((Version(2), Version(3))));
    assert_eq!(committed_state(&r, &mut nvm), states[2]);
}

#[test]
fn a_corrupt_copy_of_an_unchanged_item_is_restored_from_its_twin_and_nothing_is_lost() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (m, states) = three_versions(&mut nvm);
    // Item 0 was written only at v1; v2 twinned it. Versions 3 and 2 share its copy.
    corrupt_committed_descriptor(&m, &mut nvm, 0);
    assert!(!inspect(&mut nvm, AREA).is_consistent(), "inspect sees it");
    let (r, report) = recover(&mut nvm);
    assert_eq!((report.resumed, report.lost_versions), (Version(3), None));
    assert_eq!(committed_state(&r, &mut nvm), states[3]);
    match report.findings.as_slice() {
        [f @ Finding::RepairedFromTwin { bad, .. }] => {
            assert_eq!((bad.item, bad.version), (ItemId(0), None));
            let said = alloc::format!("{f}");
            assert!(said.contains("item 0 slot"), "{said}");
            assert!(said.contains("nothing lost"), "{said}");
        }
        other => panic!("expected one repair, got {other:?}"),
    }
    assert!(
        inspect(&mut nvm, AREA).is_consistent(),
        "the repair rewrote the copy: {:?}",
        inspect(&mut nvm, AREA).violations
    );
    let (_, again) = recover(&mut nvm);
    assert!(again.findings.is_empty(), "{:?}", again.findings);
}

#[test]
fn a_corrupt_copy_and_a_corrupt_twin_are_an_error_naming_the_item_in_both_versions() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (m, _) = three_versions(&mut nvm);
    corrupt_committed_descriptor(&m, &mut nvm, 0);
    let twin = m.layout.desc(0, 1 - m.commit.slot_of(0)).0;
    nvm.write(twin + 2, &[0x5A]).unwrap();
    let image = nvm.image().to_vec();
    match Manager::recover(&mut nvm, AREA) {
        Err(
            e @ CkptError::Corrupt {
                newest,
                older: Fallback::Incomplete(older),
            },
        ) => {
            assert_eq!((newest.version, newest.first.item), (Version(3), ItemId(0)));
            assert_eq!((older.version, older.first.item), (Version(2), ItemId(0)));
            assert_eq!(newest.first.version, None, "its descriptor is unreadable");
            let said = alloc::format!("{e}");
            assert!(
                said.contains("version 3 is incomplete: item 0 slot")
                    && said.contains("version 2 is incomplete: item 0 slot"),
                "{said}"
            );
        }
        other => panic!("expected Corrupt, got {:?}", other.map(|(_, r)| r)),
    }
    assert_eq!(
        nvm.image(),
        &image[..],
        "a refused recovery must change nothing"
    );
}

#[test]
fn both_copies_corrupt_is_an_error() {
    let mut nvm = VecNvm::new(64 * 1024);
    let (m, _) = three_versions(&mut nvm);
    corrupt_committed_descriptor(&m, &mut nvm, 1);
    let other = 1 - m.commit.slot_of(1);
    let at = m.layout.desc(1, other).0;
    nvm.write(at, &[0x5A; 4]).unwrap();
    let err = Manager::recover(&mut nvm, AREA)
        .map(|(_, r)| r)
        .unwrap_err();
    assert!(
        matches!(
            err,
            CkptError::Corrupt {
                newest: Damage {
                    first: BadCopy {
                        item: ItemId(1),
                        ..
                    },
                    ..
                },
                ..
            }
        ),
        "{err}"
    );
    assert!(alloc::format!("{err}").contains("item 1"));
}

#[test]
fn blank_foreign_and_corrupt_areas_are_told_apart() {
    let mut nvm = VecNvm::new(64 * 1024);
    assert_eq!(
        Manager::recover(&mut nvm, AREA).map(|_| ()),
        Err(CkptError::NotFormatted)
    );
    assert!(CkptError::NotFormatted.is_unformatted());
    let i = inspect(&mut nvm, AREA);
    assert!(i.is_consistent() && i.lines.iter().any(|l| l.contains("no checkpoint yet")));
    three_versions(&mut nvm);
    let moved = Region {
        offset: AREA.offset,
        len: AREA.len - 1024,
    };
    assert!(matches!(
        Manager::recover(&mut nvm, moved).map(|_| ()),
        Err(CkptError::FormatMismatch {
            layout_matches: false,
            ..
        })
    ));
    nvm.write(AREA.offset, &[0x77; 120]).unwrap();
    assert_eq!(
        Manager::recover(&mut nvm, AREA).map(|_| ()),
        Err(CkptError::CommitRecordCorrupt)
    );
}

#[test]
fn a_format_cut_anywhere_leaves_the_old_state_or_an_area_to_format_again() {
    let mut nvm = VecNvm::new(64 * 1024);
    three_versions(&mut nvm);
    let image = nvm.into_image();
    for k in 0..5 {
        for keep in [0, 1, 7, 60, 119] {
            let cut_at = Cut {
                at_store: k,
                keep_bytes: keep,
            };
            let mut cut = PowerCut::at(VecNvm::from_image(image.clone()), cut_at);
            let _ = Manager::format(&mut cut, AREA);
            let mut nvm = cut.into_inner();
            assert!(inspect(&mut nvm, AREA).is_consistent(), "{cut_at:?}");
            match Manager::recover(&mut nvm, AREA) {
                Err(e) => assert!(e.is_unformatted(), "{cut_at:?}: {e}"),
                // Cut before the marker was whole (the old area is), or after the
                // format completed but for the marker's clearing (the new one is).
                Ok((m, report)) => {
                    let marker = crate::layout::FORMAT_MARKER_LEN;
                    assert!(
                        (k == 0 && keep < marker && m.committed() == Version(3))
                            || (k == 4 && keep >= 1 && m.committed() == Version(0)),
                        "{cut_at:?}: recovered {}",
                        m.committed()
                    );
                    let damaged = report.findings.contains(&Finding::FormatMarkerDamaged);
                    assert_eq!(
                        damaged,
                        keep > 0 && (k == 0 || keep < marker),
                        "{cut_at:?}: a torn marker is reported, a whole one not"
                    );
                }
            }
        }
    }
}

#[test]
fn an_area_of_format_2_is_refused_by_name() {
    // A format 2 commit record: DualRecord<48> (seq, payload with "CK" and format 2 at
    // 40..44, CRC) at the area's start, as a format 2 kernel left it.
    let mut nvm = VecNvm::new(64 * 1024);
    let mut slot = [0u8; 60];
    slot[0] = 9;
    slot[48..50].copy_from_slice(b"CK");
    slot[50] = 2;
    let crc = amber_format::crc32(&slot[..56]);
    slot[56..].copy_from_slice(&crc.to_le_bytes());
    nvm.write(AREA.offset, &slot).unwrap();
    let err = Manager::recover(&mut nvm, AREA).map(|_| ()).unwrap_err();
    assert_eq!(
        err,
        CkptError::FormatMismatch {
            found_format: 2,
            layout_matches: true
        }
    );
    assert!(
        alloc::format!("{err}").contains("holds format 2, this kernel reads format 3"),
        "{err}"
    );
}
