//! The FRAM status register and the block protection it encodes.
//!
//! | bit | name | meaning |
//! |---|---|---|
//! | 7 | WPEN | with the /WP pin low, the status register cannot be written (non-volatile) |
//! | 6..4 | — | unused, read as 0 |
//! | 3 | BP1 | block protect, high bit (non-volatile) |
//! | 2 | BP0 | block protect, low bit (non-volatile) |
//! | 1 | WEL | write-enable latch: set by WREN, reset by WRDI, WRITE, WRSR and power-up (read only) |
//! | 0 | — | always 0 |
//!
//! Block protection always covers the top of the array (BP1:BP0 = 01 the upper
//! quarter, 10 the upper half, 11 all of it), so the writable part is always
//! `[0, protected_from)`. This file only decodes bits; it must never touch the bus.

/// A status register value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status(u8);

impl Status {
    /// Status register write protect (with the /WP pin).
    pub const WPEN: u8 = 0x80;
    /// Block protect, high bit.
    pub const BP1: u8 = 0x08;
    /// Block protect, low bit.
    pub const BP0: u8 = 0x04;
    /// Write-enable latch.
    pub const WEL: u8 = 0x02;
    /// The bits WRSR can change; the others are ignored when written.
    pub const WRITABLE: u8 = Self::WPEN | Self::BP1 | Self::BP0;

    /// The register holding `bits` exactly.
    pub const fn from_bits(bits: u8) -> Status {
        Status(bits)
    }

    /// The raw register value.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether the write-enable latch is set.
    pub const fn write_enabled(self) -> bool {
        self.0 & Self::WEL != 0
    }

    /// Whether WPEN is set.
    pub const fn wpen(self) -> bool {
        self.0 & Self::WPEN != 0
    }

    /// This value with WPEN set or cleared.
    pub const fn with_wpen(self, on: bool) -> Status {
        if on {
            Status(self.0 | Self::WPEN)
        } else {
            Status(self.0 & !Self::WPEN)
        }
    }

    /// The block protection encoded in BP1:BP0.
    pub const fn block_protect(self) -> BlockProtect {
        match (self.0 & (Self::BP1 | Self::BP0)) >> 2 {
            0 => BlockProtect::None,
            1 => BlockProtect::UpperQuarter,
            2 => BlockProtect::UpperHalf,
            _ => BlockProtect::All,
        }
    }

    /// This value with BP1:BP0 replaced by `protect`.
    pub const fn with_block_protect(self, protect: BlockProtect) -> Status {
        let bp = match protect {
            BlockProtect::None => 0,
            BlockProtect::UpperQuarter => Self::BP0,
            BlockProtect::UpperHalf => Self::BP1,
            BlockProtect::All => Self::BP1 | Self::BP0,
        };
        Status((self.0 & !(Self::BP1 | Self::BP0)) | bp)
    }

    /// Only the bits WRSR stores (what a write of this value can change).
    pub const fn writable(self) -> Status {
        Status(self.0 & Self::WRITABLE)
    }
}

/// Which top part of the array refuses writes (reads are never blocked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockProtect {
    /// Nothing is protected.
    None,
    /// The upper quarter is protected.
    UpperQuarter,
    /// The upper half is protected.
    UpperHalf,
    /// The whole array is protected.
    All,
}

impl BlockProtect {
    /// The first protected address of an array of `size` bytes (`size` when nothing
    /// is protected): writes are possible exactly in `[0, protected_from)`.
    pub const fn protected_from(self, size: u32) -> u32 {
        match self {
            BlockProtect::None => size,
            BlockProtect::UpperQuarter => size - size / 4,
            BlockProtect::UpperHalf => size / 2,
            BlockProtect::All => 0,
        }
    }
}
