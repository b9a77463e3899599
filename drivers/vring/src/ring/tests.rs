//! Specifications of the ring, one property per test: visibility, read-your-writes,
//! records that never wrap, back-pressure, restore, and refusal of corrupt records.
//! The exhaustive power-cut search lives in `tests/crash.rs`.

use super::*;
use crate::layout::{capacity_for, KIND_PAD};
use amber_nvm::sim::VecNvm;

/// A ring of 256 data bytes at offset 32 of a 512-byte NVM, and a 128-byte device.
const REGION: Region = Region {
    offset: 32,
    len: DATA_OFFSET + 256,
};

fn setup() -> (VecNvm, VecNvm, Ring) {
    let mut nvm = VecNvm::new(512);
    let mut dev = VecNvm::new(128);
    Ring::format(&mut nvm, REGION).unwrap();
    let (ring, report) = Ring::open(&mut nvm, &mut dev, REGION, RingIndex(0)).unwrap();
    assert_eq!(report, RestoreReport::default());
    (nvm, dev, ring)
}

fn device_bytes(dev: &VecNvm, addr: usize, len: usize) -> &[u8] {
    &dev.image()[addr..addr + len]
}

#[test]
fn a_formatted_ring_opens_empty() {
    let (_, _, ring) = setup();
    assert_eq!(ring.writer_index(), RingIndex(0));
    assert_eq!(ring.applied_index(), RingIndex(0));
    assert_eq!(ring.capacity(), 256);
    assert_eq!(ring.free_bytes(), 256);
}

#[test]
fn appends_reach_the_device_only_up_to_the_visible_index() {
    let (mut nvm, mut dev, mut ring) = setup();
    let first = ring.append(&mut nvm, 0, b"one").unwrap();
    ring.append(&mut nvm, 8, b"two").unwrap();
    assert_eq!(
        dev.image(),
        &[0; 128][..],
        "an append must not touch the device"
    );
    let stats = ring.apply(&mut nvm, &mut dev, first).unwrap();
    assert_eq!(
        stats,
        ApplyStats {
            entries: 1,
            bytes: 3
        }
    );
    assert_eq!(device_bytes(&dev, 0, 3), b"one");
    assert_eq!(
        device_bytes(&dev, 8, 3),
        &[0; 3],
        "a write beyond the visible index reached the device"
    );
    assert_eq!(ring.applied_index(), first);
}

#[test]
fn an_entry_takes_its_header_and_data_rounded_to_a_word() {
    let (mut nvm, _, mut ring) = setup();
    assert_eq!(
        ring.append(&mut nvm, 0, b"abcde").unwrap(),
        RingIndex(32),
        "24 header bytes + 5 data bytes round up to 32"
    );
    assert_eq!(ring.free_bytes(), 224);
}

#[test]
fn reads_see_pending_writes_laid_over_the_device_in_append_order() {
    let (mut nvm, mut dev, mut ring) = setup();
    dev.write(0, &[9; 16]).unwrap();
    ring.append(&mut nvm, 2, b"aaaa").unwrap();
    let visible = ring.append(&mut nvm, 4, b"bb").unwrap();
    ring.apply(&mut nvm, &mut dev, visible).unwrap();
    ring.append(&mut nvm, 3, b"cccc").unwrap();
    ring.append(&mut nvm, 6, b"dd").unwrap();
    let mut buf = [0u8; 10];
    ring.read(&mut nvm, &mut dev, 0, &mut buf).unwrap();
    assert_eq!(
        &buf, b"\x09\x09acccdd\x09\x09",
        "pending writes must overlay the device, later ones over earlier ones"
    );
    assert_eq!(
        device_bytes(&dev, 0, 10),
        b"\x09\x09aabb\x09\x09\x09\x09",
        "reading must not apply anything"
    );
}

#[test]
fn a_read_overlays_only_the_overlapping_part_of_an_entry() {
    let (mut nvm, mut dev, mut ring) = setup();
    ring.append(&mut nvm, 10, b"0123456789").unwrap();
    let mut buf = [0u8; 4];
    ring.read(&mut nvm, &mut dev, 8, &mut buf).unwrap();
    assert_eq!(&buf, b"\0\x0001");
    ring.read(&mut nvm, &mut dev, 18, &mut buf).unwrap();
    assert_eq!(&buf, b"89\0\0");
    ring.read(&mut nvm, &mut dev, 13, &mut buf[..2]).unwrap();
    assert_eq!(&buf[..2], b"34");
}

#[test]
fn an_entry_that_does_not_fit_the_rest_of_the_lap_starts_the_next_one_after_a_pad() {
    let (mut nvm, mut dev, mut ring) = setup();
    // 5 entries of 24 + 16 = 40 bytes: 200 bytes used, 56 left in the lap.
    for i in 0..5 {
        ring.append(&mut nvm, i * 16, &[i as u8 + 1; 16]).unwrap();
    }
    let visible = ring.writer_index();
    ring.apply(&mut nvm, &mut dev, visible).unwrap();
    // 24 + 40 = 64 bytes do not fit in the 56 left: pad, then the entry at position 0.
    let end = ring.append(&mut nvm, 80, &[7; 40]).unwrap();
    assert_eq!(
        end,
        RingIndex(256 + 64),
        "the entry must start the next lap"
    );
    let data_area = (REGION.offset + DATA_OFFSET) as usize;
    assert_eq!(
        &nvm.image()[data_area + 200..data_area + 204],
        &KIND_PAD,
        "the rest of the lap must be marked as a pad"
    );
    assert_eq!(
        &nvm.image()[data_area + 24..data_area + 64],
        &[7; 40],
        "the data must lie contiguously at the start of the data area"
    );
    let stats = ring.apply(&mut nvm, &mut dev, end).unwrap();
    assert_eq!(stats.entries, 1, "a pad is not an entry");
    assert_eq!(device_bytes(&dev, 80, 40), &[7; 40]);
}

#[test]
fn fewer_bytes_than_a_header_left_in_a_lap_are_an_implicit_pad() {
    let (mut nvm, mut dev, mut ring) = setup();
    // 236 bytes: 24 + 212. Then 20 bytes remain, too few for a pad header.
    let visible = ring.append(&mut nvm, 0, &[1; 100]).unwrap();
    ring.apply(&mut nvm, &mut dev, visible).unwrap();
    let visible = ring.append(&mut nvm, 0, &[2; 88]).unwrap();
    assert_eq!(visible, RingIndex(236));
    ring.apply(&mut nvm, &mut dev, visible).unwrap();
    let end = ring.append(&mut nvm, 0, &[3; 4]).unwrap();
    assert_eq!(end, RingIndex(256 + 28));
    ring.apply(&mut nvm, &mut dev, end).unwrap();
    assert_eq!(device_bytes(&dev, 0, 5), &[3, 3, 3, 3, 2]);
}

#[test]
fn a_full_ring_refuses_appends_and_writes_nothing_until_apply_frees_space() {
    let (mut nvm, mut dev, mut ring) = setup();
    let mut appended = 0;
    let err = loop {
        match ring.append(&mut nvm, 0, &[5; 40]) {
            Ok(_) => appended += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(appended, 4, "four 64-byte entries fill 256 bytes");
    assert_eq!(
        err,
        RingError::Full {
            needed: 64,
            free: 0
        }
    );
    let before = nvm.image().to_vec();
    assert!(matches!(
        ring.append(&mut nvm, 0, &[6; 1]),
        Err(RingError::Full { .. })
    ));
    assert_eq!(
        nvm.image(),
        &before[..],
        "a refused append must not write to the ring"
    );
    // The checkpoint the caller requests commits the writer index; apply frees it all.
    let visible = ring.writer_index();
    ring.apply(&mut nvm, &mut dev, visible).unwrap();
    assert_eq!(ring.free_bytes(), 256);
    ring.append(&mut nvm, 0, &[6; 40])
        .expect("an applied ring must take appends again");
}

#[test]
fn apply_below_the_writer_frees_only_what_it_applied() {
    let (mut nvm, mut dev, mut ring) = setup();
    let first = ring.append(&mut nvm, 0, &[1; 40]).unwrap();
    ring.append(&mut nvm, 0, &[2; 40]).unwrap();
    ring.apply(&mut nvm, &mut dev, first).unwrap();
    assert_eq!(ring.free_bytes(), 256 - 64);
}

#[test]
fn writes_that_can_never_fit_or_land_are_refused_by_name() {
    let (mut nvm, _, mut ring) = setup();
    assert_eq!(
        ring.append(&mut nvm, 0, &[0; 233]),
        Err(RingError::EntryTooLarge { len: 233, max: 232 })
    );
    assert_eq!(
        ring.append(&mut nvm, 120, &[0; 9]),
        Err(RingError::OutsideDevice {
            addr: 120,
            len: 9,
            size: 128
        })
    );
    assert_eq!(ring.writer_index(), RingIndex(0));
}

#[test]
fn apply_refuses_visible_indices_the_kernel_could_not_have_committed() {
    let (mut nvm, mut dev, mut ring) = setup();
    let end = ring.append(&mut nvm, 0, b"x").unwrap();
    assert_eq!(
        ring.apply(&mut nvm, &mut dev, RingIndex(end.0 + 4)),
        Err(RingError::VisibleBeyondWriter {
            visible: 32,
            writer: 28
        })
    );
    assert_eq!(
        ring.apply(&mut nvm, &mut dev, RingIndex(12)),
        Err(RingError::VisibleInsideRecord {
            visible: 12,
            record: 0
        })
    );
    ring.apply(&mut nvm, &mut dev, end).unwrap();
    assert_eq!(
        ring.apply(&mut nvm, &mut dev, RingIndex(0)),
        Err(RingError::VisibleBehindApplied {
            visible: 0,
            applied: 28
        })
    );
}

#[test]
fn restore_drops_entries_beyond_the_committed_index_and_replays_the_rest() {
    let (mut nvm, mut dev, mut ring) = setup();
    ring.append(&mut nvm, 0, b"committed").unwrap();
    let visible = ring.append(&mut nvm, 20, b"also").unwrap();
    ring.append(&mut nvm, 40, b"rolled back").unwrap();
    ring.append(&mut nvm, 60, b"this too").unwrap();
    // Power is cut after the commit of `visible` and before the driver applied it.
    let (ring, report) = Ring::open(&mut nvm, &mut dev, REGION, visible).unwrap();
    assert_eq!(
        report,
        RestoreReport {
            dropped: 2,
            replayed: 2,
            replayed_bytes: 13
        }
    );
    assert_eq!(
        ring.writer_index(),
        visible,
        "the writer must restart at the visible index"
    );
    assert_eq!(ring.applied_index(), visible);
    assert_eq!(device_bytes(&dev, 0, 9), b"committed");
    assert_eq!(device_bytes(&dev, 20, 4), b"also");
    assert_eq!(
        device_bytes(&dev, 40, 30),
        &[0; 30],
        "a dropped entry reached the device"
    );
    let (_, again) = Ring::open(&mut nvm, &mut dev, REGION, visible).unwrap();
    assert_eq!(
        again,
        RestoreReport::default(),
        "a second restore must find nothing left to drop or replay"
    );
}

#[test]
fn a_dropped_entry_is_overwritten_by_the_next_append_and_never_resurfaces() {
    let (mut nvm, mut dev, mut ring) = setup();
    ring.append(&mut nvm, 0, b"lost").unwrap();
    let (mut ring, _) = Ring::open(&mut nvm, &mut dev, REGION, RingIndex(0)).unwrap();
    let mut buf = [0u8; 4];
    ring.read(&mut nvm, &mut dev, 0, &mut buf).unwrap();
    assert_eq!(buf, [0; 4], "a dropped write must not be read back");
    let end = ring.append(&mut nvm, 0, b"kept").unwrap();
    ring.apply(&mut nvm, &mut dev, end).unwrap();
    assert_eq!(device_bytes(&dev, 0, 4), b"kept");
}

#[test]
fn a_corrupt_entry_below_the_visible_index_is_named_and_nothing_is_applied() {
    let (mut nvm, mut dev, mut ring) = setup();
    ring.append(&mut nvm, 0, b"good").unwrap();
    let visible = ring.append(&mut nvm, 8, b"data").unwrap();
    // Flip one data byte of the second entry (log index 28, data at 28 + 24).
    let at = REGION.offset + DATA_OFFSET + 28 + 24;
    let mut byte = [0u8; 1];
    nvm.read(at, &mut byte).unwrap();
    nvm.write(at, &[byte[0] ^ 0x20]).unwrap();
    let err = Ring::open(&mut nvm, &mut dev, REGION, visible).unwrap_err();
    assert!(
        matches!(
            err,
            RingError::CorruptEntry {
                index: 28,
                fault: EntryFault::BadChecksum { .. }
            }
        ),
        "got {err:?}"
    );
    assert_eq!(
        dev.image(),
        &[0; 128][..],
        "garbage, or the entries before it, reached the device"
    );
    assert_eq!(
        ring.apply(&mut nvm, &mut dev, visible)
            .map_err(|e| matches!(e, RingError::CorruptEntry { .. })),
        Err(true),
        "apply must refuse the same range"
    );
}

#[test]
fn a_record_of_another_lap_is_a_wrong_index_not_an_entry() {
    let (mut nvm, mut dev, mut ring) = setup();
    let end = ring.append(&mut nvm, 0, b"abc").unwrap();
    ring.apply(&mut nvm, &mut dev, end).unwrap();
    // Pretend the kernel committed a whole lap later: position 0 holds index 0.
    let lap = RingIndex(end.0 + 256 - 28);
    assert_eq!(
        Ring::open(&mut nvm, &mut dev, REGION, lap).map(|_| ()),
        Err(RingError::CorruptEntry {
            index: 28,
            fault: EntryFault::BadKind { found: [0; 4] }
        })
    );
    assert_eq!(
        Ring::open(&mut nvm, &mut dev, REGION, RingIndex(28 + 257)).map(|_| ()),
        Err(RingError::VisibleBeyondWriter {
            visible: 285,
            writer: 284
        }),
        "nothing beyond a ring's worth of entries can have been committed"
    );
}

#[test]
fn a_blank_or_foreign_region_is_not_opened() {
    let mut nvm = VecNvm::new(512);
    let mut dev = VecNvm::new(128);
    assert_eq!(
        Ring::open(&mut nvm, &mut dev, REGION, RingIndex(0)).map(|_| ()),
        Err(RingError::NotFormatted)
    );
    Ring::format(&mut nvm, REGION).unwrap();
    let shorter = Region {
        offset: REGION.offset,
        len: REGION.len - 4,
    };
    assert_eq!(
        Ring::open(&mut nvm, &mut dev, shorter, RingIndex(0)).map(|_| ()),
        Err(RingError::RegionMismatch {
            formatted_len: REGION.len,
            len: REGION.len - 4
        })
    );
    assert_eq!(
        Ring::format(
            &mut nvm,
            Region {
                offset: 0,
                len: 100
            }
        ),
        Err(RingError::RegionTooSmall {
            len: 100,
            min: MIN_REGION_LEN
        })
    );
    assert_eq!(
        Ring::format(
            &mut nvm,
            Region {
                offset: 400,
                len: 300
            }
        ),
        Err(RingError::RegionOutsideNvm {
            offset: 400,
            len: 300,
            size: 512
        })
    );
}

#[test]
fn reformatting_forgets_the_old_applied_index_and_entries() {
    let (mut nvm, mut dev, mut ring) = setup();
    for _ in 0..3 {
        let end = ring.append(&mut nvm, 0, &[1; 8]).unwrap();
        ring.apply(&mut nvm, &mut dev, end).unwrap();
    }
    ring.append(&mut nvm, 0, &[2; 8]).unwrap();
    Ring::format(&mut nvm, REGION).unwrap();
    let (ring, report) = Ring::open(&mut nvm, &mut dev, REGION, RingIndex(0)).unwrap();
    assert_eq!(ring.applied_index(), RingIndex(0));
    assert_eq!(report, RestoreReport::default());
}

#[test]
fn the_capacity_is_what_the_layout_says() {
    let (_, _, ring) = setup();
    assert_eq!(ring.capacity(), capacity_for(REGION.len));
    assert_eq!(ring.max_entry_len(), 256 - ENTRY_HEADER_LEN);
}
