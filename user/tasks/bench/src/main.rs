//! bench: measures the cost of a null syscall and of an IPC round trip (Call to an
//! echo server and its ReplyRecv), in retired instructions counted by `minstret` (the whole
//! hart: user and kernel), under `-icount shift=0,sleep=off`, where they are exact and
//! repeat; without it (`amber_user::counters_exact`) it says so and measures nothing.
//! It prints figures; it never judges them.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{call_ep, counters_exact, instret, null, println};

amber_user::main!(main);

const N: u32 = 1000;
const ECHO: u32 = 0;

/// Instructions per iteration of `f`, minus the loop's own cost.
fn per_op(f: impl Fn()) -> u32 {
    let t0 = instret();
    for _ in 0..N {
        core::hint::black_box(());
    }
    let empty = instret().wrapping_sub(t0);
    let t0 = instret();
    for _ in 0..N {
        f();
    }
    let total = instret().wrapping_sub(t0);
    total.saturating_sub(empty) / N
}

fn main() {
    if !counters_exact() {
        println!(
            "bench: not measured: instret counts instructions only under -icount (cargo xtask bench, or run --icount)"
        );
        return;
    }
    let null_cost = per_op(null);
    let ipc_cost = per_op(|| {
        let _ = call_ep(ECHO, [1, 2, 3, 4], None);
    });
    println!("bench: null syscall {null_cost} instructions (mean of {N})");
    println!("bench: IPC round trip {ipc_cost} instructions (Call + ReplyRecv, 4 words, two task switches, mean of {N})");
}
