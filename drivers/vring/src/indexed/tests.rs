//! The indexed ring must read exactly what the plain ring reads, whatever the appends,
//! applies, laps, pads and reopens before: checked against `Ring::read` over long
//! seeded random runs, plus the index's own rules (room, emptying on reopen).

use super::*;
use crate::layout::DATA_OFFSET;
use crate::ring::applied_record;
use amber_nvm::sim::VecNvm;

/// A ring of 300 data bytes (laps come often) and a 96-byte device.
const REGION: Region = Region {
    offset: 0,
    len: DATA_OFFSET + 300,
};
const DEVICE: usize = 96;

fn nvms() -> (VecNvm, VecNvm) {
    let mut nvm = VecNvm::new(REGION.len);
    Ring::format(&mut nvm, REGION).unwrap();
    (nvm, VecNvm::new(DEVICE as u32))
}

/// xorshift64: a fixed sequence per seed, so a failure names its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn an_index_smaller_than_the_ring_can_fill_is_refused() {
    let (mut nvm, mut dev) = nvms();
    let needed = IndexedRing::slots_for(300);
    assert_eq!(
        needed,
        300 / 28,
        "one slot per 28-byte record (24 + 1, aligned)"
    );
    let mut slots = vec![PendingEntry::default(); needed - 1];
    let e = IndexedRing::open(&mut nvm, &mut dev, REGION, RingIndex(0), &mut slots)
        .err()
        .expect("refused");
    assert_eq!(
        e,
        RingError::IndexTooSmall {
            slots: needed - 1,
            needed
        }
    );
    assert!(e.to_string().contains("can hold"));
}

#[test]
fn the_index_never_fills_before_the_ring() {
    let (mut nvm, mut dev) = nvms();
    let mut slots = vec![PendingEntry::default(); IndexedRing::slots_for(300)];
    let (mut r, _) =
        IndexedRing::open(&mut nvm, &mut dev, REGION, RingIndex(0), &mut slots).unwrap();
    let mut n = 0;
    while r.append(&mut nvm, n % 90, &[n as u8]).is_ok() {
        n += 1;
    }
    assert_eq!(r.pending_entries(), n as usize);
    assert_eq!(
        n as usize,
        IndexedRing::slots_for(300),
        "the ring filled first"
    );
}

#[test]
fn apply_drops_exactly_the_applied_entries_and_reopen_empties_the_index() {
    let (mut nvm, mut dev) = nvms();
    let mut slots = vec![PendingEntry::default(); IndexedRing::slots_for(300)];
    let (mut r, _) =
        IndexedRing::open(&mut nvm, &mut dev, REGION, RingIndex(0), &mut slots).unwrap();
    let first = r.append(&mut nvm, 0, &[1; 8]).unwrap();
    r.append(&mut nvm, 4, &[2; 8]).unwrap();
    r.apply(&mut nvm, &mut dev, first).unwrap();
    assert_eq!(r.pending_entries(), 1);
    let mut buf = [0u8; 12];
    r.read(&mut nvm, &mut dev, 0, &mut buf).unwrap();
    assert_eq!(buf, [1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2]);
    let writer = r.ring().writer_index();
    r.append(&mut nvm, 0, &[3; 2]).unwrap();
    // A restore to `writer`: the last append is dropped, the one before replayed.
    let report = r.reopen(&mut nvm, &mut dev, writer).unwrap();
    assert_eq!((report.dropped, report.replayed), (1, 1));
    assert_eq!(r.pending_entries(), 0);
    r.read(&mut nvm, &mut dev, 0, &mut buf).unwrap();
    assert_eq!(buf, [1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2]);
}

/// A record boundary at or past the applied index, at random: a visible index a
/// checkpoint could have committed.
fn committable(rng: &mut Rng, boundaries: &[RingIndex], applied: RingIndex) -> RingIndex {
    let candidates: Vec<_> = boundaries
        .iter()
        .copied()
        .filter(|&b| b >= applied)
        .collect();
    candidates[rng.below(candidates.len() as u64) as usize]
}

/// A formatted ring whose applied index is `applied`, as if that many bytes had
/// gone through it (the data area is blank: nothing is pending).
fn nvms_at(applied: u64) -> (VecNvm, VecNvm) {
    let (mut nvm, dev) = nvms();
    let record = applied_record(REGION);
    let newest = record.read(&mut nvm).unwrap().expect("format wrote it");
    record
        .write(&mut nvm, Some(&newest), &applied.to_le_bytes())
        .unwrap();
    (nvm, dev)
}

#[test]
fn reads_equal_the_plain_rings_over_random_appends_applies_and_restores() {
    for seed in 1..=200u64 {
        random_run(seed, 0);
    }
}

/// The index keeps the low 32 bits of each entry's end: log indices that cross 2^32
/// must not confuse which entries are pending or where their data lies.
#[test]
fn reads_stay_equal_where_log_indices_cross_four_gib() {
    for seed in 1..=40u64 {
        random_run(seed, (1 << 32) - 100);
    }
}

/// 300 random steps (appends, applies, restores), each followed by a random read that
/// both rings must answer alike, on a ring opened at log index `start`.
fn random_run(seed: u64, start: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let (mut nvm, mut dev) = nvms_at(start);
    let mut slots = vec![PendingEntry::default(); IndexedRing::slots_for(300)];
    let (mut r, _) =
        IndexedRing::open(&mut nvm, &mut dev, REGION, RingIndex(start), &mut slots).unwrap();
    // Writer indices a checkpoint could have committed (record boundaries).
    let mut boundaries = vec![r.ring().writer_index()];
    for step in 0..300 {
        match rng.below(10) {
            0..=5 => {
                let len = 1 + rng.below(40) as usize;
                let addr = rng.below((DEVICE - len) as u64 + 1) as u32;
                let data: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
                match r.append(&mut nvm, addr, &data) {
                    Ok(w) => boundaries.push(w),
                    Err(RingError::Full { .. }) => {
                        let w = r.ring().writer_index();
                        r.apply(&mut nvm, &mut dev, w).unwrap();
                    }
                    Err(e) => panic!("seed {seed} step {step}: {e}"),
                }
            }
            6 | 7 => {
                let v = committable(&mut rng, &boundaries, r.ring().applied_index());
                r.apply(&mut nvm, &mut dev, v).unwrap();
            }
            8 => {
                // A restore to a committed index at or past the applied one.
                let v = committable(&mut rng, &boundaries, r.ring().applied_index());
                r.reopen(&mut nvm, &mut dev, v).unwrap();
                // The index starts empty because an open leaves nothing pending.
                assert_eq!(r.ring().applied_index(), r.ring().writer_index());
                boundaries.retain(|&b| b <= v);
            }
            _ => {}
        }
        let len = 1 + rng.below(DEVICE as u64) as usize;
        let addr = rng.below((DEVICE - len) as u64 + 1) as u32;
        let (mut a, mut b) = (vec![0u8; len], vec![0u8; len]);
        r.read(&mut nvm, &mut dev, addr, &mut a).unwrap();
        r.ring().read(&mut nvm, &mut dev, addr, &mut b).unwrap();
        assert_eq!(a, b, "seed {seed} step {step}: read of {len} at {addr}");
    }
}

#[test]
fn a_read_outside_the_device_is_refused() {
    let (mut nvm, mut dev) = nvms();
    let mut slots = vec![PendingEntry::default(); IndexedRing::slots_for(300)];
    let (r, _) = IndexedRing::open(&mut nvm, &mut dev, REGION, RingIndex(0), &mut slots).unwrap();
    let mut buf = [0u8; 8];
    assert!(matches!(
        r.read(&mut nvm, &mut dev, DEVICE as u32 - 4, &mut buf),
        Err(RingError::OutsideDevice { .. })
    ));
}
