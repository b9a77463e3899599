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
    syscall::{Outcome, Results},
    thread::Block,
};

/// A device interrupt routed to a task.
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
            .position(|o| matches!(o, Object::Irq(n) if n.irq == irq))
            .and_then(ObjId::from_index)
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
        let Object::Irq(n) = self.obj_mut(obj) else {
            return Outcome::err(Error::WrongKind);
        };
        if !n.enabled {
            n.enabled = true;
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
        let Object::Irq(n) = self.obj_mut(obj) else {
            return Outcome::err(Error::WrongKind);
        };
        if !n.pending {
            return Outcome::err(Error::WrongState);
        }
        n.pending = false;
        plat.irq_complete(n.irq);
        Outcome::ok()
    }
}
