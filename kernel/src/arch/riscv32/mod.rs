//! RV32IMC, machine mode: the reset entry (`entry`) and the trap path (`trap`).
//! Nothing here may name a device address; `board/` supplies those.

mod entry;
pub mod trap;
