//! The `Kernel` value: the object arena plus the little state that is not in objects
//! (who runs, a sequence counter, the scheduler's index, the checkpoint cycle). All of that state is derived
//! from the objects or volatile, so a checkpoint is the arena alone (see
//! `ops/items.rs`). Here are the accessors every operation uses (typed lookups in the
//! arena, which mark what they hand out mutably as dirty) and the few the glue needs;
//! the operations themselves are in `ops/`. Nothing here may be reachable from a task
//! except through `syscall`.

use crate::{
    abi::{ObjKind, TaskState},
    context::Context,
    cycle::CheckpointCycle,
    ids::{ObjId, ThreadId},
    obj::{Arena, CapGroup, Object, Thread},
    ready::ThreadIndex,
    MAX_OBJECTS,
};

/// The whole kernel state. Build it in a `static` with [`Kernel::new`] (a `const fn`,
/// so no large stack copy), then call [`Kernel::boot`] once.
///
/// `repr(C)`, in this order, so that the fields every syscall touches sit at small
/// offsets from the kernel's address (RV32 loads reach 2 KiB from a register; the
/// scheduler's scan of the arena runs about one instruction per entry slower when
/// the compiler puts the checkpoint cycle's 2 KiB of pending values first).
///
/// `Clone` and `PartialEq` compare whole states: the host tests hold the fast path to
/// what the general syscall path makes of a copy of the same state.
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Kernel {
    /// The thread the arch code must run next; `None` = idle (wfi).
    pub(crate) current: Option<ThreadId>,
    /// Monotonic counter ordering ready and wait queues.
    pub(crate) seq: u64,
    /// Which threads are ready (by priority) and which blocked: derived from the
    /// threads' states, kept by `ops/sched.rs`, rebuilt at boot and restore.
    pub(crate) sched_index: ThreadIndex,
    /// Counts changes of thread states (wrapping): a syscall that changed none need
    /// not reschedule (see `ops/syscall.rs`).
    pub(crate) sched_changes: u32,
    /// Set by `boot`.
    pub(crate) booted: bool,
    /// Changes whenever a MemObj capability appears or disappears anywhere.
    pub(crate) memory_epoch: u32,
    /// The object arena and its dirty bits; entry 0 is the root CapGroup after boot.
    pub(crate) objects: Arena,
    /// When the next checkpoint is due, and the attempt under way (see
    /// `ops/checkpoint.rs`).
    pub(crate) cycle: CheckpointCycle,
}

impl Default for Kernel {
    fn default() -> Self {
        Kernel::new()
    }
}

impl Kernel {
    /// An empty kernel (no objects, nothing runnable) until [`Kernel::boot`].
    pub const fn new() -> Self {
        Kernel {
            objects: Arena::new(),
            current: None,
            seq: 0,
            sched_index: ThreadIndex::EMPTY,
            sched_changes: 0,
            booted: false,
            memory_epoch: 0,
            cycle: CheckpointCycle::NEW,
        }
    }

    /// The thread to run, or `None` when nothing is runnable (wait for an interrupt).
    #[inline]
    pub fn current(&self) -> Option<ThreadId> {
        self.current
    }

    /// The saved registers of `t`, in place: the address is stable for the kernel's
    /// lifetime. `t` must come from this kernel (`current`), else this panics.
    ///
    /// Marks `t` dirty: the trap path writes the registers through this reference
    /// without the kernel seeing it, so the arch code must call this each time before
    /// it resumes `t` (after every `clear_dirty` in particular).
    #[inline]
    pub fn context_mut(&mut self, t: ThreadId) -> &mut Context {
        &mut self.thread_mut(t).ctx
    }

    /// The saved registers of `t`.
    pub fn context(&self, t: ThreadId) -> &Context {
        &self.thread(t).ctx
    }

    /// The name of the task `t` belongs to.
    pub fn task_name(&self, t: ThreadId) -> &str {
        self.group_of(t).name.as_str()
    }

    /// The thread of the task called `name`.
    pub fn thread_by_name(&self, name: &str) -> Option<ThreadId> {
        self.thread_ids().find(|&t| self.task_name(t) == name)
    }

    /// Whether `t` is ready, blocked or exited.
    pub fn task_state(&self, t: ThreadId) -> TaskState {
        self.thread(t).abi_state()
    }

    /// The exit code of `t` (meaningful once it exited; `u32::MAX` after a fault).
    pub fn exit_code(&self, t: ThreadId) -> u32 {
        self.thread(t).exit_code
    }

    /// A number that changes whenever any task gains or loses a MemObj capability:
    /// when it differs from the value at the last PMP programming, `regions` of the
    /// current thread may have changed and PMP must be reprogrammed.
    pub fn memory_epoch(&self) -> u32 {
        self.memory_epoch
    }

    /// Whether a persist phase is in progress.
    pub fn persist_active(&self) -> bool {
        self.cycle.phase.active
    }

    /// Back to the state of `new`, in place (no large temporary on the stack).
    pub(crate) fn reset(&mut self) {
        self.objects.clear();
        self.current = None;
        self.seq = 0;
        self.sched_index = ThreadIndex::EMPTY;
        self.booted = false;
        self.cycle = CheckpointCycle::NEW;
        self.bump_memory_epoch();
    }

    /// Notes that some task's memory regions changed.
    pub(crate) fn bump_memory_epoch(&mut self) {
        self.memory_epoch = self.memory_epoch.wrapping_add(1);
    }
}

impl Kernel {
    /// Puts `obj` in the first free entry; `None` when the arena is full.
    pub(crate) fn alloc(&mut self, obj: Object) -> Option<ObjId> {
        self.objects.alloc(obj)
    }

    /// The entry for `id` (ids are always in range by construction).
    #[inline]
    pub(crate) fn obj(&self, id: ObjId) -> &Object {
        self.objects.get(id)
    }

    /// The entry for `id`, mutably; marks it dirty (see the file comment).
    #[inline]
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
    #[inline]
    pub(crate) fn thread(&self, t: ThreadId) -> &Thread {
        match self.obj(t.0) {
            Object::Thread(th) => th,
            _ => not_a_thread(t),
        }
    }

    /// The thread `t`, mutably (same invariant as [`Kernel::thread`]).
    #[inline]
    pub(crate) fn thread_mut(&mut self, t: ThreadId) -> &mut Thread {
        match self.obj_mut(t.0) {
            Object::Thread(th) => th,
            _ => not_a_thread(t),
        }
    }

    /// The distinct threads `a` and `b`, mutably (same invariant as
    /// [`Kernel::thread`]; `a` being `b` is a broken invariant too).
    #[inline]
    pub(crate) fn threads_mut(&mut self, a: ThreadId, b: ThreadId) -> [&mut Thread; 2] {
        match self.objects.get_two_mut(a.0, b.0) {
            Some([Object::Thread(x), Object::Thread(y)]) => [x, y],
            _ => not_a_thread(a),
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

/// A `ThreadId` that names no thread: a broken kernel invariant. Out of line, so that
/// every thread lookup carries a call here, not the formatting.
#[cold]
#[inline(never)]
fn not_a_thread(t: ThreadId) -> ! {
    panic!("kernel invariant broken: {t:?} is not a thread")
}

/// Collecting an iterator into a fixed array (no allocation).
pub(crate) trait CollectArray<T> {
    /// The first `MAX_OBJECTS` items.
    fn collect_array(self) -> [Option<T>; MAX_OBJECTS];
}

impl<T: Copy, I: Iterator<Item = T>> CollectArray<T> for I {
    fn collect_array(self) -> [Option<T>; MAX_OBJECTS] {
        let mut out = [None; MAX_OBJECTS];
        for (o, x) in out.iter_mut().zip(self) {
            *o = Some(x);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Kernel;

    /// Built at compile time, as the arch code does, with no stack copy.
    static KERNEL: Kernel = Kernel::new();

    #[test]
    fn a_kernel_in_a_static_is_empty_and_small_enough_for_the_device() {
        assert_eq!(KERNEL.current(), None);
        let size = core::mem::size_of::<Kernel>();
        assert!(
            size <= 40 * 1024,
            "the whole kernel state must stay within 40 KiB, is {size} bytes"
        );
    }
}
