//! The capability value: an object, rights, a badge and the capability it was derived
//! from, and its place in a CapGroup record. Plain data: what a capability may do is
//! decided in `ops/caps.rs` and `ops/access.rs`; this file must never grant anything.

use crate::{
    abi::Rights,
    ids::{ObjId, Slot},
    record::{Reader, RestoreError, Writer, NO_OBJ},
};

/// A capability: an object, the rights held on it, a badge, and where it was derived
/// from (`None` = an original, created at boot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cap {
    /// The object named.
    pub obj: ObjId,
    /// What the holder may do.
    pub rights: Rights,
    /// Identifies the sender to a receiver (endpoints); 0 = unbadged.
    pub badge: u32,
    /// The capability this one was derived or transferred from.
    pub parent: Option<CapRef>,
}

/// Bytes in one capability slot of a CapGroup record.
pub(crate) const CAP_RECORD_LEN: usize = 10;

impl Cap {
    /// Writes one slot of a CapGroup record: `obj` (u16), `rights` (u8), `badge`
    /// (u32), parent group (u16, 0xFFFF = an original) and parent slot (u8, 0 for an
    /// original). An empty slot is `obj` = 0xFFFF and eight zero bytes.
    pub(crate) fn encode_slot(slot: Option<&Cap>, w: &mut Writer) {
        let Some(c) = slot else {
            w.u16(NO_OBJ);
            w.zeros(CAP_RECORD_LEN - 2);
            return;
        };
        w.obj(c.obj);
        w.rights(c.rights);
        w.u32(c.badge);
        match c.parent {
            Some(p) => {
                w.obj(p.group);
                w.u8(p.slot.index() as u8);
            }
            None => {
                w.u16(NO_OBJ);
                w.u8(0);
            }
        }
    }

    /// Reads one slot written by [`Cap::encode_slot`].
    pub(crate) fn decode_slot(r: &mut Reader) -> Result<Option<Cap>, RestoreError> {
        let Some(obj) = r.opt_obj()? else {
            r.zeros(CAP_RECORD_LEN - 2, "empty capability slot")?;
            return Ok(None);
        };
        let rights = r.rights("capability rights")?;
        let badge = r.u32()?;
        let parent = match r.opt_obj()? {
            Some(group) => {
                let slot = Slot::new(usize::from(r.u8()?)).ok_or(r.bad_value("parent slot"))?;
                Some(CapRef { group, slot })
            }
            None => {
                r.zeros(1, "parent slot of an original")?;
                None
            }
        };
        Ok(Some(Cap {
            obj,
            rights,
            badge,
            parent,
        }))
    }
}

/// The location of a capability: a CapGroup and a slot in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CapRef {
    /// The CapGroup.
    pub group: ObjId,
    /// The slot.
    pub slot: Slot,
}
