//! Writing the running system into a checkpoint: what goes into one (kernel objects and
//! task memory pages, as the checkpoint manager's items), the metadata committed with
//! it, and the writer that holds the NVM and the manager. When a checkpoint is written
//! is the checkpoint cycle's (`amber_core`), and how it lands on NVM the manager's
//! (`amber_ckpt`); this file only says what.
//!
//! Items handed to the checkpoint manager:
//!
//! | item ids                  | kind byte            | bytes                                   |
//! |---------------------------|----------------------|-----------------------------------------|
//! | 0..MEMORY_ITEMS           | the object's ObjKind | `Kernel::encode_object` of arena index i |
//! | MEMORY_ITEMS + t*PAGES + p | [`MEMORY_KIND`]      | page p of task t's RAM (`crate::pages`) |
//!
//! Task code is not checkpointed: it is read-only and comes from the image. The
//! committed metadata holds the absolute tick count (so time goes on across reboots)
//! and a fingerprint of the app, so that a checkpoint is never restored into another
//! app. This file runs with interrupts off (the world is stopped); it must never let
//! a task run between gathering the items and the commit.

use crate::app::TaskImage;
use crate::bootargs::MemTrack;
use crate::cost::{self, Cost};
use crate::pages::{PageMask, Pages, PAGES};
use amber_ckpt::{CheckpointStats, CkptError, ItemId, Manager, Source, Version, META_LEN};
use amber_core::{Kernel, MAX_TASKS};
use amber_nvm::Nvm;

/// Page p of task t's RAM is item `MEMORY_ITEMS + t * PAGES + p` (64..96: above the
/// 64 arena entries, below the manager's 128 items).
pub const MEMORY_ITEMS: u16 = 64;

// The item map must stay inside the manager's items, with object items below the
// memory items: a change of the arena size, the task limit or the page count that
// broke this would make two things share an item on NVM.
const _: () = assert!(amber_core::MAX_OBJECTS <= MEMORY_ITEMS as usize);
const _: () = assert!(MEMORY_ITEMS as usize + MAX_TASKS * PAGES <= amber_ckpt::MAX_ITEMS);

/// The item of page `p` of task `t`.
pub fn memory_item(t: usize, p: usize) -> ItemId {
    ItemId(MEMORY_ITEMS + (t * PAGES + p) as u16)
}

/// The (task, page) of a memory item.
pub fn memory_page(id: ItemId) -> Option<(usize, usize)> {
    let i = id.0.checked_sub(MEMORY_ITEMS)? as usize;
    Some((i / PAGES, i % PAGES))
}
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
    // The item layout is part of what a checkpoint means.
    d.update(&[MEMORY_ITEMS as u8, PAGES as u8]);
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
    /// Which pages of each task's RAM changed since the last commit.
    pub mem_dirty: &'a [PageMask],
    /// Copy everything, dirty or not (the first checkpoint, and full-copy mode).
    pub all: bool,
}

impl Source for Snapshot<'_> {
    fn items(&self, f: &mut dyn FnMut(ItemId, u8, bool)) {
        for (i, kind) in self.kernel.live_objects() {
            f(ItemId(i), kind as u8, self.all || self.kernel.is_dirty(i));
        }
        for (t, task) in self.tasks.iter().enumerate() {
            let present = Pages::new(task.ram.0, task.ram.1).present();
            let dirty = self.mem_dirty.get(t).copied().unwrap_or(u8::MAX);
            for p in (0..PAGES).filter(|&p| present & 1 << p != 0) {
                f(
                    memory_item(t, p),
                    MEMORY_KIND,
                    self.all || dirty & 1 << p != 0,
                );
            }
        }
    }

    fn bytes<'b>(&'b self, id: ItemId, scratch: &'b mut [u8]) -> &'b [u8] {
        if id.0 < MEMORY_ITEMS {
            let n = self.kernel.encode_object(id.0, scratch);
            return &scratch[..n];
        }
        let Some((t, p)) = memory_page(id) else {
            return &[];
        };
        match self.tasks.get(t) {
            Some(task) => {
                let (base, len) = Pages::new(task.ram.0, task.ram.1).page(p);
                // SAFETY: the page lies in the task's RAM region, in DRAM outside the
                // kernel image, not written while the world is stopped.
                unsafe { core::slice::from_raw_parts(base as *const u8, len as usize) }
            }
            None => &[],
        }
    }
}

/// Counters of the checkpoints written since boot.
#[derive(Default)]
pub struct Totals {
    pub checkpoints: u64,
    /// The pauses of all of them.
    pub cost: Cost,
    pub nvm_bytes: u64,
    pub data_bytes: u64,
    /// Bytes on the NVM's serial bus (`Board::nvm_wire_bytes`), where it has one.
    pub wire_bytes: u64,
}

/// One checkpoint written: the manager's figures and the pause it took
/// (`Board::counter`).
pub struct Written {
    pub stats: CheckpointStats,
    /// The pause.
    pub cost: Cost,
    /// Bytes clocked on the NVM's serial bus, where it has one.
    pub wire_bytes: Option<u64>,
}

/// What writes the running system into checkpoints: the NVM, the checkpoint manager,
/// and which task memory changed since the last commit.
pub struct CheckpointWriter<N> {
    pub nvm: N,
    pub mgr: Manager,
    pub memtrack: MemTrack,
    /// Per task: the RAM pages changed since the last commit.
    pub mem_dirty: [PageMask; MAX_TASKS],
    /// The app's fingerprint, committed with every checkpoint.
    pub app: u32,
    pub totals: Totals,
}

impl<N: Nvm> CheckpointWriter<N> {
    /// Writes every dirty item of `kernel` and the tasks' memory and commits (the
    /// caller has the world stopped); `ticks` is the absolute tick count, `wire` reads
    /// the NVM bus's byte counter (if it has one). On success
    /// the task memory is clean (the kernel's objects are the checkpoint cycle's to
    /// mark clean); on failure everything stays marked, for the next checkpoint.
    pub fn write(
        &mut self,
        kernel: &Kernel,
        tasks: &'static [TaskImage],
        ticks: u64,
        wire: impl Fn(&N) -> Option<u64>,
    ) -> Result<Written, CkptError> {
        let start = cost::stamp();
        let wire_before = wire(&self.nvm);
        let meta = Meta {
            ticks,
            app: self.app,
        }
        .encode();
        let snap = Snapshot {
            kernel,
            tasks,
            mem_dirty: &self.mem_dirty,
            all: self.memtrack == MemTrack::Copy,
        };
        let stats = self.mgr.checkpoint(&mut self.nvm, &snap, meta)?;
        self.mem_dirty = [0; MAX_TASKS];
        let cost = start.elapsed();
        let wire_bytes = wire(&self.nvm).zip(wire_before).map(|(a, b)| a - b);
        let t = &mut self.totals;
        t.wire_bytes += wire_bytes.unwrap_or(0);
        t.checkpoints += 1;
        t.cost += cost;
        t.nvm_bytes += stats.nvm_bytes;
        t.data_bytes += stats.data_bytes;
        Ok(Written {
            stats,
            cost,
            wire_bytes,
        })
    }

    /// The committed version.
    pub fn committed(&self) -> Version {
        self.mgr.committed()
    }
}
