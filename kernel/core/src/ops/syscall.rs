//! Syscall dispatch: decodes a7/a0..a5 of the current thread, checks the number, runs
//! the call, writes a0 (status) and the results, and reschedules when the call changed
//! who may run. Each call's checks
//! live with its object type; this file must never touch user memory or capabilities
//! itself, only route.
//!
//! The fast path ([`Kernel::fast_syscall`]) routes the three calls whose cost matters
//! most (Null, and Call and ReplyRecv between a client and a waiting server) past the
//! general dispatch, the checkpoint cycle and the scheduler's pick, when a cheap test
//! shows they would change nothing of what those do; it must either end the call
//! exactly as [`Kernel::syscall`] and the cycle would, or change nothing at all (the
//! host tests compare the two on copies of one state).

use super::outcome::{write_results, Outcome, Results};
use crate::{
    abi::{Error, ObjKind, Rights, Sysno, MAX_DEBUG_WRITE, NO_SLOT},
    context::reg,
    ids::ThreadId,
    kernel::Kernel,
    obj::Object,
    platform::{Platform, UserMemory},
};

impl Kernel {
    /// Handles the `ecall` of the current thread (its registers already saved in its
    /// context): advances pc past the ecall, runs the call, and may block the caller
    /// and change [`Kernel::current`]. Does nothing when no thread is current.
    pub fn syscall(&mut self, mem: &mut dyn UserMemory, plat: &mut dyn Platform) {
        let Some(t) = self.current else { return };
        let ctx = &mut self.thread_mut(t).ctx;
        ctx.pc = ctx.pc.wrapping_add(4);
        let nr = ctx.regs[reg::A7];
        let a = [
            ctx.arg(0),
            ctx.arg(1),
            ctx.arg(2),
            ctx.arg(3),
            ctx.arg(4),
            ctx.arg(5),
        ];
        let changes = self.sched_changes;
        let phase = self.persist_active();
        let outcome = match Sysno::from_u32(nr) {
            Some(s) => self.dispatch(t, s, a, mem, plat),
            None => Outcome::err(Error::BadSyscall),
        };
        if let Outcome::Done(r) = outcome {
            write_results(&mut self.thread_mut(t).ctx.regs, r);
        }
        // Who runs depends on the scheduler's index and the ready threads' `seq` (both
        // change only in `set_state`, which counts) and, in a persist phase, on who
        // serves it. With neither, `current` (the pick before this call) is still the
        // pick, and the call that changed nothing returns to its caller at once.
        if self.sched_changes != changes || phase || self.persist_active() {
            self.schedule();
        }
    }

    /// The fast path of the current thread's `ecall` (its registers saved in its
    /// context; `nr` is its a7, as saved there, which the glue still holds in a
    /// register), for the glue to try before [`Kernel::syscall`]: Null; Call to a
    /// receiver waiting on the endpoint; ReplyRecv that gives the reply owed and then
    /// waits, no sender being queued (see `ops/ipc.rs` for what each needs). Returns
    /// the thread to run, now [`Kernel::current`], having done exactly what
    /// [`Kernel::syscall`] and then [`Kernel::checkpoint_event`] with
    /// [`CheckpointEvent::Syscall`] would have done (the latter: nothing, since neither
    /// a checkpoint request nor a persist phase is pending). `None`: nothing changed,
    /// take the general path. The thread returned is marked dirty (it is about to run),
    /// as [`Kernel::context_mut`] would.
    ///
    /// It is [`Kernel::fast_null`] for Null and [`Kernel::fast_ipc`] for the others,
    /// which the glue may call apart (so that the null syscall's path does not carry
    /// the IPC path's frame).
    ///
    /// [`CheckpointEvent::Syscall`]: crate::CheckpointEvent::Syscall
    pub fn fast_syscall(&mut self, nr: u32, mem: &mut dyn UserMemory) -> Option<ThreadId> {
        if nr == Sysno::Null as u32 {
            self.fast_null()
        } else {
            self.fast_ipc(mem, nr)
        }
    }

    /// [`Kernel::fast_syscall`] for Null: success, and the caller runs on (outside a
    /// persist phase and with no checkpoint asked for, as every fast path).
    #[inline]
    pub fn fast_null(&mut self) -> Option<ThreadId> {
        if self.cycle.busy() {
            return None;
        }
        let t = self.current?;
        let ctx = &mut self.thread_mut(t).ctx;
        ctx.regs[reg::A0] = 0;
        ctx.pc = ctx.pc.wrapping_add(4);
        Some(t)
    }

    fn dispatch(
        &mut self,
        t: ThreadId,
        s: Sysno,
        a: [u32; 6],
        mem: &mut dyn UserMemory,
        plat: &mut dyn Platform,
    ) -> Outcome {
        match s {
            Sysno::Null => Outcome::ok(),
            Sysno::Yield => {
                self.make_ready(t);
                Outcome::ok()
            }
            Sysno::Exit => {
                self.exit_thread(t, a[0]);
                Outcome::Exited
            }
            Sysno::DebugWrite => self.sys_debug_write(t, a[0], a[1], mem, plat),
            Sysno::Send => self.sys_send(mem, t, false),
            Sysno::Call => self.sys_send(mem, t, true),
            Sysno::Recv => self.sys_recv(mem, t),
            Sysno::Reply => self.sys_reply(mem, t),
            Sysno::ReplyRecv => self.sys_reply_recv(mem, t),
            Sysno::Signal => self.sys_signal(t, a[0], a[1]),
            Sysno::Wait => self.sys_wait(t, a[0], true),
            Sysno::Poll => self.sys_wait(t, a[0], false),
            Sysno::IrqWait => self.sys_irq_wait(t, a[0], plat),
            Sysno::IrqAck => self.sys_irq_ack(t, a[0], plat),
            Sysno::TimerSet => self.sys_timer_set(t, a, plat),
            Sysno::CapDerive => done(self.derive(t, a[0], a[1], a[2], a[3])),
            Sysno::CapDelete => done(
                self.lookup(t, a[0], None, Rights::empty())
                    .map(|(at, _)| self.delete_cap(at)),
            ),
            Sysno::CapRevoke => done(
                self.lookup(t, a[0], None, Rights::empty())
                    .map(|(at, _)| self.revoke(at)),
            ),
            Sysno::CapInfo => match self.lookup(t, a[0], None, Rights::empty()) {
                Ok((_, cap)) => {
                    let kind = self.kind_of(cap.obj).map_or(0, |k| k as u32);
                    Outcome::Done(Ok(Results::of(&[kind, cap.rights.bits(), cap.badge])))
                }
                Err(e) => Outcome::err(e),
            },
            Sysno::ObjDelete => done(self.sys_obj_delete(t, a[0])),
            Sysno::TaskInfo => self.sys_task_info(t, a[0]),
            Sysno::Now => {
                let now = plat.now_ticks();
                let exact = u32::from(plat.counter_exact());
                let bus = u32::from(plat.nvm_on_bus());
                let numbered = u32::from(plat.nvm_stores_numbered());
                Outcome::Done(Ok(Results::of(&[
                    now as u32,
                    (now >> 32) as u32,
                    exact,
                    bus,
                    numbered,
                ])))
            }
            Sysno::Checkpoint => self.sys_checkpoint(t),
            Sysno::CommitWatch => self.sys_commit_watch(t, a),
            Sysno::PersistDone => self.sys_persist_done(t, a[0]),
            Sysno::NvmRead => done(self.sys_nvm(t, false, a, mem, plat)),
            Sysno::NvmWrite => done(self.sys_nvm(t, true, a, mem, plat)),
            Sysno::SetIpcBuffer => done(self.sys_set_ipc_buffer(t, a[0])),
            Sysno::ConsoleRead => self.sys_console_read(t, a[0], a[1], mem, plat),
        }
    }

    /// A console buffer of `DebugWrite` or `ConsoleRead`: at most `MAX_DEBUG_WRITE`
    /// bytes (`TooLong`) of memory thread `t` may access with `rights` (`BadPointer`).
    fn check_console_buffer(
        &self,
        t: ThreadId,
        ptr: u32,
        len: u32,
        rights: Rights,
    ) -> Result<(), Error> {
        if len > MAX_DEBUG_WRITE {
            return Err(Error::TooLong);
        }
        self.check_user(t, ptr, len, rights)
    }

    /// `DebugWrite(ptr, len)`: at most `MAX_DEBUG_WRITE` bytes the task may read.
    fn sys_debug_write(
        &mut self,
        t: ThreadId,
        ptr: u32,
        len: u32,
        mem: &mut dyn UserMemory,
        plat: &mut dyn Platform,
    ) -> Outcome {
        if let Err(e) = self.check_console_buffer(t, ptr, len, Rights::READ) {
            return Outcome::err(e);
        }
        let mut buf = [0u8; MAX_DEBUG_WRITE as usize];
        let bytes = &mut buf[..len as usize];
        if !bytes.is_empty() {
            mem.read(ptr, bytes);
        }
        let name = self.group_of(t).name;
        plat.console(name.as_str(), bytes);
        Outcome::ok()
    }

    /// `ConsoleRead(ptr, len)`: at most `MAX_DEBUG_WRITE` waiting console bytes into
    /// memory the task may write; a1 = how many (0: none waiting).
    fn sys_console_read(
        &mut self,
        t: ThreadId,
        ptr: u32,
        len: u32,
        mem: &mut dyn UserMemory,
        plat: &mut dyn Platform,
    ) -> Outcome {
        if let Err(e) = self.check_console_buffer(t, ptr, len, Rights::WRITE) {
            return Outcome::err(e);
        }
        let mut buf = [0u8; MAX_DEBUG_WRITE as usize];
        let n = plat
            .console_read(&mut buf[..len as usize])
            .min(len as usize);
        if n > 0 {
            mem.write(ptr, &buf[..n]);
        }
        Outcome::Done(Ok(Results::of(&[n as u32])))
    }

    /// `ObjDelete(slot)`: needs DELETE; CapGroups cannot be deleted (`WrongKind`).
    fn sys_obj_delete(&mut self, t: ThreadId, slot: u32) -> Result<(), Error> {
        let (_, cap) = self.lookup(t, slot, None, Rights::empty())?;
        if self.kind_of(cap.obj) == Some(ObjKind::CapGroup) {
            return Err(Error::WrongKind);
        }
        if !cap.rights.contains(Rights::DELETE) {
            return Err(Error::NoRights);
        }
        self.delete_object(cap.obj);
        Ok(())
    }

    /// `TaskInfo(slot)`: `NO_SLOT` = the caller; else a CapGroup cap with READ.
    fn sys_task_info(&self, t: ThreadId, slot: u32) -> Outcome {
        let th = if slot == NO_SLOT {
            Some(t)
        } else {
            match self.lookup(t, slot, Some(ObjKind::CapGroup), Rights::READ) {
                Ok((_, cap)) => match self.obj(cap.obj) {
                    Object::CapGroup(g) => g.thread,
                    _ => None,
                },
                Err(e) => return Outcome::err(e),
            }
        };
        let Some(th) = th else {
            return Outcome::err(Error::WrongKind);
        };
        let thread = self.thread(th);
        let info = [
            th.index() as u32,
            thread.abi_state() as u32,
            thread.exit_code,
        ];
        Outcome::Done(Ok(Results::of(&info)))
    }
}

/// A result without values as an outcome.
fn done(r: Result<(), Error>) -> Outcome {
    Outcome::Done(r.map(|()| Results::none()))
}
