//! vNV-Heap: a virtually non-volatile heap for intermittently powered devices.
//!
//! Objects live on NVM (any [`amber_nvm::Nvm`]) and are cached in a caller-provided RAM
//! buffer. Applications reach an object only through a guard ([`Ref`], [`RefMut`])
//! borrowed from its [`Handle`]; the guard pins the object in the cache, and a
//! [`RefMut`] marks it dirty. The heap keeps the dirty bytes under
//! [`Config::max_dirty_bytes`], so [`VnvHeap::persist`] has a worst-case cost known from
//! the configuration alone ([`wcec_bound`]). Persist is crash-safe: a power cut at any
//! store leaves the previous persisted state intact (see [`format`] for the on-NVM
//! layout and versioning rule). This crate never allocates, never panics on user input
//! and never touches a device directly.
//!
//! Files: `format.rs` (on-NVM bytes), `config.rs` (configuration, metadata sizes, cost
//! bound), `heap.rs` (the API, objects' life, open and persist), `cache.rs` (cache
//! headers, eviction and write-back, gathered writes), `queue.rs` (a FIFO on the
//! heap), `handle.rs` (handles and ids), `guard.rs` (guards), `bits.rs` (RAM
//! bitmaps), `error.rs`. Dependencies point down to `amber-nvm` only.
//!
//! # What reaches the storage
//!
//! A load reads the object's bytes (one read: its location comes with the handle);
//! a write-back writes its bytes (one write, gathered with neighbours whose copies
//! follow on NVM), and nothing else unless the object was created since the last
//! persist, when its description goes with it. [`VnvHeap::alloc`] and
//! [`VnvHeap::free`] write nothing while the object fits the cache: a new object is a
//! dirty one, and a free leaves its dead description for the persist. Persist writes
//! the dirty objects, those descriptions and the commit record (with the bitmap of
//! which copy of each object is current), and reads nothing.
//!
//! # Split heaps, for a heap service
//!
//! [`VnvHeap::new_split`] and [`VnvHeap::open_split`] take the RAM metadata (bitmaps, a
//! 4-byte id/state header per 8-byte arena unit and an 8-byte description per id,
//! [`Config::split_metadata_bytes`]) in a buffer of its own, and an arena that holds object bytes only, so that the arena
//! can be memory shared with a client that writes it. A service pins objects by id
//! ([`VnvHeap::pin`], [`VnvHeap::unpin`]) and hands out their offsets in the arena;
//! persist writes write-pinned objects too; after the metadata was restored and the
//! arena lost, [`VnvHeap::reload`] reads every resident object back in place.
//!
//! # Getting objects back after a reopen
//!
//! Every object has an [`ObjectId`] that is stable across persist and [`VnvHeap::open`].
//! A handle gives it up with [`Handle::into_id`] (without freeing the object), and
//! [`VnvHeap::handle_from_id`] (or [`VnvHeap::array_from_id`]) turns it back into a handle
//! after a reopen, checking that the id is live, not already held by another handle,
//! and stored with the same size and type tag. On a fresh heap, ids are handed out
//! lowest-free first, so the first object allocated gets id 0 and can serve as a root
//! that stores the ids of the others.
#![cfg_attr(not(test), no_std)]

mod bits;
mod cache;
mod config;
mod error;
pub mod format;
mod guard;
mod handle;
mod heap;
mod queue;

pub use config::{
    wcec_bound, Config, CostModel, MetadataCost, WcecBound, CYCLES_PER_SCAN_STEP, METADATA,
    SPLIT_BYTES_PER_ID, SPLIT_BYTES_PER_UNIT,
};
pub use error::HeapError;
pub use guard::{Ref, RefMut};
pub use handle::{ArrayHandle, Handle, ObjectId};
pub use heap::{RawResident, VnvHeap};
pub use queue::Queue;

/// Result of heap operations.
pub type Result<T> = core::result::Result<T, HeapError>;

/// Plain data that may be copied byte-wise to NVM and back.
///
/// # Safety
///
/// Implement only for a type that
/// 1. has no padding bytes (every byte of the value is initialized),
/// 2. is valid for every bit pattern of `size_of::<Self>()` bytes (so no `bool`, `char`,
///    enums, references or pointers),
/// 3. has an alignment of at most 8.
///
/// The heap checks 3 at run time and returns [`HeapError::UnsupportedType`]; 1 and 2 are
/// the implementer's promise.
pub unsafe trait Persist: Copy + 'static {}

macro_rules! persist_prims {
    ($($t:ty),*) => { $(
        // SAFETY: primitive integers and floats have no padding and accept every bit pattern.
        unsafe impl Persist for $t {}
    )* };
}
persist_prims!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

// SAFETY: an array of padding-free, all-bit-patterns-valid elements has neither padding
// nor invalid bit patterns, and the same alignment as its element.
unsafe impl<T: Persist, const N: usize> Persist for [T; N] {}

/// The 16-bit tag stored with every object of type `T`, checked when a handle is
/// rebuilt from an id: a fold of the CRC-32 of `core::any::type_name::<T>()`.
///
/// Type names are stable for one build; a firmware update that renames a type makes
/// its stored objects unreachable through the new name (a clear
/// [`HeapError::TypeMismatch`], never a misread).
pub fn type_tag<T: Persist>() -> u16 {
    let c = format::CRC32.checksum(core::any::type_name::<T>().as_bytes());
    (c ^ (c >> 16)) as u16
}
