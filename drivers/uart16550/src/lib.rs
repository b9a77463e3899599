//! The 16550 UART: polled transmit and interrupt-driven receive.
//!
//! Registers are one byte apart (as on QEMU `virt`). The driver only knows registers:
//! it must never decide what a received byte means; the kernel's console does.

#![cfg_attr(not(test), no_std)]

use core::fmt;

const RBR_THR: usize = 0; // receive buffer (read) / transmit holding (write)
const IER: usize = 1; // interrupt enable
const FCR: usize = 2; // FIFO control
const LCR: usize = 3; // line control
const LSR: usize = 5; // line status

const IER_RX_AVAILABLE: u8 = 1 << 0;
const LCR_8N1: u8 = 0b11;
const LCR_DLAB: u8 = 1 << 7;
/// FIFOs off, as the UART comes out of reset: turning them on empties them (QEMU's
/// 16550 does), which would lose a byte that came before the kernel started (input
/// piped in at once). One byte at a time is plenty for a console, and a sender is still
/// held back while the receive interrupt is off (`receive_interrupt`).
const FCR_FIFOS_OFF: u8 = 0;
const LSR_DATA_READY: u8 = 1 << 0;
const LSR_THR_EMPTY: u8 = 1 << 5;

/// A 16550 at a fixed MMIO address.
pub struct Uart {
    base: *mut u8,
}

// SAFETY: the UART's registers belong to this value alone (`new`'s contract).
unsafe impl Send for Uart {}

impl Uart {
    /// # Safety
    /// `base` must be the 16550's register block, valid for volatile byte accesses,
    /// and owned by this value alone.
    pub const unsafe fn new(base: usize) -> Self {
        Uart {
            base: base as *mut u8,
        }
    }

    fn read(&self, reg: usize) -> u8 {
        // SAFETY: `reg` is one of the register offsets above, inside the block `new` names.
        unsafe { self.base.add(reg).read_volatile() }
    }

    fn write(&mut self, reg: usize, v: u8) {
        // SAFETY: as in `read`.
        unsafe { self.base.add(reg).write_volatile(v) }
    }

    /// 8N1, FIFOs off (a byte received before is kept), divisor 1 (the fastest rate; emulators ignore it), receive
    /// interrupt enabled.
    pub fn init(&mut self) {
        self.write(IER, 0);
        self.write(LCR, LCR_DLAB);
        self.write(RBR_THR, 1); // divisor latch low
        self.write(IER, 0); // divisor latch high
        self.write(LCR, LCR_8N1);
        self.write(FCR, FCR_FIFOS_OFF);
        self.write(IER, IER_RX_AVAILABLE);
    }

    /// Enables (`true`) or disables the receive interrupt. While it is off, received
    /// bytes stay in the FIFO; once it is full the sender is held back.
    pub fn receive_interrupt(&mut self, on: bool) {
        self.write(IER, if on { IER_RX_AVAILABLE } else { 0 });
    }

    /// Sends one byte, waiting until the transmitter can take it.
    pub fn send(&mut self, byte: u8) {
        while self.read(LSR) & LSR_THR_EMPTY == 0 {
            core::hint::spin_loop();
        }
        self.write(RBR_THR, byte);
    }

    /// The next received byte, if one is waiting.
    pub fn receive(&mut self) -> Option<u8> {
        if self.read(LSR) & LSR_DATA_READY != 0 {
            Some(self.read(RBR_THR))
        } else {
            None
        }
    }
}

impl fmt::Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.send(b'\r');
            }
            self.send(b);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn bytes_go_to_the_transmit_register_and_newlines_become_crlf() {
        let mut regs = [0u8; 8];
        regs[LSR] = LSR_THR_EMPTY;
        // SAFETY: `regs` outlives `uart` and stands in for the register block.
        let mut uart = unsafe { Uart::new(regs.as_mut_ptr() as usize) };
        uart.write_str("\n").unwrap();
        assert_eq!(regs[RBR_THR], b'\n', "the last byte sent must be in THR");
    }

    #[test]
    fn receive_reads_only_when_data_is_ready() {
        let mut regs = [0u8; 8];
        regs[RBR_THR] = b'x';
        // SAFETY: as above.
        let mut uart = unsafe { Uart::new(regs.as_mut_ptr() as usize) };
        assert_eq!(uart.receive(), None, "no data-ready bit, no byte");
        regs[LSR] = LSR_DATA_READY;
        // SAFETY: as above; a fresh value sees the updated array.
        let mut uart = unsafe { Uart::new(regs.as_mut_ptr() as usize) };
        assert_eq!(uart.receive(), Some(b'x'));
    }
}
