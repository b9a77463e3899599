//! The heap: its public API, the life of objects (create, describe, free) and of the
//! heap (format, open, persist).
//!
//! Invariants this file keeps (each stated next to the code that keeps it):
//! - NVM: nothing written in the working epoch `W = G + 1` overwrites the committed
//!   description (entry half) or bytes (slot) of any object, nor the current commit
//!   record; see the versioning rule in [`format`](crate::format).
//! - Dirty bytes (size + [`Config::DIRTY_OVERHEAD`] per dirty object, the overhead
//!   alone per freed object whose dead half is not written yet) never exceed
//!   `max_dirty_bytes`, and the cache is exactly [`Config::cache_bytes`] long, so
//!   `persist` stays within [`wcec_bound`](crate::wcec_bound) in storage traffic and in
//!   scan steps.
//! - An object created in the working epoch is either in the cache (its description
//!   there too) or written through; its description reaches NVM with its first
//!   write-back, at the latest in the persist.
//! - After any storage error the heap is poisoned and refuses every call.
//!
//! The cache itself (headers, eviction, write-back) is `cache.rs`. This file must never
//! panic on user input, allocate, or create a reference covering the arena (guards
//! hold references into it).

use crate::bits::{find_clear_run, Ram, RamPlan, UNIT};
use crate::cache::{Mode, Obj, Run, WriteBack};
use crate::format::{
    bitmap_bytes, blocks_for, flag, record_crc, Half, Header, HeaderState, Layout, Pair,
    DESC_BYTES, DESC_OFFSET, ENTRY_BYTES, FORMAT_VERSION, HALF_BYTES, MAX_OBJECT_BYTES,
    RECORD_FIXED,
};
use crate::guard::state;
use crate::handle::{Core, Span};
use crate::{
    type_tag, ArrayHandle, Config, Handle, HeapError, ObjectId, Persist, Ref, RefMut, Result,
};
use amber_nvm::{Nvm, NvmError};
use core::cell::{Cell, RefCell, RefMut as CellRefMut};
use core::marker::PhantomData;
use core::mem::{align_of, size_of, ManuallyDrop};
use core::slice;

/// A virtually non-volatile heap over storage `S`, caching objects in a borrowed buffer.
///
/// Writes the on-NVM format described in [`format`](crate::format) (format version
/// [`FORMAT_VERSION`]). Dropping the heap without [`persist`](Self::persist) loses
/// every change since the last persist, exactly like a power cut.
pub struct VnvHeap<'c, S: Nvm> {
    inner: RefCell<Inner<S>>,
    _cache: PhantomData<&'c mut [u8]>,
}

/// A resident raw object as [`VnvHeap::raw_resident`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawResident {
    /// Its bytes' offset in the arena (as [`VnvHeap::pin`] returns it).
    pub offset: usize,
    /// It differs from its copy on storage.
    pub dirty: bool,
    /// Pins of the heap hold it (raw pins, for a service's heap).
    pub pinned: bool,
}

pub(crate) struct Inner<S> {
    pub(crate) storage: S,
    pub(crate) config: Config,
    pub(crate) layout: Layout,
    pub(crate) ram: Ram,
    /// Committed epoch `G`; the working epoch is `G + 1`.
    committed: u32,
    /// Which commit record copy holds `G`.
    header_copy: u8,
    /// Whether the working epoch wrote anything to NVM (else persist has nothing to
    /// commit).
    pub(crate) epoch_written: bool,
    pub(crate) dirty_bytes: u32,
    poisoned: bool,
    /// The eviction hand: where `make_room` looks first (an arena unit).
    pub(crate) evict_hand: u32,
    /// The write-back policy's state (see `reserve_dirty` in `cache.rs`).
    pub(crate) wb: WriteBack,
    /// Units, ids, blocks and bitmap words visited by the heap's scans so far: its CPU
    /// work beyond the fast path, reported by [`VnvHeap::scan_steps`].
    steps: Cell<u64>,
}

/// A live object's description as the heap keeps it (its entry half but the epoch and
/// the live flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Desc {
    pub block: u16,
    pub len: u16,
    pub tag: u16,
    /// `flag::CHUNK` and `flag::CONT`.
    pub flags: u8,
}

impl Desc {
    pub fn obj(&self, id: u16) -> Obj {
        Obj {
            id,
            block: self.block,
            len: self.len,
        }
    }

    /// The live half of epoch `epoch` holding this description.
    pub fn half(&self, epoch: u32) -> Half {
        Half {
            epoch,
            block: self.block.into(),
            flags: self.flags | flag::LIVE,
            len: self.len,
            tag: self.tag,
        }
    }
}

/// Size and alignment of `T`, checked against what the heap can store.
fn shape<T: Persist>() -> Result<(u16, usize)> {
    let (size, align) = (size_of::<T>(), align_of::<T>());
    if size == 0 || align > 8 {
        return Err(HeapError::UnsupportedType { size, align });
    }
    let len = u16::try_from(size).map_err(|_| HeapError::ObjectTooLarge {
        size,
        limit: MAX_OBJECT_BYTES as usize,
    })?;
    Ok((len, align))
}

/// The bytes of a value.
fn bytes_of<T: Persist>(v: &T) -> &[u8] {
    // SAFETY: `Persist` types have no padding, so all `size_of::<T>()` bytes of `*v` are
    // initialized; the slice borrows `v`.
    unsafe { slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }
}

impl<'c, S: Nvm> VnvHeap<'c, S> {
    /// Formats a new, empty heap on `storage` (erasing any heap there) and caches its
    /// objects in `cache`, which must be [`Config::cache_bytes`] long. The RAM metadata
    /// is carved from the front of `cache`.
    pub fn new(storage: S, cache: &'c mut [u8], config: Config) -> Result<Self> {
        let layout = Self::check_layout(&storage, &config)?;
        Self::check_cache(cache, &config)?;
        let ram = Self::carve(cache, &config, &layout)?;
        Self::format_with(storage, config, layout, ram)
    }

    /// Like [`new`](Self::new), for a split heap: the RAM metadata (bitmaps, a header
    /// per arena unit and a description per id, see [`Config::split_metadata_bytes`])
    /// lives in `meta`, and `arena` (8-aligned) holds nothing but object bytes, at
    /// offsets [`pin`](Self::pin) reports. `meta.len() + arena.len()` must be
    /// [`Config::cache_bytes`].
    ///
    /// The arena is meant to be shared with a client that writes it at any time: the
    /// heap never reads anything from it but the bytes it writes to NVM, never creates
    /// a reference covering it, and keeps all it needs in `meta`.
    pub fn new_split(
        storage: S,
        meta: &'c mut [u8],
        arena: &'c mut [u8],
        config: Config,
    ) -> Result<Self> {
        let layout = Self::check_layout(&storage, &config)?;
        let ram = Self::carve_split(meta, arena, &config, &layout)?;
        Self::format_with(storage, config, layout, ram)
    }

    fn format_with(storage: S, config: Config, layout: Layout, ram: Ram) -> Result<Self> {
        let mut inner = Inner::new(storage, config, layout, ram, 0, 0);
        // Erase both commit records first, so an interrupted format reads as unformatted
        // or corrupt, never as an older heap; then the table, then the first record (epoch
        // 0, every slot bit 0: the bitmaps are zero).
        let record = layout.record_bytes;
        inner.write_zeros(layout.header_at(1), record)?;
        inner.write_zeros(layout.header_at(0), record)?;
        let table = u32::from(layout.max_objects) * ENTRY_BYTES;
        inner.write_zeros(layout.pair_at(0), table)?;
        inner.storage.flush()?;
        inner.write_record(0, 0)?;
        inner.storage.flush()?;
        Ok(Self::wrap(inner))
    }

    /// Reopens the heap persisted on `storage`, with exactly the state of its last
    /// completed persist. Checks both commit records and every entry; erases what an
    /// interrupted epoch left behind. `cache` must be [`Config::cache_bytes`] long (it
    /// may differ from the length the heap was created with).
    pub fn open(storage: S, cache: &'c mut [u8], config: Config) -> Result<Self> {
        let layout = Self::check_layout(&storage, &config)?;
        Self::check_cache(cache, &config)?;
        let ram = Self::carve(cache, &config, &layout)?;
        Self::open_with(storage, config, layout, ram)
    }

    /// Like [`open`](Self::open), for a split heap (see [`new_split`](Self::new_split)):
    /// nothing is resident afterwards.
    pub fn open_split(
        storage: S,
        meta: &'c mut [u8],
        arena: &'c mut [u8],
        config: Config,
    ) -> Result<Self> {
        let layout = Self::check_layout(&storage, &config)?;
        let ram = Self::carve_split(meta, arena, &config, &layout)?;
        Self::open_with(storage, config, layout, ram)
    }

    fn open_with(storage: S, config: Config, layout: Layout, ram: Ram) -> Result<Self> {
        let mut inner = Inner::new(storage, config, layout, ram, 0, 0);
        // Each copy's slot bitmap is read into a bitmap of its own (the committed-slot
        // and written-slot bitmaps, both zeroed before use after this).
        let scratch = [ram.id_cslot, ram.id_sdone];
        let mut best: Option<(u8, Header)> = None;
        let mut blank = true;
        for copy in 0..2u8 {
            let mut b = [0u8; RECORD_FIXED];
            let at = layout.header_at(copy);
            inner.nvm_read(at, &mut b)?;
            let bits = scratch[usize::from(copy)];
            let words_at = at + RECORD_FIXED as u32;
            inner.read_words(words_at, bits)?;
            let mut crc = [0u8; 4];
            inner.nvm_read(words_at + 4 * bits.words(), &mut crc)?;
            let crc = u32::from_le_bytes(crc);
            match Header::decode(&b, (0..bits.words()).map(|i| bits.word(i)), crc) {
                HeaderState::Blank => {}
                HeaderState::Invalid => blank = false,
                HeaderState::Valid(h) => {
                    blank = false;
                    if best.is_none_or(|(_, b)| h.epoch > b.epoch) {
                        best = Some((copy, h));
                    }
                }
            }
        }
        let (copy, header) = match best {
            Some(b) => b,
            None if blank => return Err(HeapError::NotFormatted),
            None => {
                return Err(HeapError::CorruptMetadata {
                    at: layout.header_at(0),
                    what: "neither copy of the commit record is valid",
                })
            }
        };
        if header.version != FORMAT_VERSION {
            return Err(HeapError::UnsupportedVersion {
                found: header.version,
            });
        }
        if header.max_objects != config.max_objects {
            return Err(HeapError::ConfigMismatch {
                what: "max_objects",
                stored: header.max_objects.into(),
                given: config.max_objects.into(),
            });
        }
        if header.data_bytes != layout.data_bytes {
            return Err(HeapError::ConfigMismatch {
                what: "nvm_data_bytes",
                stored: header.data_bytes,
                given: config.nvm_data_bytes,
            });
        }
        if header.epoch == u32::MAX {
            return Err(HeapError::EpochsExhausted);
        }
        if copy == 1 {
            for i in 0..ram.id_cslot.words() {
                ram.id_cslot.set_word(i, ram.id_sdone.word(i));
            }
        }
        ram.id_sdone.clear_all();
        inner.committed = header.epoch;
        inner.header_copy = copy;
        inner.load_table()?;
        inner.storage.flush()?;
        Ok(Self::wrap(inner))
    }

    fn check_layout(storage: &S, config: &Config) -> Result<Layout> {
        let layout = Layout::new(config.nvm_offset, config.max_objects, config.nvm_data_bytes)?;
        if layout.end() > storage.size() {
            return Err(HeapError::StorageTooSmall {
                needed: layout.end(),
                size: storage.size(),
            });
        }
        Ok(layout)
    }

    /// The cache must be exactly as long as the configuration says: the persist bound
    /// counts its units from [`Config::cache_bytes`].
    fn check_cache(cache: &[u8], config: &Config) -> Result<()> {
        if u32::try_from(cache.len()) != Ok(config.cache_bytes) {
            return Err(HeapError::CacheSizeMismatch {
                configured: config.cache_bytes,
                given: cache.len(),
            });
        }
        Ok(())
    }

    fn carve(cache: &'c mut [u8], config: &Config, layout: &Layout) -> Result<Ram> {
        let size = cache.len();
        RamPlan::carve(cache, config.max_objects, layout.blocks).ok_or(HeapError::CacheTooSmall {
            needed: RamPlan::min_cache_bytes(config.max_objects, layout.blocks),
            size,
        })
    }

    fn carve_split(
        meta: &'c mut [u8],
        arena: &'c mut [u8],
        config: &Config,
        layout: &Layout,
    ) -> Result<Ram> {
        if !(arena.as_ptr() as usize).is_multiple_of(UNIT) {
            return Err(HeapError::BadConfig {
                reason: "a split heap's arena must be 8-byte aligned",
            });
        }
        let total = meta.len().checked_add(arena.len());
        if total.is_none_or(|t| u32::try_from(t) != Ok(config.cache_bytes)) {
            return Err(HeapError::CacheSizeMismatch {
                configured: config.cache_bytes,
                given: total.unwrap_or(usize::MAX),
            });
        }
        let units = (arena.len() / UNIT).min(crate::bits::MAX_UNITS);
        let size = meta.len();
        RamPlan::carve_split(
            meta,
            arena.as_mut_ptr(),
            units,
            config.max_objects,
            layout.blocks,
        )
        .ok_or(HeapError::CacheTooSmall {
            needed: RamPlan::split_meta_bytes(units.max(1), config.max_objects, layout.blocks),
            size,
        })
    }

    fn wrap(inner: Inner<S>) -> Self {
        VnvHeap {
            inner: RefCell::new(inner),
            _cache: PhantomData,
        }
    }

    fn lock(&self) -> Result<CellRefMut<'_, Inner<S>>> {
        let inner = self.inner.try_borrow_mut().map_err(|_| HeapError::Busy)?;
        if inner.poisoned {
            return Err(HeapError::Poisoned);
        }
        Ok(inner)
    }

    fn owns(&self, heap: &dyn Core) -> Result<()> {
        if core::ptr::addr_eq(heap as *const dyn Core, self as *const Self) {
            Ok(())
        } else {
            Err(HeapError::WrongHeap)
        }
    }

    /// Allocates `value` on the heap. The object goes to the cache, dirty, and reaches
    /// NVM (bytes and description) only when it is written back or persisted; if the
    /// cache cannot take it (every unit pinned, or it does not fit the dirty limit) it
    /// is written through at once.
    pub fn alloc<T: Persist>(&self, value: T) -> Result<Handle<'_, T>> {
        let (len, _) = shape::<T>()?;
        let mut inner = self.lock()?;
        inner.check_fits(len)?;
        let id = inner.free_ids(1)?;
        let block = inner.free_blocks(blocks_for(len))?;
        let desc = Desc {
            block,
            len,
            tag: type_tag::<T>(),
            flags: 0,
        };
        let hint = inner.create(id, desc, bytes_of(&value), 1)?;
        inner.ram.id_held.set(id.into(), true);
        Ok(Handle::new(self, id, block, hint))
    }

    /// Allocates an array of `len` copies of `fill`, tracked in chunks of `chunk_len`
    /// elements (each chunk is swapped, pinned and made dirty on its own). Each chunk
    /// is created as [`alloc`](Self::alloc) creates an object.
    pub fn alloc_array<T: Persist>(
        &self,
        len: u32,
        chunk_len: u16,
        fill: T,
    ) -> Result<ArrayHandle<'_, T>> {
        let (size, _) = shape::<T>()?;
        if len == 0 || chunk_len == 0 {
            return Err(HeapError::UnsupportedType { size: 0, align: 1 });
        }
        let chunk_bytes = usize::from(size) * usize::from(chunk_len);
        let chunk_bytes = u16::try_from(chunk_bytes).map_err(|_| HeapError::ObjectTooLarge {
            size: chunk_bytes,
            limit: MAX_OBJECT_BYTES as usize,
        })?;
        let chunks = len.div_ceil(u32::from(chunk_len));
        let chunks = u16::try_from(chunks).map_err(|_| HeapError::OutOfIds)?;
        let mut inner = self.lock()?;
        inner.check_fits(chunk_bytes)?;
        let first = inner.free_ids(chunks)?;
        let per = blocks_for(chunk_bytes);
        let base = inner.free_blocks(per * u32::from(chunks))?;
        let handle = ArrayHandle::new(self as &dyn Core, first, chunks, base, len, chunk_len);
        for k in 0..chunks {
            let elems = handle.chunk_elems(k);
            let desc = Desc {
                block: handle.chunk_block(k),
                len: handle.chunk_bytes(k),
                tag: type_tag::<T>(),
                flags: flag::CHUNK | if k > 0 { flag::CONT } else { 0 },
            };
            if let Err(e) = inner.create(first + k, desc, bytes_of(&fill), elems) {
                // Poisoned (storage failed): the RAM state no longer matters, and the
                // handle must not free chunks that were never created.
                let _ = ManuallyDrop::new(handle);
                return Err(e);
            }
        }
        inner
            .ram
            .id_held
            .set_range(first.into(), chunks.into(), true);
        Ok(handle)
    }

    /// Frees the object now, reporting a storage error (dropping the handle does the
    /// same but ignores errors). An object created since the last persist leaves no
    /// trace on NVM; a persisted one gets its dead description at the next persist (at
    /// once if the dirty limit has no room for it).
    pub fn free<T: Persist>(&self, handle: Handle<'_, T>) -> Result<()> {
        let h = ManuallyDrop::new(handle);
        h.heap.release(h.span())
    }

    /// Frees every chunk of the array now, reporting a storage error.
    pub fn free_array<T: Persist>(&self, handle: ArrayHandle<'_, T>) -> Result<()> {
        let h = ManuallyDrop::new(handle);
        h.heap.release(h.span())
    }

    /// Shared access to the object, pinned in the cache while the guard lives. Loads it
    /// if needed (one read of its bytes), evicting unpinned objects (and writing back
    /// dirty ones) to make room.
    pub fn get_ref<'a, T: Persist>(&self, handle: &'a Handle<'_, T>) -> Result<Ref<'a, T>> {
        let (data, st) = self.pin_handle(handle, Mode::Read)?;
        // SAFETY: `pin` returned the bytes of this handle's object, which holds a valid `T`
        // (written from a `T` or read back from its slot; every bit pattern is valid for
        // `Persist` types), 8-aligned, with one reader counted.
        Ok(unsafe { Ref::new(data.cast::<T>(), st) })
    }

    /// Exclusive access to the object, marked dirty. If the dirty limit would be
    /// exceeded, first writes back unpinned dirty objects; if it still cannot fit,
    /// returns [`HeapError::DirtyLimitExceeded`] and changes nothing else.
    pub fn get_mut<'a, T: Persist>(&self, handle: &'a mut Handle<'_, T>) -> Result<RefMut<'a, T>> {
        let (data, st) = self.pin_handle(handle, Mode::Write)?;
        // SAFETY: as in `get_ref`, and `pin` set the object's MUT bit for this guard; the
        // handle is borrowed mutably, so no other guard on it exists.
        Ok(unsafe { RefMut::new(data.cast::<T>(), st) })
    }

    fn pin_handle<T: Persist>(
        &self,
        handle: &Handle<'_, T>,
        mode: Mode,
    ) -> Result<(core::ptr::NonNull<u8>, core::ptr::NonNull<u16>)> {
        self.owns(handle.heap)?;
        let (len, _) = shape::<T>()?;
        let obj = Obj {
            id: handle.id,
            block: handle.block,
            len,
        };
        self.lock()?.pin(obj, &handle.hint, mode)
    }

    /// A copy of the object.
    pub fn get<T: Persist>(&self, handle: &Handle<'_, T>) -> Result<T> {
        Ok(*self.get_ref(handle)?)
    }

    /// Replaces the object's value. Like [`get_mut`](Self::get_mut), but an object that
    /// is not resident is not read from NVM first (all its bytes are replaced).
    pub fn set<T: Persist>(&self, handle: &mut Handle<'_, T>, value: T) -> Result<()> {
        let (data, st) = self.pin_handle(handle, Mode::Overwrite)?;
        // SAFETY: as in `get_mut`. The bytes may be stale arena contents (an object given
        // room without being read), which every bit pattern makes a valid `T`; they are
        // replaced whole before the guard is dropped.
        let mut g = unsafe { RefMut::new(data.cast::<T>(), st) };
        *g = value;
        Ok(())
    }

    /// Changes the object in place with `f` and returns what `f` returns.
    pub fn update<T: Persist, R>(
        &self,
        handle: &mut Handle<'_, T>,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R> {
        let mut g = self.get_mut(handle)?;
        Ok(f(&mut g))
    }

    /// Writes the object back now if it is dirty (its bytes, and its description if it
    /// was created since the last persist); it stays cached, clean. Nothing happens to a
    /// clean or swapped-out object. A persist afterwards has that much less to write.
    pub fn flush<T: Persist>(&self, handle: &Handle<'_, T>) -> Result<()> {
        self.owns(handle.heap)?;
        self.lock()?.flush_one(handle.id, &handle.hint, false)
    }

    /// Writes the object back if it is dirty and drops it from the cache, making its
    /// room free. Refused with [`HeapError::Borrowed`] while a guard pins it.
    pub fn unload<T: Persist>(&self, handle: &Handle<'_, T>) -> Result<()> {
        self.owns(handle.heap)?;
        self.lock()?.flush_one(handle.id, &handle.hint, true)
    }

    /// Whether the object differs from its copy on NVM (it is cached and was made
    /// dirty since its last write-back, or was created and not written yet).
    pub fn is_dirty<T: Persist>(&self, handle: &Handle<'_, T>) -> bool {
        let inner = self.inner.borrow();
        inner
            .find_resident(handle.id, handle.hint.get())
            .is_some_and(|u| inner.state(u) & state::DIRTY != 0)
    }

    fn chunk_pin<T: Persist>(
        &self,
        a: &ArrayHandle<'_, T>,
        chunk: u16,
        mode: Mode,
    ) -> Result<(core::ptr::NonNull<[T]>, core::ptr::NonNull<u16>)> {
        self.owns(a.heap)?;
        if chunk >= a.chunks {
            return Err(HeapError::IndexOutOfRange {
                index: chunk.into(),
                len: a.chunks.into(),
            });
        }
        shape::<T>()?;
        let obj = Obj {
            id: a.first + chunk,
            block: a.chunk_block(chunk),
            len: a.chunk_bytes(chunk),
        };
        let (data, st) = self.lock()?.pin(obj, &a.hint, mode)?;
        Ok((
            core::ptr::NonNull::slice_from_raw_parts(
                data.cast::<T>(),
                a.chunk_elems(chunk) as usize,
            ),
            st,
        ))
    }

    /// Shared access to chunk `chunk` of the array.
    pub fn get_chunk<'a, T: Persist>(
        &self,
        a: &'a ArrayHandle<'_, T>,
        chunk: u16,
    ) -> Result<Ref<'a, [T]>> {
        let (p, st) = self.chunk_pin(a, chunk, Mode::Read)?;
        // SAFETY: as in `get_ref`: the chunk's bytes hold `elems` valid, aligned `T`s.
        Ok(unsafe { Ref::new(p, st) })
    }

    /// Exclusive access to chunk `chunk` of the array; only this chunk becomes dirty.
    pub fn get_chunk_mut<'a, T: Persist>(
        &self,
        a: &'a mut ArrayHandle<'_, T>,
        chunk: u16,
    ) -> Result<RefMut<'a, [T]>> {
        let (p, st) = self.chunk_pin(a, chunk, Mode::Write)?;
        // SAFETY: as in `get_mut`; the array handle is borrowed mutably.
        Ok(unsafe { RefMut::new(p, st) })
    }

    /// A copy of element `index`.
    pub fn get_elem<T: Persist>(&self, a: &ArrayHandle<'_, T>, index: u32) -> Result<T> {
        if index >= a.len {
            return Err(HeapError::IndexOutOfRange { index, len: a.len });
        }
        let (c, i) = a.chunk_of(index);
        Ok(self.get_chunk(a, c)?[i])
    }

    /// Sets element `index`; only its chunk becomes dirty.
    pub fn set_elem<T: Persist>(
        &self,
        a: &mut ArrayHandle<'_, T>,
        index: u32,
        value: T,
    ) -> Result<()> {
        self.update_elem(a, index, |v| *v = value)
    }

    /// Changes element `index` in place; only its chunk becomes dirty.
    pub fn update_elem<T: Persist, R>(
        &self,
        a: &mut ArrayHandle<'_, T>,
        index: u32,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R> {
        if index >= a.len {
            return Err(HeapError::IndexOutOfRange { index, len: a.len });
        }
        let (c, i) = a.chunk_of(index);
        let mut g = self.get_chunk_mut(a, c)?;
        Ok(f(&mut g[i]))
    }

    /// Turns a stable id back into a handle (after a reopen, or after
    /// [`Handle::into_id`]). Fails, never misreads, if the id is free, already held, an
    /// array chunk, or stored with another size or type tag. Reads the object's
    /// description from NVM unless the cache or the RAM metadata holds it.
    pub fn handle_from_id<T: Persist>(&self, id: ObjectId) -> Result<Handle<'_, T>> {
        let (len, _) = shape::<T>()?;
        let mut inner = self.lock()?;
        let d = inner.claimable(id.0)?;
        if d.flags & flag::CHUNK != 0 || d.len != len || d.tag != type_tag::<T>() {
            return Err(HeapError::TypeMismatch { id: id.0 });
        }
        inner.ram.id_held.set(id.0.into(), true);
        Ok(Handle::new(self, id.0, d.block, u16::MAX))
    }

    /// Turns the id of an array (its first chunk) back into an array handle.
    pub fn array_from_id<T: Persist>(&self, id: ObjectId) -> Result<ArrayHandle<'_, T>> {
        let (size, _) = shape::<T>()?;
        let mut inner = self.lock()?;
        let first = inner.claimable(id.0)?;
        let tag = type_tag::<T>();
        let mismatch = HeapError::TypeMismatch { id: id.0 };
        if first.flags & (flag::CHUNK | flag::CONT) != flag::CHUNK
            || first.tag != tag
            || first.len % size != 0
        {
            return Err(mismatch);
        }
        let chunk_len = first.len / size;
        let per = blocks_for(first.len);
        let mut len = u32::from(chunk_len);
        let mut chunks: u16 = 1;
        let mut last_full = true;
        while let Some(next) =
            id.0.checked_add(chunks)
                .filter(|&n| n < inner.layout.max_objects)
        {
            if !inner.ram.id_live.get(next.into()) {
                break;
            }
            let d = inner.describe(next)?;
            if d.flags & flag::CONT == 0 {
                break;
            }
            let at = inner.layout.pair_at(next);
            let block = u32::from(first.block) + u32::from(chunks) * per;
            if !last_full
                || d.tag != tag
                || d.len % size != 0
                || d.len > first.len
                || u32::from(d.block) != block
            {
                return Err(HeapError::CorruptMetadata {
                    at,
                    what: "array chunk does not match the array's first chunk",
                });
            }
            if inner.ram.id_held.get(next.into()) {
                return Err(HeapError::AlreadyHeld { id: next });
            }
            last_full = d.len == first.len;
            len += u32::from(d.len / size);
            chunks += 1;
        }
        inner
            .ram
            .id_held
            .set_range(id.0.into(), chunks.into(), true);
        Ok(ArrayHandle::new(
            self,
            id.0,
            chunks,
            first.block,
            len,
            chunk_len,
        ))
    }

    /// Writes every dirty object (and the descriptions of objects created or freed
    /// since the last persist) and commits, so that a reopen after a power cut sees
    /// exactly this state. A power cut during persist leaves the previous persisted
    /// state. Costs at most [`wcec_bound`](crate::wcec_bound).
    ///
    /// It may run while guards are held, as from an interrupt before a power failure:
    /// an object under a [`RefMut`] (or a raw write pin) is written as its bytes are
    /// at that moment and stays dirty, so the next persist writes it again.
    pub fn persist(&self) -> Result<()> {
        self.lock()?.persist()
    }

    /// Raw pin for a heap service (split heaps only): makes object `id` resident and
    /// pinned, as [`get_ref`](Self::get_ref) (`write` false) or
    /// [`get_mut`](Self::get_mut) (`write` true: marked dirty, within the dirty limit)
    /// would, and returns the offset of its `len` bytes in the arena (8-aligned). `len`
    /// must be the object's size (checked: [`HeapError::TypeMismatch`]). Pins follow
    /// the guards' rules: any number of read pins, or one write pin
    /// ([`HeapError::Borrowed`]). `hint` is a cache hint as a handle keeps one (any
    /// value is safe).
    ///
    /// An id that has a [`Handle`] is refused ([`HeapError::AlreadyHeld`]): raw pins and
    /// guards never count on the same object, so an [`unpin`](Self::unpin) can never
    /// release a guard's pin. A write pin does not stop [`persist`](Self::persist):
    /// persist writes the object's current bytes (its writer must be stopped meanwhile)
    /// and leaves it dirty and pinned.
    pub fn pin(&self, id: ObjectId, len: u16, write: bool, hint: &Cell<u16>) -> Result<usize> {
        let mut inner = self.lock()?;
        inner.raw_check(id.0)?;
        if id.0 >= inner.layout.max_objects || !inner.ram.id_live.get(id.0.into()) {
            return Err(HeapError::NoSuchObject { id: id.0 });
        }
        let d = inner.table_desc(id.0);
        if d.len != len {
            return Err(HeapError::TypeMismatch { id: id.0 });
        }
        let mode = if write { Mode::Write } else { Mode::Read };
        let (data, _) = inner.pin(d.obj(id.0), hint, mode)?;
        let u = u32::from(hint.get());
        if write {
            let s = inner.state(u);
            inner.set_state(u, s | state::RAW);
        }
        Ok(data.as_ptr() as usize - inner.ram.arena as usize)
    }

    /// Releases a raw pin made by [`pin`](Self::pin) with the same `write`; refuses
    /// ([`HeapError::NotPinned`]) if the object holds no such pin.
    pub fn unpin(&self, id: ObjectId, write: bool, hint: &Cell<u16>) -> Result<()> {
        let inner = self.lock()?;
        inner.raw_check(id.0)?;
        let u = inner
            .find_resident(id.0, hint.get())
            .ok_or(HeapError::NotPinned { id: id.0 })?;
        hint.set(u as u16);
        let s = inner.state(u);
        if write {
            if s & (state::MUT | state::RAW) != state::MUT | state::RAW {
                return Err(HeapError::NotPinned { id: id.0 });
            }
            inner.set_state(u, s & !(state::MUT | state::RAW));
        } else {
            if state::readers(s) == 0 {
                return Err(HeapError::NotPinned { id: id.0 });
            }
            inner.set_state(u, s - state::READER);
        }
        Ok(())
    }

    /// Tells the eviction and write-back hands that raw object `id` was used since they
    /// last passed it, by pins a heap service does not see (its client's pin page): the
    /// second chance a pin gives (`REF`), and for a write to a dirty object the one
    /// making it dirty again gives (`WREF`). Nothing if it is not resident.
    pub fn touch(&self, id: ObjectId, write: bool, hint: &Cell<u16>) {
        let Ok(inner) = self.lock() else {
            return;
        };
        if !inner.split() || id.0 >= inner.layout.max_objects {
            return;
        }
        if let Some(u) = inner.find_resident(id.0, hint.get()) {
            hint.set(u as u16);
            let s = inner.state(u);
            let wref = if write && s & state::DIRTY != 0 {
                state::WREF
            } else {
                0
            };
            inner.set_state(u, s | state::REF | wref);
        }
    }

    /// Whether no object id is free now but a persist would free some: the id of a
    /// freed object is taken until its dead description is written (by a persist, or a
    /// write-back that needs the dirty room). A heap service asks for a checkpoint then,
    /// before an allocation fails for want of one. One step per id bitmap word.
    pub fn ids_wait_for_persist(&self) -> bool {
        let inner = self.inner.borrow();
        let r = &inner.ram;
        let n = u32::from(inner.layout.max_objects);
        let mut waiting = false;
        inner.step(r.id_live.words());
        for i in 0..r.id_live.words() {
            let below = n.saturating_sub(32 * i);
            let valid = if below >= 32 {
                u32::MAX
            } else {
                (1 << below) - 1
            };
            let used = (r.id_live.word(i) | r.id_held.word(i)) & valid;
            let freed = r.id_ddirty.word(i) & !r.id_hdone.word(i) & !used & valid;
            if !(used | freed) & valid != 0 {
                return false;
            }
            waiting |= freed != 0;
        }
        waiting
    }

    /// Where raw object `id` lies, if it is resident (split heaps; any hint is safe):
    /// its offset in the arena and state, without pinning, loading or scanning beyond
    /// the hint (a stale hint of a resident object scans the units, as a pin would).
    pub fn raw_resident(&self, id: ObjectId, hint: &Cell<u16>) -> Option<RawResident> {
        let inner = self.inner.borrow();
        if !inner.split() || id.0 >= inner.layout.max_objects {
            return None;
        }
        let u = inner.find_resident(id.0, hint.get())?;
        hint.set(u as u16);
        let s = inner.state(u);
        Some(RawResident {
            offset: inner.data_ptr(u) as usize - inner.ram.arena as usize,
            dirty: s & state::DIRTY != 0,
            pinned: state::pinned(s),
        })
    }

    /// After a restore of the RAM metadata (split heaps only): reads every resident
    /// object's bytes from its current copy on storage back into its place in the arena,
    /// whose contents were lost. Offsets do not change, so raw pins held across the
    /// checkpoint stay valid and see the bytes they had at the persist before it (dirty
    /// objects, write-pinned ones included, were written by that persist). Reads only
    /// from storage; never reads the arena.
    pub fn reload(&self) -> Result<()> {
        let mut inner = self.lock()?;
        if !inner.split() {
            return Err(HeapError::BadConfig {
                reason: "reload needs a split heap",
            });
        }
        inner.step(inner.ram.units);
        for u in 0..inner.ram.units {
            if inner.ram.unit_start.get(u) {
                inner.reload_one(u)?;
            }
        }
        Ok(())
    }

    /// The first byte of the arena (the cache after the metadata): the base of the
    /// offsets [`pin`](Self::pin) returns. Accesses through it must follow the pins.
    pub fn arena_ptr(&self) -> *mut u8 {
        self.inner.borrow().ram.arena
    }

    /// Bytes currently counted as dirty (size + overhead per dirty object, the
    /// overhead alone per free whose dead description is not written yet).
    pub fn dirty_bytes(&self) -> u32 {
        self.inner.borrow().dirty_bytes
    }

    /// Cache units, ids, NVM blocks and bitmap words the heap's linear scans have
    /// visited since it was created or opened (finding a resident object without a
    /// valid hint, making room, the write-back hand, persist, allocation). It measures
    /// the heap's CPU work beyond the fast path of a resident object, which does no
    /// scan; benchmarks turn it into cycles. The steps of one persist never exceed
    /// [`WcecBound::scan_steps`](crate::WcecBound::scan_steps).
    pub fn scan_steps(&self) -> u64 {
        self.inner.borrow().steps.get()
    }

    /// The configuration the heap runs with.
    pub fn config(&self) -> Config {
        self.inner.borrow().config
    }

    /// The epoch of the last completed persist (0 on a fresh heap).
    pub fn committed_epoch(&self) -> u32 {
        self.inner.borrow().committed
    }

    /// Bytes of the cache left for objects and their headers, after the RAM metadata.
    pub fn cache_capacity(&self) -> usize {
        self.inner.borrow().ram.units as usize * UNIT
    }

    /// Number of objects (or array chunks) resident in the cache.
    pub fn resident_count(&self) -> usize {
        let inner = self.inner.borrow();
        (0..inner.ram.units)
            .filter(|&u| inner.ram.unit_start.get(u))
            .count()
    }

    /// Whether the object is resident in the cache.
    pub fn is_resident<T: Persist>(&self, handle: &Handle<'_, T>) -> bool {
        self.inner
            .borrow()
            .find_resident(handle.id, handle.hint.get())
            .is_some()
    }

    /// Number of live objects (array chunks count one each).
    pub fn live_count(&self) -> usize {
        let inner = self.inner.borrow();
        (0..u32::from(inner.layout.max_objects))
            .filter(|&i| inner.ram.id_live.get(i))
            .count()
    }

    /// Runs `f` on a shared reference to the storage, for what a storage can tell
    /// without an access (its size, counters it keeps). `Nvm` reads and writes need
    /// `&mut`, so nothing reaches the device this way and the heap's state is untouched.
    pub fn with_storage<R>(&self, f: impl FnOnce(&S) -> R) -> R {
        f(&self.inner.borrow().storage)
    }

    /// Gives the storage back (every handle is gone, since they borrow the heap).
    /// Unpersisted changes are not written.
    pub fn into_storage(self) -> S {
        self.inner.into_inner().storage
    }
}

impl<S: Nvm> Core for VnvHeap<'_, S> {
    fn release(&self, span: Span) -> Result<()> {
        let mut inner = self.inner.try_borrow_mut().map_err(|_| HeapError::Busy)?;
        let mut result = Ok(());
        let per = blocks_for(span.chunk_bytes);
        for k in 0..span.count {
            let id = span.first + k;
            inner.ram.id_held.set(id.into(), false);
            if inner.poisoned {
                result = Err(HeapError::Poisoned);
                continue;
            }
            let obj = Obj {
                id,
                block: (u32::from(span.block) + u32::from(k) * per) as u16,
                len: if k + 1 == span.count {
                    span.last_bytes
                } else {
                    span.chunk_bytes
                },
            };
            if let Err(e) = inner.free_one(obj) {
                result = Err(e);
            }
        }
        result
    }

    fn forget(&self, first: u16, count: u16) {
        if let Ok(inner) = self.inner.try_borrow_mut() {
            inner
                .ram
                .id_held
                .set_range(first.into(), count.into(), false);
        }
    }
}

impl<S: Nvm> Inner<S> {
    fn new(storage: S, config: Config, layout: Layout, ram: Ram, g: u32, copy: u8) -> Self {
        Inner {
            storage,
            config,
            layout,
            ram,
            committed: g,
            header_copy: copy,
            epoch_written: false,
            dirty_bytes: 0,
            poisoned: false,
            evict_hand: 0,
            wb: WriteBack::new(),
            steps: Cell::new(0),
        }
    }

    pub(crate) fn working(&self) -> u32 {
        self.committed + 1
    }

    /// Marks the heap poisoned and turns the storage error into a heap error.
    pub(crate) fn fail(&mut self, e: NvmError) -> HeapError {
        self.poisoned = true;
        HeapError::Storage(e)
    }

    pub(crate) fn nvm_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
        self.storage.read(offset, buf).map_err(|e| self.fail(e))
    }

    pub(crate) fn nvm_write(&mut self, offset: u32, data: &[u8]) -> Result<()> {
        self.storage.write(offset, data).map_err(|e| self.fail(e))
    }

    fn nvm_flush(&mut self) -> Result<()> {
        self.storage.flush().map_err(|e| self.fail(e))
    }

    /// Writes `n` zero bytes from `at` on, in stores of up to 256 bytes.
    fn write_zeros(&mut self, at: u32, n: u32) -> Result<()> {
        let zero = [0u8; 256];
        let mut done = 0;
        while done < n {
            let k = (n - done).min(zero.len() as u32);
            self.nvm_write(at + done, &zero[..k as usize])?;
            done += k;
        }
        Ok(())
    }

    /// Reads the little-endian words of a slot bitmap at `at` into `bits`.
    fn read_words(&mut self, at: u32, bits: crate::bits::Bits) -> Result<()> {
        let mut buf = [0u8; 256];
        let total = bits.words() * 4;
        let mut done = 0;
        while done < total {
            let n = (total - done).min(buf.len() as u32) as usize;
            self.nvm_read(at + done, &mut buf[..n])?;
            for (k, w) in buf[..n].chunks_exact(4).enumerate() {
                let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                bits.set_word(done / 4 + k as u32, w);
            }
            done += n as u32;
        }
        Ok(())
    }

    /// Counts `n` steps of a scan (see [`VnvHeap::scan_steps`]).
    pub(crate) fn step(&self, n: u32) {
        self.steps.set(self.steps.get() + u64::from(n));
    }

    /// Reads every entry pair (in reads of 8 pairs) after `open` chose the committed
    /// epoch: erases halves of an epoch that never committed, sets each id's working
    /// half, and marks live objects and their blocks (and, split, their descriptions).
    fn load_table(&mut self) -> Result<()> {
        const E: usize = ENTRY_BYTES as usize;
        let max = self.layout.max_objects;
        let mut buf = [0u8; 8 * E];
        let mut id = 0u16;
        while id < max {
            let n = (max - id).min(8);
            let bytes = usize::from(n) * E;
            self.nvm_read(self.layout.pair_at(id), &mut buf[..bytes])?;
            for k in 0..n {
                let mut pair = [0u8; E];
                pair.copy_from_slice(&buf[usize::from(k) * E..][..E]);
                self.load_entry(id + k, &pair)?;
            }
            id += n;
        }
        Ok(())
    }

    fn load_entry(&mut self, id: u16, b: &[u8; ENTRY_BYTES as usize]) -> Result<()> {
        let g = self.committed;
        let mut pair = Pair::decode(id, b);
        for i in 0..2u8 {
            if pair.halves[usize::from(i)].is_some_and(|h| h.epoch > g) {
                // Written by an epoch that never committed: erase it before the new
                // working epoch (which reuses that number) can be confused by it.
                self.nvm_write(self.layout.half_at(id, i), &[0u8; HALF_BYTES as usize])?;
                pair.halves[usize::from(i)] = None;
            }
        }
        // `g < u32::MAX` was checked by `open_with`.
        self.ram
            .id_whalf
            .set(u32::from(id), pair.working_half(g + 1) == 1);
        let Some((i, h)) = pair.newest(g) else {
            return Ok(());
        };
        if !h.live() {
            return Ok(());
        }
        let at = self.layout.half_at(id, i);
        let bad = |what| Err(HeapError::CorruptMetadata { at, what });
        if h.len == 0 || h.flags & !flag::ALL != 0 {
            return bad("entry has length 0 or unknown flags");
        }
        if h.flags & flag::CONT != 0 && h.flags & flag::CHUNK == 0 {
            return bad("entry continues an array but is no array chunk");
        }
        let n = blocks_for(h.len);
        if h.block
            .checked_add(n)
            .is_none_or(|end| end > self.layout.blocks)
        {
            return bad("entry points past the data area");
        }
        if (h.block..h.block + n).any(|b| self.ram.block_used.get(b)) {
            return bad("entry overlaps another object's blocks");
        }
        self.ram.block_used.set_range(h.block, n, true);
        self.ram.id_live.set(u32::from(id), true);
        if self.split() {
            self.set_table_desc(
                id,
                Desc {
                    block: h.block as u16,
                    len: h.len,
                    tag: h.tag,
                    flags: h.flags & !flag::LIVE,
                },
            );
        }
        Ok(())
    }

    /// The half of `id`'s entry pair that the working epoch writes (never the one
    /// holding the committed description).
    pub(crate) fn working_half(&self, id: u16) -> u8 {
        u8::from(self.ram.id_whalf.get(id.into()))
    }

    /// The half holding `id`'s current description on NVM: the working half once the
    /// working epoch wrote it, else the committed one.
    fn current_half(&self, id: u16) -> u8 {
        let w = self.working_half(id);
        if self.ram.id_hdone.get(id.into()) {
            w
        } else {
            1 - w
        }
    }

    /// The slot the working epoch writes `id`'s bytes to (never the committed one).
    pub(crate) fn working_slot(&self, id: u16) -> u8 {
        1 - u8::from(self.ram.id_cslot.get(id.into()))
    }

    /// The slot holding `id`'s current bytes on NVM.
    pub(crate) fn current_slot(&self, id: u16) -> u8 {
        let c = u8::from(self.ram.id_cslot.get(id.into()));
        if self.ram.id_sdone.get(id.into()) {
            1 - c
        } else {
            c
        }
    }

    /// The encoded working half `h` of `id` and where it goes; records that it is now
    /// current and written (the caller writes it, directly or through a [`Run`]).
    pub(crate) fn working_half_write(&mut self, id: u16, h: &Half) -> (u32, [u8; 16]) {
        self.ram.id_hdone.set(id.into(), true);
        self.ram.id_ddirty.set(id.into(), false);
        self.epoch_written = true;
        (self.layout.half_at(id, self.working_half(id)), h.encode(id))
    }

    fn write_half(&mut self, id: u16, h: &Half) -> Result<()> {
        let (at, b) = self.working_half_write(id, h);
        self.nvm_write(at, &b)
    }

    /// The current description of the live object `id` from NVM: the 8 description
    /// bytes of its current half (2 SPI words; the RAM bits say which half).
    fn read_desc(&mut self, id: u16) -> Result<Desc> {
        let at = self.layout.half_at(id, self.current_half(id));
        let mut b = [0u8; DESC_BYTES];
        self.nvm_read(at + DESC_OFFSET, &mut b)?;
        let h = Half::decode_desc(0, &b);
        let bad = |what| Err(HeapError::CorruptMetadata { at, what });
        if !h.live() || h.len == 0 || h.flags & !flag::ALL != 0 {
            return bad("a live id's current entry is not a live object");
        }
        if h.block
            .checked_add(blocks_for(h.len))
            .is_none_or(|end| end > self.layout.blocks)
        {
            return bad("entry points past the data area");
        }
        Ok(Desc {
            block: h.block as u16,
            len: h.len,
            tag: h.tag,
            flags: h.flags & !flag::LIVE,
        })
    }

    /// The description of the live object `id`: from the split heap's table, from the
    /// cache header of an object created in this epoch, or read from NVM.
    pub(crate) fn describe(&mut self, id: u16) -> Result<Desc> {
        if self.split() {
            return Ok(self.table_desc(id));
        }
        if let Some(u) = self.find_resident(id, u16::MAX) {
            if let Some(d) = self.long_desc(u) {
                return Ok(d);
            }
        }
        if self.ram.id_ddirty.get(id.into()) {
            return Err(HeapError::CorruptMetadata {
                at: self.layout.pair_at(id),
                what: "an object created in this epoch is neither cached nor written",
            });
        }
        self.read_desc(id)
    }

    /// The description of `id`, if it may get a new handle.
    fn claimable(&mut self, id: u16) -> Result<Desc> {
        if id >= self.layout.max_objects || !self.ram.id_live.get(id.into()) {
            return Err(HeapError::NoSuchObject { id });
        }
        if self.ram.id_held.get(id.into()) {
            return Err(HeapError::AlreadyHeld { id });
        }
        self.describe(id)
    }

    fn check_fits(&self, len: u16) -> Result<()> {
        if self.units_for(len, false) > self.ram.units {
            return Err(HeapError::ObjectTooLarge {
                size: len.into(),
                limit: self.ram.units as usize * UNIT - self.units_for(0, false) as usize * UNIT,
            });
        }
        Ok(())
    }

    /// The first of `n` consecutive free ids. A persisted object freed in this epoch
    /// whose dead half is not written yet keeps its id until the commit: an object
    /// created there and freed again would otherwise leave the committed description
    /// current (it writes a dead half only if its own half was written).
    fn free_ids(&self, n: u16) -> Result<u16> {
        let r = &self.ram;
        let taken =
            |i| r.id_live.word(i) | r.id_held.word(i) | (r.id_ddirty.word(i) & !r.id_hdone.word(i));
        let (found, steps) = find_clear_run(self.layout.max_objects.into(), n.into(), taken);
        self.step(steps);
        found.map(|id| id as u16).ok_or(HeapError::OutOfIds)
    }

    /// The first of `n` consecutive free NVM blocks. Blocks freed in the working epoch
    /// stay used until the commit, so the committed state's bytes are never reused early.
    fn free_blocks(&self, n: u32) -> Result<u16> {
        let (found, steps) = self.ram.block_used.find_clear_run(n);
        self.step(steps);
        found
            .map(|b| b as u16)
            .ok_or(HeapError::NvmFull { needed_blocks: n })
    }

    /// Creates object `id` with description `d`, holding `count` copies of `elem`, in
    /// the working epoch: in the cache, dirty, if it can take it (within the dirty
    /// limit, evicting as a load would), else written through (its bytes to its working
    /// slot, then its description). Returns its cache unit or `u16::MAX`.
    fn create(&mut self, id: u16, d: Desc, elem: &[u8], count: u32) -> Result<u16> {
        let i = u32::from(id);
        if self.ram.id_ddirty.get(i) {
            // A free of this epoch waiting for its dead half: the new description takes
            // its place (and its count in the dirty bytes).
            self.dirty_bytes = self.dirty_bytes.saturating_sub(Config::DIRTY_OVERHEAD);
        }
        self.ram.id_live.set(i, true);
        self.ram.id_new.set(i, true);
        self.ram.id_ddirty.set(i, true);
        self.ram
            .block_used
            .set_range(d.block.into(), blocks_for(d.len), true);
        if self.split() {
            self.set_table_desc(id, d);
        }
        if let Some(u) = self.cache_new(d.obj(id), d, elem, count)? {
            return Ok(u as u16);
        }
        let at = self.layout.slot_at(d.block, self.working_slot(id));
        self.write_repeated(at, elem, count)?;
        self.ram.id_sdone.set(i, true);
        self.write_half(id, &d.half(self.working()))?;
        Ok(u16::MAX)
    }

    /// Writes `count` copies of `elem` from `at` on, in stores of up to 64 bytes.
    fn write_repeated(&mut self, at: u32, elem: &[u8], count: u32) -> Result<()> {
        self.epoch_written = true;
        if count == 1 || elem.len() > 32 {
            for i in 0..count {
                self.nvm_write(at + i * elem.len() as u32, elem)?;
            }
            return Ok(());
        }
        let per = 64 / elem.len();
        let mut buf = [0u8; 64];
        for k in 0..per {
            buf[k * elem.len()..(k + 1) * elem.len()].copy_from_slice(elem);
        }
        let mut done = 0u32;
        while done < count {
            let n = (count - done).min(per as u32);
            let bytes = n as usize * elem.len();
            self.nvm_write(at + done * elem.len() as u32, &buf[..bytes])?;
            done += n;
        }
        Ok(())
    }

    /// Frees the live object `o` in the working epoch: drops it from the cache; an
    /// object created in this epoch gives its blocks back at once and needs a dead half
    /// only if its description was written, a persisted one keeps its blocks until the
    /// commit (pending) and always needs one. The dead half waits for the persist if the
    /// dirty limit has room for it, else it is written now.
    fn free_one(&mut self, o: Obj) -> Result<()> {
        let id = o.id;
        let i = u32::from(id);
        if id >= self.layout.max_objects || !self.ram.id_live.get(i) {
            return Ok(());
        }
        if let Some(u) = self.find_resident(id, u16::MAX) {
            let s = self.state(u);
            if state::pinned(s) {
                // Only raw pins can be left on an object whose handle is freed.
                return Err(HeapError::Borrowed { id });
            }
            if s & state::DIRTY != 0 {
                self.dirty_bytes = self
                    .dirty_bytes
                    .saturating_sub(u32::from(o.len) + Config::DIRTY_OVERHEAD);
            }
            self.drop_resident(u);
        }
        let blocks = blocks_for(o.len);
        let dead_needed = if self.ram.id_new.get(i) {
            self.ram.block_used.set_range(o.block.into(), blocks, false);
            self.ram.id_hdone.get(i)
        } else {
            self.ram
                .block_pending
                .set_range(o.block.into(), blocks, true);
            true
        };
        self.ram.id_live.set(i, false);
        self.ram.id_new.set(i, false);
        self.ram.id_ddirty.set(i, dead_needed);
        if dead_needed {
            if self.dirty_bytes + Config::DIRTY_OVERHEAD <= self.config.max_dirty_bytes {
                self.dirty_bytes += Config::DIRTY_OVERHEAD;
            } else {
                self.write_half(id, &Half::dead(self.working()))?;
            }
        }
        Ok(())
    }

    /// Writes the dead halves of every freed id still waiting for one (through `run`).
    /// Scans the id bitmaps word by word.
    pub(crate) fn write_pending_frees(&mut self, run: &mut Run) -> Result<()> {
        let words = self.ram.id_ddirty.words();
        self.step(words);
        for wi in 0..words {
            let mut w = self.ram.id_ddirty.word(wi) & !self.ram.id_live.word(wi);
            while w != 0 {
                let id = (wi * 32 + w.trailing_zeros()) as u16;
                w &= w - 1;
                let (at, b) = self.working_half_write(id, &Half::dead(self.working()));
                run.add(self, at, &b)?;
                self.dirty_bytes = self.dirty_bytes.saturating_sub(Config::DIRTY_OVERHEAD);
            }
        }
        Ok(())
    }

    /// Writes the commit record copy `copy` for epoch `epoch`: the fixed part, the slot
    /// bitmap as it stands after the working epoch (`cslot ^ sdone`) and the checksum,
    /// front to back in writes of up to [`Run`]'s size. Scan steps: two per bitmap word
    /// (checksum, write).
    fn write_record(&mut self, copy: u8, epoch: u32) -> Result<()> {
        let (c, s) = (self.ram.id_cslot, self.ram.id_sdone);
        let words = c.words();
        debug_assert_eq!(words * 4, bitmap_bytes(self.layout.max_objects));
        let fixed = Header {
            version: FORMAT_VERSION,
            max_objects: self.layout.max_objects,
            epoch,
            data_bytes: self.layout.data_bytes,
        }
        .encode();
        let crc = record_crc(&fixed, (0..words).map(|i| c.word(i) ^ s.word(i)));
        let at = self.layout.header_at(copy);
        let words_at = at + RECORD_FIXED as u32;
        let mut run = Run::new();
        run.add(self, at, &fixed)?;
        for i in 0..words {
            let w = (c.word(i) ^ s.word(i)).to_le_bytes();
            run.add(self, words_at + 4 * i, &w)?;
        }
        run.add(self, words_at + 4 * words, &crc.to_le_bytes())?;
        self.step(2 * words);
        run.flush(self)
    }

    /// See [`VnvHeap::persist`]. Keep in step with [`wcec_bound`](crate::wcec_bound):
    /// each dirty object's bytes (contiguous ones gathered into one write) and, for one
    /// created in this epoch, its half; a dead half per free waiting for one; then
    /// flush, the commit record (fixed part and slot bitmap), flush. Reads nothing.
    /// Scan steps: one per cache unit, one per unit of each new object whose header is
    /// shortened (at most one more per unit), one per id bitmap word for the frees, two
    /// per word for the record, then five whole id-bitmap and two block-bitmap
    /// operations.
    fn persist(&mut self) -> Result<()> {
        let w = self.working();
        if w == u32::MAX {
            return Err(HeapError::EpochsExhausted);
        }
        let (mut data, mut descs) = (Run::new(), Run::new());
        self.step(self.ram.units);
        let mut u = 0;
        while u < self.ram.units {
            if !self.ram.unit_start.get(u) {
                u += 1;
                continue;
            }
            let end = self.extent_end(u);
            let s = self.state(u);
            if s & state::DIRTY != 0 {
                let cost = self.write_object(u, &mut data, &mut descs)?;
                if s & state::MUT != 0 {
                    // Its writer may change it again after the persist: it stays dirty
                    // (and counted), and the next persist writes it again.
                    let now = self.state(u);
                    self.set_state(u, now | state::DIRTY);
                    self.dirty_bytes += cost;
                }
                self.shorten(u);
            }
            u = end;
        }
        self.write_pending_frees(&mut descs)?;
        data.flush(self)?;
        descs.flush(self)?;
        if !self.epoch_written {
            return Ok(());
        }
        self.nvm_flush()?;
        // The other copy: the one holding `G` stays intact if this is torn.
        let copy = 1 - self.header_copy;
        self.write_record(copy, w)?;
        self.nvm_flush()?;
        self.committed = w;
        self.header_copy = copy;
        self.epoch_written = false;
        let r = self.ram;
        r.block_used.clear_where(r.block_pending);
        r.block_pending.clear_all();
        // Every slot and half written is now the committed one, so the other becomes
        // the working one of the next epoch; nothing is new any more.
        r.id_cslot.toggle_where(r.id_sdone);
        r.id_sdone.clear_all();
        r.id_whalf.toggle_where(r.id_hdone);
        r.id_hdone.clear_all();
        r.id_new.clear_all();
        self.step(5 * r.id_cslot.words() + 2 * r.block_used.words());
        Ok(())
    }
}
