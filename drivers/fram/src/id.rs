//! Which chip answers: the device IDs that RDID (0x9F) returns for the parts boards
//! accept, as Fujitsu's datasheets give them (manufacturer 0x04, continuation code
//! 0x7F, then two product bytes: density, and the variant). A board reads the four
//! bytes itself (the protocol driver never sends RDID, `opcode.rs`) and asks
//! [`identify`] what it found. This file must never touch the bus.

use crate::part::Part;

/// The RDID command: the chip answers four ID bytes.
pub const RDID: u8 = 0x9F;

/// A part identified by its ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownChip {
    pub name: &'static str,
    pub id: [u8; 4],
    pub part: Part,
}

/// The 4 Mbit parts: the MB85RS4MT of the vNV-Heap paper's board and its
/// high-temperature variant MB85RS4MTY, which differs only in its last ID byte.
pub const KNOWN: [KnownChip; 2] = [
    KnownChip {
        name: "MB85RS4MT",
        id: [0x04, 0x7F, 0x49, 0x03],
        part: Part::MB85RS4MT,
    },
    KnownChip {
        name: "MB85RS4MTY",
        id: [0x04, 0x7F, 0x49, 0x0B],
        part: Part::MB85RS4MT,
    },
];

/// The known chip whose RDID answer is `id`, if any.
pub fn identify(id: [u8; 4]) -> Option<KnownChip> {
    KNOWN.iter().copied().find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_4_mbit_variants_are_known_and_nothing_else() {
        let mt = identify([0x04, 0x7F, 0x49, 0x03]).unwrap();
        assert_eq!((mt.name, mt.part.size()), ("MB85RS4MT", 512 * 1024));
        let mty = identify([0x04, 0x7F, 0x49, 0x0B]).unwrap();
        assert_eq!((mty.name, mty.part), ("MB85RS4MTY", Part::MB85RS4MT));
        // No chip (MISO floating high or held low), another vendor, another density.
        for id in [
            [0xFF; 4],
            [0; 4],
            [0x04, 0x7F, 0x48, 0x03],
            [0xC2, 0x7F, 0x49, 0x03],
        ] {
            assert_eq!(identify(id), None, "{id:02x?}");
        }
    }
}
