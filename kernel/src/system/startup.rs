//! Bringing the app up at boot: recover the system from the last committed checkpoint
//! (task memory and kernel objects), or, on a fresh or formatted NVM, load the app's
//! images, boot its tasks and commit checkpoint 1. It runs once, before any task, and
//! must never restore a checkpoint it cannot vouch for (another app's, or one that
//! fails its checks): it stops boot and says why instead.

use super::{Machine, System, SystemNvm, PERSIST_TIMEOUT_MS, SYSTEM};
use crate::app::{self, TaskImage};
use crate::arch;
use crate::board::{Board, Chosen};
use crate::bootargs::{BootArgs, MemTrack};
use crate::exit::ExitCode;
use crate::kmain::fatal;
use crate::pages::{Pages, ALL_PAGES, PAGES};
use crate::writer::{app_fingerprint, memory_page, CheckpointWriter, Meta, MEMORY_KIND};
use alloc::vec::Vec;
use amber_abi::Rights;
use amber_ckpt::{ItemId, Manager};
use amber_core::{
    CheckpointConfig, CheckpointEvent, Kernel, MemKind, RegionSpec, TaskSpec, MAX_TASKS,
};
use amber_format::NvmHeader;
use amber_nvm::Nvm;
use log::{info, warn};

/// Recovers the system from the last committed checkpoint, or boots the app fresh and
/// commits checkpoint 1, then runs the tasks. A device formatted during this boot
/// (`formatted`) gets a fresh checkpoint area too: nothing of before survives a
/// format. Never returns.
pub fn start(mut nvm: SystemNvm, header: &NvmHeader, formatted: bool, args: &BootArgs) -> ! {
    // From here on the kernel runs with interrupts off except while idling, so the
    // system lock is never held by interrupted code.
    arch::interrupts_off();
    Chosen::enable_user_counters();
    let tasks = app::TASKS;
    info!("app {}: {}", app::APP_NAME, app::APP_DESCRIPTION);
    if app::NVM_SIZE != 0 && app::NVM_SIZE != nvm.size() {
        fatal(
            ExitCode::NvmRefused,
            format_args!(
                "app {} was built for an NVM of {} bytes (its eternal memory lies where that \
                 NVM's areas are), and this NVM has {}: build it for this one (cargo xtask \
                 run builds the app for the image it boots)",
                app::APP_NAME,
                app::NVM_SIZE,
                nvm.size()
            ),
        );
    }
    let area = header.superblock.kernel_area;
    let fingerprint = app_fingerprint(tasks);
    let mut sys = SYSTEM.lock();
    let mgr = if formatted {
        format_area(&mut nvm, area)
    } else {
        recover(&mut nvm, area, tasks, fingerprint, &mut sys)
    };
    let committed = mgr.committed().0;
    if committed == 0 {
        // The tree `check_app` built is the fresh system; its tasks get fresh RAM.
        for t in tasks {
            load_ram(t);
        }
    }
    sys.writer = Some(CheckpointWriter {
        nvm,
        mgr,
        memtrack: args.memtrack,
        mem_dirty: [if committed == 0 { ALL_PAGES } else { 0 }; MAX_TASKS],
        app: fingerprint,
        totals: Default::default(),
    });
    sys.kernel.configure_checkpoints(CheckpointConfig {
        interval_ticks: app::CHECKPOINT_MS.div_ceil(Chosen::TICK_MS),
        persist_timeout_ticks: PERSIST_TIMEOUT_MS.div_ceil(Chosen::TICK_MS).into(),
        committed,
        power_failure_at: args.pfi,
    });
    sys.map_task_threads();
    if committed == 0 {
        sys.checkpoint(CheckpointEvent::Booted);
    }
    let tracking = match args.memtrack {
        MemTrack::Protect => "PMP write protection",
        MemTrack::Copy => "copying it whole",
    };
    match app::CHECKPOINT_MS {
        0 => info!("checkpoints: only when a task asks, task memory tracked by {tracking}"),
        ms => info!("checkpoints: every {ms} ms, task memory tracked by {tracking}"),
    }
    if committed > 0 {
        sys.checkpoint(CheckpointEvent::Restored);
    }
    let next = sys.next();
    drop(sys);
    super::run(next)
}

/// Recovers the committed checkpoint into the kernel and task memory, if there is
/// one; returns the manager (with nothing committed when the app must boot fresh).
fn recover(
    nvm: &mut SystemNvm,
    area: amber_format::Region,
    tasks: &'static [TaskImage],
    fingerprint: u32,
    sys: &mut System,
) -> Manager {
    let start = crate::cost::stamp();
    match Manager::recover(nvm, area) {
        Ok((mgr, report)) if mgr.committed().0 > 0 => {
            let meta = Meta::decode(&mgr.meta());
            if meta.app != fingerprint {
                fatal(
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
            restore(nvm, &mgr, tasks, &mut sys.kernel);
            sys.tick_base = meta.ticks;
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
        Err(e) => fatal(
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
        fatal(
            ExitCode::NvmIo,
            format_args!("cannot format the checkpoint area: {e}"),
        )
    })
}

/// Zeroes the parts of a task's RAM that no segment fills (its bss and stack) for a
/// fresh start. The loader placed the task's segments (code, and its RAM's initial
/// bytes) with the kernel's image at this boot, and nothing has run in them yet, so
/// they are as built. `cargo xtask` lists the segments in address order.
fn load_ram(t: &TaskImage) {
    let (base, len) = t.ram;
    let end = base + len;
    let mut at = base;
    let filled = t
        .segments
        .iter()
        .filter(|(addr, _)| (base..end).contains(addr))
        .map(|&(addr, n)| (addr, addr + n));
    for (start, stop) in filled.chain([(end, end)]) {
        if start > at {
            // SAFETY: xtask placed every task's RAM in the board's task RAM range,
            // disjoint from the kernel and from other tasks, and checked that each
            // segment lies inside its region; [at, start) is inside [base, end).
            unsafe { core::ptr::write_bytes(at as *mut u8, 0, (start - at) as usize) };
        }
        at = at.max(stop);
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
        fatal(
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
    // Code and RAM are each task's own: no two may share a byte of SRAM, through
    // whichever bus the addresses name.
    let mut own: heapless::Vec<(u32, u32), { 2 * MAX_TASKS }> = heapless::Vec::new();
    for t in tasks {
        // Cannot fail: at most MAX_TASKS tasks (checked above), two ranges each.
        let _ = own.push(t.code);
        let _ = own.push(t.ram);
    }
    if let Some((a, b)) = Chosen::MAP.first_physical_overlap(&own) {
        let (ta, tb) = (tasks[a / 2].name, tasks[b / 2].name);
        let what = |i: usize| if i.is_multiple_of(2) { "code" } else { "RAM" };
        refuse(&format_args!(
            "the {} of task `{ta}` and the {} of task `{tb}` share memory",
            what(a),
            what(b)
        ));
    }
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
    if let Err(e) = SYSTEM.lock().kernel.boot(&list) {
        match e.task().and_then(|i| tasks.get(i)) {
            Some(t) => refuse(&format_args!("task `{}`: {e}", t.name)),
            None => refuse(&e),
        }
    }
}

/// Restores task memory and kernel objects from the committed checkpoint.
fn restore(nvm: &mut SystemNvm, mgr: &Manager, tasks: &'static [TaskImage], kernel: &mut Kernel) {
    let mut records: Vec<(u16, Vec<u8>)> = Vec::new();
    let items: Vec<(ItemId, u8, u32)> = mgr.live_items().collect();
    for (id, kind, len) in items {
        let refuse = |why: &dyn core::fmt::Display| -> ! {
            fatal(
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
    let records = records.iter().map(|(i, b)| (*i, b.as_slice()));
    // No task runs during a restore: nothing reads the console.
    let mut no_input = crate::console_in::ConsoleIn::EMPTY;
    kernel
        .restore_into(
            records,
            &mut Machine {
                now: 0,
                nvm: None,
                console_in: &mut no_input,
            },
        )
        .unwrap_or_else(|e| {
            fatal(
                ExitCode::NvmRefused,
                format_args!("the checkpointed kernel objects do not form a valid system: {e:?}"),
            )
        });
}
