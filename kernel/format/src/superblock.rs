//! The superblock: the first 64 bytes of an Amber NVM, saying what format the device
//! holds and where each area lies.
//!
//! It is written once, when a device is formatted, and only read after that. Decoding
//! must never accept bytes it cannot vouch for: a blank device, a foreign magic, an
//! unknown version, a failed checksum and an impossible layout are each their own error.

use crate::{crc32, get_u32, put_u32};
use core::fmt;

/// The first eight bytes of every Amber NVM.
pub const MAGIC: [u8; 8] = *b"AMBERNVM";
/// The format version this code reads and writes. Version 2 added the ring and FRAM
/// partitions; version 3 gives them to devices of 256 KiB to 1 MiB too (an ESP32-C3's
/// 512 KiB MB85RS4MT), whose version-2 images have none. Older images are refused by
/// name (there is no converter).
pub const FORMAT_VERSION: u32 = 3;
/// Encoded size of the superblock.
pub const SUPERBLOCK_LEN: usize = 64;

/// Where the boot record's two slots start.
const BOOT_RECORD_OFFSET: u32 = 0x100;
/// Where the kernel area starts; everything before it is the header area.
const KERNEL_AREA_OFFSET: u32 = 0x1000;
/// Devices of at least this size get a ring area and a FRAM partition.
const PARTITIONED_FROM: u32 = 256 << 10;
/// Devices of at least this size get the full ring area and a FRAM partition of up to
/// a quarter of them; smaller partitioned ones a ring of 1/32 and a partition of 1/8.
const LARGE_FROM: u32 = 1 << 20;
/// Size of the ring area (the SPI driver's eternal request ring) on a large device.
const RING_LEN: u32 = 64 << 10;
/// Largest FRAM partition: an MB85RS4MT (4 Mbit).
const FRAM_MAX: u32 = 512 << 10;

/// A byte range of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub offset: u32,
    pub len: u32,
}

impl Region {
    /// One past the last byte, or `None` when the region wraps around 4 GiB.
    pub fn end(&self) -> Option<u32> {
        self.offset.checked_add(self.len)
    }
}

/// The superblock, format version 3.
///
/// | offset | size | field                                                  |
/// |--------|------|--------------------------------------------------------|
/// | 0      | 8    | magic `"AMBERNVM"`                                     |
/// | 8      | 4    | format version (3)                                     |
/// | 12     | 4    | superblock length in bytes (64)                        |
/// | 16     | 4    | device size in bytes when formatted                    |
/// | 20     | 4    | boot record offset                                     |
/// | 24     | 4    | boot record length (both slots)                        |
/// | 28     | 4    | kernel area offset (checkpoints)                       |
/// | 32     | 4    | kernel area length                                     |
/// | 36     | 4    | ring area offset (eternal: never rolled back)          |
/// | 40     | 4    | ring area length (0 = none)                            |
/// | 44     | 4    | FRAM partition offset (the emulated SPI FRAM's array)  |
/// | 48     | 4    | FRAM partition length (0 = none; else a power of two)  |
/// | 52     | 8    | reserved, zero                                         |
/// | 60     | 4    | CRC-32 of bytes 0..60                                  |
///
/// The areas follow each other in this order, without overlap. A device of at least
/// 1 MiB gets a 64 KiB ring area and a FRAM partition of the largest power of two up to
/// 512 KiB that fits in a quarter of it, both at its end; one of 256 KiB up to 1 MiB a
/// ring area of 1/32 of it (rounded down to 256 bytes) and a FRAM partition of the
/// largest power of two in an eighth (a 512 KiB MB85RS4MT: 16 KiB and 64 KiB, the
/// kernel area 428 KiB); a smaller device has neither. The same bytes as version 2; the
/// version says which sizes are partitioned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    pub version: u32,
    pub nvm_size: u32,
    pub boot_record: Region,
    pub kernel_area: Region,
    pub ring_area: Region,
    pub fram_area: Region,
}

/// Why a superblock was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuperblockError {
    /// All bytes are 0x00 or all are 0xFF: the device was never formatted.
    Blank,
    /// The first eight bytes are not `"AMBERNVM"`: this is not an Amber NVM.
    BadMagic { found: [u8; 8] },
    /// An Amber NVM of a format this kernel does not read.
    UnsupportedVersion { found: u32 },
    /// The stored checksum does not match the bytes: the superblock is corrupt.
    BadChecksum { stored: u32, computed: u32 },
    /// The checksum is right but the layout is impossible (areas overlap, exceed the
    /// recorded size, or the recorded size differs from the device's).
    BadLayout { reason: &'static str },
    /// The device is too small to hold the header area and any kernel area.
    DeviceTooSmall { size: u32 },
}

impl fmt::Display for SuperblockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SuperblockError::Blank => f.write_str("the NVM is blank (never formatted)"),
            SuperblockError::BadMagic { found } => {
                write!(f, "the NVM does not start with the magic \"AMBERNVM\" (found ")?;
                for b in found {
                    write!(f, "{b:02x}")?;
                }
                f.write_str("): not an Amber NVM")
            }
            SuperblockError::UnsupportedVersion { found } => write!(
                f,
                "the NVM holds format v{found}, but this kernel reads only v{FORMAT_VERSION}"
            ),
            SuperblockError::BadChecksum { stored, computed } => write!(
                f,
                "the superblock checksum is wrong (stored {stored:#010x}, computed {computed:#010x}): the superblock is corrupt"
            ),
            SuperblockError::BadLayout { reason } => {
                write!(f, "the superblock describes an impossible layout: {reason}")
            }
            SuperblockError::DeviceTooSmall { size } => write!(
                f,
                "the NVM of {size} bytes is too small (at least {} bytes are needed)",
                KERNEL_AREA_OFFSET as usize * 2
            ),
        }
    }
}

impl Superblock {
    /// The layout for a device of `nvm_size` bytes.
    pub fn for_device(nvm_size: u32) -> Result<Self, SuperblockError> {
        if nvm_size < KERNEL_AREA_OFFSET * 2 {
            return Err(SuperblockError::DeviceTooSmall { size: nvm_size });
        }
        let power_of_two_below = |n: u32| 1 << (31 - n.leading_zeros());
        let (ring_len, fram_len) = if nvm_size >= LARGE_FROM {
            (RING_LEN, FRAM_MAX.min(power_of_two_below(nvm_size / 4)))
        } else if nvm_size >= PARTITIONED_FROM {
            (nvm_size / 32 / 256 * 256, power_of_two_below(nvm_size / 8))
        } else {
            (0, 0)
        };
        let fram_offset = nvm_size - fram_len;
        let ring_offset = fram_offset - ring_len;
        Ok(Superblock {
            version: FORMAT_VERSION,
            nvm_size,
            boot_record: Region {
                offset: BOOT_RECORD_OFFSET,
                len: 2 * crate::boot::BOOT_SLOT_LEN as u32,
            },
            kernel_area: Region {
                offset: KERNEL_AREA_OFFSET,
                len: ring_offset - KERNEL_AREA_OFFSET,
            },
            ring_area: Region {
                offset: ring_offset,
                len: ring_len,
            },
            fram_area: Region {
                offset: fram_offset,
                len: fram_len,
            },
        })
    }

    /// The 64 bytes that represent this superblock on NVM.
    pub fn encode(&self) -> [u8; SUPERBLOCK_LEN] {
        let mut b = [0u8; SUPERBLOCK_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        put_u32(&mut b, 8, self.version);
        put_u32(&mut b, 12, SUPERBLOCK_LEN as u32);
        put_u32(&mut b, 16, self.nvm_size);
        put_u32(&mut b, 20, self.boot_record.offset);
        put_u32(&mut b, 24, self.boot_record.len);
        put_u32(&mut b, 28, self.kernel_area.offset);
        put_u32(&mut b, 32, self.kernel_area.len);
        put_u32(&mut b, 36, self.ring_area.offset);
        put_u32(&mut b, 40, self.ring_area.len);
        put_u32(&mut b, 44, self.fram_area.offset);
        put_u32(&mut b, 48, self.fram_area.len);
        let crc = crc32(&b[..60]);
        put_u32(&mut b, 60, crc);
        b
    }

    /// Decodes and validates a superblock read from a device of `device_size` bytes.
    pub fn decode(b: &[u8; SUPERBLOCK_LEN], device_size: u32) -> Result<Self, SuperblockError> {
        if b.iter().all(|&x| x == 0) || b.iter().all(|&x| x == 0xFF) {
            return Err(SuperblockError::Blank);
        }
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&b[0..8]);
        if magic != MAGIC {
            return Err(SuperblockError::BadMagic { found: magic });
        }
        let version = get_u32(b, 8);
        if version != FORMAT_VERSION {
            return Err(SuperblockError::UnsupportedVersion { found: version });
        }
        let stored = get_u32(b, 60);
        let computed = crc32(&b[..60]);
        if stored != computed {
            return Err(SuperblockError::BadChecksum { stored, computed });
        }
        let region = |at| Region {
            offset: get_u32(b, at),
            len: get_u32(b, at + 4),
        };
        let sb = Superblock {
            version,
            nvm_size: get_u32(b, 16),
            boot_record: region(20),
            kernel_area: region(28),
            ring_area: region(36),
            fram_area: region(44),
        };
        if b[52..60].iter().any(|&x| x != 0) {
            return Err(SuperblockError::BadLayout {
                reason: "reserved bytes are not zero",
            });
        }
        if get_u32(b, 12) != SUPERBLOCK_LEN as u32 {
            return Err(SuperblockError::BadLayout {
                reason: "superblock length is not 64",
            });
        }
        sb.check_layout(device_size)?;
        Ok(sb)
    }

    /// The layout invariants: areas in order, no overlap, all inside the device, and
    /// the device is as large as when it was formatted.
    fn check_layout(&self, device_size: u32) -> Result<(), SuperblockError> {
        let bad = |reason| Err(SuperblockError::BadLayout { reason });
        if self.nvm_size != device_size {
            return bad("the recorded NVM size differs from the device's size");
        }
        if self.boot_record.offset < SUPERBLOCK_LEN as u32
            || self.boot_record.len < 2 * crate::boot::BOOT_SLOT_LEN as u32
        {
            return bad("the boot record overlaps the superblock or is too short");
        }
        match self.boot_record.end() {
            Some(end) if end <= self.kernel_area.offset => {}
            _ => return bad("the boot record overlaps the kernel area"),
        }
        let in_order = [self.kernel_area, self.ring_area, self.fram_area]
            .windows(2)
            .all(|w| w[0].end().is_some_and(|end| end <= w[1].offset));
        if !in_order {
            return bad(
                "the kernel area, ring area and FRAM partition overlap or are out of order",
            );
        }
        if self.fram_area.len != 0 && !self.fram_area.len.is_power_of_two() {
            return bad("the FRAM partition is not a power of two");
        }
        match self.fram_area.end() {
            Some(end) if end <= self.nvm_size => Ok(()),
            _ => bad("an area runs past the end of the device"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: u32 = 4 << 20;

    #[test]
    fn a_superblock_decodes_to_what_was_encoded() {
        let sb = Superblock::for_device(SIZE).unwrap();
        assert_eq!(Superblock::decode(&sb.encode(), SIZE), Ok(sb));
    }

    #[test]
    fn every_single_bit_flip_is_rejected() {
        let good = Superblock::for_device(SIZE).unwrap().encode();
        for bit in 0..SUPERBLOCK_LEN * 8 {
            let mut b = good;
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(
                Superblock::decode(&b, SIZE).is_err(),
                "flipping bit {bit} went unnoticed: a corrupt superblock would be trusted"
            );
        }
    }

    #[test]
    fn blank_devices_are_told_apart_from_corrupt_ones() {
        assert_eq!(
            Superblock::decode(&[0; 64], SIZE),
            Err(SuperblockError::Blank)
        );
        assert_eq!(
            Superblock::decode(&[0xFF; 64], SIZE),
            Err(SuperblockError::Blank)
        );
        let mut junk = [0u8; 64];
        junk[5] = 1;
        assert!(matches!(
            Superblock::decode(&junk, SIZE),
            Err(SuperblockError::BadMagic { .. })
        ));
    }

    #[test]
    fn another_format_version_is_named_not_misread() {
        let mut b = Superblock::for_device(SIZE).unwrap().encode();
        put_u32(&mut b, 8, 7);
        let crc = crc32(&b[..60]);
        put_u32(&mut b, 60, crc);
        assert_eq!(
            Superblock::decode(&b, SIZE),
            Err(SuperblockError::UnsupportedVersion { found: 7 })
        );
    }

    #[test]
    fn a_device_that_changed_size_is_refused() {
        let b = Superblock::for_device(SIZE).unwrap().encode();
        assert!(matches!(
            Superblock::decode(&b, SIZE * 2),
            Err(SuperblockError::BadLayout { .. })
        ));
    }

    #[test]
    fn a_checksummed_but_impossible_layout_is_refused() {
        let mut sb = Superblock::for_device(SIZE).unwrap();
        sb.kernel_area.len += 1;
        assert!(matches!(
            Superblock::decode(&sb.encode(), SIZE),
            Err(SuperblockError::BadLayout { .. })
        ));
    }

    #[test]
    fn a_large_device_gets_a_ring_and_a_fram_partition_at_its_end() {
        let sb = Superblock::for_device(SIZE).unwrap();
        assert_eq!(
            sb.fram_area,
            Region {
                offset: SIZE - (512 << 10),
                len: 512 << 10
            }
        );
        assert_eq!(sb.ring_area.end(), Some(sb.fram_area.offset));
        assert_eq!(sb.kernel_area.end(), Some(sb.ring_area.offset));
        // user/tasks/spidrv and user/apps/spiring.toml name these ranges of a 4 MiB NVM.
        assert_eq!(
            sb.ring_area.offset, 0x37_0000,
            "the SPI driver's ring moved"
        );
        assert_eq!(
            sb.fram_area.offset, 0x38_0000,
            "the SPI driver's FRAM moved"
        );
        let small = Superblock::for_device(64 << 10).unwrap();
        assert_eq!((small.ring_area.len, small.fram_area.len), (0, 0));
        assert_eq!(small.kernel_area.end(), Some(64 << 10));
    }

    #[test]
    fn a_512_kib_fram_gets_a_16_kib_ring_and_a_64_kib_partition() {
        // The ESP32-C3's MB85RS4MT: tools/xtask places the heap app's SPI driver there.
        let sb = Superblock::for_device(512 << 10).unwrap();
        assert_eq!(
            sb.ring_area,
            Region {
                offset: 0x6_C000,
                len: 16 << 10
            }
        );
        assert_eq!(
            sb.fram_area,
            Region {
                offset: 0x7_0000,
                len: 64 << 10
            }
        );
        assert_eq!(sb.kernel_area.len, 428 << 10);
        assert_eq!(Superblock::decode(&sb.encode(), 512 << 10), Ok(sb));
    }

    #[test]
    fn a_version_2_image_is_refused_by_name() {
        let mut b = Superblock::for_device(512 << 10).unwrap().encode();
        put_u32(&mut b, 8, 2);
        let crc = crc32(&b[..60]);
        put_u32(&mut b, 60, crc);
        let e = Superblock::decode(&b, 512 << 10).unwrap_err();
        assert_eq!(e, SuperblockError::UnsupportedVersion { found: 2 });
        assert_eq!(
            e.to_string(),
            "the NVM holds format v2, but this kernel reads only v3"
        );
    }

    #[test]
    fn tiny_devices_cannot_be_formatted() {
        assert_eq!(
            Superblock::for_device(4096),
            Err(SuperblockError::DeviceTooSmall { size: 4096 })
        );
    }
}
