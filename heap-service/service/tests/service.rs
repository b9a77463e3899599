//! The client library (`amber-heap-api`) against the real service on a real vNV-Heap,
//! with the kernel's IPC replaced by a direct call and the FRAM by memory that a test
//! can roll back as a restore does. These tests state what clients may rely on; they
//! never reach into the service's internals.

use amber_heap_api::{Channel, Handle, Heap, HeapError, ObjectId, Persist, CHUNK};
use amber_heap_service::{Service, SpiPort, SpiStorage, StorageStats};
use amber_spi_api::SpiError;
use amber_user::Error;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use vnv_heap::Config;

const FRAM: u32 = 64 * 1024;

/// FRAM in memory, shared so that a test can snapshot it and roll it back.
#[derive(Clone)]
struct Fram(Rc<RefCell<Vec<u8>>>);

impl SpiPort for Fram {
    fn write(&mut self, addr: u32, data: &[u8]) -> Result<u32, SpiError> {
        assert!(data.len() <= 256);
        self.0.borrow_mut()[addr as usize..][..data.len()].copy_from_slice(data);
        Ok(60_000)
    }

    fn read(&mut self, addr: u32, buf: &mut [u8]) -> Result<(), SpiError> {
        assert!(buf.len() <= 256);
        buf.copy_from_slice(&self.0.borrow()[addr as usize..][..buf.len()]);
        Ok(())
    }
}

type Svc<'c, 's> = Service<'c, SpiStorage<'s, Fram>>;

/// A client's channel: a direct call into the service with the client's badge.
struct Local<'a, 'c, 's> {
    svc: &'a RefCell<Svc<'c, 's>>,
    badge: u32,
}

impl Clone for Local<'_, '_, '_> {
    fn clone(&self) -> Self {
        *self
    }
}
impl Copy for Local<'_, '_, '_> {}

impl PartialEq for Local<'_, '_, '_> {
    fn eq(&self, o: &Self) -> bool {
        std::ptr::eq(self.svc, o.svc) && self.badge == o.badge
    }
}

impl Channel for Local<'_, '_, '_> {
    fn call(
        &self,
        words: [u32; 4],
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<([u32; 4], usize), Error> {
        assert!(send.len() <= CHUNK, "the kernel copies at most 256 bytes");
        let mut out = [0u8; CHUNK];
        let (w, n) = self
            .svc
            .borrow_mut()
            .handle(words, self.badge, send, &mut out);
        let got = n.min(recv.len());
        recv[..got].copy_from_slice(&out[..got]);
        Ok((w, got))
    }
}

fn config() -> Config {
    Config {
        max_dirty_bytes: 1024,
        max_objects: 32,
        nvm_offset: 0,
        nvm_data_bytes: 16 * 1024,
        cache_bytes: 2048,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Value {
    key: u32,
    version: u32,
    payload: [u32; 70],
}
// SAFETY: u32 fields and an array of u32: no padding, every bit pattern valid.
unsafe impl Persist for Value {}

fn value(key: u32, version: u32) -> Value {
    let mut payload = [0; 70];
    for (i, p) in payload.iter_mut().enumerate() {
        *p = key ^ version.rotate_left(i as u32) ^ (i as u32).wrapping_mul(0x9E37_79B9);
    }
    Value {
        key,
        version,
        payload,
    }
}

struct Rig {
    fram: Fram,
    stats: Cell<StorageStats>,
    caches: [Vec<u8>; 2],
}

impl Rig {
    fn new() -> Rig {
        let c = config().cache_bytes as usize;
        Rig {
            fram: Fram(Rc::new(RefCell::new(vec![0; FRAM as usize]))),
            stats: Cell::new(StorageStats::default()),
            caches: [vec![0; c], vec![0; c]],
        }
    }
}

#[test]
fn objects_of_several_chunks_round_trip_through_the_service() {
    let mut rig = Rig::new();
    let storage = SpiStorage::new(rig.fram.clone(), FRAM, &rig.stats);
    let [c0, _] = &mut rig.caches;
    let svc = RefCell::new(Service::format(storage, c0, config(), 1024).unwrap());
    let heap = Heap::with_channel(Local {
        svc: &svc,
        badge: 1,
    });
    let mut handles: Vec<Handle<Value, _>> =
        (0..8).map(|k| heap.alloc(value(k, 0)).unwrap()).collect();
    for round in 1..20u32 {
        for (k, h) in handles.iter_mut().enumerate() {
            if (k as u32 + round).is_multiple_of(3) {
                heap.set(h, value(k as u32, round)).unwrap();
            }
        }
        if round.is_multiple_of(5) {
            svc.borrow_mut().persist().unwrap();
        }
    }
    for (k, h) in handles.iter().enumerate() {
        let v = heap.get(h).unwrap();
        assert_eq!(v.key, k as u32);
        assert_eq!(
            v,
            value(k as u32, v.version),
            "object {k} torn across its chunks"
        );
    }
    assert!(
        std::mem::size_of::<Value>() > CHUNK,
        "the test must cover objects larger than one message"
    );
}

#[test]
fn a_client_cannot_reach_or_free_another_clients_objects() {
    let mut rig = Rig::new();
    let storage = SpiStorage::new(rig.fram.clone(), FRAM, &rig.stats);
    let [c0, _] = &mut rig.caches;
    let svc = RefCell::new(Service::format(storage, c0, config(), 1024).unwrap());
    let alice = Heap::with_channel(Local {
        svc: &svc,
        badge: 1,
    });
    let bob = Heap::with_channel(Local {
        svc: &svc,
        badge: 2,
    });
    let id = alice.alloc(7u32).unwrap().into_id();
    assert_eq!(bob.from_id::<u32>(id).unwrap_err(), HeapError::NotOwner);
    let mut h: Handle<u32, _> = alice.from_id(id).unwrap();
    assert_eq!(alice.get(&h).unwrap(), 7);
    alice.set(&mut h, 8).unwrap();
    assert_eq!(alice.get(&h).unwrap(), 8);
}

#[test]
fn bad_requests_get_a_status_and_never_touch_an_object() {
    let mut rig = Rig::new();
    let storage = SpiStorage::new(rig.fram.clone(), FRAM, &rig.stats);
    let [c0, _] = &mut rig.caches;
    let mut svc = Service::format(storage, c0, config(), 1024).unwrap();
    let mut out = [0u8; CHUNK];
    let status = |r: ([u32; 4], usize)| r.0[0];
    use amber_heap_api::{Status, OP_ALLOC, OP_READ, OP_WRITE};
    assert_eq!(
        status(svc.handle([99, 0, 0, 0], 0, &[], &mut out)),
        Status::BadRequest as u32
    );
    assert_eq!(
        status(svc.handle([OP_ALLOC, 0, 0, 0], 0, &[], &mut out)),
        Status::BadSize as u32
    );
    assert_eq!(
        status(svc.handle([OP_ALLOC, 1025, 0, 0], 0, &[], &mut out)),
        Status::BadSize as u32
    );
    let (w, _) = svc.handle([OP_ALLOC, 300, 0, 0], 0, &[], &mut out);
    assert_eq!(w[0], 0);
    let id = w[1];
    assert_eq!(
        status(svc.handle([OP_READ, id, 290, 11], 0, &[], &mut out)),
        Status::OutOfRange as u32
    );
    assert_eq!(
        status(svc.handle([OP_READ, id, u32::MAX, 2], 0, &[], &mut out)),
        Status::OutOfRange as u32
    );
    assert_eq!(
        status(svc.handle([OP_READ, id, 0, 257], 0, &[], &mut out)),
        Status::BadRequest as u32
    );
    assert_eq!(
        status(svc.handle([OP_WRITE, id, 0, 4], 0, &[1, 2], &mut out)),
        Status::BadRequest as u32
    );
    assert_eq!(
        status(svc.handle([OP_READ, 5000, 0, 1], 0, &[], &mut out)),
        Status::NoSuchObject as u32
    );
    // A write across the chunk boundary lands in both chunks.
    assert_eq!(
        status(svc.handle([OP_WRITE, id, 250, 10], 0, &[9; 10], &mut out)),
        0
    );
    let (w, n) = svc.handle([OP_READ, id, 248, 14], 0, &[], &mut out);
    assert_eq!((w[0], n), (0, 14));
    assert_eq!(out[..14], [0, 0, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 0, 0]);
    assert_eq!(
        svc.heap().unwrap().live_count(),
        2,
        "300 bytes are two chunks"
    );
}

#[test]
fn a_reopen_after_a_restore_finds_exactly_the_heap_of_the_last_persist() {
    let mut rig = Rig::new();
    let storage = SpiStorage::new(rig.fram.clone(), FRAM, &rig.stats);
    let [c0, c1] = &mut rig.caches;
    let svc = RefCell::new(Service::format(storage, c0, config(), 1024).unwrap());
    let heap = Heap::with_channel(Local {
        svc: &svc,
        badge: 3,
    });
    let mut a = heap.alloc(value(1, 1)).unwrap();
    let b = heap.alloc(5u64).unwrap();
    svc.borrow_mut().persist().unwrap();
    // The checkpoint: the FRAM holds what the persist wrote.
    let committed = rig.fram.0.borrow().clone();
    let epoch = svc.borrow().heap().unwrap().committed_epoch();
    heap.set(&mut a, value(1, 2)).unwrap();
    let c = heap.alloc(9u32).unwrap();
    let (a, b, c) = (a.into_id(), b.into_id(), c.into_id());
    // Power cut: the FRAM goes back to the checkpoint's contents, the cache is lost.
    *rig.fram.0.borrow_mut() = committed;
    c1.fill(0xA5);
    svc.borrow_mut().reopen(|| c1).unwrap();
    assert_eq!(svc.borrow().heap().unwrap().committed_epoch(), epoch);
    assert_eq!(
        svc.borrow().heap().unwrap().live_count(),
        3,
        "two chunks and a u64"
    );
    let a: Handle<Value, _> = heap.from_id(a).unwrap();
    assert_eq!(
        heap.get(&a).unwrap(),
        value(1, 1),
        "the change after the persist is gone"
    );
    let b: Handle<u64, _> = heap.from_id(b).unwrap();
    assert_eq!(heap.get(&b).unwrap(), 5);
    assert!(
        matches!(
            heap.from_id::<u32>(c),
            Err(HeapError::NoSuchObject | HeapError::SizeMismatch { .. })
        ),
        "an object allocated after the persist does not exist after the restore"
    );
    let _ = ObjectId::from_raw(0);
}

#[test]
fn a_full_heap_says_which_resource_ran_out() {
    let mut rig = Rig::new();
    let storage = SpiStorage::new(rig.fram.clone(), FRAM, &rig.stats);
    let [c0, _] = &mut rig.caches;
    let svc = RefCell::new(Service::format(storage, c0, config(), 1024).unwrap());
    let heap = Heap::with_channel(Local {
        svc: &svc,
        badge: 1,
    });
    let mut kept = Vec::new();
    let e = loop {
        match heap.alloc(1u32) {
            Ok(h) => kept.push(h.into_id()),
            Err(e) => break e,
        }
    };
    assert_eq!(e, HeapError::OutOfIds);
    assert_eq!(kept.len(), 32);
}

/// The two QEMU clients' patterns (a FIFO of 24 small records, each allocated and
/// later freed; 16 values of 292 bytes, one update in eight a free and reallocation),
/// on the heap service's own configuration, for far longer than a crash test runs.
#[test]
fn the_apps_workload_never_runs_out_of_ids_or_nvm_space() {
    let cfg = Config {
        max_dirty_bytes: 1024,
        max_objects: 96,
        nvm_offset: 0,
        nvm_data_bytes: 48 * 1024,
        cache_bytes: 8192,
    };
    let fram = Fram(Rc::new(RefCell::new(vec![0; 512 * 1024])));
    let stats = Cell::new(StorageStats::default());
    let mut cache = vec![0u8; 8192];
    let storage = SpiStorage::new(fram, 512 * 1024, &stats);
    let svc = RefCell::new(Service::format(storage, &mut cache, cfg, 1024).unwrap());
    let logger = Heap::with_channel(Local {
        svc: &svc,
        badge: 1,
    });
    let kv = Heap::with_channel(Local {
        svc: &svc,
        badge: 2,
    });
    let mut fifo = std::collections::VecDeque::new();
    let mut keys: Vec<Handle<Value, _>> = (0..16).map(|k| kv.alloc(value(k, 0)).unwrap()).collect();
    let mut versions = [0u32; 16];
    let mut rng = amber_user::Rng::new(7);
    for step in 0..30_000u32 {
        if fifo.len() == 24 {
            let h: Handle<[u32; 3], _> = fifo.pop_front().unwrap();
            logger
                .free(h)
                .unwrap_or_else(|e| panic!("step {step}: free: {e}"));
        }
        let rec = logger
            .alloc([step, step ^ 0x55, step.rotate_left(3)])
            .unwrap_or_else(|e| panic!("step {step}: the logger's alloc failed: {e}"));
        fifo.push_back(rec);
        let k = rng.below(16) as usize;
        versions[k] += 1;
        if rng.below(8) == 0 {
            let new = kv
                .alloc(value(k as u32, versions[k]))
                .unwrap_or_else(|e| panic!("step {step}: the key-value alloc failed: {e}"));
            kv.free(std::mem::replace(&mut keys[k], new)).unwrap();
        } else {
            kv.set(&mut keys[k], value(k as u32, versions[k])).unwrap();
        }
        if step % 7 == 0 {
            svc.borrow_mut().persist().unwrap();
        }
    }
    for (k, h) in keys.iter().enumerate() {
        assert_eq!(kv.get(h).unwrap(), value(k as u32, versions[k]));
    }
}
