//! The heap's RAM metadata: bitmaps carved from the front of the cache buffer, or, for
//! a split heap, from a separate metadata buffer that also holds the per-unit headers.
//!
//! The cache buffer is split once, at `new`/`open`, into the bitmaps (nine per id, two
//! per NVM block, two per arena unit) and the arena of 8-byte units that holds resident
//! objects. A split heap (`new_split`/`open_split`) takes the bitmaps, a table of one
//! 4-byte header (id, state) per arena unit and one 8-byte description per id from its
//! metadata buffer, and its arena holds object bytes only. This file only plans the
//! split and reads and writes bits through raw pointers; it never creates a reference
//! into the buffer, because guards hold references into the arena at the same time.

/// Bytes of one cache unit; the arena is 8-byte aligned, so every unit is too.
pub(crate) const UNIT: usize = 8;
/// Bitmaps with one bit per object id (see [`Ram`]).
pub(crate) const ID_BITMAPS: usize = 9;
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

    /// Sets bits `from..from + count` (those inside the bitmap) to `v`, a word at a time.
    pub fn set_range(self, from: u32, count: u32, v: bool) {
        let end = from.saturating_add(count).min(self.len);
        let mut i = from;
        while i < end {
            let (wi, b) = (i / 32, i % 32);
            let n = (32 - b).min(end - i);
            let mask = if n == 32 {
                u32::MAX
            } else {
                ((1u32 << n) - 1) << b
            };
            // SAFETY: `i < len`, so word `wi` lies inside the bitmap (see `get`).
            unsafe {
                let p = self.words.add(wi as usize);
                let w = p.read();
                p.write(if v { w | mask } else { w & !mask });
            }
            i += n;
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

    /// Sets word `i` (bits past the end stay clear); ignored past the last word.
    pub fn set_word(self, i: u32, w: u32) {
        if i >= self.words() {
            return;
        }
        let rest = self.len - 32 * i;
        let mask = if rest >= 32 {
            u32::MAX
        } else {
            (1 << rest) - 1
        };
        // SAFETY: `i` is below the word count reserved for this bitmap.
        unsafe { self.words.add(i as usize).write(w & mask) }
    }

    /// Word `i` (bits `32 i ..`; bits past the end are clear); 0 past the last word.
    pub fn word(self, i: u32) -> u32 {
        if i >= self.words() {
            return 0;
        }
        // SAFETY: `i` is below the word count reserved for this bitmap.
        unsafe { self.words.add(i as usize).read() }
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

    /// First index of a run of `n` clear bits, and the scan's work: one step per word
    /// looked at, plus one per bit tested in a word that is neither full nor empty.
    pub fn find_clear_run(self, n: u32) -> (Option<u32>, u32) {
        find_clear_run(self.len, n, |i| self.word(i))
    }
}

/// First index of a run of `n` clear bits in a bitmap of `len` bits whose word `i` is
/// `word(i)` (bits past `len` read as set), and the scan's work (see
/// [`Bits::find_clear_run`]).
pub(crate) fn find_clear_run(len: u32, n: u32, word: impl Fn(u32) -> u32) -> (Option<u32>, u32) {
    let (mut run, mut steps) = (0u32, 0u32);
    if n == 0 {
        return (Some(0), 0);
    }
    for wi in 0..len.div_ceil(32) {
        steps += 1;
        let base = wi * 32;
        let bits = (len - base).min(32);
        let past = if bits == 32 { 0 } else { u32::MAX << bits };
        let w = word(wi) | past;
        if w == u32::MAX {
            run = 0;
            continue;
        }
        if w == 0 && run + 32 < n {
            run += 32;
            continue;
        }
        for b in 0..bits {
            steps += 1;
            if w & (1 << b) != 0 {
                run = 0;
            } else {
                run += 1;
                if run == n {
                    return (Some(base + b + 1 - n), steps);
                }
            }
        }
    }
    (None, steps)
}

/// How a cache buffer of a given length is split.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RamPlan {
    /// Offset of the first bitmap from the buffer start (to align it to 8).
    lead: usize,
    pub units: usize,
    max_objects: u16,
    blocks: u32,
}

/// The carved RAM: the bitmaps and the arena.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ram {
    /// Ids with a live object (in the working epoch).
    pub id_live: Bits,
    /// Ids for which a handle exists.
    pub id_held: Bits,
    /// Ids whose object is in the cache (so a miss needs no search to be known).
    pub id_resident: Bits,
    /// Ids whose object was created in the working epoch: its blocks hold nothing of
    /// the committed state (a free gives them back at once).
    pub id_new: Bits,
    /// Ids whose working half must be (re)written before the commit: a new object's
    /// description not yet on NVM, or a freed one's dead half.
    pub id_ddirty: Bits,
    /// Per id, the half of its entry pair that the working epoch writes (the one not
    /// holding the committed description). Mirrors the NVM so that no entry pair has to
    /// be read to choose a half.
    pub id_whalf: Bits,
    /// Per id, whether the working epoch has written that half already (so it holds
    /// the id's current description and the other half the committed one).
    pub id_hdone: Bits,
    /// Per id, the slot holding the committed bytes (the committed slot bitmap).
    pub id_cslot: Bits,
    /// Per id, whether the working epoch has written the other slot (which then holds
    /// the current bytes, and becomes the committed one at the commit).
    pub id_sdone: Bits,
    /// NVM blocks owned by an object, committed or working, including pending frees.
    pub block_used: Bits,
    /// NVM blocks freed in the working epoch: reusable after the next commit.
    pub block_pending: Bits,
    /// Arena units occupied.
    pub unit_used: Bits,
    /// Arena units where a resident object (its header) starts.
    pub unit_start: Bits,
    /// First byte of the arena, 8-byte aligned.
    pub arena: *mut u8,
    /// Split heaps only (else null): per arena unit, two `u16` (id, state), used at
    /// the start unit of each resident object. Lives in the metadata buffer.
    pub headers: *mut u16,
    /// Split heaps only (else null): per id, four `u16` (first block, length, type
    /// tag, flags) of its live object. Lives in the metadata buffer.
    pub descs: *mut u16,
    pub units: u32,
}

/// The bitmaps in the order they are carved, and how many bits each has.
#[derive(Clone, Copy)]
enum Of {
    Ids,
    Blocks,
    Units,
}

const BITMAPS: [Of; ID_BITMAPS + 4] = [
    Of::Ids,
    Of::Ids,
    Of::Ids,
    Of::Ids,
    Of::Ids,
    Of::Ids,
    Of::Ids,
    Of::Ids,
    Of::Ids,
    Of::Blocks,
    Of::Blocks,
    Of::Units,
    Of::Units,
];

impl RamPlan {
    /// Plans the split, or `None` if not even one unit of arena remains.
    pub fn new(len: usize, max_objects: u16, blocks: u32) -> Option<RamPlan> {
        Self::with_addr(0, len, max_objects, blocks)
    }

    fn with_addr(addr: usize, len: usize, max_objects: u16, blocks: u32) -> Option<RamPlan> {
        let lead = addr.next_multiple_of(UNIT) - addr;
        let avail = len.checked_sub(lead)?;
        let mut units = (avail / UNIT).min(MAX_UNITS);
        while Self::bitmap_bytes(units, max_objects, blocks) + units * UNIT > avail {
            units = units.checked_sub(1)?;
        }
        if units == 0 {
            return None;
        }
        Some(RamPlan {
            lead,
            units,
            max_objects,
            blocks,
        })
    }

    /// The shortest cache buffer (at any address) whose arena holds a 1-byte object
    /// with its 8-byte header.
    pub const fn min_cache_bytes(max_objects: u16, blocks: u32) -> usize {
        Self::bitmap_bytes(2, max_objects, blocks) + 2 * UNIT + (UNIT - 1)
    }

    /// Bytes spent on bitmaps and alignment.
    pub fn metadata_bytes(&self) -> usize {
        Self::bitmap_bytes(self.units, self.max_objects, self.blocks)
    }

    /// Offset of the arena from the buffer start.
    fn arena_offset(&self) -> usize {
        self.lead + self.metadata_bytes()
    }

    /// Carves `buf`, zeroing the bitmaps.
    ///
    /// The returned pointers are derived from `buf`; the caller must keep `buf`
    /// exclusively borrowed for as long as it uses them.
    pub fn carve(buf: &mut [u8], max_objects: u16, blocks: u32) -> Option<Ram> {
        let base = buf.as_mut_ptr();
        let plan = Self::with_addr(base as usize, buf.len(), max_objects, blocks)?;
        let arena_offset = plan.arena_offset();
        debug_assert!(arena_offset + plan.units * UNIT <= buf.len());
        // SAFETY: `with_addr` made every region end inside `buf` (the arena ends at
        // `arena_offset + units * UNIT <= len`), and `lead` aligns the first bitmap to
        // 8 bytes, so each bitmap is 4-byte aligned.
        let (words, arena) = unsafe { (base.add(plan.lead) as *mut u32, base.add(arena_offset)) };
        // SAFETY: the bitmaps occupy `metadata_bytes` from `words`, inside `buf`.
        Some(unsafe { Self::assemble(words, arena, plan.units, max_objects, blocks) })
    }

    /// The bitmaps laid out one after another from `words`, zeroed, and the arena.
    ///
    /// # Safety
    ///
    /// `words` must be 4-aligned and valid for `bitmap_bytes(units, max_objects,
    /// blocks)` bytes, used by nothing else while the returned `Ram` is in use.
    unsafe fn assemble(
        mut words: *mut u32,
        arena: *mut u8,
        units: usize,
        max_objects: u16,
        blocks: u32,
    ) -> Ram {
        let [id_live, id_held, id_resident, id_new, id_ddirty, id_whalf, id_hdone, id_cslot, id_sdone, block_used, block_pending, unit_used, unit_start] =
            BITMAPS.map(|of| {
                let len = match of {
                    Of::Ids => u32::from(max_objects),
                    Of::Blocks => blocks,
                    Of::Units => units as u32,
                };
                let b = Bits { words, len };
                // SAFETY: the bitmaps are consecutive inside the region the caller
                // vouches for (`bitmap_bytes` adds up the same word counts).
                words = unsafe { words.add(Bits::word_count(len)) };
                b.clear_all();
                b
            });
        Ram {
            id_live,
            id_held,
            id_resident,
            id_new,
            id_ddirty,
            id_whalf,
            id_hdone,
            id_cslot,
            id_sdone,
            block_used,
            block_pending,
            unit_used,
            unit_start,
            arena,
            headers: core::ptr::null_mut(),
            descs: core::ptr::null_mut(),
            units: units as u32,
        }
    }

    /// Bytes of the bitmaps for `units` arena units, rounded up to 8.
    const fn bitmap_bytes(units: usize, max_objects: u16, blocks: u32) -> usize {
        let id_words = (max_objects as usize).div_ceil(32);
        let block_words = (blocks as usize).div_ceil(32);
        let unit_words = units.div_ceil(32);
        ((ID_BITMAPS * id_words + 2 * block_words + 2 * unit_words) * 4).next_multiple_of(UNIT)
    }

    /// Bytes an 8-aligned metadata buffer of a split heap needs for an arena of
    /// `units` units: the bitmaps, then 4 bytes (id, state) per unit, then 8 bytes
    /// (block, length, tag, flags) per id.
    pub const fn split_meta_bytes(units: usize, max_objects: u16, blocks: u32) -> usize {
        Self::bitmap_bytes(units, max_objects, blocks)
            + SPLIT_HEADER_BYTES * units
            + SPLIT_DESC_BYTES * max_objects as usize
    }

    /// Carves a split heap's metadata buffer `meta` for the arena at `arena` (8-aligned,
    /// `units` units), zeroing bitmaps and tables; `None` if `meta` is too short.
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
        let tables = SPLIT_HEADER_BYTES * units + SPLIT_DESC_BYTES * usize::from(max_objects);
        if lead + bitmaps + tables > meta.len() {
            return None;
        }
        // SAFETY: `lead + bitmaps + tables <= meta.len()` (checked above), so every
        // bitmap word and table entry lies inside `meta`; `lead` aligns the first to 8,
        // and the tables (after 8-rounded bitmaps) are 2-aligned.
        let (words, headers) = unsafe {
            (
                base.add(lead) as *mut u32,
                base.add(lead + bitmaps) as *mut u16,
            )
        };
        // SAFETY: the bitmaps take `bitmaps` bytes from `words`, inside `meta`.
        let mut ram = unsafe { Self::assemble(words, arena, units, max_objects, blocks) };
        for i in 0..tables / 2 {
            // SAFETY: `tables / 2` u16 entries lie inside `meta` (see above).
            unsafe { headers.add(i).write(0) };
        }
        ram.headers = headers;
        // SAFETY: the id table follows the `2 * units` u16 of the unit table.
        ram.descs = unsafe { headers.add(2 * units) };
        Some(ram)
    }
}

/// Bytes of a split heap's header per arena unit (id and state, two `u16`).
pub(crate) const SPLIT_HEADER_BYTES: usize = 4;
/// Bytes of a split heap's description per id (block, length, tag, flags: four `u16`).
pub(crate) const SPLIT_DESC_BYTES: usize = 8;

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
        // One step for the word, then one per bit tested in it.
        assert_eq!(b.find_clear_run(2), (Some(3), 1 + 5));
        assert_eq!(b.find_clear_run(3), (Some(6), 1 + 9));
        assert_eq!(b.find_clear_run(35), (None, 1 + 32 + 1 + 8));
        b.set_range(30, 5, true);
        assert!((30..35).all(|i| b.get(i)) && !b.get(29) && !b.get(35));
        b.set_range(31, 2, false);
        assert!(b.get(30) && !b.get(31) && !b.get(32) && b.get(33));
        b.set_range(0, 40, false);
        assert_eq!(
            b.find_clear_run(40),
            (Some(0), 1 + 1 + 8),
            "empty words count one step"
        );
        assert!(!b.get(99), "past the end reads as clear");
    }
}
