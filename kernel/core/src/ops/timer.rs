//! Timers at work: a one-shot deadline in ticks that, on expiry, signals chosen bits
//! of a notification (so a task can wait for a timer and other events at once). Expiry
//! is checked on every tick and when a timer is set. This file must never block.

use super::outcome::Outcome;
use crate::{
    abi::{ObjKind, Rights},
    ids::{ObjId, ThreadId},
    kernel::Kernel,
    obj::Object,
    platform::Platform,
    MAX_OBJECTS,
};

impl Kernel {
    /// `TimerSet(timer, notif, bits, lo, hi)`: needs WRITE on the timer; with bits ≠ 0
    /// also WRITE on the notification. bits = 0 disarms (the notification slot is then
    /// not looked at). A deadline not after now fires at once.
    pub(crate) fn sys_timer_set(
        &mut self,
        t: ThreadId,
        a: [u32; 6],
        plat: &mut dyn Platform,
    ) -> Outcome {
        let [timer_slot, notif_slot, bits, lo, hi, _] = a;
        let timer = match self.lookup(t, timer_slot, Some(ObjKind::Timer), Rights::WRITE) {
            Ok((_, cap)) => cap.obj,
            Err(e) => return Outcome::err(e),
        };
        let target = if bits == 0 {
            None
        } else {
            match self.lookup(t, notif_slot, Some(ObjKind::Notification), Rights::WRITE) {
                Ok((_, cap)) => Some((cap.obj, bits)),
                Err(e) => return Outcome::err(e),
            }
        };
        if let Object::Timer(tm) = self.obj_mut(timer) {
            tm.deadline = (u64::from(hi) << 32) | u64::from(lo);
            tm.target = target;
        }
        self.expire_timers(plat.now_ticks());
        Outcome::ok()
    }

    /// Fires every armed timer whose deadline is not after `now`.
    pub(crate) fn expire_timers(&mut self, now: u64) {
        for i in 0..MAX_OBJECTS {
            let Some(id) = ObjId::from_index(i) else {
                continue;
            };
            // Look before touching: only a timer that fires is changed (and so dirty).
            let due = matches!(self.obj(id), Object::Timer(tm) if tm.deadline <= now && tm.target.is_some());
            if !due {
                continue;
            }
            let fire = match self.obj_mut(id) {
                Object::Timer(tm) => tm.target.take(),
                _ => None,
            };
            if let Some((notif, bits)) = fire {
                self.signal_obj(notif, bits);
            }
        }
    }
}
