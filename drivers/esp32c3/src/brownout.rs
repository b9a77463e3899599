//! The brown-out detector as the power-failure interrupt (TRM chapter "Low-power
//! Management", RTC_CNTL_BROWN_OUT_REG and the RTC_CNTL interrupt registers): the
//! detector on, both its chip resets off (the digital RST_ENA, and the analog one:
//! RTC_CNTL_FIB_SEL_REG's BOD bit cleared so that BROWN_OUT_ANA_RST_EN decides, then
//! that bit cleared, as esp-idf's second-stage bootloader does in
//! `bootloader_ana_bod_reset_config`; without the bootloader, FIB_SEL keeps its reset
//! value 7 and the analog reset stays as the chip's default has it), its interrupt
//! (RTC_CNTL bit 9, interrupt matrix source 27, RTC_CORE) on. Checked against esp-idf's
//! `soc/esp32c3/include/soc/rtc_cntl_reg.h`. The threshold stays what the chip comes up with (set
//! through the analog I2C bus, not here): `docs/esp32c3.md` says what to measure.
//! Never resets the chip: the kernel checkpoints on the interrupt instead.

use crate::Regs;

pub const RTC_CNTL_INT_ENA: u32 = 0x6000_8040;
pub const RTC_CNTL_INT_RAW: u32 = 0x6000_8044;
pub const RTC_CNTL_INT_CLR: u32 = 0x6000_804C;
/// RTC_CNTL_INT_*: BROWN_OUT (bit 9).
pub const BROWN_OUT_INT: u32 = 1 << 9;
pub const RTC_CNTL_BROWN_OUT: u32 = 0x6000_80D8;
/// RTC_CNTL_BROWN_OUT: RST_ENA (bit 26), ANA_RST_EN (bit 28), ENA (bit 30), DET (bit
/// 31, read-only: the supply is below the threshold now).
pub const BROWN_OUT_RST_ENA: u32 = 1 << 26;
pub const BROWN_OUT_ANA_RST_EN: u32 = 1 << 28;
pub const BROWN_OUT_ENA: u32 = 1 << 30;
pub const BROWN_OUT_DET: u32 = 1 << 31;
/// RTC_CNTL_FIB_SEL_REG: which analog resets follow the chip's fixed signal (bits 2:0,
/// reset 7) instead of their enable bits; FIB_BOD_RST (bit 1) is the brown-out's.
pub const RTC_CNTL_FIB_SEL: u32 = 0x6000_810C;
pub const FIB_BOD_RST: u32 = 1 << 1;
/// The interrupt matrix source of RTC_CNTL's interrupts.
pub const SOURCE: u32 = 27;

/// RTC_CNTL_INT_CLR's defined bits (SLP_WAKEUP 0 .. BBPLL_CAL 20; esp-idf
/// `rtc_cntl_reg.h`).
pub const ALL_INTS: u32 = (1 << 21) - 1;

/// Detector on, its digital and analog resets off, its interrupt RTC_CNTL's only one
/// enabled (whatever the ROM left pending cleared first: the RTC_CORE source carries
/// the watchdogs' and the sleep interrupts too, and one left enabled would hold the
/// power-failure line).
pub fn enable_interrupt(r: &mut impl Regs) {
    r.clear_bits(RTC_CNTL_FIB_SEL, FIB_BOD_RST);
    r.modify(RTC_CNTL_BROWN_OUT, |v| {
        (v & !(BROWN_OUT_RST_ENA | BROWN_OUT_ANA_RST_EN)) | BROWN_OUT_ENA
    });
    r.write(RTC_CNTL_INT_CLR, ALL_INTS);
    r.write(RTC_CNTL_INT_ENA, BROWN_OUT_INT);
}

/// Whether RTC_CNTL's interrupt is the brown-out, acknowledging it and turning it off
/// if so. A power failure is one event: the supply stays below the threshold until the
/// power is gone, and the detector raises its bit again as soon as it is cleared, so
/// left on it would interrupt again and again and starve the persist phase (the heap
/// app's service never got to run in the simulator). The next boot turns it on again.
pub fn take_interrupt(r: &mut impl Regs) -> bool {
    if r.read(RTC_CNTL_INT_RAW) & BROWN_OUT_INT == 0 {
        return false;
    }
    r.clear_bits(RTC_CNTL_INT_ENA, BROWN_OUT_INT);
    r.write(RTC_CNTL_INT_CLR, BROWN_OUT_INT);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegs;

    #[test]
    fn the_detector_interrupts_instead_of_resetting() {
        let mut r = FakeRegs::default();
        // Both resets enabled, as a chip may come up; other fields kept. FIB_SEL at
        // its reset value: every analog reset on the chip's fixed signal.
        r.values.insert(0x6000_80D8, 1 << 28 | 1 << 26 | 0x3FF);
        r.values.insert(0x6000_810C, 0b111);
        r.values.insert(0x6000_8040, 1 << 3);
        enable_interrupt(&mut r);
        assert_eq!(
            r.get(0x6000_810C),
            0b101,
            "the brown-out's analog reset follows ANA_RST_EN"
        );
        assert_eq!(
            r.get(0x6000_80D8),
            1 << 30 | 0x3FF,
            "ANA_RST_EN and RST_ENA off, ENA on"
        );
        let fib = r.writes.iter().position(|w| w.0 == 0x6000_810C).unwrap();
        let bod = r.writes.iter().position(|w| w.0 == 0x6000_80D8).unwrap();
        assert!(fib < bod, "FIB_SEL first, as esp-idf's bootloader does");
        assert_eq!(
            r.get(0x6000_8040),
            1 << 9,
            "the ROM's other RTC interrupt off"
        );
        assert_eq!(r.writes_to(0x6000_804C), [0x1F_FFFF]);
    }

    #[test]
    fn only_a_raised_brown_out_is_taken_cleared_and_turned_off() {
        let mut r = FakeRegs::default();
        r.values.insert(0x6000_8044, 1 << 3);
        r.values.insert(0x6000_8040, 1 << 9 | 1 << 3);
        assert!(!take_interrupt(&mut r));
        assert!(r.writes.is_empty());
        r.values.insert(0x6000_8044, 1 << 9);
        assert!(take_interrupt(&mut r));
        assert_eq!(r.writes_to(0x6000_804C), [1 << 9]);
        assert_eq!(
            r.get(0x6000_8040),
            1 << 3,
            "a level that stays raised interrupts once"
        );
    }
}
