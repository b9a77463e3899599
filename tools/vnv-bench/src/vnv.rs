//! The benchmarks' only door to the vNV-Heap library: heaps set up for each figure,
//! driven through the public API, and charged CPU cycles by the model below.
//!
//! Storage traffic is whatever the library issues on a [`CountingNvm`]; the storage
//! time per SPI word comes from the library's own [`CostModel::esp32c3_spi_fram`], so
//! that the benchmark and the library's `wcec_bound` price a word the same way. The
//! library's CPU work is charged per API call from three things (see the constants,
//! estimated from reading `heap-service/vnv-heap/src/heap.rs`): a fixed fast path, the
//! steps of its linear scans, which the library counts and reports
//! ([`VnvHeap::scan_steps`], priced at the library's own cycles per step), and the
//! storage calls it issued. The storage-traffic table (issue 16) also times the heap on
//! the host (`std::time::Instant`, reported apart from the model). This file must
//! never reach into the library's internals or change its files.

use crate::cost::{Cost, Meter, StorageModel};
use crate::counting::{Counter, CountingNvm, NvmCounts};
use crate::figures::fig3_queue::{mean_push_pop, Fifo, Mean};
use crate::figures::fig5_kv::{measure, Kv};
use crate::figures::traffic::{push_pop_traffic, Traffic, TIMED_RUNS};
use amber_nvm::sim::VecNvm;
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use vnv_heap::{wcec_bound, Config, CostModel, Handle, VnvHeap, METADATA};

/// Cycles of an API call on its fast path (the object is resident, nothing is written
/// back): `RefCell` borrow, handle check, hint lookup of the resident header, state
/// word update, guard creation and the guard's drop. About 80 RV32 instructions.
pub const CALL_CYCLES: u64 = 80;
/// Cycles per step of one of the library's linear scans, as counted by
/// [`VnvHeap::scan_steps`] (a cache unit, id or NVM block visited, or a bitmap word
/// combined): the library's own estimate [`vnv_heap::CYCLES_PER_SCAN_STEP`] (10: one
/// inlined `Bits::get`, 8 instructions, plus the loop's increment and compare), which
/// its `wcec_bound` charges too. The scans are `find_resident` without a valid hint,
/// `make_room` (`find_clear_run`, the eviction windows, `extent_end`), the write-back
/// clock of `reserve_dirty`, the two loops and the bitmap updates of `persist` and the
/// id and block searches of `alloc`.
pub const SCAN_CYCLES_PER_STEP: u64 = vnv_heap::CYCLES_PER_SCAN_STEP;
/// Cycles per storage call the library issues, besides the transfer: encoding or
/// decoding an entry half with its CRC-32 over 16 bytes, slot arithmetic.
pub const CYCLES_PER_NVM_CALL: u64 = 200;

/// Bytes of the cache arena unit (`bits::UNIT` in the library).
const UNIT: usize = 8;

/// The library's cost model for the storage model in use: the word model is its
/// `esp32c3_spi_fram()` (one call per word: `*_op_ns` is a word), the bulk model its
/// `esp32c3_spi_fram_bulk()`.
pub fn library_cost_model() -> CostModel {
    if crate::figures::model() == StorageModel::BULK {
        CostModel::esp32c3_spi_fram_bulk()
    } else {
        CostModel::esp32c3_spi_fram()
    }
}

/// Cache bytes an object of `len` bytes occupies once it was persisted: its header
/// (`METADATA.resident_bytes`), rounded to units.
pub fn cache_bytes(len: usize) -> usize {
    (METADATA.resident_bytes as usize + len).div_ceil(UNIT) * UNIT
}

/// NVM data bytes an object of `len` bytes owns: a slot of 16-byte granules in each
/// of two planes (32 bytes of data area per granule).
pub fn nvm_bytes(len: usize) -> u32 {
    (len.div_ceil(16).max(1) * 32) as u32
}

/// `config` with the smallest cache buffer (a multiple of 8 bytes) whose arena holds at
/// least `arena` bytes, found by building throwaway heaps: the library's own carving
/// decides, not a copy of its arithmetic.
pub fn with_cache_for(arena: usize, config: Config) -> Config {
    let size = config.nvm_end().expect("the configuration fits 32 bits");
    let guess = Config {
        cache_bytes: arena as u32,
        ..config
    };
    let mut len = (arena + guess.ram_metadata_bytes()).next_multiple_of(UNIT);
    loop {
        let config = Config {
            cache_bytes: len as u32,
            ..config
        };
        let mut cache = vec![0u8; len];
        let heap = VnvHeap::new(VecNvm::new(size), &mut cache, config).expect("heap fits");
        if heap.cache_capacity() >= arena {
            return config;
        }
        len += UNIT;
    }
}

type Dev = CountingNvm<VecNvm>;

fn device(config: &Config) -> (Dev, Counter) {
    let size = config.nvm_end().expect("the configuration fits 32 bits");
    let dev = CountingNvm::new(VecNvm::new(size));
    let counter = dev.counter();
    (dev, counter)
}

/// A heap's meter and device counter, charging the CPU model around each call.
struct Charge {
    meter: Meter,
    counter: Counter,
}

impl Charge {
    fn new(counter: Counter) -> Self {
        Charge {
            meter: Meter::new(),
            counter,
        }
    }

    /// Runs one API call `f` on `heap`, charging the fast path, the scan steps the heap
    /// reports for it and its storage calls.
    fn call<R>(&mut self, heap: &VnvHeap<'_, Dev>, f: impl FnOnce() -> R) -> R {
        let (before, steps) = (self.counter.get(), heap.scan_steps());
        let r = f();
        let d = self.counter.get().since(&before);
        self.meter.op(CALL_CYCLES);
        self.meter
            .op((heap.scan_steps() - steps) * SCAN_CYCLES_PER_STEP);
        self.meter.op((d.reads + d.writes) * CYCLES_PER_NVM_CALL);
        r
    }

    fn persist(&mut self, heap: &VnvHeap<'_, Dev>) {
        self.call(heap, || heap.persist())
            .expect("persist succeeds on a healthy device");
    }

    fn snapshot(&self) -> (Meter, NvmCounts) {
        (self.meter, self.counter.get())
    }
}

/// Which retrieval of Fig. 2 to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefCase {
    /// The object is resident.
    Best,
    /// It is not, and loading it evicts nothing.
    Bad,
    /// Loading it first writes back a dirty object that fills the cache.
    Worst,
}

impl RefCase {
    /// The paper's name.
    pub fn name(self) -> &'static str {
        match self {
            RefCase::Best => "best",
            RefCase::Bad => "bad",
            RefCase::Worst => "worst",
        }
    }
}

fn retrieval_of<const N: usize>(ram: usize, case: RefCase) -> Cost {
    let config = Config {
        max_dirty_bytes: (ram + Config::DIRTY_OVERHEAD as usize) as u32,
        max_objects: 4,
        nvm_offset: 0,
        nvm_data_bytes: nvm_bytes(N) + nvm_bytes(ram),
        cache_bytes: 0,
    };
    // The arena holds one RAM-sized object and nothing more (as both systems in the
    // paper are limited to 1 KiB of resident and modified data); metadata comes on top.
    let config = with_cache_for(cache_bytes(ram), config);
    let mut cache = vec![0u8; config.cache_bytes as usize];
    let (dev, counter) = device(&config);
    let heap = VnvHeap::new(dev, &mut cache, config).expect("heap fits");
    assert!(heap.cache_capacity() < cache_bytes(ram) + cache_bytes(1));
    let target = heap.alloc([7u8; N]).expect("alloc").into_id();
    let big = heap.alloc([9u8; 1024]).expect("alloc").into_id();
    heap.persist().expect("persist");
    // Reopen: the cache starts empty, and the ids come back as handles.
    let dev = heap.into_storage();
    let heap = VnvHeap::open(dev, &mut cache, config).expect("reopen");
    let target = heap.handle_from_id::<[u8; N]>(target).expect("target");
    let mut big = heap.handle_from_id::<[u8; 1024]>(big).expect("big");
    match case {
        RefCase::Best => drop(heap.get_ref(&target).expect("load")),
        RefCase::Bad => {}
        RefCase::Worst => drop(heap.get_mut(&mut big).expect("load big dirty")),
    }
    let mut charge = Charge::new(counter);
    let before = charge.snapshot();
    let guard = charge.call(&heap, || heap.get_ref(&target).expect("retrieval"));
    assert_eq!(guard[N - 1], 7, "the object must come back intact");
    drop(guard);
    let cost = Cost::between(before, charge.snapshot());
    if case == RefCase::Worst {
        assert!(
            cost.nvm.write_bytes >= 1024,
            "the worst case writes back the dirty object"
        );
    }
    cost
}

/// One reference retrieval of an `size`-byte object with `ram` bytes of cache.
pub fn reference_retrieval(size: usize, ram: usize, case: RefCase) -> Cost {
    assert_eq!(ram, 1024, "Fig. 2 is set up for 1 KiB of RAM");
    match size {
        32 => retrieval_of::<32>(ram, case),
        128 => retrieval_of::<128>(ram, case),
        512 => retrieval_of::<512>(ram, case),
        1024 => retrieval_of::<1024>(ram, case),
        other => panic!("no object type for {other} bytes"),
    }
}

/// A FIFO of 256-byte elements on a ring of preallocated heap objects.
struct VnvQueue<'h, 'c> {
    heap: &'h VnvHeap<'c, Dev>,
    slots: Vec<Handle<'h, [u8; 256]>>,
    head: usize,
    len: usize,
    charge: Charge,
}

impl Fifo for VnvQueue<'_, '_> {
    fn push(&mut self, value: &[u8]) -> bool {
        if self.len == self.slots.len() {
            return false;
        }
        let slot = (self.head + self.len) % self.slots.len();
        let value: [u8; 256] = value.try_into().expect("256-byte element");
        let (heap, h) = (self.heap, &mut self.slots[slot]);
        self.charge.call(heap, || heap.set(h, value)).expect("set");
        self.charge.meter.copy(256);
        self.len += 1;
        true
    }

    fn pop(&mut self, out: &mut [u8]) -> bool {
        if self.len == 0 {
            return false;
        }
        let (heap, h) = (self.heap, &self.slots[self.head]);
        let v = self.charge.call(heap, || heap.get(h)).expect("get");
        self.charge.meter.copy(256);
        out.copy_from_slice(&v);
        self.head = (self.head + 1) % self.slots.len();
        self.len -= 1;
        true
    }

    fn snapshot(&self) -> (Meter, NvmCounts) {
        self.charge.snapshot()
    }
}

/// Fig. 3's vNV-Heap queue: `ram` bytes of cache (metadata included), a ring of
/// `slots` objects, measured by the shared harness at initial length `len`.
pub fn queue_mean(ram: usize, slots: usize, len: usize) -> Option<Mean> {
    let config = Config {
        max_dirty_bytes: ram as u32,
        max_objects: slots as u16 + 1,
        nvm_offset: 0,
        nvm_data_bytes: slots as u32 * nvm_bytes(256),
        cache_bytes: ram as u32,
    };
    let mut cache = vec![0u8; ram];
    let (dev, counter) = device(&config);
    let heap = VnvHeap::new(dev, &mut cache, config).expect("heap fits");
    let handles: Vec<_> = (0..slots)
        .map(|_| heap.alloc([0u8; 256]).expect("alloc"))
        .collect();
    heap.persist().expect("persist");
    let mut q = VnvQueue {
        heap: &heap,
        slots: handles,
        head: 0,
        len: 0,
        charge: Charge::new(counter),
    };
    mean_push_pop(&mut q, len)
}

/// Result of one worst-case persist with objects of one size.
pub struct PersistResult {
    /// Object size used to fill the dirty limit.
    pub object_bytes: usize,
    /// The measured persist.
    pub measured: Cost,
    /// The library's `wcec_bound` energy under its cost model, in µJ.
    pub bound_uj: f64,
}

/// Object sizes Fig. 4 fills the dirty limit with.
pub const PERSIST_OBJECT_SIZES: [usize; 4] = [8, 32, 128, 512];

fn persist_with<const N: usize>(ram: usize, dirty: usize) -> Option<(Cost, f64)> {
    let n = ram / cache_bytes(N);
    if n == 0 || N + Config::DIRTY_OVERHEAD as usize > dirty {
        return None;
    }
    let config = Config {
        max_dirty_bytes: dirty as u32,
        max_objects: n as u16 + 1,
        nvm_offset: 0,
        nvm_data_bytes: n as u32 * nvm_bytes(N),
        cache_bytes: ram as u32,
    };
    let mut cache = vec![0u8; ram];
    let (dev, counter) = device(&config);
    let heap = VnvHeap::new(dev, &mut cache, config).ok()?;
    let mut handles: Vec<_> = (0..n)
        .map(|_| heap.alloc([0u8; N]).expect("alloc"))
        .collect();
    heap.persist().expect("persist");
    // Dirty every object in turn; the heap writes back to stay within its limit, and
    // the last ones stay dirty: as much dirty data as the limit and the cache allow.
    for (i, h) in handles.iter_mut().enumerate() {
        match heap.set(h, [i as u8; N]) {
            Ok(()) => {}
            Err(vnv_heap::HeapError::CacheFull { .. }) => break,
            Err(e) => panic!("set failed: {e}"),
        }
    }
    let mut charge = Charge::new(counter);
    let before = charge.snapshot();
    charge.persist(&heap);
    let bound = wcec_bound(&config, &library_cost_model());
    Some((
        Cost::between(before, charge.snapshot()),
        bound.energy_nj as f64 / 1000.0,
    ))
}

/// Fig. 4: a persist with as much dirty data as the limit and cache allow, for each
/// of [`PERSIST_OBJECT_SIZES`] (`None` where that size cannot be made dirty), with
/// `ram` bytes of cache (metadata included) and a dirty limit of `dirty` bytes.
pub fn persist_worst_case(ram: usize, dirty: usize) -> [Option<PersistResult>; 4] {
    let wrap = |size: usize, r: Option<(Cost, f64)>| {
        r.map(|(measured, bound_uj)| PersistResult {
            object_bytes: size,
            measured,
            bound_uj,
        })
    };
    [
        wrap(8, persist_with::<8>(ram, dirty)),
        wrap(32, persist_with::<32>(ram, dirty)),
        wrap(128, persist_with::<128>(ram, dirty)),
        wrap(512, persist_with::<512>(ram, dirty)),
    ]
}

/// A key-value store's value on the heap: one handle type per value size.
enum Value<'h> {
    B32(Handle<'h, [u8; 32]>),
    B128(Handle<'h, [u8; 128]>),
    B256(Handle<'h, [u8; 256]>),
    B1024(Handle<'h, [u8; 1024]>),
}

impl Value<'_> {
    fn unload(&self, heap: &VnvHeap<'_, Dev>) {
        match self {
            Value::B32(h) => heap.unload(h),
            Value::B128(h) => heap.unload(h),
            Value::B256(h) => heap.unload(h),
            Value::B1024(h) => heap.unload(h),
        }
        .expect("unload");
    }

    fn load(&self, heap: &VnvHeap<'_, Dev>) {
        let loaded = match self {
            Value::B32(h) => heap.get(h).map(|_| ()),
            Value::B128(h) => heap.get(h).map(|_| ()),
            Value::B256(h) => heap.get(h).map(|_| ()),
            Value::B1024(h) => heap.get(h).map(|_| ()),
        };
        loaded.expect("load");
    }
}

struct VnvKvStore<'h, 'c> {
    heap: &'h VnvHeap<'c, Dev>,
    values: Vec<Value<'h>>,
    charge: Charge,
}

impl Kv for VnvKvStore<'_, '_> {
    fn update(&mut self, key: usize, value: &[u8]) {
        let heap = self.heap;
        let r = match &mut self.values[key] {
            Value::B32(h) => {
                let v = value.try_into().expect("32 B");
                self.charge.call(heap, || heap.set(h, v))
            }
            Value::B128(h) => {
                let v = value.try_into().expect("128 B");
                self.charge.call(heap, || heap.set(h, v))
            }
            Value::B256(h) => {
                let v = value.try_into().expect("256 B");
                self.charge.call(heap, || heap.set(h, v))
            }
            Value::B1024(h) => {
                let v = value.try_into().expect("1024 B");
                self.charge.call(heap, || heap.set(h, v))
            }
        };
        r.expect("update");
        self.charge.meter.copy(value.len());
    }

    fn persist(&mut self) {
        self.charge.persist(self.heap);
    }

    fn snapshot(&self) -> (Meter, NvmCounts) {
        self.charge.snapshot()
    }
}

/// The configuration (cache length included) of the key-value heap for values of
/// `sizes`.
fn kv_config(sizes: &[usize], dirty: usize) -> Config {
    let config = Config {
        max_dirty_bytes: dirty as u32,
        max_objects: sizes.len() as u16,
        nvm_offset: 0,
        nvm_data_bytes: sizes.iter().map(|&s| nvm_bytes(s)).sum(),
        cache_bytes: 0,
    };
    // All values fit in the cache, as the paper sets it up to favour ManagedState.
    let arena: usize = sizes.iter().map(|&s| cache_bytes(s)).sum();
    with_cache_for(arena, config)
}

/// Fig. 5: the key-value workload on the vNV-Heap (see `fig5_kv::measure`).
pub fn kv_measure(sizes: &[usize], dirty: usize, keys: &[usize]) -> Cost {
    let config = kv_config(sizes, dirty);
    let mut cache = vec![0u8; config.cache_bytes as usize];
    let (dev, counter) = device(&config);
    let heap = VnvHeap::new(dev, &mut cache, config).expect("heap fits");
    let values: Vec<Value<'_>> = sizes
        .iter()
        .map(|&s| match s {
            32 => Value::B32(heap.alloc([0; 32]).expect("alloc")),
            128 => Value::B128(heap.alloc([0; 128]).expect("alloc")),
            256 => Value::B256(heap.alloc([0; 256]).expect("alloc")),
            1024 => Value::B1024(heap.alloc([0; 1024]).expect("alloc")),
            other => panic!("no value type of {other} bytes"),
        })
        .collect();
    // A new object has a 16-byte header until its description is written, and the
    // arena is exactly as large as the values behind 8-byte headers: the creation
    // leaves holes (and a few values evicted). Persisted, unloaded and loaded again in
    // key order, every value is resident and the arena packed, as the paper has it.
    heap.persist().expect("persist");
    for v in &values {
        v.unload(&heap);
    }
    for v in &values {
        v.load(&heap);
    }
    assert_eq!(heap.resident_count(), sizes.len(), "every value is cached");
    let mut kv = VnvKvStore {
        heap: &heap,
        values,
        charge: Charge::new(counter),
    };
    let cost = measure(&mut kv, sizes, keys);
    assert_eq!(
        heap.resident_count(),
        sizes.len(),
        "every value stays cached"
    );
    assert_eq!(cost.nvm.reads, 0, "the measured updates never miss");
    cost
}

/// Fig. 6: RAM metadata bytes of the key-value heap (resident headers plus the cache,
/// id and block bitmaps), and its NVM metadata bytes (both commit records with their
/// slot bitmaps, and the entries): the heap's NVM footprint less its data area.
pub fn kv_metadata(sizes: &[usize], dirty: usize) -> (usize, usize) {
    let config = kv_config(sizes, dirty);
    let ram = sizes.len() * METADATA.resident_bytes as usize + config.ram_metadata_bytes();
    let end = config.nvm_end().expect("the configuration fits 32 bits");
    let nvm = (end - config.nvm_offset - config.nvm_data_bytes) as usize;
    assert!(nvm >= sizes.len() * METADATA.nvm_bytes_per_id as usize);
    (ram, nvm)
}

/// Cache buffer (metadata included) of the storage-traffic table's heaps.
pub const TRAFFIC_CACHE: usize = 4096;
/// Dirty limit of the storage-traffic table's heaps.
pub const TRAFFIC_DIRTY: u32 = 2048;

fn traffic_config(objects: usize, size: usize) -> Config {
    Config {
        max_dirty_bytes: TRAFFIC_DIRTY,
        max_objects: u16::try_from(objects).expect("ids fit u16"),
        nvm_offset: 0,
        nvm_data_bytes: objects as u32 * nvm_bytes(size),
        cache_bytes: TRAFFIC_CACHE as u32,
    }
}

/// One run of the key-value traffic workload: `n` objects of `S` bytes, allocated and
/// persisted, then one read-modify-write (`update`, the whole value replaced) per key.
/// Returns the traffic of the updates, the misses (counted only with `count`, which
/// asks `is_resident` first) and the host time of the update loop. Checks every value
/// at the end.
fn kv_run<const S: usize>(keys: &[usize], n: usize, count: bool) -> (NvmCounts, u64, Duration) {
    let config = traffic_config(n, S);
    let mut cache = vec![0u8; TRAFFIC_CACHE];
    let (dev, counter) = device(&config);
    let heap = VnvHeap::new(dev, &mut cache, config).expect("heap fits");
    let mut hs: Vec<Handle<'_, [u8; S]>> = (0..n)
        .map(|k| heap.alloc([k as u8; S]).expect("alloc"))
        .collect();
    heap.persist().expect("persist");
    let mut want: Vec<u8> = (0..n).map(|k| k as u8).collect();
    let before = counter.get();
    let mut misses = 0;
    let t0 = Instant::now();
    for (i, &k) in keys.iter().enumerate() {
        if count && !heap.is_resident(&hs[k]) {
            misses += 1;
        }
        let x = i as u8 ^ 0x5a;
        heap.update(&mut hs[k], |v| *v = [x; S]).expect("update");
        want[k] = x;
    }
    let took = t0.elapsed();
    let traffic = counter.get().since(&before);
    for (h, &w) in hs.iter().zip(&want) {
        assert_eq!(heap.get(h).expect("get"), [w; S], "the last update holds");
    }
    (traffic, misses, took)
}

fn kv_traffic_of<const S: usize>(keys: &[usize], n: usize) -> Traffic {
    let (nvm, misses, _) = kv_run::<S>(keys, n, true);
    let host = (0..TIMED_RUNS)
        .map(|_| kv_run::<S>(keys, n, false).2)
        .min()
        .expect("at least one timed run");
    Traffic {
        nvm,
        ops: keys.len() as u64,
        misses,
        host_ns: host.as_nanos() as f64 / keys.len() as f64,
    }
}

/// The key-value traffic workload on `n` objects of `size` bytes (see `kv_run`).
pub fn kv_traffic(size: usize, n: usize, keys: &[usize]) -> Traffic {
    match size {
        32 => kv_traffic_of::<32>(keys, n),
        64 => kv_traffic_of::<64>(keys, n),
        128 => kv_traffic_of::<128>(keys, n),
        256 => kv_traffic_of::<256>(keys, n),
        512 => kv_traffic_of::<512>(keys, n),
        other => panic!("no object type of {other} bytes"),
    }
}

/// How a vNV-Heap FIFO keeps its elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FifoKind {
    /// A ring of preallocated objects (`set` to push, `get` to pop), as in Fig. 3.
    Ring,
    /// A new object per push (`alloc`), freed by its pop (`get`, then `free`).
    AllocPerPush,
}

impl FifoKind {
    /// The name in the table.
    pub fn name(self) -> &'static str {
        match self {
            FifoKind::Ring => "ring",
            FifoKind::AllocPerPush => "alloc-per-push",
        }
    }
}

/// A FIFO of 256-byte elements, one heap object per element, allocated by its push.
struct AllocQueue<'h, 'c> {
    heap: &'h VnvHeap<'c, Dev>,
    items: VecDeque<Handle<'h, [u8; 256]>>,
    charge: Charge,
}

impl Fifo for AllocQueue<'_, '_> {
    fn push(&mut self, value: &[u8]) -> bool {
        let value: [u8; 256] = value.try_into().expect("256-byte element");
        let heap = self.heap;
        let h = self.charge.call(heap, || heap.alloc(value)).expect("alloc");
        self.charge.meter.copy(256);
        self.items.push_back(h);
        true
    }

    fn pop(&mut self, out: &mut [u8]) -> bool {
        let Some(h) = self.items.pop_front() else {
            return false;
        };
        let heap = self.heap;
        let v = self.charge.call(heap, || heap.get(&h)).expect("get");
        self.charge.meter.copy(256);
        out.copy_from_slice(&v);
        self.charge.call(heap, || heap.free(h)).expect("free");
        true
    }

    fn snapshot(&self) -> (Meter, NvmCounts) {
        self.charge.snapshot()
    }
}

/// The FIFO of Fig. 3 (4 KiB of cache, metadata included, dirty limit 4 KiB, 256-byte
/// elements) of `kind`, measured by the traffic harness at initial length `len`, with
/// ids and an NVM data area for `len + 2` elements (a push comes before its pop).
pub fn fifo_traffic(kind: FifoKind, len: usize) -> Option<Traffic> {
    let ram = crate::figures::fig3_queue::RAM;
    let (ids, elems) = (len + 2, len + 2);
    let config = Config {
        max_dirty_bytes: ram as u32,
        max_objects: ids as u16,
        nvm_offset: 0,
        nvm_data_bytes: elems as u32 * nvm_bytes(256),
        cache_bytes: ram as u32,
    };
    let mut cache = vec![0u8; ram];
    let (dev, counter) = device(&config);
    let heap = VnvHeap::new(dev, &mut cache, config).expect("heap fits");
    match kind {
        FifoKind::Ring => {
            let slots: Vec<_> = (0..len + 1)
                .map(|_| heap.alloc([0u8; 256]).expect("alloc"))
                .collect();
            heap.persist().expect("persist");
            let mut q = VnvQueue {
                heap: &heap,
                slots,
                head: 0,
                len: 0,
                charge: Charge::new(counter),
            };
            push_pop_traffic(&mut q, len)
        }
        FifoKind::AllocPerPush => {
            let mut q = AllocQueue {
                heap: &heap,
                items: VecDeque::new(),
                charge: Charge::new(counter),
            };
            push_pop_traffic(&mut q, len)
        }
    }
}

/// A persist of a full dirty budget (the traffic table's 2 KiB) of `S`-byte objects,
/// each made dirty once after a first persist: what it writes.
fn persist_traffic_of<const S: usize>() -> NvmCounts {
    let k = TRAFFIC_DIRTY as usize / (S + Config::DIRTY_OVERHEAD as usize);
    let config = traffic_config(k + 1, S);
    let mut cache = vec![0u8; TRAFFIC_CACHE];
    let (dev, counter) = device(&config);
    let heap = VnvHeap::new(dev, &mut cache, config).expect("heap fits");
    let mut hs: Vec<_> = (0..k)
        .map(|_| heap.alloc([0u8; S]).expect("alloc"))
        .collect();
    heap.persist().expect("persist");
    for (i, h) in hs.iter_mut().enumerate() {
        heap.set(h, [i as u8 + 1; S]).expect("set");
    }
    assert_eq!(
        heap.dirty_bytes(),
        (k * (S + Config::DIRTY_OVERHEAD as usize)) as u32,
        "every object is dirty: a full budget"
    );
    let before = counter.get();
    heap.persist().expect("persist");
    counter.get().since(&before)
}

/// A full-budget persist of objects of `size` bytes (see `persist_traffic_of`).
pub fn persist_traffic(size: usize) -> NvmCounts {
    match size {
        32 => persist_traffic_of::<32>(),
        64 => persist_traffic_of::<64>(),
        128 => persist_traffic_of::<128>(),
        256 => persist_traffic_of::<256>(),
        512 => persist_traffic_of::<512>(),
        other => panic!("no object type of {other} bytes"),
    }
}

/// One line on the model in use, printed before the figures run under it.
pub fn describe_model() -> String {
    let m = crate::figures::model();
    format!(
        "Time model \"{}\": ESP32-C3 at {} MHz; storage: {}; CPU cycles charged per \
         operation (see tools/vnv-bench/README.md).",
        m.name,
        crate::cost::CPU_HZ / 1_000_000,
        m.label,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resident_retrieval_moves_no_bytes_and_the_worst_case_writes_back_the_cache() {
        let best = reference_retrieval(32, 1024, RefCase::Best);
        assert_eq!(
            best.nvm,
            NvmCounts::default(),
            "best case: no storage traffic"
        );
        let worst = reference_retrieval(32, 1024, RefCase::Worst);
        assert!(worst.nvm.write_bytes >= 1024 && worst.nvm.read_bytes >= 32);
    }

    #[test]
    fn a_short_queue_stays_in_ram_and_a_long_one_swaps() {
        let short = queue_mean(4096, 4, 3).expect("fits");
        assert_eq!(short.nvm_bytes(), 0.0, "4 slots of 256 B fit in 4 KiB");
        let long = queue_mean(4096, 33, 32).expect("runs");
        assert!(
            long.nvm_bytes() > 0.0,
            "33 slots of 256 B cannot all be cached"
        );
    }

    #[test]
    fn with_cache_for_gives_the_smallest_buffer_that_fits() {
        let config = with_cache_for(1032, Config::new(1024, 0));
        let len = config.cache_bytes as usize;
        let mut cache = vec![0u8; len];
        let dev = VecNvm::new(config.nvm_end().unwrap());
        let heap = VnvHeap::new(dev, &mut cache, config).unwrap();
        assert!(heap.cache_capacity() >= 1032);
        drop(heap);
        let smaller_config = Config {
            cache_bytes: (len - UNIT) as u32,
            ..config
        };
        let mut smaller = vec![0u8; len - UNIT];
        let dev = VecNvm::new(config.nvm_end().unwrap());
        let heap = VnvHeap::new(dev, &mut smaller, smaller_config).unwrap();
        assert!(heap.cache_capacity() < 1032);
    }

    #[test]
    fn the_bench_charges_scan_steps_and_cpu_time_as_the_library_bound_does() {
        let m = library_cost_model();
        assert_eq!(
            (m.cpu_per_step_cycles, m.cpu_hz, m.cpu_mw),
            (
                SCAN_CYCLES_PER_STEP,
                crate::cost::CPU_HZ,
                crate::cost::POWER_MW
            ),
            "bench and wcec_bound must price a scan step, a cycle and a watt the same way"
        );
        let lib = CostModel::esp32c3_spi_fram();
        let word = StorageModel::WORD;
        assert_eq!(
            (lib.read_op_ns, lib.write_op_ns),
            (word.read_word_ns, word.write_word_ns),
            "the word model is the library's: one call per word"
        );
    }
}
