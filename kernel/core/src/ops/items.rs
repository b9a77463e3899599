//! The kernel as the checkpoint manager sees it: a set of items, one per live arena
//! entry, each with a dirty bit, an encoding and a way back. Each object type's record
//! layout lives with the type (`obj/`); this file only routes by kind and rebuilds
//! what is derived. It must never let a restore produce a kernel that breaks an invariant:
//! every restored tree is checked whole before it runs.
//!
//! # Items
//!
//! Item `i` is arena entry `i` (`0..MAX_OBJECTS`), its record what
//! [`Kernel::encode_object`] writes (at most [`RECORD_MAX`] bytes). There is no global
//! record: everything in [`Kernel`] outside the arena is derived and rebuilt by
//! [`Kernel::restore_into`]:
//!
//! | state | rebuilt as |
//! |-------|------------|
//! | `current` | the scheduler's pick from the thread states (an invariant says it always is) |
//! | `seq` | the largest thread `seq` (an invariant says it always is) |
//! | `booted` | true: only a booted kernel is checkpointed (item 0, the root, must exist) |
//! | `memory_epoch` | advanced, so the arch code reprograms PMP |
//! | wait and run queues | never stored anywhere: read from thread states |
//! | the checkpoint cycle | nothing due, no phase, no pending watch values (`checkpoint.rs`) |
//! | IRQ routing | `Platform::irq_enable` for every enabled IrqNotification |
//! | dirty bits | all clean: the restored state is exactly what the records hold |

use crate::{
    abi::ObjKind,
    ids::ObjId,
    kernel::Kernel,
    obj::Object,
    platform::Platform,
    record::{RestoreError, Writer, RECORD_MAX},
};

impl Kernel {
    /// The largest record [`Kernel::encode_object`] writes.
    pub const RECORD_MAX: usize = RECORD_MAX;

    /// Every live arena entry: (item id = arena index, kind). Free entries are left
    /// out; a free entry that [`Kernel::is_dirty`] was freed since the last
    /// checkpoint, so its item must be dropped.
    pub fn live_objects(&self) -> impl Iterator<Item = (u16, ObjKind)> + '_ {
        self.objects
            .iter()
            .filter_map(|(id, o)| Some((id.index() as u16, o.kind()?)))
    }

    /// True when entry `index` changed (was written, allocated or freed) since the
    /// last [`Kernel::clear_dirty`]. `false` past the arena.
    pub fn is_dirty(&self, index: u16) -> bool {
        ObjId::from_index(usize::from(index)).is_some_and(|id| self.objects.dirty().contains(id))
    }

    /// Marks every entry clean (a checkpoint committed, or a restore).
    pub fn clear_dirty(&mut self) {
        self.objects.dirty_mut().clear();
    }

    /// Marks every entry dirty (the first checkpoint, full-copy mode).
    pub fn mark_all_dirty(&mut self) {
        self.objects.dirty_mut().mark_all();
    }

    /// Writes the record of entry `index` into `out` and returns its length; 0 for a
    /// free entry or an index past the arena. Panics only if `out` is shorter than the
    /// record (pass [`Kernel::RECORD_MAX`] bytes and it never is).
    pub fn encode_object(&self, index: u16, out: &mut [u8]) -> usize {
        let Some(id) = ObjId::from_index(usize::from(index)) else {
            return 0;
        };
        let mut w = Writer::new(out);
        self.obj(id).encode(&mut w);
        w.len()
    }

    /// Replaces this kernel by the one `records` describe: resets it, decodes every
    /// record (each validated field by field), checks the whole tree's invariants,
    /// then rebuilds derived state (see the file doc): the scheduler's choice, the
    /// sequence counter, and `Platform::irq_enable` for each enabled interrupt. Items
    /// not given are free entries. Nothing is dirty afterwards.
    ///
    /// On error the kernel is left empty and unbooted (as after [`Kernel::new`]) and
    /// no interrupt was enabled.
    pub fn restore_into<'a>(
        &mut self,
        records: impl IntoIterator<Item = (u16, &'a [u8])>,
        plat: &mut dyn Platform,
    ) -> Result<(), RestoreError> {
        self.reset();
        if let Err(e) = self.load(records) {
            self.reset();
            return Err(e);
        }
        for (_, o) in self.objects.iter() {
            if let Object::Irq(n) = o {
                if n.enabled {
                    plat.irq_enable(n.irq);
                }
            }
        }
        self.clear_dirty();
        Ok(())
    }

    /// Decodes `records` into the (reset) arena and rebuilds the derived state.
    fn load<'a>(
        &mut self,
        records: impl IntoIterator<Item = (u16, &'a [u8])>,
    ) -> Result<(), RestoreError> {
        for (item, bytes) in records {
            let id = ObjId::from_index(usize::from(item))
                .ok_or(RestoreError::ItemOutOfRange { item })?;
            if !matches!(self.obj(id), Object::Free) {
                return Err(RestoreError::DuplicateItem { item });
            }
            let obj = Object::decode(item, bytes)?;
            self.objects.set(id, obj);
        }
        if !matches!(self.obj(ObjId::ROOT), Object::CapGroup(_)) {
            return Err(RestoreError::NoRoot);
        }
        self.seq = self
            .thread_ids()
            .map(|t| self.thread(t).seq)
            .max()
            .unwrap_or(0);
        self.booted = true;
        self.bump_memory_epoch();
        self.rebuild_sched_index();
        self.schedule();
        self.check_invariants().map_err(RestoreError::Inconsistent)
    }
}
