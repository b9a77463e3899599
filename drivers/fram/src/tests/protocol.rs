//! What the driver puts on the wire: opcodes, address bytes, transaction boundaries.

use super::{small_three_byte, small_two_byte};
use crate::opcode::{RDSR, READ, WRDI, WREN, WRITE, WRSR};
use crate::sim::SimFram;
use crate::{BlockProtect, Fram, Part, Status};
use amber_nvm::Nvm;

#[test]
fn a_write_is_wren_then_write_with_a_two_byte_address_on_small_parts() {
    let part = Part::MB85RS64V;
    let mut sim = SimFram::new(part);
    let mut fram = Fram::new(&mut sim, part);
    fram.write(0x1234, &[0xAA, 0xBB]).unwrap();
    let log = fram.release().wire_log().to_vec();
    assert_eq!(
        log,
        vec![
            vec![RDSR, 0x00],
            vec![WREN],
            vec![WRITE, 0x12, 0x34, 0xAA, 0xBB]
        ],
        "first write learns the protection (RDSR), then WREN and WRITE in separate transactions"
    );
}

#[test]
fn a_write_on_a_4_mbit_part_sends_three_address_bytes() {
    let part = Part::MB85RS4MT;
    let mut sim = SimFram::new(part);
    let mut fram = Fram::new(&mut sim, part);
    fram.status().unwrap();
    fram.write(0x07_ABCD, &[0x5A]).unwrap();
    let sim = fram.release();
    assert_eq!(
        &sim.wire_log()[1..],
        &[vec![WREN], vec![WRITE, 0x07, 0xAB, 0xCD, 0x5A]]
    );
    assert_eq!(sim.image()[0x07_ABCD], 0x5A);
}

#[test]
fn a_read_is_one_read_transaction_with_the_address_and_no_wren() {
    for (part, header) in [
        (small_two_byte(), vec![READ, 0x00, 0x42]),
        (small_three_byte(), vec![READ, 0x00, 0x00, 0x42]),
    ] {
        let mut sim = SimFram::new(part);
        let mut fram = Fram::new(&mut sim, part);
        let mut buf = [0u8; 3];
        fram.read(0x42, &mut buf).unwrap();
        let mut expected = header;
        expected.extend([0, 0, 0]); // the clocks of the read bytes: MOSI idles at 0
        assert_eq!(fram.release().wire_log(), &[expected]);
    }
}

#[test]
fn empty_reads_and_writes_send_nothing() {
    let part = small_two_byte();
    let mut sim = SimFram::new(part);
    let mut fram = Fram::new(&mut sim, part);
    fram.write(10, &[]).unwrap();
    fram.read(10, &mut []).unwrap();
    assert_eq!(fram.stats().transactions, 0);
    assert!(fram.release().wire_log().is_empty());
}

#[test]
fn later_writes_do_not_read_the_status_again() {
    let part = small_two_byte();
    let mut sim = SimFram::new(part);
    let mut fram = Fram::new(&mut sim, part);
    fram.write(0, &[1]).unwrap();
    fram.write(1, &[2]).unwrap();
    let log = fram.release().wire_log().to_vec();
    let rdsr = log.iter().filter(|t| t[0] == RDSR).count();
    assert_eq!(rdsr, 1, "the block protection is cached after one RDSR");
}

#[test]
fn set_status_is_wren_wrsr_and_a_read_back() {
    let part = small_two_byte();
    let mut sim = SimFram::new(part);
    let mut fram = Fram::new(&mut sim, part);
    let wanted = Status::default().with_block_protect(BlockProtect::UpperHalf);
    let got = fram.set_status(wanted).unwrap();
    assert_eq!(got.block_protect(), BlockProtect::UpperHalf);
    assert!(!got.write_enabled(), "WRSR resets WEL");
    assert_eq!(
        fram.release().wire_log(),
        &[vec![WREN], vec![WRSR, Status::BP1], vec![RDSR, 0x00]]
    );
}

#[test]
fn set_status_never_sends_the_read_only_bits() {
    let part = small_two_byte();
    let mut sim = SimFram::new(part);
    let mut fram = Fram::new(&mut sim, part);
    fram.set_status(Status::from_bits(0xFF)).unwrap();
    let log = fram.release().wire_log().to_vec();
    assert_eq!(log[1], vec![WRSR, Status::WRITABLE]);
}

#[test]
fn write_disable_is_a_lone_wrdi() {
    let part = small_two_byte();
    let mut sim = SimFram::new(part);
    let mut fram = Fram::new(&mut sim, part);
    fram.write_enable().unwrap();
    fram.write_disable().unwrap();
    let sim = fram.release();
    assert_eq!(sim.wire_log(), &[vec![WREN], vec![WRDI]]);
    assert!(!sim.status_register().write_enabled());
}

#[test]
fn the_stats_count_transactions_wire_bytes_and_payload() {
    let part = small_three_byte();
    let mut sim = SimFram::new(part);
    let mut fram = Fram::new(&mut sim, part);
    fram.status().unwrap(); // 1 transaction, 2 bytes
    fram.write(0, &[0; 10]).unwrap(); // WREN (1) + WRITE (1 + 3 + 10)
    fram.read(0, &mut [0; 5]).unwrap(); // READ (1 + 3 + 5)
    let stats = fram.stats();
    assert_eq!(stats.transactions, 4);
    assert_eq!(stats.wire_bytes, 2 + 1 + 14 + 9);
    assert_eq!((stats.writes, stats.bytes_written), (1, 10));
    assert_eq!((stats.reads, stats.bytes_read), (1, 5));
    let wire = fram.release().wire_bytes();
    assert_eq!(
        stats.wire_bytes, wire,
        "the driver's count agrees with the chip's"
    );
}
