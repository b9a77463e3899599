//! Commit watches: a driver task names 16 bytes of its memory, a counter it keeps and
//! a slot the kernel fills, and learns after each committed checkpoint the value the
//! counter had IN that checkpoint (the SPI ring's writer index becomes the committed
//! visible index, see DESIGN.md "Delayed external visibility"), and when the system
//! was restored. The watch itself is part of its Thread (and of the Thread's record,
//! `obj/watch.rs`); the value read before a checkpoint is not: it belongs to one
//! checkpoint attempt and lives in the checkpoint cycle (`cycle.rs`) until the attempt
//! ends.
//!
//! The checkpoint cycle (`checkpoint.rs`) drives them around every attempt:
//! [`Kernel::snapshot_watches`] with the world stopped right before the checkpoint is
//! written, then [`Kernel::watches_committed`] or [`Kernel::watches_failed`]; and
//! [`Kernel::signal_restored`] after a restore. This file must never
//! touch user memory it has not validated against the task's regions at that moment
//! (regions change: a watch whose memory is gone is skipped, never trusted).

use super::outcome::Outcome;
use crate::{
    abi::{
        Error, ObjKind, Rights, WatchFlags, COMMITTED_OFFSET, COMMIT_WATCH_SIZE, WATCHED_OFFSET,
    },
    cycle::Snapshot,
    ids::{ObjId, ThreadId},
    kernel::{CollectArray, Kernel},
    obj::{Object, Watch},
    platform::UserMemory,
    MAX_OBJECTS,
};

/// The access a task needs on its watch block: the kernel reads one half and writes
/// the other.
const NEED: Rights = Rights::READ.union(Rights::WRITE);

impl Kernel {
    /// `CommitWatch(ptr, notif, commit_bits, restore_bits, flags)`: `ptr` = 0 removes
    /// the caller's watch (nothing else is looked at). Otherwise the 16 bytes at `ptr`
    /// must lie in one non-device region the caller may read and write (`BadPointer`),
    /// `notif` must be a Notification cap with WRITE, and `flags` known
    /// [`WatchFlags`] bits (`BadArgument`). Replaces any earlier watch; a refused call
    /// leaves it.
    pub(crate) fn sys_commit_watch(&mut self, t: ThreadId, a: [u32; 6]) -> Outcome {
        let [ptr, slot, commit_bits, restore_bits, flags, _] = a;
        let watch = if ptr == 0 {
            None
        } else {
            let Some(flags) = WatchFlags::from_bits(flags) else {
                return Outcome::err(Error::BadArgument);
            };
            if let Err(e) = self.check_user(t, ptr, COMMIT_WATCH_SIZE, NEED) {
                return Outcome::err(e);
            }
            match self.lookup(t, slot, Some(ObjKind::Notification), Rights::WRITE) {
                Ok((_, cap)) => Some(Watch {
                    ptr,
                    notif: cap.obj,
                    commit_bits,
                    restore_bits,
                    flags,
                }),
                Err(e) => return Outcome::err(e),
            }
        };
        self.thread_mut(t).watch = watch;
        Outcome::ok()
    }

    /// Right before a checkpoint is taken, with the world stopped: reads each watched
    /// u64 whose block the task still may read and write, and keeps it pending for
    /// [`Kernel::watches_committed`]. Replaces anything still pending. Changes no
    /// object (nothing becomes dirty).
    pub(crate) fn snapshot_watches(&mut self, mem: &mut dyn UserMemory) {
        self.cycle.pending = [None; MAX_OBJECTS];
        for t in self.thread_ids().collect_array().into_iter().flatten() {
            let Some(watch) = self.thread(t).watch else {
                continue;
            };
            if self
                .check_user(t, watch.ptr, COMMIT_WATCH_SIZE, NEED)
                .is_err()
            {
                continue;
            }
            let mut b = [0u8; 8];
            // In range: the whole 16-byte block was just validated.
            mem.read(watch.ptr + WATCHED_OFFSET, &mut b);
            self.cycle.pending[t.index()] = Some(Snapshot {
                watch,
                value: u64::from_le_bytes(b),
            });
        }
    }

    /// The checkpoint after [`Kernel::snapshot_watches`] committed: writes each
    /// pending value into its task's committed half and signals the commit bits on the
    /// watch's notification (waking a waiter as `Signal` does), then reschedules. A
    /// watch that changed since the snapshot (replaced, removed, its thread ended) or
    /// whose block the task no longer may read and write is skipped. Nothing stays
    /// pending. The notification and a woken thread change through the arena's guard,
    /// so the next checkpoint includes them; the written bytes are task memory (the
    /// arch's `UserMemory` tracks those).
    pub(crate) fn watches_committed(&mut self, mem: &mut dyn UserMemory) {
        let pending = core::mem::replace(&mut self.cycle.pending, [None; MAX_OBJECTS]);
        for (i, snap) in pending.iter().enumerate() {
            let (Some(snap), Some(id)) = (snap, ObjId::from_index(i)) else {
                continue;
            };
            let unchanged =
                matches!(self.obj(id), Object::Thread(th) if th.watch == Some(snap.watch));
            let t = ThreadId(id);
            if !unchanged
                || self
                    .check_user(t, snap.watch.ptr, COMMIT_WATCH_SIZE, NEED)
                    .is_err()
            {
                continue;
            }
            mem.write(snap.watch.ptr + COMMITTED_OFFSET, &snap.value.to_le_bytes());
            self.signal_watch(snap.watch.notif, snap.watch.commit_bits);
        }
        self.schedule();
    }

    /// The checkpoint after [`Kernel::snapshot_watches`] failed: drops the pending
    /// values; writes and signals nothing.
    pub(crate) fn watches_failed(&mut self) {
        self.cycle.pending = [None; MAX_OBJECTS];
    }

    /// After [`Kernel::restore_into`]: signals every watch's restore bits (waking
    /// waiters as `Signal` does), then reschedules. Writes no task memory: restored,
    /// the committed value is the watched value as the checkpoint holds it. The
    /// notifications and woken threads become dirty, so the next checkpoint includes
    /// them.
    pub(crate) fn signal_restored(&mut self) {
        for t in self.thread_ids().collect_array().into_iter().flatten() {
            if let Some(watch) = self.thread(t).watch {
                self.signal_watch(watch.notif, watch.restore_bits);
            }
        }
        self.schedule();
    }

    /// Signals `bits` on a watch's notification; nothing for 0 bits or (never, by the
    /// invariants) an object that is not a notification.
    fn signal_watch(&mut self, notif: ObjId, bits: u32) {
        if bits != 0 && self.kind_of(notif) == Some(ObjKind::Notification) {
            self.signal_obj(notif, bits);
        }
    }
}
