//! SYSTIMER (TRM chapter "System Timer", 10.4/10.5): UNIT0 counts at 16 MHz from reset;
//! comparator COMP0 in period mode raises SYSTIMER_TARGET0 (interrupt source 37)
//! every `period` counts. Reading UNIT0 takes an update request and a wait for the
//! value to be valid. A tick is counted only when SYSTIMER_INT_ST says COMP0 raised it
//! ([`take_tick`]). Never touches UNIT1 or the other comparators (their interrupts
//! stay off).

use crate::Regs;

pub const BASE: u32 = 0x6002_3000;
/// SYSTIMER_CONF: TARGET0_WORK_EN (bit 24), TIMER_UNIT0_WORK_EN (bit 30, set at reset).
pub const CONF: u32 = BASE;
pub const TARGET0_WORK_EN: u32 = 1 << 24;
pub const UNIT0_WORK_EN: u32 = 1 << 30;
/// SYSTIMER_UNIT0_OP: TIMER_UNIT0_UPDATE (bit 30), TIMER_UNIT0_VALUE_VALID (bit 29).
pub const UNIT0_OP: u32 = BASE + 0x04;
pub const UNIT0_UPDATE: u32 = 1 << 30;
pub const UNIT0_VALUE_VALID: u32 = 1 << 29;
/// SYSTIMER_TARGET0_CONF: period (bits 25:0), PERIOD_MODE (bit 30), UNIT_SEL (bit 31,
/// 0 = UNIT0).
pub const TARGET0_CONF: u32 = BASE + 0x34;
pub const TARGET0_PERIOD_MODE: u32 = 1 << 30;
pub const TARGET0_PERIOD_MAX: u32 = (1 << 26) - 1;
pub const UNIT0_VALUE_HI: u32 = BASE + 0x40;
pub const UNIT0_VALUE_LO: u32 = BASE + 0x44;
/// SYSTIMER_COMP0_LOAD: writing 1 loads TARGET0_CONF into the comparator.
pub const COMP0_LOAD: u32 = BASE + 0x50;
/// SYSTIMER_INT_ENA, _RAW, _CLR and _ST: TARGET0 (bit 0), TARGET1 (1), TARGET2 (2).
pub const INT_ENA: u32 = BASE + 0x64;
pub const INT_CLR: u32 = BASE + 0x6C;
pub const INT_ST: u32 = BASE + 0x70;
pub const TARGET0_INT: u32 = 1 << 0;
pub const ALL_TARGET_INTS: u32 = 0b111;
/// The interrupt matrix source of COMP0.
pub const TARGET0_SOURCE: u32 = 37;
/// UNIT0's rate (the XTAL clock divided by 2.5).
pub const COUNTS_PER_SECOND: u64 = 16_000_000;

/// Why a tick period cannot be programmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodOutOfRange(pub u32);

/// Arms COMP0 to fire every `period` counts of UNIT0 (TRM 10.5.3, "periodic alarm":
/// select the unit, write the period and period mode, load, enable comparator and
/// interrupt). COMP0's is then the only SYSTIMER interrupt enabled, with nothing stale
/// pending.
pub fn start_periodic(r: &mut impl Regs, period: u32) -> Result<(), PeriodOutOfRange> {
    if period == 0 || period > TARGET0_PERIOD_MAX {
        return Err(PeriodOutOfRange(period));
    }
    r.clear_bits(CONF, TARGET0_WORK_EN);
    r.write(TARGET0_CONF, TARGET0_PERIOD_MODE | period);
    r.write(COMP0_LOAD, 1);
    r.set_bits(CONF, TARGET0_WORK_EN | UNIT0_WORK_EN);
    r.write(INT_CLR, ALL_TARGET_INTS);
    r.write(INT_ENA, TARGET0_INT);
    Ok(())
}

/// Whether COMP0 raised SYSTIMER's interrupt (SYSTIMER_INT_ST), acknowledging it if
/// so: the tick's line counts a tick only for this.
pub fn take_tick(r: &mut impl Regs) -> bool {
    if r.read(INT_ST) & TARGET0_INT == 0 {
        return false;
    }
    r.write(INT_CLR, TARGET0_INT);
    true
}

/// UNIT0's 52-bit count (TRM 10.5.1: request an update, wait until valid, read).
pub fn now(r: &mut impl Regs) -> u64 {
    r.write(UNIT0_OP, UNIT0_UPDATE);
    while r.read(UNIT0_OP) & UNIT0_VALUE_VALID == 0 {}
    let hi = r.read(UNIT0_VALUE_HI) as u64;
    let lo = r.read(UNIT0_VALUE_LO) as u64;
    hi << 32 | lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegs;

    #[test]
    fn a_10ms_tick_programs_comp0_in_period_mode() {
        let mut r = FakeRegs::default();
        r.values.insert(0x6002_3000, 1 << 30 | 1 << 0);
        start_periodic(&mut r, 160_000).unwrap();
        assert_eq!(r.get(0x6002_3034), 0x4000_0000 | 160_000);
        assert_eq!(r.writes_to(0x6002_3050), [1]);
        assert_eq!(r.get(0x6002_3000), 1 << 30 | 1 << 24 | 1);
        assert_eq!(r.get(0x6002_3064), 1);
        assert_eq!(
            r.writes_to(0x6002_306C),
            [0b111],
            "stale interrupts of all three cleared"
        );
        // The period is written before the load, the comparator enabled after it.
        let at = |a: u32| r.writes.iter().rposition(|w| w.0 == a).unwrap();
        assert!(at(0x6002_3034) < at(0x6002_3050) && at(0x6002_3050) < at(0x6002_3000));
    }

    #[test]
    fn a_tick_counts_only_when_comp0_raised_it_and_is_acknowledged() {
        let mut r = FakeRegs::default();
        assert!(!take_tick(&mut r), "INT_ST clear: no tick");
        assert!(r.writes.is_empty());
        r.values.insert(0x6002_3070, 0b10);
        assert!(!take_tick(&mut r), "TARGET1 is not the tick");
        r.values.insert(0x6002_3070, 0b1);
        assert!(take_tick(&mut r));
        assert_eq!(r.writes, [(0x6002_306C, 1)]);
    }

    #[test]
    fn periods_outside_the_26_bit_field_are_refused_without_a_write() {
        let mut r = FakeRegs::default();
        assert_eq!(start_periodic(&mut r, 0), Err(PeriodOutOfRange(0)));
        assert_eq!(
            start_periodic(&mut r, 1 << 26),
            Err(PeriodOutOfRange(1 << 26))
        );
        assert!(r.writes.is_empty());
        assert!(start_periodic(&mut r, (1 << 26) - 1).is_ok());
    }

    #[test]
    fn now_requests_an_update_and_joins_the_halves() {
        let mut r = FakeRegs::with_hook(|v, addr, val| {
            if addr == UNIT0_OP && val & UNIT0_UPDATE != 0 {
                v.insert(UNIT0_OP, UNIT0_VALUE_VALID);
                v.insert(UNIT0_VALUE_HI, 0x000F_ABCD);
                v.insert(UNIT0_VALUE_LO, 0x1234_5678);
            }
        });
        assert_eq!(now(&mut r), 0x000F_ABCD_1234_5678);
        assert_eq!(r.writes_to(0x6002_3004), [1 << 30]);
    }
}
