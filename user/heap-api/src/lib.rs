//! The heap service's IPC protocol, shared by the service task and its clients, and the
//! client library that gives a task typed objects on the service's vNV-Heap.
//!
//! This crate holds numbers, their encoding and client calls only: it must never hold
//! service logic (that is `amber-heap-service`) and never trust a reply beyond what it
//! checks.
//!
//! # Protocol
//!
//! A request is a Call on the service's endpoint with four words `[op, a, b, c]`; the
//! reply is `[status, value, extra, 0]` ([`Status`]: 0 = success) and, for
//! [`OP_STATS`], bytes. The service is untyped: an object is a byte string of a fixed
//! size chosen at allocation; this library gives it a type on the client side.
//!
//! | op | request words | reply `value` | reply `extra` / bytes |
//! |----|---------------|---------------|-----------------------|
//! | [`OP_ALLOC`] = 1 | `[1, size, 0, 0]` | the new object's id | – |
//! | [`OP_FREE`] = 2 | `[2, id, 0, 0]` | 0 | – |
//! | [`OP_SIZE`] = 5 | `[5, id, 0, 0]` | the object's size | – |
//! | [`OP_STATS`] = 6 | `[6, 0, 0, 0]` | 0 | [`ServiceStats::BYTES`] bytes: [`ServiceStats`] |
//! | [`OP_PIN`] = 7 | `[7, id, mode, 0]`, mode 0 read, 1 write | offset of the object in the client's window | the object's size |
//! | [`OP_UNPIN`] = 8 | `[8, id, mode, 0]` | 0 | – |
//!
//! (Codes 3 and 4 were the copying read and write of the first version; they are gone.)
//! A new object holds zeros. Each client has a heap of its own in the service (one per
//! badge of the endpoint capability, each on its own FRAM area), so clients cannot
//! reach each other's objects at all. Ids are stable across the service's persists and
//! across power cuts (they name vNV-Heap objects); an id is reused after its object is
//! freed.
//!
//! [`OP_STATS`] touches no object: it replies the service's storage counters (bytes and
//! driver calls written and read since it started, and the part this client's heap's
//! persists wrote; see [`ServiceStats`]).
//!
//! # Zero copy: guards point into the service's cache
//!
//! The service's cache of a client's objects is a memory object mapped both in the
//! service and in the client (the client's "window", given to [`Heap::new`]). A guard
//! pins its object ([`OP_PIN`]: loaded into the cache if needed, then neither moved nor
//! evicted) and derefs straight into the window; dropping or releasing it unpins
//! ([`OP_UNPIN`]). A read pin excludes write pins, a write pin every other pin, as the
//! vNV-Heap's guards do; a write pin marks the object dirty, within the heap's dirty
//! limit. The service keeps every header and bitmap of the heap in its own memory, so
//! whatever a client writes into its window can only change its own objects' bytes.
//! Guards may be held across checkpoints and power cuts: the service persists
//! write-pinned objects too (the client is stopped while it does), and after a restore
//! it reads every cached object back into the same place before any client runs.
//!
//! # The pin page: pins without IPC
//!
//! A client that is also given its pin page ([`Heap::with_pins`]; the app's memory
//! `heap-pins`, not checkpointed, shared with the service alone; layout and protocol in
//! [`page`]) pins an object the service has published as resident (and, for a write
//! pin, dirty) by a mark on the page, and releases it by taking the mark back: no IPC.
//! Everything else (an object not resident, the first write pin of a clean object, a
//! pin the client's own marks exclude) goes to [`OP_PIN`] as before. The service only
//! writes the page's table and reads its marks to keep marked objects in place (and
//! dirty); it carries the marks across power cuts as it carries its own pins.
//!
//! # Consistency across power cuts
//!
//! The service persists its heap right before every whole-system checkpoint (it is a
//! persist callback), so the heap a client finds after a restore is exactly the heap
//! as it was when the checkpoint that restored the client's own memory was taken: a
//! client never needs its own recovery code for heap objects.
//!
//! # Use
//!
//! ```no_run
//! use amber_heap_api::{Heap, Persist};
//!
//! #[derive(Clone, Copy)]
//! #[repr(C)]
//! struct Reading { seq: u32, value: u32 }
//! // SAFETY: two u32, no padding, every bit pattern valid.
//! unsafe impl Persist for Reading {}
//!
//! // SAFETY: the app maps this task's cache window (its part of the memory
//! // `heap-caches`, shared with the service only); nothing else in the task touches it.
//! let window = amber_user::memory!("HEAP_CACHES");
//! let heap = unsafe { Heap::new(0, window) }; // the endpoint in slot 0
//! let mut r = heap.alloc(Reading { seq: 0, value: 0 })?;
//! heap.update(&mut r, |r| r.seq += 1)?;
//! let mut g = heap.get_mut(&mut r)?;
//! g.value = 7; // straight into the service's cache
//! g.release()?; // unpinned; a failure is reported here
//! assert_eq!(heap.get(&r)?.value, 7);
//! heap.free(r)?;
//! # Ok::<(), amber_heap_api::HeapError>(())
//! ```
//!
//! The borrow rules of the vNV-Heap library hold at compile time. A guard cannot
//! outlive its handle:
//!
//! ```compile_fail,E0597
//! let heap = unsafe { amber_heap_api::Heap::new(0, amber_user::memory!("HEAP_CACHES")) };
//! let g = {
//!     let h = heap.alloc(1u32).unwrap();
//!     heap.get_ref(&h).unwrap()
//! };
//! ```
//!
//! A `RefMut` needs the handle mutably, so it excludes every other guard:
//!
//! ```compile_fail,E0502
//! let heap = unsafe { amber_heap_api::Heap::new(0, amber_user::memory!("HEAP_CACHES")) };
//! let mut h = heap.alloc(1u32).unwrap();
//! let r = heap.get_ref(&h).unwrap();
//! let w = heap.get_mut(&mut h).unwrap();
//! let _ = (*r, *w);
//! ```
//!
//! A read guard gives no mutable access, and handles cannot be copied:
//!
//! ```compile_fail,E0594
//! let heap = unsafe { amber_heap_api::Heap::new(0, amber_user::memory!("HEAP_CACHES")) };
//! let h = heap.alloc(1u32).unwrap();
//! let mut r = heap.get_ref(&h).unwrap();
//! *r = 2;
//! ```
//!
//! ```compile_fail,E0599
//! let heap = unsafe { amber_heap_api::Heap::new(0, amber_user::memory!("HEAP_CACHES")) };
//! let h = heap.alloc(1u32).unwrap();
//! let h2 = h.clone();
//! ```

#![cfg_attr(not(test), no_std)]

mod channel;
mod client;
mod error;
pub mod page;
mod stats;
#[cfg(test)]
mod tests;

pub use channel::{Channel, Endpoint};
pub use client::{Handle, Heap, Ref, RefMut};
pub use error::{HeapError, Status};
pub use page::PinPage;
pub use stats::ServiceStats;
pub use vnv_heap::{ObjectId, Persist};

/// Allocate an object of `size` bytes (zero-filled); the reply's value is its id.
pub const OP_ALLOC: u32 = 1;
/// Free object `id`.
pub const OP_FREE: u32 = 2;
/// The size of object `id`, in the reply's value.
pub const OP_SIZE: u32 = 5;
/// The service's storage counters, [`ServiceStats`] encoded in the reply's bytes.
pub const OP_STATS: u32 = 6;
/// Pin object `id` (mode 0 read, 1 write); the reply's value is its offset in the
/// client's window, its extra word its size.
pub const OP_PIN: u32 = 7;
/// Release a pin of object `id` made with the same mode.
pub const OP_UNPIN: u32 = 8;

/// The most bytes one reply carries (the kernel's bounded IPC copy).
pub const CHUNK: usize = amber_user::abi::MAX_MSG_BYTES as usize;

/// Result of heap client calls.
pub type Result<T> = core::result::Result<T, HeapError>;
