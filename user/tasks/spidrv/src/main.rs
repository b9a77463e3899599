//! spidrv: the SPI FRAM driver task. It owns the FRAM (the NVM's FRAM partition, the
//! eternal area `fram`: on QEMU's memory-mapped NVM an MB85RS part emulated over it)
//! and its request ring (the eternal area `ring`). Its memory `spi`, RAM the kernel
//! never checkpoints, holds one buffer per client, shared with that client, and an
//! index of the ring's pending entries (emptied at every open of the ring, so a read
//! scans it instead of the ring's records). Where each lies the app description decides (`amber_user::memory!`).
//! Clients write and read by IPC (endpoint, slot 0; the badge names the client and its
//! buffer; protocol in `amber-spi-api`: a write whose bytes do not match its request's
//! check word, because a restore lost the shared buffer while the request was in
//! flight, is refused and sent again). A write is
//! appended to the ring and reaches the chip only once the checkpoint that covers it
//! has committed: the kernel's commit watch (notification, slot 1) reports the ring's
//! writer index as it was in each committed checkpoint, and the driver applies the ring
//! up to it. After a restore the driver reopens the ring at its restored writer index:
//! entries past it are dropped, committed ones not yet on the chip are replayed. A full
//! ring refuses the write (`SpiError::Full`: the client asks for a checkpoint and
//! writes again); nothing is ever dropped. Its fault policy must be "end": a restart
//! would format the ring.
//!
//! Where the kernel's own NVM is on the SPI bus (`amber_user::nvm_on_bus`), the driver
//! reaches the ring and the FRAM partition only through the kernel (`NvmRead` and
//! `NvmWrite` on its eternal areas' capabilities, `store.rs`): the kernel then drives
//! the one chip for everyone, one transfer at a time, and counts these stores in one
//! sequence with its own (so `amber.cut` can cut them); on memory-mapped NVM it loads
//! and stores the ring and emulates the FRAM chip itself, except while the kernel
//! numbers NVM stores for an injected cut (`amber_user::nvm_stores_numbered`): then it
//! goes through the kernel as on the bus, so that a cut can fall on its stores too (the
//! same bytes reach the same places either way; a SIGKILL cuts the direct path).
//!
//! It is a persist callback that persists nothing: asked to persist, it says
//! `PersistDone` only at the top of its loop, between requests, so that every
//! checkpoint finds the ring's writer index (the commit watch's counter) between
//! requests (docs/nvm-buses.md). It must never touch the ring or the FRAM outside a
//! request once it has registered.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_format::Region;
use amber_fram::{AddressWidth, EmuFram, Fram, Part};
use amber_nvm::MmioNvm;
use amber_spi_api::{
    buffer_offset, payload_check, SpiError, INDEX_OFFSET, MAX_CHUNK, OP_READ, OP_WRITE,
};
use amber_user::abi::NO_SLOT;
use amber_user::{
    build_setting, commit_watch, counters_exact, memory, nvm_on_bus, nvm_stores_numbered,
    persist_done, poll, println, recv, reply, Error, IpcDesc, Memory, WatchFlags,
};
use amber_vring::{IndexedRing, PendingEntry, Ring, RingError, RingIndex};

mod store;

use amber_nvm::Either;
use store::{Grant, Store};

amber_user::main!(main);

const ENDPOINT: u32 = 0;
const NOTIFICATION: u32 = 1;
/// The capability slots of the eternal areas `ring` and `fram` (the app's cap order).
const RING_SLOT: u32 = 2;
const FRAM_SLOT: u32 = 3;
const COMMITTED: u32 = 1 << 0;
const RESTORED: u32 = 1 << 1;
/// The NVM's ring area and FRAM partition, and the driver's memory `spi`.
const RING: Memory = memory!("RING");
const FRAM: Memory = memory!("FRAM");
const SPI: Memory = memory!("SPI");
/// The FRAM: an MB85RS-class part of the FRAM partition's size (the MB85RS4MT's 512
/// KiB on a 4 MiB NVM, 64 KiB of the ESP32-C3's MB85RS4MT).
const FRAM_PART: Part = match Part::new(FRAM.len as u32, AddressWidth::Three) {
    Ok(part) => part,
    // Refused on the device below; a host build has no areas.
    Err(_) => Part::MB85RS4MT,
};
/// The pending-entry index, in `spi` after the clients' buffers (`amber-spi-api`): one
/// 12-byte slot per smallest record of the ring (28 KiB for a 64 KiB ring).
const INDEX_SLOTS: usize =
    SPI.len.saturating_sub(INDEX_OFFSET) / core::mem::size_of::<PendingEntry>();
#[cfg(target_os = "none")]
const _: () = {
    assert!(
        INDEX_SLOTS >= IndexedRing::slots_for(amber_vring::layout::capacity_for(RING.len as u32)),
        "spi holds every buffer and an index of every entry the ring can hold"
    );
    assert!(
        FRAM_PART.size() as usize == FRAM.len,
        "the fram area is a power of two an MB85RS part can have"
    );
};
/// Cycles the emulated chip spends per byte on the wire: `AMBER_SPI_CYCLES_PER_BYTE`
/// at build time (an app's `env` on this task), else 32 (8 bits at 40 MHz with a
/// 160 MHz CPU).
const CYCLES_PER_BYTE: u32 = build_setting(option_env!("AMBER_SPI_CYCLES_PER_BYTE"), 32);
/// Print the bus counters after every this many applied commits.
const REPORT_EVERY: u64 = 1000;

/// The commit watch: [ring writer index, committed writer index (kernel-written)].
static mut WATCH: [u64; 2] = [0; 2];

/// The ring's NVM, and the FRAM: the chip emulated here over the partition, or the
/// partition through the kernel, which drives the chip.
type RingNvm = Store<MmioNvm>;
type Device = Store<Fram<EmuFram<MmioNvm>>>;

/// How this boot reaches the ring and the FRAM partition. Asked again after every
/// restore: the restored driver may run on a boot with other options than the one
/// that checkpointed it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Loads and stores on the memory-mapped NVM, the chip emulated here.
    Direct,
    /// Through the kernel, which drives the one SPI chip.
    Bus,
    /// Through the kernel on memory-mapped NVM, so that `amber.cut` numbers these
    /// stores with its own.
    Numbered,
}

impl Path {
    fn now() -> Path {
        if nvm_on_bus() {
            Path::Bus
        } else if nvm_stores_numbered() {
            Path::Numbered
        } else {
            Path::Direct
        }
    }

    /// The ring's NVM and the FRAM, reached this way (a new chip, as after power-up).
    fn open(self) -> (RingNvm, Device) {
        if self != Path::Direct {
            return (
                Either::Right(Grant {
                    slot: RING_SLOT,
                    size: RING.len as u32,
                }),
                Either::Right(Grant {
                    slot: FRAM_SLOT,
                    size: FRAM_PART.size(),
                }),
            );
        }
        // SAFETY: the app grants this task these two eternal areas of the NVM, mapped
        // by PMP, and no other task.
        let (ring, part) = unsafe {
            (
                MmioNvm::new(RING.base as *mut u8, RING.len as u32),
                MmioNvm::new(FRAM.base as *mut u8, FRAM_PART.size()),
            )
        };
        let chip = EmuFram::new(FRAM_PART, part, CYCLES_PER_BYTE, amber_user::spend_cycles)
            .expect("the FRAM range fits the part");
        (Either::Left(ring), Either::Left(Fram::new(chip, FRAM_PART)))
    }

    /// How the driver's report says it reaches the FRAM.
    fn describe(self) -> &'static str {
        match self {
            Path::Direct => "emulated here",
            Path::Bus => "through the kernel's SPI bus",
            Path::Numbered => "through the kernel (its stores numbered for a power cut)",
        }
    }
}

fn main() {
    // SAFETY: one thread per task; the kernel writes WATCH[1] only while this task is
    // stopped for a checkpoint.
    let watch = unsafe { &mut *core::ptr::addr_of_mut!(WATCH) };
    let path = Path::now();
    let (mut ring_nvm, mut fram) = path.open();
    let region = Region {
        offset: 0,
        len: RING.len as u32,
    };
    commit_watch(
        watch.as_ptr() as usize as u32,
        NOTIFICATION,
        COMMITTED,
        RESTORED,
        // A callback (which serves too: heap services write through this driver while
        // they persist), so that checkpoints find it between requests.
        WatchFlags::PERSIST_CALLBACK,
    )
    .expect("commit watch");
    // SAFETY: the app grants this task `spi` with read and write, mapped by PMP; its
    // bytes from INDEX_OFFSET are granted to no other task, and nothing else in this
    // task refers to them. `PendingEntry` is three u32s (any bit pattern valid,
    // 4-aligned like the base), and the index is emptied by the open below before it
    // is read.
    let slots = unsafe {
        core::slice::from_raw_parts_mut((SPI.base + INDEX_OFFSET) as *mut PendingEntry, INDEX_SLOTS)
    };
    // A fresh start: nothing was ever visible, so the ring starts empty.
    Ring::format(&mut ring_nvm, region).expect("format the ring");
    let (mut ring, _) = IndexedRing::open(&mut ring_nvm, &mut fram, region, RingIndex(0), slots)
        .expect("open the ring");
    if path == Path::Direct {
        println!(
            "spidrv: ring of {} bytes, index of {} entries, FRAM of {} bytes at {} {} per wire byte",
            ring.ring().capacity(),
            INDEX_SLOTS,
            FRAM_PART.size(),
            CYCLES_PER_BYTE,
            if counters_exact() {
                "cycles"
            } else {
                "host clock ticks (cycles only under -icount)"
            }
        );
    } else {
        println!(
            "spidrv: ring of {} bytes, index of {} entries, FRAM of {} bytes, all {}",
            ring.ring().capacity(),
            INDEX_SLOTS,
            FRAM_PART.size(),
            path.describe()
        );
    }
    // A write's bytes, copied out of the client's buffer before anything checks them;
    // a read's, before they go to the buffer. Also what a Recv takes (and drops) of
    // bytes a client sends anyway, so that such a message cannot make it fail.
    let mut buf = [0u8; MAX_CHUNK];
    // Commits applied since start, for the bus report.
    let mut applies = 0u64;
    loop {
        let mut d = IpcDesc {
            send_cap: NO_SLOT,
            recv_ptr: buf.as_mut_ptr() as usize as u32,
            recv_len: buf.len() as u32,
            recv_slot: NO_SLOT,
            ..IpcDesc::default()
        };
        let (w, badge) = match recv(ENDPOINT, Some(&mut d)) {
            Ok(message) => message,
            // Between requests: nothing of ours is on the bus.
            Err(Error::Interrupted) => {
                let _ = persist_done(0);
                continue;
            }
            Err(_) => continue,
        };
        events(&mut ring, &mut ring_nvm, &mut fram, watch, &mut applies);
        let (op, addr, len, check) = (w[0], w[1], w[2] as usize, w[3]);
        // A read's reply carries the check of the bytes it leaves in the buffer.
        let mut read_check = None;
        let shared = buffer_offset(badge).map(|at| SPI.base + at);
        let status = match shared {
            Some(shared) if len <= MAX_CHUNK => match op {
                OP_WRITE => {
                    // SAFETY: `shared` is this client's buffer, MAX_CHUNK bytes inside
                    // `spi` and, of the other tasks, granted to that client alone,
                    // which is blocked in its Call.
                    unsafe {
                        core::ptr::copy_nonoverlapping(shared as *const u8, buf.as_mut_ptr(), len)
                    };
                    // Not the bytes the client sent: a restore lost the buffer while
                    // the request was in flight (amber-spi-api's crate doc).
                    if payload_check(&buf[..len]) != check {
                        Err(SpiError::Stale)
                    } else {
                        write(&mut ring, &mut ring_nvm, watch, addr, &buf[..len])
                    }
                }
                OP_READ => ring
                    .read(&mut ring_nvm, &mut fram, addr, &mut buf[..len])
                    .map(|()| {
                        // SAFETY: as for a write.
                        unsafe {
                            core::ptr::copy_nonoverlapping(buf.as_ptr(), shared as *mut u8, len)
                        };
                        read_check = Some(payload_check(&buf[..len]));
                    })
                    .map_err(device_error),
                _ => Err(SpiError::BadRequest),
            },
            _ => Err(SpiError::BadRequest),
        };
        let writer = ring.ring().writer_index().0;
        let words = [
            status.err().map_or(0, SpiError::status),
            writer as u32,
            (writer >> 32) as u32,
            read_check.unwrap_or_else(|| ring.ring().free_bytes()),
        ];
        let _ = reply(words, None);
    }
}

/// Appends a write to the ring. A full ring is `SpiError::Full` to the client, which
/// asks for the checkpoint: the driver never waits for one itself, since it must keep
/// serving the persist callbacks of that checkpoint's persist phase.
fn write(
    ring: &mut IndexedRing,
    ring_nvm: &mut RingNvm,
    watch: &mut [u64; 2],
    addr: u32,
    data: &[u8],
) -> Result<(), SpiError> {
    match ring.append(ring_nvm, addr, data) {
        Ok(index) => {
            watch[0] = index.0;
            Ok(())
        }
        Err(RingError::Full { .. }) => Err(SpiError::Full),
        Err(e) => Err(device_error(e)),
    }
}

/// Handles the commit watch's news: a restore reopens the ring at the restored writer
/// index (dropping what came after it, replaying what is committed but not applied);
/// a commit applies the ring up to the committed writer index.
fn events(
    ring: &mut IndexedRing,
    ring_nvm: &mut RingNvm,
    fram: &mut Device,
    watch: &[u64; 2],
    applies: &mut u64,
) {
    let Ok(bits) = poll(NOTIFICATION) else { return };
    if bits & RESTORED != 0 {
        let path = Path::now();
        (*ring_nvm, *fram) = path.open();
        match ring.reopen(ring_nvm, fram, RingIndex(watch[0])) {
            Ok(report) => {
                println!(
                    "spidrv: restored at writer index {}: {} entries dropped, {} replayed; FRAM {}",
                    watch[0],
                    report.dropped,
                    report.replayed,
                    path.describe()
                );
            }
            Err(e) => println!("spidrv: cannot reopen the ring after a restore: {e}"),
        }
    }
    if bits & COMMITTED != 0 && apply(ring, ring_nvm, fram, watch[1]).is_ok() {
        report(fram, applies);
    }
}

/// Every [`REPORT_EVERY`] applies: what the driver put on the bus since it started
/// (on the kernel's bus, the kernel reports the wire bytes).
fn report(fram: &Device, applies: &mut u64) {
    *applies += 1;
    if let (true, Either::Left(fram)) = (applies.is_multiple_of(REPORT_EVERY), fram) {
        let s = fram.stats();
        println!(
            "spidrv: {} commits applied; bus: {} transactions, {} wire bytes, {} bytes written in {} writes, {} read in {} reads",
            applies, s.transactions, s.wire_bytes, s.bytes_written, s.writes, s.bytes_read, s.reads
        );
    }
}

/// Applies the ring up to `visible` (if that is ahead of what is applied).
fn apply(
    ring: &mut IndexedRing,
    ring_nvm: &mut RingNvm,
    fram: &mut Device,
    visible: u64,
) -> Result<(), SpiError> {
    if visible <= ring.ring().applied_index().0 {
        return Ok(());
    }
    ring.apply(ring_nvm, fram, RingIndex(visible))
        .map(drop)
        .map_err(device_error)
}

fn device_error(e: RingError) -> SpiError {
    match e {
        RingError::OutsideDevice { .. } => SpiError::OutsideDevice,
        e => {
            println!("spidrv: {e}");
            SpiError::Device
        }
    }
}
