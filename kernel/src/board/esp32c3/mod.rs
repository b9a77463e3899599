//! The ESP32-C3 with an MB85RS4MT (or MB85RS4MTY) FRAM on GP-SPI2 (the vNV-Heap
//! paper's board): the watchdogs off, the CPU at 160 MHz from the BBPLL whatever the
//! ROM left (the analog I2C writes through the ROM's functions), UART0 on the crystal
//! for the console, SYSTIMER COMP0 for the tick, the brown-out detector as the
//! power-failure interrupt (or, when the app's `[esp32c3] power_failure_gpio` names a
//! pin, a falling edge on it from an external supply comparator), the interrupt matrix
//! for routing (the C3 has no `mie`/`mip`; whatever the ROM left mapped or enabled is
//! undone first), vectored mtvec, and the FRAM on the app's pins (the paper's by
//! default) through amber-fram's `Fram` over embedded-hal-bus's `ExclusiveDevice` on
//! the `amber-esp32c3` SPI driver. Every register sequence is in `drivers/esp32c3`
//! (host-tested); this file only wires them to lines and pins. It must never hold
//! policy. Nothing here has run on hardware yet: `docs/esp32c3.md` lists what only the
//! board can confirm.

pub mod map;

#[cfg(target_os = "none")]
pub use device::Esp32c3;

#[cfg(target_os = "none")]
mod device {
    use super::map::MAP;
    use crate::app::{FRAM_PINS, POWER_FAILURE_GPIO};
    use crate::arch::TrapVector;
    use crate::board::{Board, Event, MemoryMap};
    use crate::exit::ExitCode;
    use amber_esp32c3::clock::{self, AnalogI2c, ClockError, CpuClock};
    use amber_esp32c3::gpio::{self, OutputPin};
    use amber_esp32c3::intmatrix::{self, Trigger};
    use amber_esp32c3::spi::{Spi2, SpiError};
    use amber_esp32c3::{brownout, systimer, uart, watchdog, Mmio};
    use amber_fram::id;
    use amber_fram::Fram;
    use core::fmt;
    use embedded_hal::spi::{Operation, SpiDevice};
    use embedded_hal_bus::spi::{ExclusiveDevice, NoDelay};

    const TICK_MS: u32 = 10;
    const TICK_PERIOD: u32 = (systimer::COUNTS_PER_SECOND / 1000) as u32 * TICK_MS;
    /// CPU interrupt lines: the tick, the console, the power failure (the brown-out
    /// detector or the comparator's GPIO); device interrupts get the rest.
    const TICK_LINE: u32 = 1;
    const UART_LINE: u32 = 2;
    const POWER_FAIL_LINE: u32 = 3;
    const FIRST_DEVICE_LINE: u32 = 4;
    const PRIORITY: u32 = 1;
    const SPI_HZ: u32 = 40_000_000;
    /// Ctrl-P on the console also raises the power-failure event (as on QEMU), for
    /// bring-up without a bench supply.
    const POWER_FAIL_BYTE: u8 = 0x10;

    /// What the switch to 160 MHz found (the clock before it, or why it was not
    /// made), kept from `init_console` until the log can say it.
    static CLOCK_SWITCH: spin::Mutex<Option<Result<CpuClock, ClockError>>> = spin::Mutex::new(None);

    unsafe extern "C" {
        /// The ROM's analog I2C writes (esp-idf `esp32c3.rom.ld`; addresses in
        /// `link.x`): a whole register, and bits `msb..=lsb` of one.
        fn rom_i2c_writeReg(block: u8, host: u8, reg: u8, value: u8);
        fn rom_i2c_writeReg_Mask(block: u8, host: u8, reg: u8, msb: u8, lsb: u8, value: u8);
    }

    /// The analog I2C bus through the ROM's functions (as esp-idf and esp-hal reach it
    /// on the C3).
    struct RomAnalogI2c;

    impl AnalogI2c for RomAnalogI2c {
        fn write(&mut self, block: u8, host: u8, reg: u8, value: u8) {
            // SAFETY: a ROM function of every C3 revision; it writes the analog
            // register named and touches nothing of the kernel's.
            unsafe { rom_i2c_writeReg(block, host, reg, value) }
        }

        fn write_mask(&mut self, block: u8, host: u8, reg: u8, msb: u8, lsb: u8, value: u8) {
            // SAFETY: as in `write`.
            unsafe { rom_i2c_writeReg_Mask(block, host, reg, msb, lsb, value) }
        }
    }

    /// The interrupt line each source was given (0: none), owned by this board.
    static LINES: spin::Mutex<[u8; intmatrix::SOURCES as usize]> =
        spin::Mutex::new([0; intmatrix::SOURCES as usize]);

    fn regs() -> Mmio {
        // SAFETY: on the C3, each call reaches only the registers of the sequence it
        // is passed to, and the board runs with interrupts off (one owner at a time).
        unsafe { Mmio::new() }
    }

    /// UART0, written byte by byte through its TX FIFO.
    pub struct Console;

    impl fmt::Write for Console {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let mut r = regs();
            for b in s.bytes() {
                if b == b'\n' {
                    uart::write_byte(&mut r, b'\r');
                }
                uart::write_byte(&mut r, b);
            }
            Ok(())
        }
    }

    static CONSOLE: spin::Mutex<Console> = spin::Mutex::new(Console);

    pub type FramBus = ExclusiveDevice<Spi2<Mmio>, OutputPin<Mmio>, NoDelay>;

    /// Why the FRAM could not be set up.
    pub enum NvmSetupError {
        Spi(SpiError),
        /// RDID answered something other than a 4 Mbit MB85RS part.
        WrongDevice([u8; 4]),
    }

    impl fmt::Display for NvmSetupError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let p = FRAM_PINS;
            match self {
                NvmSetupError::Spi(e) => write!(f, "FRAM on GP-SPI2: {e}"),
                NvmSetupError::WrongDevice(found) => {
                    write!(
                        f,
                        "no MB85RS4MT on GP-SPI2 (SCK GPIO{}, MISO GPIO{}, MOSI GPIO{}, CS \
                         GPIO{}): RDID gave {found:02x?}, expected",
                        p.sck, p.miso, p.mosi, p.cs
                    )?;
                    for (i, c) in id::KNOWN.iter().enumerate() {
                        let or = if i == 0 { "" } else { " or" };
                        write!(f, "{or} {:02x?} ({})", c.id, c.name)?;
                    }
                    Ok(())
                }
            }
        }
    }

    fn halt() -> ! {
        loop {
            riscv::asm::wfi();
        }
    }

    /// The cycle counter: custom CSRs PCER (0x7E0, events: cycles), PCMR (0x7E1,
    /// counting on), PCCR (0x7E2, the 32-bit count).
    fn start_cycle_counter() {
        // SAFETY: writing the performance-counter CSRs only starts the counter.
        unsafe { core::arch::asm!("csrwi 0x7E0, 1", "csrwi 0x7E1, 1") };
    }

    /// The chip.
    pub struct Esp32c3;

    impl Board for Esp32c3 {
        const NAME: &'static str = "ESP32-C3 (RV32IMC, M-mode) with MB85RS4MT FRAM on GP-SPI2";
        const MAP: MemoryMap = MAP;
        const TICK_MS: u32 = TICK_MS;
        const TRAP_VECTOR: TrapVector = TrapVector::Vectored;
        type Console = Console;
        type Nvm = Fram<FramBus>;
        type NvmError = NvmSetupError;

        fn console() -> &'static spin::Mutex<Console> {
            &CONSOLE
        }

        /// First of all: the watchdogs the ROM left running go off (nothing else feeds
        /// them), the CPU goes to 160 MHz from the BBPLL (UART0 first onto the
        /// crystal, so the console keeps its 115200 baud; APB, and so the SPI clock,
        /// at 80 MHz), and the cycle counter starts.
        fn init_console() {
            let mut r = regs();
            watchdog::disable_all(&mut r);
            *CLOCK_SWITCH.lock() = Some(clock::raise_to_160mhz(&mut r, &mut RomAnalogI2c));
            start_cycle_counter();
        }

        /// The ROM passes no command line.
        fn boot_options(_boot: [usize; 2]) -> &'static [u8] {
            &[]
        }

        /// Routes the app's SPI pins, sets GP-SPI2 to mode 0 at 40 MHz and checks the
        /// FRAM's device ID before handing it out.
        fn nvm() -> Result<Fram<FramBus>, NvmSetupError> {
            let mut r = regs();
            match CLOCK_SWITCH.lock().take() {
                Some(Ok(before)) => {
                    log::info!("CPU clock: {} (was {before})", clock::cpu_clock(&mut r))
                }
                Some(Err(e)) => log::warn!("CPU clock: {e}"),
                None => {}
            }
            let p = FRAM_PINS;
            // xtask refused pins the C3 lacks (map::pins_refusal): routing cannot fail.
            let routed = gpio::route_output(&mut r, p.sck, gpio::FSPICLK_OUT)
                .and_then(|()| gpio::route_output(&mut r, p.mosi, gpio::FSPID_OUT))
                .and_then(|()| gpio::route_input(&mut r, p.miso, gpio::FSPIQ_IN));
            let cs = routed.and_then(|()| OutputPin::new(regs(), p.cs));
            let Ok(cs) = cs else {
                unreachable!("the FRAM's pins exist on the C3 (xtask checked them)")
            };
            let spi = Spi2::new(regs(), SPI_HZ);
            log::debug!("GP-SPI2 at {} Hz", spi.hz());
            let Ok(mut dev) = ExclusiveDevice::new_no_delay(spi, cs);
            let mut found = [0u8; 4];
            dev.transaction(&mut [Operation::Write(&[id::RDID]), Operation::Read(&mut found)])
                .map_err(|e| match e {
                    embedded_hal_bus::spi::DeviceError::Spi(e) => NvmSetupError::Spi(e),
                    embedded_hal_bus::spi::DeviceError::Cs(never) => match never {},
                })?;
            let chip = id::identify(found).ok_or(NvmSetupError::WrongDevice(found))?;
            log::info!(
                "FRAM: {} on GP-SPI2 (SCK GPIO{}, MISO GPIO{}, MOSI GPIO{}, CS GPIO{})",
                chip.name,
                p.sck,
                p.miso,
                p.mosi,
                p.cs
            );
            Ok(Fram::new(dev, chip.part))
        }

        /// The FRAM is on GP-SPI2: every byte the driver clocked. (That the NVM is on a
        /// serial bus is what tasks are told, so that the SPI driver task reaches its
        /// ring and partition through the kernel.)
        fn nvm_wire_bytes(nvm: &Fram<FramBus>) -> Option<u64> {
            Some(nvm.stats().wire_bytes)
        }

        /// Whatever the ROM left in the interrupt matrix undone (every source
        /// unmapped, every line disabled, pending edges cleared), then the 10 ms
        /// SYSTIMER tick on line 1, UART0's receive interrupt on line 2 and the power
        /// failure on line 3: the brown-out detector (its resets off), or a falling
        /// edge on the app's comparator GPIO (the brown-out detector then left as the
        /// ROM set it); each device's one interrupt the only one it has enabled, all
        /// level-triggered; the matrix's writes fenced, then `mstatus.MIE`.
        fn start_interrupts() {
            let mut r = regs();
            intmatrix::reset(&mut r);
            let Ok(()) = systimer::start_periodic(&mut r, TICK_PERIOD) else {
                unreachable!("a 10 ms period fits SYSTIMER's 26 bits")
            };
            uart::enable_rx_interrupt(&mut r);
            let power_fail_source = match POWER_FAILURE_GPIO {
                Some(pin) => {
                    // xtask refused pins the C3 lacks (map::pins_refusal).
                    if gpio::enable_falling_edge_interrupt(&mut r, pin).is_err() {
                        unreachable!("GPIO{pin} exists on the C3");
                    }
                    log::info!("power failure: a falling edge on GPIO{pin} (external comparator)");
                    gpio::SOURCE
                }
                None => {
                    brownout::enable_interrupt(&mut r);
                    log::info!("power failure: the brown-out detector (its resets off)");
                    brownout::SOURCE
                }
            };
            let routes = [
                (systimer::TARGET0_SOURCE, TICK_LINE),
                (uart::SOURCE, UART_LINE),
                (power_fail_source, POWER_FAIL_LINE),
            ];
            for (source, line) in routes {
                if intmatrix::route(&mut r, source, line, Trigger::Level, PRIORITY).is_err() {
                    unreachable!("source {source} and line {line} exist");
                }
            }
            intmatrix::set_threshold(&mut r, 0);
            // SAFETY: the vectored trap table is installed and every line above is
            // served by `claim`.
            unsafe { riscv::interrupt::enable() };
        }

        /// `cause` is the CPU line (vectored mode): the tick, the console (drained;
        /// Ctrl-P is the power failure), the brown-out (the power failure), or a device
        /// line, masked until its driver
        /// acknowledges it.
        fn claim(cause: u32, mut event: impl FnMut(Event)) {
            let mut r = regs();
            match cause {
                TICK_LINE => {
                    if systimer::take_tick(&mut r) {
                        event(Event::Tick)
                    }
                }
                UART_LINE => {
                    while let Some(byte) = uart::read_byte(&mut r) {
                        event(match byte {
                            POWER_FAIL_BYTE => Event::PowerFailure,
                            byte => Event::ConsoleInput(byte),
                        });
                    }
                    uart::clear_rx_interrupt(&mut r);
                }
                POWER_FAIL_LINE => {
                    let failed = match POWER_FAILURE_GPIO {
                        Some(pin) => gpio::take_interrupt(&mut r, pin),
                        None => brownout::take_interrupt(&mut r),
                    };
                    if failed {
                        event(Event::PowerFailure)
                    }
                }
                line => {
                    let source = LINES.lock().iter().position(|l| u32::from(*l) == line);
                    intmatrix::set_enabled(&mut r, line, false);
                    if let Some(source) = source {
                        event(Event::Irq(source as u32));
                    }
                }
            }
        }

        fn console_receive(on: bool) {
            let mut r = regs();
            if on {
                uart::enable_rx_interrupt(&mut r);
            } else {
                uart::disable_rx_interrupt(&mut r);
            }
        }

        /// Gives interrupt source `irq` the next free CPU line (lines 4..=31); the
        /// tick's, the console's and the brown-out's sources are the board's own, and
        /// the GPIO interrupt's when the app's comparator uses it.
        fn irq_enable(irq: u32) -> bool {
            let own = [systimer::TARGET0_SOURCE, uart::SOURCE, brownout::SOURCE];
            if own.contains(&irq) || (POWER_FAILURE_GPIO.is_some() && irq == gpio::SOURCE) {
                return false;
            }
            let mut lines = LINES.lock();
            let Some(&given) = lines.get(irq as usize) else {
                return false;
            };
            let line = if given != 0 {
                u32::from(given)
            } else {
                let taken = |l: u32| lines.iter().any(|&g| u32::from(g) == l);
                let Some(free) = (FIRST_DEVICE_LINE..intmatrix::LINES).find(|&l| !taken(l)) else {
                    return false;
                };
                lines[irq as usize] = free as u8;
                free
            };
            intmatrix::route(&mut regs(), irq, line, Trigger::Level, PRIORITY).is_ok()
        }

        fn irq_complete(irq: u32) {
            if let Some(&line) = LINES.lock().get(irq as usize) {
                intmatrix::set_enabled(&mut regs(), line.into(), true);
            }
        }

        /// SYSTIMER UNIT0 (16 MHz).
        fn uptime_us() -> u64 {
            systimer::now(&mut regs()) / (systimer::COUNTS_PER_SECOND / 1_000_000)
        }

        /// CPU cycles (32 bits, wrapping every 26.8 s at 160 MHz): never instructions.
        fn counter() -> u64 {
            let cycles: u32;
            // SAFETY: reading PCCR has no side effect.
            unsafe { core::arch::asm!("csrr {0}, 0x7E2", out(reg) cycles) };
            cycles.into()
        }

        fn counter_exact() -> bool {
            false
        }

        /// The C3's cycle counter is a machine-mode CSR: tasks cannot be given it.
        fn enable_user_counters() {}

        /// No exit device: the reason is on the console; the CPU stops.
        fn exit(code: ExitCode) -> ! {
            log::error!("halted (exit code {})", code.code());
            halt()
        }

        fn exit_success() -> ! {
            log::info!("halted (success)");
            halt()
        }
    }
}
