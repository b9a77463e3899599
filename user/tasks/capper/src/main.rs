//! capper: derives capabilities into its slots and deletes them, at random, keeping
//! its own record of what each slot should hold; after every operation it asks the
//! kernel (CapInfo) about every slot and compares. The record is task memory and the
//! slots are kernel objects: after a power cut both must come back from the same
//! checkpoint, or they disagree.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::abi::ObjKind;
use amber_user::{cap_delete, cap_derive, cap_info, exit, println, Error, Rights, Rng};

amber_user::main!(main);

/// Slot 0 holds the notification every derived cap comes from.
const SOURCE: u32 = 0;
const SLOTS: usize = 16;
const REPORT_EVERY: u32 = 200;

/// What each slot holds: 0 = empty, else the rights bits + 1.
static mut RECORD: [u32; SLOTS] = [0; SLOTS];
static mut OPS: u32 = 0;
static mut RNG: Rng = Rng::new(0x5EED_0003);

fn main() {
    // SAFETY (all three): one thread per task; nothing else touches these.
    let record = unsafe { &mut *core::ptr::addr_of_mut!(RECORD) };
    let ops = unsafe { &mut *core::ptr::addr_of_mut!(OPS) };
    let rng = unsafe { &mut *core::ptr::addr_of_mut!(RNG) };
    println!("capper: starting at operation {}", *ops);
    loop {
        let slot = 1 + rng.below(SLOTS as u32 - 1);
        let s = slot as usize;
        if record[s] == 0 {
            let rights =
                [Rights::READ, Rights::WRITE, Rights::READ | Rights::WRITE][rng.below(3) as usize];
            cap_derive(SOURCE, slot, rights, 0).expect("derive into an empty slot");
            record[s] = rights.bits() + 1;
        } else {
            cap_delete(slot).expect("delete a full slot");
            record[s] = 0;
        }
        *ops += 1;
        for (i, &want) in record.iter().enumerate().skip(1) {
            let got = match cap_info(i as u32) {
                Ok((Some(ObjKind::Notification), rights, _)) => rights.bits() + 1,
                Err(Error::EmptySlot) => 0,
                other => {
                    println!("capper: VIOLATION slot {i}: kernel says {other:?}");
                    exit(1);
                }
            };
            if got != want {
                println!("capper: VIOLATION after {} operations: slot {i} holds {got}, record says {want}", *ops);
                exit(1);
            }
        }
        if (*ops).is_multiple_of(REPORT_EVERY) {
            println!("capper: {} operations, capabilities consistent", *ops);
        }
    }
}
