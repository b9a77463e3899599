//! The table against a `BTreeMap` model under random operation sequences: puts of
//! random lengths (up to and past the maximum), gets, deletes, whole scans and
//! reopenings, on small tables whose key space is larger than their capacity, so that
//! they fill up, refuse new keys, and reuse and reclaim tombstones. After every
//! operation the result must be the model's, and the live count the model's size.

use amber_kv::{Config, KvError, Layout, Table};
use amber_nvm::sim::VecNvm;
use proptest::prelude::*;
use std::collections::BTreeMap;

const MAX_VALUE: u16 = 24;
const BASE: u32 = 40;

#[derive(Clone, Debug)]
enum Op {
    Put(u32, Vec<u8>),
    Get(u32),
    Delete(u32),
    Scan,
    Reopen,
}

fn op(keys: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..keys, prop::collection::vec(any::<u8>(), 0..=MAX_VALUE as usize + 2))
            .prop_map(|(k, v)| Op::Put(k, v)),
        3 => (0..keys).prop_map(Op::Get),
        4 => (0..keys).prop_map(Op::Delete),
        1 => Just(Op::Scan),
        1 => Just(Op::Reopen),
    ]
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::Linear),
        (2u8..=8).prop_map(|entries| Layout::Bucketed { entries }),
    ]
}

fn check(layout: Layout, buckets: u32, ops: &[Op]) -> Result<(), TestCaseError> {
    let config = Config {
        layout,
        buckets,
        max_value: MAX_VALUE,
    };
    let mut t = Table::format(VecNvm::new(32 * 1024), BASE, config).unwrap();
    let mut model: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    let cap = config.capacity() as usize;
    let mut buf = [0u8; MAX_VALUE as usize];
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Put(k, v) => {
                let got = t.put(*k, v);
                let want = if v.len() > usize::from(MAX_VALUE) {
                    Err(KvError::ValueTooLong {
                        len: v.len(),
                        max: MAX_VALUE,
                    })
                } else if !model.contains_key(k) && model.len() == cap {
                    Err(KvError::TableFull)
                } else {
                    model.insert(*k, v.clone());
                    Ok(())
                };
                prop_assert_eq!(got, want, "op {}: {:?}", i, op);
            }
            Op::Get(k) => {
                let got = t.get(*k, &mut buf).unwrap().map(|n| buf[..n].to_vec());
                prop_assert_eq!(got.as_ref(), model.get(k), "op {}: {:?}", i, op);
            }
            Op::Delete(k) => {
                prop_assert_eq!(t.delete(*k).unwrap(), model.remove(k).is_some(), "op {}", i);
            }
            Op::Scan => {
                let mut seen = BTreeMap::new();
                let mut from = 0;
                while let Some(e) = t.next_entry(from, &mut buf).unwrap() {
                    prop_assert!(
                        seen.insert(e.key, buf[..e.len].to_vec()).is_none(),
                        "key {} scanned twice",
                        e.key
                    );
                    from = e.slot + 1;
                }
                prop_assert_eq!(&seen, &model, "op {}: scan", i);
            }
            Op::Reopen => {
                let (live, tombstones) = (t.len(), t.tombstones());
                t = Table::open(t.into_nvm(), BASE).unwrap();
                prop_assert_eq!((t.len(), t.tombstones()), (live, tombstones));
            }
        }
        prop_assert_eq!(t.len() as usize, model.len(), "op {}: live count", i);
        prop_assert!(t.len() + t.tombstones() <= config.capacity());
    }
    // Every key of the key space answers as the model says at the end.
    for k in 0..200 {
        let got = t.get(k, &mut buf).unwrap().map(|n| buf[..n].to_vec());
        prop_assert_eq!(got.as_ref(), model.get(&k), "final get of {}", k);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Tables of 1 to 6 buckets (capacity 1 to 48) under 3x as many keys as one
    /// bucketed table can hold: full tables, collisions, wrap-around probing.
    #[test]
    fn the_table_behaves_like_a_map(
        layout in layout(),
        buckets in 1u32..=6,
        ops in prop::collection::vec(op(60), 1..300),
    ) {
        check(layout, buckets, &ops)?;
    }

    /// Larger tables with deletes of most of what is put: long runs of tombstones
    /// to reuse and reclaim.
    #[test]
    fn tombstones_keep_probe_sequences_correct(
        layout in layout(),
        buckets in 8u32..=40,
        ops in prop::collection::vec(op(150), 200..600),
    ) {
        check(layout, buckets, &ops)?;
    }
}
