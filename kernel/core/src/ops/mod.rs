//! The operations of the kernel: everything that involves more than one object, as
//! `impl Kernel` blocks over the arena (`kernel.rs`) and the object types (`obj/`).
//! Dependencies point down: files here use `kernel.rs`, `obj/`, `cycle.rs`, the base
//! modules and `outcome.rs` (how a syscall ends), never each other's types. Calls go down the layers too, each file calling only those
//! listed before it:
//!
//! | layer | files | what |
//! |-------|-------|------|
//! | 1 | access | queries: the capability in a slot, a thread's regions, user pointer checks |
//! | 2 | sched | ready, block, wake; pick the thread to run |
//! | 3 | notify | signal and wait |
//! | 4 | caps | install, derive, delete, revoke; destroy an object |
//! | 5 | ipc | send, call, receive, reply |
//! | 6 | irq, timer, nvm | interrupts to drivers; timers; tasks' transfers to their NVM grants |
//! | 7 | watch, persist | commit watches; persist phases |
//! | 8 | lifecycle | exit, fault, restart, the tick |
//! | 9 | invariants | the whole tree's invariants (read only) |
//! | 10 | items, checkpoint, boot | the kernel as checkpoint items, and its restore; the checkpoint cycle; building the tree |
//! | 11 | syscall | dispatch of every call |

mod access;
mod boot;
mod caps;
mod checkpoint;
mod invariants;
mod ipc;
mod irq;
mod items;
mod lifecycle;
mod notify;
mod nvm;
mod outcome;
mod persist;
mod sched;
mod syscall;
mod timer;
mod watch;
