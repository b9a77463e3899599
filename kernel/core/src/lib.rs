//! Amber's kernel state machine, portable and host-tested: the capability tree, the
//! objects in it, the scheduler, IPC and syscall dispatch.
//!
//! The target-only kernel (`amber-kernel`: traps, PMP, CLINT, PLIC) owns one
//! [`Kernel`] and drives it: it saves the trapping thread's registers into
//! [`Kernel::context_mut`], calls [`Kernel::syscall`] (after [`Kernel::fast_syscall`],
//! which may finish the call alone), [`Kernel::fault`], [`Kernel::tick`] or
//! [`Kernel::irq`], then programs PMP from [`Kernel::regions`] and resumes
//! [`Kernel::current`] (or waits for an interrupt when it is `None`). This crate
//! must never touch hardware, use atomics or allocate: it compiles for the host and for
//! `riscv32imc-unknown-none-elf`, and reaches memory and devices only through the
//! [`UserMemory`] and [`Platform`] traits.
//!
//! Design, in a few lines:
//! - One arena of objects, named by index ([`ObjId`]), so the tree can be checkpointed
//!   by copying the arena; no raw pointers between objects.
//! - Eager revocation: deleting or revoking removes capabilities at once by scanning
//!   every CapGroup's slots, O(groups × slots) per sweep. No generation counters.
//! - Queues are not stored: who waits on an endpoint, and in what order, is read from
//!   thread states and a sequence number. The one derived index (`ready.rs`: which
//!   threads are ready, by priority, which blocked, which waiting to send) only
//!   narrows where to look; it is rebuilt at restore and checked against the states by
//!   the invariants.
//! - Checkpointable by ownership: every change to an arena entry goes through one guard
//!   that marks it dirty; each object type encodes and decodes its own record (next to
//!   the type); everything else is derived and rebuilt at restore. See `ops/items.rs`.
//! - Fixed bounds everywhere (below); every user input is checked before use.
//!
//! Dependencies point down: `amber-kernel` -> `amber-core` -> `amber-abi`. Inside, in
//! layers, each using only those below it:
//!
//! | layer | modules | what |
//! |-------|---------|------|
//! | operations | `ops/` | everything that involves more than one object (its own table of layers) |
//! | the kernel | `kernel.rs` | the [`Kernel`] value and its typed accessors into the arena |
//! | volatile state | `cycle.rs`, `ready.rs` | the checkpoint cycle: request, persist phase, pending watch values; the scheduler's index of ready and blocked threads |
//! | objects | `obj/` | one file per object type (state, record, pure transitions) and the arena |
//! | base | `ids`, `context`, `record`, `spec`, `fault`, `platform` | numbers, registers, the record codec, boot description, fault causes, the two doors to the machine |
//!
//! # Bounds
//!
//! | what | bound |
//! |------|-------|
//! | objects of all kinds (arena entries) | [`MAX_OBJECTS`] = 64 |
//! | tasks (CapGroup + Thread each), besides the root CapGroup | [`MAX_TASKS`] = 15 |
//! | capability slots per CapGroup | [`SLOTS`] = 16 |
//! | memory regions per task (own regions + MemObj caps) | [`MAX_REGIONS`] = 8 |
//! | priorities | [`NUM_PRIORITIES`] = 8 (0 most urgent) |
//! | task name bytes | [`MAX_NAME`] = 16 |
//! | bytes copied per message / per DebugWrite | 256 (see `amber-abi`) |

#![cfg_attr(not(test), no_std)]

mod context;
mod cycle;
mod fault;
mod ids;
mod kernel;
mod obj;
mod ops;
mod platform;
mod ready;
mod record;
mod spec;

pub use amber_abi as abi;
pub use amber_abi::Rights;
pub use context::Context;
pub use cycle::{
    checkpoint_bound, Attempt, Cause, CheckpointConfig, CheckpointEvent, Halt, HaltOutcome,
    PersistEnd, Step,
};
pub use fault::{Access, Fault, FaultAction, FaultReport};
pub use ids::{ObjId, Priority, Slot, ThreadId};
pub use kernel::Kernel;
pub use obj::TaskName;
pub use platform::{deliver_in_parts, write_words_bytewise, Platform, UserMemory};
pub use record::{InvariantViolation, RecordVersion, RestoreError, RECORD_MAX};
pub use spec::{BootError, CapSpec, FaultPolicy, MemKind, RegionSpec, TaskSpec};

/// Entries in the object arena: every CapGroup, Thread and other object.
pub const MAX_OBJECTS: usize = 64;
/// Tasks the root CapGroup can hold (one root slot each).
pub const MAX_TASKS: usize = SLOTS - 1;
/// Capability slots in every CapGroup.
pub const SLOTS: usize = 16;
/// Memory regions PMP must allow for one task: 16 PMP entries, 2 per TOR region.
pub const MAX_REGIONS: usize = 8;
/// Number of priority levels.
pub const NUM_PRIORITIES: u8 = 8;
/// Longest task name in bytes.
pub const MAX_NAME: usize = 16;
