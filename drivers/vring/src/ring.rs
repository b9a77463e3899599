//! `Ring`: append, apply up to the visible index, restore after a power cut, and read
//! with the pending writes overlaid.
//!
//! A `Ring` value is volatile bookkeeping (capacity, applied and writer indices) over
//! a region of eternal NVM; it owns neither the ring's NVM nor the device, which every
//! call borrows, so the driver task can keep both behind its own bus handling. What is
//! durable is only what `layout.rs` describes: the records and the applied index. The
//! writer index is deliberately *not* durable: after a restore it is always the
//! committed visible index, because every entry beyond it belongs to rolled-back state.

use crate::error::{EntryFault, RingError};
use crate::layout::{
    entry_span, EntryHeader, RecordKind, RingHeader, APPLIED_RECORD_OFFSET, CRC32, DATA_OFFSET,
    ENTRY_HEADER_LEN, MIN_REGION_LEN, RING_HEADER_LEN, RING_MAGIC,
};
use amber_format::{DualRecord, Newest, Region};
use amber_nvm::{check_range, Nvm};
use core::fmt;

/// Bytes copied per ring read or device store while checking or applying an entry.
const CHUNK: usize = 64;

/// A position in the ring's unbounded log, in bytes from the first record ever
/// appended. It only grows; its NVM position is `index mod capacity`. The writer,
/// visible and applied indices are all `RingIndex`es, and the visible one is what the
/// kernel commits with each checkpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RingIndex(pub u64);

impl fmt::Display for RingIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ring index {}", self.0)
    }
}

/// What one [`Ring::apply`] sent to the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyStats {
    /// Entries written to their home addresses.
    pub entries: u32,
    /// Data bytes written to the device.
    pub bytes: u64,
}

/// What [`Ring::open`] did to bring the ring back to the committed state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RestoreReport {
    /// Intact entries found beyond the committed visible index and dropped (entries torn
    /// by the cut, and entries a previous restore already dropped, are not counted).
    pub dropped: u32,
    /// Committed entries not known to be applied, written again to the device.
    pub replayed: u32,
    /// Data bytes of the replayed entries.
    pub replayed_bytes: u64,
}

/// One record of the data area, as read from NVM.
#[derive(Clone, Copy, Debug)]
struct Record {
    /// Log index where the record starts.
    index: u64,
    /// `None` for a pad (explicit or implicit).
    entry: Option<EntryData>,
    /// Log index of the next record.
    next: u64,
}

/// Where an entry's data lies and where it goes.
#[derive(Clone, Copy, Debug)]
struct EntryData {
    addr: u32,
    len: u32,
    /// NVM offset of the data in the ring's NVM.
    at: u32,
}

/// The request ring's volatile state; see the crate documentation for the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    region: Region,
    capacity: u32,
    /// Persisted applied index: every entry below it has reached the device.
    applied: RingIndex,
    /// The newest copy of the applied record, so the next update goes to the other slot.
    applied_copy: Newest<8>,
    /// One past the last appended record.
    writer: RingIndex,
    /// Size of the device, for refusing writes it could never take.
    device_size: u32,
}

/// The torn-safe applied index of the ring in `region`.
pub(crate) fn applied_record(region: Region) -> DualRecord<8> {
    DualRecord {
        base: region.offset + APPLIED_RECORD_OFFSET,
    }
}

fn check_region(nvm_size: u32, region: Region) -> Result<(), RingError> {
    match region.end() {
        Some(end) if end <= nvm_size => {}
        _ => {
            return Err(RingError::RegionOutsideNvm {
                offset: region.offset,
                len: region.len,
                size: nvm_size,
            })
        }
    }
    if region.len < MIN_REGION_LEN {
        return Err(RingError::RegionTooSmall {
            len: region.len,
            min: MIN_REGION_LEN,
        });
    }
    Ok(())
}

impl Ring {
    /// Formats an empty ring in `region` of `ring` (applied = writer = 0), discarding
    /// whatever was there. The header's magic is written last, so a format cut at any
    /// store leaves the old ring untouched (a cut before the first byte) or a region that
    /// `open` reports as [`RingError::NotFormatted`], never a half-formatted ring.
    pub fn format(ring: &mut impl Nvm, region: Region) -> Result<(), RingError> {
        check_region(ring.size(), region)?;
        ring.write(region.offset, &[0; RING_HEADER_LEN])?;
        ring.fence();
        let record = applied_record(region);
        ring.write(record.base, &[0; 2 * DualRecord::<8>::SLOT_LEN])?;
        ring.write(region.offset + DATA_OFFSET, &[0; ENTRY_HEADER_LEN as usize])?;
        ring.fence();
        record.write(ring, None, &0u64.to_le_bytes())?;
        // The magic goes last, so a header torn anywhere reads as "not formatted".
        let header = RingHeader::for_region(region.len).encode();
        let magic = RING_MAGIC.len();
        ring.write(region.offset + magic as u32, &header[magic..])?;
        ring.fence();
        ring.write(region.offset, &header[..magic])?;
        ring.flush()?;
        Ok(())
    }

    /// Opens the ring after a boot, given the visible index of the last committed
    /// checkpoint (0 for a ring formatted before any checkpoint): replays the committed
    /// entries not yet applied to `device`, drops every entry beyond the index, and
    /// returns a ring whose writer index is `committed_visible`.
    ///
    /// Safe to cut at any store and to call again: replays are idempotent and the
    /// applied index is torn-safe.
    pub fn open(
        ring: &mut impl Nvm,
        device: &mut impl Nvm,
        region: Region,
        committed_visible: RingIndex,
    ) -> Result<(Ring, RestoreReport), RingError> {
        check_region(ring.size(), region)?;
        let mut bytes = [0u8; RING_HEADER_LEN];
        ring.read(region.offset, &mut bytes)?;
        let header = RingHeader::decode(&bytes)?;
        if header.region_len != region.len {
            return Err(RingError::RegionMismatch {
                formatted_len: header.region_len,
                len: region.len,
            });
        }
        let newest = applied_record(region)
            .read(ring)?
            .ok_or(RingError::AppliedRecordLost)?;
        let applied = u64::from_le_bytes(newest.payload);
        let visible = committed_visible.0;
        if visible < applied {
            return Err(RingError::VisibleBehindApplied { visible, applied });
        }
        // Nothing beyond one ring's worth after the applied index can ever have been
        // appended, so nothing there can have been committed.
        let limit = applied.saturating_add(header.capacity as u64);
        if visible > limit {
            return Err(RingError::VisibleBeyondWriter {
                visible,
                writer: limit,
            });
        }
        let mut me = Ring {
            region,
            capacity: header.capacity,
            applied: RingIndex(applied),
            applied_copy: newest,
            writer: committed_visible,
            device_size: device.size(),
        };
        let replayed = me.apply(ring, device, committed_visible)?;
        let dropped = me.drop_uncommitted(ring, limit)?;
        Ok((
            me,
            RestoreReport {
                dropped,
                replayed: replayed.entries,
                replayed_bytes: replayed.bytes,
            },
        ))
    }

    /// Appends a write of `data` to device address `addr` and returns the new writer
    /// index: the visible index a checkpoint must commit for this write to reach the
    /// device. The entry is durable in the ring when this returns.
    ///
    /// A full ring is [`RingError::Full`] and writes nothing: request a checkpoint,
    /// [`apply`](Self::apply) its visible index, and retry.
    pub fn append(
        &mut self,
        ring: &mut impl Nvm,
        addr: u32,
        data: &[u8],
    ) -> Result<RingIndex, RingError> {
        let max = self.max_entry_len();
        if data.len() > max as usize {
            return Err(RingError::EntryTooLarge {
                len: data.len(),
                max,
            });
        }
        check_range(addr, data.len(), self.device_size).map_err(|_| RingError::OutsideDevice {
            addr,
            len: data.len(),
            size: self.device_size,
        })?;
        let len = data.len() as u32;
        let span = entry_span(len);
        let room = self.lap_room(self.writer.0);
        // Entries never wrap: if this one does not fit in the rest of the lap, the rest
        // of the lap becomes a pad and the entry starts the next lap.
        let pad = if span > room { room } else { 0 };
        let needed = pad + span;
        let free = self.free_bytes();
        if needed > free {
            return Err(RingError::Full { needed, free });
        }
        let mut at = self.writer.0;
        if pad >= ENTRY_HEADER_LEN {
            let header = EntryHeader::new(at, RecordKind::Pad, &[]);
            ring.write(self.nvm_offset(at), &header.encode())?;
        }
        at += pad as u64;
        let header = EntryHeader::new(at, RecordKind::Entry { addr, len }, data);
        let offset = self.nvm_offset(at);
        ring.write(offset, &header.encode())?;
        if !data.is_empty() {
            ring.write(offset + ENTRY_HEADER_LEN, data)?;
        }
        ring.flush()?;
        self.writer = RingIndex(at + span as u64);
        Ok(self.writer)
    }

    /// Applies every entry below `visible` (a committed visible index) to its home
    /// address on `device`, flushes the device, and then persists `visible` as the
    /// applied index, freeing the entries' space. The whole range is checked (record
    /// checksums, device bounds) before the first device store, so a corrupt entry is
    /// [`RingError::CorruptEntry`] and nothing of the range is applied.
    pub fn apply(
        &mut self,
        ring: &mut impl Nvm,
        device: &mut impl Nvm,
        visible: RingIndex,
    ) -> Result<ApplyStats, RingError> {
        let applied = self.applied.0;
        if visible.0 < applied {
            return Err(RingError::VisibleBehindApplied {
                visible: visible.0,
                applied,
            });
        }
        if visible > self.writer {
            return Err(RingError::VisibleBeyondWriter {
                visible: visible.0,
                writer: self.writer.0,
            });
        }
        if visible.0 == applied {
            return Ok(ApplyStats::default());
        }
        let device_size = self.device_size;
        self.walk(ring, applied, visible.0, true, |_, record| {
            if let Some(e) = record.entry {
                check_range(e.addr, e.len as usize, device_size).map_err(|_| {
                    RingError::OutsideDevice {
                        addr: e.addr,
                        len: e.len as usize,
                        size: device_size,
                    }
                })?;
            }
            Ok(())
        })?;
        let mut stats = ApplyStats::default();
        self.walk(ring, applied, visible.0, false, |ring, record| {
            if let Some(e) = record.entry {
                copy_to_device(ring, device, e)?;
                stats.entries += 1;
                stats.bytes += e.len as u64;
            }
            Ok(())
        })?;
        // The device must hold every entry before the applied index says so, or a cut
        // could free entries that never arrived.
        device.flush()?;
        let payload = visible.0.to_le_bytes();
        self.applied_copy =
            applied_record(self.region).write(ring, Some(&self.applied_copy), &payload)?;
        self.applied = visible;
        Ok(stats)
    }

    /// Reads `buf.len()` device bytes at `addr` as the writers see them: the device's
    /// contents with every pending entry (applied index to writer index, visible or
    /// not) laid over them in append order. Each overlapping entry's checksum is checked
    /// before its bytes are used.
    pub fn read(
        &self,
        ring: &mut impl Nvm,
        device: &mut impl Nvm,
        addr: u32,
        buf: &mut [u8],
    ) -> Result<(), RingError> {
        self.read_device(device, addr, buf)?;
        self.walk(
            ring,
            self.applied.0,
            self.writer.0,
            false,
            |ring, record| {
                let Some(e) = record.entry else {
                    return Ok(());
                };
                let Some(o) = Overlap::of(addr, buf.len(), e.addr, e.len) else {
                    return Ok(());
                };
                self.record_at(ring, record.index, true)?;
                ring.read(e.at + o.from, &mut buf[o.lo..o.hi])?;
                Ok(())
            },
        )
    }

    /// Reads `buf.len()` bytes at `addr` from the device itself, refusing a range the
    /// device does not hold: the start of every read, before pending entries are laid
    /// over it.
    pub(crate) fn read_device(
        &self,
        device: &mut impl Nvm,
        addr: u32,
        buf: &mut [u8],
    ) -> Result<(), RingError> {
        check_range(addr, buf.len(), self.device_size).map_err(|_| RingError::OutsideDevice {
            addr,
            len: buf.len(),
            size: self.device_size,
        })?;
        device.read(addr, buf)?;
        Ok(())
    }

    /// One past the last appended record: the visible index that would cover every
    /// write so far.
    pub fn writer_index(&self) -> RingIndex {
        self.writer
    }

    /// The persisted applied index: every entry below it has reached the device.
    pub fn applied_index(&self) -> RingIndex {
        self.applied
    }

    /// Size of the data area in bytes.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Bytes not held by pending entries.
    pub fn free_bytes(&self) -> u32 {
        self.capacity - (self.writer.0 - self.applied.0) as u32
    }

    /// The longest write one entry can carry (an empty ring, at the start of a lap).
    pub fn max_entry_len(&self) -> u32 {
        self.capacity - ENTRY_HEADER_LEN
    }

    /// The ring's region of its NVM.
    pub fn region(&self) -> Region {
        self.region
    }

    /// Bytes from log `index` to the end of its lap.
    fn lap_room(&self, index: u64) -> u32 {
        self.capacity - (index % self.capacity as u64) as u32
    }

    /// Where log `index` lies in the ring's NVM.
    pub(crate) fn nvm_offset(&self, index: u64) -> u32 {
        self.region.offset + DATA_OFFSET + (index % self.capacity as u64) as u32
    }

    /// Reads the record that starts at log `index`, checking its kind, index and length,
    /// and with `verify` its checksum over header and data.
    fn record_at(
        &self,
        ring: &mut impl Nvm,
        index: u64,
        verify: bool,
    ) -> Result<Record, RingError> {
        let room = self.lap_room(index);
        if room < ENTRY_HEADER_LEN {
            return Ok(Record {
                index,
                entry: None,
                next: index + room as u64,
            });
        }
        let corrupt = |fault| RingError::CorruptEntry { index, fault };
        let offset = self.nvm_offset(index);
        let mut bytes = [0u8; ENTRY_HEADER_LEN as usize];
        ring.read(offset, &mut bytes)?;
        let header = EntryHeader::decode(&bytes).map_err(corrupt)?;
        if header.index != index {
            return Err(corrupt(EntryFault::WrongIndex {
                found: header.index,
            }));
        }
        let (entry, span) = match header.kind {
            RecordKind::Entry { addr, len } => {
                if len > room - ENTRY_HEADER_LEN {
                    return Err(corrupt(EntryFault::BadLength { len }));
                }
                let at = offset + ENTRY_HEADER_LEN;
                (Some(EntryData { addr, len, at }), entry_span(len))
            }
            RecordKind::Pad => (None, room),
        };
        if verify {
            let mut digest = CRC32.digest();
            digest.update(&bytes[..20]);
            if let Some(e) = entry {
                let mut chunk = [0u8; CHUNK];
                let mut done = 0;
                while done < e.len {
                    let n = (e.len - done).min(CHUNK as u32);
                    ring.read(e.at + done, &mut chunk[..n as usize])?;
                    digest.update(&chunk[..n as usize]);
                    done += n;
                }
            }
            let computed = digest.finalize();
            if computed != header.crc {
                return Err(corrupt(EntryFault::BadChecksum {
                    stored: header.crc,
                    computed,
                }));
            }
        }
        Ok(Record {
            index,
            entry,
            next: index + span as u64,
        })
    }

    /// Calls `f` on every record in `[from, to)`, which must start and end on record
    /// boundaries.
    fn walk<N: Nvm>(
        &self,
        ring: &mut N,
        from: u64,
        to: u64,
        verify: bool,
        mut f: impl FnMut(&mut N, &Record) -> Result<(), RingError>,
    ) -> Result<(), RingError> {
        let mut at = from;
        while at < to {
            let record = self.record_at(ring, at, verify)?;
            if record.next > to {
                return Err(RingError::VisibleInsideRecord {
                    visible: to,
                    record: at,
                });
            }
            f(ring, &record)?;
            at = record.next;
        }
        Ok(())
    }

    /// Counts the intact records beyond the writer index (up to `limit`, where nothing
    /// can have been appended) and invalidates the first one, so that no later restore
    /// counts them again. Nothing reads beyond the writer index anyway: a record is only
    /// ever reached by walking from the applied index, and every record below the
    /// writer index was written after the last restore or committed before it.
    fn drop_uncommitted(&mut self, ring: &mut impl Nvm, limit: u64) -> Result<u32, RingError> {
        let mut at = self.writer.0;
        let mut first = None;
        let mut dropped = 0;
        while at < limit {
            let record = match self.record_at(ring, at, true) {
                Ok(record) if record.next <= limit => record,
                Ok(_) | Err(RingError::CorruptEntry { .. }) => break,
                Err(e) => return Err(e),
            };
            if self.lap_room(at) >= ENTRY_HEADER_LEN && first.is_none() {
                first = Some(at);
            }
            if record.entry.is_some() {
                dropped += 1;
            }
            at = record.next;
        }
        if let Some(first) = first {
            ring.write(self.nvm_offset(first), &[0; 4])?;
            ring.flush()?;
        }
        Ok(dropped)
    }
}

/// Where a pending write of `len` bytes at device address `at` overlaps a read of
/// `buf_len` bytes at `addr`: the read buffer's `lo..hi`, taken from the entry's data
/// at offset `from`.
pub(crate) struct Overlap {
    pub(crate) lo: usize,
    pub(crate) hi: usize,
    pub(crate) from: u32,
}

impl Overlap {
    pub(crate) fn of(addr: u32, buf_len: usize, at: u32, len: u32) -> Option<Overlap> {
        let start = u64::from(addr);
        let lo = start.max(u64::from(at));
        let hi = (start + buf_len as u64).min(u64::from(at) + u64::from(len));
        (lo < hi).then(|| Overlap {
            lo: (lo - start) as usize,
            hi: (hi - start) as usize,
            from: (lo - u64::from(at)) as u32,
        })
    }
}

/// Copies one entry's data from the ring to its home address, a chunk per store.
fn copy_to_device(
    ring: &mut impl Nvm,
    device: &mut impl Nvm,
    e: EntryData,
) -> Result<(), RingError> {
    let mut chunk = [0u8; CHUNK];
    let mut done = 0;
    while done < e.len {
        let n = (e.len - done).min(CHUNK as u32);
        let part = &mut chunk[..n as usize];
        ring.read(e.at + done, part)?;
        device.write(e.addr + done, part)?;
        done += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
