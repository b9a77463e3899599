//! The syscall fuzzer: boots a small system and issues well over 100,000 random
//! syscalls with random numbers, slots, pointers and lengths, interleaved with ticks,
//! interrupts, faults and random descriptor bytes in task memory; IPC buffers are set
//! at random spots (aligned or not, in or out of a task's own memory) and messages name
//! them with random lengths; commit watches are
//! registered with random blocks and bits and flags (persist callbacks and servers), and
//! the checkpoint cycle hears of every syscall, tick and an occasional power failure,
//! as it does from the device's glue: every syscall tries the fast path first, held to
//! the general path on a copy of the same state (`Sys::fast_syscall`), and takes the
//! general path and the cycle when it declines; requests and periodic checkpoints are written
//! (committing or failing), persist phases run, end or are given up, and a halt after
//! a power failure is a power cut. It asserts
//! that nothing panics (the fake memory also fails the test if the kernel touches
//! memory no task may access with that right), that every completed call returns 0 or a
//! documented error code, and that the tree invariants hold throughout; every 100 steps
//! the whole kernel is checkpointed and replaced by one restored from its records.
//! Seeded deterministically, so failures repeat. It must never weaken an assertion to
//! make a run pass: a failure here is a kernel bug.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};

use amber_core::{
    abi::{ipc_buffer_msg, Error, Sysno, TaskState, IPC_BUFFER_MSG, NO_SLOT},
    CapSpec, CheckpointConfig, CheckpointEvent, Fault, FaultPolicy, Kernel, MemKind, Step,
};
use common::{
    data, Sys, ALL, CODE_SIZE, D, G, MEM_BASE, MEM_SIZE, R, RW, SHARED_BASE, TASK_SIZE, W,
};
use proptest::{
    prelude::*,
    test_runner::{Config, RngAlgorithm, TestRng, TestRunner},
};

/// One step of the fuzzer.
#[derive(Clone, Debug)]
enum Op {
    /// A syscall by whoever is current.
    Sys { nr: u32, args: [u32; 6] },
    /// A client's Call or a server's Recv or ReplyRecv by whoever is current, on
    /// endpoint slot 0 or 1 (what the fast paths take, when the partner waits); `d`,
    /// which may only receive, serves.
    Ipc {
        serve: Sysno,
        call: Sysno,
        args: [u32; 6],
    },
    /// Random descriptor words at a spot of a task (data or code: what a task's memory
    /// holds is up to the task).
    Poke {
        task: usize,
        at: u32,
        words: [u32; 9],
    },
    /// Timer interrupt after time advanced.
    Tick { advance: u16 },
    /// Device interrupt.
    Irq { irq: u32 },
    /// The current task faults.
    Fault { mcause: u32, addr: u32 },
}

const TASKS: usize = 4;
/// Descriptor and buffer spots in each task's data region.
const SPOTS: u32 = 8;

fn spot(task: usize, i: u32) -> u32 {
    data(task) + 0x40 * i
}

/// A descriptor/buffer spot: usually in task `own`'s data, sometimes in its read-only
/// code, sometimes another task's.
fn any_spot(own: usize, w: u32) -> u32 {
    match w % 8 {
        0 => spot((w >> 3) as usize % TASKS, (w >> 6) % SPOTS),
        1 => common::code(own) + (w >> 6) % 0x300,
        _ => spot(own, (w >> 6) % SPOTS),
    }
}

/// Decodes argument `i` of a syscall by task `own` from raw entropy: mostly meaningful
/// values for that position (slots in a0, descriptors in a5), sometimes anything.
/// (Decoding plain words keeps generation cheap: proptest's combinators are slow in
/// debug builds, and the raw words still shrink.)
fn arg(own: usize, i: usize, w: u32) -> u32 {
    let v = w >> 4;
    let wild = w.rotate_left(11);
    match (i, w % 16) {
        (0, 0..=11) => v % 7,
        (0, 12) => any_spot(own, v),
        (1, 0..=7) => v % 16,
        (1, 8 | 9) => any_spot(own, v),
        (1, 10 | 11) => v % 300,
        (2, 0..=9) => v % 32,
        (2, 10 | 11) => v % 300,
        (3 | 4, 0..=9) => v % 200,
        (5, 0..=3) => 0,
        (5, 4 | 5) => buffer_msg(v),
        (5, 6..=13) => any_spot(own, v),
        (_, 13) => NO_SLOT,
        (_, 14) => MEM_BASE + v % MEM_SIZE,
        _ => wild,
    }
}

/// `a5` naming the IPC buffer: mostly a length that fits, sometimes one over
/// `MAX_MSG_BYTES`.
fn buffer_msg(v: u32) -> u32 {
    ipc_buffer_msg(if v.is_multiple_of(8) {
        (v >> 3) % 0x1000
    } else {
        (v >> 3) % 257
    } as u16)
}

/// A `SetIpcBuffer` pointer for task `own`: sometimes 0 (none), mostly an aligned spot
/// of its data, sometimes unaligned, its read-only code, the shared MemObj (not own
/// memory), straddling the end of its data region, or anything.
fn ipc_buffer_ptr(own: usize, w: u32) -> u32 {
    let v = w >> 3;
    match w % 8 {
        0 => 0,
        1 => common::code(own) + 4 * (v % (CODE_SIZE / 4)),
        2 => SHARED_BASE + 4 * (v % 0x40),
        3 => data(own) + (TASK_SIZE - CODE_SIZE) - 4 * (v % 67),
        4 => w.rotate_left(7),
        5 => spot(own, v % SPOTS) + 1 + v % 3,
        _ => spot(own, v % SPOTS) & !3,
    }
}

/// A `CommitWatch` block pointer for task `own`: sometimes 0 (remove the watch),
/// mostly a spot of its data, sometimes its read-only code, the shared MemObj (held by
/// some tasks), a block at or straddling the end of its data region, or anything.
fn watch_ptr(own: usize, w: u32) -> u32 {
    let v = w >> 3;
    match w % 8 {
        0 => 0,
        1 => common::code(own) + v % CODE_SIZE,
        2 => SHARED_BASE + v % 0x100,
        3 => data(own) + (TASK_SIZE - CODE_SIZE) - 16 + v % 16,
        4 => w.rotate_left(7),
        _ => any_spot(own, v),
    }
}

/// Random descriptor bytes for task `own`, mostly plausible field by field.
fn desc(own: usize, raw: &[u32; 9]) -> [u32; 9] {
    let pick = |w: u32, plausible: u32| {
        if w.is_multiple_of(8) {
            w.rotate_left(13)
        } else {
            plausible
        }
    };
    [
        pick(raw[0], any_spot(own, raw[0] >> 3)),
        pick(
            raw[1],
            if raw[1].is_multiple_of(4) {
                (raw[1] >> 3) % 300
            } else {
                (raw[1] >> 3) % 64
            },
        ),
        pick(
            raw[2],
            if raw[2].is_multiple_of(2) {
                NO_SLOT
            } else {
                (raw[2] >> 3) % 12
            },
        ),
        pick(raw[3], any_spot(own, raw[3] >> 3)),
        pick(raw[4], (raw[4] >> 3) % 128),
        pick(
            raw[5],
            if raw[5].is_multiple_of(2) {
                NO_SLOT
            } else {
                6 + (raw[5] >> 3) % 10
            },
        ),
        raw[6],
        raw[7],
        raw[8],
    ]
}

/// Decodes one step from a selector and nine raw words.
fn op((sel, raw): (u8, [u32; 9])) -> Op {
    let args = [raw[1], raw[2], raw[3], raw[4], raw[5], raw[6]];
    match sel % 56 {
        50..=55 => Op::Ipc {
            serve: [
                Sysno::ReplyRecv,
                Sysno::ReplyRecv,
                Sysno::ReplyRecv,
                Sysno::Recv,
            ][raw[0] as usize % 4],
            call: [Sysno::Call, Sysno::Call, Sysno::ReplyRecv, Sysno::Recv][raw[7] as usize % 4],
            args,
        },
        0..=39 => {
            let nr = raw[0] % Sysno::ALL.len() as u32;
            // Exit ends a task for good and deletions empty the tree: keep them rare so
            // the system stays busy and deep states are reached.
            let rare = if nr == Sysno::Exit as u32 { 40 } else { 4 };
            let destructive = [
                Sysno::Exit,
                Sysno::CapDelete,
                Sysno::CapRevoke,
                Sysno::ObjDelete,
            ]
            .iter()
            .any(|&d| d as u32 == nr);
            let nr = if destructive && raw[7] % rare != 0 {
                Sysno::CapInfo as u32
            } else {
                nr
            };
            Op::Sys { nr, args }
        }
        40 => Op::Sys { nr: raw[0], args },
        41..=45 => Op::Poke {
            task: raw[0] as usize % TASKS,
            at: any_spot(raw[0] as usize % TASKS, raw[8]),
            words: raw,
        },
        46 | 47 => Op::Tick {
            advance: (raw[0] % 64) as u16,
        },
        48 => Op::Irq {
            irq: [7, 10, raw[0] % 16][raw[1] as usize % 3],
        },
        _ => Op::Fault {
            mcause: raw[0] % 16,
            addr: raw[1],
        },
    }
}

const A: [CapSpec; 8] = [
    CapSpec::Endpoint {
        name: "e1",
        rights: ALL,
        badge: 1,
    },
    CapSpec::Endpoint {
        name: "e2",
        rights: W.union(G),
        badge: 0,
    },
    CapSpec::Notification {
        name: "n1",
        rights: ALL,
    },
    CapSpec::Timer,
    CapSpec::MemObj {
        base: SHARED_BASE,
        len: 0x100,
        rights: ALL,
        kind: MemKind::Checkpointed,
    },
    CapSpec::Task { name: "b" },
    CapSpec::Irq { irq: 10 },
    CapSpec::NvmRegion {
        offset: 0,
        len: 0x1000,
        rights: ALL,
    },
];
const B: [CapSpec; 6] = [
    CapSpec::Endpoint {
        name: "e1",
        rights: RW.union(G),
        badge: 0,
    },
    CapSpec::Endpoint {
        name: "e2",
        rights: R.union(D),
        badge: 0,
    },
    CapSpec::Notification {
        name: "n1",
        rights: W.union(G),
    },
    CapSpec::Notification {
        name: "n2",
        rights: ALL,
    },
    CapSpec::Timer,
    CapSpec::Irq { irq: 7 },
];
const C: [CapSpec; 5] = [
    CapSpec::Endpoint {
        name: "e1",
        rights: W,
        badge: 3,
    },
    CapSpec::Endpoint {
        name: "e2",
        rights: ALL,
        badge: 0,
    },
    CapSpec::Notification {
        name: "n2",
        rights: R,
    },
    CapSpec::MemObj {
        base: SHARED_BASE,
        len: 0x80,
        rights: RW.union(G),
        kind: MemKind::Eternal,
    },
    CapSpec::Task { name: "a" },
];
const E: [CapSpec; 2] = [
    CapSpec::Endpoint {
        name: "e1",
        rights: R,
        badge: 0,
    },
    CapSpec::Notification {
        name: "n1",
        rights: R,
    },
];

fn boot() -> Sys {
    let mut tasks = [
        common::task("a", 1, &A),
        common::task("b", 1, &B),
        common::task("c", 2, &C),
        common::task("d", 0, &E),
    ];
    tasks[1].fault = FaultPolicy::Restart;
    tasks[3].fault = FaultPolicy::Restart;
    let mut s = Sys::boot(&tasks);
    // The NVM a's NvmRegion grants, for NvmRead and NvmWrite.
    s.plat.nvm = vec![0; 0x1000];
    // Only memory some task may access with the right may ever be touched.
    let mut oracle: Vec<(u32, u32, bool)> = (0..TASKS)
        .flat_map(|i| common::regions(i).map(|r| (r.base, r.len, r.rights.contains(W))))
        .collect();
    oracle.push((SHARED_BASE, 0x100, true));
    s.mem.oracle = Some(oracle);
    s.k.configure_checkpoints(CYCLE);
    s
}

/// A periodic checkpoint every 4 ticks; persist phases given up after 400 ticks.
const CYCLE: CheckpointConfig = CheckpointConfig {
    interval_ticks: 4,
    persist_timeout_ticks: 400,
    committed: 0,
    power_failure_at: None,
};

static SYSCALLS: AtomicU64 = AtomicU64::new(0);
/// Syscalls the fast path took: Null, Call, ReplyRecv.
static FAST: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
/// Of those, the ones whose message named the caller's IPC buffer.
static FAST_BUFFER: AtomicU64 = AtomicU64::new(0);
static OUTCOMES: [[AtomicU64; 16]; Sysno::ALL.len()] =
    [const { [const { AtomicU64::new(0) }; 16] }; Sysno::ALL.len()];
static PERSIST_PHASES: AtomicU64 = AtomicU64::new(0);
static REBOOTS: AtomicU64 = AtomicU64::new(0);
static POWER_CUTS: AtomicU64 = AtomicU64::new(0);

fn check(s: &Sys, what: &str) -> Result<(), TestCaseError> {
    s.k.check_invariants()
        .map_err(|v| TestCaseError::fail(format!("after {what}: {v}")))
}

/// Reports `event` and does what the cycle asks, as the glue does: every checkpoint
/// written commits when `ok`; a halt after a power failure is a power cut.
fn event(s: &mut Sys, event: CheckpointEvent, ok: bool) -> Result<(), TestCaseError> {
    let phase = s.k.persist_active();
    let step = s.event(event);
    if !phase && s.k.persist_active() {
        PERSIST_PHASES.fetch_add(1, Ordering::Relaxed);
    }
    if let Step::Halt(_) = s.drive(step, ok) {
        power_cut(s)?;
    }
    Ok(())
}

/// Checkpoints every object, restores a new kernel from the records and carries on
/// with it: the records must restore, and re-encode to themselves. The restored
/// kernel then hears of the restore (its watches' restore bits, a persist phase).
fn power_cut(s: &mut Sys) -> Result<(), TestCaseError> {
    let recs = common::records(&s.k);
    let mut k = Box::new(Kernel::new());
    k.restore_into(recs.iter().map(|(i, b)| (*i, b.as_slice())), &mut s.plat)
        .map_err(|e| TestCaseError::fail(format!("own records refused: {e}")))?;
    for (i, rec) in &recs {
        let mut buf = [0u8; Kernel::RECORD_MAX];
        let n = k.encode_object(*i, &mut buf);
        prop_assert_eq!(
            &buf[..n],
            rec.as_slice(),
            "object {} re-encodes differently",
            i
        );
    }
    k.configure_checkpoints(CYCLE);
    s.k = k;
    POWER_CUTS.fetch_add(1, Ordering::Relaxed);
    event(s, CheckpointEvent::Restored, true)
}

fn run(raw: Vec<(u8, [u32; 9])>) -> Result<(), TestCaseError> {
    let mut s = boot();
    for (i, op) in raw.into_iter().map(op).enumerate() {
        // An IPC step is a syscall whose slot and descriptor are decoded below.
        let (op, ipc) = match op {
            Op::Ipc { serve, call, args } => {
                let server = s.k.current().is_some_and(|t| s.k.task_name(t) == "d");
                let nr = if server { serve } else { call } as u32;
                (Op::Sys { nr, args }, true)
            }
            op => (op, false),
        };
        match op {
            Op::Sys { nr, args } => {
                let raw_a0 = args[0];
                let raw_a4 = args[4];
                let Some(t) = s.k.current() else {
                    // Everyone blocked or exited: interrupts and time may help, else reboot.
                    s.plat.now += 1000;
                    event(&mut s, CheckpointEvent::Tick, true)?;
                    s.k.irq(7);
                    s.k.irq(10);
                    s.k.tick(&mut s.plat);
                    if s.k.current().is_none() {
                        REBOOTS.fetch_add(1, Ordering::Relaxed);
                        s = boot();
                    }
                    continue;
                };
                let own = s.k.task_name(t).as_bytes()[0].wrapping_sub(b'a') as usize % TASKS;
                let mut args: [u32; 6] = std::array::from_fn(|i| arg(own, i, args[i]));
                if ipc {
                    // Slot 0 or 1 (endpoints in every task); no descriptor, the IPC
                    // buffer or a spot.
                    args[0] = raw_a0 % 2;
                    args[5] = match raw_a4 % 8 {
                        0 => any_spot(own, raw_a4 >> 3),
                        1..=3 => buffer_msg(raw_a4 >> 3),
                        _ => 0,
                    };
                }
                if nr == Sysno::SetIpcBuffer as u32 {
                    args[0] = ipc_buffer_ptr(own, raw_a0);
                }
                if nr == Sysno::CommitWatch as u32 {
                    args[0] = watch_ptr(own, raw_a0);
                    // Mostly known flags (callbacks and servers), sometimes unknown bits.
                    if raw_a4 % 4 != 3 {
                        args[4] = (raw_a4 >> 2) % 4;
                    }
                }
                let ctx = s.k.context_mut(t);
                ctx.regs[17] = nr;
                ctx.regs[10..16].copy_from_slice(&args);
                SYSCALLS.fetch_add(1, Ordering::Relaxed);
                if s.fast_syscall() {
                    let kind = [Sysno::Null, Sysno::Call, Sysno::ReplyRecv]
                        .iter()
                        .position(|&k| k as u32 == nr);
                    prop_assert!(kind.is_some(), "the fast path took syscall {}", nr);
                    FAST[kind.unwrap_or(0)].fetch_add(1, Ordering::Relaxed);
                    if args[5] >= IPC_BUFFER_MSG {
                        FAST_BUFFER.fetch_add(1, Ordering::Relaxed);
                    }
                } else {
                    s.k.syscall(&mut s.mem, &mut s.plat);
                    let answer = Sysno::from_u32(nr) == Some(Sysno::Checkpoint);
                    event(&mut s, CheckpointEvent::Syscall, !answer || raw_a0 % 8 != 0)?;
                }
                if s.k.task_state(t) == TaskState::Ready && nr != Sysno::Exit as u32 {
                    let a0 = s.k.context(t).regs[10];
                    prop_assert!(
                        a0 == 0 || Error::from_u32(a0).is_some(),
                        "syscall {nr} {args:?} returned undocumented status {a0}"
                    );
                    if let Some(sn) = Sysno::from_u32(nr) {
                        OUTCOMES[sn as usize][(a0 as usize).min(15)]
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    if Sysno::from_u32(nr).is_none() {
                        prop_assert_eq!(a0, Error::BadSyscall as u32);
                    }
                }
            }
            Op::Poke { task, at, words } => {
                let mut bytes = Vec::with_capacity(36);
                for w in desc(task, &words) {
                    bytes.extend_from_slice(&w.to_le_bytes());
                }
                s.mem.put(at, &bytes);
            }
            Op::Tick { advance } => {
                s.plat.now += u64::from(advance);
                s.k.tick(&mut s.plat);
                // Sometimes the NVM fails, and sometimes the power.
                event(&mut s, CheckpointEvent::Tick, advance % 8 != 0)?;
                if advance % 64 == 5 {
                    event(&mut s, CheckpointEvent::PowerFailure, true)?;
                }
            }
            Op::Irq { irq } => {
                s.k.irq(irq);
            }
            Op::Fault { mcause, addr } => {
                s.k.fault(Fault::from_mcause(mcause), addr);
            }
            Op::Ipc { .. } => unreachable!("made a syscall above"),
        }
        if i % 16 == 0 {
            check(&s, &format!("op {i}: {op:?}"))?;
        }
        if i % 100 == 99 {
            power_cut(&mut s)?;
        }
    }
    check(&s, "the last op")
}

#[test]
fn random_syscalls_never_panic_and_keep_every_tree_invariant() {
    let config = Config {
        cases: 160,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let result = runner.run(&prop::collection::vec(any::<(u8, [u32; 9])>(), 1000), run);
    if let Err(e) = result {
        panic!("{e}");
    }
    println!("fuzz outcomes per syscall, by status 0..=15 (15 = 15 or above):");
    for (i, row) in OUTCOMES.iter().enumerate() {
        let v: Vec<u64> = row.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        println!("{:?}: {:?}", Sysno::from_u32(i as u32).unwrap(), v);
    }
    let n = SYSCALLS.load(Ordering::Relaxed);
    let fast = FAST.each_ref().map(|a| a.load(Ordering::Relaxed));
    let figures = format!(
        "{n} syscalls ({} by the fast path, equal to the general path's: Null {}, Call {}, ReplyRecv {}; {} of the calls through the IPC buffer), {} reboots, {} checkpoint/restore cycles, {} persist phases",
        fast.iter().sum::<u64>(),
        fast[0],
        fast[1],
        fast[2],
        FAST_BUFFER.load(Ordering::Relaxed),
        REBOOTS.load(Ordering::Relaxed),
        POWER_CUTS.load(Ordering::Relaxed),
        PERSIST_PHASES.load(Ordering::Relaxed)
    );
    println!("fuzz: {figures}");
    assert!(
        n >= 100_000,
        "the fuzzer must issue at least 100,000 syscalls, issued {n}"
    );
    assert!(
        fast.iter().all(|&f| f >= 100),
        "the fuzzer must drive each fast path at least 100 times: {fast:?}"
    );
    let buffer = FAST_BUFFER.load(Ordering::Relaxed);
    assert!(
        buffer >= 100,
        "the fuzzer must drive the fast path through IPC buffers at least 100 times: {buffer}"
    );
    amber_test_summary::record(&format!(
        "syscall fuzz (host, kernel/core): {figures}; no panic, documented errors only, invariants held"
    ));
}
