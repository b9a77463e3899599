//! The MemObj object: a range of RAM (or device registers) granted through
//! capabilities, and its checkpoint record. Which thread may touch which range is
//! checked in `ops/access.rs`; this file must never reach the memory itself.

use crate::{
    abi::ObjKind,
    record::{Reader, RecordVersion, RestoreError, Writer},
    spec::MemKind,
};

/// A range of RAM (or device MMIO, `kind == Device`) granted through capabilities.
///
/// # Checkpoint record (version 1, 11 bytes)
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0 | 2 | header: version 1, kind `MemObj` (3) |
/// | 2 | 4 | `base` |
/// | 6 | 4 | `len` (nonzero, does not wrap) |
/// | 10 | 1 | `kind`: 0 Checkpointed, 1 Eternal, 2 HeapManaged, 3 Device |
///
/// The record is the grant, not the memory: the range's contents are checkpointed
/// (or not, by kind) by the checkpoint manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemObj {
    /// First byte.
    pub base: u32,
    /// Length (nonzero, does not wrap).
    pub len: u32,
    /// Kind of memory.
    pub kind: MemKind,
}

/// The layout version of MemObj records.
const VERSION: RecordVersion = RecordVersion(1);
/// Bytes in a MemObj record.
pub(crate) const RECORD_LEN: usize = 11;

impl MemObj {
    /// Writes the record (see the table on [`MemObj`]).
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.header(VERSION, ObjKind::MemObj);
        w.u32(self.base);
        w.u32(self.len);
        w.mem_kind(self.kind);
    }

    /// Reads a record written by [`MemObj::encode`]; the range must be nonempty and
    /// must not wrap.
    pub(crate) fn decode(r: &mut Reader) -> Result<MemObj, RestoreError> {
        r.header(VERSION, ObjKind::MemObj)?;
        let m = MemObj {
            base: r.u32()?,
            len: r.u32()?,
            kind: r.mem_kind()?,
        };
        if !crate::spec::memory_range_ok(m.base, m.len) {
            return Err(r.bad_value("memory range"));
        }
        Ok(m)
    }
}
