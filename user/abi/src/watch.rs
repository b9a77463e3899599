//! The layout of a commit watch: the 16 bytes a task names in `CommitWatch`'s `a0`,
//! half written by the task, half by the kernel. Layout only: this file must never
//! validate a pointer or decide when the kernel writes (the kernel does both).

/// Bytes of task memory a commit watch covers; the task must be able to read and
/// write all of them.
pub const COMMIT_WATCH_SIZE: u32 = 16;

/// Offset of the *watched* value: a little-endian u64 the task keeps up to date (the
/// SPI driver's ring writer index). The kernel only reads it.
pub const WATCHED_OFFSET: u32 = 0;

/// Offset of the *committed* value: a little-endian u64 the kernel writes after each
/// committed checkpoint, the watched value as that checkpoint holds it (the ring's
/// visible index). The task only reads it.
pub const COMMITTED_OFFSET: u32 = 8;

bitflags::bitflags! {
    /// What else a commit watch makes of its thread (`CommitWatch` `a4`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct WatchFlags: u32 {
        /// The thread is a persist callback: before every checkpoint the kernel asks it
        /// to persist (its `Recv` returns `Interrupted`) and waits for `PersistDone`.
        /// Implies [`WatchFlags::SERVES_PERSIST`].
        const PERSIST_CALLBACK = 1 << 0;
        /// The thread keeps running while callbacks persist (a driver they call).
        const SERVES_PERSIST = 1 << 1;
    }
}

const _: () = assert!(WATCHED_OFFSET + 8 <= COMMITTED_OFFSET);
const _: () = assert!(COMMITTED_OFFSET + 8 == COMMIT_WATCH_SIZE);
