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
        CALLS.with(|c| c.set(c.get() + 1));
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

// The pin page (`amber_heap_api::page`): pins of resident objects without IPC.

use amber_heap_api::page::{
    ENTRY_DIRTY, ENTRY_RESIDENT, MARK_PINS, MARK_USED, MARK_WRITE, PAGE_BYTES,
};
use amber_heap_api::PinPage;
use std::ptr::NonNull;

thread_local! {
    /// Requests the `Local` channels of this test's thread made.
    static CALLS: Cell<u32> = const { Cell::new(0) };
}

fn calls() -> u32 {
    CALLS.with(Cell::get)
}

/// A pin page in host memory (4-aligned, zeros).
struct Page(Vec<u32>);

impl Page {
    fn new() -> Page {
        Page(vec![0; PAGE_BYTES / 4])
    }

    fn page(&mut self) -> PinPage {
        // SAFETY: PAGE_BYTES of 4-aligned memory this struct owns, outliving the test's
        // use of it, accessed only through the page's volatile accesses.
        unsafe { PinPage::new(NonNull::new(self.0.as_mut_ptr().cast::<u8>()).unwrap()) }
    }
}

/// A service with a pin page and its client using it.
fn with_pins<'a, 'c, 's>(svc: &'a RefCell<Svc<'c, 's>>, page: PinPage) -> Heap<Local<'a, 'c, 's>> {
    svc.borrow_mut().attach_pins(page);
    // SAFETY: the page is this client's alone.
    unsafe { client(svc, 1).with_pins(page) }
}

/// The arena offset of object `id` if the service's heap has it resident.
fn resident(svc: &RefCell<Svc<'_, '_>>, id: u16) -> Option<vnv_heap::RawResident> {
    let hint = Cell::new(u16::MAX);
    svc.borrow()
        .heap()
        .unwrap()
        .raw_resident(vnv_heap::ObjectId::from_raw(id), &hint)
}

/// Fills the 2 KiB arena through IPC pins of other objects, so that every unpinned
/// object is evicted.
fn flood<'a, 'c, 's>(heap: &Heap<Local<'a, 'c, 's>>, fillers: &[Handle<Value, Local<'a, 'c, 's>>]) {
    for f in fillers {
        heap.get(f).unwrap();
    }
}

#[test]
fn pins_of_a_resident_object_take_no_request_and_a_clean_one_is_written_by_ipc_once() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let mut page = Page::new();
    let svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let heap = with_pins(&svc, page.page());
    let mut h = heap.alloc(41u64).unwrap();
    let before = calls();
    for _ in 0..3 {
        assert_eq!(heap.get(&h).unwrap(), 41);
    }
    // New, so dirty: the write pin takes no dirty budget, and no request either.
    heap.set(&mut h, 42).unwrap();
    assert_eq!(calls(), before, "every pin was on the page");
    svc.borrow_mut().persist().unwrap();
    // Clean now: the first write pin asks the service (dirty budget), its release too;
    // then the object is dirty and on the page again.
    heap.set(&mut h, 43).unwrap();
    assert_eq!(calls(), before + 2);
    heap.set(&mut h, 44).unwrap();
    assert_eq!(heap.get(&h).unwrap(), 44);
    assert_eq!(calls(), before + 2);
    let id = h.id().raw();
    let (entry, size) = page.page().entry(id.into());
    assert_eq!(
        entry & (ENTRY_RESIDENT | ENTRY_DIRTY),
        ENTRY_RESIDENT | ENTRY_DIRTY
    );
    assert_eq!(size, 8);
    assert_eq!(
        (page.page().mark(id.into()) & MARK_PINS),
        0,
        "every guard took its mark back"
    );
    // The use bits the page's pins left are the service's to clear, on its next pass
    // (here a persist), when it tells the heap's hands.
    assert_ne!(page.page().mark(id.into()) & MARK_USED, 0);
    svc.borrow_mut().persist().unwrap();
    assert_eq!(page.page().mark(id.into()), 0);
}

#[test]
fn a_marked_object_is_never_evicted_and_an_unmarked_one_leaves_the_table_first() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let mut page = Page::new();
    let svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let heap = with_pins(&svc, page.page());
    let h = heap.alloc(value(1, 1)).unwrap();
    let fillers: Vec<_> = (2..10).map(|k| heap.alloc(value(k, 0)).unwrap()).collect();
    svc.borrow_mut().persist().unwrap();
    heap.get(&h).unwrap();
    let id = usize::from(h.id().raw());
    let p = page.page();
    // The race: the client marked, then the service evicts before the client reads the
    // table. Here the guard is simply held (it marked and read the table), and the
    // bare mark below (no table read yet) is the same to the service.
    let g = heap.get_ref(&h).unwrap();
    assert_eq!((p.mark(id) & MARK_PINS), 1);
    let at = resident(&svc, id as u16).unwrap().offset;
    flood(&heap, &fillers);
    assert_eq!(
        resident(&svc, id as u16).map(|r| r.offset),
        Some(at),
        "kept in place"
    );
    assert_eq!(*g, value(1, 1));
    drop(g);
    p.set_mark(id, 1);
    flood(&heap, &fillers);
    let (entry, _) = p.entry(id);
    assert_eq!(resident(&svc, id as u16).map(|r| r.offset), Some(at));
    assert_eq!(entry & ENTRY_RESIDENT, ENTRY_RESIDENT, "published again");
    p.set_mark(id, 0);
    flood(&heap, &fillers);
    assert!(resident(&svc, id as u16).is_none(), "evicted once unmarked");
    assert_eq!(p.entry(id), (0, 0), "and its entry cleared");
    // The other order: the service cleared the entry before the client's mark, so the
    // client reads "not resident", takes its mark back and pins by IPC.
    let before = calls();
    assert_eq!(heap.get(&h).unwrap(), value(1, 1));
    assert_eq!(calls(), before + 2, "pin and unpin by IPC");
    assert_eq!((p.mark(id) & MARK_PINS), 0);
}

#[test]
fn a_persist_keeps_a_write_marked_object_dirty() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let mut page = Page::new();
    let svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let heap = with_pins(&svc, page.page());
    let mut h = heap.alloc(value(1, 1)).unwrap();
    let id = usize::from(h.id().raw());
    let before = calls();
    let mut g = heap.get_mut(&mut h).unwrap();
    assert_eq!(
        (calls(), (page.page().mark(id) & MARK_PINS)),
        (before, MARK_WRITE)
    );
    g.version = 2;
    // The checkpoint's persist writes the object as it is and must leave it dirty:
    // the guard writes on after it.
    svc.borrow_mut().persist().unwrap();
    assert!(resident(&svc, id as u16).unwrap().dirty);
    g.version = 3;
    g.release().unwrap();
    svc.borrow_mut().persist().unwrap();
    // A power cut now: the arena is gone, the FRAM holds the last persist.
    let arena = svc.borrow().heap().unwrap().arena_ptr();
    // SAFETY: no guard is held; the test plays the power cut.
    unsafe { std::ptr::write_bytes(arena, 0xA5, ARENA as usize) };
    svc.borrow_mut().reload().unwrap();
    assert_eq!(
        heap.get(&h).unwrap().version,
        3,
        "the change after the first persist"
    );
    // Without the mark the persist makes it clean, and the table says so.
    svc.borrow_mut().persist().unwrap();
    assert!(!resident(&svc, id as u16).unwrap().dirty);
    assert_eq!(page.page().entry(id).0 & ENTRY_DIRTY, 0);
}

#[test]
fn fast_guards_held_across_a_persist_and_a_restore_keep_their_marks_and_bytes() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let mut page = Page::new();
    let svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let heap = with_pins(&svc, page.page());
    let mut a = heap.alloc(value(1, 1)).unwrap();
    let b = heap.alloc(5u64).unwrap();
    let (ia, ib) = (usize::from(a.id().raw()), usize::from(b.id().raw()));
    let before = calls();
    let mut g = heap.get_mut(&mut a).unwrap();
    let r = heap.get_ref(&b).unwrap();
    let r2 = heap.get_ref(&b).unwrap();
    assert_eq!(calls(), before, "all three on the page");
    g.version = 2;
    svc.borrow_mut().persist().unwrap();
    // Power cut: the arena and the page are lost; the service's memory and the FRAM
    // come back.
    let arena = svc.borrow().heap().unwrap().arena_ptr();
    // SAFETY: the guards are not dereferenced until the reload wrote their bytes back;
    // the page is written only through its accessors elsewhere.
    unsafe {
        std::ptr::write_bytes(arena, 0xA5, ARENA as usize);
        std::ptr::write_bytes(page.0.as_mut_ptr(), 0xA5, page.0.len());
    }
    svc.borrow_mut().reload().unwrap();
    let p = page.page();
    assert_eq!(
        ((p.mark(ia) & MARK_PINS), (p.mark(ib) & MARK_PINS)),
        (MARK_WRITE, 2),
        "marks as at the persist"
    );
    assert_eq!((p.mark(ia + ib + 1) & MARK_PINS), 0);
    assert_eq!((g.version, g.payload), (2, value(1, 1).payload));
    assert_eq!((*r, *r2), (5, 5));
    g.version = 3;
    g.release().unwrap();
    r.release().unwrap();
    drop(r2);
    assert_eq!(((p.mark(ia) & MARK_PINS), (p.mark(ib) & MARK_PINS)), (0, 0));
    assert_eq!(calls(), before, "released on the page");
    svc.borrow_mut().persist().unwrap();
    assert_eq!(heap.get(&a).unwrap().version, 3);
    assert_eq!(calls(), before, "and published again after the restore");
}

#[test]
fn a_lying_client_harms_nothing_but_its_own_view() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let mut page = Page::new();
    let svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let heap = with_pins(&svc, page.page());
    let p = page.page();
    let h = heap.alloc(value(1, 1)).unwrap();
    let fillers: Vec<_> = (2..10).map(|k| heap.alloc(value(k, 0)).unwrap()).collect();
    svc.borrow_mut().persist().unwrap();
    heap.get(&h).unwrap();
    let id = usize::from(h.id().raw());
    let dirty = svc.borrow().heap().unwrap().dirty_bytes();
    // Write marks on a clean object and on free ids, every mark everywhere, a forged
    // table: the service only keeps marked resident objects in place.
    for i in 0..64 {
        p.set_mark(i, if i == id { MARK_WRITE } else { u16::MAX });
        p.set_entry(i, ENTRY_RESIDENT | ENTRY_DIRTY | 8, 8);
    }
    svc.borrow_mut().persist().unwrap();
    // Every resident object held: this client's own request may find no room (its
    // lie, its heap), but it is served without harm.
    let got = heap.get(&fillers[7]);
    assert!(
        matches!(got, Ok(v) if v == value(9, 0)) || got == Err(HeapError::CacheFull),
        "{got:?}"
    );
    assert_eq!(
        svc.borrow().heap().unwrap().dirty_bytes(),
        dirty,
        "a write mark on a clean object takes no dirty budget"
    );
    assert!(!resident(&svc, id as u16).unwrap().dirty);
    // The service rewrote the table from its own metadata.
    let (entry, size) = p.entry(id);
    assert_eq!(
        (entry & (ENTRY_RESIDENT | ENTRY_DIRTY), size),
        (ENTRY_RESIDENT, 288)
    );
    // A forged entry of an id without an object misleads no handle: there is none.
    assert_eq!(
        heap.from_id::<u64>(vnv_heap::ObjectId::from_raw(31))
            .unwrap_err(),
        HeapError::NoSuchObject
    );
    // A marked object is not freed under its (claimed) guard.
    let h2: Handle<Value, _> = heap.from_id(h.id()).unwrap();
    assert_eq!(heap.free(h2).unwrap_err(), HeapError::Pinned);
    for i in 0..64 {
        p.set_mark(i, 0);
    }
    heap.free(h).unwrap();
    for (k, f) in fillers.iter().enumerate() {
        assert_eq!(heap.get(f).unwrap(), value(k as u32 + 2, 0));
    }
}

#[test]
fn freed_ids_waiting_for_the_persist_are_reported_once_no_other_is_free() {
    let mut rig = Rig::new();
    let [b0, _] = &mut rig.bufs;
    let svc = RefCell::new(format(&rig.fram, &rig.stats, b0, config()));
    let heap = client(&svc, 1);
    let mut all: Vec<_> = (0..32).map(|k| heap.alloc(k as u8 + 1).unwrap()).collect();
    assert_eq!(heap.alloc(0u8).unwrap_err(), HeapError::OutOfIds);
    assert!(!svc.borrow().ids_wait_for_persist(), "no id freed");
    // Objects on the FRAM: their frees wait for a dead description (a new object's
    // free does not).
    svc.borrow_mut().persist().unwrap();
    heap.free(all.pop().unwrap()).unwrap();
    assert!(svc.borrow().ids_wait_for_persist());
    assert_eq!(heap.alloc(0u8).unwrap_err(), HeapError::OutOfIds);
    svc.borrow_mut().persist().unwrap();
    assert!(!svc.borrow().ids_wait_for_persist());
    all.push(heap.alloc(0u8).unwrap());
    heap.free(all.pop().unwrap()).unwrap();
    assert!(
        !svc.borrow().ids_wait_for_persist(),
        "a new object's id is free at once"
    );
    heap.free(all.pop().unwrap()).unwrap();
    all.push(heap.alloc(0u8).unwrap());
    assert!(
        svc.borrow().ids_wait_for_persist(),
        "the last free id taken"
    );
}
