//! Whole-system checkpoints on the device: what goes into one, when one is taken, and
//! how the system comes back from one at boot.
//!
//! Items handed to the checkpoint manager (`amber_ckpt`):
//!
//! | item ids            | kind byte            | bytes                                   |
//! |---------------------|----------------------|-----------------------------------------|
//! | 0..MEMORY_ITEMS     | the object's ObjKind | `Kernel::encode_object` of arena index i |
//! | MEMORY_ITEMS + t    | [`MEMORY_KIND`]      | task t's RAM (data, bss, stack), as is   |
//!
//! Task code is not checkpointed: it is read-only and comes from the image. The
//! committed metadata holds the absolute tick count (so time goes on across reboots)
//! and a fingerprint of the app, so that a checkpoint is never restored into another
//! app. This file runs with interrupts off (the world is stopped); it must never let
//! a task run between gathering the items and the commit.

use crate::bootargs::MemTrack;
use crate::task::TaskImage;
use amber_ckpt::{CheckpointStats, CkptError, ItemId, Manager, Source, Version, META_LEN};
use amber_core::Kernel;
use amber_nvm::Nvm;

/// Task t's RAM is item `MEMORY_ITEMS + t`.
pub const MEMORY_ITEMS: u16 = 100;
/// The kind byte of task memory items.
pub const MEMORY_KIND: u8 = 0xF0;

/// Metadata committed with each checkpoint.
///
/// | offset | size | field                                           |
/// |--------|------|-------------------------------------------------|
/// | 0      | 8    | absolute timer ticks when the checkpoint began  |
/// | 8      | 4    | app fingerprint ([`app_fingerprint`])           |
/// | 12     | 4    | reserved, zero                                  |
pub struct Meta {
    pub ticks: u64,
    pub app: u32,
}

impl Meta {
    pub fn encode(&self) -> [u8; META_LEN] {
        let mut m = [0u8; META_LEN];
        m[0..8].copy_from_slice(&self.ticks.to_le_bytes());
        m[8..12].copy_from_slice(&self.app.to_le_bytes());
        m
    }

    pub fn decode(m: &[u8; META_LEN]) -> Meta {
        let mut t = [0u8; 8];
        t.copy_from_slice(&m[0..8]);
        let mut a = [0u8; 4];
        a.copy_from_slice(&m[8..12]);
        Meta {
            ticks: u64::from_le_bytes(t),
            app: u32::from_le_bytes(a),
        }
    }
}

/// A fingerprint of the app: task names, places, sizes and entries. A checkpoint
/// taken by another app (or another build that moved a task) is not restored.
pub fn app_fingerprint(tasks: &[TaskImage]) -> u32 {
    let digest = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    let mut d = digest.digest();
    for t in tasks {
        d.update(t.name.as_bytes());
        for v in [t.entry, t.code.0, t.code.1, t.ram.0, t.ram.1, t.stack_top] {
            d.update(&v.to_le_bytes());
        }
    }
    d.finalize()
}

/// What a checkpoint sees: the kernel's objects and the tasks' memory.
pub struct Snapshot<'a> {
    pub kernel: &'a Kernel,
    pub tasks: &'static [TaskImage],
    /// Which tasks' RAM changed since the last commit.
    pub mem_dirty: &'a [bool],
    /// Copy everything, dirty or not (the first checkpoint, and full-copy mode).
    pub all: bool,
}

impl Source for Snapshot<'_> {
    fn items(&self, f: &mut dyn FnMut(ItemId, u8, bool)) {
        for (i, kind) in self.kernel.live_objects() {
            f(ItemId(i), kind as u8, self.all || self.kernel.is_dirty(i));
        }
        for (t, _) in self.tasks.iter().enumerate() {
            let dirty = self.all || self.mem_dirty.get(t).copied().unwrap_or(true);
            f(ItemId(MEMORY_ITEMS + t as u16), MEMORY_KIND, dirty);
        }
    }

    fn bytes<'b>(&'b self, id: ItemId, scratch: &'b mut [u8]) -> &'b [u8] {
        if id.0 < MEMORY_ITEMS {
            let n = self.kernel.encode_object(id.0, scratch);
            return &scratch[..n];
        }
        match self.tasks.get((id.0 - MEMORY_ITEMS) as usize) {
            // SAFETY: the task's RAM region lies in DRAM outside the kernel image and
            // is not written while the world is stopped for the checkpoint.
            Some(t) => unsafe {
                core::slice::from_raw_parts(t.ram.0 as *const u8, t.ram.1 as usize)
            },
            None => &[],
        }
    }
}

/// Counters of the checkpoints taken since boot.
#[derive(Default)]
pub struct Totals {
    pub checkpoints: u64,
    pub instructions: u64,
    pub nvm_bytes: u64,
    pub data_bytes: u64,
}

/// The checkpointing state of the running system.
pub struct Persist<N> {
    pub nvm: N,
    pub mgr: Manager,
    pub memtrack: MemTrack,
    /// Per task: RAM changed since the last commit.
    pub mem_dirty: [bool; crate::task::MAX_TASKS],
    /// Periodic interval in ticks; 0 = no periodic checkpoints.
    pub interval: u32,
    /// Ticks since the last checkpoint.
    pub since: u32,
    pub app: u32,
    pub totals: Totals,
}

/// The result of one checkpoint, for the console.
pub struct Taken {
    pub stats: CheckpointStats,
    pub instructions: u64,
}

impl<N: Nvm> Persist<N> {
    /// Stops the world (the caller has interrupts off), writes every dirty item, and
    /// commits. On success all dirty marks are cleared; on failure they stay, so the
    /// next checkpoint writes them again.
    pub fn take(
        &mut self,
        kernel: &mut Kernel,
        tasks: &'static [TaskImage],
        ticks: u64,
    ) -> Result<Taken, CkptError> {
        let start = riscv::register::minstret::read64();
        let all = self.memtrack == MemTrack::Copy;
        let meta = Meta {
            ticks,
            app: self.app,
        }
        .encode();
        let snap = Snapshot {
            kernel,
            tasks,
            mem_dirty: &self.mem_dirty,
            all,
        };
        let stats = self.mgr.checkpoint(&mut self.nvm, &snap, meta)?;
        kernel.clear_dirty();
        self.mem_dirty = [false; crate::task::MAX_TASKS];
        self.since = 0;
        let instructions = riscv::register::minstret::read64() - start;
        let t = &mut self.totals;
        t.checkpoints += 1;
        t.instructions += instructions;
        t.nvm_bytes += stats.nvm_bytes;
        t.data_bytes += stats.data_bytes;
        Ok(Taken {
            stats,
            instructions,
        })
    }

    /// The committed version.
    pub fn committed(&self) -> Version {
        self.mgr.committed()
    }
}
