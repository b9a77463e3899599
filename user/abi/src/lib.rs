//! Amber's syscall ABI: the one definition of how a user task talks to the kernel.
//!
//! The kernel (`amber-core`) and the user runtime both depend on this crate, so every
//! number that crosses the U-mode/M-mode boundary is written down here once. This crate
//! holds plain data and conversions only; it must never contain kernel logic, hardware
//! access or anything that allocates.
//!
//! # Calling convention
//!
//! `ecall` with `a7` = syscall number ([`Sysno`]) and `a0..a5` = arguments. On return
//! `a0` = 0 for success or an [`Error`] code, and `a1..a5` = results (unchanged when
//! the call failed, unless the table says otherwise). The kernel advances `pc` past the
//! `ecall`. Arguments not listed for a call are ignored.
//!
//! A capability *slot* is an index into the caller's CapGroup, `0..SLOTS` (see
//! `amber-core`, 16 slots). [`NO_SLOT`] means "no slot" where the table allows it.
//!
//! # Syscalls
//!
//! | nr | name | arguments | results | errors |
//! |----|------|-----------|---------|--------|
//! | 0 | `Null` | – | – | – |
//! | 1 | `Yield` | – | – | – |
//! | 2 | `Exit` | a0 = exit code | never returns | – |
//! | 3 | `DebugWrite` | a0 = ptr, a1 = len (≤ [`MAX_DEBUG_WRITE`]) | – | `TooLong`, `BadPointer` (needs READ) |
//! | 4 | `Send` | a0 = endpoint slot, a1..a4 = words, a5 = [`IpcDesc`] ptr or 0 | – | slot errors, `NoRights` (WRITE), descriptor errors, `NoReceiveSlot`, `NoSpace`, `PeerGone` |
//! | 5 | `Call` | as `Send` | a1..a4 = reply words | as `Send`, plus `PeerGone` if the server ends or drops the reply |
//! | 6 | `Recv` | a0 = endpoint slot, a5 = [`IpcDesc`] ptr or 0 | a1..a4 = words, a5 = sender's badge | slot errors, `NoRights` (READ), descriptor errors, `PeerGone` |
//! | 7 | `Reply` | a1..a4 = words, a5 = [`IpcDesc`] ptr or 0 | – | `WrongState` (no caller waiting), descriptor errors, `NoReceiveSlot`, `NoSpace` |
//! | 8 | `Signal` | a0 = notification slot, a1 = bits | – | slot errors, `NoRights` (WRITE) |
//! | 9 | `Wait` | a0 = notification slot | a1 = bits (cleared) | slot errors, `NoRights` (READ), `PeerGone` |
//! | 10 | `Poll` | a0 = notification slot | a1 = bits (cleared; 0 = none) | slot errors, `NoRights` (READ) |
//! | 11 | `IrqWait` | a0 = irq slot | – | slot errors, `NoRights` (READ), `PeerGone` |
//! | 12 | `IrqAck` | a0 = irq slot | – | slot errors, `NoRights` (WRITE), `WrongState` (nothing delivered) |
//! | 13 | `TimerSet` | a0 = timer slot, a1 = notification slot, a2 = bits (0 = disarm), a3/a4 = deadline ticks low/high | – | slot errors, `NoRights` (WRITE on both) |
//! | 14 | `CapDerive` | a0 = source slot, a1 = empty destination slot, a2 = rights mask, a3 = badge (0 = keep) | – | slot errors, `SlotOccupied`, `BadArgument` (unknown rights bits, or re-badging a badged cap), `NoSpace` |
//! | 15 | `CapDelete` | a0 = slot | – | `BadSlot`, `EmptySlot` |
//! | 16 | `CapRevoke` | a0 = slot | – | `BadSlot`, `EmptySlot` |
//! | 17 | `CapInfo` | a0 = slot | a1 = [`ObjKind`], a2 = [`Rights`] bits, a3 = badge | `BadSlot`, `EmptySlot` |
//! | 18 | `ObjDelete` | a0 = slot | – | slot errors, `NoRights` (DELETE), `WrongKind` (CapGroup) |
//! | 19 | `TaskInfo` | a0 = task slot or [`NO_SLOT`] for the caller | a1 = thread id, a2 = [`TaskState`], a3 = exit code | slot errors, `NoRights` (READ) |
//! | 20 | `Now` | – | a1/a2 = ticks since boot, low/high | – |
//! | 21 | `Checkpoint` | – | – (blocks until a checkpoint containing the caller has committed) | `CheckpointFailed` |
//!
//! "Slot errors" are `BadSlot`, `EmptySlot`, `WrongKind`. "Descriptor errors" are
//! `BadPointer`, `TooLong`, `BadSlot`, `EmptySlot`, `NoRights` (the transferred cap
//! lacks GRANT), `SlotOccupied` (the receive slot is full). Rights per object kind are
//! documented on [`Rights`].
//!
//! # Messages
//!
//! Send, Call and Reply carry four words in `a1..a4`. With a descriptor (`a5` ≠ 0, an
//! [`IpcDesc`] in the caller's memory) a message also carries up to [`MAX_MSG_BYTES`]
//! bytes copied from the sender's buffer into the receiver's, and optionally one
//! capability: the sender names a slot it holds with GRANT, the receiver names the
//! empty slot it receives into. The capability is copied, not moved, and is recorded as
//! derived from the sender's, so revoking the sender's capability removes it. A message
//! is delivered whole or not at all. The kernel writes [`IpcDesc::got_len`],
//! [`IpcDesc::sent_len`] and [`IpcDesc::got_cap`] into the receiver's descriptor.
//!
//! Blocking: `Send` and `Call` block until a receiver takes the message, `Call` then
//! until the reply; `Recv`, `Wait` and `IrqWait` block until something arrives.
//!
//! # Checkpoint
//!
//! `Checkpoint` asks the kernel for a whole-system checkpoint and blocks until one has
//! committed (for external synchrony: what the task did before the call survives any
//! later power cut). It returns `a0` = 0 once a checkpoint that contains the caller is
//! committed, or `CheckpointFailed` if the kernel could not write it. After a power
//! cut, a task that was waiting in `Checkpoint` when the checkpoint it is restored
//! from was taken resumes with `a0` = 0: that checkpoint is the one it waited for. On
//! return the caller is queued in its priority's round robin as of the moment it
//! called.

#![cfg_attr(not(test), no_std)]

mod error;
mod ipc;
mod rights;
mod sysno;

pub use error::Error;
pub use ipc::{IpcDesc, IPC_DESC_SIZE, MAX_DEBUG_WRITE, MAX_MSG_BYTES, MSG_WORDS, NO_SLOT};
pub use rights::Rights;
pub use sysno::{ObjKind, Sysno, TaskState};
