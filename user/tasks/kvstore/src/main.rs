//! kvstore: a key-value store over the heap service (endpoint, slot 0; its window on
//! the service's cache of its heap, `WINDOW`), and a crash workload. Each of
//! `KEYS` keys has a value object in the heap (key, version, a payload computed from
//! key and version, checksum; 292 bytes, more than one IPC message, reached in place
//! through the window). It updates random keys (a seeded generator in its own memory),
//! bumping their version; one update in eight replaces the key's object instead (free
//! and allocate, so ids and NVM space are reused). The version each key must have is
//! kept in the task's own (checkpointed) memory.
//!
//! Every value is checked when it is updated, and every key every `CHECK_EVERY`
//! updates. An update counter object is held under a write guard across each run of
//! `CHECK_EVERY` updates (so across checkpoints and restores), bumped with every update
//! and checked against the count in the task's memory. After a power cut the heap and
//! the task's memory come from the same checkpoint, so any mismatch means they were
//! restored from different states: it prints `kv: VIOLATION ...` and stops. Progress
//! lines (`kv: N updates`) only grow while the system keeps its checkpoints. It must
//! never repair what it finds, only report it.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_heap_api::{Handle, Heap, HeapError, Persist, PinPage};
use amber_user::{exit, memory, println, signalled, watch_restores, Memory, Rng, WatchFlags};
use core::fmt;

amber_user::main!(main);

const HEAP: u32 = 0;
const NOTIFICATION: u32 = 1;
const RESTORED: u32 = 1 << 1;
const KEYS: usize = 16;
const PAYLOAD: usize = 70;
/// Updates between two checks of every key (and progress lines).
const CHECK_EVERY: u32 = 64;
const SEED: u32 = 0x6B76_5354;
/// The window: this task's part of `heap-caches`, shared with the heap service.
const WINDOW: Memory = memory!("HEAP_CACHES");
/// The pin page: this task's part of `heap-pins`, shared with the heap service (its
/// pins of resident objects, without IPC).
const PINS: Memory = memory!("HEAP_PINS");

/// A key's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
struct Value {
    key: u32,
    version: u32,
    payload: [u32; PAYLOAD],
    check: u32,
}
// SAFETY: u32 fields and an array of u32 (292 bytes): no padding, every bit pattern
// valid, alignment 4.
unsafe impl Persist for Value {}

const _: () = assert!(core::mem::size_of::<Value>() > amber_heap_api::CHUNK);

/// The commit watch: [updates done (for the restore line), kernel-written].
static mut WATCH: [u64; 2] = [0; 2];

fn checksum(key: u32, version: u32, payload: &[u32; PAYLOAD]) -> u32 {
    payload.iter().fold(key.rotate_left(16) ^ version, |c, &w| {
        c.rotate_left(5) ^ w.wrapping_mul(0x2545_F491)
    })
}

/// The value key `key` has at `version`.
fn value(key: u32, version: u32) -> Value {
    let mut payload = [0u32; PAYLOAD];
    for (i, p) in payload.iter_mut().enumerate() {
        *p = (key << 24 | i as u32).wrapping_mul(0x9E37_79B1) ^ version.rotate_left(i as u32);
    }
    Value {
        key,
        version,
        payload,
        check: checksum(key, version, &payload),
    }
}

fn violation(what: fmt::Arguments<'_>) -> ! {
    println!("kv: VIOLATION {what}");
    exit(1);
}

/// The value of a heap call; a failure is a violation (the service must not fail).
fn ok<T>(r: Result<T, HeapError>, what: &str) -> T {
    r.unwrap_or_else(|e| violation(format_args!("{what}: {e}")))
}

/// Checks that `v` is key `key` at `version`, whole.
fn expect(v: &Value, key: usize, version: u32, when: &str) {
    if *v != value(key as u32, version) {
        violation(format_args!(
            "{when}: key {key} holds key {} version {} (checksum {}), expected version {version}",
            v.key,
            v.version,
            if v.check == checksum(v.key, v.version, &v.payload) {
                "valid"
            } else {
                "broken"
            }
        ));
    }
}

fn main() {
    // SAFETY: one thread per task; the kernel never writes WATCH[0], and WATCH[1] only
    // while this task is stopped.
    let watch = unsafe { &mut *core::ptr::addr_of_mut!(WATCH) };
    watch_restores(watch, NOTIFICATION, RESTORED, WatchFlags::empty()).expect("commit watch");
    // SAFETY: the app maps WINDOW (its part of `heap-caches`) for this task, shared
    // with the heap service only, and nothing else in this task touches it.
    let heap = unsafe { Heap::new(HEAP, WINDOW) };
    // SAFETY: the app maps PINS (its page of `heap-pins`) for this task, shared with the
    // heap service only, and nothing else in this task touches it.
    let page = unsafe { PinPage::in_memory(PINS, 0) }.expect("heap-pins holds this task's page");
    // SAFETY: as above.
    let heap = unsafe { heap.with_pins(page) };
    let mut handles: [Handle<Value>; KEYS] =
        core::array::from_fn(|k| ok(heap.alloc(value(k as u32, 0)), "allocating a key"));
    let mut versions = [0u32; KEYS];
    let mut rng = Rng::new(SEED);
    let mut updates = 0u32;
    let mut counter = ok(heap.alloc(0u32), "allocating the counter");
    loop {
        // Held across the run of updates below: the service persists it while pinned,
        // and after a restore it must match the count restored with this task.
        let mut count = ok(heap.get_mut(&mut counter), "pinning the counter");
        if *count != updates {
            violation(format_args!(
                "the counter reads {} at {updates} updates",
                *count
            ));
        }
        loop {
            if signalled(NOTIFICATION, RESTORED) {
                println!("kv: restored at {updates} updates");
            }
            let k = rng.below(KEYS as u32) as usize;
            let next = versions[k] + 1;
            if rng.below(8) == 0 {
                let old = ok(heap.get(&handles[k]), "reading a key");
                expect(&old, k, versions[k], "before replacing");
                let new = ok(heap.alloc(value(k as u32, next)), "allocating a key");
                let old = core::mem::replace(&mut handles[k], new);
                ok(heap.free(old), "freeing a replaced key");
            } else {
                let mut g = ok(heap.get_mut(&mut handles[k]), "reading a key");
                expect(&g, k, versions[k], "before updating");
                *g = value(k as u32, next);
                ok(g.release(), "writing a key");
            }
            versions[k] = next;
            updates += 1;
            *count += 1;
            watch[0] = updates.into();
            if *count != updates {
                violation(format_args!(
                    "the counter reads {} at {updates} updates",
                    *count
                ));
            }
            if updates.is_multiple_of(CHECK_EVERY) {
                for (key, h) in handles.iter().enumerate() {
                    let v = ok(heap.get(h), "reading a key");
                    expect(&v, key, versions[key], "checking every key");
                }
                println!("kv: {updates} updates");
                break;
            }
        }
        ok(count.release(), "unpinning the counter");
    }
}
