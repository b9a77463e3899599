//! Delayed external visibility: the request ring of the SPI driver task.
//!
//! A client's write to the device (the FRAM) must not reach it before the checkpoint
//! that produced the write has committed: if power fails first, the client's state is
//! rolled back to the previous checkpoint and the device must agree with it. So writes
//! are not sent to the device; they are appended to a ring kept in an *eternal* NVM
//! region (never rolled back), and only entries below the *visible-writer index* are
//! applied to the device. The kernel commits that index atomically with each
//! checkpoint's global version; this crate only receives it as a number
//! ([`RingIndex`]). This is TreeSLS's "delayed external visibility", see DESIGN.md.
//!
//! The protocol, in the order things happen:
//!
//! 1. [`Ring::append`] stores an entry (device address, length, data, CRC-32) and
//!    advances the writer index. It never drops data: a full ring is
//!    [`RingError::Full`], the caller's cue to request a checkpoint and apply.
//! 2. The kernel takes a checkpoint whose metadata records visible = writer index.
//! 3. After the commit, [`Ring::apply`] writes the entries below `visible` to their home
//!    addresses on the device, flushes it, and then persists the applied index
//!    (torn-safe, in a [`DualRecord`](amber_format::DualRecord)), which frees their space.
//! 4. After a power cut, [`Ring::open`] with the committed visible index drops the
//!    entries beyond it (the writer index restarts at `visible`) and replays the
//!    entries between the persisted applied index and `visible`. Device writes are
//!    idempotent, so replaying an entry that had already reached the device is harmless.
//!
//! [`Ring::read`] overlays the pending entries, in order, on the device's contents, so
//! a client reads its own writes before they are visible to the device.
//! [`IndexedRing`] does the same from an index of the pending entries in RAM, without
//! walking the ring's records: what the SPI driver uses.
//!
//! Invariants, each kept by one place in `ring.rs`:
//! - applied <= visible <= writer <= applied + capacity (indices are byte positions in
//!   an unbounded log; the NVM position of index `i` is `i mod capacity`);
//! - the device only ever receives entries below a visible index the caller passed in;
//! - no append overwrites a byte of `[applied, writer)`, where `applied` is the
//!   *persisted* applied index: space is freed only after the device flush and the
//!   applied record are durable;
//! - an entry that fails its checksum is never applied: `apply` validates the whole
//!   range before its first device store.
//!
//! On-NVM layout of the ring region, format version 1 ([`FORMAT_VERSION`]); offsets are
//! from the start of the region, integers little-endian, CRCs are CRC-32/ISO-HDLC (the
//! zlib CRC, as everywhere in Amber):
//!
//! | offset | size         | what                                                      |
//! |--------|--------------|-----------------------------------------------------------|
//! | 0      | 64           | ring header ([`layout::RingHeader`]), written by `format` |
//! | 64     | 2 x 20       | applied index: `DualRecord<8>`, payload = u64 LE index    |
//! | 104    | 24           | reserved, zero                                            |
//! | 128    | capacity     | data area: records ([`layout::EntryHeader`]) back to back |
//!
//! `capacity` is the region length minus 128, rounded down to a multiple of 4. Records
//! start at 4-byte aligned positions and never wrap around the end of the data area:
//! an entry that does not fit in the rest of the lap is preceded by a pad record that
//! fills the rest of the lap, and when fewer than 24 bytes (one record header) remain,
//! the rest of the lap is an implicit pad with no record at all. Either way the entry
//! starts at position 0 of the next lap.
//!
//! This crate is portable (`no_std`, no `alloc`, no `unsafe`) and reaches both the ring
//! and the device only through `amber_nvm::Nvm`; the SPI driver task wires it to the
//! eternal MemObj and to the FRAM driver.

#![cfg_attr(not(test), no_std)]

mod error;
mod indexed;
pub mod layout;
mod ring;

pub use amber_format::Region;
pub use error::{EntryFault, RingError};
pub use indexed::{IndexedRing, PendingEntry};
pub use layout::{ALIGN, ENTRY_HEADER_LEN, FORMAT_VERSION, MIN_REGION_LEN};
pub use ring::{ApplyStats, RestoreReport, Ring, RingIndex};
