//! The checkpoint cycle's state, and the words the glue and the core speak about it:
//! when a checkpoint is due (periodic interval, a task's request, the power-failure
//! interrupt, a restore), the persist phase in progress before it, the watched values
//! read for the checkpoint being written, and whether to halt after it. None of it is
//! an object or part of any record: it belongs to the attempt under way and is gone
//! after a restore. Plain state and pure transitions; `ops/checkpoint.rs` moves it on
//! together with the threads, and this file must never reach into the arena.

use crate::{ids::ThreadId, obj::Watch, MAX_OBJECTS};

/// What a checkpoint is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The first checkpoint of a freshly booted app.
    Boot,
    /// The periodic interval passed.
    Periodic,
    /// A task called `Checkpoint`.
    Requested,
    /// The power is failing: halt once it is written.
    PowerFailure,
    /// The system was just restored: the persist callbacks rebuild what the
    /// checkpoint leaves out before anyone else runs (no checkpoint without them).
    Restore,
}

impl Cause {
    /// The cause in words, for the console.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Boot => "fresh start",
            Cause::Periodic => "periodic",
            Cause::Requested => "requested",
            Cause::PowerFailure => "power failure",
            Cause::Restore => "restore",
        }
    }
}

/// Something that happened that may move the cycle on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointEvent {
    /// The app was booted fresh: its first checkpoint is due.
    Booted,
    /// The system was restored from a checkpoint.
    Restored,
    /// A timer tick (after `Kernel::tick`).
    Tick,
    /// A syscall was handled (after `Kernel::syscall`).
    Syscall,
    /// The power-failure interrupt.
    PowerFailure,
}

/// How the cycle runs, set once at boot ([`crate::Kernel::configure_checkpoints`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointConfig {
    /// Ticks between periodic checkpoints; 0 = none.
    pub interval_ticks: u32,
    /// The longest a persist phase may run, in ticks, before it is given up.
    pub persist_timeout_ticks: u64,
    /// The version of the last committed checkpoint.
    pub committed: u64,
    /// A test hook (`amber.pfi=V`): the power-failure interrupt arrives as checkpoint
    /// V becomes due, so that it lands in a chosen persist phase.
    pub power_failure_at: Option<u64>,
}

/// What the glue must do next.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Go on running tasks.
    Run,
    /// Write the checkpoint now, before any thread runs, and report with
    /// [`crate::Kernel::checkpoint_written`].
    Write(Attempt),
    /// Halt the machine: the power is failing and the cycle is done.
    Halt(Halt),
}

/// A checkpoint to write now. Only [`crate::Kernel::checkpoint_event`] makes one, and
/// only [`crate::Kernel::checkpoint_written`] takes it back, so the order of the
/// attempt cannot be got wrong.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub struct Attempt {
    pub(crate) cause: Cause,
    pub(crate) persisted: Option<PersistEnd>,
}

impl Attempt {
    /// What the checkpoint is for.
    pub fn cause(&self) -> Cause {
        self.cause
    }

    /// How the persist phase before it went; `None` = no callbacks persisted.
    pub fn persisted(&self) -> Option<PersistEnd> {
        self.persisted
    }
}

/// How a completed persist phase went, for the power-failure report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PersistEnd {
    /// What the phase took on the platform's counter (`Platform::counter`).
    pub counted: u64,
    /// The sum of the instruction bounds the callbacks declared (0 = none declared).
    pub declared_bound: u64,
}

/// What became of the power failure's checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HaltOutcome {
    /// It committed.
    Committed,
    /// Writing it failed: the last committed checkpoint stands.
    Failed,
    /// Its persist phase overran its bound and was given up: no checkpoint.
    GaveUp,
    /// The power failed before the app was up: there was nothing to save.
    NothingToSave,
}

/// The end of a power failure, for the report before the machine halts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Halt {
    /// `Platform::counter` at the interrupt.
    pub interrupted_at: u64,
    /// The persist phase before the checkpoint; `None` = no callbacks persisted.
    pub persisted: Option<PersistEnd>,
    /// What became of the checkpoint.
    pub outcome: HaltOutcome,
}

/// The persist phase in progress. Threads are named by arena index in a 64-bit set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PersistPhase {
    /// A phase is in progress.
    pub(crate) active: bool,
    /// Callbacks asked to persist that have not called `PersistDone`.
    pub(crate) waiting: u64,
    /// The sum of the bounds the callbacks declared in `PersistDone` (instructions).
    pub(crate) declared: u64,
    /// The checkpoint that follows the phase.
    pub(crate) cause: Cause,
    /// `Platform::now_ticks` and `Platform::counter` when it began.
    pub(crate) began: (u64, u64),
}

const _: () = assert!(MAX_OBJECTS <= 64, "the waiting set is one u64");

impl PersistPhase {
    /// No phase.
    pub(crate) const NONE: PersistPhase = PersistPhase {
        active: false,
        waiting: 0,
        declared: 0,
        cause: Cause::Periodic,
        began: (0, 0),
    };

    /// Whether `Recv` or `Checkpoint` by `t` must return `Interrupted`: it is asked
    /// to persist.
    pub(crate) fn asks(&self, t: ThreadId) -> bool {
        self.active && self.waiting & bit(t) != 0
    }
}

/// A watched value read for the checkpoint being written, with the watch it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) watch: Watch,
    pub(crate) value: u64,
}

/// The cycle's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CheckpointCycle {
    pub(crate) config: CheckpointConfig,
    /// Ticks since the last checkpoint committed (or a phase was given up).
    pub(crate) since: u32,
    /// A task called `Checkpoint` and the cycle has not taken it up yet.
    pub(crate) requested: bool,
    pub(crate) phase: PersistPhase,
    /// The watched values read for the checkpoint being written, by thread index.
    pub(crate) pending: [Option<Snapshot>; MAX_OBJECTS],
    /// `Platform::counter` at the power-failure interrupt: halt after this attempt.
    pub(crate) halt_at: Option<u64>,
}

impl CheckpointCycle {
    /// Nothing due, nothing configured.
    pub(crate) const NEW: CheckpointCycle = CheckpointCycle {
        config: CheckpointConfig {
            interval_ticks: 0,
            persist_timeout_ticks: u64::MAX,
            committed: 0,
            power_failure_at: None,
        },
        since: 0,
        requested: false,
        phase: PersistPhase::NONE,
        pending: [None; MAX_OBJECTS],
        halt_at: None,
    };

    /// Whether a syscall must look at the cycle at all: the common case is no.
    pub(crate) fn busy(&self) -> bool {
        self.requested || self.phase.active
    }

    /// Counts a tick; true when the periodic checkpoint is due.
    pub(crate) fn tick(&mut self) -> bool {
        let interval = self.config.interval_ticks;
        self.since = self.since.saturating_add(1);
        interval > 0 && self.since >= interval
    }

    /// The `amber.pfi` hook: true once, when the checkpoint now due is the one it names.
    pub(crate) fn injects_power_failure(&mut self) -> bool {
        let due = self.config.committed + 1;
        self.config
            .power_failure_at
            .take_if(|v| *v == due)
            .is_some()
    }

    /// Checkpoint `version` committed: the periodic interval starts again.
    pub(crate) fn committed(&mut self, version: u64) {
        self.config.committed = version;
        self.since = 0;
    }

    /// The next checkpoint's version.
    pub(crate) fn due_version(&self) -> u64 {
        self.config.committed + 1
    }
}

/// Thread `t`'s bit in a set of threads.
pub(crate) fn bit(t: ThreadId) -> u64 {
    1 << t.index()
}
