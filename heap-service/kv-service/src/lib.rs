//! The key-value service's portable part: the requests of the `amber-kv-api` protocol
//! carried out on an `amber-kv` table, so that everything the `kvsvc` task does
//! besides its syscalls runs and is tested on the host.
//!
//! The table's storage is any `Nvm`; in the task it is the SPI FRAM through the SPI
//! driver, so every write waits in the driver's ring until the checkpoint that covers
//! it commits. The service keeps nothing of the table in RAM but the table's own two
//! counts (live keys and tombstones), in the task's checkpointed memory: what the FRAM
//! holds as a checkpoint commits and what the service's memory says at that
//! checkpoint are the same table, with no persist step in between (see `kvsvc`).
//!
//! Dependencies point down: this crate -> `amber-kv` -> `amber-nvm`, plus
//! `amber-kv-api` for the protocol's numbers. It must never make a syscall (the task
//! does), never panic on a request, and never read a request's bytes from anywhere but
//! the client's buffer it is handed.

#![cfg_attr(not(test), no_std)]

use amber_kv::{KvError, Table};
use amber_kv_api::{checksum, scan_entry_bytes, Status, SCAN_END};
use amber_kv_api::{OP_DELETE, OP_GET, OP_INFO, OP_PUT, OP_SCAN};
use amber_nvm::Nvm;

/// One key-value service: its table, and the last storage failure for the console.
pub struct Service<N> {
    table: Table<N>,
    failure: Option<KvError>,
}

impl<N: Nvm> Service<N> {
    /// The service of `table`, for clients whose buffers have `buffer` bytes: refused
    /// (`BadConfig`) when the largest value and its scan entry would not fit one.
    pub fn new(table: Table<N>, buffer: usize) -> Result<Self, KvError> {
        if scan_entry_bytes(usize::from(table.config().max_value)) > buffer {
            return Err(KvError::BadConfig {
                reason: "the largest value does not fit a client's buffer",
            });
        }
        Ok(Service {
            table,
            failure: None,
        })
    }

    /// The table (for counts and the console).
    pub fn table(&self) -> &Table<N> {
        &self.table
    }

    /// The storage error behind the last `Failed` reply, once.
    pub fn take_failure(&mut self) -> Option<KvError> {
        self.failure.take()
    }

    /// Carries out one request: `words` as received, `buf` the buffer of the client
    /// that sent it (which is blocked in its Call while this runs). Returns the
    /// reply's words; a reply's bytes are in `buf`.
    pub fn handle(&mut self, words: [u32; 4], buf: &mut [u8]) -> [u32; 4] {
        let [op, a, b, c] = words;
        let r = match op {
            OP_PUT => self.put(a, b, c, buf),
            OP_GET => self.get(a, buf),
            OP_DELETE => match self.table.delete(a) {
                Ok(true) => Ok([0; 3]),
                Ok(false) => Err(Status::NoSuchKey),
                Err(e) => Err(self.refused(e)),
            },
            OP_SCAN => self.scan(a, buf),
            OP_INFO => {
                let t = &self.table;
                Ok([t.len(), t.capacity(), t.config().max_value.into()])
            }
            _ => Err(Status::BadRequest),
        };
        match r {
            Ok([x, y, z]) => [Status::Ok as u32, x, y, z],
            Err(s) => [s as u32, 0, 0, 0],
        }
    }

    /// The status for a table error; storage failures are kept for the console.
    fn refused(&mut self, e: KvError) -> Status {
        match e {
            KvError::TableFull => Status::TableFull,
            KvError::ValueTooLong { .. } => Status::ValueTooLong,
            e => {
                self.failure = Some(e);
                Status::Failed
            }
        }
    }

    fn put(&mut self, key: u32, len: u32, check: u32, buf: &[u8]) -> Result<[u32; 3], Status> {
        let value = buf.get(..len as usize).ok_or(Status::BadRequest)?;
        if checksum(key, value) != check {
            return Err(Status::BufferLost);
        }
        self.table.put(key, value).map_err(|e| self.refused(e))?;
        Ok([0; 3])
    }

    fn get(&mut self, key: u32, buf: &mut [u8]) -> Result<[u32; 3], Status> {
        match self.table.get(key, buf) {
            Ok(Some(n)) => Ok([n as u32, checksum(key, &buf[..n]), 0]),
            Ok(None) => Err(Status::NoSuchKey),
            Err(e) => Err(self.refused(e)),
        }
    }

    /// Packs whole entries from entry index `cursor` on into `buf` (see the protocol
    /// in `amber-kv-api`): `[next cursor, bytes, checksum]`.
    fn scan(&mut self, cursor: u32, buf: &mut [u8]) -> Result<[u32; 3], Status> {
        let room_needed = scan_entry_bytes(usize::from(self.table.config().max_value)) - 8;
        let mut at = 0;
        let mut from = cursor;
        let next = loop {
            // Room for the largest value, so that the entry is read straight into its
            // place; an entry is taken only when it fits whole.
            let Some(room) = buf.get_mut(at + 8..).filter(|r| r.len() >= room_needed) else {
                break from;
            };
            match self.table.next_entry(from, room) {
                Ok(Some(e)) => {
                    buf[at..at + 4].copy_from_slice(&e.key.to_le_bytes());
                    buf[at + 4..at + 8].copy_from_slice(&(e.len as u32).to_le_bytes());
                    let padded = scan_entry_bytes(e.len);
                    buf[at + 8 + e.len..at + padded].fill(0);
                    at += padded;
                    from = e.slot + 1;
                }
                Ok(None) => break SCAN_END,
                Err(e) => return Err(self.refused(e)),
            }
        };
        Ok([next, at as u32, checksum(cursor, &buf[..at])])
    }
}
