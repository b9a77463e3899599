//! The checksum of every copy: CRC-32/ISO-HDLC, the same function as
//! `amber_format::crc32`, computed here 16 bytes at a time ("slice-by-16") because it
//! is the hot loop of a checkpoint.
//!
//! Why 16 tables: on RV32IMC the one-table CRC costs about 10 instructions per byte;
//! with 16 tables of 256 words each input byte costs one table load and an exclusive
//! or, about 6 instructions per byte. The tables are 16 KiB of read-only data,
//! computed at compile time. The ESP32-C3 runs from its 393 KB of SRAM, which holds
//! the kernel, the tasks and the app's memory, so its kernel takes 4 tables
//! ("slice-by-4", feature `small-checksum`, 4 KiB): 12 KiB less for a few instructions
//! more per 16 bytes. Only this file chooses the implementation; the value is the same
//! CRC either way, and a test holds each to `amber_format::crc32`.

/// The reflected CRC-32/ISO-HDLC polynomial.
const POLY: u32 = 0xEDB8_8320;

/// Bytes taken per step, one table each.
const SLICES: usize = if cfg!(feature = "small-checksum") {
    4
} else {
    16
};

/// `TABLES[k][b]`: the CRC state contribution of byte `b` followed by `k` zero bytes.
static TABLES: [[u32; 256]; SLICES] = tables();

const fn tables() -> [[u32; 256]; SLICES] {
    let mut t = [[0u32; 256]; SLICES];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut k = 1;
        while k < SLICES {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            k += 1;
        }
        i += 1;
    }
    t
}

/// A running checksum.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Digest {
    state: u32,
}

impl Digest {
    pub fn new() -> Digest {
        Digest { state: !0 }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        let t = &TABLES;
        let mut s = self.state;
        let (blocks, rest) = bytes.as_chunks::<SLICES>();
        #[cfg(feature = "small-checksum")]
        for c in blocks {
            let x = s ^ u32::from_le_bytes(*c);
            s = t[3][(x & 0xFF) as usize]
                ^ t[2][((x >> 8) & 0xFF) as usize]
                ^ t[1][((x >> 16) & 0xFF) as usize]
                ^ t[0][(x >> 24) as usize];
        }
        #[cfg(not(feature = "small-checksum"))]
        for c in blocks {
            let x = s ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            s = t[15][(x & 0xFF) as usize]
                ^ t[14][((x >> 8) & 0xFF) as usize]
                ^ t[13][((x >> 16) & 0xFF) as usize]
                ^ t[12][(x >> 24) as usize]
                ^ t[11][c[4] as usize]
                ^ t[10][c[5] as usize]
                ^ t[9][c[6] as usize]
                ^ t[8][c[7] as usize]
                ^ t[7][c[8] as usize]
                ^ t[6][c[9] as usize]
                ^ t[5][c[10] as usize]
                ^ t[4][c[11] as usize]
                ^ t[3][c[12] as usize]
                ^ t[2][c[13] as usize]
                ^ t[1][c[14] as usize]
                ^ t[0][c[15] as usize];
        }
        for &b in rest {
            s = (s >> 8) ^ t[0][((s ^ b as u32) & 0xFF) as usize];
        }
        self.state = s;
    }

    pub fn finalize(self) -> u32 {
        !self.state
    }
}

#[cfg(test)]
mod tests {
    use super::Digest;
    use alloc::vec::Vec;

    fn crc(b: &[u8]) -> u32 {
        let mut d = Digest::new();
        d.update(b);
        d.finalize()
    }

    #[test]
    fn the_fast_crc_is_amber_formats_crc_on_every_length_and_split() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + i / 5) as u8).collect();
        for len in 0..data.len() {
            assert_eq!(
                crc(&data[..len]),
                amber_format::crc32(&data[..len]),
                "length {len}"
            );
        }
        for split in 0..40 {
            let mut d = Digest::new();
            d.update(&data[..split]);
            d.update(&data[split..]);
            assert_eq!(d.finalize(), amber_format::crc32(&data), "split at {split}");
        }
        assert_eq!(crc(b"123456789"), 0xCBF4_3926);
    }
}
