//! The scheduler's index of thread states: which threads are ready, by priority, which
//! are blocked, and which of those wait to send, as bit sets over arena indices. It is derived state (rebuilt from
//! the threads at boot and restore, never checkpointed) that lets the scheduler and the
//! wait queues look at a few set bits instead of scanning all `MAX_OBJECTS` arena
//! entries on every syscall. It must never decide anything: `ops/sched.rs` owns the
//! policy and keeps this index equal to the threads' states (which
//! `Kernel::check_invariants` verifies against a full scan).

use crate::{ids::Priority, MAX_OBJECTS, NUM_PRIORITIES};

// One bit per arena entry.
const _: () = assert!(MAX_OBJECTS <= 64);

/// A set of arena indices: bit `i % 32` of word `i / 32` is index `i`. Two 32-bit
/// words, not a `u64`: RV32 has no 64-bit registers, and an index touches one word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IndexSet([u32; 2]);

impl IndexSet {
    /// No index.
    pub(crate) const EMPTY: IndexSet = IndexSet([0; 2]);

    /// The word and the bit of index `i` (`% 64`: indices are below `MAX_OBJECTS`).
    #[inline]
    fn at(i: usize) -> (usize, u32) {
        ((i / 32) % 2, 1 << (i % 32))
    }

    /// Whether the set is empty.
    #[inline]
    pub(crate) fn is_empty(self) -> bool {
        self.0[0] | self.0[1] == 0
    }

    /// Whether the set holds exactly index `i`.
    #[inline]
    fn is_only(self, i: usize) -> bool {
        let b = 1 << (i % 32);
        let [low, high] = self.0;
        if i < 32 {
            low == b && high == 0
        } else {
            high == b && low == 0
        }
    }

    /// Adds `i`.
    #[inline]
    fn insert(&mut self, i: usize) {
        let (w, b) = IndexSet::at(i);
        self.0[w] |= b;
    }

    /// Removes `i`.
    #[inline]
    fn remove(&mut self, i: usize) {
        let (w, b) = IndexSet::at(i);
        self.0[w] &= !b;
    }

    /// Adds `i` when it is absent, removes it when it is present.
    #[inline]
    fn flip(&mut self, i: usize) {
        let (w, b) = IndexSet::at(i);
        self.0[w] ^= b;
    }
}

/// What the index knows of a thread: the one thing each state means to the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Listed {
    /// In the ready set of its priority.
    Ready,
    /// In the blocked set (the wait queues are the blocked threads, by what they block on).
    Blocked,
    /// In the blocked set and the sending set (blocked in `Send` or `Call`, waiting for
    /// a receiver: a server's `ReplyRecv` looks at these alone).
    Sending,
    /// In neither (exited).
    Neither,
}

/// Ready threads by priority level, and blocked threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ThreadIndex {
    /// `ready[level]`: the ready threads of that priority level.
    ready: [IndexSet; NUM_PRIORITIES as usize],
    /// Bit `level` set when `ready[level]` is not empty.
    levels: u8,
    /// Every blocked thread.
    blocked: IndexSet,
    /// The blocked threads that wait to send.
    sending: IndexSet,
}

// `levels` has one bit per priority.
const _: () = assert!(NUM_PRIORITIES <= 8 && NUM_PRIORITIES.is_power_of_two());

/// The level of `p`, in a form the compiler sees is in range (the same number:
/// `Priority::new` made it below `NUM_PRIORITIES`, a power of two).
#[inline]
fn level(p: Priority) -> usize {
    usize::from(p.level()) % usize::from(NUM_PRIORITIES)
}

impl ThreadIndex {
    /// No thread listed.
    pub(crate) const EMPTY: ThreadIndex = ThreadIndex {
        ready: [IndexSet::EMPTY; NUM_PRIORITIES as usize],
        levels: 0,
        blocked: IndexSet::EMPTY,
        sending: IndexSet::EMPTY,
    };

    /// Lists the thread at arena index `i` (of priority `p`) as `what`, wherever it was.
    #[inline]
    pub(crate) fn set(&mut self, i: usize, p: Priority, what: Listed) {
        let level = level(p);
        // A thread's priority never changes, so it can only be in its own level's set.
        let r = &mut self.ready[level];
        r.remove(i);
        self.blocked.remove(i);
        self.sending.remove(i);
        match what {
            Listed::Ready => r.insert(i),
            Listed::Blocked => self.blocked.insert(i),
            Listed::Sending => {
                self.blocked.insert(i);
                self.sending.insert(i);
            }
            Listed::Neither => {}
        }
        if r.is_empty() {
            self.levels &= !(1 << level);
        } else {
            self.levels |= 1 << level;
        }
    }

    /// The ready sets that are not empty, most urgent first.
    #[inline]
    pub(crate) fn ready_by_urgency(&self) -> impl Iterator<Item = IndexSet> + '_ {
        bits(IndexSet([u32::from(self.levels), 0])).map(|level| self.ready[level])
    }

    /// The blocked threads.
    #[inline]
    pub(crate) fn blocked(&self) -> IndexSet {
        self.blocked
    }

    /// The blocked threads that wait to send.
    #[inline]
    pub(crate) fn sending(&self) -> IndexSet {
        self.sending
    }

    /// Lists the blocked thread at arena index `r` (of priority `pr`), which does not
    /// wait to send, as ready and the ready thread at `t` (of priority `pt`) as
    /// blocked, not sending: the same as `set(r, pr, Ready)` and then `set(t, pt,
    /// Blocked)` for threads so listed, in fewer steps.
    #[inline]
    pub(crate) fn hand_over(&mut self, r: usize, pr: Priority, t: usize, pt: Priority) {
        // r is in the blocked set and t in its level's ready set, so each bit flips.
        self.blocked.flip(r);
        self.blocked.flip(t);
        let (lr, lt) = (level(pr), level(pt));
        self.ready[lt].flip(t);
        if self.ready[lt].is_empty() {
            self.levels &= !(1 << lt);
        }
        self.ready[lr].insert(r);
        self.levels |= 1 << lr;
    }

    /// Whether no thread but the one at arena index `except` (of priority
    /// `except_priority`) is ready at priority `p` or a more urgent one.
    #[inline]
    pub(crate) fn none_ready_up_to(
        &self,
        p: Priority,
        except: usize,
        except_priority: Priority,
    ) -> bool {
        // Levels 0..=p (p < 8, so the shift stays within 16 bits).
        let mut levels = u16::from(self.levels) & ((2u16 << p.level()) - 1);
        let own = level(except_priority);
        if self.ready[own].is_only(except) {
            levels &= !(1 << own);
        }
        levels == 0
    }
}

/// The indices in `set`, in increasing order.
#[inline]
pub(crate) fn bits(set: IndexSet) -> impl Iterator<Item = usize> {
    let [mut low, mut high] = set.0;
    core::iter::from_fn(move || {
        if low != 0 {
            let i = low.trailing_zeros() as usize;
            low &= low - 1;
            Some(i)
        } else if high != 0 {
            let i = high.trailing_zeros() as usize;
            high &= high - 1;
            Some(32 + i)
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{bits, IndexSet, Listed, ThreadIndex};
    use crate::ids::Priority;

    fn p(level: u8) -> Priority {
        Priority::new(level).unwrap()
    }

    /// The set of the bits of `s`.
    fn set(s: u64) -> IndexSet {
        IndexSet([s as u32, (s >> 32) as u32])
    }

    #[test]
    fn threads_move_between_sets_and_levels_follow_their_sets() {
        let mut x = ThreadIndex::EMPTY;
        x.set(3, p(2), Listed::Ready);
        x.set(9, p(0), Listed::Ready);
        x.set(5, p(2), Listed::Blocked);
        assert_eq!(
            x.ready_by_urgency().collect::<Vec<_>>(),
            [set(1 << 9), set(1 << 3)],
            "the most urgent level first"
        );
        assert_eq!(x.blocked(), set(1 << 5));
        x.set(9, p(0), Listed::Blocked);
        x.set(5, p(2), Listed::Ready);
        assert_eq!(
            x.ready_by_urgency().collect::<Vec<_>>(),
            [set(1 << 3 | 1 << 5)]
        );
        assert_eq!(x.blocked(), set(1 << 9));
        x.set(3, p(2), Listed::Neither);
        x.set(5, p(2), Listed::Neither);
        x.set(9, p(0), Listed::Neither);
        assert_eq!(x, ThreadIndex::EMPTY);
    }

    #[test]
    fn none_ready_up_to_sees_every_level_up_to_the_priority_but_the_one_thread() {
        let mut x = ThreadIndex::EMPTY;
        x.set(3, p(2), Listed::Ready);
        assert!(
            x.none_ready_up_to(p(7), 3, p(2)),
            "the excepted thread alone"
        );
        assert!(!x.none_ready_up_to(p(2), 5, p(2)), "3 is ready at 2");
        assert!(x.none_ready_up_to(p(1), 5, p(2)), "2 is less urgent than 1");
        x.set(4, p(2), Listed::Ready);
        assert!(
            !x.none_ready_up_to(p(2), 3, p(2)),
            "4 shares the excepted thread's level"
        );
        x.set(4, p(2), Listed::Neither);
        x.set(6, p(6), Listed::Ready);
        x.set(9, p(0), Listed::Blocked);
        assert!(
            x.none_ready_up_to(p(5), 3, p(2)),
            "blocked threads do not count"
        );
        assert!(!x.none_ready_up_to(p(6), 3, p(2)), "6 is ready at 6");
    }

    #[test]
    fn a_hand_over_lists_the_threads_as_two_sets_would() {
        for (pr, pt) in [(2, 2), (0, 5), (5, 0)] {
            let mut x = ThreadIndex::EMPTY;
            x.set(40, p(pr), Listed::Blocked);
            x.set(3, p(pt), Listed::Ready);
            x.set(7, p(pt), Listed::Blocked);
            let mut y = x;
            x.hand_over(40, p(pr), 3, p(pt));
            y.set(40, p(pr), Listed::Ready);
            y.set(3, p(pt), Listed::Blocked);
            assert_eq!(x, y, "priorities {pr} and {pt}");
            x.set(9, p(pt), Listed::Ready);
            let mut y = x;
            x.hand_over(7, p(pt), 9, p(pt));
            y.set(7, p(pt), Listed::Ready);
            y.set(9, p(pt), Listed::Blocked);
            assert_eq!(x, y, "a level that keeps a thread");
        }
    }

    #[test]
    fn bits_lists_every_set_index_in_order() {
        assert_eq!(bits(IndexSet::EMPTY).count(), 0);
        assert_eq!(
            bits(set(1 | 1 << 7 | 1 << 31 | 1 << 32 | 1 << 63)).collect::<Vec<_>>(),
            [0, 7, 31, 32, 63]
        );
    }
}
