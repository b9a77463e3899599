//! vault: the other side of the bank (see teller). It adds every amount it receives,
//! gives a random amount back, and replies with its balance and what it gave.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{recv, reply, Rng};

amber_user::main!(main);

const ENDPOINT: u32 = 0;

static mut BALANCE: u32 = 500_000;
static mut RNG: Rng = Rng::new(0x0BAD_CAFE);

fn main() {
    // SAFETY (both): one thread per task; nothing else touches these.
    let balance = unsafe { &mut *core::ptr::addr_of_mut!(BALANCE) };
    let rng = unsafe { &mut *core::ptr::addr_of_mut!(RNG) };
    loop {
        let Ok((w, _)) = recv(ENDPOINT, None) else {
            continue;
        };
        *balance += w[0];
        let give = rng.below(1000).min(*balance);
        *balance -= give;
        let _ = reply([*balance, give, 0, 0], None);
    }
}
