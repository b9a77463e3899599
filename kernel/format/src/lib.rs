//! Amber's on-NVM formats: what the kernel writes to non-volatile memory, byte by byte.
//!
//! Every structure that reaches NVM is encoded and decoded here, next to a table of
//! its offsets, sizes and meaning, so that the kernel and the host tool `nvm-inspect`
//! read one definition. This crate is portable (tested on the host) and reaches NVM
//! only through `amber_nvm::Nvm`; it must never touch hardware or allocate.
//!
//! Device layout, format version 1:
//!
//! | offset   | size              | what                                            |
//! |----------|-------------------|-------------------------------------------------|
//! | 0x0000   | 64                | [`Superblock`]: magic, version, layout, CRC-32  |
//! | 0x0100   | 2 x 32            | boot record, two [`DualRecord`] slots           |
//! | 0x1000   | rest of device    | kernel area (checkpoints; later issues)         |
//!
//! All integers are little-endian. All checksums are CRC-32/ISO-HDLC (the zlib CRC).

#![cfg_attr(not(test), no_std)]

mod boot;
mod dual;
mod superblock;

pub use boot::{boot_record_slots, open, BootRecord, FormatPolicy, NvmHeader, OpenError, Opened};
pub use dual::{DualRecord, Newest};
pub use superblock::{Region, Superblock, SuperblockError, FORMAT_VERSION, MAGIC, SUPERBLOCK_LEN};

/// The checksum of every on-NVM structure.
pub(crate) const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// CRC-32/ISO-HDLC of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    CRC32.checksum(bytes)
}

/// Little-endian field access into a byte buffer; offsets are the tables' offsets.
pub(crate) fn get_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

pub(crate) fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

pub(crate) fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    #[test]
    fn crc32_is_the_zlib_crc() {
        // The standard check value of CRC-32/ISO-HDLC, so that other tools (Python's
        // zlib.crc32) can verify Amber images.
        assert_eq!(super::crc32(b"123456789"), 0xCBF4_3926);
    }
}
