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
//! entries; the FRAM is on SPI, not mapped, on the pins an app may choose
//! ([`FramPins`]). Plain constants and checks: `build.rs` compiles this file too.

use super::super::memory_map::{MemoryMap, Range};

/// The FRAM's four SPI wires (GP-SPI2's clock, MISO and MOSI through the GPIO matrix,
/// chip select as a plain output): an app may move them in its description
/// (`[esp32c3] pins = { sck = 6, miso = 2, mosi = 7, cs = 1 }`, each optional), where
/// [`pin_refusal`] and [`pins_refusal`] check them; the kernel gets the result as
/// `app::FRAM_PINS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FramPins {
    pub sck: u32,
    pub miso: u32,
    pub mosi: u32,
    pub cs: u32,
}

/// The vNV-Heap paper's board (the artifact's README wiring and its
/// `zephyr/*/esp32c3_devkitm.overlay`, `cs-gpios = <&gpio0 1 GPIO_ACTIVE_LOW>`): the
/// default.
pub const PAPER_PINS: FramPins = FramPins {
    sck: 6,
    miso: 2,
    mosi: 7,
    cs: 1,
};

impl FramPins {
    /// (what, pin) for each wire, in the order SCK, MISO, MOSI, CS.
    pub const fn uses(&self) -> [(PinUse, u32); 4] {
        [
            (PinUse::Sck, self.sck),
            (PinUse::Miso, self.miso),
            (PinUse::Mosi, self.mosi),
            (PinUse::Cs, self.cs),
        ]
    }
}

/// What a pin of the board is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinUse {
    Sck,
    Miso,
    Mosi,
    Cs,
    /// The input of an external power-failure comparator (`[esp32c3]
    /// power_failure_gpio`).
    PowerFailure,
}

impl PinUse {
    pub const fn name(self) -> &'static str {
        match self {
            PinUse::Sck => "the FRAM's SCK",
            PinUse::Miso => "the FRAM's MISO",
            PinUse::Mosi => "the FRAM's MOSI",
            PinUse::Cs => "the FRAM's CS",
            PinUse::PowerFailure => "the power-failure comparator's input",
        }
    }
}

/// UART0 as the ROM routes it (the console).
pub const PIN_UART_TX: u32 = 21;
pub const PIN_UART_RX: u32 = 20;
/// GPIO0..=GPIO21.
pub const PINS: u32 = 22;

/// Why GPIO `pin` cannot serve as `what`, or None when it can. Refused whatever the
/// use: a pin the C3 lacks; the module's SPI flash and its supply (GPIO11..=17: VDD_SPI,
/// SPIHD, SPIWP, SPICS0, SPICLK, SPID, SPIQ); the USB-Serial-JTAG port's D- and D+
/// (GPIO18, GPIO19); UART0, the console (GPIO20, GPIO21); the strapping pins GPIO8 and
/// GPIO9, whose levels at reset choose the boot mode (GPIO9 low: download boot; GPIO8
/// must be high for it). The third strapping pin, GPIO2, must read high at reset for
/// either boot: only the FRAM's MISO may use it (the paper's board does), since the
/// FRAM drives its SO only while CS is low, and CS, pulled up, is high at reset.
pub const fn pin_refusal(pin: u32, what: PinUse) -> Option<&'static str> {
    match pin {
        p if p >= PINS => Some("the ESP32-C3 has GPIO0..=GPIO21 only"),
        11..=17 => Some("the module's SPI flash and its supply (VDD_SPI) use GPIO11..=17"),
        18 | 19 => Some("the USB-Serial-JTAG port (D- and D+) uses GPIO18 and GPIO19"),
        PIN_UART_TX | PIN_UART_RX => Some("UART0 (the console) uses GPIO20 and GPIO21"),
        8 | 9 => Some(
            "it is a strapping pin: its level at reset chooses the boot mode (GPIO9 low: \
             download boot, for which GPIO8 must be high)",
        ),
        2 if !matches!(what, PinUse::Miso) => Some(
            "it is a strapping pin that must read high at reset: only the FRAM's MISO may \
             use it (the FRAM's SO is high impedance while CS is high)",
        ),
        _ => None,
    }
}

/// Why a pin was refused for a use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// [`pin_refusal`]'s reason.
    Unusable(&'static str),
    /// Another of the board's uses has it.
    Taken(PinUse),
}

impl core::fmt::Display for Refusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Refusal::Unusable(why) => f.write_str(why),
            Refusal::Taken(other) => write!(f, "{} uses it already", other.name()),
        }
    }
}

/// The first pin of `pins` and `power_failure_gpio` refused by [`pin_refusal`], or the
/// second use of a pin already used: (the use, the pin, why).
pub fn pins_refusal(
    pins: &FramPins,
    power_failure_gpio: Option<u32>,
) -> Option<(PinUse, u32, Refusal)> {
    let mut uses = [(PinUse::PowerFailure, u32::MAX); 5];
    uses[..4].copy_from_slice(&pins.uses());
    if let Some(pin) = power_failure_gpio {
        uses[4].1 = pin;
    }
    for (i, &(what, pin)) in uses.iter().enumerate() {
        if pin == u32::MAX {
            continue;
        }
        if let Some(why) = pin_refusal(pin, what) {
            return Some((what, pin, Refusal::Unusable(why)));
        }
        if let Some(&(first, _)) = uses[..i].iter().find(|(_, p)| *p == pin) {
            return Some((what, pin, Refusal::Taken(first)));
        }
    }
    None
}

/// Instruction-bus address = data-bus address + this.
pub const CODE_ALIAS: u32 = 0x0070_0000;
/// Where the ROM loader's stack and data begin (data bus; esp-idf's C3
/// `bootloader.memory.ld.in`: the startup stack 0x3FCD_C710..0x3FCD_E710, growing down
/// from its top, then the ROM's .bss and .data).
pub const ROM_DATA_START: u32 = 0x3FCD_C710;
/// What esp-idf keeps free below it ("bootloader_stack_overhead": a safety margin
/// between the loaded data and the startup stack).
pub const ROM_STACK_MARGIN: u32 = 0x2000;
/// Every byte the ROM loader places must lie below this (`cargo xtask` checks each
/// segment of the image).
pub const LOADED_END: u32 = ROM_DATA_START - ROM_STACK_MARGIN;
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
    MAP.task_ram.end() <= LOADED_END,
    "task RAM holds loaded bytes"
);
const _: () = assert!(pin_refusal(3, PinUse::PowerFailure).is_none());
const _: () = assert!(MAP.kernel.end() == MAP.task_code.base - CODE_ALIAS);
const _: () = assert!(MAP.task_code.end() - CODE_ALIAS == MAP.task_ram.base);
const _: () = assert!(MAP.task_ram.end() == MAP.heap_ram.base);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_s_pins_pass_and_every_refused_pin_says_why() {
        assert_eq!(pins_refusal(&PAPER_PINS, None), None);
        assert_eq!(pins_refusal(&PAPER_PINS, Some(3)), None);
        for (pin, why) in [
            (11, "SPI flash"),
            (14, "SPI flash"),
            (17, "SPI flash"),
            (18, "USB-Serial-JTAG"),
            (19, "USB-Serial-JTAG"),
            (20, "UART0"),
            (21, "UART0"),
            (8, "strapping"),
            (9, "strapping"),
            (22, "GPIO0..=GPIO21"),
        ] {
            for what in [
                PinUse::Sck,
                PinUse::Miso,
                PinUse::Mosi,
                PinUse::Cs,
                PinUse::PowerFailure,
            ] {
                let refused = pin_refusal(pin, what).unwrap_or_default();
                assert!(
                    refused.contains(why),
                    "GPIO{pin} as {}: {refused:?}",
                    what.name()
                );
            }
        }
        assert_eq!(pin_refusal(2, PinUse::Miso), None, "the paper's MISO");
        for what in [PinUse::Sck, PinUse::Mosi, PinUse::Cs, PinUse::PowerFailure] {
            assert!(pin_refusal(2, what)
                .unwrap()
                .contains("only the FRAM's MISO"));
        }
    }

    #[test]
    fn a_pin_used_twice_names_its_first_use() {
        let moved = FramPins {
            cs: 6,
            ..PAPER_PINS
        };
        assert_eq!(
            pins_refusal(&moved, None),
            Some((PinUse::Cs, 6, Refusal::Taken(PinUse::Sck)))
        );
        assert_eq!(
            pins_refusal(&PAPER_PINS, Some(1)).map(|(_, _, r)| r.to_string()),
            Some("the FRAM's CS uses it already".to_owned())
        );
        let elsewhere = FramPins {
            sck: 4,
            miso: 5,
            mosi: 10,
            cs: 3,
        };
        assert_eq!(pins_refusal(&elsewhere, Some(0)), None);
        assert!(matches!(
            pins_refusal(
                &FramPins {
                    sck: 12,
                    ..PAPER_PINS
                },
                None
            ),
            Some((PinUse::Sck, 12, Refusal::Unusable(_)))
        ));
    }
}
