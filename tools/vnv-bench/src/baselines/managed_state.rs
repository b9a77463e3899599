//! A page-based heap in the style of ManagedState (Sliper et al., DAC 2019), the
//! baseline of the paper's Figs. 5 and 6.
//!
//! All data is resident in RAM (the paper favours ManagedState this way: it cannot
//! swap) and mirrored in NVM. Memory is divided into fixed pages; opening a range for
//! writing marks every page it overlaps dirty; the number of dirty pages is limited so
//! that a reactive checkpoint is bounded, and when the limit is reached a dirty page
//! is written back whole. Metadata is one byte per page (dirty and referenced bits),
//! and it counts towards the dirty limit, as the paper counts it for both systems.
//! Write-back picks pages with a second-chance clock over those metadata bytes, so
//! frequently rewritten pages stay dirty. This file must never write back less than a
//! whole page: page granularity is what the baseline is about.
//!
//! NVM layout: `[0, pages * page)` the data image, then one metadata byte per page.

use super::Device;
use crate::cost::Meter;
use amber_nvm::Nvm;

/// Cycles of a read or write call besides its pages: argument checks, page-range
/// arithmetic (a shift each end) and the call itself.
pub const CALL_CYCLES: u64 = 20;
/// Cycles per page a call overlaps: load, test and update its metadata byte.
pub const PAGE_CYCLES: u64 = 6;
/// Cycles per step of the write-back clock: load a metadata byte, test, advance.
pub const CLOCK_STEP_CYCLES: u64 = 5;

const DIRTY: u8 = 1;
const REFERENCED: u8 = 2;

/// Why a page heap cannot be built.
#[derive(Debug, PartialEq, Eq)]
pub enum PageHeapError {
    /// After the metadata, the dirty limit leaves room for `pages` dirty pages, fewer
    /// than the `needed` that one write may span.
    DirtyLimitTooSmall { pages: usize, needed: usize },
}

/// A page-managed RAM region of `pages * page` bytes backed by NVM.
pub struct PageHeap {
    page: usize,
    data: Vec<u8>,
    meta: Vec<u8>,
    hand: usize,
    dirty: usize,
    max_dirty: usize,
    nvm: Device,
    /// CPU work charged so far.
    pub meter: Meter,
}

impl PageHeap {
    /// A heap of at least `size` bytes in pages of `page` bytes, whose dirty pages plus
    /// metadata never exceed `dirty_limit` bytes, for writes of at most `max_write`.
    pub fn new(
        size: usize,
        page: usize,
        dirty_limit: usize,
        max_write: usize,
    ) -> Result<Self, PageHeapError> {
        let pages = size.div_ceil(page);
        let max_dirty = dirty_limit.saturating_sub(pages) / page;
        let needed = max_write.div_ceil(page) + 1;
        if max_dirty < needed {
            return Err(PageHeapError::DirtyLimitTooSmall {
                pages: max_dirty,
                needed,
            });
        }
        Ok(PageHeap {
            page,
            data: vec![0; pages * page],
            meta: vec![0; pages],
            hand: 0,
            dirty: 0,
            max_dirty,
            nvm: super::device(pages * page + pages),
            meter: Meter::new(),
        })
    }

    /// The storage traffic so far.
    pub fn nvm(&self) -> &Device {
        &self.nvm
    }

    /// Bytes of metadata: one per page.
    pub fn metadata_bytes(&self) -> usize {
        self.meta.len()
    }

    #[cfg(test)]
    /// How many pages may be dirty at once.
    pub fn max_dirty_pages(&self) -> usize {
        self.max_dirty
    }

    #[cfg(test)]
    /// Pages currently dirty.
    pub fn dirty_pages(&self) -> usize {
        self.dirty
    }

    fn pages_of(&self, offset: usize, len: usize) -> core::ops::RangeInclusive<usize> {
        offset / self.page..=(offset + len.max(1) - 1) / self.page
    }

    fn write_back(&mut self, p: usize) {
        let at = p * self.page;
        self.nvm
            .write(at as u32, &self.data[at..at + self.page])
            .expect("page lies on the device");
        self.meta[p] &= !DIRTY;
        self.dirty -= 1;
    }

    /// Writes back one dirty page outside `keep`, chosen by the second-chance clock.
    fn evict_one(&mut self, keep: &core::ops::RangeInclusive<usize>) {
        loop {
            self.meter.op(CLOCK_STEP_CYCLES);
            let p = self.hand;
            self.hand = (self.hand + 1) % self.meta.len();
            if self.meta[p] & DIRTY == 0 || keep.contains(&p) {
                continue;
            }
            if self.meta[p] & REFERENCED != 0 {
                self.meta[p] &= !REFERENCED;
                continue;
            }
            self.write_back(p);
            return;
        }
    }

    /// Opens `[offset, offset + data.len())` for writing and copies `data` there.
    pub fn write(&mut self, offset: usize, data: &[u8]) {
        self.meter.op(CALL_CYCLES);
        let range = self.pages_of(offset, data.len());
        for p in range.clone() {
            self.meter.op(PAGE_CYCLES);
            if self.meta[p] & DIRTY != 0 {
                self.meta[p] |= REFERENCED;
                continue;
            }
            while self.dirty == self.max_dirty {
                self.evict_one(&range);
            }
            self.meta[p] |= DIRTY;
            self.dirty += 1;
        }
        self.data[offset..offset + data.len()].copy_from_slice(data);
        self.meter.copy(data.len());
    }

    #[cfg(test)]
    /// Opens `[offset, offset + buf.len())` for reading and copies it into `buf`.
    pub fn read(&mut self, offset: usize, buf: &mut [u8]) {
        self.meter.op(CALL_CYCLES);
        let pages = self.pages_of(offset, buf.len()).count() as u64;
        self.meter.op(pages * PAGE_CYCLES);
        buf.copy_from_slice(&self.data[offset..offset + buf.len()]);
        self.meter.copy(buf.len());
    }

    /// The reactive checkpoint: every dirty page, then the metadata.
    pub fn persist(&mut self) {
        self.meter.op(CALL_CYCLES);
        for p in 0..self.meta.len() {
            self.meter.op(CLOCK_STEP_CYCLES);
            if self.meta[p] & DIRTY != 0 {
                self.write_back(p);
            }
        }
        let at = self.data.len() as u32;
        self.nvm
            .write(at, &self.meta)
            .expect("metadata lies on the device");
    }

    #[cfg(test)]
    /// A heap restored from the NVM image `other` left at its last persist.
    pub fn restore_from(other: &PageHeap) -> PageHeap {
        let image = other.nvm.inner().image();
        let (data, meta) = image.split_at(other.data.len());
        PageHeap {
            page: other.page,
            data: data.to_vec(),
            meta: meta.to_vec(),
            hand: 0,
            dirty: meta.iter().filter(|&&m| m & DIRTY != 0).count(),
            max_dirty: other.max_dirty,
            nvm: crate::counting::CountingNvm::new(amber_nvm::sim::VecNvm::from_image(
                image.to_vec(),
            )),
            meter: Meter::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_round_trips_through_write_back_persist_and_restore() {
        // 1 KiB in 32-byte pages, 32 metadata bytes, room for 4 dirty pages: most
        // writes force write-backs.
        let mut h = PageHeap::new(1024, 32, 32 + 4 * 32, 40).unwrap();
        for i in 0..50usize {
            let at = (i * 37) % 980;
            h.write(at, &[i as u8; 40]);
            assert!(h.dirty_pages() <= h.max_dirty_pages(), "limit must hold");
        }
        let mut expect = vec![0u8; 1024];
        for i in 0..50usize {
            let at = (i * 37) % 980;
            expect[at..at + 40].fill(i as u8);
        }
        h.persist();
        assert_eq!(h.dirty_pages(), 0);
        let mut back = PageHeap::restore_from(&h);
        let mut got = vec![0u8; 1024];
        back.read(0, &mut got);
        assert_eq!(
            got, expect,
            "the NVM image after persist must equal the RAM"
        );
    }

    #[test]
    fn write_back_moves_whole_pages() {
        let mut h = PageHeap::new(512, 128, 4 + 3 * 128, 1).unwrap();
        for p in 0..4 {
            h.write(p * 128, &[1]); // one byte in each page
        }
        let c = h.nvm().counts();
        assert_eq!(
            c.write_bytes, 128,
            "one byte dirtied a page: a page written back"
        );
    }

    #[test]
    fn metadata_is_one_byte_per_page_and_counts_against_the_limit() {
        let h = PageHeap::new(59_392, 32, 11_878, 1024).unwrap();
        assert_eq!(h.metadata_bytes(), 1856);
        assert_eq!(h.max_dirty_pages(), (11_878 - 1856) / 32);
        assert!(PageHeap::new(1024, 512, 600, 1024).is_err());
    }
}
