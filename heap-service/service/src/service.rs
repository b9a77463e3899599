//! The service: requests of the `amber-heap-api` protocol carried out on a vNV-Heap.
//!
//! Every client object is a `u8` array of the vNV-Heap in chunks of 256 bytes (the
//! protocol's piece), so the service is untyped and a piece the client library sends
//! touches one chunk. Between requests the service holds no handle: each request turns
//! the id into an array handle and gives it back with `into_id` before replying, so
//! nothing is pinned or borrowed when the kernel asks for a persist, and a reopen after
//! a restore needs nothing but the heap on storage and this struct's owner table (both
//! from the same checkpoint). It must never free or touch an object of another client
//! (badges), never panic on a request, and never drop an array handle (that frees).

use amber_heap_api::{Status, CHUNK, OP_ALLOC, OP_FREE, OP_READ, OP_SIZE, OP_WRITE};
use amber_nvm::Nvm;
use vnv_heap::{ArrayHandle, Config, HeapError, ObjectId, VnvHeap};

/// Most object ids a service's heap may have (the owner table's length).
pub const MAX_IDS: usize = 128;

/// Why a request was refused: a protocol status, or a heap error to turn into one.
enum Refused {
    Status(Status),
    Heap(HeapError),
}

impl From<HeapError> for Refused {
    fn from(e: HeapError) -> Self {
        Refused::Heap(e)
    }
}

impl From<Status> for Refused {
    fn from(s: Status) -> Self {
        Refused::Status(s)
    }
}

/// The heap service's state: the heap (in checkpointed memory, its cache outside it)
/// and who owns each object.
pub struct Service<'c, S: Nvm> {
    /// `None` only after a reopen failed: every request then gets `Failed`.
    heap: Option<VnvHeap<'c, S>>,
    config: Config,
    max_object: u32,
    /// The badge each live object was allocated with, by id.
    owners: [u32; MAX_IDS],
    /// The last heap error that made a request fail with `Failed`, for the console.
    failure: Option<HeapError>,
}

impl<'c, S: Nvm> Service<'c, S> {
    /// Formats a new heap on `storage` (erasing whatever heap was there), caching in
    /// `cache`, with objects of at most `max_object` bytes.
    pub fn format(
        storage: S,
        cache: &'c mut [u8],
        config: Config,
        max_object: u32,
    ) -> Result<Self, HeapError> {
        if usize::from(config.max_objects) > MAX_IDS {
            return Err(HeapError::BadConfig {
                reason: "more object ids than the service's owner table holds",
            });
        }
        Ok(Service {
            heap: Some(VnvHeap::new(storage, cache, config)?),
            config,
            max_object,
            owners: [0; MAX_IDS],
            failure: None,
        })
    }

    /// Drops the heap and opens it again from storage, with a cache from `cache`
    /// (called once the old heap, which borrowed the cache, is gone). After a restore
    /// this gives the heap as the restored checkpoint's persist left it; the owner
    /// table comes from the same checkpoint.
    pub fn reopen(&mut self, cache: impl FnOnce() -> &'c mut [u8]) -> Result<(), HeapError> {
        let old = self.heap.take().ok_or(HeapError::Poisoned)?;
        let storage = old.into_storage();
        self.heap = Some(VnvHeap::open(storage, cache(), self.config)?);
        Ok(())
    }

    /// Persists the heap (see `VnvHeap::persist`).
    pub fn persist(&mut self) -> Result<(), HeapError> {
        self.heap.as_ref().ok_or(HeapError::Poisoned)?.persist()
    }

    /// The heap, unless a reopen failed.
    pub fn heap(&self) -> Option<&VnvHeap<'c, S>> {
        self.heap.as_ref()
    }

    /// The heap error behind the last `Failed` reply, once.
    pub fn take_failure(&mut self) -> Option<HeapError> {
        self.failure.take()
    }

    /// Carries out one request: `words` and `data` as received, `badge` of the
    /// capability it came through. Returns the reply's words and how many bytes of
    /// `out` it carries.
    pub fn handle(
        &mut self,
        words: [u32; 4],
        badge: u32,
        data: &[u8],
        out: &mut [u8; CHUNK],
    ) -> ([u32; 4], usize) {
        let [op, a, b, c] = words;
        let r = match op {
            OP_ALLOC => self.alloc(a, badge).map(|id| (id, 0)),
            OP_FREE => self.free(a, badge).map(|()| (0, 0)),
            OP_SIZE => self
                .with_array(a, badge, |_, arr| Ok(arr.len()))
                .map(|n| (n, 0)),
            OP_READ => self.read(a, b, c, badge, out).map(|n| (0, n)),
            OP_WRITE => self.write(a, b, c, badge, data).map(|()| (0, 0)),
            _ => Err(Refused::Status(Status::BadRequest)),
        };
        match r {
            Ok((value, n)) => ([Status::Ok as u32, value, 0, 0], n),
            Err(e) => ([self.status(e) as u32, 0, 0, 0], 0),
        }
    }

    /// The protocol status for a refusal; heap errors that are not the client's doing
    /// are kept for the console.
    fn status(&mut self, r: Refused) -> Status {
        let e = match r {
            Refused::Status(s) => return s,
            Refused::Heap(e) => e,
        };
        match e {
            HeapError::NoSuchObject { .. }
            | HeapError::TypeMismatch { .. }
            | HeapError::AlreadyHeld { .. } => Status::NoSuchObject,
            HeapError::OutOfIds => Status::OutOfIds,
            HeapError::NvmFull { .. } => Status::NvmFull,
            HeapError::CacheFull { .. } => Status::CacheFull,
            HeapError::IndexOutOfRange { .. } => Status::OutOfRange,
            HeapError::ObjectTooLarge { .. } | HeapError::UnsupportedType { .. } => Status::BadSize,
            e => {
                self.failure = Some(e);
                Status::Failed
            }
        }
    }

    fn live_heap(&self) -> Result<&VnvHeap<'c, S>, Refused> {
        self.heap.as_ref().ok_or(Refused::Status(Status::Failed))
    }

    /// An object id from a request word: any value, checked.
    fn id(&self, raw: u32) -> Result<u16, Refused> {
        u16::try_from(raw)
            .ok()
            .filter(|&id| id < self.config.max_objects)
            .ok_or(Refused::Status(Status::NoSuchObject))
    }

    fn alloc(&mut self, size: u32, badge: u32) -> Result<u32, Refused> {
        if size == 0 || size > self.max_object {
            return Err(Status::BadSize.into());
        }
        let heap = self.live_heap()?;
        let arr = heap.alloc_array::<u8>(size, CHUNK as u16, 0)?;
        let id = arr.into_id().raw();
        self.owners[usize::from(id)] = badge;
        Ok(id.into())
    }

    fn free(&mut self, raw: u32, badge: u32) -> Result<(), Refused> {
        let id = self.id(raw)?;
        let heap = self.live_heap()?;
        let arr = heap.array_from_id::<u8>(ObjectId::from_raw(id))?;
        if self.owners[usize::from(id)] != badge {
            let _ = arr.into_id();
            return Err(Status::NotOwner.into());
        }
        heap.free_array(arr)?;
        self.owners[usize::from(id)] = 0;
        Ok(())
    }

    /// Runs `f` on object `raw`'s array handle if `badge` owns it, and gives the handle
    /// back (never drops it: that would free the object).
    fn with_array<R>(
        &self,
        raw: u32,
        badge: u32,
        f: impl FnOnce(&VnvHeap<'c, S>, &mut ArrayHandle<'_, u8>) -> Result<R, Refused>,
    ) -> Result<R, Refused> {
        let id = self.id(raw)?;
        let heap = self.live_heap()?;
        let mut arr = heap.array_from_id::<u8>(ObjectId::from_raw(id))?;
        let r = if self.owners[usize::from(id)] == badge {
            f(heap, &mut arr)
        } else {
            Err(Status::NotOwner.into())
        };
        let _ = arr.into_id();
        r
    }

    /// The range `[offset, offset + len)` of an object of `size` bytes, if it is one
    /// piece long at most and lies inside.
    fn range(offset: u32, len: u32, size: u32) -> Result<(u32, u32), Refused> {
        if len as usize > CHUNK {
            return Err(Status::BadRequest.into());
        }
        match offset.checked_add(len) {
            Some(end) if end <= size => Ok((offset, end)),
            _ => Err(Status::OutOfRange.into()),
        }
    }

    fn read(
        &self,
        raw: u32,
        offset: u32,
        len: u32,
        badge: u32,
        out: &mut [u8; CHUNK],
    ) -> Result<usize, Refused> {
        self.with_array(raw, badge, |heap, arr| {
            let (start, end) = Self::range(offset, len, arr.len())?;
            let mut pos = start;
            while pos < end {
                let (chunk, i) = arr.chunk_of(pos);
                let g = heap.get_chunk(arr, chunk)?;
                let n = (g.len() - i).min((end - pos) as usize);
                let at = (pos - start) as usize;
                out[at..at + n].copy_from_slice(&g[i..i + n]);
                pos += n as u32;
            }
            Ok(len as usize)
        })
    }

    fn write(
        &self,
        raw: u32,
        offset: u32,
        len: u32,
        badge: u32,
        data: &[u8],
    ) -> Result<(), Refused> {
        if data.len() != len as usize {
            return Err(Status::BadRequest.into());
        }
        self.with_array(raw, badge, |heap, arr| {
            let (start, end) = Self::range(offset, len, arr.len())?;
            let mut pos = start;
            while pos < end {
                let (chunk, i) = arr.chunk_of(pos);
                let mut g = heap.get_chunk_mut(arr, chunk)?;
                let n = (g.len() - i).min((end - pos) as usize);
                let at = (pos - start) as usize;
                g[i..i + n].copy_from_slice(&data[at..at + n]);
                pos += n as u32;
            }
            Ok(())
        })
    }
}
