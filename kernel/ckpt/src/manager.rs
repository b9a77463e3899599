//! The checkpoint manager in RAM: mirrors of every descriptor, the allocator, and the
//! two operations that write the area (format and checkpoint).
//!
//! The one rule this file keeps: before the commit record is written, nothing the
//! committed state uses is overwritten. Copies go to the slot that does not hold the
//! item's committed copy; an extent is reused only by that same slot; a replaced
//! extent is freed only after the commit.
//!
//! A checkpoint costs in proportion to what changed, not to [`MAX_ITEMS`]: the
//! source's report is folded into bitmaps ([`ItemSet`]) of items to write, and the
//! deleted items are the live ones it did not report; only those ids are visited.

use crate::desc::Copy;
use crate::error::CkptError;
use crate::layout::{
    blocks_for, CommitPayload, Extent, Layout, COMMIT_SLOT_LEN, FORMATTING, MAX_DATA_LEN,
    MAX_VERSION, OROOT_TABLE_LEN,
};
use crate::set::ItemSet;
use crate::space::{Space, Usage};
use crate::{CheckpointStats, ItemId, NvmOffset, Source, Version, MAX_ITEMS, MAX_RECORD, META_LEN};
use alloc::vec;
use alloc::vec::Vec;
use amber_format::{Newest, Region};
use amber_nvm::{Nvm, NvmError};

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
    /// The committed version and its metadata and designated-slot bitmap.
    pub(crate) commit: CommitPayload,
    /// The commit record's newest copy (where the next one must not go).
    pub(crate) newest: Newest<{ crate::layout::COMMIT_PAYLOAD }>,
    /// Mirror of every descriptor on NVM: `copies[id][slot]`.
    pub(crate) copies: Vec<[Copy; 2]>,
    pub(crate) space: Space,
    /// The items whose committed copy is data (derived from `copies` and `commit`).
    live: ItemSet,
    /// The kind of each live item's committed copy.
    kinds: [u8; MAX_ITEMS],
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
        newest: Newest<{ crate::layout::COMMIT_PAYLOAD }>,
        copies: Vec<[Copy; 2]>,
        space: Space,
    ) -> Manager {
        let mut live = ItemSet::EMPTY;
        let mut kinds = [0u8; MAX_ITEMS];
        for (i, slots) in copies.iter().enumerate() {
            if let Copy::Data { kind, .. } = slots[commit.slot_of(i as u16) as usize] {
                live.insert(i as u16);
                kinds[i] = kind;
            }
        }
        Manager {
            layout,
            commit,
            newest,
            copies,
            space,
            live,
            kinds,
            scratch: vec![0; MAX_RECORD],
            replaced: Vec::with_capacity(MAX_ITEMS),
            poisoned: false,
        }
    }

    /// Formats an empty checkpoint area, committed version 0, and returns its manager.
    ///
    /// Crash-safe: a one-byte marker (which a cut cannot tear) says "formatting" from
    /// before the old commit record is cleared until after the new one is written, so
    /// a cut anywhere leaves an area that `recover` reports as not formatted.
    pub fn format(nvm: &mut impl Nvm, area: Region) -> Result<Manager, CkptError> {
        let layout = Layout::new(area)?;
        nvm.write(layout.format_marker().0, &[FORMATTING])?;
        nvm.flush()?;
        nvm.write(layout.commit_slot(0).0, &[0; 2 * COMMIT_SLOT_LEN])?;
        nvm.flush()?;
        nvm.write(layout.oroot_table().0, &[0; OROOT_TABLE_LEN])?;
        nvm.flush()?;
        let commit = CommitPayload {
            version: Version(0),
            meta: [0; META_LEN],
            designated: ItemSet::EMPTY,
        };
        let newest = layout
            .commit_record()
            .write(nvm, None, &commit.encode(&layout))?;
        nvm.write(layout.format_marker().0, &[0])?;
        nvm.flush()?;
        Ok(Manager::from_parts(
            layout,
            commit,
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
        self.live
            .iter()
            .filter_map(|id| match self.committed_copy(ItemId(id)) {
                Some(Copy::Data { kind, len, .. }) => Some((ItemId(id), kind, len)),
                _ => None,
            })
    }

    /// The committed copy of `id` (descriptor), if the item exists.
    fn committed_copy(&self, id: ItemId) -> Option<Copy> {
        let slots = self.copies.get(id.0 as usize)?;
        match slots[self.commit.slot_of(id.0) as usize] {
            c @ Copy::Data { .. } => Some(c),
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
            return Err(CkptError::Corrupt {
                item: id,
                slot,
                version,
                problem: crate::Problem::DataChecksum,
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
    /// Dirty, new or re-kinded items are written; items gone from `src` get a
    /// tombstone; clean items cost nothing. On `NoSpace` nothing is committed and the
    /// manager stays usable. On an NVM error the manager refuses further checkpoints
    /// ([`CkptError::Interrupted`]): the device must be recovered.
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
        let (live, live_kinds) = (&self.live, &self.kinds);
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
        let deleted = self.live.minus(&present);
        self.poisoned = true;
        let mut out = Counted::new(nvm);
        let mut scratch = core::mem::take(&mut self.scratch);
        let result =
            self.write_and_commit(&mut out, src, &write, &deleted, &kinds, meta, &mut scratch);
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
        deleted: &ItemSet,
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
        for id in write.union(deleted).iter() {
            let i = id as usize;
            let o = 1 - self.commit.slot_of(id) as usize;
            let old_other = self.copies[i][o].extent();
            if !write.contains(id) {
                // Deleted: a tombstone in the other slot.
                written.insert(id);
                if let Some(e) = old_other {
                    self.replaced.push(e);
                }
                let copy = Copy::Tombstone { version: next };
                self.copies[i][o] = Copy::Invalid(crate::Problem::Checksum);
                out.write(self.layout.desc(id, o as u8), &copy.encode(id))?;
                self.copies[i][o] = copy;
                stats.items_deleted += 1;
                continue;
            }
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
            let (copy, desc) = Copy::data(id, next, kinds[i], extent, bytes);
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
        };
        let payload = commit.encode(&self.layout);
        out.stores += 1;
        out.bytes += COMMIT_SLOT_LEN as u64;
        self.newest = self
            .layout
            .commit_record()
            .write(out.nvm, Some(&self.newest), &payload)?;
        self.commit = commit;
        self.live = self.live.minus(deleted).union(write);
        // Right for every live item: clean ones were reported with their old kind.
        self.kinds = *kinds;
        for e in self.replaced.drain(..) {
            self.space.free(e);
        }
        Ok(stats)
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
        }
        for e in self.replaced.drain(..) {
            self.space.free(e);
        }
        out.nvm.flush()?;
        Ok(())
    }
}
