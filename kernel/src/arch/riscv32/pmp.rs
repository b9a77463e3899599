//! The PMP hardware layer: writes a computed [`PmpImage`] to the 16 `pmpaddr` and 4
//! `pmpcfg` CSRs. It knows registers only; which regions a task gets, and how they
//! become entries, is decided elsewhere (`amber_core`, `crate::pmp`).
//!
//! A write touches only the CSRs that matter: the addresses of the image's own entries
//! (an entry that is off matches nothing, so what an address above the image's last
//! entry holds does not matter) and all four `pmpcfg` words (cheaper to write than to
//! decide which of them may differ), which turn every entry above the image's off.

use crate::pmp_layout::PmpImage;
use riscv::register::{
    pmpaddr0, pmpaddr1, pmpaddr10, pmpaddr11, pmpaddr12, pmpaddr13, pmpaddr14, pmpaddr15, pmpaddr2,
    pmpaddr3, pmpaddr4, pmpaddr5, pmpaddr6, pmpaddr7, pmpaddr8, pmpaddr9, pmpcfg0, pmpcfg1,
    pmpcfg2, pmpcfg3,
};

/// Replaces the whole PMP configuration with `img`.
pub fn write(img: &PmpImage) {
    let a = &img.addr;
    let c = &img.cfg;
    // Writes the listed `pmpaddr` registers, each from its entry of `a`.
    macro_rules! addrs {
        ($($reg:ident = $i:literal),*) => {{ $( $reg::write(a[$i] as usize); )* }};
    }
    // SAFETY: no entry is ever locked (bit 7 is never set by `PmpImage`), so M-mode
    // keeps full access whatever is written and in whatever order (the kernel never
    // sets mstatus.MPRV), and U-mode runs only after the last write, when the PMP holds
    // exactly `img`: its addresses up to its last entry and all of its cfg words.
    unsafe {
        // One arm per region count (a jump, not a test per region).
        match img.regions {
            0 => {}
            1 => addrs!(pmpaddr0 = 0, pmpaddr1 = 1),
            2 => addrs!(pmpaddr0 = 0, pmpaddr1 = 1, pmpaddr2 = 2, pmpaddr3 = 3),
            3 => addrs!(
                pmpaddr0 = 0,
                pmpaddr1 = 1,
                pmpaddr2 = 2,
                pmpaddr3 = 3,
                pmpaddr4 = 4,
                pmpaddr5 = 5
            ),
            4 => addrs!(
                pmpaddr0 = 0,
                pmpaddr1 = 1,
                pmpaddr2 = 2,
                pmpaddr3 = 3,
                pmpaddr4 = 4,
                pmpaddr5 = 5,
                pmpaddr6 = 6,
                pmpaddr7 = 7
            ),
            5 => addrs!(
                pmpaddr0 = 0,
                pmpaddr1 = 1,
                pmpaddr2 = 2,
                pmpaddr3 = 3,
                pmpaddr4 = 4,
                pmpaddr5 = 5,
                pmpaddr6 = 6,
                pmpaddr7 = 7,
                pmpaddr8 = 8,
                pmpaddr9 = 9
            ),
            6 => addrs!(
                pmpaddr0 = 0,
                pmpaddr1 = 1,
                pmpaddr2 = 2,
                pmpaddr3 = 3,
                pmpaddr4 = 4,
                pmpaddr5 = 5,
                pmpaddr6 = 6,
                pmpaddr7 = 7,
                pmpaddr8 = 8,
                pmpaddr9 = 9,
                pmpaddr10 = 10,
                pmpaddr11 = 11
            ),
            7 => addrs!(
                pmpaddr0 = 0,
                pmpaddr1 = 1,
                pmpaddr2 = 2,
                pmpaddr3 = 3,
                pmpaddr4 = 4,
                pmpaddr5 = 5,
                pmpaddr6 = 6,
                pmpaddr7 = 7,
                pmpaddr8 = 8,
                pmpaddr9 = 9,
                pmpaddr10 = 10,
                pmpaddr11 = 11,
                pmpaddr12 = 12,
                pmpaddr13 = 13
            ),
            _ => addrs!(
                pmpaddr0 = 0,
                pmpaddr1 = 1,
                pmpaddr2 = 2,
                pmpaddr3 = 3,
                pmpaddr4 = 4,
                pmpaddr5 = 5,
                pmpaddr6 = 6,
                pmpaddr7 = 7,
                pmpaddr8 = 8,
                pmpaddr9 = 9,
                pmpaddr10 = 10,
                pmpaddr11 = 11,
                pmpaddr12 = 12,
                pmpaddr13 = 13,
                pmpaddr14 = 14,
                pmpaddr15 = 15
            ),
        }
        pmpcfg0::write(c[0] as usize);
        pmpcfg1::write(c[1] as usize);
        pmpcfg2::write(c[2] as usize);
        pmpcfg3::write(c[3] as usize);
    }
}
