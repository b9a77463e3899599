//! `ItemSet`: a set of item ids below [`MAX_ITEMS`], as a bitmap of four 32-bit words.
//!
//! The designated-slot bitmap of the commit record, the live items and the items a
//! checkpoint writes are all such sets. Words rather than a `u128`, because RV32 has no
//! 128-bit shifts: testing, adding and iterating stay a few instructions, and a
//! checkpoint visits only the ids in a set instead of all [`MAX_ITEMS`].

use crate::MAX_ITEMS;

const WORDS: usize = MAX_ITEMS / 32;
const _: () = assert!(MAX_ITEMS.is_multiple_of(32), "ItemSet holds whole words");

/// A set of item ids; bit `i % 32` of word `i / 32` is item `i`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemSet(pub [u32; WORDS]);

impl ItemSet {
    pub const EMPTY: ItemSet = ItemSet([0; WORDS]);

    #[inline]
    pub fn contains(&self, id: u16) -> bool {
        (self.0[id as usize / 32] >> (id % 32)) & 1 == 1
    }

    /// Adds `id` (below `MAX_ITEMS`).
    #[inline]
    pub fn insert(&mut self, id: u16) {
        self.0[id as usize / 32] |= 1 << (id % 32);
    }

    #[inline]
    pub fn remove(&mut self, id: u16) {
        self.0[id as usize / 32] &= !(1 << (id % 32));
    }

    #[inline]
    pub fn union(&self, o: &ItemSet) -> ItemSet {
        ItemSet(core::array::from_fn(|w| self.0[w] | o.0[w]))
    }

    /// The ids in `self` and not in `o`.
    #[inline]
    pub fn minus(&self, o: &ItemSet) -> ItemSet {
        ItemSet(core::array::from_fn(|w| self.0[w] & !o.0[w]))
    }

    /// The ids in both.
    #[inline]
    pub fn and(&self, o: &ItemSet) -> ItemSet {
        ItemSet(core::array::from_fn(|w| self.0[w] & o.0[w]))
    }

    /// The ids in exactly one of the two.
    #[inline]
    pub fn xor(&self, o: &ItemSet) -> ItemSet {
        ItemSet(core::array::from_fn(|w| self.0[w] ^ o.0[w]))
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The ids in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            core::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                Some((w * 32) as u16 + b as u16)
            })
        })
    }

    /// Little-endian bytes: item `i` is bit `i % 8` of byte `i / 8`.
    pub fn to_le_bytes(self) -> [u8; MAX_ITEMS / 8] {
        let mut b = [0u8; MAX_ITEMS / 8];
        for (w, word) in self.0.iter().enumerate() {
            b[w * 4..w * 4 + 4].copy_from_slice(&word.to_le_bytes());
        }
        b
    }

    pub fn from_le_bytes(b: &[u8; MAX_ITEMS / 8]) -> ItemSet {
        ItemSet(core::array::from_fn(|w| {
            u32::from_le_bytes([b[w * 4], b[w * 4 + 1], b[w * 4 + 2], b[w * 4 + 3]])
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn a_set_holds_exactly_what_was_inserted_and_iterates_in_order() {
        let mut s = ItemSet::EMPTY;
        for id in [127, 0, 31, 32, 64, 5] {
            s.insert(id);
        }
        s.remove(5);
        assert_eq!(s.iter().collect::<Vec<_>>(), [0, 31, 32, 64, 127]);
        assert!(s.contains(127) && !s.contains(5) && !s.contains(126));
        let mut t = ItemSet::EMPTY;
        t.insert(31);
        t.insert(1);
        assert_eq!(s.minus(&t).iter().collect::<Vec<_>>(), [0, 32, 64, 127]);
        assert_eq!(s.xor(&t).iter().collect::<Vec<_>>(), [0, 1, 32, 64, 127]);
        assert_eq!(s.union(&t).iter().count(), 6);
        assert_eq!(s.and(&t).iter().collect::<Vec<_>>(), [31]);
        assert!(ItemSet::EMPTY.is_empty() && !t.is_empty());
    }

    #[test]
    fn bytes_put_item_i_at_bit_i_mod_8_of_byte_i_div_8() {
        let mut s = ItemSet::EMPTY;
        s.insert(9);
        s.insert(127);
        let b = s.to_le_bytes();
        assert_eq!((b[1], b[15]), (0b10, 0x80));
        assert_eq!(ItemSet::from_le_bytes(&b), s);
    }
}
