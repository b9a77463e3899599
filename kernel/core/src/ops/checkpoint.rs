//! The checkpoint cycle: the one entry point through which the glue learns when to
//! write a checkpoint, and what to do after it. The glue reports every event
//! ([`Kernel::checkpoint_event`]: boot, restore, tick, syscall, power failure) and
//! gets a [`Step`]: run on, write a checkpoint now, or halt. After writing it hands
//! the [`Attempt`] back ([`Kernel::checkpoint_written`]) and gets the next step. In
//! between, this file keeps the order every attempt needs: a persist phase first when
//! callbacks must persist (given up past its bound), the commit watches read right
//! before the write, then on commit the dirty marks cleared, the watches told, and the
//! threads waiting in `Checkpoint` answered. It must never write NVM or read a clock
//! beyond what `Platform` offers: the glue writes, the platform tells the time.
//!
//! # The `Checkpoint` syscall
//!
//! A thread calling `Checkpoint` blocks ([`Block::Checkpoint`]) and sets the request
//! that the next [`CheckpointEvent::Syscall`] takes up. Every attempt ends by waking
//! every such thread with `a0` = 0 (committed) or `CheckpointFailed`. A thread that
//! waits in `Checkpoint` while a checkpoint is written is recorded as that wake-up
//! leaves it (ready, `a0` = 0, same `seq`), because the checkpoint it waited for is
//! the one being written: restored from it, it resumes as if that checkpoint had
//! succeeded. If that checkpoint then fails to commit, the records are never used, so
//! nothing is wrong.

use super::outcome::Outcome;
use crate::{
    abi::Error,
    context::reg,
    cycle::{
        Attempt, Cause, CheckpointConfig, CheckpointEvent, Halt, HaltOutcome, PersistEnd, Step,
    },
    ids::ThreadId,
    kernel::{CollectArray, Kernel},
    obj::{Block, ThreadState},
    platform::{Platform, UserMemory},
};

impl Kernel {
    /// Sets how the cycle runs (after boot or restore, before the first event).
    pub fn configure_checkpoints(&mut self, config: CheckpointConfig) {
        self.cycle.config = config;
    }

    /// Reports `event` to the cycle and says what to do next. `mem` is the tasks'
    /// memory (the commit watches are read from it before a checkpoint is written).
    #[inline(always)]
    pub fn checkpoint_event(
        &mut self,
        event: CheckpointEvent,
        mem: &mut dyn UserMemory,
        plat: &dyn Platform,
    ) -> Step {
        // The common case, after every syscall: nothing asked, no phase; it costs the
        // syscall path a test and a branch.
        if event == CheckpointEvent::Syscall && !self.cycle.busy() {
            return Step::Run;
        }
        self.cycle_event(event, mem, plat)
    }

    #[inline(never)]
    fn cycle_event(
        &mut self,
        event: CheckpointEvent,
        mem: &mut dyn UserMemory,
        plat: &dyn Platform,
    ) -> Step {
        let step = match event {
            CheckpointEvent::Booted => {
                self.mark_all_dirty();
                return self.write(Cause::Boot, None, mem);
            }
            CheckpointEvent::Restored => {
                self.signal_restored();
                return self.due(Cause::Restore, mem, plat);
            }
            CheckpointEvent::PowerFailure => return self.power_failure(mem, plat),
            CheckpointEvent::Tick if self.cycle.tick() => self.due(Cause::Periodic, mem, plat),
            CheckpointEvent::Syscall if core::mem::take(&mut self.cycle.requested) => {
                self.due(Cause::Requested, mem, plat)
            }
            _ => Step::Run,
        };
        match step {
            Step::Run => self.persist_progress(mem, plat),
            step => step,
        }
    }

    /// The checkpoint of `attempt` was written: `committed` is its version, or `None`
    /// when it failed (its changes stay marked and are written by the next one).
    pub fn checkpoint_written(
        &mut self,
        attempt: Attempt,
        committed: Option<u64>,
        mem: &mut dyn UserMemory,
    ) -> Step {
        match committed {
            Some(version) => {
                self.clear_dirty();
                // The kernel's stores into the watchers' memory mark it dirty for
                // the next checkpoint (the glue's `UserMemory`).
                self.watches_committed(mem);
                self.cycle.committed(version);
            }
            None => self.watches_failed(),
        }
        self.answer_checkpoint_waiters(committed.is_some());
        match self.cycle.halt_at.take() {
            Some(interrupted_at) => Step::Halt(Halt {
                interrupted_at,
                persisted: attempt.persisted,
                outcome: match committed {
                    Some(_) => HaltOutcome::Committed,
                    None => HaltOutcome::Failed,
                },
            }),
            None => Step::Run,
        }
    }

    /// A checkpoint for `cause` is due: a persist phase first when callbacks must
    /// persist, else the checkpoint now. Nothing while a phase runs: its checkpoint
    /// covers this one too. After a restore without callbacks nothing is due.
    fn due(&mut self, cause: Cause, mem: &mut dyn UserMemory, plat: &dyn Platform) -> Step {
        if self.cycle.phase.active {
            return Step::Run;
        }
        let phase = self.begin_persist(cause, plat);
        if cause == Cause::Restore && !phase {
            return Step::Run;
        }
        if self.cycle.injects_power_failure() {
            log::info!(
                "power failure injected (amber.pfi) as checkpoint {} is due ({})",
                self.cycle.due_version(),
                cause.as_str()
            );
            return self.power_failure(mem, plat);
        }
        if phase {
            Step::Run
        } else {
            self.write(cause, None, mem)
        }
    }

    /// The power-failure interrupt: the persist callbacks persist (the world stopped
    /// but for them and their servers), then the checkpoint is written and the
    /// machine halts.
    fn power_failure(&mut self, mem: &mut dyn UserMemory, plat: &dyn Platform) -> Step {
        let now = plat.counter();
        if !self.booted {
            return Step::Halt(Halt {
                interrupted_at: now,
                persisted: None,
                outcome: HaltOutcome::NothingToSave,
            });
        }
        if self.cycle.phase.active {
            log::info!(
                "power failure: persist callbacks are already persisting; the checkpoint follows them"
            );
            self.cycle.halt_at.get_or_insert(now);
            return Step::Run;
        }
        self.cycle.halt_at = Some(now);
        if self.begin_persist(Cause::PowerFailure, plat) {
            Step::Run
        } else {
            self.write(Cause::PowerFailure, None, mem)
        }
    }

    /// During a persist phase, after every event: the checkpoint once every callback
    /// is done (before any other thread runs); the phase given up once it has run past
    /// its bound (no checkpoint, and the periodic interval starts again rather than
    /// stopping the world at once).
    fn persist_progress(&mut self, mem: &mut dyn UserMemory, plat: &dyn Platform) -> Step {
        let phase = self.cycle.phase;
        if !phase.active {
            return Step::Run;
        }
        if let Some(end) = self.take_persist_complete(plat) {
            return self.write(phase.cause, Some(end), mem);
        }
        let timeout = self.cycle.config.persist_timeout_ticks;
        if plat.now_ticks().saturating_sub(phase.began.0) <= timeout {
            return Step::Run;
        }
        self.abandon_persist();
        self.answer_checkpoint_waiters(false);
        self.cycle.since = 0;
        log::error!(
            "persist callbacks did not finish within {timeout} ticks: no checkpoint taken, the last committed one stands"
        );
        match self.cycle.halt_at.take() {
            Some(interrupted_at) => Step::Halt(Halt {
                interrupted_at,
                persisted: None,
                outcome: HaltOutcome::GaveUp,
            }),
            None => Step::Run,
        }
    }

    /// The world is stopped for a checkpoint: read the commit watches as they are in
    /// it, and have the glue write it.
    fn write(
        &mut self,
        cause: Cause,
        persisted: Option<PersistEnd>,
        mem: &mut dyn UserMemory,
    ) -> Step {
        self.snapshot_watches(mem);
        Step::Write(Attempt { cause, persisted })
    }

    /// An attempt ended: wakes every thread blocked in `Checkpoint` with `a0` = 0
    /// (`ok`) or `CheckpointFailed`, keeping each one's `seq` (its record already says
    /// so, see the file doc), drops any request (it is answered), and reschedules.
    fn answer_checkpoint_waiters(&mut self, ok: bool) {
        let status = if ok {
            0
        } else {
            Error::CheckpointFailed as u32
        };
        for t in self.thread_ids().collect_array().into_iter().flatten() {
            if self.thread(t).state == ThreadState::Blocked(Block::Checkpoint) {
                self.set_state(t, ThreadState::Ready);
                self.thread_mut(t).ctx.regs[reg::A0] = status;
            }
        }
        self.cycle.requested = false;
        self.schedule();
    }

    /// `Checkpoint`: blocks the caller until the next attempt ends and asks for one. A
    /// persist callback asked to persist gets `Interrupted` at once (it persists, then
    /// `PersistDone` brings the checkpoint; see `persist.rs`).
    pub(crate) fn sys_checkpoint(&mut self, t: ThreadId) -> Outcome {
        if self.cycle.phase.asks(t) {
            return Outcome::err(Error::Interrupted);
        }
        self.cycle.requested = true;
        self.block(t, Block::Checkpoint);
        Outcome::Blocked
    }
}
