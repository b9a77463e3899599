//! The simulated chip's rules, exercised with raw SPI transactions (no driver), so
//! that the driver's tests run against a chip known to behave like the datasheet.

use super::small_two_byte;
use crate::opcode::{RDSR, READ, WRDI, WREN, WRITE, WRSR};
use crate::sim::{SimError, SimFram};
use crate::{AddressWidth, BlockProtect, Part, Status};
use embedded_hal::spi::{Operation, SpiDevice};

fn read(sim: &mut SimFram, address: u16, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let a = address.to_be_bytes();
    sim.transaction(&mut [
        Operation::Write(&[READ, a[0], a[1]]),
        Operation::Read(&mut buf),
    ])
    .unwrap();
    buf
}

fn rdsr(sim: &mut SimFram) -> u8 {
    let mut value = [0u8];
    sim.transaction(&mut [Operation::Write(&[RDSR]), Operation::Read(&mut value)])
        .unwrap();
    value[0]
}

#[test]
fn write_without_wren_is_ignored() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WRITE, 0, 5, 0xAA]).unwrap();
    assert_eq!(
        sim.image()[5],
        0,
        "WEL was never set, so nothing may be stored"
    );
}

#[test]
fn wren_sets_wel_and_write_resets_it_when_chip_select_rises() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    assert_eq!(rdsr(&mut sim) & Status::WEL, Status::WEL);
    sim.write(&[WRITE, 0, 5, 0xAA]).unwrap();
    assert_eq!(sim.image()[5], 0xAA);
    assert_eq!(rdsr(&mut sim) & Status::WEL, 0, "WRITE resets WEL");
    sim.write(&[WRITE, 0, 6, 0xBB]).unwrap();
    assert_eq!(sim.image()[6], 0, "a second WRITE needs a second WREN");
}

#[test]
fn wrdi_resets_wel_so_a_following_write_is_ignored() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRDI]).unwrap();
    sim.write(&[WRITE, 0, 5, 0xAA]).unwrap();
    assert_eq!(sim.image()[5], 0);
}

#[test]
fn wren_only_acts_when_chip_select_rises() {
    let mut sim = SimFram::new(small_two_byte());
    // WREN and WRITE in one chip-select cycle: the WRITE bytes are just ignored tail.
    sim.write(&[WREN, WRITE, 0, 5, 0xAA]).unwrap();
    assert_eq!(
        sim.image()[5],
        0,
        "no command runs inside another's transaction"
    );
}

#[test]
fn a_write_runs_past_the_last_byte_to_address_zero() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRITE, 0x00, 0xFE, 1, 2, 3, 4]).unwrap();
    assert_eq!(&sim.image()[0xFE..], &[1, 2]);
    assert_eq!(&sim.image()[..2], &[3, 4], "the array wraps to 0");
    assert_eq!(
        read(&mut sim, 0xFF, 3),
        vec![2, 3, 4],
        "reads wrap the same way"
    );
}

#[test]
fn address_bits_above_the_array_size_are_ignored() {
    let mut sim = SimFram::new(small_two_byte()); // 256 bytes
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRITE, 0x12, 0x07, 0x77]).unwrap();
    assert_eq!(sim.image()[0x07], 0x77);
}

#[test]
fn a_three_byte_part_takes_three_address_bytes() {
    let part = Part::new(1 << 17, AddressWidth::Three).unwrap();
    let mut sim = SimFram::new(part);
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRITE, 0x01, 0x00, 0x02, 0xCC]).unwrap();
    assert_eq!(sim.image()[0x1_0002], 0xCC);
}

#[test]
fn rdsr_shows_the_block_protect_bits_written_by_wrsr() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRSR, Status::BP0 | Status::BP1]).unwrap();
    assert_eq!(
        rdsr(&mut sim),
        Status::BP0 | Status::BP1,
        "WEL was reset by WRSR"
    );
}

#[test]
fn wrsr_without_wren_is_ignored() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WRSR, Status::BP1]).unwrap();
    assert_eq!(rdsr(&mut sim), 0);
}

#[test]
fn wrsr_only_stores_wpen_and_the_bp_bits() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRSR, 0xFF]).unwrap();
    assert_eq!(rdsr(&mut sim), Status::WRITABLE);
}

#[test]
fn wpen_with_wp_low_locks_the_status_register() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRSR, Status::WPEN]).unwrap();
    sim.set_wp_low(true);
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRSR, Status::BP1]).unwrap();
    assert_eq!(
        rdsr(&mut sim),
        Status::WPEN,
        "hardware-protected: WRSR ignored"
    );
    sim.set_wp_low(false);
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRSR, Status::BP1]).unwrap();
    assert_eq!(
        rdsr(&mut sim),
        Status::BP1,
        "with /WP high WRSR works again"
    );
}

#[test]
fn block_protection_covers_the_top_quarter_half_or_all_of_the_array() {
    for (protect, first_protected) in [
        (BlockProtect::None, 256),
        (BlockProtect::UpperQuarter, 192),
        (BlockProtect::UpperHalf, 128),
        (BlockProtect::All, 0),
    ] {
        let mut sim = SimFram::new(small_two_byte());
        let bits = Status::default().with_block_protect(protect).bits();
        sim.write(&[WREN]).unwrap();
        sim.write(&[WRSR, bits]).unwrap();
        for address in 0..256u32 {
            sim.write(&[WREN]).unwrap();
            sim.write(&[WRITE, 0, address as u8, 0x5A]).unwrap();
        }
        for address in 0..256u32 {
            let expected = if address < first_protected { 0x5A } else { 0 };
            assert_eq!(
                sim.image()[address as usize],
                expected,
                "{protect:?}: byte {address} protected = {}",
                address >= first_protected
            );
        }
        assert_eq!(protect.protected_from(256), first_protected);
    }
}

#[test]
fn a_write_crossing_into_the_protected_range_stores_only_the_unprotected_bytes() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRSR, Status::BP1]).unwrap(); // upper half from 128
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRITE, 0, 126, 1, 2, 3, 4]).unwrap();
    assert_eq!(&sim.image()[126..130], &[1, 2, 0, 0]);
}

#[test]
fn unknown_opcodes_are_ignored_with_everything_after_them() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    // 0x9F (RDID) and 0xB9 (SLEEP) are not modelled; they must not disturb WEL.
    sim.write(&[0x9F, WRITE, 0, 0, 0xAA]).unwrap();
    sim.write(&[0xB9]).unwrap();
    assert_eq!(sim.image()[0], 0);
    assert_eq!(rdsr(&mut sim) & Status::WEL, Status::WEL, "WEL untouched");
    sim.write(&[WRITE, 0, 0, 0xAA]).unwrap();
    assert_eq!(sim.image()[0], 0xAA);
}

#[test]
fn transfer_and_transfer_in_place_clock_the_same_protocol() {
    let mut sim = SimFram::new(small_two_byte());
    let mut buf = [WREN];
    sim.transfer_in_place(&mut buf).unwrap();
    let mut miso = [0u8; 4];
    sim.transfer(&mut miso, &[WRITE, 0, 9, 0x11]).unwrap();
    assert_eq!(sim.image()[9], 0x11);
    let mut out = [0u8; 4];
    sim.transfer(&mut out, &[READ, 0, 9]).unwrap(); // a shorter write idles MOSI at 0
    assert_eq!(out[3], 0x11, "the fourth clock shifts out the byte at 9");
}

#[test]
fn a_cut_keeps_exactly_the_bytes_that_completed_and_then_the_chip_is_dead() {
    let mut sim = SimFram::from_image(small_two_byte(), vec![0xEE; 256]);
    sim.write(&[WREN]).unwrap();
    sim.cut_after_bytes(5); // WRITE, addr hi, addr lo, 2 data bytes
    assert_eq!(
        sim.write(&[WRITE, 0, 10, 1, 2, 3, 4]),
        Err(SimError::PowerLost)
    );
    assert!(!sim.is_powered());
    assert_eq!(&sim.image()[10..14], &[1, 2, 0xEE, 0xEE]);
    assert_eq!(sim.write(&[WREN]), Err(SimError::PowerLost));
    assert_eq!(sim.wire_log().last().unwrap(), &vec![WRITE, 0, 10, 1, 2]);
}

#[test]
fn after_power_comes_back_wel_is_reset_and_the_array_and_protection_are_kept() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRSR, Status::BP0]).unwrap();
    sim.write(&[WREN]).unwrap();
    sim.write(&[WRITE, 0, 1, 7]).unwrap();
    sim.write(&[WREN]).unwrap();
    sim.cut_after_bytes(0);
    assert!(sim.write(&[WRITE, 0, 2, 8]).is_err());
    sim.power_on();
    assert_eq!(
        rdsr(&mut sim),
        Status::BP0,
        "BP is non-volatile, WEL is not"
    );
    sim.write(&[WRITE, 0, 2, 8]).unwrap();
    assert_eq!(&sim.image()[1..3], &[7, 0], "WEL did not survive the cut");
}

#[test]
fn a_cut_inside_wrsr_leaves_the_status_register_as_it_was() {
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    // Both bytes complete and chip select rises: power fails only in front of the
    // next byte, so this WRSR takes.
    sim.cut_after_bytes(2);
    sim.write(&[WRSR, Status::BP1]).unwrap();
    assert_eq!(sim.status_register(), Status::from_bits(Status::BP1));
    let mut sim = SimFram::new(small_two_byte());
    sim.write(&[WREN]).unwrap();
    sim.cut_after_bytes(1);
    assert!(sim.write(&[WRSR, Status::BP1]).is_err());
    sim.power_on();
    assert_eq!(rdsr(&mut sim), 0, "a torn WRSR changes nothing");
}
