//! What a thread may reach: the capability in a slot (with kind and rights checks),
//! the regions PMP must allow for it, and the check every user (pointer, length)
//! passes before the kernel reads or writes it. A user pointer is an allegation: it is
//! valid only if it lies entirely (overflow-checked) inside ONE region the task holds
//! with the needed rights, and never in device memory. These are queries: this file
//! must never change state, and never call `UserMemory` itself.

use crate::{
    abi::{Error, ObjKind, Rights, WatchFlags, IPC_BUFFER_SIZE},
    ids::{ObjId, Slot, ThreadId},
    kernel::Kernel,
    obj::{Cap, CapGroup, CapRef, Object},
    spec::{MemKind, RegionSpec},
    MAX_REGIONS, SLOTS,
};

/// Whether region `r` lets a task access `[ptr, ptr + len)` with `need` (never in
/// device memory). The range test first: it is what tells regions apart.
#[inline]
fn allows(r: &RegionSpec, ptr: u32, len: u32, need: Rights) -> bool {
    r.contains(ptr, len) && r.rights.contains(need) && r.kind != MemKind::Device
}

/// Whether the own regions of group `g` (its memory from boot, not its memory
/// capabilities) let it access `[ptr, ptr + len)` with `need`; zero length always
/// may. The first step of [`Kernel::check_user`], and all the fast paths look at.
#[inline]
pub(crate) fn own_regions_allow(g: &CapGroup, ptr: u32, len: u32, need: Rights) -> bool {
    len == 0 || own_region_allowing(g, ptr, len, need).is_some()
}

/// Whether an IPC buffer of group `g`'s thread may lie at `at`: 4-byte aligned (the
/// kernel copies it in words) and all of it in one own region the thread may read and
/// write, never device memory. Own regions never change, so this holds for as long as
/// it held when the buffer was set. `SetIpcBuffer` and the invariants both ask this.
pub(crate) fn ipc_buffer_allowed(g: &CapGroup, at: u32) -> bool {
    at.is_multiple_of(4) && own_regions_allow(g, at, IPC_BUFFER_SIZE, Rights::READ | Rights::WRITE)
}

/// The first own region of group `g` that lets it access `[ptr, ptr + len)` with
/// `need`, for [`own_regions_allow_near`].
#[inline]
pub(crate) fn own_region_allowing(
    g: &CapGroup,
    ptr: u32,
    len: u32,
    need: Rights,
) -> Option<&RegionSpec> {
    g.regions
        .iter()
        .flatten()
        .find(|r| allows(r, ptr, len, need))
}

/// [`own_regions_allow`], trying `near` (one of the group's own regions) first: the
/// same answer, found at once when a buffer lies where its descriptor does.
#[inline(always)]
pub(crate) fn own_regions_allow_near(
    g: &CapGroup,
    near: &RegionSpec,
    ptr: u32,
    len: u32,
    need: Rights,
) -> bool {
    len == 0 || allows(near, ptr, len, need) || own_regions_allow(g, ptr, len, need)
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
        // The group's own regions come first in `regions` (and never exceed its cap):
        // a buffer in the task's own RAM, the common case, is found without walking
        // the capability slots.
        let group = self.group(self.thread(t).group);
        if group.is_some_and(|g| own_regions_allow(g, ptr, len, need)) {
            return Ok(());
        }
        if self.regions(t).any(|r| allows(&r, ptr, len, need)) {
            Ok(())
        } else {
            Err(Error::BadPointer)
        }
    }

    /// The capability at `at`, if the group is live and the slot full.
    pub(crate) fn cap_at(&self, at: CapRef) -> Option<Cap> {
        self.group(at.group)?.slots[at.slot.index()]
    }

    /// Every capability in every CapGroup.
    pub(crate) fn all_caps(&self) -> impl Iterator<Item = (CapRef, Cap)> + '_ {
        self.group_ids().flat_map(move |g| {
            (0..SLOTS).filter_map(move |i| {
                let at = CapRef {
                    group: g,
                    slot: Slot::new(i)?,
                };
                Some((at, self.cap_at(at)?))
            })
        })
    }

    /// Checks a slot number from thread `t`: in range (`BadSlot`), full (`EmptySlot`),
    /// of `kind` if given (`WrongKind`), holding `need` (`NoRights`), in that order.
    pub(crate) fn lookup(
        &self,
        t: ThreadId,
        raw: u32,
        kind: Option<ObjKind>,
        need: Rights,
    ) -> Result<(CapRef, Cap), Error> {
        let at = CapRef {
            group: self.thread(t).group,
            slot: Slot::from_user(raw)?,
        };
        let cap = self.cap_at(at).ok_or(Error::EmptySlot)?;
        if let Some(k) = kind {
            if self.kind_of(cap.obj) != Some(k) {
                return Err(Error::WrongKind);
            }
        }
        if !cap.rights.contains(need) {
            return Err(Error::NoRights);
        }
        Ok((at, cap))
    }

    /// For the fast paths: the endpoint capability in slot `raw` of group `g`, if it
    /// holds `need`; [`Kernel::lookup`]'s checks without its errors (a refusal is
    /// left to the general path, which names it).
    #[inline]
    pub(crate) fn endpoint_cap(&self, g: ObjId, raw: u32, need: Rights) -> Option<Cap> {
        let cap = (*self.group(g)?.slots.get(usize::try_from(raw).ok()?)?)?;
        let endpoint = matches!(self.obj(cap.obj), Object::Endpoint(_));
        (endpoint && cap.rights.contains(need)).then_some(cap)
    }

    /// Checks that `raw` names an empty slot of thread `t`'s group.
    pub(crate) fn empty_slot(&self, t: ThreadId, raw: u32) -> Result<CapRef, Error> {
        let at = CapRef {
            group: self.thread(t).group,
            slot: Slot::from_user(raw)?,
        };
        match self.cap_at(at) {
            Some(_) => Err(Error::SlotOccupied),
            None => Ok(at),
        }
    }

    /// True when giving group `g` a cap to `obj` keeps it within `MAX_REGIONS`.
    pub(crate) fn can_hold_another_region(&self, g: ObjId, obj: ObjId) -> bool {
        if self.kind_of(obj) != Some(ObjKind::MemObj) {
            return true;
        }
        self.region_count(g) < MAX_REGIONS
    }

    /// The flags of `t`'s commit watch (none without a watch).
    pub(crate) fn watch_flags(&self, t: ThreadId) -> WatchFlags {
        self.thread(t)
            .watch
            .map_or(WatchFlags::empty(), |w| w.flags)
    }

    /// Whether `t` runs during a persist phase.
    pub(crate) fn serves_persist(&self, t: ThreadId) -> bool {
        self.watch_flags(t)
            .intersects(WatchFlags::PERSIST_CALLBACK | WatchFlags::SERVES_PERSIST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj::TaskName;
    use proptest::prelude::*;

    fn region((base, len, rights, device): (u32, u32, u8, bool)) -> RegionSpec {
        RegionSpec {
            base,
            len,
            rights: Rights::from_bits_truncate(u32::from(rights)) & Rights::MEMORY,
            kind: if device {
                MemKind::Device
            } else {
                MemKind::Checkpointed
            },
        }
    }

    proptest! {
        /// Trying a region first is only a shortcut: the answer is the one of all the
        /// group's own regions, whichever region is tried and wherever the range lies.
        #[test]
        fn trying_a_region_first_never_changes_the_answer(
            regions in proptest::collection::vec(
                (0u32..0x3000, 1u32..0x1000, 0u8..8, any::<bool>()), 1..=MAX_REGIONS),
            near in 0usize..MAX_REGIONS,
            ptr in 0u32..0x4000,
            len in 0u32..0x1200,
            need in 1u8..8,
        ) {
            let mut g = CapGroup::new(TaskName::ROOT);
            for (i, r) in regions.iter().enumerate() {
                g.regions[i] = Some(region(*r));
            }
            let near = region(regions[near % regions.len()]);
            let need = Rights::from_bits_truncate(u32::from(need)) & Rights::MEMORY;
            prop_assert_eq!(
                own_regions_allow_near(&g, &near, ptr, len, need),
                own_regions_allow(&g, ptr, len, need)
            );
        }
    }
}
