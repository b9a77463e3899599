//! The NvmRegion object: a granted range of NVM, by offset. The kernel only records and
//! guards the grant; the NVM service acting on it comes with the checkpoint issue. This
//! file must never map NVM into a task (a MemObj does that). It also holds how an
//! NvmRegion is checkpointed.

use crate::{
    abi::ObjKind,
    record::{Reader, RecordVersion, RestoreError, Writer},
};

/// A range of NVM.
///
/// # Checkpoint record (version 1, 10 bytes)
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0 | 2 | header: version 1, kind `NvmRegion` (7) |
/// | 2 | 4 | `offset` in NVM |
/// | 6 | 4 | `len` (nonzero, does not wrap) |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NvmRegion {
    /// Offset in NVM.
    pub offset: u32,
    /// Length (nonzero, does not wrap).
    pub len: u32,
}

/// The layout version of NvmRegion records.
const VERSION: RecordVersion = RecordVersion(1);
/// Bytes in an NvmRegion record.
pub(crate) const RECORD_LEN: usize = 10;

impl NvmRegion {
    /// Writes the record (see the table on [`NvmRegion`]).
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.header(VERSION, ObjKind::NvmRegion);
        w.u32(self.offset);
        w.u32(self.len);
    }

    /// Reads a record written by [`NvmRegion::encode`]; the range must be nonempty
    /// and must not wrap.
    pub(crate) fn decode(r: &mut Reader) -> Result<NvmRegion, RestoreError> {
        r.header(VERSION, ObjKind::NvmRegion)?;
        let n = NvmRegion {
            offset: r.u32()?,
            len: r.u32()?,
        };
        if !crate::spec::nvm_range_ok(n.offset, n.len) {
            return Err(r.bad_value("NVM range"));
        }
        Ok(n)
    }
}
