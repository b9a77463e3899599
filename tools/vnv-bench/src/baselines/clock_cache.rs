//! A second-chance (CLOCK) object cache over NVM: the reference policy the storage
//! traffic table (issue 16) sets beside the vNV-Heap.
//!
//! Objects of one size live in place on NVM (object `k` at `k * size`); a RAM budget
//! holds the frames, a 4-byte header per frame (key, referenced, written, dirty) and a
//! 2-byte index per key (its frame). A miss reads the object in one call into the frame
//! the eviction hand picks (second chance: a referenced frame loses its mark and is
//! passed over once); making an object dirty keeps the dirty bytes (`size + 16` per
//! dirty object, the vNV-Heap's accounting) under a limit by writing back dirty frames
//! a second hand picks (second chance on a "written again" mark). It is not crash
//! consistent (write-backs overwrite the only copy) and keeps no metadata on NVM: it
//! shows what the policy alone costs. It must never skip a read or write it needs.

use super::{device, Device};
use amber_nvm::Nvm;

/// Bytes per dirty object counted towards the limit besides its size (as the heap).
pub const DIRTY_OVERHEAD: usize = 16;
/// RAM per frame besides its bytes, and per key.
const FRAME_HEADER: usize = 4;
const INDEX_BYTES: usize = 2;
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Default)]
struct Frame {
    key: u32,
    referenced: bool,
    written: bool,
    dirty: bool,
}

/// A CLOCK cache of `keys` objects of `size` bytes.
pub struct ClockCache {
    size: usize,
    frames: Vec<Frame>,
    data: Vec<u8>,
    index: Vec<u32>,
    hand: usize,
    wb_hand: usize,
    dirty: usize,
    max_dirty: usize,
    nvm: Device,
}

impl ClockCache {
    /// `keys` objects of `size` bytes, all zero on NVM, with `ram` bytes of RAM for
    /// frames, headers and index, and a dirty limit of `max_dirty` bytes.
    pub fn new(keys: usize, size: usize, ram: usize, max_dirty: usize) -> Self {
        let frames = ram.saturating_sub(keys * INDEX_BYTES) / (size + FRAME_HEADER);
        assert!(frames > 0 && max_dirty >= size + DIRTY_OVERHEAD);
        ClockCache {
            size,
            frames: vec![
                Frame {
                    key: NONE,
                    ..Frame::default()
                };
                frames
            ],
            data: vec![0; frames * size],
            index: vec![NONE; keys],
            hand: 0,
            wb_hand: 0,
            dirty: 0,
            max_dirty,
            nvm: device(keys * size),
        }
    }

    /// The counted device.
    pub fn nvm(&self) -> &Device {
        &self.nvm
    }

    /// Whether `key` is in a frame.
    pub fn is_resident(&self, key: usize) -> bool {
        self.index[key] != NONE
    }

    /// Read-modify-write of the whole object `key` with `value` (get_mut, then the
    /// bytes replaced).
    pub fn update(&mut self, key: usize, value: &[u8]) {
        let f = match self.index[key] {
            NONE => self.load(key),
            f => f as usize,
        };
        if !self.frames[f].dirty {
            self.reserve(f);
            self.dirty += self.size + DIRTY_OVERHEAD;
            self.frames[f].dirty = true;
        }
        self.frames[f].referenced = true;
        self.frames[f].written = true;
        self.data[f * self.size..][..self.size].copy_from_slice(value);
    }

    fn load(&mut self, key: usize) -> usize {
        let f = loop {
            let f = self.hand;
            self.hand = (self.hand + 1) % self.frames.len();
            let fr = &mut self.frames[f];
            if fr.referenced {
                fr.referenced = false;
            } else {
                break f;
            }
        };
        let old = self.frames[f];
        if old.key != NONE {
            if old.dirty {
                self.write_back(f);
            }
            self.index[old.key as usize] = NONE;
        }
        let at = (key * self.size) as u32;
        self.nvm
            .read(at, &mut self.data[f * self.size..][..self.size])
            .expect("read inside the device");
        self.frames[f] = Frame {
            key: key as u32,
            ..Frame::default()
        };
        self.index[key] = f as u32;
        f
    }

    /// Writes back dirty frames other than `keep` until one more dirty object fits.
    fn reserve(&mut self, keep: usize) {
        while self.dirty + self.size + DIRTY_OVERHEAD > self.max_dirty {
            let f = self.wb_hand;
            self.wb_hand = (self.wb_hand + 1) % self.frames.len();
            if f == keep || !self.frames[f].dirty {
                continue;
            }
            if self.frames[f].written {
                self.frames[f].written = false;
            } else {
                self.write_back(f);
            }
        }
    }

    fn write_back(&mut self, f: usize) {
        let at = self.frames[f].key as usize * self.size;
        self.nvm
            .write(at as u32, &self.data[f * self.size..][..self.size])
            .expect("write inside the device");
        self.frames[f].dirty = false;
        self.dirty -= self.size + DIRTY_OVERHEAD;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miss_is_one_read_and_a_write_back_one_write() {
        // 4 frames of 32 bytes, dirty limit of two objects.
        let mut c = ClockCache::new(8, 32, 4 * 36 + 16, 2 * 48);
        for k in 0..4 {
            c.update(k, &[k as u8; 32]);
        }
        let n = c.nvm().counts();
        assert_eq!((n.reads, n.read_bytes), (4, 128), "one read per miss");
        assert_eq!(n.writes, 2, "two of four dirty objects written back");
        c.update(7, &[7; 32]);
        assert!(c.is_resident(7) && c.nvm().counts().reads == 5);
    }
}
