//! The app the kernel was built with: its tasks as `cargo xtask` generated them from
//! the app description (`AMBER_APP`, see `build.rs`), or none. Data only; it must
//! never be changed at run time.

use amber_core::{CapSpec, FaultPolicy};

/// One task of the app.
pub struct TaskImage {
    pub name: &'static str,
    pub priority: u8,
    pub entry: u32,
    /// (base, length) of the task's code and read-only data, at its instruction-bus
    /// address.
    pub code: (u32, u32),
    /// (base, length) of the task's data, bss and stack.
    pub ram: (u32, u32),
    pub stack_top: u32,
    pub fault: FaultPolicy,
    /// (load address, length) of every loadable segment. The loader that loads the
    /// kernel placed each one (they are segments of the kernel's own image: QEMU's
    /// `-kernel`, the ESP32-C3's ROM loader), so the kernel copies none of them.
    pub segments: &'static [(u32, u32)],
    pub caps: &'static [CapSpec<'static>],
}

#[cfg(amber_app)]
mod generated {
    use super::TaskImage;
    include!(env!("AMBER_APP_RS"));
}

#[cfg(not(amber_app))]
mod generated {
    use super::TaskImage;
    pub const APP_NAME: &str = "(none)";
    pub const APP_DESCRIPTION: &str = "";
    pub const CHECKPOINT_MS: u32 = 0;
    pub const NVM_SIZE: u32 = 0;
    pub const POWER_FAILURE_GPIO: Option<u32> = None;
    pub const FRAM_PINS: crate::board::esp32c3::map::FramPins =
        crate::board::esp32c3::map::PAPER_PINS;
    pub static TASKS: &[TaskImage] = &[];
}

/// The app's name, description, periodic checkpoint interval, the NVM size its eternal
/// memory was placed for (0: it has none), the ESP32-C3 pin of its external
/// power-failure comparator (None: the brown-out detector) and the pins of its FRAM
/// (both checked by xtask; other boards ignore them), and its tasks.
pub use generated::{
    APP_DESCRIPTION, APP_NAME, CHECKPOINT_MS, FRAM_PINS, NVM_SIZE, POWER_FAILURE_GPIO, TASKS,
};

// An app with more tasks than the kernel holds is refused by `cargo xtask`; this
// stops one that bypassed it at build time, not at boot.
const _: () = assert!(TASKS.len() <= amber_core::MAX_TASKS);
