//! The Thread object: a register context, a state, a priority and a fault policy. A
//! blocked thread's state says what it waits for; queues are derived from these states
//! (ordered by `seq`), never stored. This file must never pick who runs (sched.rs does).

use crate::{
    context::Context,
    ids::{ObjId, Priority, ThreadId},
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
#[derive(Debug)]
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
