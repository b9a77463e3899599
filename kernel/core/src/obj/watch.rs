//! A thread's commit watch (`CommitWatch`): where in its memory the watched and the
//! committed values live, the notification bits signalled after a commit and after a
//! restore, and its flags; and its part of the Thread record. What a watch does at a
//! checkpoint is in `ops/watch.rs`; this file must never touch task memory.

use crate::{
    abi::WatchFlags,
    ids::ObjId,
    record::{Reader, RestoreError, Writer},
};

/// A thread's commit watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Watch {
    /// The 16-byte block in the task's memory (never 0: 0 means "no watch" in the ABI
    /// and in the record).
    pub ptr: u32,
    /// The notification to signal.
    pub notif: ObjId,
    /// Bits signalled after each commit (0 = none).
    pub commit_bits: u32,
    /// Bits signalled after a restore (0 = none).
    pub restore_bits: u32,
    /// Whether the thread is a persist callback or serves one (see persist.rs).
    pub flags: WatchFlags,
}

/// Bytes a watch takes in a Thread record (see the table on `Thread`).
pub(crate) const WATCH_RECORD_LEN: usize = 18;

impl Watch {
    /// Writes the watch part of a Thread record: pointer (u32, 0 = none), notification
    /// (ObjId), commit bits, restore bits, flags; all zero for no watch.
    pub(crate) fn encode(watch: Option<&Watch>, w: &mut Writer) {
        let Some(watch) = watch else {
            w.zeros(WATCH_RECORD_LEN);
            return;
        };
        w.u32(watch.ptr);
        w.obj(watch.notif);
        w.u32(watch.commit_bits);
        w.u32(watch.restore_bits);
        w.u32(watch.flags.bits());
    }

    /// Reads what [`Watch::encode`] wrote: no watch must be all zero. Whether the
    /// notification exists and the thread may have a watch is checked on the whole
    /// tree (`check_invariants`).
    pub(crate) fn decode(r: &mut Reader) -> Result<Option<Watch>, RestoreError> {
        let ptr = r.u32()?;
        if ptr == 0 {
            r.zeros(WATCH_RECORD_LEN - 4, "unused commit watch fields")?;
            return Ok(None);
        }
        let notif = r.obj()?;
        let commit_bits = r.u32()?;
        let restore_bits = r.u32()?;
        let bits = r.u32()?;
        let flags = WatchFlags::from_bits(bits).ok_or(r.bad_value("commit watch flags"))?;
        Ok(Some(Watch {
            ptr,
            notif,
            commit_bits,
            restore_bits,
            flags,
        }))
    }
}
