//! writer: writes numbered 4-byte records to FRAM through the SPI driver (endpoint,
//! slot 0, badge 1, and the buffer of badge 1 shared with the driver): record n goes
//! to address 4 * (n mod SLOTS) and holds n; when the driver's ring is full it asks
//! for a checkpoint and writes the record again. Its commit watch (notification in
//! slot 1) tells it when the system was restored; it then prints the count it resumed
//! at, which the visibility test compares with what the FRAM holds.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_spi_api::{Client, SpiError};
use amber_user::{checkpoint, memory, println, signalled, watch_restores, WatchFlags};

amber_user::main!(main);

const SPI: u32 = 0;
const NOTIFICATION: u32 = 1;
const RESTORED: u32 = 1 << 1;
/// Records kept on the FRAM before they wrap (the first 256 KiB).
pub const SLOTS: u32 = 64 * 1024;
const REPORT_EVERY: u32 = 1000;

/// The commit watch: [records written, committed value (written by the kernel)].
static mut WATCH: [u64; 2] = [0; 2];

fn main() {
    // SAFETY: one thread per task; the kernel writes WATCH[1] only while this task is
    // stopped for a checkpoint.
    let watch = unsafe { &mut *core::ptr::addr_of_mut!(WATCH) };
    watch_restores(watch, NOTIFICATION, RESTORED, WatchFlags::empty()).expect("commit watch");
    // SAFETY: the app grants this task, and the driver alone, its part of `spi`, with
    // the SPI endpoint capability of its badge; nothing else here uses it.
    let mut spi = unsafe { Client::new(SPI, memory!("SPI")) }.expect("a buffer of MAX_CHUNK");
    loop {
        if signalled(NOTIFICATION, RESTORED) {
            println!("writer: restored at {}", watch[0]);
        }
        let n = watch[0] as u32 + 1;
        match spi.write(4 * (n % SLOTS), &n.to_le_bytes()) {
            Ok(_) => {}
            Err(SpiError::Full) => {
                // The driver applies the ring once this checkpoint commits; then the
                // same record is written again.
                match checkpoint() {
                    Ok(()) => println!("writer: ring full at record {n}; checkpoint taken"),
                    Err(e) => println!("writer: ring full at record {n}; checkpoint failed: {e}"),
                }
                continue;
            }
            Err(e) => panic!("the SPI driver refused a write: {e:?}"),
        }
        watch[0] = n as u64;
        if n.is_multiple_of(REPORT_EVERY) {
            println!("writer: {n} written");
        }
    }
}
