//! ping: passes a counter to `pong` over an endpoint (slot 0) ROUNDS times with Call,
//! checking every reply, and prints the final count. A wrong reply is a panic (the
//! task ends with the panic exit code and the test sees it).

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{call_ep, println};

amber_user::main!(main);

/// Round trips to make.
const ROUNDS: u32 = 10_000;
/// The endpoint to `pong`.
const PONG: u32 = 0;

fn main() {
    let mut count = 0u32;
    for _ in 0..ROUNDS {
        let reply = call_ep(PONG, [count, !count, 0, 0], None)
            .unwrap_or_else(|e| panic!("call to pong failed at count {count}: {e:?}"));
        assert_eq!(reply[0], count + 1, "pong must return the counter plus one");
        assert_eq!(reply[1], !count, "pong must echo the second word");
        count = reply[0];
    }
    println!("pingpong: final count {count} after {ROUNDS} round trips");
}
