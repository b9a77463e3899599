//! The pin page: memory a client and the heap service share (the app's `heap-pins`,
//! RAM the kernel does not checkpoint), on which a client pins an object that is
//! already resident without any IPC. This file holds the page's layout and its raw
//! accessors, used by both sides; it must never decide anything (the client's fast
//! path is in `client.rs`, the service's side in `amber-heap-service`).
//!
//! # Layout (one page per client, [`PAGE_BYTES`] each, client `i`'s at `i * PAGE_BYTES`)
//!
//! | offset | size | what | written by |
//! |--------|------|------|------------|
//! | 0 | `2 * PAGE_IDS` | marks: one `u16` per id, bit 15 [`MARK_WRITE`], bit 14 [`MARK_USED`], bit 13 [`MARK_WROTE`], bits 0..13 read pins | the client (the service clears the use bits) |
//! | 128 | `8 * PAGE_IDS` | table: per id `[entry u32][size u32]`; entry bit 31 [`ENTRY_RESIDENT`], bit 30 [`ENTRY_DIRTY`], bits 0..30 the object's offset in the window | the service |
//!
//! Only ids below [`PAGE_IDS`] have a mark and an entry; others always take the IPC path.
//!
//! # Protocol (single hart: program order is memory order)
//!
//! The client marks first, then reads the entry; it uses the object only if the entry
//! says resident (and, for a write pin, dirty, so that no dirty budget is taken), and
//! otherwise undoes its mark and pins by IPC. The service, before it may evict an object
//! or make a dirty one clean (every request that can, and every persist), first clears
//! the entry, then reads the mark, and treats a marked object as pinned. Whichever of
//! the two orders the interleaving takes, one side sees the other: the client sees the
//! cleared entry (and backs off) or the service sees the mark (and keeps the object in
//! place, dirty). The service publishes an entry only for an object no IPC pin holds,
//! so a fast pin never meets a pin it would conflict with; the client's own marks keep
//! its fast pins apart (a write mark excludes every other mark).
//!
//! The service never trusts the page: it only writes the table (never reads it back),
//! and a mark only ever makes it keep an object in place; a client that writes lies
//! into its page can only mislead itself, within its own window.
//!
//! The page is not checkpointed: the service copies the marks into its own
//! (checkpointed) memory in every persist phase, and after a restore writes them back and
//! rebuilds the table before any client runs.

use amber_user::Memory;
use core::ptr::NonNull;

/// Ids that have a mark and a table entry.
pub const PAGE_IDS: usize = 64;
/// Bytes of one client's page (a multiple of the apps' 256-byte memory granule).
pub const PAGE_BYTES: usize = 768;
/// Where the table starts in the page.
const TABLE_AT: usize = 2 * PAGE_IDS;
const _: () = assert!(TABLE_AT + 8 * PAGE_IDS <= PAGE_BYTES);

/// A mark's write pin bit.
pub const MARK_WRITE: u16 = 1 << 15;
/// A mark's use bit: set by every pin taken on the page, cleared by the service when it
/// tells the heap's second-chance hands (eviction, write-back) that the object was used.
pub const MARK_USED: u16 = 1 << 14;
/// A mark's write use bit: set by every write pin taken on the page, cleared with
/// [`MARK_USED`].
pub const MARK_WROTE: u16 = 1 << 13;
/// A mark's read pin count.
pub const MARK_READERS: u16 = MARK_WROTE - 1;
/// A mark's pins: the write pin bit and the read pin count.
pub const MARK_PINS: u16 = MARK_WRITE | MARK_READERS;
/// An entry's bit: the object is resident at the entry's offset and no IPC pin holds it.
pub const ENTRY_RESIDENT: u32 = 1 << 31;
/// An entry's bit: the object is dirty (a write pin takes no dirty budget).
pub const ENTRY_DIRTY: u32 = 1 << 30;
/// An entry's offset bits.
pub const ENTRY_OFFSET: u32 = ENTRY_DIRTY - 1;

/// One client's pin page, by its address. Every access is volatile: the other side
/// reads and writes it between any two instructions of this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinPage(NonNull<u8>);

impl PinPage {
    /// The page at `base`.
    ///
    /// # Safety
    ///
    /// `base` must be 4-aligned and the start of [`PAGE_BYTES`] bytes of memory that stay
    /// mapped (read and write) for as long as the page is used, shared with the other
    /// side alone, and never accessed through a reference.
    pub const unsafe fn new(base: NonNull<u8>) -> PinPage {
        PinPage(base)
    }

    /// Page `index` of the pin memory `pins` as this task maps it (a client maps its
    /// own page only: index 0; the service maps every client's), if the memory holds it.
    ///
    /// # Safety
    ///
    /// As for [`new`](Self::new): `pins` is mapped for this task for as long as the page
    /// is used and shared with the other side alone, never accessed through a reference.
    pub unsafe fn in_memory(pins: Memory, index: usize) -> Option<PinPage> {
        let end = index.checked_add(1)?.checked_mul(PAGE_BYTES)?;
        if end > pins.len || !pins.base.is_multiple_of(4) {
            return None;
        }
        let base = NonNull::new((pins.base + index * PAGE_BYTES) as *mut u8)?;
        // SAFETY: inside `pins` (checked), 4-aligned; the caller vouches for the rest.
        Some(unsafe { PinPage::new(base) })
    }

    fn u16_at(&self, i: usize) -> *mut u16 {
        // SAFETY (of the uses): callers pass `i < PAGE_IDS`, so the mark lies in the
        // page, 2-aligned (the page is 4-aligned).
        self.0.as_ptr().wrapping_add(2 * i).cast::<u16>()
    }

    fn u32_at(&self, byte: usize) -> *mut u32 {
        self.0.as_ptr().wrapping_add(byte).cast::<u32>()
    }

    /// Id `id`'s mark (0 for an id past [`PAGE_IDS`]).
    pub fn mark(&self, id: usize) -> u16 {
        if id >= PAGE_IDS {
            return 0;
        }
        // SAFETY: inside the page (`new`'s contract), aligned, no reference to it.
        unsafe { self.u16_at(id).read_volatile() }
    }

    /// Sets id `id`'s mark (nothing for an id past [`PAGE_IDS`]).
    pub fn set_mark(&self, id: usize, mark: u16) {
        if id < PAGE_IDS {
            // SAFETY: as in `mark`.
            unsafe { self.u16_at(id).write_volatile(mark) }
        }
    }

    /// Id `id`'s table entry and the object's size (zeros past [`PAGE_IDS`]).
    pub fn entry(&self, id: usize) -> (u32, u32) {
        if id >= PAGE_IDS {
            return (0, 0);
        }
        let at = TABLE_AT + 8 * id;
        // SAFETY: both words lie in the page (`TABLE_AT + 8 * PAGE_IDS <= PAGE_BYTES`),
        // 4-aligned; no reference to them.
        unsafe {
            (
                self.u32_at(at).read_volatile(),
                self.u32_at(at + 4).read_volatile(),
            )
        }
    }

    /// Sets id `id`'s table entry and size (nothing past [`PAGE_IDS`]).
    pub fn set_entry(&self, id: usize, entry: u32, size: u32) {
        if id < PAGE_IDS {
            let at = TABLE_AT + 8 * id;
            // SAFETY: as in `entry`.
            unsafe {
                self.u32_at(at).write_volatile(entry);
                self.u32_at(at + 4).write_volatile(size);
            }
        }
    }
}
