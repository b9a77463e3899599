//! Boards: where concrete devices are wired together, behind one contract the compiler
//! checks (`Board`). A board decodes its interrupt controller into kernel `Event`s,
//! drives the console, the tick and the exit device, finds the NVM and hands it over
//! as an `Nvm`, and says where memory is ([`MemoryMap`]). Only this folder names a
//! device address, an interrupt controller or a board CSR; the rest of the kernel sees
//! the `Chosen` board through the trait (`Board`, `Event` and `Chosen` exist in the
//! device build only). A new board is a folder here (its
//! `mod.rs`, `map.rs` and `link.x`) and a line in `build.rs`.
//!
//! The memory maps are plain data and build on the host too, so `cargo xtask` places
//! tasks where the board says (`qemu_virt::map::MAP`).

pub mod esp32c3;
pub mod memory_map;
pub mod qemu_virt;

pub use memory_map::{MemoryMap, Range};

/// The boards, by the name `AMBER_BOARD` gives them (`build.rs`), with their maps.
pub const BOARDS: &[(&str, &MemoryMap)] = &[
    ("qemu_virt", &qemu_virt::map::MAP),
    ("esp32c3", &esp32c3::map::MAP),
];

#[cfg(target_os = "none")]
pub use contract::{Board, Event};

/// The board this kernel is built for.
#[cfg(all(target_os = "none", amber_board = "qemu_virt"))]
pub type Chosen = qemu_virt::QemuVirt;
#[cfg(all(target_os = "none", amber_board = "esp32c3"))]
pub type Chosen = esp32c3::Esp32c3;

#[cfg(target_os = "none")]
mod contract {
    use super::MemoryMap;
    use crate::exit::ExitCode;
    use amber_nvm::Nvm;
    use core::fmt;

    /// What an interrupt turned out to be, once the board decoded and served it: the
    /// tick, device interrupt n for its task (masked until the task acknowledges it),
    /// the power failing, a byte on the console.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Event {
        Tick,
        Irq(u32),
        PowerFailure,
        ConsoleInput(u8),
    }

    /// The board contract. Every function runs with interrupts off and never
    /// allocates; a board holds the means, never policy (what to do with a byte, when
    /// to checkpoint).
    pub trait Board {
        /// The board's name, where memory is, and the period of [`Event::Tick`].
        const NAME: &'static str;
        const MAP: MemoryMap;
        const TICK_MS: u32;
        /// How the CPU's mtvec reaches the trap entry.
        const TRAP_VECTOR: crate::arch::TrapVector;

        type Console: fmt::Write + 'static;
        type Nvm: Nvm;
        type NvmError: fmt::Display;

        /// The console behind its lock (taken with interrupts off), after
        /// [`Board::init_console`], which runs first of all.
        fn console() -> &'static spin::Mutex<Self::Console>;
        fn init_console();
        /// The boot options (kernel command line) as the board's boot protocol
        /// carries them; `boot` is what the loader left in a0 and a1.
        fn boot_options(boot: [usize; 2]) -> &'static [u8];
        /// Finds the NVM device and makes it reachable.
        fn nvm() -> Result<Self::Nvm, Self::NvmError>;
        /// Bytes the NVM's bus has clocked so far, where it is a serial bus (SPI
        /// FRAM); `None` for memory-mapped NVM.
        fn nvm_wire_bytes(_nvm: &Self::Nvm) -> Option<u64> {
            None
        }
        /// Starts the tick and the sources the board serves itself (the console),
        /// and enables interrupts.
        fn start_interrupts();
        /// Claims and decodes the interrupt the CPU took with cause `cause`, serves
        /// what the board owns, and reports each event it found.
        fn claim(cause: u32, event: impl FnMut(Event));
        /// Stops (`false`) or starts again the console's receive interrupt: while it is
        /// stopped, received bytes stay in the device's FIFO and its sender waits.
        fn console_receive(on: bool);
        /// Routes device interrupt `irq` to the CPU (false: no such source), and lets
        /// it fire again once its driver acknowledged it.
        fn irq_enable(irq: u32) -> bool;
        fn irq_complete(irq: u32);
        /// Microseconds since reset (host time on QEMU without `-icount`).
        fn uptime_us() -> u64;
        /// The CPU's cycle or instruction counter, whether it counts retired
        /// instructions exactly (QEMU: only under `-icount`, which the launcher tells
        /// with `amber.icount`), and letting tasks read it.
        fn counter() -> u64;
        fn counter_exact() -> bool;
        fn enable_user_counters();
        /// Stops the machine, with a failure code or with success.
        fn exit(code: ExitCode) -> !;
        fn exit_success() -> !;
    }
}
