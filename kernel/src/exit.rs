//! Why the kernel stopped: the exit codes it hands to QEMU's test device.
//!
//! The host (xtask, the integration tests) reads these from QEMU's exit status, so
//! they are shared from here and must never be renumbered. QEMU passes 8 bits, and
//! 0 means success, so every failure is in 1..=255.

/// A failure exit code of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ExitCode {
    /// A kernel invariant broke (`panic!`).
    Panic = 1,
    /// The board found no NVM device.
    NoNvmDevice = 2,
    /// The NVM holds something the kernel will not use without `--format`.
    NvmRefused = 3,
    /// The NVM device failed during boot.
    NvmIo = 4,
    /// A boot option was malformed.
    BadBootArgs = 5,
    /// A power cut was injected (`amber.cut`): not a failure of the kernel, the
    /// crash harness asked for it.
    PowerCut = 6,
    /// The app built into the image breaks a rule of the kernel (too many tasks, a
    /// bad name, priority or capability): found before the NVM is touched.
    BadApp = 7,
}

impl ExitCode {
    /// The code as QEMU reports it in its exit status.
    pub const fn code(self) -> i32 {
        self as i32
    }
}
