//! The `Kernel` value: the object arena plus the little state that is not in objects
//! (who runs, a sequence counter). All of that state is derived from the objects or
//! volatile, so a checkpoint is the arena alone (see checkpoint.rs). Accessors the arch
//! code needs live here; the behaviour lives with each object type. Nothing here may be
//! reachable from a task except through `syscall`.

use crate::{
    abi::TaskState, context::Context, ids::ThreadId, objects::Arena, persist::PersistPhase,
    watch::PendingWatches,
};

/// The whole kernel state. Build it in a `static` with [`Kernel::new`] (a `const fn`,
/// so no large stack copy), then call [`Kernel::boot`] once.
#[derive(Debug)]
pub struct Kernel {
    /// The object arena and its dirty bits; entry 0 is the root CapGroup after boot.
    pub(crate) objects: Arena,
    /// The thread the arch code must run next; `None` = idle (wfi).
    pub(crate) current: Option<ThreadId>,
    /// Monotonic counter ordering ready and wait queues.
    pub(crate) seq: u64,
    /// Set by `boot`.
    pub(crate) booted: bool,
    /// Changes whenever a MemObj capability appears or disappears anywhere.
    pub(crate) memory_epoch: u32,
    /// A task called `Checkpoint` since the last `take_checkpoint_request`.
    pub(crate) checkpoint_requested: bool,
    /// Watched values read for the checkpoint being taken (see watch.rs).
    pub(crate) pending_watches: PendingWatches,
    /// The persist phase before the checkpoint being prepared (see persist.rs).
    pub(crate) persist: PersistPhase,
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
            booted: false,
            memory_epoch: 0,
            checkpoint_requested: false,
            pending_watches: PendingWatches::NONE,
            persist: PersistPhase::NONE,
        }
    }

    /// The thread to run, or `None` when nothing is runnable (wait for an interrupt).
    pub fn current(&self) -> Option<ThreadId> {
        self.current
    }

    /// The saved registers of `t`, in place: the address is stable for the kernel's
    /// lifetime. `t` must come from this kernel (`current`), else this panics.
    ///
    /// Marks `t` dirty: the trap path writes the registers through this reference
    /// without the kernel seeing it, so the arch code must call this each time before
    /// it resumes `t` (after every `clear_dirty` in particular).
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

    /// Notes that some task's memory regions changed.
    pub(crate) fn bump_memory_epoch(&mut self) {
        self.memory_epoch = self.memory_epoch.wrapping_add(1);
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
