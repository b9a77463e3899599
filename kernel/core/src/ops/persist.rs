//! Persist phases: before a checkpoint, services whose state lives outside checkpointed
//! memory (the heap service's cache) write it out while every other task is stopped,
//! so the checkpoint and that state agree (ABI doc, "Persist callbacks").
//!
//! A phase is volatile, like the pending watch values: it belongs to one checkpoint
//! attempt, is never recorded, and is gone after a restore. While it is active only
//! threads whose commit watch has `PERSIST_CALLBACK` or `SERVES_PERSIST` run; a
//! callback asked to persist gets `Interrupted` from `Recv` until it calls
//! `PersistDone`. The checkpoint cycle (`checkpoint.rs`) starts a phase where a
//! checkpoint is due, writes the checkpoint once the phase is complete, and gives up
//! a phase that overruns its bound. This file decides who runs and who is waited for;
//! it must never take a checkpoint or decide when one is due.

use super::outcome::Outcome;
use crate::{
    abi::{Error, WatchFlags},
    cycle::{bit, Cause, PersistEnd, PersistPhase},
    ids::ThreadId,
    kernel::{CollectArray, Kernel},
    obj::{Block, ThreadState},
    platform::Platform,
};

impl Kernel {
    /// The callbacks still owed a `PersistDone`: a callback that exited, lost its
    /// watch or changed it to a non-callback one is no longer waited for.
    fn still_waiting(&self) -> u64 {
        self.thread_ids()
            .filter(|&t| self.cycle.phase.waiting & bit(t) != 0)
            .filter(|&t| self.watch_flags(t).contains(WatchFlags::PERSIST_CALLBACK))
            .fold(0, |set, t| set | bit(t))
    }

    /// Where a checkpoint for `cause` is due: starts a persist phase when some persist
    /// callback has to persist first, and returns true (the checkpoint follows once
    /// [`Kernel::take_persist_complete`] says so); false when there is none (take it
    /// now). Callbacks blocked in `Recv` or `Checkpoint` are woken with `Interrupted`:
    /// a callback that asked for the checkpoint persists with the world stopped like
    /// the others, so nothing changes between its persist and the checkpoint. Only
    /// called without a phase in progress.
    pub(crate) fn begin_persist(&mut self, cause: Cause, plat: &dyn Platform) -> bool {
        let in_request = self.in_request();
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
        self.cycle.phase = PersistPhase {
            active: true,
            waiting,
            declared: 0,
            in_request,
            cause,
            began: (plat.now_ticks(), plat.counter()),
        };
        self.schedule();
        true
    }

    /// Once when the phase in progress has no callback left to wait for: the phase
    /// ends, and the checkpoint must be written now, before any thread runs.
    pub(crate) fn take_persist_complete(&mut self, plat: &dyn Platform) -> Option<PersistEnd> {
        let phase = self.cycle.phase;
        if !phase.active || self.still_waiting() != 0 {
            return None;
        }
        self.cycle.phase = PersistPhase::NONE;
        Some(PersistEnd {
            counted: plat.counter().wrapping_sub(phase.began.1),
            declared_bound: phase.declared,
            in_request_at_begin: phase.in_request,
            in_request_at_end: self.in_request(),
        })
    }

    /// Threads that run in a persist phase and are inside a request: a client waits
    /// for their reply (an SPI driver between `Recv` and `Reply` may be mid-transfer).
    fn in_request(&self) -> u32 {
        self.thread_ids()
            .filter(|&t| self.serves_persist(t) && self.thread(t).reply_to.is_some())
            .count() as u32
    }

    /// Ends the phase in progress without a checkpoint (it overran its bound): every
    /// thread may run again.
    pub(crate) fn abandon_persist(&mut self) {
        self.cycle.phase = PersistPhase::NONE;
        self.schedule();
    }

    /// `PersistDone(bound)`: the caller was asked to persist and has; `bound` is its
    /// static bound on that work in instructions (0 = none), summed for the report.
    pub(crate) fn sys_persist_done(&mut self, t: ThreadId, bound: u32) -> Outcome {
        if !self.cycle.phase.asks(t) {
            return Outcome::err(Error::WrongState);
        }
        self.cycle.phase.waiting &= !bit(t);
        self.cycle.phase.declared = self.cycle.phase.declared.saturating_add(u64::from(bound));
        Outcome::ok()
    }
}
