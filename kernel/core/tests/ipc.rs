//! Synchronous IPC: Send, Call, Recv, Reply and ReplyRecv with message words, badges, bounded copies
//! and capability transfer, through descriptors and IPC buffers; blocking, waking and
//! partner loss. Test names state the
//! property checked.
//! These tests use the public API only; they must never reach into kernel internals.

mod common;

use amber_core::{
    abi::{
        ipc_buffer_msg, Error, IpcBuffer, IpcDesc, Sysno, TaskState, IPC_BUFFER_MSG,
        IPC_BUFFER_SIZE, MAX_MSG_BYTES, NO_SLOT,
    },
    CapSpec, MemKind,
};
use common::{data, task, Sys, ALL, D, G, R, RW, SHARED_BASE, W};

const CLI_EP: CapSpec = CapSpec::Endpoint {
    name: "ep",
    rights: W.union(G),
    badge: 0xB,
};
const SRV_EP: CapSpec = CapSpec::Endpoint {
    name: "ep",
    rights: R,
    badge: 0,
};

/// srv (slot 0: ep READ) and cli (slot 0: ep WRITE|GRANT badge 0xB, slot 1: notification
/// with GRANT, slot 2: notification without GRANT), both priority 1.
fn pair() -> Sys {
    const CLI: [CapSpec; 3] = [
        CLI_EP,
        CapSpec::Notification {
            name: "n",
            rights: ALL,
        },
        CapSpec::Notification {
            name: "m",
            rights: RW,
        },
    ];
    const SRV: [CapSpec; 1] = [SRV_EP];
    Sys::boot(&[task("srv", 1, &SRV), task("cli", 1, &CLI)])
}

fn put_desc(s: &mut Sys, addr: u32, d: IpcDesc) {
    s.mem.put(addr, &d.to_bytes());
}

fn get_desc(s: &Sys, addr: u32) -> IpcDesc {
    IpcDesc::from_bytes(&s.mem.get(addr, 36).try_into().unwrap())
}

#[test]
fn send_blocks_until_recv_then_words_and_badge_arrive() {
    let mut s = pair();
    s.sys("cli", Sysno::Send, [0, 1, 2, 3, 4, 0]);
    assert_eq!(
        s.state("cli"),
        TaskState::Blocked,
        "Send with no receiver blocks"
    );
    let r = s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, 0]);
    assert_eq!(r.status(), Ok(()));
    assert_eq!(
        r.r,
        [1, 2, 3, 4, 0xB],
        "a1..a4 = words, a5 = the sender cap's badge"
    );
    assert_eq!(
        s.state("cli"),
        TaskState::Ready,
        "delivery wakes the sender"
    );
    assert_eq!(s.regs("cli").a0, 0, "the sender's Send succeeded");
}

#[test]
fn recv_blocks_until_send_and_the_sender_returns_at_once() {
    let mut s = pair();
    s.sys("srv", Sysno::Recv, [0; 6]);
    assert_eq!(s.state("srv"), TaskState::Blocked);
    let r = s.sys("cli", Sysno::Send, [0, 5, 6, 7, 8, 0]);
    assert_eq!(
        r.status(),
        Ok(()),
        "a waiting receiver means Send completes without blocking"
    );
    assert_eq!(s.state("srv"), TaskState::Ready);
    assert_eq!(s.regs("srv").r, [5, 6, 7, 8, 0xB]);
}

#[test]
fn call_waits_for_the_reply_words() {
    let mut s = pair();
    s.sys("cli", Sysno::Call, [0, 10, 0, 0, 0, 0]);
    assert_eq!(s.sys("srv", Sysno::Recv, [0; 6]).r[0], 10);
    assert_eq!(
        s.state("cli"),
        TaskState::Blocked,
        "a caller waits for the reply after delivery"
    );
    assert_eq!(
        s.sys("srv", Sysno::Reply, [0, 11, 12, 13, 14, 0]).status(),
        Ok(())
    );
    let c = s.regs("cli");
    assert_eq!(
        (c.a0, &c.r[..4]),
        (0, &[11, 12, 13, 14][..]),
        "Call returns the reply words"
    );
    assert_eq!(
        s.sys("srv", Sysno::Reply, [0; 6]).status(),
        Err(Error::WrongState),
        "a reply is given once"
    );
}

#[test]
fn reply_recv_answers_the_caller_then_takes_the_next_message() {
    const CLI: [CapSpec; 1] = [CLI_EP];
    const SRV: [CapSpec; 1] = [SRV_EP];
    let mut s = Sys::boot(&[
        task("srv", 1, &SRV),
        task("c1", 1, &CLI),
        task("c2", 1, &CLI),
    ]);
    s.sys("c1", Sysno::Call, [0, 10, 0, 0, 0, 0]);
    s.sys("c2", Sysno::Call, [0, 20, 0, 0, 0, 0]);
    assert_eq!(s.sys("srv", Sysno::Recv, [0; 6]).r[0], 10);
    let r = s.sys("srv", Sysno::ReplyRecv, [0, 11, 12, 13, 14, 0]);
    assert_eq!(
        (r.a0, r.r),
        (0, [20, 0, 0, 0, 0xB]),
        "the next caller's words and badge arrive in the same call"
    );
    let c1 = s.regs("c1");
    assert_eq!(
        (s.state("c1"), c1.a0, &c1.r[..4]),
        (TaskState::Ready, 0, &[11, 12, 13, 14][..]),
        "the first caller got its reply"
    );
    assert_eq!(
        s.state("c2"),
        TaskState::Blocked,
        "the second caller waits for its reply"
    );
    s.sys("srv", Sysno::ReplyRecv, [0, 21, 0, 0, 0, 0]);
    assert_eq!(s.regs("c2").r[0], 21, "the second caller got its reply");
    assert_eq!(
        s.state("srv"),
        TaskState::Blocked,
        "with no caller left the server waits"
    );
}

#[test]
fn reply_recv_owing_nothing_is_a_recv_and_a_bad_reply_receives_nothing() {
    let mut s = pair();
    s.sys("cli", Sysno::Send, [0, 7, 0, 0, 0, 0]);
    let r = s.sys("srv", Sysno::ReplyRecv, [0, 99, 0, 0, 0, 0]);
    assert_eq!(
        (r.a0, r.r[0]),
        (0, 7),
        "no reply owed: the message is received"
    );
    s.sys("cli", Sysno::Call, [0, 8, 0, 0, 0, 0]);
    assert_eq!(s.sys("srv", Sysno::Recv, [0; 6]).r[0], 8);
    // A descriptor the server may not read: the reply fails on the server's side.
    let r = s.sys("srv", Sysno::ReplyRecv, [0, 1, 0, 0, 0, 0x10]);
    assert_eq!(r.status(), Err(Error::BadPointer));
    assert_eq!(
        s.state("cli"),
        TaskState::Blocked,
        "the caller still waits for a good reply"
    );
    assert_eq!(
        s.sys("srv", Sysno::Reply, [0, 9, 0, 0, 0, 0]).status(),
        Ok(()),
        "the reply is still owed"
    );
    assert_eq!(s.regs("cli").r[0], 9);
}

#[test]
fn reply_recv_with_one_descriptor_sends_the_reply_bytes_then_receives_into_its_buffer() {
    let mut s = pair();
    let (srv_desc, srv_in, srv_out) = (data(0), data(0) + 0x100, data(0) + 0x200);
    let (cli_desc, cli_out, cli_in) = (data(1), data(1) + 0x100, data(1) + 0x200);
    let srv = IpcDesc {
        send_ptr: srv_out,
        send_len: 5,
        recv_ptr: srv_in,
        recv_len: 64,
        ..IpcDesc::EMPTY
    };
    put_desc(&mut s, srv_desc, srv);
    s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, srv_desc]);
    let cli = IpcDesc {
        send_ptr: cli_out,
        send_len: 4,
        recv_ptr: cli_in,
        recv_len: 64,
        ..IpcDesc::EMPTY
    };
    put_desc(&mut s, cli_desc, cli);
    s.mem.put(cli_out, b"ping");
    s.sys("cli", Sysno::Call, [0, 1, 0, 0, 0, cli_desc]);
    assert_eq!(s.mem.get(srv_in, 4), b"ping");
    s.mem.put(srv_out, b"pong!");
    put_desc(&mut s, srv_desc, srv);
    s.sys("srv", Sysno::ReplyRecv, [0, 2, 0, 0, 0, srv_desc]);
    assert_eq!(
        (s.state("cli"), s.regs("cli").r[0], s.mem.get(cli_in, 5)),
        (TaskState::Ready, 2, b"pong!".to_vec()),
        "the reply's words and bytes reached the caller"
    );
    assert_eq!(get_desc(&s, cli_desc).got_len, 5);
    assert_eq!(s.state("srv"), TaskState::Blocked, "then the server waits");
    s.mem.put(cli_out, b"more");
    put_desc(&mut s, cli_desc, cli);
    s.sys("cli", Sysno::Send, [0, 3, 0, 0, 0, cli_desc]);
    assert_eq!(
        (
            s.regs("srv").r[0],
            s.mem.get(srv_in, 4),
            get_desc(&s, srv_desc).got_len
        ),
        (3, b"more".to_vec(), 4),
        "the next message landed where the same descriptor receives"
    );
}

#[test]
fn a_reply_recv_descriptor_the_server_may_only_read_gives_the_reply_then_fails() {
    let mut s = pair();
    s.sys("cli", Sysno::Call, [0, 8, 0, 0, 0, 0]);
    assert_eq!(s.sys("srv", Sysno::Recv, [0; 6]).r[0], 8);
    let code0 = common::code(0);
    put_desc(&mut s, code0, IpcDesc::EMPTY);
    let r = s.sys("srv", Sysno::ReplyRecv, [0, 9, 0, 0, 0, code0]);
    assert_eq!(
        r.status(),
        Err(Error::BadPointer),
        "receiving writes the descriptor"
    );
    assert_eq!(
        (s.state("cli"), s.regs("cli").r[0]),
        (TaskState::Ready, 9),
        "the reply, which only reads it, was given"
    );
}

#[test]
fn reply_with_no_caller_is_wrong_state() {
    let mut s = pair();
    assert_eq!(
        s.sys("srv", Sysno::Reply, [0; 6]).status(),
        Err(Error::WrongState)
    );
}

#[test]
fn waiting_senders_are_served_oldest_first() {
    const CLI: [CapSpec; 1] = [CLI_EP];
    const SRV: [CapSpec; 1] = [SRV_EP];
    let mut s = Sys::boot(&[
        task("srv", 1, &SRV),
        task("c1", 1, &CLI),
        task("c2", 1, &CLI),
    ]);
    s.sys("c2", Sysno::Send, [0, 2, 0, 0, 0, 0]);
    s.sys("c1", Sysno::Send, [0, 1, 0, 0, 0, 0]);
    assert_eq!(s.sys("srv", Sysno::Recv, [0; 6]).r[0], 2, "c2 sent first");
    assert_eq!(s.sys("srv", Sysno::Recv, [0; 6]).r[0], 1);
}

#[test]
fn bytes_are_copied_into_the_receiver_buffer_and_lengths_reported() {
    let mut s = pair();
    let (srv_desc, srv_buf) = (data(0), data(0) + 0x100);
    let (cli_desc, cli_buf) = (data(1), data(1) + 0x100);
    put_desc(
        &mut s,
        srv_desc,
        IpcDesc {
            recv_ptr: srv_buf,
            recv_len: 64,
            ..IpcDesc::EMPTY
        },
    );
    s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, srv_desc]);
    s.mem.put(cli_buf, b"hello, server");
    put_desc(
        &mut s,
        cli_desc,
        IpcDesc {
            send_ptr: cli_buf,
            send_len: 13,
            ..IpcDesc::EMPTY
        },
    );
    assert_eq!(
        s.sys("cli", Sysno::Send, [0, 0, 0, 0, 0, cli_desc])
            .status(),
        Ok(())
    );
    assert_eq!(s.mem.get(srv_buf, 13), b"hello, server");
    let d = get_desc(&s, srv_desc);
    assert_eq!(
        (d.got_len, d.sent_len, d.got_cap),
        (13, 13, 0),
        "kernel writes got_len, sent_len, got_cap"
    );
}

#[test]
fn a_short_receive_buffer_truncates_and_says_so() {
    let mut s = pair();
    let (srv_desc, srv_buf) = (data(0), data(0) + 0x100);
    let (cli_desc, cli_buf) = (data(1), data(1) + 0x100);
    s.mem.put(srv_buf, &[0xEE; 8]);
    put_desc(
        &mut s,
        srv_desc,
        IpcDesc {
            recv_ptr: srv_buf,
            recv_len: 4,
            ..IpcDesc::EMPTY
        },
    );
    s.mem.put(cli_buf, b"abcdefgh");
    put_desc(
        &mut s,
        cli_desc,
        IpcDesc {
            send_ptr: cli_buf,
            send_len: 8,
            ..IpcDesc::EMPTY
        },
    );
    s.sys("cli", Sysno::Send, [0, 0, 0, 0, 0, cli_desc]);
    s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, srv_desc]);
    assert_eq!(
        s.mem.get(srv_buf, 8),
        b"abcd\xEE\xEE\xEE\xEE",
        "nothing is written past recv_len"
    );
    let d = get_desc(&s, srv_desc);
    assert_eq!((d.got_len, d.sent_len), (4, 8));
}

#[test]
fn invalid_sender_descriptors_fail_the_send_at_once() {
    let mut s = pair();
    let cli_desc = data(1);
    let cases = [
        (
            IpcDesc {
                send_ptr: data(1) + 64,
                send_len: 257,
                ..IpcDesc::EMPTY
            },
            Error::TooLong,
        ),
        (
            IpcDesc {
                send_ptr: data(0),
                send_len: 4,
                ..IpcDesc::EMPTY
            },
            Error::BadPointer,
        ), // srv's memory
        (
            IpcDesc {
                send_cap: 2,
                ..IpcDesc::EMPTY
            },
            Error::NoRights,
        ), // no GRANT
        (
            IpcDesc {
                send_cap: 9,
                ..IpcDesc::EMPTY
            },
            Error::EmptySlot,
        ),
        (
            IpcDesc {
                send_cap: 16,
                ..IpcDesc::EMPTY
            },
            Error::BadSlot,
        ),
    ];
    for (d, want) in cases {
        put_desc(&mut s, cli_desc, d);
        assert_eq!(
            s.sys("cli", Sysno::Send, [0, 0, 0, 0, 0, cli_desc])
                .status(),
            Err(want),
            "{d:?}"
        );
        assert_eq!(
            s.state("cli"),
            TaskState::Ready,
            "a refused send does not block"
        );
    }
    assert_eq!(
        s.sys("cli", Sysno::Send, [0, 0, 0, 0, 0, 0x10]).status(),
        Err(Error::BadPointer),
        "descriptor outside memory"
    );
}

#[test]
fn a_receiver_descriptor_must_be_writable_and_its_slot_empty() {
    let mut s = pair();
    let code0 = common::code(0);
    assert_eq!(
        s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, code0]).status(),
        Err(Error::BadPointer),
        "code is not writable"
    );
    put_desc(
        &mut s,
        data(0),
        IpcDesc {
            recv_slot: 0,
            ..IpcDesc::EMPTY
        },
    );
    assert_eq!(
        s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, data(0)]).status(),
        Err(Error::SlotOccupied)
    );
    put_desc(
        &mut s,
        data(0),
        IpcDesc {
            recv_ptr: code0,
            recv_len: 4,
            ..IpcDesc::EMPTY
        },
    );
    assert_eq!(
        s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, data(0)]).status(),
        Err(Error::BadPointer)
    );
}

/// `cli` sends the capability in its slot 1 through a descriptor at `data(1)`.
fn send_cap_1(s: &mut Sys) -> Result<(), Error> {
    put_desc(
        s,
        data(1),
        IpcDesc {
            send_cap: 1,
            ..IpcDesc::EMPTY
        },
    );
    s.sys("cli", Sysno::Send, [0, 0, 0, 0, 0, data(1)]).status()
}

#[test]
fn a_granted_cap_lands_in_the_named_slot_and_is_recorded_as_derived() {
    let mut s = pair();
    put_desc(
        &mut s,
        data(0),
        IpcDesc {
            recv_slot: 5,
            ..IpcDesc::EMPTY
        },
    );
    s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, data(0)]);
    assert_eq!(send_cap_1(&mut s), Ok(()));
    assert_eq!(get_desc(&s, data(0)).got_cap, 1);
    assert_eq!(
        s.sys("srv", Sysno::CapInfo, [5, 0, 0, 0, 0, 0]).r[..2],
        [5, ALL.bits()],
        "a copy of the sender's cap"
    );
    assert_eq!(
        s.sys("cli", Sysno::CapInfo, [1, 0, 0, 0, 0, 0]).status(),
        Ok(()),
        "the sender keeps its cap"
    );
    s.sys("cli", Sysno::CapRevoke, [1, 0, 0, 0, 0, 0]);
    assert_eq!(
        s.sys("srv", Sysno::CapInfo, [5, 0, 0, 0, 0, 0]).status(),
        Err(Error::EmptySlot),
        "revoking the sender's cap removes the transferred one"
    );
}

#[test]
fn a_cap_sent_to_a_receiver_without_a_slot_is_refused_and_nothing_is_delivered() {
    // Receiving with no descriptor, and into an IPC buffer (which takes no capability).
    for buffer in [false, true] {
        let mut s = pair();
        let a5 = if buffer {
            assert_eq!(set_buffer(&mut s, "srv", data(0)), Ok(()));
            ipc_buffer_msg(0)
        } else {
            0
        };
        s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, a5]);
        assert_eq!(send_cap_1(&mut s), Err(Error::NoReceiveSlot));
        assert_eq!(
            s.state("srv"),
            TaskState::Blocked,
            "the receiver keeps waiting"
        );
    }
}

#[test]
fn recv_drops_a_reply_still_owed_and_the_caller_gets_peer_gone() {
    let mut s = pair();
    s.sys("cli", Sysno::Call, [0; 6]);
    s.sys("srv", Sysno::Recv, [0; 6]);
    s.sys("srv", Sysno::Recv, [0; 6]);
    assert_eq!(s.regs("cli").status(), Err(Error::PeerGone));
    assert_eq!(s.state("cli"), TaskState::Ready);
}

#[test]
fn a_server_that_exits_or_faults_wakes_its_caller_with_peer_gone() {
    for fault in [false, true] {
        let mut s = pair();
        s.sys("cli", Sysno::Call, [0; 6]);
        s.sys("srv", Sysno::Recv, [0; 6]);
        if fault {
            s.switch_to("srv");
            s.k.fault(amber_core::Fault::StoreAccess, 0);
        } else {
            s.sys("srv", Sysno::Exit, [0; 6]);
        }
        s.k.check_invariants().unwrap();
        assert_eq!(s.regs("cli").status(), Err(Error::PeerGone));
    }
}

#[test]
fn endpoint_calls_check_kind_and_rights() {
    let mut s = pair();
    assert_eq!(
        s.sys("srv", Sysno::Send, [0; 6]).status(),
        Err(Error::NoRights),
        "Send needs WRITE"
    );
    assert_eq!(
        s.sys("srv", Sysno::Call, [0; 6]).status(),
        Err(Error::NoRights),
        "Call needs WRITE"
    );
    assert_eq!(
        s.sys("cli", Sysno::Recv, [0; 6]).status(),
        Err(Error::NoRights),
        "Recv needs READ"
    );
    assert_eq!(
        s.sys("cli", Sysno::Send, [1, 0, 0, 0, 0, 0]).status(),
        Err(Error::WrongKind)
    );
    assert_eq!(
        s.sys("cli", Sysno::Recv, [7, 0, 0, 0, 0, 0]).status(),
        Err(Error::EmptySlot)
    );
    assert_eq!(
        s.sys("cli", Sysno::Recv, [NO_SLOT, 0, 0, 0, 0, 0]).status(),
        Err(Error::BadSlot)
    );
}

#[test]
fn deleting_an_endpoint_wakes_its_waiters_with_peer_gone() {
    const SRV: [CapSpec; 1] = [CapSpec::Endpoint {
        name: "ep",
        rights: R.union(D),
        badge: 0,
    }];
    const CLI: [CapSpec; 1] = [CLI_EP];
    let mut s = Sys::boot(&[
        task("srv", 1, &SRV),
        task("cli", 1, &CLI),
        task("other", 1, &SRV),
    ]);
    s.sys("srv", Sysno::Recv, [0; 6]);
    assert_eq!(s.sys("other", Sysno::ObjDelete, [0; 6]).status(), Ok(()));
    assert_eq!(s.regs("srv").status(), Err(Error::PeerGone));
    assert_eq!(
        s.sys("cli", Sysno::Send, [0; 6]).status(),
        Err(Error::EmptySlot),
        "every cap to a deleted object is gone"
    );
}

#[test]
fn a_receive_buffer_that_became_invalid_while_waiting_fails_the_receiver_not_the_sender() {
    const OWN: [CapSpec; 2] = [
        CapSpec::Endpoint {
            name: "give",
            rights: W,
            badge: 0,
        },
        CapSpec::MemObj {
            base: SHARED_BASE,
            len: 0x100,
            rights: ALL,
            kind: MemKind::Checkpointed,
        },
    ];
    const SRV: [CapSpec; 2] = [
        SRV_EP,
        CapSpec::Endpoint {
            name: "give",
            rights: R,
            badge: 0,
        },
    ];
    const CLI: [CapSpec; 1] = [CLI_EP];
    let mut s = Sys::boot(&[
        task("srv", 1, &SRV),
        task("cli", 1, &CLI),
        task("own", 1, &OWN),
    ]);
    // own gives srv the shared MemObj into srv's slot 4.
    put_desc(
        &mut s,
        data(0),
        IpcDesc {
            recv_slot: 4,
            ..IpcDesc::EMPTY
        },
    );
    s.sys("srv", Sysno::Recv, [1, 0, 0, 0, 0, data(0)]);
    put_desc(
        &mut s,
        data(2),
        IpcDesc {
            send_cap: 1,
            ..IpcDesc::EMPTY
        },
    );
    let epoch = s.k.memory_epoch();
    assert_eq!(
        s.sys("own", Sysno::Send, [0, 0, 0, 0, 0, data(2)]).status(),
        Ok(())
    );
    assert_ne!(
        s.k.memory_epoch(),
        epoch,
        "a new MemObj cap changes the memory epoch (PMP must be redone)"
    );
    assert_eq!(
        s.k.regions(s.tid("srv")).count(),
        3,
        "the MemObj is now one of srv's regions"
    );
    // srv waits with its receive buffer in the shared range.
    put_desc(
        &mut s,
        data(0),
        IpcDesc {
            recv_ptr: SHARED_BASE,
            recv_len: 16,
            ..IpcDesc::EMPTY
        },
    );
    s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, data(0)]);
    assert_eq!(s.state("srv"), TaskState::Blocked);
    // own deletes the MemObj: srv's access is gone.
    assert_eq!(
        s.sys("own", Sysno::ObjDelete, [1, 0, 0, 0, 0, 0]).status(),
        Ok(())
    );
    assert_eq!(s.k.regions(s.tid("srv")).count(), 2);
    s.sys("cli", Sysno::Send, [0, 1, 0, 0, 0, 0]);
    assert_eq!(
        s.regs("srv").status(),
        Err(Error::BadPointer),
        "the receiver's buffer is re-checked at delivery"
    );
    assert_eq!(
        s.state("cli"),
        TaskState::Blocked,
        "the sender waits for a receiver that can take the message"
    );
}

/// `SetIpcBuffer` as `name`: its status.
fn set_buffer(s: &mut Sys, name: &str, at: u32) -> Result<(), Error> {
    s.sys(name, Sysno::SetIpcBuffer, [at, 0, 0, 0, 0, 0])
        .status()
}

#[test]
fn an_ipc_buffer_must_be_aligned_and_all_in_the_tasks_own_read_write_memory() {
    const SHARED: [CapSpec; 2] = [
        SRV_EP,
        CapSpec::MemObj {
            base: SHARED_BASE,
            len: 0x1000,
            rights: RW,
            kind: MemKind::Checkpointed,
        },
    ];
    let mut s = Sys::boot(&[task("srv", 1, &SHARED)]);
    let data_end = data(0) + (common::TASK_SIZE - common::CODE_SIZE);
    let refused = [
        (data(0) + 2, "unaligned"),
        (common::code(0), "in read-only code"),
        (data_end - IPC_BUFFER_SIZE + 4, "past the end of its data"),
        (
            SHARED_BASE,
            "in a MemObj it holds (a capability can be revoked)",
        ),
        (data(1), "in another task's memory"),
        (IPC_BUFFER_MSG, "in the top page"),
    ];
    for (at, what) in refused {
        assert_eq!(
            set_buffer(&mut s, "srv", at),
            Err(Error::BadPointer),
            "{what}"
        );
    }
    assert_eq!(
        set_buffer(&mut s, "srv", data_end - IPC_BUFFER_SIZE),
        Ok(())
    );
    assert_eq!(
        set_buffer(&mut s, "srv", data(0) + 1),
        Err(Error::BadPointer)
    );
    // The refused call kept the buffer: a message into it lands there.
    s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, ipc_buffer_msg(0)]);
    assert_eq!(
        s.state("srv"),
        TaskState::Blocked,
        "it receives into the kept buffer"
    );
    s.k.check_invariants().unwrap();
}

#[test]
fn bytes_go_between_ipc_buffers_and_descriptors_either_way() {
    let mut s = pair();
    let (srv_buf, cli_buf) = (data(0) + 0x100, data(1) + 0x200);
    assert_eq!(set_buffer(&mut s, "srv", srv_buf), Ok(()));
    assert_eq!(set_buffer(&mut s, "cli", cli_buf), Ok(()));
    let at = |b: u32| b + IpcBuffer::BYTES_OFFSET;
    let words = |s: &Sys, b: u32| {
        let w = s.mem.get(b, 12);
        [0, 4, 8].map(|i| u32::from_le_bytes(w[i..i + 4].try_into().unwrap()))
    };
    // Buffer to buffer: a Call of 40 bytes, received in the server's buffer.
    let hello: Vec<u8> = (0..40u8).map(|i| i ^ 0x5A).collect();
    s.mem.put(at(cli_buf), &hello);
    s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, ipc_buffer_msg(0)]);
    s.sys("cli", Sysno::Call, [0, 1, 2, 3, 4, ipc_buffer_msg(40)]);
    assert_eq!(s.regs("srv").r, [1, 2, 3, 4, 0xB]);
    assert_eq!(s.mem.get(at(srv_buf), 40), hello);
    assert_eq!(
        words(&s, srv_buf),
        [40, 40, 0],
        "got_len, sent_len, got_cap"
    );
    // Descriptor to buffer: the server replies from a descriptor's buffer into the
    // client's IPC buffer, which it also sent from.
    let reply: Vec<u8> = (0..9u8).collect();
    s.mem.put(data(0), &reply);
    put_desc(
        &mut s,
        data(0) + 0x40,
        IpcDesc {
            send_ptr: data(0),
            send_len: 9,
            ..IpcDesc::EMPTY
        },
    );
    assert_eq!(
        s.sys("srv", Sysno::Reply, [0, 5, 6, 7, 8, data(0) + 0x40])
            .status(),
        Ok(())
    );
    assert_eq!(s.regs("cli").r[..4], [5, 6, 7, 8]);
    assert_eq!(s.mem.get(at(cli_buf), 9), reply);
    assert_eq!(words(&s, cli_buf), [9, 9, 0]);
    // Buffer to descriptor, truncated by the descriptor's 16 bytes.
    put_desc(
        &mut s,
        data(0) + 0x40,
        IpcDesc {
            recv_ptr: data(0),
            recv_len: 16,
            ..IpcDesc::EMPTY
        },
    );
    let sent = s.mem.get(at(cli_buf), 16);
    s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, data(0) + 0x40]);
    s.sys("cli", Sysno::Send, [0, 0, 0, 0, 0, ipc_buffer_msg(40)]);
    assert_eq!(s.mem.get(data(0), 16), sent);
    let d = get_desc(&s, data(0) + 0x40);
    assert_eq!((d.got_len, d.sent_len), (16, 40));
    s.k.check_invariants().unwrap();
}

#[test]
fn a_buffer_message_needs_a_buffer_and_a_length_that_fits() {
    let mut s = pair();
    s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, ipc_buffer_msg(0)]);
    // The server has no buffer: the waiting receiver fails, the sender blocks.
    s.sys("cli", Sysno::Send, [0, 0, 0, 0, 0, 0]);
    assert_eq!(s.regs("srv").status(), Err(Error::BadPointer));
    assert_eq!(s.state("cli"), TaskState::Blocked);
    let mut s = pair();
    assert_eq!(
        s.sys("cli", Sysno::Send, [0, 0, 0, 0, 0, ipc_buffer_msg(4)])
            .status(),
        Err(Error::BadPointer),
        "a sender with no buffer"
    );
    assert_eq!(set_buffer(&mut s, "cli", data(1)), Ok(()));
    assert_eq!(
        s.sys(
            "cli",
            Sysno::Send,
            [0, 0, 0, 0, 0, ipc_buffer_msg(MAX_MSG_BYTES as u16 + 1)]
        )
        .status(),
        Err(Error::TooLong)
    );
}

#[test]
fn a_thread_that_exits_or_restarts_has_no_ipc_buffer() {
    for restart in [false, true] {
        let mut tasks = [task("srv", 1, &[SRV_EP]), task("cli", 1, &[CLI_EP])];
        if restart {
            tasks[0].fault = amber_core::FaultPolicy::Restart;
        }
        let mut s = Sys::boot(&tasks);
        assert_eq!(set_buffer(&mut s, "srv", data(0)), Ok(()));
        if restart {
            s.switch_to("srv");
            s.k.fault(amber_core::Fault::StoreAccess, 0);
            assert_eq!(
                s.sys("srv", Sysno::Recv, [0, 0, 0, 0, 0, ipc_buffer_msg(0)])
                    .status(),
                Err(Error::BadPointer),
                "the restarted thread must set its buffer again"
            );
        } else {
            s.sys("srv", Sysno::Exit, [0; 6]);
        }
        s.k.check_invariants().unwrap();
    }
}
