//! rtcdrv: a user-space driver for QEMU's goldfish RTC. It holds the RTC registers as a
//! device MemObj (`rtc`, slot 0, mapped by PMP; where it is the app description says)
//! and the RTC interrupt as an IrqNotification (slot 1). It arms the alarm ALARMS times, sleeping in IrqWait until the interrupt
//! arrives, clears it at the device and acknowledges it to the kernel.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{irq_ack, irq_wait, memory, println, Error, Memory};

amber_user::main!(main);

const RTC: Memory = memory!("RTC");
const TIME_LOW: usize = 0x00;
const TIME_HIGH: usize = 0x04;
const ALARM_LOW: usize = 0x08;
const ALARM_HIGH: usize = 0x0c;
const IRQ_ENABLED: usize = 0x10;
const CLEAR_INTERRUPT: usize = 0x1c;
const IRQ: u32 = 1;
const ALARMS: u32 = 5;
/// Alarm delay: 2 ms.
const DELAY_NS: u64 = 2_000_000;

fn read(reg: usize) -> u32 {
    // SAFETY: the RTC's registers are granted to this task (slot 0) and mapped by PMP.
    unsafe { ((RTC.base + reg) as *const u32).read_volatile() }
}

fn write(reg: usize, v: u32) {
    // SAFETY: as in `read`.
    unsafe { ((RTC.base + reg) as *mut u32).write_volatile(v) }
}

/// Nanoseconds on the RTC (reading the low half latches the high half).
fn time_ns() -> u64 {
    let lo = read(TIME_LOW) as u64;
    (read(TIME_HIGH) as u64) << 32 | lo
}

fn main() {
    write(IRQ_ENABLED, 1);
    for n in 1..=ALARMS {
        let at = time_ns() + DELAY_NS;
        write(ALARM_HIGH, (at >> 32) as u32);
        write(ALARM_LOW, at as u32);
        irq_wait(IRQ).expect("waiting for the RTC interrupt");
        let late = time_ns().saturating_sub(at);
        write(CLEAR_INTERRUPT, 1);
        match irq_ack(IRQ) {
            // WrongState: a power cut came between the interrupt and this acknowledge;
            // the restored kernel dropped the delivery, so there is nothing to ack.
            Ok(()) | Err(Error::WrongState) => {}
            Err(e) => panic!("acknowledging the RTC interrupt: {e:?}"),
        }
        println!(
            "rtcdrv: alarm {n} fired, {} us after its deadline",
            late / 1000
        );
    }
    println!("rtcdrv: {ALARMS} alarms received through the IrqNotification");
}
