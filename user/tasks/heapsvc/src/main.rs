//! heapsvc: the heap service task. It hosts one vNV-Heap per client (badge 1 to
//! `CLIENTS` of its endpoint capability), each on its own area of the SPI FRAM reached
//! through the SPI driver (endpoint, slot 0, badge 1; the bytes go through its part of
//! the driver's memory `spi`, shared with the driver), and serves objects
//! to clients on its own endpoint (slot 1; protocol in `amber-heap-api`, logic in
//! `amber-heap-service`). Each heap is split: its arena (object bytes only) is that
//! client's part of the memory `heap-caches` (RAM the kernel does not checkpoint), shared
//! with that client alone, whose guards point straight into it; its metadata and this task's
//! state are ordinary task memory, checkpointed by the kernel.
//!
//! It is a persist callback (commit watch on the notification, slot 2): before every
//! checkpoint the kernel interrupts its `recv`, and it persists the heap, so the FRAM
//! as the checkpoint commits it is exactly the heap as the checkpointed memory knows
//! it. After a restore (the kernel runs a persist phase then too, before any client) it
//! reads every cached object back from the FRAM into its place in the arena (whose
//! contents are gone), so that guards the clients held across the checkpoint find their
//! bytes where they were. It keeps enough room in the driver's ring for one request and
//! one persist, and the ring bytes written since the last checkpoint under its pending
//! cap (24 KiB, or that reserve if it is larger), asking for a checkpoint itself before
//! either is crossed: a persist never meets a full ring (the driver would refuse its
//! write, and a failed persist ends the task), and no read meets more pending entries
//! than the instruction bounds assume. At start it measures the driver's calls and prints the
//! persist bound; every 200 persists it prints the largest ones. It answers `OP_STATS`
//! with its storage counters (what it wrote to the FRAM, and the part its persists
//! wrote).
//!
//! The heap's dirty limit is set when the task is built: the environment variable
//! `AMBER_HEAP_MAX_DIRTY` (decimal bytes; an app sets it with `env = {
//! AMBER_HEAP_MAX_DIRTY = "..." }` on this task), 1024 when unset. It must be at least
//! one 256-byte chunk and its overhead (272; checked at compile time) and at most what
//! the driver's ring allows (`max_dirty_for_ring`; checked at start: above it the task prints the largest and ends, exit code 4). Every
//! bound it prints and declares (persist, phase, ring reserve, pending cap) is
//! computed from the limit it was built with.
//!
//! The number of clients is set when the task is built: `AMBER_HEAP_CLIENTS` (1 or 2,
//! 2 when unset); client `i` (badge `i + 1`) has the arena at `i * 8 KiB` of
//! `heap-caches` (8 KiB, the part the app grants that client), 48 ids, 24 KiB of NVM
//! data at `i * 128 KiB`. Every bound covers all heaps: a persist phase persists each.
//!
//! Client `i`'s pin page (`amber_heap_api::page`: its fast pins of resident objects,
//! without IPC) is `i * PAGE_BYTES` into the app's memory `heap-pins` (RAM not
//! checkpointed, that part shared with that client alone); an app without it leaves
//! every pin to IPC.
//!
//! It must never keep a handle or guard of its own across a `recv` (the clients' pins
//! are the heap's state, which persist handles), never reply before a request's heap
//! work is done, and never go on after a failed persist (the checkpoint would commit a
//! heap that is not on the FRAM): its fault policy is "end".

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_heap_api::{PinPage, Status, CHUNK, OP_ALLOC};
use amber_heap_service::declared::{
    self, declared, heap_config, max_object, meta_bytes, ARENA_BYTES,
};
use amber_heap_service::{
    InstrModel, Overrun, PersistBound, PersistCost, PersistLog, PhaseBound, Service, SpiPort,
    SpiStorage, StorageStats,
};
use amber_spi_api::{ring_bytes, Client, SpiError};
use amber_user::abi::NO_SLOT;
use amber_user::{
    build_setting, checkpoint, counters_exact, exit, instret, memory, nvm_on_bus, persist_done,
    println, recv, reply, signalled, watch_restores, Error, IpcDesc, Memory, WatchFlags,
};
use core::cell::Cell;
use vnv_heap::Config;

amber_user::main!(main);

const SPI: u32 = 0;
const ENDPOINT: u32 = 1;
const NOTIFICATION: u32 = 2;
const RESTORED: u32 = 1 << 1;

/// The clients' arenas, one after the other in the app's memory `heap-caches`: client
/// `i`'s is `ARENA_BYTES * i` into it (the part of it the app grants that client).
const CACHES: Memory = memory!("HEAP_CACHES");
#[cfg(target_os = "none")]
const _: () = assert!(
    CACHES.len >= CLIENTS * ARENA_BYTES as usize,
    "heap-caches holds every client's arena"
);
/// The clients' pin pages, one after the other in the app's memory `heap-pins` (if it
/// has one).
const PINS: Memory = memory!("HEAP_PINS");
/// Clients (and heaps): `AMBER_HEAP_CLIENTS` at build time, else 2.
const CLIENTS: usize =
    build_setting(option_env!("AMBER_HEAP_CLIENTS"), declared::DEFAULT_CLIENTS) as usize;
const _: () = assert!(
    CLIENTS >= 1 && CLIENTS <= declared::MAX_CLIENTS as usize,
    "AMBER_HEAP_CLIENTS must be 1 or 2"
);
/// The FRAM behind the driver, the NVM's FRAM partition (`AMBER_NVM_FRAM_LEN`, which
/// cargo xtask sets from the NVM the app is built for: 512 KiB on QEMU's 4 MiB, 64 KiB
/// of the ESP32-C3's 512 KiB): this app gives the heaps all of it.
const FRAM_BYTES: u32 = build_setting(option_env!("AMBER_NVM_FRAM_LEN"), 512 * 1024);
/// The driver's ring (`AMBER_NVM_RING_LEN`, the NVM's ring area: 64 KiB on QEMU's
/// 4 MiB NVM, 16 KiB on the ESP32-C3's 512 KiB), less its header.
const RING_CAPACITY: u32 =
    amber_vring::layout::capacity_for(build_setting(option_env!("AMBER_NVM_RING_LEN"), 64 * 1024));
/// FRAM per heap: an equal share of the FRAM before the probe's KiB, in whole KiB, at
/// most 128 KiB.
const HEAP_STRIDE: u32 = {
    let share = (FRAM_BYTES - 1024) / CLIENTS as u32 / 1024 * 1024;
    if share < 128 * 1024 {
        share
    } else {
        128 * 1024
    }
};
/// Largest client object (`declared::max_object`).
const MAX_OBJECT: u32 = max_object(MAX_DIRTY);
/// The dirty limit: `AMBER_HEAP_MAX_DIRTY` at build time, else 1 KiB (see the file
/// doc).
const MAX_DIRTY: u32 = build_setting(
    option_env!("AMBER_HEAP_MAX_DIRTY"),
    declared::DEFAULT_MAX_DIRTY,
);
const _: () = assert!(
    MAX_DIRTY >= CHUNK as u32 + Config::DIRTY_OVERHEAD,
    "AMBER_HEAP_MAX_DIRTY must hold one dirty 256-byte chunk (272 bytes)"
);
/// Bytes of one heap's metadata buffer, in this task's memory.
const META_BYTES: u32 = meta_bytes(MAX_DIRTY);
/// Each heap (`declared::heap_config`: 48 ids, 24 KiB of data, the dirty limit, the
/// 8 KiB arena and its metadata). Client `i`'s is at FRAM address `i * HEAP_STRIDE`
/// ([`config`]); every bound is computed from this one.
const CONFIG: Config = heap_config(MAX_DIRTY);
const _: () = assert!(CLIENTS as u32 * HEAP_STRIDE <= FRAM_BYTES - 1024);

/// Client `i`'s heap configuration.
const fn config(i: usize) -> Config {
    Config {
        nvm_offset: i as u32 * HEAP_STRIDE,
        ..CONFIG
    }
}
/// Where the start-up measurement of driver calls writes: past the heap, never read.
const PROBE_ADDR: u32 = FRAM_BYTES - 1024;
/// The commit watch. The watched value is not used (commit bits 0); the watch makes
/// this task a persist callback and reports restores.
static mut WATCH: [u64; 2] = [0; 2];

/// The SPI driver, through `amber-spi-api` and this task's buffer shared with it
/// (badge 1: the app grants this task that buffer).
#[derive(Clone, Copy)]
struct Driver(Client);

impl Driver {
    fn new() -> Driver {
        // SAFETY: the app grants this task, and the driver alone, its part of `spi`
        // (read and write) with the SPI endpoint capability of its badge; only
        // `Driver`s use that buffer.
        Driver(unsafe { Client::new(SPI, memory!("SPI")) }.expect("a buffer of MAX_CHUNK"))
    }
}

impl SpiPort for Driver {
    fn write(&mut self, addr: u32, data: &[u8]) -> Result<u32, SpiError> {
        self.0.write(addr, data).map(|w| w.free)
    }

    fn read(&mut self, addr: u32, buf: &mut [u8]) -> Result<(), SpiError> {
        self.0.read(addr, buf)
    }
}

/// The heaps' metadata buffers (checkpointed task memory), 8-aligned.
static mut META: [[u64; META_BYTES as usize / 8]; CLIENTS] =
    [[0; META_BYTES as usize / 8]; CLIENTS];
const _: () = assert!(META_BYTES.is_multiple_of(8));

/// Client `i`'s metadata buffer and arena (its shared memory object).
///
/// # Safety
///
/// Call once per client, before its heap exists: the heap is the buffers' one user
/// in this task.
unsafe fn buffers(i: usize) -> (&'static mut [u8], &'static mut [u8]) {
    // SAFETY: the caller calls this once for `i < CLIENTS`, so the metadata buffer has
    // no other reference; its u64 words are `META_BYTES` initialized bytes.
    let meta = unsafe {
        let m = &mut *core::ptr::addr_of_mut!(META[i]);
        core::slice::from_raw_parts_mut(m.as_mut_ptr().cast::<u8>(), META_BYTES as usize)
    };
    let base = CACHES.base + i * ARENA_BYTES as usize;
    // SAFETY: the app grants this task [base, base + ARENA_BYTES) with read and write
    // (in `heap-caches`), mapped by PMP, shared with client i alone, which reaches it only
    // through the pins the heap hands out (the heap never holds a reference into it
    // either: it treats it as memory another task writes).
    let arena = unsafe { core::slice::from_raw_parts_mut(base as *mut u8, ARENA_BYTES as usize) };
    (meta, arena)
}

type Svc<'s> = Service<'static, SpiStorage<'s, Driver>>;

/// The services (one per client) and what this task keeps about its persists.
struct Heapsvc<'s> {
    svcs: [Svc<'s>; CLIENTS],
    stats: &'s Cell<StorageStats>,
    log: PersistLog,
    bound: PersistBound,
    /// The instructions declared to the kernel for this task's part of a persist phase,
    /// by kind of phase.
    phase: PhaseBound,
    /// Whether the phase under way is the one right after a restore (this task
    /// reloaded in it).
    restore_phase: bool,
    /// Ring bytes one request and one persist may write (see `serve`).
    reserve: u32,
    /// The most ring bytes let wait in the driver (see `declared::PENDING_CAP_MIN`).
    pending_cap: u32,
    /// `StorageStats::ring_written` when the last checkpoint was taken: the driver has
    /// applied (or will, before it serves the next call) everything written before.
    ring_at_checkpoint: u64,
    /// Checkpoints this task asked for because the ring was getting full.
    own_checkpoints: u64,
    /// The last persist's cost and what of it overran, not yet reported.
    unreported: Option<(PersistCost, Overrun)>,
}

fn main() {
    if CONFIG.nvm_end().is_none_or(|end| end > HEAP_STRIDE) {
        println!(
            "heapsvc: a heap needs {:?} bytes of FRAM, more than its share of {HEAP_STRIDE} of the {FRAM_BYTES} (AMBER_NVM_FRAM_LEN)",
            CONFIG.nvm_end()
        );
        exit(4);
    }
    // The driver's calls cost more where every ring byte crosses the kernel's SPI bus.
    let model = InstrModel::for_bus(nvm_on_bus());
    let d = match declared(MAX_DIRTY, CLIENTS as u32, RING_CAPACITY, &model) {
        Ok(d) => d,
        Err(largest) => {
            println!(
                "heapsvc: dirty limit {MAX_DIRTY} bytes needs a ring reserve above the driver's ring of {RING_CAPACITY} bytes; the largest limit it allows is {largest} (AMBER_HEAP_MAX_DIRTY)"
            );
            exit(4);
        }
    };
    // SAFETY: one thread per task; the kernel writes WATCH[1] only while this task is
    // stopped for a checkpoint, and this task never reads it.
    let watch = unsafe { &mut *core::ptr::addr_of_mut!(WATCH) };
    // First, so that no checkpoint is taken while the heap is half formatted: from now
    // on the kernel waits for this task's persist.
    watch_restores(watch, NOTIFICATION, RESTORED, WatchFlags::PERSIST_CALLBACK)
        .expect("commit watch");
    let probed = measure_driver(Driver::new());
    let stats = Cell::new(StorageStats {
        ring_written: probed,
        ..StorageStats::default()
    });
    let svcs = core::array::from_fn(|i| {
        let storage = SpiStorage::new(Driver::new(), FRAM_BYTES, &stats);
        // SAFETY: called once per client, before its heap exists.
        let (meta, arena) = unsafe { buffers(i) };
        match Service::format(storage, meta, arena, config(i), MAX_OBJECT) {
            Ok(mut s) => {
                // SAFETY: the app grants this task `heap-pins` (read and write), client
                // i's page of it shared with client i alone; the service is the page's
                // one user in this task, through volatile accesses only.
                if let Some(page) = unsafe { PinPage::in_memory(PINS, i) } {
                    s.attach_pins(page);
                }
                s
            }
            Err(e) => {
                println!("heapsvc: cannot format heap {i}: {e}");
                exit(1);
            }
        }
    });
    let mut h = Heapsvc {
        svcs,
        stats: &stats,
        log: PersistLog::default(),
        bound: d.persist,
        phase: d.phase,
        restore_phase: false,
        reserve: d.reserve,
        pending_cap: d.pending_cap,
        ring_at_checkpoint: 0,
        own_checkpoints: 0,
        unreported: None,
    };
    // The instruction bounds are printed only where instructions are counted exactly:
    // next to a clock's figures they would compare nothing.
    let exact = counters_exact();
    println!(
        "heapsvc: persist bound: {} bytes, {} storage writes{}",
        h.bound.bytes,
        h.bound.writes,
        Instructions(exact.then_some(h.bound.instructions), ", ")
    );
    println!(
        "heapsvc: {} heaps (one per client), each {} object ids, {} KiB of NVM data, {} KiB arena shared with its client and {} bytes of metadata, dirty limit {} bytes; ring reserve {} bytes, at most {} pending{}",
        CLIENTS,
        CONFIG.max_objects,
        CONFIG.nvm_data_bytes / 1024,
        ARENA_BYTES / 1024,
        META_BYTES,
        CONFIG.max_dirty_bytes,
        h.reserve,
        h.pending_cap,
        Instructions(exact.then_some(h.phase.serving), "; persist phase bound ")
    );
    if exact {
        // The QEMU bound test reads both.
        println!(
            "heapsvc: persist phase bounds: {} instructions serving clients, {} after a restore",
            h.phase.serving, h.phase.restore
        );
    }
    // The formatted heap reaches the FRAM with the next checkpoint, whose persist the
    // first `recv` is asked for (at once, if the kernel asked while the heap was being
    // formatted).
    h.serve();
}

/// An instruction figure after `lead`, or nothing where instructions are not counted
/// exactly (`amber_user::counters_exact`).
struct Instructions(Option<u64>, &'static str);

impl core::fmt::Display for Instructions {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{}{n} instructions", self.1),
            None => Ok(()),
        }
    }
}

impl Heapsvc<'_> {
    fn serve(&mut self) -> ! {
        let mut input = [0u8; CHUNK];
        let mut out = [0u8; CHUNK];
        loop {
            self.reload_if_restored();
            let st = self.stats.get();
            let pending = st.ring_written - self.ring_at_checkpoint;
            if st.ring_free.is_some_and(|free| free < self.reserve)
                || pending + u64::from(self.reserve) > u64::from(self.pending_cap)
            {
                // Room for one more request and the persist after it, no more: take a
                // checkpoint now, which makes the whole ring visible and lets the
                // driver apply and drop it.
                self.own_checkpoints += 1;
                self.checkpoint();
            }
            // No request carries bytes; the buffer only takes (and drops) what a
            // client sends anyway, so that such a message cannot make this Recv fail.
            let mut d = IpcDesc {
                send_cap: NO_SLOT,
                recv_ptr: input.as_mut_ptr() as usize as u32,
                recv_len: input.len() as u32,
                recv_slot: NO_SLOT,
                ..IpcDesc::default()
            };
            match recv(ENDPOINT, Some(&mut d)) {
                Err(Error::Interrupted) => {
                    self.persist();
                    if persist_done(self.declared()).is_ok() {
                        self.checkpointed();
                    }
                    self.report();
                }
                Err(e) => println!("heapsvc: recv failed: {e}"),
                Ok((words, badge)) => {
                    let index = badge.checked_sub(1).map(|i| i as usize);
                    let waits = |s: &Svc| s.ids_wait_for_persist();
                    if words[0] == OP_ALLOC
                        && index.and_then(|i| self.svcs.get(i)).is_some_and(waits)
                    {
                        // This allocation would find every id taken, some only by
                        // objects freed since the last persist: the checkpoint's
                        // persist gives them back first (the caller waits for its
                        // reply meanwhile; after a restore to this checkpoint the
                        // heaps are read back before the request is served).
                        self.checkpoint();
                        self.reload_if_restored();
                    }
                    let (back, len) = match index.and_then(|i| self.svcs.get_mut(i)) {
                        Some(svc) => svc.handle(words, &mut out),
                        None => ([Status::BadRequest as u32, 0, 0, 0], 0),
                    };
                    if back[0] == Status::Failed as u32 {
                        self.report_failure();
                    }
                    let mut r = IpcDesc {
                        send_ptr: out.as_ptr() as usize as u32,
                        send_len: len as u32,
                        send_cap: NO_SLOT,
                        recv_slot: NO_SLOT,
                        ..IpcDesc::default()
                    };
                    let _ = reply(back, Some(&mut r));
                }
            }
        }
    }

    /// The bound to declare for the phase under way (and the next one is another).
    fn declared(&mut self) -> u32 {
        let b = if core::mem::take(&mut self.restore_phase) {
            self.phase.restore
        } else {
            self.phase.serving
        };
        u32::try_from(b).unwrap_or(u32::MAX)
    }

    /// Reloads the heaps if the kernel restored a checkpoint since this task last
    /// looked. It must come before anything else touches a heap after a restore: the
    /// restored task resumes wherever its last `persist_done` returned (in `serve`'s
    /// loop or in [`Self::checkpoint`]), and the first thing the restore's persist
    /// phase asks of it is a persist, which would write the empty arenas to the FRAM.
    fn reload_if_restored(&mut self) {
        if signalled(NOTIFICATION, RESTORED) {
            self.restore_phase = true;
            self.reload();
        }
    }

    /// After a restore: the arenas are gone, the heaps' metadata and the FRAM are as
    /// the restored checkpoint's persist left them; read every cached object back into
    /// its place (no client runs before this task's `persist_done`).
    fn reload(&mut self) {
        // The driver reopened its ring: nothing of it is pending any more.
        self.checkpointed();
        let (mut live, mut cached) = (0, 0);
        for (i, svc) in self.svcs.iter_mut().enumerate() {
            if let Err(e) = svc.reload() {
                println!("heapsvc: cannot reload heap {i} after a restore: {e}");
                exit(2);
            }
            if let Some(h) = svc.heap() {
                live += h.live_count();
                cached += h.resident_count();
            }
        }
        // The QEMU power-failure test waits for "heapsvc: reloaded after restore".
        println!(
            "heapsvc: reloaded after restore: {} heaps, {live} objects, {cached} cached objects read back in place",
            self.svcs.len()
        );
    }

    /// Persists the heap (first reloading it, if this is the restore's persist phase)
    /// and measures it (its instructions only where they are counted exactly, else 0);
    /// a failed persist ends the task (see the file doc). Prints nothing else: the
    /// kernel is waiting (see [`Self::report`]).
    fn persist(&mut self) {
        self.reload_if_restored();
        let exact = counters_exact();
        let before = self.stats.get();
        // A board without an exact counter may have no `instret` for tasks at all.
        let start = if exact { instret() } else { 0 };
        let mut r = Ok(());
        for svc in &mut self.svcs {
            r = r.and(svc.persist());
        }
        let instructions = if exact {
            instret().wrapping_sub(start).into()
        } else {
            0
        };
        let d = self.stats.get().since(&before);
        let cost = PersistCost {
            bytes: d.bytes_written,
            writes: d.writes,
            instructions,
        };
        let over = self.log.record(cost, &self.bound);
        self.unreported = Some((cost, over));
        if let Err(e) = r {
            println!("heapsvc: persist failed: {e}");
            self.report_failure();
            exit(3);
        }
    }

    /// Prints what the last persist overran, and the summary every 200 persists.
    fn report(&mut self) {
        let Some((cost, over)) = self.unreported.take() else {
            return;
        };
        let b = self.bound;
        if over.storage {
            println!(
                "heapsvc: VIOLATION persist wrote {} bytes in {} writes, above its bound of {} bytes in {} writes",
                cost.bytes, cost.writes, b.bytes, b.writes
            );
        }
        if over.instructions {
            println!(
                "heapsvc: persist took {} instructions, above the cost model's {} ({} bytes, {} writes)",
                cost.instructions, b.instructions, cost.bytes, cost.writes
            );
        }
        if self.log.report_due() {
            let m = self.log.max;
            let exact = counters_exact();
            println!(
                "heapsvc: {} persists, max persist {} bytes, {} writes{} (bound {}, {}{}); {} checkpoints asked for by the ring",
                self.log.count,
                m.bytes,
                m.writes,
                Instructions(exact.then_some(m.instructions), ", "),
                b.bytes,
                b.writes,
                Instructions(exact.then_some(b.instructions), ", "),
                self.own_checkpoints
            );
        }
    }

    /// Asks for a checkpoint. The kernel stops every client first and answers
    /// `Interrupted`: this task persists with the world stopped (so no client writes
    /// into a window between the persist and the checkpoint) and `PersistDone` brings
    /// the checkpoint, as in every persist phase.
    fn checkpoint(&mut self) {
        match checkpoint() {
            Err(Error::Interrupted) => {
                self.persist();
                match persist_done(self.declared()) {
                    Ok(()) => self.checkpointed(),
                    Err(e) => println!("heapsvc: persist done refused: {e}"),
                }
            }
            Ok(()) => self.checkpointed(),
            Err(e) => println!("heapsvc: checkpoint failed: {e}"),
        }
        self.report();
    }

    /// A checkpoint covers every write so far: the driver applies and drops them
    /// before it serves its next call, so nothing is pending and the ring's free space
    /// is unknown (all of it, less what others wrote) until the next write reply.
    fn checkpointed(&mut self) {
        let st = self.stats.get();
        self.ring_at_checkpoint = st.ring_written;
        self.stats.set(StorageStats {
            ring_free: None,
            ..st
        });
    }

    fn report_failure(&mut self) {
        for svc in &mut self.svcs {
            if let Some(e) = svc.take_failure() {
                println!("heapsvc: request failed: {e}");
            }
        }
        if let Some(e) = self.stats.get().failure {
            println!("heapsvc: the SPI driver refused a call: {e:?}");
        }
    }
}

/// Measures single driver calls with `instret` (the cheapest of four of each, so a
/// timer tick does not count) and prints them where `instret` is exact: the figures behind
/// `InstrModel::QEMU_SPIDRV` (and `QEMU_SPIDRV_ON_BUS` on the SPI bus). Reads come first, with the ring empty; writes go to a
/// probe range past the heap; last, what each pending entry adds to a read (the
/// driver lays every pending entry over what it reads): 20 one-byte entries elsewhere,
/// 20 one-byte entries over an 8-byte read, 20 256-byte entries over a 256-byte read.
/// Returns the ring bytes the probe writes took.
fn measure_driver(mut spi: Driver) -> u64 {
    // A board without an exact counter may have no `instret` for tasks at all (the
    // ESP32-C3): there the calls are made, for the ring bytes they take, and not timed.
    let exact = counters_exact();
    fn timed(exact: bool, mut f: impl FnMut()) -> u32 {
        if !exact {
            f();
            return 0;
        }
        (0..4)
            .map(|_| {
                let t = instret();
                f();
                instret().wrapping_sub(t)
            })
            .min()
            .unwrap_or(0)
    }
    let data = [0x5Au8; CHUNK];
    let (read_at, write_at) = (PROBE_ADDR, PROBE_ADDR + 512);
    // Each closure works on its own copy of the driver handle (one buffer, one call
    // at a time).
    let mut reader = spi;
    let mut read = move |len: usize| {
        let mut buf = [0u8; CHUNK];
        timed(exact, || {
            let _ = reader.read(read_at, &mut buf[..len]);
        })
    };
    let (r8, r256) = (read(8), read(CHUNK));
    let (w16, w256) = (
        timed(exact, || {
            let _ = spi.write(write_at, &data[..16]);
        }),
        timed(exact, || {
            let _ = spi.write(write_at, &data[..CHUNK]);
        }),
    );
    // What 20 more pending entries of `len` bytes at `at` add to a read of `read_len`.
    let mut per_entry = |at: u32, len: usize, read_len: usize| {
        let before = read(read_len);
        for _ in 0..20 {
            let _ = spi.write(at, &data[..len]);
        }
        read(read_len).saturating_sub(before) / 20
    };
    let elsewhere = per_entry(write_at, 1, 8);
    let small = per_entry(read_at, 1, 8);
    let large = per_entry(read_at, CHUNK, CHUNK);
    if counters_exact() {
        println!(
            "heapsvc: driver calls measured: write 16 B {w16}, write 256 B {w256}, read 8 B {r8}, read 256 B {r256}; each pending entry adds to a read: 1 B elsewhere +{elsewhere}, 1 B over it +{small}, 256 B over it +{large} instructions"
        );
    } else {
        println!(
            "heapsvc: driver calls not measured: instret counts instructions only under -icount"
        );
    }
    u64::from(
        4 * (ring_bytes(16) + ring_bytes(CHUNK as u32))
            + 40 * ring_bytes(1)
            + 20 * ring_bytes(CHUNK as u32),
    )
}
