//! QEMU `virt` (RV32): the 16550 console, the CLINT tick, the PLIC, the test device
//! (exit) and the NVM, an ivshmem-plain device on PCI whose memory BAR this file maps
//! into the PCIe window. Addresses come from QEMU's `hw/riscv/virt.c` (see DESIGN.md);
//! the memory map is in `map.rs`. This file wires drivers to addresses and decodes
//! interrupts; it must never hold policy (what to do with a byte, when to
//! checkpoint), only the means.

pub mod map;
#[cfg(target_os = "none")]
mod nvm_bus;

#[cfg(target_os = "none")]
pub use device::QemuVirt;

#[cfg(target_os = "none")]
mod device {
    use super::map::{MAP, PCIE_MMIO_BASE};
    use super::nvm_bus::{self, BoardNvm};
    use crate::arch::TrapVector;
    use crate::board::{Board, Event, MemoryMap};
    use crate::exit::ExitCode;
    use amber_nvm::MmioNvm;
    use amber_pci::{place_bar64, Ecam};
    use amber_uart16550::Uart;
    use core::fmt;
    use core::sync::atomic::{AtomicBool, Ordering};
    use qemu_exit::QEMUExit;
    use riscv::interrupt::machine::Interrupt;

    const UART_BASE: usize = 0x1000_0000;
    const UART_IRQ: u32 = 10;
    const CLINT_MTIMECMP: usize = 0x0200_4000;
    const CLINT_MTIME: usize = 0x0200_BFF8;
    /// CLINT `mtime` frequency on `virt`.
    const MTIME_HZ: u64 = 10_000_000;
    const TICK_MS: u32 = 10;
    const TICK: u64 = MTIME_HZ / 1000 * TICK_MS as u64;
    const PLIC_BASE: usize = 0x0C00_0000;
    const PLIC_ENABLE_CTX0: usize = PLIC_BASE + 0x2000;
    const PLIC_THRESHOLD_CTX0: usize = PLIC_BASE + 0x20_0000;
    const PLIC_CLAIM_CTX0: usize = PLIC_BASE + 0x20_0004;
    const TEST_DEVICE: usize = 0x0010_0000;
    const PCIE_ECAM: usize = 0x3000_0000;
    const PCIE_MMIO_LEN: u64 = 0x4000_0000;
    const IVSHMEM_VENDOR: u16 = 0x1af4;
    const IVSHMEM_DEVICE: u16 = 0x1110;
    /// ivshmem's shared memory is BAR2 (64-bit, prefetchable).
    const IVSHMEM_MEMORY_BAR: u8 = 2;
    /// The console byte that stands for the power-failure interrupt: Ctrl-P. The host
    /// raises the PFI by sending it; on a board it is a brown-out detector or a
    /// comparator's GPIO.
    const POWER_FAIL_BYTE: u8 = 0x10;
    /// The most console bytes one UART interrupt takes (well within the slack of the
    /// kernel's input queue, `console_in::SLACK`).
    const RX_BURST: usize = 16;

    /// The command line said QEMU runs with `-icount`.
    static ICOUNT: AtomicBool = AtomicBool::new(false);
    /// The command line chose the SPI bus for the NVM (`amber.nvm-bus=spi`).
    static SPI_BUS: AtomicBool = AtomicBool::new(false);

    // SAFETY: UART_BASE is the 16550 of `virt`, and only this static reaches it.
    static CONSOLE: spin::Mutex<Uart> = spin::Mutex::new(unsafe { Uart::new(UART_BASE) });

    fn mmio_read(addr: usize) -> u32 {
        // SAFETY: callers pass addresses of 32-bit registers of `virt`'s devices above.
        unsafe { (addr as *const u32).read_volatile() }
    }

    fn mmio_write(addr: usize, v: u32) {
        // SAFETY: as in `mmio_read`.
        unsafe { (addr as *mut u32).write_volatile(v) }
    }

    /// CLINT `mtime`, read so that a carry between the halves is never torn.
    fn mtime() -> u64 {
        loop {
            let hi = mmio_read(CLINT_MTIME + 4);
            let lo = mmio_read(CLINT_MTIME);
            if mmio_read(CLINT_MTIME + 4) == hi {
                return (hi as u64) << 32 | lo as u64;
            }
        }
    }

    fn set_timer(deadline: u64) {
        // Raise the high half first so no intermediate value fires early.
        mmio_write(CLINT_MTIMECMP + 4, u32::MAX);
        mmio_write(CLINT_MTIMECMP, deadline as u32);
        mmio_write(CLINT_MTIMECMP + 4, (deadline >> 32) as u32);
    }

    /// Why no NVM could be set up.
    pub enum NvmSetupError {
        NoDevice,
        Pci(amber_pci::PciError),
        TooLarge(u64),
        TooLargeForSpi(u32),
    }

    impl fmt::Display for NvmSetupError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                NvmSetupError::NoDevice => write!(
                    f,
                    "no NVM device: no ivshmem-plain ({IVSHMEM_VENDOR:04x}:{IVSHMEM_DEVICE:04x}) on PCI bus 0 \
                     (start QEMU with -device ivshmem-plain,memdev=... backed by a memory-backend-file)"
                ),
                NvmSetupError::Pci(e) => write!(f, "cannot map the NVM device: {e}"),
                NvmSetupError::TooLarge(size) => {
                    write!(f, "the NVM device of {size} bytes is larger than the 4 GiB Amber addresses")
                }
                NvmSetupError::TooLargeForSpi(size) => write!(
                    f,
                    "the NVM of {size} bytes cannot be one SPI FRAM (3-byte addresses reach \
                     16 MiB): use amber.nvm-bus=mmio or a smaller image"
                ),
            }
        }
    }

    /// QEMU's SiFive test device, driven through the `qemu-exit` trait.
    struct TestDevice;

    impl QEMUExit for TestDevice {
        fn exit(&self, code: u32) -> ! {
            mmio_write(TEST_DEVICE, (code << 16) | 0x3333);
            halt()
        }

        fn exit_success(&self) -> ! {
            mmio_write(TEST_DEVICE, 0x5555);
            halt()
        }

        fn exit_failure(&self) -> ! {
            self.exit(ExitCode::Panic as u32)
        }
    }

    fn halt() -> ! {
        loop {
            riscv::asm::wfi();
        }
    }

    /// The machine.
    pub struct QemuVirt;

    impl Board for QemuVirt {
        const NAME: &'static str = "QEMU virt (RV32IMC, M-mode)";
        const MAP: MemoryMap = MAP;
        const TICK_MS: u32 = TICK_MS;
        const TRAP_VECTOR: TrapVector = TrapVector::Direct;
        type Console = Uart;
        type Nvm = BoardNvm;
        type NvmError = NvmSetupError;

        fn console() -> &'static spin::Mutex<Uart> {
            &CONSOLE
        }

        fn init_console() {
            CONSOLE.lock().init();
        }

        /// The `/chosen/bootargs` of the device tree QEMU passes in a1 (empty if none),
        /// as raw bytes without the terminating NUL: whether they are UTF-8 is for the
        /// parser to say (the fdt crate's `bootargs()` drops them silently if not).
        fn boot_options(boot: [usize; 2]) -> &'static [u8] {
            let dtb = boot[1];
            // SAFETY: QEMU places a valid flattened device tree at `dtb` above the
            // kernel image, and nothing ever writes there, so it lives for the run.
            let options = match unsafe { fdt::Fdt::from_ptr(dtb as *const u8) } {
                Ok(tree) => tree
                    .find_node("/chosen")
                    .and_then(|n| n.property("bootargs"))
                    .map(|p| p.value.strip_suffix(&[0]).unwrap_or(p.value))
                    .unwrap_or(&[]),
                Err(e) => {
                    log::warn!("no usable device tree at {dtb:#x} ({e:?}): no boot options");
                    &[]
                }
            };
            let words = || options.split(u8::is_ascii_whitespace);
            ICOUNT.store(words().any(|w| w == b"amber.icount"), Ordering::Relaxed);
            SPI_BUS.store(
                words().any(|w| w == b"amber.nvm-bus=spi"),
                Ordering::Relaxed,
            );
            options
        }

        /// Finds the ivshmem device and maps its memory BAR at the start of the PCIe
        /// window ([`MemoryMap::nvm_window`]); on the SPI bus, the window is the array
        /// of an emulated FRAM chip behind the FRAM protocol driver (`nvm_bus.rs`).
        fn nvm() -> Result<BoardNvm, NvmSetupError> {
            // SAFETY: PCIE_ECAM is `virt`'s ECAM, and only the boot path configures PCI.
            let mut ecam = unsafe { Ecam::new(PCIE_ECAM) };
            let bdf = amber_pci::find(&mut ecam, IVSHMEM_VENDOR, IVSHMEM_DEVICE)
                .ok_or(NvmSetupError::NoDevice)?;
            let (base, size) = place_bar64(
                &mut ecam,
                bdf,
                IVSHMEM_MEMORY_BAR,
                PCIE_MMIO_BASE.into(),
                PCIE_MMIO_LEN,
            )
            .map_err(NvmSetupError::Pci)?;
            let size = u32::try_from(size).map_err(|_| NvmSetupError::TooLarge(size))?;
            log::debug!(
                "NVM: ivshmem at {:02x}:{:02x}.{}, BAR{IVSHMEM_MEMORY_BAR} at {base:#x}, {size} bytes",
                bdf.bus,
                bdf.device,
                bdf.function
            );
            // SAFETY: `place_bar64` mapped exactly `[base, base + size)` to the device's
            // memory in the PCIe window, and nothing else uses that range.
            let window = unsafe { MmioNvm::new(base as usize as *mut u8, size) };
            if !SPI_BUS.load(Ordering::Relaxed) {
                return Ok(amber_nvm::Either::Left(window));
            }
            // Not "NVM": tests wait for the line after it ("found NVM ...").
            log::info!("nvm bus: spi, an emulated FRAM of {size} bytes behind the FRAM driver");
            nvm_bus::on_spi(window).ok_or(NvmSetupError::TooLargeForSpi(size))
        }

        fn nvm_wire_bytes(nvm: &BoardNvm) -> Option<u64> {
            nvm_bus::wire_bytes(nvm)
        }

        /// The 10 ms CLINT tick and the UART's receive interrupt through the PLIC.
        fn start_interrupts() {
            mmio_write(PLIC_BASE + 4 * UART_IRQ as usize, 1); // priority 1
            mmio_write(PLIC_ENABLE_CTX0, 1 << UART_IRQ);
            mmio_write(PLIC_THRESHOLD_CTX0, 0);
            set_timer(mtime() + TICK);
            // SAFETY: the trap vector is installed and both sources are served.
            unsafe {
                riscv::interrupt::enable_interrupt(Interrupt::MachineTimer);
                riscv::interrupt::enable_interrupt(Interrupt::MachineExternal);
                riscv::interrupt::enable();
            }
        }

        /// The machine timer is the tick; a machine external interrupt is claimed from
        /// the PLIC: the console UART is drained (Ctrl-P is the power failure) and
        /// completed here, any other source is a device interrupt for a task.
        fn claim(cause: u32, mut event: impl FnMut(Event)) {
            if cause == Interrupt::MachineTimer as u32 {
                set_timer(mtime() + TICK);
                return event(Event::Tick);
            }
            if cause != Interrupt::MachineExternal as u32 {
                panic!("unexpected interrupt {cause}");
            }
            let irq = mmio_read(PLIC_CLAIM_CTX0);
            if irq == 0 {
                return;
            }
            if irq != UART_IRQ {
                return event(Event::Irq(irq));
            }
            // At most RX_BURST bytes: QEMU refills the receiver as fast as it is read,
            // so draining "until empty" would never end while a script is piped in, and
            // a stop the kernel's input queue asks for (`console_receive`) must take
            // effect within its slack. The interrupt comes again for the rest.
            for _ in 0..RX_BURST {
                // The guard must be gone before the event, which may log (locking the
                // UART): `let else` drops it at the end of the statement.
                let Some(byte) = CONSOLE.lock().receive() else {
                    break;
                };
                event(match byte {
                    POWER_FAIL_BYTE => Event::PowerFailure,
                    byte => Event::ConsoleInput(byte),
                });
            }
            mmio_write(PLIC_CLAIM_CTX0, irq);
        }

        fn console_receive(on: bool) {
            CONSOLE.lock().receive_interrupt(on);
        }

        /// Routes PLIC source `irq` to M-mode (priority 1). Sources above 31 are not
        /// wired on `virt` (it has 96, but the kernel enables only the first 32).
        fn irq_enable(irq: u32) -> bool {
            if irq == 0 || irq >= 32 {
                return false;
            }
            mmio_write(PLIC_BASE + 4 * irq as usize, 1);
            let enabled = mmio_read(PLIC_ENABLE_CTX0);
            mmio_write(PLIC_ENABLE_CTX0, enabled | 1 << irq);
            true
        }

        fn irq_complete(irq: u32) {
            mmio_write(PLIC_CLAIM_CTX0, irq);
        }

        fn uptime_us() -> u64 {
            mtime() / (MTIME_HZ / 1_000_000)
        }

        /// `minstret`.
        fn counter() -> u64 {
            riscv::register::minstret::read64()
        }

        /// Without `-icount`, QEMU's `minstret` follows the host clock; the launcher
        /// says it runs with `-icount` by the boot option `amber.icount`.
        fn counter_exact() -> bool {
            ICOUNT.load(Ordering::Relaxed)
        }

        /// Lets U-mode read `cycle` and `instret` (the benchmark task measures with
        /// them). `virt` has S-mode, so both `mcounteren` and `scounteren` must allow it.
        fn enable_user_counters() {
            // SAFETY: exposing the counters to U-mode grants no access to anything else.
            unsafe {
                riscv::register::mcounteren::set_cy();
                riscv::register::mcounteren::set_ir();
                riscv::register::scounteren::set_cy();
                riscv::register::scounteren::set_ir();
            }
        }

        fn exit(code: ExitCode) -> ! {
            TestDevice.exit(code as u32)
        }

        fn exit_success() -> ! {
            TestDevice.exit_success()
        }
    }
}
