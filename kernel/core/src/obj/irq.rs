//! The IrqNotification object: one device interrupt routed to a task, and its
//! checkpoint record. Delivery and acknowledgement are in `ops/irq.rs`; this file must
//! never touch the interrupt controller.

use crate::{
    abi::ObjKind,
    record::{Reader, RecordVersion, RestoreError, Writer},
};

/// A device interrupt routed to a task.
///
/// # Checkpoint record (version 1, 7 bytes)
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0 | 2 | header: version 1, kind `IrqNotification` (6) |
/// | 2 | 4 | `irq` source number |
/// | 6 | 1 | `enabled` (0/1) |
///
/// `pending` is not stored: it mirrors a claim held at the interrupt controller, and
/// a power cut restarts the controller and the device, so that claim is gone. A
/// restored IrqNotification is never pending: an interrupt delivered but not yet
/// acknowledged at checkpoint time is dropped (it cannot be replayed; the device
/// restarted and raises a new one if it still needs service). A thread that was
/// already woken by it resumes after its `IrqWait` as before, and its `IrqAck` then
/// returns `WrongState` like any acknowledgement with nothing delivered; a thread
/// still blocked in `IrqWait` stays blocked until the next interrupt. An enabled
/// source is enabled again at restore (`Platform::irq_enable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IrqNotification {
    /// Interrupt source number (unique among IrqNotifications).
    pub irq: u32,
    /// Delivered and not yet acknowledged.
    pub pending: bool,
    /// `Platform::irq_enable` was called.
    pub enabled: bool,
}

/// The layout version of IrqNotification records.
const VERSION: RecordVersion = RecordVersion(1);
/// Bytes in an IrqNotification record.
pub(crate) const RECORD_LEN: usize = 7;

impl IrqNotification {
    /// Writes the record (see the table on [`IrqNotification`]).
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.header(VERSION, ObjKind::IrqNotification);
        w.u32(self.irq);
        w.bool(self.enabled);
    }

    /// Reads a record written by [`IrqNotification::encode`]; the result is not
    /// pending (see the table).
    pub(crate) fn decode(r: &mut Reader) -> Result<IrqNotification, RestoreError> {
        r.header(VERSION, ObjKind::IrqNotification)?;
        Ok(IrqNotification {
            irq: r.u32()?,
            enabled: r.bool("irq enabled")?,
            pending: false,
        })
    }
}
