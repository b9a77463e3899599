//! The board's FRAM stack on the host: amber-fram's `Fram` over embedded-hal-bus's
//! `ExclusiveDevice` over this crate's `Spi2` and `OutputPin`, all on one register
//! file that models GP-SPI2, the chip-select GPIO and an MB85RS4MT answering byte by
//! byte. Checks what goes over the wire between chip-select edges.

use amber_esp32c3::gpio::{OutputPin, GPIO_OUT_W1TC, GPIO_OUT_W1TS};
use amber_esp32c3::spi::{self, Spi2};
use amber_esp32c3::Regs;
use amber_fram::{Fram, Part};
use embedded_hal::spi::{Operation, SpiDevice};
use embedded_hal_bus::spi::ExclusiveDevice;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

const CS: u32 = 10;
const ID: [u8; 4] = [0x04, 0x7F, 0x49, 0x03];

/// Registers plus the device: `frames` holds the bytes sent in each chip-select frame.
#[derive(Default)]
struct Board {
    regs: BTreeMap<u32, u32>,
    selected: bool,
    frames: Vec<Vec<u8>>,
}

impl Board {
    /// The FRAM's answer to byte `k` of a frame that began with `command`.
    fn answer(command: u8, k: usize) -> u8 {
        match (command, k) {
            (0x9F, 1..=4) => ID[k - 1],
            (0x05, 1) => 0x00, // status: no block protection
            (0x03, k) if k >= 4 => k as u8,
            _ => 0,
        }
    }

    fn write(&mut self, addr: u32, value: u32) {
        self.regs.insert(addr, value);
        match addr {
            GPIO_OUT_W1TC if value & 1 << CS != 0 => {
                self.selected = true;
                self.frames.push(Vec::new());
            }
            GPIO_OUT_W1TS if value & 1 << CS != 0 => self.selected = false,
            spi::CMD if value & spi::CMD_UPDATE != 0 => {
                self.regs.insert(spi::CMD, 0);
            }
            spi::CMD if value & spi::CMD_USR != 0 => {
                assert!(self.selected, "a transaction with chip select high");
                let len = ((self.regs[&spi::MS_DLEN] + 1) / 8) as usize;
                let out: Vec<u8> = (0..len)
                    .map(|i| (self.regs[&spi::w_reg(i as u32 / 4)] >> (8 * (i % 4))) as u8)
                    .collect();
                let frame = self.frames.last_mut().unwrap();
                let start = frame.len();
                frame.extend_from_slice(&out);
                let command = frame[0];
                for w in 0..len.div_ceil(4) {
                    let word = (0..4).fold(0u32, |acc, b| {
                        let k = start + 4 * w + b;
                        acc | (Self::answer(command, k) as u32) << (8 * b)
                    });
                    self.regs.insert(spi::w_reg(w as u32), word);
                }
                self.regs.insert(spi::CMD, 0);
            }
            _ => {}
        }
    }
}

#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Board>>);

impl Regs for Shared {
    fn read(&mut self, addr: u32) -> u32 {
        self.0.borrow().regs.get(&addr).copied().unwrap_or(0)
    }

    fn write(&mut self, addr: u32, value: u32) {
        self.0.borrow_mut().write(addr, value);
    }

    fn fence(&mut self) {}
}

fn device(
    board: &Shared,
) -> ExclusiveDevice<Spi2<Shared>, OutputPin<Shared>, embedded_hal_bus::spi::NoDelay> {
    let cs = OutputPin::new(board.clone(), CS).unwrap();
    let spi = Spi2::new(board.clone(), 40_000_000);
    ExclusiveDevice::new_no_delay(spi, cs).unwrap()
}

#[test]
fn rdid_reads_the_mb85rs4mt_id_in_one_frame() {
    let board = Shared::default();
    let mut dev = device(&board);
    let mut id = [0u8; 4];
    dev.transaction(&mut [Operation::Write(&[0x9F]), Operation::Read(&mut id)])
        .unwrap();
    assert_eq!(id, ID);
    assert_eq!(board.0.borrow().frames, [vec![0x9F, 0, 0, 0, 0]]);
    assert!(!board.0.borrow().selected, "chip select released");
}

#[test]
fn fram_writes_and_reads_frame_by_frame_through_spi2() {
    let board = Shared::default();
    let mut fram = Fram::new(device(&board), Part::MB85RS4MT);
    fram.write_at(0x1_2345, &[0xAB, 0xCD]).unwrap();
    let mut buf = [0u8; 100];
    fram.read_at(0x7_FF00, &mut buf).unwrap();
    let frames = board.0.borrow().frames.clone();
    assert_eq!(frames[0], [0x05, 0], "RDSR: block protection first");
    assert_eq!(frames[1], [0x06], "WREN");
    assert_eq!(
        frames[2],
        [0x02, 0x01, 0x23, 0x45, 0xAB, 0xCD],
        "WRITE, 3-byte address"
    );
    assert_eq!(frames[3].len(), 4 + 100);
    assert_eq!(
        frames[3][..4],
        [0x03, 0x07, 0xFF, 0x00],
        "READ, 3-byte address"
    );
    assert_eq!(frames.len(), 4);
    // What came back is what the device sent for bytes 4.. of the frame.
    assert!(buf.iter().enumerate().all(|(i, b)| *b == (i + 4) as u8));
}
