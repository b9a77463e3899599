//! heartbeat: prints "heartbeat N" every PERIOD timer ticks, using its Timer (slot 0)
//! to set a bit on its Notification (slot 1) and waiting for it. Shows that the system
//! keeps running while other tasks fault or misbehave.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{now, println, timer_set, wait};

amber_user::main!(main);

const TIMER: u32 = 0;
const NOTIFICATION: u32 = 1;
/// Ticks between beats (a tick is 10 ms on QEMU).
const PERIOD: u64 = 50;

fn main() {
    let mut deadline = now();
    for n in 1.. {
        deadline += PERIOD;
        timer_set(TIMER, NOTIFICATION, 1, deadline).expect("timer");
        wait(NOTIFICATION).expect("wait");
        println!("heartbeat {n}");
    }
}
