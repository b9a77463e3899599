//! Which FRAM part is on the bus: its size and how many address bytes it takes.
//!
//! A [`Part`] is validated when it is made, so an impossible part (a 2-byte-address
//! chip larger than 64 KiB, a size that is not a power of two) cannot exist, and the
//! driver and the simulation may rely on `size` being addressable and wrap-around
//! being a mask. This file must never touch the bus.

use core::fmt;

/// How many address bytes follow a READ or WRITE opcode, most significant first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressWidth {
    /// Two bytes: parts up to 512 Kbit (64 KiB), e.g. MB85RS64V, MB85RS256B.
    Two,
    /// Three bytes: the Mbit parts, e.g. MB85RS1MT, MB85RS2MT, MB85RS4MT.
    Three,
}

impl AddressWidth {
    /// Number of address bytes on the wire.
    pub const fn bytes(self) -> usize {
        match self {
            AddressWidth::Two => 2,
            AddressWidth::Three => 3,
        }
    }

    /// The largest array these address bytes can reach, in bytes.
    pub const fn max_size(self) -> u32 {
        1 << (8 * self.bytes())
    }
}

/// Why a [`Part`] description was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartError {
    /// A part of zero bytes stores nothing.
    ZeroSize,
    /// FRAM arrays are powers of two in size, and address wrap-around relies on it.
    SizeNotPowerOfTwo { size: u32 },
    /// The address bytes cannot reach the whole array.
    TooLargeForAddressWidth {
        size: u32,
        width: AddressWidth,
        max: u32,
    },
}

impl fmt::Display for PartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PartError::ZeroSize => f.write_str("an FRAM part cannot have zero bytes"),
            PartError::SizeNotPowerOfTwo { size } => {
                write!(f, "FRAM size {size} bytes is not a power of two")
            }
            PartError::TooLargeForAddressWidth { size, width, max } => write!(
                f,
                "an FRAM of {size} bytes cannot be reached with {} address bytes (at most {max} bytes)",
                width.bytes()
            ),
        }
    }
}

/// An FRAM part: `size` bytes reached with `width` address bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    size: u32,
    width: AddressWidth,
}

impl Part {
    /// MB85RS64V: 64 Kbit (8 KiB), 2-byte addresses.
    pub const MB85RS64V: Part = Part::known(8 * 1024, AddressWidth::Two);
    /// MB85RS256B: 256 Kbit (32 KiB), 2-byte addresses.
    pub const MB85RS256B: Part = Part::known(32 * 1024, AddressWidth::Two);
    /// MB85RS1MT: 1 Mbit (128 KiB), 3-byte addresses.
    pub const MB85RS1MT: Part = Part::known(128 * 1024, AddressWidth::Three);
    /// MB85RS2MT: 2 Mbit (256 KiB), 3-byte addresses.
    pub const MB85RS2MT: Part = Part::known(256 * 1024, AddressWidth::Three);
    /// MB85RS4MT: 4 Mbit (512 KiB), 3-byte addresses.
    pub const MB85RS4MT: Part = Part::known(512 * 1024, AddressWidth::Three);

    /// A part of `size` bytes with `width` address bytes, if such a part can exist.
    pub const fn new(size: u32, width: AddressWidth) -> Result<Part, PartError> {
        if size == 0 {
            return Err(PartError::ZeroSize);
        }
        if !size.is_power_of_two() {
            return Err(PartError::SizeNotPowerOfTwo { size });
        }
        let max = width.max_size();
        if size > max {
            return Err(PartError::TooLargeForAddressWidth { size, width, max });
        }
        Ok(Part { size, width })
    }

    /// For the named constants: fails the build if one of them is invalid.
    const fn known(size: u32, width: AddressWidth) -> Part {
        match Part::new(size, width) {
            Ok(part) => part,
            Err(_) => panic!("invalid built-in FRAM part"),
        }
    }

    /// Size of the array in bytes.
    pub const fn size(self) -> u32 {
        self.size
    }

    /// Number of address bytes after READ and WRITE.
    pub const fn address_width(self) -> AddressWidth {
        self.width
    }

    /// The array address the chip uses for `address`: the chip ignores address bits
    /// above its size, and a transfer running past the last byte continues at 0.
    pub const fn wrap(self, address: u32) -> u32 {
        address & (self.size - 1)
    }

    /// The command header `opcode, address...` (most significant address byte
    /// first), in the first `1 + width` bytes of the returned buffer.
    pub fn header(self, opcode: u8, address: u32) -> ([u8; 4], usize) {
        let a = address.to_be_bytes();
        match self.width {
            AddressWidth::Two => ([opcode, a[2], a[3], 0], 3),
            AddressWidth::Three => ([opcode, a[1], a[2], a[3]], 4),
        }
    }
}
