//! The scheduler: fixed priorities (smaller number = more urgent), round robin within a
//! priority, preemption on every tick. The ready threads and their order are read from
//! thread states and `seq`; the scheduler's index (`ready.rs`) says where to look, so a
//! pick reads the ready threads of the most urgent level only (usually one), not the
//! whole arena. Every change of a thread's state goes through [`Kernel::set_state`],
//! which keeps the index equal to the states. This file must never change what a
//! thread is blocked on, only whether and when it runs.

use super::outcome::{write_results, Results};
use crate::{
    abi::Error,
    ids::{ObjId, ThreadId},
    kernel::Kernel,
    obj::{Block, ThreadState},
    ready::{bits, IndexSet, Listed, ThreadIndex},
};

/// How the scheduler's index lists a thread in `state`.
fn listed(state: ThreadState) -> Listed {
    match state {
        ThreadState::Ready => Listed::Ready,
        ThreadState::Blocked(Block::Send { .. }) => Listed::Sending,
        ThreadState::Blocked(_) => Listed::Blocked,
        ThreadState::Exited => Listed::Neither,
    }
}

/// The threads of `set`.
fn threads_in(set: IndexSet) -> impl Iterator<Item = ThreadId> {
    bits(set).filter_map(|i| ObjId::from_index(i).map(ThreadId))
}

impl Kernel {
    /// The next sequence number (orders queues; a u64 never wraps in practice and
    /// saturates rather than overflow).
    pub(crate) fn next_seq(&mut self) -> u64 {
        self.seq = self.seq.saturating_add(1);
        self.seq
    }

    /// Sets the state of `t` (keeping its `seq`) and lists it in the scheduler's index:
    /// the one way a thread's state changes.
    #[inline]
    pub(crate) fn set_state(&mut self, t: ThreadId, state: ThreadState) {
        self.enter_state(t, state, None);
    }

    /// Sets the state of `t`, and its `seq` when given (one arena access: this runs on
    /// every IPC), and lists it in the scheduler's index.
    #[inline]
    fn enter_state(&mut self, t: ThreadId, state: ThreadState, seq: Option<u64>) {
        let th = self.thread_mut(t);
        th.state = state;
        if let Some(s) = seq {
            th.seq = s;
        }
        let p = th.priority;
        self.sched_index.set(t.index(), p, listed(state));
        self.sched_changes = self.sched_changes.wrapping_add(1);
    }

    /// Builds the scheduler's index from the threads' states (boot, restore).
    pub(crate) fn rebuild_sched_index(&mut self) {
        self.sched_index = self.thread_index_from_states();
    }

    /// The scheduler's index as the threads' states make it (also what the invariants
    /// compare the kept one with).
    pub(crate) fn thread_index_from_states(&self) -> ThreadIndex {
        let mut x = ThreadIndex::EMPTY;
        for t in self.thread_ids() {
            let th = self.thread(t);
            x.set(t.index(), th.priority, listed(th.state));
        }
        x
    }

    /// Makes `t` runnable at the back of its priority's round robin.
    pub(crate) fn make_ready(&mut self, t: ThreadId) {
        let s = self.next_seq();
        self.enter_state(t, ThreadState::Ready, Some(s));
    }

    /// Blocks `t` on `b`, at the back of that wait queue.
    pub(crate) fn block(&mut self, t: ThreadId, b: Block) {
        let s = self.next_seq();
        self.enter_state(t, ThreadState::Blocked(b), Some(s));
    }

    /// Ends a blocking call of `t` with `r` (written to a0..a5) and makes it runnable.
    #[inline]
    pub(crate) fn wake(&mut self, t: ThreadId, r: Result<Results, Error>) {
        write_results(&mut self.thread_mut(t).ctx.regs, r);
        self.make_ready(t);
    }

    /// The oldest thread whose block matches `f`: the head of a derived wait queue.
    pub(crate) fn oldest_blocked(&self, f: impl Fn(Block) -> bool) -> Option<ThreadId> {
        self.oldest_in(self.sched_index.blocked(), f)
    }

    /// [`Kernel::oldest_blocked`] among the threads that wait to send (whose block is a
    /// `Send`): the head of an endpoint's queue of senders.
    pub(crate) fn oldest_sender(&self, f: impl Fn(Block) -> bool) -> Option<ThreadId> {
        self.oldest_in(self.sched_index.sending(), f)
    }

    /// The oldest thread of `set` whose block matches `f`.
    fn oldest_in(&self, set: IndexSet, f: impl Fn(Block) -> bool) -> Option<ThreadId> {
        let mut oldest: Option<(ThreadId, u64)> = None;
        for t in threads_in(set) {
            let th = self.thread(t);
            let waits = matches!(th.state, ThreadState::Blocked(b) if f(b));
            if waits && oldest.is_none_or(|(_, seq)| th.seq < seq) {
                oldest = Some((t, th.seq));
            }
        }
        oldest.map(|(t, _)| t)
    }

    /// Whether some thread waiting to send matches `f` (a queue of senders is not
    /// empty).
    pub(crate) fn any_sender(&self, f: impl Fn(Block) -> bool) -> bool {
        threads_in(self.sched_index.sending())
            .any(|t| matches!(self.thread(t).state, ThreadState::Blocked(b) if f(b)))
    }

    /// Chooses `current`: the most urgent ready thread, and among equals the one ready
    /// the longest (a preempted thread keeps its place, so it resumes first). During a
    /// persist phase, only threads that serve it are chosen.
    pub(crate) fn schedule(&mut self) {
        self.current = self.pick();
    }

    /// The thread [`Kernel::schedule`] would choose now. Pure: `current` is always
    /// this after every entry point, which is why it need not be checkpointed. In a
    /// persist phase only the callbacks and the services they use are chosen.
    pub(crate) fn pick(&self) -> Option<ThreadId> {
        // Two instances of one loop: the filter costs the common case nothing (a
        // filter tested inside the one loop cost every syscall about 110 instructions).
        if self.persist_active() {
            self.most_urgent(|t| self.serves_persist(t))
        } else {
            self.most_urgent(|_| true)
        }
    }

    /// The most urgent ready thread among those `eligible` accepts, and among equals
    /// the one ready the longest.
    #[inline]
    fn most_urgent(&self, eligible: impl Fn(ThreadId) -> bool) -> Option<ThreadId> {
        self.sched_index.ready_by_urgency().find_map(|set| {
            threads_in(set)
                .filter(|&t| eligible(t))
                .min_by_key(|&t| self.thread(t).seq)
        })
    }

    /// The fast path's hand-over (`ops/ipc.rs`): `t`, the current thread, has made
    /// its syscall (its pc moves past the `ecall`) and blocks on `b`, which is not a
    /// `Send`; `r`, blocked but not sending, is woken with `res` as the results of its
    /// call and runs. When `r_owes_t`, `r` owes `t` the reply (a Call), else `t` owes
    /// nothing any more (it replied). The same as [`Kernel::wake`] of `r`,
    /// [`Kernel::block`] of `t` and [`Kernel::schedule`], in that order, where `r` is
    /// what `schedule` picks (no other thread is ready at its priority or a more urgent
    /// one, outside a persist phase), in fewer steps: both threads are looked up at
    /// once and the scheduler's index moves both at once.
    #[inline(always)]
    pub(crate) fn hand_over(
        &mut self,
        t: ThreadId,
        b: Block,
        r: ThreadId,
        res: Results,
        r_owes_t: bool,
    ) {
        // `next_seq` twice (it saturates); while the low word does not carry, in it
        // alone (RV32 adds a u64 in two words).
        let (s1, s2) = if (self.seq as u32) < u32::MAX - 1 {
            let high = self.seq & !u64::from(u32::MAX);
            let low = self.seq as u32;
            (high | u64::from(low + 1), high | u64::from(low + 2))
        } else {
            let s1 = self.seq.saturating_add(1);
            (s1, s1.saturating_add(1))
        };
        self.seq = s2;
        let [rt, tt] = self.threads_mut(r, t);
        write_results(&mut rt.ctx.regs, Ok(res));
        rt.state = ThreadState::Ready;
        rt.seq = s1;
        tt.ctx.pc = tt.ctx.pc.wrapping_add(4);
        tt.state = ThreadState::Blocked(b);
        tt.seq = s2;
        if r_owes_t {
            rt.reply_to = Some(t);
        } else {
            tt.reply_to = None;
        }
        let (pr, pt) = (rt.priority, tt.priority);
        self.sched_index.hand_over(r.index(), pr, t.index(), pt);
        self.sched_changes = self.sched_changes.wrapping_add(2);
        self.current = Some(r);
    }

    /// Round robin: the running thread goes to the back of its priority, then the most
    /// urgent ready thread runs.
    pub(crate) fn rotate(&mut self) {
        if let Some(t) = self.current {
            if self.thread(t).state == ThreadState::Ready {
                self.make_ready(t);
            }
        }
        self.schedule();
    }
}
