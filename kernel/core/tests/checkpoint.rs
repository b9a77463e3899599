//! Checkpointing the kernel state machine, as specifications: every object kind
//! survives encode -> restore -> encode unchanged, a restored kernel behaves exactly
//! like the original, the dirty bits never miss a changed object, corrupted records
//! give a named error or a consistent tree (never a panic), and the `Checkpoint`
//! syscall's protocol, including a thread that waits in `Checkpoint` being in the
//! checkpoint it waits for. Interrupts and timers across a restore follow the rules
//! documented on `IrqNotification` and `Timer`.

mod common;

use std::cell::Cell;

use amber_core::{
    abi::{ipc_buffer_msg, Error, IpcBuffer, ObjKind, Sysno, TaskState, WatchFlags, NO_SLOT},
    CapSpec, Cause, CheckpointEvent, Kernel, MemKind, RestoreError, Step, ThreadId, MAX_OBJECTS,
};
use common::{records, Sys, ALL, G, R, RW, SHARED_BASE, W};
use proptest::{
    prelude::*,
    test_runner::{Config, RngAlgorithm, TestRng, TestRunner},
};

/// Every entry's record (empty for free entries), indexed by arena index.
fn encodings(k: &Kernel) -> Vec<Vec<u8>> {
    (0..MAX_OBJECTS as u16)
        .map(|i| {
            let mut buf = [0u8; Kernel::RECORD_MAX];
            let n = k.encode_object(i, &mut buf);
            buf[..n].to_vec()
        })
        .collect()
}

/// A power cut: a new kernel restored from `recs`, with copies of memory and the
/// clock (task memory and time are the checkpoint manager's and the board's job).
fn reboot(s: &Sys, recs: &[(u16, Vec<u8>)]) -> Result<Sys, RestoreError> {
    let mut plat = s.plat.clone();
    plat.enabled.clear();
    let mut k = Box::new(Kernel::new());
    k.restore_into(recs.iter().map(|(i, b)| (*i, b.as_slice())), &mut plat)?;
    k.configure_checkpoints(common::every_tick(u64::MAX, s.version));
    Ok(Sys {
        k,
        mem: s.mem.clone(),
        plat,
        version: s.version,
    })
}

const SRV: [CapSpec; 7] = [
    CapSpec::Endpoint {
        name: "ep",
        rights: ALL,
        badge: 0,
    },
    CapSpec::Notification {
        name: "n",
        rights: ALL,
    },
    CapSpec::Irq { irq: 5 },
    CapSpec::Timer,
    CapSpec::MemObj {
        base: SHARED_BASE,
        len: 0x100,
        rights: ALL,
        kind: MemKind::Eternal,
    },
    CapSpec::NvmRegion {
        offset: 0x400,
        len: 0x1000,
        rights: RW,
    },
    CapSpec::Task { name: "cli" },
];
const CLI: [CapSpec; 2] = [
    CapSpec::Endpoint {
        name: "ep",
        rights: RW.union(G),
        badge: 7,
    },
    CapSpec::Notification {
        name: "n",
        rights: W,
    },
];
const WAITER: [CapSpec; 1] = [CapSpec::Notification {
    name: "n2",
    rights: ALL,
}];
const DRIVER: [CapSpec; 1] = [CapSpec::Irq { irq: 6 }];
const SENDER: [CapSpec; 1] = [CapSpec::Endpoint {
    name: "ep2",
    rights: W,
    badge: 0,
}];
const RECEIVER: [CapSpec; 1] = [CapSpec::Endpoint {
    name: "ep3",
    rights: R,
    badge: 0,
}];

/// The tasks of [`system`], in boot order (task i has the standard regions of i).
const TASKS: [&str; 8] = ["srv", "cli", "w1", "irqd", "snd", "rcv", "ck", "ex"];

fn system() -> Sys {
    Sys::boot(&[
        common::task("srv", 2, &SRV),
        common::task("cli", 2, &CLI),
        common::task("w1", 2, &WAITER),
        common::task("irqd", 2, &DRIVER),
        common::task("snd", 2, &SENDER),
        common::task("rcv", 2, &RECEIVER),
        common::task("ck", 2, &[]),
        common::task("ex", 2, &[]),
    ])
}

/// A system with every object kind and every thread state: ready, exited, blocked in
/// Send, Recv, Reply, Notification, Irq and Checkpoint, a caller owed a reply, an
/// armed timer, pending notification bits and an enabled interrupt.
fn busy() -> Sys {
    let mut s = system();
    assert_eq!(
        s.sys("srv", Sysno::Recv, [0; 6]).a0,
        0,
        "srv waits to receive"
    );
    s.sys("cli", Sysno::Call, [0, 11, 22, 33, 44, 0]);
    assert_eq!(
        s.state("cli"),
        TaskState::Blocked,
        "cli waits for the reply"
    );
    assert_eq!(
        s.regs("srv").r,
        [11, 22, 33, 44, 7],
        "srv got cli's message"
    );
    let r = s.sys("srv", Sysno::TimerSet, [3, 1, 4, 500, 0, 0]);
    assert_eq!(r.status(), Ok(()));
    s.sys("srv", Sysno::Signal, [1, 0x10, 0, 0, 0, 0]);
    s.sys("w1", Sysno::Wait, [0; 6]);
    s.sys("irqd", Sysno::IrqWait, [0; 6]);
    s.sys("snd", Sysno::Send, [0, 1, 2, 3, 4, 0]);
    s.sys("rcv", Sysno::Recv, [0; 6]);
    s.sys("ex", Sysno::Exit, [42, 0, 0, 0, 0, 0]);
    s.sys("ck", Sysno::Checkpoint, [0; 6]);
    for t in ["w1", "irqd", "snd", "rcv", "ck", "cli"] {
        assert_eq!(s.state(t), TaskState::Blocked, "{t} is blocked");
    }
    assert_eq!(s.state("ex"), TaskState::Exited);
    s
}

#[test]
fn every_object_kind_and_thread_state_survives_encode_restore_encode_unchanged() {
    let s = busy();
    let kinds: Vec<ObjKind> = s.k.live_objects().map(|(_, k)| k).collect();
    for k in [
        ObjKind::CapGroup,
        ObjKind::Thread,
        ObjKind::MemObj,
        ObjKind::Endpoint,
        ObjKind::Notification,
        ObjKind::IrqNotification,
        ObjKind::NvmRegion,
        ObjKind::Timer,
    ] {
        assert!(kinds.contains(&k), "the test system must hold a {k:?}");
    }
    let recs = records(&s.k);
    let r = reboot(&s, &recs).expect("a kernel's own records restore");
    assert_eq!(
        records(&r.k),
        recs,
        "re-encoding a restored kernel gives the records it came from"
    );
    assert_eq!(
        r.k.live_objects().collect::<Vec<_>>(),
        s.k.live_objects().collect::<Vec<_>>(),
        "the same objects at the same indices"
    );
    r.k.check_invariants()
        .expect("a restored kernel is consistent");
    for i in 0..MAX_OBJECTS as u16 {
        assert!(!r.k.is_dirty(i), "nothing is dirty right after a restore");
    }
    assert_eq!(
        r.plat.enabled,
        vec![6],
        "the enabled interrupt is enabled again, and only it"
    );
}

#[test]
fn a_restored_kernel_is_a_new_kernel_over_the_old_one_in_place() {
    let s = busy();
    let recs = records(&s.k);
    let mut other = system();
    other.sys("ex", Sysno::Exit, [1, 0, 0, 0, 0, 0]);
    other
        .k
        .restore_into(
            recs.iter().map(|(i, b)| (*i, b.as_slice())),
            &mut other.plat,
        )
        .expect("restore into a running kernel");
    assert_eq!(
        records(&other.k),
        recs,
        "restore_into replaces the old state completely"
    );
}

/// One step of a random run.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// A syscall by whoever is current.
    Sys { nr: u32, args: [u32; 6] },
    /// Time passes and the timer interrupt comes.
    Tick { advance: u8 },
    /// A device interrupt.
    Irq { irq: u32 },
    /// A checkpoint fell due and was written: it committed or failed.
    Done { ok: bool },
}

fn op((sel, w): (u8, [u32; 7])) -> Op {
    match sel % 32 {
        0..=25 => {
            let nr = w[0] % Sysno::ALL.len() as u32;
            let destructive = [
                Sysno::Exit,
                Sysno::CapDelete,
                Sysno::CapRevoke,
                Sysno::ObjDelete,
            ]
            .iter()
            .any(|&d| d as u32 == nr);
            let nr = if destructive && !w[6].is_multiple_of(8) {
                Sysno::Yield as u32
            } else {
                nr
            };
            let args = [
                w[1] % 9,
                if w[2].is_multiple_of(5) {
                    NO_SLOT
                } else {
                    w[2] % 16
                },
                w[3] % 32,
                w[4] % 300,
                w[5] % 3,
                0,
            ];
            Op::Sys { nr, args }
        }
        26..=28 => Op::Tick {
            advance: (w[0] % 200) as u8,
        },
        29 => Op::Irq {
            irq: [5, 6, 9][w[0] as usize % 3],
        },
        _ => Op::Done {
            ok: !w[0].is_multiple_of(4),
        },
    }
}

/// Runs `op` on `s`; `false` when nothing can run any more.
fn apply(s: &mut Sys, op: Op) -> bool {
    match op {
        Op::Sys { nr, args } => {
            if s.k.current().is_none() {
                s.plat.now += 1000;
                s.checkpoint(true);
                s.k.tick(&mut s.plat);
                if s.k.current().is_none() {
                    return false;
                }
            }
            let Some(t) = s.k.current() else {
                return false;
            };
            let mut args = args;
            if nr == Sysno::CommitWatch as u32 && args[0] != 0 {
                // A block in the caller's own data (offset 0..64) or, for a0 = 8,
                // its code (refused).
                let own = TASKS
                    .iter()
                    .position(|&n| n == s.k.task_name(t))
                    .expect("a task of system()");
                args[0] = match args[0] {
                    8 => common::code(own),
                    a => common::data(own) + 8 * a,
                };
                // No bits and no persist callbacks: the two sides of a cut run the
                // watch protocol differently on purpose (commit bits on one, restore
                // bits on the other; tests/watch.rs), and persist phases are
                // tests/persist.rs's.
                args[2] = 0;
                args[3] = 0;
                args[4] &= WatchFlags::SERVES_PERSIST.bits();
            }
            let ctx = s.k.context_mut(t);
            ctx.regs[17] = nr;
            ctx.regs[10..16].copy_from_slice(&args);
            s.k.syscall(&mut s.mem, &mut s.plat);
            // As the glue does: a task's request is written at once.
            let step = s.event(CheckpointEvent::Syscall);
            assert_eq!(s.drive(step, true), Step::Run);
        }
        Op::Tick { advance } => {
            s.plat.now += u64::from(advance);
            s.k.tick(&mut s.plat);
        }
        Op::Irq { irq } => {
            s.k.irq(irq);
        }
        Op::Done { ok } => s.checkpoint(ok),
    }
    true
}

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

fn ops(n: usize) -> impl Strategy<Value = Vec<(u8, [u32; 7])>> {
    prop::collection::vec(any::<(u8, [u32; 7])>(), n)
}

#[test]
fn a_kernel_restored_from_a_checkpoint_behaves_exactly_like_the_original() {
    let result = runner(64).run(&(ops(60), ops(60)), |(before, after)| {
        let mut a = system();
        for o in before.into_iter().map(op) {
            // An interrupt still pending at the cut is dropped by design (see
            // `IrqNotification`), so the runs compared take none before the cut.
            if !matches!(o, Op::Irq { .. }) && !apply(&mut a, o) {
                break;
            }
        }
        // A checkpoint: its records are the state when it falls due; it commits on
        // this side, and the other side comes back from it.
        let step = a.due();
        let recs = records(&a.k);
        prop_assert_eq!(a.written(step, true), Step::Run);
        let mut b = reboot(&a, &recs).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(
            encodings(&a.k),
            encodings(&b.k),
            "restored = original after a successful checkpoint"
        );
        prop_assert_eq!(a.k.current(), b.k.current());
        for (i, o) in after.into_iter().map(op).enumerate() {
            let (ra, rb) = (apply(&mut a, o), apply(&mut b, o));
            prop_assert_eq!(ra, rb);
            prop_assert_eq!(
                encodings(&a.k),
                encodings(&b.k),
                "after op {} ({:?}) the two kernels differ",
                i,
                o
            );
            prop_assert_eq!(a.k.current(), b.k.current());
            prop_assert_eq!(&a.plat.console, &b.plat.console);
            prop_assert_eq!(&a.plat.completed, &b.plat.completed);
            prop_assert_eq!(&a.mem.bytes, &b.mem.bytes);
            b.k.check_invariants()
                .map_err(|v| TestCaseError::fail(format!("{v}")))?;
            if !ra {
                break;
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn the_dirty_bits_never_miss_an_object_whose_record_changed() {
    let changed = Cell::new(0u64);
    let marked = Cell::new(0u64);
    let result = runner(48).run(&ops(150), |raw| {
        let mut s = system();
        for (i, o) in raw.into_iter().map(op).enumerate() {
            s.k.clear_dirty();
            let before = encodings(&s.k);
            let more = apply(&mut s, o);
            let after = encodings(&s.k);
            for j in 0..MAX_OBJECTS {
                let dirty = s.k.is_dirty(j as u16);
                if before[j] != after[j] {
                    changed.set(changed.get() + 1);
                    prop_assert!(
                        dirty,
                        "op {} ({:?}) changed object {} without marking it dirty",
                        i,
                        o,
                        j
                    );
                }
                marked.set(marked.get() + u64::from(dirty));
            }
            if !more {
                break;
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (changed, marked) = (changed.get(), marked.get());
    println!("dirty tracking: {changed} record changes, {marked} dirty marks");
    assert!(
        changed > 1000,
        "the runs must change objects, changed {changed}"
    );
}

/// Which entries are dirty now.
fn dirty(k: &Kernel) -> Vec<u16> {
    (0..MAX_OBJECTS as u16).filter(|&i| k.is_dirty(i)).collect()
}

fn index(t: ThreadId) -> u16 {
    t.index() as u16
}

#[test]
fn a_syscall_marks_exactly_the_objects_it_changes() {
    let mut s = system();
    s.switch_to("srv");
    let srv = index(s.tid("srv"));
    s.k.clear_dirty();
    s.sys("srv", Sysno::Null, [0; 6]);
    assert_eq!(
        dirty(&s.k),
        vec![srv],
        "Null changes only the caller (pc, a0)"
    );

    let notif =
        s.k.live_objects()
            .find(|(_, k)| *k == ObjKind::Notification)
            .map(|(i, _)| i)
            .expect("a notification");
    s.k.clear_dirty();
    s.sys("srv", Sysno::Signal, [1, 0x3, 0, 0, 0, 0]);
    assert_eq!(
        dirty(&s.k),
        vec![notif.min(srv), notif.max(srv)],
        "Signal with no waiter changes the caller and the notification"
    );
    s.k.clear_dirty();
    s.sys("srv", Sysno::Signal, [1, 0x1, 0, 0, 0, 0]);
    assert_eq!(
        dirty(&s.k),
        vec![srv],
        "signalling bits already set changes nothing but the caller"
    );

    s.k.clear_dirty();
    let _ = s.k.check_invariants();
    let _ = records(&s.k);
    let _ = s.k.regions(s.tid("srv")).count();
    let _ = s.k.live_objects().count();
    assert_eq!(dirty(&s.k), Vec::<u16>::new(), "pure reads mark nothing");

    s.k.clear_dirty();
    s.plat.now = 0;
    s.tick();
    let cur = s.k.current().map(index);
    assert_eq!(
        dirty(&s.k).len(),
        1,
        "a tick with no timer due changes only the preempted thread's place"
    );
    assert_ne!(cur, None);
}

#[test]
fn deleting_an_object_marks_its_freed_entry_and_every_group_that_lost_a_cap() {
    let mut s = system();
    let ep =
        s.k.live_objects()
            .find(|(_, k)| *k == ObjKind::Endpoint)
            .map(|(i, _)| i)
            .unwrap();
    s.switch_to("srv");
    s.k.clear_dirty();
    assert_eq!(s.sys("srv", Sysno::ObjDelete, [0; 6]).status(), Ok(()));
    assert!(s.k.is_dirty(ep), "the freed entry is dirty");
    assert!(
        !s.k.live_objects().any(|(i, _)| i == ep),
        "and no longer live: its item must be dropped"
    );
    let srv_group = s.k.live_objects().find(|(_, k)| *k == ObjKind::CapGroup);
    assert!(srv_group.is_some());
    for name in ["srv", "cli"] {
        let g = group_of(&s, name);
        assert!(
            s.k.is_dirty(g),
            "{name}'s CapGroup lost its cap and is dirty"
        );
    }
}

/// The CapGroup index of task `name`: the thread record's group field (offset 134).
fn group_of(s: &Sys, name: &str) -> u16 {
    let mut buf = [0u8; Kernel::RECORD_MAX];
    let n = s.k.encode_object(index(s.tid(name)), &mut buf);
    assert!(n >= 136);
    u16::from_le_bytes([buf[134], buf[135]])
}

#[test]
fn mark_all_dirty_and_clear_dirty_do_what_they_say() {
    let mut s = system();
    s.k.mark_all_dirty();
    assert!((0..MAX_OBJECTS as u16).all(|i| s.k.is_dirty(i)));
    s.k.clear_dirty();
    assert!((0..MAX_OBJECTS as u16).all(|i| !s.k.is_dirty(i)));
    assert!(
        !s.k.is_dirty(MAX_OBJECTS as u16),
        "past the arena is never dirty"
    );
}

#[test]
fn checkpoint_blocks_the_caller_until_the_checkpoint_is_written() {
    let mut s = system();
    assert_eq!(
        s.event(CheckpointEvent::Syscall),
        Step::Run,
        "nobody asked yet"
    );
    s.sys("ck", Sysno::Checkpoint, [0; 6]);
    assert_eq!(s.state("ck"), TaskState::Blocked, "the caller waits");
    let step = s.event(CheckpointEvent::Syscall);
    assert!(
        matches!(step, Step::Write(ref a) if a.cause() == Cause::Requested),
        "the call asks for a checkpoint"
    );
    assert_eq!(s.state("ck"), TaskState::Blocked, "until it is written");
    assert_eq!(s.written(step, true), Step::Run);
    assert_eq!(s.event(CheckpointEvent::Syscall), Step::Run, "once");
    assert_eq!(s.state("ck"), TaskState::Ready);
    assert_eq!(s.regs("ck").a0, 0, "success");

    s.sys("ck", Sysno::Checkpoint, [0; 6]);
    s.sys("ex", Sysno::Checkpoint, [0; 6]);
    let step = s.event(CheckpointEvent::Syscall);
    assert_eq!(s.written(step, false), Step::Run);
    for t in ["ck", "ex"] {
        assert_eq!(s.state(t), TaskState::Ready, "every waiter is answered");
        assert_eq!(
            s.regs(t).status(),
            Err(Error::CheckpointFailed),
            "a failed checkpoint is reported"
        );
    }
    assert_eq!(
        s.event(CheckpointEvent::Syscall),
        Step::Run,
        "an answered request is not pending any more"
    );
}

#[test]
fn a_thread_waiting_in_checkpoint_is_in_that_checkpoint_and_resumes_with_success() {
    let mut s = busy();
    let ck = s.tid("ck");
    let recs = records(&s.k);
    assert_eq!(s.k.task_state(ck), TaskState::Blocked);
    // Power is cut after the commit: the restored ck resumes as if it succeeded.
    let r = reboot(&s, &recs).unwrap();
    assert_eq!(
        r.k.task_state(ck),
        TaskState::Ready,
        "ck is no longer waiting"
    );
    assert_eq!(r.k.context(ck).regs[10], 0, "and its Checkpoint returned 0");
    let mut r = r;
    assert_eq!(
        r.event(CheckpointEvent::Syscall),
        Step::Run,
        "the restored kernel does not ask for the checkpoint it came from"
    );
    // No cut: the original is answered, and is then exactly the restored kernel.
    let step = s.event(CheckpointEvent::Syscall);
    assert_eq!(s.written(step, true), Step::Run);
    assert_eq!(
        encodings(&s.k),
        encodings(&r.k),
        "the record written while ck waited is its state once that checkpoint committed"
    );
    assert_eq!(s.k.current(), r.k.current());
}

#[test]
fn an_enabled_interrupt_is_enabled_again_and_a_pending_one_is_dropped() {
    let mut s = busy();
    let irqd = s.tid("irqd");
    s.k.irq(6);
    assert_eq!(s.k.task_state(irqd), TaskState::Ready, "irqd woke");
    let recs = records(&s.k);
    let mut r = reboot(&s, &recs).unwrap();
    assert_eq!(r.plat.enabled, vec![6], "the source is enabled again");
    assert_eq!(r.k.task_state(irqd), TaskState::Ready, "irqd still resumes");
    assert_eq!(
        r.sys("irqd", Sysno::IrqAck, [0; 6]).status(),
        Err(Error::WrongState),
        "the interrupt delivered before the cut is gone: nothing to acknowledge"
    );
    r.sys("irqd", Sysno::IrqWait, [0; 6]);
    assert_eq!(
        r.state("irqd"),
        TaskState::Blocked,
        "the next IrqWait waits for a new interrupt"
    );
    r.k.irq(6);
    assert_eq!(
        r.state("irqd"),
        TaskState::Ready,
        "which is delivered as usual"
    );
    assert_eq!(r.sys("irqd", Sysno::IrqAck, [0; 6]).status(), Ok(()));
    assert_eq!(r.plat.completed, vec![6]);
}

#[test]
fn a_waiter_for_an_interrupt_keeps_waiting_across_a_restore() {
    let s = busy();
    let r = reboot(&s, &records(&s.k)).unwrap();
    assert_eq!(r.state("irqd"), TaskState::Blocked);
    let mut r = r;
    r.k.irq(6);
    assert_eq!(r.state("irqd"), TaskState::Ready);
}

#[test]
fn an_armed_timer_keeps_its_absolute_deadline_across_a_restore() {
    let s = busy();
    let mut r = reboot(&s, &records(&s.k)).unwrap();
    // srv armed the timer for tick 500 to signal bit 4 of "n" (which holds 0x10).
    r.plat.now = 499;
    r.tick();
    r.switch_to("srv");
    let got = r.sys("srv", Sysno::Poll, [1, 0, 0, 0, 0, 0]);
    assert_eq!(got.r[0], 0x10, "not yet at 499");
    r.plat.now = 10_000;
    r.tick();
    let got = r.sys("srv", Sysno::Poll, [1, 0, 0, 0, 0, 0]);
    assert_eq!(
        got.r[0], 4,
        "a deadline passed while off fires at the first tick"
    );
}

fn restore_err(recs: &[(u16, Vec<u8>)]) -> RestoreError {
    let mut plat = common::FakePlat::default();
    let mut k = Box::new(Kernel::new());
    let e = k
        .restore_into(recs.iter().map(|(i, b)| (*i, b.as_slice())), &mut plat)
        .expect_err("these records must be refused");
    assert!(plat.enabled.is_empty(), "a refused restore enables nothing");
    assert_eq!(
        k.current(),
        None,
        "a refused restore leaves an empty kernel"
    );
    assert_eq!(k.live_objects().count(), 0);
    e
}

#[test]
fn ipc_buffers_survive_a_restore_and_take_messages_after_it() {
    let mut s = system();
    let (srv_buf, cli_buf) = (common::data(0) + 0x100, common::data(1) + 0x100);
    for (name, at) in [("srv", srv_buf), ("cli", cli_buf)] {
        let r = s.sys(name, Sysno::SetIpcBuffer, [at, 0, 0, 0, 0, 0]);
        assert_eq!(r.status(), Ok(()));
    }
    let recs = records(&s.k);
    let mut s = reboot(&s, &recs).expect("own records restore");
    let hello = *b"restored";
    s.mem.put(cli_buf + IpcBuffer::BYTES_OFFSET, &hello);
    s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, ipc_buffer_msg(0)]);
    let sent = s.sys("cli", Sysno::Send, [0, 1, 2, 3, 4, ipc_buffer_msg(8)]);
    assert_eq!(sent.status(), Ok(()), "cli's buffer is still registered");
    assert_eq!(s.regs("srv").status(), Ok(()), "so is srv's");
    assert_eq!(s.mem.get(srv_buf + IpcBuffer::BYTES_OFFSET, 8), hello);
    assert_eq!(s.mem.get(srv_buf, 4), 8u32.to_le_bytes(), "got_len");
}

#[test]
fn restore_refuses_bad_records_with_a_named_error() {
    let s = busy();
    let recs = records(&s.k);
    let thread = recs
        .iter()
        .position(|(i, _)| *i == index(s.tid("srv")))
        .unwrap();
    let item = recs[thread].0;

    assert_eq!(restore_err(&[]), RestoreError::NoRoot);
    let mut r = recs.clone();
    r.push((MAX_OBJECTS as u16, r[0].1.clone()));
    assert_eq!(
        restore_err(&r),
        RestoreError::ItemOutOfRange {
            item: MAX_OBJECTS as u16
        }
    );
    let mut r = recs.clone();
    r.push(r[0].clone());
    assert_eq!(restore_err(&r), RestoreError::DuplicateItem { item: 0 });
    let mut r = recs.clone();
    r[thread].1[0] = 9;
    assert_eq!(
        restore_err(&r),
        RestoreError::BadVersion { item, version: 9 }
    );
    let mut r = recs.clone();
    r[thread].1[1] = 0;
    assert_eq!(restore_err(&r), RestoreError::BadKind { item, kind: 0 });
    let mut r = recs.clone();
    r[thread].1.pop();
    assert_eq!(restore_err(&r), RestoreError::Truncated { item });
    let mut r = recs.clone();
    r[thread].1.push(0);
    assert_eq!(restore_err(&r), RestoreError::TrailingBytes { item });
    let mut r = recs.clone();
    r[thread].1[144] = 8;
    assert_eq!(
        restore_err(&r),
        RestoreError::BadValue {
            item,
            field: "priority"
        }
    );
    let mut r = recs.clone();
    r[thread].1[136] = 7;
    assert_eq!(
        restore_err(&r),
        RestoreError::BadTag {
            item,
            field: "thread state",
            value: 7
        }
    );
    // The IPC buffer (bytes 2..6): aligned, and in the thread's own read-write memory.
    let mut r = recs.clone();
    r[thread].1[2..6].copy_from_slice(&(common::data(0) + 2).to_le_bytes());
    assert_eq!(
        restore_err(&r),
        RestoreError::BadValue {
            item,
            field: "IPC buffer address"
        }
    );
    let mut r = recs.clone();
    r[thread].1[2..6].copy_from_slice(&common::code(0).to_le_bytes());
    assert!(
        matches!(restore_err(&r), RestoreError::Inconsistent(v)
            if v.what == "an IPC buffer is aligned and lies in its group's own read-write memory"),
        "a buffer in read-only code is refused"
    );
    let mut r = recs.clone();
    r[thread].1[134..136].copy_from_slice(&200u16.to_le_bytes());
    assert_eq!(restore_err(&r), RestoreError::BadObjId { item, value: 200 });
    let mut r = recs.clone();
    r.remove(thread);
    assert!(
        matches!(restore_err(&r), RestoreError::Inconsistent(v)
            if v.what == "every task CapGroup owns a thread that points back to it"),
        "a missing thread leaves its CapGroup without one"
    );
}

#[test]
fn corrupted_records_give_an_error_or_a_consistent_kernel_never_a_panic() {
    let base = busy();
    let recs = records(&base.k);
    let n = recs.len();
    let restored = Cell::new(0u32);
    let refused = Cell::new(0u32);
    let strategy = (
        prop::collection::vec((0..n, any::<u16>(), any::<u8>()), 1..4),
        0u8..8,
        any::<u16>(),
        ops(20),
    );
    let result = runner(1500).run(&strategy, |(flips, shape, extra, after)| {
        let mut r = recs.clone();
        for (rec, at, x) in flips {
            let b = &mut r[rec].1;
            let at = usize::from(at) % b.len();
            b[at] ^= x.max(1);
        }
        let pick = usize::from(extra) % n;
        match shape {
            0 => {
                r[pick].1.truncate(usize::from(extra) % 8);
            }
            1 => r[pick].0 = extra % 80,
            2 => {
                r.remove(pick);
            }
            _ => {}
        }
        let mut s = Sys {
            k: Box::new(Kernel::new()),
            mem: base.mem.clone(),
            plat: base.plat.clone(),
            version: 0,
        };
        match s
            .k
            .restore_into(r.iter().map(|(i, b)| (*i, b.as_slice())), &mut s.plat)
        {
            Err(_) => refused.set(refused.get() + 1),
            Ok(()) => {
                restored.set(restored.get() + 1);
                s.k.configure_checkpoints(common::every_tick(u64::MAX, 0));
                s.k.check_invariants()
                    .map_err(|v| TestCaseError::fail(format!("restored: {v}")))?;
                for o in after.into_iter().map(op) {
                    if !apply(&mut s, o) {
                        break;
                    }
                    s.k.check_invariants()
                        .map_err(|v| TestCaseError::fail(format!("after {o:?}: {v}")))?;
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (restored, refused) = (restored.get(), refused.get());
    assert!(refused > 0 && restored > 0, "both outcomes must occur");
    amber_test_summary::record(&format!(
        "corrupted kernel records (host, kernel/core): {restored} consistent restores, {refused} refused, no panic"
    ));
}
