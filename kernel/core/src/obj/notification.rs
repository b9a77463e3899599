//! The Notification object: bits signalled and not yet taken, and its checkpoint
//! record. Signalling and waiting are in `ops/notify.rs`; this file must never wake a
//! thread.

use crate::{
    abi::ObjKind,
    record::{Reader, RecordVersion, RestoreError, Writer},
};

/// Asynchronous bits.
///
/// # Checkpoint record (version 1, 6 bytes)
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0 | 2 | header: version 1, kind `Notification` (5) |
/// | 2 | 4 | `bits` pending |
///
/// Waiters are derived from the waiting threads' records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Notification {
    /// Bits signalled and not yet taken.
    pub bits: u32,
}

/// The layout version of Notification records.
const VERSION: RecordVersion = RecordVersion(1);
/// Bytes in a Notification record.
pub(crate) const RECORD_LEN: usize = 6;

impl Notification {
    /// Writes the record (see the table on [`Notification`]).
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.header(VERSION, ObjKind::Notification);
        w.u32(self.bits);
    }

    /// Reads a record written by [`Notification::encode`].
    pub(crate) fn decode(r: &mut Reader) -> Result<Notification, RestoreError> {
        r.header(VERSION, ObjKind::Notification)?;
        Ok(Notification { bits: r.u32()? })
    }
}
