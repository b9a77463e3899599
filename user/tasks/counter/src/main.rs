//! counter: passes a counter through `pong` (endpoint, slot 0) ROUNDS times, then asks
//! for a checkpoint (the Checkpoint syscall returns only after the commit) and prints
//! the count. Every printed value is committed, so after any power cut the count the
//! system resumes with is at least the last one printed: printed values only grow.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{call_ep, checkpoint, println};

amber_user::main!(main);

const PONG: u32 = 0;
const ROUNDS: u32 = 100;

/// The counter, in checkpointed task memory.
static mut COUNT: u32 = 0;

fn main() {
    loop {
        for _ in 0..ROUNDS {
            // SAFETY: one thread per task; nothing else touches COUNT.
            let c = unsafe { COUNT };
            let r = call_ep(PONG, [c, 0, 0, 0], None).expect("pong answers");
            assert_eq!(r[0], c + 1, "pong adds one");
            // SAFETY: as above.
            unsafe { COUNT = r[0] };
        }
        checkpoint().expect("checkpoint");
        // SAFETY: as above.
        println!("counter: {} committed", unsafe { COUNT });
    }
}
