//! The client library: a typed view of the service's untyped objects, with the same
//! ownership rules as the vNV-Heap library itself, and guards that point straight into
//! the client's window on the service's cache (zero copy).
//!
//! A [`Handle`] owns one object (not `Clone`, not `Copy`; dropping it frees the object).
//! Guards borrow the handle: a [`Ref`] shares it, a [`RefMut`] borrows it mutably, so a
//! guard cannot outlive its handle and two guards that would conflict do not compile.
//! A guard holds a pin on the object (`OP_PIN`), released when it goes (`OP_UNPIN`), and
//! derefs to the object's bytes in the window, where the pin keeps them in place. A heap
//! given its pin page ([`Heap::with_pins`]) first tries to pin on the page (no IPC; see
//! `page.rs`): a read pin of a resident object, or a write pin of a resident dirty one;
//! the guard then releases by clearing its mark. This
//! file must never hand out a reference into the window that outlives the pin behind
//! it, never deref a reply it has not checked against the window, and never panic on
//! what the service replies.
//!
//! Keep one handle per id ([`Heap::from_id`] can make a second): the service's pins
//! still exclude a write guard while any other guard exists, so two handles cannot
//! break the guards' rules, only make a `get_mut` fail with [`HeapError::Pinned`].

use crate::page::{ENTRY_DIRTY, ENTRY_OFFSET, ENTRY_RESIDENT};
use crate::page::{MARK_PINS, MARK_READERS, MARK_USED, MARK_WRITE, MARK_WROTE};
use crate::{Channel, Endpoint, HeapError, ObjectId, Persist, PinPage, Result, ServiceStats};
use crate::{OP_ALLOC, OP_FREE, OP_PIN, OP_SIZE, OP_STATS, OP_UNPIN};
use amber_user::Memory;
use core::fmt;
use core::marker::PhantomData;
use core::mem::{align_of, size_of, ManuallyDrop};
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;
use core::sync::atomic::{compiler_fence, Ordering};

/// A client of one heap service, with the window where the service's cache of this
/// client's objects is mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heap<C: Channel = Endpoint> {
    chan: C,
    window: usize,
    window_len: usize,
    /// This client's pin page, if it has one.
    pins: Option<PinPage>,
}

impl Heap<Endpoint> {
    /// The heap service reached through the endpoint capability in `ep_slot` (it needs
    /// WRITE), whose cache of this client's objects is the memory `window` the app
    /// maps (`amber_user::memory!`: read and write, shared with the service only).
    ///
    /// # Safety
    ///
    /// `window` must be that memory, mapped for this task for as long as the heap is
    /// used, and nothing else in this task may access it: guards create references
    /// into it.
    pub const unsafe fn new(ep_slot: u32, window: Memory) -> Self {
        Heap {
            chan: Endpoint(ep_slot),
            window: window.base,
            window_len: window.len,
            pins: None,
        }
    }
}

/// The size of `T` as the protocol carries it; zero-sized types cannot be stored.
fn size<T: Persist>() -> Result<u32> {
    match u32::try_from(size_of::<T>()) {
        Ok(0) | Err(_) => Err(HeapError::BadSize),
        Ok(n) => Ok(n),
    }
}

/// Sends one request and checks the reply's status; returns the reply's words.
fn request<C: Channel>(chan: C, words: [u32; 4], recv: &mut [u8]) -> Result<[u32; 4]> {
    let (r, got) = chan.call(words, &[], recv).map_err(HeapError::Ipc)?;
    HeapError::check_status(r[0])?;
    if got != recv.len() {
        return Err(HeapError::BadReply {
            asked: recv.len() as u32,
            got: got as u32,
        });
    }
    Ok(r)
}

/// Releases a pin (mode 0 read, 1 write).
fn unpin<C: Channel>(chan: C, id: u16, mode: u32) -> Result<()> {
    request(chan, [OP_UNPIN, id.into(), mode, 0], &mut []).map(drop)
}

impl<C: Channel> Heap<C> {
    /// A heap service reached through `chan` (tests use a model of the service).
    ///
    /// # Safety
    ///
    /// As for [`Heap::new`]: the window is memory only the service's pins govern.
    pub const unsafe fn with_channel(chan: C, window: usize, window_len: usize) -> Self {
        Heap {
            chan,
            window,
            window_len,
            pins: None,
        }
    }

    /// The same heap, pinning resident objects on `page` without IPC where it can.
    ///
    /// # Safety
    ///
    /// `page` must be this client's part of the service's pin memory (`heap-pins`, the
    /// part at `(badge - 1) * PAGE_BYTES`), and nothing else in this task may access it.
    pub const unsafe fn with_pins(self, page: PinPage) -> Self {
        Heap {
            pins: Some(page),
            ..self
        }
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

    /// Pins object `id` (mode 0 read, 1 write) and returns where its `T` lies in the
    /// window, after checking the reply: the size is `T`'s, the bytes lie inside the
    /// window and are aligned for `T`. A bad reply releases the pin.
    fn pin<T: Persist>(&self, id: u16, mode: u32) -> Result<NonNull<T>> {
        let expected = size::<T>()?;
        let r = request(self.chan, [OP_PIN, id.into(), mode, 0], &mut [])?;
        let (off, got) = (r[1] as usize, r[2]);
        match self.place::<T>(off) {
            Some(p) if got == expected => Ok(p),
            _ => {
                let _ = unpin(self.chan, id, mode);
                Err(if got != expected {
                    HeapError::SizeMismatch {
                        stored: got,
                        expected,
                    }
                } else {
                    HeapError::BadWindow
                })
            }
        }
    }

    /// Where a `T` at `off` in the window lies, if all of it is inside the window and
    /// it is aligned for `T`.
    fn place<T>(&self, off: usize) -> Option<NonNull<T>> {
        let inside = off
            .checked_add(size_of::<T>())
            .is_some_and(|end| end <= self.window_len);
        let addr = self.window.wrapping_add(off);
        NonNull::new(addr as *mut T).filter(|_| inside && addr.is_multiple_of(align_of::<T>()))
    }

    /// Pins object `id` on the pin page, without IPC, if the service's table says it is
    /// resident (and dirty, for a write pin) and this client's own marks allow the pin:
    /// marks first, then reads the table, and undoes the mark if the table says no (see
    /// `page.rs` for why this order is safe against the service). Checks the entry's
    /// size and offset as [`pin`](Self::pin) checks a reply. Returns where the `T` lies
    /// and the page its guard clears the mark on.
    fn pin_fast<T: Persist>(&self, id: u16, write: bool) -> Option<(NonNull<T>, PinPage)> {
        let page = self.pins?;
        let i = usize::from(id);
        let was = page.mark(i);
        let marked = if write {
            if was & MARK_PINS != 0 {
                return None;
            }
            was | MARK_WRITE | MARK_USED | MARK_WROTE
        } else {
            if was & MARK_WRITE != 0 || was & MARK_READERS == MARK_READERS {
                return None;
            }
            (was + 1) | MARK_USED
        };
        page.set_mark(i, marked);
        // The mark is stored before the entry is read (both volatile; the fence keeps
        // the compiler from moving other accesses across either).
        compiler_fence(Ordering::SeqCst);
        let (entry, stored) = page.entry(i);
        let need = ENTRY_RESIDENT | if write { ENTRY_DIRTY } else { 0 };
        if entry & need == need && size_of::<T>() == stored as usize {
            if let Some(p) = self.place::<T>((entry & ENTRY_OFFSET) as usize) {
                return Some((p, page));
            }
        }
        page.set_mark(i, was);
        None
    }

    /// Allocates `value` on the heap: one request to allocate (the object holds zeros)
    /// and, unless `value` is all zeros, a write pin to store it. If storing fails, the
    /// object is freed again and the error returned.
    pub fn alloc<T: Persist>(&self, value: T) -> Result<Handle<T, C>> {
        let size = size::<T>()?;
        let r = request(self.chan, [OP_ALLOC, size, 0, 0], &mut [])?;
        let id = u16::try_from(r[1]).map_err(|_| HeapError::ServiceFailed)?;
        let mut handle = Handle::new(self.chan, id);
        // SAFETY: `Persist` types have no padding: all their bytes are initialized.
        let bytes = unsafe {
            core::slice::from_raw_parts((&value as *const T).cast::<u8>(), size_of::<T>())
        };
        if bytes.iter().any(|&b| b != 0) {
            if let Err(e) = self.set(&mut handle, value) {
                let _ = self.free(handle);
                return Err(e);
            }
        }
        Ok(handle)
    }

    /// Frees the object now, reporting any error (dropping the handle frees it too,
    /// ignoring errors).
    pub fn free<T: Persist>(&self, handle: Handle<T, C>) -> Result<()> {
        self.owns(&handle)?;
        let h = ManuallyDrop::new(handle);
        request(self.chan, [OP_FREE, h.id.into(), 0, 0], &mut []).map(drop)
    }

    /// Turns a stable id (from [`Handle::into_id`], kept in the client's own memory or
    /// in another object) back into a handle, after checking that the object exists in
    /// this client's heap and has the size of `T`. Keep one handle per id (see the
    /// file doc).
    pub fn from_id<T: Persist>(&self, id: ObjectId) -> Result<Handle<T, C>> {
        let expected = size::<T>()?;
        let stored = request(self.chan, [OP_SIZE, id.raw().into(), 0, 0], &mut [])?[1];
        if stored != expected {
            return Err(HeapError::SizeMismatch { stored, expected });
        }
        Ok(Handle::new(self.chan, id.raw()))
    }

    /// Shared access to the object in the window, pinned until the guard goes.
    pub fn get_ref<'a, T: Persist>(&self, handle: &'a Handle<T, C>) -> Result<Ref<'a, T, C>> {
        self.owns(handle)?;
        let (p, fast) = match self.pin_fast::<T>(handle.id, false) {
            Some((p, page)) => (p, Some(page)),
            None => (self.pin::<T>(handle.id, 0)?, None),
        };
        // SAFETY: `pin` (or `pin_fast`, from the service's table) checked that the service placed a `T`-sized, `T`-aligned range
        // inside the window, which `Heap::new`'s contract makes memory of this task that
        // nothing else here accesses. The read pin keeps the service from moving,
        // evicting or writing the bytes (it writes them only after a restore, with this
        // task stopped, and then the same bytes) until the guard unpins, and the handle's
        // shared borrow rules out a `RefMut` on it meanwhile. A mark on the pin page is
        // such a pin: the service treats a marked object as pinned. Every bit pattern is
        // a valid `T` (`Persist`).
        let value = unsafe { p.as_ref() };
        Ok(Ref {
            value,
            chan: self.chan,
            id: handle.id,
            fast,
        })
    }

    /// Exclusive access to the object in the window, pinned for writing (the object is
    /// dirty from now on) until the guard goes.
    pub fn get_mut<'a, T: Persist>(
        &self,
        handle: &'a mut Handle<T, C>,
    ) -> Result<RefMut<'a, T, C>> {
        self.owns(handle)?;
        let (mut p, fast) = match self.pin_fast::<T>(handle.id, true) {
            Some((p, page)) => (p, Some(page)),
            None => (self.pin::<T>(handle.id, 1)?, None),
        };
        // SAFETY: as in `get_ref`; the write pin excludes every other pin on the object
        // (the service refuses them), and the handle's mutable borrow excludes every
        // other guard of this handle, so this is the only reference to the bytes. The
        // service only reads them meanwhile (its persists, with this task stopped). A
        // write mark on the pin page is such a pin (and this client's marks exclude
        // every other mark on the id).
        let value = unsafe { p.as_mut() };
        Ok(RefMut {
            value,
            chan: self.chan,
            id: handle.id,
            fast,
            released: false,
        })
    }

    /// The service's storage counters ([`OP_STATS`]): what it has written to and read
    /// from the FRAM so far, and the part its persists wrote.
    pub fn stats(&self) -> Result<ServiceStats> {
        let mut buf = [0u8; ServiceStats::BYTES];
        request(self.chan, [OP_STATS, 0, 0, 0], &mut buf)?;
        ServiceStats::decode(&buf).ok_or(HeapError::ServiceFailed)
    }

    /// A copy of the object.
    pub fn get<T: Persist>(&self, handle: &Handle<T, C>) -> Result<T> {
        let g = self.get_ref(handle)?;
        let v = *g;
        g.release()?;
        Ok(v)
    }

    /// Replaces the object's value.
    pub fn set<T: Persist>(&self, handle: &mut Handle<T, C>, value: T) -> Result<()> {
        let mut g = self.get_mut(handle)?;
        *g = value;
        g.release()
    }

    /// Changes the object with `f`, reporting a failed unpin.
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
        let _ = request(self.chan, [OP_FREE, self.id.into(), 0, 0], &mut []);
    }
}

impl<T: Persist, C: Channel> fmt::Debug for Handle<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle").field("id", &self.id).finish()
    }
}

/// Shared access to an object in the window; it borrows the handle and holds a read
/// pin, released by [`Ref::release`] (reporting a failure) or when dropped.
pub struct Ref<'a, T: Persist, C: Channel = Endpoint> {
    value: &'a T,
    chan: C,
    id: u16,
    /// The pin is a mark on this pin page, not the service's.
    fast: Option<PinPage>,
}

/// Releases a pin taken on the pin page: the guard's accesses first (the fence), then
/// the mark goes.
fn unmark(page: PinPage, id: u16, write: bool) {
    compiler_fence(Ordering::SeqCst);
    let i = usize::from(id);
    let m = page.mark(i);
    page.set_mark(
        i,
        if write {
            m & !MARK_WRITE
        } else if m & MARK_READERS != 0 {
            m - 1
        } else {
            m
        },
    );
}

/// Releases a guard's pin, by the page or by IPC.
fn release(chan: impl Channel, id: u16, fast: Option<PinPage>, write: bool) -> Result<()> {
    match fast {
        Some(page) => {
            unmark(page, id, write);
            Ok(())
        }
        None => unpin(chan, id, write.into()),
    }
}

impl<T: Persist, C: Channel> Ref<'_, T, C> {
    /// Releases the pin and reports the result.
    pub fn release(self) -> Result<()> {
        let me = ManuallyDrop::new(self);
        release(me.chan, me.id, me.fast, false)
    }
}

impl<T: Persist, C: Channel> Deref for Ref<'_, T, C> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T: Persist, C: Channel> Drop for Ref<'_, T, C> {
    fn drop(&mut self) {
        let _ = release(self.chan, self.id, self.fast, false);
    }
}

impl<T: Persist + fmt::Debug, C: Channel> fmt::Debug for Ref<'_, T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// Exclusive access to an object in the window; it borrows the handle mutably and
/// holds a write pin, released by [`RefMut::release`] (reporting a failure) or when
/// dropped. Every change is in the service's cache at once: nothing is copied back.
pub struct RefMut<'a, T: Persist, C: Channel = Endpoint> {
    value: &'a mut T,
    chan: C,
    id: u16,
    /// The pin is a write mark on this pin page, not the service's.
    fast: Option<PinPage>,
    /// `release` ran: the drop sends nothing.
    released: bool,
}

impl<T: Persist, C: Channel> RefMut<'_, T, C> {
    /// Releases the pin and reports the result.
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        release(self.chan, self.id, self.fast, true)
    }
}

impl<T: Persist, C: Channel> Deref for RefMut<'_, T, C> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T: Persist, C: Channel> DerefMut for RefMut<'_, T, C> {
    fn deref_mut(&mut self) -> &mut T {
        self.value
    }
}

impl<T: Persist, C: Channel> Drop for RefMut<'_, T, C> {
    fn drop(&mut self) {
        if !self.released {
            let _ = release(self.chan, self.id, self.fast, true);
        }
    }
}

impl<T: Persist + fmt::Debug, C: Channel> fmt::Debug for RefMut<'_, T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}
