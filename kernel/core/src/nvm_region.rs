//! The NvmRegion object: a granted range of NVM, by offset. The kernel only records and
//! guards the grant; the NVM service acting on it comes with the checkpoint issue. This
//! file must never map NVM into a task (a MemObj does that).

/// A range of NVM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NvmRegion {
    /// Offset in NVM.
    pub offset: u32,
    /// Length (nonzero, does not wrap).
    pub len: u32,
}
