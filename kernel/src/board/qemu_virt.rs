//! QEMU `virt` (RV32): UART, CLINT timer, PLIC, test device and the ivshmem NVM.
//!
//! Addresses come from QEMU's `hw/riscv/virt.c` (see DESIGN.md). This file wires the
//! drivers to them; it must never hold policy (what to do with a byte, when to
//! checkpoint), only the means.

use crate::exit::ExitCode;
use amber_nvm::MmioNvm;
use amber_pci::{place_bar64, Ecam};
use amber_uart16550::Uart;
use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering};
use qemu_exit::QEMUExit;
use riscv::interrupt::machine::Interrupt;

const UART_BASE: usize = 0x1000_0000;
const UART_IRQ: u32 = 10;
const CLINT_MTIMECMP: usize = 0x0200_4000;
const CLINT_MTIME: usize = 0x0200_BFF8;
/// CLINT `mtime` frequency on `virt`.
const MTIME_HZ: u64 = 10_000_000;
/// Timer interrupt period: 10 ms.
const TICK: u64 = MTIME_HZ / 100;
const PLIC_BASE: usize = 0x0C00_0000;
const PLIC_ENABLE_CTX0: usize = PLIC_BASE + 0x2000;
const PLIC_THRESHOLD_CTX0: usize = PLIC_BASE + 0x20_0000;
const PLIC_CLAIM_CTX0: usize = PLIC_BASE + 0x20_0004;
const TEST_DEVICE: usize = 0x0010_0000;
const PCIE_ECAM: usize = 0x3000_0000;
const PCIE_MMIO_BASE: u64 = 0x4000_0000;
const PCIE_MMIO_LEN: u64 = 0x4000_0000;
const IVSHMEM_VENDOR: u16 = 0x1af4;
const IVSHMEM_DEVICE: u16 = 0x1110;
/// ivshmem's shared memory is BAR2 (64-bit, prefetchable).
const IVSHMEM_MEMORY_BAR: u8 = 2;

/// The console UART. Lock it only with interrupts off (see `console`).
// SAFETY: UART_BASE is the 16550 of `virt`, and only this static reaches it.
pub static CONSOLE_UART: spin::Mutex<Uart> = spin::Mutex::new(unsafe { Uart::new(UART_BASE) });

static TICKS: AtomicU32 = AtomicU32::new(0);
static UART_RX: AtomicU32 = AtomicU32::new(0);

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

/// Milliseconds since reset.
pub fn uptime_ms() -> u64 {
    mtime() / (MTIME_HZ / 1000)
}

/// Microseconds since reset: host time when QEMU runs without `-icount`.
pub fn uptime_us() -> u64 {
    mtime() / (MTIME_HZ / 1_000_000)
}

/// Lets U-mode read `cycle` and `instret` (the benchmark task measures with them).
/// `virt` has S-mode, so both `mcounteren` and `scounteren` must allow it.
pub fn enable_user_counters() {
    // SAFETY: exposing the counters to U-mode grants no access to anything else.
    unsafe {
        riscv::register::mcounteren::set_cy();
        riscv::register::mcounteren::set_ir();
        riscv::register::scounteren::set_cy();
        riscv::register::scounteren::set_ir();
    }
}

/// Timer ticks taken since interrupts were enabled.
pub fn ticks() -> u32 {
    TICKS.load(Ordering::Relaxed)
}

/// Bytes received on the console UART.
pub fn uart_bytes_received() -> u32 {
    UART_RX.load(Ordering::Relaxed)
}

/// Starts the 10 ms tick, routes the UART's IRQ through the PLIC to M-mode, and
/// enables interrupts.
pub fn init_interrupts() {
    mmio_write(PLIC_BASE + 4 * UART_IRQ as usize, 1); // priority 1
    mmio_write(PLIC_ENABLE_CTX0, 1 << UART_IRQ);
    mmio_write(PLIC_THRESHOLD_CTX0, 0);
    set_timer(mtime() + TICK);
    // SAFETY: the trap vector is installed and both handlers are ready.
    unsafe {
        riscv::interrupt::enable_interrupt(Interrupt::MachineTimer);
        riscv::interrupt::enable_interrupt(Interrupt::MachineExternal);
        riscv::interrupt::enable();
    }
}

/// The timer interrupt: count a tick and arm the next one.
pub fn timer_interrupt() {
    TICKS.store(
        TICKS.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
    set_timer(mtime() + TICK);
}

/// The console byte that stands for the power-failure interrupt (PFI): Ctrl-P. The
/// host raises the PFI by sending it; on a board it would be a comparator's GPIO.
pub const POWER_FAIL_BYTE: u8 = 0x10;

/// What an external interrupt turned out to be.
pub enum External {
    /// A device interrupt for a task; it stays masked in the PLIC until
    /// [`irq_complete`] (the task's acknowledge).
    Irq(u32),
    /// The power is failing: checkpoint now.
    PowerFailure,
}

/// An external interrupt: claim it from the PLIC. The console UART is served and
/// completed here; any other source is returned to be delivered to its task.
pub fn external_interrupt() -> Option<External> {
    let irq = mmio_read(PLIC_CLAIM_CTX0);
    if irq == 0 {
        return None;
    }
    if irq != UART_IRQ {
        return Some(External::Irq(irq));
    }
    let mut power_fail = false;
    loop {
        // The guard must be gone before logging, which locks the UART again.
        let Some(byte) = CONSOLE_UART.lock().receive() else {
            break;
        };
        let count = UART_RX.load(Ordering::Relaxed).wrapping_add(1);
        UART_RX.store(count, Ordering::Relaxed);
        if byte == POWER_FAIL_BYTE {
            power_fail = true;
        } else {
            log::info!("console: received byte {byte:#04x}");
        }
    }
    mmio_write(PLIC_CLAIM_CTX0, irq);
    power_fail.then_some(External::PowerFailure)
}

/// Routes PLIC source `irq` to M-mode (priority 1). Sources above 31 are not wired
/// on `virt` (it has 96, but the kernel enables only the first 32).
pub fn irq_enable(irq: u32) {
    if irq == 0 || irq >= 32 {
        log::warn!("PLIC: interrupt {irq} cannot be enabled");
        return;
    }
    mmio_write(PLIC_BASE + 4 * irq as usize, 1);
    let enabled = mmio_read(PLIC_ENABLE_CTX0);
    mmio_write(PLIC_ENABLE_CTX0, enabled | 1 << irq);
}

/// Completes a claimed interrupt, so the PLIC may deliver it again.
pub fn irq_complete(irq: u32) {
    mmio_write(PLIC_CLAIM_CTX0, irq);
}

/// Prints what a task wrote to its console, one log line per call.
pub fn console_task_output(task: &str, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let text = core::str::from_utf8(bytes).unwrap_or("<output that is not UTF-8>");
    log::info!("[{task}] {}", text.trim_end_matches('\n'));
}

/// The kernel command line from the device tree QEMU passed in a1 (empty if none).
pub fn bootargs(dtb: usize) -> &'static [u8] {
    // SAFETY: QEMU places a valid flattened device tree at `dtb` above the kernel
    // image, and nothing ever writes there, so it lives for the whole run.
    match unsafe { fdt::Fdt::from_ptr(dtb as *const u8) } {
        // The raw bytes, without the terminating NUL: whether they are UTF-8 is for
        // the parser to say (the fdt crate's `bootargs()` drops them silently if not).
        Ok(tree) => tree
            .find_node("/chosen")
            .and_then(|n| n.property("bootargs"))
            .map(|p| p.value.strip_suffix(&[0]).unwrap_or(p.value))
            .unwrap_or(&[]),
        Err(e) => {
            log::warn!("no usable device tree at {dtb:#x} ({e:?}): no boot options");
            &[]
        }
    }
}

/// Why no NVM could be set up.
pub enum NvmSetupError {
    NoDevice,
    Pci(amber_pci::PciError),
    TooLarge(u64),
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
        }
    }
}

/// Finds the ivshmem device, maps its memory BAR into the PCIe window, and returns it.
pub fn find_nvm() -> Result<MmioNvm, NvmSetupError> {
    // SAFETY: PCIE_ECAM is `virt`'s ECAM, and only the boot path configures PCI.
    let mut ecam = unsafe { Ecam::new(PCIE_ECAM) };
    let bdf = amber_pci::find(&mut ecam, IVSHMEM_VENDOR, IVSHMEM_DEVICE)
        .ok_or(NvmSetupError::NoDevice)?;
    let (base, size) = place_bar64(
        &mut ecam,
        bdf,
        IVSHMEM_MEMORY_BAR,
        PCIE_MMIO_BASE,
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
    Ok(unsafe { MmioNvm::new(base as usize as *mut u8, size) })
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

/// Stops QEMU with a failure code.
pub fn exit(code: ExitCode) -> ! {
    TestDevice.exit(code as u32)
}

/// Stops QEMU with success.
pub fn exit_success() -> ! {
    TestDevice.exit_success()
}
