//! Small deliberate types for the numbers the kernel passes around: object ids, thread
//! ids, capability slots and priorities. Each must never be confused with a bare
//! integer; `Priority` deliberately has no `Ord`.

use crate::{abi::Error, MAX_OBJECTS, NUM_PRIORITIES, SLOTS};

/// The index of an object in the kernel's arena. Stable for the object's lifetime, and
/// the only way objects refer to each other (so the tree can be checkpointed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjId(u16);

impl ObjId {
    /// The root CapGroup is always arena entry 0.
    pub const ROOT: ObjId = ObjId(0);

    /// The id for arena index `i`; `None` past the arena.
    pub fn from_index(i: usize) -> Option<ObjId> {
        if i < MAX_OBJECTS {
            u16::try_from(i).ok().map(ObjId)
        } else {
            None
        }
    }

    /// The arena index, always `< MAX_OBJECTS`.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The arena index, in a form the compiler sees is in range (the same number:
    /// `from_index` made it below `MAX_OBJECTS`, a power of two), so indexing the
    /// arena with it needs no bounds check.
    #[inline]
    pub(crate) fn slot(self) -> usize {
        self.index() % MAX_OBJECTS
    }
}

const _: () = assert!(MAX_OBJECTS.is_power_of_two());

/// A thread, named by the arena index of its Thread object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ThreadId(pub(crate) ObjId);

impl ThreadId {
    /// The arena index of the thread (what `TaskInfo` reports as the thread id).
    pub fn index(self) -> usize {
        self.0.index()
    }

    /// The thread's object id.
    pub fn obj(self) -> ObjId {
        self.0
    }
}

/// A capability slot index in a CapGroup, always `< SLOTS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot(u8);

impl Slot {
    /// Checks a slot number a task passed: `BadSlot` unless it is below [`SLOTS`].
    pub fn from_user(raw: u32) -> Result<Slot, Error> {
        match usize::try_from(raw) {
            Ok(i) if i < SLOTS => Ok(Slot(i as u8)),
            _ => Err(Error::BadSlot),
        }
    }

    /// The slot for index `i`; `None` when `i >= SLOTS`.
    pub fn new(i: usize) -> Option<Slot> {
        if i < SLOTS {
            Some(Slot(i as u8))
        } else {
            None
        }
    }

    /// The index, always `< SLOTS`.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The slot number as a task sees it.
    pub fn raw(self) -> u32 {
        u32::from(self.0)
    }
}

/// A scheduling priority: a SMALLER number is MORE urgent (0 runs before 1).
///
/// No `Ord` on purpose: compare with [`Priority::is_more_urgent_than`], so that nobody
/// reads "numerically higher" as "more important".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Priority(u8);

impl Priority {
    /// A priority from its level; `None` unless `level < NUM_PRIORITIES`.
    pub fn new(level: u8) -> Option<Priority> {
        if level < NUM_PRIORITIES {
            Some(Priority(level))
        } else {
            None
        }
    }

    /// True when `self` must run before `other`.
    pub fn is_more_urgent_than(self, other: Priority) -> bool {
        self.0 < other.0
    }

    /// The level number (0 = most urgent).
    pub fn level(self) -> u8 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::{Priority, Slot};
    use crate::{abi::Error, SLOTS};

    #[test]
    fn slot_numbers_at_or_past_the_slot_count_are_bad_slots() {
        assert_eq!(Slot::from_user(SLOTS as u32), Err(Error::BadSlot));
        assert_eq!(Slot::from_user(u32::MAX), Err(Error::BadSlot));
        assert_eq!(
            Slot::from_user(SLOTS as u32 - 1).map(Slot::index),
            Ok(SLOTS - 1)
        );
    }

    #[test]
    fn smaller_priority_numbers_are_more_urgent() {
        let (p0, p1) = (Priority::new(0).unwrap(), Priority::new(1).unwrap());
        assert!(p0.is_more_urgent_than(p1));
        assert!(!p1.is_more_urgent_than(p0));
        assert!(
            !p0.is_more_urgent_than(p0),
            "equal priorities share round robin"
        );
        assert_eq!(Priority::new(8), None);
    }
}
