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
    // Region n (from 1) is the pair of entries 2n - 2 and 2n - 1: its pair is written
    // when the image has at least n regions.
    macro_rules! pairs {
        ($($n:literal: $lo:ident $hi:ident),*) => {$(
            if img.regions >= $n {
                $lo::write(a[2 * $n - 2] as usize);
                $hi::write(a[2 * $n - 1] as usize);
            }
        )*};
    }
    // SAFETY: no entry is ever locked (bit 7 is never set by `PmpImage`), so M-mode
    // keeps full access whatever is written and in whatever order (the kernel never
    // sets mstatus.MPRV), and U-mode runs only after the last write, when the PMP holds
    // exactly `img`: its addresses up to its last entry and all of its cfg words.
    unsafe {
        pairs!(
            1: pmpaddr0 pmpaddr1,
            2: pmpaddr2 pmpaddr3,
            3: pmpaddr4 pmpaddr5,
            4: pmpaddr6 pmpaddr7,
            5: pmpaddr8 pmpaddr9,
            6: pmpaddr10 pmpaddr11,
            7: pmpaddr12 pmpaddr13,
            8: pmpaddr14 pmpaddr15
        );
        pmpcfg0::write(c[0] as usize);
        pmpcfg1::write(c[1] as usize);
        pmpcfg2::write(c[2] as usize);
        pmpcfg3::write(c[3] as usize);
    }
}
