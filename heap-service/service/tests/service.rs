//! The client library (`amber-heap-api`) against the real service on a real vNV-Heap,
//! with the kernel's IPC replaced by a direct call, the FRAM by memory, and the client's
//! window by the service heap's own arena (as the shared memory object is). These tests
//! state what clients may rely on; they never reach into the service's internals.

use amber_heap_api::{Channel, Handle, Heap, HeapError, Persist, CHUNK};
use amber_heap_service::{Service, SpiPort, SpiStorage, StorageStats};
use amber_spi_api::SpiError;
use amber_user::Error;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use vnv_heap::{wcec_bound, Config, CostModel};

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
        let (w, n) = self.svc.borrow_mut().handle(words, &mut out);
        let got = n.min(recv.len());
        recv[..got].copy_from_slice(&out[..got]);
        Ok((w, got))
    }
}

/// A heap of `max_objects` ids and `data` bytes of NVM data at `offset`, with an arena
/// of `arena` bytes.
fn split_config(max_objects: u16, data: u32, offset: u32, arena: u32, dirty: u32) -> Config {
    let base = Config {
        max_dirty_bytes: dirty,
        max_objects,
        nvm_offset: offset,
        nvm_data_bytes: data,
        cache_bytes: 0,
    };
    Config {
        cache_bytes: arena + base.split_metadata_bytes(arena),
        ..base
    }
}

const ARENA: u32 = 2048;

fn config() -> Config {
    split_config(32, 16 * 1024, 0, ARENA, 1024)
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

/// 8-aligned metadata and arena buffers for `c`.
struct Bufs {
    meta: Vec<u64>,
    arena: Vec<u64>,
}

impl Bufs {
    fn new(c: &Config, arena: u32) -> Bufs {
        let meta = (c.cache_bytes - arena) as usize;
        Bufs {
            meta: vec![0; meta.div_ceil(8)],
            arena: vec![0; arena as usize / 8],
        }
    }

    fn split(&mut self) -> (&mut [u8], &mut [u8]) {
        let bytes = |v: &mut Vec<u64>| {
            // SAFETY: a u64 buffer's bytes, borrowed from it.
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * 8) }
        };
        (bytes(&mut self.meta), bytes(&mut self.arena))
    }
}

struct Rig {
    fram: Fram,
    stats: Cell<StorageStats>,
    bufs: [Bufs; 2],
}

impl Rig {
    fn new() -> Rig {
        Rig {
            fram: Fram(Rc::new(RefCell::new(vec![0; FRAM as usize]))),
            stats: Cell::new(StorageStats::default()),
            bufs: [Bufs::new(&config(), ARENA), Bufs::new(&config(), ARENA)],
        }
    }
}

/// The client of `svc` with the given badge, its window the service heap's arena.
fn client<'a, 'c, 's>(svc: &'a RefCell<Svc<'c, 's>>, badge: u32) -> Heap<Local<'a, 'c, 's>> {
    let base = svc.borrow().heap().unwrap().arena_ptr() as usize;
    let len = svc.borrow().heap().unwrap().cache_capacity();
    // SAFETY: the window is the heap's arena, which only the service (through its
    // pins) and this client touch, and which outlives the client.
    unsafe { Heap::with_channel(Local { svc, badge }, base, len) }
}

fn format<'c, 's>(
    rig_fram: &Fram,
    stats: &'s Cell<StorageStats>,
    b: &'c mut Bufs,
    c: Config,
) -> Svc<'c, 's> {
    let storage = SpiStorage::new(rig_fram.clone(), FRAM, stats);
    let (meta, arena) = b.split();
    Service::format(storage, meta, arena, c, 1000).unwrap()
}

#[test]
fn objects_larger_than_a_message_round_trip_through_the_window() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let heap = client(&svc, 1);
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
        assert_eq!(v, value(k as u32, v.version), "object {k} torn");
    }
    assert!(std::mem::size_of::<Value>() > CHUNK);
}

#[test]
fn each_client_has_a_heap_of_its_own() {
    let mut rig = Rig::new();
    let [b0, b1] = &mut rig.bufs;
    let alice_svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let c1 = split_config(32, 16 * 1024, 32 * 1024, ARENA, 1024);
    let bob_svc = RefCell::new(format(&rig.fram, &rig.stats, b1, c1));
    let (alice, bob) = (client(&alice_svc, 1), client(&bob_svc, 2));
    let id = alice.alloc(7u32).unwrap().into_id();
    assert_eq!(bob.from_id::<u32>(id).unwrap_err(), HeapError::NoSuchObject);
    let mut b = bob.alloc(9u32).unwrap();
    let mut h: Handle<u32, _> = alice.from_id(id).unwrap();
    alice.set(&mut h, 8).unwrap();
    bob.set(&mut b, 10).unwrap();
    assert_eq!((alice.get(&h).unwrap(), bob.get(&b).unwrap()), (8, 10));
    // A handle of one client's heap is refused by the other's.
    assert_eq!(bob.get(&h).unwrap_err(), HeapError::WrongHeap);
}

#[test]
fn bad_requests_get_a_status_and_a_scribbled_arena_harms_nothing() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let mut svc = format(&rig.fram, &rig.stats, b0, config());
    let mut out = [0u8; CHUNK];
    let mut ask = |svc: &mut Svc, w: [u32; 4]| svc.handle(w, &mut out).0;
    use amber_heap_api::{Status, OP_ALLOC, OP_FREE, OP_PIN, OP_UNPIN};
    let st = |s: Status| s as u32;
    assert_eq!(ask(&mut svc, [99, 0, 0, 0])[0], st(Status::BadRequest));
    assert_eq!(ask(&mut svc, [OP_ALLOC, 0, 0, 0])[0], st(Status::BadSize));
    assert_eq!(
        ask(&mut svc, [OP_ALLOC, 1001, 0, 0])[0],
        st(Status::BadSize)
    );
    let w = ask(&mut svc, [OP_ALLOC, 300, 0, 0]);
    assert_eq!(w[0], 0);
    let id = w[1];
    assert_eq!(ask(&mut svc, [OP_PIN, id, 2, 0])[0], st(Status::BadRequest));
    assert_eq!(
        ask(&mut svc, [OP_PIN, 5000, 0, 0])[0],
        st(Status::NoSuchObject)
    );
    assert_eq!(
        ask(&mut svc, [OP_PIN, id + 1, 0, 0])[0],
        st(Status::NoSuchObject)
    );
    assert_eq!(
        ask(&mut svc, [OP_UNPIN, id, 0, 0])[0],
        st(Status::NotPinned)
    );
    let w = ask(&mut svc, [OP_PIN, id, 1, 0]);
    assert_eq!(
        (w[0], w[1] % 8, w[2]),
        (0, 0, 300),
        "offset 8-aligned, size"
    );
    assert!(w[1] + 300 <= ARENA);
    assert_eq!(ask(&mut svc, [OP_PIN, id, 1, 0])[0], st(Status::Pinned));
    assert_eq!(ask(&mut svc, [OP_PIN, id, 0, 0])[0], st(Status::Pinned));
    assert_eq!(ask(&mut svc, [OP_FREE, id, 0, 0])[0], st(Status::Pinned));
    assert_eq!(
        ask(&mut svc, [OP_UNPIN, id, 0, 0])[0],
        st(Status::NotPinned)
    );
    // The client writes anything anywhere in its window: the service only ever copies
    // those bytes to the FRAM.
    let arena = svc.heap().unwrap().arena_ptr();
    // SAFETY: the arena is the service's window; the test plays the client.
    unsafe { std::ptr::write_bytes(arena, 0xFF, ARENA as usize) };
    svc.persist().unwrap();
    svc.reload().unwrap();
    assert_eq!(ask(&mut svc, [OP_UNPIN, id, 1, 0])[0], 0);
    let w = ask(&mut svc, [OP_PIN, id, 0, 0]);
    // SAFETY: as above, the pinned object's bytes.
    let b = unsafe { std::slice::from_raw_parts(arena.add(w[1] as usize), 300) };
    assert!(
        b.iter().all(|&x| x == 0xFF),
        "the client's bytes, persisted"
    );
    assert_eq!(ask(&mut svc, [OP_UNPIN, id, 0, 0])[0], 0);
    assert_eq!(ask(&mut svc, [OP_FREE, id, 0, 0])[0], 0);
}

#[test]
fn guards_held_across_a_persist_and_a_restore_keep_their_bytes() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let heap = client(&svc, 3);
    let mut a = heap.alloc(value(1, 1)).unwrap();
    let b = heap.alloc(5u64).unwrap();
    let mut g = heap.get_mut(&mut a).unwrap();
    g.version = 2;
    let r = heap.get_ref(&b).unwrap();
    // The checkpoint: the persist writes the write-pinned object as it is now.
    svc.borrow_mut().persist().unwrap();
    let arena = svc.borrow().heap().unwrap().arena_ptr();
    // Power cut: the arena is lost; the service's memory and the FRAM come back.
    // SAFETY: no reference into the arena is used while it is overwritten (the guards
    // are not dereferenced until the reload wrote their bytes back).
    unsafe { std::ptr::write_bytes(arena, 0xA5, ARENA as usize) };
    svc.borrow_mut().reload().unwrap();
    assert_eq!(g.version, 2);
    assert_eq!(g.payload, value(1, 1).payload);
    assert_eq!(*r, 5);
    g.version = 3;
    g.release().unwrap();
    r.release().unwrap();
    svc.borrow_mut().persist().unwrap();
    assert_eq!(heap.get(&a).unwrap().version, 3);
}

#[test]
fn a_full_heap_says_which_resource_ran_out() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let heap = client(&svc, 1);
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
/// on the heap service's own per-client configuration, for far longer than a crash
/// test runs.
#[test]
fn the_apps_workload_never_runs_out_of_ids_or_nvm_space() {
    const A: u32 = 8192;
    let cfg = |i: u32| split_config(48, 24 * 1024, i * 64 * 1024, A, 1024);
    let fram = Fram(Rc::new(RefCell::new(vec![0; 512 * 1024])));
    let stats = Cell::new(StorageStats::default());
    let (mut b0, mut b1) = (Bufs::new(&cfg(0), A), Bufs::new(&cfg(1), A));
    let (m0, a0) = b0.split();
    let (m1, a1) = b1.split();
    let st = |f: &Fram| SpiStorage::new(f.clone(), 512 * 1024, &stats);
    let s0 = RefCell::new(Service::format(st(&fram), m0, a0, cfg(0), 1008).unwrap());
    let s1 = RefCell::new(Service::format(st(&fram), m1, a1, cfg(1), 1008).unwrap());
    let (logger, kv) = (client(&s0, 1), client(&s1, 2));
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
            s0.borrow_mut().persist().unwrap();
            s1.borrow_mut().persist().unwrap();
        }
    }
    for (k, h) in keys.iter().enumerate() {
        assert_eq!(kv.get(h).unwrap(), value(k as u32, versions[k]));
    }
}

/// `OP_STATS` through the client library: the storage's own counters, with what the
/// persists wrote split off from the write-backs the dirty limit forces in between.
#[test]
fn stats_tell_persist_bytes_from_write_backs_between_persists() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let heap = client(&svc, 4);
    let s0 = heap.stats().unwrap();
    assert_eq!(s0.dirty_limit, 1024);
    assert_eq!((s0.persists, s0.persist_bytes), (0, 0));
    assert_eq!(
        s0.bytes_written,
        rig.stats.get().bytes_written,
        "the format's writes are counted"
    );
    let mut handles: Vec<Handle<Value, _>> =
        (0..4).map(|k| heap.alloc(value(k, 0)).unwrap()).collect();
    let before = rig.stats.get();
    svc.borrow_mut().persist().unwrap();
    let persisted = rig.stats.get().since(&before);
    let s1 = heap.stats().unwrap();
    assert_eq!(s1.persists, 1);
    assert_eq!(
        (s1.persist_bytes, s1.persist_writes),
        (persisted.bytes_written, persisted.writes)
    );
    // Four values of 288 bytes made dirty (304 bytes of the limit each): more than the
    // 1 KiB limit holds, so some are written back before the next persist.
    for (k, h) in handles.iter_mut().enumerate() {
        heap.set(h, value(k as u32, 1)).unwrap();
    }
    let s2 = heap.stats().unwrap();
    let d = s2.since(&s1);
    assert_eq!((d.persists, d.persist_bytes), (0, 0));
    assert!(
        d.other_bytes() >= 288,
        "at least one value was written back, {} bytes",
        d.other_bytes()
    );
    svc.borrow_mut().persist().unwrap();
    let s3 = heap.stats().unwrap();
    let d = s3.since(&s2);
    assert_eq!(d.persists, 1);
    let bound = wcec_bound(&config(), &CostModel::ZERO).bytes_written;
    assert!(d.persist_bytes > 0 && d.persist_bytes <= bound);
    assert_eq!(d.other_bytes(), 0, "a persist is all that wrote");
    let total = rig.stats.get();
    assert_eq!(
        (s3.bytes_written, s3.writes, s3.bytes_read, s3.reads),
        (
            total.bytes_written,
            total.writes,
            total.bytes_read,
            total.reads
        ),
        "the counters are the storage's own"
    );
}

/// A client channel that checks every request's storage traffic against the bound the
/// service computes for a request (`request_work`, in driver calls and bytes).
#[derive(Clone, Copy)]
struct Metered<'a, 'c, 's> {
    svc: &'a RefCell<Svc<'c, 's>>,
    stats: &'s Cell<StorageStats>,
    bound: amber_heap_service::Work,
    requests: &'a Cell<u64>,
}

impl PartialEq for Metered<'_, '_, '_> {
    fn eq(&self, o: &Self) -> bool {
        std::ptr::eq(self.svc, o.svc)
    }
}

impl Channel for Metered<'_, '_, '_> {
    fn call(
        &self,
        words: [u32; 4],
        _send: &[u8],
        recv: &mut [u8],
    ) -> Result<([u32; 4], usize), Error> {
        let mut out = [0u8; CHUNK];
        let (before, steps) = (
            self.stats.get(),
            self.svc.borrow().heap().unwrap().scan_steps(),
        );
        let (w, n) = self.svc.borrow_mut().handle(words, &mut out);
        let d = self.stats.get().since(&before);
        let steps = self.svc.borrow().heap().unwrap().scan_steps() - steps;
        let b = self.bound;
        assert!(
            d.writes <= b.writes
                && d.bytes_written <= b.bytes
                && d.reads <= b.reads
                && d.bytes_read <= b.bytes_read
                && steps <= b.steps,
            "request {words:?} took {d:?} and {steps} steps, beyond the bound {b:?}"
        );
        self.requests.set(self.requests.get() + 1);
        let got = n.min(recv.len());
        recv[..got].copy_from_slice(&out[..got]);
        Ok((w, got))
    }
}

/// Random requests on the heap service's own configuration (48 ids, 24 KiB of data, an
/// 8 KiB arena, 1 KiB dirty limit, objects up to 1,008 bytes, the most that fits the
/// limit when dirty): each request stays within
/// `request_work` and each persist within `persist_work`, both computed from the
/// configuration alone.
#[test]
fn every_request_and_persist_stays_within_the_bounds_computed_from_the_configuration() {
    use amber_heap_service::{persist_work, request_work};
    const A: u32 = 8192;
    const MAX_OBJECT: u32 = 1008;
    let c = split_config(48, 24 * 1024, 0, A, 1024);
    let fram = Fram(Rc::new(RefCell::new(vec![0; 128 * 1024])));
    let stats = Cell::new(StorageStats::default());
    let mut b = Bufs::new(&c, A);
    let (meta, arena) = b.split();
    let storage = SpiStorage::new(fram.clone(), 128 * 1024, &stats);
    let svc = RefCell::new(Service::format(storage, meta, arena, c, MAX_OBJECT).unwrap());
    let requests = Cell::new(0);
    let chan = Metered {
        svc: &svc,
        stats: &stats,
        bound: request_work(&c, MAX_OBJECT),
        requests: &requests,
    };
    let base = svc.borrow().heap().unwrap().arena_ptr() as usize;
    let len = svc.borrow().heap().unwrap().cache_capacity();
    // SAFETY: the window is the heap's arena, touched only through the service's pins.
    let heap = unsafe { Heap::with_channel(chan, base, len) };
    let persist_bound = persist_work(&c);
    let mut small: Vec<Handle<[u32; 3], _>> = Vec::new();
    let mut mid: Vec<Handle<[u8; 300], _>> = Vec::new();
    let mut big: Vec<Handle<[u8; 1008], _>> = Vec::new();
    let mut rng = amber_user::Rng::new(11);
    let mut persists = 0;
    for step in 0..4000u32 {
        match rng.below(10) {
            0 if small.len() < 20 => small.push(heap.alloc([step; 3]).unwrap()),
            1 if mid.len() < 10 => mid.push(heap.alloc([step as u8; 300]).unwrap()),
            2 if big.len() < 6 => match heap.alloc([step as u8; 1008]) {
                Ok(h) => big.push(h),
                Err(HeapError::OutOfIds | HeapError::NvmFull) => {}
                Err(e) => panic!("alloc: {e}"),
            },
            3 if !small.is_empty() => {
                let i = rng.below(small.len() as u32) as usize;
                heap.free(small.swap_remove(i)).unwrap();
            }
            4 if !big.is_empty() => {
                let i = rng.below(big.len() as u32) as usize;
                heap.free(big.swap_remove(i)).unwrap();
            }
            5 | 6 if !mid.is_empty() => {
                let i = rng.below(mid.len() as u32) as usize;
                heap.set(&mut mid[i], [step as u8; 300]).unwrap();
            }
            7 if !big.is_empty() => {
                let i = rng.below(big.len() as u32) as usize;
                heap.update(&mut big[i], |v| v[step as usize % 1008] ^= 1)
                    .unwrap();
            }
            8 if !small.is_empty() => {
                let i = rng.below(small.len() as u32) as usize;
                let _ = heap.get(&small[i]).unwrap();
            }
            _ => {
                let before = stats.get();
                svc.borrow_mut().persist().unwrap();
                let d = stats.get().since(&before);
                assert!(
                    d.writes <= persist_bound.writes
                        && d.bytes_written <= persist_bound.bytes
                        && d.reads == 0,
                    "persist {persists} took {d:?}, beyond {persist_bound:?}"
                );
                persists += 1;
            }
        }
    }
    assert!(requests.get() > 5000 && persists > 100);
}
