//! Split heaps with raw pins, as the heap service uses them: the metadata in a buffer of
//! its own, the arena holding object bytes only (shared with a client that writes it
//! through its write pins), persist while objects are write-pinned, and `reload` after a
//! restore. A model test drives random pins, writes through them, persists and restores
//! against a reference model. This file must never read the heap's private state.

use amber_nvm::sim::VecNvm;
use proptest::prelude::*;
use std::cell::Cell;
use vnv_heap::{Config, HeapError, ObjectId, VnvHeap, SPLIT_BYTES_PER_ID, SPLIT_BYTES_PER_UNIT};

const ARENA: u32 = 256;

fn config() -> Config {
    let base = Config {
        max_dirty_bytes: 120,
        max_objects: 16,
        nvm_offset: 0,
        nvm_data_bytes: 2048,
        cache_bytes: 0,
    };
    Config {
        cache_bytes: ARENA + base.split_metadata_bytes(ARENA),
        ..base
    }
}

/// 8-aligned buffers for a split heap.
fn buffers(c: &Config) -> (Vec<u64>, Vec<u64>) {
    let meta = c.split_metadata_bytes(ARENA) as usize;
    (vec![0; meta / 8], vec![0; ARENA as usize / 8])
}

fn bytes(v: &mut [u64]) -> &mut [u8] {
    // SAFETY: a u64 slice is `8 * len` initialized bytes; the u8 view borrows it.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len() * 8) }
}

/// Allocates a zeroed byte object of `n` bytes (one chunk) and gives up its handle.
fn alloc(h: &VnvHeap<'_, VecNvm>, n: u16) -> Result<ObjectId, HeapError> {
    Ok(h.alloc_array::<u8>(n.into(), n, 0)?.into_id())
}

fn arena_read(h: &VnvHeap<'_, VecNvm>, off: usize, n: usize) -> Vec<u8> {
    // SAFETY: the range is a pinned object's bytes inside the arena.
    unsafe { std::slice::from_raw_parts(h.arena_ptr().add(off), n).to_vec() }
}

fn arena_write(h: &VnvHeap<'_, VecNvm>, off: usize, data: &[u8]) {
    // SAFETY: as in `arena_read`, for a write-pinned object.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), h.arena_ptr().add(off), data.len()) }
}

fn scribble(h: &VnvHeap<'_, VecNvm>, b: u8) {
    // SAFETY: the whole arena, which the heap never reads but to write objects to NVM.
    unsafe { std::ptr::write_bytes(h.arena_ptr(), b, ARENA as usize) }
}

#[test]
fn the_metadata_cost_is_the_bitmaps_four_bytes_per_unit_and_eight_per_id() {
    let c = config();
    let units = ARENA / 8;
    let m = c.split_metadata_bytes(ARENA);
    let tables = units * SPLIT_BYTES_PER_UNIT + u32::from(c.max_objects) * SPLIT_BYTES_PER_ID;
    assert!(m >= tables);
    assert!(
        m <= tables + 64,
        "the bitmaps take 64 bytes here (15 words, rounded to 8)"
    );
    let (mut meta, mut arena) = buffers(&c);
    let short = &mut bytes(&mut meta)[8..];
    let cfg = Config {
        cache_bytes: c.cache_bytes - 8,
        ..c
    };
    assert!(matches!(
        VnvHeap::new_split(VecNvm::new(4096), short, bytes(&mut arena), cfg),
        Err(HeapError::CacheTooSmall { .. })
    ));
}

#[test]
fn a_write_pinned_object_is_persisted_stays_pinned_and_reloads() {
    let c = config();
    let (mut meta, mut arena) = buffers(&c);
    let heap =
        VnvHeap::new_split(VecNvm::new(4096), bytes(&mut meta), bytes(&mut arena), c).unwrap();
    let id = alloc(&heap, 20).unwrap();
    let hint = Cell::new(u16::MAX);
    let off = heap.pin(id, 20, true, &hint).unwrap();
    assert_eq!(off % 8, 0);
    arena_write(&heap, off, &[7; 20]);
    assert_eq!(
        heap.pin(id, 20, false, &hint),
        Err(HeapError::Borrowed { id: id.raw() })
    );
    assert_eq!(
        heap.pin(id, 30, false, &hint),
        Err(HeapError::TypeMismatch { id: id.raw() })
    );
    heap.persist().unwrap();
    assert_eq!(
        heap.dirty_bytes(),
        20 + Config::DIRTY_OVERHEAD,
        "stays dirty"
    );
    arena_write(&heap, off, &[9; 20]);
    scribble(&heap, 0xEE);
    heap.reload().unwrap();
    assert_eq!(
        arena_read(&heap, off, 20),
        vec![7; 20],
        "the persisted bytes"
    );
    assert_eq!(
        heap.unpin(id, false, &hint),
        Err(HeapError::NotPinned { id: id.raw() })
    );
    heap.unpin(id, true, &hint).unwrap();
    assert_eq!(
        heap.unpin(id, true, &hint),
        Err(HeapError::NotPinned { id: id.raw() })
    );
    heap.persist().unwrap();
    assert_eq!(heap.dirty_bytes(), 0);
    let storage = heap.into_storage();
    let (mut meta, mut arena) = buffers(&c);
    let heap = VnvHeap::open_split(storage, bytes(&mut meta), bytes(&mut arena), c).unwrap();
    let off = heap.pin(id, 20, false, &hint).unwrap();
    assert_eq!(arena_read(&heap, off, 20), vec![7; 20]);
    // A handle and raw pins never mix; a pinned object is not freed.
    assert!(matches!(
        heap.array_from_id::<u8>(id).map(|a| heap.free_array(a)),
        Ok(Err(HeapError::Borrowed { .. }))
    ));
}

#[derive(Clone, Debug)]
enum Op {
    Alloc(u8),
    PinRead(usize),
    PinWrite(usize, u8),
    Unpin(usize),
    Persist,
    /// Persist (the checkpoint), lose the arena, reload.
    Restore(u8),
    /// Persist, then open the storage with fresh buffers (all pins dropped).
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (1u8..70).prop_map(Op::Alloc),
        3 => any::<usize>().prop_map(Op::PinRead),
        3 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Op::PinWrite(i, b)),
        4 => any::<usize>().prop_map(Op::Unpin),
        1 => Just(Op::Persist),
        1 => any::<u8>().prop_map(Op::Restore),
        1 => Just(Op::Reopen),
    ]
}

struct Obj {
    id: ObjectId,
    bytes: Vec<u8>,
    hint: Cell<u16>,
    readers: usize,
    writer: Option<usize>,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn raw_pins_persist_and_reload_like_the_model(ops in prop::collection::vec(op(), 1..60)) {
        let c = config();
        let (mut meta, mut arena) = buffers(&c);
        let mut objs: Vec<Obj> = Vec::new();
        {
            let heap =
                VnvHeap::new_split(VecNvm::new(4096), bytes(&mut meta), bytes(&mut arena), c).unwrap();
            let check = |heap: &VnvHeap<'_, VecNvm>, o: &Obj, off: usize| {
                assert_eq!(arena_read(heap, off, o.bytes.len()), o.bytes, "object {}", o.id);
            };
            for op in &ops {
                let n = objs.len();
                match *op {
                    Op::Alloc(n) => match alloc(&heap, n.into()) {
                        Ok(id) => objs.push(Obj { id, bytes: vec![0; n.into()], hint: Cell::new(u16::MAX), readers: 0, writer: None }),
                        Err(HeapError::OutOfIds | HeapError::NvmFull { .. }) => {}
                        Err(e) => panic!("alloc: {e}"),
                    },
                    Op::PinRead(i) if !objs.is_empty() => {
                        let o = &mut objs[i % n];
                        match heap.pin(o.id, o.bytes.len() as u16, false, &o.hint) {
                            Ok(off) => { prop_assert!(o.writer.is_none()); check(&heap, o, off); o.readers += 1; }
                            Err(HeapError::Borrowed { .. }) => prop_assert!(o.writer.is_some()),
                            Err(HeapError::CacheFull { .. }) => {}
                            Err(e) => panic!("pin: {e}"),
                        }
                    }
                    Op::PinWrite(i, b) if !objs.is_empty() => {
                        let o = &mut objs[i % n];
                        match heap.pin(o.id, o.bytes.len() as u16, true, &o.hint) {
                            Ok(off) => {
                                prop_assert!(o.writer.is_none() && o.readers == 0);
                                check(&heap, o, off);
                                o.bytes.iter_mut().for_each(|x| *x = x.wrapping_add(b));
                                arena_write(&heap, off, &o.bytes);
                                o.writer = Some(off);
                            }
                            Err(HeapError::Borrowed { .. }) => prop_assert!(o.writer.is_some() || o.readers > 0),
                            Err(HeapError::CacheFull { .. } | HeapError::DirtyLimitExceeded { .. }) => {}
                            Err(e) => panic!("pin mut: {e}"),
                        }
                    }
                    Op::Unpin(i) if !objs.is_empty() => {
                        let o = &mut objs[i % n];
                        if let Some(off) = o.writer.take() {
                            // One more change through the pin before it goes.
                            o.bytes[0] ^= 0x55;
                            arena_write(&heap, off, &o.bytes);
                            heap.unpin(o.id, true, &o.hint).unwrap();
                        } else if o.readers > 0 {
                            o.readers -= 1;
                            heap.unpin(o.id, false, &o.hint).unwrap();
                        } else {
                            prop_assert!(heap.unpin(o.id, false, &o.hint).is_err());
                        }
                    }
                    Op::Persist => heap.persist().unwrap(),
                    Op::Restore(b) => {
                        heap.persist().unwrap();
                        scribble(&heap, b);
                        heap.reload().unwrap();
                        for o in &objs {
                            if o.readers > 0 || o.writer.is_some() {
                                let off = heap.pin(o.id, o.bytes.len() as u16, false, &o.hint);
                                if let Some(w) = o.writer {
                                    prop_assert!(off.is_err());
                                    check(&heap, o, w);
                                } else {
                                    let off = off.unwrap();
                                    check(&heap, o, off);
                                    heap.unpin(o.id, false, &o.hint).unwrap();
                                }
                            }
                        }
                    }
                    Op::Reopen => {
                        heap.persist().unwrap();
                        for o in &mut objs {
                            o.readers = 0;
                            o.writer = None;
                            o.hint.set(u16::MAX);
                        }
                        // The sequence ends with the reopened heap checked.
                        return reopened(heap.into_storage(), c, &objs);
                    }
                    _ => {}
                }
                prop_assert!(heap.dirty_bytes() <= c.max_dirty_bytes);
            }
            // Every object, pinned or not, holds the model's bytes.
            for o in &objs {
                if let Some(off) = o.writer { check(&heap, o, off); }
            }
        }
    }
}

/// After a reopen: every object holds the bytes of the persist before it.
fn reopened(s: VecNvm, c: Config, objs: &[Obj]) -> Result<(), TestCaseError> {
    let (mut meta, mut arena) = buffers(&c);
    let heap = VnvHeap::open_split(s, bytes(&mut meta), bytes(&mut arena), c).unwrap();
    for o in objs {
        let off = heap
            .pin(o.id, o.bytes.len() as u16, false, &o.hint)
            .unwrap();
        prop_assert_eq!(arena_read(&heap, off, o.bytes.len()), o.bytes.clone());
        heap.unpin(o.id, false, &o.hint).unwrap();
    }
    Ok(())
}
