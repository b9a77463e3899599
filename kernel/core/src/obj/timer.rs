//! The Timer object: a one-shot deadline in absolute ticks and the notification bits
//! it signals, and its checkpoint record. Setting and expiry are in `ops/timer.rs`;
//! this file must never signal anything.

use crate::{
    abi::ObjKind,
    ids::ObjId,
    record::{Reader, RecordVersion, RestoreError, Writer},
};

/// A one-shot timer.
///
/// # Checkpoint record (version 1, 16 bytes)
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0 | 2 | header: version 1, kind `Timer` (8) |
/// | 2 | 8 | `deadline`, absolute ticks (the platform's tick count continues across power cuts) |
/// | 10 | 2 | target notification (ObjId, 0xFFFF = disarmed) |
/// | 12 | 4 | target bits (nonzero when armed, 0 when disarmed) |
///
/// A timer whose deadline passed while the power was off fires at the first tick
/// after restore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timer {
    /// Expiry time in ticks, meaningful when armed.
    pub deadline: u64,
    /// When armed: the notification to signal and the bits (nonzero).
    pub target: Option<(ObjId, u32)>,
}

impl Timer {
    /// Cancels the timer.
    pub(crate) fn disarm(&mut self) {
        self.target = None;
    }
}

/// The layout version of Timer records.
const VERSION: RecordVersion = RecordVersion(1);
/// Bytes in a Timer record.
pub(crate) const RECORD_LEN: usize = 16;

impl Timer {
    /// Writes the record (see the table on [`Timer`]).
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.header(VERSION, ObjKind::Timer);
        w.u64(self.deadline);
        match self.target {
            Some((n, bits)) => {
                w.obj(n);
                w.u32(bits);
            }
            None => {
                w.opt_obj(None);
                w.u32(0);
            }
        }
    }

    /// Reads a record written by [`Timer::encode`]; an armed timer has nonzero bits.
    pub(crate) fn decode(r: &mut Reader) -> Result<Timer, RestoreError> {
        r.header(VERSION, ObjKind::Timer)?;
        let deadline = r.u64()?;
        let target = r.opt_obj()?;
        let bits = r.u32()?;
        let target = match target {
            Some(n) if bits != 0 => Some((n, bits)),
            None if bits == 0 => None,
            _ => return Err(r.bad_value("timer bits")),
        };
        Ok(Timer { deadline, target })
    }
}
