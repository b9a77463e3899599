//! UART0 as the ROM leaves it (115200 8N1 on GPIO21/20; TRM chapter "UART
//! Controller", 26.x registers UART_FIFO, UART_INT_*, UART_STATUS, UART_CONF1): bytes
//! out through the TX FIFO (128 bytes), bytes in from the RX FIFO, and the RX-FIFO-full
//! interrupt at a threshold of one byte (interrupt source 21). Never changes the baud
//! rate or the pins: the ROM set them.

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
/// UART_INT_*: RXFIFO_FULL (bit 0).
pub const RXFIFO_FULL: u32 = 1 << 0;
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

/// Interrupts on every received byte.
pub fn enable_rx_interrupt(r: &mut impl Regs) {
    r.modify(CONF1, |v| (v & !0x1FF) | 1);
    r.write(INT_CLR, RXFIFO_FULL);
    r.set_bits(INT_ENA, RXFIFO_FULL);
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
        assert_eq!(r.writes_to(0x6000_0010), [1]);
    }
}
