//! RV32IMC, machine mode: the reset entry (`entry`), the trap path (`trap`) and the
//! PMP registers (`pmp`). Nothing here may name a device address; `board/` does.

mod entry;
pub mod pmp;
pub mod trap;
