//! The client library: a typed view of the service's untyped objects, with the same
//! ownership rules as the vNV-Heap library itself.
//!
//! A [`Handle`] owns one object (not `Clone`, not `Copy`; dropping it frees the object).
//! Guards borrow the handle: a [`Ref`] shares it, a [`RefMut`] borrows it mutably, so a
//! guard cannot outlive its handle and two guards that would conflict do not compile.
//! Guards hold a copy of the object (see "Copies, not shared memory" in the crate
//! doc). This file must never hand out a reference into anything but the guard's own
//! copy, and never panic on what the service replies.
//!
//! A handle does not pin its object: the same id turned into two handles with
//! [`Heap::from_id`] is not unsafe (every guard works on its own copy) but the last
//! write-back wins, so keep one handle per id.

use crate::{Channel, Endpoint, HeapError, ObjectId, Persist, Result, CHUNK};
use crate::{OP_ALLOC, OP_FREE, OP_READ, OP_SIZE, OP_WRITE};
use core::fmt;
use core::marker::PhantomData;
use core::mem::{size_of, ManuallyDrop, MaybeUninit};
use core::ops::{Deref, DerefMut};
use core::slice;

/// A client of one heap service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heap<C: Channel = Endpoint> {
    chan: C,
}

impl Heap<Endpoint> {
    /// The heap service reached through the endpoint capability in `ep_slot` (it needs
    /// WRITE).
    pub const fn new(ep_slot: u32) -> Self {
        Heap {
            chan: Endpoint(ep_slot),
        }
    }
}

/// The object's bytes, to send them.
fn bytes_of<T: Persist>(v: &T) -> &[u8] {
    // SAFETY: `Persist` types have no padding, so all `size_of::<T>()` bytes of `*v` are
    // initialized; the slice borrows `v`.
    unsafe { slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }
}

/// The size of `T` as the protocol carries it; zero-sized types cannot be stored.
fn size<T: Persist>() -> Result<u32> {
    match u32::try_from(size_of::<T>()) {
        Ok(0) | Err(_) => Err(HeapError::BadSize),
        Ok(n) => Ok(n),
    }
}

/// Sends one request and checks the reply's status.
fn request<C: Channel>(chan: C, words: [u32; 4], send: &[u8], recv: &mut [u8]) -> Result<u32> {
    let (r, got) = chan.call(words, send, recv).map_err(HeapError::Ipc)?;
    HeapError::check_status(r[0])?;
    if got != recv.len() {
        return Err(HeapError::BadReply {
            asked: recv.len() as u32,
            got: got as u32,
        });
    }
    Ok(r[1])
}

/// Reads the whole object into `buf`, in pieces of at most [`CHUNK`] bytes.
fn read_bytes<C: Channel>(chan: C, id: u16, buf: &mut [u8]) -> Result<()> {
    for (k, piece) in buf.chunks_mut(CHUNK).enumerate() {
        let words = [OP_READ, id.into(), (k * CHUNK) as u32, piece.len() as u32];
        request(chan, words, &[], piece)?;
    }
    Ok(())
}

/// Writes `bytes` over the object, in pieces of at most [`CHUNK`] bytes; with
/// `skip_zero`, pieces of zeros are not sent (a new object holds zeros already).
fn write_bytes<C: Channel>(chan: C, id: u16, bytes: &[u8], skip_zero: bool) -> Result<()> {
    for (k, piece) in bytes.chunks(CHUNK).enumerate() {
        if skip_zero && piece.iter().all(|&b| b == 0) {
            continue;
        }
        let words = [OP_WRITE, id.into(), (k * CHUNK) as u32, piece.len() as u32];
        request(chan, words, piece, &mut [])?;
    }
    Ok(())
}

/// A copy of the object.
fn read_value<T: Persist, C: Channel>(chan: C, id: u16) -> Result<T> {
    let mut v = MaybeUninit::<T>::zeroed();
    // SAFETY: the zeroed value has all `size_of::<T>()` bytes initialized; the slice
    // covers exactly them and is the only access to `v` while it lives.
    let bytes = unsafe { slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), size_of::<T>()) };
    read_bytes(chan, id, bytes)?;
    // SAFETY: every byte is initialized (zeroed, then overwritten by the reply), and a
    // `Persist` type is valid for every bit pattern.
    Ok(unsafe { v.assume_init() })
}

impl<C: Channel> Heap<C> {
    /// A heap service reached through `chan` (tests use a model of the service).
    pub const fn with_channel(chan: C) -> Self {
        Heap { chan }
    }

    /// The channel to the service.
    pub fn channel(&self) -> C {
        self.chan
    }

    fn owns<T: Persist>(&self, handle: &Handle<T, C>) -> Result<()> {
        if handle.chan == self.chan {
            Ok(())
        } else {
            Err(HeapError::WrongHeap)
        }
    }

    /// Allocates `value` on the heap: one request to allocate, then one per 256-byte
    /// piece of the value that is not all zeros. If writing the value fails, the
    /// object is freed again and the error returned.
    pub fn alloc<T: Persist>(&self, value: T) -> Result<Handle<T, C>> {
        let size = size::<T>()?;
        let id = request(self.chan, [OP_ALLOC, size, 0, 0], &[], &mut [])?;
        let id = u16::try_from(id).map_err(|_| HeapError::ServiceFailed)?;
        let handle = Handle::new(self.chan, id);
        if let Err(e) = write_bytes(self.chan, id, bytes_of(&value), true) {
            let _ = self.free(handle);
            return Err(e);
        }
        Ok(handle)
    }

    /// Frees the object now, reporting any error (dropping the handle frees it too,
    /// ignoring errors).
    pub fn free<T: Persist>(&self, handle: Handle<T, C>) -> Result<()> {
        self.owns(&handle)?;
        let h = ManuallyDrop::new(handle);
        request(self.chan, [OP_FREE, h.id.into(), 0, 0], &[], &mut []).map(drop)
    }

    /// Turns a stable id (from [`Handle::into_id`], kept in the client's own memory or
    /// in another object) back into a handle, after checking that the object exists,
    /// belongs to this client and has the size of `T`. Keep one handle per id (see the
    /// file doc).
    pub fn from_id<T: Persist>(&self, id: ObjectId) -> Result<Handle<T, C>> {
        let expected = size::<T>()?;
        let stored = request(self.chan, [OP_SIZE, id.raw().into(), 0, 0], &[], &mut [])?;
        if stored != expected {
            return Err(HeapError::SizeMismatch { stored, expected });
        }
        Ok(Handle::new(self.chan, id.raw()))
    }

    /// Shared access to a copy of the object, read now.
    pub fn get_ref<'a, T: Persist>(&self, handle: &'a Handle<T, C>) -> Result<Ref<'a, T>> {
        self.owns(handle)?;
        Ok(Ref {
            value: read_value(self.chan, handle.id)?,
            _handle: PhantomData,
        })
    }

    /// Exclusive access to a copy of the object, read now and written back when the
    /// guard is released or dropped (only if it was changed through `DerefMut`).
    pub fn get_mut<'a, T: Persist>(
        &self,
        handle: &'a mut Handle<T, C>,
    ) -> Result<RefMut<'a, T, C>> {
        self.owns(handle)?;
        Ok(RefMut {
            value: read_value(self.chan, handle.id)?,
            chan: self.chan,
            id: handle.id,
            changed: false,
            released: false,
            _handle: PhantomData,
        })
    }

    /// A copy of the object.
    pub fn get<T: Persist>(&self, handle: &Handle<T, C>) -> Result<T> {
        Ok(*self.get_ref(handle)?)
    }

    /// Replaces the object's value (written without reading it first).
    pub fn set<T: Persist>(&self, handle: &mut Handle<T, C>, value: T) -> Result<()> {
        self.owns(handle)?;
        write_bytes(self.chan, handle.id, bytes_of(&value), false)
    }

    /// Changes the object with `f` and writes it back, reporting a failed write-back.
    pub fn update<T: Persist, R>(
        &self,
        handle: &mut Handle<T, C>,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R> {
        let mut g = self.get_mut(handle)?;
        let r = f(&mut g);
        g.release()?;
        Ok(r)
    }
}

/// The owner of one object of type `T` on a heap service.
///
/// Dropping it frees the object (ignoring errors; [`Heap::free`] reports them);
/// [`Handle::into_id`] gives it up without freeing.
pub struct Handle<T: Persist, C: Channel = Endpoint> {
    chan: C,
    id: u16,
    _t: PhantomData<fn() -> T>,
}

impl<T: Persist, C: Channel> Handle<T, C> {
    fn new(chan: C, id: u16) -> Self {
        Handle {
            chan,
            id,
            _t: PhantomData,
        }
    }

    /// The object's stable id.
    pub fn id(&self) -> ObjectId {
        ObjectId::from_raw(self.id)
    }

    /// Gives up the handle without freeing the object; [`Heap::from_id`] turns the id
    /// back into a handle, also after a power cut.
    pub fn into_id(self) -> ObjectId {
        let me = ManuallyDrop::new(self);
        ObjectId::from_raw(me.id)
    }
}

impl<T: Persist, C: Channel> Drop for Handle<T, C> {
    /// Frees the object; an error is ignored (use [`Heap::free`] to see it).
    fn drop(&mut self) {
        let _ = request(self.chan, [OP_FREE, self.id.into(), 0, 0], &[], &mut []);
    }
}

impl<T: Persist, C: Channel> fmt::Debug for Handle<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle").field("id", &self.id).finish()
    }
}

/// Shared access to a copy of an object; it borrows the handle.
pub struct Ref<'a, T: Persist> {
    value: T,
    _handle: PhantomData<&'a T>,
}

impl<T: Persist> Deref for Ref<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Persist + fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// Exclusive access to a copy of an object; it borrows the handle mutably.
///
/// If the copy was changed (through `DerefMut`), it is written back by
/// [`RefMut::release`], which reports a failure, or else when the guard is dropped,
/// which ignores one. An object larger than 256 bytes is written back in pieces; a
/// failure part way leaves the earlier pieces written.
pub struct RefMut<'a, T: Persist, C: Channel = Endpoint> {
    value: T,
    chan: C,
    id: u16,
    /// `DerefMut` was used: the copy may differ from the object.
    changed: bool,
    /// `release` ran: the drop writes nothing.
    released: bool,
    _handle: PhantomData<&'a mut T>,
}

impl<T: Persist, C: Channel> RefMut<'_, T, C> {
    /// Writes the copy back (if it was changed) and reports the result.
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        self.write_back()
    }

    fn write_back(&mut self) -> Result<()> {
        if !self.changed {
            return Ok(());
        }
        self.changed = false;
        write_bytes(self.chan, self.id, bytes_of(&self.value), false)
    }
}

impl<T: Persist, C: Channel> Deref for RefMut<'_, T, C> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Persist, C: Channel> DerefMut for RefMut<'_, T, C> {
    fn deref_mut(&mut self) -> &mut T {
        self.changed = true;
        &mut self.value
    }
}

impl<T: Persist, C: Channel> Drop for RefMut<'_, T, C> {
    /// Writes the copy back unless [`RefMut::release`] did; an error is ignored.
    fn drop(&mut self) {
        if !self.released {
            let _ = self.write_back();
        }
    }
}

impl<T: Persist + fmt::Debug, C: Channel> fmt::Debug for RefMut<'_, T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}
