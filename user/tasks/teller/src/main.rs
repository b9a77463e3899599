//! teller: one side of a bank of two tasks holding TOTAL between them. Each transfer
//! takes a random amount from the teller's balance and sends it to the vault
//! (endpoint, slot 0), which adds it, gives a random amount back and replies with its
//! new balance. The teller then checks teller + vault == TOTAL: a checkpoint that mixed
//! one task's memory from one moment with the other's from another would break it.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{call_ep, exit, println, Rng};

amber_user::main!(main);

pub const TOTAL: u32 = 1_000_000;
const VAULT: u32 = 0;
const REPORT_EVERY: u32 = 500;

static mut BALANCE: u32 = TOTAL / 2;
static mut TRANSFERS: u32 = 0;
static mut RNG: Rng = Rng::new(0x1234_5678);

fn main() {
    // SAFETY (every access below): one thread per task; nothing else touches these.
    let balance = unsafe { &mut *core::ptr::addr_of_mut!(BALANCE) };
    let transfers = unsafe { &mut *core::ptr::addr_of_mut!(TRANSFERS) };
    let rng = unsafe { &mut *core::ptr::addr_of_mut!(RNG) };
    println!(
        "teller: starting at transfer {}, balance {}",
        *transfers, *balance
    );
    loop {
        let amount = rng.below(1000).min(*balance);
        *balance -= amount;
        let r = call_ep(VAULT, [amount, 0, 0, 0], None).expect("the vault answers");
        let (vault_balance, given_back) = (r[0], r[1]);
        *balance += given_back;
        *transfers += 1;
        if *balance as u64 + vault_balance as u64 != TOTAL as u64 {
            println!(
                "bank: VIOLATION after {} transfers: teller {} + vault {} != {TOTAL}",
                *transfers, *balance, vault_balance
            );
            exit(1);
        }
        if (*transfers).is_multiple_of(REPORT_EVERY) {
            println!("bank: {} transfers, sum {TOTAL}", *transfers);
        }
    }
}
