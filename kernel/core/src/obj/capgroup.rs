//! The CapGroup object: a process, holding its capability slots, its own memory regions
//! and its one thread. The root CapGroup (arena entry 0) has no thread and holds a cap
//! to every task's CapGroup. This file must never decide rights; see `ops/caps.rs`.
//!
//! It also holds how a CapGroup is checkpointed: [`CapGroup::encode`] and
//! [`CapGroup::decode`], with the record layout in the doc of [`CapGroup`].

use core::fmt;

use super::cap::{Cap, CAP_RECORD_LEN};
use crate::{
    abi::ObjKind,
    ids::ThreadId,
    record::{Reader, RecordVersion, RestoreError, Writer},
    spec::RegionSpec,
    MAX_NAME, MAX_REGIONS, SLOTS,
};

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
///
/// # Checkpoint record (version 1, 269 bytes)
///
/// | offset | size | meaning |
/// |--------|------|---------|
/// | 0 | 2 | header: version 1, kind `CapGroup` (1) |
/// | 2 | 16 | `name` bytes (UTF-8), zero padded |
/// | 18 | 1 | name length, 1..=16 |
/// | 19 | 2 | `thread` (ObjId, 0xFFFF = none: the root) |
/// | 21 | 8 × 11 | `regions`: present (u8 0/1), base (u32), len (u32), rights (u8, READ/WRITE/EXEC only), kind (u8: 0 Checkpointed, 1 Eternal, 2 HeapManaged, 3 Device); absent = 11 zero bytes |
/// | 109 | 16 × 10 | `slots`, see `Cap::encode_slot`: obj (u16, 0xFFFF = empty), rights (u8), badge (u32), parent group (u16, 0xFFFF = original), parent slot (u8) |
///
/// Nothing in a CapGroup is derived. The root CapGroup (entry 0) is an ordinary
/// record.
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// The layout version of CapGroup records.
const VERSION: RecordVersion = RecordVersion(1);
/// Bytes per region in a CapGroup record.
const REGION_RECORD_LEN: usize = 11;
/// Bytes in a CapGroup record.
pub(crate) const RECORD_LEN: usize =
    2 + MAX_NAME + 1 + 2 + MAX_REGIONS * REGION_RECORD_LEN + SLOTS * CAP_RECORD_LEN;

impl CapGroup {
    /// Writes the record (see the table on [`CapGroup`]).
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.header(VERSION, ObjKind::CapGroup);
        w.bytes(&self.name.bytes);
        w.u8(self.name.len);
        w.opt_obj(self.thread.map(ThreadId::obj));
        for r in &self.regions {
            match r {
                Some(r) => {
                    w.u8(1);
                    w.u32(r.base);
                    w.u32(r.len);
                    w.rights(r.rights);
                    w.mem_kind(r.kind);
                }
                None => w.zeros(REGION_RECORD_LEN),
            }
        }
        for c in &self.slots {
            Cap::encode_slot(c.as_ref(), w);
        }
    }

    /// Reads a record written by [`CapGroup::encode`], checking every field on its
    /// own (names, region ranges and rights, slot numbers); whether the capabilities
    /// fit the rest of the tree is checked later.
    pub(crate) fn decode(r: &mut Reader) -> Result<CapGroup, RestoreError> {
        r.header(VERSION, ObjKind::CapGroup)?;
        let mut bytes = [0u8; MAX_NAME];
        bytes.copy_from_slice(r.bytes(MAX_NAME)?);
        let len = r.u8()?;
        let used = bytes
            .get(..usize::from(len))
            .filter(|u| !u.is_empty())
            .ok_or(r.bad_value("name length"))?;
        let s = core::str::from_utf8(used).map_err(|_| r.bad_value("name"))?;
        let name = TaskName::new(s).ok_or(r.bad_value("name"))?;
        if name.bytes != bytes {
            return Err(r.bad_value("name padding"));
        }
        let thread = r.opt_obj()?.map(ThreadId);
        let mut group = CapGroup::new(name);
        group.thread = thread;
        for slot in group.regions.iter_mut() {
            if !r.bool("region present")? {
                r.zeros(REGION_RECORD_LEN - 1, "absent region")?;
                continue;
            }
            let region = RegionSpec {
                base: r.u32()?,
                len: r.u32()?,
                rights: r.rights("region rights")?,
                kind: r.mem_kind()?,
            };
            if !region.is_valid() {
                return Err(r.bad_value("region"));
            }
            *slot = Some(region);
        }
        for slot in group.slots.iter_mut() {
            *slot = Cap::decode_slot(r)?;
        }
        Ok(group)
    }
}
