//! `Fram` against the reference `Nvm` (`amber_nvm::sim::VecNvm`): the same calls give
//! the same results and the same contents, and `amber_nvm`'s store-level crash
//! harness (`PowerCut`) works on top of it unchanged.

use super::{small_three_byte, small_two_byte, Rng};
use crate::sim::SimFram;
use crate::Fram;
use amber_nvm::sim::{Cut, PowerCut, VecNvm};
use amber_nvm::Nvm;

#[test]
fn fram_and_vec_nvm_give_the_same_results_for_the_same_calls() {
    for part in [small_two_byte(), small_three_byte()] {
        let mut fram = Fram::new(SimFram::new(part), part);
        let mut reference = VecNvm::new(part.size());
        let mut rng = Rng::new(part.size() as u64 + 11);
        for step in 0..3000 {
            // Some accesses run past the end on purpose.
            let offset = rng.below(part.size() as u64 + 8) as u32;
            let len = rng.below(40) as usize;
            if rng.below(2) == 0 {
                let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                assert_eq!(
                    fram.write(offset, &data),
                    reference.write(offset, &data),
                    "step {step}: write of {len} at {offset}"
                );
            } else {
                let (mut a, mut b) = (vec![0u8; len], vec![0u8; len]);
                assert_eq!(
                    fram.read(offset, &mut a),
                    reference.read(offset, &mut b),
                    "step {step}: read of {len} at {offset}"
                );
                assert_eq!(a, b, "step {step}: read data");
            }
            if step % 500 == 0 {
                fram.fence();
                assert_eq!(fram.flush(), reference.flush());
            }
        }
        assert_eq!(fram.size(), reference.size());
        assert_eq!(fram.release().image(), reference.image());
    }
}

#[test]
fn the_nvm_power_cut_harness_runs_on_fram_like_on_vec_nvm() {
    let part = small_three_byte();
    let stores: [(u32, &[u8]); 3] = [(0, &[1; 6]), (3, &[2; 6]), (250, &[3; 6])];
    for at_store in 0..3u64 {
        for keep_bytes in 0..=6 {
            let cut = Cut {
                at_store,
                keep_bytes,
            };
            let mut on_fram = PowerCut::at(Fram::new(SimFram::new(part), part), cut);
            let mut on_vec = PowerCut::at(VecNvm::new(part.size()), cut);
            for (offset, data) in stores {
                assert_eq!(on_fram.write(offset, data), on_vec.write(offset, data));
            }
            assert_eq!(on_fram.store_lens(), on_vec.store_lens());
            let fram_image = on_fram.into_inner().release().into_image();
            assert_eq!(
                fram_image,
                on_vec.into_inner().into_image(),
                "cut {cut:?}: the same torn state on both devices"
            );
        }
    }
}
