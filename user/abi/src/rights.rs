//! Capability rights: what a capability lets its holder do. Bits only; which call needs
//! which right is documented here and enforced by the kernel, never by this crate.

bitflags::bitflags! {
    /// The rights a capability carries. Deriving only ever removes rights.
    ///
    /// | kind | READ | WRITE | EXEC | GRANT | DELETE |
    /// |------|------|-------|------|-------|--------|
    /// | Endpoint | `Recv` | `Send`, `Call` | – | transfer this cap | `ObjDelete` |
    /// | Notification | `Wait`, `Poll` | `Signal`, be a timer's or a commit watch's target | – | transfer | `ObjDelete` |
    /// | IrqNotification | `IrqWait` | `IrqAck` | – | transfer | `ObjDelete` |
    /// | Timer | – | `TimerSet` | – | transfer | `ObjDelete` |
    /// | MemObj | PMP read | PMP write | PMP execute | transfer | `ObjDelete` |
    /// | NvmRegion | (NVM service) | (NVM service) | – | transfer | `ObjDelete` |
    /// | CapGroup | `TaskInfo` | – | – | transfer | never deletable |
    ///
    /// `CapDerive`, `CapDelete`, `CapRevoke` and `CapInfo` need no right: they never
    /// widen authority and never let a capability leave the caller's CapGroup (only
    /// GRANT does that).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Rights: u32 {
        /// Read, receive, wait.
        const READ = 1 << 0;
        /// Write, send, signal, acknowledge.
        const WRITE = 1 << 1;
        /// Execute (memory only).
        const EXEC = 1 << 2;
        /// Transfer this capability to another task over IPC.
        const GRANT = 1 << 3;
        /// Delete the object (`ObjDelete`), revoking every capability to it.
        const DELETE = 1 << 4;
    }
}

impl Rights {
    /// The rights that matter for memory protection.
    pub const MEMORY: Rights = Rights::READ.union(Rights::WRITE).union(Rights::EXEC);
}
