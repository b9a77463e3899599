//! The heap service's IPC protocol, shared by the service task and its clients, and the
//! client library that gives a task typed objects on the service's vNV-Heap.
//!
//! This crate holds numbers, their encoding and client calls only: it must never hold
//! service logic (that is `amber-heap-service`) and never trust a reply beyond what it
//! checks.
//!
//! # Protocol
//!
//! A request is a Call on the service's endpoint with four words `[op, a, b, c]` and,
//! for [`OP_WRITE`], the bytes in the message's bounded copy (at most [`CHUNK`] = 256
//! bytes). The reply is `[status, value, 0, 0]` ([`Status`]: 0 = success) and, for
//! [`OP_READ`], the bytes. The service is untyped: an object is a byte string of a
//! fixed size chosen at allocation; this library gives it a type on the client side.
//!
//! | op | request words | request bytes | reply `value` | reply bytes |
//! |----|---------------|---------------|---------------|-------------|
//! | [`OP_ALLOC`] = 1 | `[1, size, 0, 0]` | – | the new object's id | – |
//! | [`OP_FREE`] = 2 | `[2, id, 0, 0]` | – | 0 | – |
//! | [`OP_READ`] = 3 | `[3, id, offset, len]`, `len` ≤ 256 | – | 0 | `len` bytes |
//! | [`OP_WRITE`] = 4 | `[4, id, offset, len]`, `len` ≤ 256 | `len` bytes | 0 | – |
//! | [`OP_SIZE`] = 5 | `[5, id, 0, 0]` | – | the object's size | – |
//!
//! A new object holds zeros. Objects belong to the client that allocated them: the
//! service compares the badge of the endpoint capability a request came through with
//! the allocator's, so clients given differently badged capabilities cannot reach each
//! other's objects ([`Status::NotOwner`]). Ids are stable across the service's
//! persists and across power cuts (they name vNV-Heap objects); an id is reused after
//! its object is freed.
//!
//! # Copies, not shared memory
//!
//! In this first version every access copies: a guard holds a copy of the object in
//! the client's memory, read through IPC in pieces of at most 256 bytes (an object of
//! `n` bytes costs `ceil(n / 256)` calls to read and as many to write back). Sharing
//! the service's cache with clients (zero-copy guards mapped by PMP) is future work.
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
//! let heap = Heap::new(0); // the service's endpoint in slot 0
//! let mut r = heap.alloc(Reading { seq: 0, value: 0 })?;
//! heap.update(&mut r, |r| r.seq += 1)?;
//! let mut g = heap.get_mut(&mut r)?;
//! g.value = 7;
//! g.release()?; // written back; a failure is reported here
//! assert_eq!(heap.get(&r)?.value, 7);
//! heap.free(r)?;
//! # Ok::<(), amber_heap_api::HeapError>(())
//! ```
//!
//! The borrow rules of the vNV-Heap library hold at compile time. A guard cannot
//! outlive its handle:
//!
//! ```compile_fail,E0597
//! let heap = amber_heap_api::Heap::new(0);
//! let g = {
//!     let h = heap.alloc(1u32).unwrap();
//!     heap.get_ref(&h).unwrap()
//! };
//! ```
//!
//! A `RefMut` needs the handle mutably, so it excludes every other guard:
//!
//! ```compile_fail,E0502
//! let heap = amber_heap_api::Heap::new(0);
//! let mut h = heap.alloc(1u32).unwrap();
//! let r = heap.get_ref(&h).unwrap();
//! let w = heap.get_mut(&mut h).unwrap();
//! let _ = (*r, *w);
//! ```
//!
//! A read guard gives no mutable access, and handles cannot be copied:
//!
//! ```compile_fail,E0594
//! let heap = amber_heap_api::Heap::new(0);
//! let h = heap.alloc(1u32).unwrap();
//! let mut r = heap.get_ref(&h).unwrap();
//! *r = 2;
//! ```
//!
//! ```compile_fail,E0599
//! let heap = amber_heap_api::Heap::new(0);
//! let h = heap.alloc(1u32).unwrap();
//! let h2 = h.clone();
//! ```

#![cfg_attr(not(test), no_std)]

mod channel;
mod client;
mod error;
#[cfg(test)]
mod tests;

pub use channel::{Channel, Endpoint};
pub use client::{Handle, Heap, Ref, RefMut};
pub use error::{HeapError, Status};
pub use vnv_heap::{ObjectId, Persist};

/// Allocate an object of `size` bytes (zero-filled); the reply's value is its id.
pub const OP_ALLOC: u32 = 1;
/// Free object `id`.
pub const OP_FREE: u32 = 2;
/// Read `len` bytes of object `id` from `offset`; the bytes come in the reply.
pub const OP_READ: u32 = 3;
/// Write the message's `len` bytes into object `id` at `offset`.
pub const OP_WRITE: u32 = 4;
/// The size of object `id`, in the reply's value.
pub const OP_SIZE: u32 = 5;

/// The most bytes one read or write request carries (the kernel's bounded IPC copy).
pub const CHUNK: usize = amber_user::abi::MAX_MSG_BYTES as usize;

/// Result of heap client calls.
pub type Result<T> = core::result::Result<T, HeapError>;
