//! Asynchronous events: notifications, interrupts delivered to user drivers, and
//! timers. Test names state the property checked.
//! These tests use the public API only; they must never reach into kernel internals.

mod common;

use amber_core::{
    abi::{Error, Sysno, TaskState},
    CapSpec,
};
use common::{task, Sys, ALL, D, R, RW, W};

#[test]
fn signal_ors_bits_and_wait_takes_them_all() {
    const CAPS: [CapSpec; 1] = [CapSpec::Notification {
        name: "n",
        rights: RW,
    }];
    let mut s = Sys::boot(&[task("a", 1, &CAPS)]);
    s.sys("a", Sysno::Signal, [0, 0b01, 0, 0, 0, 0]);
    s.sys("a", Sysno::Signal, [0, 0b10, 0, 0, 0, 0]);
    assert_eq!(
        s.sys("a", Sysno::Wait, [0; 6]).r[0],
        0b11,
        "pending bits are returned at once"
    );
    assert_eq!(
        s.sys("a", Sysno::Poll, [0; 6]).r[0],
        0,
        "Wait cleared them; Poll sees none and does not block"
    );
    assert_eq!(s.state("a"), TaskState::Ready);
}

#[test]
fn wait_blocks_until_a_signal_and_waiters_are_served_oldest_first() {
    const WAITER: [CapSpec; 1] = [CapSpec::Notification {
        name: "n",
        rights: R,
    }];
    const SIGNALLER: [CapSpec; 1] = [CapSpec::Notification {
        name: "n",
        rights: W,
    }];
    let mut s = Sys::boot(&[
        task("w1", 1, &WAITER),
        task("w2", 1, &WAITER),
        task("sig", 1, &SIGNALLER),
    ]);
    s.sys("w2", Sysno::Wait, [0; 6]);
    s.sys("w1", Sysno::Wait, [0; 6]);
    s.sys("sig", Sysno::Signal, [0, 4, 0, 0, 0, 0]);
    assert_eq!(
        s.state("w2"),
        TaskState::Ready,
        "the oldest waiter gets the bits"
    );
    assert_eq!(s.regs("w2").r[0], 4);
    assert_eq!(
        s.state("w1"),
        TaskState::Blocked,
        "one signal wakes one waiter"
    );
    s.sys("sig", Sysno::Signal, [0, 8, 0, 0, 0, 0]);
    assert_eq!(s.regs("w1").r[0], 8);
}

#[test]
fn an_interrupt_wakes_its_driver_and_stays_masked_until_acknowledged() {
    const CAPS: [CapSpec; 1] = [CapSpec::Irq { irq: 10 }];
    let mut s = Sys::boot(&[task("drv", 1, &CAPS), task("idle", 5, &[])]);
    s.sys("drv", Sysno::IrqWait, [0; 6]);
    assert_eq!(
        s.plat.enabled,
        vec![10],
        "the first IrqWait enables the source"
    );
    assert_eq!(s.state("drv"), TaskState::Blocked);
    assert!(s.k.irq(10), "an owned irq is delivered");
    s.k.check_invariants().unwrap();
    assert_eq!(
        s.current_name().as_deref(),
        Some("drv"),
        "the woken driver preempts the less urgent task"
    );
    assert_eq!(
        s.plat.completed,
        Vec::<u32>::new(),
        "not completed before the driver acknowledges"
    );
    assert_eq!(
        s.sys("drv", Sysno::IrqWait, [0; 6]).status(),
        Ok(()),
        "a pending interrupt makes IrqWait return at once"
    );
    assert_eq!(s.sys("drv", Sysno::IrqAck, [0; 6]).status(), Ok(()));
    assert_eq!(s.plat.completed, vec![10], "IrqAck completes the interrupt");
    assert_eq!(
        s.sys("drv", Sysno::IrqAck, [0; 6]).status(),
        Err(Error::WrongState),
        "nothing left to acknowledge"
    );
    assert_eq!(s.plat.enabled, vec![10], "enabled once");
}

#[test]
fn an_interrupt_nobody_owns_is_reported_unowned() {
    let mut s = Sys::boot(&[task("a", 1, &[])]);
    assert!(!s.k.irq(3));
    s.k.check_invariants().unwrap();
}

#[test]
fn a_deleted_irq_notification_no_longer_owns_its_interrupt() {
    const CAPS: [CapSpec; 1] = [CapSpec::Irq { irq: 10 }];
    let mut s = Sys::boot(&[task("drv", 1, &CAPS)]);
    s.sys("drv", Sysno::CapDelete, [0; 6]);
    assert!(!s.k.irq(10), "the last cap gone, the object is gone");
}

#[test]
fn a_timer_signals_its_notification_when_the_deadline_passes() {
    const CAPS: [CapSpec; 2] = [
        CapSpec::Timer,
        CapSpec::Notification {
            name: "n",
            rights: RW,
        },
    ];
    let mut s = Sys::boot(&[task("t", 1, &CAPS), task("idle", 5, &[])]);
    s.plat.now = 100;
    assert_eq!(
        s.sys("t", Sysno::TimerSet, [0, 1, 0b100, 150, 0, 0])
            .status(),
        Ok(())
    );
    s.sys("t", Sysno::Wait, [1, 0, 0, 0, 0, 0]);
    assert_eq!(s.state("t"), TaskState::Blocked);
    s.plat.now = 149;
    s.tick();
    assert_eq!(s.state("t"), TaskState::Blocked, "not before the deadline");
    s.plat.now = 150;
    s.tick();
    assert_eq!(
        s.state("t"),
        TaskState::Ready,
        "at the deadline the notification is signalled"
    );
    assert_eq!(s.regs("t").r[0], 0b100);
    s.plat.now = 1000;
    s.tick();
    assert_eq!(
        s.sys("t", Sysno::Poll, [1, 0, 0, 0, 0, 0]).r[0],
        0,
        "a timer fires once"
    );
}

#[test]
fn a_deadline_already_passed_fires_at_once_and_bits_zero_disarms() {
    const CAPS: [CapSpec; 2] = [
        CapSpec::Timer,
        CapSpec::Notification {
            name: "n",
            rights: RW,
        },
    ];
    let mut s = Sys::boot(&[task("t", 1, &CAPS)]);
    s.plat.now = 1 << 33;
    s.sys("t", Sysno::TimerSet, [0, 1, 1, 5, 2, 0]); // deadline 2^33 + 5
    s.plat.now = (1 << 33) + 4;
    s.tick();
    assert_eq!(
        s.sys("t", Sysno::Poll, [1, 0, 0, 0, 0, 0]).r[0],
        0,
        "the high word counts"
    );
    s.sys("t", Sysno::TimerSet, [0, 99, 0, 0, 0, 0]);
    s.plat.now = 1 << 40;
    s.tick();
    assert_eq!(
        s.sys("t", Sysno::Poll, [1, 0, 0, 0, 0, 0]).r[0],
        0,
        "bits 0 disarmed it (slot not checked)"
    );
    s.sys("t", Sysno::TimerSet, [0, 1, 2, 0, 0, 0]);
    assert_eq!(
        s.sys("t", Sysno::Poll, [1, 0, 0, 0, 0, 0]).r[0],
        2,
        "a past deadline fires during TimerSet"
    );
}

#[test]
fn deleting_a_timers_notification_disarms_the_timer() {
    const T: [CapSpec; 2] = [
        CapSpec::Timer,
        CapSpec::Notification {
            name: "n",
            rights: W,
        },
    ];
    const O: [CapSpec; 1] = [CapSpec::Notification {
        name: "n",
        rights: ALL.intersection(D),
    }];
    let mut s = Sys::boot(&[task("t", 1, &T), task("o", 1, &O)]);
    s.sys("t", Sysno::TimerSet, [0, 1, 1, 50, 0, 0]);
    s.sys("o", Sysno::ObjDelete, [0; 6]);
    s.plat.now = 100;
    s.tick(); // check_invariants inside: no armed timer targets a dead notification
    assert_eq!(
        s.sys("t", Sysno::CapInfo, [1, 0, 0, 0, 0, 0]).status(),
        Err(Error::EmptySlot)
    );
}
