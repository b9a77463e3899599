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
    spec::{MemKind, RegionSpec},
    MAX_REGIONS,
};

/// A range of RAM (or device MMIO, `kind == Device`) granted through capabilities.
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
