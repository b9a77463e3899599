//! Handles: the owned names of heap objects, and the ids that outlive a reopen.
//!
//! A handle owns its object: dropping it frees the object. Guards borrow the handle, so
//! the compiler rejects a guard that outlives its handle. A handle must never be
//! cloned or forged: the heap relies on there being at most one handle per object.

use crate::{Persist, Result};
use core::cell::Cell;
use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;

/// A stable object name: valid across persist and reopen (see the crate docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId(pub(crate) u16);

impl ObjectId {
    /// The raw id, for storing inside other objects.
    pub fn raw(self) -> u16 {
        self.0
    }

    /// An id from a raw value. Any value is safe: a wrong one gives an error when it is
    /// turned into a handle.
    pub fn from_raw(raw: u16) -> ObjectId {
        ObjectId(raw)
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Where the objects of a handle lie: `count` ids from `first` on, the first at NVM
/// block `block`, each `chunk_bytes` long (`blocks_for(chunk_bytes)` blocks apart) but
/// the last, which is `last_bytes` long.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub first: u16,
    pub count: u16,
    pub block: u16,
    pub chunk_bytes: u16,
    pub last_bytes: u16,
}

/// What a handle needs from its heap without naming the storage type.
pub(crate) trait Core {
    /// Frees the objects of `span`, and forgets their handle.
    fn release(&self, span: Span) -> Result<()>;
    /// Forgets the handle of `count` objects from `first` on, keeping the objects.
    fn forget(&self, first: u16, count: u16);
}

/// The owner of one object of type `T` in a heap.
pub struct Handle<'h, T: Persist> {
    pub(crate) heap: &'h dyn Core,
    pub(crate) id: u16,
    /// First NVM block of the object (fixed for its life): a load reads its bytes
    /// without reading its description.
    pub(crate) block: u16,
    /// Cache unit where the object was last seen resident (a hint, checked before use).
    pub(crate) hint: Cell<u16>,
    _t: PhantomData<fn() -> T>,
}

impl<'h, T: Persist> Handle<'h, T> {
    pub(crate) fn new(heap: &'h dyn Core, id: u16, block: u16, hint: u16) -> Self {
        Handle {
            heap,
            id,
            block,
            hint: Cell::new(hint),
            _t: PhantomData,
        }
    }

    pub(crate) fn span(&self) -> Span {
        let len = core::mem::size_of::<T>() as u16;
        Span {
            first: self.id,
            count: 1,
            block: self.block,
            chunk_bytes: len,
            last_bytes: len,
        }
    }

    /// The object's stable id.
    pub fn id(&self) -> ObjectId {
        ObjectId(self.id)
    }

    /// Gives up the handle without freeing the object; the id turns it back into a
    /// handle later (also after a reopen), with `VnvHeap::handle_from_id`.
    pub fn into_id(self) -> ObjectId {
        let me = ManuallyDrop::new(self);
        me.heap.forget(me.id, 1);
        ObjectId(me.id)
    }
}

impl<T: Persist> Drop for Handle<'_, T> {
    /// Frees the object. A storage error is ignored here (it poisons the heap); use
    /// `VnvHeap::free` to see it.
    fn drop(&mut self) {
        let _ = self.heap.release(self.span());
    }
}

impl<T: Persist> fmt::Debug for Handle<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle").field("id", &self.id).finish()
    }
}

/// The owner of an array of `T` stored as chunks of `chunk_len` elements.
///
/// Each chunk is swapped in and out, pinned and marked dirty on its own, so writing one
/// element makes only its chunk dirty (the paper's partial dirtiness). A chunk is one
/// object id; the chunks have consecutive ids and the array's id is the first one.
pub struct ArrayHandle<'h, T: Persist> {
    pub(crate) heap: &'h dyn Core,
    pub(crate) first: u16,
    pub(crate) chunks: u16,
    /// First NVM block of chunk 0; chunk `k` starts `k * blocks_for(chunk bytes)` later.
    pub(crate) block: u16,
    pub(crate) len: u32,
    pub(crate) chunk_len: u16,
    pub(crate) hint: Cell<u16>,
    _t: PhantomData<fn() -> T>,
}

impl<'h, T: Persist> ArrayHandle<'h, T> {
    pub(crate) fn new(
        heap: &'h dyn Core,
        first: u16,
        chunks: u16,
        block: u16,
        len: u32,
        chunk_len: u16,
    ) -> Self {
        ArrayHandle {
            heap,
            first,
            chunks,
            block,
            len,
            chunk_len,
            hint: Cell::new(u16::MAX),
            _t: PhantomData,
        }
    }

    /// The array's stable id (that of its first chunk).
    pub fn id(&self) -> ObjectId {
        ObjectId(self.first)
    }

    /// Number of elements.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the array has no elements (never: arrays have at least one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Elements per chunk (the last chunk may be shorter).
    pub fn chunk_len(&self) -> u16 {
        self.chunk_len
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> u16 {
        self.chunks
    }

    /// The chunk holding element `index`, and the index inside it.
    pub fn chunk_of(&self, index: u32) -> (u16, usize) {
        let c = u32::from(self.chunk_len);
        ((index / c) as u16, (index % c) as usize)
    }

    /// Elements in chunk `chunk`.
    pub(crate) fn chunk_elems(&self, chunk: u16) -> u32 {
        let start = u32::from(chunk) * u32::from(self.chunk_len);
        (self.len - start).min(u32::from(self.chunk_len))
    }

    /// Bytes of chunk `chunk`.
    pub(crate) fn chunk_bytes(&self, chunk: u16) -> u16 {
        (self.chunk_elems(chunk) * core::mem::size_of::<T>() as u32) as u16
    }

    /// First NVM block of chunk `chunk`.
    pub(crate) fn chunk_block(&self, chunk: u16) -> u16 {
        let per = crate::format::blocks_for(self.chunk_bytes(0));
        (u32::from(self.block) + u32::from(chunk) * per) as u16
    }

    pub(crate) fn span(&self) -> Span {
        Span {
            first: self.first,
            count: self.chunks,
            block: self.block,
            chunk_bytes: self.chunk_bytes(0),
            last_bytes: self.chunk_bytes(self.chunks - 1),
        }
    }

    /// Gives up the handle without freeing the array (see [`Handle::into_id`]).
    pub fn into_id(self) -> ObjectId {
        let me = ManuallyDrop::new(self);
        me.heap.forget(me.first, me.chunks);
        ObjectId(me.first)
    }
}

impl<T: Persist> Drop for ArrayHandle<'_, T> {
    /// Frees every chunk. A storage error is ignored here (it poisons the heap); use
    /// `VnvHeap::free_array` to see it.
    fn drop(&mut self) {
        let _ = self.heap.release(self.span());
    }
}

impl<T: Persist> fmt::Debug for ArrayHandle<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArrayHandle")
            .field("id", &self.first)
            .field("len", &self.len)
            .field("chunk_len", &self.chunk_len)
            .finish()
    }
}
