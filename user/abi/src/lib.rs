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
//! | 20 | `Now` | – | a1/a2 = ticks since boot, low/high; a3 = 1 when the `cycle` and `instret` counters count exactly (QEMU `-icount`), 0 when they follow a clock (then they are no instruction count); a4 = 1 when the kernel's NVM is on a serial bus (SPI FRAM: reach NVM grants only by `NvmRead`/`NvmWrite`), 0 when it is memory-mapped; a5 = 1 when the kernel numbers every NVM store for an injected power cut (boot option `amber.cut`: make NVM stores by `NvmWrite` too, so that they are numbered with the kernel's own), else 0 | – |
//! | 21 | `Checkpoint` | – | – (blocks until a checkpoint containing the caller has committed) | `CheckpointFailed`, `Interrupted` (a persist callback: persist, then `PersistDone`) |
//! | 22 | `CommitWatch` | a0 = pointer to the 16-byte watch block (see below), 0 = remove the watch; a1 = notification slot; a2 = bits to signal after each commit; a3 = bits to signal after a restore; a4 = [`WatchFlags`] bits | – | `BadPointer` (the 16 bytes must lie in one non-device region the caller may READ and WRITE), slot errors, `NoRights` (WRITE), `BadArgument` (unknown flag bits) |
//! | 23 | `PersistDone` | a0 = the caller's static bound on its persist work in instructions (0 = none; the kernel reports it next to the measured cost on a power failure) | – (the checkpoint the kernel was waiting for has been taken when the caller runs again) | `WrongState` (no persist was asked of the caller) |
//! | 24 | `ReplyRecv` | a0 = endpoint slot, a1..a4 = reply words, a5 = [`IpcDesc`] ptr or 0 (its send half for the reply, its receive half for the message) | as `Recv` | a reply the caller owes is given first, as `Reply` (none owed: a plain `Recv`); when the reply's own message or descriptor is invalid, its error and nothing received; else as `Recv` |
//! | 25 | `NvmRead` | a0 = slot of an `eternal` MemObj or an NvmRegion, a1 = offset in it, a2 = buffer ptr, a3 = len (≤ [`MAX_NVM_TRANSFER`]) | – (the bytes are in the buffer) | slot errors (`WrongKind`: another kind, or a MemObj that is not eternal), `NoRights` (READ), `TooLong`, `BadArgument` (the range leaves the grant), `BadPointer` (the buffer: WRITE), `NvmFailed` |
//! | 26 | `NvmWrite` | as `NvmRead` | – (the bytes reached the NVM, in the order of the kernel's own stores: a power cut may tear this write as it would any store) | as `NvmRead`, with WRITE on the grant and READ on the buffer |
//! | 27 | `SetIpcBuffer` | a0 = the caller's [`IpcBuffer`], 0 = none | – | `BadPointer` (not 4-byte aligned, or its [`IPC_BUFFER_SIZE`] bytes not in one of the task's own non-device regions it may READ and WRITE: memory capabilities do not count); a failed call keeps the old buffer |
//! | 28 | `ConsoleRead` | a0 = buffer ptr, a1 = len (≤ [`MAX_DEBUG_WRITE`]) | a1 = bytes taken (0 = none waiting: it never blocks) | `TooLong`, `BadPointer` (needs WRITE) |
//!
//! `ConsoleRead` hands out what the console received, in order, to whichever task asks
//! first (the kernel holds a small queue, not checkpointed: input not yet taken is lost
//! with the power, as a UART's would be); a full queue stops the console's receiver, so
//! a sender is held back rather than bytes dropped. A task waits for input by asking
//! again later (a timer, or `Yield`).
//!
//! "Slot errors" are `BadSlot`, `EmptySlot`, `WrongKind`. "Descriptor errors" are
//! `BadPointer`, `TooLong`, `BadSlot`, `EmptySlot`, `NoRights` (the transferred cap
//! lacks GRANT), `SlotOccupied` (the receive slot is full). Rights per object kind are
//! documented on [`Rights`].
//!
//! # Messages
//!
//! Send, Call, Reply and ReplyRecv carry four words in `a1..a4`. `a5` says what else
//! ([`MsgBytes::of`]): 0 nothing, [`ipc_buffer_msg`]`(len)` the caller's IPC buffer
//! ([`IpcBuffer`], registered once by `SetIpcBuffer`, the fast way to move bytes: see
//! there), anything else a descriptor. Each side chooses on its own: a descriptor's
//! bytes may land in an IPC buffer and the other way round. Where the tables say
//! "descriptor errors", a buffer message gives `BadPointer` when the caller registered
//! no buffer and `TooLong` when `len` is over [`MAX_MSG_BYTES`]. With a descriptor (an
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
//!
//! # Commit watch
//!
//! `CommitWatch` lets a task (the SPI driver) learn which value one of its own
//! counters had in each committed checkpoint, and when the system was restored. The
//! task names 16 bytes of its memory ([`COMMIT_WATCH_SIZE`]): at
//! [`WATCHED_OFFSET`] a little-endian u64 it keeps up to date (its ring writer index),
//! at [`COMMITTED_OFFSET`] a u64 the kernel writes. Right before each checkpoint is
//! taken (the world stopped) the kernel reads the watched value; once that checkpoint
//! has committed, it writes that value (not the current one) to the committed half and
//! signals the commit bits (`a2`) on the notification (`a1`, like `Signal`, waking a
//! waiter). A checkpoint that fails writes and signals nothing. After a restore the
//! kernel signals the restore bits (`a3`) and writes nothing. Keep the block in
//! checkpointed memory: then, restored, the watched half holds exactly the value
//! committed in the checkpoint restored from (the checkpoint holds the task's memory
//! as the kernel read it), while the committed half holds the commit before that one
//! (the kernel writes it after its checkpoint was taken). In eternal memory nothing
//! tells whether a commit's value reached the block before the power cut.
//!
//! One watch per thread: a new call replaces the old one, `a0` = 0 removes it (the
//! other arguments are then not looked at); a failed call leaves the old one. The
//! watch is part of the thread's checkpointed state. It ends when the thread exits or
//! restarts after a fault, and when its notification is deleted. The 16 bytes are
//! checked again at every checkpoint: while the task no longer holds them (a MemObj
//! capability gone), the kernel skips the watch. Bits of 0 signal nothing.
//!
//! # Persist callbacks
//!
//! A service whose state lives outside checkpointed memory (the heap service: its
//! cache) registers a watch with [`WatchFlags::PERSIST_CALLBACK`]. Before every
//! checkpoint (periodic, requested, or on a power failure) the kernel stops the world
//! except for callback threads and threads whose watch has
//! [`WatchFlags::SERVES_PERSIST`] (the drivers the callbacks need), and asks each
//! callback to persist: its `Recv` (or `Checkpoint`) returns [`Error::Interrupted`]
//! (at once if it was waiting, or at its next such call). The callback writes its
//! state out and calls `PersistDone`; when every callback has, the kernel takes the
//! checkpoint before any other task runs again. A callback that wants a checkpoint
//! itself calls `Checkpoint`: the phase starts, the call returns `Interrupted`, and it
//! persists with the world stopped like every other callback. Right after a restore
//! the kernel runs such a phase too (the restore bits are signalled first): callbacks
//! rebuild what the checkpoint does not hold (the heap service reloads its cache)
//! before any other task runs again. A persist phase that does not end within the
//! kernel's bound (500 ms) is abandoned: no checkpoint is taken, waiters in
//! `Checkpoint` get `CheckpointFailed`, and the world runs on from the last commit.

#![cfg_attr(not(test), no_std)]

mod error;
mod ipc;
mod rights;
mod sysno;
mod watch;

pub use error::Error;
pub use ipc::{
    ipc_buffer_msg, IpcBuffer, IpcDesc, MsgBytes, IPC_BUFFER_MSG, IPC_BUFFER_SIZE, IPC_DESC_SIZE,
    MAX_DEBUG_WRITE, MAX_MSG_BYTES, MSG_WORDS, NO_SLOT,
};

/// The most bytes one `NvmRead` or `NvmWrite` moves (the kernel copies through a
/// buffer of this size on its stack).
pub const MAX_NVM_TRANSFER: u32 = 256;
pub use rights::Rights;
pub use sysno::{ObjKind, Sysno, TaskState};
pub use watch::{WatchFlags, COMMITTED_OFFSET, COMMIT_WATCH_SIZE, WATCHED_OFFSET};
