//! The kernel as the checkpoint manager sees it: a set of items, one per live arena
//! entry, each with a dirty bit, an encoding and a way back; and the `Checkpoint`
//! syscall's protocol. Each object type's record layout lives with the type
//! (thread.rs, capgroup.rs, ...); this file only routes by kind and rebuilds what is
//! derived. It must never let a restore produce a kernel that breaks an invariant:
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
//! | checkpoint request | false (see below) |
//! | pending commit-watch values | none: read per checkpoint attempt (watch.rs) |
//! | IRQ routing | `Platform::irq_enable` for every enabled IrqNotification |
//! | dirty bits | all clean: the restored state is exactly what the records hold |
//!
//! # The checkpoint protocol
//!
//! A thread calling `Checkpoint` blocks ([`Block::Checkpoint`]) and sets a request
//! flag. After each syscall the arch code asks [`Kernel::take_checkpoint_request`];
//! after EVERY checkpoint attempt (requested or periodic) it calls
//! [`Kernel::checkpoint_done`], which wakes every such thread with `a0` = 0 (or
//! `CheckpointFailed`). A thread that waits in `Checkpoint` while a checkpoint is taken
//! is recorded as `checkpoint_done(true)` will leave it (ready, `a0` = 0, same `seq`),
//! because the checkpoint it waited for is the one being written: restored from it, it
//! resumes as if that checkpoint had succeeded. If that checkpoint then fails to
//! commit, the records are never used, so nothing is wrong.

use crate::{
    abi::{Error, ObjKind},
    cap::CollectArray,
    capgroup::{self, CapGroup},
    context::reg,
    endpoint::{self, Endpoint},
    ids::ObjId,
    irq::{self, IrqNotification},
    kernel::Kernel,
    memory::{self, MemObj},
    notification::{self, Notification},
    nvm_region::{self, NvmRegion},
    objects::Object,
    platform::Platform,
    record::{Reader, RestoreError, Writer, RECORD_MAX},
    syscall::Outcome,
    thread::{self, Block, Thread, ThreadState},
    timer::{self, Timer},
    MAX_OBJECTS,
};

const _: () = {
    let lens = [
        capgroup::RECORD_LEN,
        thread::RECORD_LEN,
        memory::RECORD_LEN,
        endpoint::RECORD_LEN,
        notification::RECORD_LEN,
        irq::RECORD_LEN,
        nvm_region::RECORD_LEN,
        timer::RECORD_LEN,
    ];
    let mut i = 0;
    while i < lens.len() {
        assert!(lens[i] <= RECORD_MAX, "every record fits an item");
        i += 1;
    }
    assert!(
        MAX_OBJECTS <= 128,
        "the checkpoint manager holds items 0..128"
    );
};

impl Object {
    /// Writes this entry's record; nothing for a free entry.
    fn encode(&self, w: &mut Writer) {
        match self {
            Object::Free => {}
            Object::CapGroup(g) => g.encode(w),
            Object::Thread(t) => t.encode(w),
            Object::MemObj(m) => m.encode(w),
            Object::Endpoint(e) => e.encode(w),
            Object::Notification(n) => n.encode(w),
            Object::Irq(n) => n.encode(w),
            Object::NvmRegion(n) => n.encode(w),
            Object::Timer(t) => t.encode(w),
        }
    }

    /// Reads record `bytes` of item `item`, by the kind in its header.
    fn decode(item: u16, bytes: &[u8]) -> Result<Object, RestoreError> {
        let kind = *bytes.get(1).ok_or(RestoreError::Truncated { item })?;
        let mut r = Reader::new(item, bytes);
        let obj = match ObjKind::from_u32(u32::from(kind)) {
            Some(ObjKind::CapGroup) => Object::CapGroup(CapGroup::decode(&mut r)?),
            Some(ObjKind::Thread) => Object::Thread(Thread::decode(&mut r)?),
            Some(ObjKind::MemObj) => Object::MemObj(MemObj::decode(&mut r)?),
            Some(ObjKind::Endpoint) => Object::Endpoint(Endpoint::decode(&mut r)?),
            Some(ObjKind::Notification) => Object::Notification(Notification::decode(&mut r)?),
            Some(ObjKind::IrqNotification) => Object::Irq(IrqNotification::decode(&mut r)?),
            Some(ObjKind::NvmRegion) => Object::NvmRegion(NvmRegion::decode(&mut r)?),
            Some(ObjKind::Timer) => Object::Timer(Timer::decode(&mut r)?),
            None => return Err(RestoreError::BadKind { item, kind }),
        };
        r.finish()?;
        Ok(obj)
    }
}

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

    /// Marks every entry clean: call once a checkpoint has committed.
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

    /// A kernel rebuilt from `records` (item id, record bytes); see
    /// [`Kernel::restore_into`]. Needs the stack room of a whole [`Kernel`]; the
    /// device restores into its static instead.
    pub fn restore<'a>(
        records: impl IntoIterator<Item = (u16, &'a [u8])>,
        plat: &mut impl Platform,
    ) -> Result<Kernel, RestoreError> {
        let mut k = Kernel::new();
        k.restore_into(records, plat)?;
        Ok(k)
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
        plat: &mut impl Platform,
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
        self.schedule();
        self.check_invariants().map_err(RestoreError::Inconsistent)
    }

    /// True once per `Checkpoint` call (or burst of calls): a task asked for a
    /// checkpoint since the last time this returned true. The arch code asks after
    /// each syscall.
    pub fn take_checkpoint_request(&mut self) -> bool {
        core::mem::take(&mut self.checkpoint_requested)
    }

    /// A checkpoint attempt ended: wakes every thread blocked in `Checkpoint` with
    /// `a0` = 0 (`ok`) or `CheckpointFailed`, keeping each one's `seq` (its record
    /// already says so, see the file doc), clears any pending request (it is
    /// answered), and reschedules. Call it after every attempt, periodic ones too.
    pub fn checkpoint_done(&mut self, ok: bool) {
        let status = if ok {
            0
        } else {
            Error::CheckpointFailed as u32
        };
        for t in self.thread_ids().collect_array().into_iter().flatten() {
            if self.thread(t).state == ThreadState::Blocked(Block::Checkpoint) {
                let th = self.thread_mut(t);
                th.state = ThreadState::Ready;
                th.ctx.regs[reg::A0] = status;
            }
        }
        self.checkpoint_requested = false;
        self.schedule();
    }

    /// `Checkpoint`: blocks the caller until [`Kernel::checkpoint_done`] and asks for
    /// a checkpoint. A persist callback asked to persist gets `Interrupted` at once
    /// (it persists, then `PersistDone` brings the checkpoint; see persist.rs).
    pub(crate) fn sys_checkpoint(&mut self, t: crate::ids::ThreadId) -> Outcome {
        if self.asked_to_persist(t) {
            return Outcome::err(Error::Interrupted);
        }
        self.checkpoint_requested = true;
        self.block(t, Block::Checkpoint);
        Outcome::Blocked
    }
}

#[cfg(test)]
mod tests {
    //! Each record is exactly as long as its layout table says, and decodes to what
    //! was encoded.

    use super::Object;
    use crate::{
        abi::Rights,
        cap::{Cap, CapRef},
        capgroup::{self, CapGroup, TaskName},
        context::Context,
        endpoint::{self, Endpoint},
        ids::{ObjId, Priority, Slot, ThreadId},
        irq::{self, IrqNotification},
        memory::{self, MemObj},
        notification::{self, Notification},
        nvm_region::{self, NvmRegion},
        record::{Writer, RECORD_MAX},
        spec::{FaultPolicy, MemKind, RegionSpec},
        thread::{self, Block, Thread, ThreadState},
        timer::{self, Timer},
        watch::Watch,
    };

    fn id(i: usize) -> ObjId {
        ObjId::from_index(i).unwrap()
    }

    fn encode(o: &Object) -> ([u8; RECORD_MAX], usize) {
        let mut buf = [0u8; RECORD_MAX];
        let mut w = Writer::new(&mut buf);
        o.encode(&mut w);
        let n = w.len();
        (buf, n)
    }

    fn thread(state: ThreadState) -> Object {
        let mut ctx = Context::start(0x8000_0000, 0x8000_1000);
        ctx.regs[10] = 77;
        Object::Thread(Thread {
            ctx,
            group: id(1),
            state,
            priority: Priority::new(3).unwrap(),
            fault: FaultPolicy::Restart,
            entry: 0x8000_0000,
            stack_top: 0x8000_1000,
            seq: 0x1_0000_0005,
            reply_to: Some(ThreadId(id(9))),
            exit_code: 5,
            watch: None,
        })
    }

    fn watching(state: ThreadState) -> Object {
        let mut o = thread(state);
        if let Object::Thread(t) = &mut o {
            t.watch = Some(Watch {
                ptr: 0x8000_0800,
                notif: id(12),
                commit_bits: 0x8000_0001,
                restore_bits: 2,
                flags: crate::abi::WatchFlags::PERSIST_CALLBACK,
            });
        }
        o
    }

    #[test]
    fn every_record_has_its_documented_length_and_decodes_to_what_was_encoded() {
        let mut group = CapGroup::new(TaskName::new("driver").unwrap());
        group.thread = Some(ThreadId(id(2)));
        group.regions[0] = Some(RegionSpec {
            base: 0x8000_0000,
            len: 0x400,
            rights: Rights::READ | Rights::EXEC,
            kind: MemKind::Checkpointed,
        });
        group.slots[3] = Some(Cap {
            obj: id(5),
            rights: Rights::READ | Rights::GRANT,
            badge: 9,
            parent: Some(CapRef {
                group: id(0),
                slot: Slot::new(15).unwrap(),
            }),
        });
        let cases = [
            (Object::CapGroup(group), capgroup::RECORD_LEN),
            (thread(ThreadState::Ready), thread::RECORD_LEN),
            (watching(ThreadState::Ready), thread::RECORD_LEN),
            (
                watching(ThreadState::Blocked(Block::Notification { obj: id(12) })),
                thread::RECORD_LEN,
            ),
            (thread(ThreadState::Exited), thread::RECORD_LEN),
            (
                thread(ThreadState::Blocked(Block::Send {
                    ep: id(4),
                    badge: 3,
                    call: true,
                })),
                thread::RECORD_LEN,
            ),
            (
                thread(ThreadState::Blocked(Block::Reply {
                    server: ThreadId(id(6)),
                })),
                thread::RECORD_LEN,
            ),
            (
                thread(ThreadState::Blocked(Block::Irq { obj: id(7) })),
                thread::RECORD_LEN,
            ),
            (
                Object::MemObj(MemObj {
                    base: 0x9000_0000,
                    len: 0x100,
                    kind: MemKind::HeapManaged,
                }),
                memory::RECORD_LEN,
            ),
            (Object::Endpoint(Endpoint), endpoint::RECORD_LEN),
            (
                Object::Notification(Notification { bits: 0x8000_0001 }),
                notification::RECORD_LEN,
            ),
            (
                Object::Irq(IrqNotification {
                    irq: 10,
                    pending: false,
                    enabled: true,
                }),
                irq::RECORD_LEN,
            ),
            (
                Object::NvmRegion(NvmRegion { offset: 4, len: 8 }),
                nvm_region::RECORD_LEN,
            ),
            (
                Object::Timer(Timer {
                    deadline: u64::MAX,
                    target: Some((id(3), 6)),
                }),
                timer::RECORD_LEN,
            ),
            (Object::Timer(Timer::default()), timer::RECORD_LEN),
        ];
        for (o, len) in cases {
            let (buf, n) = encode(&o);
            assert_eq!(n, len, "{o:?}: record length differs from its table");
            let back = Object::decode(1, &buf[..n]).expect("own record decodes");
            assert_eq!(encode(&back).0, buf, "{o:?} does not decode to itself");
        }
    }

    #[test]
    fn a_thread_waiting_in_checkpoint_is_recorded_as_ready_with_success() {
        let (buf, n) = encode(&thread(ThreadState::Blocked(Block::Checkpoint)));
        let Ok(Object::Thread(t)) = Object::decode(1, &buf[..n]) else {
            panic!("own record decodes to a thread");
        };
        assert_eq!(t.state, ThreadState::Ready, "recorded as woken");
        assert_eq!(t.ctx.regs[10], 0, "with a0 = 0 (success)");
        assert_eq!(t.seq, 0x1_0000_0005, "keeping its place in the round robin");
    }

    #[test]
    fn unknown_commit_watch_flags_in_a_thread_record_are_refused() {
        let (mut buf, n) = encode(&watching(ThreadState::Ready));
        let Ok(Object::Thread(t)) = Object::decode(1, &buf[..n]) else {
            panic!("own record decodes to a thread");
        };
        assert_eq!(
            t.watch.map(|w| w.flags),
            Some(crate::abi::WatchFlags::PERSIST_CALLBACK),
            "the flags come back with the watch"
        );
        // Bytes 182..186 hold the flags (thread.rs table); bit 7 is no flag.
        buf[182] |= 0x80;
        assert!(
            matches!(
                Object::decode(1, &buf[..n]),
                Err(crate::RestoreError::BadValue { .. })
            ),
            "a flag this kernel does not know is never trusted"
        );
    }

    #[test]
    fn a_pending_interrupt_is_not_recorded() {
        let o = Object::Irq(IrqNotification {
            irq: 10,
            pending: true,
            enabled: true,
        });
        let (buf, n) = encode(&o);
        let Ok(Object::Irq(back)) = Object::decode(1, &buf[..n]) else {
            panic!("own record decodes to an IrqNotification");
        };
        assert!(!back.pending, "a restored interrupt is never pending");
        assert!(back.enabled, "but stays enabled");
    }
}
