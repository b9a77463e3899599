//! The two ways the QEMU board reaches its NVM (boot option `amber.nvm-bus`): `mmio`,
//! the ivshmem window by loads and stores (byte-addressable NVM: MRAM, Optane), and
//! `spi`, the same window as the array of an emulated MB85RS-class FRAM chip
//! (`amber_fram::EmuFram`, charging its wire time per byte) reached only through the
//! `amber_fram::Fram` protocol driver over `SpiDevice`: the driver stack the ESP32-C3
//! board uses for its one SPI FRAM. This file picks and wires the stack; it must never
//! change what a store does (the chip stores every byte it is sent, as the window).

use amber_fram::{AddressWidth, EmuFram, Fram, Part, DEFAULT_CYCLES_PER_BYTE};
use amber_nvm::{Either, MmioNvm, Nvm};

/// The checkpoint area's SPI FRAM: the protocol driver over the emulated chip.
pub type SpiFram = Fram<EmuFram<MmioNvm>>;

/// The board's NVM, on the bus the boot options chose: the window by loads and
/// stores (`Left`), or the SPI FRAM (`Right`).
pub type BoardNvm = Either<MmioNvm, SpiFram>;

/// The window as a chip on the SPI bus: a part of the window's size (3-byte addresses,
/// so at most 16 MiB) at the MB85RS4MT's 40 MHz. `None` when the window is too large
/// for 3-byte addresses.
pub fn on_spi(window: MmioNvm) -> Option<BoardNvm> {
    let part = Part::new(window.size(), AddressWidth::Three).ok()?;
    let chip = EmuFram::new(part, window, DEFAULT_CYCLES_PER_BYTE, spend).ok()?;
    Some(Either::Right(Fram::new(chip, part)))
}

/// Bytes clocked on the SPI bus so far (opcodes, addresses, data); `None` on `mmio`.
pub fn wire_bytes(nvm: &BoardNvm) -> Option<u64> {
    match nvm {
        Either::Left(_) => None,
        Either::Right(fram) => Some(fram.stats().wire_bytes),
    }
}

/// Spends the wire time of a transfer: `cycles` of `mcycle` (instructions under
/// `-icount`, as QEMU counts them; host clock ticks without it).
fn spend(cycles: u32) {
    let start = riscv::register::mcycle::read64();
    while riscv::register::mcycle::read64().wrapping_sub(start) < u64::from(cycles) {
        core::hint::spin_loop();
    }
}
