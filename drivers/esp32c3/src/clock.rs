//! The CPU clock (TRM chapter "Reset and Clock", 6.2: CPU_CLK and its sources; the
//! SYSTEM registers SYSTEM_CPU_PER_CONF_REG and SYSTEM_SYSCLK_CONF_REG), brought to 160
//! MHz from whatever the ROM left: after a power-on reset the ROM runs the CPU from the
//! 40 MHz crystal (esp-idf `bootloader_clock_init.c`), so [`raise_to_160mhz`] does what
//! esp-idf's `rtc_clk_init` and `rtc_clk_cpu_freq_set_config` do for the C3 (checked
//! against `rtc_clk.c`, `rtc_init.c`, `clk_tree_ll.h` and `regi2c_*.h` of esp-idf, and
//! esp-hal's `soc/esp32c3/clocks.rs`): UART0 onto the crystal first (its baud rate
//! would double with APB), the analog I2C bus reset with the BBPLL's master enabled,
//! the digital and RTC regulators at esp-idf's level for 160 MHz, the BBPLL powered
//! and configured for 480 MHz from the 40 MHz crystal (through the ROM's analog I2C
//! functions, [`AnalogI2c`]), then CPUPERIOD_SEL = 160 MHz, the divider 1 and the PLL
//! as the source. APB_CLK is then 80 MHz (GP-SPI2's divider assumes it). SYSTIMER
//! counts from XTAL_CLK (16 MHz) whatever the CPU runs at.
//!
//! Not done (`docs/esp32c3.md`, bring-up checklist): the regulator levels esp-idf
//! reads from eFuse on chip revisions 3 and later (esp-idf's default for chips without
//! them, 28, is written), waiting for the BBPLL to lock (esp-idf does not wait either
//! on the C3), calibrating RC_FAST or the slow clock.

use crate::{uart, Regs};
use core::fmt;

/// SYSTEM_CPU_PER_CONF_REG: CPUPERIOD_SEL (bits 1:0; 0 = 80 MHz, 1 = 160 MHz from
/// the PLL, 2 and 3 reserved), PLL_FREQ_SEL (bit 2; 0 = 320 MHz, 1 = 480 MHz, reset 1),
/// CPU_WAIT_MODE_FORCE_ON (bit 3), CPU_WAITI_DELAY_NUM (bits 7:4).
pub const SYSTEM_CPU_PER_CONF: u32 = 0x600C_0008;
pub const CPUPERIOD_SEL: u32 = 0b11;
pub const CPUPERIOD_80: u32 = 0;
pub const CPUPERIOD_160: u32 = 1;
pub const PLL_FREQ_SEL: u32 = 1 << 2;
/// SYSTEM_SYSCLK_CONF_REG: PRE_DIV_CNT (bits 9:0; XTAL and RC_FAST are divided by
/// it plus 1, reset 1), SOC_CLK_SEL (bits 11:10; 0 = XTAL, 1 = PLL, 2 = RC_FAST, reset 0),
/// CLK_XTAL_FREQ (bits 18:12, read-only: the crystal in MHz).
pub const SYSTEM_SYSCLK_CONF: u32 = 0x600C_0058;
pub const PRE_DIV_CNT: u32 = 0x3FF;
pub const SOC_CLK_SEL_SHIFT: u32 = 10;
pub const SOC_CLK_SEL: u32 = 0b11 << SOC_CLK_SEL_SHIFT;
pub const SOC_CLK_XTAL: u32 = 0;
pub const SOC_CLK_PLL: u32 = 1;
pub const SOC_CLK_RC_FAST: u32 = 2;
pub const CLK_XTAL_FREQ_SHIFT: u32 = 12;
pub const CLK_XTAL_FREQ: u32 = 0x7F << CLK_XTAL_FREQ_SHIFT;
/// The C3's crystal when CLK_XTAL_FREQ reads 0 (the chip supports only 40 MHz).
pub const XTAL_MHZ: u32 = 40;
/// RC_FAST_CLK, nominally (TRM: about 17.5 MHz; not calibrated here).
pub const RC_FAST_MHZ: u32 = 17;
/// APB_CLK whenever the PLL is the CPU's source.
pub const APB_HZ_ON_PLL: u32 = 80_000_000;

/// RTC_CNTL_OPTIONS0_REG: BB_I2C_FORCE_PD (bit 6), BBPLL_I2C_FORCE_PD (bit 8),
/// BBPLL_FORCE_PD (bit 10): cleared, the BBPLL and its I2C interface are powered
/// (esp-idf `clk_ll_bbpll_enable`).
pub const RTC_CNTL_OPTIONS0: u32 = 0x6000_8000;
pub const BBPLL_POWER_DOWN: u32 = 1 << 6 | 1 << 8 | 1 << 10;
/// I2C_MST_ANA_CONF0_REG: BBPLL_STOP_FORCE_HIGH (bit 2) cleared and
/// BBPLL_STOP_FORCE_LOW (bit 3) set start the BBPLL's self-calibration.
pub const I2C_MST_ANA_CONF0: u32 = 0x6000_E040;
pub const BBPLL_STOP_FORCE_HIGH: u32 = 1 << 2;
pub const BBPLL_STOP_FORCE_LOW: u32 = 1 << 3;
/// ANA_CONFIG_REG: bits 17:8 gate the analog I2C masters (set: off); bit 17 is the
/// BBPLL's (esp-idf `regi2c_ctrl_ll_i2c_reset`, `regi2c_ctrl_ll_i2c_bbpll_enable`).
pub const ANA_CONFIG: u32 = 0x6000_E044;
pub const ANA_CONFIG_ALL_OFF: u32 = 0x3FF << 8;
pub const ANA_I2C_BBPLL: u32 = 1 << 17;

/// The analog blocks behind the internal I2C bus, by block id and host id (esp-idf
/// `regi2c_bbpll.h`, `regi2c_dig_reg.h`).
pub const I2C_BBPLL: u8 = 0x66;
pub const I2C_DIG_REG: u8 = 0x6D;
pub const HOST_ID: u8 = 0;

/// The BBPLL's registers for 480 MHz from a 40 MHz crystal (esp-idf
/// `clk_ll_bbpll_set_config`): MODE_HF set (register 4 = 0x6B), the reference divider
/// 0 with DCHGP 5 (register 2), the feedback divider 8 (register 3: 40 × (8 + 4) =
/// 480), DR1 = DR3 = 0 (register 5), DCUR 3 with DLREF_SEL 2 and DHREF_SEL 1 (register
/// 6), VCO_DBIAS 2 (register 9), then DHREF_SEL 2 and DLREF_SEL 1. As (register, msb,
/// lsb, value): msb 7 and lsb 0 write the whole register.
pub const BBPLL_480_FROM_40: [(u8, u8, u8, u8); 9] = [
    (4, 7, 0, 0x6B),
    (2, 7, 0, 5 << 4),
    (3, 7, 0, 8),
    (5, 2, 0, 0),
    (5, 6, 4, 0),
    (6, 7, 0, 2 << 6 | 1 << 4 | 3),
    (9, 1, 0, 2),
    (6, 5, 4, 2),
    (6, 7, 6, 1),
];

/// The digital and RTC regulators' level for a 160 MHz CPU where eFuse holds no
/// calibrated one (esp-idf `set_rtc_dig_dbias`): I2C_DIG_REG register 4 bits 4:0
/// (EXT_RTC_DREG) and register 6 bits 4:0 (EXT_DIG_DREG).
pub const DBIAS_160: u8 = 28;

/// The analog I2C bus the BBPLL and the regulators sit on: the ROM's `rom_i2c_writeReg`
/// (a whole register) and `rom_i2c_writeReg_Mask` (bits msb..=lsb), which esp-idf and
/// esp-hal call for the C3 as well.
pub trait AnalogI2c {
    fn write(&mut self, block: u8, host: u8, reg: u8, value: u8);
    fn write_mask(&mut self, block: u8, host: u8, reg: u8, msb: u8, lsb: u8, value: u8);
}

/// Where CPU_CLK comes from, as the two registers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuClock {
    /// The PLL (`pll_mhz`: 320 or 480), divided to `cpu_mhz` (80 or 160).
    Pll { pll_mhz: u32, cpu_mhz: u32 },
    /// The crystal divided by `div`.
    Xtal { xtal_mhz: u32, div: u32 },
    /// The internal RC oscillator divided by `div`.
    RcFast { div: u32 },
    /// A combination the TRM calls reserved: the two register values.
    Reserved { per_conf: u32, sysclk: u32 },
}

impl CpuClock {
    /// CPU_CLK in MHz (rounded down), if the setting is a valid one.
    pub fn mhz(&self) -> Option<u32> {
        match *self {
            CpuClock::Pll { cpu_mhz, .. } => Some(cpu_mhz),
            CpuClock::Xtal { xtal_mhz, div } => Some(xtal_mhz / div),
            CpuClock::RcFast { div } => Some(RC_FAST_MHZ / div),
            CpuClock::Reserved { .. } => None,
        }
    }
}

impl fmt::Display for CpuClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CpuClock::Pll { pll_mhz, cpu_mhz } => {
                write!(f, "{cpu_mhz} MHz from the {pll_mhz} MHz PLL")
            }
            CpuClock::Xtal { xtal_mhz, div } => {
                write!(
                    f,
                    "{} MHz from the {xtal_mhz} MHz crystal / {div}",
                    xtal_mhz / div
                )
            }
            CpuClock::RcFast { div } => {
                write!(f, "about {} MHz from RC_FAST / {div}", RC_FAST_MHZ / div)
            }
            CpuClock::Reserved { per_conf, sysclk } => write!(
                f,
                "a reserved setting (CPU_PER_CONF {per_conf:#x}, SYSCLK_CONF {sysclk:#x})"
            ),
        }
    }
}

/// The CPU clock the registers select.
pub fn cpu_clock(r: &mut impl Regs) -> CpuClock {
    let per_conf = r.read(SYSTEM_CPU_PER_CONF);
    let sysclk = r.read(SYSTEM_SYSCLK_CONF);
    let div = (sysclk & PRE_DIV_CNT) + 1;
    match (sysclk & SOC_CLK_SEL) >> SOC_CLK_SEL_SHIFT {
        SOC_CLK_XTAL => CpuClock::Xtal {
            xtal_mhz: xtal_mhz(sysclk),
            div,
        },
        SOC_CLK_PLL => {
            let pll_mhz = if per_conf & PLL_FREQ_SEL != 0 {
                480
            } else {
                320
            };
            match per_conf & CPUPERIOD_SEL {
                CPUPERIOD_80 => CpuClock::Pll {
                    pll_mhz,
                    cpu_mhz: 80,
                },
                CPUPERIOD_160 => CpuClock::Pll {
                    pll_mhz,
                    cpu_mhz: 160,
                },
                _ => CpuClock::Reserved { per_conf, sysclk },
            }
        }
        SOC_CLK_RC_FAST => CpuClock::RcFast { div },
        _ => CpuClock::Reserved { per_conf, sysclk },
    }
}

fn xtal_mhz(sysclk: u32) -> u32 {
    match (sysclk & CLK_XTAL_FREQ) >> CLK_XTAL_FREQ_SHIFT {
        0 => XTAL_MHZ,
        mhz => mhz,
    }
}

/// Why the CPU stays where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockError {
    /// The BBPLL settings here are for a 40 MHz crystal; SYSCLK_CONF reports another.
    NotA40MhzCrystal(u32),
}

impl fmt::Display for ClockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockError::NotA40MhzCrystal(mhz) => write!(
                f,
                "the CPU clock stays as the ROM left it: SYSCLK_CONF reports a {mhz} MHz \
                 crystal, and the BBPLL settings here are for 40 MHz"
            ),
        }
    }
}

/// Brings CPU_CLK to 160 MHz from the 480 MHz PLL (module doc), from any source the
/// ROM left; returns the clock it ran at before. With the PLL already the source, its
/// configuration is kept (esp-idf does the same) and only the divider changes. On a
/// crystal that is not 40 MHz nothing is written.
pub fn raise_to_160mhz(
    r: &mut impl Regs,
    i2c: &mut impl AnalogI2c,
) -> Result<CpuClock, ClockError> {
    let before = cpu_clock(r);
    let sysclk = r.read(SYSTEM_SYSCLK_CONF);
    let xtal = xtal_mhz(sysclk);
    if xtal != XTAL_MHZ {
        return Err(ClockError::NotA40MhzCrystal(xtal));
    }
    uart::clock_from_crystal(r);
    r.set_bits(ANA_CONFIG, ANA_CONFIG_ALL_OFF);
    r.clear_bits(ANA_CONFIG, ANA_I2C_BBPLL);
    i2c.write_mask(I2C_DIG_REG, HOST_ID, 4, 4, 0, DBIAS_160);
    i2c.write_mask(I2C_DIG_REG, HOST_ID, 6, 4, 0, DBIAS_160);
    let on_pll = (sysclk & SOC_CLK_SEL) >> SOC_CLK_SEL_SHIFT == SOC_CLK_PLL;
    if !on_pll {
        r.clear_bits(RTC_CNTL_OPTIONS0, BBPLL_POWER_DOWN);
        r.set_bits(SYSTEM_CPU_PER_CONF, PLL_FREQ_SEL);
        r.modify(I2C_MST_ANA_CONF0, |v| {
            (v & !BBPLL_STOP_FORCE_HIGH) | BBPLL_STOP_FORCE_LOW
        });
        for (reg, msb, lsb, value) in BBPLL_480_FROM_40 {
            if (msb, lsb) == (7, 0) {
                i2c.write(I2C_BBPLL, HOST_ID, reg, value);
            } else {
                i2c.write_mask(I2C_BBPLL, HOST_ID, reg, msb, lsb, value);
            }
        }
    }
    r.modify(SYSTEM_CPU_PER_CONF, |v| {
        (v & !CPUPERIOD_SEL) | CPUPERIOD_160
    });
    r.modify(SYSTEM_SYSCLK_CONF, |v| {
        (v & !(PRE_DIV_CNT | SOC_CLK_SEL)) | SOC_CLK_PLL << SOC_CLK_SEL_SHIFT
    });
    Ok(before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegs;

    /// The analog I2C writes, in order: (block, host, reg, msb, lsb, value).
    #[derive(Default)]
    struct Analog(Vec<(u8, u8, u8, u8, u8, u8)>);

    impl AnalogI2c for Analog {
        fn write(&mut self, block: u8, host: u8, reg: u8, value: u8) {
            self.0.push((block, host, reg, 7, 0, value));
        }

        fn write_mask(&mut self, block: u8, host: u8, reg: u8, msb: u8, lsb: u8, value: u8) {
            self.0.push((block, host, reg, msb, lsb, value));
        }
    }

    /// The C3 after a power-on reset, as the ROM hands it over: the CPU on the
    /// crystal, undivided (40 MHz, esp-idf `bootloader_clock_init.c`), PLL_FREQ_SEL and
    /// CPU_WAIT_MODE_FORCE_ON at their reset values, UART0's clock as the ROM set it.
    fn power_on() -> FakeRegs {
        let mut r = FakeRegs::default();
        r.values.insert(0x600C_0008, 0x0000_000C);
        r.values.insert(0x600C_0058, 40 << 12);
        r.values.insert(0x6000_0078, 0x0340_1000 | 1 << 20);
        r.values.insert(0x6000_E044, 0x0002_0000);
        r
    }

    #[test]
    fn from_power_on_the_bbpll_is_brought_up_and_the_cpu_moved_to_160_mhz() {
        let mut r = power_on();
        let mut i2c = Analog::default();
        assert_eq!(
            cpu_clock(&mut r),
            CpuClock::Xtal {
                xtal_mhz: 40,
                div: 1
            }
        );
        let before = raise_to_160mhz(&mut r, &mut i2c).unwrap();
        assert_eq!(before.mhz(), Some(40));
        assert_eq!(
            cpu_clock(&mut r),
            CpuClock::Pll {
                pll_mhz: 480,
                cpu_mhz: 160
            }
        );
        assert_eq!(
            cpu_clock(&mut r).to_string(),
            "160 MHz from the 480 MHz PLL"
        );
        assert_eq!(
            r.get(0x600C_0008),
            0x0000_000D,
            "CPUPERIOD_SEL 1, the rest kept"
        );
        assert_eq!(r.get(0x600C_0058), 40 << 12 | 1 << 10, "PLL, divider 1");
        assert_eq!(
            r.get(0x6000_8000) & (1 << 6 | 1 << 8 | 1 << 10),
            0,
            "BBPLL powered"
        );
        assert_eq!(r.get(0x6000_E040) & 0b1100, 0b1000, "calibration started");
        assert_eq!(
            r.get(0x6000_E044),
            0x3FF << 8 & !(1 << 17),
            "every analog master off but the BBPLL's"
        );
        assert_eq!(
            i2c.0,
            [
                (0x6D, 0, 4, 4, 0, 28),
                (0x6D, 0, 6, 4, 0, 28),
                (0x66, 0, 4, 7, 0, 0x6B),
                (0x66, 0, 2, 7, 0, 0x50),
                (0x66, 0, 3, 7, 0, 8),
                (0x66, 0, 5, 2, 0, 0),
                (0x66, 0, 5, 6, 4, 0),
                (0x66, 0, 6, 7, 0, 0x93),
                (0x66, 0, 9, 1, 0, 2),
                (0x66, 0, 6, 5, 4, 2),
                (0x66, 0, 6, 7, 6, 1),
            ],
            "regulators, then esp-idf's clk_ll_bbpll_set_config for 480 MHz from 40 MHz"
        );
    }

    #[test]
    fn the_console_moves_to_the_crystal_before_the_cpu_leaves_it() {
        let mut r = power_on();
        raise_to_160mhz(&mut r, &mut Analog::default()).unwrap();
        let at = |addr: u32| r.writes.iter().position(|w| w.0 == addr).unwrap();
        assert_eq!(r.get(0x6000_0078) >> 20 & 3, 3, "UART0 on XTAL");
        assert_eq!(r.get(0x6000_0014), 3 << 20 | 347, "115200 from 40 MHz");
        assert!(at(0x6000_0014) < at(0x600C_0058));
        assert!(at(0x6000_8000) < at(0x600C_0058), "the BBPLL powered first");
        assert!(
            at(0x600C_0008) < at(0x600C_0058),
            "CPUPERIOD_SEL set before the source switches (never 80 MHz on the way)"
        );
    }

    #[test]
    fn on_the_pll_already_only_the_divider_changes() {
        // As after a software reset from a firmware that ran on the PLL at 80 MHz.
        let mut r = power_on();
        r.values.insert(0x600C_0058, 40 << 12 | 1 << 10);
        let mut i2c = Analog::default();
        let before = raise_to_160mhz(&mut r, &mut i2c).unwrap();
        assert_eq!(
            before,
            CpuClock::Pll {
                pll_mhz: 480,
                cpu_mhz: 80
            }
        );
        assert_eq!(
            i2c.0.len(),
            2,
            "the regulators only: the BBPLL is left as it runs"
        );
        assert!(r.writes_to(0x6000_8000).is_empty());
        assert_eq!(cpu_clock(&mut r).mhz(), Some(160));
    }

    #[test]
    fn a_crystal_other_than_40_mhz_is_named_and_nothing_written() {
        let mut r = power_on();
        r.values.insert(0x600C_0058, 32 << 12);
        let mut i2c = Analog::default();
        let e = raise_to_160mhz(&mut r, &mut i2c).unwrap_err();
        assert_eq!(e, ClockError::NotA40MhzCrystal(32));
        assert!(e.to_string().contains("32 MHz crystal"));
        assert!(r.writes.is_empty() && i2c.0.is_empty());
    }

    #[test]
    fn reserved_settings_are_named() {
        let mut r = power_on();
        r.values.insert(0x600C_0008, 0x0000_000E);
        r.values.insert(0x600C_0058, 1 << 10);
        assert!(matches!(
            cpu_clock(&mut r),
            CpuClock::Reserved { per_conf: 0xE, .. }
        ));
        r.values.insert(0x600C_0058, 3 << 10);
        assert_eq!(cpu_clock(&mut r).mhz(), None);
        r.values.insert(0x600C_0058, 2 << 10);
        assert_eq!(cpu_clock(&mut r), CpuClock::RcFast { div: 1 });
    }
}
