//! Notifications at work: `Signal` ORs bits in, `Wait` blocks until
//! some bit is set and takes them all, `Poll` takes them without blocking. Several
//! waiters are served oldest first, one per signal. This file must never block a
//! signaller.

use super::outcome::{Outcome, Results};
use crate::{
    abi::{ObjKind, Rights},
    ids::{ObjId, ThreadId},
    kernel::Kernel,
    obj::{Block, Object},
};

impl Kernel {
    /// ORs `bits` into notification `obj`, then hands all pending bits to the oldest
    /// waiter, if any.
    pub(crate) fn signal_obj(&mut self, obj: ObjId, bits: u32) {
        let old = self.notification_bits(obj);
        if old | bits != old {
            if let Object::Notification(n) = self.obj_mut(obj) {
                n.bits |= bits;
            }
        }
        if self.notification_bits(obj) == 0 {
            return;
        }
        if let Some(w) = self.oldest_blocked(|b| b == Block::Notification { obj }) {
            let taken = self.take_bits(obj);
            self.wake(w, Ok(Results::of(&[taken])));
        }
    }

    fn notification_bits(&self, obj: ObjId) -> u32 {
        match self.obj(obj) {
            Object::Notification(n) => n.bits,
            _ => 0,
        }
    }

    fn take_bits(&mut self, obj: ObjId) -> u32 {
        if self.notification_bits(obj) == 0 {
            return 0;
        }
        match self.obj_mut(obj) {
            Object::Notification(n) => core::mem::take(&mut n.bits),
            _ => 0,
        }
    }

    /// `Signal(slot, bits)`: needs WRITE.
    pub(crate) fn sys_signal(&mut self, t: ThreadId, slot: u32, bits: u32) -> Outcome {
        match self.lookup(t, slot, Some(ObjKind::Notification), Rights::WRITE) {
            Ok((_, cap)) => {
                self.signal_obj(cap.obj, bits);
                Outcome::ok()
            }
            Err(e) => Outcome::err(e),
        }
    }

    /// `Wait(slot)` (blocks while no bit is set) or `Poll(slot)`: needs READ.
    pub(crate) fn sys_wait(&mut self, t: ThreadId, slot: u32, block: bool) -> Outcome {
        let obj = match self.lookup(t, slot, Some(ObjKind::Notification), Rights::READ) {
            Ok((_, cap)) => cap.obj,
            Err(e) => return Outcome::err(e),
        };
        let bits = self.take_bits(obj);
        if bits != 0 || !block {
            return Outcome::Done(Ok(Results::of(&[bits])));
        }
        self.block(t, Block::Notification { obj });
        Outcome::Blocked
    }
}
