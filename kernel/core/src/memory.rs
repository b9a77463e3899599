//! Memory a task may touch: the MemObj object, the list of regions PMP must allow for a
//! thread, and the check every user (pointer, length) passes before the kernel reads or
//! writes it. A user pointer is an allegation: it is valid only if it lies entirely
//! (overflow-checked) inside ONE region the task holds with the needed rights, and
//! never in device memory. This file must never call `UserMemory` itself.

use crate::{
    abi::{Error, Rights},
    ids::{ObjId, ThreadId},
    kernel::Kernel,
    objects::Object,
    record::{Reader, RecordVersion, RestoreError, Writer},
    spec::{MemKind, RegionSpec},
    MAX_REGIONS,
};

/// A range of RAM (or device MMIO, `kind == Device`) granted through capabilities.
///
/// # Checkpoint record (version 1, 11 bytes)
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0 | 2 | header: version 1, kind `MemObj` (3) |
/// | 2 | 4 | `base` |
/// | 6 | 4 | `len` (nonzero, does not wrap) |
/// | 10 | 1 | `kind`: 0 Checkpointed, 1 Eternal, 2 HeapManaged, 3 Device |
///
/// The record is the grant, not the memory: the range's contents are checkpointed
/// (or not, by kind) by the checkpoint manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemObj {
    /// First byte.
    pub base: u32,
    /// Length (nonzero, does not wrap).
    pub len: u32,
    /// Kind of memory.
    pub kind: MemKind,
}

impl Kernel {
    /// What PMP must allow for thread `t`: its own regions, then one region per MemObj
    /// cap in slot order (rights = cap rights ∩ READ|WRITE|EXEC). At most
    /// [`MAX_REGIONS`] (kept by boot, derive and transfer).
    pub fn regions(&self, t: ThreadId) -> impl Iterator<Item = RegionSpec> + '_ {
        self.group_regions(self.thread(t).group)
    }

    /// The regions of CapGroup `g` (empty for a non-group).
    pub(crate) fn group_regions(&self, g: ObjId) -> impl Iterator<Item = RegionSpec> + '_ {
        let group = self.group(g);
        let own = group
            .into_iter()
            .flat_map(|g| g.regions.iter().flatten().copied());
        let caps = group
            .into_iter()
            .flat_map(|g| g.slots.iter().flatten())
            .filter_map(move |c| match self.obj(c.obj) {
                Object::MemObj(m) => Some(RegionSpec {
                    base: m.base,
                    len: m.len,
                    rights: c.rights & Rights::MEMORY,
                    kind: m.kind,
                }),
                _ => None,
            });
        own.chain(caps).take(MAX_REGIONS)
    }

    /// Own regions plus MemObj caps of group `g`, uncapped.
    pub(crate) fn region_count(&self, g: ObjId) -> usize {
        let Some(group) = self.group(g) else { return 0 };
        let caps = group
            .slots
            .iter()
            .flatten()
            .filter(|c| matches!(self.obj(c.obj), Object::MemObj(_)))
            .count();
        group.own_regions() + caps
    }

    /// Checks that thread `t` may access `[ptr, ptr + len)` with `need`: zero length is
    /// always fine; otherwise one non-device region must contain it all.
    pub(crate) fn check_user(
        &self,
        t: ThreadId,
        ptr: u32,
        len: u32,
        need: Rights,
    ) -> Result<(), Error> {
        if len == 0 {
            return Ok(());
        }
        if ptr.checked_add(len - 1).is_none() {
            return Err(Error::BadPointer);
        }
        let ok = self
            .regions(t)
            .any(|r| r.kind != MemKind::Device && r.rights.contains(need) && r.contains(ptr, len));
        if ok {
            Ok(())
        } else {
            Err(Error::BadPointer)
        }
    }
}

/// The layout version of MemObj records.
const VERSION: RecordVersion = RecordVersion(1);
/// Bytes in a MemObj record.
pub(crate) const RECORD_LEN: usize = 11;

impl MemObj {
    /// Writes the record (see the table on [`MemObj`]).
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.header(VERSION, crate::abi::ObjKind::MemObj);
        w.u32(self.base);
        w.u32(self.len);
        w.mem_kind(self.kind);
    }

    /// Reads a record written by [`MemObj::encode`]; the range must be nonempty and
    /// must not wrap.
    pub(crate) fn decode(r: &mut Reader) -> Result<MemObj, RestoreError> {
        r.header(VERSION, crate::abi::ObjKind::MemObj)?;
        let m = MemObj {
            base: r.u32()?,
            len: r.u32()?,
            kind: r.mem_kind()?,
        };
        if m.len == 0 || m.base.checked_add(m.len - 1).is_none() {
            return Err(r.bad_value("memory range"));
        }
        Ok(m)
    }
}
