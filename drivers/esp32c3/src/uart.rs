//! UART0 as the ROM leaves it (8N1 on GPIO21/20; TRM chapter "UART Controller", 26.x
//! registers UART_FIFO, UART_INT_*, UART_STATUS, UART_CONF1, UART_CLKDIV,
//! UART_FSM_STATUS, UART_CLK_CONF; esp-idf `uart_reg.h` and `uart_ll.h` for the C3):
//! bytes out through the TX FIFO (128 bytes), bytes in from the RX FIFO, and the
//! RX-FIFO-full interrupt at a threshold of one byte (interrupt source 21), the only
//! UART0 interrupt enabled. [`clock_from_crystal`] puts its baud clock on the 40 MHz
//! crystal, so that the CPU clock's switch to the PLL (APB 40 -> 80 MHz) leaves the
//! baud rate as it is. Never changes the frame format or the pins: the ROM set them.

use crate::Regs;

pub const BASE: u32 = 0x6000_0000;
pub const FIFO: u32 = BASE;
pub const INT_ENA: u32 = BASE + 0x0C;
pub const INT_CLR: u32 = BASE + 0x10;
/// UART_STATUS: RXFIFO_CNT (bits 9:0), TXFIFO_CNT (bits 25:16).
pub const STATUS: u32 = BASE + 0x1C;
/// UART_CONF1: RXFIFO_FULL_THRHD (bits 8:0). (UART_CONF0, the frame format, is at
/// +0x20: writing the threshold there would turn 8N1 into 5 data bits.)
pub const CONF1: u32 = BASE + 0x24;
/// UART_INT_*: RXFIFO_FULL (bit 0); WAKEUP (bit 19) is the last one.
pub const RXFIFO_FULL: u32 = 1 << 0;
pub const ALL_INTS: u32 = (1 << 20) - 1;
/// UART_CLKDIV: the baud divider of the UART's core clock, integer (bits 11:0) and
/// sixteenths (FRAG, bits 23:20).
pub const CLKDIV: u32 = BASE + 0x14;
/// UART_FSM_STATUS: ST_UTX_OUT (bits 7:4), the transmitter's state (0 = idle).
pub const FSM_STATUS: u32 = BASE + 0x6C;
/// UART_CLK_CONF: SCLK_DIV_B (5:0), SCLK_DIV_A (11:6), SCLK_DIV_NUM (19:12), SCLK_SEL
/// (21:20; 1 = APB, 2 = RC_FAST, 3 = XTAL), the clock enables above them.
pub const CLK_CONF: u32 = BASE + 0x78;
pub const SCLK_FIELDS: u32 = (1 << 22) - 1;
pub const SCLK_XTAL: u32 = 3 << 20;
/// The crystal the C3 runs on, and the console's rate.
pub const XTAL_HZ: u32 = 40_000_000;
pub const BAUD: u32 = 115_200;
pub const TX_FIFO_BYTES: u32 = 128;
pub const SOURCE: u32 = 21;

fn tx_count(status: u32) -> u32 {
    (status >> 16) & 0x3FF
}

fn rx_count(status: u32) -> u32 {
    status & 0x3FF
}

/// Sends `byte` once the TX FIFO has room.
pub fn write_byte(r: &mut impl Regs, byte: u8) {
    while tx_count(r.read(STATUS)) >= TX_FIFO_BYTES {}
    r.write(FIFO, byte.into());
}

/// The next received byte, if there is one.
pub fn read_byte(r: &mut impl Regs) -> Option<u8> {
    if rx_count(r.read(STATUS)) == 0 {
        return None;
    }
    Some(r.read(FIFO) as u8)
}

/// Interrupts on every received byte, and on nothing else: whatever else the ROM
/// enabled (a level interrupt left on would hold the console's line) goes off, and
/// anything stale is cleared.
pub fn enable_rx_interrupt(r: &mut impl Regs) {
    r.modify(CONF1, |v| (v & !0x1FF) | 1);
    r.write(INT_CLR, ALL_INTS);
    r.write(INT_ENA, RXFIFO_FULL);
}

/// The UART_CLKDIV value for `baud` from a core clock of `sclk_hz` (esp-idf's
/// `uart_ll_set_baudrate` with the core clock undivided): sixteenths of the ratio,
/// rounded down, as integer and FRAG.
pub const fn clkdiv(sclk_hz: u32, baud: u32) -> u32 {
    let sixteenths = ((sclk_hz as u64) << 4) / baud as u64;
    let int = (sixteenths >> 4) as u32;
    let frag = (sixteenths & 0xF) as u32;
    (frag << 20) | int
}

/// Waits until everything in the TX FIFO has gone out (the ROM's last lines), then
/// runs the UART's core clock from the crystal, undivided, at [`BAUD`]: the console
/// keeps its rate whatever the CPU and APB clocks do (esp-idf's bootloader waits the
/// same way before it changes the clocks; `esp_rom_output_tx_wait_idle`). The enables
/// in CLK_CONF stay as they are.
pub fn clock_from_crystal(r: &mut impl Regs) {
    while tx_count(r.read(STATUS)) != 0 || (r.read(FSM_STATUS) >> 4) & 0xF != 0 {}
    r.modify(CLK_CONF, |v| (v & !SCLK_FIELDS) | SCLK_XTAL);
    r.write(CLKDIV, clkdiv(XTAL_HZ, BAUD));
}

/// Stops the RX interrupt (received bytes stay in the FIFO); `enable_rx_interrupt`
/// starts it again.
pub fn disable_rx_interrupt(r: &mut impl Regs) {
    r.modify(INT_ENA, |v| v & !RXFIFO_FULL);
}

/// Acknowledges the RX interrupt (after the FIFO was drained below the threshold).
pub fn clear_rx_interrupt(r: &mut impl Regs) {
    r.write(INT_CLR, RXFIFO_FULL);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegs;

    #[test]
    fn bytes_go_to_the_fifo_and_come_from_it_by_the_status_counts() {
        let mut r = FakeRegs::default();
        r.values.insert(0x6000_001C, 127 << 16);
        write_byte(&mut r, b'A');
        assert_eq!(r.writes_to(0x6000_0000), [0x41]);
        assert_eq!(read_byte(&mut r), None, "RX count 0");
        r.values.insert(0x6000_001C, 1);
        r.values.insert(0x6000_0000, 0x10);
        assert_eq!(read_byte(&mut r), Some(0x10));
    }

    #[test]
    fn the_rx_interrupt_fires_at_one_byte() {
        let mut r = FakeRegs::default();
        r.values.insert(0x6000_0024, 0x0001_4060);
        enable_rx_interrupt(&mut r);
        assert_eq!(r.get(0x6000_0024), 0x0001_4001, "TX threshold kept");
        assert!(r.writes_to(0x6000_0020).is_empty(), "CONF0 (8N1) untouched");
        assert_eq!(r.get(0x6000_000C), 1);
        assert_eq!(r.writes_to(0x6000_0010), [0xF_FFFF]);
    }

    #[test]
    fn the_rom_s_other_uart_interrupts_go_off() {
        let mut r = FakeRegs::default();
        r.values.insert(0x6000_000C, 1 << 14 | 1 << 1);
        enable_rx_interrupt(&mut r);
        assert_eq!(r.get(0x6000_000C), 1, "only RXFIFO_FULL");
    }

    #[test]
    fn the_console_runs_from_the_crystal_at_115200_once_the_fifo_is_empty() {
        // 40 MHz / 115200 = 347.2: 347 and 3/16 (esp-idf's rounding down).
        assert_eq!(clkdiv(40_000_000, 115_200), 3 << 20 | 347);
        let mut r = FakeRegs::default();
        r.values.insert(0x6000_0078, 0x0340_1000 | 1 << 20);
        clock_from_crystal(&mut r);
        assert_eq!(
            r.writes,
            [(0x6000_0078, 0x0370_0000), (0x6000_0014, 3 << 20 | 347)],
            "SCLK_SEL XTAL, divided by 1, the TX/RX clock enables kept; then the divider"
        );
    }

    /// UART0 with bytes still going out: the FIFO count falls, then the transmitter
    /// stays busy for a while.
    struct Draining {
        fifo: u32,
        busy: u32,
        regs: FakeRegs,
    }

    impl Regs for Draining {
        fn read(&mut self, addr: u32) -> u32 {
            match addr {
                STATUS => {
                    let count = self.fifo;
                    self.fifo = self.fifo.saturating_sub(1);
                    count << 16
                }
                FSM_STATUS if self.fifo == 0 => {
                    self.busy = self.busy.saturating_sub(1);
                    if self.busy > 0 {
                        1 << 4
                    } else {
                        0
                    }
                }
                FSM_STATUS => 1 << 4,
                a => self.regs.read(a),
            }
        }

        fn write(&mut self, addr: u32, value: u32) {
            assert!(
                self.fifo == 0 && self.busy == 0,
                "the clock changed with bytes still going out"
            );
            self.regs.write(addr, value);
        }

        fn fence(&mut self) {}
    }

    #[test]
    fn the_clock_changes_only_after_the_rom_s_last_bytes_went_out() {
        let mut r = Draining {
            fifo: 5,
            busy: 3,
            regs: FakeRegs::default(),
        };
        clock_from_crystal(&mut r);
        assert_eq!(r.regs.writes.len(), 2);
    }
}
