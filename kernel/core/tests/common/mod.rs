//! Test harness shared by the host tests: a Vec-backed address space, a recording
//! platform, a standard memory layout per task, and helpers that run a syscall as a
//! named task. Test-only; it must never be needed by the kernel itself.

#![allow(dead_code)]

use amber_core::{
    abi::{Error, Sysno},
    CapSpec, CheckpointConfig, CheckpointEvent, FaultPolicy, Kernel, MemKind, Platform, RegionSpec,
    Rights, Step, TaskSpec, ThreadId, UserMemory,
};

/// Start of the fake RAM.
pub const MEM_BASE: u32 = 0x8000_0000;
/// Bytes per task: code (RX) then data/stack (RW).
pub const TASK_SIZE: u32 = 0x1000;
/// Size of a task's code region.
pub const CODE_SIZE: u32 = 0x400;
/// A range shared through MemObj caps, after the tasks.
pub const SHARED_BASE: u32 = MEM_BASE + 16 * TASK_SIZE;
/// Size of the shared range.
pub const SHARED_SIZE: u32 = 0x1000;
/// Total fake RAM.
pub const MEM_SIZE: u32 = 17 * TASK_SIZE;
/// A device range (not backed: the kernel must never touch it).
pub const DEVICE_BASE: u32 = 0x1000_0000;

/// The fake physical memory. Any access outside it means the kernel skipped a check.
#[derive(Clone)]
pub struct FakeMem {
    pub bytes: Vec<u8>,
    /// When set: the only ranges the kernel may read (`false`) or write (`true`) as
    /// (base, len, writable); any other access fails the test.
    pub oracle: Option<Vec<(u32, u32, bool)>>,
}

impl FakeMem {
    pub fn new() -> FakeMem {
        FakeMem {
            bytes: vec![0; MEM_SIZE as usize],
            oracle: None,
        }
    }

    fn range(&self, addr: u32, len: usize) -> std::ops::Range<usize> {
        let start = addr
            .checked_sub(MEM_BASE)
            .expect("kernel touched memory below RAM: a pointer was not validated")
            as usize;
        let end = start + len;
        assert!(
            end <= self.bytes.len(),
            "kernel touched memory past RAM: a pointer was not validated"
        );
        start..end
    }

    pub fn get(&self, addr: u32, len: usize) -> Vec<u8> {
        self.bytes[self.range(addr, len)].to_vec()
    }

    pub fn put(&mut self, addr: u32, data: &[u8]) {
        let r = self.range(addr, data.len());
        self.bytes[r].copy_from_slice(data);
    }
}

impl FakeMem {
    fn allowed(&self, addr: u32, len: usize, write: bool) {
        let Some(oracle) = &self.oracle else { return };
        let (start, end) = (u64::from(addr), u64::from(addr) + len as u64);
        let ok = oracle.iter().any(|&(b, l, w)| {
            (w || !write) && u64::from(b) <= start && end <= u64::from(b) + u64::from(l)
        });
        assert!(
            ok,
            "kernel {} {addr:#x}+{len}, which no task may",
            if write { "wrote" } else { "read" }
        );
    }
}

impl UserMemory for FakeMem {
    fn read(&mut self, addr: u32, buf: &mut [u8]) {
        self.allowed(addr, buf.len(), false);
        let r = self.range(addr, buf.len());
        buf.copy_from_slice(&self.bytes[r]);
    }

    fn write(&mut self, addr: u32, data: &[u8]) {
        self.allowed(addr, data.len(), true);
        self.put(addr, data);
    }
}

/// A platform that records what the kernel asked of it.
#[derive(Clone, Default)]
pub struct FakePlat {
    pub console: Vec<(String, Vec<u8>)>,
    pub enabled: Vec<u32>,
    pub completed: Vec<u32>,
    /// Console bytes received and not yet taken by `ConsoleRead`.
    pub console_in: std::collections::VecDeque<u8>,
    pub now: u64,
    pub counter_exact: bool,
    /// The NVM `NvmRead`/`NvmWrite` reach (empty: none), where it is mapped, and
    /// whether it is on a serial bus.
    pub nvm: Vec<u8>,
    pub nvm_window: Option<u32>,
    pub nvm_on_bus: bool,
    /// Whether the kernel numbers NVM stores for a cut (`Now`'s a5).
    pub nvm_stores_numbered: bool,
}

impl FakePlat {
    fn nvm_range(&self, offset: u32, len: usize) -> Result<std::ops::Range<usize>, Error> {
        let start = offset as usize;
        match start.checked_add(len) {
            Some(end) if end <= self.nvm.len() => Ok(start..end),
            _ => Err(Error::NvmFailed),
        }
    }
}

impl Platform for FakePlat {
    fn console(&mut self, task: &str, bytes: &[u8]) {
        self.console.push((task.to_string(), bytes.to_vec()));
    }
    fn console_read(&mut self, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.console_in.len());
        for (b, got) in buf.iter_mut().zip(self.console_in.drain(..n)) {
            *b = got;
        }
        n
    }
    fn irq_enable(&mut self, irq: u32) {
        self.enabled.push(irq);
    }
    fn irq_complete(&mut self, irq: u32) {
        self.completed.push(irq);
    }
    fn now_ticks(&self) -> u64 {
        self.now
    }
    fn counter(&self) -> u64 {
        self.now * 1000
    }
    fn counter_exact(&self) -> bool {
        self.counter_exact
    }
    fn nvm_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
        let r = self.nvm_range(offset, buf.len())?;
        buf.copy_from_slice(&self.nvm[r]);
        Ok(())
    }
    fn nvm_write(&mut self, offset: u32, data: &[u8]) -> Result<(), Error> {
        let r = self.nvm_range(offset, data.len())?;
        self.nvm[r].copy_from_slice(data);
        Ok(())
    }
    fn nvm_window(&self) -> Option<u32> {
        self.nvm_window
    }
    fn nvm_on_bus(&self) -> bool {
        self.nvm_on_bus
    }
    fn nvm_stores_numbered(&self) -> bool {
        self.nvm_stores_numbered
    }
}

/// Code base of task `i`.
pub fn code(i: usize) -> u32 {
    MEM_BASE + i as u32 * TASK_SIZE
}

/// Data base of task `i` (its RW region runs to `code(i + 1)`).
pub fn data(i: usize) -> u32 {
    code(i) + CODE_SIZE
}

/// The two own regions of task `i`.
pub fn regions(i: usize) -> [RegionSpec; 2] {
    [
        RegionSpec {
            base: code(i),
            len: CODE_SIZE,
            rights: Rights::READ | Rights::EXEC,
            kind: MemKind::Checkpointed,
        },
        RegionSpec {
            base: data(i),
            len: TASK_SIZE - CODE_SIZE,
            rights: Rights::READ | Rights::WRITE,
            kind: MemKind::Checkpointed,
        },
    ]
}

/// A task for [`Sys::boot`].
pub struct T<'a> {
    pub name: &'a str,
    pub priority: u8,
    pub caps: &'a [CapSpec<'a>],
    pub fault: FaultPolicy,
}

/// A task named `name` at priority `priority` with `caps`, ending on faults.
pub fn task<'a>(name: &'a str, priority: u8, caps: &'a [CapSpec<'a>]) -> T<'a> {
    T {
        name,
        priority,
        caps,
        fault: FaultPolicy::End,
    }
}

/// The registers a syscall left: a0 and a1..a5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ret {
    pub a0: u32,
    pub r: [u32; 5],
}

impl Ret {
    /// The call's status.
    pub fn status(&self) -> Result<(), Error> {
        Error::check(self.a0)
    }
}

/// A booted kernel with its fake memory and platform.
pub struct Sys {
    pub k: Box<Kernel>,
    pub mem: FakeMem,
    pub plat: FakePlat,
    /// The version of the last checkpoint [`Sys::written`] committed.
    pub version: u64,
}

thread_local! {
    /// Syscalls the fast path took on this test's thread ([`Sys::fast_syscall`]).
    static FAST_TAKEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many syscalls the fast path has taken in this test so far.
pub fn fast_taken() -> u64 {
    FAST_TAKEN.with(|n| n.get())
}

/// A periodic checkpoint at every tick, persist phases given up after `timeout` ticks.
pub fn every_tick(timeout: u64, committed: u64) -> CheckpointConfig {
    CheckpointConfig {
        interval_ticks: 1,
        persist_timeout_ticks: timeout,
        committed,
        power_failure_at: None,
    }
}

impl Sys {
    /// Boots `tasks` (task i gets the standard regions of index i).
    pub fn boot(tasks: &[T]) -> Sys {
        let regs: Vec<[RegionSpec; 2]> = (0..tasks.len()).map(regions).collect();
        let specs: Vec<TaskSpec> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| TaskSpec {
                name: t.name,
                priority: t.priority,
                entry: code(i),
                stack_top: code(i) + TASK_SIZE,
                regions: &regs[i],
                caps: t.caps,
                fault: t.fault,
            })
            .collect();
        let mut k = Box::new(Kernel::new());
        k.boot(&specs).expect("test system description must boot");
        k.check_invariants()
            .expect("a freshly booted tree satisfies every invariant");
        k.configure_checkpoints(every_tick(u64::MAX, 0));
        Sys {
            k,
            mem: FakeMem::new(),
            plat: FakePlat::default(),
            version: 0,
        }
    }

    /// Reports `event` to the checkpoint cycle.
    pub fn event(&mut self, event: CheckpointEvent) -> Step {
        self.k.checkpoint_event(event, &mut self.mem, &self.plat)
    }

    /// A checkpoint falls due: the cycle's answer to a tick (without the scheduler's
    /// part of the tick; every tick is a periodic checkpoint in a test system).
    pub fn due(&mut self) -> Step {
        self.event(CheckpointEvent::Tick)
    }

    /// Finishes the attempt `step` asks for, as a glue whose write commits (`ok`, the
    /// next version) or fails; panics when `step` asks for no write.
    pub fn written(&mut self, step: Step, ok: bool) -> Step {
        let Step::Write(attempt) = step else {
            panic!(
                "the cycle asks for no checkpoint: {step:?} (phase {})",
                self.k.persist_active()
            );
        };
        let committed = ok.then(|| {
            self.version += 1;
            self.version
        });
        let next = self.k.checkpoint_written(attempt, committed, &mut self.mem);
        self.k.check_invariants().unwrap_or_else(|v| panic!("{v}"));
        next
    }

    /// Finishes every checkpoint `step` leads to, each committing when `ok`, as the
    /// glue does after an event; returns the step that ends it (run on, or halt).
    pub fn drive(&mut self, mut step: Step, ok: bool) -> Step {
        while matches!(step, Step::Write(_)) {
            step = self.written(step, ok);
        }
        step
    }

    /// A checkpoint falls due and is written at once (there must be no persist
    /// phase), committing when `ok`.
    pub fn checkpoint(&mut self, ok: bool) {
        let step = self.due();
        assert_eq!(self.written(step, ok), Step::Run);
    }

    /// Every dirty mark cleared, as a committed checkpoint leaves them.
    pub fn commit_all(&mut self) {
        let step = self.event(CheckpointEvent::Booted);
        assert_eq!(self.written(step, true), Step::Run);
    }

    pub fn tid(&self, name: &str) -> ThreadId {
        self.k
            .thread_by_name(name)
            .unwrap_or_else(|| panic!("no task {name}"))
    }

    pub fn current_name(&self) -> Option<String> {
        self.k.current().map(|t| self.k.task_name(t).to_string())
    }

    /// Ticks (round robin) until `name` is current; panics if it never is.
    pub fn switch_to(&mut self, name: &str) {
        for _ in 0..40 {
            if self.current_name().as_deref() == Some(name) {
                return;
            }
            self.k.tick(&mut self.plat);
        }
        panic!("test setup: {name} never became current (blocked or exited?)");
    }

    /// Runs syscall `nr` with `args` as task `name` and returns its registers. Checks
    /// the invariants afterwards.
    pub fn sys(&mut self, name: &str, nr: Sysno, args: [u32; 6]) -> Ret {
        self.sys_raw(name, nr as u32, args)
    }

    /// As [`Sys::sys`] with a raw syscall number. The fast path is tried first, as
    /// the device's glue does, and held to the general one ([`Sys::fast_syscall`]).
    pub fn sys_raw(&mut self, name: &str, nr: u32, args: [u32; 6]) -> Ret {
        self.switch_to(name);
        let t = self.tid(name);
        let ctx = self.k.context_mut(t);
        ctx.regs[17] = nr;
        ctx.regs[10..16].copy_from_slice(&args);
        if !self.fast_syscall() {
            self.k.syscall(&mut self.mem, &mut self.plat);
        }
        self.k.check_invariants().unwrap_or_else(|v| panic!("{v}"));
        self.regs(name)
    }

    /// Tries the fast path on the current thread's syscall (its registers set), held
    /// to the general path on a copy of the same state: when it takes the call, the
    /// copy's general path (the syscall, then the checkpoint cycle told of it, which
    /// must say to run on) must leave the very same kernel (every thread, context,
    /// index, reply binding, dirty mark) and memory, and the thread to run must be
    /// current and marked dirty; when it declines, nothing may have changed. Returns
    /// whether it took the call (then the general path must not run).
    pub fn fast_syscall(&mut self) -> bool {
        let before = self.k.clone();
        let mem_before = self.mem.bytes.clone();
        let nr = self.k.current().map_or(0, |t| self.k.context(t).regs[17]);
        let Some(next) = self.k.fast_syscall(nr, &mut self.mem) else {
            assert_same(
                &before,
                &self.k,
                "a fast path that declined changed the kernel",
            );
            assert!(
                mem_before == self.mem.bytes,
                "a fast path that declined wrote task memory"
            );
            return false;
        };
        assert_eq!(self.k.current(), Some(next), "the fast path runs its pick");
        assert!(
            self.k.is_dirty(next.index() as u16),
            "the thread the fast path runs is marked dirty: it runs and changes"
        );
        let mut slow = Sys {
            k: before,
            mem: FakeMem {
                bytes: mem_before,
                oracle: self.mem.oracle.clone(),
            },
            plat: self.plat.clone(),
            version: self.version,
        };
        slow.k.syscall(&mut slow.mem, &mut slow.plat);
        assert_eq!(
            slow.event(CheckpointEvent::Syscall),
            Step::Run,
            "the fast path ran where the checkpoint cycle had work"
        );
        assert_same(
            &slow.k,
            &self.k,
            "the fast path and the general path differ",
        );
        assert!(
            slow.mem.bytes == self.mem.bytes,
            "the fast path and the general path left different task memory"
        );
        FAST_TAKEN.with(|n| n.set(n.get() + 1));
        true
    }

    /// a0..a5 of task `name` now.
    pub fn regs(&self, name: &str) -> Ret {
        let c = self.k.context(self.tid(name));
        Ret {
            a0: c.regs[10],
            r: [c.regs[11], c.regs[12], c.regs[13], c.regs[14], c.regs[15]],
        }
    }

    pub fn state(&self, name: &str) -> amber_core::abi::TaskState {
        self.k.task_state(self.tid(name))
    }

    pub fn tick(&mut self) {
        self.k.tick(&mut self.plat);
        self.k.check_invariants().unwrap_or_else(|v| panic!("{v}"));
    }
}

/// What the checkpoint manager would store: (item, record) for every live object.
pub fn records(k: &Kernel) -> Vec<(u16, Vec<u8>)> {
    k.live_objects()
        .map(|(i, _)| {
            let mut buf = [0u8; Kernel::RECORD_MAX];
            let n = k.encode_object(i, &mut buf);
            assert!(n > 0, "a live object has a record");
            (i, buf[..n].to_vec())
        })
        .collect()
}

/// Fails with `what` and the first lines where the two kernels' states differ.
pub fn assert_same(expected: &Kernel, got: &Kernel, what: &str) {
    if expected == got {
        return;
    }
    let (e, g) = (format!("{expected:#?}"), format!("{got:#?}"));
    let diff: Vec<String> = e
        .lines()
        .zip(g.lines())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .take(12)
        .map(|(i, (a, b))| format!("line {i}: expected {a} got {b}"))
        .collect();
    panic!("{what}:\n{}", diff.join("\n"));
}

/// Short-hands for rights.
pub const R: Rights = Rights::READ;
pub const W: Rights = Rights::WRITE;
pub const G: Rights = Rights::GRANT;
pub const D: Rights = Rights::DELETE;
pub const RW: Rights = Rights::READ.union(Rights::WRITE);
pub const ALL: Rights = Rights::all();
