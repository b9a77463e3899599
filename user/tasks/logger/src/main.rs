//! logger: a sensor logger over the heap service (endpoint, slot 0; its window on the
//! service's cache of its heap, `WINDOW`), and a crash workload. Each record
//! (sequence number, a fake sensor value computed from it, a checksum) is its own heap
//! object; a FIFO object in the heap holds the ids of the last `SLOTS` records in
//! order, and the oldest is popped (and freed) when it is full. The logger keeps the
//! aggregate of the FIFO (records appended, records held, sum of their values) in its
//! own memory, which the kernel checkpoints.
//!
//! Every `CHECK_EVERY` records it reads the whole FIFO back and checks it against that
//! aggregate: count, sum, consecutive sequence numbers ending at the last appended,
//! values and checksums. A read guard on a stamp record is held across each such run of
//! records (so across checkpoints and restores) and checked at its end. After a power
//! cut both sides come from the same checkpoint, so a mismatch means the heap and the
//! task's memory were restored from different states: it prints `logger: VIOLATION ...`
//! and stops. Progress lines (`logger: N records`) only grow while the system keeps its
//! checkpoints. It must never repair what it finds, only report it.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_heap_api::{Handle, Heap, HeapError, ObjectId, Persist, PinPage};
use amber_user::{exit, memory, println, signalled, watch_restores, Memory, WatchFlags};
use core::fmt;

amber_user::main!(main);

const HEAP: u32 = 0;
const NOTIFICATION: u32 = 1;
const RESTORED: u32 = 1 << 1;
/// Records the FIFO holds.
const SLOTS: usize = 24;
/// Records between two checks of the whole FIFO (and progress lines).
const CHECK_EVERY: u32 = 50;
/// The window: this task's part of `heap-caches`, shared with the heap service.
const WINDOW: Memory = memory!("HEAP_CACHES");
/// The pin page: this task's part of `heap-pins`, shared with the heap service (its
/// pins of resident objects, without IPC).
const PINS: Memory = memory!("HEAP_PINS");
/// The stamp record held under a read guard.
const STAMP: Record = Record {
    seq: u32::MAX,
    value: 0x0C0F_FEE0,
    check: 0x5EED_1234,
};

/// One logged reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
struct Record {
    seq: u32,
    value: u32,
    check: u32,
}
// SAFETY: three u32: no padding, every bit pattern valid, alignment 4.
unsafe impl Persist for Record {}

/// The FIFO: the ids of `count` records from slot `head` on, oldest first.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Fifo {
    head: u32,
    count: u32,
    /// The sequence number the next record gets.
    next_seq: u32,
    ids: [u16; SLOTS],
}
// SAFETY: three u32 and 24 u16 (60 bytes, a multiple of the alignment 4): no padding,
// every bit pattern valid.
unsafe impl Persist for Fifo {}

/// The aggregate of the FIFO, in the logger's own (checkpointed) memory.
#[derive(Clone, Copy, Debug, Default)]
struct Aggregate {
    appended: u32,
    count: u32,
    sum: u32,
}

/// The commit watch: [records appended (for the restore line), kernel-written].
static mut WATCH: [u64; 2] = [0; 2];

/// The fake sensor: a reading from 0 to 4095, a fixed function of the sequence number.
fn sensor(seq: u32) -> u32 {
    let mut x = seq.wrapping_mul(0x9E37_79B1) ^ 0x5BD1_E995;
    x ^= x >> 15;
    x = x.wrapping_mul(0x2C1B_3C6D);
    x ^= x >> 12;
    x % 4096
}

fn checksum(seq: u32, value: u32) -> u32 {
    seq.rotate_left(11) ^ value.wrapping_mul(0x85EB_CA6B) ^ 0xC0FF_EE00
}

fn violation(what: fmt::Arguments<'_>) -> ! {
    println!("logger: VIOLATION {what}");
    exit(1);
}

/// The value of a heap call; a failure is a violation (the service must not fail).
fn ok<T>(r: Result<T, HeapError>, what: &str) -> T {
    r.unwrap_or_else(|e| violation(format_args!("{what}: {e}")))
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
    let empty = Fifo {
        head: 0,
        count: 0,
        next_seq: 0,
        ids: [0; SLOTS],
    };
    let mut fifo = ok(heap.alloc(empty), "allocating the FIFO");
    let stamp = ok(heap.alloc(STAMP), "allocating the stamp");
    let mut agg = Aggregate::default();
    loop {
        // Held across the whole run of records below: checkpoints and restores happen
        // while the service has it pinned, and it must still read the same.
        let held = ok(heap.get_ref(&stamp), "pinning the stamp");
        loop {
            if signalled(NOTIFICATION, RESTORED) {
                println!(
                    "logger: restored at {} records, {} held, sum {}",
                    agg.appended, agg.count, agg.sum
                );
            }
            append(&heap, &mut fifo, &mut agg);
            watch[0] = agg.appended.into();
            if agg.appended.is_multiple_of(CHECK_EVERY) {
                check(&heap, &fifo, &agg);
                println!("logger: {} records", agg.appended);
                break;
            }
        }
        if *held != STAMP {
            violation(format_args!(
                "the stamp held under a read guard reads {:?}",
                *held
            ));
        }
        ok(held.release(), "unpinning the stamp");
    }
}

/// Appends the next record, popping the oldest first when the FIFO is full.
fn append(heap: &Heap, fifo: &mut Handle<Fifo>, agg: &mut Aggregate) {
    let seq = agg.appended;
    let mut f = ok(heap.get_mut(fifo), "reading the FIFO");
    if f.count != agg.count || f.next_seq != seq {
        violation(format_args!(
            "FIFO holds {} records up to seq {}, the aggregate says {} up to {}",
            f.count, f.next_seq, agg.count, seq
        ));
    }
    if f.count as usize == SLOTS {
        let id = ObjectId::from_raw(f.ids[f.head as usize % SLOTS]);
        let h: Handle<Record> = ok(heap.from_id(id), "finding the oldest record");
        let r = ok(heap.get(&h), "reading the oldest record");
        let want = seq - SLOTS as u32;
        if r.seq != want || r.check != checksum(r.seq, r.value) {
            violation(format_args!(
                "oldest record {id} is {r:?}, expected seq {want} with a valid checksum"
            ));
        }
        ok(heap.free(h), "freeing the oldest record");
        f.head = (f.head + 1) % SLOTS as u32;
        f.count -= 1;
        agg.count -= 1;
        agg.sum -= r.value;
    }
    let value = sensor(seq);
    let rec = Record {
        seq,
        value,
        check: checksum(seq, value),
    };
    let id = ok(heap.alloc(rec), "allocating a record").into_id();
    let tail = (f.head + f.count) as usize % SLOTS;
    f.ids[tail] = id.raw();
    f.count += 1;
    f.next_seq = seq + 1;
    ok(f.release(), "writing the FIFO");
    agg.appended += 1;
    agg.count += 1;
    agg.sum += value;
}

/// Reads the whole FIFO and checks it against the aggregate.
fn check(heap: &Heap, fifo: &Handle<Fifo>, agg: &Aggregate) {
    let f = ok(heap.get_ref(fifo), "reading the FIFO");
    if f.count != agg.count || f.next_seq != agg.appended || f.count as usize > SLOTS {
        violation(format_args!(
            "FIFO holds {} records up to seq {}, the aggregate says {} up to {}",
            f.count, f.next_seq, agg.count, agg.appended
        ));
    }
    let mut sum = 0u32;
    for i in 0..f.count {
        let id = ObjectId::from_raw(f.ids[(f.head + i) as usize % SLOTS]);
        let h: Handle<Record> = ok(heap.from_id(id), "finding a record");
        let r = ok(heap.get(&h), "reading a record");
        let _ = h.into_id();
        let seq = f.next_seq - f.count + i;
        if r.seq != seq || r.value != sensor(seq) || r.check != checksum(seq, r.value) {
            violation(format_args!(
                "record {i} of the FIFO ({id}) is {r:?}, expected seq {seq}, value {}",
                sensor(seq)
            ));
        }
        sum += r.value;
    }
    if sum != agg.sum {
        violation(format_args!(
            "the FIFO's values sum to {sum}, the aggregate says {}",
            agg.sum
        ));
    }
}
