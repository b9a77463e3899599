//! Task memory as the kernel touches and protects it: user memory access on a task's
//! behalf (which marks the pages it writes dirty), the first-store trap that makes a
//! clean page dirty, and the PMP programming that maps each task's regions, with clean
//! RAM pages read-only. It must never widen a task's access beyond what its regions
//! and capabilities grant.

use super::{app, task_index, KERNEL, MAX_TASKS, PERSIST};
use crate::arch::riscv32::pmp;
use crate::bootargs::MemTrack;
use crate::pages::{PageMask, Pages, ALL_PAGES, PAGES};
use crate::pmp::{PmpImage, TorRegion};
use amber_abi::Rights;
use amber_core::{Kernel, RegionSpec, ThreadId, UserMemory};
use log::error;

/// Which task owns the RAM byte at `addr`, and its pages.
fn task_owning(addr: u32) -> Option<(usize, Pages)> {
    app::TASKS
        .iter()
        .map(|t| Pages::new(t.ram.0, t.ram.1))
        .enumerate()
        .find(|(_, pages)| pages.contains(addr))
}

/// User memory as the core sees it: plain physical addresses, already validated by the
/// core against the calling task's regions. Writes mark the task memory dirty, since
/// the kernel's own stores do not go through PMP.
pub(super) struct Phys<'a> {
    pub(super) mem_dirty: Option<&'a mut [PageMask; MAX_TASKS]>,
}

impl UserMemory for Phys<'_> {
    fn read(&mut self, addr: u32, buf: &mut [u8]) {
        // SAFETY: the core checked `[addr, addr + len)` lies in a region the task may
        // read, which is RAM outside the kernel image.
        unsafe { core::ptr::copy_nonoverlapping(addr as *const u8, buf.as_mut_ptr(), buf.len()) }
    }

    fn write(&mut self, addr: u32, data: &[u8]) {
        if let (Some(dirty), Some((t, pages))) = (self.mem_dirty.as_deref_mut(), task_owning(addr))
        {
            dirty[t] |= pages.touched(addr, data.len() as u32);
        }
        // SAFETY: as in `read`, for a region the task may write.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len()) }
    }
}

/// mcause of a store access fault.
const STORE_ACCESS_FAULT: usize = 7;

/// A store to clean, write-protected task memory: marks the page dirty (every page,
/// when the PMP maps the task's RAM whole) and lets the store run again (the pc still
/// points at it). Returns false for a real fault.
pub(super) fn first_write(mcause: usize, addr: u32) -> bool {
    if mcause != STORE_ACCESS_FAULT {
        return false;
    }
    let k = KERNEL.lock();
    let Some(t) = k.current() else { return false };
    let Some(i) = task_index(t) else {
        return false;
    };
    let pages = Pages::new(app::TASKS[i].ram.0, app::TASKS[i].ram.1);
    let mut p = PERSIST.lock();
    let Some(p) = p.as_mut() else { return false };
    let clean = pages.present() & !p.mem_dirty[i];
    if p.memtrack != MemTrack::Protect || !pages.contains(addr) || clean == 0 {
        return false;
    }
    let split = PMP_FOR.lock().is_some_and(|(_, _, _, split)| split);
    let touched = if split {
        pages.touched(addr, 4)
    } else {
        pages.present()
    };
    if touched & clean == 0 {
        return false;
    }
    p.mem_dirty[i] |= touched;
    *PMP_FOR.lock() = None;
    true
}

/// What the PMP holds: the task, the kernel's memory epoch, which of its RAM pages
/// were writable, and whether the RAM was split into pages. The PMP is rewritten only
/// when one of them changes.
pub(super) static PMP_FOR: spin::Mutex<PmpKey> = spin::Mutex::new(None);

/// Programs the PMP for `t` unless it already holds `t`'s regions. With write
/// protection on, clean pages of the task's RAM are mapped read-only so that the first
/// store to each traps. When the pages do not fit beside the task's other regions,
/// the RAM is mapped whole (writable only once every page is dirty).
pub(super) fn program_pmp(k: &Kernel, t: ThreadId) {
    let index = task_index(t);
    let writable = {
        let p = PERSIST.lock();
        match (p.as_ref(), index) {
            (Some(p), Some(i)) if p.memtrack == MemTrack::Protect => p.mem_dirty[i],
            _ => ALL_PAGES,
        }
    };
    let ram = index.map(|i| app::TASKS[i].ram);
    let pages = ram.map(|(base, len)| Pages::new(base, len));
    let own_ram = |r: &RegionSpec| ram == Some((r.base, r.len));
    let epoch = k.memory_epoch();
    let mut pmp_for = PMP_FOR.lock();
    // The split depends only on the task's regions, which change only with the epoch.
    if pmp_for.is_some_and(|(pt, pe, pw, _)| (pt, pe, pw) == (t, epoch, writable)) {
        return;
    }
    // A task switch back to a task whose layout has not changed: reuse its image.
    let mut cache = PMP_IMAGES.lock();
    if let Some(Some((key, image))) = index.map(|i| &cache[i]) {
        if key.is_some_and(|(ct, ce, cw, _)| (ct, ce, cw) == (t, epoch, writable)) {
            pmp::write(image);
            *pmp_for = *key;
            return;
        }
    }
    let others = k.regions(t).filter(|r| !own_ram(r)).count();
    let split = pages.is_some() && others + PAGES <= crate::pmp::MAX_REGIONS;
    let key = Some((t, epoch, writable, split));
    let mut regions: heapless::Vec<TorRegion, { crate::pmp::MAX_REGIONS }> = heapless::Vec::new();
    let mut push = |base: u32, len: u32, read: bool, write: bool, exec: bool| match TorRegion::new(
        base, len, read, write, exec,
    ) {
        Ok(region) if regions.push(region).is_ok() => {}
        _ => error!(
            "task {}: region {base:#x}+{len:#x} cannot be mapped",
            k.task_name(t)
        ),
    };
    for r in k.regions(t) {
        let (read, write, exec) = (
            r.rights.contains(Rights::READ),
            r.rights.contains(Rights::WRITE),
            r.rights.contains(Rights::EXEC),
        );
        match pages.filter(|_| own_ram(&r)) {
            Some(pg) if split => {
                for p in (0..PAGES).filter(|&p| pg.present() & 1 << p != 0) {
                    let (base, len) = pg.page(p);
                    push(base, len, read, write && writable & 1 << p != 0, exec);
                }
            }
            Some(pg) => push(
                r.base,
                r.len,
                read,
                write && writable & pg.present() == pg.present(),
                exec,
            ),
            None => push(r.base, r.len, read, write, exec),
        }
    }
    let image = PmpImage::layout(&regions).unwrap_or(PmpImage::EMPTY);
    pmp::write(&image);
    *pmp_for = key;
    if let Some(i) = index {
        cache[i] = Some((key, image));
    }
}

/// The last PMP image computed for each task, with its key: a task switch between
/// tasks whose layouts did not change only rewrites the CSRs.
type PmpKey = Option<(ThreadId, u32, PageMask, bool)>;
static PMP_IMAGES: spin::Mutex<[Option<(PmpKey, PmpImage)>; MAX_TASKS]> =
    spin::Mutex::new([None; MAX_TASKS]);
