//! The service: requests of the `amber-heap-api` protocol carried out on one client's
//! vNV-Heap.
//!
//! The task runs one `Service` per client (one heap per client badge, each with its own
//! FRAM area and its own cache), so a client can only ever reach, or damage, its own
//! heap. Each heap is split (`VnvHeap::new_split`): its metadata lives in the service's
//! own (checkpointed) memory, and its arena, which holds object bytes only, is the
//! memory object shared with the client. Every client object is a one-chunk `u8` array
//! of the vNV-Heap; `OP_PIN` pins it (loading it into the arena if needed) and replies
//! its offset there, so the client's guards point straight into the shared arena, and
//! `OP_UNPIN` releases the pin. Between requests the service holds no handle (each
//! request that needs one turns the id into an array handle and gives it back with
//! `into_id`); the only state held across requests is the heap's own (pins included)
//! and this struct's table of sizes and cache hints, both in checkpointed memory. It
//! also counts what its persists write, so that `OP_STATS` can split the storage's
//! counters into persists and everything else.
//!
//! With a pin page (`attach_pins`; protocol in `amber_heap_api::page`) the service also
//! publishes, per id, where a resident object no IPC pin holds lies, so that the client
//! pins it without IPC by a mark on the page. Before any work that may evict an object
//! or make a dirty one clean (`OP_ALLOC`, `OP_FREE`, `OP_PIN`, a persist), it clears the
//! whole table, then reads the marks and takes a pin of its own for each marked
//! resident object (a write pin for a write mark on a dirty one, else a read pin) so the
//! heap keeps it in place (and dirty); after the work it drops those pins and publishes
//! the table again. A persist also copies the marks into this struct (checkpointed), and
//! a reload writes them back, so the client's fast pins survive a restore as its IPC
//! pins do. It must never panic on a request, never trust a word of the arena or of
//! the pin page's marks beyond "keep this object in place" (the client writes both),
//! never read the page's table (the client can write it too), and never drop an array
//! handle (that frees).

use crate::{Counted, StorageStats};
use amber_heap_api::page::{ENTRY_DIRTY, ENTRY_OFFSET, ENTRY_RESIDENT, PAGE_IDS};
use amber_heap_api::page::{MARK_PINS, MARK_USED, MARK_WRITE, MARK_WROTE};
use amber_heap_api::{
    PinPage, ServiceStats, Status, CHUNK, OP_ALLOC, OP_FREE, OP_PIN, OP_SIZE, OP_STATS, OP_UNPIN,
};
use amber_nvm::Nvm;
use core::cell::Cell;
use core::sync::atomic::{compiler_fence, Ordering};
use vnv_heap::{Config, HeapError, ObjectId, VnvHeap};

/// Most object ids a service's heap may have (the size table's length).
pub const MAX_IDS: usize = 128;

const _: () = assert!(
    ServiceStats::BYTES <= CHUNK,
    "the counters must fit one reply"
);

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

const _: () = assert!(PAGE_IDS <= 64, "the pin page's id sets are u64 masks");

/// The pins the service took for the client's marks during one piece of work, by id
/// (bit `i` for id `i < PAGE_IDS`).
#[derive(Clone, Copy, Default)]
struct Folded {
    read: u64,
    write: u64,
}

impl Folded {
    fn holds(&self, id: u16) -> bool {
        (self.read | self.write) & 1u64.checked_shl(id.into()).unwrap_or(0) != 0
    }
}

/// One client's heap service: the heap (metadata in checkpointed memory, arena shared
/// with the client) and the size and cache hint of each object.
pub struct Service<'c, S: Nvm> {
    /// `None` only after a reload failed: every request then gets `Failed`.
    heap: Option<VnvHeap<'c, S>>,
    config: Config,
    max_object: u32,
    /// The size of each live object, by id (0: none).
    sizes: [u16; MAX_IDS],
    /// The cache unit where each object was last seen (a hint the heap checks).
    hints: [Cell<u16>; MAX_IDS],
    /// The last heap error that made a request fail with `Failed`, for the console.
    failure: Option<HeapError>,
    /// Persists made, and the bytes and driver writes they took.
    persists: u64,
    persist_bytes: u64,
    persist_writes: u64,
    /// The client's pin page, if it has one.
    pins: Option<PinPage>,
    /// The page's marks as the last persist found them: the page is not checkpointed,
    /// this struct is (see `reload`).
    saved_marks: [u16; PAGE_IDS],
    /// The ids whose table entry is not zero (bit `i` for id `i`), so that clearing the
    /// table writes only those.
    published: Cell<u64>,
}

impl<'c, S: Nvm + Counted> Service<'c, S> {
    /// Formats a new split heap on `storage` (erasing whatever heap was there), its
    /// metadata in `meta` and its arena (shared with the client) `arena`, with objects
    /// of at most `max_object` bytes (at most 65,535).
    pub fn format(
        storage: S,
        meta: &'c mut [u8],
        arena: &'c mut [u8],
        config: Config,
        max_object: u32,
    ) -> Result<Self, HeapError> {
        if usize::from(config.max_objects) > MAX_IDS {
            return Err(HeapError::BadConfig {
                reason: "more object ids than the service's tables hold",
            });
        }
        if max_object > u32::from(u16::MAX) {
            return Err(HeapError::BadConfig {
                reason: "objects of more than 65,535 bytes",
            });
        }
        Ok(Service {
            heap: Some(VnvHeap::new_split(storage, meta, arena, config)?),
            config,
            max_object,
            sizes: [0; MAX_IDS],
            hints: core::array::from_fn(|_| Cell::new(u16::MAX)),
            failure: None,
            persists: 0,
            persist_bytes: 0,
            persist_writes: 0,
            pins: None,
            saved_marks: [0; PAGE_IDS],
            published: Cell::new(0),
        })
    }

    /// Gives the service its client's pin page (right after `format`, before the
    /// client runs): clears its marks and publishes the table.
    pub fn attach_pins(&mut self, page: PinPage) {
        for i in 0..PAGE_IDS {
            page.set_mark(i, 0);
        }
        self.pins = Some(page);
        self.clear_table();
        self.saved_marks = [0; PAGE_IDS];
        self.publish_all();
    }

    /// After a restore: the heap's metadata and this struct came back from the
    /// checkpoint, the arena's contents did not; reads every resident object back into
    /// its place (`VnvHeap::reload`), so the client's pins stay valid. A failure leaves
    /// the service answering `Failed`.
    pub fn reload(&mut self) -> Result<(), HeapError> {
        let heap = self.heap.as_ref().ok_or(HeapError::Poisoned)?;
        let r = heap.reload();
        if r.is_err() {
            self.heap = None;
            self.clear_table();
            return r;
        }
        // The page came back empty (or as garbage): the marks as the checkpoint's
        // persist saw them, which the client's restored memory matches, and the table
        // from the heap's metadata. Their objects are resident: the persist held them.
        if let Some(page) = self.pins {
            for (i, &m) in self.saved_marks.iter().enumerate() {
                page.set_mark(i, m);
            }
        }
        self.clear_table();
        self.publish_all();
        r
    }

    /// Clears every entry of the pin page's table (whatever the page holds).
    fn clear_table(&self) {
        if let Some(page) = self.pins {
            (0..PAGE_IDS).for_each(|i| page.set_entry(i, 0, 0));
        }
        self.published.set(0);
    }

    /// Persists the heap (see `VnvHeap::persist`), counting what it writes (a failed
    /// persist too: its writes reached the storage).
    pub fn persist(&mut self) -> Result<(), HeapError> {
        let folded = self.fold();
        if let Some(page) = self.pins {
            for (i, m) in self.saved_marks.iter_mut().enumerate() {
                *m = page.mark(i);
            }
        }
        let heap = self.heap.as_ref().ok_or(HeapError::Poisoned)?;
        let before = heap.with_storage(Counted::counted);
        let r = heap.persist();
        let d = heap.with_storage(Counted::counted).since(&before);
        self.unfold(folded);
        self.publish_all();
        self.persists += 1;
        self.persist_bytes += d.bytes_written;
        self.persist_writes += d.writes;
        r
    }

    /// The counters `OP_STATS` replies: the storage's (zero after a failed reload, when
    /// there is no heap to ask) and the persists'.
    pub fn stats(&self) -> ServiceStats {
        let st = self
            .heap
            .as_ref()
            .map_or_else(StorageStats::default, |h| h.with_storage(Counted::counted));
        ServiceStats {
            dirty_limit: self.config.max_dirty_bytes.into(),
            persists: self.persists,
            persist_bytes: self.persist_bytes,
            persist_writes: self.persist_writes,
            bytes_written: st.bytes_written,
            writes: st.writes,
            bytes_read: st.bytes_read,
            reads: st.reads,
        }
    }

    /// The heap, unless a reload failed.
    pub fn heap(&self) -> Option<&VnvHeap<'c, S>> {
        self.heap.as_ref()
    }

    /// Whether the next allocation would find no free id although a persist would free
    /// some (see `VnvHeap::ids_wait_for_persist`): the task takes a checkpoint first.
    pub fn ids_wait_for_persist(&self) -> bool {
        self.heap.as_ref().is_some_and(|h| h.ids_wait_for_persist())
    }

    /// The heap error behind the last `Failed` reply, once.
    pub fn take_failure(&mut self) -> Option<HeapError> {
        self.failure.take()
    }

    /// Carries out one request: `words` as received (no request carries bytes; the
    /// task chose this service by the request's badge, so every object of this heap
    /// is the caller's). Returns the reply's words and how many bytes of `out` it
    /// carries.
    pub fn handle(&mut self, words: [u32; 4], out: &mut [u8; CHUNK]) -> ([u32; 4], usize) {
        let [op, a, b, _] = words;
        // The requests that may evict or write back run with the client's marks held.
        let folds = matches!(op, OP_ALLOC | OP_FREE | OP_PIN);
        let folded = if folds {
            self.fold()
        } else {
            Folded::default()
        };
        let r = match op {
            OP_ALLOC => self.alloc(a).map(|id| (id, 0)),
            OP_FREE => self.free(a, &folded).map(|()| (0, 0)),
            // From the table: no storage read.
            OP_SIZE => self.size_of(a).map(|n| (n, 0)),
            OP_PIN => self.pin(a, b).map(|off| (off, 0)),
            OP_UNPIN => self.unpin(a, b).map(|()| (0, 0)),
            OP_STATS => {
                let bytes = self.stats().encode();
                out[..bytes.len()].copy_from_slice(&bytes);
                Ok((0, bytes.len()))
            }
            _ => Err(Refused::Status(Status::BadRequest)),
        };
        if folds {
            self.unfold(folded);
            self.publish_all();
        } else if op == OP_UNPIN {
            if let Ok(id) = self.id(a) {
                self.publish(id);
            }
        }
        let size = if op == OP_PIN {
            self.size_of(a).unwrap_or(0)
        } else {
            0
        };
        match r {
            Ok((value, n)) => ([Status::Ok as u32, value, size, 0], n),
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
            HeapError::DirtyLimitExceeded { .. } => Status::CacheFull,
            HeapError::Borrowed { .. } => Status::Pinned,
            HeapError::NotPinned { .. } => Status::NotPinned,
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

    fn alloc(&mut self, size: u32) -> Result<u32, Refused> {
        if size == 0 || size > self.max_object {
            return Err(Status::BadSize.into());
        }
        let heap = self.live_heap()?;
        // One chunk: the object's bytes are contiguous in the arena.
        let arr = heap.alloc_array::<u8>(size, size as u16, 0)?;
        let id = arr.into_id().raw();
        self.sizes[usize::from(id)] = size as u16;
        self.hints[usize::from(id)].set(u16::MAX);
        Ok(id.into())
    }

    fn free(&mut self, raw: u32, folded: &Folded) -> Result<(), Refused> {
        let id = self.id(raw)?;
        if folded.holds(id) {
            // A guard on the pin page still points at it.
            return Err(Status::Pinned.into());
        }
        let heap = self.live_heap()?;
        let arr = heap.array_from_id::<u8>(ObjectId::from_raw(id))?;
        heap.free_array(arr)?;
        self.sizes[usize::from(id)] = 0;
        Ok(())
    }

    /// The size of live object `raw`, from the table.
    fn size_of(&self, raw: u32) -> Result<u32, Refused> {
        let id = self.id(raw)?;
        match self.sizes[usize::from(id)] {
            0 => Err(Status::NoSuchObject.into()),
            n => Ok(n.into()),
        }
    }

    /// The pin mode word: 0 read, 1 write.
    fn mode(word: u32) -> Result<bool, Refused> {
        match word {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Status::BadRequest.into()),
        }
    }

    fn pin(&self, raw: u32, mode: u32) -> Result<u32, Refused> {
        let write = Self::mode(mode)?;
        let size = self.size_of(raw)?;
        let id = self.id(raw)?;
        let heap = self.live_heap()?;
        let off = heap.pin(
            ObjectId::from_raw(id),
            size as u16,
            write,
            &self.hints[usize::from(id)],
        )?;
        u32::try_from(off).map_err(|_| Refused::Status(Status::Failed))
    }

    fn unpin(&self, raw: u32, mode: u32) -> Result<(), Refused> {
        let write = Self::mode(mode)?;
        let id = self.id(raw)?;
        self.size_of(raw)?;
        let heap = self.live_heap()?;
        heap.unpin(ObjectId::from_raw(id), write, &self.hints[usize::from(id)])?;
        Ok(())
    }

    /// Ids the pin page covers in this heap.
    fn page_ids(&self) -> usize {
        PAGE_IDS.min(self.config.max_objects.into())
    }

    /// Holds the client's marks as pins of the heap, before work that may evict an
    /// object or make a dirty one clean. The table is cleared first and the marks read
    /// second; the client marks first and reads the table second (one hart: program
    /// order is memory order, and the compiler keeps the order of these volatile
    /// accesses, the fence keeps the rest out). So a client that read a live entry had
    /// marked before this reads its mark, and is held here; a mark this misses came
    /// after the clearing, and its client finds the entry cleared and takes its mark
    /// back. A marked object that is not resident is no client's fast pin (its entry was
    /// never published since), so nothing is loaded for it. A pin the heap refuses is
    /// not needed: the object is pinned already (by an IPC pin).
    fn fold(&self) -> Folded {
        let mut f = Folded::default();
        let (Some(page), Some(heap)) = (self.pins, self.heap.as_ref()) else {
            return f;
        };
        let mut p = self.published.replace(0);
        while p != 0 {
            page.set_entry(p.trailing_zeros() as usize, 0, 0);
            p &= p - 1;
        }
        compiler_fence(Ordering::SeqCst);
        let n = self.page_ids();
        for i in 0..n {
            let m = page.mark(i);
            let size = self.sizes[i];
            if m == 0 || size == 0 {
                continue;
            }
            let (id, hint) = (ObjectId::from_raw(i as u16), &self.hints[i]);
            if m & MARK_USED != 0 {
                // Pins on the page since the last pass: the heap's hands hear of them
                // now (a lie only changes which of its own objects stay cached).
                page.set_mark(i, m & !(MARK_USED | MARK_WROTE));
                heap.touch(id, m & MARK_WROTE != 0, hint);
            }
            if m & MARK_PINS == 0 {
                continue;
            }
            let Some(r) = heap.raw_resident(id, hint) else {
                continue;
            };
            // A write mark on a clean object is being taken back (the table never said
            // dirty) or a lie: a read pin keeps it in place without dirtying it.
            let write = m & MARK_WRITE != 0 && r.dirty;
            if heap.pin(id, size, write, hint).is_ok() {
                if write {
                    f.write |= 1 << i;
                } else {
                    f.read |= 1 << i;
                }
            }
        }
        f
    }

    /// Drops the pins [`fold`](Self::fold) took.
    fn unfold(&self, f: Folded) {
        let Some(heap) = self.heap.as_ref() else {
            return;
        };
        for i in 0..self.page_ids() {
            let bit = 1u64 << i;
            if (f.read | f.write) & bit != 0 {
                let _ = heap.unpin(
                    ObjectId::from_raw(i as u16),
                    f.write & bit != 0,
                    &self.hints[i],
                );
            }
        }
    }

    /// Publishes every live object's entry on the pin page (the others are clear: the
    /// table was cleared before any work that changed what is live or resident).
    fn publish_all(&self) {
        for i in 0..self.page_ids() {
            if self.sizes[i] != 0 {
                self.publish(i as u16);
            }
        }
    }

    /// Publishes id `id`'s entry: resident at its offset (and whether dirty) if no pin of
    /// the heap holds it, else nothing (the client then pins by IPC, and the heap
    /// arbitrates between its pins).
    fn publish(&self, id: u16) {
        let (Some(page), i) = (self.pins, usize::from(id)) else {
            return;
        };
        if i >= self.page_ids() {
            return;
        }
        let size = self.sizes[i];
        let found = self
            .heap
            .as_ref()
            .filter(|_| size != 0)
            .and_then(|h| h.raw_resident(ObjectId::from_raw(id), &self.hints[i]));
        let bit = 1u64 << i;
        match found {
            Some(r) if !r.pinned && r.offset <= ENTRY_OFFSET as usize => {
                let dirty = if r.dirty { ENTRY_DIRTY } else { 0 };
                page.set_entry(i, ENTRY_RESIDENT | dirty | r.offset as u32, size.into());
                self.published.set(self.published.get() | bit);
            }
            _ if self.published.get() & bit != 0 => {
                page.set_entry(i, 0, 0);
                self.published.set(self.published.get() & !bit);
            }
            _ => {}
        }
    }
}
