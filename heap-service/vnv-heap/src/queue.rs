//! A FIFO queue on the heap: a ring of elements in a chunked array and a small head
//! object (ring id, first index, length, capacity), both heap objects, so that the
//! queue is persisted with the heap and found again after a reopen by the head's id.
//!
//! A push writes the element, then the head; a pop reads the element, then writes
//! the head. Both reach NVM together at the next persist (the heap commits whole
//! epochs), so a reopen sees the queue as of that persist. This file uses the heap's
//! public API only and must never hold a guard across calls.

use crate::{ArrayHandle, Handle, HeapError, ObjectId, Persist, Result, VnvHeap};
use amber_nvm::Nvm;

/// The head of a queue, as stored on the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
struct Head {
    /// Id of the ring (an array of `capacity` elements).
    ring: u32,
    /// Index of the oldest element.
    first: u32,
    len: u32,
    capacity: u32,
}

// SAFETY: four `u32`s: no padding, every bit pattern valid, alignment 4.
unsafe impl Persist for Head {}

/// A FIFO queue of `T` with a fixed capacity, kept on a heap.
///
/// The elements live in an array of `capacity` elements tracked in chunks (see
/// [`VnvHeap::alloc_array`]): a push or pop makes dirty only the chunk it touches and
/// the 16-byte head, and a queue longer than the cache swaps its chunks like any other
/// objects.
pub struct Queue<'h, T: Persist> {
    ring: ArrayHandle<'h, T>,
    head: Handle<'h, Head>,
}

impl<'h, T: Persist> Queue<'h, T> {
    /// An empty queue of up to `capacity` elements on `heap`, its ring in chunks of
    /// `chunk_len` elements (`fill` is what unused slots hold).
    pub fn new<S: Nvm>(
        heap: &'h VnvHeap<'_, S>,
        capacity: u32,
        chunk_len: u16,
        fill: T,
    ) -> Result<Self> {
        let ring = heap.alloc_array(capacity, chunk_len, fill)?;
        let head = Head {
            ring: ring.id().raw().into(),
            first: 0,
            len: 0,
            capacity,
        };
        match heap.alloc(head) {
            Ok(head) => Ok(Queue { ring, head }),
            Err(e) => {
                let _ = heap.free_array(ring);
                Err(e)
            }
        }
    }

    /// The queue whose head has id `id` (see [`Queue::into_id`]), after a reopen.
    /// Fails, never misreads, if the id names no queue of `T`.
    pub fn from_id<S: Nvm>(heap: &'h VnvHeap<'_, S>, id: ObjectId) -> Result<Self> {
        let head = heap.handle_from_id::<Head>(id)?;
        // On any refusal the handles are given back, not dropped (dropping frees).
        let ring = heap.get(&head).and_then(|h| {
            let mismatch = HeapError::TypeMismatch { id: id.raw() };
            let ring_id = u16::try_from(h.ring).map_err(|_| mismatch)?;
            let ring = heap.array_from_id::<T>(ObjectId::from_raw(ring_id))?;
            if ring.len() != h.capacity || h.len > h.capacity || h.first >= h.capacity {
                let _ = ring.into_id();
                return Err(mismatch);
            }
            Ok(ring)
        });
        match ring {
            Ok(ring) => Ok(Queue { ring, head }),
            Err(e) => {
                let _ = head.into_id();
                Err(e)
            }
        }
    }

    /// Gives up the queue without freeing it; its id (that of its head) finds it again
    /// with [`Queue::from_id`].
    pub fn into_id(self) -> ObjectId {
        let _ = self.ring.into_id();
        self.head.into_id()
    }

    /// Frees the ring and the head now, reporting a storage error.
    pub fn free<S: Nvm>(self, heap: &VnvHeap<'_, S>) -> Result<()> {
        let r = heap.free_array(self.ring);
        heap.free(self.head).and(r)
    }

    /// Elements in the queue.
    pub fn len<S: Nvm>(&self, heap: &VnvHeap<'_, S>) -> Result<u32> {
        Ok(heap.get(&self.head)?.len)
    }

    /// Whether the queue holds no element.
    pub fn is_empty<S: Nvm>(&self, heap: &VnvHeap<'_, S>) -> Result<bool> {
        Ok(self.len(heap)? == 0)
    }

    /// Most elements the queue holds.
    pub fn capacity(&self) -> u32 {
        self.ring.len()
    }

    /// Appends `value`; refused with [`HeapError::QueueFull`] when the queue holds
    /// its capacity.
    pub fn push<S: Nvm>(&mut self, heap: &VnvHeap<'_, S>, value: T) -> Result<()> {
        let h = heap.get(&self.head)?;
        if h.len == h.capacity {
            return Err(HeapError::QueueFull {
                capacity: h.capacity,
            });
        }
        let at = (h.first + h.len) % h.capacity;
        heap.set_elem(&mut self.ring, at, value)?;
        heap.update(&mut self.head, |h| h.len += 1)
    }

    /// The oldest element, without removing it.
    pub fn peek<S: Nvm>(&self, heap: &VnvHeap<'_, S>) -> Result<Option<T>> {
        let h = heap.get(&self.head)?;
        if h.len == 0 {
            return Ok(None);
        }
        heap.get_elem(&self.ring, h.first).map(Some)
    }

    /// Removes and returns the oldest element.
    pub fn pop<S: Nvm>(&mut self, heap: &VnvHeap<'_, S>) -> Result<Option<T>> {
        let Some(v) = self.peek(heap)? else {
            return Ok(None);
        };
        heap.update(&mut self.head, |h| {
            h.first = (h.first + 1) % h.capacity;
            h.len -= 1;
        })?;
        Ok(Some(v))
    }
}
