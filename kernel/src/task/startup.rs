//! Bringing the app up at boot: recover the system from the last committed checkpoint
//! (task memory and kernel objects), or, on a fresh or formatted NVM, load the app's
//! images, boot its tasks and commit checkpoint 1. It runs once, before any task, and
//! must never restore a checkpoint it cannot vouch for (another app's, or one that
//! fails its checks): it stops boot and says why instead.

use super::{
    app, map_task_threads, next_or_idle, now_ticks, Board, TaskImage, KERNEL, MAX_TASKS, PERSIST,
    TICK_BASE, TICK_MS,
};
use crate::board;
use crate::bootargs::{BootArgs, MemTrack};
use crate::checkpoint::{app_fingerprint, memory_page, Meta, Persist, MEMORY_KIND};
use crate::exit::ExitCode;
use crate::pages::{Pages, ALL_PAGES, PAGES};
use crate::task::SystemNvm;
use alloc::vec::Vec;
use amber_abi::Rights;
use amber_ckpt::{ItemId, Manager};
use amber_core::{MemKind, RegionSpec, TaskSpec};
use amber_format::NvmHeader;
use log::{info, warn};

/// Recovers the system from the last committed checkpoint, or boots the app fresh and
/// commits checkpoint 1, then runs the tasks. A device formatted during this boot
/// (`formatted`) gets a fresh checkpoint area too: nothing of before survives a
/// format. Never returns.
pub fn start(mut nvm: SystemNvm, header: &NvmHeader, formatted: bool, args: &BootArgs) -> ! {
    // From here on the kernel runs with interrupts off except while idling in `wfi`,
    // so the statics are never locked by interrupted code.
    riscv::interrupt::disable();
    board::enable_user_counters();
    let tasks = app::TASKS;
    info!("app {}: {}", app::APP_NAME, app::APP_DESCRIPTION);
    for t in tasks {
        load_code(t);
    }
    let area = header.superblock.kernel_area;
    let fingerprint = app_fingerprint(tasks);
    let recovered = if formatted {
        format_area(&mut nvm, area)
    } else {
        recover(&mut nvm, area, tasks, fingerprint)
    };
    let mut persist = Persist {
        nvm,
        mgr: recovered,
        memtrack: args.memtrack,
        mem_dirty: [0; MAX_TASKS],
        interval: app::CHECKPOINT_MS.div_ceil(TICK_MS),
        since: 0,
        app: fingerprint,
        totals: Default::default(),
    };
    let restored = persist.committed().0 > 0;
    if !restored {
        // The tree `check_app` built is the fresh system; its tasks get fresh RAM.
        for t in tasks {
            load_ram(t);
        }
        let mut k = KERNEL.lock();
        k.mark_all_dirty();
        persist.mem_dirty = [ALL_PAGES; MAX_TASKS];
        match persist.take(&mut k, tasks, now_ticks()) {
            Ok(t) => info!(
                "fresh start: app {} booted and checkpoint {} committed ({} NVM bytes, {})",
                app::APP_NAME,
                t.stats.version.0,
                t.stats.nvm_bytes,
                t.cost
            ),
            Err(e) => crate::boot::fatal(
                ExitCode::NvmIo,
                format_args!("first checkpoint failed: {e}"),
            ),
        }
    }
    let tracking = match args.memtrack {
        MemTrack::Protect => "PMP write protection",
        MemTrack::Copy => "copying it whole",
    };
    match app::CHECKPOINT_MS {
        0 => info!("checkpoints: only when a task asks, task memory tracked by {tracking}"),
        ms => info!("checkpoints: every {ms} ms, task memory tracked by {tracking}"),
    }
    *PERSIST.lock() = Some(persist);
    *super::PFI_AT.lock() = args.pfi;
    map_task_threads(&KERNEL.lock());
    if restored {
        super::restore_phase(&mut KERNEL.lock());
    }
    next_or_idle()
}

/// Recovers the committed checkpoint into the kernel and task memory, if there is
/// one; returns the manager (with nothing committed when the app must boot fresh).
fn recover(
    nvm: &mut SystemNvm,
    area: amber_format::Region,
    tasks: &'static [TaskImage],
    fingerprint: u32,
) -> Manager {
    let start = crate::cost::stamp();
    match Manager::recover(nvm, area) {
        Ok((mgr, report)) if mgr.committed().0 > 0 => {
            let meta = Meta::decode(&mgr.meta());
            if meta.app != fingerprint {
                crate::boot::fatal(
                    ExitCode::NvmRefused,
                    format_args!(
                        "the NVM holds a checkpoint of another app (fingerprint {:#010x}, this \
                         image is {fingerprint:#010x}); refusing to restore it. Boot with \
                         amber.format (cargo xtask run --format) to start this app afresh",
                        meta.app
                    ),
                );
            }
            for f in &report.findings {
                warn!("checkpoint area: {f}");
            }
            restore(nvm, &mgr, tasks);
            *TICK_BASE.lock() = meta.ticks;
            KERNEL.lock().signal_restored(&mut Board);
            info!(
                "recovered checkpoint {} in {} ({} uncommitted descriptors erased)",
                mgr.committed().0,
                start.elapsed(),
                report.erased_uncommitted
            );
            mgr
        }
        // Nothing committed yet: the app boots fresh below.
        Ok((mgr, report)) => {
            for f in &report.findings {
                warn!("checkpoint area: {f}");
            }
            mgr
        }
        Err(e) if e.is_unformatted() => format_area(nvm, area),
        Err(e) => crate::boot::fatal(
            ExitCode::NvmRefused,
            format_args!(
                "cannot recover from the NVM: {e}. The checkpoint area was not changed; \
                 boot with amber.format (cargo xtask run --format) to start afresh"
            ),
        ),
    }
}

/// A manager over a freshly formatted, empty checkpoint area.
fn format_area(nvm: &mut SystemNvm, area: amber_format::Region) -> Manager {
    Manager::format(nvm, area).unwrap_or_else(|e| {
        crate::boot::fatal(
            ExitCode::NvmIo,
            format_args!("cannot format the checkpoint area: {e}"),
        )
    })
}

/// Copies a task's code (read-only, never checkpointed) to its place.
fn load_code(t: &TaskImage) {
    for (addr, bytes) in t.segments {
        if *addr >= t.code.0 && *addr < t.code.0 + t.code.1 {
            // SAFETY: xtask placed every task's code in DRAM above the kernel image,
            // disjoint from the kernel and from other tasks, and checked the segment
            // lies inside it.
            unsafe {
                core::ptr::copy_nonoverlapping(bytes.as_ptr(), *addr as *mut u8, bytes.len())
            };
        }
    }
    // SAFETY: `fence.i` only orders instruction fetches after the stores above.
    unsafe { core::arch::asm!("fence.i") };
}

/// Zeroes a task's RAM and copies its initial data in (a fresh start).
fn load_ram(t: &TaskImage) {
    // SAFETY: as in `load_code`, for the task's RAM region.
    unsafe {
        core::ptr::write_bytes(t.ram.0 as *mut u8, 0, t.ram.1 as usize);
        for (addr, bytes) in t.segments {
            if *addr >= t.ram.0 && *addr < t.ram.0 + t.ram.1 {
                core::ptr::copy_nonoverlapping(bytes.as_ptr(), *addr as *mut u8, bytes.len());
            }
        }
    }
}

fn task_regions(t: &TaskImage) -> [RegionSpec; 2] {
    let region = |(base, len), rights| RegionSpec {
        base,
        len,
        rights,
        kind: MemKind::Checkpointed,
    };
    [
        region(t.code, Rights::READ | Rights::EXEC),
        region(t.ram, Rights::READ | Rights::WRITE),
    ]
}

/// Checks the app against every rule the kernel keeps (the task limit of its tables,
/// then `Kernel::boot`'s checks of names, priorities, regions and capabilities) by
/// building its capability tree, before boot touches the NVM: an app `cargo xtask`
/// should have refused stops here, by name, with nothing formatted or written. The
/// tree built is the one a fresh start runs; a restore replaces it.
pub fn check_app() {
    let tasks = app::TASKS;
    let refuse = |why: &dyn core::fmt::Display| -> ! {
        crate::boot::fatal(
            ExitCode::BadApp,
            format_args!(
                "app {}: {why}; nothing was written to the NVM (cargo xtask should have \
                 refused this description)",
                app::APP_NAME
            ),
        )
    };
    if tasks.len() > MAX_TASKS {
        refuse(&format_args!(
            "{} tasks, more than the {MAX_TASKS} this kernel runs",
            tasks.len()
        ));
    }
    let Some(first) = tasks.first() else {
        return;
    };
    let mut regions = [task_regions(first); MAX_TASKS];
    for (r, t) in regions.iter_mut().zip(tasks) {
        *r = task_regions(t);
    }
    let list: heapless::Vec<TaskSpec, MAX_TASKS> = tasks
        .iter()
        .zip(regions.iter())
        .map(|(t, regions)| TaskSpec {
            name: t.name,
            priority: t.priority,
            entry: t.entry,
            stack_top: t.stack_top,
            regions,
            caps: t.caps,
            fault: t.fault,
        })
        .collect();
    if let Err(e) = KERNEL.lock().boot(&list) {
        match e.task().and_then(|i| tasks.get(i)) {
            Some(t) => refuse(&format_args!("task `{}`: {e}", t.name)),
            None => refuse(&e),
        }
    }
}

/// Restores task memory and kernel objects from the committed checkpoint.
fn restore(nvm: &mut SystemNvm, mgr: &Manager, tasks: &'static [TaskImage]) {
    let mut records: Vec<(u16, Vec<u8>)> = Vec::new();
    let items: Vec<(ItemId, u8, u32)> = mgr.live_items().collect();
    for (id, kind, len) in items {
        let refuse = |why: &dyn core::fmt::Display| -> ! {
            crate::boot::fatal(
                ExitCode::NvmRefused,
                format_args!("cannot restore item {}: {why}", id.0),
            )
        };
        if kind == MEMORY_KIND {
            let Some((t, page)) = memory_page(id).filter(|&(t, p)| t < tasks.len() && p < PAGES)
            else {
                refuse(&"task memory of a task this app does not have");
            };
            let (base, page_len) = Pages::new(tasks[t].ram.0, tasks[t].ram.1).page(page);
            if len != page_len {
                refuse(&"a task memory page of the wrong size");
            }
            // SAFETY: the page lies in the task's RAM region, which is ours to fill
            // before any task runs.
            let ram = unsafe { core::slice::from_raw_parts_mut(base as *mut u8, len as usize) };
            mgr.read_item(nvm, id, ram).unwrap_or_else(|e| refuse(&e));
        } else {
            let mut buf = alloc::vec![0u8; len as usize];
            mgr.read_item(nvm, id, &mut buf)
                .unwrap_or_else(|e| refuse(&e));
            records.push((id.0, buf));
        }
    }
    let mut k = KERNEL.lock();
    k.restore_into(records.iter().map(|(i, b)| (*i, b.as_slice())), &mut Board)
        .unwrap_or_else(|e| {
            crate::boot::fatal(
                ExitCode::NvmRefused,
                format_args!("the checkpointed kernel objects do not form a valid system: {e:?}"),
            )
        });
    k.clear_dirty();
}
