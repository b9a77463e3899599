//! Guards: the only way to reach an object's bytes, and the pins that keep them resident.
//!
//! A guard points into the cache arena and into the 2-byte state word of the object's
//! resident header. While the state word says "pinned", the heap never moves, evicts or
//! writes back over the object, so the pointer stays valid for the guard's lifetime,
//! which the borrow of the handle bounds. A guard must never hand out a pointer that
//! outlives it, and a read guard must never give mutable access.

use core::fmt;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

/// Bits of a resident object's state word.
pub(crate) mod state {
    /// The object differs from its copy on NVM.
    pub const DIRTY: u16 = 1;
    /// A `RefMut` or a raw write pin exists.
    pub const MUT: u16 = 2;
    /// Shared heaps: the header is 16 bytes (it also holds the type tag and flags of an
    /// object created since the last commit, whose description is written later).
    pub const LONG: u16 = 4;
    /// Split heaps only (where `LONG` is never set): the `MUT` bit belongs to a raw
    /// write pin (`VnvHeap::pin`), not to a `RefMut`.
    pub const RAW: u16 = 4;
    /// Pinned since the eviction hand last passed it: the hand gives it a second
    /// chance (see `make_room` in `cache.rs`).
    pub const REF: u16 = 8;
    /// Made dirty again (or, while the write-back policy follows recency, made dirty at
    /// all) since the write-back scan last passed it: the scan gives it a second chance
    /// (see `reserve_dirty` in `cache.rs`).
    pub const WREF: u16 = 16;
    /// One read guard; the count occupies bits 5..16.
    pub const READER: u16 = 32;
    /// Most read guards at a time.
    pub const MAX_READERS: u16 = u16::MAX / READER;

    pub fn readers(s: u16) -> u16 {
        s / READER
    }

    pub fn pinned(s: u16) -> bool {
        s & MUT != 0 || readers(s) != 0
    }
}

fn read_state(p: NonNull<u16>) -> u16 {
    // SAFETY: guards are built only with a pointer to a live resident header, which
    // stays in place while the guard pins it; the heap accesses it only through raw
    // pointers, never through a reference, and is single-threaded.
    unsafe { p.as_ptr().read() }
}

fn write_state(p: NonNull<u16>, v: u16) {
    // SAFETY: as in `read_state`.
    unsafe { p.as_ptr().write(v) }
}

/// Shared access to a resident object; it stays pinned while this guard lives.
pub struct Ref<'a, T: ?Sized> {
    ptr: NonNull<T>,
    state: NonNull<u16>,
    _l: PhantomData<&'a T>,
}

impl<T: ?Sized> Ref<'_, T> {
    /// # Safety
    /// `ptr` must point to a valid, initialized `T` in the arena whose header state is
    /// at `state` and already counts this guard as a reader; nothing may write to it
    /// while the guard lives.
    pub(crate) unsafe fn new(ptr: NonNull<T>, state: NonNull<u16>) -> Self {
        Ref {
            ptr,
            state,
            _l: PhantomData,
        }
    }
}

impl<T: ?Sized> Deref for Ref<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `new`'s contract: the object is valid and pinned, and only shared
        // references exist while a reader is counted.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: ?Sized> Drop for Ref<'_, T> {
    fn drop(&mut self) {
        let s = read_state(self.state);
        write_state(self.state, s.saturating_sub(state::READER));
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

/// Exclusive access to a resident object, marked dirty; pinned while this guard lives.
pub struct RefMut<'a, T: ?Sized> {
    ptr: NonNull<T>,
    state: NonNull<u16>,
    _l: PhantomData<&'a mut T>,
}

impl<T: ?Sized> RefMut<'_, T> {
    /// # Safety
    /// `ptr` must point to a valid, initialized `T` in the arena whose header state is
    /// at `state` and has `MUT` set for this guard; nothing else may access the object
    /// while the guard lives.
    pub(crate) unsafe fn new(ptr: NonNull<T>, state: NonNull<u16>) -> Self {
        RefMut {
            ptr,
            state,
            _l: PhantomData,
        }
    }
}

impl<T: ?Sized> Deref for RefMut<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `new`'s contract: the object is valid, pinned and exclusively ours.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: ?Sized> DerefMut for RefMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only live reference.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T: ?Sized> Drop for RefMut<'_, T> {
    fn drop(&mut self) {
        let s = read_state(self.state);
        write_state(self.state, s & !state::MUT);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RefMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}
