//! Building the initial capability tree from the static system description: the root
//! CapGroup, one CapGroup and Thread per task, and every boot capability, with all
//! tasks ready. This file must never leave a half-built tree behind a successful
//! return, and never trust the description (it checks names, ranges and bounds).

use crate::{
    abi::Rights,
    context::Context,
    ids::{ObjId, Priority, Slot, ThreadId},
    kernel::Kernel,
    obj::{
        Cap, CapGroup, CapRef, Endpoint, IrqNotification, MemObj, Notification, NvmRegion, Object,
        TaskName, Thread, ThreadState, Timer,
    },
    spec::{memory_range_ok, nvm_range_ok, BootError, CapSpec, TaskSpec},
    MAX_OBJECTS, MAX_REGIONS, MAX_TASKS, SLOTS,
};

/// A named shared object seen so far during boot.
#[derive(Clone, Copy)]
struct Named<'a> {
    name: &'a str,
    obj: ObjId,
    is_endpoint: bool,
}

impl Kernel {
    /// Builds the tree for `tasks` and makes every task ready. On error the kernel is
    /// left empty (as after `new`).
    pub fn boot(&mut self, tasks: &[TaskSpec]) -> Result<(), BootError> {
        if self.booted {
            return Err(BootError::AlreadyBooted);
        }
        let r = self.build(tasks);
        if r.is_err() {
            self.reset();
        } else {
            self.booted = true;
            self.rebuild_sched_index();
            self.schedule();
        }
        r
    }

    fn build(&mut self, tasks: &[TaskSpec]) -> Result<(), BootError> {
        if tasks.len() > MAX_TASKS {
            return Err(BootError::TooManyTasks);
        }
        let root = self
            .alloc(Object::CapGroup(CapGroup::new(TaskName::ROOT)))
            .ok_or(BootError::OutOfObjects)?;
        debug_assert_eq!(root, ObjId::ROOT);
        // Pass 1: every task's CapGroup and Thread, and the root's cap to the group.
        let mut groups = [None::<ObjId>; MAX_TASKS];
        for (i, spec) in tasks.iter().enumerate() {
            let g = self.build_task(i, spec, &tasks[..i])?;
            groups[i] = Some(g);
            let slot = Slot::new(i).ok_or(BootError::TooManyTasks)?;
            self.install(
                CapRef { group: root, slot },
                Cap {
                    obj: g,
                    rights: Rights::READ | Rights::GRANT,
                    badge: 0,
                    parent: None,
                },
            );
        }
        // Pass 2: boot capabilities, slot i = caps[i].
        let mut named = [None::<Named>; MAX_OBJECTS];
        for (i, spec) in tasks.iter().enumerate() {
            let g = groups[i].ok_or(BootError::OutOfObjects)?;
            if spec.caps.len() > SLOTS {
                return Err(BootError::TooManyCaps { task: i });
            }
            for (s, cs) in spec.caps.iter().enumerate() {
                let cap = self.boot_cap(i, cs, tasks, &groups, &mut named)?;
                if !self.can_hold_another_region(g, cap.obj) {
                    return Err(BootError::TooManyRegions { task: i });
                }
                let slot = Slot::new(s).ok_or(BootError::TooManyCaps { task: i })?;
                self.install(CapRef { group: g, slot }, cap);
            }
        }
        Ok(())
    }

    /// Checks task `i` and creates its CapGroup and Thread.
    fn build_task(
        &mut self,
        i: usize,
        spec: &TaskSpec,
        earlier: &[TaskSpec],
    ) -> Result<ObjId, BootError> {
        let name = TaskName::new(spec.name).ok_or(BootError::BadName { task: i })?;
        if earlier.iter().any(|e| e.name == spec.name) {
            return Err(BootError::DuplicateTask { task: i });
        }
        let priority = Priority::new(spec.priority).ok_or(BootError::BadPriority { task: i })?;
        if spec.regions.len() > MAX_REGIONS {
            return Err(BootError::TooManyRegions { task: i });
        }
        let mut group = CapGroup::new(name);
        for (d, r) in group.regions.iter_mut().zip(spec.regions) {
            if !r.is_valid() {
                return Err(BootError::BadRegion { task: i });
            }
            *d = Some(*r);
        }
        let g = self
            .alloc(Object::CapGroup(group))
            .ok_or(BootError::OutOfObjects)?;
        let th = self
            .alloc(Object::Thread(Thread {
                ctx: Context::start(spec.entry, spec.stack_top),
                group: g,
                state: ThreadState::Ready,
                priority,
                fault: spec.fault,
                entry: spec.entry,
                stack_top: spec.stack_top,
                seq: 0,
                reply_to: None,
                exit_code: 0,
                watch: None,
                ipc_buffer: None,
            }))
            .ok_or(BootError::OutOfObjects)?;
        let t = ThreadId(th);
        if let Some(gr) = self.group_mut(g) {
            gr.thread = Some(t);
        }
        self.make_ready(t);
        Ok(g)
    }

    /// The capability one `CapSpec` of task `i` gives, creating its object if new.
    fn boot_cap<'a>(
        &mut self,
        i: usize,
        cs: &CapSpec<'a>,
        tasks: &[TaskSpec],
        groups: &[Option<ObjId>; MAX_TASKS],
        named: &mut [Option<Named<'a>>; MAX_OBJECTS],
    ) -> Result<Cap, BootError> {
        let original = |obj, rights: Rights, badge| Cap {
            obj,
            rights,
            badge,
            parent: None,
        };
        let check = |rights: Rights| {
            if Rights::all().contains(rights) {
                Ok(rights)
            } else {
                Err(BootError::BadRights { task: i })
            }
        };
        Ok(match *cs {
            CapSpec::Endpoint {
                name,
                rights,
                badge,
            } => {
                let obj = self.shared(i, name, true, named)?;
                original(obj, check(rights)?, badge)
            }
            CapSpec::Notification { name, rights } => {
                let obj = self.shared(i, name, false, named)?;
                original(obj, check(rights)?, 0)
            }
            CapSpec::Irq { irq } => {
                let taken = self
                    .objects
                    .iter()
                    .any(|(_, o)| matches!(o, Object::Irq(n) if n.irq == irq));
                if taken {
                    return Err(BootError::IrqTwice { task: i });
                }
                let obj = self.new_obj(Object::Irq(IrqNotification {
                    irq,
                    pending: false,
                    enabled: false,
                }))?;
                original(obj, Rights::READ | Rights::WRITE, 0)
            }
            CapSpec::Timer => {
                let obj = self.new_obj(Object::Timer(Timer::default()))?;
                original(obj, Rights::WRITE, 0)
            }
            CapSpec::NvmRegion {
                offset,
                len,
                rights,
            } => {
                if !nvm_range_ok(offset, len) {
                    return Err(BootError::BadRange { task: i });
                }
                let obj = self.new_obj(Object::NvmRegion(NvmRegion { offset, len }))?;
                original(obj, check(rights)?, 0)
            }
            CapSpec::MemObj {
                base,
                len,
                rights,
                kind,
            } => {
                if !memory_range_ok(base, len) {
                    return Err(BootError::BadRange { task: i });
                }
                let obj = self.new_obj(Object::MemObj(MemObj { base, len, kind }))?;
                original(obj, check(rights)?, 0)
            }
            CapSpec::Task { name } => {
                let j = tasks
                    .iter()
                    .position(|t| t.name == name)
                    .ok_or(BootError::UnknownTask { task: i })?;
                let g = groups
                    .get(j)
                    .copied()
                    .flatten()
                    .ok_or(BootError::UnknownTask { task: i })?;
                let root_slot = Slot::new(j).ok_or(BootError::UnknownTask { task: i })?;
                Cap {
                    obj: g,
                    rights: Rights::READ,
                    badge: 0,
                    parent: Some(CapRef {
                        group: ObjId::ROOT,
                        slot: root_slot,
                    }),
                }
            }
        })
    }

    fn new_obj(&mut self, o: Object) -> Result<ObjId, BootError> {
        self.alloc(o).ok_or(BootError::OutOfObjects)
    }

    /// The endpoint or notification called `name`, created on first use.
    fn shared<'a>(
        &mut self,
        i: usize,
        name: &'a str,
        is_endpoint: bool,
        named: &mut [Option<Named<'a>>; MAX_OBJECTS],
    ) -> Result<ObjId, BootError> {
        if let Some(n) = named.iter().flatten().find(|n| n.name == name) {
            if n.is_endpoint != is_endpoint {
                return Err(BootError::NameKindClash { task: i });
            }
            return Ok(n.obj);
        }
        let obj = if is_endpoint {
            self.new_obj(Object::Endpoint(Endpoint))?
        } else {
            self.new_obj(Object::Notification(Notification::default()))?
        };
        let free = named
            .iter_mut()
            .find(|n| n.is_none())
            .ok_or(BootError::OutOfObjects)?;
        *free = Some(Named {
            name,
            obj,
            is_endpoint,
        });
        Ok(obj)
    }
}
