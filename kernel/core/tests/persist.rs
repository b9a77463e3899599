//! Persist phases, as specifications: who is asked to persist and how (`Recv` returns
//! `Interrupted`, from `Checkpoint` too), that nobody but the callbacks and the
//! services they use runs until every callback said `PersistDone`, that the phase then
//! ends exactly once with the bounds the callbacks declared, that a callback that
//! ended is not waited for, that an abandoned phase lets everyone run again, that the
//! flags are checked and checkpointed with the watch, and that a restore starts with
//! no phase.

mod common;

use amber_core::{
    abi::{Error, Sysno, TaskState, WatchFlags},
    CapSpec, Kernel, PersistEnd,
};
use common::{data, Sys, ALL};

const NOTIF: u32 = 0;
const EP: u32 = 1;

const CAPS: [CapSpec; 2] = [
    CapSpec::Notification {
        name: "n",
        rights: ALL,
    },
    CapSpec::Endpoint {
        name: "svc",
        rights: ALL,
        badge: 0,
    },
];

/// svc (a heap service), drv (the driver it uses) and app (an ordinary task), all of
/// one priority; app is first in line.
fn system() -> Sys {
    Sys::boot(&[
        common::task("app", 1, &CAPS),
        common::task("svc", 1, &CAPS),
        common::task("drv", 1, &CAPS),
    ])
}

fn index(name: &str) -> usize {
    ["app", "svc", "drv"]
        .iter()
        .position(|n| *n == name)
        .unwrap()
}

fn watch(s: &mut Sys, name: &str, flags: u32) -> Result<(), Error> {
    let block = data(index(name)) + 0x100;
    s.sys(name, Sysno::CommitWatch, [block, NOTIF, 0, 0, flags, 0])
        .status()
}

/// svc is a callback and drv serves it.
fn with_callbacks() -> Sys {
    let mut s = system();
    assert_eq!(
        watch(&mut s, "svc", WatchFlags::PERSIST_CALLBACK.bits()),
        Ok(())
    );
    assert_eq!(
        watch(&mut s, "drv", WatchFlags::SERVES_PERSIST.bits()),
        Ok(())
    );
    s
}

/// Who runs over the next few ticks.
fn runners(s: &mut Sys) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..6 {
        if let Some(n) = s.current_name() {
            if !seen.contains(&n) {
                seen.push(n);
            }
        }
        s.tick();
    }
    seen.sort();
    seen
}

#[test]
fn without_a_callback_no_phase_starts_and_the_checkpoint_is_taken_at_once() {
    let mut s = system();
    assert_eq!(
        watch(&mut s, "drv", WatchFlags::SERVES_PERSIST.bits()),
        Ok(())
    );
    assert!(
        !s.k.begin_persist(),
        "a serving driver alone persists nothing"
    );
    assert!(!s.k.persist_active());
    assert_eq!(runners(&mut s), ["app", "drv", "svc"]);
}

#[test]
fn a_callback_waiting_in_recv_is_interrupted_and_only_servers_run_until_it_is_done() {
    let mut s = with_callbacks();
    // svc waits for requests.
    s.switch_to("svc");
    s.sys("svc", Sysno::Recv, [EP, 0, 0, 0, 0, 0]);
    assert_eq!(s.state("svc"), TaskState::Blocked);

    assert!(s.k.begin_persist());
    assert!(s.k.persist_active());
    assert_eq!(s.state("svc"), TaskState::Ready);
    assert_eq!(
        s.regs("svc").status(),
        Err(Error::Interrupted),
        "the Recv ends with Interrupted"
    );
    assert_eq!(runners(&mut s), ["drv", "svc"], "app is stopped");
    assert!(!s.k.begin_persist(), "a second request joins the phase");
    assert_eq!(s.k.take_persist_complete(), None, "svc has not persisted");

    // Asked to persist, every Recv is interrupted at once.
    let r = s.sys("svc", Sysno::Recv, [EP, 0, 0, 0, 0, 0]);
    assert_eq!(r.status(), Err(Error::Interrupted));
    assert_eq!(s.state("svc"), TaskState::Ready);

    assert_eq!(
        s.sys("svc", Sysno::PersistDone, [5000, 0, 0, 0, 0, 0])
            .status(),
        Ok(())
    );
    assert_eq!(
        s.k.take_persist_complete(),
        Some(PersistEnd {
            declared_bound: 5000
        })
    );
    assert_eq!(s.k.take_persist_complete(), None, "exactly once");
    assert!(!s.k.persist_active());
    s.k.checkpoint_done(true);
    assert_eq!(runners(&mut s), ["app", "drv", "svc"]);
    assert_eq!(
        s.sys("svc", Sysno::PersistDone, [0; 6]).status(),
        Err(Error::WrongState),
        "nothing is asked any more"
    );
}

#[test]
fn a_running_callback_is_asked_at_its_next_recv() {
    let mut s = with_callbacks();
    assert_eq!(s.state("svc"), TaskState::Ready);
    assert!(s.k.begin_persist());
    assert_eq!(s.state("svc"), TaskState::Ready, "nothing to wake");
    assert_eq!(
        s.sys("svc", Sysno::Recv, [EP, 0, 0, 0, 0, 0]).status(),
        Err(Error::Interrupted)
    );
    // Its other calls work as always (it writes through the driver, say).
    assert_eq!(
        s.sys("svc", Sysno::Signal, [NOTIF, 1, 0, 0, 0, 0]).status(),
        Ok(())
    );
    assert_eq!(s.sys("svc", Sysno::PersistDone, [0; 6]).status(), Ok(()));
    assert_eq!(
        s.k.take_persist_complete(),
        Some(PersistEnd { declared_bound: 0 })
    );
}

#[test]
fn persist_done_without_a_request_is_refused_and_unknown_flags_are_bad_arguments() {
    let mut s = with_callbacks();
    assert_eq!(
        s.sys("svc", Sysno::PersistDone, [0; 6]).status(),
        Err(Error::WrongState)
    );
    assert_eq!(
        s.sys("app", Sysno::PersistDone, [0; 6]).status(),
        Err(Error::WrongState)
    );
    assert!(s.k.begin_persist());
    assert_eq!(
        s.sys("drv", Sysno::PersistDone, [0; 6]).status(),
        Err(Error::WrongState),
        "a serving driver is not asked"
    );
    assert_eq!(watch(&mut s, "drv", 4), Err(Error::BadArgument));
    assert_eq!(watch(&mut s, "drv", u32::MAX), Err(Error::BadArgument));
}

#[test]
fn a_callback_that_asks_for_a_checkpoint_persists_with_the_world_stopped() {
    let mut s = with_callbacks();
    s.sys("svc", Sysno::Checkpoint, [0; 6]);
    assert_eq!(s.state("svc"), TaskState::Blocked);
    assert!(s.k.take_checkpoint_request());
    assert!(
        s.k.begin_persist(),
        "the checkpoint svc asked for starts a phase like any other"
    );
    assert_eq!(
        s.regs("svc").status(),
        Err(Error::Interrupted),
        "its Checkpoint ends with Interrupted: persist now"
    );
    assert_eq!(runners(&mut s), ["drv", "svc"], "app is stopped");
    assert_eq!(
        s.sys("svc", Sysno::Checkpoint, [0; 6]).status(),
        Err(Error::Interrupted),
        "asked to persist, Checkpoint does not block"
    );
    assert_eq!(s.k.take_persist_complete(), None);
    assert_eq!(
        s.sys("svc", Sysno::PersistDone, [7, 0, 0, 0, 0, 0])
            .status(),
        Ok(())
    );
    assert_eq!(
        s.k.take_persist_complete(),
        Some(PersistEnd { declared_bound: 7 })
    );
    s.k.checkpoint_done(true);
    assert_eq!(runners(&mut s), ["app", "drv", "svc"]);
}

#[test]
fn a_callback_that_ends_is_not_waited_for() {
    let mut s = with_callbacks();
    assert!(s.k.begin_persist());
    s.sys("svc", Sysno::Exit, [0; 6]);
    assert_eq!(
        s.k.take_persist_complete(),
        Some(PersistEnd { declared_bound: 0 }),
        "an ended callback persists nothing more"
    );
}

#[test]
fn an_abandoned_phase_lets_everyone_run_and_a_restore_starts_without_one() {
    let mut s = with_callbacks();
    assert!(s.k.begin_persist());
    let records: Vec<(u16, Vec<u8>)> =
        s.k.live_objects()
            .map(|(i, _)| {
                let mut buf = [0u8; Kernel::RECORD_MAX];
                let n = s.k.encode_object(i, &mut buf);
                (i, buf[..n].to_vec())
            })
            .collect();
    s.k.abandon_persist();
    assert!(!s.k.persist_active());
    assert_eq!(s.k.take_persist_complete(), None);
    assert_eq!(runners(&mut s), ["app", "drv", "svc"]);

    let mut k = Box::new(Kernel::new());
    k.restore_into(records.iter().map(|(i, b)| (*i, b.as_slice())), &mut s.plat)
        .unwrap();
    assert!(!k.persist_active(), "a phase is never restored");
    let mut r = Sys {
        k,
        mem: s.mem.clone(),
        plat: s.plat.clone(),
    };
    assert_eq!(runners(&mut r), ["app", "drv", "svc"]);
    assert!(
        r.k.begin_persist(),
        "the callback flag came back with the watch"
    );
    assert_eq!(runners(&mut r), ["drv", "svc"]);
}
