//! The crate's tests, one file per property family; each test name states the
//! property it checks. Tests may allocate and panic; nothing here ships.

mod conformance;
mod crash;
mod driver;
mod emu;
mod part;
mod protocol;
mod sim_rules;

use crate::Part;

/// A small 2-byte-address part, so exhaustive tests stay fast.
pub(crate) fn small_two_byte() -> Part {
    Part::new(256, crate::AddressWidth::Two).unwrap()
}

/// A small 3-byte-address part.
pub(crate) fn small_three_byte() -> Part {
    Part::new(256, crate::AddressWidth::Three).unwrap()
}

/// A tiny deterministic generator (xorshift64*), so that randomised tests repeat.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
