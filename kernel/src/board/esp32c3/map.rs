//! The ESP32-C3's memory as Amber uses it: SRAM1 (384 KB) seen at 0x3FC8_0000 on the
//! data bus and at 0x4038_0000 (data + 0x70_0000) on the instruction bus, used only
//! below 0x3FCD_C710, above which the ROM loader keeps its stack and data while it
//! loads the image. In physical order: the kernel (code through the instruction bus,
//! everything else through the data bus, `link.x`), the tasks' code (placed at
//! instruction-bus addresses, copied in through the data bus), the tasks' RAM, and
//! the never-checkpointed RAM. 16 PMP entries; the FRAM is on SPI, not mapped. Plain
//! constants: `build.rs` compiles this file too.

use super::super::memory_map::{MemoryMap, Range};

/// Instruction-bus address = data-bus address + this.
pub const CODE_ALIAS: u32 = 0x0070_0000;
/// Where the ROM's data begins (data bus): nothing of Amber's may reach it.
pub const ROM_DATA_START: u32 = 0x3FCD_C710;

pub const MAP: MemoryMap = MemoryMap {
    kernel: Range {
        base: 0x3FC8_0000,
        len: 0x4_6000,
    },
    task_code: Range {
        base: 0x3FCC_6000 + CODE_ALIAS,
        len: 0x8000,
    },
    task_ram: Range {
        base: 0x3FCC_E000,
        len: 0xA000,
    },
    heap_ram: Range {
        base: 0x3FCD_8000,
        len: 0x4000,
    },
    code_alias: CODE_ALIAS,
    // UART0 (TRM, "Peripheral address mapping").
    console: 0x6000_0000,
    pmp_entries: 16,
    nvm_window: None,
};

const _: () = assert!(MAP.heap_ram.end() <= ROM_DATA_START);
const _: () = assert!(MAP.kernel.end() == MAP.task_code.base - CODE_ALIAS);
const _: () = assert!(MAP.task_code.end() - CODE_ALIAS == MAP.task_ram.base);
const _: () = assert!(MAP.task_ram.end() == MAP.heap_ram.base);
