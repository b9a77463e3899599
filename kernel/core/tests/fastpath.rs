//! The syscall fast path (`Kernel::fast_syscall`): which calls it takes and which it
//! leaves to the general path, and what the tasks see either way. Every call here goes
//! through `Sys::sys`, which holds the fast path to the general one: when it takes a
//! call, the general path run on a copy of the same state must leave the very same
//! kernel and memory; when it declines, nothing may have changed. The last test drives
//! random client/server traffic through both. Public API only.

mod common;

use amber_core::{
    abi::{
        ipc_buffer_msg, Error, IpcBuffer, IpcDesc, ObjKind, Sysno, TaskState, WatchFlags, NO_SLOT,
    },
    CapSpec, CheckpointEvent, Kernel, Step,
};
use common::{data, fast_taken, task, Sys, ALL, G, R, RW, W};
use proptest::{
    prelude::*,
    test_runner::{Config, RngAlgorithm, TestRng, TestRunner},
};

/// Slot 0 of every task: the endpoint (clients WRITE|GRANT with badge 0xB, servers
/// READ); slot 1: a notification with GRANT (a capability to send).
const CLI: [CapSpec; 2] = [
    CapSpec::Endpoint {
        name: "ep",
        rights: W.union(G),
        badge: 0xB,
    },
    CapSpec::Notification {
        name: "n",
        rights: ALL,
    },
];
const SRV: [CapSpec; 1] = [CapSpec::Endpoint {
    name: "ep",
    rights: R,
    badge: 0,
}];

/// `srv` and `cli` at the given priorities, and `idle` at 7 (ready, never in the way).
fn pair(srv: u8, cli: u8) -> Sys {
    Sys::boot(&[
        task("srv", srv, &SRV),
        task("cli", cli, &CLI),
        task("idle", 7, &[]),
    ])
}

/// Runs `nr` as `name` and says whether the fast path took it.
fn sys(s: &mut Sys, name: &str, nr: Sysno, args: [u32; 6]) -> (Result<(), Error>, bool) {
    let before = fast_taken();
    let r = s.sys(name, nr, args);
    let fast = fast_taken() > before;
    // A blocked caller's a0 is not a result yet.
    let status = match s.state(name) {
        TaskState::Ready => r.status(),
        _ => Ok(()),
    };
    (status, fast)
}

/// The server waiting in `Recv`, then a client's `Call` with words 1..4.
fn called(s: &mut Sys) -> bool {
    assert_eq!(sys(s, "srv", Sysno::Recv, [0; 6]), (Ok(()), false));
    sys(s, "cli", Sysno::Call, [0, 1, 2, 3, 4, 0]).1
}

#[test]
fn a_null_syscall_takes_the_fast_path_and_succeeds() {
    let mut s = pair(1, 1);
    let pc = s.k.context(s.tid("cli")).pc;
    assert_eq!(sys(&mut s, "cli", Sysno::Null, [9; 6]), (Ok(()), true));
    assert_eq!(s.k.context(s.tid("cli")).pc, pc + 4, "past the ecall");
    assert_eq!(s.regs("cli").r, [9; 5], "a1..a5 untouched");
}

#[test]
fn a_call_to_a_waiting_server_and_its_reply_recv_take_the_fast_path() {
    let mut s = pair(1, 1);
    assert!(called(&mut s), "the server waits and runs next");
    assert_eq!(
        s.current_name().as_deref(),
        Some("srv"),
        "the server runs at once"
    );
    assert_eq!(
        s.regs("srv").r,
        [1, 2, 3, 4, 0xB],
        "words and the badge arrived"
    );
    assert_eq!(
        s.state("cli"),
        TaskState::Blocked,
        "the caller waits for its reply"
    );
    assert_eq!(
        sys(&mut s, "srv", Sysno::ReplyRecv, [0, 5, 6, 7, 8, 0]),
        (Ok(()), true)
    );
    assert_eq!(
        s.current_name().as_deref(),
        Some("cli"),
        "the caller runs at once"
    );
    let c = s.regs("cli");
    assert_eq!(
        (c.a0, &c.r[..4]),
        (0, &[5, 6, 7, 8][..]),
        "the reply's words"
    );
    assert_eq!(s.state("srv"), TaskState::Blocked, "the server waits again");
}

#[test]
fn the_partner_is_reached_by_the_fast_path_whatever_the_priorities_when_nobody_else_is_ready() {
    for (srv, cli) in [(0, 3), (3, 0), (2, 2)] {
        let mut s = pair(srv, cli);
        if s.current_name().as_deref() == Some("srv") {
            assert!(
                called(&mut s),
                "server {srv}, client {cli}: the server waits"
            );
        } else {
            // The first Call finds nobody waiting; the server takes it from the queue.
            assert!(!sys(&mut s, "cli", Sysno::Call, [0, 1, 0, 0, 0, 0]).1);
            assert!(!sys(&mut s, "srv", Sysno::Recv, [0; 6]).1);
        }
        for round in 0..3 {
            assert!(
                sys(&mut s, "srv", Sysno::ReplyRecv, [0, round, 0, 0, 0, 0]).1,
                "server {srv}, client {cli}: the reply goes straight back"
            );
            assert_eq!(s.regs("cli").r[0], round);
            assert!(
                sys(&mut s, "cli", Sysno::Call, [0, round, 0, 0, 0, 0]).1,
                "server {srv}, client {cli}: the call goes straight to the server"
            );
        }
    }
}

#[test]
fn the_fast_path_leaves_a_call_alone_when_another_thread_would_run_first() {
    // `other` is ready at the server's priority and was ready first: the scheduler
    // runs it before the server, so the general path decides.
    let mut s = Sys::boot(&[
        task("srv", 2, &SRV),
        task("cli", 2, &CLI),
        task("other", 2, &[]),
    ]);
    assert_eq!(sys(&mut s, "srv", Sysno::Recv, [0; 6]), (Ok(()), false));
    assert!(!sys(&mut s, "cli", Sysno::Call, [0, 1, 0, 0, 0, 0]).1);
    assert_eq!(
        s.current_name().as_deref(),
        Some("other"),
        "the older thread runs"
    );
    assert_eq!(
        s.regs("srv").r[0],
        1,
        "the message was delivered all the same"
    );
}

#[test]
fn the_fast_path_leaves_a_reply_alone_when_another_thread_would_run_first() {
    let mut s = Sys::boot(&[
        task("srv", 1, &SRV),
        task("cli", 2, &CLI),
        task("other", 2, &[]),
    ]);
    assert!(called(&mut s));
    assert!(!sys(&mut s, "srv", Sysno::ReplyRecv, [0, 5, 0, 0, 0, 0]).1);
    assert_eq!(s.current_name().as_deref(), Some("other"));
    assert_eq!(s.regs("cli").r[0], 5, "the reply was given all the same");
}

#[test]
fn a_call_with_nobody_waiting_blocks_on_the_general_path() {
    let mut s = pair(1, 1);
    assert_eq!(
        sys(&mut s, "cli", Sysno::Call, [0, 1, 0, 0, 0, 0]),
        (Ok(()), false)
    );
    assert_eq!(s.state("cli"), TaskState::Blocked);
    assert_eq!(sys(&mut s, "srv", Sysno::Recv, [0; 6]), (Ok(()), false));
    assert_eq!(s.regs("srv").r[0], 1);
}

#[test]
fn a_reply_recv_with_a_caller_queued_takes_the_general_path_and_the_next_message() {
    let mut s = Sys::boot(&[
        task("srv", 2, &SRV),
        task("c1", 1, &CLI),
        task("c2", 1, &CLI),
    ]);
    let _ = sys(&mut s, "c1", Sysno::Call, [0, 10, 0, 0, 0, 0]);
    let _ = sys(&mut s, "c2", Sysno::Call, [0, 20, 0, 0, 0, 0]);
    let _ = sys(&mut s, "srv", Sysno::Recv, [0; 6]);
    let (status, fast) = sys(&mut s, "srv", Sysno::ReplyRecv, [0, 11, 0, 0, 0, 0]);
    assert_eq!(
        (status, fast),
        (Ok(()), false),
        "c2 waits to send: no fast path"
    );
    assert_eq!(
        s.regs("srv").r[0],
        20,
        "the next message came in the same call"
    );
    assert_eq!(s.regs("c1").r[0], 11);
}

#[test]
fn a_reply_recv_owing_nothing_and_other_calls_take_the_general_path() {
    let mut s = pair(1, 1);
    assert_eq!(
        sys(&mut s, "srv", Sysno::ReplyRecv, [0; 6]),
        (Ok(()), false)
    );
    assert_eq!(s.state("srv"), TaskState::Blocked, "a plain Recv");
    for nr in [
        Sysno::Yield,
        Sysno::Send,
        Sysno::Reply,
        Sysno::Now,
        Sysno::TaskInfo,
    ] {
        let args = [
            0,
            0,
            0,
            0,
            0,
            if nr == Sysno::TaskInfo { NO_SLOT } else { 0 },
        ];
        assert!(!sys(&mut s, "cli", nr, args).1, "{nr:?}");
    }
}

#[test]
fn a_capability_in_the_message_takes_the_general_path() {
    let mut s = pair(1, 1);
    let srv_desc = data(0);
    s.mem.put(
        srv_desc,
        &IpcDesc {
            recv_slot: 5,
            ..IpcDesc::EMPTY
        }
        .to_bytes(),
    );
    let _ = sys(&mut s, "srv", Sysno::Recv, [0, 0, 0, 0, 0, srv_desc]);
    let cli_desc = data(1);
    s.mem.put(
        cli_desc,
        &IpcDesc {
            send_cap: 1,
            ..IpcDesc::EMPTY
        }
        .to_bytes(),
    );
    assert!(!sys(&mut s, "cli", Sysno::Call, [0, 1, 0, 0, 0, cli_desc]).1);
    assert_eq!(
        s.k.cap_rights(s.tid("srv"), 5),
        Some(ALL),
        "the capability landed"
    );
}

#[test]
fn bad_descriptors_take_the_general_path_which_refuses_them() {
    let mut s = pair(1, 1);
    let _ = sys(&mut s, "srv", Sysno::Recv, [0; 6]);
    // In the caller's code: readable, not writable (a Call receives through it).
    let code = common::code(1);
    assert_eq!(
        sys(&mut s, "cli", Sysno::Call, [0, 1, 0, 0, 0, code]),
        (Err(Error::BadPointer), false)
    );
    let d = data(1);
    let too_long = IpcDesc {
        send_ptr: d + 0x40,
        send_len: 257,
        ..IpcDesc::EMPTY
    };
    s.mem.put(d, &too_long.to_bytes());
    assert_eq!(
        sys(&mut s, "cli", Sysno::Call, [0, 1, 0, 0, 0, d]),
        (Err(Error::TooLong), false)
    );
    let foreign = IpcDesc {
        recv_ptr: data(0),
        recv_len: 4,
        ..IpcDesc::EMPTY
    };
    s.mem.put(d, &foreign.to_bytes());
    assert_eq!(
        sys(&mut s, "cli", Sysno::Call, [0, 1, 0, 0, 0, d]),
        (Err(Error::BadPointer), false),
        "a receive buffer in another task's memory"
    );
    assert_eq!(
        sys(&mut s, "cli", Sysno::Call, [1, 1, 0, 0, 0, 0]),
        (Err(Error::WrongKind), false)
    );
    assert_eq!(
        s.state("srv"),
        TaskState::Blocked,
        "nothing reached the server"
    );
}

#[test]
fn a_server_whose_buffer_became_invalid_is_left_to_the_general_path() {
    let mut s = pair(1, 1);
    let srv_desc = data(0);
    let bad = IpcDesc {
        recv_ptr: data(1),
        recv_len: 8,
        ..IpcDesc::EMPTY
    };
    s.mem.put(srv_desc, &IpcDesc::EMPTY.to_bytes());
    let _ = sys(&mut s, "srv", Sysno::Recv, [0, 0, 0, 0, 0, srv_desc]);
    s.mem.put(srv_desc, &bad.to_bytes());
    assert!(!sys(&mut s, "cli", Sysno::Call, [0, 1, 0, 0, 0, 0]).1);
    assert_eq!(
        s.regs("srv").a0,
        Error::BadPointer as u32,
        "the server got the error"
    );
}

/// The descriptor at `at`.
fn desc_at(s: &Sys, at: u32) -> IpcDesc {
    IpcDesc::from_bytes(&s.mem.get(at, 36).try_into().unwrap())
}

#[test]
fn sixty_four_bytes_each_way_take_the_fast_path() {
    // As the bench app: the server (bufecho) less urgent than its client, echoing the
    // bytes from the buffer it receives into, through one descriptor.
    let mut s = pair(3, 2);
    let (srv_desc, buf) = (data(0), data(0) + 0x100);
    let srv = IpcDesc {
        recv_ptr: buf,
        recv_len: 256,
        ..IpcDesc::EMPTY
    };
    let (cli_desc, out, back) = (data(1), data(1) + 0x100, data(1) + 0x200);
    let cli = IpcDesc {
        send_ptr: out,
        send_len: 64,
        recv_ptr: back,
        recv_len: 64,
        ..IpcDesc::EMPTY
    };
    s.mem.put(srv_desc, &srv.to_bytes());
    s.mem.put(cli_desc, &cli.to_bytes());
    for round in 0..3u8 {
        let bytes: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ round).collect();
        s.mem.put(out, &bytes);
        s.mem.put(back, &[0; 64]);
        let (status, fast) = sys(&mut s, "cli", Sysno::Call, [0, 1, 2, 3, 4, cli_desc]);
        assert_eq!(
            (status, fast),
            (Ok(()), round > 0),
            "round {round}: the server waits"
        );
        if round == 0 {
            let _ = sys(&mut s, "srv", Sysno::Recv, [0, 0, 0, 0, 0, srv_desc]);
        }
        assert_eq!(
            s.mem.get(buf, 64),
            bytes,
            "round {round}: the bytes reached the server"
        );
        let got = desc_at(&s, srv_desc);
        assert_eq!((got.got_len, got.sent_len, got.got_cap), (64, 64, 0));
        let reply = IpcDesc {
            send_ptr: buf,
            send_len: got.got_len,
            ..got
        };
        s.mem.put(srv_desc, &reply.to_bytes());
        assert_eq!(
            sys(&mut s, "srv", Sysno::ReplyRecv, [0, 1, 2, 3, 4, srv_desc]),
            (Ok(()), true),
            "round {round}: the echo goes straight back"
        );
        assert_eq!(s.mem.get(back, 64), bytes, "round {round}: and came back");
        assert_eq!(desc_at(&s, cli_desc).got_len, 64);
    }
}

#[test]
fn sixty_four_bytes_each_way_through_ipc_buffers_take_the_fast_path() {
    // As the bench app's buffer round trip: client and server each registered one IPC
    // buffer; the server echoes what it received from the same buffer.
    let mut s = pair(3, 2);
    let (srv_buf, cli_buf) = (data(0) + 0x100, data(1) + 0x200);
    assert_eq!(
        sys(&mut s, "cli", Sysno::SetIpcBuffer, [cli_buf, 0, 0, 0, 0, 0]),
        (Ok(()), false)
    );
    let bytes_of = |b: u32| b + IpcBuffer::BYTES_OFFSET;
    let got_len = |s: &Sys, b: u32| u32::from_le_bytes(s.mem.get(b, 4).try_into().unwrap());
    for round in 0..3u8 {
        let bytes: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ round).collect();
        s.mem.put(bytes_of(cli_buf), &bytes);
        let (status, fast) = sys(
            &mut s,
            "cli",
            Sysno::Call,
            [0, 1, 2, 3, 4, ipc_buffer_msg(64)],
        );
        assert_eq!(
            (status, fast),
            (Ok(()), round > 0),
            "round {round}: the server waits"
        );
        if round == 0 {
            let _ = sys(&mut s, "srv", Sysno::SetIpcBuffer, [srv_buf, 0, 0, 0, 0, 0]);
            let _ = sys(
                &mut s,
                "srv",
                Sysno::Recv,
                [0, 0, 0, 0, 0, ipc_buffer_msg(0)],
            );
        }
        assert_eq!(
            s.mem.get(bytes_of(srv_buf), 64),
            bytes,
            "round {round}: at the server"
        );
        assert_eq!(got_len(&s, srv_buf), 64);
        s.mem.put(bytes_of(cli_buf), &[0; 64]);
        assert_eq!(
            sys(
                &mut s,
                "srv",
                Sysno::ReplyRecv,
                [0, 1, 2, 3, 4, ipc_buffer_msg(64)]
            ),
            (Ok(()), true),
            "round {round}: the echo goes straight back"
        );
        assert_eq!(
            s.mem.get(bytes_of(cli_buf), 64),
            bytes,
            "round {round}: and came back"
        );
        assert_eq!(got_len(&s, cli_buf), 64);
    }
}

#[test]
fn no_fast_path_while_a_persist_phase_runs() {
    let caps = [
        CapSpec::Notification {
            name: "n",
            rights: ALL,
        },
        CapSpec::Endpoint {
            name: "ep",
            rights: RW,
            badge: 0,
        },
    ];
    let mut s = Sys::boot(&[task("svc", 1, &caps), task("app", 1, &caps)]);
    let block = data(0) + 0x100;
    let flags = WatchFlags::PERSIST_CALLBACK.bits();
    let _ = sys(
        &mut s,
        "svc",
        Sysno::CommitWatch,
        [block, 0, 0, 0, flags, 0],
    );
    let step = s.due();
    assert_eq!(step, Step::Run, "the callback persists first");
    assert!(s.k.persist_active());
    assert_eq!(sys(&mut s, "svc", Sysno::Null, [0; 6]), (Ok(()), false));
    assert!(
        !sys(&mut s, "svc", Sysno::PersistDone, [0; 6]).1,
        "the phase ends on the general path"
    );
    let step = s.event(CheckpointEvent::Syscall);
    assert_eq!(s.drive(step, true), Step::Run);
    assert!(!s.k.persist_active());
    assert_eq!(sys(&mut s, "svc", Sysno::Null, [0; 6]), (Ok(()), true));
}

#[test]
fn the_hand_over_numbers_the_queues_as_the_general_path_where_the_counter_carries_or_saturates() {
    // Thread records keep `seq` at bytes 154..162 (thread.rs); a restore starts the
    // kernel's counter at the largest.
    const SEQ_AT: usize = 154;
    let edges = [
        u64::from(u32::MAX) - 2,
        u64::from(u32::MAX) - 1,
        u64::from(u32::MAX),
        u64::MAX - 3,
        u64::MAX - 1,
        u64::MAX,
    ];
    for newest in edges {
        let s = pair(1, 1);
        let mut recs = common::records(&s.k);
        let threads: Vec<u16> =
            s.k.live_objects()
                .filter(|(_, k)| *k == ObjKind::Thread)
                .map(|(i, _)| i)
                .collect();
        let seq = |r: &[u8]| u64::from_le_bytes(r[SEQ_AT..SEQ_AT + 8].try_into().unwrap());
        let max = recs
            .iter()
            .filter(|(i, _)| threads.contains(i))
            .map(|(_, r)| seq(r))
            .max()
            .unwrap();
        for (_, r) in recs.iter_mut().filter(|(i, _)| threads.contains(i)) {
            // The same order, the newest at `newest`.
            let moved = newest - (max - seq(r));
            r[SEQ_AT..SEQ_AT + 8].copy_from_slice(&moved.to_le_bytes());
        }
        let mut plat = s.plat.clone();
        let mut k = Box::new(Kernel::new());
        k.restore_into(recs.iter().map(|(i, b)| (*i, b.as_slice())), &mut plat)
            .expect("records with other sequence numbers restore");
        k.configure_checkpoints(common::every_tick(u64::MAX, 0));
        let mut s = Sys {
            k,
            mem: s.mem.clone(),
            plat,
            version: 0,
        };
        let before = fast_taken();
        assert!(called(&mut s), "counter at {newest:#x}: the call");
        for round in 0..3 {
            let reply = [0, round, 0, 0, 0, 0];
            assert!(
                sys(&mut s, "srv", Sysno::ReplyRecv, reply).1,
                "counter at {newest:#x}"
            );
            assert!(
                sys(&mut s, "cli", Sysno::Call, [0; 6]).1,
                "counter at {newest:#x}"
            );
        }
        assert_eq!(fast_taken() - before, 7, "every call took the fast path");
    }
}

/// One step of the random traffic: what the current thread calls, with which
/// descriptor.
#[derive(Clone, Copy, Debug)]
enum Op {
    Sys {
        nr: Sysno,
        slot: u32,
        desc: u8,
    },
    Tick,
    /// A task's descriptor `desc` rewritten from entropy.
    Poke {
        task: usize,
        desc: u8,
        raw: u32,
    },
}

/// Task `t`'s `a5` for descriptor `d`: 0 none; a descriptor 1 and 2 in its data (2 not
/// word aligned), 3 in its code (read-only), 4 in another task's data; 5 and 6 its IPC
/// buffer (which `d` has not), with lengths up to past the limit.
fn desc_ptr(t: usize, d: u8) -> u32 {
    match d % 7 {
        0 => 0,
        1 => data(t),
        2 => data(t) + 0x42,
        3 => common::code(t),
        4 => data((t + 1) % 4),
        5 => ipc_buffer_msg([0, 4, 64, 256, 257][usize::from(d / 7) % 5]),
        _ => ipc_buffer_msg(64),
    }
}

/// Where task `t`'s IPC buffer lies, clear of its descriptors and their buffers.
fn ipc_buffer_of(t: usize) -> u32 {
    data(t) + 0x500
}

/// A descriptor made from `raw`: buffers mostly in the task's own data, lengths up to
/// past the limit, sometimes a capability to send or a slot to receive into.
fn desc_from(t: usize, raw: u32) -> IpcDesc {
    let buf = |sel: u32| match sel % 8 {
        0 => data((t + 1) % 4),
        1 => common::code(t),
        _ => data(t) + 0x100 + (sel % 4) * 0x100,
    };
    IpcDesc {
        send_ptr: buf(raw),
        send_len: [0, 4, 64, 256, 257][(raw >> 3) as usize % 5],
        send_cap: if raw >> 6 & 7 == 0 { 1 } else { NO_SLOT },
        recv_ptr: buf(raw >> 9),
        recv_len: [0, 8, 64, 300][(raw >> 12) as usize % 4],
        recv_slot: if raw >> 14 & 7 == 0 { 6 } else { NO_SLOT },
        ..IpcDesc::EMPTY
    }
}

fn op((sel, raw): (u8, u32)) -> Op {
    let task = (raw % 4) as usize;
    let nrs = [
        Sysno::Call,
        Sysno::Call,
        Sysno::ReplyRecv,
        Sysno::ReplyRecv,
        Sysno::Recv,
        Sysno::Null,
        Sysno::Send,
        Sysno::Yield,
        Sysno::Reply,
        Sysno::SetIpcBuffer,
    ];
    match sel % 16 {
        0..=11 => Op::Sys {
            nr: nrs[(raw >> 2) as usize % nrs.len()],
            slot: [0, 0, 0, 1, 7][(raw >> 6) as usize % 5],
            desc: (raw >> 9) as u8,
        },
        12 => Op::Tick,
        _ => Op::Poke {
            task,
            desc: (raw >> 9) as u8,
            raw: raw.rotate_left(7),
        },
    }
}

/// Four tasks of random priorities on two endpoints (slot 0 of a and c, slots 0 and
/// 1 of b and d), each calling and serving, run as the device's glue runs a syscall:
/// the fast path first, else the general path and the checkpoint cycle; a tick
/// (round robin, a checkpoint) now and then.
fn traffic(prios: [u8; 4], raw: Vec<(u8, u32)>) -> Result<(), TestCaseError> {
    const A: [CapSpec; 2] = [
        CapSpec::Endpoint {
            name: "e",
            rights: ALL,
            badge: 1,
        },
        CapSpec::Notification {
            name: "n",
            rights: ALL,
        },
    ];
    const B: [CapSpec; 2] = [
        CapSpec::Endpoint {
            name: "e",
            rights: RW,
            badge: 2,
        },
        CapSpec::Endpoint {
            name: "f",
            rights: RW,
            badge: 3,
        },
    ];
    let names = ["a", "b", "c", "d"];
    let mut s = Sys::boot(&[
        task("a", prios[0] % 8, &A),
        task("b", prios[1] % 8, &B),
        task("c", prios[2] % 8, &A),
        task("d", prios[3] % 8, &B),
    ]);
    for o in raw.into_iter().map(op) {
        match o {
            Op::Sys { nr, slot, desc } => {
                let Some(t) = s.k.current() else {
                    return Ok(());
                };
                let own = names
                    .iter()
                    .position(|n| *n == s.k.task_name(t))
                    .unwrap_or(0);
                // SetIpcBuffer: mostly the task's buffer, sometimes none, or unaligned.
                let a0 = match (nr, slot) {
                    (Sysno::SetIpcBuffer, 1) => 0,
                    (Sysno::SetIpcBuffer, 7) => ipc_buffer_of(own) + 2,
                    (Sysno::SetIpcBuffer, _) => ipc_buffer_of(own),
                    _ => slot,
                };
                let ctx = s.k.context_mut(t);
                ctx.regs[17] = nr as u32;
                ctx.regs[10..16].copy_from_slice(&[a0, 1, 2, 3, 4, desc_ptr(own, desc)]);
                if !s.fast_syscall() {
                    s.k.syscall(&mut s.mem, &mut s.plat);
                    let step = s.event(CheckpointEvent::Syscall);
                    let _ = s.drive(step, true);
                }
                s.k.check_invariants()
                    .map_err(|v| TestCaseError::fail(format!("{v}")))?;
            }
            Op::Tick => {
                s.tick();
                let step = s.due();
                let _ = s.drive(step, true);
            }
            Op::Poke { task, desc, raw } => {
                let at = desc_ptr(task, desc % 4 + 1);
                if at != common::code(task) {
                    s.mem.put(at, &desc_from(task, raw).to_bytes());
                }
            }
        }
    }
    Ok(())
}

#[test]
fn random_client_server_traffic_takes_the_fast_path_exactly_as_the_general_path_would() {
    let config = Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let strategy = (
        any::<[u8; 4]>(),
        prop::collection::vec(any::<(u8, u32)>(), 300),
    );
    if let Err(e) = runner.run(&strategy, |(p, raw)| traffic(p, raw)) {
        panic!("{e}");
    }
    assert!(
        fast_taken() > 1000,
        "the traffic must reach the fast path often, reached it {} times",
        fast_taken()
    );
}
