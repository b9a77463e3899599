//! Amber's checkpoint manager: versioned backups of opaque kernel items on NVM, a
//! commit by one global version, and recovery that survives a power cut at any store.
//!
//! The kernel hands the manager *items* ([`ItemId`] below [`MAX_ITEMS`], a kind byte,
//! and bytes) through a [`Source`]; the manager never interprets them. This crate is
//! portable: it reaches NVM only through `amber_nvm::Nvm`, runs its tests on the host,
//! and must never touch hardware, panic on NVM contents, or return a state it knows
//! to be wrong.
//!
//! # How a checkpoint is made durable
//!
//! Every item id has an ORoot on NVM with two backup slots; each 16-byte slot
//! descriptor is tagged with the version it holds and sealed, together with the data
//! it describes, by one CRC. The commit record ([`amber_format::DualRecord`])
//! holds the committed version G, the kernel's metadata, and one bit per item saying
//! which slot holds the item's newest committed copy (the *designated* slot).
//! Checkpoint N+1 writes each dirty item into its *other* slot, tags it N+1, flushes,
//! and then commits by writing the commit record (version N+1, flipped bits). A torn
//! write can therefore only ever hit a slot the committed state does not use, or the
//! commit record, whose two copies keep the previous one. See [`layout`] for the bytes.
//!
//! The designated-slot bitmap is what lets recovery tell a torn, uncommitted
//! descriptor (harmless: it sits in the other slot) from a corrupt committed one (a
//! checksum failure in the designated slot): without it both look alike.
//!
//! # Recovery
//!
//! Recovery reads G and the bitmap, checks every copy (the CRC over its descriptor and
//! data, by reading the data), requires every designated copy to be whole, erases
//! every descriptor tagged above G (it belongs to a checkpoint that never committed,
//! and the next checkpoint reuses its number), and rebuilds the allocator. It only ever writes slots that the committed state
//! does not use, so running it again after a cut in the middle is harmless.
//!
//! When a designated copy is corrupt, recovery rolls back to the version V held by
//! the commit record's other copy (normally G-1) if every item's copy at V is still
//! present and valid, and reports versions (V, G] as lost. Deeper rollbacks are not
//! attempted: the kernel's metadata (tick base) of older versions is not kept, and
//! with two slots per item any item written in the last two checkpoints has no copy
//! of an older state anyway. Otherwise recovery fails with [`CkptError::Corrupt`].
//!
//! # What a checkpoint costs
//!
//! Work and NVM bytes in proportion to what changed: for each dirty item its data and
//! one 16-byte descriptor (a 182-byte Thread record: 198 bytes, 1.088 times), for each
//! deleted item a descriptor, then the 60-byte commit record. Items are found through
//! bitmaps (`set::ItemSet`), not by visiting all [`MAX_ITEMS`] ids, and the CRC is the
//! 16-table one (`checksum`). `kernel/src/ckbench.rs` measures it (issue 4's targets).
//!
//! # Why the allocator is rebuilt, not journaled
//!
//! The allocator's state is a function of the committed tree: the allocated extents
//! are exactly those referenced by valid descriptors, and the free space is their
//! complement. Rebuilding it at boot costs one pass over the 4 KiB ORoot table
//! (recovery reads it anyway) and needs no stores at all, whereas a journal would add
//! stores to every checkpoint, a second crash-consistency protocol to get right and
//! test, and still could not be more correct than the tree it describes. An extent
//! that a cut left allocated but unreferenced is simply free after the rebuild, so
//! the allocator cannot leak across crashes.

#![cfg_attr(not(test), no_std)]

extern crate alloc;

mod checksum;
mod desc;
mod error;
mod inspect;
pub mod layout;
mod manager;
mod recover;
mod set;
mod space;
#[cfg(test)]
mod tests;

pub use error::{CkptError, Problem};
pub use inspect::{inspect, Inspection};
pub use manager::Manager;
pub use space::Usage;

use core::fmt;

/// An item's identity, chosen by the kernel: below [`MAX_ITEMS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ItemId(pub u16);

impl fmt::Display for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item {}", self.0)
    }
}

/// How many item ids the checkpoint area holds (ORoot table entries).
pub const MAX_ITEMS: usize = 128;

/// Bytes of opaque kernel metadata committed with each version (tick base etc.).
pub const META_LEN: usize = 16;

/// Size of the scratch buffer [`Source::bytes`] may fill.
pub const MAX_RECORD: usize = 512;

/// A global checkpoint version. 0 means nothing committed; every commit adds one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u64);

impl Version {
    /// The version after this one.
    pub fn next(self) -> Version {
        Version(self.0 + 1)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// A byte offset on the NVM device (not inside the area).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NvmOffset(pub u32);

/// Where the kernel's items come from when a checkpoint is taken.
pub trait Source {
    /// Every item that exists now, with its kind and whether it changed since the last
    /// committed checkpoint. Items live in the committed state but not reported here
    /// are deleted by the next checkpoint.
    fn items(&self, f: &mut dyn FnMut(ItemId, u8, bool));
    /// The current bytes of item `id`: either written into `scratch` (len >= MAX_RECORD)
    /// or a slice of RAM.
    fn bytes<'a>(&'a self, id: ItemId, scratch: &'a mut [u8]) -> &'a [u8];
}

/// What one checkpoint cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// The version it committed.
    pub version: Version,
    /// Items whose bytes were written.
    pub items_written: u32,
    /// Items deleted (tombstones written).
    pub items_deleted: u32,
    /// Item bytes written.
    pub data_bytes: u64,
    /// Every byte stored, including descriptors and the commit record.
    pub nvm_bytes: u64,
    /// Number of NVM stores issued.
    pub stores: u32,
}

/// What recovery found and did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The version the commit record named.
    pub committed: Version,
    /// The version the manager resumed from: below `committed` when corruption forced
    /// a rollback.
    pub resumed: Version,
    /// `(V, G)`: versions V+1..=G were lost to a rollback.
    pub lost_versions: Option<(Version, Version)>,
    /// Descriptors erased because they belonged to a checkpoint that never committed
    /// (or to versions lost in a rollback).
    pub erased_uncommitted: u32,
    /// Copies found corrupt (checksum or structure): the designated copies that forced
    /// a rollback, and older copies that were erased because they could not be trusted.
    pub corrupt_copies: u32,
}
