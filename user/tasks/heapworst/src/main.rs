//! heapworst: a heap-service client that keeps its heap where the service's bounds put
//! the worst case, so that a power failure finds it there (`tests/tests/bound.rs`,
//! app `heapworst`). It checks nothing (the logger and kvstore crash workloads do); it
//! only drives the service into its most expensive states, and must never leave them
//! for long.
//!
//! Build setting `AMBER_WORST_CLIENT` (0 or 1): which of the service's two windows (its
//! part of `heap-caches`, as the app grants it) it maps, and its part:
//!
//! - Client 0, the requester, asks back to back for the most expensive request it
//!   can make at its first request after a commit: its heap holds `BIG` objects of
//!   `BIG_BYTES` (496: the dirty limit less `REQ_SMALL` new one-byte objects, with
//!   their overheads), more than the 8 KiB arena holds, and each round asks for a write
//!   pin of the next one, which is not cached: the service writes dirty objects back
//!   to make dirty room (the big one in 256-byte pieces, the entries that cost the
//!   driver's apply the most per ring byte), evicts to make cache room, and reads the
//!   big object's bytes with the ring entries its write-backs left pending laid over
//!   them. After each commit but the first (commit watch, notification in slot 2;
//!   the persister, above it in priority, has had its round after the commit by then) it
//!   creates or frees its `REQ_SMALL` one-byte objects as the persister does (the ids
//!   its big objects leave; both wait out the first commit and see every commit, so
//!   they create in the same epochs), beside the big object it held pinned across the
//!   checkpoint (which keeps it dirty), then
//!   asks for its pin. That request is the first driver call since the commit
//!   (nothing called the driver meanwhile: the small objects fit the cache and the
//!   limit), so it makes the driver apply the whole ring the last epoch wrote (the
//!   service asks for a checkpoint when that reaches its pending cap), then writes
//!   back dirty objects and reads the big one; what it leaves dirty the persist
//!   writes. It prints the instruction count (`instret`) at which it asked (`worst:
//!   epoch N request at instruction T`), so that the bound test can raise the
//!   power-failure interrupt there (`amber.warn=T`: at the trap that delivers the
//!   request) and the persist phase begins with that request in flight.
//! - Client 1, the persister, keeps its heap at the persist the bound counts: after
//!   every other commit it creates `PER_SMALL` one-byte objects (a new object costs a
//!   persist two storage writes, its entry half and its byte, for 17 bytes of the
//!   limit) and makes its medium object dirty, so that the limit is full with as many
//!   objects as its ids leave; after the commits between, it frees them (a freed id is
//!   taken again only after the persist that writes its dead half: an id not back yet
//!   is skipped). Its other `PER_CACHED` ids hold objects of the largest size, created
//!   at its start and never touched again, which stay cached, so that a reload after a
//!   restore reads a nearly full arena in this heap too (7 of them cost the persist 7
//!   new objects of the 47 it could have, and add 7 KiB to every reload). It runs at a
//!   higher priority than the requester, so each round follows its commit at once,
//!   before the requester's first request of the epoch; it waits out the first commit
//!   before its first round.
//!
//! Both write into every 256th byte of `PAGES` (most of their RAM) every round, so
//! that the checkpoint copies as much of their memory as it can. They print
//! `worst: N rounds` every `REPORT` rounds.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_heap_api::{Handle, Heap, HeapError};
use amber_user::{
    build_setting, commit_watch, exit, instret, memory, println, signalled, wait, Memory,
    WatchFlags,
};

amber_user::main!(main);

const HEAP: u32 = 0;
const CLIENT: usize = build_setting(option_env!("AMBER_WORST_CLIENT"), 0) as usize;
/// Its part of the service's `heap-caches` (user/apps/heapworst.toml).
const WINDOW: Memory = memory!("HEAP_CACHES");
/// The service's object ids per heap (`heapsvc`'s configuration).
const IDS: usize = 48;
/// The service's dirty limit, and what each dirty object costs of it beyond its bytes.
const LIMIT: usize = 1024;
const OVERHEAD: usize = 16;
/// The requester's one-byte objects, created or freed after each commit.
const REQ_SMALL: usize = 30;
/// The requester's big objects: as large as the dirty limit allows beside one pinned
/// across a checkpoint and its small ones (in whole cache units of 8 bytes).
const BIG_BYTES: usize = (LIMIT - OVERHEAD - REQ_SMALL * (1 + OVERHEAD)) / 8 * 8;
/// Units of 8 bytes in the arena (8 KiB).
const ARENA_UNITS: usize = 1024;
/// As many big objects as make one more than the arena holds, so that the next one is
/// never cached (17 x 62 units in 1,024; with the small ones, 47 of the 48 ids).
const BIG: usize = ARENA_UNITS / (BIG_BYTES / 8) + 1;
/// The persister's one-byte objects: the ids its medium object leaves.
const PER_SMALL: usize = IDS - 1 - PER_CACHED;
/// The persister's objects of the largest size (1,008 bytes), created at its start and
/// never touched again: they stay cached (clean) beside the others (7 x 126 units, the
/// small and medium ones 81, of 1,024), so that a reload after a restore reads an arena
/// nearly full in this heap too.
const PER_CACHED: usize = 7;
/// The largest object the service takes at the dirty limit (`heapsvc`'s `MAX_OBJECT`).
const LARGEST: usize = LIMIT - OVERHEAD;
/// Bytes of RAM written every round, one store per 256 bytes: the task's RAM less its
/// stack (the app gives it 8 KiB, 2 KiB of stack).
const TOUCH: usize = 5 * 1024;
const REPORT: u32 = 16;
const NOTIFICATION: u32 = 2;
/// The commit bit on the notification.
const COMMITTED: u32 = 1;

/// The commit watch (the watched value is not used).
static mut WATCH: [u64; 2] = [0; 2];

static mut PAGES: [u8; TOUCH] = [0; TOUCH];

fn ok<T>(r: Result<T, HeapError>, what: &str) -> T {
    r.unwrap_or_else(|e| {
        println!("worst: {what} failed: {e}");
        exit(1)
    })
}

/// Makes the object dirty (a write pin, one byte changed, released).
fn touch<const N: usize>(heap: &Heap, h: &mut Handle<[u8; N]>, round: u32) {
    let mut g = ok(heap.get_mut(h), "pinning an object");
    g[round as usize % N] ^= 1;
    ok(g.release(), "releasing an object");
}

/// Frees the one-byte objects there are and creates those there are not (a new object
/// costs a persist or a write-back two storage writes, its entry half and its byte, for
/// 17 bytes of the dirty limit). Ids freed since the last persist are not back yet, so
/// the calls alternate between creating them all and freeing them all.
fn churn<const N: usize>(heap: &Heap, small: &mut [Option<Handle<u8>>; N], round: u32) {
    for s in small {
        match s.take() {
            Some(h) => ok(heap.free(h), "freeing a small object"),
            None => match heap.alloc(round as u8) {
                Err(HeapError::OutOfIds) => {}
                r => *s = Some(ok(r, "allocating a small object")),
            },
        }
    }
}

/// Waits until the notification brings `bit`.
fn while_not(bit: u32) -> Result<(), amber_user::Error> {
    while wait(NOTIFICATION)? & bit == 0 {}
    Ok(())
}

/// Ends a round: writes into the task's RAM, counts and reports the round.
fn round_done(round: &mut u32) {
    // SAFETY: one thread per task; nothing else refers to PAGES.
    let pages = unsafe { &mut *core::ptr::addr_of_mut!(PAGES) };
    for p in pages.iter_mut().step_by(256) {
        *p = p.wrapping_add(1);
    }
    *round = round.wrapping_add(1);
    if round.is_multiple_of(REPORT) {
        println!("worst: {round} rounds");
    }
}

/// Has every commit signal `COMMITTED` on the notification.
fn watch_commits() {
    // SAFETY: one thread per task; the kernel writes WATCH[1] only while this task is
    // stopped, and this task never reads it.
    let watch = unsafe { &mut *core::ptr::addr_of_mut!(WATCH) };
    if let Err(e) = commit_watch(
        watch.as_ptr() as usize as u32,
        NOTIFICATION,
        COMMITTED,
        0,
        WatchFlags::empty(),
    ) {
        println!("worst: commit watch failed: {e}");
        exit(1);
    }
}

fn requester(heap: &Heap) -> ! {
    watch_commits();
    let mut big: [Handle<[u8; BIG_BYTES]>; BIG] =
        core::array::from_fn(|i| ok(heap.alloc([i as u8; BIG_BYTES]), "allocating a big object"));
    let mut small: [Option<Handle<u8>>; REQ_SMALL] = [const { None }; REQ_SMALL];
    let (mut round, mut epoch) = (0, 0u32);
    loop {
        // The persister (above this task's priority) has had its round after the
        // commit by now. Like it, wait out the first commit.
        let first = signalled(NOTIFICATION, COMMITTED);
        if first && epoch > 0 {
            churn(heap, &mut small, round);
        }
        let at = instret();
        touch(heap, &mut big[round as usize % BIG], round);
        if first {
            epoch += 1;
            println!("worst: epoch {epoch} request at instruction {at}");
        }
        round_done(&mut round);
    }
}

fn persister(heap: &Heap) -> ! {
    watch_commits();
    let _cached: [Handle<[u8; LARGEST]>; PER_CACHED] =
        core::array::from_fn(|i| ok(heap.alloc([i as u8; LARGEST]), "allocating a big object"));
    let mut small: [Option<Handle<u8>>; PER_SMALL] = [const { None }; PER_SMALL];
    let mut medium: Handle<[u8; LIMIT - PER_SMALL * (1 + OVERHEAD) - OVERHEAD]> =
        ok(heap.alloc([0; _]), "allocating the medium object");
    let mut round = 0;
    if let Err(e) = while_not(COMMITTED) {
        println!("worst: waiting for a commit failed: {e}");
        exit(1);
    }
    loop {
        churn(heap, &mut small, round);
        touch(heap, &mut medium, round);
        if let Err(e) = while_not(COMMITTED) {
            println!("worst: waiting for a commit failed: {e}");
            exit(1);
        }
        round_done(&mut round);
    }
}

fn main() {
    // SAFETY: the app maps WINDOW (its part of `heap-caches`) for this task alone (with the
    // service), and nothing else in this task touches it.
    let heap = unsafe { Heap::new(HEAP, WINDOW) };
    if CLIENT == 0 {
        requester(&heap)
    } else {
        persister(&heap)
    }
}
