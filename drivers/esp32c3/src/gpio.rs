//! Pin routing (TRM chapter "IO MUX and GPIO Matrix", 5.4/5.5): a pin is put in its
//! GPIO function in the IO MUX (MCU_SEL = 1, input enabled), then a peripheral output
//! signal drives it through GPIO_FUNCn_OUT_SEL_CFG (indexed by pin), and a pin feeds a
//! peripheral input through GPIO_FUNCm_IN_SEL_CFG (indexed by signal). [`OutputPin`]
//! is a plain push-pull output (chip select). [`enable_falling_edge_interrupt`] makes a
//! pin an input whose falling edge raises the GPIO interrupt (source 16; TRM 5.5.x,
//! GPIO_PINn_REG INT_TYPE and INT_ENA, GPIO_STATUS_REG; esp-idf `gpio_reg.h`): the
//! external-comparator power failure. Signal numbers are esp-idf's
//! `gpio_sig_map.h`. Never routes a pin the caller did not name.

use crate::Regs;
use core::convert::Infallible;

pub const GPIO_BASE: u32 = 0x6000_4000;
pub const GPIO_OUT_W1TS: u32 = GPIO_BASE + 0x08;
pub const GPIO_OUT_W1TC: u32 = GPIO_BASE + 0x0C;
pub const GPIO_ENABLE_W1TS: u32 = GPIO_BASE + 0x24;
pub const GPIO_ENABLE_W1TC: u32 = GPIO_BASE + 0x28;
pub const fn in_sel_reg(signal: u32) -> u32 {
    GPIO_BASE + 0x154 + 4 * signal
}
pub const fn out_sel_reg(pin: u32) -> u32 {
    GPIO_BASE + 0x554 + 4 * pin
}
/// GPIO_FUNCm_IN_SEL_CFG: SEL (bit 6) routes through the matrix from pin bits 4:0.
pub const IN_SEL_MATRIX: u32 = 1 << 6;
/// The OUT_SEL value that makes a pin follow GPIO_OUT (a plain output).
pub const SIMPLE_OUTPUT: u32 = 0x80;
pub const IO_MUX_BASE: u32 = 0x6000_9000;
pub const fn io_mux_reg(pin: u32) -> u32 {
    IO_MUX_BASE + 0x04 + 4 * pin
}
/// IO_MUX_GPIOn: MCU_SEL (bits 14:12) = 1 is the GPIO function; FUN_IE (bit 9).
pub const MCU_SEL_GPIO: u32 = 1 << 12;
pub const MCU_SEL_MASK: u32 = 0b111 << 12;
pub const FUN_IE: u32 = 1 << 9;
/// IO_MUX_GPIOn: FUN_WPU (bit 8), the weak pull-up (an open-drain comparator output
/// needs one; a push-pull one does not mind).
pub const FUN_WPU: u32 = 1 << 8;
/// The C3's pins are GPIO0..=GPIO21.
pub const PINS: u32 = 22;
/// GPIO_STATUS_REG (one bit per pin, set by the pin's interrupt condition) and its
/// write-1-to-clear companion.
pub const GPIO_STATUS: u32 = GPIO_BASE + 0x44;
pub const GPIO_STATUS_W1TC: u32 = GPIO_BASE + 0x4C;
pub const fn pin_reg(pin: u32) -> u32 {
    GPIO_BASE + 0x74 + 4 * pin
}
/// GPIO_PINn_REG: INT_TYPE (bits 9:7; 2 = falling edge), INT_ENA (bits 17:13; bit 13
/// = the CPU interrupt).
pub const PIN_INT_TYPE_MASK: u32 = 0b111 << 7;
pub const PIN_INT_FALLING_EDGE: u32 = 2 << 7;
pub const PIN_INT_ENA_MASK: u32 = 0b1_1111 << 13;
pub const PIN_INT_ENA_CPU: u32 = 1 << 13;
/// The interrupt matrix source of the GPIO interrupt (GPIO_INTERRUPT_PRO).
pub const SOURCE: u32 = 16;

/// GP-SPI2 ("FSPI") signals.
pub const FSPICLK_OUT: u32 = 63;
pub const FSPIQ_IN: u32 = 64;
pub const FSPID_OUT: u32 = 65;

/// A pin number the chip does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoSuchPin(pub u32);

fn check(pin: u32) -> Result<(), NoSuchPin> {
    if pin < PINS {
        Ok(())
    } else {
        Err(NoSuchPin(pin))
    }
}

fn gpio_function(r: &mut impl Regs, pin: u32) {
    r.modify(io_mux_reg(pin), |v| {
        (v & !MCU_SEL_MASK) | MCU_SEL_GPIO | FUN_IE
    });
}

/// Drives `pin` with peripheral output `signal`, output enabled.
pub fn route_output(r: &mut impl Regs, pin: u32, signal: u32) -> Result<(), NoSuchPin> {
    check(pin)?;
    gpio_function(r, pin);
    r.write(out_sel_reg(pin), signal);
    r.write(GPIO_ENABLE_W1TS, 1 << pin);
    Ok(())
}

/// Feeds peripheral input `signal` from `pin`, output disabled.
pub fn route_input(r: &mut impl Regs, pin: u32, signal: u32) -> Result<(), NoSuchPin> {
    check(pin)?;
    gpio_function(r, pin);
    r.write(GPIO_ENABLE_W1TC, 1 << pin);
    r.write(in_sel_reg(signal), IN_SEL_MATRIX | pin);
    Ok(())
}

/// Makes `pin` a pulled-up input whose falling edges set its GPIO_STATUS bit and
/// raise the GPIO interrupt (source [`SOURCE`]), the only pin that does: every other
/// pin's interrupt enable cleared (one the ROM left on would hold the line), then its
/// GPIO function with input and pull-up, output off, stale status bits cleared, then
/// INT_TYPE = falling edge and the CPU interrupt enabled.
pub fn enable_falling_edge_interrupt(r: &mut impl Regs, pin: u32) -> Result<(), NoSuchPin> {
    check(pin)?;
    for other in (0..PINS).filter(|&p| p != pin) {
        r.clear_bits(pin_reg(other), PIN_INT_ENA_MASK);
    }
    r.write(GPIO_STATUS_W1TC, (1 << PINS) - 1);
    gpio_function(r, pin);
    r.set_bits(io_mux_reg(pin), FUN_WPU);
    r.write(GPIO_ENABLE_W1TC, 1 << pin);
    r.modify(pin_reg(pin), |v| {
        (v & !(PIN_INT_TYPE_MASK | PIN_INT_ENA_MASK)) | PIN_INT_FALLING_EDGE | PIN_INT_ENA_CPU
    });
    Ok(())
}

/// Whether `pin` saw its interrupt condition; clears it.
pub fn take_interrupt(r: &mut impl Regs, pin: u32) -> bool {
    let seen = r.read(GPIO_STATUS) & (1 << pin) != 0;
    if seen {
        r.write(GPIO_STATUS_W1TC, 1 << pin);
    }
    seen
}

/// A push-pull output pin (driven high when made), for a chip select.
pub struct OutputPin<R> {
    regs: R,
    pin: u32,
}

impl<R: Regs> OutputPin<R> {
    pub fn new(mut regs: R, pin: u32) -> Result<Self, NoSuchPin> {
        check(pin)?;
        regs.write(GPIO_OUT_W1TS, 1 << pin);
        route_output(&mut regs, pin, SIMPLE_OUTPUT)?;
        Ok(OutputPin { regs, pin })
    }
}

impl<R> embedded_hal::digital::ErrorType for OutputPin<R> {
    type Error = Infallible;
}

impl<R: Regs> embedded_hal::digital::OutputPin for OutputPin<R> {
    fn set_low(&mut self) -> Result<(), Infallible> {
        self.regs.write(GPIO_OUT_W1TC, 1 << self.pin);
        Ok(())
    }

    fn set_high(&mut self) -> Result<(), Infallible> {
        self.regs.write(GPIO_OUT_W1TS, 1 << self.pin);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegs;
    use embedded_hal::digital::OutputPin as _;

    #[test]
    fn the_paper_wiring_routes_sck_mosi_miso() {
        let mut r = FakeRegs::default();
        route_output(&mut r, 6, FSPICLK_OUT).unwrap();
        route_output(&mut r, 7, FSPID_OUT).unwrap();
        route_input(&mut r, 2, FSPIQ_IN).unwrap();
        assert_eq!(r.get(0x6000_456C), 63, "GPIO6 out = FSPICLK");
        assert_eq!(r.get(0x6000_4570), 65, "GPIO7 out = FSPID");
        assert_eq!(r.get(0x6000_4254), 0x40 | 2, "FSPIQ in from GPIO2");
        assert_eq!(r.writes_to(0x6000_4024), [1 << 6, 1 << 7]);
        assert_eq!(r.writes_to(0x6000_4028), [1 << 2]);
        for pin in [2u32, 6, 7] {
            assert_eq!(
                r.get(0x6000_9004 + 4 * pin),
                0x1200,
                "GPIO{pin} in GPIO function"
            );
        }
    }

    #[test]
    fn a_falling_edge_input_is_pulled_up_cleared_and_enabled() {
        let mut r = FakeRegs::default();
        r.values.insert(0x6000_4080, 0x0000_0004); // GPIO3's PIN_REG: PAD_DRIVER kept
                                                   // GPIO0's interrupt left on (CPU, any edge): it must go off.
        r.values.insert(0x6000_4074, 1 << 13 | 3 << 7 | 4);
        enable_falling_edge_interrupt(&mut r, 3).unwrap();
        assert_eq!(
            r.get(0x6000_4074),
            3 << 7 | 4,
            "another pin's interrupt off"
        );
        assert_eq!(
            r.get(0x6000_9010),
            0x1300,
            "GPIO function, FUN_IE and FUN_WPU"
        );
        assert_eq!(r.writes_to(0x6000_4028), [1 << 3], "output off");
        assert_eq!(
            r.get(0x6000_4080),
            0x0000_2104,
            "INT_TYPE 2 (falling edge), INT_ENA bit 13 (CPU)"
        );
        let clear = r.writes.iter().position(|w| *w == (0x6000_404C, 0x3F_FFFF));
        let enable = r.writes.iter().position(|w| w.0 == 0x6000_4080);
        assert!(
            clear < enable,
            "stale status bits are cleared before enabling"
        );
        assert!(!take_interrupt(&mut r, 3));
        r.values.insert(0x6000_4044, 1 << 3);
        assert!(take_interrupt(&mut r, 3));
        assert_eq!(r.writes.last(), Some(&(0x6000_404C, 1 << 3)));
        assert!(enable_falling_edge_interrupt(&mut r, 22).is_err());
    }

    #[test]
    fn a_chip_select_starts_high_and_toggles() {
        let mut pin = OutputPin::new(FakeRegs::default(), 10).unwrap();
        pin.set_low().unwrap();
        pin.set_high().unwrap();
        let r = &pin.regs;
        assert_eq!(r.writes_to(0x6000_4008), [1 << 10, 1 << 10]);
        assert_eq!(r.writes_to(0x6000_400C), [1 << 10]);
        assert_eq!(r.get(0x6000_457C), 0x80);
        assert!(OutputPin::new(FakeRegs::default(), 22).is_err());
    }
}
