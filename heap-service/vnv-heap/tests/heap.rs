//! Behaviour of the heap through its public API: the properties issue 5 asks for.
//!
//! Each test name states a property; these tests must never reach into private state.

mod common;

use amber_nvm::sim::VecNvm;
use common::{device, small_config, Counting};
use vnv_heap::{wcec_bound, Config, CostModel, HeapError, ObjectId, VnvHeap, METADATA};

#[test]
fn values_round_trip_through_get_set_and_update() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let mut a = heap.alloc(41u32).unwrap();
    assert_eq!(heap.get(&a).unwrap(), 41);
    heap.set(&mut a, 7).unwrap();
    assert_eq!(
        heap.update(&mut a, |v| {
            *v += 1;
            *v
        })
        .unwrap(),
        8
    );
    assert_eq!(*heap.get_ref(&a).unwrap(), 8);
}

#[test]
fn a_reopened_heap_has_exactly_the_last_persisted_state() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let mut a = heap.alloc(1u64).unwrap();
    let b = heap.alloc([9u8; 10]).unwrap();
    heap.persist().unwrap();
    heap.set(&mut a, 2).unwrap();
    let c = heap.alloc(3u16).unwrap();
    let (ida, idb, idc) = (a.into_id(), b.into_id(), c.into_id());
    let image = heap.into_storage();

    let heap = VnvHeap::open(image, &mut cache, config).unwrap();
    let a = heap.handle_from_id::<u64>(ida).unwrap();
    assert_eq!(heap.get(&a).unwrap(), 1, "the unpersisted set must be lost");
    assert_eq!(
        heap.get(&heap.handle_from_id::<[u8; 10]>(idb).unwrap())
            .unwrap(),
        [9; 10]
    );
    assert_eq!(
        heap.handle_from_id::<u16>(idc).unwrap_err(),
        HeapError::NoSuchObject { id: idc.raw() },
        "an object allocated after the last persist must not exist after a reopen"
    );
}

#[test]
fn a_free_is_undone_by_a_reopen_before_persist_and_kept_after_it() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let a = heap.alloc(5u32).unwrap();
    let id = a.id();
    heap.persist().unwrap();
    drop(a);
    let heap = VnvHeap::open(heap.into_storage(), &mut cache, config).unwrap();
    let a = heap.handle_from_id::<u32>(id).unwrap();
    assert_eq!(
        heap.get(&a).unwrap(),
        5,
        "a free after the last persist must be undone"
    );
    heap.free(a).unwrap();
    heap.persist().unwrap();
    let heap = VnvHeap::open(heap.into_storage(), &mut cache, config).unwrap();
    assert!(matches!(
        heap.handle_from_id::<u32>(id),
        Err(HeapError::NoSuchObject { .. })
    ));
}

#[test]
fn a_wrong_id_or_type_is_an_error_never_a_misread() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let a = heap.alloc(5u32).unwrap();
    let arr = heap.alloc_array(10, 4, 0u16).unwrap();
    let (id, arr_id) = (a.into_id(), arr.into_id());
    assert_eq!(
        heap.handle_from_id::<i32>(id).unwrap_err(),
        HeapError::TypeMismatch { id: id.raw() },
        "same size, other type"
    );
    assert_eq!(
        heap.handle_from_id::<u64>(id).unwrap_err(),
        HeapError::TypeMismatch { id: id.raw() },
        "other size"
    );
    assert!(
        matches!(
            heap.array_from_id::<u32>(id),
            Err(HeapError::TypeMismatch { .. })
        ),
        "an object is no array"
    );
    assert!(
        matches!(
            heap.handle_from_id::<[u16; 4]>(arr_id),
            Err(HeapError::TypeMismatch { .. })
        ),
        "a chunk is no object"
    );
    assert!(matches!(
        heap.handle_from_id::<u32>(ObjectId::from_raw(31)),
        Err(HeapError::NoSuchObject { .. })
    ));
    assert!(matches!(
        heap.handle_from_id::<u32>(ObjectId::from_raw(9999)),
        Err(HeapError::NoSuchObject { .. })
    ));
    let a = heap.handle_from_id::<u32>(id).unwrap();
    assert_eq!(
        heap.handle_from_id::<u32>(id).unwrap_err(),
        HeapError::AlreadyHeld { id: id.raw() },
        "two handles must never own one object"
    );
    assert_eq!(heap.get(&a).unwrap(), 5);
    let arr = heap.array_from_id::<u16>(arr_id).unwrap();
    assert_eq!((arr.len(), arr.chunk_len(), arr.chunk_count()), (10, 4, 3));
}

#[test]
fn guards_on_different_objects_can_be_held_together() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let a = heap.alloc(1u32).unwrap();
    let mut b = heap.alloc(2u32).unwrap();
    let mut c = heap.alloc(3u32).unwrap();
    let ra = heap.get_ref(&a).unwrap();
    let ra2 = heap.get_ref(&a).unwrap();
    let mut wb = heap.get_mut(&mut b).unwrap();
    let mut wc = heap.get_mut(&mut c).unwrap();
    *wb += *ra;
    *wc += *ra2;
    assert_eq!((*wb, *wc), (3, 4));
    drop((wb, wc, ra, ra2));
    heap.persist().unwrap();
    assert_eq!((heap.get(&b).unwrap(), heap.get(&c).unwrap()), (3, 4));
}

#[test]
fn a_persist_while_write_guards_are_held_writes_them_and_they_stay_dirty() {
    // The interrupt-driven case: persist runs while the application holds RefMuts.
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let mut b = heap.alloc(2u32).unwrap();
    let mut c = heap.alloc(3u32).unwrap();
    heap.persist().unwrap();
    let mut wb = heap.get_mut(&mut b).unwrap();
    let mut wc = heap.get_mut(&mut c).unwrap();
    *wb = 20;
    *wc = 30;
    heap.persist().unwrap();
    assert_eq!(
        heap.dirty_bytes(),
        2 * (4 + Config::DIRTY_OVERHEAD),
        "objects under a RefMut stay dirty after the persist"
    );
    *wb = 21; // after the persist: lost at a power cut
    drop((wb, wc));
    assert!(heap.is_dirty(&b) && heap.is_dirty(&c));
    let (ib, ic) = (b.into_id(), c.into_id());
    let heap = VnvHeap::open(heap.into_storage(), &mut cache, config).unwrap();
    let b = heap.handle_from_id::<u32>(ib).unwrap();
    let c = heap.handle_from_id::<u32>(ic).unwrap();
    assert_eq!(
        (heap.get(&b).unwrap(), heap.get(&c).unwrap()),
        (20, 30),
        "the persist wrote the held objects' bytes as they were"
    );
}

#[test]
fn more_objects_than_the_cache_holds_are_swapped_in_and_out() {
    let config = small_config(64, 160);
    let mut cache = [0u8; 160];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let cap = heap.cache_capacity();
    let mut hs: Vec<_> = (0..20u64).map(|i| heap.alloc([i; 3]).unwrap()).collect();
    assert!(
        20 * 32 > cap,
        "the test needs more object bytes ({}) than cache ({cap})",
        20 * 32
    );
    for round in 0..3u64 {
        for (i, h) in hs.iter_mut().enumerate() {
            let want = [i as u64 + round; 3];
            assert_eq!(heap.get(h).unwrap(), want, "object {i} in round {round}");
            heap.set(h, [i as u64 + round + 1; 3]).unwrap();
            assert!(
                heap.dirty_bytes() <= config.max_dirty_bytes,
                "the dirty limit must hold after every get_mut"
            );
        }
    }
    assert!(heap.resident_count() < 20, "not everything can be resident");
}

#[test]
fn get_mut_writes_back_unpinned_dirty_objects_to_stay_under_the_limit() {
    // Each u64 costs 8 + 16 = 24 dirty bytes; the limit allows two.
    let config = small_config(48, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let mut hs: Vec<_> = (0..5u64).map(|i| heap.alloc(i).unwrap()).collect();
    for h in hs.iter_mut() {
        heap.update(h, |v| *v += 100).unwrap();
        assert!(
            heap.dirty_bytes() <= 48,
            "dirty bytes {} exceed the limit",
            heap.dirty_bytes()
        );
    }
    assert_eq!(heap.dirty_bytes(), 48);
    let got: Vec<u64> = hs.iter().map(|h| heap.get(h).unwrap()).collect();
    assert_eq!(got, vec![100, 101, 102, 103, 104]);
}

#[test]
fn get_mut_fails_cleanly_when_pinned_dirty_objects_fill_the_limit() {
    let config = small_config(48, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let mut a = heap.alloc(1u64).unwrap();
    let mut b = heap.alloc(2u64).unwrap();
    let mut c = heap.alloc(3u64).unwrap();
    let ga = heap.get_mut(&mut a).unwrap();
    let gb = heap.get_mut(&mut b).unwrap();
    assert_eq!(
        heap.get_mut(&mut c).unwrap_err(),
        HeapError::DirtyLimitExceeded {
            needed: 24,
            dirty: 48,
            limit: 48
        },
        "two pinned dirty objects fill the limit; a third must be refused, not panic"
    );
    assert_eq!(heap.dirty_bytes(), 48, "the refused get_mut must not count");
    drop((ga, gb));
    heap.set(&mut c, 30).unwrap();
    assert_eq!(heap.get(&c).unwrap(), 30);
    let mut big = heap.alloc([0u8; 40]).unwrap();
    assert_eq!(
        heap.get_mut(&mut big).unwrap_err(),
        HeapError::DirtyLimitExceeded {
            needed: 56,
            dirty: 48,
            limit: 48
        },
        "an object larger than the limit can never be dirty"
    );
}

#[test]
fn a_cache_full_of_pinned_objects_refuses_a_load_with_an_error() {
    let config = small_config(256, 128);
    let mut cache = [0u8; 128];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    // A 4-byte object takes 16 bytes of cache: its 8-byte header and bytes, in units
    // of 8.
    let n = heap.cache_capacity() / 16;
    let hs: Vec<_> = (0..n + 1).map(|i| heap.alloc(i as u32).unwrap()).collect();
    heap.persist().unwrap();
    let guards: Vec<_> = hs[..n].iter().map(|h| heap.get_ref(h).unwrap()).collect();
    assert_eq!(
        heap.get_ref(&hs[n]).unwrap_err(),
        HeapError::CacheFull { needed: 16 }
    );
    drop(guards);
    assert_eq!(heap.get(&hs[n]).unwrap(), n as u32);
}

#[test]
fn several_heaps_live_side_by_side_and_reject_each_others_handles() {
    let config = small_config(256, 256);
    let (mut c1, mut c2) = ([0u8; 256], [0u8; 256]);
    let h1 = VnvHeap::new(device(&config), &mut c1, config).unwrap();
    let h2 = VnvHeap::new(device(&config), &mut c2, config).unwrap();
    let a = h1.alloc(1u32).unwrap();
    let b = h2.alloc(2u32).unwrap();
    assert_eq!(h1.get(&a).unwrap() + h2.get(&b).unwrap(), 3);
    assert_eq!(h1.get(&b).unwrap_err(), HeapError::WrongHeap);
}

#[test]
fn arrays_track_dirtiness_per_chunk() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let mut arr = heap.alloc_array(100, 10, 0u32).unwrap();
    heap.persist().unwrap();
    heap.set_elem(&mut arr, 55, 7).unwrap();
    assert_eq!(
        heap.dirty_bytes(),
        10 * 4 + Config::DIRTY_OVERHEAD,
        "one element written: only its 40-byte chunk is dirty"
    );
    heap.set_elem(&mut arr, 59, 8).unwrap();
    assert_eq!(
        heap.dirty_bytes(),
        40 + Config::DIRTY_OVERHEAD,
        "same chunk: no more dirty bytes"
    );
    {
        let mut chunk = heap.get_chunk_mut(&mut arr, 9).unwrap();
        chunk[9] = 99;
    }
    assert_eq!(heap.dirty_bytes(), 2 * (40 + Config::DIRTY_OVERHEAD));
    assert_eq!(
        heap.get_elem(&arr, 100).unwrap_err(),
        HeapError::IndexOutOfRange {
            index: 100,
            len: 100
        }
    );
    heap.persist().unwrap();
    let id = arr.into_id();
    let heap = VnvHeap::open(heap.into_storage(), &mut cache, config).unwrap();
    let arr = heap.array_from_id::<u32>(id).unwrap();
    let all: Vec<u32> = (0..100).map(|i| heap.get_elem(&arr, i).unwrap()).collect();
    let mut want = vec![0u32; 100];
    want[55] = 7;
    want[59] = 8;
    want[99] = 99;
    assert_eq!(all, want);
    let last = heap.get_chunk(&arr, 9).unwrap();
    assert_eq!(last.len(), 10);
}

#[test]
fn an_array_with_a_short_last_chunk_keeps_its_length() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let mut arr = heap.alloc_array(7, 3, 1u8).unwrap();
    heap.set_elem(&mut arr, 6, 2).unwrap();
    heap.persist().unwrap();
    let id = arr.into_id();
    let heap = VnvHeap::open(heap.into_storage(), &mut cache, config).unwrap();
    let arr = heap.array_from_id::<u8>(id).unwrap();
    assert_eq!((arr.len(), arr.chunk_count()), (7, 3));
    assert_eq!(heap.get_chunk(&arr, 2).unwrap().len(), 1);
    assert_eq!(heap.get_elem(&arr, 6).unwrap(), 2);
}

#[test]
fn corrupt_or_missing_commit_records_give_clear_errors() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let blank = device(&config);
    assert_eq!(
        VnvHeap::open(blank, &mut cache, config).err(),
        Some(HeapError::NotFormatted)
    );

    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let _ = heap.alloc(1u8).unwrap().into_id();
    heap.persist().unwrap();
    let mut image = heap.into_storage().into_image();
    image[8] ^= 0xff; // epoch of copy 0
    image[32 + 8] ^= 0xff; // epoch of copy 1
    let err = VnvHeap::open(VecNvm::from_image(image), &mut cache, config)
        .err()
        .unwrap();
    assert_eq!(
        err,
        HeapError::CorruptMetadata {
            at: 0,
            what: "neither copy of the commit record is valid"
        }
    );
    assert!(
        err.to_string()
            .contains("corrupt heap metadata at NVM offset 0x0"),
        "message: {err}"
    );
}

#[test]
fn one_torn_commit_record_copy_falls_back_to_the_other() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let mut a = heap.alloc(1u8).unwrap();
    heap.persist().unwrap(); // epoch 1 in copy 1
    heap.set(&mut a, 2).unwrap();
    heap.persist().unwrap(); // epoch 2 in copy 0
    let id = a.into_id();
    let mut image = heap.into_storage().into_image();
    image[20] ^= 1; // reserved byte of copy 0: its checksum fails
    let heap = VnvHeap::open(VecNvm::from_image(image), &mut cache, config).unwrap();
    assert_eq!(heap.committed_epoch(), 1);
    assert_eq!(
        heap.get(&heap.handle_from_id::<u8>(id).unwrap()).unwrap(),
        1
    );
}

#[test]
fn open_rejects_a_configuration_that_disagrees_with_the_stored_geometry() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let image = heap.into_storage();
    let other = Config {
        max_objects: 31,
        ..config
    };
    assert_eq!(
        VnvHeap::open(image, &mut cache, other).err(),
        Some(HeapError::ConfigMismatch {
            what: "max_objects",
            stored: 32,
            given: 31
        })
    );
}

#[test]
fn new_and_open_refuse_a_cache_of_another_length_than_configured() {
    let config = small_config(256, 512);
    let mut short = [0u8; 504];
    assert_eq!(
        VnvHeap::new(device(&config), &mut short, config).err(),
        Some(HeapError::CacheSizeMismatch {
            configured: 512,
            given: 504
        }),
        "the persist bound counts the cache units of cache_bytes, so no other length may be used"
    );
    let mut cache = [0u8; 512];
    let image = VnvHeap::new(device(&config), &mut cache, config)
        .unwrap()
        .into_storage();
    let mut long = [0u8; 1024];
    let err = VnvHeap::open(image, &mut long, config).err();
    assert_eq!(
        err,
        Some(HeapError::CacheSizeMismatch {
            configured: 512,
            given: 1024
        }),
        "a larger cache than configured would make persist scan past the bound"
    );
    let image = VnvHeap::new(device(&config), &mut cache, config)
        .unwrap()
        .into_storage();
    let bigger = small_config(256, 1024);
    assert!(
        VnvHeap::open(image, &mut long, bigger).is_ok(),
        "the cache size is not stored: a heap reopens with another configured cache"
    );
}

#[test]
fn a_resident_object_costs_an_8_byte_header_which_for_most_sizes_fits_the_units_anyway() {
    // The header holds the object's NVM location and length, so that writing it back
    // reads nothing. The arena is cut in 8-byte units, so an object of 8k + 5 to
    // 8k + 8 bytes takes as many units as with the 4-byte header of version 1; one of
    // 8k + 1 to 8k + 4 bytes takes one more.
    assert_eq!(METADATA.resident_bytes, 8);
    assert_eq!(METADATA.swapped_out_bytes, 0);
    let config = small_config(4096, 1024);
    let mut cache = [0u8; 1024];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let n = heap.cache_capacity() / 40;
    let hs: Vec<_> = (0..n).map(|i| heap.alloc([i as u8; 32]).unwrap()).collect();
    heap.persist().unwrap();
    for h in &hs {
        heap.unload(h).unwrap();
    }
    let _guards: Vec<_> = hs.iter().map(|h| heap.get_ref(h).unwrap()).collect();
    assert_eq!(
        heap.resident_count(),
        n,
        "a 32-byte object and its header fill exactly 40 bytes of cache"
    );
    let used = config.ram_metadata_bytes() + heap.cache_capacity();
    assert!(
        used <= 1024 && used + 8 > 1024,
        "bitmaps plus arena must use the buffer up to alignment, used {used}"
    );
}

#[test]
fn a_storage_error_poisons_the_heap() {
    use amber_nvm::sim::{Cut, PowerCut};
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let nvm = PowerCut::at(
        device(&config),
        Cut {
            at_store: 7,
            keep_bytes: 0,
        },
    );
    let heap = VnvHeap::new(nvm, &mut cache, config)
        .expect("formatting takes 7 stores; the cut is at the 8th");
    let a = heap
        .alloc(1u32)
        .expect("an allocation that fits the cache writes nothing");
    let err = heap.persist().err().unwrap();
    assert!(matches!(err, HeapError::Storage(_)), "{err}");
    assert_eq!(heap.alloc(2u32).err(), Some(HeapError::Poisoned));
    assert_eq!(heap.get(&a).err(), Some(HeapError::Poisoned));
    assert_eq!(heap.persist(), Err(HeapError::Poisoned));
}

#[test]
fn the_persist_bound_is_derived_from_the_dirty_limit_and_the_cache_size() {
    let config = small_config(170, 512);
    let b = wcec_bound(&config, &CostModel::ZERO);
    assert_eq!(b.objects, 10, "each dirty object counts at least 17 bytes");
    // 32 ids: a commit record of 32 + 4 bytes (one bitmap word), one write.
    assert_eq!(b.bytes_written, 170 + 36);
    assert_eq!(
        b.writes,
        2 * 10 + 1,
        "bytes and half per object, then the record"
    );
    assert_eq!((b.reads, b.bytes_read), (0, 0), "persist reads nothing");
    // 512 bytes: 88 B of bitmaps (9 id words, 2 x 4 block words, 2 x 2 unit words,
    // rounded to 8), 53 units of arena. One pass over the units and at most one move
    // of each, 8 id-word steps (frees, the record twice, five operations after the
    // commit), 2 x 4 block words.
    assert_eq!(
        b.scan_steps,
        2 * 53 + 8 + 8,
        "2U + 8 id words + 2 block words"
    );
    assert_eq!((b.cpu_cycles, b.time_ns, b.energy_nj), (0, 0, 0));
    let with_free = wcec_bound(&small_config(170 + 16, 512), &CostModel::ZERO);
    assert_eq!(
        (with_free.objects, with_free.writes),
        (11, 22),
        "16 bytes beyond 10 objects hold one free: its dead half is one more write"
    );
    let m = CostModel::esp32c3_spi_fram();
    let t = wcec_bound(&config, &m);
    assert_eq!(
        t.cpu_cycles,
        m.cpu_fixed_cycles + 10 * m.cpu_per_object_cycles + 122 * m.cpu_per_step_cycles
    );
    assert!(t.time_ns > m.cpu_ns(t.cpu_cycles) && t.energy_nj > m.cpu_nj(t.cpu_cycles));
    // 64 KiB: about 7 900 units after 2 KiB of unit bitmaps.
    let big = wcec_bound(&small_config(170, 64 * 1024), &m);
    assert!(
        big.scan_steps > 7800 && big.time_ns > t.time_ns,
        "a larger cache means more scan steps and a longer bound, dirty limit unchanged"
    );
}

#[test]
fn a_persist_with_nothing_to_commit_touches_no_storage() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let a = heap.alloc(1u32).unwrap();
    heap.persist().unwrap();
    let before = counts.get();
    assert_eq!(heap.get(&a).unwrap(), 1);
    heap.persist().unwrap();
    assert_eq!(counts.get().since(before).writes, 0);
}

#[test]
fn a_write_back_reads_nothing_and_writes_only_the_bytes_once_the_description_is_on_nvm() {
    let config = small_config(1024, 1024);
    let mut cache = [0u8; 1024];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let mut a = heap.alloc([1u8; 64]).unwrap();
    let before = counts.get();
    heap.persist().unwrap();
    let c = counts.get().since(before);
    assert_eq!(c.reads, 0, "persist reads nothing");
    assert_eq!(
        (c.writes, c.bytes_written),
        (3, 64 + 16 + 36),
        "a new object: its bytes and its description, then the commit record"
    );
    heap.set(&mut a, [2u8; 64]).unwrap();
    let before = counts.get();
    heap.persist().unwrap();
    let c = counts.get().since(before);
    assert_eq!(c.reads, 0);
    assert_eq!(
        (c.writes, c.bytes_written),
        (2, 64 + 36),
        "a modified object: its bytes only, then the commit record"
    );
    let _ = a.into_id();
    drop(heap);
    // Under the dirty limit (one 64-byte object at a time), write-backs between
    // persists write the bytes and nothing else.
    let config = small_config(64 + 16, 1024);
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let mut cache = [0u8; 1024];
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let mut a = heap.alloc([1u8; 64]).unwrap();
    let mut b = heap.alloc([2u8; 64]).unwrap();
    heap.persist().unwrap();
    heap.set(&mut a, [3; 64]).unwrap();
    heap.set(&mut b, [4; 64]).unwrap(); // writes back `a`
    heap.set(&mut a, [5; 64]).unwrap(); // writes back `b`
    let before = counts.get();
    heap.set(&mut b, [6; 64]).unwrap(); // writes back `a` again
    let c = counts.get().since(before);
    assert_eq!((c.reads, c.writes, c.bytes_written), (0, 1, 64), "{c:?}");
    heap.persist().unwrap();
    let _ = (a.into_id(), b.into_id());
    let dev = heap.into_storage().inner;
    let mut cache2 = [0u8; 1024];
    let heap = VnvHeap::open(dev, &mut cache2, config).unwrap();
    let a = heap
        .handle_from_id::<[u8; 64]>(ObjectId::from_raw(0))
        .unwrap();
    let b = heap
        .handle_from_id::<[u8; 64]>(ObjectId::from_raw(1))
        .unwrap();
    assert_eq!(
        (heap.get(&a).unwrap(), heap.get(&b).unwrap()),
        ([5; 64], [6; 64])
    );
}

#[test]
fn a_miss_reads_the_bytes_in_one_call_and_nothing_else() {
    let config = small_config(4096, 256);
    let mut cache = [0u8; 256];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let hs: Vec<_> = (0..8u8).map(|i| heap.alloc([i; 40]).unwrap()).collect();
    heap.persist().unwrap();
    let ids: Vec<_> = hs.into_iter().map(|h| h.into_id()).collect();
    let heap = VnvHeap::open(heap.into_storage(), &mut cache, config).unwrap();
    let hs: Vec<_> = ids
        .iter()
        .map(|&id| heap.handle_from_id::<[u8; 40]>(id).unwrap())
        .collect();
    let before = counts.get();
    for round in 0..3 {
        for (i, h) in hs.iter().enumerate() {
            assert_eq!(heap.get(h).unwrap(), [i as u8; 40], "round {round}");
        }
    }
    let c = counts.get().since(before);
    assert!(c.reads >= 8, "the cache cannot hold all eight: {c:?}");
    assert_eq!(
        c.bytes_read,
        40 * c.reads,
        "every read is one object's bytes: no description, no pair"
    );
    assert_eq!(c.writes, 0, "clean objects are evicted without a write");
}

#[test]
fn set_on_a_swapped_out_object_reads_nothing() {
    let config = small_config(4096, 512);
    let mut cache = [0u8; 512];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let mut hs: Vec<_> = (0..6u8).map(|i| heap.alloc([i; 100]).unwrap()).collect();
    heap.persist().unwrap();
    // Touch the others so that the first is evicted.
    for h in &hs[1..] {
        heap.get(h).unwrap();
    }
    assert!(
        !heap.is_resident(&hs[0]),
        "the cache holds fewer than 6 objects"
    );
    let before = counts.get();
    heap.set(&mut hs[0], [42; 100]).unwrap();
    let c = counts.get().since(before);
    assert_eq!(
        c.reads, 0,
        "set replaces every byte: neither the entry nor the old bytes are read"
    );
    assert_eq!(heap.get(&hs[0]).unwrap(), [42; 100]);
    heap.persist().unwrap();
    for h in hs {
        let _ = h.into_id();
    }
    let image = heap.into_storage().inner;
    let mut cache2 = [0u8; 512];
    let heap = VnvHeap::open(image, &mut cache2, config).unwrap();
    let h0 = heap
        .handle_from_id::<[u8; 100]>(ObjectId::from_raw(0))
        .unwrap();
    assert_eq!(
        heap.get(&h0).unwrap(),
        [42; 100],
        "the new value was persisted"
    );
    let h1 = heap
        .handle_from_id::<[u8; 100]>(ObjectId::from_raw(1))
        .unwrap();
    assert_eq!(heap.get(&h1).unwrap(), [1; 100]);
}

#[test]
fn objects_written_again_and_again_stay_dirty_while_one_off_writes_are_written_back() {
    // Each [u8; 32] costs 48 dirty bytes; the limit holds four.
    let config = small_config(4 * 48, 2048);
    let mut cache = [0u8; 2048];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let mut hot: Vec<_> = (0..3u8).map(|i| heap.alloc([i; 32]).unwrap()).collect();
    let mut cold: Vec<_> = (0..20u8).map(|i| heap.alloc([i; 32]).unwrap()).collect();
    heap.persist().unwrap();
    for h in hot.iter_mut() {
        heap.set(h, [7; 32]).unwrap();
        heap.set(h, [8; 32]).unwrap();
    }
    for round in 0..2u8 {
        let before = counts.get();
        for (i, h) in cold.iter_mut().enumerate() {
            heap.set(h, [i as u8 ^ round; 32]).unwrap();
            for h in hot.iter_mut() {
                heap.set(h, [i as u8; 32]).unwrap();
            }
        }
        let c = counts.get().since(before);
        // Only the one-off writes are written back, one object a write: each but the
        // last of the first round (which stays dirty into the second).
        let expected = if round == 0 { 19 } else { 20 };
        assert_eq!(
            (c.writes, c.bytes_written),
            (expected, expected * 32),
            "round {round}: hot objects must stay dirty: {c:?}"
        );
    }
    assert!(hot.iter().all(|h| heap.is_dirty(h)));
    assert!(heap.dirty_bytes() <= 4 * 48);
}

#[test]
fn when_the_hot_set_moves_the_old_one_is_written_back_not_the_new_one() {
    // The limit holds six 32-byte objects. Each phase writes one set of six again and
    // again (random picks), the next phase another set: once the policy has seen a
    // write-back it regrets (an object written back as the one made dirty last, dirty
    // again soon), it writes back what was not written for longest, the old set, and
    // the new set stays dirty.
    const SET: usize = 6;
    let config = small_config(SET as u32 * 48, 2048);
    let mut cache = [0u8; 2048];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let mut hs: Vec<_> = (0..4 * SET)
        .map(|i| heap.alloc([i as u8; 32]).unwrap())
        .collect();
    heap.persist().unwrap();
    let mut rng = 0x1234_5678u32;
    let mut pick = || {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        rng as usize % SET
    };
    let before = counts.get();
    for phase in 0..4 {
        for n in 0..100u8 {
            let k = phase * SET + pick();
            heap.set(&mut hs[k], [n; 32]).unwrap();
        }
    }
    let c = counts.get().since(before);
    // The best a policy can do: write back each set once when the next one comes (18
    // objects); every object of a new set written back before its phase ends costs one
    // more.
    assert!(
        c.bytes_written <= 24 * 32,
        "{} objects written back in four phases: {c:?}",
        c.bytes_written / 32
    );
    assert!(hs[3 * SET..].iter().all(|h| heap.is_dirty(h)));
}

#[test]
fn with_storage_shows_the_storage_as_the_heap_left_it_and_changes_nothing() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(Counting::new(device(&config)), &mut cache, config).unwrap();
    let mut a = heap.alloc(1u32).unwrap();
    let before = heap.with_storage(|s| s.counts.get());
    heap.set(&mut a, 2).unwrap();
    heap.persist().unwrap();
    let d = heap.with_storage(|s| s.counts.get()).since(before);
    assert!(d.bytes_written > 0, "the persist's writes are seen");
    let g = heap.get_ref(&a).unwrap();
    assert_eq!(
        heap.with_storage(|s| s.counts.get()).since(before),
        d,
        "looking at the storage, even with a guard alive, accesses nothing"
    );
    assert_eq!(*g, 2);
}

#[test]
fn an_object_created_and_freed_between_persists_never_reaches_storage() {
    let config = small_config(256, 512);
    let mut cache = [0u8; 512];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let keep = heap.alloc(1u32).unwrap();
    heap.persist().unwrap();
    let before = counts.get();
    for i in 0..50u64 {
        let h = heap.alloc([i; 8]).unwrap();
        assert_eq!(heap.get(&h).unwrap(), [i; 8]);
        heap.free(h).unwrap();
    }
    assert_eq!(
        counts.get().since(before),
        Default::default(),
        "fifty allocations and frees that fit the cache touch no storage"
    );
    heap.persist().unwrap();
    assert_eq!(
        counts.get().since(before).writes,
        0,
        "and leave nothing to commit"
    );
    assert_eq!(heap.get(&keep).unwrap(), 1);
}

#[test]
fn a_freed_persisted_object_gets_its_dead_half_at_the_persist_or_at_once_if_the_limit_is_full() {
    // Each u64 costs 24 dirty bytes; the limit holds two, or one and a pending free.
    let config = small_config(48, 512);
    let mut cache = [0u8; 512];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let a = heap.alloc(1u64).unwrap();
    let b = heap.alloc(2u64).unwrap();
    let mut c = heap.alloc(3u64).unwrap();
    let (ida, idb) = (a.id(), b.id());
    heap.persist().unwrap();
    let before = counts.get();
    heap.free(a).unwrap();
    assert_eq!(counts.get().since(before).writes, 0, "the dead half waits");
    assert_eq!(
        heap.dirty_bytes(),
        Config::DIRTY_OVERHEAD,
        "and counts 16 bytes"
    );
    heap.set(&mut c, 30).unwrap();
    let before = counts.get();
    heap.free(b).unwrap();
    let d = counts.get().since(before);
    assert_eq!(
        (d.writes, d.bytes_written),
        (1, 16),
        "no room left in the limit: the dead half is written at once"
    );
    heap.persist().unwrap();
    let idc = c.into_id();
    let heap = VnvHeap::open(heap.into_storage(), &mut cache, config).unwrap();
    for id in [ida, idb] {
        assert!(matches!(
            heap.handle_from_id::<u64>(id),
            Err(HeapError::NoSuchObject { .. })
        ));
    }
    assert_eq!(
        heap.get(&heap.handle_from_id::<u64>(idc).unwrap()).unwrap(),
        30
    );
}

#[test]
fn flush_writes_one_object_back_and_unload_also_drops_it() {
    let config = small_config(1024, 1024);
    let mut cache = [0u8; 1024];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let mut a = heap.alloc([1u8; 40]).unwrap();
    let b = heap.alloc([2u8; 40]).unwrap();
    assert!(heap.is_dirty(&a), "a new object is dirty until written");
    let before = counts.get();
    heap.flush(&a).unwrap();
    let d = counts.get().since(before);
    assert_eq!(
        (d.writes, d.bytes_written),
        (2, 40 + 16),
        "its bytes and, new, its description"
    );
    assert!(!heap.is_dirty(&a) && heap.is_resident(&a));
    heap.set(&mut a, [3; 40]).unwrap();
    let before = counts.get();
    heap.flush(&a).unwrap();
    heap.flush(&a).unwrap();
    assert_eq!(
        counts.get().since(before).bytes_written,
        40,
        "then only its bytes, once"
    );
    let g = heap.get_ref(&b).unwrap();
    assert_eq!(
        heap.unload(&b).unwrap_err(),
        HeapError::Borrowed { id: b.id().raw() }
    );
    drop(g);
    heap.unload(&b).unwrap();
    assert!(!heap.is_resident(&b) && !heap.is_dirty(&b));
    let before = counts.get();
    assert_eq!(heap.get(&b).unwrap(), [2; 40], "reloaded from its copy");
    assert_eq!(counts.get().since(before).reads, 1);
    let before = counts.get();
    heap.persist().unwrap();
    assert_eq!(
        counts.get().since(before).bytes_written,
        36,
        "only the commit record is left to write"
    );
}
