//! heapbench: the heap service's benchmark (apps `heapbench` and `heapbench-nolimit`,
//! run by `cargo xtask bench` under `-icount`, where `instret` counts exactly). It
//! prints figures in lines that start with `heapbench:`, always the same number of
//! them (a part that fails prints its error where its figure would be), ending with
//! `heapbench: done`:
//!
//! 1. Best case, in instructions (`instret`: the whole hart, so the service, the kernel
//!    and the IPC count too): `get_ref` (acquire, read a byte, drop) and `get_mut`
//!    (acquire, write a byte, release) of an object already cached, of 4, 64 and 256
//!    bytes, through the heap service (endpoint, slot 0, with `amber-heap-api` and this
//!    task's pin page: the object is resident, and dirty after the warm-up's write, so
//!    both pins are marks on the page, without IPC; the bytes read and written in place
//!    in the window on the service's cache) and
//!    through the vNV-Heap library in this task (`VnvHeap` over `MmioNvm` on a static
//!    buffer of this task's RAM). Each is the mean of `ITERATIONS` calls, less the
//!    empty loop, after a checkpoint (so that the SPI driver's ring holds no pending
//!    write, which would make the service's driver reads dearer) and one warm-up call
//!    (which makes the object resident and the touched pages writable). Then the
//!    release alone (clearing the page's mark; in the library the guard's drop) of a
//!    read pin and of a write pin of a 16-byte object, each pin taken uncounted.
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
//! 4. The worst case of part 1's `get_ref` of 256 bytes: the object is not cached and
//!    is read in from the FRAM (`SWAP_INS` times, each counted on its own). Through
//!    the service, reading `FILLERS` objects of 1,000 bytes through its 8 KiB cache
//!    evicts the object before each count, which then pays the pin, the service's
//!    read through the SPI driver and the wire; the service's counters must show the
//!    object's bytes read, or the line says it stayed cached. Through the library,
//!    `unload` drops it from the cache and the read crosses the wire of an MB85RS64V
//!    that this task emulates on the same buffer (`EmuFram` with the SPI driver's
//!    cost of 32 cycles a byte).
//!
//! Without `-icount` (`amber_user::counters_exact`) parts 1, 3 and 4 say they did not
//! measure.
//! It measures and prints; it must never judge a figure, and never print a line with
//! the `heapbench:` marker beyond the fixed set (the bench counts them).

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_fram::{EmuFram, Fram, Part, DEFAULT_CYCLES_PER_BYTE};
use amber_heap_api::{Handle, Heap, HeapError, PinPage, ServiceStats};
use amber_nvm::MmioNvm;
use amber_user::{
    checkpoint, counters_exact, instret, memory, println, sample, spend_cycles, Error, Memory, Rng,
};
use core::fmt;
use core::hint::black_box;
use vnv_heap::{Config, VnvHeap};

amber_user::main!(main);

const HEAP: u32 = 0;
/// The window: this task's part of `heap-caches`, shared with the heap service.
const WINDOW: Memory = memory!("HEAP_CACHES");
/// The pin page: this task's part of `heap-pins`, shared with the heap service.
const PINS: Memory = memory!("HEAP_PINS");
/// Calls averaged per best-case figure.
const ITERATIONS: u32 = 200;
/// Calls counted one by one for the distribution of the service's `get_ref`.
const SAMPLES: u32 = 1000;

/// Swap-ins counted per worst-case figure.
const SWAP_INS: u32 = 20;
/// The worst case's object.
const SWAP_BYTES: usize = 256;
/// Objects read through the service's cache between two swap-ins, so that it evicts
/// the measured object: together larger than its 8 KiB arena.
const FILLERS: usize = 9;
const FILLER_BYTES: usize = 1000;

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
/// touches no storage and never reaches the limit; the worst case reads one object).
const LIB_CONFIG: Config = Config {
    max_dirty_bytes: 1024,
    max_objects: 8,
    nvm_offset: 0,
    nvm_data_bytes: 2048,
    cache_bytes: LIB_CACHE_BYTES as u32,
};
/// The in-process heap's FRAM: the smallest MB85RS part, which holds its NVM.
const LIB_PART: Part = Part::MB85RS64V;
const LIB_NVM_BYTES: usize = LIB_PART.size() as usize;
const LIB_CACHE_BYTES: usize = 2048;
const _: () = assert!(
    LIB_CONFIG.nvm_data_bytes as usize <= LIB_NVM_BYTES,
    "the library's heap fits its FRAM"
);

/// The in-process heap over storage `S`, or why it could not be made.
type Lib<'c, S> = Result<VnvHeap<'c, S>, vnv_heap::HeapError>;
/// The worst case's storage: the FRAM driver on the chip this task emulates.
type LibFram = Fram<EmuFram<MmioNvm>>;

/// A buffer aligned for the heap's cache (8 bytes).
#[repr(C, align(8))]
struct Aligned<const N: usize>([u8; N]);

/// The emulated FRAM's array: RAM of this task (checkpointed like the rest of it,
/// which makes no difference to what is measured).
static mut LIB_NVM: Aligned<LIB_NVM_BYTES> = Aligned([0; LIB_NVM_BYTES]);
/// The in-process heap's cache.
static mut LIB_CACHE: Aligned<LIB_CACHE_BYTES> = Aligned([0; LIB_CACHE_BYTES]);

fn main() {
    // SAFETY: the app maps WINDOW (its part of `heap-caches`) for this task, shared
    // with the heap service only, and nothing else in this task touches it.
    let heap = unsafe { Heap::new(HEAP, WINDOW) };
    // SAFETY: the app maps PINS (its page of `heap-pins`) for this task, shared with the
    // heap service only, and nothing else in this task touches it.
    let page = unsafe { PinPage::in_memory(PINS, 0) }.expect("heap-pins holds this task's page");
    // SAFETY: as above.
    let heap = unsafe { heap.with_pins(page) };
    // The best case's library reaches no storage: its array as plain memory, as it
    // was measured before the worst case (over the emulated chip, the same code
    // placed otherwise costs up to 21 instructions more at 256 B).
    with_library(|array| array, |lib| best_case(&heap, lib));
    with_library(
        |array| {
            let chip = EmuFram::new(LIB_PART, array, DEFAULT_CYCLES_PER_BYTE, spend_cycles)
                .expect("the array is the part's size");
            Fram::new(chip, LIB_PART)
        },
        |lib| worst_case(&heap, lib),
    );
    workload(&heap);
    println!("heapbench: done");
}

/// Why a figure could not be measured.
enum Failure {
    Service(HeapError),
    Library(vnv_heap::HeapError),
    Checkpoint(Error),
    /// The worst case found its object still cached.
    Resident,
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
            Failure::Resident => f.write_str("the object stayed cached"),
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
struct Fig<T = u32>(Result<T, Failure>);

impl<T: fmt::Display> fmt::Display for Fig<T> {
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

/// Runs `f` with an in-process heap over the storage `storage` makes of the emulated
/// FRAM's array; the heap lives only inside the call.
fn with_library<S: amber_nvm::Nvm>(
    storage: impl FnOnce(MmioNvm) -> S,
    f: impl FnOnce(&Lib<'_, S>),
) {
    // SAFETY: nothing else names LIB_NVM or LIB_CACHE, and the window and slice made
    // here end with this call (the heap that holds them is dropped before it returns,
    // and `main` makes the calls one after the other), so they are the only ways to
    // them while they exist. Both are statics (valid for the whole run, RAM of this
    // task, read and write); `Aligned` is `repr(C)` with the array at offset 0, so each
    // pointer covers exactly its array, and the cache is 8-aligned as the heap wants it.
    let (array, cache) = unsafe {
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
    f(&VnvHeap::new(storage(array), cache, LIB_CONFIG));
}

/// Part 1: six lines, `get_ref` and `get_mut` for each size.
fn best_case(heap: &Heap, lib: &Lib<'_, MmioNvm>) {
    sizes::<4>(heap, lib);
    sizes::<64>(heap, lib);
    sizes::<256>(heap, lib);
    releases(heap, lib);
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
fn sizes<const N: usize>(heap: &Heap, lib: &Lib<'_, MmioNvm>) {
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

/// Mean instructions of the release alone of a read pin and of a write pin of `h`
/// through the service: each pin is taken uncounted, then its release counted, for
/// [`ITERATIONS`] of each, after a checkpoint and a warm-up as in [`per_op`].
fn service_release<const N: usize>(heap: &Heap, h: &mut Handle<[u8; N]>) -> Result<Pins, Failure> {
    take_checkpoint()?;
    heap.get_ref(h)?.release()?;
    heap.get_mut(h)?.release()?;
    let (mut read, mut write) = (0u64, 0u64);
    for _ in 0..ITERATIONS {
        let g = heap.get_ref(h)?;
        let (n, r) = counted(|| g.release());
        r?;
        read += u64::from(n);
    }
    for _ in 0..ITERATIONS {
        let g = heap.get_mut(h)?;
        let (n, r) = counted(|| g.release());
        r?;
        write += u64::from(n);
    }
    Ok(mean_pair(read, write))
}

/// The same through the library, where a release is the guard's drop.
fn library_release<const N: usize>(
    lib: &VnvHeap<'_, MmioNvm>,
    h: &mut vnv_heap::Handle<'_, [u8; N]>,
) -> Result<Pins, Failure> {
    take_checkpoint()?;
    drop(lib.get_ref(h)?);
    drop(lib.get_mut(h)?);
    let (mut read, mut write) = (0u64, 0u64);
    for _ in 0..ITERATIONS {
        let g = lib.get_ref(h)?;
        read += u64::from(counted(|| drop(g)).0);
    }
    for _ in 0..ITERATIONS {
        let g = lib.get_mut(h)?;
        write += u64::from(counted(|| drop(g)).0);
    }
    Ok(mean_pair(read, write))
}

fn mean_pair(read: u64, write: u64) -> Pins {
    let n = u64::from(ITERATIONS);
    Pins((read / n) as u32, (write / n) as u32)
}

/// Part 1's release line, for 16-byte objects (a size of its own: another caller of
/// the 4-byte `get_ref` changes how the compiler inlines the library's, by 20
/// instructions, and so the figures of the sizes above).
const RELEASE_BYTES: usize = 16;

/// Part 1's release line.
fn releases(heap: &Heap, lib: &Lib<'_, MmioNvm>) {
    const WHAT: &str = "heapbench: release 16 B";
    if !counters_exact() {
        println!("{WHAT}: not measured (instret counts instructions only under -icount)");
        return;
    }
    let service = heap
        .alloc([0u8; RELEASE_BYTES])
        .map_err(Failure::from)
        .and_then(|mut h| {
            let r = service_release(heap, &mut h);
            heap.free(h)?;
            r
        });
    let library = match lib {
        Ok(lib) => lib
            .alloc([0u8; RELEASE_BYTES])
            .map_err(Failure::from)
            .and_then(|mut h| {
                let r = library_release(lib, &mut h);
                lib.free(h)?;
                r
            }),
        Err(e) => Err((*e).into()),
    };
    println!(
        "{WHAT}: service {}, library {} instructions (mean of {ITERATIONS})",
        Fig(service),
        Fig(library)
    );
}

/// Part 1's release figures of one side: read pin and write pin.
struct Pins(u32, u32);

impl fmt::Display for Pins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "read pin {} write pin {}", self.0, self.1)
    }
}

/// Instructions of `f` called once, less those of reading the counter.
fn counted<R>(f: impl FnOnce() -> R) -> (u32, R) {
    let t0 = instret();
    let base = instret().wrapping_sub(t0);
    let t0 = instret();
    let r = f();
    (instret().wrapping_sub(t0).saturating_sub(base), r)
}

/// Mean and largest of [`SWAP_INS`] counts.
#[derive(Default)]
struct Spread {
    sum: u64,
    max: u32,
}

impl Spread {
    fn add(&mut self, n: u32) {
        self.sum += u64::from(n);
        self.max = self.max.max(n);
    }
}

impl fmt::Display for Spread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "mean {} max {}",
            self.sum / u64::from(SWAP_INS),
            self.max
        )
    }
}

/// The service's swap-ins, and the FRAM bytes it read for the last one.
fn service_swap_in(heap: &Heap) -> Result<(Spread, u64), Failure> {
    let object = heap.alloc([0u8; SWAP_BYTES])?;
    let mut fillers = [const { None }; FILLERS];
    let mut r = Ok(());
    for f in &mut fillers {
        match heap.alloc([0u8; FILLER_BYTES]) {
            Ok(h) => *f = Some(h),
            Err(e) => {
                r = Err(e.into());
                break;
            }
        }
    }
    let measured = r.and_then(|()| swap_ins(heap, &object, &fillers));
    // Freed whatever happened, and the frees committed (a freed object's NVM is
    // taken again only once the free is), so that the workload after finds the heap
    // as the best case left it.
    for f in fillers.into_iter().flatten() {
        heap.free(f)?;
    }
    heap.free(object)?;
    take_checkpoint()?;
    measured
}

/// Filler rounds tried before a swap-in gives up on the object leaving the cache (the
/// cache's clock hand spares an object whose reference bit it has just cleared; one
/// more round evicts it).
const EVICT_TRIES: u32 = 4;

fn swap_ins<const F: usize>(
    heap: &Heap,
    object: &Handle<[u8; SWAP_BYTES]>,
    fillers: &[Option<Handle<[u8; FILLER_BYTES]>>; F],
) -> Result<(Spread, u64), Failure> {
    // The allocations were written through: commit them, so that the driver's ring
    // holds nothing pending over the reads (as in the best case).
    take_checkpoint()?;
    let mut spread = Spread::default();
    let mut read = 0;
    for _ in 0..SWAP_INS {
        let mut tries = 0;
        loop {
            for f in fillers.iter().flatten() {
                heap.get_ref(f)?.release()?;
            }
            let before = heap.stats()?;
            let (n, r) = counted(|| {
                let g = heap.get_ref(object)?;
                black_box(g[SWAP_BYTES - 1]);
                g.release()
            });
            r?;
            read = heap.stats()?.since(&before).bytes_read;
            if read >= SWAP_BYTES as u64 {
                spread.add(n);
                break;
            }
            tries += 1;
            if tries == EVICT_TRIES {
                return Err(Failure::Resident);
            }
        }
    }
    Ok((spread, read))
}

/// The library's swap-ins, and the wire bytes and transactions of the last one.
fn library_swap_in(lib: &VnvHeap<'_, LibFram>) -> Result<(Spread, u64, u64), Failure> {
    let object = lib.alloc([0u8; SWAP_BYTES])?;
    let mut spread = Spread::default();
    let mut wire = (0, 0);
    for _ in 0..SWAP_INS {
        lib.unload(&object)?;
        if lib.is_resident(&object) {
            return Err(Failure::Resident);
        }
        let before = lib.with_storage(|s| s.stats());
        let (n, r) = counted(|| lib.get_ref(&object).map(|g| black_box(g[SWAP_BYTES - 1])));
        r?;
        let after = lib.with_storage(|s| s.stats());
        wire = (
            after.wire_bytes - before.wire_bytes,
            after.transactions - before.transactions,
        );
        spread.add(n);
    }
    lib.free(object)?;
    Ok((spread, wire.0, wire.1))
}

/// Part 4: one line.
fn worst_case(heap: &Heap, lib: &Lib<'_, LibFram>) {
    const WHAT: &str = "heapbench: get_ref 256 B not cached (read from the FRAM)";
    if !counters_exact() {
        println!("{WHAT}: not measured (instret counts instructions only under -icount)");
        return;
    }
    let (service, read) = match service_swap_in(heap) {
        Ok((s, read)) => (Fig(Ok(s)), read),
        Err(e) => (Fig(Err(e)), 0),
    };
    let (library, wire, transactions) = match lib {
        Ok(lib) => match library_swap_in(lib) {
            Ok((s, wire, transactions)) => (Fig(Ok(s)), wire, transactions),
            Err(e) => (Fig(Err(e)), 0, 0),
        },
        Err(e) => (Fig(Err((*e).into())), 0, 0),
    };
    println!(
        "{WHAT}: service {service}, library {library} instructions ({SWAP_INS} each; for the last the service read {read} FRAM bytes, the library's driver put {wire} bytes on the wire in {transactions} transactions)"
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
