//! The PMP hardware layer: writes a computed [`PmpImage`] to the 16 `pmpaddr` and 4
//! `pmpcfg` CSRs. It knows registers only; which regions a task gets, and how they
//! become entries, is decided elsewhere (`amber_core`, `crate::pmp`).

use crate::pmp_layout::PmpImage;
use riscv::register::{
    pmpaddr0, pmpaddr1, pmpaddr10, pmpaddr11, pmpaddr12, pmpaddr13, pmpaddr14, pmpaddr15, pmpaddr2,
    pmpaddr3, pmpaddr4, pmpaddr5, pmpaddr6, pmpaddr7, pmpaddr8, pmpaddr9, pmpcfg0, pmpcfg1,
    pmpcfg2, pmpcfg3,
};

/// Replaces the whole PMP configuration with `img`.
pub fn write(img: &PmpImage) {
    let a = img.addr.map(|x| x as usize);
    let c = img.cfg.map(|x| x as usize);
    // SAFETY: no entry is ever locked (bit 7 is never set by `PmpImage`), so M-mode
    // keeps full access whatever is written; entries are turned off first so that no
    // half-written combination of old and new addresses is ever active.
    unsafe {
        pmpcfg0::write(0);
        pmpcfg1::write(0);
        pmpcfg2::write(0);
        pmpcfg3::write(0);
        pmpaddr0::write(a[0]);
        pmpaddr1::write(a[1]);
        pmpaddr2::write(a[2]);
        pmpaddr3::write(a[3]);
        pmpaddr4::write(a[4]);
        pmpaddr5::write(a[5]);
        pmpaddr6::write(a[6]);
        pmpaddr7::write(a[7]);
        pmpaddr8::write(a[8]);
        pmpaddr9::write(a[9]);
        pmpaddr10::write(a[10]);
        pmpaddr11::write(a[11]);
        pmpaddr12::write(a[12]);
        pmpaddr13::write(a[13]);
        pmpaddr14::write(a[14]);
        pmpaddr15::write(a[15]);
        pmpcfg0::write(c[0]);
        pmpcfg1::write(c[1]);
        pmpcfg2::write(c[2]);
        pmpcfg3::write(c[3]);
    }
}
