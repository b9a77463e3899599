//! Persist phases: before a checkpoint, services whose state lives outside checkpointed
//! memory (the heap service's cache) write it out while every other task is stopped,
//! so the checkpoint and that state agree (ABI doc, "Persist callbacks").
//!
//! A phase is volatile, like the pending watch values: it belongs to one checkpoint
//! attempt, is never recorded, and is gone after a restore. While it is active only
//! threads whose commit watch has `PERSIST_CALLBACK` or `SERVES_PERSIST` run; a
//! callback asked to persist gets `Interrupted` from `Recv` until it calls
//! `PersistDone`. The arch code starts a phase with [`Kernel::begin_persist`] where it
//! would take a checkpoint, takes the checkpoint when [`Kernel::take_persist_complete`]
//! says the phase is over, and ends a phase that overruns its time bound with
//! [`Kernel::abandon_persist`]. This file decides who runs and who is waited for; it
//! must never take a checkpoint or time anything itself.

use super::outcome::Outcome;
use crate::{
    abi::{Error, WatchFlags},
    cycle::{bit, PersistPhase},
    ids::ThreadId,
    kernel::{CollectArray, Kernel},
    obj::{Block, ThreadState},
};

/// How a completed phase ended, for the arch's report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PersistEnd {
    /// The sum of the instruction bounds the callbacks declared (0 = none declared).
    pub declared_bound: u64,
}

impl Kernel {
    /// The callbacks still owed a `PersistDone`: a callback that exited, lost its
    /// watch or changed it to a non-callback one is no longer waited for.
    fn still_waiting(&self) -> u64 {
        self.thread_ids()
            .filter(|&t| self.persist.waiting & bit(t) != 0)
            .filter(|&t| self.watch_flags(t).contains(WatchFlags::PERSIST_CALLBACK))
            .fold(0, |set, t| set | bit(t))
    }

    /// Where a checkpoint is due: starts a persist phase when some persist callback
    /// has to persist first, and returns true (take the checkpoint once
    /// [`Kernel::take_persist_complete`] says so). Returns false when there is none
    /// (take it now) and when a phase is already in progress (its checkpoint will
    /// come). Callbacks blocked in `Recv` or `Checkpoint` are woken with
    /// `Interrupted`: a callback that asked for the checkpoint persists with the
    /// world stopped like the others, so nothing changes between its persist and the
    /// checkpoint.
    pub fn begin_persist(&mut self) -> bool {
        if self.persist.active {
            return false;
        }
        let ids = self.thread_ids().collect_array();
        let mut waiting = 0;
        for t in ids.into_iter().flatten() {
            let state = self.thread(t).state;
            if !self.watch_flags(t).contains(WatchFlags::PERSIST_CALLBACK)
                || state == ThreadState::Exited
            {
                continue;
            }
            waiting |= bit(t);
            if matches!(
                state,
                ThreadState::Blocked(Block::Recv { .. } | Block::Checkpoint)
            ) {
                self.wake(t, Err(Error::Interrupted));
            }
        }
        if waiting == 0 {
            return false;
        }
        self.persist = PersistPhase {
            active: true,
            waiting,
            declared: 0,
        };
        self.schedule();
        true
    }

    /// True once when the phase in progress has no callback left to wait for: the
    /// phase ends, and the arch must take the checkpoint now, before any thread runs.
    pub fn take_persist_complete(&mut self) -> Option<PersistEnd> {
        if !self.persist.active || self.still_waiting() != 0 {
            return None;
        }
        let end = PersistEnd {
            declared_bound: self.persist.declared,
        };
        self.persist = PersistPhase::NONE;
        Some(end)
    }

    /// Ends the phase in progress without a checkpoint (it overran its bound): every
    /// thread may run again. The arch answers `Checkpoint` waiters with
    /// [`Kernel::checkpoint_done`]`(false)`.
    pub fn abandon_persist(&mut self) {
        self.persist = PersistPhase::NONE;
        self.schedule();
    }

    /// `PersistDone(bound)`: the caller was asked to persist and has; `bound` is its
    /// static bound on that work in instructions (0 = none), summed for the report.
    pub(crate) fn sys_persist_done(&mut self, t: ThreadId, bound: u32) -> Outcome {
        if !self.persist.asks(t) {
            return Outcome::err(Error::WrongState);
        }
        self.persist.waiting &= !bit(t);
        self.persist.declared = self.persist.declared.saturating_add(u64::from(bound));
        Outcome::ok()
    }
}
