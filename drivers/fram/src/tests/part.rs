//! `Part` validation: an impossible part cannot be described.

use crate::{AddressWidth, Part, PartError};

#[test]
fn a_two_byte_address_part_cannot_be_larger_than_64_kib() {
    assert!(Part::new(64 * 1024, AddressWidth::Two).is_ok());
    assert_eq!(
        Part::new(128 * 1024, AddressWidth::Two),
        Err(PartError::TooLargeForAddressWidth {
            size: 128 * 1024,
            width: AddressWidth::Two,
            max: 64 * 1024
        }),
        "2 address bytes reach only 64 KiB"
    );
}

#[test]
fn a_three_byte_address_part_cannot_be_larger_than_16_mib() {
    assert!(Part::new(16 * 1024 * 1024, AddressWidth::Three).is_ok());
    assert!(matches!(
        Part::new(32 * 1024 * 1024, AddressWidth::Three),
        Err(PartError::TooLargeForAddressWidth { .. })
    ));
}

#[test]
fn sizes_must_be_nonzero_powers_of_two() {
    assert_eq!(Part::new(0, AddressWidth::Two), Err(PartError::ZeroSize));
    assert_eq!(
        Part::new(3000, AddressWidth::Two),
        Err(PartError::SizeNotPowerOfTwo { size: 3000 })
    );
}

#[test]
fn the_named_parts_have_their_datasheet_sizes_and_address_widths() {
    assert_eq!(Part::MB85RS64V.size(), 8 * 1024);
    assert_eq!(Part::MB85RS64V.address_width(), AddressWidth::Two);
    assert_eq!(Part::MB85RS256B.size(), 32 * 1024);
    assert_eq!(Part::MB85RS256B.address_width(), AddressWidth::Two);
    assert_eq!(Part::MB85RS1MT.address_width(), AddressWidth::Three);
    assert_eq!(Part::MB85RS2MT.size(), 256 * 1024);
    assert_eq!(Part::MB85RS4MT.size(), 512 * 1024);
    assert_eq!(Part::MB85RS4MT.address_width(), AddressWidth::Three);
}

#[test]
fn command_headers_put_the_address_most_significant_byte_first() {
    assert_eq!(
        Part::MB85RS64V.header(0x03, 0x1234),
        ([0x03, 0x12, 0x34, 0], 3)
    );
    assert_eq!(
        Part::MB85RS4MT.header(0x02, 0x07_ABCD),
        ([0x02, 0x07, 0xAB, 0xCD], 4)
    );
}

#[test]
fn errors_read_as_sentences() {
    let e = Part::new(128 * 1024, AddressWidth::Two).unwrap_err();
    assert_eq!(
        e.to_string(),
        "an FRAM of 131072 bytes cannot be reached with 2 address bytes (at most 65536 bytes)"
    );
}
