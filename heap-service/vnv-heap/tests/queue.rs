//! The heap's FIFO queue (`Queue`) against a `VecDeque`: order, capacity, swapping of
//! its chunks through a small cache, and persist and reopen (a reopen gives back the
//! queue as of the last persist). This file must never read the heap's private state.

mod common;

use amber_nvm::sim::VecNvm;
use common::{device, small_config, Counting};
use proptest::prelude::*;
use std::collections::VecDeque;
use vnv_heap::{HeapError, ObjectId, Queue, VnvHeap};

#[test]
fn elements_come_out_in_order_across_chunks_and_around_the_ring() {
    let config = small_config(1024, 1024);
    let mut cache = [0u8; 1024];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let mut q = Queue::new(&heap, 10, 3, 0u32).unwrap();
    assert_eq!((q.capacity(), q.len(&heap).unwrap()), (10, 0));
    assert_eq!(q.pop(&heap).unwrap(), None);
    let mut next = 0;
    let mut want = 0;
    for round in 0..5 {
        for _ in 0..7 {
            q.push(&heap, next).unwrap();
            next += 1;
        }
        for _ in 0..7 {
            assert_eq!(q.pop(&heap).unwrap(), Some(want), "round {round}");
            want += 1;
        }
    }
    for i in 0..10 {
        q.push(&heap, i).unwrap();
    }
    assert_eq!(
        q.push(&heap, 99),
        Err(HeapError::QueueFull { capacity: 10 })
    );
    assert_eq!(q.peek(&heap).unwrap(), Some(0));
    assert_eq!(q.len(&heap).unwrap(), 10);
}

#[test]
fn a_reopened_queue_holds_what_the_last_persist_saw() {
    let config = small_config(1024, 1024);
    let mut cache = [0u8; 1024];
    let heap = VnvHeap::new(device(&config), &mut cache, config).unwrap();
    let mut q = Queue::new(&heap, 8, 4, [0u8; 12]).unwrap();
    for i in 0..5u8 {
        q.push(&heap, [i; 12]).unwrap();
    }
    assert_eq!(q.pop(&heap).unwrap(), Some([0; 12]));
    heap.persist().unwrap();
    q.push(&heap, [9; 12]).unwrap(); // lost: never persisted
    assert_eq!(q.pop(&heap).unwrap(), Some([1; 12])); // undone too
    let id = q.into_id();
    let heap = VnvHeap::open(heap.into_storage(), &mut cache, config).unwrap();
    assert!(
        matches!(
            Queue::<u32>::from_id(&heap, id),
            Err(HeapError::TypeMismatch { .. })
        ),
        "a queue of another element type is refused"
    );
    let mut q = Queue::<[u8; 12]>::from_id(&heap, id).expect("the refusal freed nothing");
    let got: Vec<_> = std::iter::from_fn(|| q.pop(&heap).unwrap()).collect();
    assert_eq!(got, vec![[1; 12], [2; 12], [3; 12], [4; 12]]);
    assert!(
        Queue::<[u8; 12]>::from_id(&heap, ObjectId::from_raw(31)).is_err(),
        "no queue there"
    );
}

#[test]
fn a_queue_larger_than_the_cache_swaps_its_chunks_and_fits_the_dirty_limit() {
    let config = small_config(160, 256);
    let mut cache = [0u8; 256];
    let nvm = Counting::new(device(&config));
    let counts = nvm.counts.clone();
    let heap = VnvHeap::new(nvm, &mut cache, config).unwrap();
    let mut q = Queue::new(&heap, 60, 6, [0u32; 4]).unwrap();
    let mut model = VecDeque::new();
    for i in 0..200u32 {
        if i % 3 != 2 && model.len() < 60 {
            q.push(&heap, [i; 4]).unwrap();
            model.push_back([i; 4]);
        } else {
            assert_eq!(q.pop(&heap).unwrap(), model.pop_front());
        }
        assert!(heap.dirty_bytes() <= 160);
    }
    assert!(
        counts.get().reads > 0,
        "60 elements of 16 bytes do not fit a 256-byte cache"
    );
    assert_eq!(q.len(&heap).unwrap(), model.len() as u32);
}

#[derive(Clone, Debug)]
enum Op {
    Push(u16),
    Pop,
    Persist,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u16>().prop_map(Op::Push),
        3 => Just(Op::Pop),
        1 => Just(Op::Persist),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_queue_behaves_like_a_bounded_vecdeque_across_persists_and_reopens(
        ops in prop::collection::vec(op(), 1..120)
    ) {
        let config = small_config(96, 200);
        let mut cache = [0u8; 200];
        let mut storage: Option<VecNvm> = Some(device(&config));
        let mut now: VecDeque<u16> = VecDeque::new();
        let mut persisted = now.clone();
        let mut id = None;
        let mut ops = ops.into_iter().peekable();
        while ops.peek().is_some() {
            let nvm = storage.take().unwrap();
            let heap = match id {
                None => VnvHeap::new(nvm, &mut cache, config).unwrap(),
                Some(_) => VnvHeap::open(nvm, &mut cache, config).unwrap(),
            };
            let mut q = match id {
                None => {
                    let q = Queue::new(&heap, 20, 4, 0u16).unwrap();
                    heap.persist().unwrap();
                    q
                }
                Some(id) => Queue::from_id(&heap, id).unwrap(),
            };
            for op in ops.by_ref() {
                match op {
                    Op::Push(v) => match q.push(&heap, v) {
                        Ok(()) => now.push_back(v),
                        Err(HeapError::QueueFull { capacity: 20 }) => prop_assert_eq!(now.len(), 20),
                        Err(e) => panic!("push: {e}"),
                    },
                    Op::Pop => prop_assert_eq!(q.pop(&heap).unwrap(), now.pop_front()),
                    Op::Persist => {
                        heap.persist().unwrap();
                        persisted = now.clone();
                    }
                    Op::Reopen => break,
                }
                prop_assert!(heap.dirty_bytes() <= config.max_dirty_bytes);
            }
            id = Some(q.into_id());
            storage = Some(heap.into_storage());
            now = persisted.clone();
        }
    }
}
