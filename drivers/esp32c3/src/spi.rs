//! GP-SPI2 as an embedded-hal [`SpiBus`] in CPU-controlled full-duplex master mode
//! (TRM chapter "SPI Controller", 26.5.8 "CPU-controlled transfer" and 26.7 clock
//! control): up to 64 bytes per transaction go through the data buffer W0..W15
//! (little-endian within each word); each transaction writes the bit length to
//! MS_DLEN, the bytes to W0.., pulses CMD.UPDATE to move the configuration into the
//! SPI clock domain, sets CMD.USR and waits for it to clear, then reads what came in
//! from the same buffer. Chip select is not this driver's: a GPIO (embedded-hal-bus's
//! `ExclusiveDevice`) drives it. SPI mode 0 only (what the MB85RS4MT uses). Never
//! waits forever: a transaction that does not finish is [`SpiError::Timeout`].

use crate::Regs;
use embedded_hal::spi::{ErrorKind, ErrorType, SpiBus};

pub const BASE: u32 = 0x6002_4000;
pub const CMD: u32 = BASE;
pub const CMD_UPDATE: u32 = 1 << 23;
pub const CMD_USR: u32 = 1 << 24;
pub const CLOCK: u32 = BASE + 0x0C;
pub const USER: u32 = BASE + 0x10;
/// SPI_USER: USR_MISO (28), USR_MOSI (27), CK_OUT_EDGE (9, 0 in mode 0), DOUTDIN (0).
pub const USER_MISO: u32 = 1 << 28;
pub const USER_MOSI: u32 = 1 << 27;
pub const USER_DOUTDIN: u32 = 1 << 0;
pub const MS_DLEN: u32 = BASE + 0x1C;
pub const MISC: u32 = BASE + 0x20;
/// SPI_MISC: CS0..CS5_DIS (bits 5:0), CK_IDLE_EDGE (29, 0 in mode 0).
pub const MISC_CS_DIS_ALL: u32 = 0x3F;
pub const DMA_CONF: u32 = BASE + 0x30;
/// SPI_DMA_CONF: RX_AFIFO_RST (29), BUF_AFIFO_RST (30), DMA_AFIFO_RST (31).
pub const DMA_CONF_FIFO_RST: u32 = 0b111 << 29;
pub const fn w_reg(i: u32) -> u32 {
    BASE + 0x98 + 4 * i
}
pub const SLAVE: u32 = BASE + 0xE0;
pub const CLK_GATE: u32 = BASE + 0xE8;
/// SPI_CLK_GATE: CLK_EN (0), MST_CLK_ACTIVE (1), MST_CLK_SEL (2, 1 = 80 MHz PLL clock).
pub const CLK_GATE_ON_PLL: u32 = 0b111;
/// SYSTEM_PERIP_CLK_EN0 / SYSTEM_PERIP_RST_EN0, bit 6 is SPI2.
pub const SYSTEM_PERIP_CLK_EN0: u32 = 0x600C_0010;
pub const SYSTEM_PERIP_RST_EN0: u32 = 0x600C_0018;
pub const SYSTEM_SPI2: u32 = 1 << 6;
/// Bytes one transaction moves.
pub const BUFFER_BYTES: usize = 64;
/// The clock the divider starts from (MST_CLK_SEL = PLL).
pub const SOURCE_HZ: u32 = 80_000_000;
/// Status polls before a transaction is given up.
pub const POLLS: u32 = 1_000_000;

/// What went wrong on the bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpiError {
    /// CMD.UPDATE or CMD.USR did not clear within [`POLLS`] reads.
    Timeout,
}

impl embedded_hal::spi::Error for SpiError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Other
    }
}

impl core::fmt::Display for SpiError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SpiError::Timeout => write!(f, "GP-SPI2 transaction did not complete"),
        }
    }
}

/// The SPI_CLOCK value for the fastest rate not above `hz` from [`SOURCE_HZ`]:
/// f = source / ((PRE + 1)(N + 1)), H = (N + 1)/2 - 1, L = N (TRM 26.7); the source
/// itself is CLK_EQU_SYSCLK. Below the slowest rate (source / 1024 = 78 125 Hz) the
/// slowest is given. Returns the value and the rate it gives.
pub fn clock_for(hz: u32) -> (u32, u32) {
    if hz >= SOURCE_HZ {
        return (1 << 31, SOURCE_HZ);
    }
    let hz = hz.max(1);
    let divider = SOURCE_HZ.div_ceil(hz);
    // N is 6 bits (2..=64), PRE 4 bits (1..=16): the smallest PRE whose N fits.
    let pre = divider.div_ceil(64).clamp(1, 16);
    let n = divider.div_ceil(pre).clamp(2, 64);
    let value = (pre - 1) << 18 | (n - 1) << 12 | (n / 2 - 1) << 6 | (n - 1);
    (value, SOURCE_HZ / (pre * n))
}

/// GP-SPI2, configured as mode-0 full-duplex master.
pub struct Spi2<R> {
    regs: R,
    hz: u32,
}

impl<R: Regs> Spi2<R> {
    /// Clocks and resets the controller and sets it up for mode 0 at no more than
    /// `hz` (pins are routed separately, `gpio`).
    pub fn new(mut r: R, hz: u32) -> Self {
        r.set_bits(SYSTEM_PERIP_CLK_EN0, SYSTEM_SPI2);
        r.set_bits(SYSTEM_PERIP_RST_EN0, SYSTEM_SPI2);
        r.clear_bits(SYSTEM_PERIP_RST_EN0, SYSTEM_SPI2);
        r.write(CLK_GATE, CLK_GATE_ON_PLL);
        r.write(SLAVE, 0);
        r.write(USER, USER_DOUTDIN | USER_MOSI | USER_MISO);
        r.write(MISC, MISC_CS_DIS_ALL);
        let (clock, rate) = clock_for(hz);
        r.write(CLOCK, clock);
        r.set_bits(DMA_CONF, DMA_CONF_FIFO_RST);
        r.clear_bits(DMA_CONF, DMA_CONF_FIFO_RST);
        Spi2 { regs: r, hz: rate }
    }

    /// The SCK rate the divider gives.
    pub fn hz(&self) -> u32 {
        self.hz
    }

    fn wait_clear(&mut self, bit: u32) -> Result<(), SpiError> {
        for _ in 0..POLLS {
            if self.regs.read(CMD) & bit == 0 {
                return Ok(());
            }
        }
        Err(SpiError::Timeout)
    }

    /// One transaction of `len` ≤ 64 bytes: byte i sent is `out(i)`, byte i received
    /// goes to `into[i]` when there is one.
    fn transaction(
        &mut self,
        len: usize,
        out: impl Fn(usize) -> u8,
        into: &mut [u8],
    ) -> Result<(), SpiError> {
        debug_assert!(len > 0 && len <= BUFFER_BYTES);
        for w in 0..len.div_ceil(4) {
            let word = (0..4).fold(0u32, |acc, b| {
                let i = 4 * w + b;
                acc | (if i < len { out(i) } else { 0 } as u32) << (8 * b)
            });
            self.regs.write(w_reg(w as u32), word);
        }
        self.regs.write(MS_DLEN, (8 * len - 1) as u32);
        self.regs.write(CMD, CMD_UPDATE);
        self.wait_clear(CMD_UPDATE)?;
        self.regs.write(CMD, CMD_USR);
        self.wait_clear(CMD_USR)?;
        for (w, chunk) in into.chunks_mut(4).enumerate() {
            let word = self.regs.read(w_reg(w as u32)).to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        Ok(())
    }
}

impl<R> ErrorType for Spi2<R> {
    type Error = SpiError;
}

impl<R: Regs> SpiBus for Spi2<R> {
    fn read(&mut self, words: &mut [u8]) -> Result<(), SpiError> {
        for chunk in words.chunks_mut(BUFFER_BYTES) {
            self.transaction(chunk.len(), |_| 0, chunk)?;
        }
        Ok(())
    }

    fn write(&mut self, words: &[u8]) -> Result<(), SpiError> {
        for chunk in words.chunks(BUFFER_BYTES) {
            self.transaction(chunk.len(), |i| chunk[i], &mut [])?;
        }
        Ok(())
    }

    /// Clocks `max(read.len(), write.len())` bytes; zeros go out past `write`, and
    /// what comes in past `read` is dropped.
    fn transfer(&mut self, read: &mut [u8], write: &[u8]) -> Result<(), SpiError> {
        let len = read.len().max(write.len());
        for start in (0..len).step_by(BUFFER_BYTES) {
            let n = (len - start).min(BUFFER_BYTES);
            let end = read.len().clamp(start, start + n);
            let out = |i: usize| write.get(start + i).copied().unwrap_or(0);
            self.transaction(n, out, &mut read[start..end])?;
        }
        Ok(())
    }

    fn transfer_in_place(&mut self, words: &mut [u8]) -> Result<(), SpiError> {
        let mut sent = [0u8; BUFFER_BYTES];
        for chunk in words.chunks_mut(BUFFER_BYTES) {
            let n = chunk.len();
            sent[..n].copy_from_slice(chunk);
            self.transaction(n, |i| sent[i], chunk)?;
        }
        Ok(())
    }

    /// Every transaction has finished when its call returns.
    fn flush(&mut self) -> Result<(), SpiError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegs;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A device on the bus that answers each byte with its complement, and logs the
    /// bytes that went out of each transaction (from MS_DLEN and W0..).
    fn complementing_device() -> (FakeRegs, Rc<RefCell<Vec<Vec<u8>>>>) {
        let log = Rc::new(RefCell::new(Vec::new()));
        let seen = log.clone();
        let r = FakeRegs::with_hook(move |v, addr, val| {
            if addr == CMD && val & CMD_UPDATE != 0 {
                v.insert(CMD, 0);
            }
            if addr == CMD && val & CMD_USR != 0 {
                let bits = v.get(&MS_DLEN).copied().unwrap_or(0) + 1;
                let len = (bits / 8) as usize;
                let mut out = Vec::new();
                for w in 0..16 {
                    let word = v.get(&w_reg(w)).copied().unwrap_or(0);
                    out.extend_from_slice(&word.to_le_bytes());
                    v.insert(w_reg(w), !word);
                }
                out.truncate(len);
                seen.borrow_mut().push(out);
                v.insert(CMD, 0);
            }
        });
        (r, log)
    }

    #[test]
    fn init_clocks_resets_and_sets_mode0_full_duplex_at_40mhz() {
        let spi = Spi2::new(FakeRegs::default(), 40_000_000);
        let r = &spi.regs;
        assert_eq!(r.get(0x600C_0010) & 1 << 6, 1 << 6, "SPI2 clock on");
        assert_eq!(r.writes_to(0x600C_0018), [1 << 6, 0], "reset pulsed");
        assert_eq!(r.get(0x6002_40E8), 0b111);
        assert_eq!(r.get(0x6002_40E0), 0, "master");
        assert_eq!(
            r.get(0x6002_4010),
            1 << 28 | 1 << 27 | 1,
            "MISO, MOSI, DOUTDIN; edge 0"
        );
        assert_eq!(r.get(0x6002_4020), 0x3F, "hardware CS off, idle clock low");
        assert_eq!(
            r.get(0x6002_400C),
            0x1001,
            "80 MHz / 2: N = 1, H = 0, L = 1"
        );
        assert_eq!(spi.hz(), 40_000_000);
    }

    #[test]
    fn clock_dividers_never_exceed_the_asked_rate() {
        assert_eq!(clock_for(80_000_000), (1 << 31, 80_000_000));
        assert_eq!(clock_for(20_000_000), (3 << 12 | 1 << 6 | 3, 20_000_000));
        for hz in [
            78_125, 100_000, 1_000_000, 7_000_000, 13_333_333, 39_999_999,
        ] {
            let (_, got) = clock_for(hz);
            assert!(got <= hz && got > 0, "{hz} -> {got}");
        }
        // The slowest: PRE = 16, N = 64.
        assert_eq!(clock_for(1), (15 << 18 | 63 << 12 | 31 << 6 | 63, 78_125));
    }

    #[test]
    fn a_transfer_goes_through_the_buffer_in_64_byte_transactions() {
        let (r, log) = complementing_device();
        let mut spi = Spi2::new(r, 40_000_000);
        let out: Vec<u8> = (0..100u32).map(|i| i as u8).collect();
        let mut back = [0u8; 100];
        spi.transfer(&mut back, &out).unwrap();
        let log = log.borrow();
        assert_eq!(log.len(), 2);
        assert_eq!(log[0], out[..64]);
        assert_eq!(log[1], out[64..]);
        assert!(back.iter().zip(&out).all(|(b, o)| *b == !*o));
        // 36 bytes: MS_DLEN 287, W0 holds bytes 64..68 little-endian.
        assert_eq!(spi.regs.get(MS_DLEN), 36 * 8 - 1);
        assert_eq!(spi.regs.writes_to(0x6002_4098).last(), Some(&0x4342_4140));
        // Each transaction: UPDATE, then USR.
        assert_eq!(
            spi.regs.writes_to(CMD),
            [CMD_UPDATE, CMD_USR, CMD_UPDATE, CMD_USR]
        );
    }

    #[test]
    fn reads_send_zeros_and_writes_drop_what_comes_back() {
        let (r, log) = complementing_device();
        let mut spi = Spi2::new(r, 40_000_000);
        let mut buf = [0u8; 5];
        spi.read(&mut buf).unwrap();
        assert_eq!(buf, [0xFF; 5]);
        spi.write(&[0x9F]).unwrap();
        let mut inplace = [0x03, 0x00, 0x10];
        spi.transfer_in_place(&mut inplace).unwrap();
        assert_eq!(inplace, [0xFC, 0xFF, 0xEF]);
        let mut short = [0u8; 1];
        spi.transfer(&mut short, &[1, 2, 3]).unwrap();
        assert_eq!(short, [0xFE]);
        assert_eq!(
            *log.borrow(),
            [
                vec![0; 5],
                vec![0x9F],
                vec![0x03, 0x00, 0x10],
                vec![1, 2, 3]
            ]
        );
    }

    #[test]
    fn a_stuck_controller_is_a_timeout_not_a_hang() {
        let mut spi = Spi2::new(FakeRegs::default(), 40_000_000);
        // The fake never clears CMD.UPDATE.
        assert_eq!(spi.write(&[1]), Err(SpiError::Timeout));
    }
}
