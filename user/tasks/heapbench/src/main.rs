//! heapbench: the heap service's benchmark (apps `heapbench` and `heapbench-nolimit`,
//! run by `cargo xtask bench` under `-icount`, where `instret` counts exactly). It
//! prints figures in lines that start with `heapbench:`, always the same number of
//! them (a part that fails prints its error where its figure would be), ending with
//! `heapbench: done`:
//!
//! 1. Best case, in instructions (`instret`: the whole hart, so the service, the kernel
//!    and the IPC count too): `get_ref` (acquire, read a byte, drop) and `get_mut`
//!    (acquire, write a byte, release) of an object already cached, of 4, 64 and 256
//!    bytes, through the heap service (endpoint, slot 0, with `amber-heap-api`: a pin
//!    and an unpin round trip, the bytes read and written in place in the window on the
//!    service's cache, slot 1) and
//!    through the vNV-Heap library in this task (`VnvHeap` over `MmioNvm` on a static
//!    buffer of this task's RAM). Each is the mean of `ITERATIONS` calls, less the
//!    empty loop, after a checkpoint (so that the SPI driver's ring holds no pending
//!    write, which would make the service's driver reads dearer) and one warm-up call
//!    (which makes the object resident and the touched pages writable).
//! 2. FRAM words (4 bytes) the service writes per checkpoint: a seeded key-value
//!    workload (`OBJECTS` objects of 64 to 256 bytes, `UPDATES` read-modify-write
//!    updates of random keys) with a `Checkpoint` every `PER_CHECKPOINT` updates (the
//!    app takes no periodic ones), read from the service's storage counters (`OP_STATS`)
//!    after each checkpoint and split into what persists wrote and what the heap wrote
//!    back between them. The service's dirty limit is the one it reports. At the end
//!    every key's version is checked, so a broken service does not pass for a cheap one.
//!
//! 3. The distribution behind part 1's service `get_ref` of 4 bytes: `SAMPLES` calls,
//!    each counted on its own, after the same checkpoint and warm-up, printed as
//!    `samples get_ref 1000: …` lines (`amber_user::sample`), which `cargo xtask bench`
//!    draws; they carry no `heapbench:` marker.
//!
//! Without `-icount` (`amber_user::counters_exact`) parts 1 and 3 say they did not
//! measure.
//! It measures and prints; it must never judge a figure, and never print a line with
//! the `heapbench:` marker beyond the fixed set (the bench counts them).

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_heap_api::{Handle, Heap, HeapError, ServiceStats};
use amber_nvm::MmioNvm;
use amber_user::{
    checkpoint, counters_exact, instret, memory, println, sample, Error, Memory, Rng,
};
use core::fmt;
use core::hint::black_box;
use vnv_heap::{Config, VnvHeap};

amber_user::main!(main);

const HEAP: u32 = 0;
/// The window: this task's part of `heap-caches`, shared with the heap service.
const WINDOW: Memory = memory!("HEAP_CACHES");
/// Calls averaged per best-case figure.
const ITERATIONS: u32 = 200;
/// Calls counted one by one for the distribution of the service's `get_ref`.
const SAMPLES: u32 = 1000;

/// Objects per size class of the workload; four classes of 64, 128, 192, 256 bytes.
const PER_CLASS: usize = 8;
const OBJECTS: usize = 4 * PER_CLASS;
const UPDATES: u32 = 2000;
/// Updates between two checkpoints.
const PER_CHECKPOINT: u32 = 20;
const SEED: u32 = 0x4845_4150;
const _: () = assert!(
    UPDATES.is_multiple_of(PER_CHECKPOINT),
    "every update is followed by a measured checkpoint"
);

/// The in-process heap: the service's default dirty limit, a small NVM (the best case
/// touches no storage and never reaches the limit).
const LIB_CONFIG: Config = Config {
    max_dirty_bytes: 1024,
    max_objects: 8,
    nvm_offset: 0,
    nvm_data_bytes: 2048,
    cache_bytes: LIB_CACHE_BYTES as u32,
};
const LIB_NVM_BYTES: usize = 4096;
const LIB_CACHE_BYTES: usize = 2048;

/// A buffer aligned for the heap's cache (8 bytes).
#[repr(C, align(8))]
struct Aligned<const N: usize>([u8; N]);

/// The in-process heap's "NVM": RAM of this task (checkpointed like the rest of it;
/// for the best case, which reaches no storage, that makes no difference).
static mut LIB_NVM: Aligned<LIB_NVM_BYTES> = Aligned([0; LIB_NVM_BYTES]);
/// The in-process heap's cache.
static mut LIB_CACHE: Aligned<LIB_CACHE_BYTES> = Aligned([0; LIB_CACHE_BYTES]);

fn main() {
    // SAFETY: the app maps WINDOW (its part of `heap-caches`) for this task, shared
    // with the heap service only, and nothing else in this task touches it.
    let heap = unsafe { Heap::new(HEAP, WINDOW) };
    best_case(&heap);
    workload(&heap);
    println!("heapbench: done");
}

/// Why a figure could not be measured.
enum Failure {
    Service(HeapError),
    Library(vnv_heap::HeapError),
    Checkpoint(Error),
    /// A key's value does not hold the version this task wrote last.
    Lost {
        key: usize,
        found: u32,
        expected: u32,
    },
}

impl From<HeapError> for Failure {
    fn from(e: HeapError) -> Self {
        Failure::Service(e)
    }
}

impl From<vnv_heap::HeapError> for Failure {
    fn from(e: vnv_heap::HeapError) -> Self {
        Failure::Library(e)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Service(e) => write!(f, "{e}"),
            Failure::Library(e) => write!(f, "{e}"),
            Failure::Checkpoint(e) => write!(f, "checkpoint: {e}"),
            Failure::Lost {
                key,
                found,
                expected,
            } => write!(f, "key {key} holds version {found}, not {expected}"),
        }
    }
}

fn take_checkpoint() -> Result<(), Failure> {
    checkpoint().map_err(Failure::Checkpoint)
}

/// A figure, or why it could not be measured.
struct Fig(Result<u32, Failure>);

impl fmt::Display for Fig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Ok(n) => write!(f, "{n}"),
            Err(e) => write!(f, "failed ({e})"),
        }
    }
}

/// Mean instructions of one call of `f` over [`ITERATIONS`] calls, less the empty
/// loop's. First a checkpoint, so that every run starts from the same state (the
/// SPI driver's ring empty, nothing dirty), then one warm-up call (the object becomes
/// resident, so the measured pins read nothing from the FRAM, and the pages it touches
/// become writable again after the checkpoint).
fn per_op<E: Into<Failure>>(mut f: impl FnMut() -> Result<(), E>) -> Result<u32, Failure> {
    take_checkpoint()?;
    f().map_err(Into::into)?;
    let t0 = instret();
    for _ in 0..ITERATIONS {
        black_box(());
    }
    let empty = instret().wrapping_sub(t0);
    let t0 = instret();
    for _ in 0..ITERATIONS {
        f().map_err(Into::into)?;
    }
    let total = instret().wrapping_sub(t0);
    Ok(total.saturating_sub(empty) / ITERATIONS)
}

/// Both figures failed for the same reason (`Failure` is not `Clone`: it is made
/// twice).
fn both<E: Copy + Into<Failure>>(e: E) -> (Fig, Fig) {
    (Fig(Err(e.into())), Fig(Err(e.into())))
}

/// `get_ref` and `get_mut` of an `N`-byte object through the service.
fn service_pair<const N: usize>(heap: &Heap) -> (Fig, Fig) {
    let mut h = match heap.alloc([0u8; N]) {
        Ok(h) => h,
        Err(e) => return both(e),
    };
    let r = per_op(|| {
        let g = heap.get_ref(&h)?;
        black_box(g[N - 1]);
        g.release()
    });
    let w = per_op(|| {
        let mut g = heap.get_mut(&mut h)?;
        g[0] = g[0].wrapping_add(1);
        g.release()
    });
    let _ = heap.free(h);
    (Fig(r), Fig(w))
}

/// `get_ref` and `get_mut` of an `N`-byte object through the library.
fn library_pair<const N: usize>(lib: &VnvHeap<'_, MmioNvm>) -> (Fig, Fig) {
    let mut h = match lib.alloc([0u8; N]) {
        Ok(h) => h,
        Err(e) => return both(e),
    };
    let r = per_op(|| {
        let g = lib.get_ref(&h)?;
        black_box(g[N - 1]);
        Ok::<(), vnv_heap::HeapError>(())
    });
    let w = per_op(|| {
        let mut g = lib.get_mut(&mut h)?;
        g[0] = g[0].wrapping_add(1);
        drop(g);
        Ok::<(), vnv_heap::HeapError>(())
    });
    let _ = lib.free(h);
    (Fig(r), Fig(w))
}

/// Part 1: six lines, `get_ref` and `get_mut` for each size.
fn best_case(heap: &Heap) {
    // SAFETY: `main` calls this function once and nothing else names LIB_NVM or
    // LIB_CACHE, so the NVM window and the cache slice made here are the only ways to
    // them. Both are statics (valid for the whole run, RAM of this task, read and
    // write); `Aligned` is `repr(C)` with the array at offset 0, so each pointer covers
    // exactly its array, and the cache is 8-aligned as the heap wants it.
    let (nvm, cache) = unsafe {
        (
            MmioNvm::new(
                core::ptr::addr_of_mut!(LIB_NVM).cast::<u8>(),
                LIB_NVM_BYTES as u32,
            ),
            core::slice::from_raw_parts_mut(
                core::ptr::addr_of_mut!(LIB_CACHE).cast::<u8>(),
                LIB_CACHE_BYTES,
            ),
        )
    };
    let lib = VnvHeap::new(nvm, cache, LIB_CONFIG);
    sizes::<4>(heap, &lib);
    sizes::<64>(heap, &lib);
    sizes::<256>(heap, &lib);
    if counters_exact() {
        if let Err(e) = service_samples(heap) {
            println!("samples get_ref: not measured ({e})");
        }
    }
}

/// Part 3: the service's `get_ref` of a 4-byte object, [`SAMPLES`] calls counted one
/// by one, after a checkpoint and a warm-up call as in [`per_op`].
fn service_samples(heap: &Heap) -> Result<(), Failure> {
    let h = heap.alloc([0u8; 4])?;
    let get_ref = || {
        let g = heap.get_ref(&h)?;
        black_box(g[3]);
        g.release()
    };
    take_checkpoint()?;
    get_ref()?;
    sample("get_ref", SAMPLES, get_ref)?;
    heap.free(h)?;
    Ok(())
}

/// The two lines of an `N`-byte object (without exact counters, two lines that say
/// so).
fn sizes<const N: usize>(heap: &Heap, lib: &Result<VnvHeap<'_, MmioNvm>, vnv_heap::HeapError>) {
    if !counters_exact() {
        for op in ["get_ref", "get_mut"] {
            println!("heapbench: {op} {N} B: not measured (instret counts instructions only under -icount)");
        }
        return;
    }
    let (sr, sw) = service_pair::<N>(heap);
    let (lr, lw) = match lib {
        Ok(lib) => library_pair::<N>(lib),
        Err(e) => both(*e),
    };
    println!(
        "heapbench: get_ref {N} B: service {sr}, library {lr} instructions (mean of {ITERATIONS})"
    );
    println!(
        "heapbench: get_mut {N} B: service {sw}, library {lw} instructions (mean of {ITERATIONS})"
    );
}

/// One size class of the workload: `PER_CLASS` objects of `M` words. Word 0 is the
/// value's version, the rest a payload computed from key and version.
struct Class<const M: usize> {
    handles: [Option<Handle<[u32; M]>>; PER_CLASS],
}

impl<const M: usize> Class<M> {
    fn alloc(heap: &Heap) -> Result<Self, HeapError> {
        let mut c = Class {
            handles: [const { None }; PER_CLASS],
        };
        for h in &mut c.handles {
            *h = Some(heap.alloc([0u32; M])?);
        }
        Ok(c)
    }

    fn handle(&mut self, i: usize) -> Result<&mut Handle<[u32; M]>, HeapError> {
        self.handles[i].as_mut().ok_or(HeapError::NoSuchObject)
    }

    /// One update: read the value, bump its version, rewrite it whole.
    fn update(&mut self, heap: &Heap, i: usize, key: u32) -> Result<(), HeapError> {
        heap.update(self.handle(i)?, |v| {
            let version = v[0].wrapping_add(1);
            v[0] = version;
            for (j, w) in v.iter_mut().enumerate().skip(1) {
                *w = key.rotate_left(j as u32) ^ version.wrapping_mul(0x9E37_79B1);
            }
        })
    }

    fn version(&mut self, heap: &Heap, i: usize) -> Result<u32, HeapError> {
        Ok(heap.get(self.handle(i)?)?[0])
    }
}

/// The four classes: 64, 128, 192 and 256 bytes.
struct Objects(Class<16>, Class<32>, Class<48>, Class<64>);

impl Objects {
    fn update(&mut self, heap: &Heap, key: usize) -> Result<(), HeapError> {
        let (i, k) = (key / 4, key as u32);
        match key % 4 {
            0 => self.0.update(heap, i, k),
            1 => self.1.update(heap, i, k),
            2 => self.2.update(heap, i, k),
            _ => self.3.update(heap, i, k),
        }
    }

    fn version(&mut self, heap: &Heap, key: usize) -> Result<u32, HeapError> {
        let i = key / 4;
        match key % 4 {
            0 => self.0.version(heap, i),
            1 => self.1.version(heap, i),
            2 => self.2.version(heap, i),
            _ => self.3.version(heap, i),
        }
    }
}

/// What the workload measured.
struct Measured {
    checkpoints: u32,
    /// The counters' change over the measured updates and checkpoints.
    total: ServiceStats,
    /// The most bytes written between two checkpoints (the second one's persist
    /// included).
    max_bytes: u64,
    /// The most bytes one checkpoint's persist wrote.
    max_persist_bytes: u64,
}

fn run_workload(heap: &Heap) -> Result<Measured, Failure> {
    let mut objects = Objects(
        Class::alloc(heap)?,
        Class::alloc(heap)?,
        Class::alloc(heap)?,
        Class::alloc(heap)?,
    );
    // The allocations (written through) and their persist are not measured.
    take_checkpoint()?;
    let start = heap.stats()?;
    let mut prev = start;
    let mut versions = [0u32; OBJECTS];
    let mut rng = Rng::new(SEED);
    let mut m = Measured {
        checkpoints: 0,
        total: ServiceStats::default(),
        max_bytes: 0,
        max_persist_bytes: 0,
    };
    for n in 1..=UPDATES {
        let key = rng.below(OBJECTS as u32) as usize;
        objects.update(heap, key)?;
        versions[key] += 1;
        if n % PER_CHECKPOINT == 0 {
            take_checkpoint()?;
            let now = heap.stats()?;
            let d = now.since(&prev);
            m.max_bytes = m.max_bytes.max(d.bytes_written);
            m.max_persist_bytes = m.max_persist_bytes.max(d.persist_bytes);
            m.checkpoints += 1;
            prev = now;
        }
    }
    m.total = prev.since(&start);
    for (key, &expected) in versions.iter().enumerate() {
        let found = objects.version(heap, key)?;
        if found != expected {
            return Err(Failure::Lost {
                key,
                found,
                expected,
            });
        }
    }
    Ok(m)
}

/// `bytes / 4 / n` with one decimal.
struct Words {
    bytes: u64,
    n: u32,
}

impl fmt::Display for Words {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tenths = (self.bytes * 10 / 4)
            .checked_div(u64::from(self.n))
            .unwrap_or(0);
        write!(f, "{}.{}", tenths / 10, tenths % 10)
    }
}

/// Part 2: one line.
fn workload(heap: &Heap) {
    let m = match run_workload(heap) {
        Ok(m) => m,
        Err(e) => {
            println!("heapbench: FRAM words per checkpoint: failed ({e})");
            return;
        }
    };
    let n = m.checkpoints;
    let t = m.total;
    println!(
        "heapbench: dirty limit {} B: {n} checkpoints ({} persists), FRAM words per checkpoint mean {} max {} (persist {}, write-back {}; largest persist {}); {UPDATES} updates of {OBJECTS} objects of 64-256 B",
        t.dirty_limit,
        t.persists,
        Words {
            bytes: t.bytes_written,
            n
        },
        m.max_bytes / 4,
        Words {
            bytes: t.persist_bytes,
            n
        },
        Words {
            bytes: t.other_bytes(),
            n
        },
        m.max_persist_bytes / 4,
    );
}
