//! `IndexedRing`: the ring with an index of its pending entries in RAM, so that a read
//! finds the entries it must lay over the device without reading a single record
//! header from NVM.
//!
//! [`Ring::read`] walks every record from the applied to the writer index, reading and
//! decoding each header from the ring's NVM and checking the checksum of each entry it
//! overlays: its cost grows with the pending bytes, about 360 instructions per record
//! on the QEMU board. The index keeps, per pending entry, where it ends, where it goes
//! and how long it is (12 bytes, in append order), so a read scans RAM and reads from
//! the ring only the bytes it overlays.
//!
//! The index is volatile and needs no persistence: it is emptied whenever the ring is
//! opened (after which nothing is pending: `Ring::open` replays and drops everything)
//! and then changes only with the ring, through the methods here. Every entry in it was
//! appended since that open, by this value, and flushed; a read therefore trusts the
//! entry's bytes as it trusts the device's, without its checksum (`apply` still checks
//! every checksum before a device store, so a corrupt entry never reaches the device).
//!
//! The index has room for one entry per smallest record the ring can hold
//! ([`IndexedRing::slots_for`]), so it never fills before the ring does. This file must
//! never change the ring other than through `Ring`'s own methods.

use crate::error::RingError;
use crate::layout::{entry_span, ENTRY_HEADER_LEN};
use crate::ring::{ApplyStats, Overlap, RestoreReport, Ring, RingIndex};
use amber_format::Region;
use amber_nvm::Nvm;

/// One pending entry as the index keeps it. `repr(C)` of three `u32`s, so that a driver
/// may lay a slice of them over memory it owns (any bit pattern is a valid value, and
/// the index is emptied before it is read).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PendingEntry {
    /// The low 32 bits of the log index one past the record (pending indices lie
    /// within one ring's worth of the applied index, so the low bits name it).
    end: u32,
    /// Device address of the write.
    addr: u32,
    /// Data bytes.
    len: u32,
}

/// The ring and the index of its pending entries (see the file doc).
pub struct IndexedRing<'a> {
    ring: Ring,
    slots: &'a mut [PendingEntry],
    /// Slot of the oldest pending entry.
    head: usize,
    /// Pending entries in the index.
    count: usize,
}

impl<'a> IndexedRing<'a> {
    /// Index slots a ring of `capacity` data bytes needs: one per smallest record (a
    /// header and one data byte, aligned), the most entries it can hold pending.
    pub const fn slots_for(capacity: u32) -> usize {
        (capacity / entry_span(1)) as usize
    }

    /// [`Ring::open`], with `slots` as the index's room (at least
    /// [`slots_for`](Self::slots_for) the ring's capacity, else
    /// [`RingError::IndexTooSmall`] and nothing is opened).
    pub fn open(
        ring: &mut impl Nvm,
        device: &mut impl Nvm,
        region: Region,
        committed_visible: RingIndex,
        slots: &'a mut [PendingEntry],
    ) -> Result<(Self, RestoreReport), RingError> {
        let (opened, report) = Ring::open(ring, device, region, committed_visible)?;
        let needed = Self::slots_for(opened.capacity());
        if slots.len() < needed {
            return Err(RingError::IndexTooSmall {
                slots: slots.len(),
                needed,
            });
        }
        Ok((
            IndexedRing {
                ring: opened,
                slots,
                head: 0,
                count: 0,
            },
            report,
        ))
    }

    /// [`Ring::open`] again on the same region (after a restore): the index is emptied
    /// with it. On an error the ring and its index stay as they were.
    pub fn reopen(
        &mut self,
        ring: &mut impl Nvm,
        device: &mut impl Nvm,
        committed_visible: RingIndex,
    ) -> Result<RestoreReport, RingError> {
        let (opened, report) = Ring::open(ring, device, self.ring.region(), committed_visible)?;
        self.ring = opened;
        self.head = 0;
        self.count = 0;
        Ok(report)
    }

    /// [`Ring::append`], indexing the entry.
    pub fn append(
        &mut self,
        ring: &mut impl Nvm,
        addr: u32,
        data: &[u8],
    ) -> Result<RingIndex, RingError> {
        let writer = self.ring.append(ring, addr, data)?;
        // `slots_for` leaves room for every entry the ring can hold pending.
        let at = (self.head + self.count) % self.slots.len();
        self.slots[at] = PendingEntry {
            end: writer.0 as u32,
            addr,
            len: data.len() as u32,
        };
        self.count += 1;
        Ok(writer)
    }

    /// [`Ring::apply`], dropping the applied entries from the index.
    pub fn apply(
        &mut self,
        ring: &mut impl Nvm,
        device: &mut impl Nvm,
        visible: RingIndex,
    ) -> Result<ApplyStats, RingError> {
        let before = self.ring.applied_index().0;
        let stats = self.ring.apply(ring, device, visible)?;
        let applied = (self.ring.applied_index().0 - before) as u32;
        while self.count > 0 && self.slots[self.head].end.wrapping_sub(before as u32) <= applied {
            self.head = (self.head + 1) % self.slots.len();
            self.count -= 1;
        }
        Ok(stats)
    }

    /// Reads `buf.len()` device bytes at `addr` as the writers see them, as
    /// [`Ring::read`] does: the device's contents with every pending entry laid over
    /// them in append order. Reads the ring only where an entry overlaps the range.
    pub fn read(
        &self,
        ring: &mut impl Nvm,
        device: &mut impl Nvm,
        addr: u32,
        buf: &mut [u8],
    ) -> Result<(), RingError> {
        self.ring.read_device(device, addr, buf)?;
        let applied = self.ring.applied_index().0;
        for i in 0..self.count {
            let e = self.slots[(self.head + i) % self.slots.len()];
            let Some(o) = Overlap::of(addr, buf.len(), e.addr, e.len) else {
                continue;
            };
            let record_end = applied + u64::from(e.end.wrapping_sub(applied as u32));
            let record = record_end - u64::from(entry_span(e.len));
            let data = self.ring.nvm_offset(record) + ENTRY_HEADER_LEN;
            ring.read(data + o.from, &mut buf[o.lo..o.hi])?;
        }
        Ok(())
    }

    /// The ring's bookkeeping (indices, capacity, free bytes).
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Entries pending in the index (appended, not yet applied).
    pub fn pending_entries(&self) -> usize {
        self.count
    }
}

#[cfg(test)]
mod tests;
