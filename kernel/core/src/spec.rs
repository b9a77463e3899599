//! The boot-time description of the system: tasks, their memory and the capabilities
//! each receives, and the errors a bad description gives. Plain data; it must never be
//! consulted after boot (the tree holds everything the kernel needs).

use crate::abi::{Rights, IPC_BUFFER_MSG};

/// No memory a task can name (region or MemObj) reaches this address: from here up
/// `a5` selects a thread's IPC buffer, so no descriptor may lie there.
pub const MEMORY_END: u32 = IPC_BUFFER_MSG;

/// True when `[base, base + len)` is nonempty and ends at or below [`MEMORY_END`]: the
/// one test of a memory range boot, restore and the invariants apply.
pub fn memory_range_ok(base: u32, len: u32) -> bool {
    len != 0 && base.checked_add(len).is_some_and(|end| end <= MEMORY_END)
}

/// True when the NVM range `[offset, offset + len)` is nonempty and does not wrap: the
/// one test of an NvmRegion boot, restore and the invariants apply.
pub fn nvm_range_ok(offset: u32, len: u32) -> bool {
    len != 0 && offset.checked_add(len - 1).is_some()
}

/// What kind of memory a region or MemObj is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemKind {
    /// Rolled back to the last checkpoint after a power cut.
    Checkpointed,
    /// Never rolled back (lives in NVM).
    Eternal,
    /// Managed by the heap service.
    HeapManaged,
    /// Device MMIO. The kernel never reads or writes device memory on a task's behalf:
    /// syscall pointers into device regions are refused with `BadPointer`.
    Device,
}

/// What happens to a task that faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPolicy {
    /// The task ends (state Exited); the rest keeps running.
    End,
    /// The task starts again at its entry with a fresh context; its caps are kept.
    Restart,
}

/// A memory range a task may access directly (through PMP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegionSpec {
    /// First byte.
    pub base: u32,
    /// Length in bytes; nonzero, and `base + len` must not pass 2^32.
    pub len: u32,
    /// A subset of READ | WRITE | EXEC.
    pub rights: Rights,
    /// The kind of memory.
    pub kind: MemKind,
}

impl RegionSpec {
    /// True when `[addr, addr + len)` lies inside this region (overflow-safe: in
    /// 32-bit words, `addr + len <= base + self.len` as `len <= self.len - off`).
    #[inline]
    pub fn contains(&self, addr: u32, len: u32) -> bool {
        let off = addr.wrapping_sub(self.base);
        addr >= self.base && off <= self.len && len <= self.len - off
    }

    /// True when the region is well formed: nonzero, below [`MEMORY_END`], memory
    /// rights only.
    pub fn is_valid(&self) -> bool {
        memory_range_ok(self.base, self.len) && Rights::MEMORY.contains(self.rights)
    }
}

/// One capability a task receives at boot. Each goes to the next free slot in list
/// order, so slot numbers follow from the app description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapSpec<'a> {
    /// An endpoint; the same name in several tasks is the same endpoint.
    Endpoint {
        /// Shared name.
        name: &'a str,
        /// Rights of this task's cap.
        rights: Rights,
        /// Badge the receiver sees for messages sent with this cap.
        badge: u32,
    },
    /// A notification; the same name in several tasks is the same notification.
    Notification {
        /// Shared name.
        name: &'a str,
        /// Rights of this task's cap.
        rights: Rights,
    },
    /// The interrupt `irq`, delivered through a new IrqNotification (READ | WRITE).
    /// At most one task may name a given irq.
    Irq {
        /// Interrupt source number.
        irq: u32,
    },
    /// A new one-shot timer (WRITE).
    Timer,
    /// A new NVM region grant.
    NvmRegion {
        /// Offset in NVM.
        offset: u32,
        /// Length in bytes.
        len: u32,
        /// Rights of the cap.
        rights: Rights,
    },
    /// A new memory object the task may access through PMP (counts as a region).
    MemObj {
        /// First byte.
        base: u32,
        /// Length.
        len: u32,
        /// Rights of the cap (READ/WRITE/EXEC for PMP, GRANT, DELETE).
        rights: Rights,
        /// Kind of memory.
        kind: MemKind,
    },
    /// A cap (READ) to another task's CapGroup, derived from the root's.
    Task {
        /// The task's name.
        name: &'a str,
    },
}

/// One task of the static system description.
#[derive(Clone, Copy, Debug)]
pub struct TaskSpec<'a> {
    /// Unique, 1..=16 bytes.
    pub name: &'a str,
    /// 0 = most urgent, below [`crate::NUM_PRIORITIES`].
    pub priority: u8,
    /// First instruction.
    pub entry: u32,
    /// Initial `sp`.
    pub stack_top: u32,
    /// The task's own code (RX), data/stack (RW) and device ranges.
    pub regions: &'a [RegionSpec],
    /// Boot capabilities, filling slots 0, 1, 2, ... in order.
    pub caps: &'a [CapSpec<'a>],
    /// What a fault does.
    pub fault: FaultPolicy,
}

/// Why [`crate::Kernel::boot`] refused a system description. `task` is the index in
/// the task list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootError {
    /// `boot` was already called.
    AlreadyBooted,
    /// More than [`crate::MAX_TASKS`] tasks.
    TooManyTasks,
    /// The name is empty or longer than [`crate::MAX_NAME`] bytes.
    BadName { task: usize },
    /// Two tasks share a name.
    DuplicateTask { task: usize },
    /// Priority not below [`crate::NUM_PRIORITIES`].
    BadPriority { task: usize },
    /// A region is empty, wraps, or has rights other than READ/WRITE/EXEC.
    BadRegion { task: usize },
    /// Own regions plus MemObj caps exceed [`crate::MAX_REGIONS`].
    TooManyRegions { task: usize },
    /// More caps than [`crate::SLOTS`].
    TooManyCaps { task: usize },
    /// A `CapSpec::Task` names no task.
    UnknownTask { task: usize },
    /// One name is used for an endpoint and a notification.
    NameKindClash { task: usize },
    /// Two caps name the same irq.
    IrqTwice { task: usize },
    /// A MemObj or NvmRegion is empty or wraps, or a MemObj reaches [`MEMORY_END`].
    BadRange { task: usize },
    /// Rights contain unknown bits.
    BadRights { task: usize },
    /// The object arena is full.
    OutOfObjects,
}

impl BootError {
    /// The index of the task in the description the error is about, if one.
    pub fn task(&self) -> Option<usize> {
        match *self {
            BootError::AlreadyBooted | BootError::TooManyTasks | BootError::OutOfObjects => None,
            BootError::BadName { task }
            | BootError::DuplicateTask { task }
            | BootError::BadPriority { task }
            | BootError::BadRegion { task }
            | BootError::TooManyRegions { task }
            | BootError::TooManyCaps { task }
            | BootError::UnknownTask { task }
            | BootError::NameKindClash { task }
            | BootError::IrqTwice { task }
            | BootError::BadRange { task }
            | BootError::BadRights { task } => Some(task),
        }
    }
}

/// What is wrong, naming the field of the app description (`user/apps/*.toml`) it
/// comes from; the task it concerns is [`BootError::task`].
impl core::fmt::Display for BootError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        use crate::{MAX_NAME, MAX_OBJECTS, MAX_REGIONS, MAX_TASKS, NUM_PRIORITIES, SLOTS};
        match self {
            BootError::AlreadyBooted => f.write_str("the kernel was booted already"),
            BootError::TooManyTasks => write!(f, "more than {MAX_TASKS} tasks"),
            BootError::BadName { .. } => {
                write!(f, "its `name` is empty or longer than {MAX_NAME} bytes")
            }
            BootError::DuplicateTask { .. } => {
                f.write_str("its `name` is the name of an earlier task")
            }
            BootError::BadPriority { .. } => {
                write!(f, "its `priority` is not below {NUM_PRIORITIES}")
            }
            BootError::BadRegion { .. } => f.write_str(
                "a memory region (`code`, `ram`) is empty, reaches the top page (0xFFFF_F000 \
                 up: IPC buffer messages), or has rights other than read, write and execute",
            ),
            BootError::TooManyRegions { .. } => write!(
                f,
                "its code, its RAM and its memory `caps` (mmio, eternal, heap) are more than \
                 the {MAX_REGIONS} regions PMP confines a task to"
            ),
            BootError::TooManyCaps { .. } => write!(f, "it has more than {SLOTS} `caps`"),
            BootError::UnknownTask { .. } => {
                f.write_str("a `caps` entry of kind \"task\" names no task of the app")
            }
            BootError::NameKindClash { .. } => {
                f.write_str("a `caps` name is used for an endpoint and for a notification")
            }
            BootError::IrqTwice { .. } => {
                f.write_str("a `caps` entry of kind \"irq\" names an interrupt already given")
            }
            BootError::BadRange { .. } => {
                f.write_str("a memory or NVM range in `caps` is empty, wraps around 4 GiB, or (memory) reaches the top page (0xFFFF_F000 up: IPC buffer messages)")
            }
            BootError::BadRights { .. } => f.write_str("`caps` rights hold unknown bits"),
            BootError::OutOfObjects => write!(
                f,
                "the app needs more than the {MAX_OBJECTS} kernel objects of the arena"
            ),
        }
    }
}
