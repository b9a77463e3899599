//! `amber-kv`: a fixed-capacity hash table that lives on byte-addressable NVM (FRAM,
//! MRAM), after the linear-probing table (LPHT) and the cache-line hash table (CLHT) of
//! the MRAM edge-database paper (`shared/papers/mram-edge-databases.txt`).
//!
//! Keys are `u32`; values are byte strings of 0 to a configured maximum. The table is
//! an array of 8-byte entry records (state, length, key) grouped into buckets and
//! probed linearly, bucket after bucket, with tombstones for deleted entries:
//!
//! - [`Layout::Linear`] (LPHT): one entry per bucket, its value right after it, so a
//!   put is one write of record and value and a probe one 8-byte read;
//! - [`Layout::Bucketed`] (CLHT-like): buckets of 2 to 8 entries whose records are one
//!   NVM transfer (16 to 64 bytes; a probe reads a whole bucket at once), values in a
//!   separate array.
//!
//! There is no erase, no log and no wear levelling: a put writes its value and record
//! where they belong, a delete one state byte. Single operations are not failure-atomic
//! by themselves; on Amber the table is written through the SPI driver, whose writes
//! reach the chip only with the checkpoint that covers them, so after a power cut the
//! table is exactly as it was at that checkpoint.
//!
//! - `config.rs`: the configuration and the geometry (where each record and value is);
//! - `format.rs`: the on-NVM header and entry records (the format tables are there);
//! - `table.rs`: get, put, delete, scan, format and open;
//! - `error.rs`: what can go wrong.
//!
//! Dependencies point down: this crate -> `amber-nvm` (the storage trait) and `crc`. It
//! must never know which device or bus is under the `Nvm`.

#![cfg_attr(not(test), no_std)]

mod config;
mod error;
mod format;
mod table;

pub use config::{Config, Geometry, Layout, MAX_BUCKET_ENTRIES};
pub use error::KvError;
pub use format::{EntryState, HEADER_BYTES, RECORD_BYTES};
pub use table::{Entry, Table, OP_STACK_BYTES};
