//! The commit watch, as specifications: who may register which block and notification,
//! that a commit hands the task exactly the value its counter had in the committed
//! checkpoint (not the value it has now), that a failed checkpoint writes and signals
//! nothing, that a restore signals the restore bits, that a watch is checkpointed with
//! its thread and ends with its notification, its memory or its thread, and that
//! everything the protocol changes is marked dirty for the next checkpoint.

mod common;

use amber_core::{
    abi::{Error, Sysno, TaskState, COMMITTED_OFFSET, COMMIT_WATCH_SIZE, WATCHED_OFFSET},
    CapSpec, CheckpointEvent, Fault, FaultPolicy, Kernel, MemKind, RestoreError, Step, MAX_OBJECTS,
};
use common::{
    code, data, records, Sys, ALL, CODE_SIZE, DEVICE_BASE, R, RW, SHARED_BASE, TASK_SIZE, W,
};

/// drv's capability slots.
const NOTIF: u32 = 0;
const ENDPOINT: u32 = 1;
const READ_ONLY_NOTIF: u32 = 2;
const DEVICE: u32 = 3;
const SHARED: u32 = 4;
const WRITE_ONLY_NOTIF: u32 = 5;

const DRV: [CapSpec; 6] = [
    CapSpec::Notification {
        name: "n",
        rights: ALL,
    },
    CapSpec::Endpoint {
        name: "ep",
        rights: ALL,
        badge: 0,
    },
    CapSpec::Notification {
        name: "ro",
        rights: R,
    },
    CapSpec::MemObj {
        base: DEVICE_BASE,
        len: 0x100,
        rights: RW,
        kind: MemKind::Device,
    },
    CapSpec::MemObj {
        base: SHARED_BASE,
        len: 0x100,
        rights: ALL,
        kind: MemKind::Checkpointed,
    },
    CapSpec::Notification {
        name: "n2",
        rights: W,
    },
];
/// w's slot 0 is the same notification as drv's slot 0.
const WAITER: [CapSpec; 1] = [CapSpec::Notification {
    name: "n",
    rights: ALL,
}];

const COMMIT: u32 = 0x1;
const RESTORE: u32 = 0x100;

/// drv (task 0, restarts on faults), w (task 1) waiting on drv's notification, and
/// other (task 2).
fn system() -> Sys {
    let mut tasks = [
        common::task("drv", 1, &DRV),
        common::task("w", 1, &WAITER),
        common::task("other", 1, &[]),
    ];
    tasks[0].fault = FaultPolicy::Restart;
    Sys::boot(&tasks)
}

/// drv's usual watch block, in its data region.
fn block() -> u32 {
    data(0) + 0x100
}

fn put_u64(s: &mut Sys, addr: u32, v: u64) {
    s.mem.put(addr, &v.to_le_bytes());
}

fn get_u64(s: &Sys, addr: u32) -> u64 {
    u64::from_le_bytes(s.mem.get(addr, 8).try_into().unwrap())
}

fn watched(at: u32) -> u32 {
    at + WATCHED_OFFSET
}

fn committed(at: u32) -> u32 {
    at + COMMITTED_OFFSET
}

fn watch(s: &mut Sys, ptr: u32, slot: u32) -> Result<(), Error> {
    s.sys(
        "drv",
        Sysno::CommitWatch,
        [ptr, slot, COMMIT, RESTORE, 0, 0],
    )
    .status()
}

/// A checkpoint falls due and commits.
fn commit(s: &mut Sys) {
    s.checkpoint(true);
}

/// The bits pending on drv's notification (taken by a Poll from w).
fn poll(s: &mut Sys) -> u32 {
    let r = s.sys("w", Sysno::Poll, [0; 6]);
    assert_eq!(r.status(), Ok(()));
    r.r[0]
}

/// A power cut: a new kernel restored from `recs`, over a copy of memory.
fn reboot(s: &Sys, recs: &[(u16, Vec<u8>)]) -> Result<Sys, RestoreError> {
    let mut plat = s.plat.clone();
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

#[test]
fn commit_watch_needs_sixteen_bytes_the_task_may_read_and_write_outside_device_memory() {
    let mut s = system();
    let data_end = data(0) + (TASK_SIZE - CODE_SIZE);
    let bad = [
        (code(0), "read-only code"),
        (
            code(0) + CODE_SIZE - 8,
            "straddles code and data: two regions",
        ),
        (data_end - 8, "runs past the end of the data region"),
        (DEVICE_BASE, "device memory, even with READ and WRITE"),
        (u32::MAX - 7, "wraps"),
        (data(1), "another task's memory"),
        (SHARED_BASE + 0xF8, "runs past the end of the MemObj"),
    ];
    for (ptr, why) in bad {
        assert_eq!(
            watch(&mut s, ptr, NOTIF),
            Err(Error::BadPointer),
            "{ptr:#x}: {why}"
        );
    }
    let before = s.mem.bytes.clone();
    commit(&mut s);
    assert_eq!(s.mem.bytes, before, "no refused call left a watch behind");
    assert_eq!(poll(&mut s), 0, "and nothing was signalled");

    assert_eq!(watch(&mut s, data_end - 16, NOTIF), Ok(()), "exact fit");
    assert_eq!(
        watch(&mut s, SHARED_BASE, NOTIF),
        Ok(()),
        "memory held through a MemObj cap"
    );
}

#[test]
fn commit_watch_needs_a_notification_capability_with_write() {
    let mut s = system();
    let cases = [
        (16, Error::BadSlot),
        (9, Error::EmptySlot),
        (ENDPOINT, Error::WrongKind),
        (DEVICE, Error::WrongKind),
        (READ_ONLY_NOTIF, Error::NoRights),
    ];
    for (slot, e) in cases {
        assert_eq!(watch(&mut s, block(), slot), Err(e), "slot {slot}");
    }
    assert_eq!(
        watch(&mut s, block(), WRITE_ONLY_NOTIF),
        Ok(()),
        "WRITE is enough"
    );
}

#[test]
fn a_new_watch_replaces_the_old_a_refused_call_keeps_it_and_a_null_pointer_removes_it() {
    let mut s = system();
    let (first, second) = (block(), block() + 0x40);
    put_u64(&mut s, watched(first), 11);
    put_u64(&mut s, watched(second), 22);
    assert_eq!(watch(&mut s, first, NOTIF), Ok(()));
    assert_eq!(watch(&mut s, second, NOTIF), Ok(()));
    assert_eq!(watch(&mut s, code(0), NOTIF), Err(Error::BadPointer));
    assert_eq!(watch(&mut s, first, ENDPOINT), Err(Error::WrongKind));
    commit(&mut s);
    assert_eq!(get_u64(&s, committed(first)), 0, "the old watch is gone");
    assert_eq!(
        get_u64(&s, committed(second)),
        22,
        "one watch per thread: the newest one, untouched by refused calls"
    );
    assert_eq!(poll(&mut s), COMMIT);

    assert_eq!(
        s.sys("drv", Sysno::CommitWatch, [0, 99, 7, 7, 0, 0])
            .status(),
        Ok(()),
        "a null pointer removes the watch; the other arguments are not looked at"
    );
    put_u64(&mut s, watched(second), 33);
    commit(&mut s);
    assert_eq!(get_u64(&s, committed(second)), 22, "nothing written");
    assert_eq!(poll(&mut s), 0, "nothing signalled");
    assert_eq!(
        s.sys("drv", Sysno::CommitWatch, [0, 99, 7, 7, 0, 0])
            .status(),
        Ok(()),
        "removing no watch is fine"
    );
}

#[test]
fn a_commit_hands_over_the_value_the_counter_had_in_the_checkpoint_not_the_current_one() {
    let mut s = system();
    let b = block();
    assert_eq!(watch(&mut s, b, NOTIF), Ok(()));
    put_u64(&mut s, watched(b), 5);
    let step = s.due();
    // The task runs on while the checkpoint is written.
    put_u64(&mut s, watched(b), 9);
    assert_eq!(s.written(step, true), Step::Run);
    assert_eq!(
        get_u64(&s, committed(b)),
        5,
        "the committed half holds the value the checkpoint holds"
    );
    assert_eq!(
        get_u64(&s, watched(b)),
        9,
        "the kernel never writes the watched half"
    );
    assert_eq!(poll(&mut s), COMMIT, "the commit bits are signalled");

    put_u64(&mut s, watched(b), u64::MAX - 1);
    commit(&mut s);
    assert_eq!(
        get_u64(&s, committed(b)),
        u64::MAX - 1,
        "all 64 bits, little-endian"
    );
    assert_eq!(poll(&mut s), COMMIT, "once per committed checkpoint");
    assert_eq!(poll(&mut s), 0);
}

#[test]
fn a_commit_wakes_a_task_waiting_on_the_watch_notification() {
    let mut s = system();
    assert_eq!(watch(&mut s, block(), NOTIF), Ok(()));
    s.sys("w", Sysno::Wait, [0; 6]);
    assert_eq!(s.state("w"), TaskState::Blocked);
    commit(&mut s);
    assert_eq!(s.state("w"), TaskState::Ready, "woken as by Signal");
    assert_eq!(
        (s.regs("w").status(), s.regs("w").r[0]),
        (Ok(()), COMMIT),
        "with the commit bits"
    );
}

#[test]
fn a_failed_checkpoint_writes_and_signals_nothing() {
    let mut s = system();
    let b = block();
    assert_eq!(watch(&mut s, b, NOTIF), Ok(()));
    put_u64(&mut s, watched(b), 5);
    let before = s.mem.bytes.clone();
    s.checkpoint(false);
    assert_eq!(s.mem.bytes, before, "nothing written");
    assert_eq!(poll(&mut s), 0, "nothing signalled");
}

#[test]
fn a_restore_signals_every_watch_restore_bits_and_writes_nothing() {
    let mut s = system();
    let b = block();
    put_u64(&mut s, watched(b), 5);
    assert_eq!(watch(&mut s, b, NOTIF), Ok(()));
    s.sys("w", Sysno::Wait, [0; 6]);
    let recs = records(&s.k);
    let mut r = reboot(&s, &recs).expect("own records restore");
    assert_eq!(r.state("w"), TaskState::Blocked, "w still waits");
    assert_eq!(r.event(CheckpointEvent::Restored), Step::Run);
    r.k.check_invariants().unwrap();
    assert_eq!(r.state("w"), TaskState::Ready, "the restore woke w");
    assert_eq!(r.regs("w").r[0], RESTORE, "with the restore bits only");
    assert_eq!(r.mem.bytes, s.mem.bytes, "a restore writes no task memory");
}

#[test]
fn a_watch_is_checkpointed_with_its_thread() {
    let mut s = system();
    let b = block();
    assert_eq!(watch(&mut s, b, NOTIF), Ok(()));
    let recs = records(&s.k);
    let mut r = reboot(&s, &recs).expect("own records restore");
    assert_eq!(records(&r.k), recs, "the watch re-encodes unchanged");
    put_u64(&mut r, watched(b), 77);
    commit(&mut r);
    assert_eq!(
        get_u64(&r, committed(b)),
        77,
        "the restored watch still works"
    );
    assert_eq!(poll(&mut r), COMMIT, "and still signals its notification");
}

#[test]
fn the_protocol_changes_objects_only_through_the_dirty_guard() {
    let mut s = system();
    assert_eq!(watch(&mut s, block(), NOTIF), Ok(()));
    s.sys("w", Sysno::Wait, [0; 6]);
    let w = s.tid("w").index() as u16;
    let dirty =
        |k: &Kernel| -> Vec<u16> { (0..MAX_OBJECTS as u16).filter(|&i| k.is_dirty(i)).collect() };
    s.k.clear_dirty();
    let step = s.due();
    assert_eq!(
        dirty(&s.k),
        Vec::<u16>::new(),
        "a snapshot changes no object"
    );
    assert_eq!(s.written(step, false), Step::Run);
    assert_eq!(dirty(&s.k), Vec::<u16>::new(), "nor does a failure");
    commit(&mut s);
    assert!(
        dirty(&s.k).contains(&w),
        "the commit woke w with the bits: w is dirty"
    );
    s.k.clear_dirty();
    commit(&mut s);
    let notif = dirty(&s.k);
    assert_eq!(notif.len(), 1, "with no waiter, the notification changes");
    assert_eq!(poll(&mut s), COMMIT);

    let recs = records(&s.k);
    let mut r = reboot(&s, &recs).unwrap();
    assert_eq!(r.event(CheckpointEvent::Restored), Step::Run);
    assert_eq!(
        dirty(&r.k),
        notif,
        "the restore bits are in the notification and go into the next checkpoint"
    );
}

#[test]
fn a_watch_ends_with_its_notification() {
    let mut s = system();
    assert_eq!(watch(&mut s, block(), NOTIF), Ok(()));
    assert_eq!(
        s.sys("drv", Sysno::ObjDelete, [NOTIF, 0, 0, 0, 0, 0])
            .status(),
        Ok(())
    );
    let before = s.mem.bytes.clone();
    commit(&mut s);
    assert_eq!(s.mem.bytes, before, "the watch went with its notification");
}

#[test]
fn a_watch_whose_memory_the_task_lost_is_skipped() {
    let mut s = system();
    let b = SHARED_BASE + 0x10;
    put_u64(&mut s, watched(b), 3);
    assert_eq!(watch(&mut s, b, NOTIF), Ok(()));
    assert_eq!(
        s.sys("drv", Sysno::CapDelete, [SHARED, 0, 0, 0, 0, 0])
            .status(),
        Ok(())
    );
    // From now on the kernel may touch only the tasks' own regions.
    s.mem.oracle = Some(
        (0..3)
            .flat_map(|i| common::regions(i).map(|r| (r.base, r.len, r.rights.contains(W))))
            .collect(),
    );
    commit(&mut s);
    assert_eq!(poll(&mut s), 0, "a skipped watch signals nothing");
    s.mem.oracle = None;
    assert_eq!(get_u64(&s, committed(b)), 0);
}

#[test]
fn a_watch_ends_when_its_thread_exits_or_restarts() {
    let mut s = system();
    let b = block();
    assert_eq!(watch(&mut s, b, NOTIF), Ok(()));
    s.switch_to("drv");
    s.k.fault(Fault::IllegalInstruction, 0);
    assert_eq!(s.state("drv"), TaskState::Ready, "drv restarted");
    put_u64(&mut s, watched(b), 4);
    commit(&mut s);
    assert_eq!(
        get_u64(&s, committed(b)),
        0,
        "the restarted code did not ask for a watch"
    );

    assert_eq!(watch(&mut s, b, NOTIF), Ok(()));
    s.sys("drv", Sysno::Exit, [0; 6]);
    commit(&mut s);
    assert_eq!(get_u64(&s, committed(b)), 0, "an exited task has no watch");
    assert_eq!(poll(&mut s), 0);
}

#[test]
fn restore_refuses_a_thread_record_with_a_malformed_watch() {
    let mut s = system();
    assert_eq!(watch(&mut s, block(), NOTIF), Ok(()));
    let recs = records(&s.k);
    let drv = s.tid("drv").index() as u16;
    let at = recs.iter().position(|(i, _)| *i == drv).unwrap();
    let refuse = |edit: &dyn Fn(&mut Vec<u8>)| -> RestoreError {
        let mut r = recs.clone();
        edit(&mut r[at].1);
        reboot(&s, &r).err().expect("these records must be refused")
    };
    let endpoint =
        s.k.live_objects()
            .find(|(_, k)| *k == amber_core::abi::ObjKind::Endpoint)
            .unwrap()
            .0;

    assert_eq!(
        refuse(&|b| b[168..172].fill(0)),
        RestoreError::BadValue {
            item: drv,
            field: "unused commit watch fields"
        },
        "no watch but a notification and bits"
    );
    assert_eq!(
        refuse(&|b| b[172..174].copy_from_slice(&200u16.to_le_bytes())),
        RestoreError::BadObjId {
            item: drv,
            value: 200
        }
    );
    assert!(matches!(
        refuse(&|b| b[172..174].copy_from_slice(&endpoint.to_le_bytes())),
        RestoreError::Inconsistent(v) if v.what == "a commit watch signals a live notification"
    ));
    assert!(matches!(
        refuse(&|b| b[136] = 1),
        RestoreError::Inconsistent(v) if v.what == "an exited thread has no commit watch"
    ));
    assert_eq!(
        refuse(&|b| {
            b[0] = 1;
            b.truncate(168);
        }),
        RestoreError::BadVersion {
            item: drv,
            version: 1
        },
        "a record from before commit watches is refused by version"
    );
    assert_eq!(COMMIT_WATCH_SIZE, 16);
}
