//! Task lifecycle: what happens to a thread that faults or ends, how it starts again,
//! and the timer tick. A fault affects only the faulting task; the kernel and the other
//! tasks keep running. This file must never panic on a fault: faults are user input.

use crate::{
    context::Context,
    fault::{Fault, FaultAction, FaultReport},
    ids::ThreadId,
    kernel::Kernel,
    obj::{TaskName, ThreadState, FAULT_EXIT_CODE},
    platform::Platform,
    spec::FaultPolicy,
};

impl Kernel {
    /// The current thread faulted: ends or restarts its task per its policy and says
    /// what happened. Other tasks are untouched (except partners woken with
    /// `PeerGone`).
    pub fn fault(&mut self, cause: Fault, addr: u32) -> FaultReport {
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
    /// stay; its commit watch and IPC buffer end). A caller waiting for its reply gets `PeerGone`.
    pub(crate) fn exit_thread(&mut self, t: ThreadId, code: u32) {
        self.release_partners(t);
        self.set_state(t, ThreadState::Exited);
        let th = self.thread_mut(t);
        th.exit_code = code;
        th.watch = None;
        th.ipc_buffer = None;
        log::info!(
            "task {} exited with code {:#x}",
            self.group_of(t).name,
            code
        );
    }

    /// Starts `t` again at its entry with a fresh context, no commit watch and no IPC
    /// buffer (the restarted code has not asked for them); its caps are kept.
    fn restart_thread(&mut self, t: ThreadId) {
        self.release_partners(t);
        let th = self.thread_mut(t);
        th.ctx = Context::start(th.entry, th.stack_top);
        th.watch = None;
        th.ipc_buffer = None;
        self.make_ready(t);
    }

    /// Unlinks `t` from IPC partners: the caller it owes a reply gets `PeerGone`.
    /// (A running thread is blocked on nothing, so nothing else refers to it.)
    fn release_partners(&mut self, t: ThreadId) {
        self.drop_reply(t);
    }

    /// Timer interrupt: expires timers, then round robin (the running thread goes to
    /// the back of its priority).
    pub fn tick(&mut self, plat: &mut dyn Platform) {
        self.expire_timers(plat.now_ticks());
        self.rotate();
    }
}
