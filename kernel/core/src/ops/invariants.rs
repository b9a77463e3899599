//! The capability tree's invariants, checked all at once. Tests and the fuzzer call
//! [`Kernel::check_invariants`] after every operation they care about; the kernel itself
//! never depends on it. This file must never change state.

use super::access::ipc_buffer_allowed;
use crate::{
    abi::{ObjKind, Rights},
    ids::{ObjId, ThreadId},
    kernel::Kernel,
    obj::{Block, CapRef, Object, ThreadState},
    record::InvariantViolation,
    MAX_OBJECTS, MAX_REGIONS, SLOTS,
};

fn ensure(ok: bool, what: &'static str, at: usize) -> Result<(), InvariantViolation> {
    if ok {
        Ok(())
    } else {
        Err(InvariantViolation { what, at })
    }
}

impl Kernel {
    /// Checks every invariant of the tree and the scheduler.
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        if !self.booted {
            return ensure(self.current.is_none(), "an unbooted kernel runs nothing", 0);
        }
        let root = ObjId::ROOT.index();
        ensure(
            matches!(self.obj(ObjId::ROOT), Object::CapGroup(g) if g.thread.is_none()),
            "entry 0 is the root CapGroup and has no thread",
            root,
        )?;
        let mut named = [false; MAX_OBJECTS];
        for (at, cap) in self.all_caps() {
            let g = at.group.index();
            named[cap.obj.index()] = true;
            let kind = self.kind_of(cap.obj);
            ensure(kind.is_some(), "every capability names a live object", g)?;
            ensure(
                kind != Some(ObjKind::Thread),
                "no capability names a Thread",
                g,
            )?;
            if let Some(p) = cap.parent {
                let parent = self.cap_at(p);
                ensure(
                    parent.is_some(),
                    "a capability's parent is a live capability",
                    g,
                )?;
                if let Some(pc) = parent {
                    ensure(
                        pc.obj == cap.obj,
                        "a capability's parent names the same object",
                        g,
                    )?;
                    ensure(
                        pc.rights.contains(cap.rights),
                        "rights only shrink from parent to child",
                        g,
                    )?;
                    ensure(
                        pc.badge == 0 || pc.badge == cap.badge,
                        "a badged capability's children keep the badge",
                        g,
                    )?;
                }
                ensure(
                    self.parent_chain_ends(at),
                    "the derivation tree has no cycles",
                    g,
                )?;
            }
        }
        for (id, o) in self.objects.iter() {
            let i = id.index();
            let check = |ok: bool, what: &'static str| ensure(ok, what, i);
            // Every object but a task's (CapGroup, Thread) lives only while named.
            if !matches!(o, Object::Free | Object::CapGroup(_) | Object::Thread(_)) {
                check(
                    named[i],
                    "every object lives only while a capability names it",
                )?;
            }
            match o {
                Object::Free => {}
                Object::CapGroup(g) => {
                    if id != ObjId::ROOT {
                        let in_root = self.group(ObjId::ROOT).is_some_and(|r| {
                            r.slots
                                .iter()
                                .flatten()
                                .any(|c| c.obj == id && c.parent.is_none())
                        });
                        check(
                            in_root,
                            "the root holds an original capability to every task's CapGroup",
                        )?;
                        let owns = g.thread.is_some_and(
                            |t| matches!(self.obj(t.obj()), Object::Thread(th) if th.group == id),
                        );
                        check(
                            owns,
                            "every task CapGroup owns a thread that points back to it",
                        )?;
                    }
                    check(
                        self.region_count(id) <= MAX_REGIONS,
                        "a task has at most MAX_REGIONS memory regions",
                    )?;
                    check(
                        g.regions.iter().flatten().all(|r| r.is_valid()),
                        "own regions are well formed",
                    )?;
                }
                Object::Thread(th) => {
                    let owned = self
                        .group(th.group)
                        .is_some_and(|g| g.thread == Some(ThreadId(id)));
                    check(owned, "every thread belongs to the CapGroup that names it")?;
                    self.check_thread(ThreadId(id))?;
                }
                Object::Timer(tm) => {
                    if let Some((n, bits)) = tm.target {
                        check(
                            matches!(self.obj(n), Object::Notification(_)),
                            "an armed timer targets a live notification",
                        )?;
                        check(bits != 0, "an armed timer signals nonzero bits")?;
                    }
                }
                Object::Irq(n) => {
                    let dup = self
                        .objects
                        .iter()
                        .filter(|(_, o)| matches!(o, Object::Irq(m) if m.irq == n.irq))
                        .count();
                    check(dup == 1, "each irq number has at most one IrqNotification")?;
                }
                Object::MemObj(m) => {
                    check(
                        crate::spec::memory_range_ok(m.base, m.len),
                        "a MemObj range is nonempty and below MEMORY_END",
                    )?;
                }
                Object::NvmRegion(n) => {
                    check(
                        crate::spec::nvm_range_ok(n.offset, n.len),
                        "an NvmRegion is nonempty and does not wrap",
                    )?;
                }
                Object::Endpoint(_) | Object::Notification(_) => {}
            }
        }
        let newest = self.thread_ids().map(|t| self.thread(t).seq).max();
        ensure(
            self.seq == newest.unwrap_or(0),
            "the sequence counter is the newest thread's seq",
            0,
        )?;
        ensure(
            self.sched_index == self.thread_index_from_states(),
            "the scheduler's index lists exactly the ready and the blocked threads",
            0,
        )?;
        ensure(
            self.current == self.pick_by_scan(),
            "the current thread is the most urgent eligible ready thread of the whole arena",
            self.current.map_or(0, |t| t.index()),
        )?;
        ensure(
            self.current == self.pick(),
            "the current thread is the one the scheduler picks",
            self.current.map_or(0, |t| t.index()),
        )?;
        if let Some(t) = self.current {
            ensure(
                matches!(self.obj(t.obj()), Object::Thread(th) if th.state == ThreadState::Ready),
                "the current thread is a ready thread",
                t.index(),
            )?;
        } else {
            // In a persist phase only the threads that serve it count.
            let any_ready = self.thread_ids().any(|t| {
                self.thread(t).state == ThreadState::Ready
                    && (!self.persist_active() || self.serves_persist(t))
            });
            ensure(
                !any_ready,
                "the CPU idles only when no thread that may run is ready",
                0,
            )?;
        }
        Ok(())
    }

    /// What the scheduler picks, found the slow way: every thread in the arena
    /// compared (the most urgent eligible ready thread, among equals the one ready the
    /// longest), for checking the index-based pick.
    fn pick_by_scan(&self) -> Option<ThreadId> {
        let mut best: Option<ThreadId> = None;
        for t in self.thread_ids() {
            let th = self.thread(t);
            if th.state != ThreadState::Ready || (self.persist_active() && !self.serves_persist(t))
            {
                continue;
            }
            let better = best.is_none_or(|b| {
                let bt = self.thread(b);
                th.priority.is_more_urgent_than(bt.priority)
                    || (th.priority == bt.priority && th.seq < bt.seq)
            });
            if better {
                best = Some(t);
            }
        }
        best
    }

    fn check_thread(&self, t: ThreadId) -> Result<(), InvariantViolation> {
        let th = self.thread(t);
        let i = t.index();
        let check = |ok: bool, what: &'static str| ensure(ok, what, i);
        let kind_is = |o: ObjId, k: ObjKind| self.kind_of(o) == Some(k);
        match th.state {
            ThreadState::Blocked(Block::Send { ep, .. })
            | ThreadState::Blocked(Block::Recv { ep }) => {
                check(
                    kind_is(ep, ObjKind::Endpoint),
                    "a thread blocked on IPC waits on a live endpoint",
                )?;
            }
            ThreadState::Blocked(Block::Notification { obj }) => {
                check(
                    kind_is(obj, ObjKind::Notification),
                    "a waiting thread waits on a live notification",
                )?;
                let bits = match self.obj(obj) {
                    Object::Notification(n) => n.bits,
                    _ => 0,
                };
                check(
                    bits == 0,
                    "nobody waits on a notification that has bits pending",
                )?;
            }
            ThreadState::Blocked(Block::Irq { obj }) => {
                check(
                    kind_is(obj, ObjKind::IrqNotification),
                    "an irq waiter waits on a live IrqNotification",
                )?;
            }
            ThreadState::Blocked(Block::Reply { server }) => {
                let linked =
                    matches!(self.obj(server.obj()), Object::Thread(s) if s.reply_to == Some(t));
                check(
                    linked,
                    "a thread waiting for a reply is its server's reply_to",
                )?;
            }
            ThreadState::Blocked(Block::Checkpoint) | ThreadState::Ready | ThreadState::Exited => {}
        }
        if let Some(w) = th.watch {
            check(
                kind_is(w.notif, ObjKind::Notification),
                "a commit watch signals a live notification",
            )?;
            check(w.ptr != 0, "a commit watch has a nonzero pointer")?;
            check(
                th.state != ThreadState::Exited,
                "an exited thread has no commit watch",
            )?;
        }
        if let Some(b) = th.ipc_buffer {
            check(
                th.state != ThreadState::Exited,
                "an exited thread has no IPC buffer",
            )?;
            check(
                self.group(th.group)
                    .is_some_and(|g| ipc_buffer_allowed(g, b)),
                "an IPC buffer is aligned and lies in its group's own read-write memory",
            )?;
        }
        if let Some(c) = th.reply_to {
            let waits = matches!(
                self.obj(c.obj()),
                Object::Thread(ct) if ct.state == ThreadState::Blocked(Block::Reply { server: t })
            );
            check(
                waits,
                "a reply_to names a thread waiting for this thread's reply",
            )?;
        }
        Ok(())
    }

    /// True when following parents from `at` ends within the number of slots.
    fn parent_chain_ends(&self, at: CapRef) -> bool {
        let mut cur = Some(at);
        for _ in 0..=MAX_OBJECTS * SLOTS {
            match cur.and_then(|c| self.cap_at(c)) {
                Some(cap) => cur = cap.parent,
                None => return true,
            }
        }
        false
    }

    /// For tests: the rights of the capability in `slot` of task `t`, if any.
    pub fn cap_rights(&self, t: ThreadId, slot: u32) -> Option<Rights> {
        self.lookup(t, slot, None, Rights::empty())
            .ok()
            .map(|(_, c)| c.rights)
    }
}

#[cfg(test)]
mod tests {
    //! The checker itself must not be vacuous: each test breaks one invariant by hand
    //! and expects `check_invariants` to name it.

    use crate::{
        abi::Rights,
        ids::{ObjId, Slot},
        obj::{CapRef, Object},
        spec::{CapSpec, FaultPolicy, MemKind, RegionSpec, TaskSpec},
        Kernel,
    };

    const REGIONS: [RegionSpec; 1] = [RegionSpec {
        base: 0x8000_0000,
        len: 0x1000,
        rights: Rights::all().intersection(Rights::MEMORY),
        kind: MemKind::Checkpointed,
    }];
    const CAPS: [CapSpec; 2] = [
        CapSpec::Notification {
            name: "n",
            rights: Rights::all(),
        },
        CapSpec::Timer,
    ];

    fn booted() -> (Kernel, ObjId) {
        let mut k = Kernel::new();
        let spec = TaskSpec {
            name: "t",
            priority: 0,
            entry: 0x8000_0000,
            stack_top: 0x8000_1000,
            regions: &REGIONS,
            caps: &CAPS,
            fault: FaultPolicy::End,
        };
        k.boot(&[spec]).unwrap();
        k.check_invariants().unwrap();
        let g = k.group_ids().find(|&g| g != ObjId::ROOT).unwrap();
        (k, g)
    }

    fn at(g: ObjId, i: usize) -> CapRef {
        CapRef {
            group: g,
            slot: Slot::new(i).unwrap(),
        }
    }

    fn broken(k: &Kernel) -> &'static str {
        k.check_invariants()
            .expect_err("the checker must catch the broken invariant")
            .what
    }

    #[test]
    fn the_checker_catches_a_child_with_more_rights_than_its_parent() {
        let (mut k, g) = booted();
        let mut c = k.cap_at(at(g, 0)).unwrap();
        c.rights = Rights::READ;
        k.install(at(g, 0), c);
        let mut child = c;
        child.rights = Rights::all();
        child.parent = Some(at(g, 0));
        k.install(at(g, 5), child);
        assert_eq!(broken(&k), "rights only shrink from parent to child");
    }

    #[test]
    fn the_checker_catches_a_dangling_parent_and_an_unnamed_object() {
        let (mut k, g) = booted();
        let mut c = k.cap_at(at(g, 0)).unwrap();
        c.parent = Some(at(g, 9));
        k.install(at(g, 5), c);
        assert_eq!(broken(&k), "a capability's parent is a live capability");
        let (mut k, g) = booted();
        k.group_mut(g).unwrap().slots[1] = None;
        assert_eq!(
            broken(&k),
            "every object lives only while a capability names it"
        );
    }

    #[test]
    fn the_checker_catches_a_cap_to_a_freed_object_and_a_derivation_cycle() {
        let (mut k, g) = booted();
        let timer = k.cap_at(at(g, 1)).unwrap().obj;
        *k.obj_mut(timer) = Object::Free;
        assert_eq!(broken(&k), "every capability names a live object");
        let (mut k, g) = booted();
        let mut a = k.cap_at(at(g, 0)).unwrap();
        a.parent = Some(at(g, 5));
        let mut b = a;
        b.parent = Some(at(g, 0));
        k.install(at(g, 0), a);
        k.install(at(g, 5), b);
        assert_eq!(broken(&k), "the derivation tree has no cycles");
    }
}
