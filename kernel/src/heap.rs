//! The kernel heap: a buddy allocator over the `.heap` section of the kernel image.
//!
//! Its size is fixed by `link.x`. It is for boot-time and kernel-object allocations;
//! interrupt handlers must never allocate, because the allocator's lock may be held by
//! the code they interrupted.

use buddy_system_allocator::LockedHeap;

#[global_allocator]
static HEAP: LockedHeap<32> = LockedHeap::empty();

unsafe extern "C" {
    static mut _heap_start: u8;
    static mut _heap_end: u8;
}

/// Hands the `.heap` section to the allocator. Call once, before any allocation.
pub fn init() {
    let start = &raw mut _heap_start as usize;
    let end = &raw mut _heap_end as usize;
    // SAFETY: `.heap` is a NOLOAD section reserved by `link.x` for exactly this use;
    // no other code refers to it, and this runs once at boot.
    unsafe { HEAP.lock().init(start, end - start) };
}

/// (bytes managed, bytes allocated).
pub fn usage() -> (usize, usize) {
    let heap = HEAP.lock();
    (heap.stats_total_bytes(), heap.stats_alloc_actual())
}
