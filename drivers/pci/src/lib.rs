//! PCI configuration: find a device on bus 0, size and place a 64-bit memory BAR in a
//! window, and turn on memory decoding.
//!
//! With `-bios none` no firmware has assigned BARs, so the kernel does it. The logic
//! runs over the [`ConfigSpace`] trait, so it is tested on the host against a model
//! of a device; [`Ecam`] is the real, memory-mapped configuration space. This crate
//! must never map or touch the memory behind a BAR: it only says where it is.

#![cfg_attr(not(test), no_std)]

use core::fmt;

/// Bus/device/function of a PCI function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bdf {
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

/// Register offsets in a type-0 configuration header.
const REG_ID: u16 = 0x00;
const REG_COMMAND: u16 = 0x04;
const REG_HEADER_TYPE: u16 = 0x0C;
const REG_BAR0: u16 = 0x10;
/// Command register bit 1: respond to memory-space accesses.
const COMMAND_MEMORY: u32 = 1 << 1;

/// 32-bit access to PCI configuration space.
pub trait ConfigSpace {
    fn read32(&mut self, bdf: Bdf, reg: u16) -> u32;
    fn write32(&mut self, bdf: Bdf, reg: u16, value: u32);
}

/// What can go wrong placing a BAR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PciError {
    /// The BAR is not a 64-bit memory BAR.
    NotMemory64 { bar: u8 },
    /// The BAR reports no size (the device does not implement it).
    Unimplemented { bar: u8 },
    /// The BAR does not fit in the window it must be placed in.
    DoesNotFit {
        size: u64,
        window_base: u64,
        window_len: u64,
    },
}

impl fmt::Display for PciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PciError::NotMemory64 { bar } => write!(f, "BAR{bar} is not a 64-bit memory BAR"),
            PciError::Unimplemented { bar } => write!(f, "BAR{bar} is not implemented"),
            PciError::DoesNotFit {
                size,
                window_base,
                window_len,
            } => write!(
                f,
                "a BAR of {size:#x} bytes does not fit the window {window_base:#x}+{window_len:#x}"
            ),
        }
    }
}

/// Finds the first function on bus 0 with this vendor and device id.
pub fn find(cfg: &mut impl ConfigSpace, vendor: u16, device: u16) -> Option<Bdf> {
    for dev in 0..32u8 {
        let f0 = Bdf {
            bus: 0,
            device: dev,
            function: 0,
        };
        let id = cfg.read32(f0, REG_ID);
        if id & 0xFFFF == 0xFFFF {
            continue; // no device in this slot
        }
        let functions = if cfg.read32(f0, REG_HEADER_TYPE) & (0x80 << 16) != 0 {
            8
        } else {
            1
        };
        for function in 0..functions {
            let bdf = Bdf { function, ..f0 };
            let id = cfg.read32(bdf, REG_ID);
            if id & 0xFFFF == vendor as u32 && id >> 16 == device as u32 {
                return Some(bdf);
            }
        }
    }
    None
}

/// Sizes the 64-bit memory BAR `bar` (it and `bar + 1`), places it at the lowest
/// address in `[window_base, window_base + window_len)` aligned to its size, and enables
/// memory decoding. Returns the address and size of the BAR.
pub fn place_bar64(
    cfg: &mut impl ConfigSpace,
    bdf: Bdf,
    bar: u8,
    window_base: u64,
    window_len: u64,
) -> Result<(u64, u64), PciError> {
    let lo_reg = REG_BAR0 + 4 * bar as u16;
    let hi_reg = lo_reg + 4;
    let original = cfg.read32(bdf, lo_reg);
    // Bit 0 clear = memory BAR; bits 2:1 = 0b10 = 64-bit.
    if original & 0b111 != 0b100 {
        return Err(PciError::NotMemory64 { bar });
    }
    // Decoding stays off while the BAR holds the all-ones sizing pattern.
    let command = cfg.read32(bdf, REG_COMMAND);
    cfg.write32(bdf, REG_COMMAND, command & !COMMAND_MEMORY);
    cfg.write32(bdf, lo_reg, 0xFFFF_FFFF);
    cfg.write32(bdf, hi_reg, 0xFFFF_FFFF);
    let mask = (cfg.read32(bdf, hi_reg) as u64) << 32 | (cfg.read32(bdf, lo_reg) & !0xF) as u64;
    if mask == 0 {
        return Err(PciError::Unimplemented { bar });
    }
    let size = (!mask).wrapping_add(1);
    let base = window_base.div_ceil(size) * size;
    let fits = base
        .checked_add(size)
        .is_some_and(|end| end <= window_base + window_len);
    if !fits {
        return Err(PciError::DoesNotFit {
            size,
            window_base,
            window_len,
        });
    }
    cfg.write32(bdf, lo_reg, base as u32);
    cfg.write32(bdf, hi_reg, (base >> 32) as u32);
    cfg.write32(bdf, REG_COMMAND, command | COMMAND_MEMORY);
    Ok((base, size))
}

/// The memory-mapped configuration space (PCIe ECAM): 4 KiB per function.
pub struct Ecam {
    base: *mut u32,
}

impl Ecam {
    /// # Safety
    /// `base` must be the start of an ECAM region covering bus 0, mapped for volatile
    /// 32-bit accesses, and nothing else may configure those devices meanwhile.
    pub unsafe fn new(base: usize) -> Self {
        Ecam {
            base: base as *mut u32,
        }
    }

    fn reg(&self, bdf: Bdf, reg: u16) -> *mut u32 {
        let offset = (bdf.bus as usize) << 20
            | (bdf.device as usize & 0x1F) << 15
            | (bdf.function as usize & 0x7) << 12
            | (reg as usize & 0xFFC);
        self.base.wrapping_byte_add(offset)
    }
}

impl ConfigSpace for Ecam {
    fn read32(&mut self, bdf: Bdf, reg: u16) -> u32 {
        // SAFETY: `reg` builds an aligned address inside the ECAM region promised by
        // `new` (device, function and register are masked to their fields).
        unsafe { self.reg(bdf, reg).read_volatile() }
    }

    fn write32(&mut self, bdf: Bdf, reg: u16, value: u32) {
        // SAFETY: as in `read32`.
        unsafe { self.reg(bdf, reg).write_volatile(value) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model of one ivshmem-like function at 00:03.0 with a 64-bit BAR2 of `size`.
    struct OneDevice {
        size: u64,
        bar2: u64,
        command: u32,
    }

    const AT: Bdf = Bdf {
        bus: 0,
        device: 3,
        function: 0,
    };

    impl ConfigSpace for OneDevice {
        fn read32(&mut self, bdf: Bdf, reg: u16) -> u32 {
            if bdf != AT {
                return 0xFFFF_FFFF;
            }
            match reg {
                REG_ID => 0x1110_1af4,
                REG_COMMAND => self.command,
                0x18 => (self.bar2 as u32 & !0xF) | 0b1100,
                0x1C => (self.bar2 >> 32) as u32,
                _ => 0,
            }
        }
        fn write32(&mut self, bdf: Bdf, reg: u16, value: u32) {
            assert_eq!(bdf, AT, "wrote to a function that does not exist");
            let mask = !(self.size - 1);
            match reg {
                REG_COMMAND => self.command = value,
                0x18 => self.bar2 = (self.bar2 & !0xFFFF_FFFF | value as u64) & mask,
                0x1C => self.bar2 = (self.bar2 & 0xFFFF_FFFF | (value as u64) << 32) & mask,
                _ => {}
            }
        }
    }

    #[test]
    fn the_device_is_found_by_its_ids() {
        let mut cfg = OneDevice {
            size: 1 << 22,
            bar2: 0,
            command: 0,
        };
        assert_eq!(find(&mut cfg, 0x1af4, 0x1110), Some(AT));
        assert_eq!(find(&mut cfg, 0x1af4, 0x1000), None);
    }

    #[test]
    fn a_bar_is_sized_aligned_to_its_size_and_decoding_enabled() {
        let mut cfg = OneDevice {
            size: 1 << 22,
            bar2: 0,
            command: 0,
        };
        let (base, size) = place_bar64(&mut cfg, AT, 2, 0x4000_1000, 0x4000_0000).unwrap();
        assert_eq!(size, 4 << 20);
        assert_eq!(base, 0x4040_0000, "the BAR must be aligned to its own size");
        assert_eq!(
            cfg.bar2, base,
            "the device must decode at the chosen address"
        );
        assert_ne!(
            cfg.command & COMMAND_MEMORY,
            0,
            "memory decoding must be on"
        );
    }

    #[test]
    fn a_bar_larger_than_the_window_is_refused() {
        let mut cfg = OneDevice {
            size: 1 << 31,
            bar2: 0,
            command: 0,
        };
        assert!(matches!(
            place_bar64(&mut cfg, AT, 2, 0x4000_0000, 0x4000_0000),
            Err(PciError::DoesNotFit { .. })
        ));
        assert_eq!(
            cfg.command & COMMAND_MEMORY,
            0,
            "decoding must stay off on failure"
        );
    }
}
