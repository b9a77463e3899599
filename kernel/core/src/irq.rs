//! The IrqNotification object: one device interrupt delivered to a user driver. An
//! interrupt sets `pending` and wakes waiters; the source stays masked (not completed
//! at the interrupt controller) until the driver's `IrqAck`, which completes it. The
//! source is enabled at the driver's first `IrqWait`. This file must never complete an
//! interrupt the driver has not acknowledged.

use crate::{
    abi::{Error, ObjKind, Rights},
    ids::{ObjId, ThreadId},
    kernel::Kernel,
    objects::Object,
    platform::Platform,
    record::{Reader, RecordVersion, RestoreError, Writer},
    syscall::{Outcome, Results},
    thread::Block,
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

impl Kernel {
    /// A device interrupt arrived: marks its IrqNotification pending and wakes its
    /// waiters. `false` when no IrqNotification owns `irq` (the arch code should then
    /// mask it).
    pub fn irq(&mut self, irq: u32, _plat: &mut impl Platform) -> bool {
        let Some(obj) = self.irq_object(irq) else {
            return false;
        };
        if let Object::Irq(n) = self.obj_mut(obj) {
            n.pending = true;
        }
        while let Some(w) = self.oldest_blocked(|b| b == Block::Irq { obj }) {
            self.wake(w, Ok(Results::none()));
        }
        self.schedule();
        true
    }

    fn irq_object(&self, irq: u32) -> Option<ObjId> {
        self.objects
            .iter()
            .find(|(_, o)| matches!(o, Object::Irq(n) if n.irq == irq))
            .map(|(id, _)| id)
    }

    /// `IrqWait(slot)`: needs READ. Returns at once if an interrupt is pending.
    pub(crate) fn sys_irq_wait(
        &mut self,
        t: ThreadId,
        slot: u32,
        plat: &mut impl Platform,
    ) -> Outcome {
        let obj = match self.lookup(t, slot, Some(ObjKind::IrqNotification), Rights::READ) {
            Ok((_, cap)) => cap.obj,
            Err(e) => return Outcome::err(e),
        };
        let Object::Irq(n) = *self.obj(obj) else {
            return Outcome::err(Error::WrongKind);
        };
        if !n.enabled {
            if let Object::Irq(m) = self.obj_mut(obj) {
                m.enabled = true;
            }
            plat.irq_enable(n.irq);
        }
        if n.pending {
            return Outcome::ok();
        }
        self.block(t, Block::Irq { obj });
        Outcome::Blocked
    }

    /// `IrqAck(slot)`: needs WRITE; `WrongState` unless an interrupt is pending.
    pub(crate) fn sys_irq_ack(
        &mut self,
        t: ThreadId,
        slot: u32,
        plat: &mut impl Platform,
    ) -> Outcome {
        let obj = match self.lookup(t, slot, Some(ObjKind::IrqNotification), Rights::WRITE) {
            Ok((_, cap)) => cap.obj,
            Err(e) => return Outcome::err(e),
        };
        let Object::Irq(n) = *self.obj(obj) else {
            return Outcome::err(Error::WrongKind);
        };
        if !n.pending {
            return Outcome::err(Error::WrongState);
        }
        if let Object::Irq(m) = self.obj_mut(obj) {
            m.pending = false;
        }
        plat.irq_complete(n.irq);
        Outcome::ok()
    }
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
