//! The client library (`amber-kv-api`) against the service logic on a host table: each
//! typed error where the protocol says, scans across many replies, and buffers lost to
//! a power cut (emptied between the client's fill and the service's read, or between
//! the reply and the client's copy) caught by the checksums and made good by a retry.

use amber_kv::{Config, Layout, Table};
use amber_kv_api::{Kv, KvError, Transport, BUFFER_BYTES, SCAN_END};
use amber_kv_service::Service;
use amber_nvm::sim::VecNvm;
use amber_user::Error;
use std::collections::BTreeMap;

/// When the transport empties the shared buffer, as a power cut would.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lose {
    Never,
    /// Before the service reads the next request's bytes.
    Request,
    /// After the service wrote the next reply's bytes.
    Reply,
    /// Before every request.
    Always,
}

struct Local {
    svc: Service<VecNvm>,
    buf: Vec<u8>,
    lose: Lose,
    calls: usize,
}

impl Transport for &mut Local {
    fn buffer(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    fn call(&mut self, words: [u32; 4]) -> Result<[u32; 4], Error> {
        self.calls += 1;
        if matches!(self.lose, Lose::Request | Lose::Always) {
            self.buf.fill(0);
        }
        let r = self.svc.handle(words, &mut self.buf);
        if self.lose == Lose::Reply {
            self.buf.fill(0);
        }
        if self.lose != Lose::Always {
            self.lose = Lose::Never;
        }
        Ok(r)
    }
}

fn local(layout: Layout, buckets: u32, max_value: u16) -> Local {
    let config = Config {
        layout,
        buckets,
        max_value,
    };
    let table = Table::format(VecNvm::new(256 * 1024), 512, config).unwrap();
    Local {
        svc: Service::new(table, BUFFER_BYTES).unwrap(),
        buf: vec![0; BUFFER_BYTES],
        lose: Lose::Never,
        calls: 0,
    }
}

fn value(key: u32, len: usize) -> Vec<u8> {
    (0..len).map(|i| (key as usize * 7 + i) as u8 | 1).collect()
}

#[test]
fn each_failure_is_the_typed_error_the_protocol_names() {
    let mut l = local(Layout::Bucketed { entries: 4 }, 2, 100);
    let mut kv = Kv::new(&mut l);
    let mut out = [0u8; 100];
    assert_eq!(kv.get(1, &mut out), Err(KvError::NoSuchKey));
    assert_eq!(kv.delete(1), Err(KvError::NoSuchKey));
    assert_eq!(
        kv.put(1, &[1; 101]),
        Err(KvError::ValueTooLong { len: 101 })
    );
    assert_eq!(
        kv.put(1, &[1; BUFFER_BYTES + 1]),
        Err(KvError::ValueTooLong {
            len: BUFFER_BYTES + 1
        }),
        "refused before the buffer"
    );
    for k in 0..8 {
        kv.put(k, &value(k, 10)).unwrap();
    }
    assert_eq!(kv.put(99, b"x"), Err(KvError::TableFull));
    kv.put(3, &value(3, 100)).unwrap();
    assert_eq!(
        kv.get(3, &mut [0; 10]),
        Err(KvError::BufferTooSmall { len: 100, room: 10 })
    );
    let info = kv.info().unwrap();
    assert_eq!((info.live, info.capacity, info.max_value), (8, 8, 100));
}

#[test]
fn puts_gets_and_deletes_round_trip_through_the_buffer() {
    let mut l = local(Layout::Linear, 64, 200);
    let mut kv = Kv::new(&mut l);
    let mut out = [0u8; 200];
    for k in 0..40 {
        kv.put(k, &value(k, k as usize * 5)).unwrap();
    }
    for k in (0..40).step_by(2) {
        kv.delete(k).unwrap();
    }
    for k in 0..40 {
        match kv.get(k, &mut out) {
            Ok(n) => {
                assert_eq!(k % 2, 1);
                assert_eq!(&out[..n], &value(k, k as usize * 5)[..]);
            }
            Err(e) => assert_eq!((k % 2, e), (0, KvError::NoSuchKey)),
        }
    }
}

#[test]
fn a_scan_in_many_replies_returns_every_entry_once() {
    for (layout, buckets) in [(Layout::Linear, 256), (Layout::Bucketed { entries: 8 }, 32)] {
        let mut l = local(layout, buckets, 250);
        let mut kv = Kv::new(&mut l);
        let mut want = BTreeMap::new();
        for k in 0..150u32 {
            let v = value(k, (k as usize * 13) % 251);
            kv.put(k * 3, &v).unwrap();
            want.insert(k * 3, v);
        }
        let mut got = BTreeMap::new();
        let (mut cursor, mut replies) = (0, 0);
        let mut into = [0u8; BUFFER_BYTES];
        while cursor != SCAN_END {
            let batch = kv.scan(cursor, &mut into).unwrap();
            let mut n = 0;
            for (k, v) in batch.entries() {
                assert!(got.insert(k, v.to_vec()).is_none(), "key {k} twice");
                n += 1;
            }
            assert!(
                n > 0 || batch.is_last(),
                "every reply but the last carries an entry"
            );
            cursor = batch.next;
            replies += 1;
        }
        assert_eq!(got, want);
        assert!(replies > 10, "1 KiB replies: {replies}");
    }
}

#[test]
fn a_buffer_lost_to_a_power_cut_is_caught_and_the_call_made_again() {
    let mut l = local(Layout::Linear, 32, 64);
    let v = value(5, 40);
    l.lose = Lose::Request;
    Kv::new(&mut l).put(5, &v).unwrap();
    assert_eq!(
        l.calls, 2,
        "the emptied put was refused, the second went through"
    );
    let mut out = [0u8; 64];
    l.lose = Lose::Reply;
    assert_eq!(Kv::new(&mut l).get(5, &mut out), Ok(40));
    assert_eq!(&out[..40], &v[..], "the emptied reply was read again");
    assert_eq!(l.calls, 4);
    l.lose = Lose::Reply;
    let mut into = [0u8; BUFFER_BYTES];
    let mut kv = Kv::new(&mut l);
    let batch = kv.scan(0, &mut into).unwrap();
    assert_eq!(batch.entries().collect::<Vec<_>>(), vec![(5, &v[..])]);
    // A buffer lost on every call is reported, and nothing was written.
    l.lose = Lose::Always;
    assert_eq!(Kv::new(&mut l).put(6, &v), Err(KvError::BufferLost));
    l.lose = Lose::Never;
    assert_eq!(Kv::new(&mut l).get(6, &mut out), Err(KvError::NoSuchKey));
}

#[test]
fn malformed_requests_are_refused_not_obeyed() {
    let mut l = local(Layout::Linear, 8, 64);
    // A put longer than the buffer, an unknown op.
    assert_eq!(l.svc.handle([1, 1, 5000, 0], &mut l.buf)[0], 1);
    assert_eq!(l.svc.handle([99, 0, 0, 0], &mut l.buf)[0], 1);
    assert_eq!(l.svc.table().len(), 0);
    // A service whose largest value does not fit a buffer is refused.
    let config = Config {
        layout: Layout::Linear,
        buckets: 4,
        max_value: 1020,
    };
    let table = Table::format(VecNvm::new(64 * 1024), 0, config).unwrap();
    assert!(Service::new(table, BUFFER_BYTES).is_err());
}
