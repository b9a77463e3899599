//! Host tests of the client library against a small model of the service: objects
//! placed in a window (a buffer standing for the shared memory object), pins counted
//! per object. They check the encoding the service sees, the pin and unpin pairs of
//! guards, that guards read and write the window itself, and that a bad pin reply is
//! refused; the real service is tested against this library in `amber-heap-service`.
//! Tests only: nothing here may be used by the library itself.

use crate::{
    Channel, Handle, Heap, HeapError, ObjectId, Persist, ServiceStats, Status, OP_ALLOC, OP_FREE,
    OP_PIN, OP_SIZE, OP_STATS, OP_UNPIN,
};
use amber_user::Error;
use std::cell::RefCell;
use std::vec::Vec;

const WINDOW: usize = 4096;

/// One object of the model: its place in the window, size and pins.
#[derive(Clone, Copy)]
struct Obj {
    off: usize,
    size: usize,
    readers: u32,
    writer: bool,
}

/// The service model: objects by id, the window, and a log of the requests it saw.
struct Model {
    objects: Vec<Option<Obj>>,
    window: Vec<u64>,
    next: usize,
    /// (op, id, mode) of every request.
    log: Vec<(u32, u32, u32)>,
    /// Fail every pin request with this status.
    fail_pins: Option<Status>,
    /// Reply this offset to every pin.
    bad_offset: Option<u32>,
    /// What a stats request replies.
    stats: ServiceStats,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            objects: Vec::new(),
            window: vec![0; WINDOW / 8],
            next: 0,
            log: Vec::new(),
            fail_pins: None,
            bad_offset: None,
            stats: ServiceStats::default(),
        }
    }
}

impl Model {
    fn serve(&mut self, w: [u32; 4], recv: &mut [u8]) -> ([u32; 4], usize) {
        self.log.push((w[0], w[1], w[2]));
        let reply = |s: Status, v: u32| [s as u32, v, 0, 0];
        let id = w[1] as usize;
        match w[0] {
            OP_ALLOC => {
                let size = w[1] as usize;
                let off = self.next;
                self.next += size.next_multiple_of(8);
                let bytes = self.bytes();
                bytes[off..off + size].fill(0);
                self.objects.push(Some(Obj {
                    off,
                    size,
                    readers: 0,
                    writer: false,
                }));
                (reply(Status::Ok, (self.objects.len() - 1) as u32), 0)
            }
            OP_STATS => {
                let b = self.stats.encode();
                recv[..b.len()].copy_from_slice(&b);
                (reply(Status::Ok, 0), b.len())
            }
            op => {
                let fail = self.fail_pins;
                let bad = self.bad_offset;
                let Some(Some(o)) = self.objects.get_mut(id) else {
                    return (reply(Status::NoSuchObject, 0), 0);
                };
                let write = w[2] == 1;
                match op {
                    OP_FREE if o.readers > 0 || o.writer => (reply(Status::Pinned, 0), 0),
                    OP_FREE => {
                        self.objects[id] = None;
                        (reply(Status::Ok, 0), 0)
                    }
                    OP_SIZE => (reply(Status::Ok, o.size as u32), 0),
                    OP_PIN if fail.is_some() => (reply(fail.unwrap_or(Status::Ok), 0), 0),
                    OP_PIN if o.writer || (write && o.readers > 0) => (reply(Status::Pinned, 0), 0),
                    OP_PIN => {
                        if write {
                            o.writer = true;
                        } else {
                            o.readers += 1;
                        }
                        let off = bad.unwrap_or(o.off as u32);
                        ([0, off, o.size as u32, 0], 0)
                    }
                    OP_UNPIN if write && o.writer => {
                        o.writer = false;
                        (reply(Status::Ok, 0), 0)
                    }
                    OP_UNPIN if !write && o.readers > 0 => {
                        o.readers -= 1;
                        (reply(Status::Ok, 0), 0)
                    }
                    OP_UNPIN => (reply(Status::NotPinned, 0), 0),
                    _ => (reply(Status::BadRequest, 0), 0),
                }
            }
        }
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the u64 buffer's bytes, borrowed from `self`.
        unsafe { std::slice::from_raw_parts_mut(self.window.as_mut_ptr().cast(), WINDOW) }
    }

    fn count(&self, op: u32) -> usize {
        self.log.iter().filter(|l| l.0 == op).count()
    }

    fn pinned(&self) -> bool {
        self.objects
            .iter()
            .flatten()
            .any(|o| o.readers > 0 || o.writer)
    }
}

#[derive(Clone, Copy)]
struct Mock<'a>(&'a RefCell<Model>);

impl PartialEq for Mock<'_> {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self.0, other.0)
    }
}

impl Channel for Mock<'_> {
    fn call(
        &self,
        words: [u32; 4],
        _send: &[u8],
        recv: &mut [u8],
    ) -> Result<([u32; 4], usize), Error> {
        Ok(self.0.borrow_mut().serve(words, recv))
    }
}

fn heap(m: &RefCell<Model>) -> Heap<Mock<'_>> {
    let base = m.borrow_mut().window.as_mut_ptr() as usize;
    // SAFETY: the model's window is a buffer that outlives the heap and that the
    // tests touch only through the model's `bytes` while no guard lives.
    unsafe { Heap::with_channel(Mock(m), base, WINDOW) }
}

#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Big {
    words: [u32; 150],
}
// SAFETY: an array of u32, no padding, every bit pattern valid.
unsafe impl Persist for Big {}

fn big(seed: u32) -> Big {
    let mut words = [0; 150];
    for (i, w) in words.iter_mut().enumerate() {
        *w = seed.wrapping_mul(2_654_435_761).wrapping_add(i as u32);
    }
    Big { words }
}

#[test]
fn an_allocated_value_reads_back_and_survives_into_id_and_from_id() {
    let m = RefCell::new(Model::default());
    let heap = heap(&m);
    let h = heap.alloc(0x1234_5678u32).unwrap();
    assert_eq!(heap.get(&h).unwrap(), 0x1234_5678);
    let id = h.into_id();
    assert_eq!(
        m.borrow().count(OP_FREE),
        0,
        "into_id must not free the object"
    );
    let h: Handle<u32, _> = heap.from_id(id).unwrap();
    assert_eq!(heap.get(&h).unwrap(), 0x1234_5678);
    assert!(!m.borrow().pinned());
}

#[test]
fn guards_read_and_write_the_window_itself_with_one_pin_and_one_unpin() {
    let m = RefCell::new(Model::default());
    let heap = heap(&m);
    let mut h = heap.alloc(big(1)).unwrap();
    let before = m.borrow().log.len();
    {
        let mut g = heap.get_mut(&mut h).unwrap();
        g.words[3] = 99;
        assert!(m.borrow().objects[0].unwrap().writer);
    }
    assert_eq!(
        m.borrow().log[before..],
        [(OP_PIN, 0, 1), (OP_UNPIN, 0, 1)],
        "a 600-byte object is one pin, however large"
    );
    // The write went to the window, where the service sees it.
    let off = m.borrow().objects[0].unwrap().off;
    let b = m.borrow_mut().bytes()[off + 12..off + 16].to_vec();
    assert_eq!(b, 99u32.to_ne_bytes());
    let r1 = heap.get_ref(&h).unwrap();
    let r2 = heap.get_ref(&h).unwrap();
    assert_eq!(r1.words[3], 99);
    assert_eq!(m.borrow().objects[0].unwrap().readers, 2);
    r1.release().unwrap();
    drop(r2);
    assert!(!m.borrow().pinned());
}

#[test]
fn alloc_of_zeros_sends_no_pin() {
    let m = RefCell::new(Model::default());
    let heap = heap(&m);
    let h = heap.alloc(Big { words: [0; 150] }).unwrap();
    assert_eq!(m.borrow().count(OP_PIN), 0);
    let mut v = Big { words: [0; 150] };
    v.words[149] = 7;
    let h2 = heap.alloc(v).unwrap();
    assert_eq!(m.borrow().count(OP_PIN), 1);
    assert_eq!(heap.get(&h2).unwrap(), v);
    assert_eq!(heap.get(&h).unwrap(), Big { words: [0; 150] });
}

#[test]
fn update_and_set_unpin_and_report_a_failed_unpin() {
    let m = RefCell::new(Model::default());
    let heap = heap(&m);
    let mut h = heap.alloc(1u64).unwrap();
    assert_eq!(heap.update(&mut h, |v| *v * 10).unwrap(), 10);
    heap.update(&mut h, |v| *v += 1).unwrap();
    let v = heap.get(&h).unwrap();
    heap.set(&mut h, v + 1).unwrap();
    assert_eq!(heap.get(&h).unwrap(), 3);
    assert!(!m.borrow().pinned());
    let g = heap.get_mut(&mut h).unwrap();
    m.borrow_mut().objects[0].as_mut().unwrap().writer = false;
    assert_eq!(g.release(), Err(HeapError::NotPinned));
}

#[test]
fn a_refused_pin_is_reported_and_a_failed_alloc_store_frees_the_object() {
    let m = RefCell::new(Model::default());
    let heap = heap(&m);
    let mut h = heap.alloc(1u32).unwrap();
    m.borrow_mut().fail_pins = Some(Status::CacheFull);
    assert_eq!(heap.get_mut(&mut h).unwrap_err(), HeapError::CacheFull);
    assert_eq!(heap.alloc(9u32).unwrap_err(), HeapError::CacheFull);
    assert_eq!(m.borrow().count(OP_FREE), 1);
}

#[test]
fn a_pin_reply_outside_the_window_or_misaligned_is_refused_and_unpinned() {
    let m = RefCell::new(Model::default());
    let heap = heap(&m);
    let h = heap.alloc(1u64).unwrap();
    for bad in [WINDOW as u32 - 4, u32::MAX, 4] {
        m.borrow_mut().bad_offset = Some(bad);
        assert_eq!(heap.get_ref(&h).unwrap_err(), HeapError::BadWindow);
        assert!(!m.borrow().pinned(), "the refused pin is released");
    }
}

#[test]
fn free_and_drop_free_the_object_once() {
    let m = RefCell::new(Model::default());
    let heap = heap(&m);
    let h = heap.alloc(1u8).unwrap();
    heap.free(h).unwrap();
    assert_eq!(m.borrow().count(OP_FREE), 1);
    drop(heap.alloc(1u8).unwrap());
    assert_eq!(m.borrow().count(OP_FREE), 2);
}

#[test]
fn from_id_refuses_a_missing_object_and_another_size() {
    let m = RefCell::new(Model::default());
    let heap = heap(&m);
    let id = heap.alloc(1u32).unwrap().into_id();
    assert_eq!(
        heap.from_id::<u64>(id).unwrap_err(),
        HeapError::SizeMismatch {
            stored: 4,
            expected: 8
        }
    );
    assert_eq!(
        heap.from_id::<u32>(ObjectId::from_raw(77)).unwrap_err(),
        HeapError::NoSuchObject
    );
    assert_eq!(m.borrow().count(OP_SIZE), 2);
}

#[test]
fn a_handle_is_refused_by_another_heap() {
    let (m1, m2) = (
        RefCell::new(Model::default()),
        RefCell::new(Model::default()),
    );
    let (h1, h2) = (heap(&m1), heap(&m2));
    let h = h1.alloc(1u32).unwrap();
    assert_eq!(h2.get(&h).unwrap_err(), HeapError::WrongHeap);
    assert_eq!(h2.free(h).unwrap_err(), HeapError::WrongHeap);
    assert_eq!(
        m1.borrow().count(OP_FREE),
        1,
        "the dropped handle still frees"
    );
}

#[test]
fn stats_asks_once_with_no_object_and_decodes_the_reply() {
    let m = RefCell::new(Model::default());
    let heap = heap(&m);
    let s = ServiceStats {
        dirty_limit: 1024,
        persists: 3,
        persist_bytes: 600,
        persist_writes: 9,
        bytes_written: 1000,
        writes: 20,
        bytes_read: 77,
        reads: 5,
    };
    m.borrow_mut().stats = s;
    assert_eq!(heap.stats().unwrap(), s);
    assert_eq!(m.borrow().log, [(OP_STATS, 0, 0)], "one request, no object");
}

// The pin page: the client's side of the protocol, with the test writing the
// service's table by hand.

use crate::page::{ENTRY_DIRTY, ENTRY_RESIDENT, MARK_PINS, MARK_USED, MARK_WRITE, PAGE_BYTES};
use crate::PinPage;

/// A page in host memory and a heap that uses it.
fn paged<'m>(m: &'m RefCell<Model>, buf: &mut Vec<u32>) -> (Heap<Mock<'m>>, PinPage) {
    buf.resize(PAGE_BYTES / 4, 0);
    let base = core::ptr::NonNull::new(buf.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: PAGE_BYTES of 4-aligned memory that outlives the test, accessed only
    // through the page.
    let page = unsafe { PinPage::new(base) };
    // SAFETY: as `heap`; the page is this client's alone.
    (unsafe { heap(m).with_pins(page) }, page)
}

/// Publishes object `id` of the model as the service would.
fn publish(m: &RefCell<Model>, page: PinPage, id: u16, dirty: bool) {
    let o = m.borrow().objects[usize::from(id)].unwrap();
    let d = if dirty { ENTRY_DIRTY } else { 0 };
    page.set_entry(id.into(), ENTRY_RESIDENT | d | o.off as u32, o.size as u32);
}

#[test]
fn a_published_object_is_pinned_on_the_page_and_released_there() {
    let m = RefCell::new(Model::default());
    let mut buf = Vec::new();
    let (heap, page) = paged(&m, &mut buf);
    let mut h = heap.alloc(7u64).unwrap();
    let id = h.id().raw();
    publish(&m, page, id, true);
    let requests = m.borrow().log.len();
    let r1 = heap.get_ref(&h).unwrap();
    let r2 = heap.get_ref(&h).unwrap();
    assert_eq!((*r1, *r2, (page.mark(id.into()) & MARK_PINS)), (7, 7, 2));
    r1.release().unwrap();
    drop(r2);
    assert_eq!((page.mark(id.into()) & MARK_PINS), 0);
    assert_ne!(
        page.mark(id.into()) & MARK_USED,
        0,
        "used, for the service to tell"
    );
    let mut g = heap.get_mut(&mut h).unwrap();
    assert_eq!((page.mark(id.into()) & MARK_PINS), MARK_WRITE);
    *g = 9;
    drop(g);
    assert_eq!((page.mark(id.into()) & MARK_PINS), 0);
    assert_eq!(m.borrow().log.len(), requests, "no request at all");
    let off = m.borrow().objects[usize::from(id)].unwrap().off;
    assert_eq!(
        m.borrow_mut().bytes()[off],
        9,
        "written in the window itself"
    );
}

#[test]
fn an_entry_that_does_not_fit_backs_off_to_ipc_and_takes_its_mark_back() {
    let m = RefCell::new(Model::default());
    let mut buf = Vec::new();
    let (heap, page) = paged(&m, &mut buf);
    let mut h = heap.alloc(7u64).unwrap();
    let id = h.id().raw();
    let i = usize::from(id);
    let off = m.borrow().objects[i].unwrap().off as u32;
    // Not resident (cleared by the service before it evicts), clean for a write pin,
    // the wrong size, outside the window, misaligned: each one IPC pin, mark undone.
    let entries = [
        (0, 8, false),
        (ENTRY_RESIDENT | off, 8, true),
        (ENTRY_RESIDENT | ENTRY_DIRTY | off, 4, false),
        (ENTRY_RESIDENT | ENTRY_DIRTY | (WINDOW as u32 - 4), 8, false),
        (ENTRY_RESIDENT | ENTRY_DIRTY | (off + 4), 8, false),
    ];
    for (entry, size, write) in entries {
        page.set_entry(i, entry, size);
        let pins = m.borrow().count(OP_PIN);
        if write {
            let g = heap.get_mut(&mut h).unwrap();
            assert_eq!(page.mark(i), 0);
            drop(g);
        } else {
            let g = heap.get_ref(&h).unwrap();
            assert_eq!((*g, page.mark(i)), (7, 0));
            drop(g);
        }
        assert_eq!(
            m.borrow().count(OP_PIN),
            pins + 1,
            "entry {entry:#x} size {size}"
        );
        assert!(!m.borrow().pinned(), "the IPC pin was released by IPC");
    }
}

#[test]
fn the_clients_own_marks_keep_its_fast_pins_apart() {
    let m = RefCell::new(Model::default());
    let mut buf = Vec::new();
    let (heap, page) = paged(&m, &mut buf);
    let h = heap.alloc(7u64).unwrap();
    let id = h.id().raw();
    publish(&m, page, id, true);
    let mut h2: Handle<u64, _> = heap.from_id(h.id()).unwrap();
    let r = heap.get_ref(&h).unwrap();
    // A second handle's write pin does not take the page while a read mark is set: it
    // asks the service, which arbitrates (here the model, which knows of no pin).
    let pins = m.borrow().count(OP_PIN);
    drop(heap.get_mut(&mut h2).unwrap());
    assert_eq!(m.borrow().count(OP_PIN), pins + 1);
    assert_eq!(
        (page.mark(id.into()) & MARK_PINS),
        1,
        "the read mark untouched"
    );
    drop(r);
    let w = heap.get_mut(&mut h2).unwrap();
    assert_eq!((page.mark(id.into()) & MARK_PINS), MARK_WRITE);
    drop(heap.get_ref(&h).unwrap());
    assert_eq!(
        m.borrow().count(OP_PIN),
        pins + 2,
        "a read under a write mark asks too"
    );
    drop(w);
    assert_eq!((page.mark(id.into()) & MARK_PINS), 0);
    let _ = h2.into_id();
}
