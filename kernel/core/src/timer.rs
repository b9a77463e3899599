//! The Timer object: a one-shot deadline in ticks that, on expiry, signals chosen bits
//! of a notification (so a task can wait for a timer and other events at once). Expiry
//! is checked on every tick and when a timer is set. This file must never block.

use crate::{
    abi::{ObjKind, Rights},
    ids::{ObjId, ThreadId},
    kernel::Kernel,
    objects::Object,
    platform::Platform,
    record::{Reader, RecordVersion, RestoreError, Writer},
    syscall::Outcome,
    MAX_OBJECTS,
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

impl Kernel {
    /// `TimerSet(timer, notif, bits, lo, hi)`: needs WRITE on the timer; with bits ≠ 0
    /// also WRITE on the notification. bits = 0 disarms (the notification slot is then
    /// not looked at). A deadline not after now fires at once.
    pub(crate) fn sys_timer_set(
        &mut self,
        t: ThreadId,
        a: [u32; 6],
        plat: &mut impl Platform,
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
