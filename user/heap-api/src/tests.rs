//! Host tests of the client library against a small model of the service (objects as
//! byte vectors, owned by a badge). They check the encoding the service sees, the
//! 256-byte pieces, and the guards' write-back rules; the real service is tested
//! against this library in `amber-heap-service`. Tests only: nothing here may be used
//! by the library itself.

use crate::{
    Channel, Handle, Heap, HeapError, ObjectId, Persist, Status, CHUNK, OP_ALLOC, OP_FREE, OP_READ,
    OP_SIZE, OP_WRITE,
};
use amber_user::Error;
use std::cell::RefCell;
use std::vec::Vec;

/// The service model: objects by id, plus a log of the requests it saw.
#[derive(Default)]
struct Model {
    objects: Vec<Option<Vec<u8>>>,
    /// (op, len of the bytes sent, len of the reply buffer) of every request.
    log: Vec<(u32, usize, usize)>,
    /// Fail every write request with this status.
    fail_writes: Option<Status>,
}

impl Model {
    fn serve(&mut self, w: [u32; 4], send: &[u8], recv: &mut [u8]) -> ([u32; 4], usize) {
        self.log.push((w[0], send.len(), recv.len()));
        let reply = |s: Status, v: u32| [s as u32, v, 0, 0];
        let id = w[1] as usize;
        match w[0] {
            OP_ALLOC => {
                let id = self
                    .objects
                    .iter()
                    .position(Option::is_none)
                    .unwrap_or_else(|| {
                        self.objects.push(None);
                        self.objects.len() - 1
                    });
                self.objects[id] = Some(vec![0; w[1] as usize]);
                (reply(Status::Ok, id as u32), 0)
            }
            op => {
                let Some(Some(obj)) = self.objects.get_mut(id) else {
                    return (reply(Status::NoSuchObject, 0), 0);
                };
                let (off, len) = (w[2] as usize, w[3] as usize);
                match op {
                    OP_FREE => {
                        self.objects[id] = None;
                        (reply(Status::Ok, 0), 0)
                    }
                    OP_SIZE => (reply(Status::Ok, obj.len() as u32), 0),
                    OP_READ if len <= CHUNK && off + len <= obj.len() => {
                        recv[..len].copy_from_slice(&obj[off..off + len]);
                        (reply(Status::Ok, 0), len)
                    }
                    OP_WRITE if self.fail_writes.is_some() => {
                        (reply(self.fail_writes.unwrap_or(Status::Ok), 0), 0)
                    }
                    OP_WRITE if len <= CHUNK && len == send.len() && off + len <= obj.len() => {
                        obj[off..off + len].copy_from_slice(send);
                        (reply(Status::Ok, 0), 0)
                    }
                    OP_READ | OP_WRITE => (reply(Status::OutOfRange, 0), 0),
                    _ => (reply(Status::BadRequest, 0), 0),
                }
            }
        }
    }

    fn count(&self, op: u32) -> usize {
        self.log.iter().filter(|l| l.0 == op).count()
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
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<([u32; 4], usize), Error> {
        Ok(self.0.borrow_mut().serve(words, send, recv))
    }
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
    let heap = Heap::with_channel(Mock(&m));
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
}

#[test]
fn objects_larger_than_one_message_move_in_pieces_of_at_most_256_bytes() {
    let m = RefCell::new(Model::default());
    let heap = Heap::with_channel(Mock(&m));
    let mut h = heap.alloc(big(1)).unwrap();
    assert_eq!(heap.get(&h).unwrap(), big(1));
    heap.set(&mut h, big(2)).unwrap();
    assert_eq!(heap.get(&h).unwrap(), big(2));
    let log = &m.borrow().log;
    assert!(
        log.iter().all(|&(_, s, r)| s <= CHUNK && r <= CHUNK),
        "no request may carry more than the kernel's bounded copy"
    );
    // 600 bytes: 3 pieces per read or write.
    assert_eq!(m.borrow().count(OP_WRITE), 6);
    assert_eq!(m.borrow().count(OP_READ), 6);
}

#[test]
fn alloc_sends_no_piece_that_is_all_zeros() {
    let m = RefCell::new(Model::default());
    let heap = Heap::with_channel(Mock(&m));
    let mut v = Big { words: [0; 150] };
    v.words[149] = 7;
    let h = heap.alloc(v).unwrap();
    assert_eq!(
        m.borrow().count(OP_WRITE),
        1,
        "only the last piece is not zero"
    );
    assert_eq!(heap.get(&h).unwrap(), v);
}

#[test]
fn a_ref_mut_writes_back_on_release_and_on_drop_but_not_when_unchanged() {
    let m = RefCell::new(Model::default());
    let heap = Heap::with_channel(Mock(&m));
    let mut h = heap.alloc(1u64).unwrap();
    let writes = || m.borrow().count(OP_WRITE);
    let before = writes();
    {
        let g = heap.get_mut(&mut h).unwrap();
        assert_eq!(*g, 1);
    }
    assert_eq!(writes(), before, "a guard only read must not write");
    {
        let mut g = heap.get_mut(&mut h).unwrap();
        *g = 2;
    }
    assert_eq!(heap.get(&h).unwrap(), 2, "drop writes back");
    let mut g = heap.get_mut(&mut h).unwrap();
    *g = 3;
    g.release().unwrap();
    assert_eq!(heap.get(&h).unwrap(), 3, "release writes back");
    assert_eq!(
        writes(),
        before + 2,
        "release must not write a second time on drop"
    );
    assert_eq!(heap.update(&mut h, |v| *v * 10).unwrap(), 30);
    assert_eq!(
        heap.get(&h).unwrap(),
        3,
        "update's closure result is not stored"
    );
    heap.update(&mut h, |v| *v += 1).unwrap();
    assert_eq!(heap.get(&h).unwrap(), 4);
}

#[test]
fn a_failed_write_back_is_reported_by_release_and_update() {
    let m = RefCell::new(Model::default());
    let heap = Heap::with_channel(Mock(&m));
    let mut h = heap.alloc(1u32).unwrap();
    m.borrow_mut().fail_writes = Some(Status::Failed);
    let mut g = heap.get_mut(&mut h).unwrap();
    *g = 5;
    assert_eq!(g.release(), Err(HeapError::ServiceFailed));
    assert_eq!(
        heap.update(&mut h, |v| *v = 6),
        Err(HeapError::ServiceFailed)
    );
}

#[test]
fn a_failed_alloc_write_frees_the_new_object() {
    let m = RefCell::new(Model::default());
    let heap = Heap::with_channel(Mock(&m));
    m.borrow_mut().fail_writes = Some(Status::CacheFull);
    assert_eq!(heap.alloc(9u32).unwrap_err(), HeapError::CacheFull);
    assert_eq!(m.borrow().count(OP_FREE), 1);
    assert!(m.borrow().objects.iter().all(Option::is_none));
}

#[test]
fn free_and_drop_free_the_object_once() {
    let m = RefCell::new(Model::default());
    let heap = Heap::with_channel(Mock(&m));
    let h = heap.alloc(1u8).unwrap();
    heap.free(h).unwrap();
    assert_eq!(m.borrow().count(OP_FREE), 1);
    drop(heap.alloc(1u8).unwrap());
    assert_eq!(m.borrow().count(OP_FREE), 2);
}

#[test]
fn from_id_refuses_a_missing_object_and_another_size() {
    let m = RefCell::new(Model::default());
    let heap = Heap::with_channel(Mock(&m));
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
}

#[test]
fn a_handle_is_refused_by_another_heap() {
    let (m1, m2) = (
        RefCell::new(Model::default()),
        RefCell::new(Model::default()),
    );
    let (h1, h2) = (Heap::with_channel(Mock(&m1)), Heap::with_channel(Mock(&m2)));
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
fn a_short_read_reply_is_an_error_not_a_partial_value() {
    #[derive(Clone, Copy, PartialEq)]
    struct Short;
    impl Channel for Short {
        fn call(&self, w: [u32; 4], _: &[u8], _: &mut [u8]) -> Result<([u32; 4], usize), Error> {
            let got = if w[0] == OP_READ { 2 } else { 0 };
            Ok(([0, if w[0] == OP_ALLOC { 3 } else { 0 }, 0, 0], got))
        }
    }
    let heap = Heap::with_channel(Short);
    let h = heap.alloc(1u32).unwrap();
    assert_eq!(
        heap.get(&h).unwrap_err(),
        HeapError::BadReply { asked: 4, got: 2 }
    );
    let _ = h.into_id();
}
