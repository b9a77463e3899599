//! Recovery at boot: find the committed state, check it, roll back past corruption
//! when an older complete state exists, erase what never committed, rebuild the
//! allocator.
//!
//! Recovery writes only (a) descriptors in slots the committed state does not use and
//! (b) when rolling back, the newer commit record copy, which it clears so that the
//! older one is read. Either write may be torn and repeated: a second recovery after a
//! cut reaches the same state. It must never pick a copy it has not checked: every
//! copy's CRC covers its descriptor and its data, so `read_table` reads the data of
//! every copy (both slots) and decodes a copy that fails as `Invalid`.

use crate::desc::Copy;
use crate::error::{CkptError, Problem};
use crate::layout::{
    CommitPayload, Layout, COMMIT_SLOT_LEN, DESC_LEN, FORMATTING, OROOT_LEN, OROOT_TABLE_LEN,
};
use crate::manager::Manager;
use crate::space::Space;
use crate::{ItemId, RecoveryReport, Version, MAX_ITEMS};
use alloc::vec;
use alloc::vec::Vec;
use amber_format::{Newest, Region};
use amber_nvm::{Nvm, NvmError};

/// One copy the committed state needs that cannot be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bad {
    pub item: ItemId,
    pub slot: u8,
    pub version: Version,
    pub problem: Problem,
}

impl Bad {
    pub fn error(&self) -> CkptError {
        CkptError::Corrupt {
            item: self.item,
            slot: self.slot,
            version: self.version,
            problem: self.problem,
        }
    }
}

/// Reads and decodes the whole ORoot table, and checks every copy: a data copy's
/// data is read back for its CRC, so every `Data` returned is whole.
pub(crate) fn read_table(nvm: &mut impl Nvm, layout: &Layout) -> Result<Vec<[Copy; 2]>, NvmError> {
    let mut raw = vec![0u8; OROOT_TABLE_LEN];
    nvm.read(layout.oroot_table().0, &mut raw)?;
    let mut buf = [0u8; 256];
    let mut table = Vec::with_capacity(MAX_ITEMS);
    for (id, r) in raw.chunks_exact(OROOT_LEN).enumerate() {
        let mut slots = [Copy::Empty; 2];
        for (s, slot) in slots.iter_mut().enumerate() {
            let mut d = [0u8; DESC_LEN];
            d.copy_from_slice(&r[s * DESC_LEN..(s + 1) * DESC_LEN]);
            *slot = Copy::decode(&d, id as u16, layout, |digest, extent, len| {
                let mut at = layout.block(extent.first).0;
                let mut left = len as usize;
                while left > 0 {
                    let n = left.min(buf.len());
                    nvm.read(at, &mut buf[..n])?;
                    digest.update(&buf[..n]);
                    at += n as u32;
                    left -= n;
                }
                Ok(())
            })?;
        }
        table.push(slots);
    }
    Ok(table)
}

/// Whether the area is not formatted: its commit record's bytes are blank (all 0x00
/// or all 0xFF: never formatted), or the format marker says a format was cut short.
pub(crate) fn not_formatted(nvm: &mut impl Nvm, layout: &Layout) -> Result<bool, NvmError> {
    let mut marker = [0u8; 1];
    nvm.read(layout.format_marker().0, &mut marker)?;
    if marker[0] == FORMATTING {
        return Ok(true);
    }
    let mut b = [0u8; 2 * COMMIT_SLOT_LEN];
    nvm.read(layout.commit_slot(0).0, &mut b)?;
    Ok(b.iter().all(|&x| x == 0) || b.iter().all(|&x| x == 0xFF))
}

/// The committed state `commit` checked copy by copy: every designated copy must be
/// empty (the item never existed), a tombstone or data tagged at most the committed
/// version (whole: `read_table` checked its CRC), and no two data copies may share
/// blocks.
pub(crate) struct StateCheck {
    /// The extents of the designated copies, claimed.
    pub space: Space,
    pub bad: Vec<Bad>,
}

pub(crate) fn check_state(
    layout: &Layout,
    copies: &[[Copy; 2]],
    commit: &CommitPayload,
) -> StateCheck {
    let mut space = Space::new(layout.blocks);
    let mut bad = Vec::new();
    for (i, slots) in copies.iter().enumerate() {
        let id = i as u16;
        let slot = commit.slot_of(id);
        let copy = slots[slot as usize];
        let version = copy.version().unwrap_or(Version(0));
        let problem = match copy {
            Copy::Empty => None,
            Copy::Erased => Some(Problem::NoCopy),
            Copy::Invalid(p) => Some(p),
            Copy::Tombstone { .. } | Copy::Data { .. } if version > commit.version => {
                Some(Problem::NewerThanCommit { version })
            }
            Copy::Tombstone { .. } => None,
            Copy::Data { .. } if copy.extent().is_some_and(|e| !space.claim(e)) => {
                Some(Problem::ExtentOverlap)
            }
            Copy::Data { .. } => None,
        };
        if let Some(problem) = problem {
            bad.push(Bad {
                item: ItemId(id),
                slot,
                version,
                problem,
            });
        }
    }
    StateCheck { space, bad }
}

/// What to do with the copy in the slot the committed state does not use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OtherSlot {
    /// Nothing to do: empty, erased, unreadable (torn), or a valid older copy.
    Keep,
    /// Tagged above the committed version: it never committed (or was rolled back).
    Uncommitted,
    /// Valid but contradicts the committed copy (not older than it).
    Contradicts,
}

pub(crate) fn classify_other(other: &Copy, designated: &Copy, committed: Version) -> OtherSlot {
    match other.version() {
        Some(v) if v > committed => OtherSlot::Uncommitted,
        Some(v) if v >= designated.version().unwrap_or(Version(0)) => OtherSlot::Contradicts,
        _ => OtherSlot::Keep,
    }
}

impl Manager {
    /// Recovers the committed state of the area (see the crate documentation).
    pub fn recover(
        nvm: &mut impl Nvm,
        area: Region,
    ) -> Result<(Manager, RecoveryReport), CkptError> {
        let layout = Layout::new(area)?;
        if not_formatted(nvm, &layout)? {
            return Err(CkptError::NotFormatted);
        }
        let record = layout.commit_record();
        let Some(mut newest) = record.read(nvm)? else {
            return Err(CkptError::CommitRecordCorrupt);
        };
        let mut commit = CommitPayload::decode(&newest.payload, &layout)?;
        let copies = read_table(nvm, &layout)?;
        let g = commit.version;
        let mut report = RecoveryReport {
            committed: g,
            resumed: g,
            ..RecoveryReport::default()
        };
        let mut check = check_state(&layout, &copies, &commit);
        if let Some(first) = check.bad.first().copied() {
            report.corrupt_copies += check.bad.len() as u32;
            // The only older state whose metadata is known: the commit record's other copy.
            let other = 1 - newest.slot;
            let older = match record.read_slot(nvm, other)? {
                Some((seq, payload)) => CommitPayload::decode(&payload, &layout)
                    .ok()
                    .filter(|c| c.version < g)
                    .map(|c| (seq, payload, c)),
                None => None,
            };
            let Some((seq, payload, older)) = older else {
                return Err(first.error());
            };
            let older_check = check_state(&layout, &copies, &older);
            if !older_check.bad.is_empty() {
                return Err(first.error());
            }
            log::warn!(
                "checkpoint {g}: {} of {first:?}; rolling back to {}",
                first.problem,
                older.version
            );
            // Clear the newer commit copy; torn or whole, the older one is read after.
            nvm.write(layout.commit_slot(newest.slot).0, &[0; COMMIT_SLOT_LEN])?;
            nvm.flush()?;
            newest = Newest {
                seq,
                slot: other,
                payload,
            };
            commit = older;
            check = older_check;
            report.resumed = older.version;
            report.lost_versions = Some((older.version, g));
        }
        let mut copies = copies;
        let mut space = check.space;
        let mut erased_any = false;
        for (i, slots) in copies.iter_mut().enumerate() {
            let id = i as u16;
            let d = commit.slot_of(id) as usize;
            let o = 1 - d;
            let erase = match classify_other(&slots[o], &slots[d], commit.version) {
                OtherSlot::Uncommitted => {
                    report.erased_uncommitted += 1;
                    true
                }
                OtherSlot::Contradicts => {
                    report.corrupt_copies += 1;
                    true
                }
                OtherSlot::Keep => match slots[o].extent() {
                    Some(e) if !space.claim(e) => {
                        report.corrupt_copies += 1;
                        true
                    }
                    _ => false,
                },
            };
            if erase {
                nvm.write(layout.desc(id, o as u8).0, &Copy::Erased.encode(id))?;
                slots[o] = Copy::Erased;
                erased_any = true;
            }
        }
        if erased_any {
            nvm.flush()?;
        }
        Ok((
            Manager::from_parts(layout, commit, newest, copies, space),
            report,
        ))
    }
}
