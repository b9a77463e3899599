//! The object arena: one fixed array of entries, each free or holding one kernel object,
//! named by [`ObjId`]. Objects refer to each other only by `ObjId`, never by pointer,
//! so the whole tree can be checkpointed by copying entries. This file allocates and
//! looks up; it must never decide policy (who may do what).
//!
//! Dirty tracking by ownership: the entries are private to [`Arena`], and the only ways
//! to change one are [`Arena::get_mut`] (behind `Kernel::obj_mut` and the typed
//! `thread_mut`, `group_mut`), [`Arena::set`] and [`Arena::alloc`], each of which marks
//! the entry dirty in a bitmap. So no code outside this file can change an object
//! without the checkpoint seeing it; pure reads ([`Arena::get`], [`Arena::iter`]) never
//! mark. Freeing marks too: a dirty free entry is an object deleted since the last
//! checkpoint.

use crate::{
    abi::ObjKind,
    capgroup::CapGroup,
    endpoint::Endpoint,
    ids::{ObjId, ThreadId},
    irq::IrqNotification,
    kernel::Kernel,
    memory::MemObj,
    notification::Notification,
    nvm_region::NvmRegion,
    thread::Thread,
    timer::Timer,
    MAX_OBJECTS,
};

/// One arena entry. Entries are fixed-size by design (no allocator, no `Box`), so the
/// size difference between variants is the price of a flat, checkpointable arena.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Object {
    /// Unused entry.
    Free,
    /// A process.
    CapGroup(CapGroup),
    /// A thread.
    Thread(Thread),
    /// A memory range.
    MemObj(MemObj),
    /// Synchronous IPC.
    Endpoint(Endpoint),
    /// Asynchronous bits.
    Notification(Notification),
    /// A device interrupt.
    Irq(IrqNotification),
    /// An NVM range.
    NvmRegion(NvmRegion),
    /// A one-shot timer.
    Timer(Timer),
}

impl Object {
    /// The ABI kind, `None` for a free entry.
    pub(crate) fn kind(&self) -> Option<ObjKind> {
        Some(match self {
            Object::Free => return None,
            Object::CapGroup(_) => ObjKind::CapGroup,
            Object::Thread(_) => ObjKind::Thread,
            Object::MemObj(_) => ObjKind::MemObj,
            Object::Endpoint(_) => ObjKind::Endpoint,
            Object::Notification(_) => ObjKind::Notification,
            Object::Irq(_) => ObjKind::IrqNotification,
            Object::NvmRegion(_) => ObjKind::NvmRegion,
            Object::Timer(_) => ObjKind::Timer,
        })
    }
}

/// One bit per arena entry: set when the entry changed since the last
/// [`DirtySet::clear`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DirtySet([u32; DIRTY_WORDS]);

const DIRTY_WORDS: usize = MAX_OBJECTS.div_ceil(32);

impl DirtySet {
    /// Nothing dirty.
    pub(crate) const CLEAN: DirtySet = DirtySet([0; DIRTY_WORDS]);

    fn mark(&mut self, id: ObjId) {
        let i = id.index();
        self.0[i / 32] |= 1 << (i % 32);
    }

    /// True when entry `id` changed since the last clear.
    pub(crate) fn contains(&self, id: ObjId) -> bool {
        let i = id.index();
        self.0[i / 32] & (1 << (i % 32)) != 0
    }

    /// Every entry clean.
    pub(crate) fn clear(&mut self) {
        *self = DirtySet::CLEAN;
    }

    /// Every entry dirty.
    pub(crate) fn mark_all(&mut self) {
        for i in 0..MAX_OBJECTS {
            if let Some(id) = ObjId::from_index(i) {
                self.mark(id);
            }
        }
    }
}

/// The object entries and their dirty bits. The entries are private: every change
/// goes through a method here that marks the entry dirty.
#[derive(Debug)]
pub(crate) struct Arena {
    entries: [Object; MAX_OBJECTS],
    dirty: DirtySet,
}

impl Arena {
    /// All entries free and clean.
    pub(crate) const fn new() -> Arena {
        Arena {
            entries: [const { Object::Free }; MAX_OBJECTS],
            dirty: DirtySet::CLEAN,
        }
    }

    /// The entry for `id` (ids are always in range by construction). Never marks.
    pub(crate) fn get(&self, id: ObjId) -> &Object {
        &self.entries[id.index()]
    }

    /// The entry for `id`, mutably: THE guard. Marks `id` dirty.
    pub(crate) fn get_mut(&mut self, id: ObjId) -> &mut Object {
        self.dirty.mark(id);
        &mut self.entries[id.index()]
    }

    /// Replaces entry `id` (allocation, freeing, restore). Marks `id` dirty.
    pub(crate) fn set(&mut self, id: ObjId, obj: Object) {
        *self.get_mut(id) = obj;
    }

    /// Puts `obj` in the first free entry (marking it dirty); `None` when full.
    pub(crate) fn alloc(&mut self, obj: Object) -> Option<ObjId> {
        let i = self
            .entries
            .iter()
            .position(|o| matches!(o, Object::Free))?;
        let id = ObjId::from_index(i)?;
        self.set(id, obj);
        Some(id)
    }

    /// Every entry with its id, free ones included. Never marks.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (ObjId, &Object)> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, o)| Some((ObjId::from_index(i)?, o)))
    }

    /// Frees every entry (marking each dirty).
    pub(crate) fn clear(&mut self) {
        for o in self.entries.iter_mut() {
            *o = Object::Free;
        }
        self.dirty.mark_all();
    }

    /// The dirty bits.
    pub(crate) fn dirty(&self) -> &DirtySet {
        &self.dirty
    }

    /// The dirty bits, to clear or mark all.
    pub(crate) fn dirty_mut(&mut self) -> &mut DirtySet {
        &mut self.dirty
    }
}

impl Kernel {
    /// Puts `obj` in the first free entry; `None` when the arena is full.
    pub(crate) fn alloc(&mut self, obj: Object) -> Option<ObjId> {
        self.objects.alloc(obj)
    }

    /// The entry for `id` (ids are always in range by construction).
    pub(crate) fn obj(&self, id: ObjId) -> &Object {
        self.objects.get(id)
    }

    /// The entry for `id`, mutably; marks it dirty (see the file comment).
    pub(crate) fn obj_mut(&mut self, id: ObjId) -> &mut Object {
        self.objects.get_mut(id)
    }

    /// The kind of the object at `id`, `None` if free.
    pub(crate) fn kind_of(&self, id: ObjId) -> Option<ObjKind> {
        self.obj(id).kind()
    }

    /// Every live CapGroup's id.
    pub(crate) fn group_ids(&self) -> impl Iterator<Item = ObjId> + '_ {
        self.ids_where(|o| matches!(o, Object::CapGroup(_)))
    }

    /// Every live thread's id.
    pub(crate) fn thread_ids(&self) -> impl Iterator<Item = ThreadId> + '_ {
        self.ids_where(|o| matches!(o, Object::Thread(_)))
            .map(ThreadId)
    }

    fn ids_where(&self, f: impl Fn(&Object) -> bool + 'static) -> impl Iterator<Item = ObjId> + '_ {
        self.objects
            .iter()
            .filter(move |(_, o)| f(o))
            .map(|(id, _)| id)
    }

    /// The CapGroup at `id`, if it is one.
    pub(crate) fn group(&self, id: ObjId) -> Option<&CapGroup> {
        match self.obj(id) {
            Object::CapGroup(g) => Some(g),
            _ => None,
        }
    }

    /// The CapGroup at `id`, mutably, if it is one.
    pub(crate) fn group_mut(&mut self, id: ObjId) -> Option<&mut CapGroup> {
        match self.obj_mut(id) {
            Object::CapGroup(g) => Some(g),
            _ => None,
        }
    }

    /// The thread `t`. A `ThreadId` that names no thread is a broken kernel invariant.
    pub(crate) fn thread(&self, t: ThreadId) -> &Thread {
        match self.obj(t.0) {
            Object::Thread(th) => th,
            _ => panic!("kernel invariant broken: {t:?} is not a thread"),
        }
    }

    /// The thread `t`, mutably (same invariant as [`Kernel::thread`]).
    pub(crate) fn thread_mut(&mut self, t: ThreadId) -> &mut Thread {
        match self.obj_mut(t.0) {
            Object::Thread(th) => th,
            _ => panic!("kernel invariant broken: {t:?} is not a thread"),
        }
    }

    /// The CapGroup thread `t` belongs to.
    pub(crate) fn group_of(&self, t: ThreadId) -> &CapGroup {
        let g = self.thread(t).group;
        match self.group(g) {
            Some(g) => g,
            None => panic!("kernel invariant broken: {t:?} has no CapGroup"),
        }
    }
}
