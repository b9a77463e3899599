//! Task memory as the kernel touches and protects it: user memory access on a task's
//! behalf (which marks the pages it writes dirty), the first-store trap that makes a
//! clean page dirty, and the PMP programming that maps each task's regions, with clean
//! RAM pages read-only. It must never widen a task's access beyond what its regions
//! and capabilities grant.

use super::{System, SystemNvm};
use crate::app::{TaskImage, TASKS};
use crate::arch::pmp;
use crate::bootargs::MemTrack;
use crate::pages::{self, PageMask, Pages, ALL_PAGES, PAGES};
use crate::pmp_layout::{PmpImage, TorRegion, MAX_REGIONS};
use crate::writer::CheckpointWriter;
use amber_abi::Rights;
use amber_core::{
    deliver_in_parts, write_words_bytewise, RegionSpec, ThreadId, UserMemory, MAX_TASKS,
};
use log::error;

fn pages(t: &TaskImage) -> Pages {
    Pages::new(t.ram.0, t.ram.1)
}

/// User memory as the core sees it: plain physical addresses, already validated by the
/// core against the calling task's regions. Writes mark the task memory dirty, since
/// the kernel's own stores do not go through PMP.
pub(super) struct TaskMemory<'a> {
    pub(super) dirty: Option<&'a mut [PageMask; MAX_TASKS]>,
}

impl TaskMemory<'_> {
    /// Marks the pages of the task whose RAM holds `addr` that `[addr, addr + len)`
    /// touches dirty (nothing before the checkpoint writer is set up).
    fn mark(&mut self, addr: u32, len: u32) {
        self.mark_with(addr, len, 0, 0);
    }

    /// [`TaskMemory::mark`] of `[addr, addr + len)` and, when the same task's RAM holds
    /// all of `[also, also + also_len)`, of that range too, finding the task once
    /// ([`pages::written`]). False when the second range was left for the caller.
    #[inline(always)]
    fn mark_with(&mut self, addr: u32, len: u32, also: u32, also_len: u32) -> bool {
        let Some(dirty) = self.dirty.as_deref_mut() else {
            return true;
        };
        let rams = dirty.iter_mut().zip(TASKS.iter().map(|t| t.ram));
        match pages::written(rams, addr, len, also, also_len) {
            Some((d, mask, holds_also)) => {
                *d |= mask;
                holds_also || also_len == 0
            }
            None => also_len == 0,
        }
    }
}

/// Copies `len` bytes from `from` to `to`, which may overlap: by [`copy_forward`]
/// when all three are word aligned and a forward copy is safe (`to` before `from`, or
/// the ranges apart), else by `core::ptr::copy`.
///
/// # Safety
///
/// `[from, from + len)` must be readable and `[to, to + len)` writable memory.
#[inline(always)]
unsafe fn copy_words(from: u32, to: u32, len: u32) {
    if forward_words(from, to, len) {
        // SAFETY: the caller's ranges, aligned, and `to` does not run ahead of `from`.
        unsafe { copy_forward(from, to, len) }
    } else {
        // SAFETY: the caller's ranges; `copy` allows them to overlap.
        unsafe { core::ptr::copy(from as *const u8, to as *mut u8, len as usize) }
    }
}

/// Whether [`copy_forward`] may copy `len` bytes from `from` to `to`.
#[inline(always)]
fn forward_words(from: u32, to: u32, len: u32) -> bool {
    (from | to | len).is_multiple_of(4) && (to <= from || to - from >= len)
}

/// Copies `len` bytes from `from` to `to` as whole words, four at a time. A message's
/// bytes are few, and most are words: the word loop saves `memmove`'s sizing up.
///
/// # Safety
///
/// [`forward_words`] holds, `[from, from + len)` is readable and `[to, to + len)`
/// writable memory.
#[inline(always)]
unsafe fn copy_forward(from: u32, to: u32, len: u32) {
    let (mut src, mut dst) = (from as *const u32, to as *mut u32);
    let end = from.wrapping_add(len) as *const u32;
    let end4 = from.wrapping_add(len & !15) as *const u32;
    // Volatile, so that the compiler neither calls `memcpy` for the loops nor merges
    // them; four words are read before they are written, which a forward copy allows.
    while src != end4 {
        // SAFETY: the four words at `src` and `dst` lie in the caller's ranges.
        unsafe {
            let (w0, w1) = (src.read_volatile(), src.add(1).read_volatile());
            let (w2, w3) = (src.add(2).read_volatile(), src.add(3).read_volatile());
            dst.write_volatile(w0);
            dst.add(1).write_volatile(w1);
            dst.add(2).write_volatile(w2);
            dst.add(3).write_volatile(w3);
            (src, dst) = (src.add(4), dst.add(4));
        }
    }
    while src != end {
        // SAFETY: the word at `src` and `dst` lies in the caller's ranges.
        unsafe {
            dst.write_volatile(src.read_volatile());
            (src, dst) = (src.add(1), dst.add(1));
        }
    }
}

impl UserMemory for TaskMemory<'_> {
    fn read(&mut self, addr: u32, buf: &mut [u8]) {
        // SAFETY: the core checked `[addr, addr + len)` lies in a region the task may
        // read, which is RAM outside the kernel image.
        unsafe { core::ptr::copy_nonoverlapping(addr as *const u8, buf.as_mut_ptr(), buf.len()) }
    }

    fn write(&mut self, addr: u32, data: &[u8]) {
        self.mark(addr, data.len() as u32);
        // SAFETY: as in `read`, for a region the task may write.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len()) }
    }

    fn copy(&mut self, from: u32, to: u32, len: u32) {
        self.mark(to, len);
        // SAFETY: the core checked that the sender may read `[from, from + len)` and the
        // receiver may write `[to, to + len)`, both RAM outside the kernel image; the
        // two may overlap (a shared memory object), which `copy_words` allows.
        unsafe { copy_words(from, to, len) }
    }

    fn deliver(&mut self, from: u32, to: u32, len: u32, out_at: u32, sent: u32, got_cap: bool) {
        let out = [len, sent, u32::from(got_cap)];
        // The common case without a call (so without a frame): bytes and words aligned,
        // both in the receiver's own RAM, found once.
        if len > 0
            && out_at.is_multiple_of(4)
            && out_at != 0
            && forward_words(from, to, len)
            && self.mark_with(to, len, out_at, 4 * out.len() as u32)
        {
            // SAFETY: as in `copy`, with `forward_words` checked; the three words as in
            // `write_words`, at an aligned address.
            unsafe {
                copy_forward(from, to, len);
                let at = out_at as *mut u32;
                at.write_volatile(out[0]);
                at.add(1).write_volatile(out[1]);
                at.add(2).write_volatile(out[2]);
            }
            return;
        }
        deliver_in_parts(self, from, to, len, out_at, out);
    }

    // Aligned words are loaded and stored whole, unaligned ones a byte at a time.
    fn read_word(&mut self, addr: u32) -> u32 {
        // SAFETY: as in `read`, for 4 bytes at an aligned address (RISC-V is
        // little-endian, as the word is).
        unsafe { (addr as *const u32).read() }
    }

    fn write_words(&mut self, addr: u32, words: &[u32]) {
        if !addr.is_multiple_of(4) {
            return write_words_bytewise(self, addr, words);
        }
        self.mark(addr, 4 * words.len() as u32);
        let at = addr as *mut u32;
        for (i, w) in words.iter().enumerate() {
            // SAFETY: as in `write`, for `4 * words.len()` bytes at an aligned address;
            // volatile, so that the few words are not made a `memcpy` call.
            unsafe { at.add(i).write_volatile(*w) };
        }
    }
}

/// Task memory for the syscall fast path, which needs no machine: [`TaskMemory`], with
/// the dirty masks found only when the kernel writes (a message of register words
/// alone writes nothing, and the null syscall reads nothing).
pub(super) struct FastMemory<'a>(pub(super) &'a mut Option<CheckpointWriter<SystemNvm>>);

impl FastMemory<'_> {
    fn task(&mut self) -> TaskMemory<'_> {
        TaskMemory {
            dirty: self.0.as_mut().map(|w| &mut w.mem_dirty),
        }
    }
}

impl UserMemory for FastMemory<'_> {
    fn read(&mut self, addr: u32, buf: &mut [u8]) {
        TaskMemory { dirty: None }.read(addr, buf)
    }

    fn write(&mut self, addr: u32, data: &[u8]) {
        self.task().write(addr, data)
    }

    fn copy(&mut self, from: u32, to: u32, len: u32) {
        self.task().copy(from, to, len)
    }

    fn read_word(&mut self, addr: u32) -> u32 {
        TaskMemory { dirty: None }.read_word(addr)
    }

    fn write_words(&mut self, addr: u32, words: &[u32]) {
        self.task().write_words(addr, words)
    }

    fn deliver(&mut self, from: u32, to: u32, len: u32, out_at: u32, sent: u32, got_cap: bool) {
        self.task().deliver(from, to, len, out_at, sent, got_cap)
    }
}

/// What a PMP image was computed for: the task, the kernel's memory epoch, which of its
/// RAM pages were writable, and whether the RAM was split into pages. The PMP is
/// rewritten only when one of them changes.
type PmpKey = (ThreadId, u32, PageMask, bool);

/// The last image computed for each task, and which of them the PMP holds (`None`:
/// none of them): a task switch between tasks whose layouts did not change only
/// rewrites the CSRs (of those, only the ones the image uses: `arch::pmp::write`).
pub(super) struct PmpCache {
    current: Option<usize>,
    images: [Option<(PmpKey, PmpImage)>; MAX_TASKS],
}

impl PmpCache {
    pub(super) const EMPTY: PmpCache = PmpCache {
        current: None,
        images: [None; MAX_TASKS],
    };
}

impl System {
    /// A store to clean, write-protected task memory at `addr`: marks the page dirty
    /// (every page, when the PMP maps the task's RAM whole) and lets the store run
    /// again (the pc still points at it). False for a real fault.
    pub(super) fn first_write(&mut self, addr: u32) -> bool {
        let Some(i) = self.kernel.current().and_then(|t| self.task_index(t)) else {
            return false;
        };
        let pages = pages(&TASKS[i]);
        let Some(w) = self.writer.as_mut() else {
            return false;
        };
        let clean = pages.present() & !w.mem_dirty[i];
        if w.memtrack != MemTrack::Protect || !pages.contains(addr) || clean == 0 {
            return false;
        }
        let held = self.pmp.current.and_then(|i| self.pmp.images[i]);
        let split = held.is_some_and(|((_, _, _, split), _)| split);
        let touched = if split {
            pages.touched(addr, 4)
        } else {
            pages.present()
        };
        if touched & clean == 0 {
            return false;
        }
        // The PMP key changes with the writable pages: the next run reprograms it.
        w.mem_dirty[i] |= touched;
        true
    }

    /// Programs the PMP for `t` unless it already holds `t`'s regions. With write
    /// protection on, clean pages of the task's RAM are mapped read-only so that the
    /// first store to each traps. When the pages do not fit beside the task's other
    /// regions, the RAM is mapped whole (writable only once every page is dirty).
    #[inline(always)]
    pub(super) fn program_pmp(&mut self, t: ThreadId) {
        self.set_pmp(t, true)
    }

    /// [`System::program_pmp`] for a switch to `t` from another task, whose regions
    /// the PMP holds.
    #[inline(always)]
    pub(super) fn switch_pmp(&mut self, t: ThreadId) {
        self.set_pmp(t, false)
    }

    /// [`System::program_pmp`], looking first whether the PMP holds `t`'s regions
    /// already when `maybe_current`.
    #[inline(always)]
    fn set_pmp(&mut self, t: ThreadId, maybe_current: bool) {
        let index = self.task_index(t);
        let writable = match (self.writer.as_ref(), index) {
            (Some(w), Some(i)) if w.memtrack == MemTrack::Protect => w.mem_dirty[i],
            _ => ALL_PAGES,
        };
        let epoch = self.kernel.memory_epoch();
        // The split depends only on the task's regions, which change only with the epoch.
        if let Some(i) = index {
            if let Some((key, image)) = &self.pmp.images[i] {
                if (key.0, key.1, key.2) == (t, epoch, writable) {
                    // A task switch back to a task whose layout has not changed: reuse
                    // its image.
                    if !(maybe_current && self.pmp.current == Some(i)) {
                        pmp::write(image);
                        self.pmp.current = Some(i);
                    }
                    return;
                }
            }
        }
        self.lay_out_pmp(t, index, writable, epoch);
    }

    /// Computes, writes and keeps the PMP image of `t` (task `index`) for its regions
    /// at `epoch`, with the RAM pages `writable`. Out of line: the common switch
    /// reuses a kept image.
    #[inline(never)]
    fn lay_out_pmp(&mut self, t: ThreadId, index: Option<usize>, writable: PageMask, epoch: u32) {
        let k = &self.kernel;
        let ram = index.map(|i| TASKS[i].ram);
        let pages = index.map(|i| pages(&TASKS[i]));
        let own_ram = |r: &RegionSpec| ram == Some((r.base, r.len));
        let others = k.regions(t).filter(|r| !own_ram(r)).count();
        let split = pages.is_some() && others + PAGES <= MAX_REGIONS;
        let key = (t, epoch, writable, split);
        let mut regions: heapless::Vec<TorRegion, MAX_REGIONS> = heapless::Vec::new();
        let mut push =
            |base: u32, len: u32, read: bool, write: bool, exec: bool| match TorRegion::new(
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
        self.pmp.current = index;
        if let Some(i) = index {
            self.pmp.images[i] = Some((key, image));
        }
    }
}
