//! The heap: a RAM cache of objects in front of their versioned copies on NVM.
//!
//! Invariants this file keeps (each stated next to the code that keeps it):
//! - NVM: nothing written in the working epoch `W = G + 1` overwrites the committed
//!   description (entry half) or bytes (slot) of any object, nor the current commit
//!   record; see the versioning rule in [`format`](crate::format).
//! - Dirty bytes (size + [`Config::DIRTY_OVERHEAD`] per dirty object) never exceed
//!   `max_dirty_bytes`, and the cache is exactly [`Config::cache_bytes`] long, so
//!   `persist` stays within [`wcec_bound`](crate::wcec_bound) in storage traffic and in
//!   scan steps.
//! - A pinned object (a guard exists) is never moved, evicted or overwritten, and a
//!   mutably pinned one is never read by the heap either.
//! - After any storage error the heap is poisoned and refuses every call.
//!
//! It must never panic on user input, allocate, or create a reference covering the
//! arena (guards hold references into it).

use crate::bits::{Ram, RamPlan, UNIT};
use crate::format::{
    blocks_for, flag, Half, Header, HeaderState, Layout, Pair, DESC_BYTES, DESC_OFFSET,
    ENTRY_BYTES, FORMAT_VERSION, HALF_BYTES, HEADER_BYTES, MAX_OBJECT_BYTES,
};
use crate::guard::state;
use crate::handle::Core;
use crate::{
    type_tag, ArrayHandle, Config, Handle, HeapError, ObjectId, Persist, Ref, RefMut, Result,
};
use amber_nvm::{Nvm, NvmError};
use core::cell::{Cell, RefCell, RefMut as CellRefMut};
use core::marker::PhantomData;
use core::mem::{align_of, size_of, ManuallyDrop};
use core::ptr::NonNull;
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

struct Inner<S> {
    storage: S,
    config: Config,
    layout: Layout,
    ram: Ram,
    /// Committed epoch `G`; the working epoch is `G + 1`.
    committed: u32,
    /// Which commit record copy holds `G`.
    header_copy: u8,
    /// Whether the working epoch wrote anything to NVM (else persist has nothing to
    /// commit).
    epoch_written: bool,
    dirty_bytes: u32,
    poisoned: bool,
    /// Unit of the object made dirty most recently (a hint for `reserve_dirty`, checked
    /// before use).
    last_dirtied: u32,
    /// Units, ids, blocks and bitmap words visited by the heap's scans so far: its CPU
    /// work beyond the fast path, reported by [`VnvHeap::scan_steps`].
    steps: Cell<u64>,
}

/// Whether a pin is for reading or writing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Read,
    Write,
    /// Writing, and the caller overwrites every byte before the guard goes: an object
    /// that is not resident is given room but not read from NVM.
    Overwrite,
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

/// Offset of an object's bytes from its header.
fn data_offset(align: usize) -> usize {
    if align > 4 {
        8
    } else {
        4
    }
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

    /// Like [`new`](Self::new), for a split heap: the RAM metadata (bitmaps and a
    /// header per arena unit, see [`Config::split_metadata_bytes`]) lives in `meta`,
    /// and `arena` (8-aligned) holds nothing but object bytes, at offsets
    /// [`pin`](Self::pin) reports. `meta.len() + arena.len()` must be
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

    fn format_with(mut storage: S, config: Config, layout: Layout, ram: Ram) -> Result<Self> {
        // Erase both commit records first, so an interrupted format reads as unformatted
        // or corrupt, never as an older heap; then the table, then the first record.
        let zero = [0u8; 256];
        storage.write(layout.header_at(1), &zero[..HEADER_BYTES as usize])?;
        storage.write(layout.header_at(0), &zero[..HEADER_BYTES as usize])?;
        let table = u32::from(layout.max_objects) * ENTRY_BYTES;
        let mut done = 0;
        while done < table {
            let n = (table - done).min(zero.len() as u32);
            storage.write(layout.pair_at(0) + done, &zero[..n as usize])?;
            done += n;
        }
        storage.flush()?;
        let header = Header {
            version: FORMAT_VERSION,
            max_objects: layout.max_objects,
            epoch: 0,
            data_bytes: layout.data_bytes,
        };
        storage.write(layout.header_at(0), &header.encode())?;
        storage.flush()?;
        Ok(Self::assemble(storage, config, layout, ram, 0, 0))
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

    fn open_with(mut storage: S, config: Config, layout: Layout, ram: Ram) -> Result<Self> {
        let mut best: Option<(u8, Header)> = None;
        let mut blank = true;
        for copy in 0..2u8 {
            let mut b = [0u8; HEADER_BYTES as usize];
            storage.read(layout.header_at(copy), &mut b)?;
            match Header::decode(&b) {
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
        let g = header.epoch;
        for id in 0..layout.max_objects {
            let mut b = [0u8; ENTRY_BYTES as usize];
            storage.read(layout.pair_at(id), &mut b)?;
            let mut pair = Pair::decode(id, &b);
            for i in 0..2u8 {
                if pair.halves[usize::from(i)].is_some_and(|h| h.epoch > g) {
                    // Written by an epoch that never committed: erase it before the new
                    // working epoch (which reuses that number) can be confused by it.
                    storage.write(layout.half_at(id, i), &[0u8; HALF_BYTES as usize])?;
                    pair.halves[usize::from(i)] = None;
                }
            }
            // `g < u32::MAX` was checked above.
            ram.id_whalf
                .set(u32::from(id), pair.working_half(g + 1) == 1);
            let Some((i, h)) = pair.newest(g) else {
                continue;
            };
            if !h.live() {
                continue;
            }
            let at = layout.half_at(id, i);
            let bad = |what| Err(HeapError::CorruptMetadata { at, what });
            if h.len == 0 || h.flags & !flag::ALL != 0 {
                return bad("entry has length 0 or unknown flags");
            }
            if h.flags & flag::CONT != 0 && h.flags & flag::CHUNK == 0 {
                return bad("entry continues an array but is no array chunk");
            }
            let n = blocks_for(h.len);
            if h.block.checked_add(n).is_none_or(|end| end > layout.blocks) {
                return bad("entry points past the data area");
            }
            if (h.block..h.block + n).any(|b| ram.block_used.get(b)) {
                return bad("entry overlaps another object's blocks");
            }
            ram.block_used.set_range(h.block, n, true);
            ram.id_live.set(u32::from(id), true);
        }
        storage.flush()?;
        Ok(Self::assemble(storage, config, layout, ram, g, copy))
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
        RamPlan::carve(cache, config.max_objects, layout.blocks).ok_or_else(|| {
            let words = |bits: u32| bits.div_ceil(32) as usize * 4;
            let needed = (crate::bits::ID_BITMAPS * words(config.max_objects.into())
                + 2 * words(layout.blocks)
                + 8)
            .next_multiple_of(UNIT)
                + 2 * UNIT
                + UNIT;
            HeapError::CacheTooSmall { needed, size }
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

    fn assemble(storage: S, config: Config, layout: Layout, ram: Ram, g: u32, copy: u8) -> Self {
        VnvHeap {
            inner: RefCell::new(Inner {
                storage,
                config,
                layout,
                ram,
                committed: g,
                header_copy: copy,
                epoch_written: false,
                dirty_bytes: 0,
                poisoned: false,
                last_dirtied: u32::MAX,
                steps: Cell::new(0),
            }),
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

    /// Allocates `value` on the heap. The object is written through to NVM (it is
    /// clean) and cached if the cache has a free gap for it.
    pub fn alloc<T: Persist>(&self, value: T) -> Result<Handle<'_, T>> {
        let (len, align) = shape::<T>()?;
        let mut inner = self.lock()?;
        inner.check_fits(len, align)?;
        let id = inner.free_ids(1)?;
        let block = inner.free_blocks(blocks_for(len))?;
        inner.create(id, block, len, type_tag::<T>(), 0, bytes_of(&value), 1)?;
        let hint = inner.cache_fresh(id, len, align, bytes_of(&value));
        inner.ram.id_held.set(id.into(), true);
        Ok(Handle::new(self, id, hint))
    }

    /// Allocates an array of `len` copies of `fill`, tracked in chunks of `chunk_len`
    /// elements (each chunk is swapped, pinned and made dirty on its own).
    pub fn alloc_array<T: Persist>(
        &self,
        len: u32,
        chunk_len: u16,
        fill: T,
    ) -> Result<ArrayHandle<'_, T>> {
        let (size, align) = shape::<T>()?;
        if len == 0 || chunk_len == 0 {
            return Err(HeapError::UnsupportedType { size: 0, align });
        }
        let chunk_bytes = usize::from(size) * usize::from(chunk_len);
        let chunk_bytes = u16::try_from(chunk_bytes).map_err(|_| HeapError::ObjectTooLarge {
            size: chunk_bytes,
            limit: MAX_OBJECT_BYTES as usize,
        })?;
        let chunks = len.div_ceil(u32::from(chunk_len));
        let chunks = u16::try_from(chunks).map_err(|_| HeapError::OutOfIds)?;
        let mut inner = self.lock()?;
        inner.check_fits(chunk_bytes, align)?;
        let first = inner.free_ids(chunks)?;
        let per = blocks_for(chunk_bytes);
        let base = inner.free_blocks(per * u32::from(chunks))?;
        let handle = ArrayHandle::new(self as &dyn Core, first, chunks, len, chunk_len);
        for k in 0..chunks {
            let elems = handle.chunk_elems(k);
            let bytes = (elems * u32::from(size)) as u16;
            let flags = flag::CHUNK | if k > 0 { flag::CONT } else { 0 };
            let block = base + u32::from(k) * per;
            if let Err(e) = inner.create(
                first + k,
                block,
                bytes,
                type_tag::<T>(),
                flags,
                bytes_of(&fill),
                elems,
            ) {
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
    /// same but ignores errors).
    pub fn free<T: Persist>(&self, handle: Handle<'_, T>) -> Result<()> {
        let h = ManuallyDrop::new(handle);
        h.heap.release(h.id, 1)
    }

    /// Frees every chunk of the array now, reporting a storage error.
    pub fn free_array<T: Persist>(&self, handle: ArrayHandle<'_, T>) -> Result<()> {
        let h = ManuallyDrop::new(handle);
        h.heap.release(h.first, h.chunks)
    }

    /// Shared access to the object, pinned in the cache while the guard lives. Loads it
    /// if needed, evicting unpinned objects (and writing back dirty ones) to make room.
    pub fn get_ref<'a, T: Persist>(&self, handle: &'a Handle<'_, T>) -> Result<Ref<'a, T>> {
        self.owns(handle.heap)?;
        let (len, align) = shape::<T>()?;
        let (data, st) = self
            .lock()?
            .pin(handle.id, len, align, &handle.hint, Mode::Read)?;
        // SAFETY: `pin` returned the bytes of this handle's object, which holds a valid `T`
        // (written from a `T` or read back from its slot; every bit pattern is valid for
        // `Persist` types), aligned to `align_of::<T>()`, with one reader counted.
        Ok(unsafe { Ref::new(data.cast::<T>(), st) })
    }

    /// Exclusive access to the object, marked dirty. If the dirty limit would be
    /// exceeded, first writes back unpinned dirty objects; if it still cannot fit,
    /// returns [`HeapError::DirtyLimitExceeded`] and changes nothing else.
    pub fn get_mut<'a, T: Persist>(&self, handle: &'a mut Handle<'_, T>) -> Result<RefMut<'a, T>> {
        self.owns(handle.heap)?;
        let (len, align) = shape::<T>()?;
        let (data, st) = self
            .lock()?
            .pin(handle.id, len, align, &handle.hint, Mode::Write)?;
        // SAFETY: as in `get_ref`, and `pin` set the object's MUT bit for this guard; the
        // handle is borrowed mutably, so no other guard on it exists.
        Ok(unsafe { RefMut::new(data.cast::<T>(), st) })
    }

    /// A copy of the object.
    pub fn get<T: Persist>(&self, handle: &Handle<'_, T>) -> Result<T> {
        Ok(*self.get_ref(handle)?)
    }

    /// Replaces the object's value. Like [`get_mut`](Self::get_mut), but an object that
    /// is not resident is not read from NVM first (all its bytes are replaced).
    pub fn set<T: Persist>(&self, handle: &mut Handle<'_, T>, value: T) -> Result<()> {
        self.owns(handle.heap)?;
        let (len, align) = shape::<T>()?;
        let (data, st) = self
            .lock()?
            .pin(handle.id, len, align, &handle.hint, Mode::Overwrite)?;
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

    fn chunk_pin<T: Persist>(
        &self,
        a: &ArrayHandle<'_, T>,
        chunk: u16,
        mode: Mode,
    ) -> Result<(NonNull<[T]>, NonNull<u16>)> {
        self.owns(a.heap)?;
        if chunk >= a.chunks {
            return Err(HeapError::IndexOutOfRange {
                index: chunk.into(),
                len: a.chunks.into(),
            });
        }
        let (size, align) = shape::<T>()?;
        let elems = a.chunk_elems(chunk);
        let bytes = (elems * u32::from(size)) as u16;
        let (data, st) = self
            .lock()?
            .pin(a.first + chunk, bytes, align, &a.hint, mode)?;
        Ok((
            NonNull::slice_from_raw_parts(data.cast::<T>(), elems as usize),
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
    /// array chunk, or stored with another size or type tag.
    pub fn handle_from_id<T: Persist>(&self, id: ObjectId) -> Result<Handle<'_, T>> {
        let (len, _) = shape::<T>()?;
        let mut inner = self.lock()?;
        let h = inner.claimable(id.0)?;
        if h.flags & flag::CHUNK != 0 || h.len != len || h.tag != type_tag::<T>() {
            return Err(HeapError::TypeMismatch { id: id.0 });
        }
        inner.ram.id_held.set(id.0.into(), true);
        Ok(Handle::new(self, id.0, u16::MAX))
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
            let h = inner.read_desc(next)?;
            if h.flags & flag::CONT == 0 {
                break;
            }
            let at = inner.layout.half_at(next, inner.current_half(next));
            if !last_full || h.tag != tag || h.len % size != 0 || h.len > first.len {
                return Err(HeapError::CorruptMetadata {
                    at,
                    what: "array chunk does not match the array's first chunk",
                });
            }
            if inner.ram.id_held.get(next.into()) {
                return Err(HeapError::AlreadyHeld { id: next });
            }
            last_full = h.len == first.len;
            len += u32::from(h.len / size);
            chunks += 1;
        }
        inner
            .ram
            .id_held
            .set_range(id.0.into(), chunks.into(), true);
        Ok(ArrayHandle::new(self, id.0, chunks, len, chunk_len))
    }

    /// Writes every dirty object and commits, so that a reopen after a power cut sees
    /// exactly this state. A power cut during persist leaves the previous persisted
    /// state. Costs at most [`wcec_bound`](crate::wcec_bound). Fails with
    /// [`HeapError::MutablyBorrowed`], before writing anything, while a [`RefMut`] lives.
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
    /// release a guard's pin. Unlike a `RefMut`, a write pin does not stop
    /// [`persist`](Self::persist): persist writes the object's current bytes (its writer
    /// must be stopped meanwhile) and leaves it dirty and pinned.
    pub fn pin(&self, id: ObjectId, len: u16, write: bool, hint: &Cell<u16>) -> Result<usize> {
        let mut inner = self.lock()?;
        inner.raw_check(id.0)?;
        if let Some(u) = inner.find_resident(id.0, hint.get()) {
            if inner.extent_end(u) - u != inner.units_for(len, 8) {
                return Err(HeapError::TypeMismatch { id: id.0 });
            }
        }
        let mode = if write { Mode::Write } else { Mode::Read };
        let (data, _) = inner.pin(id.0, len, 8, hint, mode)?;
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
        for u in 0..inner.ram.units {
            inner.step(1);
            if !inner.ram.unit_start.get(u) {
                continue;
            }
            let id = inner.header_id(u);
            if id >= inner.layout.max_objects || !inner.ram.id_live.get(id.into()) {
                return Err(HeapError::CorruptMetadata {
                    at: inner.layout.pair_at(id.min(inner.layout.max_objects - 1)),
                    what: "a resident object has no live entry",
                });
            }
            let h = inner.read_desc(id)?;
            if inner.extent_end(u) - u != inner.units_for(h.len, 8) {
                return Err(HeapError::CorruptMetadata {
                    at: inner.layout.half_at(id, inner.current_half(id)),
                    what: "entry length does not match the resident object",
                });
            }
            let at = inner.layout.slot_at(h.block, h.len, h.slot());
            // SAFETY: the object's units (checked above to hold `h.len` bytes) lie in the
            // arena; the heap holds no reference into it, and its only other user (the
            // client) is stopped until the service finishes its restore.
            let buf = unsafe { slice::from_raw_parts_mut(inner.data_ptr(u), h.len.into()) };
            inner.nvm_read(at, buf)?;
        }
        Ok(())
    }

    /// The first byte of the arena (the cache after the metadata): the base of the
    /// offsets [`pin`](Self::pin) returns. Accesses through it must follow the pins.
    pub fn arena_ptr(&self) -> *mut u8 {
        self.inner.borrow().ram.arena
    }

    /// Bytes currently counted as dirty (size + overhead per dirty object).
    pub fn dirty_bytes(&self) -> u32 {
        self.inner.borrow().dirty_bytes
    }

    /// Cache units, ids, NVM blocks and bitmap words the heap's linear scans have
    /// visited since it was created or opened (finding a resident object without a
    /// valid hint, making room, the write-back clock, persist, allocation). It measures
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
    fn release(&self, first: u16, count: u16) -> Result<()> {
        let mut inner = self.inner.try_borrow_mut().map_err(|_| HeapError::Busy)?;
        let mut result = Ok(());
        for id in first..first.saturating_add(count) {
            inner.ram.id_held.set(id.into(), false);
            if inner.poisoned {
                result = Err(HeapError::Poisoned);
                continue;
            }
            if let Err(e) = inner.free_one(id) {
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
    fn working(&self) -> u32 {
        self.committed + 1
    }

    /// Marks the heap poisoned and turns the storage error into a heap error.
    fn fail(&mut self, e: NvmError) -> HeapError {
        self.poisoned = true;
        HeapError::Storage(e)
    }

    fn nvm_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
        self.storage.read(offset, buf).map_err(|e| self.fail(e))
    }

    fn nvm_write(&mut self, offset: u32, data: &[u8]) -> Result<()> {
        self.storage.write(offset, data).map_err(|e| self.fail(e))
    }

    /// Counts `n` steps of a scan (see [`VnvHeap::scan_steps`]).
    fn step(&self, n: u32) {
        self.steps.set(self.steps.get() + u64::from(n));
    }

    /// The half of `id`'s entry pair that the working epoch writes (never the one
    /// holding the committed description).
    fn working_half(&self, id: u16) -> u8 {
        u8::from(self.ram.id_whalf.get(id.into()))
    }

    /// Whether the working epoch has written `id`'s working half.
    fn wrote_working(&self, id: u16) -> bool {
        self.ram.id_wdone.get(id.into())
    }

    /// The half holding `id`'s current description: the working half once the working
    /// epoch wrote it, else the committed one.
    fn current_half(&self, id: u16) -> u8 {
        let w = self.working_half(id);
        if self.wrote_working(id) {
            w
        } else {
            1 - w
        }
    }

    /// Writes `h` as the working half of `id` and records that it is now current.
    fn write_working(&mut self, id: u16, h: &Half) -> Result<()> {
        let half = self.working_half(id);
        self.nvm_write(self.layout.half_at(id, half), &h.encode(id))?;
        self.ram.id_wdone.set(id.into(), true);
        self.epoch_written = true;
        Ok(())
    }

    /// The current description of the live object `id`: the 8 description bytes of its
    /// current half (2 SPI words; the RAM bits say which half, so the pair is not read).
    fn read_desc(&mut self, id: u16) -> Result<Half> {
        let at = self.layout.half_at(id, self.current_half(id));
        let mut b = [0u8; DESC_BYTES];
        self.nvm_read(at + DESC_OFFSET, &mut b)?;
        let epoch = if self.wrote_working(id) {
            self.working()
        } else {
            self.committed
        };
        let h = Half::decode_desc(epoch, &b);
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
        Ok(h)
    }

    /// The live working-epoch description of `id`, if it may get a new handle.
    fn claimable(&mut self, id: u16) -> Result<Half> {
        if id >= self.layout.max_objects || !self.ram.id_live.get(id.into()) {
            return Err(HeapError::NoSuchObject { id });
        }
        if self.ram.id_held.get(id.into()) {
            return Err(HeapError::AlreadyHeld { id });
        }
        self.read_desc(id)
    }

    fn check_fits(&self, len: u16, align: usize) -> Result<()> {
        if self.units_for(len, align) > self.ram.units {
            return Err(HeapError::ObjectTooLarge {
                size: len.into(),
                limit: self.ram.units as usize * UNIT - data_offset(align),
            });
        }
        Ok(())
    }

    /// The first of `n` consecutive free ids.
    fn free_ids(&self, n: u16) -> Result<u16> {
        let mut run = 0u16;
        for id in 0..self.layout.max_objects {
            self.step(1);
            if self.ram.id_live.get(id.into()) || self.ram.id_held.get(id.into()) {
                run = 0;
            } else {
                run += 1;
                if run == n {
                    return Ok(id + 1 - n);
                }
            }
        }
        Err(HeapError::OutOfIds)
    }

    /// The first of `n` consecutive free NVM blocks. Blocks freed in the working epoch
    /// stay used until the commit, so the committed state's bytes are never reused early.
    fn free_blocks(&self, n: u32) -> Result<u32> {
        let (found, steps) = self.ram.block_used.find_clear_run(n);
        self.step(steps);
        found.ok_or(HeapError::NvmFull { needed_blocks: n })
    }

    /// Writes a new object (`count` copies of `elem`) into slot 0 of `block` and its entry
    /// into the working half of `id`. Neither is referenced by the committed state.
    #[allow(clippy::too_many_arguments)]
    fn create(
        &mut self,
        id: u16,
        block: u32,
        len: u16,
        tag: u16,
        flags: u8,
        elem: &[u8],
        count: u32,
    ) -> Result<()> {
        let w = self.working();
        let at = self.layout.slot_at(block, len, 0);
        self.write_repeated(at, elem, count)?;
        let h = Half {
            epoch: w,
            block,
            flags: flags | flag::LIVE,
            len,
            tag,
        };
        self.write_working(id, &h)?;
        self.ram.block_used.set_range(block, blocks_for(len), true);
        self.ram.id_live.set(id.into(), true);
        Ok(())
    }

    /// Writes `count` copies of `elem` from `at` on, in stores of up to 64 bytes.
    fn write_repeated(&mut self, at: u32, elem: &[u8], count: u32) -> Result<()> {
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

    /// Frees `id` in the working epoch: drops it from the cache and writes a dead
    /// working half. Its blocks stay used until the commit (pending).
    fn free_one(&mut self, id: u16) -> Result<()> {
        if id >= self.layout.max_objects || !self.ram.id_live.get(id.into()) {
            return Ok(());
        }
        let cur = self.read_desc(id)?;
        let w = self.working();
        let resident = self.find_resident(id, u16::MAX);
        if resident.is_some_and(|u| state::pinned(self.state(u))) {
            // Only raw pins can be left on an object whose handle is freed.
            return Err(HeapError::Borrowed { id });
        }
        if let Some(u) = resident {
            if self.state(u) & state::DIRTY != 0 {
                self.dirty_bytes = self
                    .dirty_bytes
                    .saturating_sub(u32::from(cur.len) + Config::DIRTY_OVERHEAD);
            }
            self.drop_resident(u);
        }
        let dead = Half {
            epoch: w,
            flags: cur.flags & !flag::LIVE,
            ..cur
        };
        self.write_working(id, &dead)?;
        self.ram
            .block_pending
            .set_range(cur.block, blocks_for(cur.len), true);
        self.ram.id_live.set(id.into(), false);
        Ok(())
    }

    // ---- the cache arena ----

    fn unit_ptr(&self, u: u32) -> *mut u8 {
        // SAFETY: callers pass `u < units`, so the offset stays inside the arena.
        unsafe { self.ram.arena.add(u as usize * UNIT) }
    }

    /// Whether the headers live in the metadata buffer (a split heap).
    fn split(&self) -> bool {
        !self.ram.headers.is_null()
    }

    /// Cache units an object of `len` bytes needs (with its header unless split).
    fn units_for(&self, len: u16, align: usize) -> u32 {
        let header = if self.split() { 0 } else { data_offset(align) };
        (header + usize::from(len)).div_ceil(UNIT) as u32
    }

    /// Where the id of the object starting at unit `u` is kept.
    fn id_ptr(&self, u: u32) -> *mut u16 {
        if self.split() {
            // SAFETY: callers pass `u < units`; the header table has two u16 per unit.
            return unsafe { self.ram.headers.add(2 * u as usize) };
        }
        self.unit_ptr(u).cast::<u16>()
    }

    fn header_id(&self, u: u32) -> u16 {
        // SAFETY: a resident object's header is at its (8-aligned) start unit, or in the
        // split heap's table; accessed only through raw pointers.
        unsafe { self.id_ptr(u).read() }
    }

    fn state_ptr(&self, u: u32) -> *mut u16 {
        // SAFETY: the state word follows the id (bytes 2..4 of the header), inside the
        // unit or the table entry.
        unsafe { self.id_ptr(u).add(1) }
    }

    fn state(&self, u: u32) -> u16 {
        // SAFETY: see `state_ptr`; the state word is 2-aligned and initialized by `place`.
        unsafe { self.state_ptr(u).read() }
    }

    fn set_state(&self, u: u32, s: u16) {
        // SAFETY: see `state`.
        unsafe { self.state_ptr(u).write(s) }
    }

    fn data_ptr(&self, u: u32) -> *mut u8 {
        if self.split() {
            return self.unit_ptr(u);
        }
        let off = if self.state(u) & state::OFF8 != 0 {
            8
        } else {
            4
        };
        // SAFETY: the object's bytes follow its header inside its units.
        unsafe { self.unit_ptr(u).add(off) }
    }

    /// First unit after the object starting at `u`.
    fn extent_end(&self, u: u32) -> u32 {
        let mut e = u + 1;
        while e < self.ram.units && self.ram.unit_used.get(e) && !self.ram.unit_start.get(e) {
            e += 1;
        }
        self.step(e - u);
        e
    }

    /// Whether the object at `u` is write-pinned by a raw pin (split heaps only).
    fn raw_mut(&self, u: u32) -> bool {
        self.split() && self.state(u) & (state::MUT | state::RAW) == state::MUT | state::RAW
    }

    /// Raw pins need a split heap and an id without a handle.
    fn raw_check(&self, id: u16) -> Result<()> {
        if !self.split() {
            return Err(HeapError::BadConfig {
                reason: "raw pins need a split heap",
            });
        }
        if self.ram.id_held.get(id.into()) {
            return Err(HeapError::AlreadyHeld { id });
        }
        Ok(())
    }

    fn find_resident(&self, id: u16, hint: u16) -> Option<u32> {
        let h = u32::from(hint);
        if h < self.ram.units && self.ram.unit_start.get(h) && self.header_id(h) == id {
            return Some(h);
        }
        let found =
            (0..self.ram.units).find(|&u| self.ram.unit_start.get(u) && self.header_id(u) == id);
        self.step(found.map_or(self.ram.units, |u| u + 1));
        found
    }

    /// Writes the header of a new resident object at `u` and claims its units.
    fn place(&mut self, u: u32, id: u16, len: u16, align: usize) {
        // SAFETY: `u` starts a free run of `self.units_for(len, align)` units (the caller got it
        // from `make_room` or `find_clear_run`), so the header lies in unreferenced memory.
        unsafe { self.id_ptr(u).write(id) };
        let off8 = align > 4 && !self.split();
        self.set_state(u, if off8 { state::OFF8 } else { 0 });
        self.ram
            .unit_used
            .set_range(u, self.units_for(len, align), true);
        self.ram.unit_start.set(u, true);
    }

    fn drop_resident(&mut self, u: u32) {
        let end = self.extent_end(u);
        self.ram.unit_used.set_range(u, end - u, false);
        self.ram.unit_start.set(u, false);
    }

    /// Caches a freshly allocated object if a free gap exists (never evicts); returns its
    /// unit or `u16::MAX`.
    fn cache_fresh(&mut self, id: u16, len: u16, align: usize, bytes: &[u8]) -> u16 {
        let (found, steps) = self
            .ram
            .unit_used
            .find_clear_run(self.units_for(len, align));
        self.step(steps);
        let Some(u) = found else {
            return u16::MAX;
        };
        self.place(u, id, len, align);
        // SAFETY: the units were free, so nothing references them; `bytes` has `len` bytes
        // and the object's units hold `data_offset + len` bytes.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), self.data_ptr(u), bytes.len()) };
        u as u16
    }

    /// Finds `need` consecutive units, evicting unpinned objects (clean ones first) and
    /// writing back dirty ones. Pinned objects are never touched.
    fn make_room(&mut self, need: u32) -> Result<u32> {
        let (found, steps) = self.ram.unit_used.find_clear_run(need);
        self.step(steps);
        if let Some(u) = found {
            return Ok(u);
        }
        for allow_dirty in [false, true] {
            let mut p = 0;
            'window: while p + need <= self.ram.units {
                // `p` is always free or the start of an object.
                let mut u = p;
                while u < p + need {
                    self.step(1);
                    if !self.ram.unit_used.get(u) {
                        u += 1;
                        continue;
                    }
                    let s = self.state(u);
                    let end = self.extent_end(u);
                    if state::pinned(s) || (!allow_dirty && s & state::DIRTY != 0) {
                        p = end;
                        continue 'window;
                    }
                    u = end;
                }
                let mut u = p;
                while u < p + need {
                    self.step(1);
                    if self.ram.unit_start.get(u) {
                        let end = self.extent_end(u);
                        self.evict(u)?;
                        u = end;
                    } else {
                        u += 1;
                    }
                }
                return Ok(p);
            }
        }
        Err(HeapError::CacheFull {
            needed: need as usize * UNIT,
        })
    }

    fn evict(&mut self, u: u32) -> Result<()> {
        if self.state(u) & state::DIRTY != 0 {
            self.write_back(u)?;
        }
        self.drop_resident(u);
        Ok(())
    }

    /// Loads `id` into the cache and returns its unit.
    fn load(&mut self, id: u16, len: u16, align: usize) -> Result<u32> {
        if id >= self.layout.max_objects || !self.ram.id_live.get(id.into()) {
            return Err(HeapError::NoSuchObject { id });
        }
        let h = self.read_desc(id)?;
        if h.len != len {
            return Err(HeapError::TypeMismatch { id });
        }
        let u = self.make_room(self.units_for(len, align))?;
        let at = self.layout.slot_at(h.block, h.len, h.slot());
        // SAFETY: `make_room` returned free units, unreferenced by any guard, large enough
        // for the header (unless split) and `len` bytes.
        let header = if self.split() { 0 } else { data_offset(align) };
        let dst = unsafe { self.unit_ptr(u).add(header) };
        // SAFETY: `dst..dst + len` lies in those units; the arena bytes are initialized.
        let buf = unsafe { slice::from_raw_parts_mut(dst, len.into()) };
        self.nvm_read(at, buf)?;
        self.place(u, id, len, align);
        Ok(u)
    }

    /// Gives `id` room in the cache without reading it (its bytes are about to be
    /// replaced whole) and returns its unit. Reads nothing from NVM: the id is live
    /// (checked in RAM) and its length is that of the handle's type.
    fn make_room_for_overwrite(&mut self, id: u16, len: u16, align: usize) -> Result<u32> {
        if id >= self.layout.max_objects || !self.ram.id_live.get(id.into()) {
            return Err(HeapError::NoSuchObject { id });
        }
        let u = self.make_room(self.units_for(len, align))?;
        self.place(u, id, len, align);
        Ok(u)
    }

    /// Writes the dirty object at `u` to the working slot and half of its id (never the
    /// committed ones) and marks it clean.
    ///
    /// Storage: 1 read of the 8-byte description of the current half (the RAM bits say
    /// which half), 1 write of the bytes and, the first time in an epoch, 1 write of the
    /// working half.
    fn write_back(&mut self, u: u32) -> Result<u32> {
        let id = self.header_id(u);
        if id >= self.layout.max_objects || !self.ram.id_live.get(id.into()) {
            return Err(HeapError::CorruptMetadata {
                at: self.layout.pair_at(id.min(self.layout.max_objects - 1)),
                what: "a resident object has no live entry",
            });
        }
        let cur = self.read_desc(id)?;
        let w = self.working();
        // The object's bytes reach past the arena only if the description is corrupt;
        // refuse rather than read outside the cache.
        let off = (self.data_ptr(u) as usize) - (self.unit_ptr(u) as usize);
        let end = u as usize * UNIT + off + usize::from(cur.len);
        if end > self.ram.units as usize * UNIT {
            return Err(HeapError::CorruptMetadata {
                at: self.layout.half_at(id, self.current_half(id)),
                what: "entry length does not match the resident object",
            });
        }
        // The committed bytes of this object stay untouched. If the working half is
        // already written, it names a slot that holds no committed bytes (the other one,
        // or slot 0 of blocks allocated in this epoch): write that slot again, and the
        // half stays as it is. Else the current half is the committed one: write the
        // other slot and a working half naming it.
        let done = self.wrote_working(id);
        let slot = if done { cur.slot() } else { 1 - cur.slot() };
        let at = self.layout.slot_at(cur.block, cur.len, slot);
        // SAFETY: the object at `u` is resident with `cur.len` initialized bytes (checked
        // to lie in the arena) and is not mutably pinned by a guard (callers skip MUT
        // objects but raw write pins, whose writer is a client in another address space,
        // stopped while the service persists), so no reference to it exists here.
        let data = unsafe { slice::from_raw_parts(self.data_ptr(u), cur.len.into()) };
        self.nvm_write(at, data)?;
        self.epoch_written = true;
        if !done {
            let new = Half {
                epoch: w,
                flags: (cur.flags & !flag::SLOT1) | if slot == 1 { flag::SLOT1 } else { 0 },
                ..cur
            };
            self.write_working(id, &new)?;
        }
        let s = self.state(u);
        self.set_state(u, s & !(state::DIRTY | state::REF_MASK));
        let cost = u32::from(cur.len) + Config::DIRTY_OVERHEAD;
        self.dirty_bytes = self.dirty_bytes.saturating_sub(cost);
        Ok(cost)
    }

    /// Makes room for `cost` more dirty bytes by writing back dirty objects that are not
    /// mutably pinned, other than the one at `except`.
    ///
    /// Victims (see `state::REF`: a 2-bit count of the times an object was made dirty
    /// again while dirty, since it became dirty or the scan last aged it):
    /// 1. the object made dirty most recently, if its count is 0: a write not followed
    ///    by another is the likeliest to be part of a pass over more data than the limit
    ///    holds, where writing back the newest object keeps the older ones dirty until
    ///    the pass comes back to them (MRU is what suits a loop);
    /// 2. then a scan of the cache in address order, always from unit 0: the first lap
    ///    writes back dirty objects with count 0 and skips the others; each later lap
    ///    also takes one off every count it passes. A fixed order keeps a stable set of
    ///    objects dirty under any access pattern (they stay until the scan reaches
    ///    them), and the counts keep frequently rewritten objects dirty longest.
    ///
    /// Bound: `2 + REF_MAX` laps (one without aging, `REF_MAX` to bring every count to
    /// 0, one more to reach every candidate), so at most `(2 + REF_MAX) * units` units
    /// visited and one write-back per candidate; it fails only if no candidate is left.
    fn reserve_dirty(&mut self, cost: u32, except: u32) -> Result<()> {
        let limit = self.config.max_dirty_bytes;
        let fits = |d: u32| d.checked_add(cost).is_some_and(|t| t <= limit);
        if fits(self.dirty_bytes) {
            return Ok(());
        }
        if cost <= limit {
            let l = self.last_dirtied;
            if l != except && l < self.ram.units && self.ram.unit_start.get(l) {
                let s = self.state(l);
                if s & (state::DIRTY | state::MUT | state::REF_MASK) == state::DIRTY {
                    let _ = self.write_back(l)?;
                    if fits(self.dirty_bytes) {
                        return Ok(());
                    }
                }
            }
            let units = self.ram.units;
            for lap in 0..2 + u32::from(state::REF_MAX) {
                for u in 0..units {
                    self.step(1);
                    if u == except || !self.ram.unit_start.get(u) {
                        continue;
                    }
                    let s = self.state(u);
                    if s & state::DIRTY == 0 || s & state::MUT != 0 {
                        continue;
                    }
                    if s & state::REF_MASK != 0 {
                        if lap > 0 {
                            self.set_state(u, s - state::REF);
                        }
                        continue;
                    }
                    let _ = self.write_back(u)?;
                    if fits(self.dirty_bytes) {
                        return Ok(());
                    }
                }
            }
        }
        Err(HeapError::DirtyLimitExceeded {
            needed: cost,
            dirty: self.dirty_bytes,
            limit,
        })
    }

    /// Makes `id` resident and pins it; returns its bytes and state word.
    fn pin(
        &mut self,
        id: u16,
        len: u16,
        align: usize,
        hint: &Cell<u16>,
        mode: Mode,
    ) -> Result<(NonNull<u8>, NonNull<u16>)> {
        let cost = u32::from(len) + Config::DIRTY_OVERHEAD;
        let (u, reserved) = match self.find_resident(id, hint.get()) {
            Some(u) => (u, false),
            None if mode == Mode::Overwrite => {
                // Reserve first: a failure then leaves nothing half-placed.
                self.reserve_dirty(cost, u32::MAX)?;
                (self.make_room_for_overwrite(id, len, align)?, true)
            }
            None => (self.load(id, len, align)?, false),
        };
        hint.set(u as u16);
        let s = self.state(u);
        match mode {
            Mode::Read => {
                if s & state::MUT != 0 || state::readers(s) >= state::MAX_READERS {
                    return Err(HeapError::Borrowed { id });
                }
                self.set_state(u, s + state::READER);
            }
            Mode::Write | Mode::Overwrite => {
                if state::pinned(s) {
                    return Err(HeapError::Borrowed { id });
                }
                let s = if s & state::DIRTY != 0 {
                    // Dirty again before its write-back: counts towards staying dirty.
                    if (s & state::REF_MASK) / state::REF < state::REF_MAX {
                        s + state::REF
                    } else {
                        s
                    }
                } else {
                    if !reserved {
                        self.reserve_dirty(cost, u)?;
                    }
                    self.dirty_bytes += cost;
                    self.last_dirtied = u;
                    s
                };
                self.set_state(u, s | state::DIRTY | state::MUT);
            }
        }
        let data = NonNull::new(self.data_ptr(u)).ok_or(HeapError::Busy)?;
        let st = NonNull::new(self.state_ptr(u)).ok_or(HeapError::Busy)?;
        Ok((data, st))
    }

    /// See [`VnvHeap::persist`]. Keep in step with [`wcec_bound`](crate::wcec_bound):
    /// per dirty object 1 read (the 8-byte description of its current half) and at most
    /// 2 writes (bytes, entry half); then flush, 1 write (commit record), flush.
    /// Scan steps: one per cache unit in each of the two passes, then one per word of
    /// the four bitmaps combined after the commit; `write_back` scans nothing.
    fn persist(&mut self) -> Result<()> {
        let w = self.working();
        if w == u32::MAX {
            return Err(HeapError::EpochsExhausted);
        }
        self.step(self.ram.units);
        for u in 0..self.ram.units {
            if self.ram.unit_start.get(u) && self.state(u) & state::MUT != 0 && !self.raw_mut(u) {
                return Err(HeapError::MutablyBorrowed {
                    id: self.header_id(u),
                });
            }
        }
        self.step(self.ram.units);
        for u in 0..self.ram.units {
            if self.ram.unit_start.get(u) && self.state(u) & state::DIRTY != 0 {
                let cost = self.write_back(u)?;
                if self.raw_mut(u) {
                    // Its writer may change it again after the persist: it stays dirty
                    // (and counted), and the next persist writes it again.
                    let s = self.state(u);
                    self.set_state(u, s | state::DIRTY);
                    self.dirty_bytes += cost;
                }
            }
        }
        if !self.epoch_written {
            return Ok(());
        }
        self.storage.flush().map_err(|e| self.fail(e))?;
        let header = Header {
            version: FORMAT_VERSION,
            max_objects: self.layout.max_objects,
            epoch: w,
            data_bytes: self.layout.data_bytes,
        };
        // The other copy: the one holding `G` stays intact if this store is torn.
        let copy = 1 - self.header_copy;
        self.nvm_write(self.layout.header_at(copy), &header.encode())?;
        self.storage.flush().map_err(|e| self.fail(e))?;
        self.committed = w;
        self.header_copy = copy;
        self.epoch_written = false;
        self.ram.block_used.clear_where(self.ram.block_pending);
        self.ram.block_pending.clear_all();
        // Every working half written is now the committed one, so the other half becomes
        // the working half of the next epoch.
        self.ram.id_whalf.toggle_where(self.ram.id_wdone);
        self.ram.id_wdone.clear_all();
        self.step(2 * self.ram.block_used.words() + 2 * self.ram.id_whalf.words());
        Ok(())
    }
}
