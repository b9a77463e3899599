//! Crash injection: a power cut at every store of a workload, torn at several points,
//! must leave a heap that reopens with exactly the state of the last completed persist.
//!
//! The workload uses a tiny cache and dirty limit so that write-back and eviction happen
//! between persists; the cuts therefore land in format, write-back, flush, unload, a
//! dead half written early and persist stores alike (allocations and frees write
//! nothing while the cache and the dirty limit take them). This test must never accept a state other than the last
//! committed one (or the one being committed, when its commit record was fully written).

mod common;

use amber_nvm::sim::{Cut, PowerCut, VecNvm};
use common::{small_config, Counting, Counts};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use vnv_heap::{ArrayHandle, Config, Handle, HeapError, ObjectId, VnvHeap};

#[derive(Clone, Debug, PartialEq)]
enum Val {
    Word(u64),
    Blob([u32; 6]),
    Arr(Vec<u16>),
}

type Model = BTreeMap<u16, Val>;

const ARR_LEN: u32 = 10;
const ARR_CHUNK: u16 = 4;
const CACHE: usize = 160;

fn config() -> Config {
    small_config(64, CACHE)
}

enum H<'h> {
    Word(Handle<'h, u64>),
    Blob(Handle<'h, [u32; 6]>),
    Arr(ArrayHandle<'h, u16>),
}

/// A deterministic workload; returns at the first error (the power cut).
/// `on_persist` sees the model after every successful persist.
fn workload(
    heap: &VnvHeap<'_, Counting<PowerCut<VecNvm>>>,
    on_persist: &mut dyn FnMut(&Model),
) -> Result<(), HeapError> {
    let mut rng: u32 = 0x9E37_79B9;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        rng
    };
    let mut model = Model::new();
    let mut hs: Vec<(u16, H<'_>)> = Vec::new();
    for step in 0..150u32 {
        let r = next();
        match r % 10 {
            0 | 1 if hs.len() < 10 => {
                let h = match r % 3 {
                    0 => {
                        let h = heap.alloc(u64::from(step))?;
                        model.insert(h.id().raw(), Val::Word(step.into()));
                        (h.id().raw(), H::Word(h))
                    }
                    1 => {
                        let v = [step; 6];
                        let h = heap.alloc(v)?;
                        model.insert(h.id().raw(), Val::Blob(v));
                        (h.id().raw(), H::Blob(h))
                    }
                    _ => {
                        let h = heap.alloc_array(ARR_LEN, ARR_CHUNK, step as u16)?;
                        model.insert(h.id().raw(), Val::Arr(vec![step as u16; ARR_LEN as usize]));
                        (h.id().raw(), H::Arr(h))
                    }
                };
                hs.push(h);
            }
            2..=4 if !hs.is_empty() => {
                let i = (next() as usize) % hs.len();
                let (id, h) = &mut hs[i];
                match (h, model.get_mut(id).expect("model tracks every handle")) {
                    (H::Word(h), Val::Word(v)) => {
                        heap.update(h, |x| *x = x.wrapping_mul(31).wrapping_add(u64::from(step)))?;
                        *v = v.wrapping_mul(31).wrapping_add(u64::from(step));
                    }
                    (H::Blob(h), Val::Blob(v)) => {
                        let k = (step % 6) as usize;
                        heap.update(h, |x| x[k] = step)?;
                        v[k] = step;
                    }
                    (H::Arr(h), Val::Arr(v)) => {
                        let k = step % ARR_LEN;
                        heap.set_elem(h, k, step as u16)?;
                        v[k as usize] = step as u16;
                    }
                    _ => unreachable!("handle and model kinds are pushed together"),
                }
            }
            5 if !hs.is_empty() => {
                let (id, h) = hs.swap_remove((next() as usize) % hs.len());
                match h {
                    H::Word(h) => heap.free(h)?,
                    H::Blob(h) => heap.free(h)?,
                    H::Arr(h) => heap.free_array(h)?,
                }
                model.remove(&id);
            }
            6 if !hs.is_empty() => {
                let (id, h) = &hs[(next() as usize) % hs.len()];
                let got = match h {
                    H::Word(h) => Val::Word(heap.get(h)?),
                    H::Blob(h) => Val::Blob(heap.get(h)?),
                    H::Arr(h) => Val::Arr(
                        (0..ARR_LEN)
                            .map(|i| heap.get_elem(h, i))
                            .collect::<Result<_, _>>()?,
                    ),
                };
                assert_eq!(
                    Some(&got),
                    model.get(id),
                    "reading object {id} before any cut"
                );
            }
            7 | 8 if !hs.is_empty() => {
                let pick = next();
                let n = hs.len();
                let kind = (pick >> 16) % 3;
                let word = (0..n)
                    .map(|k| (pick as usize + k) % n)
                    .find(|&k| matches!(hs[k].1, H::Word(_)));
                match (kind, word) {
                    (0, Some(k)) => {
                        // Persist while a write guard is held: the value written before
                        // the persist is the persisted one, the one after it is not.
                        let (id, H::Word(h)) = &mut hs[k] else {
                            unreachable!("found as a word")
                        };
                        let mut g = heap.get_mut(h)?;
                        *g = u64::from(step) << 8;
                        model.insert(*id, Val::Word(u64::from(step) << 8));
                        heap.persist()?;
                        on_persist(&model);
                        *g += 1;
                        drop(g);
                        model.insert(*id, Val::Word((u64::from(step) << 8) + 1));
                    }
                    _ => match &hs[pick as usize % n].1 {
                        H::Word(h) if kind == 1 => heap.unload(h)?,
                        H::Word(h) => heap.flush(h)?,
                        H::Blob(h) if kind == 1 => heap.unload(h)?,
                        H::Blob(h) => heap.flush(h)?,
                        H::Arr(_) => {}
                    },
                }
            }
            _ => {
                heap.persist()?;
                on_persist(&model);
            }
        }
    }
    heap.persist()?;
    on_persist(&model);
    Ok(())
}

/// Checks that `heap` holds exactly `want`, and gives the handles back as ids.
fn check(heap: &VnvHeap<'_, VecNvm>, want: &Model, what: &str) {
    for (&id, val) in want {
        let oid = ObjectId::from_raw(id);
        let got = match val {
            Val::Word(_) => Val::Word(heap.get(&heap.handle_from_id::<u64>(oid).unwrap()).unwrap()),
            Val::Blob(_) => Val::Blob(
                heap.get(&heap.handle_from_id::<[u32; 6]>(oid).unwrap())
                    .unwrap(),
            ),
            Val::Arr(_) => {
                let a = heap.array_from_id::<u16>(oid).unwrap();
                let v = (0..a.len())
                    .map(|i| heap.get_elem(&a, i).unwrap())
                    .collect();
                let _ = a.into_id();
                Val::Arr(v)
            }
        };
        // The handles above were dropped, which frees the objects in the working epoch
        // only; nothing is persisted here.
        assert_eq!(&got, val, "{what}: object {id}");
    }
}

fn live_chunks(want: &Model) -> usize {
    want.values()
        .map(|v| match v {
            Val::Arr(_) => ARR_LEN.div_ceil(ARR_CHUNK.into()) as usize,
            _ => 1,
        })
        .sum()
}

struct Run {
    image: Vec<u8>,
    /// Per completed persist: index of its commit-record store (or of the last
    /// store before it, if it had nothing to commit), and the model.
    commits: Vec<(u64, Model)>,
    lens: Vec<usize>,
    format_stores: u64,
}

fn run(cut: Option<Cut>) -> Run {
    let config = config();
    let dev = VecNvm::new(config.nvm_end().unwrap());
    let pc = match cut {
        Some(c) => PowerCut::at(dev, c),
        None => PowerCut::never(dev),
    };
    let nvm = Counting::new(pc);
    let counts: Rc<Cell<Counts>> = nvm.counts.clone();
    let mut cache = [0u8; CACHE];
    let heap = match VnvHeap::new(nvm, &mut cache, config) {
        Ok(h) => h,
        Err(_) => panic!("cuts are placed after formatting"),
    };
    let format_stores = counts.get().writes;
    let mut commits = vec![(format_stores - 1, Model::new())];
    let result = workload(&heap, &mut |m| {
        commits.push((counts.get().writes - 1, m.clone()))
    });
    if cut.is_none() {
        result.expect("the uncut run completes");
    }
    let pc = heap.into_storage().inner;
    let lens = pc.store_lens().to_vec();
    Run {
        image: pc.into_inner().into_image(),
        commits,
        lens,
        format_stores,
    }
}

#[test]
fn a_cut_at_any_store_reopens_to_the_last_completed_persist() {
    let clean = run(None);
    let total = clean.lens.len() as u64;
    assert!(
        clean.commits.len() > 5,
        "the workload must persist several times"
    );
    assert!(
        total > clean.format_stores + 100,
        "the workload must issue many stores, got {total}"
    );
    let config = config();
    let mut cases = 0;
    for k in clean.format_stores..total {
        let len = clean.lens[k as usize];
        let mut splits = vec![0, 1, len / 2, len.saturating_sub(1), len];
        splits.sort_unstable();
        splits.dedup();
        for keep in splits {
            let cut = run(Some(Cut {
                at_store: k,
                keep_bytes: keep,
            }));
            // The state expected: the last persist whose commit store completed. A commit
            // store that was cut with all its bytes kept did complete.
            let want = clean
                .commits
                .iter()
                .rev()
                .find(|(at, _)| *at < k || (*at == k && keep == len))
                .map(|(_, m)| m)
                .expect("the format commit precedes every cut");
            let what = format!("cut at store {k} of {total} keeping {keep} of {len} bytes");
            let mut cache = [0u8; CACHE];
            let heap = VnvHeap::open(VecNvm::from_image(cut.image), &mut cache, config)
                .unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
            assert_eq!(heap.live_count(), live_chunks(want), "{what}: live objects");
            check(&heap, want, &what);
            // The reopened heap must keep working: persist a change and reopen again.
            let image = {
                let extra = heap.alloc(0xABCDu64).unwrap();
                let _ = extra.into_id();
                heap.persist()
                    .unwrap_or_else(|e| panic!("{what}: persist after reopen: {e}"));
                heap.into_storage()
            };
            let heap = VnvHeap::open(image, &mut cache, config).unwrap();
            assert_eq!(
                heap.live_count(),
                live_chunks(want) + 1 - freed_by_check(want),
                "{what}: after a second reopen"
            );
            cases += 1;
        }
    }
    assert!(cases > 300, "only {cases} cut cases ran");
    amber_test_summary::record(&format!(
        "vNV-Heap (host, heap-service/vnv-heap): {cases} power cuts over {total} stores of {} persists, each reopened with the last persisted state",
        clean.commits.len() - 1
    ));
}

/// `check` drops the handles it rebuilds, which frees those objects in the working
/// epoch; the persist after it commits those frees (arrays are kept via `into_id`).
fn freed_by_check(want: &Model) -> usize {
    want.values().filter(|v| !matches!(v, Val::Arr(_))).count()
}
