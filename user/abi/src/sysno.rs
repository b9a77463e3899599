//! Syscall numbers, object kind numbers and task state numbers: the integers that name
//! things across the ecall boundary. Plain enums and conversions only; never behaviour.

/// A syscall number, passed in `a7`. The table in the crate doc says what each does.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sysno {
    /// Returns at once; for measuring the syscall path.
    Null = 0,
    /// Gives up the rest of the time slice.
    Yield = 1,
    /// Ends the calling task with an exit code.
    Exit = 2,
    /// Writes bytes to the console, attributed to the task.
    DebugWrite = 3,
    /// Sends a message on an endpoint, blocking until received.
    Send = 4,
    /// Sends a message and waits for the reply.
    Call = 5,
    /// Receives a message on an endpoint.
    Recv = 6,
    /// Replies to the caller whose message was received last.
    Reply = 7,
    /// Sets bits in a notification.
    Signal = 8,
    /// Waits for bits in a notification and clears them.
    Wait = 9,
    /// Reads and clears a notification's bits without blocking.
    Poll = 10,
    /// Waits until the interrupt has been delivered.
    IrqWait = 11,
    /// Acknowledges a delivered interrupt, letting the next one through.
    IrqAck = 12,
    /// Arms or disarms a one-shot timer.
    TimerSet = 13,
    /// Derives a capability with fewer rights into an empty slot.
    CapDerive = 14,
    /// Deletes one capability.
    CapDelete = 15,
    /// Deletes every capability derived from one, transitively.
    CapRevoke = 16,
    /// Tells the kind, rights and badge of a capability.
    CapInfo = 17,
    /// Deletes an object, revoking every capability to it.
    ObjDelete = 18,
    /// Tells a task's thread id, state and exit code.
    TaskInfo = 19,
    /// Tells the kernel's tick count.
    Now = 20,
    /// Waits until the kernel has committed a checkpoint that includes the caller.
    Checkpoint = 21,
    /// Registers (or removes) the caller's commit watch: after each committed
    /// checkpoint the kernel stores the value a task counter had in it and signals.
    CommitWatch = 22,
    /// A persist callback reports that it has persisted; the kernel takes its
    /// checkpoint once every callback has.
    PersistDone = 23,
    /// Replies to the caller owed (as `Reply`), then receives on an endpoint (as
    /// `Recv`), in one call: a server's loop.
    ReplyRecv = 24,
    /// Reads bytes of an NVM grant (an `eternal` memory object or an NvmRegion)
    /// through the kernel's NVM driver into the caller's memory.
    NvmRead = 25,
    /// Writes bytes from the caller's memory to an NVM grant through the kernel's NVM
    /// driver: on a serial bus the one way a task reaches the chip the kernel shares.
    NvmWrite = 26,
    /// Registers the caller's IPC buffer (checked once, here), or removes it.
    SetIpcBuffer = 27,
    /// Takes the bytes received on the console that are waiting, without blocking.
    ConsoleRead = 28,
}

impl Sysno {
    /// Every syscall, in number order.
    pub const ALL: [Sysno; 29] = [
        Sysno::Null,
        Sysno::Yield,
        Sysno::Exit,
        Sysno::DebugWrite,
        Sysno::Send,
        Sysno::Call,
        Sysno::Recv,
        Sysno::Reply,
        Sysno::Signal,
        Sysno::Wait,
        Sysno::Poll,
        Sysno::IrqWait,
        Sysno::IrqAck,
        Sysno::TimerSet,
        Sysno::CapDerive,
        Sysno::CapDelete,
        Sysno::CapRevoke,
        Sysno::CapInfo,
        Sysno::ObjDelete,
        Sysno::TaskInfo,
        Sysno::Now,
        Sysno::Checkpoint,
        Sysno::CommitWatch,
        Sysno::PersistDone,
        Sysno::ReplyRecv,
        Sysno::NvmRead,
        Sysno::NvmWrite,
        Sysno::SetIpcBuffer,
        Sysno::ConsoleRead,
    ];

    /// The syscall with number `n`, or `None` for an unknown number.
    pub fn from_u32(n: u32) -> Option<Sysno> {
        Self::ALL.get(usize::try_from(n).ok()?).copied()
    }
}

/// The kind of object a capability names (`CapInfo` result `a1`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjKind {
    /// A process: capability slots and one thread.
    CapGroup = 1,
    /// A thread; never named by a capability (reached through its CapGroup).
    Thread = 2,
    /// A range of RAM (or device MMIO) the holder may access.
    MemObj = 3,
    /// Synchronous IPC.
    Endpoint = 4,
    /// Asynchronous bits.
    Notification = 5,
    /// A device interrupt delivered to a user driver.
    IrqNotification = 6,
    /// A granted range of NVM.
    NvmRegion = 7,
    /// A one-shot timer that signals a notification.
    Timer = 8,
}

impl ObjKind {
    /// The kind with number `n`, or `None`.
    pub fn from_u32(n: u32) -> Option<ObjKind> {
        Some(match n {
            1 => ObjKind::CapGroup,
            2 => ObjKind::Thread,
            3 => ObjKind::MemObj,
            4 => ObjKind::Endpoint,
            5 => ObjKind::Notification,
            6 => ObjKind::IrqNotification,
            7 => ObjKind::NvmRegion,
            8 => ObjKind::Timer,
            _ => return None,
        })
    }
}

/// A task's state as `TaskInfo` reports it (result `a2`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Running or waiting for the CPU.
    Ready = 0,
    /// Waiting in a blocking syscall.
    Blocked = 1,
    /// Ended by `Exit` or by a fault with the End policy.
    Exited = 2,
}

#[cfg(test)]
mod tests {
    use super::{ObjKind, Sysno};

    #[test]
    fn every_syscall_number_round_trips() {
        for (i, s) in Sysno::ALL.iter().enumerate() {
            assert_eq!(*s as u32, i as u32, "ALL must be in number order");
            assert_eq!(Sysno::from_u32(i as u32), Some(*s));
        }
        assert_eq!(
            Sysno::from_u32(Sysno::ALL.len() as u32),
            None,
            "numbers past the table are unknown"
        );
        assert_eq!(Sysno::from_u32(u32::MAX), None);
    }

    #[test]
    fn object_kinds_round_trip() {
        for n in 0..20 {
            if let Some(k) = ObjKind::from_u32(n) {
                assert_eq!(k as u32, n);
            }
        }
        assert_eq!(ObjKind::from_u32(0), None, "0 is no kind");
    }
}
