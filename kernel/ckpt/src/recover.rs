//! Recovery at boot: find the committed state, check it copy by copy, fall back to a
//! twin or one version back past corruption, clear what no kept state uses, rebuild
//! the allocator.
//!
//! It runs in two steps. [`plan`] reads everything and decides, writing nothing
//! (`inspect` shows the same plan); `Manager::recover` then carries it out. Its writes
//! are (a) when rolling back, clearing the newer commit record copy, so that the older
//! one is read; (b) erasing descriptors in slots the resumed state does not use
//! (uncommitted copies, unreadable ones, contradicting ones); (c) rewriting a
//! designated copy that is bad from its intact twin. None of them touches a copy the
//! resumed state uses, each may be torn and repeated, and a second recovery after a
//! cut reaches the same state. It must never pick a copy it has not checked: every
//! copy's CRC covers its descriptor and its data, so `read_table` reads the data of
//! every copy (both slots) and decodes a copy that fails as `Invalid`.
//!
//! # What a single bad byte costs
//!
//! At rest after a complete checkpoint G, every live item either has a twin (it was
//! clean at G, so the checkpoint twinned it after the commit) or was written at G (its
//! other slot holds its copy at G-1). So a bad designated copy is restored from its
//! twin (nothing lost), or, for an item written at G, recovery goes back to G-1, whose
//! commit record is the other copy and whose copies are all intact (version G lost,
//! and said so). A bad byte in the newest commit record copy resumes G-1 from the
//! other copy, and is reported; one in the older copy or in a slot no kept state uses
//! is reported and cleared. Two bad copies that leave neither G nor G-1 whole stop
//! recovery with both named ([`CkptError::Corrupt`]).

use crate::checksum::Digest;
use crate::desc::Copy;
use crate::error::{BadCopy, CkptError, Damage, Fallback, Finding, Problem};
use crate::layout::{
    blocks_for, holds_format_2, CommitPayload, Extent, Layout, COMMIT_PAYLOAD, COMMIT_SLOT_LEN,
    DESC_LEN, FORMATTING, FORMAT_MARKER_LEN, OROOT_LEN, OROOT_TABLE_LEN,
};
use crate::manager::Manager;
use crate::set::ItemSet;
use crate::space::Space;
use crate::{ItemId, RecoveryReport, MAX_ITEMS};
use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use amber_format::{Newest, Region};
use amber_nvm::{Nvm, NvmError};

/// Reads and decodes the whole ORoot table, and checks every copy: a copy's data is
/// read back for its CRC, so every `Data` returned is whole.
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

/// What the format marker says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Marker {
    /// Zero: no format in progress.
    Clear,
    /// [`FORMATTING`]: a format was cut short.
    Formatting,
    /// Anything else: a torn marker store or corruption (ignored).
    Damaged,
}

pub(crate) fn read_marker(nvm: &mut impl Nvm, layout: &Layout) -> Result<Marker, NvmError> {
    let mut m = [0u8; FORMAT_MARKER_LEN];
    nvm.read(layout.format_marker().0, &mut m)?;
    Ok(if m == FORMATTING {
        Marker::Formatting
    } else if m == [0; FORMAT_MARKER_LEN] {
        Marker::Clear
    } else {
        Marker::Damaged
    })
}

/// How a committed state gets item i's copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    /// The item is not live in this state: it needs no copy.
    None,
    /// Its designated copy.
    Designated,
    /// Its designated copy is bad (`BadCopy`); its twin in the other slot stands in.
    Twin(BadCopy),
}

/// One committed state checked copy by copy: every live item's designated copy (or
/// its twin) must be a copy tagged at most the committed version (whole:
/// `read_table` checked its CRC), and no two picked copies may share blocks.
pub(crate) struct StateCheck {
    pub commit: CommitPayload,
    /// By item id, all `MAX_ITEMS` of them. On the heap: a recovery holds several
    /// states and plans at once, and their picks on the stack made `Manager::recover`'s
    /// frame 23 KiB (the ESP32-C3's kernel stack is its largest single user of SRAM).
    pub picks: Box<[Pick]>,
    /// Live items with neither a good designated copy nor an intact twin.
    pub bad: Vec<BadCopy>,
    /// The extents of the picked copies, claimed.
    pub space: Space,
}

impl StateCheck {
    fn damage(&self) -> Option<Damage> {
        self.bad.first().map(|&first| Damage {
            version: self.commit.version,
            first,
            count: self.bad.len() as u32,
        })
    }
}

pub(crate) fn check_state(
    layout: &Layout,
    copies: &[[Copy; 2]],
    commit: &CommitPayload,
) -> StateCheck {
    let mut space = Space::new(layout.blocks);
    let mut picks = vec![Pick::None; MAX_ITEMS].into_boxed_slice();
    let mut bad = Vec::new();
    for id in commit.live.iter() {
        let d = commit.slot_of(id);
        let [dc, oc] = [
            copies[id as usize][d as usize],
            copies[id as usize][1 - d as usize],
        ];
        let problem = match dc {
            Copy::Data { twin: true, .. } => Some(Problem::TwinDesignated),
            Copy::Data { version, .. } if version > commit.version => {
                Some(Problem::NewerThanCommit { version })
            }
            Copy::Data { .. } if dc.extent().is_some_and(|e| !space.claim(e)) => {
                Some(Problem::ExtentOverlap)
            }
            Copy::Data { .. } => None,
            Copy::Empty | Copy::Erased => Some(Problem::NoCopy),
            Copy::Invalid(p) => Some(p),
        };
        picks[id as usize] = match problem {
            None => Pick::Designated,
            Some(problem) => {
                let b = BadCopy {
                    item: ItemId(id),
                    slot: d,
                    version: dc.version(),
                    problem,
                };
                let twin_ok = matches!(oc, Copy::Data { twin: true, version, .. } if version <= commit.version)
                    && oc.extent().is_none_or(|e| space.claim(e));
                if twin_ok {
                    Pick::Twin(b)
                } else {
                    bad.push(b);
                    Pick::None
                }
            }
        };
    }
    StateCheck {
        commit: *commit,
        picks,
        bad,
        space,
    }
}

/// What recovery does to one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Erase the descriptor: it belongs to a checkpoint that never committed (or to
    /// a version a rollback gave up).
    EraseUncommitted,
    /// Erase the descriptor, for the reason the finding gives.
    Erase(Finding),
    /// Rewrite the designated copy from its twin, whose fields these are.
    Repair {
        version: crate::Version,
        kind: u8,
        len: u32,
        from: Extent,
    },
}

/// Recovery's decision, made without writing.
pub(crate) struct Plan {
    pub layout: Layout,
    /// The state recovery resumes (the newest committed one, or the one before it).
    pub resumed: StateCheck,
    /// The commit record copy holding it.
    pub newest: Newest<COMMIT_PAYLOAD>,
    /// The live items of the other commit record copy that stays (the fallback of
    /// the resumed state), empty when none stays.
    pub older_live: ItemSet,
    /// Rolling back: the commit record slot (holding the newer version) to clear.
    pub clear_commit_slot: Option<u32>,
    /// Every descriptor as read.
    pub copies: Vec<[Copy; 2]>,
    /// Writes to make, by (item, slot), in item order.
    pub actions: Vec<(u16, u8, Action)>,
    pub report: RecoveryReport,
}

/// Reads the area and decides how to recover it (see the file documentation).
pub(crate) fn plan(nvm: &mut impl Nvm, area: Region) -> Result<Plan, CkptError> {
    let layout = Layout::new(area)?;
    let marker = read_marker(nvm, &layout)?;
    let mut raw = [0u8; 2 * COMMIT_SLOT_LEN];
    nvm.read(layout.commit_slot(0).0, &mut raw)?;
    let blank = raw.iter().all(|&x| x == 0) || raw.iter().all(|&x| x == 0xFF);
    if marker == Marker::Formatting || blank {
        return Err(CkptError::NotFormatted);
    }
    let record = layout.commit_record();
    let Some(newest) = record.read(nvm)? else {
        return Err(if holds_format_2(&raw) {
            CkptError::FormatMismatch {
                found_format: crate::layout::CKPT_FORMAT_2,
                layout_matches: true,
            }
        } else {
            CkptError::CommitRecordCorrupt
        });
    };
    let commit = CommitPayload::decode(&newest.payload, &layout)?;
    let other = 1 - newest.slot;
    let older = match record.read_slot(nvm, other)? {
        Some((seq, payload)) => CommitPayload::decode(&payload, &layout)
            .ok()
            .filter(|c| c.version < commit.version && seq < newest.seq)
            .map(|c| (seq, payload, c)),
        None => None,
    };
    // Not valid and not cleared (all zero): torn or corrupt.
    let other_bytes =
        &raw[other as usize * COMMIT_SLOT_LEN..(other as usize + 1) * COMMIT_SLOT_LEN];
    let other_damaged =
        record.read_slot(nvm, other)?.is_none() && other_bytes.iter().any(|&x| x != 0);
    let mut findings = Vec::new();
    if marker == Marker::Damaged {
        findings.push(Finding::FormatMarkerDamaged);
    }
    if other_damaged {
        findings.push(Finding::CommitSlotDamaged {
            slot: other,
            resumed: commit.version,
        });
    }
    let copies = read_table(nvm, &layout)?;
    let check = check_state(&layout, &copies, &commit);
    let mut report = RecoveryReport {
        committed: commit.version,
        resumed: commit.version,
        ..RecoveryReport::default()
    };
    let (resumed, newest, older_live, clear_commit_slot) = match check.damage() {
        None => (
            check,
            newest,
            older.map_or(ItemSet::EMPTY, |o| o.2.live),
            None,
        ),
        Some(damage) => {
            let Some((seq, payload, oc)) = older else {
                return Err(CkptError::Corrupt {
                    newest: damage,
                    older: if other_damaged {
                        Fallback::RecordDamaged { slot: other }
                    } else {
                        Fallback::None
                    },
                });
            };
            let older_check = check_state(&layout, &copies, &oc);
            if let Some(d) = older_check.damage() {
                return Err(CkptError::Corrupt {
                    newest: damage,
                    older: Fallback::Incomplete(d),
                });
            }
            findings.push(Finding::RolledBack {
                from: commit.version,
                to: oc.version,
                because: damage.first,
            });
            report.resumed = oc.version;
            report.lost_versions = Some((oc.version, commit.version));
            let kept = Newest {
                seq,
                slot: other,
                payload,
            };
            (older_check, kept, ItemSet::EMPTY, Some(newest.slot))
        }
    };
    let rolled_back_for = findings.iter().find_map(|f| match *f {
        Finding::RolledBack { because, .. } => Some((because.item, because.slot)),
        _ => None,
    });
    let mut resumed = resumed;
    let r = resumed.commit;
    let mut actions = Vec::new();
    for (i, slots) in copies.iter().enumerate() {
        let id = i as u16;
        let d = r.slot_of(id) as usize;
        let pick = resumed.picks[i];
        // The slot the resumed state takes the item from, and the copy there.
        let used = match pick {
            Pick::None => None,
            Pick::Designated => Some(d),
            Pick::Twin(bad) => {
                if let Copy::Data {
                    version,
                    kind,
                    len,
                    extent: from,
                    ..
                } = slots[1 - d]
                {
                    actions.push((
                        id,
                        d as u8,
                        Action::Repair {
                            version,
                            kind,
                            len,
                            from,
                        },
                    ));
                }
                findings.push(Finding::RepairedFromTwin {
                    bad,
                    twin_slot: 1 - d as u8,
                    twin_version: slots[1 - d].version().unwrap_or_default(),
                });
                Some(1 - d)
            }
        };
        let reference = used.and_then(|u| slots[u].version());
        for (s, &c) in slots.iter().enumerate() {
            if Some(s) == used || (matches!(pick, Pick::Twin(_)) && s == d) {
                continue;
            }
            let (item, slot) = (ItemId(id), s as u8);
            let action = match c {
                Copy::Empty | Copy::Erased => None,
                // The copy a rollback gave up is erased; it was reported as the cause.
                Copy::Invalid(_) if rolled_back_for == Some((item, slot)) => {
                    Some(Action::EraseUncommitted)
                }
                Copy::Invalid(problem) => Some(Action::Erase(Finding::Cleared {
                    item,
                    slot,
                    problem,
                })),
                Copy::Data { version, .. } if version > r.version => {
                    report.erased_uncommitted += 1;
                    Some(Action::EraseUncommitted)
                }
                Copy::Data { version, twin, .. }
                    if reference
                        .is_some_and(|p| if twin { version != p } else { version >= p }) =>
                {
                    Some(Action::Erase(Finding::Contradicts {
                        item,
                        slot,
                        version,
                    }))
                }
                Copy::Data { .. } if c.extent().is_some_and(|e| !resumed.space.claim(e)) => {
                    Some(Action::Erase(Finding::Overlaps { item, slot }))
                }
                // A twin, an older copy (a kept commit may use it), or a copy of an
                // item no kept state has: the next checkpoint erases or reuses it.
                Copy::Data { .. } => None,
            };
            if let Some(a) = action {
                if let Action::Erase(f) = a {
                    findings.push(f);
                }
                actions.push((id, slot, a));
            }
        }
    }
    report.findings = findings;
    Ok(Plan {
        layout,
        resumed,
        newest,
        older_live,
        clear_commit_slot,
        copies,
        actions,
        report,
    })
}

impl Manager {
    /// Recovers the committed state of the area (see the crate documentation).
    pub fn recover(
        nvm: &mut impl Nvm,
        area: Region,
    ) -> Result<(Manager, RecoveryReport), CkptError> {
        let Plan {
            layout,
            resumed,
            newest,
            older_live,
            clear_commit_slot,
            mut copies,
            actions,
            report,
        } = plan(nvm, area)?;
        let StateCheck {
            commit, mut space, ..
        } = resumed;
        if let Some(slot) = clear_commit_slot {
            // Torn or whole, the older copy is read after this.
            nvm.write(layout.commit_slot(slot).0, &[0; COMMIT_SLOT_LEN])?;
            nvm.flush()?;
        }
        let mut wrote = false;
        for &(id, slot, action) in &actions {
            let at = layout.desc(id, slot).0;
            match action {
                Action::EraseUncommitted | Action::Erase(_) => {
                    nvm.write(at, &Copy::Erased.encode(id))?;
                    copies[id as usize][slot as usize] = Copy::Erased;
                }
                Action::Repair {
                    version,
                    kind,
                    len,
                    from,
                } => {
                    let need = blocks_for(len as usize);
                    let to = match need {
                        0 => Extent::NONE,
                        _ => space.alloc(need).ok_or(CkptError::NoSpace {
                            need: need * crate::layout::BLOCK as u64,
                        })?,
                    };
                    let (copy, desc) = Copy::sealed(id, version, kind, to, len, false, |digest| {
                        copy_data(nvm, &layout, from, to, len, digest)
                    })?;
                    nvm.write(at, &desc)?;
                    copies[id as usize][slot as usize] = copy;
                }
            }
            wrote = true;
        }
        if wrote {
            nvm.flush()?;
        }
        Ok((
            Manager::from_parts(layout, commit, older_live, newest, copies, space),
            report,
        ))
    }
}

/// Copies `len` bytes from extent `from` to extent `to` (a repair: the bad copy's
/// blocks are not trusted, so the data goes to a new extent before its descriptor is
/// written; cut anywhere, the slot is bad again and the twin intact), feeding them
/// into `digest`.
fn copy_data(
    nvm: &mut impl Nvm,
    layout: &Layout,
    from: Extent,
    to: Extent,
    len: u32,
    digest: &mut Digest,
) -> Result<(), NvmError> {
    let mut buf = [0u8; 256];
    let mut done = 0u32;
    while done < len {
        let n = (len - done).min(buf.len() as u32);
        let chunk = &mut buf[..n as usize];
        nvm.read(layout.block(from.first).0 + done, chunk)?;
        nvm.write(layout.block(to.first).0 + done, chunk)?;
        digest.update(chunk);
        done += n;
    }
    Ok(())
}
