//! The error codes a syscall returns in `a0`: each names what went wrong. Plain values
//! only; this file must never grow a code without a sentence saying when it is returned.

use core::fmt;

/// Why a syscall failed (`a0` ≠ 0). Success is `a0` = 0 and is not an `Error`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// `a7` is not a syscall number.
    BadSyscall = 1,
    /// A slot index is not below the number of slots (and is not [`crate::NO_SLOT`]
    /// where that is allowed).
    BadSlot = 2,
    /// The slot holds no capability (it was never filled, or was deleted or revoked).
    EmptySlot = 3,
    /// The capability names an object of another kind than the call needs.
    WrongKind = 4,
    /// The capability lacks a right the call needs.
    NoRights = 5,
    /// A (pointer, length) does not lie entirely inside one memory region the caller may
    /// access with the needed rights (device regions never qualify), or it overflows.
    BadPointer = 6,
    /// A length exceeds its documented maximum.
    TooLong = 7,
    /// The destination slot already holds a capability.
    SlotOccupied = 8,
    /// An argument has a value the call does not accept: unknown rights bits, or a new
    /// badge for a capability that already has one.
    BadArgument = 9,
    /// The partner of a blocking call went away: the server ended, restarted or dropped
    /// the reply, or the object waited on was deleted.
    PeerGone = 10,
    /// The object is not in a state that allows the call: `Reply` with no caller
    /// waiting, `IrqAck` with no interrupt delivered.
    WrongState = 11,
    /// The sender transfers a capability but the receiver named no slot for it. The
    /// message is not delivered.
    NoReceiveSlot = 12,
    /// The capability would give the receiving task more memory regions than PMP can
    /// hold.
    NoSpace = 13,
    /// `Checkpoint`: the kernel tried to write a checkpoint and failed (NVM error). The
    /// state since the last committed checkpoint is not durable yet.
    CheckpointFailed = 14,
    /// `Recv` or `Checkpoint` by a persist callback the kernel is asking to persist
    /// (see "Persist callbacks" in the crate doc): nothing was received or waited
    /// for; persist, then call `PersistDone`.
    Interrupted = 15,
    /// `NvmRead` or `NvmWrite`: the NVM device reported an error; what a write stored
    /// is unknown.
    NvmFailed = 16,
}

impl Error {
    /// Every error, in code order.
    pub const ALL: [Error; 16] = [
        Error::BadSyscall,
        Error::BadSlot,
        Error::EmptySlot,
        Error::WrongKind,
        Error::NoRights,
        Error::BadPointer,
        Error::TooLong,
        Error::SlotOccupied,
        Error::BadArgument,
        Error::PeerGone,
        Error::WrongState,
        Error::NoReceiveSlot,
        Error::NoSpace,
        Error::CheckpointFailed,
        Error::Interrupted,
        Error::NvmFailed,
    ];

    /// The error with code `n`; `None` for 0 (success) and unknown codes.
    pub fn from_u32(n: u32) -> Option<Error> {
        let i = usize::try_from(n.checked_sub(1)?).ok()?;
        Self::ALL.get(i).copied()
    }

    /// Turns a returned `a0` into a result: 0 is `Ok`, a known code its error, any
    /// other value `BadSyscall` (a kernel that speaks another ABI).
    pub fn check(a0: u32) -> Result<(), Error> {
        if a0 == 0 {
            Ok(())
        } else {
            Err(Error::from_u32(a0).unwrap_or(Error::BadSyscall))
        }
    }

    /// A short description in words.
    pub fn describe(self) -> &'static str {
        match self {
            Error::BadSyscall => "unknown syscall number",
            Error::BadSlot => "capability slot index out of range",
            Error::EmptySlot => "capability slot is empty",
            Error::WrongKind => "capability names the wrong kind of object",
            Error::NoRights => "capability lacks a needed right",
            Error::BadPointer => "pointer and length outside the task's memory",
            Error::TooLong => "length above the maximum",
            Error::SlotOccupied => "destination slot is not empty",
            Error::BadArgument => "argument value not accepted",
            Error::PeerGone => "partner went away",
            Error::WrongState => "object is not in a state that allows this call",
            Error::NoReceiveSlot => "receiver named no slot for the capability",
            Error::NoSpace => "receiver cannot hold another memory region",
            Error::CheckpointFailed => "the checkpoint could not be committed",
            Error::Interrupted => "the kernel asks this persist callback to persist",
            Error::NvmFailed => "the NVM device reported an error",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (error {})", self.describe(), *self as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn every_error_code_round_trips_and_zero_is_success() {
        for (i, e) in Error::ALL.iter().enumerate() {
            assert_eq!(*e as u32, i as u32 + 1, "ALL must be in code order");
            assert_eq!(Error::from_u32(*e as u32), Some(*e));
            assert_eq!(Error::check(*e as u32), Err(*e));
        }
        assert_eq!(Error::from_u32(0), None, "0 means success, not an error");
        assert_eq!(Error::check(0), Ok(()));
        assert_eq!(Error::from_u32(Error::ALL.len() as u32 + 1), None);
        assert_eq!(Error::check(999), Err(Error::BadSyscall));
    }
}
