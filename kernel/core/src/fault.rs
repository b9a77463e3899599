//! Why a task trapped, and what the kernel did about it: the fault causes the arch code
//! decodes a trap into, and the report it prints. Plain data; the handling is in
//! `ops/lifecycle.rs`, and nothing here may panic, since faults are user input.

use core::fmt;

use crate::obj::TaskName;

/// Which kind of access faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Instruction fetch.
    Fetch,
    /// Load.
    Load,
    /// Store.
    Store,
}

/// Why a task trapped (the arch code decodes mcause into this).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Instruction fetch denied (PMP).
    InstructionAccess,
    /// Load denied (PMP).
    LoadAccess,
    /// Store denied (PMP).
    StoreAccess,
    /// Illegal instruction.
    IllegalInstruction,
    /// Misaligned access.
    Misaligned {
        /// Which access.
        access: Access,
    },
    /// `ebreak`.
    Breakpoint,
    /// Any other exception, by mcause.
    Other {
        /// The mcause value.
        mcause: u32,
    },
}

impl Fault {
    /// Decodes a RISC-V synchronous exception cause (mcause without the interrupt bit).
    pub fn from_mcause(mcause: u32) -> Fault {
        match mcause {
            0 => Fault::Misaligned {
                access: Access::Fetch,
            },
            1 => Fault::InstructionAccess,
            2 => Fault::IllegalInstruction,
            3 => Fault::Breakpoint,
            4 => Fault::Misaligned {
                access: Access::Load,
            },
            5 => Fault::LoadAccess,
            6 => Fault::Misaligned {
                access: Access::Store,
            },
            7 => Fault::StoreAccess,
            other => Fault::Other { mcause: other },
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::InstructionAccess => f.write_str("instruction access fault"),
            Fault::LoadAccess => f.write_str("load access fault"),
            Fault::StoreAccess => f.write_str("store access fault"),
            Fault::IllegalInstruction => f.write_str("illegal instruction"),
            Fault::Misaligned {
                access: Access::Fetch,
            } => f.write_str("misaligned instruction fetch"),
            Fault::Misaligned {
                access: Access::Load,
            } => f.write_str("misaligned load"),
            Fault::Misaligned {
                access: Access::Store,
            } => f.write_str("misaligned store"),
            Fault::Breakpoint => f.write_str("breakpoint"),
            Fault::Other { mcause } => write!(f, "exception (mcause {mcause})"),
        }
    }
}

/// What the kernel did about a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// The task ended.
    Ended,
    /// The task starts again at its entry.
    Restarted,
    /// No thread was current (a kernel-side trap the arch code misrouted).
    NoTask,
}

/// What to print about a fault: task, cause, address, action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultReport {
    /// The faulting task.
    pub task: TaskName,
    /// The cause.
    pub cause: Fault,
    /// The faulting address (mtval).
    pub addr: u32,
    /// What was done.
    pub action: FaultAction,
}

impl fmt::Display for FaultReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let action = match self.action {
            FaultAction::Ended => "task ended",
            FaultAction::Restarted => "task restarted",
            FaultAction::NoTask => "no task was running",
        };
        write!(
            f,
            "task {}: {} at {:#010x}; {}",
            self.task, self.cause, self.addr, action
        )
    }
}
