//! Corruption at rest: an area that many checkpoints left behind has one byte
//! changed, anywhere in the commit record, the format marker, the ORoot table or the
//! data of any copy, and is recovered. Every such byte must cost at most the newest
//! version, never silently, and recovery must never stop; two bad bytes in different
//! items may stop it, but only with a message naming both. The single bytes are
//! tried exhaustively (every offset), the pairs at random (seeded: `AMBER_SEED`
//! repeats a run). This file must never weaken an assertion to make a case pass.

use amber_ckpt::{inspect, CkptError, Finding, ItemId, Manager, Source, Version, META_LEN};
use amber_format::Region;
use amber_nvm::sim::VecNvm;
use std::collections::{BTreeMap, BTreeSet};

const AREA: Region = Region {
    offset: 0x200,
    len: 48 * 1024,
};
/// Where the ORoot table ends (format 3): the commit record, the marker, the
/// reserved bytes and the table lie below it.
const TABLE_END: u32 = 0x1100;
const VERSIONS: u64 = 40;

type State = BTreeMap<u16, (u8, Vec<u8>)>;

/// A kernel stand-in: items, and which changed since the last checkpoint.
#[derive(Clone, Default)]
struct Model {
    items: State,
    dirty: BTreeSet<u16>,
}

impl Model {
    fn set(&mut self, id: u16, kind: u8, len: usize, seed: u64) {
        let bytes = (0..len)
            .map(|i| (seed as u8).wrapping_mul(29).wrapping_add(i as u8 ^ 0x3C))
            .collect();
        self.items.insert(id, (kind, bytes));
        self.dirty.insert(id);
    }
}

impl Source for Model {
    fn items(&self, f: &mut dyn FnMut(ItemId, u8, bool)) {
        for (id, (kind, _)) in &self.items {
            f(ItemId(*id), *kind, self.dirty.contains(id));
        }
    }
    fn bytes<'a>(&'a self, id: ItemId, _scratch: &'a mut [u8]) -> &'a [u8] {
        &self.items[&id.0].1
    }
}

fn meta(v: u64) -> [u8; META_LEN] {
    [v as u8 ^ 0xA0; META_LEN]
}

/// A system like the kernel's: records that change every checkpoint, every third,
/// once; memory pages likewise; an item deleted and created again; one created in
/// the newest checkpoint. Returns the image and the state of every version.
fn many_checkpoints() -> (Vec<u8>, Vec<State>) {
    let mut nvm = VecNvm::new(AREA.offset + AREA.len);
    let mut m = Manager::format(&mut nvm, AREA).unwrap();
    let mut model = Model::default();
    let mut states = vec![State::new()];
    for v in 1..=VERSIONS {
        if v == 1 {
            for id in 0..6 {
                model.set(id, 1 + id as u8 % 3, 120 + 20 * id as usize, v);
            }
            for p in 0..4 {
                model.set(64 + p, 0xF0, 512, v);
            }
        }
        model.set(1, 2, 160, v); // a thread: every checkpoint
        model.set(65, 0xF0, 512, v); // a stack page: every checkpoint
        if v % 3 == 0 {
            model.set(3, 1, 180, v);
            model.set(66, 0xF0, 512, v);
        }
        match v % 10 {
            4 => {
                model.items.remove(&5);
                model.dirty.remove(&5);
            }
            7 => model.set(5, 3, 90, v),
            _ => {}
        }
        if v == VERSIONS {
            model.set(9, 2, 60, v); // new in the newest version
        }
        m.checkpoint(&mut nvm, &model, meta(v)).unwrap();
        model.dirty.clear();
        states.push(model.items.clone());
    }
    (nvm.into_image(), states)
}

/// Every live item of a recovered manager, read back with its CRC checked.
fn state_of(m: &Manager, nvm: &mut VecNvm) -> State {
    m.live_items()
        .map(|(id, kind, len)| {
            let mut buf = vec![0u8; len as usize];
            m.read_item(nvm, id, &mut buf)
                .expect("a live item reads back");
            (id.0, (kind, buf))
        })
        .collect()
}

/// The byte ranges (relative to the device) that a corruption may hit: commit
/// record, marker, reserved bytes and ORoot table, and every copy's data.
fn targets(image: &[u8]) -> Vec<(u32, u32)> {
    let mut out = vec![(AREA.offset, AREA.offset + TABLE_END)];
    out.extend(extents(image).into_iter().map(|(_, r)| r));
    out
}

/// The data range of every copy on NVM, with its item, from the table's bytes
/// (format 3: descriptor = version 6, kind 1, place 5, CRC 4).
fn extents(image: &[u8]) -> Vec<(u16, (u32, u32))> {
    let mut out = Vec::new();
    for id in 0..128u16 {
        for s in 0..2u32 {
            let at = (AREA.offset + 0x100 + id as u32 * 32 + s * 16) as usize;
            let d = &image[at..at + 16];
            let mut p = [0u8; 8];
            p[..5].copy_from_slice(&d[7..12]);
            let place = u64::from_le_bytes(p);
            let (len, first, state) = (place & 0x7FFFF, (place >> 19) & 0x7FFFF, place >> 38);
            if (state == 1 || state == 2) && len > 0 {
                let start = AREA.offset + TABLE_END + first as u32 * 32;
                out.push((id, (start, start + len as u32)));
            }
        }
    }
    out
}

/// Which item a corrupted device byte belongs to (its descriptor or its data).
fn item_at(image: &[u8], at: u32) -> Option<u16> {
    let table = AREA.offset + 0x100..AREA.offset + TABLE_END;
    if table.contains(&at) {
        return Some(((at - table.start) / 32) as u16);
    }
    extents(image)
        .into_iter()
        .find(|(_, (a, b))| (*a..*b).contains(&at))
        .map(|(id, _)| id)
}

/// A small seeded generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
    fn flip(&mut self) -> u8 {
        1 + self.below(255) as u8
    }
}

fn seeded(test: &str) -> Rng {
    let seed = std::env::var("AMBER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    println!("{test}: seed {seed} (repeat with AMBER_SEED={seed})");
    Rng(seed.max(1))
}

/// What recovery of a corrupted image did, checked against the versions' states.
struct Recovered {
    /// It resumed the newest version (else the one before, reported).
    newest: bool,
    /// It reported something.
    reported: bool,
}

fn check_recovery(
    image: Vec<u8>,
    states: &[State],
    what: &str,
) -> Result<Result<Recovered, CkptError>, String> {
    let g = VERSIONS;
    let mut nvm = VecNvm::from_image(image);
    let (mut m, report) = match Manager::recover(&mut nvm, AREA) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    let v = report.resumed.0;
    if v != g && v != g - 1 {
        return Err(format!(
            "{what}: resumed version {v}, more than one back from {g}"
        ));
    }
    if state_of(&m, &mut nvm) != states[v as usize] || m.meta() != meta(v) {
        return Err(format!("{what}: resumed {v} but not its state"));
    }
    let told = report.findings.iter().any(|f| {
        matches!(f, Finding::RolledBack { to, .. } | Finding::CommitSlotDamaged { resumed: to, .. } if to.0 == v)
    });
    if v < g && !told {
        return Err(format!(
            "{what}: version {g} was lost silently: {:?}",
            report.findings
        ));
    }
    let insp = inspect(&mut nvm, AREA);
    if !insp.is_consistent() {
        return Err(format!(
            "{what}: inconsistent after recovery: {:?}",
            insp.violations
        ));
    }
    // The area works on, and its redundancy comes back: after two more checkpoints
    // every live item has a twin again.
    let model = Model {
        items: states[v as usize].clone(),
        dirty: BTreeSet::new(),
    };
    for k in 1..=2 {
        m.checkpoint(&mut nvm, &model, meta(v + k))
            .map_err(|e| format!("{what}: the next checkpoint failed: {e}"))?;
    }
    let (again, _) = Manager::recover(&mut nvm, AREA)
        .map_err(|e| format!("{what}: recovery after it failed: {e}"))?;
    if again.committed() != Version(v + 2) || again.untwinned() != 0 {
        return Err(format!(
            "{what}: after two checkpoints: version {}, {} items without a twin",
            again.committed().0,
            again.untwinned()
        ));
    }
    Ok(Ok(Recovered {
        newest: v == g,
        reported: !report.findings.is_empty(),
    }))
}

#[test]
fn every_single_corrupted_byte_costs_at_most_the_newest_version_and_is_reported() {
    let (image, states) = many_checkpoints();
    {
        let mut nvm = VecNvm::from_image(image.clone());
        let insp = inspect(&mut nvm, AREA);
        assert!(insp.is_consistent(), "{:?}", insp.violations);
        let (m, _) = Manager::recover(&mut nvm, AREA).unwrap();
        assert_eq!(m.committed(), Version(VERSIONS));
    }
    let mut rng = seeded("single corrupted bytes");
    let (mut tried, mut rolled_back, mut silent_harmless) = (0, 0, 0);
    let mut failures = Vec::new();
    for (start, end) in targets(&image) {
        for at in start..end {
            let mut bad = image.clone();
            let x = rng.flip();
            bad[at as usize] ^= x;
            tried += 1;
            let what = format!("byte {at:#x} ^ {x:#04x}");
            match check_recovery(bad, &states, &what) {
                Ok(Ok(r)) => {
                    if !r.newest {
                        rolled_back += 1;
                    }
                    // Reported? Only the reserved bytes after the marker may change
                    // unnoticed: nothing reads them.
                    let reserved = AREA.offset + 0xA0..AREA.offset + 0x100;
                    if !r.reported {
                        if reserved.contains(&at) {
                            silent_harmless += 1;
                        } else {
                            failures.push(format!("{what}: nothing was reported"));
                        }
                    }
                }
                Ok(Err(e)) => failures.push(format!("{what}: recovery stopped: {e}")),
                Err(why) => failures.push(why),
            }
        }
    }
    let summary = format!(
        "single corrupted bytes: {tried} tried, {} resumed the newest version, {rolled_back} \
         rolled back one version (reported), {silent_harmless} in reserved bytes unnoticed \
         (nothing reads them), {} failed",
        tried - rolled_back - failures.len(),
        failures.len()
    );
    println!("{summary}");
    amber_test_summary::record(&format!(
        "corrupted checkpoint area (host, kernel/ckpt): {summary}"
    ));
    assert!(
        failures.is_empty(),
        "{} of {tried} corruptions failed, first: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(
        rolled_back > 0,
        "no corruption hit a copy of the newest version"
    );
}

#[test]
fn two_corrupted_bytes_in_different_items_cost_at_most_the_newest_version_or_are_refused_naming_both(
) {
    let (image, states) = many_checkpoints();
    let mut rng = seeded("two corrupted bytes");
    // Every byte that belongs to an item: its descriptors and its copies' data.
    let mut by_item: BTreeMap<u16, Vec<u32>> = BTreeMap::new();
    for (start, end) in targets(&image) {
        for at in start..end {
            if let Some(id) = item_at(&image, at) {
                by_item.entry(id).or_default().push(at);
            }
        }
    }
    // The items that hold copies (the others' empty descriptors are tried singly).
    let mut items: Vec<u16> = extents(&image).into_iter().map(|(id, _)| id).collect();
    items.dedup();
    let (mut refused, mut newest, mut back) = (0, 0, 0);
    let trials = 1500;
    for _ in 0..trials {
        let a = items[rng.below(items.len() as u64) as usize];
        let b = loop {
            let b = items[rng.below(items.len() as u64) as usize];
            if b != a {
                break b;
            }
        };
        let mut bad = image.clone();
        let (pa, pb) = (&by_item[&a], &by_item[&b]);
        let (xa, xb) = (
            pa[rng.below(pa.len() as u64) as usize],
            pb[rng.below(pb.len() as u64) as usize],
        );
        bad[xa as usize] ^= rng.flip();
        bad[xb as usize] ^= rng.flip();
        let what = format!("bytes {xa:#x} (item {a}) and {xb:#x} (item {b})");
        match check_recovery(bad, &states, &what) {
            Ok(Ok(r)) if r.newest => newest += 1,
            Ok(Ok(_)) => back += 1,
            Ok(Err(e @ CkptError::Corrupt { .. })) => {
                let said = e.to_string();
                assert!(
                    said.contains(&format!("item {a} ")) && said.contains(&format!("item {b} ")),
                    "{what}: the refusal must name both items: {said}"
                );
                refused += 1;
            }
            Ok(Err(e)) => panic!("{what}: recovery stopped for another reason: {e}"),
            Err(why) => panic!("{why}"),
        }
    }
    let summary = format!(
        "two corrupted bytes in different items: {trials} trials, {newest} resumed the newest \
         version, {back} rolled back one version (reported), {refused} refused naming both items"
    );
    println!("{summary}");
    amber_test_summary::record(&format!(
        "corrupted checkpoint area (host, kernel/ckpt): {summary}"
    ));
}
