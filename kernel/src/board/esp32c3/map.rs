//! The ESP32-C3's memory as Amber uses it: SRAM1 (384 KB) seen at 0x3FC8_0000 on the
//! data bus and at 0x4038_0000 (data + 0x70_0000) on the instruction bus, used only
//! below 0x3FCD_C710, above which the ROM loader keeps its stack and data while it
//! loads the image. In physical order: the kernel (code through the instruction bus,
//! everything else through the data bus, `link.x`), the tasks' code (placed at
//! instruction-bus addresses, copied in through the data bus), the tasks' RAM, and
//! the never-checkpointed RAM. 16 PMP entries; the FRAM is on SPI, not mapped. Plain
//! constants: `build.rs` compiles this file too.

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
const _: () = assert!(power_failure_pin_refusal(3).is_none());
const _: () = assert!(MAP.kernel.end() == MAP.task_code.base - CODE_ALIAS);
const _: () = assert!(MAP.task_code.end() - CODE_ALIAS == MAP.task_ram.base);
const _: () = assert!(MAP.task_ram.end() == MAP.heap_ram.base);
