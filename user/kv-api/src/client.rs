//! The client library: put, get, delete, scan and info on the key-value service, with
//! typed errors.
//!
//! Bytes go through the buffer the client shares with the service, which a power cut
//! empties (it is never checkpointed): every value a reply carries is first copied into
//! the caller's own memory and checked there against the reply's checksum, and a
//! mismatch (or the service's [`Status::BufferLost`] for a put) makes the call again,
//! up to [`TRIES`] times. This file must never hand the caller bytes that are still in
//! the shared buffer, never retry a call that is not idempotent with the same outcome
//! (put, get, delete and scan all are), and never panic on a reply.

use crate::{checksum, scan_entry_bytes, Status, BUFFER_BYTES, OP_DELETE, OP_GET, OP_INFO};
use crate::{OP_PUT, OP_SCAN, SCAN_END};
use amber_user::{call_ep, Error};
use core::fmt;

/// Calls made for one operation before a lost buffer is reported (one power cut costs
/// one).
pub const TRIES: u32 = 3;

/// How a client reaches the service: the shared buffer and one Call. A trait so that
/// the library runs on the host against the service logic in tests; on the device the
/// only implementation is [`Endpoint`].
pub trait Transport {
    /// The buffer shared with the service ([`BUFFER_BYTES`]).
    fn buffer(&mut self) -> &mut [u8];
    /// One request; the reply's words.
    fn call(&mut self, words: [u32; 4]) -> Result<[u32; 4], Error>;
}

/// The service's endpoint capability and this client's buffer.
#[derive(Debug)]
pub struct Endpoint {
    ep: u32,
    buf: *mut u8,
}

impl Endpoint {
    /// The service on endpoint slot `ep` (WRITE), with the buffer `buf` (the part of
    /// the service's memory `kv` its badge names, `amber_user::memory!("KV")`); `None`
    /// when `buf` is smaller than [`BUFFER_BYTES`].
    ///
    /// # Safety
    ///
    /// `buf` must be memory this task may read and write, shared with the service
    /// alone, and nothing else in the task may use it.
    pub unsafe fn new(ep: u32, buf: amber_user::Memory) -> Option<Endpoint> {
        (buf.len >= BUFFER_BYTES).then_some(Endpoint {
            ep,
            buf: buf.base as *mut u8,
        })
    }
}

impl Transport for Endpoint {
    fn buffer(&mut self) -> &mut [u8] {
        // SAFETY: `new`'s contract: BUFFER_BYTES mapped for this task, used by nothing
        // else in it; the service touches them only while this task is blocked in a
        // Call, and the borrow ends before the next one (`&mut self`).
        unsafe { core::slice::from_raw_parts_mut(self.buf, BUFFER_BYTES) }
    }

    fn call(&mut self, words: [u32; 4]) -> Result<[u32; 4], Error> {
        call_ep(self.ep, words, None)
    }
}

/// Why a key-value call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvError {
    /// The key is not in the table.
    NoSuchKey,
    /// The table is full and the key is not in it.
    TableFull,
    /// A value of `len` bytes is longer than the table's largest ([`Kv::info`]).
    ValueTooLong { len: usize },
    /// The value has `len` bytes, the caller's buffer room for `room`.
    BufferTooSmall { len: usize, room: usize },
    /// The shared buffer was lost [`TRIES`] times in a row.
    BufferLost,
    /// The service did not understand the request.
    BadRequest,
    /// The service's storage failed (see its console line), or it answered with a
    /// status this library does not know.
    ServiceFailed,
    /// The reply does not fit the protocol (a length past the buffer, a broken scan).
    BadReply,
    /// The IPC itself failed (for example `PeerGone`: the service ended).
    Ipc(Error),
}

impl fmt::Display for KvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            KvError::NoSuchKey => f.write_str("no such key"),
            KvError::TableFull => f.write_str("the key-value table is full"),
            KvError::ValueTooLong { len } => {
                write!(
                    f,
                    "a value of {len} bytes is longer than the table's largest"
                )
            }
            KvError::BufferTooSmall { len, room } => {
                write!(f, "the value has {len} bytes, the buffer room for {room}")
            }
            KvError::BufferLost => f.write_str("the buffer shared with the service was lost"),
            KvError::BadRequest => f.write_str("the key-value service did not understand"),
            KvError::ServiceFailed => f.write_str("the key-value service failed"),
            KvError::BadReply => f.write_str("the key-value service's reply is malformed"),
            KvError::Ipc(e) => write!(f, "IPC to the key-value service failed: {e}"),
        }
    }
}

/// The status word as a result (`len`: the value of a put, for its error).
fn status(word: u32, len: usize) -> Result<(), KvError> {
    Err(match Status::from_u32(word) {
        Some(Status::Ok) => return Ok(()),
        Some(Status::BufferLost) => KvError::BufferLost,
        Some(Status::NoSuchKey) => KvError::NoSuchKey,
        Some(Status::TableFull) => KvError::TableFull,
        Some(Status::BadRequest) => KvError::BadRequest,
        Some(Status::ValueTooLong) => KvError::ValueTooLong { len },
        Some(Status::Failed) | None => KvError::ServiceFailed,
    })
}

/// The table's size, from [`Kv::info`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    pub live: u32,
    pub capacity: u32,
    pub max_value: u32,
}

/// One scan reply, copied into the caller's memory and checked: its entries and the
/// cursor to ask for next ([`SCAN_END`] after the last).
pub struct ScanBatch<'b> {
    pub next: u32,
    bytes: &'b [u8],
}

impl<'b> ScanBatch<'b> {
    /// Whether the table has no entries past this batch.
    pub fn is_last(&self) -> bool {
        self.next == SCAN_END
    }

    /// The entries: `(key, value)`.
    pub fn entries(&self) -> impl Iterator<Item = (u32, &'b [u8])> + 'b {
        let mut rest = self.bytes;
        core::iter::from_fn(move || {
            let (key, len) = entry_head(rest)?;
            let value = &rest[8..8 + len];
            rest = &rest[scan_entry_bytes(len)..];
            Some((key, value))
        })
    }
}

/// The key and length of the entry at the start of `b`, if a whole entry is there.
fn entry_head(b: &[u8]) -> Option<(u32, usize)> {
    let key = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?);
    let len = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?) as usize;
    (scan_entry_bytes(len) <= b.len()).then_some((key, len))
}

/// A client of the key-value service.
pub struct Kv<T: Transport = Endpoint> {
    t: T,
}

impl<T: Transport> Kv<T> {
    /// A client over `t`.
    pub fn new(t: T) -> Self {
        Kv { t }
    }

    fn call(&mut self, words: [u32; 4]) -> Result<[u32; 4], KvError> {
        self.t.call(words).map_err(KvError::Ipc)
    }

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: u32, value: &[u8]) -> Result<(), KvError> {
        if value.len() > BUFFER_BYTES {
            return Err(KvError::ValueTooLong { len: value.len() });
        }
        let check = checksum(key, value);
        for _ in 0..TRIES {
            self.t.buffer()[..value.len()].copy_from_slice(value);
            let r = self.call([OP_PUT, key, value.len() as u32, check])?;
            match status(r[0], value.len()) {
                Err(KvError::BufferLost) => continue,
                done => return done,
            }
        }
        Err(KvError::BufferLost)
    }

    /// The value of `key` into the start of `out`; its length.
    pub fn get(&mut self, key: u32, out: &mut [u8]) -> Result<usize, KvError> {
        for _ in 0..TRIES {
            let r = self.call([OP_GET, key, 0, 0])?;
            status(r[0], 0)?;
            let len = r[1] as usize;
            if len > BUFFER_BYTES {
                return Err(KvError::BadReply);
            }
            if len > out.len() {
                return Err(KvError::BufferTooSmall {
                    len,
                    room: out.len(),
                });
            }
            out[..len].copy_from_slice(&self.t.buffer()[..len]);
            if checksum(key, &out[..len]) == r[2] {
                return Ok(len);
            }
        }
        Err(KvError::BufferLost)
    }

    /// Deletes `key`.
    pub fn delete(&mut self, key: u32) -> Result<(), KvError> {
        let r = self.call([OP_DELETE, key, 0, 0])?;
        status(r[0], 0)
    }

    /// The live entries from `cursor` on (0 starts a scan), copied into `into`.
    pub fn scan<'b>(
        &mut self,
        cursor: u32,
        into: &'b mut [u8; BUFFER_BYTES],
    ) -> Result<ScanBatch<'b>, KvError> {
        for _ in 0..TRIES {
            let r = self.call([OP_SCAN, cursor, 0, 0])?;
            status(r[0], 0)?;
            let n = r[2] as usize;
            if n > BUFFER_BYTES {
                return Err(KvError::BadReply);
            }
            into[..n].copy_from_slice(&self.t.buffer()[..n]);
            if checksum(cursor, &into[..n]) != r[3] {
                continue;
            }
            // Every entry whole, so that `entries` yields them all.
            let mut at = 0;
            while at < n {
                let (_, len) = entry_head(&into[at..n]).ok_or(KvError::BadReply)?;
                at += scan_entry_bytes(len);
            }
            return Ok(ScanBatch {
                next: r[1],
                bytes: &into[..n],
            });
        }
        Err(KvError::BufferLost)
    }

    /// The table's live keys, capacity and largest value.
    pub fn info(&mut self) -> Result<Info, KvError> {
        let r = self.call([OP_INFO, 0, 0, 0])?;
        status(r[0], 0)?;
        Ok(Info {
            live: r[1],
            capacity: r[2],
            max_value: r[3],
        })
    }
}
