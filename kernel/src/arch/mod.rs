//! CPU support. Amber runs on one ISA, RV32IMC in M-mode (the ESP32-C3's), so this
//! folder holds one architecture: boot entry, trap entry and CSR handling. Code here
//! knows the CPU but never a board: addresses of devices belong in `board/`.

pub mod riscv32;
