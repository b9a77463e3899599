//! kvsvc: the key-value service task. It keeps one `amber-kv` table on the SPI FRAM,
//! reached only through the SPI driver (endpoint, slot 0, badge 1; the bytes go
//! through the part of the driver's memory `spi` that badge 1 names), and serves put,
//! get, delete, scan and info on its own endpoint (slot 1; protocol in `amber-kv-api`,
//! logic in `amber-kv-service`). Client `b` (badge `b`, 1 to `CLIENTS`) has its bytes
//! at `amber_kv_api::buffer_offset(b)` of this task's memory `kv`, shared with that
//! client alone.
//!
//! Why the table on the FRAM is, after any power cut, exactly the one the restored
//! clients know, with no log, no second copy and nothing to persist:
//! 1. the service keeps nothing of the table in RAM but the table's two counts and its
//!    geometry, all in its checkpointed memory;
//! 2. every write it makes is in the driver's ring before the driver replies, so at
//!    any instant the ring's writer index covers every write the service has made;
//! 3. a checkpoint records the service's memory and the ring's writer index at the
//!    same instant; recovery applies the ring up to that index and drops the rest. So
//!    the FRAM after recovery holds every write the restored service had made, and
//!    none it had not: the table its restored memory describes, and every put it had
//!    acknowledged to the restored clients.
//! 4. It registers as a persist callback (with nothing to persist: `persist_done` at
//!    once) so that this instant is always between two requests, or inside a
//!    checkpoint it asked for itself: never between its filling the driver's buffer
//!    (RAM that no checkpoint keeps) and its call, and never while the driver, whose
//!    only client it is, is busy. A client's buffer lost to a cut is caught by the
//!    protocol's checksums (`amber-kv-api`).
//!
//! A full ring refuses a write (`SpiError::Full`): the service then asks for a
//! checkpoint (which makes the ring visible, so the driver applies and frees it) and
//! writes again, in the middle of the request; the client waits in its Call, and point
//! 3 holds there too. At start it formats the table (a fresh start: nothing of the
//! system existed before), with the configuration its build settings give:
//! `AMBER_KV_ENTRIES` (entries per bucket, 1 for the linear layout; default 4),
//! `AMBER_KV_BUCKETS` (default 32), `AMBER_KV_MAX_VALUE` (default 120 bytes) and
//! `AMBER_KV_CLIENTS` (1 or 2, default 1). It must never answer a request before its
//! writes are in the ring, and never keep a value in RAM across requests. Its fault
//! policy is "end": a restart would format the table.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_heap_service::{SpiPort, SpiStorage, StorageStats};
use amber_kv::{Config, Layout, Table};
use amber_kv_api::{buffer_offset, Status, BUFFER_BYTES};
use amber_kv_service::Service;
use amber_spi_api::{Client, SpiError};
use amber_user::abi::NO_SLOT;
use amber_user::{
    build_setting, checkpoint, exit, memory, persist_done, println, recv, reply, signalled,
    watch_restores, Error, IpcDesc, Memory, WatchFlags,
};
use core::cell::Cell;

amber_user::main!(main);

const SPI: u32 = 0;
const ENDPOINT: u32 = 1;
const NOTIFICATION: u32 = 2;
const RESTORED: u32 = 1 << 1;

/// The MB85RS4MT behind the driver.
const FRAM_BYTES: u32 = 512 * 1024;
/// The clients' buffers (amber-kv-api), placed by the app description.
const BUFFERS: Memory = memory!("KV");
/// Where the table's header lies on the FRAM (this app gives the service the chip).
const TABLE_BASE: u32 = 0;
const ENTRIES: u32 = build_setting(option_env!("AMBER_KV_ENTRIES"), 4);
const CONFIG: Config = Config {
    layout: if ENTRIES == 1 {
        Layout::Linear
    } else {
        Layout::Bucketed {
            entries: ENTRIES as u8,
        }
    },
    buckets: build_setting(option_env!("AMBER_KV_BUCKETS"), 32),
    max_value: build_setting(option_env!("AMBER_KV_MAX_VALUE"), 120) as u16,
};
const _: () = assert!(
    ENTRIES >= 1 && ENTRIES <= 8,
    "AMBER_KV_ENTRIES must be 1 (linear) to 8"
);
/// Clients (badges 1 to `CLIENTS`, each with its buffer): `AMBER_KV_CLIENTS`, else 1.
const CLIENTS: u32 = build_setting(option_env!("AMBER_KV_CLIENTS"), 1);
const _: () = assert!(
    CLIENTS >= 1 && CLIENTS <= amber_kv_api::MAX_CLIENTS,
    "AMBER_KV_CLIENTS must be 1 or 2 (with the driver's buffer, a task holds at most 3 memory capabilities)"
);
/// Checkpoints asked for in a row before a full ring is reported as a failure.
const FULL_RETRIES: u32 = 4;

/// The commit watch: nothing watched (commit bits 0); it makes this task a persist
/// callback and reports restores.
static mut WATCH: [u64; 2] = [0; 2];

/// The SPI driver through this task's buffer of badge 1. A full ring is waited out
/// here: a checkpoint, then the same write again.
struct Driver(Client);

/// Asks for a checkpoint from inside a request. As a persist callback this task is
/// answered `Interrupted` and then persists (nothing to persist), so the checkpoint is
/// taken at this point of the request.
fn wait_for_checkpoint() {
    match checkpoint() {
        Err(Error::Interrupted) => {
            if let Err(e) = persist_done(0) {
                println!("kvsvc: persist done refused: {e}");
            }
        }
        Ok(()) => {}
        Err(e) => println!("kvsvc: checkpoint for a full ring failed: {e}"),
    }
}

impl SpiPort for Driver {
    fn write(&mut self, addr: u32, data: &[u8]) -> Result<u32, SpiError> {
        for _ in 0..FULL_RETRIES {
            match self.0.write(addr, data) {
                Err(SpiError::Full) => wait_for_checkpoint(),
                r => return r.map(|w| w.free),
            }
        }
        Err(SpiError::Full)
    }

    fn read(&mut self, addr: u32, buf: &mut [u8]) -> Result<(), SpiError> {
        self.0.read(addr, buf)
    }
}

fn main() {
    // SAFETY: one thread per task; the kernel writes WATCH[1] only while this task is
    // stopped for a checkpoint, and this task never reads it.
    let watch = unsafe { &mut *core::ptr::addr_of_mut!(WATCH) };
    // First, so that from now on every checkpoint finds this task between requests.
    watch_restores(watch, NOTIFICATION, RESTORED, WatchFlags::PERSIST_CALLBACK)
        .expect("commit watch");
    // SAFETY: the app grants this task, and the driver alone, the part of the
    // driver's memory `spi` that badge 1 names, with the SPI endpoint capability of
    // badge 1; only this `Client` uses it.
    let spi = unsafe { Client::new(SPI, memory!("SPI")) }.expect("a buffer of MAX_CHUNK");
    let stats = Cell::new(StorageStats::default());
    let storage = SpiStorage::new(Driver(spi), FRAM_BYTES, &stats);
    let table = match Table::format(storage, TABLE_BASE, CONFIG) {
        Ok(t) => t,
        Err(e) => {
            println!("kvsvc: cannot format the table: {e}");
            exit(1);
        }
    };
    let g = table.geometry();
    let mut svc = match Service::new(table, BUFFER_BYTES) {
        Ok(s) => s,
        Err(e) => {
            println!("kvsvc: {e}");
            exit(1);
        }
    };
    println!(
        "kvsvc: table of {} keys ({} buckets of {}), values up to {} bytes, FRAM [{:#x}, {:#x}); {} clients",
        CONFIG.capacity(),
        CONFIG.buckets,
        CONFIG.layout.entries(),
        CONFIG.max_value,
        g.base,
        g.end(),
        CLIENTS
    );
    // No request carries message bytes; this only takes (and drops) what a client
    // sends anyway, so that such a message cannot make the Recv fail.
    let mut input = [0u8; 16];
    loop {
        if signalled(NOTIFICATION, RESTORED) {
            // The crash test waits for this line.
            println!("kvsvc: restored: {} keys", svc.table().len());
        }
        let mut d = IpcDesc {
            send_cap: NO_SLOT,
            recv_ptr: input.as_mut_ptr() as usize as u32,
            recv_len: input.len() as u32,
            recv_slot: NO_SLOT,
            ..IpcDesc::default()
        };
        match recv(ENDPOINT, Some(&mut d)) {
            // Nothing to persist: every write is in the driver's ring already.
            Err(Error::Interrupted) => {
                let _ = persist_done(0);
            }
            Err(e) => println!("kvsvc: recv failed: {e}"),
            Ok((words, badge)) => {
                let at = buffer_offset(badge).filter(|&at| {
                    badge <= CLIENTS && BUFFERS.len.checked_sub(BUFFER_BYTES) >= Some(at)
                });
                let back = match at {
                    Some(at) => {
                        // SAFETY: the app grants this task its memory `kv`, read and
                        // write, whose part `at` it shares with the client of this
                        // badge alone, which is blocked in its Call; nothing else in
                        // this task refers to it, and the slice ends with this
                        // request.
                        let buf = unsafe {
                            core::slice::from_raw_parts_mut(
                                (BUFFERS.base + at) as *mut u8,
                                BUFFER_BYTES,
                            )
                        };
                        svc.handle(words, buf)
                    }
                    None => [Status::BadRequest as u32, 0, 0, 0],
                };
                if back[0] == Status::Failed as u32 {
                    if let Some(e) = svc.take_failure() {
                        println!("kvsvc: request failed: {e}");
                    }
                    if let Some(e) = stats.get().failure {
                        println!("kvsvc: the SPI driver refused a call: {e:?}");
                    }
                }
                let _ = reply(back, None);
            }
        }
    }
}
