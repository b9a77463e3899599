//! The checkpoint benchmark (`amber.test=ckpt-bench`): measures the pause of one
//! checkpoint on the real NVM window, for synthetic systems with a chosen number of
//! dirty kernel objects and dirty bytes of task memory, against a full copy of the same
//! system; then the cost of recovering it. Run it under `-icount shift=0,sleep=off`
//! (`cargo xtask bench`) for exact instruction counts; without it the figures are host
//! time (`crate::cost`).
//!
//! Kernel objects here are synthetic records of 182 bytes (the size of a Thread
//! record, the most common dirty object); the arena of a real kernel holds at most
//! 64 objects, so the 100-object row exists only in this benchmark. It formats the
//! checkpoint area of the NVM it is given: never run it on an image you want to keep.
//!
//! Each row is measured in steady state: after the system is brought to its size and
//! one idle checkpoint has written every twin. The checkpoint after the measured one,
//! with nothing dirty, writes the twins of what the measured one wrote (the
//! redundancy's cost, which an item rewritten every checkpoint never pays); it is
//! printed on the row's "then" line.

use crate::board::{Board, Chosen};
use crate::cost::{self, Cost};
use crate::writer::MEMORY_KIND;
use alloc::vec;
use alloc::vec::Vec;
use amber_ckpt::{ItemId, Manager, Source, META_LEN};
use amber_format::Region;
use amber_nvm::Nvm;
use log::info;

/// Bytes of one synthetic kernel object record.
const OBJECT_LEN: usize = 182;
/// The synthetic system: objects, then two task memory regions.
const SMALL_MEM: usize = 1024;
const LARGE_MEM: usize = 16 * 1024;
const MEM_BASE_ID: u16 = 100;

struct System {
    objects: u16,
    dirty_objects: u16,
    memory: [Vec<u8>; 2],
    mem_dirty: [bool; 2],
    all: bool,
    /// Changes every round, so every copy really differs.
    round: u8,
}

impl Source for System {
    fn items(&self, f: &mut dyn FnMut(ItemId, u8, bool)) {
        for i in 0..self.objects {
            f(ItemId(i), 2, self.all || i < self.dirty_objects);
        }
        for (m, dirty) in self.mem_dirty.iter().enumerate() {
            f(
                ItemId(MEM_BASE_ID + m as u16),
                MEMORY_KIND,
                self.all || *dirty,
            );
        }
    }

    fn bytes<'a>(&'a self, id: ItemId, scratch: &'a mut [u8]) -> &'a [u8] {
        if id.0 >= MEM_BASE_ID {
            return &self.memory[(id.0 - MEM_BASE_ID) as usize];
        }
        let out = &mut scratch[..OBJECT_LEN];
        for (i, b) in out.iter_mut().enumerate() {
            *b = (i as u8) ^ (id.0 as u8) ^ self.round;
        }
        out
    }
}

fn count<T>(f: impl FnOnce() -> T) -> (T, Cost) {
    let start = cost::stamp();
    let r = f();
    (r, start.elapsed())
}

/// Runs every scenario and prints one `ckbench:` line per row.
pub fn run(nvm: &mut impl Nvm, area: Region) -> ! {
    let mut mgr = Manager::format(nvm, area).expect("format the checkpoint area");
    let mut sys = System {
        objects: 16,
        dirty_objects: 0,
        memory: [vec![0x11; SMALL_MEM], vec![0x22; LARGE_MEM]],
        mem_dirty: [false; 2],
        all: true,
        round: 0,
    };
    // The first checkpoint copies everything and allocates every extent.
    mgr.checkpoint(nvm, &sys, [0; META_LEN])
        .expect("first checkpoint");
    info!("ckbench: scenario | pause | dirty data bytes | NVM bytes | NVM/dirty");
    info!(
        "ckbench:   then, nothing dirty: twins of what it wrote | pause | twin bytes | NVM bytes"
    );
    let rows: [(&str, u16, u16, [bool; 2]); 7] = [
        ("idle (nothing dirty)", 16, 0, [false, false]),
        ("1 dirty kernel object", 16, 1, [false, false]),
        ("10 dirty kernel objects", 16, 10, [false, false]),
        ("100 dirty kernel objects", 100, 100, [false, false]),
        ("1 KiB dirty task memory", 16, 0, [true, false]),
        ("16 KiB dirty task memory", 16, 0, [false, true]),
        ("10 objects + 17 KiB memory", 16, 10, [true, true]),
    ];
    for (name, objects, dirty, mem_dirty) in rows {
        for full in [false, true] {
            sys.objects = objects;
            sys.dirty_objects = dirty;
            sys.mem_dirty = mem_dirty;
            sys.round = sys.round.wrapping_add(1);
            // Bring the system to this size first, and let an idle checkpoint write
            // every twin, so the row measures steady state.
            sys.all = true;
            mgr.checkpoint(nvm, &sys, [0; META_LEN])
                .expect("resize checkpoint");
            let dirty_objects = sys.dirty_objects;
            (sys.all, sys.dirty_objects, sys.mem_dirty) = (false, 0, [false; 2]);
            mgr.checkpoint(nvm, &sys, [0; META_LEN])
                .expect("settle checkpoint");
            (sys.all, sys.dirty_objects, sys.mem_dirty) = (full, dirty_objects, mem_dirty);
            let (stats, pause) = count(|| mgr.checkpoint(nvm, &sys, [0; META_LEN]));
            let stats = stats.expect("checkpoint");
            let amp = if stats.data_bytes == 0 {
                0.0
            } else {
                stats.nvm_bytes as f32 / stats.data_bytes as f32
            };
            info!(
                "ckbench: {name}{} | {pause} | {} | {} | {amp:.3}",
                if full { ", full copy" } else { "" },
                stats.data_bytes,
                stats.nvm_bytes
            );
            if !full {
                (sys.dirty_objects, sys.mem_dirty) = (0, [false; 2]);
                let (then, pause) = count(|| mgr.checkpoint(nvm, &sys, [0; META_LEN]));
                let then = then.expect("checkpoint after");
                info!(
                    "ckbench:   then, nothing dirty: {} twins | {pause} | {} | {}",
                    then.twins_written, then.twin_bytes, then.nvm_bytes
                );
            }
        }
    }
    let ((recovered, _report), validate) =
        count(|| Manager::recover(nvm, area).expect("recover the benchmark state"));
    let mut buf = vec![0u8; LARGE_MEM];
    let items: Vec<(ItemId, u8, u32)> = recovered.live_items().collect();
    let (bytes, read) = count(|| {
        items
            .iter()
            .map(|&(id, _, _)| recovered.read_item(nvm, id, &mut buf).expect("read back"))
            .sum::<usize>()
    });
    info!(
        "ckbench: recovery of {} items ({bytes} bytes): {validate} to validate and rebuild, \
         {read} to read every item back",
        items.len()
    );
    Chosen::exit_success()
}
