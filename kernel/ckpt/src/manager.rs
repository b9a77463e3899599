//! The checkpoint manager in RAM: mirrors of every descriptor, the allocator, and the
//! two operations that write the area (format and checkpoint).
//!
//! The one rule this file keeps: nothing a kept commit record uses is overwritten.
//! Before the commit, copies go to the slot that does not hold the item's committed
//! copy (an extent is reused only by that same slot; a replaced extent is freed only
//! after the commit). After the commit, the record holds the new version and the one
//! before it; only then are twins written (into slots neither uses) and the copies of
//! items neither has erased.
//!
//! A checkpoint costs in proportion to what changed, not to [`MAX_ITEMS`]: the
//! source's report is folded into bitmaps ([`ItemSet`]) of items to write, and the
//! items to twin or to erase are kept as bitmaps too; only those ids are visited.

use crate::desc::Copy;
use crate::error::CkptError;
use crate::layout::{
    blocks_for, CommitPayload, Extent, Layout, COMMIT_SLOT_LEN, FORMATTING, FORMAT_MARKER_LEN,
    MAX_DATA_LEN, MAX_VERSION, OROOT_TABLE_LEN,
};
use crate::set::ItemSet;
use crate::space::{Space, Usage};
use crate::{CheckpointStats, ItemId, NvmOffset, Source, Version, MAX_ITEMS, MAX_RECORD, META_LEN};
use alloc::vec;
use alloc::vec::Vec;
use amber_format::{Newest, Region};
use amber_nvm::{Nvm, NvmError};

/// Whether `c` is a twin of the copy tagged `version`.
fn is_twin_of(c: &Copy, version: Version) -> bool {
    matches!(*c, Copy::Data { twin: true, version: v, .. } if v == version)
}

/// Counts what reaches NVM through it.
pub(crate) struct Counted<'n, N: Nvm> {
    pub nvm: &'n mut N,
    pub stores: u32,
    pub bytes: u64,
}

impl<'n, N: Nvm> Counted<'n, N> {
    pub fn new(nvm: &'n mut N) -> Self {
        Counted {
            nvm,
            stores: 0,
            bytes: 0,
        }
    }

    pub fn write(&mut self, at: NvmOffset, data: &[u8]) -> Result<(), NvmError> {
        self.stores += 1;
        self.bytes += data.len() as u64;
        self.nvm.write(at.0, data)
    }
}

/// The checkpoint manager. See the crate documentation for the protocol.
pub struct Manager {
    pub(crate) layout: Layout,
    /// The committed version, its metadata, and its designated and live bitmaps.
    pub(crate) commit: CommitPayload,
    /// The live items of the version before it (the commit record's other copy),
    /// empty when the record keeps no older version.
    prev_live: ItemSet,
    /// The commit record's newest copy (where the next one must not go).
    pub(crate) newest: Newest<{ crate::layout::COMMIT_PAYLOAD }>,
    /// Mirror of every descriptor on NVM: `copies[id][slot]`.
    pub(crate) copies: Vec<[Copy; 2]>,
    pub(crate) space: Space,
    /// The kind of each live item's committed copy.
    kinds: [u8; MAX_ITEMS],
    /// Live items whose other slot holds no twin of their committed copy.
    untwinned: ItemSet,
    /// Items with anything in either slot (not empty or erased).
    stored: ItemSet,
    scratch: Vec<u8>,
    /// Extents to free once the checkpoint in progress commits (capacity MAX_ITEMS,
    /// so a checkpoint never allocates RAM).
    replaced: Vec<Extent>,
    /// An NVM error stopped a checkpoint half-way; the mirrors may not match NVM.
    poisoned: bool,
}

impl Manager {
    pub(crate) fn from_parts(
        layout: Layout,
        commit: CommitPayload,
        prev_live: ItemSet,
        newest: Newest<{ crate::layout::COMMIT_PAYLOAD }>,
        copies: Vec<[Copy; 2]>,
        space: Space,
    ) -> Manager {
        let mut kinds = [0u8; MAX_ITEMS];
        let mut untwinned = ItemSet::EMPTY;
        let mut stored = ItemSet::EMPTY;
        for (i, slots) in copies.iter().enumerate() {
            let id = i as u16;
            if slots.iter().any(Copy::is_stored) {
                stored.insert(id);
            }
            let d = commit.slot_of(id) as usize;
            if let (true, Copy::Data { kind, version, .. }) = (commit.live.contains(id), slots[d]) {
                kinds[i] = kind;
                if !is_twin_of(&slots[1 - d], version) {
                    untwinned.insert(id);
                }
            }
        }
        Manager {
            layout,
            commit,
            prev_live,
            newest,
            copies,
            space,
            kinds,
            untwinned,
            stored,
            scratch: vec![0; MAX_RECORD],
            replaced: Vec::with_capacity(MAX_ITEMS),
            poisoned: false,
        }
    }

    /// Formats an empty checkpoint area, committed version 0, and returns its manager.
    ///
    /// Crash-safe: an eight-byte marker says "formatting" from before the old commit
    /// record is cleared until after the new one is written, so a cut anywhere leaves
    /// an area that `recover` reports as not formatted (or, cut while a marker store
    /// tears, the old or the new area, whole).
    pub fn format(nvm: &mut impl Nvm, area: Region) -> Result<Manager, CkptError> {
        let layout = Layout::new(area)?;
        nvm.write(layout.format_marker().0, &FORMATTING)?;
        nvm.flush()?;
        nvm.write(layout.commit_slot(0).0, &[0; 2 * COMMIT_SLOT_LEN])?;
        nvm.flush()?;
        nvm.write(layout.oroot_table().0, &[0; OROOT_TABLE_LEN])?;
        nvm.flush()?;
        let commit = CommitPayload::EMPTY;
        let newest = layout
            .commit_record()
            .write(nvm, None, &commit.encode(&layout))?;
        nvm.write(layout.format_marker().0, &[0; FORMAT_MARKER_LEN])?;
        nvm.flush()?;
        Ok(Manager::from_parts(
            layout,
            commit,
            ItemSet::EMPTY,
            newest,
            vec![[Copy::Empty; 2]; MAX_ITEMS],
            Space::new(layout.blocks),
        ))
    }

    /// The committed version (after recovery: the version resumed from).
    pub fn committed(&self) -> Version {
        self.commit.version
    }

    /// The metadata committed with the committed version.
    pub fn meta(&self) -> [u8; META_LEN] {
        self.commit.meta
    }

    /// The area this manager owns.
    pub fn area(&self) -> Region {
        self.layout.area
    }

    /// The committed state: every item that exists, with its kind and length.
    pub fn live_items(&self) -> impl Iterator<Item = (ItemId, u8, u32)> + '_ {
        self.commit
            .live
            .iter()
            .filter_map(|id| match self.committed_copy(ItemId(id)) {
                Some(Copy::Data { kind, len, .. }) => Some((ItemId(id), kind, len)),
                _ => None,
            })
    }

    /// Live items whose committed copy has no twin yet (the next checkpoint writes
    /// one for each that is still clean).
    pub fn untwinned(&self) -> usize {
        self.untwinned.iter().count()
    }

    /// The committed copy of `id` (descriptor), if the item exists.
    fn committed_copy(&self, id: ItemId) -> Option<Copy> {
        let slots = self.copies.get(id.0 as usize)?;
        match slots[self.commit.slot_of(id.0) as usize] {
            c @ Copy::Data { .. } if self.commit.live.contains(id.0) => Some(c),
            _ => None,
        }
    }

    /// Reads the committed bytes of `id` into `buf` and checks their CRC. Returns the
    /// item's length.
    pub fn read_item(
        &self,
        nvm: &mut impl Nvm,
        id: ItemId,
        buf: &mut [u8],
    ) -> Result<usize, CkptError> {
        let slot = self.commit.slot_of(id.0);
        let Some(
            copy @ Copy::Data {
                version,
                len,
                extent,
                ..
            },
        ) = self.committed_copy(id)
        else {
            return Err(CkptError::NoSuchItem { item: id });
        };
        let out = buf
            .get_mut(..len as usize)
            .ok_or(CkptError::BufferTooSmall { item: id, len })?;
        if len > 0 {
            nvm.read(self.layout.block(extent.first).0, out)?;
        }
        if !copy.seals(id.0, out) {
            return Err(CkptError::ReadBack {
                bad: crate::BadCopy {
                    item: id,
                    slot,
                    version: Some(version),
                    problem: crate::Problem::DataChecksum,
                },
            });
        }
        Ok(len as usize)
    }

    /// Allocator usage.
    pub fn usage(&self) -> Usage {
        self.space.usage()
    }

    /// Takes checkpoint N+1 (N = committed) of everything `src` reports, with `meta`.
    ///
    /// Dirty, new or re-kinded items are written; items gone from `src` are no longer
    /// live; clean items cost nothing, except once: the first checkpoint at which an
    /// item is clean writes its twin, after the commit. On `NoSpace` nothing is
    /// committed and the manager stays usable. On an NVM error the manager refuses
    /// further checkpoints ([`CkptError::Interrupted`]): the device must be recovered.
    pub fn checkpoint(
        &mut self,
        nvm: &mut impl Nvm,
        src: &impl Source,
        meta: [u8; META_LEN],
    ) -> Result<CheckpointStats, CkptError> {
        if self.poisoned {
            return Err(CkptError::Interrupted);
        }
        if self.commit.version.0 >= MAX_VERSION {
            return Err(CkptError::VersionsExhausted);
        }
        // What exists now, and what must be written: new, dirty or re-kinded items.
        let mut present = ItemSet::EMPTY;
        let mut write = ItemSet::EMPTY;
        let mut kinds = [0u8; MAX_ITEMS];
        let mut bad = None;
        let (live, live_kinds) = (&self.commit.live, &self.kinds);
        src.items(&mut |id, kind, dirty| {
            let i = id.0 as usize;
            if i >= MAX_ITEMS {
                bad = Some(id.0);
                return;
            }
            present.insert(id.0);
            kinds[i] = kind;
            if dirty || !live.contains(id.0) || live_kinds[i] != kind {
                write.insert(id.0);
            }
        });
        if let Some(id) = bad {
            return Err(CkptError::BadItem { id });
        }
        let deleted = self.commit.live.minus(&present).iter().count() as u32;
        self.poisoned = true;
        let mut out = Counted::new(nvm);
        let mut scratch = core::mem::take(&mut self.scratch);
        let result = self
            .write_and_commit(&mut out, src, &write, &present, &kinds, meta, &mut scratch)
            .and_then(|mut stats| {
                stats.items_deleted = deleted;
                self.after_commit(&mut out, src, &write, &mut scratch, &mut stats)?;
                Ok(stats)
            });
        self.scratch = scratch;
        match result {
            Ok(mut stats) => {
                self.poisoned = false;
                stats.stores = out.stores;
                stats.nvm_bytes = out.bytes;
                Ok(stats)
            }
            Err(e @ (CkptError::NoSpace { .. } | CkptError::TooLarge { .. })) => {
                // `write_and_commit` undid its writes; the mirrors match NVM.
                self.poisoned = false;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_and_commit<N: Nvm>(
        &mut self,
        out: &mut Counted<'_, N>,
        src: &impl Source,
        write: &ItemSet,
        present: &ItemSet,
        kinds: &[u8; MAX_ITEMS],
        meta: [u8; META_LEN],
        scratch: &mut [u8],
    ) -> Result<CheckpointStats, CkptError> {
        let next = self.commit.version.next();
        let mut stats = CheckpointStats {
            version: next,
            ..CheckpointStats::default()
        };
        // Items whose other slot now holds a copy of `next` (their designated bit flips).
        let mut written = ItemSet::EMPTY;
        self.replaced.clear();
        for id in write.iter() {
            let i = id as usize;
            let o = 1 - self.commit.slot_of(id) as usize;
            let old_other = self.copies[i][o].extent();
            let bytes = src.bytes(ItemId(id), scratch);
            let len = match u32::try_from(bytes.len()) {
                Ok(len) if len <= MAX_DATA_LEN => len,
                _ => {
                    self.undo(out, &written)?;
                    return Err(CkptError::TooLarge {
                        item: ItemId(id),
                        len: bytes.len(),
                    });
                }
            };
            let need = blocks_for(bytes.len());
            let (extent, replaced) = match old_other {
                Some(e) if e.blocks as u64 == need => (e, None),
                _ if need == 0 => (Extent::NONE, old_other),
                _ => match self.space.alloc(need) {
                    Some(e) => (e, old_other),
                    None => {
                        self.undo(out, &written)?;
                        return Err(if need > self.layout.blocks as u64 {
                            CkptError::TooLarge {
                                item: ItemId(id),
                                len: bytes.len(),
                            }
                        } else {
                            CkptError::NoSpace {
                                need: need * crate::layout::BLOCK as u64,
                            }
                        });
                    }
                },
            };
            // From here on the slot's old copy is gone (its data is being overwritten
            // in place, or its descriptor is about to be).
            written.insert(id);
            if let Some(e) = replaced {
                self.replaced.push(e);
            }
            self.copies[i][o] = Copy::Invalid(crate::Problem::Checksum);
            let (copy, desc) = Copy::data(id, next, kinds[i], extent, bytes, false);
            if len > 0 {
                out.write(self.layout.block(extent.first), bytes)?;
            }
            out.write(self.layout.desc(id, o as u8), &desc)?;
            self.copies[i][o] = copy;
            stats.items_written += 1;
            stats.data_bytes += len as u64;
        }
        out.nvm.flush()?;
        let commit = CommitPayload {
            version: next,
            meta,
            designated: self.commit.designated.xor(&written),
            live: *present,
        };
        let payload = commit.encode(&self.layout);
        out.stores += 1;
        out.bytes += COMMIT_SLOT_LEN as u64;
        self.newest = self
            .layout
            .commit_record()
            .write(out.nvm, Some(&self.newest), &payload)?;
        self.prev_live = self.commit.live;
        self.commit = commit;
        // Right for every live item: clean ones were reported with their old kind.
        self.kinds = *kinds;
        for e in self.replaced.drain(..) {
            self.space.free(e);
        }
        self.stored = self.stored.union(&written);
        // Written items have their previous copy, not a twin, in the other slot.
        self.untwinned = self.untwinned.union(&written).and(&self.commit.live);
        Ok(stats)
    }

    /// After the commit of `N+1` (the record now keeps N+1 and N): twins for the items
    /// that are clean at N+1 and have none, then erasure of every item live at
    /// neither. Neither version uses a slot written here. The slots are marked
    /// unreadable in the mirror before they are written, so that an NVM error leaves
    /// the mirror no more trusting than NVM.
    fn after_commit<N: Nvm>(
        &mut self,
        out: &mut Counted<'_, N>,
        src: &impl Source,
        written: &ItemSet,
        scratch: &mut [u8],
        stats: &mut CheckpointStats,
    ) -> Result<(), CkptError> {
        let twin = self.untwinned.minus(written);
        for id in twin.iter() {
            let i = id as usize;
            let d = self.commit.slot_of(id) as usize;
            let o = 1 - d;
            let Copy::Data {
                version: v,
                kind,
                len,
                ..
            } = self.copies[i][d]
            else {
                continue;
            };
            let bytes = src.bytes(ItemId(id), scratch);
            if bytes.len() != len as usize {
                // The source reported the item clean but its bytes changed length: it
                // is not the committed copy, so it must not be its twin either.
                stats.twins_skipped += 1;
                continue;
            }
            let need = blocks_for(bytes.len());
            let old = self.copies[i][o].extent();
            let extent = match old {
                Some(e) if e.blocks as u64 == need => e,
                _ if need == 0 => Extent::NONE,
                _ => match self.space.alloc(need) {
                    Some(e) => e,
                    None => {
                        stats.twins_skipped += 1;
                        continue;
                    }
                },
            };
            self.copies[i][o] = Copy::Invalid(crate::Problem::Checksum);
            let (copy, desc) = Copy::data(id, v, kind, extent, bytes, true);
            if len > 0 {
                out.write(self.layout.block(extent.first), bytes)?;
            }
            out.write(self.layout.desc(id, o as u8), &desc)?;
            self.copies[i][o] = copy;
            if let Some(e) = old.filter(|&e| e != extent) {
                self.space.free(e);
            }
            self.stored.insert(id);
            self.untwinned.remove(id);
            stats.twins_written += 1;
            stats.twin_bytes += len as u64;
        }
        let gone = self.stored.minus(&self.commit.live).minus(&self.prev_live);
        for id in gone.iter() {
            for s in 0..2 {
                let c = self.copies[id as usize][s];
                if !c.is_stored() {
                    continue;
                }
                self.copies[id as usize][s] = Copy::Invalid(crate::Problem::Checksum);
                out.write(self.layout.desc(id, s as u8), &Copy::Erased.encode(id))?;
                self.copies[id as usize][s] = Copy::Erased;
                if let Some(e) = c.extent() {
                    self.space.free(e);
                }
            }
            self.stored.remove(id);
            stats.items_erased += 1;
        }
        if !(twin.is_empty() && gone.is_empty()) {
            out.nvm.flush()?;
        }
        Ok(())
    }
    /// Takes back the uncommitted copies of a checkpoint that ran out of space: erases
    /// their descriptors (they are in slots the committed state does not use) and
    /// frees every extent they or the copies they replaced owned.
    fn undo<N: Nvm>(
        &mut self,
        out: &mut Counted<'_, N>,
        written: &ItemSet,
    ) -> Result<(), CkptError> {
        for id in written.iter() {
            let o = 1 - self.commit.slot_of(id) as usize;
            out.write(self.layout.desc(id, o as u8), &Copy::Erased.encode(id))?;
            if let Some(e) = self.copies[id as usize][o].extent() {
                self.space.free(e);
            }
            self.copies[id as usize][o] = Copy::Erased;
            if self.commit.live.contains(id) {
                // A twin it held is gone.
                self.untwinned.insert(id);
            }
        }
        for e in self.replaced.drain(..) {
            self.space.free(e);
        }
        out.nvm.flush()?;
        Ok(())
    }
}
