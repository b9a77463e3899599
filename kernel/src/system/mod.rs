//! The running system: the one owner of the kernel's run-time state ([`System`], behind
//! one lock, as Hubris keeps its task table), and the trap handler that drives it.
//!
//! Every trap takes the lock once, turns the trap into `amber_core::Kernel` calls and
//! board events, reports what happened to the checkpoint cycle and does what the
//! cycle asks (write a checkpoint, halt), then runs the current task, or idles with
//! interrupts on until one can run. The lock is taken only with interrupts off (in
//! trap handlers and between idle sleeps), so it is never contended; holding it is
//! what lets the code below touch the kernel, the checkpoint writer and the PMP cache
//! together, and no other lock nests inside it but the console's. An `ecall` is first
//! offered to the core's fast path (`Traps::fast_syscall`), which takes no lock: no
//! task runs while the lock is held, so a trap from a task finds it free and this
//! trap is the system's only user. `startup` brings the app up at boot and
//! `task_memory` keeps task memory protected and tracked. None of it decides policy
//! (who runs, who may do what, when to checkpoint): `amber_core` does.

mod startup;
mod task_memory;

pub use startup::{check_app, start};

use crate::app;
use crate::arch::{self, Trap, TrapHandler};
use crate::board::{Board, Chosen, Event};
use crate::console_in::{ConsoleIn, Receiver};
use crate::cost::{self, Cost};
use crate::exit::ExitCode;
use crate::kmain::fatal;
use crate::writer::{CheckpointWriter, Written};
use amber_ckpt::Manager;
use amber_core::abi::{Error, Sysno};
use amber_core::{
    Attempt, Cause, CheckpointEvent, Context, Fault, Halt, HaltOutcome, Kernel, Platform, Step,
    ThreadId, MAX_OBJECTS,
};
use amber_nvm::{CutNvm, Nvm};
use core::ptr::NonNull;
use log::{error, info};
use task_memory::{FastMemory, PmpCache, TaskMemory};

// The PMP layout fills this many entries; the board must have them.
const _: () = assert!(Chosen::MAP.pmp_entries >= crate::pmp_layout::PMP_ENTRIES);

/// The NVM as the running system uses it: the board's device, cut where asked.
pub type SystemNvm = CutNvm<<Chosen as Board>::Nvm>;

/// Print checkpoint totals every this many checkpoints.
const REPORT_EVERY: u64 = 500;
/// The longest a persist phase may last (then it is given up, and no checkpoint taken).
const PERSIST_TIMEOUT_MS: u32 = 500;

/// The kernel's run-time state, all of it.
pub struct System {
    pub kernel: Kernel,
    /// Writes checkpoints; set once the app is up (booted or restored).
    pub writer: Option<CheckpointWriter<SystemNvm>>,
    /// Ticks since boot, and the absolute tick count at boot (the committed tick count
    /// of the checkpoint resumed from).
    ticks: u64,
    tick_base: u64,
    /// Bytes received on the console since boot.
    console_bytes: u32,
    /// Received console bytes no task has taken yet (`ConsoleRead`).
    console_in: ConsoleIn,
    /// The task index of each thread, by the thread's arena index: filled once the
    /// kernel is booted or restored, so the trap path maps a thread to its task in one
    /// load, without comparing names.
    task_of_thread: [Option<u8>; MAX_OBJECTS],
    /// What the PMP holds, and each task's last image.
    pmp: PmpCache,
}

static SYSTEM: spin::mutex::SpinMutex<System> = spin::mutex::SpinMutex::new(System {
    kernel: Kernel::new(),
    writer: None,
    ticks: 0,
    tick_base: 0,
    console_bytes: 0,
    console_in: ConsoleIn::EMPTY,
    task_of_thread: [None; MAX_OBJECTS],
    pmp: PmpCache::EMPTY,
});

/// Runs `f` on the system state, with interrupts off.
pub fn with_system<R>(f: impl FnOnce(&mut System) -> R) -> R {
    arch::without_interrupts(|| f(&mut SYSTEM.lock()))
}

/// The machine as the core sees it.
struct Machine<'a> {
    /// Absolute ticks now.
    now: u64,
    /// The NVM and the checkpoint area in it, once the app is up (tasks reach the
    /// rest through `NvmRead` and `NvmWrite`).
    nvm: Option<(&'a mut SystemNvm, &'a Manager)>,
    /// The console's input queue.
    console_in: &'a mut ConsoleIn,
}

impl Machine<'_> {
    /// The NVM, for a task's transfer at `[offset, offset + len)`: refused in the
    /// checkpoint area (only the checkpoint writer writes there).
    fn nvm_for(&mut self, offset: u32, len: usize) -> Result<&mut SystemNvm, Error> {
        let (nvm, mgr) = self.nvm.as_mut().ok_or(Error::WrongState)?;
        let area = mgr.area();
        let end = u64::from(offset) + len as u64;
        let area_end = u64::from(area.offset) + u64::from(area.len);
        if u64::from(area.offset) < end && u64::from(offset) < area_end {
            return Err(Error::BadArgument);
        }
        Ok(nvm)
    }
}

impl Platform for Machine<'_> {
    fn console(&mut self, task: &str, bytes: &[u8]) {
        crate::console::task_output(task, bytes);
    }

    fn console_read(&mut self, buf: &mut [u8]) -> usize {
        let (n, receiver) = self.console_in.take(buf);
        console_receiver(receiver);
        n
    }

    fn irq_enable(&mut self, irq: u32) {
        if !Chosen::irq_enable(irq) {
            log::warn!("interrupt {irq} cannot be enabled on this board");
        }
    }

    fn irq_complete(&mut self, irq: u32) {
        Chosen::irq_complete(irq);
    }

    fn now_ticks(&self) -> u64 {
        self.now
    }

    fn counter(&self) -> u64 {
        cost::now()
    }

    fn counter_exact(&self) -> bool {
        Chosen::counter_exact()
    }

    fn nvm_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
        let nvm = self.nvm_for(offset, buf.len())?;
        nvm.read(offset, buf).map_err(|_| Error::NvmFailed)
    }

    fn nvm_write(&mut self, offset: u32, data: &[u8]) -> Result<(), Error> {
        let nvm = self.nvm_for(offset, data.len())?;
        nvm.write(offset, data).map_err(|_| Error::NvmFailed)?;
        nvm.fence();
        Ok(())
    }

    fn nvm_window(&self) -> Option<u32> {
        Chosen::MAP.nvm_window
    }

    fn nvm_on_bus(&self) -> bool {
        self.nvm
            .as_ref()
            .is_some_and(|(nvm, _)| Chosen::nvm_wire_bytes(nvm.inner()).is_some())
    }

    fn nvm_stores_numbered(&self) -> bool {
        self.nvm.as_ref().is_some_and(|(nvm, _)| nvm.cut_armed())
    }
}

/// Stops or starts the console's receiver as the input queue asks.
fn console_receiver(r: Receiver) {
    match r {
        Receiver::Keep => {}
        Receiver::Stop => Chosen::console_receive(false),
        Receiver::Start => Chosen::console_receive(true),
    }
}

impl System {
    /// Absolute ticks.
    fn now_ticks(&self) -> u64 {
        self.tick_base + self.ticks
    }

    /// The kernel, the task memory as the kernel writes it (marking what it writes
    /// dirty), and the machine.
    fn parts(&mut self) -> (&mut Kernel, TaskMemory<'_>, Machine<'_>) {
        let now = self.now_ticks();
        let (dirty, nvm) = match self.writer.as_mut() {
            Some(w) => (Some(&mut w.mem_dirty), Some((&mut w.nvm, &w.mgr))),
            None => (None, None),
        };
        let console_in = &mut self.console_in;
        (
            &mut self.kernel,
            TaskMemory { dirty },
            Machine {
                now,
                nvm,
                console_in,
            },
        )
    }

    /// Ticks and console bytes since boot (the idle test's evidence).
    pub fn activity(&self) -> (u64, u32) {
        (self.ticks, self.console_bytes)
    }

    /// Records which thread runs each task (after boot or restore).
    fn map_task_threads(&mut self) {
        self.task_of_thread = [None; MAX_OBJECTS];
        for (i, img) in app::TASKS.iter().enumerate() {
            if let (Some(t), Ok(i)) = (self.kernel.thread_by_name(img.name), u8::try_from(i)) {
                self.task_of_thread[t.index()] = Some(i);
            }
        }
    }

    #[inline]
    fn task_index(&self, t: ThreadId) -> Option<usize> {
        // `% MAX_OBJECTS`: the same index (a thread's is below it), which the
        // compiler then sees is in range.
        self.task_of_thread[t.index() % MAX_OBJECTS].map(usize::from)
    }

    /// An interrupt: the board decodes it into events.
    fn interrupt(&mut self, cause: u32) {
        Chosen::claim(cause, |event| self.event(event));
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Tick => {
                self.ticks += 1;
                let (k, _, mut m) = self.parts();
                k.tick(&mut m);
                self.checkpoint(CheckpointEvent::Tick);
            }
            Event::Irq(irq) => {
                if !self.kernel.irq(irq) {
                    error!("interrupt {irq} has no owner; left masked");
                }
            }
            Event::PowerFailure => {
                crate::energy::arm();
                self.checkpoint(CheckpointEvent::PowerFailure)
            }
            Event::ConsoleInput(byte) => {
                self.console_bytes += 1;
                log::debug!("console: received byte {byte:#04x}");
                console_receiver(self.console_in.push(byte));
                if self.console_in.dropped == 1 {
                    error!("console: input queue full, bytes dropped");
                }
            }
        }
    }

    /// The harvesting harness's power-failure interrupt (`amber.warn`), once due.
    fn harvest_warning(&mut self) {
        if crate::energy::warn_due() {
            self.event(Event::PowerFailure);
        }
    }

    /// The current task's `ecall`.
    fn syscall(&mut self) {
        let (k, mut mem, mut m) = self.parts();
        k.syscall(&mut mem, &mut m);
        self.checkpoint(CheckpointEvent::Syscall);
    }

    /// The current task's exception: a first store to clean memory, or a fault.
    fn fault(&mut self, fault: Fault, addr: u32) {
        if fault == Fault::StoreAccess && self.first_write(addr) {
            return;
        }
        let report = self.kernel.fault(fault, addr);
        error!("{report}");
    }

    /// Tells the checkpoint cycle of `event` and does what it asks, until it says
    /// to run on.
    #[inline(always)]
    fn checkpoint(&mut self, event: CheckpointEvent) {
        let (k, mut mem, m) = self.parts();
        match k.checkpoint_event(event, &mut mem, &m) {
            Step::Run => {}
            step => self.follow(step),
        }
    }

    /// Does what the checkpoint cycle asks, until it says to run on.
    #[inline(never)]
    fn follow(&mut self, mut step: Step) {
        let mut last = None;
        loop {
            step = match step {
                Step::Run => return,
                Step::Write(attempt) => {
                    last = self.write(&attempt);
                    let version = last.as_ref().map(|w| w.stats.version.0);
                    let (k, mut mem, _) = self.parts();
                    k.checkpoint_written(attempt, version, &mut mem)
                }
                Step::Halt(halt) => self.halt(halt, last),
            }
        }
    }

    /// Writes the checkpoint `attempt` asks for (the world is stopped: interrupts are
    /// off), and reports it; `None` when it failed.
    fn write(&mut self, attempt: &Attempt) -> Option<Written> {
        let ticks = self.now_ticks();
        let writer = self.writer.as_mut()?;
        let why = attempt.cause().as_str();
        let wire = |n: &SystemNvm| Chosen::nvm_wire_bytes(n.inner());
        match writer.write(&self.kernel, app::TASKS, ticks, wire) {
            Ok(w) => {
                let bus = WireBytes(w.wire_bytes);
                log::debug!(
                    "checkpoint {} ({why}): {} items, {} data bytes, {} NVM bytes{bus}, {}",
                    w.stats.version.0,
                    w.stats.items_written,
                    w.stats.data_bytes,
                    w.stats.nvm_bytes,
                    w.cost
                );
                if attempt.cause() == Cause::Boot {
                    info!(
                        "fresh start: app {} booted and checkpoint {} committed ({} NVM bytes{bus}, {})",
                        app::APP_NAME,
                        w.stats.version.0,
                        w.stats.nvm_bytes,
                        w.cost
                    );
                }
                let t = &writer.totals;
                if t.checkpoints.is_multiple_of(REPORT_EVERY) {
                    let mean_bus = WireBytes(w.wire_bytes.map(|_| t.wire_bytes / t.checkpoints));
                    info!(
                        "checkpoints: {} since boot, last version {}, mean pause {}, mean {} NVM bytes{mean_bus} for {} data bytes",
                        t.checkpoints,
                        w.stats.version.0,
                        t.cost.per(t.checkpoints),
                        t.nvm_bytes / t.checkpoints,
                        t.data_bytes / t.checkpoints
                    );
                }
                Some(w)
            }
            Err(e) if attempt.cause() == Cause::Boot => fatal(
                ExitCode::NvmIo,
                format_args!("first checkpoint failed: {e}"),
            ),
            Err(e) => {
                error!("checkpoint ({why}) failed: {e}; the changes stay marked and are retried");
                None
            }
        }
    }

    /// The end of a power failure: reports what the persist phase and the checkpoint
    /// cost since the interrupt, against their bound, and halts. The bounds count
    /// instructions, so they are printed only next to exact counts.
    fn halt(&self, halt: Halt, written: Option<Written>) -> ! {
        let version = self.writer.as_ref().map_or(0, |w| w.committed().0);
        let total = Cost::counted(cost::now().wrapping_sub(halt.interrupted_at));
        let exact = Chosen::counter_exact();
        match halt.outcome {
            HaltOutcome::NothingToSave => info!(
                "power failure during boot, before checkpoints are set up: nothing to save; halting"
            ),
            HaltOutcome::GaveUp => {
                info!("power failure: halting with checkpoint {version} as the last committed")
            }
            HaltOutcome::Committed | HaltOutcome::Failed => {
                match halt.persisted {
                    Some(p) if exact => info!(
                        "power failure: persist callbacks took {} (declared bound {})",
                        Cost::counted(p.counted),
                        p.declared_bound
                    ),
                    Some(p) => info!(
                        "power failure: persist callbacks took {} (their bounds count instructions: compare them under -icount)",
                        Cost::counted(p.counted)
                    ),
                    None => info!("power failure: 0 persist callbacks registered"),
                }
                if let Some(p) = halt.persisted {
                    info!(
                        "power failure: {} tasks of the persist phase were inside a request at the interrupt, {} as the checkpoint was written",
                        p.in_request_at_begin, p.in_request_at_end
                    );
                }
                match written {
                    Some(w) => {
                        if exact {
                            let declared = halt.persisted.map_or(0, |p| p.declared_bound);
                            let serial = self
                                .writer
                                .as_ref()
                                .and_then(|w| Chosen::nvm_wire_bytes(w.nvm.inner()))
                                .is_some();
                            let bound = checkpoint_bound(serial);
                            info!(
                                "power failure: persist and checkpoint bound {} instructions (persist {declared} declared + checkpoint {bound})",
                                declared + bound
                            );
                        }
                        // "N NVM bytes; " is what tests read the total after.
                        let wire = w.wire_bytes.map(|n| alloc::format!("{n} FRAM wire bytes for "));
                        info!(
                            "power failure: checkpoint {} committed in {}, {}{} NVM bytes; {total} since the interrupt; halting",
                            w.stats.version.0,
                            w.cost,
                            wire.unwrap_or_default(),
                            w.stats.nvm_bytes
                        )
                    }
                    None => info!(
                        "power failure: checkpoint FAILED; halting with checkpoint {version} as the last committed"
                    ),
                }
            }
        }
        Chosen::exit_success()
    }

    /// The fast path of the current task's `ecall` (`Kernel::fast_syscall`): the
    /// context of the task to resume, its PMP set, or `None` having changed nothing.
    /// What the general path would do besides the call itself is nothing here: the
    /// core takes the call only while the checkpoint cycle has nothing to do, the
    /// caller checked the harvest warning, the thread to run is marked dirty by the
    /// core, and the PMP already holds the caller's regions (the general path set them
    /// before the caller ran), so only a switch to another task programs it.
    #[inline(always)]
    fn fast_syscall(&mut self, caller: NonNull<Context>, nr: u32) -> Option<NonNull<Context>> {
        if nr == Sysno::Null as u32 {
            return self.kernel.fast_null().map(|_| caller);
        }
        self.fast_ipc(nr)
    }

    /// The fast path of Call and ReplyRecv (`Kernel::fast_ipc`): the context of the
    /// task switched to, with the PMP set for it. Out of line, so that the null
    /// syscall's path does not carry its frame.
    #[inline(never)]
    fn fast_ipc(&mut self, nr: u32) -> Option<NonNull<Context>> {
        let next = self
            .kernel
            .fast_ipc(&mut FastMemory(&mut self.writer), nr)?;
        // The PMP holds the caller's regions, not `next`'s (one thread per task).
        self.switch_pmp(next);
        Some(NonNull::from(self.kernel.context_mut(next)))
    }

    /// The context of the task to run next, with the PMP set for it; `None` when no
    /// task is ready.
    fn next(&mut self) -> Option<*mut Context> {
        let t = self.kernel.current()?;
        self.program_pmp(t);
        // `context_mut` marks the thread dirty: it is about to run and change.
        Some(self.kernel.context_mut(t) as *mut Context)
    }
}

/// ` (N FRAM wire bytes)` after an NVM byte count, where the NVM is on a serial bus.
struct WireBytes(Option<u64>);

impl core::fmt::Display for WireBytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(n) => write!(f, " ({n} FRAM wire bytes)"),
            None => Ok(()),
        }
    }
}

/// A bound on the instructions one checkpoint of this app takes
/// ([`amber_core::checkpoint_bound`] over its tasks' RAM).
fn checkpoint_bound(serial: bool) -> u64 {
    let ram: u64 = app::TASKS.iter().map(|t| u64::from(t.ram.1)).sum();
    amber_core::checkpoint_bound(ram, serial)
}

/// The kernel's half of the trap contract.
pub struct Traps;

impl TrapHandler for Traps {
    fn user_trap(trap: Trap) -> ! {
        let next = {
            let mut sys = SYSTEM.lock();
            match trap {
                Trap::Interrupt(cause) => sys.interrupt(cause),
                Trap::Syscall => sys.syscall(),
                Trap::Fault { fault, addr } => sys.fault(fault, addr),
            }
            sys.harvest_warning();
            sys.next()
        };
        run(next)
    }

    fn fast_syscall(caller: NonNull<Context>, nr: u32) -> Option<NonNull<Context>> {
        // The harvest warning is due at the first trap from its instant on: while one
        // is pending, every syscall takes the general path, which raises it.
        if crate::energy::warn_pending() {
            return None;
        }
        debug_assert!(!SYSTEM.is_locked(), "a task ran with the system locked");
        // SAFETY: no task runs while the lock is held (`user_trap` and
        // `kernel_interrupt` drop their guard before they return or resume a task, and
        // `run` and `with_system` theirs before `resume_user`), so this trap from a
        // task finds it free, and it stays free while this runs: the kernel runs only
        // in traps and between idle sleeps, with interrupts off on its one hart, and
        // this path takes no lock. So this is the only reference to the system while
        // it lives, as a guard's would be, without the interrupt masking that taking
        // the lock costs (interrupts are off in a trap already).
        unsafe { &mut *SYSTEM.as_mut_ptr() }.fast_syscall(caller, nr)
    }

    fn kernel_interrupt(cause: u32) {
        let mut sys = SYSTEM.lock();
        sys.interrupt(cause);
        sys.harvest_warning();
    }
}

/// Runs the task whose context is `next`; with none, idles until a task is ready.
/// Never returns.
fn run(mut next: Option<*mut Context>) -> ! {
    loop {
        if let Some(ctx) = next {
            // SAFETY: the context lives in the static kernel and the PMP was just set
            // for its task.
            unsafe { arch::resume_user(ctx) }
        }
        // Nothing runnable: sleep until an interrupt makes something so.
        arch::wait_for_interrupt();
        next = SYSTEM.lock().next();
    }
}

/// Whether the app has any task.
pub fn have_tasks() -> bool {
    !app::TASKS.is_empty()
}
