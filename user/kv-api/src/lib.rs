//! The key-value service's IPC protocol, shared by the service task (`kvsvc`) and its
//! clients, and the typed client library ([`Kv`]).
//!
//! This crate holds numbers, their encoding and client calls only: it must never hold
//! service logic (that is `amber-kv-service`) and never trust a reply beyond what it
//! checks.
//!
//! # Protocol
//!
//! Every client has a buffer of [`BUFFER_BYTES`] shared with the service alone, in
//! the service's never-checkpointed memory `kv` (a "heap" memory of the app): the
//! client with badge `b` has the bytes at [`buffer_offset`]`(b)` of it, which the app
//! grants as a part of `kv`. A request is a Call on the
//! service's endpoint with four words `[op, a, b, c]` and no message bytes; values
//! travel in the buffer. The reply is four words `[status, x, y, z]` ([`Status`]: 0 =
//! success).
//!
//! | op | request | reply `x, y, z` | buffer |
//! |----|---------|-----------------|--------|
//! | [`OP_PUT`] = 1 | `[1, key, len, check]` | – | in: the value's `len` bytes |
//! | [`OP_GET`] = 2 | `[2, key, 0, 0]` | `len, check, 0` | out: the value |
//! | [`OP_DELETE`] = 3 | `[3, key, 0, 0]` | – | – |
//! | [`OP_SCAN`] = 4 | `[4, cursor, 0, 0]` | `next cursor, bytes, check` | out: entries |
//! | [`OP_INFO`] = 5 | `[5, 0, 0, 0]` | `live keys, capacity, largest value` | – |
//!
//! `check` is [`checksum`] of the buffer's bytes (and the key or cursor). The buffer is
//! RAM the kernel never checkpoints: a power cut between a client filling it and its
//! Call (or between the reply and the client reading it) comes back with the buffer
//! empty but the client's own state restored. The checksum catches that: the service
//! answers [`Status::BufferLost`] to a put whose bytes do not match (nothing written),
//! and the client checks every reply's bytes; [`Kv`] then fills the buffer or asks
//! again by itself.
//!
//! A scan returns the live entries from entry index `cursor` on (cursor 0 starts),
//! as many whole entries as the buffer holds (at least one), each `[key: u32 LE, len:
//! u32 LE, value, zero padding to 4 bytes]`, and the cursor to ask for next, or
//! [`SCAN_END`] after the last entry. Entries come in table order; an entry put or
//! deleted between two calls of one scan may be seen or not.
//!
//! # Consistency across power cuts
//!
//! The table lives on the SPI FRAM and the service writes it only through the SPI
//! driver, whose writes reach the chip only with the checkpoint that covers them. The
//! service is checkpointed only between requests (or inside one, where it waits for a
//! checkpoint itself), so after a power cut the table is exactly as the restored
//! clients last saw it: every put acknowledged before the restored checkpoint is there,
//! nothing done after it is.

#![cfg_attr(not(test), no_std)]

mod client;

pub use client::{Endpoint, Info, Kv, KvError, ScanBatch, Transport, TRIES};

/// Set a key's value: `[OP_PUT, key, len, check]`, the value in the buffer.
pub const OP_PUT: u32 = 1;
/// A key's value: `[OP_GET, key, 0, 0]`; reply `[status, len, check, 0]`.
pub const OP_GET: u32 = 2;
/// Delete a key: `[OP_DELETE, key, 0, 0]`.
pub const OP_DELETE: u32 = 3;
/// Live entries from a cursor on: `[OP_SCAN, cursor, 0, 0]`; reply `[status, next,
/// bytes, check]`.
pub const OP_SCAN: u32 = 4;
/// The table's size: reply `[status, live keys, capacity, largest value]`.
pub const OP_INFO: u32 = 5;
/// The cursor a scan replies after its last entry.
pub const SCAN_END: u32 = u32::MAX;

/// Bytes of each client's buffer (and so the most a value or a scan reply carries).
pub const BUFFER_BYTES: usize = 1024;
/// Clients the service serves: badges 1 to `MAX_CLIENTS`.
pub const MAX_CLIENTS: u32 = 2;
/// Where in the service's memory `kv` the buffer of the client with `badge` (1 to
/// [`MAX_CLIENTS`]) is, or `None` for a badge the service does not serve.
pub const fn buffer_offset(badge: u32) -> Option<usize> {
    if badge == 0 || badge > MAX_CLIENTS {
        return None;
    }
    Some((badge as usize - 1) * BUFFER_BYTES)
}

/// Bytes one scan entry takes in the buffer: key and length words, the value padded to
/// 4 bytes.
pub const fn scan_entry_bytes(len: usize) -> usize {
    8 + len.div_ceil(4) * 4
}

/// The checksum of a request's or reply's buffer bytes, bound to `tag` (the key, or
/// the cursor of a scan): FNV-1a over the tag's and the bytes' bytes, so an emptied
/// buffer, a value of another length or another key's value do not match.
pub fn checksum(tag: u32, bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811C_9DC5;
    for &b in tag.to_le_bytes().iter().chain(bytes) {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h ^ bytes.len() as u32
}

/// The reply's status word (word 0): 0 is success, anything else names why the
/// service refused.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Done.
    Ok = 0,
    /// An unknown operation, a length above the buffer, or a badge without a buffer.
    BadRequest = 1,
    /// The key is not in the table (get, delete).
    NoSuchKey = 2,
    /// Every entry of the table holds a key, and the key to put is not one of them.
    TableFull = 3,
    /// The value is longer than the table's largest (see [`OP_INFO`]).
    ValueTooLong = 4,
    /// The put's bytes in the buffer do not match its checksum (the buffer was lost to
    /// a power cut): nothing was written; fill the buffer and put again.
    BufferLost = 5,
    /// The service's storage failed; its console line says why.
    Failed = 6,
}

impl Status {
    /// Every status, in code order.
    pub const ALL: [Status; 7] = [
        Status::Ok,
        Status::BadRequest,
        Status::NoSuchKey,
        Status::TableFull,
        Status::ValueTooLong,
        Status::BufferLost,
        Status::Failed,
    ];

    /// The status with code `n`, or `None` for a code this library does not know.
    pub fn from_u32(n: u32) -> Option<Status> {
        Self::ALL.get(usize::try_from(n).ok()?).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_round_trips_through_its_code() {
        for (i, s) in Status::ALL.iter().enumerate() {
            assert_eq!(*s as u32, i as u32);
            assert_eq!(Status::from_u32(i as u32), Some(*s));
        }
        assert_eq!(Status::from_u32(7), None);
    }

    #[test]
    fn every_client_has_its_own_aligned_buffer() {
        assert_eq!(buffer_offset(0), None);
        assert_eq!(buffer_offset(MAX_CLIENTS + 1), None);
        let a = buffer_offset(1).unwrap();
        let b = buffer_offset(2).unwrap();
        assert_eq!(b - a, BUFFER_BYTES, "no two overlap");
        assert_eq!(b % 256, 0, "a PMP region of its own");
    }

    #[test]
    fn the_checksum_tells_an_emptied_buffer_and_another_key_apart() {
        let v = [1u8, 2, 3, 4];
        assert_ne!(checksum(5, &v), checksum(5, &[0; 4]));
        assert_ne!(checksum(5, &v), checksum(6, &v));
        assert_ne!(checksum(5, &[]), checksum(5, &[0]));
        assert_eq!(checksum(5, &v), checksum(5, &v));
    }
}
