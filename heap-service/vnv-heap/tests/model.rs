//! Model-based property test: random operation sequences against a reference model,
//! and measured persist costs against `wcec_bound`.
//!
//! The cache and dirty limit are tiny so that swapping and write-back happen on most
//! operations. The model is a map from id to value plus the map as of the last persist;
//! this file must never read the heap's private state.

mod common;

use amber_nvm::sim::VecNvm;
use common::{device, Counting};
use proptest::prelude::*;
use std::collections::BTreeMap;
use vnv_heap::{wcec_bound, ArrayHandle, Config, CostModel, Handle, HeapError, ObjectId, VnvHeap};

#[derive(Clone, Debug, PartialEq)]
enum Val {
    Small(u32),
    Big([u64; 4]),
    Arr(Vec<u8>),
}

#[derive(Clone, Debug)]
enum Op {
    Alloc(u8, u32),
    Free(usize),
    Read(usize),
    Write(usize, u32),
    /// Hold a read guard on one object while writing another.
    ReadWhileWriting(usize, usize, u32),
    Persist,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..3, any::<u32>()).prop_map(|(k, v)| Op::Alloc(k, v)),
        1 => any::<usize>().prop_map(Op::Free),
        3 => any::<usize>().prop_map(Op::Read),
        4 => (any::<usize>(), any::<u32>()).prop_map(|(i, v)| Op::Write(i, v)),
        1 => (any::<usize>(), any::<usize>(), any::<u32>()).prop_map(|(i, j, v)| Op::ReadWhileWriting(i, j, v)),
        2 => Just(Op::Persist),
        1 => Just(Op::Reopen),
    ]
}

const ARR_LEN: u32 = 24;
const ARR_CHUNK: u16 = 8;

fn config() -> Config {
    Config {
        max_dirty_bytes: 120,
        max_objects: 24,
        nvm_offset: 0,
        nvm_data_bytes: 2048,
    }
}

enum H<'h> {
    Small(Handle<'h, u32>),
    Big(Handle<'h, [u64; 4]>),
    Arr(ArrayHandle<'h, u8>),
}

fn read(heap: &VnvHeap<'_, Counting<VecNvm>>, h: &H<'_>) -> Val {
    match h {
        H::Small(h) => Val::Small(heap.get(h).unwrap()),
        H::Big(h) => Val::Big(heap.get(h).unwrap()),
        H::Arr(h) => Val::Arr((0..ARR_LEN).map(|i| heap.get_elem(h, i).unwrap()).collect()),
    }
}

/// Writes `v` into the object and returns its new model value.
fn write(heap: &VnvHeap<'_, Counting<VecNvm>>, h: &mut H<'_>, old: &Val, v: u32) -> Val {
    match (h, old) {
        (H::Small(h), _) => {
            heap.set(h, v).unwrap();
            Val::Small(v)
        }
        (H::Big(h), Val::Big(b)) => {
            let mut b = *b;
            b[(v % 4) as usize] = u64::from(v) << 7;
            heap.update(h, |x| x[(v % 4) as usize] = u64::from(v) << 7)
                .unwrap();
            Val::Big(b)
        }
        (H::Arr(h), Val::Arr(a)) => {
            let mut a = a.clone();
            let i = v % ARR_LEN;
            a[i as usize] = v as u8;
            heap.set_elem(h, i, v as u8).unwrap();
            Val::Arr(a)
        }
        _ => unreachable!("handles and model values are created together"),
    }
}

fn run(ops: Vec<Op>) {
    let config = config();
    let bound = wcec_bound(&config, &CostModel::ZERO);
    let mut cache = [0u8; 160];
    let mut storage = Some(Counting::new(device(&config)));
    let mut now: BTreeMap<u16, Val> = BTreeMap::new();
    let mut persisted = now.clone();
    let mut fresh = true;
    let mut ops = ops.into_iter();
    loop {
        let nvm = storage.take().unwrap();
        let counts = nvm.counts.clone();
        let heap = if fresh {
            VnvHeap::new(nvm, &mut cache, config).unwrap()
        } else {
            VnvHeap::open(nvm, &mut cache, config).expect("a persisted heap reopens")
        };
        fresh = false;
        let mut hs: Vec<(u16, H<'_>)> = now
            .iter()
            .map(|(&id, v)| {
                let oid = ObjectId::from_raw(id);
                let h = match v {
                    Val::Small(_) => H::Small(heap.handle_from_id(oid).unwrap()),
                    Val::Big(_) => H::Big(heap.handle_from_id(oid).unwrap()),
                    Val::Arr(_) => H::Arr(heap.array_from_id(oid).unwrap()),
                };
                (id, h)
            })
            .collect();
        let mut reopen = false;
        for op in ops.by_ref() {
            match op {
                Op::Alloc(kind, v) => {
                    let made = match kind {
                        0 => heap
                            .alloc(v)
                            .map(|h| (h.id().raw(), H::Small(h), Val::Small(v))),
                        1 => heap
                            .alloc([u64::from(v); 4])
                            .map(|h| (h.id().raw(), H::Big(h), Val::Big([u64::from(v); 4]))),
                        _ => heap.alloc_array(ARR_LEN, ARR_CHUNK, v as u8).map(|h| {
                            (
                                h.id().raw(),
                                H::Arr(h),
                                Val::Arr(vec![v as u8; ARR_LEN as usize]),
                            )
                        }),
                    };
                    match made {
                        Ok((id, h, val)) => {
                            now.insert(id, val);
                            hs.push((id, h));
                        }
                        Err(HeapError::OutOfIds | HeapError::NvmFull { .. }) => {}
                        Err(e) => panic!("alloc failed: {e}"),
                    }
                }
                Op::Free(i) if !hs.is_empty() => {
                    let (id, h) = hs.swap_remove(i % hs.len());
                    match h {
                        H::Small(h) => heap.free(h).unwrap(),
                        H::Big(h) => heap.free(h).unwrap(),
                        H::Arr(h) => heap.free_array(h).unwrap(),
                    }
                    now.remove(&id);
                }
                Op::Read(i) if !hs.is_empty() => {
                    let (id, h) = &hs[i % hs.len()];
                    assert_eq!(
                        Some(&read(&heap, h)),
                        now.get(id),
                        "object {id} reads back its model value"
                    );
                }
                Op::Write(i, v) if !hs.is_empty() => {
                    let n = hs.len();
                    let (id, h) = &mut hs[i % n];
                    let new = write(&heap, h, &now[id], v);
                    now.insert(*id, new);
                }
                Op::ReadWhileWriting(i, j, v) if hs.len() >= 2 && i % hs.len() != j % hs.len() => {
                    let n = hs.len();
                    let (i, j) = (i % n, j % n);
                    let (a, b) = if i < j {
                        hs.split_at_mut(j)
                    } else {
                        hs.split_at_mut(i)
                    };
                    let ((rid, rh), (wid, wh)) = if i < j {
                        (&a[i], &mut b[0])
                    } else {
                        (&b[0], &mut a[j])
                    };
                    let held = match rh {
                        H::Small(h) => Some(heap.get_ref(h).unwrap()),
                        _ => None,
                    };
                    let new = write(&heap, wh, &now[wid], v);
                    if let Some(g) = held {
                        assert_eq!(
                            Some(&Val::Small(*g)),
                            now.get(rid),
                            "a held read guard keeps its value"
                        );
                    }
                    now.insert(*wid, new);
                }
                Op::Persist => {
                    let before = counts.get();
                    heap.persist().unwrap();
                    let c = counts.get().since(before);
                    assert!(
                        c.writes <= bound.writes
                            && c.bytes_written <= bound.bytes_written
                            && c.reads <= bound.reads
                            && c.bytes_read <= bound.bytes_read
                            && c.flushes <= bound.flushes
                            && c.fences == 0,
                        "persist cost {c:?} exceeds the bound {bound:?}"
                    );
                    persisted = now.clone();
                }
                Op::Reopen => {
                    reopen = true;
                    break;
                }
                _ => {}
            }
            assert!(
                heap.dirty_bytes() <= config.max_dirty_bytes,
                "the dirty limit holds after every operation"
            );
        }
        if !reopen {
            for (id, h) in &hs {
                assert_eq!(
                    Some(&read(&heap, h)),
                    now.get(id),
                    "final value of object {id}"
                );
            }
        }
        for (_, h) in hs {
            let _ = match h {
                H::Small(h) => h.into_id(),
                H::Big(h) => h.into_id(),
                H::Arr(h) => h.into_id(),
            };
        }
        storage = Some(heap.into_storage());
        if !reopen {
            break;
        }
        now = persisted.clone();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_operation_sequences_match_the_reference_model(ops in prop::collection::vec(op(), 1..80)) {
        run(ops);
    }
}

#[test]
fn a_dirty_limit_filled_with_the_smallest_objects_meets_the_bound_exactly() {
    // 1-byte objects count 17 dirty bytes each: the worst case for operations.
    let config = Config {
        max_dirty_bytes: 170,
        ..config()
    };
    let bound = wcec_bound(&config, &CostModel::ZERO);
    let mut cache = [0u8; 400];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let mut hs: Vec<_> = (0..10u8).map(|i| heap.alloc(i).unwrap()).collect();
    heap.persist().unwrap();
    for h in hs.iter_mut() {
        heap.update(h, |v| *v += 1).unwrap();
    }
    assert_eq!(heap.dirty_bytes(), 170);
    let before = counts.get();
    heap.persist().unwrap();
    let c = counts.get().since(before);
    assert_eq!(
        (c.writes, c.bytes_written, c.reads, c.bytes_read, c.flushes),
        (
            bound.writes,
            bound.bytes_written,
            bound.reads,
            bound.bytes_read,
            bound.flushes
        ),
        "this state is the worst case, so the bound must be met exactly (tight, not loose)"
    );
}
