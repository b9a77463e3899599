//! The volatile state of the checkpoint cycle: whether a task asked for a checkpoint,
//! the persist phase in progress, and the watched values read for the checkpoint being
//! taken. None of it is an object or part of any record: it belongs to one checkpoint
//! attempt and is gone after a restore. Plain state and pure transitions; the
//! operations that move it on with the threads are in `ops/` (persist.rs, watch.rs,
//! items.rs), and this file must never reach into the arena.

use crate::{ids::ThreadId, obj::Watch, MAX_OBJECTS};

/// The phase in progress. Threads are named by arena index in a 64-bit set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PersistPhase {
    /// A phase is in progress.
    pub(crate) active: bool,
    /// Callbacks asked to persist that have not called `PersistDone`.
    pub(crate) waiting: u64,
    /// The sum of the bounds the callbacks declared in `PersistDone` (instructions).
    pub(crate) declared: u64,
}

const _: () = assert!(MAX_OBJECTS <= 64, "the waiting set is one u64");

impl PersistPhase {
    /// Whether `Recv` or `Checkpoint` by `t` must return `Interrupted`: it is asked
    /// to persist.
    pub(crate) fn asks(&self, t: ThreadId) -> bool {
        self.active && self.waiting & bit(t) != 0
    }

    /// No phase.
    pub(crate) const NONE: PersistPhase = PersistPhase {
        active: false,
        waiting: 0,
        declared: 0,
    };
}

/// A watch as [`Kernel::snapshot_watches`] found it, with the value it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) watch: Watch,
    pub(crate) value: u64,
}

/// The values read for the checkpoint being taken, by thread arena index. Never
/// recorded: derived per checkpoint attempt, empty after a restore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PendingWatches(pub(crate) [Option<Snapshot>; MAX_OBJECTS]);

impl PendingWatches {
    /// Nothing pending.
    pub(crate) const NONE: PendingWatches = PendingWatches([None; MAX_OBJECTS]);

    /// Drops every pending value.
    pub(crate) fn clear(&mut self) {
        *self = PendingWatches::NONE;
    }
}

/// Thread `t`'s bit in a set of threads.
pub(crate) fn bit(t: ThreadId) -> u64 {
    1 << t.index()
}
