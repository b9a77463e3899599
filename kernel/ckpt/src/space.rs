//! The extent space allocator: a buddy system over NVM block numbers, kept in RAM only.
//!
//! Its one invariant: the allocated extents are exactly those referenced by valid
//! descriptors (plus, during a checkpoint, the new extents of the copies being
//! written). It is rebuilt from the descriptors at recovery, never stored. It must
//! never touch NVM.

use crate::layout::{BlockNo, Extent, BLOCK};
use buddy_system_allocator::FrameAllocator;

/// Buddy orders: extents up to 2^27 blocks (4 GiB of 32-byte blocks).
const ORDER: usize = 28;

/// Allocator usage, in bytes and extents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Bytes in the extent space.
    pub total_bytes: u64,
    /// Bytes in allocated extents.
    pub used_bytes: u64,
    /// `total_bytes - used_bytes`.
    pub free_bytes: u64,
    /// Allocated extents.
    pub extents: u32,
    /// Allocation granule.
    pub block_bytes: u32,
}

/// The allocator.
pub struct Space {
    buddy: FrameAllocator<ORDER>,
    total_blocks: u32,
    used_blocks: u64,
    extents: u32,
}

impl Space {
    /// All `blocks` blocks free.
    pub fn new(blocks: u32) -> Space {
        let mut buddy = FrameAllocator::new();
        buddy.add_frame(0, blocks as usize);
        Space {
            buddy,
            total_blocks: blocks,
            used_blocks: 0,
            extents: 0,
        }
    }

    /// An extent of `blocks` blocks (a power of two, > 0), or `None` when no free run
    /// is large enough.
    pub fn alloc(&mut self, blocks: u64) -> Option<Extent> {
        if blocks == 0 || blocks > self.total_blocks as u64 {
            return None;
        }
        let first = self.buddy.alloc(blocks as usize)?;
        self.used_blocks += blocks;
        self.extents += 1;
        Some(Extent {
            first: BlockNo(first as u32),
            blocks: blocks as u32,
        })
    }

    /// Claims a specific extent (at rebuild). False when any of it is already taken
    /// or it is not a well-formed extent.
    pub fn claim(&mut self, e: Extent) -> bool {
        if e.blocks == 0
            || !e.blocks.is_power_of_two()
            || !e.first.0.is_multiple_of(e.blocks)
            || e.first.0 as u64 + e.blocks as u64 > self.total_blocks as u64
        {
            return false;
        }
        match self.buddy.alloc_at(e.first.0 as usize, e.blocks as usize) {
            Some(_) => {
                self.used_blocks += e.blocks as u64;
                self.extents += 1;
                true
            }
            None => false,
        }
    }

    /// Returns an extent obtained from `alloc` or `claim`.
    pub fn free(&mut self, e: Extent) {
        if e.blocks == 0 {
            return;
        }
        self.buddy.dealloc(e.first.0 as usize, e.blocks as usize);
        self.used_blocks -= e.blocks as u64;
        self.extents -= 1;
    }

    pub fn usage(&self) -> Usage {
        let total = self.total_blocks as u64 * BLOCK as u64;
        let used = self.used_blocks * BLOCK as u64;
        Usage {
            total_bytes: total,
            used_bytes: used,
            free_bytes: total - used,
            extents: self.extents,
            block_bytes: BLOCK,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rebuilt_allocator_never_hands_out_a_claimed_extent() {
        let mut s = Space::new(64);
        let a = Extent {
            first: BlockNo(8),
            blocks: 8,
        };
        let b = Extent {
            first: BlockNo(1),
            blocks: 1,
        };
        assert!(s.claim(a) && s.claim(b));
        let mut got = alloc::vec::Vec::new();
        while let Some(e) = s.alloc(1) {
            got.push(e);
        }
        assert_eq!(
            got.len(),
            64 - 9,
            "every block but the claimed ones is free"
        );
        for e in &got {
            assert!(
                !(8..16).contains(&e.first.0) && e.first.0 != 1,
                "{e:?} overlaps a claimed extent"
            );
        }
        assert_eq!(s.usage().used_bytes, 64 * BLOCK as u64);
    }

    #[test]
    fn overlapping_or_malformed_claims_are_refused() {
        let mut s = Space::new(64);
        assert!(s.claim(Extent {
            first: BlockNo(0),
            blocks: 16
        }));
        assert!(!s.claim(Extent {
            first: BlockNo(4),
            blocks: 4
        }));
        assert!(!s.claim(Extent {
            first: BlockNo(16),
            blocks: 3
        }));
        assert!(!s.claim(Extent {
            first: BlockNo(60),
            blocks: 8
        }));
        assert_eq!(s.usage().extents, 1);
    }

    #[test]
    fn freeing_everything_gives_back_the_whole_space() {
        let mut s = Space::new(100);
        let a = s.alloc(32).unwrap();
        let b = s.alloc(4).unwrap();
        s.free(a);
        s.free(b);
        assert_eq!(s.usage().used_bytes, 0);
        assert!(s.alloc(64).is_some(), "the buddies merged again");
        assert!(
            s.alloc(128).is_none(),
            "100 blocks hold no 128-block extent"
        );
    }
}
