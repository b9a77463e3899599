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
//! it describes, by one CRC. The commit record ([`amber_format::DualRecord`]) holds
//! the committed version G, the kernel's metadata, one bit per item saying whether it
//! exists at G (the *live* bitmap) and one bit per item saying which slot holds its
//! newest committed copy (the *designated* slot). Checkpoint N+1 writes each dirty
//! item into its *other* slot, tags it N+1, flushes, and then commits by writing the
//! commit record (version N+1, flipped bits, the new live set). A torn write can
//! therefore only ever hit a slot the committed state does not use, or the commit
//! record, whose two copies keep the previous one. See [`layout`] for the bytes.
//!
//! The bitmaps are what let recovery tell a torn, uncommitted copy (harmless: it sits
//! in the other slot) from a corrupt committed one (a checksum failure in the
//! designated slot of a live item), and garbage in the slots of an item that does not
//! exist from a lost item: without them these look alike.
//!
//! # Redundancy: twins, and one version back
//!
//! A corrupt byte anywhere in the area must cost at most the newest version, and say
//! so. A copy written at G has a fallback already: the item's copy at G-1, in its
//! other slot, which the commit record's other copy (G-1) designates. What has none
//! is a copy that G and G-1 share, the copy of an item that did not change at G: a
//! bad byte in it would break both. So right after committing N+1, the checkpoint
//! writes a *twin* of every item that is clean at N+1 and has none (the same bytes and
//! version, marked as a twin) into its other slot, which held the item's copy at
//! N-1 and which neither kept version uses any more. At rest, every live item then
//! has a twin or was written in the newest checkpoint, and recovery takes a bad
//! designated copy from its twin (rewriting it; nothing lost) or rolls back to G-1
//! (version G lost, reported). See `recover` for every case.
//!
//! Why twins, not parity or more versions: TreeSLS names multiple versions,
//! replication and erasure coding as unbuilt future work. More versions do not help
//! an item that has not changed for many checkpoints: every version has the same one
//! copy. Parity over a group of extents would need a read-modify-write of the parity
//! on every checkpoint (as many bytes written as the data, plus reads, and a parity
//! update that is itself torn by a cut), so it writes no less than a twin and adds a
//! second crash-consistency protocol. A twin costs no space the two slots did not
//! already reserve (only items written once, never rewritten, gain an extent), is
//! written once per version that outlives one checkpoint (an item rewritten every
//! checkpoint never gets one), after the commit (so a power failure delays the
//! commit by nothing), and is a plain copy that the existing recovery checks like
//! any other.
//!
//! # Recovery
//!
//! Recovery reads G and the bitmaps, checks every copy (the CRC over its descriptor
//! and data, by reading the data), requires every live item's designated copy or its
//! twin to be whole, erases every descriptor tagged above G (it belongs to a
//! checkpoint that never committed, and the next checkpoint reuses its number) and
//! every unreadable one no kept state uses, and rebuilds the allocator. Each finding
//! is reported in words ([`Finding`]). When neither G nor G-1 is whole it fails with
//! [`CkptError::Corrupt`], naming the bad copy of each; rollback goes back one
//! version at most, since the kernel's metadata of older versions is not kept.
//!
//! # What a checkpoint costs
//!
//! Work and NVM bytes in proportion to what changed: for each dirty item its data and
//! one 16-byte descriptor (a 182-byte Thread record: 198 bytes, 1.088 times), then
//! the 76-byte commit record; after it, for each item clean for the first time, its
//! twin (its data and a descriptor), and for each item deleted two checkpoints ago,
//! two erased descriptors. Items are found through bitmaps (`set::ItemSet`), not by
//! visiting all [`MAX_ITEMS`] ids, and the CRC is the 16-table one (`checksum`).
//! `kernel/src/ckbench.rs` measures it (issue 4's targets, issue 17's redundancy).
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

use alloc::vec::Vec;
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

pub use error::{BadCopy, BadField, CkptError, Damage, Fallback, Finding, Problem};
pub use inspect::{inspect, CopyPlace, Inspection};
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
    /// Items that are no longer live (nothing is written for them before the commit).
    pub items_deleted: u32,
    /// Item bytes written before the commit.
    pub data_bytes: u64,
    /// Twins written after the commit (items clean for the first time).
    pub twins_written: u32,
    /// Item bytes of those twins.
    pub twin_bytes: u64,
    /// Items that should have got a twin and did not (no free extent, or the source's
    /// bytes did not match the committed copy): they stay without one for now.
    pub twins_skipped: u32,
    /// Items live in neither kept version whose slots were erased.
    pub items_erased: u32,
    /// Every byte stored, including descriptors, the commit record and twins.
    pub nvm_bytes: u64,
    /// Number of NVM stores issued.
    pub stores: u32,
}

/// What recovery found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    /// Everything else recovery found and dealt with, in the order found: damaged
    /// commit record copies or format marker, a rollback, copies restored from their
    /// twins, unreadable or contradicting copies erased.
    pub findings: Vec<Finding>,
}
