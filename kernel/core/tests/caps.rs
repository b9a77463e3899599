//! The capability tree: derive, delete, revoke, object deletion, CapInfo, TaskInfo and
//! the rights check of every capability-taking syscall. Test names state the property.
//! These tests use the public API only; they must never reach into kernel internals.

mod common;

use amber_core::{
    abi::{Error, IpcDesc, ObjKind, Sysno, NO_SLOT},
    CapSpec, MemKind, Rights,
};
use common::{data, task, Sys, ALL, D, G, R, RW, SHARED_BASE, W};

fn derive(
    s: &mut Sys,
    who: &str,
    src: u32,
    dst: u32,
    mask: Rights,
    badge: u32,
) -> Result<(), Error> {
    s.sys(who, Sysno::CapDerive, [src, dst, mask.bits(), badge, 0, 0])
        .status()
}

fn info(s: &mut Sys, who: &str, slot: u32) -> Result<(u32, Rights, u32), Error> {
    let r = s.sys(who, Sysno::CapInfo, [slot, 0, 0, 0, 0, 0]);
    r.status()
        .map(|()| (r.r[0], Rights::from_bits_retain(r.r[1]), r.r[2]))
}

const A_CAPS: [CapSpec; 3] = [
    CapSpec::Notification {
        name: "n",
        rights: ALL,
    },
    CapSpec::Endpoint {
        name: "ep",
        rights: W.union(G),
        badge: 0,
    },
    CapSpec::Endpoint {
        name: "give",
        rights: W,
        badge: 0,
    },
];
const B_CAPS: [CapSpec; 2] = [
    CapSpec::Endpoint {
        name: "give",
        rights: R,
        badge: 0,
    },
    CapSpec::Task { name: "a" },
];

fn two() -> Sys {
    Sys::boot(&[task("a", 1, &A_CAPS), task("b", 1, &B_CAPS)])
}

#[test]
fn derive_only_ever_shrinks_rights() {
    let mut s = two();
    derive(&mut s, "a", 0, 5, R | G, 0).unwrap();
    assert_eq!(info(&mut s, "a", 5).unwrap().1, R | G);
    derive(&mut s, "a", 5, 6, ALL, 0).unwrap();
    assert_eq!(
        info(&mut s, "a", 6).unwrap().1,
        R | G,
        "asking for all rights gives only the source's"
    );
    derive(&mut s, "a", 6, 7, W, 0).unwrap();
    assert_eq!(
        info(&mut s, "a", 7).unwrap().1,
        Rights::empty(),
        "rights not held cannot be gained"
    );
}

#[test]
fn derive_checks_its_slots_and_arguments() {
    let mut s = two();
    assert_eq!(derive(&mut s, "a", 16, 5, ALL, 0), Err(Error::BadSlot));
    assert_eq!(derive(&mut s, "a", 9, 5, ALL, 0), Err(Error::EmptySlot));
    assert_eq!(derive(&mut s, "a", 0, 1, ALL, 0), Err(Error::SlotOccupied));
    assert_eq!(derive(&mut s, "a", 0, NO_SLOT, ALL, 0), Err(Error::BadSlot));
    let unknown = s
        .sys("a", Sysno::CapDerive, [0, 5, 1 << 9, 0, 0, 0])
        .status();
    assert_eq!(
        unknown,
        Err(Error::BadArgument),
        "unknown rights bits are refused"
    );
}

#[test]
fn a_badge_is_set_once_and_kept_by_children() {
    let mut s = two();
    derive(&mut s, "a", 1, 5, ALL, 0x77).unwrap();
    assert_eq!(
        info(&mut s, "a", 5).unwrap().2,
        0x77,
        "an unbadged cap can be badged"
    );
    derive(&mut s, "a", 5, 6, ALL, 0).unwrap();
    assert_eq!(
        info(&mut s, "a", 6).unwrap().2,
        0x77,
        "badge 0 keeps the source's badge"
    );
    assert_eq!(
        derive(&mut s, "a", 5, 7, ALL, 0x99),
        Err(Error::BadArgument),
        "a badged cap cannot be re-badged"
    );
}

#[test]
fn deleting_a_cap_empties_its_slot_and_keeps_its_children_revocable_by_the_ancestor() {
    let mut s = two();
    derive(&mut s, "a", 0, 5, ALL, 0).unwrap();
    derive(&mut s, "a", 5, 6, ALL, 0).unwrap();
    assert_eq!(
        s.sys("a", Sysno::CapDelete, [5, 0, 0, 0, 0, 0]).status(),
        Ok(())
    );
    assert_eq!(
        info(&mut s, "a", 5),
        Err(Error::EmptySlot),
        "a deleted slot reads as empty"
    );
    assert!(
        info(&mut s, "a", 6).is_ok(),
        "deleting a cap does not delete its children"
    );
    s.sys("a", Sysno::CapRevoke, [0, 0, 0, 0, 0, 0]);
    assert_eq!(
        info(&mut s, "a", 6),
        Err(Error::EmptySlot),
        "the grandchild was re-parented to the original"
    );
    assert_eq!(
        s.sys("a", Sysno::CapDelete, [5, 0, 0, 0, 0, 0]).status(),
        Err(Error::EmptySlot)
    );
    assert_eq!(
        s.sys("a", Sysno::CapDelete, [99, 0, 0, 0, 0, 0]).status(),
        Err(Error::BadSlot)
    );
}

#[test]
fn revoke_removes_every_descendant_in_every_group_and_leaves_the_source() {
    let mut s = two();
    derive(&mut s, "a", 0, 5, ALL, 0).unwrap();
    // a transfers its derived cap (slot 5) to b's slot 6 over "give".
    s.mem.put(
        data(1),
        &IpcDesc {
            recv_slot: 6,
            ..IpcDesc::EMPTY
        }
        .to_bytes(),
    );
    s.sys("b", Sysno::Recv, [0, 0, 0, 0, 0, data(1)]);
    s.mem.put(
        data(0),
        &IpcDesc {
            send_cap: 5,
            ..IpcDesc::EMPTY
        }
        .to_bytes(),
    );
    assert_eq!(
        s.sys("a", Sysno::Send, [2, 0, 0, 0, 0, data(0)]).status(),
        Ok(())
    );
    derive(&mut s, "b", 6, 7, R, 0).unwrap();
    derive(&mut s, "a", 0, 8, R, 0).unwrap();
    assert_eq!(
        s.sys("a", Sysno::CapRevoke, [0, 0, 0, 0, 0, 0]).status(),
        Ok(())
    );
    for (who, slot) in [("a", 5), ("a", 8), ("b", 6), ("b", 7)] {
        assert_eq!(
            info(&mut s, who, slot),
            Err(Error::EmptySlot),
            "{who}:{slot} derived from a:0 must be gone"
        );
    }
    assert_eq!(
        info(&mut s, "a", 0).unwrap().0,
        ObjKind::Notification as u32,
        "revoke keeps the source"
    );
    assert_eq!(
        s.sys("a", Sysno::CapRevoke, [4, 0, 0, 0, 0, 0]).status(),
        Err(Error::EmptySlot)
    );
}

#[test]
fn revoking_a_child_leaves_its_parent_and_siblings() {
    let mut s = two();
    derive(&mut s, "a", 0, 5, ALL, 0).unwrap();
    derive(&mut s, "a", 0, 6, ALL, 0).unwrap();
    derive(&mut s, "a", 5, 7, ALL, 0).unwrap();
    s.sys("a", Sysno::CapRevoke, [5, 0, 0, 0, 0, 0]);
    assert_eq!(info(&mut s, "a", 7), Err(Error::EmptySlot));
    assert!(
        info(&mut s, "a", 5).is_ok()
            && info(&mut s, "a", 6).is_ok()
            && info(&mut s, "a", 0).is_ok()
    );
}

#[test]
fn deleting_an_object_needs_delete_and_revokes_every_cap_to_it() {
    const X: [CapSpec; 1] = [CapSpec::Notification {
        name: "x",
        rights: RW,
    }];
    const Y: [CapSpec; 1] = [CapSpec::Notification {
        name: "x",
        rights: RW.union(D),
    }];
    let mut s = Sys::boot(&[task("x", 1, &X), task("y", 1, &Y)]);
    assert_eq!(
        s.sys("x", Sysno::ObjDelete, [0; 6]).status(),
        Err(Error::NoRights),
        "ObjDelete needs DELETE"
    );
    derive(&mut s, "x", 0, 3, R, 0).unwrap();
    assert_eq!(s.sys("y", Sysno::ObjDelete, [0; 6]).status(), Ok(()));
    for (who, slot) in [("x", 0), ("x", 3), ("y", 0)] {
        assert_eq!(
            info(&mut s, who, slot),
            Err(Error::EmptySlot),
            "{who}:{slot} named the deleted object"
        );
    }
    assert_eq!(
        s.sys("x", Sysno::Signal, [0, 1, 0, 0, 0, 0]).status(),
        Err(Error::EmptySlot),
        "later use gives EmptySlot"
    );
}

#[test]
fn a_waiter_on_a_deleted_notification_gets_peer_gone() {
    const X: [CapSpec; 1] = [CapSpec::Notification {
        name: "x",
        rights: R,
    }];
    const Y: [CapSpec; 1] = [CapSpec::Notification {
        name: "x",
        rights: D,
    }];
    let mut s = Sys::boot(&[task("x", 1, &X), task("y", 1, &Y)]);
    s.sys("x", Sysno::Wait, [0; 6]);
    s.sys("y", Sysno::ObjDelete, [0; 6]);
    assert_eq!(s.regs("x").status(), Err(Error::PeerGone));
}

#[test]
fn capgroups_cannot_be_deleted_and_task_info_needs_read() {
    let mut s = two();
    assert_eq!(
        s.sys("b", Sysno::ObjDelete, [1, 0, 0, 0, 0, 0]).status(),
        Err(Error::WrongKind)
    );
    let me = s.sys("b", Sysno::TaskInfo, [NO_SLOT, 0, 0, 0, 0, 0]);
    assert_eq!(
        (me.status(), me.r[0]),
        (Ok(()), s.tid("b").index() as u32),
        "NO_SLOT asks about the caller"
    );
    let other = s.sys("b", Sysno::TaskInfo, [1, 0, 0, 0, 0, 0]);
    assert_eq!(
        other.r[0],
        s.tid("a").index() as u32,
        "a Task cap names the other task"
    );
    derive(&mut s, "b", 1, 5, Rights::empty(), 0).unwrap();
    assert_eq!(
        s.sys("b", Sysno::TaskInfo, [5, 0, 0, 0, 0, 0]).status(),
        Err(Error::NoRights)
    );
    assert_eq!(
        s.sys("b", Sysno::TaskInfo, [0, 0, 0, 0, 0, 0]).status(),
        Err(Error::WrongKind)
    );
    assert_eq!(info(&mut s, "b", 1).unwrap().0, ObjKind::CapGroup as u32);
}

#[test]
fn every_cap_taking_syscall_refuses_a_cap_without_its_right() {
    // Slot 0..5: notification, irq, timer, endpoint, memobj, task; then rights-less
    // copies in slots 8..13 made by CapDerive with an empty mask.
    const CAPS: [CapSpec; 6] = [
        CapSpec::Notification {
            name: "n",
            rights: ALL,
        },
        CapSpec::Irq { irq: 9 },
        CapSpec::Timer,
        CapSpec::Endpoint {
            name: "e",
            rights: ALL,
            badge: 0,
        },
        CapSpec::MemObj {
            base: SHARED_BASE,
            len: 64,
            rights: ALL,
            kind: MemKind::Eternal,
        },
        CapSpec::Task { name: "t" },
    ];
    let mut s = Sys::boot(&[task("t", 1, &CAPS)]);
    for i in 0..6 {
        derive(&mut s, "t", i, i + 8, Rights::empty(), 0).unwrap();
    }
    let calls: [(Sysno, [u32; 6]); 13] = [
        (Sysno::Signal, [8, 1, 0, 0, 0, 0]),
        (Sysno::Wait, [8, 0, 0, 0, 0, 0]),
        (Sysno::Poll, [8, 0, 0, 0, 0, 0]),
        (Sysno::IrqWait, [9, 0, 0, 0, 0, 0]),
        (Sysno::IrqAck, [9, 0, 0, 0, 0, 0]),
        (Sysno::TimerSet, [10, 0, 1, 0, 0, 0]),
        (Sysno::TimerSet, [2, 8, 1, 0, 0, 0]), // the notification it would signal lacks WRITE
        (Sysno::Send, [11, 0, 0, 0, 0, 0]),
        (Sysno::Call, [11, 0, 0, 0, 0, 0]),
        (Sysno::Recv, [11, 0, 0, 0, 0, 0]),
        (Sysno::ObjDelete, [12, 0, 0, 0, 0, 0]),
        (Sysno::TaskInfo, [13, 0, 0, 0, 0, 0]),
        (Sysno::CommitWatch, [data(0), 8, 1, 1, 0, 0]), // the notification lacks WRITE
    ];
    for (nr, args) in calls {
        assert_eq!(
            s.sys("t", nr, args).status(),
            Err(Error::NoRights),
            "{nr:?} {args:?} without its right"
        );
    }
    let wrong_kind: [(Sysno, u32); 7] = [
        (Sysno::Signal, 3),
        (Sysno::Wait, 2),
        (Sysno::IrqWait, 0),
        (Sysno::IrqAck, 4),
        (Sysno::TimerSet, 1),
        (Sysno::Send, 0),
        (Sysno::TaskInfo, 3),
    ];
    for (nr, slot) in wrong_kind {
        assert_eq!(
            s.sys("t", nr, [slot, 0, 1, 0, 0, 0]).status(),
            Err(Error::WrongKind),
            "{nr:?} on slot {slot}"
        );
    }
}

#[test]
fn a_task_can_hold_at_most_max_regions_memory_regions() {
    const CAPS: [CapSpec; 6] = [CapSpec::MemObj {
        base: SHARED_BASE,
        len: 64,
        rights: ALL,
        kind: MemKind::Eternal,
    }; 6];
    let mut s = Sys::boot(&[task("t", 1, &CAPS)]);
    assert_eq!(
        s.k.regions(s.tid("t")).count(),
        amber_core::MAX_REGIONS,
        "2 own regions + 6 MemObj caps"
    );
    assert_eq!(
        derive(&mut s, "t", 0, 9, R, 0),
        Err(Error::NoSpace),
        "a 9th region does not fit PMP"
    );
}

#[test]
fn cap_info_reports_kind_rights_and_badge() {
    const CAPS: [CapSpec; 4] = [
        CapSpec::Endpoint {
            name: "e",
            rights: W,
            badge: 3,
        },
        CapSpec::NvmRegion {
            offset: 0x1000,
            len: 0x100,
            rights: RW,
        },
        CapSpec::Irq { irq: 4 },
        CapSpec::Timer,
    ];
    let mut s = Sys::boot(&[task("t", 1, &CAPS)]);
    assert_eq!(info(&mut s, "t", 0), Ok((ObjKind::Endpoint as u32, W, 3)));
    assert_eq!(info(&mut s, "t", 1), Ok((ObjKind::NvmRegion as u32, RW, 0)));
    assert_eq!(
        info(&mut s, "t", 2),
        Ok((ObjKind::IrqNotification as u32, RW, 0))
    );
    assert_eq!(info(&mut s, "t", 3), Ok((ObjKind::Timer as u32, W, 0)));
}
