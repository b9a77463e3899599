//! PMP layout: turns the regions a task may touch into the values of the 16 `pmpaddr`
//! and 4 `pmpcfg` registers (RV32), in top-of-range (TOR) mode.
//!
//! Portable and host-tested; `arch/riscv32` only writes the computed values to CSRs.
//! A [`TorRegion`] is validated when it is made (4-byte aligned, non-empty, no wrap,
//! no write without read), so an invalid region cannot reach the hardware. Each region
//! takes two entries (bottom, then top with the permissions), so at most eight regions
//! fit. No entry is ever locked: M-mode keeps full access, and U-mode reaches only
//! what these entries allow.

use core::fmt;

/// PMP entries this layout fills (the ESP32-C3 and QEMU `virt` have 16; a board's
/// memory map says how many it has).
pub const PMP_ENTRIES: usize = 16;
/// Regions a task may have: the kernel's limit, which must fit at two entries each.
pub const MAX_REGIONS: usize = amber_core::MAX_REGIONS;
const _: () = assert!(2 * MAX_REGIONS <= PMP_ENTRIES);

const CFG_R: u8 = 1 << 0;
const CFG_W: u8 = 1 << 1;
const CFG_X: u8 = 1 << 2;
const CFG_TOR: u8 = 1 << 3;

/// Why a region cannot be expressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmpError {
    /// Base or length is not a multiple of 4 bytes (the PMP granule).
    Misaligned { base: u32, len: u32 },
    /// The region is empty or runs past 4 GiB.
    BadSize { base: u32, len: u32 },
    /// Write without read is a reserved PMP encoding.
    WriteWithoutRead,
    /// More regions than PMP entries can hold.
    TooManyRegions { wanted: usize },
}

impl fmt::Display for PmpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PmpError::Misaligned { base, len } => {
                write!(f, "region {base:#x}+{len:#x} is not 4-byte aligned")
            }
            PmpError::BadSize { base, len } => {
                write!(f, "region {base:#x}+{len:#x} is empty or wraps around")
            }
            PmpError::WriteWithoutRead => {
                f.write_str("a region may not be writable but unreadable")
            }
            PmpError::TooManyRegions { wanted } => write!(
                f,
                "{wanted} regions do not fit the {MAX_REGIONS} that {PMP_ENTRIES} PMP entries hold"
            ),
        }
    }
}

/// A validated top-of-range region: `[base, end)` with its permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TorRegion {
    base: u32,
    end: u32,
    perm: u8,
}

impl TorRegion {
    /// A region of `len` bytes at `base`, readable/writable/executable as given.
    pub fn new(base: u32, len: u32, read: bool, write: bool, exec: bool) -> Result<Self, PmpError> {
        if !base.is_multiple_of(4) || !len.is_multiple_of(4) {
            return Err(PmpError::Misaligned { base, len });
        }
        let end = match base.checked_add(len) {
            Some(end) if len > 0 => end,
            // A region ending exactly at 4 GiB cannot be named by a 32-bit TOR top.
            _ => return Err(PmpError::BadSize { base, len }),
        };
        if write && !read {
            return Err(PmpError::WriteWithoutRead);
        }
        let perm = (read as u8 * CFG_R) | (write as u8 * CFG_W) | (exec as u8 * CFG_X);
        Ok(TorRegion { base, end, perm })
    }

    pub fn base(&self) -> u32 {
        self.base
    }

    pub fn end(&self) -> u32 {
        self.end
    }
}

/// The register values for one PMP configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmpImage {
    /// `pmpaddr0..15`: addresses shifted right by 2.
    pub addr: [u32; PMP_ENTRIES],
    /// `pmpcfg0..3`: four 8-bit entry configurations each, entry 0 in the low byte.
    pub cfg: [u32; PMP_ENTRIES / 4],
    /// Regions laid out: entries `2 * regions` and above are off (cfg 0, address 0).
    pub regions: u8,
}

impl PmpImage {
    /// No region: U-mode can access nothing.
    pub const EMPTY: PmpImage = PmpImage {
        addr: [0; PMP_ENTRIES],
        cfg: [0; PMP_ENTRIES / 4],
        regions: 0,
    };

    /// Lays out `regions`: region k uses entry 2k (its base, turned off) and entry 2k+1
    /// (its top, TOR with the permissions). A region that starts where the one before
    /// it ends, with the same permissions, extends it (the pages of a task's RAM, when
    /// they are all clean or all dirty, take one region, and a task switch writes
    /// fewer entries). Unused entries stay off.
    pub fn layout(regions: &[TorRegion]) -> Result<PmpImage, PmpError> {
        if regions.len() > MAX_REGIONS {
            return Err(PmpError::TooManyRegions {
                wanted: regions.len(),
            });
        }
        let mut img = PmpImage::EMPTY;
        let mut k: usize = 0;
        for r in regions {
            let last = k.checked_sub(1).map(|l| 2 * l + 1);
            match last {
                Some(top) if img.addr[top] == r.base >> 2 && img.perm(top) == r.perm => {
                    img.addr[top] = r.end >> 2;
                }
                _ => {
                    img.addr[2 * k] = r.base >> 2;
                    img.addr[2 * k + 1] = r.end >> 2;
                    let top = 2 * k + 1;
                    img.cfg[top / 4] |= ((CFG_TOR | r.perm) as u32) << (8 * (top % 4));
                    k += 1;
                }
            }
        }
        // In range: at most MAX_REGIONS (8) regions, checked above.
        img.regions = k as u8;
        Ok(img)
    }

    /// The permission bits of entry `i`.
    fn perm(&self, i: usize) -> u8 {
        (self.cfg[i / 4] >> (8 * (i % 4))) as u8 & (CFG_R | CFG_W | CFG_X)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl PmpImage {
        /// Whether U-mode may perform an access of `len` bytes at `addr` with the given
        /// permission bits, by the PMP rules (lowest matching entry decides; no match
        /// denies). Used by tests to check a layout means what it should.
        pub fn allows(&self, addr: u32, len: u32, want: u8) -> bool {
            let end = addr as u64 + len as u64;
            for i in 0..PMP_ENTRIES {
                let cfg = (self.cfg[i / 4] >> (8 * (i % 4))) as u8;
                if cfg & 0b1_1000 != CFG_TOR {
                    continue;
                }
                let lo = if i == 0 {
                    0
                } else {
                    (self.addr[i - 1] as u64) << 2
                };
                let hi = (self.addr[i] as u64) << 2;
                if (addr as u64) < hi && end > lo {
                    // Matching requires the whole access inside the entry.
                    return addr as u64 >= lo && end <= hi && cfg & want == want;
                }
            }
            false
        }
    }

    /// Permission bits for [`PmpImage::allows`].
    pub mod want {
        pub const READ: u8 = super::super::CFG_R;
        pub const WRITE: u8 = super::super::CFG_W;
        pub const EXEC: u8 = super::super::CFG_X;
    }

    #[test]
    fn adjacent_regions_with_the_same_permissions_take_one_region_and_allow_the_same() {
        let page = |i: u32, write: bool| {
            TorRegion::new(0x2000_0000 + 0x400 * i, 0x400, true, write, false).unwrap()
        };
        let code = TorRegion::new(0x1000_0000, 0x1000, true, false, true).unwrap();
        let all_clean = [
            code,
            page(0, false),
            page(1, false),
            page(2, false),
            page(3, false),
        ];
        let mixed = [
            code,
            page(0, true),
            page(1, false),
            page(2, false),
            page(3, true),
        ];
        let apart = [code, page(0, true), page(2, true)];
        for (regions, expected) in [(&all_clean[..], 2), (&mixed[..], 4), (&apart[..], 3)] {
            let img = PmpImage::layout(regions).unwrap();
            assert_eq!(img.regions, expected, "{regions:?}");
            for addr in (0x0FFF_FF00..0x1000_1100)
                .chain(0x1FFF_FF00..0x2000_1100)
                .step_by(4)
            {
                for want in [want::READ, want::WRITE, want::EXEC] {
                    let one = regions
                        .iter()
                        .any(|r| r.base <= addr && addr + 4 <= r.end && r.perm & want == want);
                    assert_eq!(img.allows(addr, 4, want), one, "{addr:#x} {want}");
                }
            }
        }
    }

    #[test]
    fn invalid_regions_cannot_be_made() {
        assert!(matches!(
            TorRegion::new(2, 8, true, false, false),
            Err(PmpError::Misaligned { .. })
        ));
        assert!(matches!(
            TorRegion::new(0, 0, true, false, false),
            Err(PmpError::BadSize { .. })
        ));
        assert!(matches!(
            TorRegion::new(0xFFFF_FFF0, 0x10, true, false, false),
            Err(PmpError::BadSize { .. })
        ));
        assert_eq!(
            TorRegion::new(0, 4, false, true, false),
            Err(PmpError::WriteWithoutRead)
        );
    }

    #[test]
    fn a_layout_allows_exactly_its_regions_with_their_permissions() {
        let code = TorRegion::new(0x2000_0000, 0x1000, true, false, true).unwrap();
        let data = TorRegion::new(0x2800_0000, 0x800, true, true, false).unwrap();
        let img = PmpImage::layout(&[code, data]).unwrap();
        assert!(img.allows(0x2000_0000, 4, want::EXEC | want::READ));
        assert!(
            !img.allows(0x2000_0000, 4, want::WRITE),
            "code must not be writable"
        );
        assert!(img.allows(0x2800_07FC, 4, want::WRITE));
        assert!(
            !img.allows(0x2800_07FE, 4, want::READ),
            "an access straddling the end is denied"
        );
        assert!(
            !img.allows(0x1FFF_FFFC, 4, want::READ),
            "memory outside every region is never reachable"
        );
        assert!(
            !img.allows(0x3000_0000, 1, want::READ),
            "nor is memory past them"
        );
    }

    #[test]
    fn more_than_eight_regions_are_refused() {
        let r = TorRegion::new(0, 4, true, false, false).unwrap();
        assert_eq!(
            PmpImage::layout(&[r; 9]),
            Err(PmpError::TooManyRegions { wanted: 9 })
        );
    }

    /// What the PMP holds after `new` is written over `old` the way `arch::pmp::write`
    /// does: only `2 * new.regions` addresses, and every cfg word.
    fn written_over(old: &PmpImage, new: &PmpImage) -> PmpImage {
        let mut held = *old;
        let n = 2 * usize::from(new.regions);
        held.addr[..n].copy_from_slice(&new.addr[..n]);
        held.cfg = new.cfg;
        held
    }

    #[test]
    fn writing_only_the_used_entries_allows_what_the_whole_image_allows() {
        let r = |base: u32, len: u32, write: bool| {
            TorRegion::new(base, len, true, write, false).unwrap()
        };
        let many: Vec<TorRegion> = (0..8)
            .map(|k| r(0x8000_0000 + k * 0x1000, 0x800, k % 2 == 0))
            .collect();
        let few = [r(0x8100_0000, 0x1000, true), r(0x8200_0000, 0x400, false)];
        let images = [
            PmpImage::layout(&many).unwrap(),
            PmpImage::layout(&few).unwrap(),
            PmpImage::layout(&many[..5]).unwrap(),
            PmpImage::layout(&few[..1]).unwrap(),
            PmpImage::EMPTY,
        ];
        let probes = (0x7FFF_F000u32..0x8201_0000).step_by(0x200);
        for old in &images {
            for new in &images {
                let held = written_over(old, new);
                assert_eq!(
                    held.cfg, new.cfg,
                    "every entry is configured as in the image"
                );
                for a in probes.clone() {
                    for want in [want::READ, want::WRITE] {
                        assert_eq!(
                            held.allows(a, 4, want),
                            new.allows(a, 4, want),
                            "{a:#x} after {} regions over {}",
                            new.regions,
                            old.regions
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_empty_layout_allows_nothing() {
        assert!(!PmpImage::EMPTY.allows(0, 4, want::READ));
    }
}
