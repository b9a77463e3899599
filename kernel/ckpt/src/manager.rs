//! The checkpoint manager in RAM: mirrors of every descriptor, the allocator, and the
//! two operations that write the area (format and checkpoint).
//!
//! The one rule this file keeps: before the commit record is written, nothing the
//! committed state uses is overwritten. Copies go to the slot that does not hold the
//! item's committed copy; an extent is reused only by that same slot; a replaced
//! extent is freed only after the commit.

use crate::desc::Copy;
use crate::error::CkptError;
use crate::layout::{
    blocks_for, CommitPayload, Extent, Layout, COMMIT_SLOT_LEN, FORMATTING, OROOT_TABLE_LEN,
};
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
    scratch: Vec<u8>,
    /// An NVM error stopped a checkpoint half-way; the mirrors may not match NVM.
    poisoned: bool,
}

/// One item written or deleted by the checkpoint in progress.
struct Written {
    id: u16,
    /// The extent the replaced copy in the same slot owned, when the new copy does not
    /// reuse it: freed after the commit.
    replaced: Option<Extent>,
}

impl Manager {
    pub(crate) fn from_parts(
        layout: Layout,
        commit: CommitPayload,
        newest: Newest<{ crate::layout::COMMIT_PAYLOAD }>,
        copies: Vec<[Copy; 2]>,
        space: Space,
    ) -> Manager {
        Manager {
            layout,
            commit,
            newest,
            copies,
            space,
            scratch: vec![0; MAX_RECORD],
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
            designated: 0,
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
        self.copies.iter().enumerate().filter_map(|(id, slots)| {
            match slots[self.commit.slot_of(id as u16) as usize] {
                Copy::Data { kind, len, .. } => Some((ItemId(id as u16), kind, len)),
                _ => None,
            }
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
        let Some(Copy::Data {
            version,
            len,
            extent,
            crc,
            ..
        }) = self.committed_copy(id)
        else {
            return Err(CkptError::NoSuchItem { item: id });
        };
        let out = buf
            .get_mut(..len as usize)
            .ok_or(CkptError::BufferTooSmall { item: id, len })?;
        if len > 0 {
            nvm.read(self.layout.block(extent.first).0, out)?;
        }
        if amber_format::crc32(out) != crc {
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
        // What exists now: kind and dirtiness per id.
        let mut present: [Option<(u8, bool)>; MAX_ITEMS] = [None; MAX_ITEMS];
        let mut bad = None;
        src.items(
            &mut |id, kind, dirty| match present.get_mut(id.0 as usize) {
                Some(p) => *p = Some((kind, dirty)),
                None => bad = Some(id.0),
            },
        );
        if let Some(id) = bad {
            return Err(CkptError::BadItem { id });
        }
        self.poisoned = true;
        let mut out = Counted::new(nvm);
        let mut scratch = core::mem::take(&mut self.scratch);
        let result = self.write_and_commit(&mut out, src, &present, meta, &mut scratch);
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

    fn write_and_commit<N: Nvm>(
        &mut self,
        out: &mut Counted<'_, N>,
        src: &impl Source,
        present: &[Option<(u8, bool)>; MAX_ITEMS],
        meta: [u8; META_LEN],
        scratch: &mut [u8],
    ) -> Result<CheckpointStats, CkptError> {
        let next = self.commit.version.next();
        let mut stats = CheckpointStats {
            version: next,
            ..CheckpointStats::default()
        };
        let mut written: Vec<Written> = Vec::new();
        for (i, now) in present.iter().enumerate() {
            let id = i as u16;
            let d = self.commit.slot_of(id) as usize;
            let o = 1 - d;
            let committed_kind = match self.copies[i][d] {
                Copy::Data { kind, .. } => Some(kind),
                _ => None,
            };
            let old_other = self.copies[i][o].extent();
            match *now {
                Some((kind, dirty)) if dirty || committed_kind != Some(kind) => {
                    let bytes = src.bytes(ItemId(id), scratch);
                    let Ok(len) = u32::try_from(bytes.len()) else {
                        self.undo(out, &written)?;
                        return Err(CkptError::TooLarge {
                            item: ItemId(id),
                            len: bytes.len(),
                        });
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
                    // From here on the slot's old copy is gone (its data is being
                    // overwritten in place, or its descriptor is about to be).
                    written.push(Written { id, replaced });
                    self.copies[i][o] = Copy::Invalid(crate::Problem::DescriptorChecksum);
                    if len > 0 {
                        out.write(self.layout.block(extent.first), bytes)?;
                    }
                    let copy = Copy::Data {
                        version: next,
                        kind,
                        len,
                        extent,
                        crc: amber_format::crc32(bytes),
                    };
                    out.write(self.layout.desc(id, o as u8), &copy.encode(id))?;
                    self.copies[i][o] = copy;
                    stats.items_written += 1;
                    stats.data_bytes += len as u64;
                }
                None if committed_kind.is_some() => {
                    written.push(Written {
                        id,
                        replaced: old_other,
                    });
                    let copy = Copy::Tombstone { version: next };
                    self.copies[i][o] = Copy::Invalid(crate::Problem::DescriptorChecksum);
                    out.write(self.layout.desc(id, o as u8), &copy.encode(id))?;
                    self.copies[i][o] = copy;
                    stats.items_deleted += 1;
                }
                _ => {}
            }
        }
        out.nvm.flush()?;
        let mut commit = CommitPayload {
            version: next,
            meta,
            designated: self.commit.designated,
        };
        for w in &written {
            commit.designated ^= 1 << w.id;
        }
        let payload = commit.encode(&self.layout);
        out.stores += 1;
        out.bytes += COMMIT_SLOT_LEN as u64;
        self.newest = self
            .layout
            .commit_record()
            .write(out.nvm, Some(&self.newest), &payload)?;
        self.commit = commit;
        for w in &written {
            if let Some(e) = w.replaced {
                self.space.free(e);
            }
        }
        Ok(stats)
    }

    /// Takes back the uncommitted copies of a checkpoint that ran out of space: erases
    /// their descriptors (they are in slots the committed state does not use) and
    /// frees every extent they or the copies they replaced owned.
    fn undo<N: Nvm>(
        &mut self,
        out: &mut Counted<'_, N>,
        written: &[Written],
    ) -> Result<(), CkptError> {
        for w in written {
            let o = 1 - self.commit.slot_of(w.id) as usize;
            out.write(self.layout.desc(w.id, o as u8), &Copy::Erased.encode(w.id))?;
            if let Some(e) = self.copies[w.id as usize][o].extent() {
                self.space.free(e);
            }
            if let Some(e) = w.replaced {
                self.space.free(e);
            }
            self.copies[w.id as usize][o] = Copy::Erased;
        }
        out.nvm.flush()?;
        Ok(())
    }
}
