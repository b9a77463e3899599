//! Device interrupts delivered to user drivers through IrqNotifications. An
//! interrupt sets `pending` and wakes waiters; the source stays masked (not completed
//! at the interrupt controller) until the driver's `IrqAck`, which completes it. The
//! source is enabled at the driver's first `IrqWait`. This file must never complete an
//! interrupt the driver has not acknowledged.

use super::outcome::{Outcome, Results};
use crate::{
    abi::{Error, ObjKind, Rights},
    ids::{ObjId, ThreadId},
    kernel::Kernel,
    obj::{Block, Object},
    platform::Platform,
};

impl Kernel {
    /// A device interrupt arrived: marks its IrqNotification pending and wakes its
    /// waiters. `false` when no IrqNotification owns `irq` (the arch code should then
    /// mask it).
    pub fn irq(&mut self, irq: u32) -> bool {
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
        plat: &mut dyn Platform,
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
        plat: &mut dyn Platform,
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
