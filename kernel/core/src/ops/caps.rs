//! Capabilities and their derivation tree: install, derive, delete, revoke, and
//! deleting an object (lookups are queries, in `access.rs`). Revocation is eager: every operation scans
//! all CapGroups' slots (O(groups × slots) per sweep, at most one sweep per derivation
//! depth), so no capability ever names a deleted object. This file must never grant a
//! right a capability's parent did not have.
//!
//! Invariants kept here (checked by `check_invariants`):
//! - Every capability names a live object that is not a Thread.
//! - A capability's parent, if any, is a live capability to the same object, with a
//!   superset of its rights and the same badge unless the parent's badge is 0.
//! - Following parents always ends (the derivation tree has no cycles).
//! - An object other than a CapGroup or Thread lives exactly as long as some
//!   capability names it (the last one gone, it is destroyed).

use crate::{
    abi::{Error, ObjKind, Rights},
    ids::{ObjId, Slot, ThreadId},
    kernel::{CollectArray, Kernel},
    obj::{Block, Cap, CapRef, Object, ThreadState},
    MAX_OBJECTS, SLOTS,
};

/// A set of slots per arena entry, for revocation sweeps.
struct SlotSet([u16; MAX_OBJECTS]);

const _: () = assert!(SLOTS <= 16, "SlotSet keeps one u16 bit per slot");

impl SlotSet {
    fn contains(&self, at: CapRef) -> bool {
        self.0[at.group.index()] & (1 << at.slot.index()) != 0
    }
    fn insert(&mut self, at: CapRef) {
        self.0[at.group.index()] |= 1 << at.slot.index();
    }
}

impl Kernel {
    /// Puts `cap` in the empty slot `at` (callers check emptiness and region room).
    pub(crate) fn install(&mut self, at: CapRef, cap: Cap) {
        let is_mem = self.kind_of(cap.obj) == Some(ObjKind::MemObj);
        if let Some(g) = self.group_mut(at.group) {
            g.slots[at.slot.index()] = Some(cap);
        }
        if is_mem {
            self.bump_memory_epoch();
        }
    }

    /// `CapDerive`: a copy of the cap in `src` with rights `src ∩ mask` into the empty
    /// slot `dst`, recorded as derived from `src`. A badge can be set only on an
    /// unbadged cap (0 keeps the source's badge). Needs no right: the copy stays in the
    /// caller's group and never has more rights than its source.
    pub(crate) fn derive(
        &mut self,
        t: ThreadId,
        src: u32,
        dst: u32,
        mask: u32,
        badge: u32,
    ) -> Result<(), Error> {
        let (from, cap) = self.lookup(t, src, None, Rights::empty())?;
        let to = self.empty_slot(t, dst)?;
        let mask = Rights::from_bits(mask).ok_or(Error::BadArgument)?;
        let badge = match (cap.badge, badge) {
            (old, 0) => old,
            (0, new) => new,
            _ => return Err(Error::BadArgument),
        };
        if !self.can_hold_another_region(to.group, cap.obj) {
            return Err(Error::NoSpace);
        }
        self.install(
            to,
            Cap {
                obj: cap.obj,
                rights: cap.rights & mask,
                badge,
                parent: Some(from),
            },
        );
        Ok(())
    }

    /// `CapDelete`: empties `at`. Caps derived from it are re-parented to its parent,
    /// so revoking an ancestor still reaches them. The object goes when no cap is left.
    pub(crate) fn delete_cap(&mut self, at: CapRef) {
        let Some(cap) = self.cap_at(at) else { return };
        for c in all_locations() {
            if self.cap_at(c).is_some_and(|child| child.parent == Some(at)) {
                self.set_parent(c, cap.parent);
            }
        }
        self.remove(at);
        self.collect_garbage();
    }

    /// `CapRevoke`: deletes every cap derived from `at`, transitively, in every
    /// CapGroup; `at` itself stays.
    pub(crate) fn revoke(&mut self, at: CapRef) {
        let mut doomed = SlotSet([0; MAX_OBJECTS]);
        // One sweep marks the children of marked caps; repeat until nothing changes
        // (at most one sweep per level of the derivation tree).
        loop {
            let mut changed = false;
            for c in all_locations() {
                if doomed.contains(c) {
                    continue;
                }
                let Some(cap) = self.cap_at(c) else { continue };
                if cap.parent.is_some_and(|p| p == at || doomed.contains(p)) {
                    doomed.insert(c);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for c in all_locations() {
            if doomed.contains(c) {
                self.remove(c);
            }
        }
        self.collect_garbage();
    }

    /// `ObjDelete`: removes every capability to `obj` in every CapGroup and destroys
    /// it. (Caps derived from a cap to `obj` also name `obj`, so none is orphaned.)
    pub(crate) fn delete_object(&mut self, obj: ObjId) {
        for c in all_locations() {
            if self.cap_at(c).is_some_and(|cap| cap.obj == obj) {
                self.remove(c);
            }
        }
        self.destroy(obj);
        self.collect_garbage();
    }

    fn set_parent(&mut self, at: CapRef, parent: Option<CapRef>) {
        if let Some(g) = self.group_mut(at.group) {
            if let Some(c) = g.slots[at.slot.index()].as_mut() {
                c.parent = parent;
            }
        }
    }

    /// Empties a slot (no re-parenting, no garbage collection).
    fn remove(&mut self, at: CapRef) {
        let Some(cap) = self.cap_at(at) else { return };
        if let Some(g) = self.group_mut(at.group) {
            g.slots[at.slot.index()] = None;
        }
        if self.kind_of(cap.obj) == Some(ObjKind::MemObj) {
            self.bump_memory_epoch();
        }
    }

    /// Destroys every object (other than CapGroups and Threads) that no capability
    /// names any more.
    fn collect_garbage(&mut self) {
        let mut named = [false; MAX_OBJECTS];
        for (_, c) in self.all_caps() {
            named[c.obj.index()] = true;
        }
        for (i, is_named) in named.iter().enumerate() {
            let Some(id) = ObjId::from_index(i) else {
                continue;
            };
            let collectable = !matches!(
                self.obj(id),
                Object::Free | Object::CapGroup(_) | Object::Thread(_)
            );
            if collectable && !is_named {
                self.destroy(id);
            }
        }
    }

    /// Frees `obj`'s entry after waking every thread blocked on it with `PeerGone`,
    /// disarming timers and removing commit watches that would signal it. No
    /// capability may name it any more.
    fn destroy(&mut self, obj: ObjId) {
        for t in self.thread_ids().collect_array() {
            let Some(t) = t else { continue };
            let waits_on_it = match self.thread(t).state {
                ThreadState::Blocked(Block::Send { ep, .. })
                | ThreadState::Blocked(Block::Recv { ep }) => ep == obj,
                ThreadState::Blocked(Block::Notification { obj: o })
                | ThreadState::Blocked(Block::Irq { obj: o }) => o == obj,
                _ => false,
            };
            if waits_on_it {
                self.wake(t, Err(Error::PeerGone));
            }
        }
        for i in 0..MAX_OBJECTS {
            let Some(id) = ObjId::from_index(i) else {
                continue;
            };
            let targets_it = matches!(self.obj(id), Object::Timer(tm) if tm.target.is_some_and(|(n, _)| n == obj));
            if targets_it {
                if let Object::Timer(tm) = self.obj_mut(id) {
                    tm.disarm();
                }
            }
        }
        // A commit watch that would signal it ends with it.
        for t in self.thread_ids().collect_array().into_iter().flatten() {
            if self.thread(t).watch.is_some_and(|w| w.notif == obj) {
                self.thread_mut(t).watch = None;
            }
        }
        if matches!(self.obj(obj), Object::MemObj(_)) {
            self.bump_memory_epoch();
        }
        *self.obj_mut(obj) = Object::Free;
    }
}

/// Every (group, slot) location in the arena, live or not; borrows nothing, so slots
/// can change while iterating.
fn all_locations() -> impl Iterator<Item = CapRef> {
    (0..MAX_OBJECTS)
        .filter_map(ObjId::from_index)
        .flat_map(|group| {
            (0..SLOTS).filter_map(move |i| {
                Some(CapRef {
                    group,
                    slot: Slot::new(i)?,
                })
            })
        })
}
