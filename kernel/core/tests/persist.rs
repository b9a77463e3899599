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
    CapSpec, Cause, CheckpointEvent, Halt, HaltOutcome, Kernel, PersistEnd, Step,
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
    let step = s.due();
    assert!(
        matches!(step, Step::Write(ref a) if a.persisted().is_none()),
        "a serving driver alone persists nothing: the checkpoint is written at once"
    );
    assert!(!s.k.persist_active());
    assert_eq!(s.written(step, true), Step::Run);
    assert_eq!(runners(&mut s), ["app", "drv", "svc"]);
}

#[test]
fn a_callback_waiting_in_recv_is_interrupted_and_only_servers_run_until_it_is_done() {
    let mut s = with_callbacks();
    // svc waits for requests.
    s.switch_to("svc");
    s.sys("svc", Sysno::Recv, [EP, 0, 0, 0, 0, 0]);
    assert_eq!(s.state("svc"), TaskState::Blocked);

    assert_eq!(s.due(), Step::Run, "the checkpoint waits for the phase");
    assert!(s.k.persist_active());
    assert_eq!(s.state("svc"), TaskState::Ready);
    assert_eq!(
        s.regs("svc").status(),
        Err(Error::Interrupted),
        "the Recv ends with Interrupted"
    );
    assert_eq!(runners(&mut s), ["drv", "svc"], "app is stopped");
    assert_eq!(s.due(), Step::Run, "a second request joins the phase");
    assert!(s.k.persist_active());
    assert_eq!(
        s.event(CheckpointEvent::Syscall),
        Step::Run,
        "svc has not persisted"
    );

    // Asked to persist, every Recv is interrupted at once.
    let r = s.sys("svc", Sysno::Recv, [EP, 0, 0, 0, 0, 0]);
    assert_eq!(r.status(), Err(Error::Interrupted));
    assert_eq!(s.state("svc"), TaskState::Ready);

    assert_eq!(
        s.sys("svc", Sysno::PersistDone, [5000, 0, 0, 0, 0, 0])
            .status(),
        Ok(())
    );
    let step = s.event(CheckpointEvent::Syscall);
    assert!(
        matches!(step, Step::Write(ref a) if a.persisted() == Some(PersistEnd { counted: 0, declared_bound: 5000, in_request_at_begin: 0, in_request_at_end: 0 })),
        "the phase ends with the bound svc declared: {step:?}"
    );
    assert!(!s.k.persist_active());
    assert_eq!(s.written(step, true), Step::Run);
    assert_eq!(s.event(CheckpointEvent::Syscall), Step::Run, "exactly once");
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
    assert_eq!(s.due(), Step::Run);
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
    let step = s.event(CheckpointEvent::Syscall);
    assert!(
        matches!(step, Step::Write(ref a) if a.persisted().is_some_and(|p| p.declared_bound == 0))
    );
}

/// The SPI bus rule (docs/nvm-buses.md): a driver that is a persist callback and
/// inside a request when the checkpoint becomes due (a client waits for its reply; its
/// transfer may be on the bus) is not interrupted; the checkpoint waits until it has
/// answered and said `PersistDone` between requests.
#[test]
fn a_callback_inside_a_request_finishes_it_before_the_checkpoint() {
    let mut s = system();
    assert_eq!(
        watch(&mut s, "drv", WatchFlags::PERSIST_CALLBACK.bits()),
        Ok(())
    );
    s.sys("drv", Sysno::Recv, [EP, 0, 0, 0, 0, 0]);
    s.sys("app", Sysno::Call, [EP, 10, 0, 0, 0, 0]);
    assert_eq!(
        s.state("app"),
        TaskState::Blocked,
        "app waits for the reply"
    );
    assert_eq!(s.regs("drv").r[0], 10, "drv is inside app's request");

    assert_eq!(s.due(), Step::Run, "the checkpoint waits for the phase");
    assert_eq!(
        s.event(CheckpointEvent::Syscall),
        Step::Run,
        "and for drv, still inside the request"
    );
    assert_eq!(
        s.sys("drv", Sysno::Reply, [0, 11, 0, 0, 0, 0]).status(),
        Ok(())
    );
    assert_eq!(s.event(CheckpointEvent::Syscall), Step::Run);
    assert_eq!(
        s.sys("drv", Sysno::Recv, [EP, 0, 0, 0, 0, 0]).status(),
        Err(Error::Interrupted),
        "between requests drv is asked"
    );
    assert_eq!(s.sys("drv", Sysno::PersistDone, [0; 6]).status(), Ok(()));
    let step = s.event(CheckpointEvent::Syscall);
    assert!(
        matches!(step, Step::Write(ref a) if a.persisted().is_some_and(|p| p.in_request_at_begin == 1 && p.in_request_at_end == 0)),
        "one request was in flight when the phase began, none when it ended: {step:?}"
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
    assert_eq!(s.due(), Step::Run);
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
    assert_eq!(
        s.event(CheckpointEvent::Syscall),
        Step::Run,
        "the checkpoint svc asked for starts a phase like any other"
    );
    assert!(s.k.persist_active());
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
    assert_eq!(s.event(CheckpointEvent::Syscall), Step::Run);
    assert_eq!(
        s.sys("svc", Sysno::PersistDone, [7, 0, 0, 0, 0, 0])
            .status(),
        Ok(())
    );
    let step = s.event(CheckpointEvent::Syscall);
    assert!(
        matches!(step, Step::Write(ref a) if a.persisted().is_some_and(|p| p.declared_bound == 7))
    );
    assert_eq!(s.written(step, true), Step::Run);
    assert_eq!(runners(&mut s), ["app", "drv", "svc"]);
}

#[test]
fn a_callback_that_ends_is_not_waited_for() {
    let mut s = with_callbacks();
    assert_eq!(s.due(), Step::Run);
    s.sys("svc", Sysno::Exit, [0; 6]);
    assert!(
        matches!(s.event(CheckpointEvent::Syscall), Step::Write(_)),
        "an ended callback persists nothing more"
    );
}

#[test]
fn an_overrunning_phase_is_given_up_and_everyone_runs_and_a_restore_starts_with_one() {
    let mut s = with_callbacks();
    s.k.configure_checkpoints(common::every_tick(3, 0));
    s.sys("app", Sysno::Checkpoint, [0; 6]);
    assert_eq!(s.event(CheckpointEvent::Syscall), Step::Run);
    assert!(s.k.persist_active(), "app's request starts a phase");
    let records = common::records(&s.k);
    s.plat.now = 3;
    assert_eq!(s.due(), Step::Run, "within its bound the phase goes on");
    assert!(s.k.persist_active());
    s.plat.now = 4;
    assert_eq!(s.due(), Step::Run, "past its bound it is given up");
    assert!(!s.k.persist_active());
    assert_eq!(
        s.regs("app").status(),
        Err(Error::CheckpointFailed),
        "the request is answered: no checkpoint was taken"
    );
    assert_eq!(runners(&mut s), ["app", "drv", "svc"]);

    let mut k = Box::new(Kernel::new());
    k.restore_into(records.iter().map(|(i, b)| (*i, b.as_slice())), &mut s.plat)
        .unwrap();
    assert!(!k.persist_active(), "a phase is never restored");
    let mut r = Sys {
        k,
        mem: s.mem.clone(),
        plat: s.plat.clone(),
        version: 1,
    };
    assert_eq!(
        r.event(CheckpointEvent::Restored),
        Step::Run,
        "the callback flag came back with the watch: a restore phase, no checkpoint yet"
    );
    assert!(r.k.persist_active());
    assert_eq!(runners(&mut r), ["drv", "svc"]);
}

#[test]
fn a_power_failure_halts_after_its_phase_and_checkpoint_with_what_they_cost() {
    let mut s = with_callbacks();
    s.plat.now = 2;
    assert_eq!(s.event(CheckpointEvent::PowerFailure), Step::Run);
    assert_eq!(runners(&mut s), ["drv", "svc"], "only the callbacks run");
    s.plat.now = 5;
    assert_eq!(
        s.sys("svc", Sysno::PersistDone, [9, 0, 0, 0, 0, 0])
            .status(),
        Ok(())
    );
    let step = s.event(CheckpointEvent::Syscall);
    assert!(matches!(step, Step::Write(ref a) if a.cause() == Cause::PowerFailure));
    assert_eq!(
        s.written(step, true),
        Step::Halt(Halt {
            interrupted_at: 2000,
            persisted: Some(PersistEnd {
                counted: 3000,
                declared_bound: 9,
                in_request_at_begin: 0,
                in_request_at_end: 0,
            }),
            outcome: HaltOutcome::Committed,
        }),
        "the machine halts after the checkpoint, with the phase's cost"
    );
}

#[test]
fn a_power_failure_during_a_phase_joins_it_and_one_whose_phase_overruns_saves_nothing() {
    let mut s = with_callbacks();
    s.k.configure_checkpoints(common::every_tick(3, 0));
    assert_eq!(s.due(), Step::Run);
    s.plat.now = 1;
    assert_eq!(
        s.event(CheckpointEvent::PowerFailure),
        Step::Run,
        "the phase under way serves the power failure too"
    );
    s.plat.now = 9;
    assert_eq!(
        s.event(CheckpointEvent::Tick),
        Step::Halt(Halt {
            interrupted_at: 1000,
            persisted: None,
            outcome: HaltOutcome::GaveUp,
        })
    );
}

#[test]
fn the_injected_power_failure_arrives_as_its_checkpoint_is_due() {
    let mut s = with_callbacks();
    let mut config = common::every_tick(u64::MAX, 4);
    config.power_failure_at = Some(6);
    s.k.configure_checkpoints(config);
    assert_eq!(s.due(), Step::Run, "checkpoint 5 is due: a phase");
    assert_eq!(s.sys("svc", Sysno::PersistDone, [0; 6]).status(), Ok(()));
    let step = s.event(CheckpointEvent::Syscall);
    s.version = 4;
    assert_eq!(s.written(step, true), Step::Run, "5 is no power failure");
    assert_eq!(s.due(), Step::Run, "6 is due: its phase");
    assert_eq!(s.sys("svc", Sysno::PersistDone, [0; 6]).status(), Ok(()));
    let step = s.event(CheckpointEvent::Syscall);
    assert!(
        matches!(
            s.written(step, true),
            Step::Halt(Halt {
                outcome: HaltOutcome::Committed,
                ..
            })
        ),
        "the power failure joined checkpoint 6's phase, and the machine halts after it"
    );
}
