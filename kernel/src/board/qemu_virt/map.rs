//! QEMU `virt`'s memory map as Amber uses it: 128 MiB of DRAM from 0x8000_0000 (the
//! kernel in its first 16 MiB, then task code, task RAM and never-checkpointed RAM),
//! one bus, 16 PMP entries, and the NVM (ivshmem's memory BAR) mapped at the start of
//! the PCIe MMIO window. Plain constants: `build.rs` compiles this file too.

use super::super::memory_map::{MemoryMap, Range};

/// The start of the PCIe 32-bit MMIO window, where the NVM's BAR is placed.
pub const PCIE_MMIO_BASE: u32 = 0x4000_0000;

pub const MAP: MemoryMap = MemoryMap {
    kernel: Range {
        base: 0x8000_0000,
        len: 16 << 20,
    },
    task_code: Range {
        base: 0x8100_0000,
        len: 8 << 20,
    },
    task_code_align: 256,
    task_ram: Range {
        base: 0x8180_0000,
        len: 0x8700_0000 - 0x8180_0000,
    },
    heap_ram: Range {
        base: 0x8700_0000,
        len: 16 << 20,
    },
    code_alias: 0,
    // The 16550 UART of `virt`.
    console: 0x1000_0000,
    pmp_entries: 16,
    nvm_window: Some(PCIE_MMIO_BASE),
};
