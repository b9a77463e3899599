//! The four watchdogs that the ROM leaves running and that would reset the chip a few
//! seconds into a RAM-only boot (no second-stage bootloader feeds them): the RTC
//! watchdog (RWDT), the main-system watchdogs of timer groups 0 and 1 (MWDT0/1) and
//! the super watchdog (SWD). TRM chapter "Watchdog Timers" (13.2.2 write protection,
//! 13.3 RWDT/SWD) and "Timer Group" registers (TIMG_WDTCONFIG0, TIMG_WDTWPROTECT).
//! Each is unlocked with its key, changed, and locked again. Never feeds or re-arms.

use crate::Regs;

/// The key that unlocks a watchdog's write protection (RWDT and MWDT).
pub const WDT_WKEY: u32 = 0x50D8_3AA1;
/// The super watchdog's key.
pub const SWD_WKEY: u32 = 0x8F1D_312A;

/// RTC_CNTL registers (base 0x6000_8000).
pub const RTC_CNTL_WDTCONFIG0: u32 = 0x6000_8090;
pub const RTC_CNTL_WDTWPROTECT: u32 = 0x6000_80A8;
pub const RTC_CNTL_SWD_CONF: u32 = 0x6000_80AC;
pub const RTC_CNTL_SWD_WPROTECT: u32 = 0x6000_80B0;
/// RTC_CNTL_WDTCONFIG0: WDT_EN (bit 31), WDT_FLASHBOOT_MOD_EN (bit 12).
pub const RWDT_EN: u32 = 1 << 31;
pub const RWDT_FLASHBOOT_MOD_EN: u32 = 1 << 12;
/// RTC_CNTL_SWD_CONF: SWD_AUTO_FEED_EN (bit 31).
pub const SWD_AUTO_FEED_EN: u32 = 1 << 31;

/// Timer group bases; WDTCONFIG0 at +0x48, WDTWPROTECT at +0x64.
pub const TIMG0_BASE: u32 = 0x6001_F000;
pub const TIMG1_BASE: u32 = 0x6002_0000;
pub const TIMG_WDTCONFIG0: u32 = 0x48;
pub const TIMG_WDTWPROTECT: u32 = 0x64;
/// TIMG_WDTCONFIG0: WDT_EN (bit 31), WDT_CONF_UPDATE_EN (bit 22, latches the new
/// configuration into the watchdog's clock domain), WDT_FLASHBOOT_MOD_EN (bit 14).
pub const MWDT_EN: u32 = 1 << 31;
pub const MWDT_CONF_UPDATE_EN: u32 = 1 << 22;
pub const MWDT_FLASHBOOT_MOD_EN: u32 = 1 << 14;

/// Disables RWDT, MWDT0 and MWDT1 and sets the super watchdog (which cannot be
/// turned off) to feed itself.
pub fn disable_all(r: &mut impl Regs) {
    r.write(RTC_CNTL_WDTWPROTECT, WDT_WKEY);
    r.clear_bits(RTC_CNTL_WDTCONFIG0, RWDT_EN | RWDT_FLASHBOOT_MOD_EN);
    r.write(RTC_CNTL_WDTWPROTECT, 0);
    for base in [TIMG0_BASE, TIMG1_BASE] {
        r.write(base + TIMG_WDTWPROTECT, WDT_WKEY);
        r.modify(base + TIMG_WDTCONFIG0, |v| {
            (v & !(MWDT_EN | MWDT_FLASHBOOT_MOD_EN)) | MWDT_CONF_UPDATE_EN
        });
        r.write(base + TIMG_WDTWPROTECT, 0);
    }
    r.write(RTC_CNTL_SWD_WPROTECT, SWD_WKEY);
    r.set_bits(RTC_CNTL_SWD_CONF, SWD_AUTO_FEED_EN);
    r.write(RTC_CNTL_SWD_WPROTECT, 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegs;

    #[test]
    fn every_watchdog_is_unlocked_changed_and_relocked() {
        let mut r = FakeRegs::default();
        // As the ROM leaves them: enabled, flash-boot mode on.
        r.values
            .insert(RTC_CNTL_WDTCONFIG0, 0x8000_1000 | 0x0000_0200);
        r.values.insert(0x6001_F048, 0x8000_4000 | 0x7);
        r.values.insert(0x6002_0048, 0x8000_4000);
        disable_all(&mut r);

        assert_eq!(r.get(0x6000_8090), 0x0000_0200, "RWDT off, other bits kept");
        assert_eq!(r.get(0x6001_F048), 0x0040_0007, "MWDT0 off, update latched");
        assert_eq!(r.get(0x6002_0048), 0x0040_0000, "MWDT1 off, update latched");
        assert_eq!(r.get(0x6000_80AC) >> 31, 1, "SWD feeds itself");
        for (protect, key) in [
            (0x6000_80A8, 0x50D8_3AA1),
            (0x6001_F064, 0x50D8_3AA1),
            (0x6002_0064, 0x50D8_3AA1),
            (0x6000_80B0, 0x8F1D_312A),
        ] {
            assert_eq!(
                r.writes_to(protect),
                [key, 0],
                "{protect:#x}: unlock, relock"
            );
        }
        // Each change happens while its lock is open.
        let pos = |a: u32, v: u32| r.writes.iter().position(|w| *w == (a, v)).unwrap();
        let change = r.writes.iter().position(|w| w.0 == 0x6000_8090).unwrap();
        assert!(pos(0x6000_80A8, 0x50D8_3AA1) < change && change < pos(0x6000_80A8, 0));
    }
}
