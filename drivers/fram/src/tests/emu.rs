//! The unchanged driver on `EmuFram<VecNvm>`, the chip the QEMU board emulates over its
//! NVM window: the same rules as the simulation (they share `chip.rs`), a memory that
//! may be larger than the part or fail mid-transfer, and the wire-time accounting.

use super::{small_three_byte, small_two_byte};
use crate::opcode::{READ, WRITE};
use crate::{
    AddressWidth, BlockProtect, EmuError, EmuFram, Fram, FramError, MemoryTooSmall, Part, Status,
    DEFAULT_CYCLES_PER_BYTE,
};
use amber_nvm::sim::{Cut, PowerCut, VecNvm};
use amber_nvm::{Nvm, NvmError};
use core::cell::Cell;
use embedded_hal::spi::{Operation, SpiDevice};

thread_local! {
    /// Cycles this test thread's `EmuFram`s handed to `count_cycles`, and in how many calls.
    static SPENT: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// The spend hook of these tests: counts instead of waiting.
fn count_cycles(cycles: u32) {
    SPENT.with(|spent| {
        let (total, calls) = spent.get();
        spent.set((total + cycles as u64, calls + 1));
    });
}

/// Cycles handed to `count_cycles` on this thread since the last call.
fn take_spent() -> (u64, u64) {
    SPENT.with(|spent| spent.replace((0, 0)))
}

fn emu(part: Part) -> EmuFram<VecNvm> {
    EmuFram::new(
        part,
        VecNvm::new(part.size()),
        DEFAULT_CYCLES_PER_BYTE,
        count_cycles,
    )
    .unwrap()
}

fn image(emu: EmuFram<VecNvm>) -> Vec<u8> {
    emu.into_memory().into_image()
}

#[test]
fn the_driver_round_trips_on_two_and_three_byte_parts() {
    for part in [
        small_two_byte(),
        small_three_byte(),
        Part::MB85RS64V,
        Part::MB85RS4MT,
    ] {
        let mut fram = Fram::new(emu(part), part);
        let end = part.size() - 5;
        fram.write(0, b"first").unwrap();
        fram.write(end, b"last!").unwrap();
        let mut buf = [0u8; 5];
        fram.read(0, &mut buf).unwrap();
        assert_eq!(&buf, b"first", "{part:?}");
        fram.read(end, &mut buf).unwrap();
        assert_eq!(&buf, b"last!", "{part:?}: the last bytes of the array");
        let image = image(fram.release());
        assert_eq!(&image[..5], b"first", "{part:?}: stored at address 0");
        assert_eq!(
            &image[end as usize..],
            b"last!",
            "{part:?}: stored at the right address in the memory"
        );
    }
}

#[test]
fn each_driver_write_sets_wel_and_the_chip_resets_it_afterwards() {
    let part = small_two_byte();
    let mut fram = Fram::new(emu(part), part);
    fram.write(5, &[0xAA]).unwrap();
    let mut emu = fram.release();
    assert!(
        !emu.status_register().write_enabled(),
        "WRITE resets WEL when chip select rises"
    );
    emu.write(&[WRITE, 0, 6, 0xBB]).unwrap();
    assert_eq!(
        &image(emu)[5..7],
        &[0xAA, 0],
        "a WRITE without its own WREN stores nothing"
    );
}

#[test]
fn write_disable_leaves_a_stray_write_without_effect() {
    let part = small_two_byte();
    let mut fram = Fram::new(emu(part), part);
    fram.write_enable().unwrap();
    fram.write_disable().unwrap();
    let mut emu = fram.release();
    assert!(!emu.status_register().write_enabled());
    emu.write(&[WRITE, 0, 9, 0x55]).unwrap();
    assert_eq!(image(emu)[9], 0, "WRDI reset WEL, so the WRITE is ignored");
}

#[test]
fn unknown_opcodes_are_ignored_and_leave_wel_alone() {
    let part = small_two_byte();
    let mut fram = Fram::new(emu(part), part);
    fram.write_enable().unwrap();
    let mut emu = fram.release();
    emu.write(&[0x9F, WRITE, 0, 0, 0xAA]).unwrap();
    assert!(emu.status_register().write_enabled(), "WEL untouched");
    emu.write(&[WRITE, 0, 0, 0xAA]).unwrap();
    assert_eq!(image(emu)[0], 0xAA);
}

#[test]
fn a_transfer_past_the_last_byte_wraps_to_zero_and_the_driver_reads_it() {
    let part = small_two_byte();
    let mut fram = Fram::new(emu(part), part);
    fram.write_enable().unwrap();
    let mut emu = fram.release();
    // 0x12FE: the bits above the 256-byte array are ignored, so this is 0xFE.
    emu.write(&[WRITE, 0x12, 0xFE, 1, 2, 3, 4]).unwrap();
    let mut fram = Fram::new(emu, part);
    let (mut top, mut bottom) = ([0u8; 2], [0u8; 2]);
    fram.read(0xFE, &mut top).unwrap();
    fram.read(0, &mut bottom).unwrap();
    assert_eq!((top, bottom), ([1, 2], [3, 4]), "the array wraps to 0");
    let mut emu = fram.release();
    let mut wrapped = [0u8; 3];
    emu.transaction(&mut [
        Operation::Write(&[READ, 0, 0xFF]),
        Operation::Read(&mut wrapped),
    ])
    .unwrap();
    assert_eq!(wrapped, [2, 3, 4], "reads wrap the same way");
}

#[test]
fn a_three_byte_part_takes_three_address_bytes() {
    let part = Part::new(1 << 17, AddressWidth::Three).unwrap();
    let mut fram = Fram::new(emu(part), part);
    fram.write(0x1_0002, &[0xCC]).unwrap();
    let emu = fram.release();
    assert_eq!(image(emu)[0x1_0002], 0xCC);
}

#[test]
fn block_protection_set_through_the_driver_is_held_by_the_chip() {
    let part = small_two_byte();
    let mut fram = Fram::new(emu(part), part);
    let status = fram.set_block_protect(BlockProtect::UpperHalf).unwrap();
    assert_eq!(status.block_protect(), BlockProtect::UpperHalf);
    assert_eq!(
        fram.write(127, &[1, 2]),
        Err(NvmError::OutOfBounds {
            offset: 127,
            len: 2,
            size: 128
        }),
        "the driver refuses a write reaching the protected half"
    );
    fram.write(126, &[1, 2]).unwrap();
    let mut emu = fram.release();
    assert_eq!(
        emu.status_register(),
        Status::from_bits(Status::BP1),
        "BP1 stored, WEL reset by the WRITE"
    );
    // Past the driver: the chip itself skips the protected bytes.
    emu.write(&[crate::opcode::WREN]).unwrap();
    emu.write(&[WRITE, 0, 127, 7, 8, 9]).unwrap();
    assert_eq!(&image(emu)[126..130], &[1, 7, 0, 0]);
}

#[test]
fn wpen_with_wp_low_makes_the_chip_reject_a_status_write() {
    let part = small_two_byte();
    let mut fram = Fram::new(emu(part), part);
    fram.set_status(Status::default().with_wpen(true)).unwrap();
    let mut emu = fram.release();
    emu.set_wp_low(true);
    let mut fram = Fram::new(emu, part);
    let wanted = Status::default()
        .with_wpen(true)
        .with_block_protect(BlockProtect::All);
    assert_eq!(
        fram.set_status(wanted),
        Err(FramError::StatusRejected {
            wanted,
            actual: Status::default().with_wpen(true)
        })
    );
}

#[test]
fn stats_count_every_transaction_and_charge_cycles_per_wire_byte() {
    let part = small_three_byte();
    let cycles_per_byte = 7;
    let emu = EmuFram::new(part, VecNvm::new(256), cycles_per_byte, count_cycles).unwrap();
    let mut fram = Fram::new(emu, part);
    take_spent();
    fram.write(10, b"hello").unwrap(); // RDSR (2), WREN (1), WRITE + 3 + 5
    let mut buf = [0u8; 5];
    fram.read(10, &mut buf).unwrap(); // READ + 3 + 5
    fram.set_block_protect(BlockProtect::UpperQuarter).unwrap(); // RDSR, WREN, WRSR, RDSR
    let driver = fram.stats();
    let emu = fram.release();
    let stats = emu.stats();
    assert_eq!(stats.transactions, 8);
    assert_eq!(stats.wire_bytes, 2 + 1 + 9 + 9 + 2 + 1 + 2 + 2);
    assert_eq!(
        (stats.transactions, stats.wire_bytes),
        (driver.transactions, driver.wire_bytes),
        "the chip saw exactly the traffic the driver counted"
    );
    assert_eq!(
        stats.cycles,
        stats.wire_bytes * cycles_per_byte as u64,
        "cycles = wire bytes x cycles per byte"
    );
    assert_eq!(
        take_spent(),
        (stats.cycles, stats.transactions),
        "the hook spent exactly the cycles charged, once per transaction"
    );
}

#[test]
fn the_default_models_a_40_mhz_bus_next_to_a_160_mhz_cpu() {
    assert_eq!(DEFAULT_CYCLES_PER_BYTE, 160 / 40 * 8);
    let part = small_two_byte();
    let mut fram = Fram::new(emu(part), part);
    take_spent();
    fram.read(0, &mut [0u8; 29]).unwrap(); // READ + 2 + 29 = 32 bytes
    assert_eq!(fram.release().stats().cycles, 32 * 32);
    assert_eq!(take_spent().0, 32 * 32);
}

#[test]
fn wire_time_beyond_u32_is_spent_in_pieces_and_reset_stats_zeroes_the_counters() {
    let part = small_two_byte();
    let mut emu = EmuFram::new(part, VecNvm::new(256), u32::MAX, count_cycles).unwrap();
    take_spent();
    emu.write(&[READ, 0, 0]).unwrap();
    assert_eq!(emu.stats().cycles, 3 * u32::MAX as u64);
    assert_eq!(
        take_spent(),
        (3 * u32::MAX as u64, 3),
        "no cycle lost to overflow"
    );
    emu.reset_stats();
    assert_eq!(emu.stats(), Default::default());
}

#[test]
fn a_memory_smaller_than_the_part_is_refused_and_a_larger_one_is_used_from_zero() {
    let part = small_two_byte();
    assert_eq!(
        EmuFram::new(part, VecNvm::new(255), 1, count_cycles).err(),
        Some(MemoryTooSmall {
            part_size: 256,
            memory_size: 255
        })
    );
    let emu = EmuFram::new(part, VecNvm::new(1024), 1, count_cycles).unwrap();
    let mut fram = Fram::new(emu, part);
    fram.write_enable().unwrap();
    let mut emu = fram.release();
    emu.write(&[WRITE, 0, 0xFF, 1, 2]).unwrap();
    let image = image(emu);
    assert_eq!((image[0xFF], image[0]), (1, 2), "wraps at the part's size");
    assert!(
        image[256..].iter().all(|&b| b == 0),
        "memory past the part is never touched"
    );
}

#[test]
fn a_memory_that_loses_power_mid_write_keeps_a_prefix_and_the_driver_sees_power_lost() {
    let part = small_two_byte();
    // Each stored data byte is one store: cut at the third, keeping none of it.
    let memory = PowerCut::at(
        VecNvm::new(256),
        Cut {
            at_store: 2,
            keep_bytes: 0,
        },
    );
    let emu = EmuFram::new(part, memory, DEFAULT_CYCLES_PER_BYTE, count_cycles).unwrap();
    let mut fram = Fram::new(emu, part);
    assert_eq!(fram.write(20, &[1, 2, 3, 4]), Err(NvmError::PowerLost));
    let mut emu = fram.release();
    assert_eq!(
        emu.transaction(&mut [Operation::Write(&[READ, 0, 20]), Operation::Read(&mut [0])]),
        Err(EmuError::Memory(NvmError::PowerLost)),
        "a dead memory fails every later access"
    );
    let stats = emu.stats();
    assert_eq!(
        stats.wire_bytes,
        2 + 1 + 3 + 3 + 3 + 1,
        "RDSR, WREN, the torn WRITE up to its failing byte, the READ up to its data"
    );
    assert_eq!(
        stats.cycles,
        stats.wire_bytes * DEFAULT_CYCLES_PER_BYTE as u64
    );
    let memory = emu.into_memory();
    assert_eq!(memory.store_lens(), &[1, 1, 1], "one store per data byte");
    assert_eq!(&memory.into_inner().image()[20..24], &[1, 2, 0, 0]);
}

#[test]
fn simfram_is_emufram_with_the_same_counters() {
    let part = small_two_byte();
    let mut sim = crate::sim::SimFram::new(part);
    let mut fram = Fram::new(&mut sim, part);
    fram.write(0, &[1, 2, 3]).unwrap();
    let driver = fram.stats();
    let stats = sim.stats();
    assert_eq!(
        (stats.transactions, stats.wire_bytes),
        (driver.transactions, driver.wire_bytes)
    );
    assert_eq!(
        stats.cycles,
        stats.wire_bytes * DEFAULT_CYCLES_PER_BYTE as u64
    );
}

#[test]
fn the_emulated_chip_is_an_nvm_through_the_driver_like_vec_nvm() {
    let part = small_two_byte();
    let mut fram = Fram::new(emu(part), part);
    let mut reference = VecNvm::new(256);
    for (offset, data) in [(0u32, &b"abc"[..]), (250, b"xyzuvw"), (1, b"QQ")] {
        fram.write(offset, data).unwrap();
        reference.write(offset, data).unwrap();
    }
    fram.flush().unwrap();
    assert_eq!(image(fram.release()), reference.image());
}
