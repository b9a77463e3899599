//! The ESP32-C3's memory as Amber uses it: SRAM1 (384 KB) seen at 0x3FC8_0000 on the
//! data bus and at 0x4038_0000 (data + 0x70_0000) on the instruction bus. In physical
//! order: the kernel (code through the instruction bus, everything else through the
//! data bus, `link.x`), the tasks' code (at instruction-bus addresses), the tasks' RAM,
//! and the never-checkpointed RAM, up to SRAM1's end. The ROM loader places every
//! loaded byte (the kernel's and the tasks' segments) below 0x3FCD_C710, where its own
//! stack and data begin while it loads; only never-checkpointed RAM, which nothing
//! loads and which its owners initialize, lies above, in the ROM loader's stack
//! (0x3FCD_C710..0x3FCD_E710, free once the kernel runs on its own, as esp-idf reclaims
//! it after start-up) and in the ROM's own .bss and .data (0x3FCD_E710..0x3FCE_0000,
//! which esp-idf keeps for the ROM functions it calls; Amber calls none once the ROM
//! has jumped to it: on the bring-up checklist). The split is sized for the heap app
//! (docs/esp32c3.md, "The memory split"); the other apps fit inside it. 16 PMP
//! entries; the FRAM is on SPI, not mapped. Plain constants: `build.rs` compiles this
//! file too.

use super::super::memory_map::{MemoryMap, Range};

/// The paper's wiring of the FRAM on GP-SPI2: SCK GPIO6, MISO GPIO2, MOSI GPIO7; chip
/// select on GPIO10 (the paper leaves it open).
pub const PIN_SCK: u32 = 6;
pub const PIN_MISO: u32 = 2;
pub const PIN_MOSI: u32 = 7;
pub const PIN_CS: u32 = 10;
/// UART0 as the ROM routes it (the console).
pub const PIN_UART_TX: u32 = 21;
pub const PIN_UART_RX: u32 = 20;
/// GPIO0..=GPIO21.
pub const PINS: u32 = 22;

/// Why GPIO `pin` cannot be the input of an external power-failure comparator (an
/// app's `[esp32c3] power_failure_gpio`), or None when it can: it does not exist, the
/// board uses it, the module's SPI flash does (GPIO11..=17 on the C3 modules), or it is
/// a strapping pin whose level at reset chooses the boot mode (GPIO8, GPIO9).
pub const fn power_failure_pin_refusal(pin: u32) -> Option<&'static str> {
    match pin {
        p if p >= PINS => Some("the ESP32-C3 has GPIO0..=GPIO21 only"),
        PIN_SCK | PIN_MISO | PIN_MOSI | PIN_CS => Some("the board wires it to the FRAM on GP-SPI2"),
        PIN_UART_TX | PIN_UART_RX => Some("UART0 (the console) uses it"),
        11..=17 => Some("the module's SPI flash (and VDD_SPI) use GPIO11..=17"),
        8 | 9 => Some("it is a strapping pin (its level at reset chooses the boot mode)"),
        _ => None,
    }
}

/// Instruction-bus address = data-bus address + this.
pub const CODE_ALIAS: u32 = 0x0070_0000;
/// Where the ROM loader's stack and data begin (data bus): no loaded byte may reach it.
pub const ROM_DATA_START: u32 = 0x3FCD_C710;
/// SRAM1's end on the data bus.
pub const SRAM_END: u32 = 0x3FCE_0000;

pub const MAP: MemoryMap = MemoryMap {
    kernel: Range {
        base: 0x3FC8_0000,
        len: 0x3_8000,
    },
    task_code: Range {
        base: 0x3FCB_8000 + CODE_ALIAS,
        len: 0x1_5000,
    },
    // unicorn 2.1.4's QEMU checks an instruction fetch's PMP rights from the pc to the
    // end of its 4 KiB page, so in the simulator a task could not run the code in the
    // last page of its region unless the region ends on a page (the chip checks 4-byte
    // granules). 8,704 bytes of the heap app's code region are this padding.
    task_code_align: 0x1000,
    task_ram: Range {
        base: 0x3FCC_D000,
        len: 0xc800,
    },
    heap_ram: Range {
        base: 0x3FCD_9800,
        len: SRAM_END - 0x3FCD_9800,
    },
    code_alias: CODE_ALIAS,
    // UART0 (TRM, "Peripheral address mapping").
    console: 0x6000_0000,
    pmp_entries: 16,
    nvm_window: None,
};

const _: () = assert!(MAP.heap_ram.end() == SRAM_END);
const _: () = assert!(
    MAP.task_ram.end() <= ROM_DATA_START,
    "task RAM holds loaded bytes"
);
const _: () = assert!(power_failure_pin_refusal(3).is_none());
const _: () = assert!(MAP.kernel.end() == MAP.task_code.base - CODE_ALIAS);
const _: () = assert!(MAP.task_code.end() - CODE_ALIAS == MAP.task_ram.base);
const _: () = assert!(MAP.task_ram.end() == MAP.heap_ram.base);
