//! Task faults, exit and restart: what happens to a thread that ends, and the report the
//! arch code prints. A fault affects only the faulting task; the kernel and the other
//! tasks keep running. This file must never panic on a fault: faults are user input.

use core::fmt;

use crate::{
    capgroup::TaskName,
    context::Context,
    ids::ThreadId,
    kernel::Kernel,
    platform::Platform,
    spec::FaultPolicy,
    thread::{ThreadState, FAULT_EXIT_CODE},
};

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

impl Kernel {
    /// The current thread faulted: ends or restarts its task per its policy and says
    /// what happened. Other tasks are untouched (except partners woken with
    /// `PeerGone`).
    pub fn fault(&mut self, cause: Fault, addr: u32, _plat: &mut impl Platform) -> FaultReport {
        let Some(t) = self.current else {
            return FaultReport {
                task: TaskName::ROOT,
                cause,
                addr,
                action: FaultAction::NoTask,
            };
        };
        let task = self.group_of(t).name;
        let action = match self.thread(t).fault {
            FaultPolicy::End => {
                self.exit_thread(t, FAULT_EXIT_CODE);
                FaultAction::Ended
            }
            FaultPolicy::Restart => {
                self.restart_thread(t);
                FaultAction::Restarted
            }
        };
        self.schedule();
        FaultReport {
            task,
            cause,
            addr,
            action,
        }
    }

    /// Ends thread `t` (state Exited, never scheduled again; its CapGroup and caps
    /// stay; its commit watch ends). A caller waiting for its reply gets `PeerGone`.
    pub(crate) fn exit_thread(&mut self, t: ThreadId, code: u32) {
        self.release_partners(t);
        let th = self.thread_mut(t);
        th.state = ThreadState::Exited;
        th.exit_code = code;
        th.watch = None;
        log::info!(
            "task {} exited with code {:#x}",
            self.group_of(t).name,
            code
        );
    }

    /// Starts `t` again at its entry with a fresh context and no commit watch (the
    /// restarted code has not asked for one); its caps are kept.
    fn restart_thread(&mut self, t: ThreadId) {
        self.release_partners(t);
        let th = self.thread_mut(t);
        th.ctx = Context::start(th.entry, th.stack_top);
        th.watch = None;
        self.make_ready(t);
    }

    /// Unlinks `t` from IPC partners: the caller it owes a reply gets `PeerGone`.
    /// (A running thread is blocked on nothing, so nothing else refers to it.)
    fn release_partners(&mut self, t: ThreadId) {
        self.drop_reply(t);
    }

    /// Timer interrupt: expires timers, then round robin (the running thread goes to
    /// the back of its priority).
    pub fn tick(&mut self, plat: &mut impl Platform) {
        self.expire_timers(plat.now_ticks());
        self.rotate();
    }
}
