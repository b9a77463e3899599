//! The heap's RAM metadata: bitmaps carved from the front of the cache buffer, or, for
//! a split heap, from a separate metadata buffer that also holds the per-unit headers.
//!
//! The cache buffer is split once, at `new`/`open`, into eight bitmaps and the arena of
//! 8-byte units that holds resident objects. A split heap (`new_split`/`open_split`)
//! takes the bitmaps and a table of one 4-byte header (id, state) per arena unit from
//! its metadata buffer, and its arena holds object bytes only. This file only plans the
//! split and reads and writes bits through raw pointers; it never creates a reference
//! into the buffer, because guards hold references into the arena at the same time.

/// Bytes of one cache unit; the arena is 8-byte aligned, so every unit is too.
pub(crate) const UNIT: usize = 8;
/// Bitmaps with one bit per object id (live, held, working half, working half written).
pub(crate) const ID_BITMAPS: usize = 4;
/// Largest arena in units (unit indices are `u16`, `u16::MAX` means "no hint").
pub(crate) const MAX_UNITS: usize = u16::MAX as usize - 1;

/// A bitmap of `len` bits stored in `u32` words at `words`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bits {
    words: *mut u32,
    len: u32,
}

impl Bits {
    fn word_count(len: u32) -> usize {
        len.div_ceil(32) as usize
    }

    /// Bit `i`; `false` past the end.
    pub fn get(self, i: u32) -> bool {
        if i >= self.len {
            return false;
        }
        // SAFETY: `i < len`, so the word lies inside the bitmap that `RamPlan::carve`
        // reserved for this `Bits`; nothing else aliases it and the heap is single-threaded.
        let w = unsafe { self.words.add((i / 32) as usize).read() };
        w & (1 << (i % 32)) != 0
    }

    /// Sets bit `i` to `v`; ignored past the end.
    pub fn set(self, i: u32, v: bool) {
        if i >= self.len {
            return;
        }
        // SAFETY: as in `get`.
        unsafe {
            let p = self.words.add((i / 32) as usize);
            let w = p.read();
            p.write(if v {
                w | (1 << (i % 32))
            } else {
                w & !(1 << (i % 32))
            });
        }
    }

    pub fn set_range(self, from: u32, count: u32, v: bool) {
        for i in from..from.saturating_add(count) {
            self.set(i, v);
        }
    }

    pub fn clear_all(self) {
        for i in 0..Self::word_count(self.len) {
            // SAFETY: `i` is below the word count reserved for this bitmap.
            unsafe { self.words.add(i).write(0) };
        }
    }

    /// `self ^= other`, for two bitmaps of the same length.
    pub fn toggle_where(self, other: Bits) {
        for i in 0..Self::word_count(self.len.min(other.len)) {
            // SAFETY: `i` is below the word count of both bitmaps.
            unsafe {
                let o = other.words.add(i).read();
                let p = self.words.add(i);
                p.write(p.read() ^ o);
            }
        }
    }

    /// Words (of 32 bits) the bitmap spans: the work of one whole-bitmap operation.
    pub fn words(self) -> u32 {
        Self::word_count(self.len) as u32
    }

    /// `self &= !other`, for two bitmaps of the same length.
    pub fn clear_where(self, other: Bits) {
        for i in 0..Self::word_count(self.len.min(other.len)) {
            // SAFETY: `i` is below the word count of both bitmaps.
            unsafe {
                let o = other.words.add(i).read();
                let p = self.words.add(i);
                p.write(p.read() & !o);
            }
        }
    }

    /// First index of a run of `n` clear bits, and the number of bits tested to find it
    /// (the scan's work).
    pub fn find_clear_run(self, n: u32) -> (Option<u32>, u32) {
        let mut run = 0;
        for i in 0..self.len {
            if self.get(i) {
                run = 0;
            } else {
                run += 1;
                if run == n {
                    return (Some(i + 1 - n), i + 1);
                }
            }
        }
        (None, self.len)
    }
}

/// How a cache buffer of a given length is split.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RamPlan {
    /// Offset of the first bitmap from the buffer start (to align it to 8).
    lead: usize,
    id_words: usize,
    block_words: usize,
    unit_words: usize,
    pub units: usize,
    max_objects: u16,
    blocks: u32,
}

/// The carved RAM: eight bitmaps and the arena.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ram {
    /// Ids with a live object (in the working epoch).
    pub id_live: Bits,
    /// Ids for which a handle exists.
    pub id_held: Bits,
    /// Per id, the half of its entry pair that the working epoch writes (the one not
    /// holding the committed description). Mirrors the NVM so that no entry pair has to
    /// be read to choose a half.
    pub id_whalf: Bits,
    /// Per id, whether the working epoch has written that half already (so it holds
    /// the id's current description and the other half the committed one).
    pub id_wdone: Bits,
    /// NVM blocks owned by an object, committed or working, including pending frees.
    pub block_used: Bits,
    /// NVM blocks freed in the working epoch: reusable after the next commit.
    pub block_pending: Bits,
    /// Arena units occupied.
    pub unit_used: Bits,
    /// Arena units where a resident object (its 4-byte header) starts.
    pub unit_start: Bits,
    /// First byte of the arena, 8-byte aligned.
    pub arena: *mut u8,
    /// Split heaps only (else null): per arena unit, two `u16` (id, state), used at
    /// the start unit of each resident object. Lives in the metadata buffer.
    pub headers: *mut u16,
    pub units: u32,
}

impl RamPlan {
    /// Plans the split, or `None` if not even one unit of arena remains.
    pub fn new(len: usize, max_objects: u16, blocks: u32) -> Option<RamPlan> {
        Self::with_addr(0, len, max_objects, blocks)
    }

    fn with_addr(addr: usize, len: usize, max_objects: u16, blocks: u32) -> Option<RamPlan> {
        let lead = addr.next_multiple_of(UNIT) - addr;
        let id_words = Bits::word_count(u32::from(max_objects));
        let block_words = Bits::word_count(blocks);
        let avail = len.checked_sub(lead)?;
        let mut units = (avail / UNIT).min(MAX_UNITS);
        loop {
            let unit_words = Bits::word_count(units as u32);
            let meta = ((ID_BITMAPS * id_words + 2 * block_words + 2 * unit_words) * 4)
                .next_multiple_of(UNIT);
            if meta + units * UNIT <= avail {
                break;
            }
            units = units.checked_sub(1)?;
        }
        if units == 0 {
            return None;
        }
        Some(RamPlan {
            lead,
            id_words,
            block_words,
            unit_words: Bits::word_count(units as u32),
            units,
            max_objects,
            blocks,
        })
    }

    /// Bytes spent on bitmaps and alignment.
    pub fn metadata_bytes(&self) -> usize {
        self.arena_offset() - self.lead
    }

    fn arena_offset(&self) -> usize {
        let bitmaps = (ID_BITMAPS * self.id_words + 2 * self.block_words + 2 * self.unit_words) * 4;
        self.lead + bitmaps.next_multiple_of(UNIT)
    }

    /// Carves `buf`, zeroing the bitmaps.
    ///
    /// The returned pointers are derived from `buf`; the caller must keep `buf`
    /// exclusively borrowed for as long as it uses them.
    pub fn carve(buf: &mut [u8], max_objects: u16, blocks: u32) -> Option<Ram> {
        let base = buf.as_mut_ptr();
        let plan = Self::with_addr(base as usize, buf.len(), max_objects, blocks)?;
        debug_assert!(plan.arena_offset() + plan.units * UNIT <= buf.len());
        // SAFETY: `with_addr` made every region below end inside `buf` (the arena ends at
        // `arena_offset + units * UNIT <= len`), and `lead` aligns the first to 8 bytes,
        // so each bitmap is 4-byte aligned.
        let (mut p, arena) = unsafe {
            (
                base.add(plan.lead) as *mut u32,
                base.add(plan.arena_offset()),
            )
        };
        let mut take = |len: u32, words: usize| {
            let b = Bits { words: p, len };
            // SAFETY: the words of all eight bitmaps are consecutive inside `buf` (see above).
            p = unsafe { p.add(words) };
            b.clear_all();
            b
        };
        let id_live = take(u32::from(plan.max_objects), plan.id_words);
        let id_held = take(u32::from(plan.max_objects), plan.id_words);
        let id_whalf = take(u32::from(plan.max_objects), plan.id_words);
        let id_wdone = take(u32::from(plan.max_objects), plan.id_words);
        let block_used = take(plan.blocks, plan.block_words);
        let block_pending = take(plan.blocks, plan.block_words);
        let unit_used = take(plan.units as u32, plan.unit_words);
        let unit_start = take(plan.units as u32, plan.unit_words);
        Some(Ram {
            id_live,
            id_held,
            id_whalf,
            id_wdone,
            block_used,
            block_pending,
            unit_used,
            unit_start,
            arena,
            headers: core::ptr::null_mut(),
            units: plan.units as u32,
        })
    }

    /// Bytes of the eight bitmaps for `units` arena units, rounded up to 8.
    const fn bitmap_bytes(units: usize, max_objects: u16, blocks: u32) -> usize {
        let id_words = (max_objects as usize).div_ceil(32);
        let block_words = (blocks as usize).div_ceil(32);
        let unit_words = units.div_ceil(32);
        ((ID_BITMAPS * id_words + 2 * block_words + 2 * unit_words) * 4).next_multiple_of(UNIT)
    }

    /// Bytes an 8-aligned metadata buffer of a split heap needs for an arena of
    /// `units` units: the bitmaps, then 4 bytes (id, state) per unit.
    pub const fn split_meta_bytes(units: usize, max_objects: u16, blocks: u32) -> usize {
        Self::bitmap_bytes(units, max_objects, blocks) + SPLIT_HEADER_BYTES * units
    }

    /// Carves a split heap's metadata buffer `meta` for the arena at `arena` (8-aligned,
    /// `units` units), zeroing bitmaps and headers; `None` if `meta` is too short.
    ///
    /// The caller must keep `meta` exclusively borrowed, and the arena's `units * 8`
    /// bytes valid, for as long as it uses the returned pointers.
    pub fn carve_split(
        meta: &mut [u8],
        arena: *mut u8,
        units: usize,
        max_objects: u16,
        blocks: u32,
    ) -> Option<Ram> {
        if units == 0 || units > MAX_UNITS {
            return None;
        }
        let base = meta.as_mut_ptr();
        let lead = (base as usize).next_multiple_of(UNIT) - base as usize;
        let bitmaps = Self::bitmap_bytes(units, max_objects, blocks);
        let need = lead + Self::split_meta_bytes(units, max_objects, blocks);
        if need > meta.len() {
            return None;
        }
        // SAFETY: `lead + bitmaps + 4 * units <= meta.len()` (checked above), so every
        // bitmap word and header lies inside `meta`; `lead` aligns the first to 8.
        let (mut p, headers) = unsafe {
            (
                base.add(lead) as *mut u32,
                base.add(lead + bitmaps) as *mut u16,
            )
        };
        let mut take = |len: u32| {
            let words = Bits::word_count(len);
            let b = Bits { words: p, len };
            // SAFETY: the bitmaps are consecutive inside `meta` (see above).
            p = unsafe { p.add(words) };
            b.clear_all();
            b
        };
        let ids = u32::from(max_objects);
        let (id_live, id_held, id_whalf, id_wdone) = (take(ids), take(ids), take(ids), take(ids));
        let (block_used, block_pending) = (take(blocks), take(blocks));
        let (unit_used, unit_start) = (take(units as u32), take(units as u32));
        for i in 0..2 * units {
            // SAFETY: `2 * units` u16 headers lie inside `meta` (see above), 2-aligned.
            unsafe { headers.add(i).write(0) };
        }
        Some(Ram {
            id_live,
            id_held,
            id_whalf,
            id_wdone,
            block_used,
            block_pending,
            unit_used,
            unit_start,
            arena,
            headers,
            units: units as u32,
        })
    }
}

/// Bytes of a split heap's header per arena unit (id and state, two `u16`).
pub(crate) const SPLIT_HEADER_BYTES: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_never_lets_the_arena_run_past_the_buffer() {
        for len in [64usize, 100, 257, 1000, 4096] {
            for addr in 0..8 {
                if let Some(p) = RamPlan::with_addr(addr, len, 10, 100) {
                    assert!(
                        p.arena_offset() + p.units * UNIT <= len,
                        "len {len} addr {addr}: arena ends at {} past the buffer",
                        p.arena_offset() + p.units * UNIT
                    );
                    assert_eq!(
                        (addr + p.arena_offset()) % UNIT,
                        0,
                        "arena must be 8-aligned"
                    );
                }
            }
        }
    }

    #[test]
    fn a_misaligned_buffer_never_gets_more_units_than_an_aligned_one() {
        // `wcec_bound` counts the units of an 8-aligned buffer of `cache_bytes`; persist
        // scans the units it really got, so those must never be more.
        for len in (64usize..5000).step_by(13) {
            let aligned = RamPlan::new(len, 24, 64).map_or(0, |p| p.units);
            for addr in 1..8 {
                let got = RamPlan::with_addr(addr, len, 24, 64).map_or(0, |p| p.units);
                assert!(
                    got <= aligned,
                    "len {len} at addr {addr}: {got} units, more than the {aligned} the bound counts"
                );
            }
        }
    }

    #[test]
    fn bits_find_runs_of_clear_bits() {
        let mut words = [0u32; 2];
        let b = Bits {
            words: words.as_mut_ptr(),
            len: 40,
        };
        b.set_range(0, 3, true);
        b.set(5, true);
        assert_eq!(b.find_clear_run(2), (Some(3), 5));
        assert_eq!(b.find_clear_run(3), (Some(6), 9));
        assert_eq!(b.find_clear_run(35), (None, 40));
        assert!(!b.get(99), "past the end reads as clear");
    }
}
