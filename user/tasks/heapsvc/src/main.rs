//! heapsvc: the heap service task. It hosts a vNV-Heap whose storage is the SPI FRAM
//! reached through the SPI driver (endpoint, slot 0) and whose cache is the "heap"
//! memory object (slot 3: RAM the kernel does not checkpoint), and serves objects to
//! clients on its own endpoint (slot 1; protocol in `amber-heap-api`, logic in
//! `amber-heap-service`). The heap's metadata and this task's state are ordinary task
//! memory, checkpointed by the kernel.
//!
//! It is a persist callback (commit watch on the notification, slot 2): before every
//! checkpoint the kernel interrupts its `recv`, and it persists the heap, so the FRAM
//! as the checkpoint commits it is exactly the heap as the checkpointed memory knows
//! it. After a restore it reopens the heap from the FRAM (the cache's contents are
//! gone). It keeps enough room in the driver's ring for one request and one persist,
//! and the ring bytes written since the last checkpoint under `PENDING_CAP`, asking
//! for a checkpoint itself before either is crossed: a persist never meets a full ring
//! (the driver would ask for a checkpoint in the middle of one), and no read walks
//! more pending entries than the instruction bounds assume. At start it measures the
//! driver's calls and prints the persist bound; every 200 persists it prints the
//! largest ones.
//!
//! It must never keep a handle or guard across a `recv` (a persist would find it
//! pinned), never reply before a request's heap work is done, and never go on after a
//! failed persist (the checkpoint would commit a heap that is not on the FRAM): its
//! fault policy is "end".

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_heap_api::{Status, CHUNK};
use amber_heap_service::{
    persist_bound, phase_bound, ring_reserve, InstrModel, Overrun, PersistBound, PersistCost,
    PersistLog, Service, SpiPort, SpiStorage, StorageStats,
};
use amber_spi_api::{ring_bytes, SpiError};
use amber_user::abi::NO_SLOT;
use amber_user::{
    checkpoint, commit_watch, exit, instret, persist_done, poll, println, recv, reply, Error,
    IpcDesc, WatchFlags,
};
use core::cell::Cell;
use vnv_heap::Config;

amber_user::main!(main);

const SPI: u32 = 0;
const ENDPOINT: u32 = 1;
const NOTIFICATION: u32 = 2;
const RESTORED: u32 = 1 << 1;

/// The "heap" memory object of the app description (slot 3).
const CACHE_BASE: usize = 0x8700_0000;
const CACHE_BYTES: u32 = 8 * 1024;
/// The MB85RS4MT behind the driver: this app gives the heap the whole chip.
const FRAM_BYTES: u32 = 512 * 1024;
/// Largest client object: four 256-byte chunks.
const MAX_OBJECT: u32 = 1024;
/// The heap: 96 ids, 48 KiB of data (each object kept twice) from FRAM address 0, a
/// dirty limit of 1 KiB (which bounds a persist).
const CONFIG: Config = Config {
    max_dirty_bytes: 1024,
    max_objects: 96,
    nvm_offset: 0,
    nvm_data_bytes: 48 * 1024,
    cache_bytes: CACHE_BYTES,
};
/// Where the start-up measurement of driver calls writes: past the heap, never read.
const PROBE_ADDR: u32 = FRAM_BYTES - 1024;
/// The most ring bytes this task lets wait in the driver (written since the last
/// checkpoint): every read walks them, so the instruction bounds assume this many.
const PENDING_CAP: u32 = 16 * 1024;

/// The commit watch. The watched value is not used (commit bits 0); the watch makes
/// this task a persist callback and reports restores.
static mut WATCH: [u64; 2] = [0; 2];

/// The SPI driver, through `amber-spi-api`.
struct Driver;

impl SpiPort for Driver {
    fn write(&mut self, addr: u32, data: &[u8]) -> Result<u32, SpiError> {
        amber_spi_api::write(SPI, addr, data).map(|w| w.free)
    }

    fn read(&mut self, addr: u32, buf: &mut [u8]) -> Result<(), SpiError> {
        amber_spi_api::read(SPI, addr, buf)
    }
}

/// The cache buffer: the heap memory object.
///
/// # Safety
///
/// The caller must hold no other reference to the buffer: call it only when no heap
/// (the one user of the buffer) exists.
unsafe fn cache() -> &'static mut [u8] {
    // SAFETY: the app grants this task [CACHE_BASE, CACHE_BASE + CACHE_BYTES) with read
    // and write (slot 3), mapped by PMP, and no other task; the caller guarantees there
    // is no other reference to it.
    unsafe { core::slice::from_raw_parts_mut(CACHE_BASE as *mut u8, CACHE_BYTES as usize) }
}

type Svc<'s> = Service<'static, SpiStorage<'s, Driver>>;

/// The service and what it keeps about its persists.
struct Heapsvc<'s> {
    svc: Svc<'s>,
    stats: &'s Cell<StorageStats>,
    log: PersistLog,
    bound: PersistBound,
    /// The instructions declared to the kernel for this task's part of a persist phase.
    phase: u32,
    /// Ring bytes one request and one persist may write (see `serve`).
    reserve: u32,
    /// `StorageStats::ring_written` when the last checkpoint was taken: the driver has
    /// applied (or will, before it serves the next call) everything written before.
    ring_at_checkpoint: u64,
    /// Checkpoints this task asked for because the ring was getting full.
    own_checkpoints: u64,
    /// The last persist's cost and what of it overran, not yet reported.
    unreported: Option<(PersistCost, Overrun)>,
}

fn main() {
    // SAFETY: one thread per task; the kernel writes WATCH[1] only while this task is
    // stopped for a checkpoint, and this task never reads it.
    let watch = unsafe { &mut *core::ptr::addr_of_mut!(WATCH) };
    // First, so that no checkpoint is taken while the heap is half formatted: from now
    // on the kernel waits for this task's persist.
    commit_watch(
        watch.as_ptr() as usize as u32,
        NOTIFICATION,
        0,
        RESTORED,
        WatchFlags::PERSIST_CALLBACK,
    )
    .expect("commit watch");
    let probed = measure_driver();
    let stats = Cell::new(StorageStats {
        ring_written: probed,
        ..StorageStats::default()
    });
    let storage = SpiStorage::new(Driver, FRAM_BYTES, &stats);
    // SAFETY: no heap exists yet, so nothing else refers to the cache.
    let svc = match Service::format(storage, unsafe { cache() }, CONFIG, MAX_OBJECT) {
        Ok(s) => s,
        Err(e) => {
            println!("heapsvc: cannot format the heap: {e}");
            exit(1);
        }
    };
    let model = InstrModel::QEMU_SPIDRV;
    let mut h = Heapsvc {
        svc,
        stats: &stats,
        log: PersistLog::default(),
        bound: persist_bound(&CONFIG, PENDING_CAP, &model),
        phase: u32::try_from(phase_bound(&CONFIG, MAX_OBJECT, PENDING_CAP, &model))
            .unwrap_or(u32::MAX),
        reserve: ring_reserve(&CONFIG, MAX_OBJECT),
        ring_at_checkpoint: 0,
        own_checkpoints: 0,
        unreported: None,
    };
    println!(
        "heapsvc: persist bound: {} bytes, {} storage writes, {} instructions",
        h.bound.bytes, h.bound.writes, h.bound.instructions
    );
    println!(
        "heapsvc: {} object ids, {} KiB of NVM data, {} KiB cache, dirty limit {} bytes; ring reserve {} bytes, at most {} pending; persist phase bound {} instructions",
        CONFIG.max_objects,
        CONFIG.nvm_data_bytes / 1024,
        CACHE_BYTES / 1024,
        CONFIG.max_dirty_bytes,
        h.reserve,
        PENDING_CAP,
        h.phase
    );
    // The formatted heap reaches the FRAM with the next checkpoint, whose persist the
    // first `recv` is asked for (at once, if the kernel asked while the heap was being
    // formatted).
    h.serve();
}

impl Heapsvc<'_> {
    fn serve(&mut self) -> ! {
        let mut input = [0u8; CHUNK];
        let mut out = [0u8; CHUNK];
        loop {
            if poll(NOTIFICATION).is_ok_and(|bits| bits & RESTORED != 0) {
                self.reopen();
            }
            let st = self.stats.get();
            let pending = st.ring_written - self.ring_at_checkpoint;
            if st.ring_free.is_some_and(|free| free < self.reserve)
                || pending + u64::from(self.reserve) > u64::from(PENDING_CAP)
            {
                // Room for one more request and the persist after it, no more: take a
                // checkpoint now, which makes the whole ring visible and lets the
                // driver apply and drop it.
                self.own_checkpoints += 1;
                self.persist();
                self.checkpoint();
            }
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
                    if persist_done(self.phase).is_ok() {
                        self.checkpointed();
                    }
                    self.report();
                }
                Err(e) => println!("heapsvc: recv failed: {e}"),
                Ok((words, badge)) => {
                    let n = (d.got_len as usize).min(CHUNK);
                    let (back, len) = self.svc.handle(words, badge, &input[..n], &mut out);
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

    /// After a restore: the cache is gone and the FRAM holds the heap of the persist
    /// made right before the restored checkpoint; open it from there.
    fn reopen(&mut self) {
        // The driver reopened its ring: nothing of it is pending any more.
        self.checkpointed();
        let fresh_cache = || {
            // SAFETY: `reopen` calls this after dropping the old heap, the buffer's only
            // user.
            unsafe { cache() }
        };
        match self.svc.reopen(fresh_cache) {
            Ok(()) => {
                if let Some(h) = self.svc.heap() {
                    println!(
                        "heapsvc: reopened after restore: {} objects, epoch {}",
                        h.live_count(),
                        h.committed_epoch()
                    );
                }
            }
            Err(e) => {
                println!("heapsvc: cannot reopen the heap after a restore: {e}");
                exit(2);
            }
        }
    }

    /// Persists the heap and measures it; a failed persist ends the task (see the file
    /// doc). Prints nothing else: the kernel is waiting (see [`Self::report`]).
    fn persist(&mut self) {
        let before = self.stats.get();
        let start = instret();
        let r = self.svc.persist();
        let instructions = instret().wrapping_sub(start);
        let d = self.stats.get().since(&before);
        let cost = PersistCost {
            bytes: d.bytes_written,
            writes: d.writes,
            instructions: instructions.into(),
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
            println!(
                "heapsvc: {} persists, max persist {} bytes, {} writes, {} instructions (bound {}, {}, {}); {} checkpoints asked for by the ring",
                self.log.count,
                m.bytes,
                m.writes,
                m.instructions,
                b.bytes,
                b.writes,
                b.instructions,
                self.own_checkpoints
            );
        }
    }

    /// Gets a checkpoint right after a persist, then reports the persist made for it.
    ///
    /// If the kernel began a persist phase while this task persisted, this task is
    /// asked to persist: `PersistDone` ends that phase, declaring this task's bound
    /// for the power-failure report, and its checkpoint is the one wanted (a
    /// `Checkpoint` call would end it too, but declares no bound). Otherwise
    /// (`WrongState`) it asks for a checkpoint.
    fn checkpoint(&mut self) {
        let r = match persist_done(self.phase) {
            Ok(()) => Ok(()),
            Err(_) => checkpoint(),
        };
        match r {
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
        if let Some(e) = self.svc.take_failure() {
            println!("heapsvc: request failed: {e}");
        }
        if let Some(e) = self.stats.get().failure {
            println!("heapsvc: the SPI driver refused a call: {e:?}");
        }
    }
}

/// Measures single driver calls with `instret` (the cheapest of four of each, so a
/// timer tick does not count) and prints them: the figures behind
/// `InstrModel::QEMU_SPIDRV`. Reads come first, with the ring empty; writes go to a
/// probe range past the heap; last, 20 one-byte writes over the read range show what
/// each pending entry adds to a read (the driver lays every pending entry over what it
/// reads, checking the checksum of each that overlaps). Returns the ring bytes the
/// probe writes took.
fn measure_driver() -> u64 {
    fn cheapest(mut f: impl FnMut()) -> u32 {
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
    let mut buf = [0u8; CHUNK];
    let (read_at, write_at) = (PROBE_ADDR, PROBE_ADDR + 512);
    let mut read = |len: usize| {
        cheapest(|| {
            let _ = amber_spi_api::read(SPI, read_at, &mut buf[..len]);
        })
    };
    let (r8, r256) = (read(8), read(CHUNK));
    let write = |len: usize| {
        cheapest(|| {
            let _ = amber_spi_api::write(SPI, write_at, &data[..len]);
        })
    };
    let (w16, w256) = (write(16), write(CHUNK));
    let far = read(8);
    for _ in 0..20 {
        let _ = amber_spi_api::write(SPI, read_at, &data[..1]);
    }
    let per_entry = read(8).saturating_sub(far) / 20;
    println!(
        "heapsvc: driver calls measured: write 16 B {w16}, write 256 B {w256}, read 8 B {r8}, read 256 B {r256}, each pending 1-byte entry over a read +{per_entry} instructions"
    );
    u64::from(4 * (ring_bytes(16) + ring_bytes(CHUNK as u32)) + 20 * ring_bytes(1))
}
