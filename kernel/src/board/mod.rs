//! Boards: where concrete devices are wired together, behind one contract the compiler
//! checks ([`Board`]). A board decodes its interrupt controller into kernel [`Event`]s,
//! drives the console, the tick and the exit device, finds the NVM and hands it over
//! as an `Nvm`, and says where memory is ([`MemoryMap`]). Only this folder names a
//! device address, an interrupt controller or a board CSR; the rest of the kernel sees
//! the [`Chosen`] board through the trait. A new board is a folder here (its
//! `mod.rs`, `map.rs` and `link.x`) and a line in `build.rs`.
//!
//! The memory maps are plain data and build on the host too, so `cargo xtask` places
//! tasks where the board says (`qemu_virt::map::MAP`).

pub mod memory_map;
pub mod qemu_virt;

pub use memory_map::{MemoryMap, Range};

/// The boards, by the name `AMBER_BOARD` gives them (`build.rs`), with their maps.
pub const BOARDS: &[(&str, &MemoryMap)] = &[("qemu_virt", &qemu_virt::map::MAP)];

#[cfg(target_os = "none")]
pub use contract::{Board, Event};

/// The board this kernel is built for.
#[cfg(all(target_os = "none", amber_board = "qemu_virt"))]
pub type Chosen = qemu_virt::QemuVirt;

#[cfg(target_os = "none")]
mod contract {
    use super::MemoryMap;
    use crate::exit::ExitCode;
    use amber_nvm::Nvm;
    use core::fmt;

    /// What an interrupt turned out to be, once the board has decoded and served it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Event {
        /// The periodic tick ([`Board::TICK_MS`]).
        Tick,
        /// Device interrupt `n` for the task that owns it; it stays masked until the
        /// task acknowledges it ([`Board::irq_complete`]).
        Irq(u32),
        /// The power is failing: checkpoint and halt.
        PowerFailure,
        /// A byte arrived on the console.
        ConsoleInput(u8),
    }

    /// The board contract. Every function runs with interrupts off; none may
    /// allocate. A board holds means, never policy (what to do with a byte, when to
    /// checkpoint): that is the kernel's.
    pub trait Board {
        /// The board's name, for the boot line.
        const NAME: &'static str;
        /// Where memory is.
        const MAP: MemoryMap;
        /// Milliseconds between [`Event::Tick`]s.
        const TICK_MS: u32;

        /// The console UART.
        type Console: fmt::Write + 'static;
        /// The NVM device as the kernel reaches it.
        type Nvm: Nvm;
        /// Why no NVM could be set up.
        type NvmError: fmt::Display;

        /// The console, behind its lock (taken only with interrupts off). Usable
        /// after [`Board::init_console`].
        fn console() -> &'static spin::Mutex<Self::Console>;
        /// Sets the console up; called first of all.
        fn init_console();
        /// The boot options (the kernel command line) as the board's boot protocol
        /// carries them; `boot` is what the loader left in a0 and a1.
        fn boot_options(boot: [usize; 2]) -> &'static str;
        /// Finds the NVM device and makes it reachable.
        fn nvm() -> Result<Self::Nvm, Self::NvmError>;
        /// Starts the tick and the interrupt sources the board itself serves (the
        /// console), and enables interrupts.
        fn start_interrupts();
        /// Claims and decodes the interrupt the CPU took with cause `cause`, serving
        /// what the board owns (the console, the tick's timer), and reports each
        /// event it found.
        fn claim(cause: u32, event: impl FnMut(Event));
        /// Routes device interrupt `irq` to the CPU (at a driver's first wait);
        /// false when the board has no such source.
        fn irq_enable(irq: u32) -> bool;
        /// Lets device interrupt `irq` fire again (the driver acknowledged it).
        fn irq_complete(irq: u32);
        /// Milliseconds since reset.
        fn uptime_ms() -> u64;
        /// The CPU's cycle or instruction counter.
        fn counter() -> u64;
        /// Whether [`Board::counter`] counts retired instructions exactly (on QEMU
        /// only under `-icount`, which the launcher tells with `amber.icount`).
        fn counter_exact() -> bool;
        /// Lets tasks read the counters.
        fn enable_user_counters();
        /// Stops the machine with a failure code.
        fn exit(code: ExitCode) -> !;
        /// Stops the machine with success.
        fn exit_success() -> !;
    }
}
