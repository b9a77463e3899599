//! Power cuts at every byte on the wire: what survives on the FRAM is always every
//! completed write plus a prefix of the torn one, exactly the crash model of
//! `amber_nvm::sim::PowerCut` that the checkpoint and heap crash tests assume.

use super::{small_three_byte, small_two_byte, Rng};
use crate::sim::SimFram;
use crate::{Fram, Part};
use amber_nvm::sim::{Cut, PowerCut, VecNvm};
use amber_nvm::{Nvm, NvmError};

/// One step of a workload.
#[derive(Clone, Debug)]
enum Step {
    Write(u32, Vec<u8>),
    Read(u32, usize),
}

/// Runs `steps` on `nvm` until the first error, which it returns.
fn run<N: Nvm>(nvm: &mut N, steps: &[Step]) -> Result<(), NvmError> {
    for step in steps {
        match step {
            Step::Write(offset, data) => nvm.write(*offset, data)?,
            Step::Read(offset, len) => nvm.read(*offset, &mut vec![0; *len])?,
        }
    }
    Ok(())
}

/// Where each write's data lies on the wire in an uncut run: `(first, end)` wire
/// byte indices of its data bytes.
fn data_spans(part: Part, initial: &[u8], steps: &[Step]) -> (Vec<(u64, u64)>, u64) {
    let mut fram = Fram::new(SimFram::from_image(part, initial.to_vec()), part);
    let mut spans = Vec::new();
    for step in steps {
        run(&mut fram, core::slice::from_ref(step)).unwrap();
        if let Step::Write(_, data) = step {
            let end = fram.stats().wire_bytes;
            spans.push((end - data.len() as u64, end));
        }
    }
    (spans, fram.stats().wire_bytes)
}

/// The image `amber_nvm`'s crash model gives for a cut at store `at_store` keeping
/// `keep_bytes` of it.
fn modelled_image(initial: &[u8], steps: &[Step], at_store: u64, keep_bytes: usize) -> Vec<u8> {
    let mut model = PowerCut::at(
        VecNvm::from_image(initial.to_vec()),
        Cut {
            at_store,
            keep_bytes,
        },
    );
    let _ = run(&mut model, steps);
    model.into_inner().into_image()
}

/// Cuts power after every possible number of wire bytes and checks the image.
/// Returns how many cuts were tried.
fn cut_everywhere(part: Part, initial: &[u8], steps: &[Step]) -> u64 {
    let (spans, total) = data_spans(part, initial, steps);
    let lens: Vec<usize> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Write(_, data) => Some(data.len()),
            Step::Read(..) => None,
        })
        .collect();
    for k in 0..=total {
        let mut sim = SimFram::from_image(part, initial.to_vec());
        sim.cut_after_bytes(k);
        let mut fram = Fram::new(sim, part);
        let result = run(&mut fram, steps);
        let completed = spans.iter().filter(|&&(_, end)| end <= k).count();
        if k < total {
            assert_eq!(result, Err(NvmError::PowerLost), "cut after {k} bytes");
        } else {
            assert_eq!(result, Ok(()), "no cut within the workload's {total} bytes");
        }
        let mut sim = fram.release();
        let image = sim.image().to_vec();

        // The safety property: completed writes plus some prefix of the torn one.
        let torn_len = lens.get(completed).copied().unwrap_or(0);
        let allowed =
            (0..=torn_len).find(|&p| modelled_image(initial, steps, completed as u64, p) == image);
        let Some(prefix) = allowed else {
            panic!(
                "cut after {k} bytes: the FRAM holds something other than {completed} \
                 completed writes plus a prefix of the next one"
            );
        };
        // The precision of the simulation: exactly the data bytes that were clocked.
        let clocked = spans
            .get(completed)
            .map_or(0, |&(first, _)| k.saturating_sub(first) as usize)
            .min(torn_len);
        let expected = modelled_image(initial, steps, completed as u64, clocked);
        assert_eq!(
            image, expected,
            "cut after {k} bytes: write {completed} must keep exactly its {clocked} clocked \
             bytes (matched a {prefix}-byte prefix)"
        );

        // After power returns, the driver reads what the chip holds.
        sim.power_on();
        let mut fram = Fram::new(sim, part);
        let mut back = vec![0u8; part.size() as usize];
        fram.read(0, &mut back).unwrap();
        assert_eq!(back, image, "cut after {k} bytes: reads after power-up");
    }
    total + 1
}

fn fixed_workload(size: u32) -> Vec<Step> {
    vec![
        Step::Write(0, vec![0x11; 8]),
        Step::Write(4, vec![0x22; 8]),
        Step::Read(0, 16),
        Step::Write(size - 6, vec![0x33, 0x34, 0x35, 0x36, 0x37, 0x38]),
        Step::Write(2, vec![0x44]),
        Step::Write(100, (0..40).collect()),
        Step::Read(90, 20),
        Step::Write(110, vec![0x55; 3]),
    ]
}

#[test]
fn a_cut_at_any_wire_byte_keeps_completed_writes_and_a_prefix_of_the_torn_one() {
    for part in [small_two_byte(), small_three_byte()] {
        let initial = vec![0xEE; part.size() as usize];
        let cuts = cut_everywhere(part, &initial, &fixed_workload(part.size()));
        assert!(cuts > 100, "the workload must put real traffic on the wire");
    }
}

#[test]
fn random_workloads_survive_a_cut_at_any_wire_byte() {
    let mut rng = Rng::new(0xF4A3);
    for _ in 0..12 {
        let part = if rng.below(2) == 0 {
            small_two_byte()
        } else {
            small_three_byte()
        };
        let initial: Vec<u8> = (0..part.size()).map(|_| rng.next() as u8).collect();
        let steps: Vec<Step> = (0..1 + rng.below(8))
            .map(|_| {
                let offset = rng.below(part.size() as u64) as u32;
                let len = 1 + rng.below((part.size() - offset).min(24) as u64) as usize;
                if rng.below(4) == 0 {
                    Step::Read(offset, len)
                } else {
                    Step::Write(offset, (0..len).map(|_| rng.next() as u8).collect())
                }
            })
            .collect();
        cut_everywhere(part, &initial, &steps);
    }
}
