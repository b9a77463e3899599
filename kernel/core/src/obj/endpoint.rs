//! The Endpoint object: a rendezvous point for synchronous IPC, and its checkpoint
//! record. IPC itself is in `ops/ipc.rs`; this file must never hold a queue (queues
//! are derived from the waiting threads).

use crate::{
    abi::ObjKind,
    record::{Reader, RecordVersion, RestoreError, Writer},
};

/// A rendezvous point for synchronous IPC. It holds no state: who waits on it, and in
/// which order, is read from the threads.
///
/// # Checkpoint record (version 1, 2 bytes)
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0 | 2 | header: version 1, kind `Endpoint` (4) |
///
/// The wait queues are derived (from the waiting threads' records), so the record is
/// only the header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Endpoint;

/// The layout version of Endpoint records.
const VERSION: RecordVersion = RecordVersion(1);
/// Bytes in an Endpoint record.
pub(crate) const RECORD_LEN: usize = 2;

impl Endpoint {
    /// Writes the record (see the table on [`Endpoint`]).
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.header(VERSION, ObjKind::Endpoint);
    }

    /// Reads a record written by [`Endpoint::encode`].
    pub(crate) fn decode(r: &mut Reader) -> Result<Endpoint, RestoreError> {
        r.header(VERSION, ObjKind::Endpoint)?;
        Ok(Endpoint)
    }
}
