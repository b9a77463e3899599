//! The CapGroup object: a process, holding its capability slots, its own memory regions
//! and its one thread. The root CapGroup (arena entry 0) has no thread and holds a cap
//! to every task's CapGroup. This file must never decide rights; see cap.rs.

use core::fmt;

use crate::{cap::Cap, ids::ThreadId, spec::RegionSpec, MAX_NAME, MAX_REGIONS, SLOTS};

/// A task name, copied into the tree at boot (1..=16 bytes of UTF-8).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TaskName {
    bytes: [u8; MAX_NAME],
    len: u8,
}

impl TaskName {
    /// The root's name.
    pub(crate) const ROOT: TaskName = TaskName {
        bytes: *b"root\0\0\0\0\0\0\0\0\0\0\0\0",
        len: 4,
    };

    /// Copies `s`; `None` when empty or longer than [`MAX_NAME`].
    pub fn new(s: &str) -> Option<TaskName> {
        if s.is_empty() || s.len() > MAX_NAME {
            return None;
        }
        let mut bytes = [0; MAX_NAME];
        bytes[..s.len()].copy_from_slice(s.as_bytes());
        Some(TaskName {
            bytes,
            len: s.len() as u8,
        })
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        let b = self.bytes.get(..usize::from(self.len)).unwrap_or(&[]);
        core::str::from_utf8(b).unwrap_or("?")
    }
}

impl fmt::Debug for TaskName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for TaskName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A process.
#[derive(Debug)]
pub(crate) struct CapGroup {
    /// Name, for the console and fault reports.
    pub name: TaskName,
    /// Capability slots; `None` = empty.
    pub slots: [Option<Cap>; SLOTS],
    /// The task's thread; `None` only for the root.
    pub thread: Option<ThreadId>,
    /// The task's own memory (code, data/stack, devices), fixed at boot.
    pub regions: [Option<RegionSpec>; MAX_REGIONS],
}

impl CapGroup {
    /// An empty group.
    pub(crate) fn new(name: TaskName) -> CapGroup {
        CapGroup {
            name,
            slots: [None; SLOTS],
            thread: None,
            regions: [None; MAX_REGIONS],
        }
    }

    /// Number of own (boot) regions.
    pub(crate) fn own_regions(&self) -> usize {
        self.regions.iter().flatten().count()
    }
}
