//! The scheduler: fixed priorities (smaller number = more urgent), round robin within a
//! priority, preemption on every tick. There is no run queue to keep consistent: the
//! ready threads and their order are read from thread states and `seq`. This file must
//! never change what a thread is blocked on, only whether and when it runs.

use super::outcome::{write_results, Results};
use crate::{
    abi::Error,
    ids::ThreadId,
    kernel::Kernel,
    obj::{Block, ThreadState},
};

impl Kernel {
    /// The next sequence number (orders queues; a u64 never wraps in practice and
    /// saturates rather than overflow).
    pub(crate) fn next_seq(&mut self) -> u64 {
        self.seq = self.seq.saturating_add(1);
        self.seq
    }

    /// Makes `t` runnable at the back of its priority's round robin.
    pub(crate) fn make_ready(&mut self, t: ThreadId) {
        let s = self.next_seq();
        let th = self.thread_mut(t);
        th.state = ThreadState::Ready;
        th.seq = s;
    }

    /// Blocks `t` on `b`, at the back of that wait queue.
    pub(crate) fn block(&mut self, t: ThreadId, b: Block) {
        let s = self.next_seq();
        let th = self.thread_mut(t);
        th.state = ThreadState::Blocked(b);
        th.seq = s;
    }

    /// Ends a blocking call of `t` with `r` (written to a0..a5) and makes it runnable.
    pub(crate) fn wake(&mut self, t: ThreadId, r: Result<Results, Error>) {
        write_results(&mut self.thread_mut(t).ctx.regs, r);
        self.make_ready(t);
    }

    /// The oldest thread whose block matches `f`: the head of a derived wait queue.
    pub(crate) fn oldest_blocked(&self, f: impl Fn(Block) -> bool) -> Option<ThreadId> {
        self.thread_ids()
            .filter(|&t| matches!(self.thread(t).state, ThreadState::Blocked(b) if f(b)))
            .min_by_key(|&t| self.thread(t).seq)
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
    fn most_urgent(&self, eligible: impl Fn(ThreadId) -> bool) -> Option<ThreadId> {
        let mut best: Option<ThreadId> = None;
        for t in self.thread_ids() {
            let th = self.thread(t);
            if th.state != ThreadState::Ready || !eligible(t) {
                continue;
            }
            best = match best {
                None => Some(t),
                Some(b) => {
                    let bt = self.thread(b);
                    let better = th.priority.is_more_urgent_than(bt.priority)
                        || (th.priority == bt.priority && th.seq < bt.seq);
                    Some(if better { t } else { b })
                }
            };
        }
        best
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
