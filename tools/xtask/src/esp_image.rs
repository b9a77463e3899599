//! The ESP32-C3 flash image the ROM loader boots from flash offset 0, written as
//! esptool documents its format ("Firmware Image Format"): an 8-byte header (magic
//! 0xE9, segment count, flash mode, flash size and frequency, entry address), a
//! 16-byte extended header (WP pin 0xEE = none, pin drive 0, chip id 5 = ESP32-C3,
//! chip revisions 0..=any, hash-appended flag 1), each segment as load address, length
//! and bytes (length padded to 4), zero padding to one byte short of a multiple of 16,
//! the XOR of every segment byte seeded with 0xEF, and the SHA-256 of everything before
//! it. Only RAM segments (a RAM-only image, as Tock boots the C3): no second-stage
//! bootloader, so the ROM leaves the PMP unlocked for the kernel. Every segment must
//! lie in SRAM1 through one of its aliases, below the ROM's own data, and no two may
//! overlap in the physical SRAM. Host code; it never reads the board's registers.

use object::elf::PT_LOAD;
use object::read::elf::{ElfFile32, ProgramHeader};
use object::Endianness;
use sha2::{Digest, Sha256};

pub const MAGIC: u8 = 0xE9;
pub const CHIP_ID_ESP32C3: u16 = 5;
pub const CHECKSUM_SEED: u8 = 0xEF;
/// Flash mode DIO; 4 MB flash at 40 MHz (the ROM reads at its own rate anyway).
const FLASH_MODE_DIO: u8 = 2;
const FLASH_4MB_40MHZ: u8 = 0x20;
const WP_PIN_NONE: u8 = 0xEE;

/// SRAM1 on the data bus, and what the instruction bus adds to reach the same byte.
pub const DRAM: (u32, u32) = (0x3FC8_0000, 0x3FCE_0000);
pub const IRAM_ALIAS: u32 = 0x0070_0000;
/// The ROM loader's stack and data, the margin esp-idf keeps under them, and the end
/// of what the ROM loader may place (the board's map says why).
pub use amber_kernel::board::esp32c3::map::{LOADED_END, ROM_DATA_START, ROM_STACK_MARGIN};

/// A load segment: where it goes and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub addr: u32,
    pub data: Vec<u8>,
}

/// The data-bus address range a segment fills, or why it may not be loaded.
fn physical(s: &Segment) -> Result<(u32, u32), String> {
    let len = s.data.len() as u32;
    let (lo, hi) = DRAM;
    let (base, bus) = if s.addr >= lo + IRAM_ALIAS && s.addr < hi + IRAM_ALIAS {
        (s.addr - IRAM_ALIAS, "instruction")
    } else if s.addr >= lo && s.addr < hi {
        (s.addr, "data")
    } else {
        return Err(format!(
            "segment at {:#010x} ({len} bytes) is in neither SRAM1 alias \
             ({lo:#010x}..{hi:#010x} or {:#010x}..{:#010x})",
            s.addr,
            lo + IRAM_ALIAS,
            hi + IRAM_ALIAS
        ));
    };
    let end = base as u64 + len as u64;
    if end > LOADED_END as u64 {
        return Err(format!(
            "segment at {:#010x} ({bus} bus, {len} bytes) ends {} bytes past {LOADED_END:#010x}: the \
             ROM loader's stack lies below {ROM_DATA_START:#010x}, and esp-idf keeps \
             {ROM_STACK_MARGIN:#x} bytes free under it",
            s.addr,
            end - LOADED_END as u64
        ));
    }
    Ok((base, end as u32))
}

/// Checks each segment's place and that no two share physical SRAM.
pub fn check(segments: &[Segment]) -> Result<(), String> {
    let mut spans = segments
        .iter()
        .map(|s| physical(s).map(|p| (p, s.addr)))
        .collect::<Result<Vec<_>, _>>()?;
    spans.sort();
    for w in spans.windows(2) {
        let (((_, end), a), ((base, _), b)) = (w[0], w[1]);
        if base < end {
            return Err(format!(
                "segments at {a:#010x} and {b:#010x} overlap in SRAM (physical {base:#010x}..{end:#010x})"
            ));
        }
    }
    Ok(())
}

/// The image for `entry` (an instruction-bus address) and `segments`.
pub fn write(entry: u32, segments: &[Segment]) -> Result<Vec<u8>, String> {
    check(segments)?;
    if !(DRAM.0 + IRAM_ALIAS..DRAM.1 + IRAM_ALIAS).contains(&entry) {
        return Err(format!("entry {entry:#010x} is not on the instruction bus"));
    }
    let count = u8::try_from(segments.len())
        .ok()
        .filter(|&n| n <= 16)
        .ok_or_else(|| format!("{} segments: the ROM loads at most 16", segments.len()))?;
    let mut out = vec![MAGIC, count, FLASH_MODE_DIO, FLASH_4MB_40MHZ];
    out.extend_from_slice(&entry.to_le_bytes());
    out.extend_from_slice(&[WP_PIN_NONE, 0, 0, 0]);
    out.extend_from_slice(&CHIP_ID_ESP32C3.to_le_bytes());
    out.push(0); // min_chip_rev (deprecated)
    out.extend_from_slice(&0u16.to_le_bytes()); // min_chip_rev_full
    out.extend_from_slice(&0xFFFFu16.to_le_bytes()); // max_chip_rev_full: any
    out.extend_from_slice(&[0; 4]);
    out.push(1); // hash appended
    let mut checksum = CHECKSUM_SEED;
    for s in segments {
        let mut data = s.data.clone();
        data.resize(data.len().next_multiple_of(4), 0);
        out.extend_from_slice(&s.addr.to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        checksum = data.iter().fold(checksum, |c, b| c ^ b);
        out.extend_from_slice(&data);
    }
    out.resize(out.len() + 15 - out.len() % 16, 0);
    out.push(checksum);
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    Ok(out)
}

/// The loadable segments and entry of a kernel ELF (sections marked NOLOAD, such as
/// `.bss` and the stack, carry no bytes and are left out).
#[allow(dead_code)] // used by the board build that follows
pub fn from_elf(elf: &[u8]) -> Result<(u32, Vec<Segment>), String> {
    let file = ElfFile32::<Endianness>::parse(elf).map_err(|e| format!("not a 32-bit ELF: {e}"))?;
    let endian = file.endian();
    let mut segments = Vec::new();
    for ph in file.elf_program_headers() {
        if ph.p_type(endian) != PT_LOAD || ph.p_filesz(endian) == 0 {
            continue;
        }
        let data = ph
            .data(endian, elf)
            .map_err(|_| "a segment's bytes are outside the file".to_owned())?;
        segments.push(Segment {
            addr: ph.p_paddr(endian),
            data: data.to_vec(),
        });
    }
    let entry = file.elf_header().e_entry.get(endian);
    Ok((entry, segments))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(addr: u32, data: &[u8]) -> Segment {
        Segment {
            addr,
            data: data.to_vec(),
        }
    }

    #[test]
    fn the_header_checksum_and_digest_follow_the_format() {
        let img = write(
            0x4038_0000,
            &[
                seg(0x4038_0000, &[1, 2, 3, 4, 5]),
                seg(0x3FC9_0000, &[0xAA; 8]),
            ],
        )
        .unwrap();
        assert_eq!(&img[..8], &[0xE9, 2, 2, 0x20, 0x00, 0x00, 0x38, 0x40]);
        assert_eq!(img[8], 0xEE);
        assert_eq!(&img[12..14], &[5, 0], "chip id 5");
        assert_eq!(img[23], 1, "hash appended");
        // First segment: address, length padded to 8, bytes.
        assert_eq!(&img[24..32], &[0x00, 0x00, 0x38, 0x40, 8, 0, 0, 0]);
        assert_eq!(&img[32..40], &[1, 2, 3, 4, 5, 0, 0, 0]);
        assert_eq!(&img[40..48], &[0x00, 0x00, 0xC9, 0x3F, 8, 0, 0, 0]);
        let body = img.len() - 32;
        assert_eq!(body % 16, 0);
        assert_eq!(
            img[body - 1],
            0xEF ^ 1 ^ 2 ^ 3 ^ 4 ^ 5,
            "0xAA eight times cancels out"
        );
        assert_eq!(&img[body..], Sha256::digest(&img[..body]).as_slice());
    }

    #[test]
    fn segments_outside_sram_or_into_rom_data_are_refused_by_how_much() {
        let e = write(0x4038_0000, &[seg(0x4200_0000, &[0; 4])]).unwrap_err();
        assert!(e.contains("neither SRAM1 alias"), "{e}");
        let e = write(0x4038_0000, &[seg(0x3FCD_A700, &[0; 32])]).unwrap_err();
        assert!(
            e.contains("ends 16 bytes past 0x3fcda710") && e.contains("0x2000 bytes free"),
            "{e}"
        );
        write(0x4038_0000, &[seg(0x3FCD_A6F0, &[0; 32])]).unwrap();
        let e = write(0x4038_0000, &[seg(0x403D_A700, &[0; 32])]).unwrap_err();
        assert!(
            e.contains("instruction bus") && e.contains("16 bytes past"),
            "{e}"
        );
        let e = write(0x3FC8_0000, &[seg(0x3FC8_0000, &[0; 4])]).unwrap_err();
        assert!(e.contains("not on the instruction bus"), "{e}");
    }

    #[test]
    fn code_and_data_may_not_share_sram_through_the_two_aliases() {
        // 0x4038_1000 on the instruction bus is 0x3FC8_1000 on the data bus.
        let e = check(&[seg(0x4038_0000, &[0; 0x1004]), seg(0x3FC8_1000, &[0; 4])]).unwrap_err();
        assert!(e.contains("overlap"), "{e}");
        check(&[seg(0x4038_0000, &[0; 0x1000]), seg(0x3FC8_1000, &[0; 4])]).unwrap();
    }
}
