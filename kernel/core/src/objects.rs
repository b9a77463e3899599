//! The object arena: one fixed array of entries, each free or holding one kernel object,
//! named by [`ObjId`]. Objects refer to each other only by `ObjId`, never by pointer,
//! so the whole tree can be checkpointed by copying entries. This file allocates and
//! looks up; it must never decide policy (who may do what).

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

impl Kernel {
    /// Puts `obj` in the first free entry; `None` when the arena is full.
    pub(crate) fn alloc(&mut self, obj: Object) -> Option<ObjId> {
        let i = self
            .objects
            .iter()
            .position(|o| matches!(o, Object::Free))?;
        let id = ObjId::from_index(i)?;
        self.objects[i] = obj;
        Some(id)
    }

    /// The entry for `id` (ids are always in range by construction).
    pub(crate) fn obj(&self, id: ObjId) -> &Object {
        &self.objects[id.index()]
    }

    /// The entry for `id`, mutably.
    pub(crate) fn obj_mut(&mut self, id: ObjId) -> &mut Object {
        &mut self.objects[id.index()]
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
            .enumerate()
            .filter(move |(_, o)| f(o))
            .filter_map(|(i, _)| ObjId::from_index(i))
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
