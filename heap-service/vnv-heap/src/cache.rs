//! The cache: resident objects and their headers, the eviction hand that makes room,
//! the write-back hand that keeps the dirty limit, and the gathering of contiguous
//! write-backs into one storage write ([`Run`]).
//!
//! A resident object at arena unit `u` of a shared heap has an 8-byte header there,
//! `[id u16][state u16][first block u16][length u16]`, and its bytes from `+8`: so a
//! write-back knows where the bytes go without reading anything. An object created in
//! the working epoch is placed with a 16-byte header (`state::LONG`: its type tag and
//! flags follow, `[tag u16][flags u16][0 u32]`), bytes from `+16`, because its
//! description is written with its first write-back; it keeps that header until it is
//! evicted. A split heap keeps `[id u16][state u16]` per unit and a description per id
//! in its metadata buffer, and its arena holds bytes only.
//!
//! Policies (measured with `tools/vnv-bench`, see its README):
//! - Eviction (`make_room`): second chance with a hand that moves on between calls. The
//!   hand looks for a window of consecutive units whose objects it may evict, first
//!   clean ones not pinned since it last passed, then dirty ones too (written back as
//!   they go), then any unpinned one; an object pinned since the hand last passed keeps
//!   its place once and loses its mark.
//! - Write-back (`reserve_dirty`), to keep the dirty bytes under the limit, by one of
//!   two rules. The loop rule (the default) writes back the object made dirty last
//!   unless it was made dirty again since, then scans from the first unit; a pass over
//!   more objects than the limit holds then keeps a stable set dirty instead of writing
//!   back every object once per pass. If an object it wrote back as the one made dirty
//!   last is made dirty again within a few dirtyings, the working set is hot, not a
//!   loop: for the next `RECENCY_SPAN` dirtyings the recency rule, second chance with a
//!   moving hand, writes back what was not made dirty for longest. Both skip an object
//!   made dirty again since they last passed it (marked), once.
//!
//! This file must never evict, move or write back over a pinned object, never read the
//! bytes of a mutably pinned one through a reference, and never create a reference
//! covering the arena (guards hold references into it).

use crate::bits::UNIT;
use crate::format::blocks_for;
use crate::guard::state;
use crate::heap::{Desc, Inner};
use crate::{Config, HeapError, Result};
use amber_nvm::Nvm;
use core::cell::Cell;
use core::ptr::NonNull;
use core::slice;

/// Bytes of a shared heap's object header (a unit), and of the long header.
const HEADER: usize = 8;
const LONG_HEADER: usize = 16;

/// Bytes a [`Run`] gathers into one storage write at most.
pub const RUN_BYTES: usize = 256;

/// A live object as a pin or a write-back needs it: its id, where its blocks start and
/// its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Obj {
    pub id: u16,
    pub block: u16,
    pub len: u16,
}

/// Whether a pin is for reading or writing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Read,
    Write,
    /// Writing, and the caller overwrites every byte before the guard goes: an object
    /// that is not resident is given room but not read from NVM.
    Overwrite,
}

/// Storage writes gathered while their offsets follow one another: one write of up to
/// [`RUN_BYTES`] instead of one per piece. The bytes are copied when added, so the
/// cache may reuse their units at once; [`flush`](Run::flush) writes what is left and
/// must be called before the operation that built the run returns.
pub(crate) struct Run {
    buf: [u8; RUN_BYTES],
    at: u32,
    len: usize,
}

impl Run {
    pub fn new() -> Run {
        Run {
            buf: [0; RUN_BYTES],
            at: 0,
            len: 0,
        }
    }

    /// Adds `data` for storage offset `at`. What was gathered is written first unless
    /// `data` continues it; `data` of [`RUN_BYTES`] or more that continues nothing is
    /// written at once, in one write.
    pub fn add<S: Nvm>(&mut self, inner: &mut Inner<S>, at: u32, data: &[u8]) -> Result<()> {
        self.break_unless(inner, at)?;
        if self.len == 0 && data.len() >= RUN_BYTES {
            return inner.nvm_write(at, data);
        }
        // SAFETY: `data` is a valid slice of `data.len()` bytes.
        unsafe { self.gather(inner, at, data.as_ptr(), data.len()) }
    }

    /// Adds the `n` bytes at `src` for offset `at`, always copying them (a raw read,
    /// for an object whose writer may hold a reference to it).
    ///
    /// # Safety
    ///
    /// `src..src + n` must be readable.
    pub unsafe fn add_raw<S: Nvm>(
        &mut self,
        inner: &mut Inner<S>,
        at: u32,
        src: *const u8,
        n: usize,
    ) -> Result<()> {
        self.break_unless(inner, at)?;
        // SAFETY: the caller vouches for `src`.
        unsafe { self.gather(inner, at, src, n) }
    }

    fn break_unless<S: Nvm>(&mut self, inner: &mut Inner<S>, at: u32) -> Result<()> {
        if self.len > 0 && self.at.checked_add(self.len as u32) != Some(at) {
            self.flush(inner)?;
        }
        Ok(())
    }

    /// # Safety
    ///
    /// `src..src + n` must be readable.
    unsafe fn gather<S: Nvm>(
        &mut self,
        inner: &mut Inner<S>,
        at: u32,
        src: *const u8,
        n: usize,
    ) -> Result<()> {
        if self.len == 0 {
            self.at = at;
        }
        let mut done = 0;
        while done < n {
            if self.len == RUN_BYTES {
                self.flush(inner)?;
                self.at = at + done as u32;
            }
            let k = (n - done).min(RUN_BYTES - self.len);
            // SAFETY: `src + done .. + k` is readable (the caller's range), and the
            // buffer has `RUN_BYTES - len >= k` bytes free; they do not overlap (the
            // buffer is this struct's own).
            unsafe {
                core::ptr::copy_nonoverlapping(
                    src.add(done),
                    self.buf.as_mut_ptr().add(self.len),
                    k,
                )
            };
            self.len += k;
            done += k;
        }
        Ok(())
    }

    /// Writes what was gathered.
    pub fn flush<S: Nvm>(&mut self, inner: &mut Inner<S>) -> Result<()> {
        if self.len > 0 {
            let n = self.len;
            self.len = 0;
            inner.nvm_write(self.at, &self.buf[..n])?;
        }
        Ok(())
    }
}

/// Clean-to-dirty changes (dirtyings) within which a victim the write-back policy took
/// for loops that is made dirty again counts as a mistake.
const REGRET_WINDOW: u32 = 16;
/// Dirtyings the write-back policy follows recency after such a mistake.
const RECENCY_SPAN: u8 = 128;

/// The write-back policy's state: which of its two rules it follows, and what it
/// needs to tell whether the loop rule was wrong (see `reserve_dirty`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct WriteBack {
    /// Where the recency rule's hand looks first (an arena unit).
    hand: u32,
    /// The unit of the object last made dirty from clean (checked before use).
    last_dirtied: u32,
    /// Dirtyings left under the recency rule; 0: the loop rule.
    recency: u8,
    /// The last object the loop rule wrote back as the one made dirty last, and the
    /// count of dirtyings then.
    victim: u16,
    victim_at: u32,
    /// Dirtyings so far (wrapping).
    dirtyings: u32,
}

impl WriteBack {
    pub fn new() -> WriteBack {
        WriteBack {
            hand: 0,
            last_dirtied: u32::MAX,
            recency: 0,
            victim: u16::MAX,
            victim_at: 0,
            dirtyings: 0,
        }
    }

    /// Whether making `id` dirty now shows that the loop rule wrote it back too early.
    fn regrets(&self, id: u16) -> bool {
        id == self.victim && self.dirtyings.wrapping_sub(self.victim_at) < REGRET_WINDOW
    }

    /// Records that the object at `u` was made dirty from clean (`regret` as
    /// `regrets` said before anything was written back for it), and returns the
    /// write-back mark it starts with.
    fn dirtied(&mut self, u: u32, regret: bool) -> u16 {
        self.dirtyings = self.dirtyings.wrapping_add(1);
        self.last_dirtied = u;
        self.recency = if regret {
            RECENCY_SPAN
        } else {
            self.recency.saturating_sub(1)
        };
        if self.recency > 0 {
            state::WREF
        } else {
            0
        }
    }
}

impl<S: Nvm> Inner<S> {
    fn unit_ptr(&self, u: u32) -> *mut u8 {
        // SAFETY: callers pass `u < units`, so the offset stays inside the arena.
        unsafe { self.ram.arena.add(u as usize * UNIT) }
    }

    /// Whether the headers live in the metadata buffer (a split heap).
    pub(crate) fn split(&self) -> bool {
        !self.ram.headers.is_null()
    }

    /// Cache units an object of `len` bytes needs (with its header unless split; a long
    /// header if `long`).
    pub(crate) fn units_for(&self, len: u16, long: bool) -> u32 {
        let header = match (self.split(), long) {
            (true, _) => 0,
            (false, false) => HEADER,
            (false, true) => LONG_HEADER,
        };
        (header + usize::from(len)).div_ceil(UNIT) as u32
    }

    /// The `k`-th `u16` of the header of the object starting at unit `u` (0 id, 1 state;
    /// shared heaps: 2 block, 3 length, then the long header's 4 tag, 5 flags).
    fn header_word(&self, u: u32, k: usize) -> *mut u16 {
        if self.split() {
            // SAFETY: callers pass `u < units` and `k < 2`; the header table has two
            // u16 per unit.
            return unsafe { self.ram.headers.add(2 * u as usize + k) };
        }
        // SAFETY: the header lies in the object's first units (`k < 8`: 16 bytes only
        // for a long header), 8-aligned.
        unsafe { self.unit_ptr(u).cast::<u16>().add(k) }
    }

    fn read_header(&self, u: u32, k: usize) -> u16 {
        // SAFETY: see `header_word`; headers are reached only through raw pointers and
        // were written by `place`.
        unsafe { self.header_word(u, k).read() }
    }

    fn write_header(&self, u: u32, k: usize, v: u16) {
        // SAFETY: see `read_header`.
        unsafe { self.header_word(u, k).write(v) }
    }

    pub(crate) fn header_id(&self, u: u32) -> u16 {
        self.read_header(u, 0)
    }

    pub(crate) fn state_ptr(&self, u: u32) -> *mut u16 {
        self.header_word(u, 1)
    }

    pub(crate) fn state(&self, u: u32) -> u16 {
        self.read_header(u, 1)
    }

    pub(crate) fn set_state(&self, u: u32, s: u16) {
        self.write_header(u, 1, s)
    }

    fn long(&self, u: u32) -> bool {
        !self.split() && self.state(u) & state::LONG != 0
    }

    pub(crate) fn data_ptr(&self, u: u32) -> *mut u8 {
        self.data_ptr_in(u, self.state(u))
    }

    /// [`data_ptr`](Self::data_ptr) of the object at `u` whose state word is `s`.
    fn data_ptr_in(&self, u: u32, s: u16) -> *mut u8 {
        let off = if self.split() {
            0
        } else if s & state::LONG != 0 {
            LONG_HEADER
        } else {
            HEADER
        };
        // SAFETY: the object's bytes follow its header inside its units.
        unsafe { self.unit_ptr(u).add(off) }
    }

    /// The description of live id `id` in a split heap's table (zero for an id past
    /// the table).
    pub(crate) fn table_desc(&self, id: u16) -> Desc {
        if id >= self.layout.max_objects {
            return Desc {
                block: 0,
                len: 0,
                tag: 0,
                flags: 0,
            };
        }
        // SAFETY: split heaps only (`descs` is set); the table has four u16 per id.
        let w = |k| unsafe { self.ram.descs.add(4 * usize::from(id) + k).read() };
        Desc {
            block: w(0),
            len: w(1),
            tag: w(2),
            flags: w(3) as u8,
        }
    }

    pub(crate) fn set_table_desc(&self, id: u16, d: Desc) {
        if id >= self.layout.max_objects {
            return;
        }
        for (k, v) in [d.block, d.len, d.tag, d.flags.into()]
            .into_iter()
            .enumerate()
        {
            // SAFETY: as in `table_desc`.
            unsafe { self.ram.descs.add(4 * usize::from(id) + k).write(v) };
        }
    }

    /// The object starting at unit `u`, from its header (or the split table).
    pub(crate) fn obj_at(&self, u: u32) -> Obj {
        let id = self.header_id(u);
        if self.split() {
            return self.table_desc(id).obj(id);
        }
        Obj {
            id,
            block: self.read_header(u, 2),
            len: self.read_header(u, 3),
        }
    }

    /// The full description of the object at `u` if its header is long.
    pub(crate) fn long_desc(&self, u: u32) -> Option<Desc> {
        self.long(u).then(|| Desc {
            block: self.read_header(u, 2),
            len: self.read_header(u, 3),
            tag: self.read_header(u, 4),
            flags: self.read_header(u, 5) as u8,
        })
    }

    /// First unit after the object starting at `u`.
    pub(crate) fn extent_end(&self, u: u32) -> u32 {
        let n = self.units_for(self.obj_at(u).len, self.long(u)).max(1);
        u.saturating_add(n).min(self.ram.units)
    }

    /// Whether the object at `u` lies whole in the arena (its length is not corrupt).
    fn fits_arena(&self, u: u32, o: &Obj) -> bool {
        u + self.units_for(o.len, self.long(u)) <= self.ram.units
    }

    /// Raw pins need a split heap and an id without a handle.
    pub(crate) fn raw_check(&self, id: u16) -> Result<()> {
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

    /// The unit where `id` is resident: the hint if it is right, else a scan (only for
    /// an id the resident bitmap says is cached).
    pub(crate) fn find_resident(&self, id: u16, hint: u16) -> Option<u32> {
        let h = u32::from(hint);
        if h < self.ram.units && self.ram.unit_start.get(h) && self.header_id(h) == id {
            return Some(h);
        }
        if !self.ram.id_resident.get(id.into()) {
            return None;
        }
        let found =
            (0..self.ram.units).find(|&u| self.ram.unit_start.get(u) && self.header_id(u) == id);
        self.step(found.map_or(self.ram.units, |u| u + 1));
        found
    }

    /// Writes the header of a new resident object at `u` (long, with `long`'s tag and
    /// flags, for an object whose description is not on NVM yet) and claims its units.
    fn place(&mut self, u: u32, o: Obj, long: Option<Desc>) {
        // The units are free (the caller got them from `make_room`), so the header
        // lies in unreferenced memory.
        let is_long = long.is_some() && !self.split();
        self.write_header(u, 0, o.id);
        self.set_state(u, if is_long { state::LONG } else { 0 });
        if !self.split() {
            self.write_header(u, 2, o.block);
            self.write_header(u, 3, o.len);
            if let Some(d) = long {
                for (k, v) in [d.tag, d.flags.into(), 0, 0].into_iter().enumerate() {
                    self.write_header(u, 4 + k, v);
                }
            }
        }
        self.ram
            .unit_used
            .set_range(u, self.units_for(o.len, is_long), true);
        self.ram.unit_start.set(u, true);
        self.ram.id_resident.set(o.id.into(), true);
    }

    pub(crate) fn drop_resident(&mut self, u: u32) {
        let end = self.extent_end(u);
        let id = self.header_id(u);
        self.ram.unit_used.set_range(u, end - u, false);
        self.ram.unit_start.set(u, false);
        self.ram.id_resident.set(id.into(), false);
    }

    /// The first unit at or after `h` that is free or starts an object (0 past the end).
    fn boundary_from(&self, mut h: u32) -> u32 {
        while h < self.ram.units && self.ram.unit_used.get(h) && !self.ram.unit_start.get(h) {
            self.step(1);
            h += 1;
        }
        if h >= self.ram.units {
            0
        } else {
            h
        }
    }

    /// Finds `need` consecutive units: a free run if there is one, else a window the
    /// eviction hand clears (see the file comment), writing back the dirty objects it
    /// evicts. Pinned objects are never touched.
    ///
    /// Bound: three laps of the hand, each visiting every unit at most once (a window
    /// that fails restarts after the object that made it fail), plus the evictions.
    pub(crate) fn make_room(&mut self, need: u32) -> Result<u32> {
        let (found, steps) = self.ram.unit_used.find_clear_run(need);
        self.step(steps);
        if let Some(u) = found {
            return Ok(u);
        }
        let units = self.ram.units;
        let full = HeapError::CacheFull {
            needed: need as usize * UNIT,
        };
        if need > units {
            return Err(full);
        }
        for sweep in 0..3u8 {
            let mut p = self.boundary_from(self.evict_hand);
            let mut visited = 0;
            'window: while visited < units {
                if p + need > units {
                    visited += units - p;
                    p = 0;
                    continue;
                }
                // `p` is free or starts an object, and so is every `u` below.
                let mut u = p;
                while u < p + need {
                    self.step(1);
                    if !self.ram.unit_used.get(u) {
                        u += 1;
                        continue;
                    }
                    let s = self.state(u);
                    let end = self.extent_end(u);
                    let dirty = s & state::DIRTY != 0;
                    let passed = s & state::REF != 0 && sweep < 2;
                    if state::pinned(s) || (dirty && sweep == 0) || passed {
                        if passed && !state::pinned(s) && !(dirty && sweep == 0) {
                            self.set_state(u, s & !state::REF);
                        }
                        visited += end - p;
                        p = if end >= units { 0 } else { end };
                        continue 'window;
                    }
                    u = end;
                }
                self.evict_range(p, p + need)?;
                self.evict_hand = if p + need >= units { 0 } else { p + need };
                return Ok(p);
            }
        }
        Err(full)
    }

    /// Evicts every object starting in `from..to` (none pinned), writing back the dirty
    /// ones, gathered.
    fn evict_range(&mut self, from: u32, to: u32) -> Result<()> {
        let (mut data, mut descs) = (Run::new(), Run::new());
        let mut u = from;
        while u < to {
            self.step(1);
            if !self.ram.unit_start.get(u) {
                u += 1;
                continue;
            }
            let end = self.extent_end(u);
            if self.state(u) & state::DIRTY != 0 {
                self.write_object(u, &mut data, &mut descs)?;
            }
            self.drop_resident(u);
            u = end;
        }
        data.flush(self)?;
        descs.flush(self)
    }

    /// Makes room for `cost` more dirty bytes by writing back dirty objects that are not
    /// mutably pinned, other than the one at `except`, by the write-back policy (see the
    /// file comment); then, if that is not enough, the dead halves of freed ids. Bound:
    /// one candidate tried first, then two laps of a scan (the first clears every mark
    /// it passes), one step per object or free unit visited, and one write-back per
    /// candidate; it fails only if no candidate is left.
    pub(crate) fn reserve_dirty(&mut self, cost: u32, except: u32) -> Result<()> {
        let limit = self.config.max_dirty_bytes;
        let fits = |d: u32| d.checked_add(cost).is_some_and(|t| t <= limit);
        if fits(self.dirty_bytes) {
            return Ok(());
        }
        if cost <= limit {
            let (mut data, mut descs) = (Run::new(), Run::new());
            let units = self.ram.units;
            let loop_rule = self.wb.recency == 0;
            let mut done = false;
            let l = self.wb.last_dirtied;
            if loop_rule && l != except && l < units && self.ram.unit_start.get(l) {
                let s = self.state(l);
                if s & (state::DIRTY | state::MUT | state::WREF) == state::DIRTY {
                    self.wb.victim = self.header_id(l);
                    self.wb.victim_at = self.wb.dirtyings;
                    self.write_object(l, &mut data, &mut descs)?;
                    self.shorten(l);
                    done = fits(self.dirty_bytes);
                }
            }
            let start = if loop_rule { 0 } else { self.wb.hand % units };
            'laps: for _ in 0..2 {
                let mut i = 0;
                while i < units && !done {
                    let u = (start + i) % units;
                    self.step(1);
                    if !self.ram.unit_start.get(u) || u == except {
                        i += 1;
                        continue;
                    }
                    let end = self.extent_end(u);
                    let s = self.state(u);
                    if s & (state::DIRTY | state::MUT) == state::DIRTY {
                        if s & state::WREF != 0 {
                            self.set_state(u, s & !state::WREF);
                        } else {
                            self.write_object(u, &mut data, &mut descs)?;
                            self.shorten(u);
                            if fits(self.dirty_bytes) {
                                self.wb.hand = end;
                                done = true;
                                break 'laps;
                            }
                        }
                    }
                    i += end - u;
                }
            }
            if !done {
                self.write_pending_frees(&mut descs)?;
            }
            data.flush(self)?;
            descs.flush(self)?;
            if fits(self.dirty_bytes) {
                return Ok(());
            }
        }
        Err(HeapError::DirtyLimitExceeded {
            needed: cost,
            dirty: self.dirty_bytes,
            limit,
        })
    }

    /// The full description of the resident object `o` at `u` (its description is not
    /// on NVM: it was created in this epoch).
    fn resident_desc(&self, u: u32, o: &Obj) -> Result<Desc> {
        let d = if self.split() {
            Some(self.table_desc(o.id))
        } else {
            self.long_desc(u)
        };
        d.ok_or(HeapError::CorruptMetadata {
            at: self.layout.pair_at(o.id),
            what: "an object created in this epoch has no description in the cache",
        })
    }

    /// Writes the dirty object at `u` back through `data`: its bytes to the working slot
    /// of its id (never the committed one) and, if it was created in this epoch and its
    /// description is not on NVM yet, its working half through `descs`. Marks it clean
    /// and returns its dirty cost. Reads nothing.
    pub(crate) fn write_object(&mut self, u: u32, data: &mut Run, descs: &mut Run) -> Result<u32> {
        let o = self.obj_at(u);
        let i = u32::from(o.id);
        if o.id >= self.layout.max_objects || !self.ram.id_live.get(i) {
            return Err(HeapError::CorruptMetadata {
                at: self.layout.pair_at(o.id.min(self.layout.max_objects - 1)),
                what: "a resident object has no live entry",
            });
        }
        if !self.fits_arena(u, &o) {
            return Err(HeapError::CorruptMetadata {
                at: self.layout.pair_at(o.id),
                what: "entry length does not match the resident object",
            });
        }
        let s = self.state(u);
        let at = self.layout.slot_at(o.block, self.working_slot(o.id));
        let src = self.data_ptr(u);
        if s & state::MUT != 0 {
            // SAFETY: the object's `len` bytes lie in the arena (checked above). Its
            // writer (a `RefMut`, or a client through a raw pin) is interrupted or
            // stopped while the heap runs; the bytes are copied by raw reads, never
            // through a reference that would alias the writer's.
            unsafe { data.add_raw(self, at, src, o.len.into())? };
        } else {
            // SAFETY: as above; no guard can write the object (it is not mutably
            // pinned), so a shared view of its bytes aliases nothing mutable.
            let bytes = unsafe { slice::from_raw_parts(src, o.len.into()) };
            data.add(self, at, bytes)?;
        }
        self.ram.id_sdone.set(i, true);
        self.epoch_written = true;
        if self.ram.id_ddirty.get(i) {
            let d = self.resident_desc(u, &o)?;
            let (at, b) = self.working_half_write(o.id, &d.half(self.working()));
            descs.add(self, at, &b)?;
        }
        self.set_state(u, s & !(state::DIRTY | state::WREF));
        let cost = u32::from(o.len) + Config::DIRTY_OVERHEAD;
        self.dirty_bytes = self.dirty_bytes.saturating_sub(cost);
        Ok(cost)
    }

    /// Gives the object at `u` its 8-byte header back once its description is on NVM
    /// (it was created in this epoch, then written back) and no guard pins it: its
    /// bytes move 8 bytes down, and a unit is freed if it needed one more. Scan steps:
    /// one per unit the object had (the copy: 8 bytes per step).
    pub(crate) fn shorten(&mut self, u: u32) {
        let s = self.state(u);
        let o = self.obj_at(u);
        if !self.long(u) || state::pinned(s) || self.ram.id_ddirty.get(o.id.into()) {
            return;
        }
        let (was, now) = (self.units_for(o.len, true), self.units_for(o.len, false));
        self.step(was);
        // SAFETY: the object is not pinned, so no guard points into it; its bytes and
        // both places lie in its own units (`fits_arena` held when it was placed).
        unsafe {
            let base = self.unit_ptr(u);
            core::ptr::copy(base.add(LONG_HEADER), base.add(HEADER), o.len.into());
        }
        self.set_state(u, s & !state::LONG);
        self.ram.unit_used.set_range(u + now, was - now, false);
    }

    /// Places a new object (`count` copies of `elem`) in the cache, dirty, with its
    /// description in its header or the split table, if the dirty limit and the cache
    /// can take it; `None` if not (the caller writes it through).
    pub(crate) fn cache_new(
        &mut self,
        o: Obj,
        d: Desc,
        elem: &[u8],
        count: u32,
    ) -> Result<Option<u32>> {
        let cost = u32::from(o.len) + Config::DIRTY_OVERHEAD;
        let long = !self.split();
        let need = self.units_for(o.len, long);
        if cost > self.config.max_dirty_bytes || need > self.ram.units {
            return Ok(None);
        }
        match self.reserve_dirty(cost, u32::MAX) {
            Ok(()) => {}
            Err(HeapError::DirtyLimitExceeded { .. }) => return Ok(None),
            Err(e) => return Err(e),
        }
        let u = match self.make_room(need) {
            Ok(u) => u,
            Err(HeapError::CacheFull { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        self.place(u, o, Some(d));
        let dst = self.data_ptr(u);
        for k in 0..count as usize {
            // SAFETY: the object's units were free and hold `count * elem.len() = len`
            // bytes after the header; nothing references them yet.
            unsafe {
                core::ptr::copy_nonoverlapping(elem.as_ptr(), dst.add(k * elem.len()), elem.len())
            };
        }
        let mark = self.wb.dirtied(u, false);
        let s = self.state(u);
        self.set_state(u, s | state::DIRTY | state::REF | mark);
        self.dirty_bytes += cost;
        Ok(Some(u))
    }

    /// Loads `o` into the cache (one read of its bytes from its current slot) and
    /// returns its unit.
    fn load(&mut self, o: Obj) -> Result<u32> {
        let i = u32::from(o.id);
        if o.id >= self.layout.max_objects || !self.ram.id_live.get(i) {
            return Err(HeapError::NoSuchObject { id: o.id });
        }
        if self.ram.id_ddirty.get(i) || u32::from(o.block) + blocks_for(o.len) > self.layout.blocks
        {
            return Err(HeapError::CorruptMetadata {
                at: self.layout.pair_at(o.id),
                what: "an object to load has no copy on storage",
            });
        }
        let u = self.make_room(self.units_for(o.len, false))?;
        let at = self.layout.slot_at(o.block, self.current_slot(o.id));
        let header = if self.split() { 0 } else { HEADER };
        // SAFETY: `make_room` returned free units, unreferenced by any guard, large enough
        // for the header (unless split) and `len` bytes.
        let buf = unsafe { slice::from_raw_parts_mut(self.unit_ptr(u).add(header), o.len.into()) };
        self.nvm_read(at, buf)?;
        self.place(u, o, None);
        Ok(u)
    }

    /// Makes `o` resident and pins it; returns its bytes and state word.
    ///
    /// The fast path, for an object the hint finds with nothing to load, reserve or
    /// record: a read pin, or a write pin of an object already dirty. Everything else
    /// goes to `pin_slow`.
    #[inline]
    pub(crate) fn pin(
        &mut self,
        o: Obj,
        hint: &Cell<u16>,
        mode: Mode,
    ) -> Result<(NonNull<u8>, NonNull<u16>)> {
        let u = u32::from(hint.get());
        if u < self.ram.units && self.ram.unit_start.get(u) && self.header_id(u) == o.id {
            let s = self.state(u);
            let next = match mode {
                Mode::Read if s & state::MUT == 0 && state::readers(s) < state::MAX_READERS => {
                    Some(s + state::READER)
                }
                Mode::Write | Mode::Overwrite if s & state::DIRTY != 0 && !state::pinned(s) => {
                    Some(s | state::MUT | state::WREF)
                }
                _ => None,
            };
            if let Some(next) = next {
                self.set_state(u, next | state::REF);
                let data = NonNull::new(self.data_ptr_in(u, s)).ok_or(HeapError::Busy)?;
                let st = NonNull::new(self.state_ptr(u)).ok_or(HeapError::Busy)?;
                return Ok((data, st));
            }
        }
        self.pin_slow(o, hint, mode)
    }

    #[inline(never)]
    fn pin_slow(
        &mut self,
        o: Obj,
        hint: &Cell<u16>,
        mode: Mode,
    ) -> Result<(NonNull<u8>, NonNull<u16>)> {
        let cost = u32::from(o.len) + Config::DIRTY_OVERHEAD;
        // Asked before any write-back this pin causes can pick a new victim.
        let regret = mode != Mode::Read && self.wb.regrets(o.id);
        let (u, reserved) = match self.find_resident(o.id, hint.get()) {
            // Its length is `o.len`: a handle's type was checked against it when the
            // handle was made, a raw pin's length against the split table.
            Some(u) => (u, false),
            None if mode == Mode::Overwrite => {
                if o.id >= self.layout.max_objects || !self.ram.id_live.get(o.id.into()) {
                    return Err(HeapError::NoSuchObject { id: o.id });
                }
                // Reserve first: a failure then leaves nothing half-placed.
                self.reserve_dirty(cost, u32::MAX)?;
                let u = self.make_room(self.units_for(o.len, false))?;
                self.place(u, o, None);
                (u, true)
            }
            None => (self.load(o)?, false),
        };
        hint.set(u as u16);
        let s = self.state(u) | state::REF;
        match mode {
            Mode::Read => {
                if s & state::MUT != 0 || state::readers(s) >= state::MAX_READERS {
                    return Err(HeapError::Borrowed { id: o.id });
                }
                self.set_state(u, s + state::READER);
            }
            Mode::Write | Mode::Overwrite => {
                if state::pinned(s) {
                    return Err(HeapError::Borrowed { id: o.id });
                }
                let mark = if s & state::DIRTY != 0 {
                    // Dirty again before its write-back: a second chance.
                    state::WREF
                } else {
                    if !reserved {
                        self.reserve_dirty(cost, u)?;
                    }
                    self.dirty_bytes += cost;
                    self.wb.dirtied(u, regret)
                };
                self.set_state(u, s | state::DIRTY | state::MUT | mark);
            }
        }
        let data = NonNull::new(self.data_ptr_in(u, s)).ok_or(HeapError::Busy)?;
        let st = NonNull::new(self.state_ptr(u)).ok_or(HeapError::Busy)?;
        Ok((data, st))
    }

    /// Writes `id` back if it is resident and dirty (see `VnvHeap::flush`), and drops it
    /// from the cache if `unload`.
    pub(crate) fn flush_one(&mut self, id: u16, hint: &Cell<u16>, unload: bool) -> Result<()> {
        let Some(u) = self.find_resident(id, hint.get()) else {
            return Ok(());
        };
        hint.set(u as u16);
        let s = self.state(u);
        if (unload && state::pinned(s))
            || s & (state::DIRTY | state::MUT) == state::DIRTY | state::MUT
        {
            return Err(HeapError::Borrowed { id });
        }
        if s & state::DIRTY != 0 {
            let (mut data, mut descs) = (Run::new(), Run::new());
            self.write_object(u, &mut data, &mut descs)?;
            data.flush(self)?;
            descs.flush(self)?;
            self.shorten(u);
        }
        if unload {
            self.drop_resident(u);
        }
        Ok(())
    }

    /// Reads the resident object at `u` back from its current slot (split heaps, after
    /// a restore; see `VnvHeap::reload`).
    pub(crate) fn reload_one(&mut self, u: u32) -> Result<()> {
        let o = self.obj_at(u);
        let i = u32::from(o.id);
        let at = self.layout.pair_at(o.id.min(self.layout.max_objects - 1));
        if o.id >= self.layout.max_objects || !self.ram.id_live.get(i) {
            return Err(HeapError::CorruptMetadata {
                at,
                what: "a resident object has no live entry",
            });
        }
        if self.ram.id_ddirty.get(i) || !self.fits_arena(u, &o) {
            return Err(HeapError::CorruptMetadata {
                at,
                what: "a resident object has no copy on storage that fits its place",
            });
        }
        let at = self.layout.slot_at(o.block, self.current_slot(o.id));
        // SAFETY: the object's units (checked above to hold its bytes) lie in the
        // arena; the heap holds no reference into it, and its only other user (the
        // client) is stopped until the service finishes its restore.
        let buf = unsafe { slice::from_raw_parts_mut(self.data_ptr(u), o.len.into()) };
        self.nvm_read(at, buf)
    }
}
