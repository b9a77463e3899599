//! The Thread object: a register context, a state, a priority and a fault policy. A
//! blocked thread's state says what it waits for; queues are derived from these states
//! (ordered by `seq`), never stored. This file must never pick who runs (`ops/sched.rs` does).
//!
//! It also holds how a Thread is checkpointed: [`Thread::encode`] and
//! [`Thread::decode`], with the record layout in the doc of [`Thread`]. A thread's
//! commit watch is part of it (and of its record); its behaviour lives in `ops/watch.rs`.

use super::watch::{Watch, WATCH_RECORD_LEN};
use crate::{
    abi::ObjKind,
    context::{reg, Context},
    ids::{ObjId, Priority, ThreadId},
    record::{Reader, RecordVersion, RestoreError, Writer},
    spec::FaultPolicy,
};

/// What a blocked thread waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Block {
    /// Sending (`call` = then waiting for the reply) on an endpoint, with the badge of
    /// the cap it sent with.
    Send { ep: ObjId, badge: u32, call: bool },
    /// Receiving on an endpoint.
    Recv { ep: ObjId },
    /// Waiting for `server` to reply (invariant: `server.reply_to == self`).
    Reply { server: ThreadId },
    /// Waiting for bits in a notification.
    Notification { obj: ObjId },
    /// Waiting for an interrupt.
    Irq { obj: ObjId },
    /// Waiting in `Checkpoint` for the next committed checkpoint. Never stored: a
    /// checkpoint records such a thread as already woken with success (see
    /// [`Thread::encode`]).
    Checkpoint,
}

/// A thread's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ThreadState {
    /// Running or runnable.
    Ready,
    /// In a blocking syscall.
    Blocked(Block),
    /// Ended; never runs again.
    Exited,
}

/// A thread.
///
/// # Checkpoint record (version 4, 186 bytes)
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0 | 2 | header: version 4, kind `Thread` (2) |
/// | 2 | 4 | `ipc_buffer`: its address (4-byte aligned, in the group's own memory), 0 = none |
/// | 6 | 124 | `ctx.regs`, x1..x31, u32 each |
/// | 130 | 4 | `ctx.pc` |
/// | 134 | 2 | `group` (ObjId) |
/// | 136 | 1 | state: 0 Ready, 1 Exited, 2 Send, 3 Recv, 4 Reply, 5 Notification, 6 Irq |
/// | 137 | 2 | the state's object: endpoint (Send, Recv), server thread (Reply), notification, IrqNotification; else 0 |
/// | 139 | 4 | Send: the badge; else 0 |
/// | 143 | 1 | Send: 1 = `Call`; else 0 |
/// | 144 | 1 | `priority` level (< `NUM_PRIORITIES`) |
/// | 145 | 1 | `fault`: 0 End, 1 Restart |
/// | 146 | 4 | `entry` |
/// | 150 | 4 | `stack_top` |
/// | 154 | 8 | `seq` |
/// | 162 | 2 | `reply_to` (ObjId of a thread, or 0xFFFF) |
/// | 164 | 4 | `exit_code` |
/// | 168 | 4 | `watch` pointer (nonzero); 0 = no watch, and then bytes 172..186 are 0 |
/// | 172 | 2 | `watch` notification (ObjId) |
/// | 174 | 4 | `watch` commit bits |
/// | 178 | 4 | `watch` restore bits |
/// | 182 | 4 | `watch` flags (`WatchFlags` bits: 1 persist callback, 2 serves persist) |
///
/// Version 2 added the commit watch (168..182), version 3 its flags (182..186), version
/// 4 the IPC buffer where `x0` was (hard-wired zero, it was always stored as 0). Nothing
/// in a Thread is derived, so everything is stored (the value a watch read for the
/// checkpoint being taken is not the thread's: see watch.rs). One state is stored as
/// another: a thread blocked in `Checkpoint` is written as Ready with `a0` = 0, which
/// is exactly what a committed checkpoint makes of it (it keeps its `seq`), so
/// after a restore it resumes as if the checkpoint it waited for had succeeded; it is
/// in that checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Thread {
    /// Saved user registers; the trap code reads and writes them in place.
    pub ctx: Context,
    /// The CapGroup this thread belongs to.
    pub group: ObjId,
    /// Ready, blocked or exited.
    pub state: ThreadState,
    /// Fixed priority.
    pub priority: Priority,
    /// What a fault does.
    pub fault: FaultPolicy,
    /// Where a restart begins.
    pub entry: u32,
    /// The `sp` a restart begins with.
    pub stack_top: u32,
    /// When the thread last became ready or blocked: orders round robin and wait queues.
    pub seq: u64,
    /// The caller this thread owes a reply to.
    pub reply_to: Option<ThreadId>,
    /// The code passed to `Exit` (or `FAULT_EXIT_CODE`).
    pub exit_code: u32,
    /// The commit watch (`CommitWatch`), if any; never on an exited thread.
    pub watch: Option<Watch>,
    /// The IPC buffer (`SetIpcBuffer`): where its [`crate::abi::IpcBuffer`] lies, all
    /// of it in one of the group's own regions the thread may read and write (checked
    /// when set; own regions never change). Never on an exited thread.
    pub ipc_buffer: Option<u32>,
}

/// The exit code recorded for a task ended by a fault.
pub const FAULT_EXIT_CODE: u32 = u32::MAX;

impl Thread {
    /// The state number `TaskInfo` reports.
    pub(crate) fn abi_state(&self) -> crate::abi::TaskState {
        match self.state {
            ThreadState::Ready => crate::abi::TaskState::Ready,
            ThreadState::Blocked(_) => crate::abi::TaskState::Blocked,
            ThreadState::Exited => crate::abi::TaskState::Exited,
        }
    }
}

/// The layout version of Thread records.
const VERSION: RecordVersion = RecordVersion(4);
/// Bytes in a Thread record.
pub(crate) const RECORD_LEN: usize = 168 + WATCH_RECORD_LEN;

const READY: u8 = 0;
const EXITED: u8 = 1;
const SEND: u8 = 2;
const RECV: u8 = 3;
const REPLY: u8 = 4;
const NOTIFICATION: u8 = 5;
const IRQ: u8 = 6;

impl Thread {
    /// Writes the record (see the table on [`Thread`]).
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.header(VERSION, ObjKind::Thread);
        let mut regs = self.ctx.regs;
        let state = match self.state {
            // Recorded as a committed checkpoint leaves it: ready, a0 = 0.
            ThreadState::Blocked(Block::Checkpoint) => {
                regs[reg::A0] = 0;
                ThreadState::Ready
            }
            s => s,
        };
        w.u32(self.ipc_buffer.unwrap_or(0));
        for r in &regs[1..] {
            w.u32(*r);
        }
        w.u32(self.ctx.pc);
        w.obj(self.group);
        let (tag, obj, badge, call) = match state {
            ThreadState::Ready => (READY, None, 0, false),
            ThreadState::Exited => (EXITED, None, 0, false),
            ThreadState::Blocked(b) => match b {
                Block::Send { ep, badge, call } => (SEND, Some(ep), badge, call),
                Block::Recv { ep } => (RECV, Some(ep), 0, false),
                Block::Reply { server } => (REPLY, Some(server.obj()), 0, false),
                Block::Notification { obj } => (NOTIFICATION, Some(obj), 0, false),
                Block::Irq { obj } => (IRQ, Some(obj), 0, false),
                // Rewritten to Ready above.
                Block::Checkpoint => (READY, None, 0, false),
            },
        };
        w.u8(tag);
        match obj {
            Some(o) => w.obj(o),
            None => w.u16(0),
        }
        w.u32(badge);
        w.bool(call);
        w.u8(self.priority.level());
        w.u8(match self.fault {
            FaultPolicy::End => 0,
            FaultPolicy::Restart => 1,
        });
        w.u32(self.entry);
        w.u32(self.stack_top);
        w.u64(self.seq);
        w.opt_obj(self.reply_to.map(ThreadId::obj));
        w.u32(self.exit_code);
        Watch::encode(self.watch.as_ref(), w);
    }

    /// Reads a record written by [`Thread::encode`], checking every field on its own.
    /// Whether the objects it names exist and fit is checked later, on the whole tree.
    pub(crate) fn decode(r: &mut Reader) -> Result<Thread, RestoreError> {
        r.header(VERSION, ObjKind::Thread)?;
        let ipc_buffer = match r.u32()? {
            0 => None,
            at if at.is_multiple_of(4) => Some(at),
            _ => return Err(r.bad_value("IPC buffer address")),
        };
        let mut ctx = Context::ZERO;
        for reg in ctx.regs[1..].iter_mut() {
            *reg = r.u32()?;
        }
        ctx.pc = r.u32()?;
        let group = r.obj()?;
        let tag = r.u8()?;
        let state = match tag {
            READY | EXITED => {
                r.zeros(7, "unused state fields")?;
                if tag == READY {
                    ThreadState::Ready
                } else {
                    ThreadState::Exited
                }
            }
            SEND => {
                let ep = r.obj()?;
                let badge = r.u32()?;
                let call = r.bool("call flag")?;
                ThreadState::Blocked(Block::Send { ep, badge, call })
            }
            RECV | REPLY | NOTIFICATION | IRQ => {
                let obj = r.obj()?;
                r.zeros(5, "unused state fields")?;
                ThreadState::Blocked(match tag {
                    RECV => Block::Recv { ep: obj },
                    REPLY => Block::Reply {
                        server: ThreadId(obj),
                    },
                    NOTIFICATION => Block::Notification { obj },
                    _ => Block::Irq { obj },
                })
            }
            value => return Err(r.bad_tag("thread state", value)),
        };
        let priority = Priority::new(r.u8()?).ok_or(r.bad_value("priority"))?;
        let fault = match r.u8()? {
            0 => FaultPolicy::End,
            1 => FaultPolicy::Restart,
            value => return Err(r.bad_tag("fault policy", value)),
        };
        let entry = r.u32()?;
        let stack_top = r.u32()?;
        let seq = r.u64()?;
        let reply_to = r.opt_obj()?.map(ThreadId);
        let exit_code = r.u32()?;
        let watch = Watch::decode(r)?;
        Ok(Thread {
            ctx,
            group,
            state,
            priority,
            fault,
            entry,
            stack_top,
            seq,
            reply_to,
            exit_code,
            watch,
            ipc_buffer,
        })
    }
}
