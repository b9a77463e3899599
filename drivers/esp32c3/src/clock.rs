//! The CPU clock (TRM chapter "Reset and Clock", 6.2: CPU_CLK and its sources; the
//! SYSTEM registers SYSTEM_CPU_PER_CONF_REG and SYSTEM_SYSCLK_CONF_REG): reads which
//! source and divider the CPU runs from, and raises it from the PLL's 80 MHz to its
//! 160 MHz. With the PLL as the source, CPU_CLK is PLL_CLK / 6 or / 3 (480 MHz PLL) or
//! / 4 or / 2 (320 MHz PLL), chosen by CPUPERIOD_SEL, and APB_CLK stays 80 MHz either
//! way: the UART's baud divider and GP-SPI2's clock divider, both on APB_CLK, do not
//! change. SYSTIMER counts from XTAL_CLK (40 MHz / 2.5 = 16 MHz) whatever the CPU
//! runs at. Never powers up, configures or calibrates the BBPLL (analog I2C): when the
//! ROM left the CPU on XTAL_CLK or RC_FAST_CLK, it changes nothing and says so.

use crate::Regs;
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
        SOC_CLK_XTAL => {
            let xtal = (sysclk & CLK_XTAL_FREQ) >> CLK_XTAL_FREQ_SHIFT;
            CpuClock::Xtal {
                xtal_mhz: if xtal == 0 { XTAL_MHZ } else { xtal },
                div,
            }
        }
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

/// Why the CPU stays where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotOnPll(pub CpuClock);

impl fmt::Display for NotOnPll {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the CPU stays at {}: the ROM left it off the PLL, and bringing up the BBPLL \
             (analog I2C, calibration) is not done here",
            self.0
        )
    }
}

/// Raises CPU_CLK to 160 MHz when the PLL is its source (CPUPERIOD_SEL = 1; one
/// write, every other bit of SYSTEM_CPU_PER_CONF_REG kept, SYSTEM_SYSCLK_CONF_REG not
/// written: the source stays the PLL, whose frequency is not changed). Returns the
/// clock it ran at before. Off the PLL, or on a reserved setting, nothing is written.
pub fn switch_to_160mhz(r: &mut impl Regs) -> Result<CpuClock, NotOnPll> {
    let before = cpu_clock(r);
    if !matches!(before, CpuClock::Pll { .. }) {
        return Err(NotOnPll(before));
    }
    r.modify(SYSTEM_CPU_PER_CONF, |v| {
        (v & !CPUPERIOD_SEL) | CPUPERIOD_160
    });
    Ok(before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegs;

    /// As the ROM is expected to leave the C3 (not seen on hardware yet): the PLL at
    /// 480 MHz, CPU at 80 MHz (CPUPERIOD_SEL 0), CPU_WAIT_MODE_FORCE_ON set; the PLL
    /// selected, PRE_DIV_CNT at its reset value 1, a 40 MHz crystal.
    fn rom_state() -> FakeRegs {
        let mut r = FakeRegs::default();
        r.values.insert(0x600C_0008, 0x0000_000C);
        r.values.insert(0x600C_0058, (40 << 12) | (1 << 10) | 1);
        r
    }

    #[test]
    fn on_the_pll_the_cpu_goes_from_80_to_160_mhz_in_one_write() {
        let mut r = rom_state();
        assert_eq!(
            cpu_clock(&mut r),
            CpuClock::Pll {
                pll_mhz: 480,
                cpu_mhz: 80
            }
        );
        let before = switch_to_160mhz(&mut r).unwrap();
        assert_eq!(before.mhz(), Some(80));
        assert_eq!(
            r.writes,
            [(0x600C_0008, 0x0000_000D)],
            "CPUPERIOD_SEL = 1, PLL_FREQ_SEL and the wait-mode bit kept, SYSCLK_CONF untouched"
        );
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
        // Again: the same value, still one field.
        switch_to_160mhz(&mut r).unwrap();
        assert_eq!(r.get(0x600C_0008), 0x0000_000D);
    }

    #[test]
    fn a_320_mhz_pll_is_divided_by_two_to_the_same_160_mhz() {
        let mut r = rom_state();
        r.values.insert(0x600C_0008, 0x0000_0008);
        switch_to_160mhz(&mut r).unwrap();
        assert_eq!(r.get(0x600C_0008), 0x0000_0009);
        assert_eq!(
            cpu_clock(&mut r),
            CpuClock::Pll {
                pll_mhz: 320,
                cpu_mhz: 160
            }
        );
    }

    #[test]
    fn off_the_pll_nothing_is_written_and_the_reason_is_given() {
        // The chip's reset values: XTAL / (PRE_DIV_CNT 1 + 1) = 20 MHz.
        let mut r = FakeRegs::default();
        r.values.insert(0x600C_0008, 0x0000_000C);
        r.values.insert(0x600C_0058, (40 << 12) | 1);
        let e = switch_to_160mhz(&mut r).unwrap_err();
        assert_eq!(
            e.0,
            CpuClock::Xtal {
                xtal_mhz: 40,
                div: 2
            }
        );
        assert!(e.to_string().starts_with(
            "the CPU stays at 20 MHz from the 40 MHz crystal / 2: the ROM left it off the PLL"
        ));
        assert!(r.writes.is_empty());
        r.values.insert(0x600C_0058, (40 << 12) | (2 << 10));
        assert_eq!(
            switch_to_160mhz(&mut r),
            Err(NotOnPll(CpuClock::RcFast { div: 1 }))
        );
        assert!(r.writes.is_empty());
    }

    #[test]
    fn reserved_settings_are_named_and_left_alone() {
        let mut r = rom_state();
        r.values.insert(0x600C_0008, 0x0000_000E);
        assert!(matches!(
            switch_to_160mhz(&mut r),
            Err(NotOnPll(CpuClock::Reserved { per_conf: 0xE, .. }))
        ));
        r.values.insert(0x600C_0008, 0x0000_000C);
        r.values.insert(0x600C_0058, 3 << 10);
        assert_eq!(cpu_clock(&mut r).mhz(), None);
        assert!(r.writes.is_empty());
    }
}
