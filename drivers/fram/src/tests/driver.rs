//! The driver through the `Nvm` interface and its own API, against the simulated chip.

use super::{small_three_byte, small_two_byte, Rng};
use crate::sim::{SimError, SimFram};
use crate::{BlockProtect, Fram, FramError, Part, Status};
use amber_nvm::{Nvm, NvmError};

#[test]
fn what_is_written_reads_back_on_two_and_three_byte_parts() {
    for part in [
        small_two_byte(),
        small_three_byte(),
        Part::MB85RS64V,
        Part::MB85RS4MT,
    ] {
        let mut fram = Fram::new(SimFram::new(part), part);
        let end = part.size() - 5;
        fram.write(0, b"first").unwrap();
        fram.write(end, b"last!").unwrap();
        let mut buf = [0u8; 5];
        fram.read(0, &mut buf).unwrap();
        assert_eq!(&buf, b"first", "{part:?}");
        fram.read(end, &mut buf).unwrap();
        assert_eq!(&buf, b"last!", "{part:?}: the last bytes of the array");
        let image = fram.release().into_image();
        assert_eq!(
            &image[end as usize..],
            b"last!",
            "{part:?}: stored at the right address"
        );
    }
}

#[test]
fn the_whole_array_can_be_written_and_read_in_one_transfer() {
    let part = small_three_byte();
    let mut fram = Fram::new(SimFram::new(part), part);
    let data: Vec<u8> = (0..=255u8).rev().collect();
    fram.write(0, &data).unwrap();
    let mut back = vec![0u8; 256];
    fram.read(0, &mut back).unwrap();
    assert_eq!(
        back, data,
        "FRAM has no page limit: one WRITE covers the array"
    );
}

#[test]
fn nvm_size_is_the_parts_size() {
    let fram = Fram::new(SimFram::new(Part::MB85RS256B), Part::MB85RS256B);
    assert_eq!(fram.size(), 32 * 1024);
}

#[test]
fn accesses_past_the_end_are_out_of_bounds_and_send_nothing() {
    let part = small_two_byte();
    let mut fram = Fram::new(SimFram::new(part), part);
    let past_end = NvmError::OutOfBounds {
        offset: 250,
        len: 10,
        size: 256,
    };
    assert_eq!(fram.write(250, &[1; 10]), Err(past_end));
    assert_eq!(fram.read(250, &mut [0; 10]), Err(past_end));
    assert_eq!(
        fram.read(u32::MAX, &mut [0; 2]),
        Err(NvmError::OutOfBounds {
            offset: u32::MAX,
            len: 2,
            size: 256
        }),
        "offset + len must not wrap around"
    );
    assert_eq!(
        fram.write(256, &[]),
        Ok(()),
        "an empty access at the end is fine"
    );
    let sim = fram.release();
    assert_eq!(
        sim.transactions(),
        0,
        "a refused access never reaches the bus"
    );
    assert_eq!(sim.image(), &[0; 256][..]);
}

#[test]
fn a_write_into_the_protected_top_is_refused_and_reported_as_the_writable_end() {
    let part = small_two_byte();
    let mut fram = Fram::new(SimFram::new(part), part);
    fram.set_block_protect(BlockProtect::UpperQuarter).unwrap();
    fram.write(0, &[1; 192]).unwrap();
    let before = fram.stats().transactions;
    assert_eq!(
        fram.write_at(190, &[2; 4]),
        Err(FramError::WriteProtected {
            offset: 190,
            len: 4,
            protected_from: 192
        })
    );
    assert_eq!(
        fram.write(190, &[2; 4]),
        Err(NvmError::OutOfBounds {
            offset: 190,
            len: 4,
            size: 192
        }),
        "through Nvm the writable device ends where protection starts"
    );
    assert_eq!(fram.stats().transactions, before, "nothing was sent");
    let mut top = [9u8; 4];
    fram.read(252, &mut top).unwrap();
    assert_eq!(top, [0; 4], "reads of the protected range still work");
}

#[test]
fn a_chip_protected_before_the_driver_started_is_learnt_on_the_first_write() {
    let part = small_two_byte();
    let mut sim = SimFram::new(part);
    let mut setup = Fram::new(&mut sim, part);
    setup.set_block_protect(BlockProtect::All).unwrap();
    let mut fram = Fram::new(sim, part);
    assert_eq!(
        fram.write(0, &[1]),
        Err(NvmError::OutOfBounds {
            offset: 0,
            len: 1,
            size: 0
        }),
        "with everything protected no write may claim success"
    );
}

#[test]
fn lifting_the_protection_makes_the_range_writable_again() {
    let part = small_two_byte();
    let mut fram = Fram::new(SimFram::new(part), part);
    fram.set_block_protect(BlockProtect::UpperHalf).unwrap();
    assert!(fram.write(200, &[1]).is_err());
    fram.set_block_protect(BlockProtect::None).unwrap();
    fram.write(200, &[1]).unwrap();
    assert_eq!(fram.release().image()[200], 1);
}

#[test]
fn set_block_protect_keeps_wpen() {
    let part = small_two_byte();
    let mut fram = Fram::new(SimFram::new(part), part);
    fram.set_status(Status::default().with_wpen(true)).unwrap();
    let status = fram.set_block_protect(BlockProtect::UpperHalf).unwrap();
    assert!(status.wpen());
    assert_eq!(status.block_protect(), BlockProtect::UpperHalf);
}

#[test]
fn a_status_write_the_chip_ignores_is_reported_not_assumed() {
    let part = small_two_byte();
    let mut sim = SimFram::new(part);
    let mut fram = Fram::new(&mut sim, part);
    fram.set_status(Status::default().with_wpen(true)).unwrap();
    let sim = fram.release();
    sim.set_wp_low(true);
    let mut fram = Fram::new(sim, part);
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
    fram.write(0, &[1]).unwrap();
    assert_eq!(
        fram.release().image()[0],
        1,
        "the driver knows protection did not change"
    );
}

#[test]
fn a_dead_bus_is_reported_as_power_lost() {
    let part = small_two_byte();
    let mut sim = SimFram::new(part);
    sim.cut_after_bytes(0);
    let mut fram = Fram::new(sim, part);
    assert_eq!(fram.read(0, &mut [0; 4]), Err(NvmError::PowerLost));
    assert_eq!(fram.write(0, &[1]), Err(NvmError::PowerLost));
    assert_eq!(fram.status(), Err(FramError::Bus(SimError::PowerLost)));
}

#[test]
fn fence_and_flush_send_nothing_because_fram_has_no_write_buffer() {
    let part = small_two_byte();
    let mut fram = Fram::new(SimFram::new(part), part);
    fram.write(3, &[1, 2]).unwrap();
    let before = fram.stats();
    fram.fence();
    fram.flush().unwrap();
    assert_eq!(fram.stats(), before);
    assert_eq!(
        &fram.release().image()[3..5],
        &[1, 2],
        "durable before flush"
    );
}

#[test]
fn reset_stats_zeroes_every_counter() {
    let part = small_two_byte();
    let mut fram = Fram::new(SimFram::new(part), part);
    fram.write(0, &[1]).unwrap();
    fram.reset_stats();
    assert_eq!(fram.stats(), crate::FramStats::default());
}

#[test]
fn errors_read_as_sentences() {
    let e: FramError<SimError> = FramError::WriteProtected {
        offset: 0x10,
        len: 4,
        protected_from: 0xC0,
    };
    assert_eq!(
        e.to_string(),
        "FRAM write of 4 bytes at 0x10 reaches the block-protected range from 0xc0"
    );
    let e: FramError<SimError> = FramError::Bus(SimError::PowerLost);
    assert!(e
        .to_string()
        .starts_with("SPI transaction to the FRAM failed"));
}

#[test]
fn random_reads_and_writes_agree_with_a_plain_byte_array() {
    let part = small_three_byte();
    let mut fram = Fram::new(SimFram::new(part), part);
    let mut model = vec![0u8; 256];
    let mut rng = Rng::new(7);
    for step in 0..2000 {
        let offset = rng.below(256) as u32;
        let len = rng.below(257 - offset as u64) as usize;
        if rng.below(2) == 0 {
            let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            fram.write(offset, &data).unwrap();
            model[offset as usize..offset as usize + len].copy_from_slice(&data);
        } else {
            let mut buf = vec![0u8; len];
            fram.read(offset, &mut buf).unwrap();
            assert_eq!(
                buf,
                &model[offset as usize..offset as usize + len],
                "step {step}: read of {len} at {offset}"
            );
        }
    }
}
