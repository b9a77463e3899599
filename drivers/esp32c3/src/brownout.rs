//! The brown-out detector as the power-failure interrupt (TRM chapter "Low-power
//! Management", RTC_CNTL_BROWN_OUT_REG and the RTC_CNTL interrupt registers): the
//! detector on, its chip reset off, its interrupt (RTC_CNTL bit 9, interrupt matrix
//! source 27, RTC_CORE) on. The threshold stays what the chip comes up with (set
//! through the analog I2C bus, not here): `docs/esp32c3.md` says what to measure.
//! Never resets the chip: the kernel checkpoints on the interrupt instead.

use crate::Regs;

pub const RTC_CNTL_INT_ENA: u32 = 0x6000_8040;
pub const RTC_CNTL_INT_RAW: u32 = 0x6000_8044;
pub const RTC_CNTL_INT_CLR: u32 = 0x6000_804C;
/// RTC_CNTL_INT_*: BROWN_OUT (bit 9).
pub const BROWN_OUT_INT: u32 = 1 << 9;
pub const RTC_CNTL_BROWN_OUT: u32 = 0x6000_80D8;
/// RTC_CNTL_BROWN_OUT: RST_ENA (bit 26), ENA (bit 30), DET (bit 31, read-only: the
/// supply is below the threshold now).
pub const BROWN_OUT_RST_ENA: u32 = 1 << 26;
pub const BROWN_OUT_ENA: u32 = 1 << 30;
pub const BROWN_OUT_DET: u32 = 1 << 31;
/// The interrupt matrix source of RTC_CNTL's interrupts.
pub const SOURCE: u32 = 27;

/// Detector on, its reset off, its interrupt on (any stale one cleared first).
pub fn enable_interrupt(r: &mut impl Regs) {
    r.modify(RTC_CNTL_BROWN_OUT, |v| {
        (v & !BROWN_OUT_RST_ENA) | BROWN_OUT_ENA
    });
    r.write(RTC_CNTL_INT_CLR, BROWN_OUT_INT);
    r.set_bits(RTC_CNTL_INT_ENA, BROWN_OUT_INT);
}

/// Whether RTC_CNTL's interrupt is the brown-out, acknowledging it if so.
pub fn take_interrupt(r: &mut impl Regs) -> bool {
    if r.read(RTC_CNTL_INT_RAW) & BROWN_OUT_INT == 0 {
        return false;
    }
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
        // Reset enabled, as the eFuse default may leave it; other fields kept.
        r.values.insert(0x6000_80D8, 1 << 26 | 0x3FF);
        r.values.insert(0x6000_8040, 1 << 3);
        enable_interrupt(&mut r);
        assert_eq!(r.get(0x6000_80D8), 1 << 30 | 0x3FF);
        assert_eq!(r.get(0x6000_8040), 1 << 9 | 1 << 3);
        assert_eq!(r.writes_to(0x6000_804C), [1 << 9]);
    }

    #[test]
    fn only_a_raised_brown_out_is_taken_and_cleared() {
        let mut r = FakeRegs::default();
        r.values.insert(0x6000_8044, 1 << 3);
        assert!(!take_interrupt(&mut r));
        assert!(r.writes.is_empty());
        r.values.insert(0x6000_8044, 1 << 9);
        assert!(take_interrupt(&mut r));
        assert_eq!(r.writes_to(0x6000_804C), [1 << 9]);
    }
}
