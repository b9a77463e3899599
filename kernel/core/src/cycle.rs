//! The checkpoint cycle's state and the words the glue and the core speak about it:
//! when a checkpoint is due, the persist phase before it, the watched values read for
//! it, and whether to halt after it. None of it is an object or in any record; it is
//! gone after a restore. Plain state and pure transitions (`ops/checkpoint.rs` moves
//! it on with the threads); this file must never reach into the arena.

use crate::{ids::ThreadId, obj::Watch, MAX_OBJECTS};

/// What a checkpoint is for. After a `Restore` the persist callbacks rebuild what the
/// checkpoint leaves out before anyone else runs (no checkpoint without callbacks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    Boot,
    Periodic,
    Requested,
    PowerFailure,
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

/// What happened that may move the cycle on: the app booted fresh (its first
/// checkpoint is due) or was restored, a tick or a syscall was handled, the power is
/// failing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointEvent {
    Booted,
    Restored,
    Tick,
    Syscall,
    PowerFailure,
}

/// How the cycle runs, set at boot ([`crate::Kernel::configure_checkpoints`]): ticks
/// between periodic checkpoints (0 = none), ticks a persist phase may run before it
/// is given up, the last committed version, and a test hook (`amber.pfi=V`: the
/// power-failure interrupt arrives as checkpoint V becomes due).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointConfig {
    pub interval_ticks: u32,
    pub persist_timeout_ticks: u64,
    pub committed: u64,
    pub power_failure_at: Option<u64>,
}

/// What the glue must do next: run on; write the checkpoint now, before any thread
/// runs, and report with [`crate::Kernel::checkpoint_written`]; or halt (the power is
/// failing and the cycle is done).
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    Run,
    Write(Attempt),
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

/// How a completed persist phase went: what it took on `Platform::counter`, the sum
/// of the instruction bounds the callbacks declared (0 = none), and how many threads
/// that run in the phase were inside a request (owed a reply) when it began and when
/// it ended: a driver that shares its bus with the kernel's NVM must be at 0 at the
/// end (docs/nvm-buses.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PersistEnd {
    pub counted: u64,
    pub declared_bound: u64,
    pub in_request_at_begin: u32,
    pub in_request_at_end: u32,
}

/// What became of the power failure's checkpoint: it committed, writing it failed,
/// its persist phase overran and was given up, or the power failed before the app was
/// up and there was nothing to save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HaltOutcome {
    Committed,
    Failed,
    GaveUp,
    NothingToSave,
}

/// The end of a power failure, for the report before the machine halts:
/// `Platform::counter` at the interrupt, the persist phase before the checkpoint
/// (`None`: no callbacks persisted), and what became of the checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Halt {
    pub interrupted_at: u64,
    pub persisted: Option<PersistEnd>,
    pub outcome: HaltOutcome,
}

/// The persist phase in progress: the callbacks (by arena index, in a 64-bit set)
/// asked to persist that have not called `PersistDone`, the sum of the bounds they
/// declared, the threads of the phase inside a request when it began, the checkpoint
/// that follows, and `Platform::now_ticks` and `Platform::counter` when it began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PersistPhase {
    pub(crate) active: bool,
    pub(crate) waiting: u64,
    pub(crate) declared: u64,
    pub(crate) in_request: u32,
    pub(crate) cause: Cause,
    pub(crate) began: (u64, u64),
}

const _: () = assert!(MAX_OBJECTS <= 64, "the waiting set is one u64");

impl PersistPhase {
    /// No phase.
    pub(crate) const NONE: PersistPhase = PersistPhase {
        active: false,
        waiting: 0,
        declared: 0,
        in_request: 0,
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

/// The cycle's state: ticks since the last commit (or a phase given up), a task's
/// request not taken up yet, the phase, the watched values read for the checkpoint
/// being written (by thread index), and `Platform::counter` at the power-failure
/// interrupt (halt after this attempt).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CheckpointCycle {
    pub(crate) config: CheckpointConfig,
    pub(crate) since: u32,
    pub(crate) requested: bool,
    pub(crate) phase: PersistPhase,
    pub(crate) pending: [Option<Snapshot>; MAX_OBJECTS],
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

/// A bound on the instructions one checkpoint takes, for an app whose tasks have
/// `task_ram` bytes of RAM in all: every kernel object and every byte of task RAM
/// dirty. (Twins do not add to it: an item gets a twin only at a checkpoint where it
/// is clean, so each item is written at most once, as its new copy or as its twin.)
/// The constants are the benchmark's measured costs (`cargo xtask bench`, checkpoint
/// section: 3,834 for an idle checkpoint, about 4,700 per dirty 182-byte record, about
/// 12 per dirty memory byte), scaled up for the largest record (a 269-byte CapGroup)
/// and given a margin of a quarter or more; they are measurements, not a proof. On a
/// serial bus (`serial`: SPI FRAM) every byte costs its wire time and the driver's
/// work on top: about 150 instructions a byte more on QEMU's emulated chip (12,929
/// wire bytes in 2.11 M instructions, app spiring), 200 counted. The kernel declares
/// it at a power failure; `cargo xtask` computes the same from an app's description.
pub fn checkpoint_bound(task_ram: u64, serial: bool) -> u64 {
    const FIXED: u64 = 5_000;
    const PER_OBJECT: u64 = 8_000;
    const PER_RAM_BYTE: u64 = 16;
    const PER_BUS_BYTE: u64 = 200;
    /// The largest record (a CapGroup's).
    const LARGEST_RECORD: u64 = 269;
    let objects = MAX_OBJECTS as u64;
    let bus = if serial {
        PER_BUS_BYTE * (objects * LARGEST_RECORD + task_ram)
    } else {
        0
    };
    FIXED + PER_OBJECT * objects + PER_RAM_BYTE * task_ram + bus
}

#[cfg(test)]
mod tests {
    use super::checkpoint_bound;

    #[test]
    fn the_checkpoint_bound_is_the_one_the_kernel_prints_for_the_heap_app() {
        // App `heap`: 16 + 32 + 8 + 8 KiB of task RAM; the kernel on QEMU prints
        // "persist and checkpoint bound ... + checkpoint 1565576".
        assert_eq!(checkpoint_bound(64 * 1024, false), 1_565_576);
        assert_eq!(
            checkpoint_bound(64 * 1024, true) - checkpoint_bound(64 * 1024, false),
            200 * (64 * 269 + 64 * 1024),
            "a serial bus adds every record's and RAM byte's wire time"
        );
        assert!(checkpoint_bound(1, false) < checkpoint_bound(2, false));
    }
}
