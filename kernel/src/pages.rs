//! Task RAM pages: the unit in which task memory is tracked dirty and checkpointed.
//!
//! A task's RAM region is split into [`PAGES`] pages of equal size (a multiple of the
//! 4-byte PMP granule; the last one may be shorter, or empty for tiny regions). After
//! each checkpoint every page is mapped read-only; the first store to a page traps and
//! makes that page, and only that page, dirty and writable. A task that touches its
//! stack and a few globals copies two pages per checkpoint, not its whole RAM. Each
//! page costs one PMP region, so the split is bounded by PMP's eight regions per task.
//! Portable and host-tested; it must never touch memory itself.

/// Pages per task RAM region.
pub const PAGES: usize = 4;

/// Which pages of one task are dirty: bit `p` is page `p`.
pub type PageMask = u8;

/// Every page dirty.
pub const ALL_PAGES: PageMask = (1 << PAGES) - 1;

/// A task RAM region and its split into pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pages {
    base: u32,
    len: u32,
    page_len: u32,
}

impl Pages {
    /// Splits `[base, base + len)`; `base` and `len` are multiples of 4.
    pub fn new(base: u32, len: u32) -> Pages {
        let page_len = len.div_ceil(PAGES as u32).next_multiple_of(4);
        Pages {
            base,
            len,
            page_len,
        }
    }

    /// Page `p` as (base, length); the length is 0 for a page past the region's end.
    pub fn page(&self, p: usize) -> (u32, u32) {
        let start = (p as u32 * self.page_len).min(self.len);
        let end = ((p as u32 + 1) * self.page_len).min(self.len);
        (self.base + start, end - start)
    }

    /// The pages that are not empty, as a mask: pages `0..n` for `n` the region's
    /// length in pages, rounded up (at most [`PAGES`], since `page_len * PAGES >= len`).
    /// No loop: the checkpoint writer asks this of every task at every checkpoint.
    pub fn present(&self) -> PageMask {
        // `page_len` is 0 only for an empty region.
        let n = if self.page_len == 0 {
            0
        } else {
            self.len.div_ceil(self.page_len)
        };
        ((1u32 << n) - 1) as PageMask
    }

    /// The pages `[addr, addr + len)` touches (empty mask when it misses the region).
    /// Computed from the first and last page it covers (no loop: the IPC copy path
    /// calls this for every buffer it writes).
    #[inline]
    pub fn touched(&self, addr: u32, len: u32) -> PageMask {
        // The range as offsets from `base`, cut to the region, in 32-bit words.
        let len = len.max(1);
        let (start, end) = match addr.checked_sub(self.base) {
            Some(off) => (off, off.saturating_add(len)),
            None => match len.checked_sub(self.base - addr) {
                Some(past) if past > 0 => (0, past),
                _ => return 0,
            },
        };
        let end = end.min(self.len);
        if start >= end || self.page_len == 0 {
            return 0;
        }
        let first = start / self.page_len;
        let last = (end - 1) / self.page_len;
        let low_bits = |n: u32| (1u32 << n) - 1;
        (low_bits(last + 1) & !low_bits(first)) as PageMask
    }

    /// [`Pages::touched`] for `[base + off, base + off + len)` known to lie in the
    /// region and not to be empty (`0 < len <= self.len - off`), without its cuts: the
    /// pages from the first byte's to the last byte's.
    #[inline]
    pub fn touched_within(&self, off: u32, len: u32) -> PageMask {
        debug_assert!(len > 0 && off < self.len && len <= self.len - off);
        let (first, last) = (off / self.page_len, (off + len - 1) / self.page_len);
        ((2u32 << last) - (1u32 << first)) as PageMask
    }

    /// Whether `addr` lies in the region.
    pub fn contains(&self, addr: u32) -> bool {
        addr >= self.base && addr - self.base < self.len
    }
}

/// Where a store the kernel makes on a task's behalf, `[addr, addr + len)`, lands: the
/// first of `rams` (each a key and a task RAM region, base and length) whose region
/// holds `addr`, with the pages of it the store touches (cut to it, as
/// [`Pages::touched`]); `None` when no region holds `addr`. With `also_len` > 0,
/// `[also, also + also_len)` is marked as well when that region holds all of it (a
/// message's bytes and the receiver's result words, one search for both); the flag
/// says whether it did.
#[inline(always)]
pub fn written<K>(
    rams: impl IntoIterator<Item = (K, (u32, u32))>,
    addr: u32,
    len: u32,
    also: u32,
    also_len: u32,
) -> Option<(K, PageMask, bool)> {
    let (key, (base, ram_len)) = rams
        .into_iter()
        .find(|(_, (base, ram_len))| addr.wrapping_sub(*base) < *ram_len)?;
    let pages = Pages::new(base, ram_len);
    let inside = |at: u32, n: u32| {
        let off = at.wrapping_sub(base);
        n > 0 && off < ram_len && n <= ram_len - off
    };
    let mut mask = if inside(addr, len) {
        pages.touched_within(addr - base, len)
    } else {
        pages.touched(addr, len)
    };
    let holds_also = inside(also, also_len);
    if holds_also {
        mask |= pages.touched_within(also - base, also_len);
    }
    Some((key, mask, holds_also))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Task RAM regions side by side, as the boards lay them out, with odd sizes.
    const RAMS: [(u32, u32); 3] = [(0x1000, 100), (0x1064, 0x1700), (0x2764, 12)];

    /// What marking one range on its own gives: the first region holding `addr`.
    fn alone(addr: u32, len: u32) -> Option<(usize, PageMask)> {
        RAMS.iter()
            .position(|&(b, l)| addr.wrapping_sub(b) < l)
            .map(|i| (i, Pages::new(RAMS[i].0, RAMS[i].1).touched(addr, len)))
    }

    #[test]
    fn two_ranges_marked_at_once_are_marked_as_each_alone() {
        let addrs = (0xFF0u32..0x2790)
            .step_by(7)
            .chain([0, 0x1063, 0x1064, 0x2763]);
        let lens = [0u32, 1, 4, 12, 36, 64, 256, 0x1700, u32::MAX];
        for addr in addrs {
            for len in lens {
                for also in (0xFF8u32..0x2780).step_by(61).chain([0]) {
                    for also_len in [0u32, 4, 12, 64] {
                        let got = written(RAMS.into_iter().enumerate(), addr, len, also, also_len);
                        let Some((i, mask, holds)) = got else {
                            assert_eq!(alone(addr, len), None, "{addr:#x}+{len}");
                            continue;
                        };
                        let (first, own) = alone(addr, len).expect("a region holds addr");
                        assert_eq!(i, first, "{addr:#x}+{len}");
                        let (base, ram_len) = RAMS[i];
                        let fits = also_len > 0
                            && also >= base
                            && u64::from(also) + u64::from(also_len)
                                <= u64::from(base) + u64::from(ram_len);
                        assert_eq!(holds, fits, "{addr:#x}+{len}, {also:#x}+{also_len}");
                        let other = if holds {
                            Pages::new(base, ram_len).touched(also, also_len)
                        } else {
                            0
                        };
                        assert_eq!(mask, own | other, "{addr:#x}+{len}, {also:#x}+{also_len}");
                    }
                }
            }
        }
    }

    #[test]
    fn pages_cover_the_region_exactly_without_overlap() {
        for len in [4u32, 12, 16, 100, 8192, 8196] {
            let pages = Pages::new(0x1000, len);
            let mut next = 0x1000;
            for p in 0..PAGES {
                let (b, l) = pages.page(p);
                assert!(
                    l == 0 || b == next,
                    "page {p} of {len} does not start where the last ended"
                );
                assert_eq!(b % 4, 0, "pages must sit on the PMP granule");
                assert_eq!(l % 4, 0, "pages must be whole PMP granules");
                next = b + l;
            }
            assert_eq!(
                next,
                0x1000 + len,
                "the pages of {len} bytes must end at the region's end"
            );
        }
    }

    #[test]
    fn an_access_marks_exactly_the_pages_it_touches() {
        let pages = Pages::new(0x1000, 8192);
        assert_eq!(pages.touched(0x1000, 4), 0b0001);
        assert_eq!(
            pages.touched(0x1000 + 2048 - 2, 4),
            0b0011,
            "a store across a boundary"
        );
        assert_eq!(pages.touched(0x1000 + 8191, 1), 0b1000);
        assert_eq!(pages.touched(0x0FFC, 4), 0, "outside the region");
        assert_eq!(pages.touched(0x1000, 8192), ALL_PAGES);
    }

    #[test]
    fn touched_within_is_touched_for_a_range_inside() {
        for len in [4u32, 8, 12, 100, 8192, 8196] {
            let pages = Pages::new(0x1000, len);
            for off in (0..len).step_by(3) {
                for n in (1..=len - off).step_by(5).chain([len - off]) {
                    assert_eq!(
                        pages.touched_within(off, n),
                        pages.touched(0x1000 + off, n),
                        "{len} {off} {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_tiny_region_has_empty_pages_that_are_never_present() {
        let pages = Pages::new(0x1000, 8);
        assert_eq!(pages.present(), 0b0011);
        assert_eq!(pages.touched(0x1000, 8), 0b0011);
    }

    #[test]
    fn present_is_the_set_of_pages_that_are_not_empty() {
        for len in (0u32..200).step_by(4).chain([8192, 8196, 16384, 32764]) {
            let pages = Pages::new(0x1000, len);
            let expected = (0..PAGES)
                .filter(|&p| pages.page(p).1 > 0)
                .fold(0, |m, p| m | 1 << p);
            assert_eq!(pages.present(), expected, "{len}");
        }
    }

    #[test]
    fn touched_is_the_set_of_pages_the_range_overlaps() {
        let regions = [4u32, 8, 12, 16, 100, 8192, 8196]
            .map(|len| (0x1000, len))
            .into_iter()
            .chain([(0xFFFF_F000, 0x1000), (0xFFFF_0000, 0xFFF0)]);
        for (base, len) in regions {
            let pages = Pages::new(base, len);
            let first = base.saturating_sub(0x10);
            let last = base.saturating_add(len).saturating_add(16);
            for addr in (first..last).step_by(3).chain([last, u32::MAX]) {
                for n in [0u32, 1, 4, 7, 64, 300, 9000, u32::MAX] {
                    let (start, end) = (u64::from(addr), u64::from(addr) + u64::from(n.max(1)));
                    let expected = (0..PAGES)
                        .filter(|&p| {
                            let (b, l) = pages.page(p);
                            l > 0 && start < u64::from(b) + u64::from(l) && end > u64::from(b)
                        })
                        .fold(0, |m, p| m | 1 << p);
                    assert_eq!(pages.touched(addr, n), expected, "{len} {addr:#x} {n}");
                }
            }
        }
    }
}
