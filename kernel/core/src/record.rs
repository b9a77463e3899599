//! The byte codec of checkpoint records: a little-endian writer the encoders fill, a
//! reader the decoders drain, the record header, and the named errors of a restore.
//! A record is untrusted input when it comes back: every read here is bounds-checked
//! and returns a [`RestoreError`], never panics. This file knows no object type;
//! each type's layout lives next to that type (`obj/thread.rs`, `obj/capgroup.rs`, ...).
//!
//! # Record header (every record)
//!
//! | offset | size | meaning |
//! |--------|------|---------|
//! | 0 | 1 | [`RecordVersion`] of the type's layout |
//! | 1 | 1 | [`ObjKind`] number of the object |
//! | 2 | – | the type's body, fixed length per type and version |
//!
//! Conventions of every body: integers little-endian; an optional object id is a u16
//! with [`NO_OBJ`] for none; an unused field (an absent slot, the badge of a state that
//! has none) is all zero, and the decoder rejects anything else; enum tags are one
//! byte and the decoder rejects unknown tags.

use core::fmt;

use crate::{
    abi::{ObjKind, Rights},
    ids::ObjId,
    spec::MemKind,
};

/// The layout version of one object type's record (byte 0 of the record). Bump a
/// type's version whenever its layout changes; the decoder accepts only the current one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordVersion(pub u8);

/// The largest record of any object: the checkpoint manager's item size limit.
pub const RECORD_MAX: usize = 512;

/// An optional object id that is absent.
pub(crate) const NO_OBJ: u16 = u16::MAX;

/// The first broken invariant found: which one, in words, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvariantViolation {
    /// The invariant, as a sentence.
    pub what: &'static str,
    /// The arena index involved.
    pub at: usize,
}

impl fmt::Display for InvariantViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invariant broken at object {}: {}", self.at, self.what)
    }
}

/// Why a set of records could not be restored. `item` is the record's item id (the
/// arena index of the object it describes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreError {
    /// The item id is not an arena index.
    ItemOutOfRange { item: u16 },
    /// Two records for the same item.
    DuplicateItem { item: u16 },
    /// The record ends before its layout does.
    Truncated { item: u16 },
    /// The record is longer than its layout.
    TrailingBytes { item: u16 },
    /// The record's layout version is not the one this kernel reads.
    BadVersion {
        item: u16,
        /// The version found.
        version: u8,
    },
    /// The kind byte is no object kind.
    BadKind {
        item: u16,
        /// The byte found.
        kind: u8,
    },
    /// An object id past the arena.
    BadObjId {
        item: u16,
        /// The value found.
        value: u16,
    },
    /// An enum tag with no meaning.
    BadTag {
        item: u16,
        /// Which field.
        field: &'static str,
        /// The tag found.
        value: u8,
    },
    /// A field whose value is out of its range (a priority, rights bits, a name, a
    /// slot, unused bytes that are not zero).
    BadValue {
        item: u16,
        /// Which field.
        field: &'static str,
    },
    /// No record for entry 0, or it is not a CapGroup.
    NoRoot,
    /// Every record decoded, but together they break an invariant of the tree.
    Inconsistent(InvariantViolation),
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RestoreError::ItemOutOfRange { item } => {
                write!(f, "record {item}: item id is not an arena index")
            }
            RestoreError::DuplicateItem { item } => write!(f, "record {item}: given twice"),
            RestoreError::Truncated { item } => write!(f, "record {item}: truncated"),
            RestoreError::TrailingBytes { item } => {
                write!(f, "record {item}: longer than its layout")
            }
            RestoreError::BadVersion { item, version } => {
                write!(f, "record {item}: unknown layout version {version}")
            }
            RestoreError::BadKind { item, kind } => {
                write!(f, "record {item}: unknown object kind {kind}")
            }
            RestoreError::BadObjId { item, value } => {
                write!(f, "record {item}: object id {value} past the arena")
            }
            RestoreError::BadTag { item, field, value } => {
                write!(f, "record {item}: {field} has unknown tag {value}")
            }
            RestoreError::BadValue { item, field } => {
                write!(f, "record {item}: {field} out of range")
            }
            RestoreError::NoRoot => f.write_str("no root CapGroup record (item 0)"),
            RestoreError::Inconsistent(v) => write!(f, "records are inconsistent: {v}"),
        }
    }
}

/// Fills a record buffer front to back. Running past the buffer is a kernel bug (the
/// caller passes at least [`RECORD_MAX`] bytes and every layout is smaller), so it
/// panics.
pub(crate) struct Writer<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl<'a> Writer<'a> {
    /// A writer at the start of `out`.
    pub(crate) fn new(out: &'a mut [u8]) -> Writer<'a> {
        Writer { out, at: 0 }
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> usize {
        self.at
    }

    /// Appends raw bytes.
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        let end = self.at + b.len();
        assert!(
            end <= self.out.len(),
            "kernel bug: record buffer of {} bytes too short",
            self.out.len()
        );
        self.out[self.at..end].copy_from_slice(b);
        self.at = end;
    }

    /// The record header.
    pub(crate) fn header(&mut self, version: RecordVersion, kind: ObjKind) {
        self.u8(version.0);
        self.u8(kind as u32 as u8);
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }

    pub(crate) fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    pub(crate) fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }

    /// `n` zero bytes (an unused field).
    pub(crate) fn zeros(&mut self, n: usize) {
        for _ in 0..n {
            self.u8(0);
        }
    }

    pub(crate) fn obj(&mut self, id: ObjId) {
        // In range by construction: ids are < MAX_OBJECTS <= u16::MAX.
        self.u16(id.index() as u16);
    }

    pub(crate) fn opt_obj(&mut self, id: Option<ObjId>) {
        match id {
            Some(id) => self.obj(id),
            None => self.u16(NO_OBJ),
        }
    }

    /// Rights fit in one byte (five bits).
    pub(crate) fn rights(&mut self, r: Rights) {
        self.u8(r.bits() as u8);
    }

    pub(crate) fn mem_kind(&mut self, k: MemKind) {
        self.u8(match k {
            MemKind::Checkpointed => 0,
            MemKind::Eternal => 1,
            MemKind::HeapManaged => 2,
            MemKind::Device => 3,
        });
    }
}

const _: () = assert!(
    Rights::all().bits() <= u8::MAX as u32,
    "rights are stored in one byte"
);

/// Drains an untrusted record front to back; every read checks bounds and values.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    /// The item being decoded, for error reports.
    pub(crate) item: u16,
}

impl<'a> Reader<'a> {
    /// A reader over record `data` of item `item`.
    pub(crate) fn new(item: u16, data: &'a [u8]) -> Reader<'a> {
        Reader { data, at: 0, item }
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], RestoreError> {
        let end = self
            .at
            .checked_add(n)
            .ok_or(RestoreError::Truncated { item: self.item })?;
        let b = self
            .data
            .get(self.at..end)
            .ok_or(RestoreError::Truncated { item: self.item })?;
        self.at = end;
        Ok(b)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RestoreError> {
        let mut a = [0; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    /// The header: the version must be `version` and the kind byte `kind`.
    pub(crate) fn header(
        &mut self,
        version: RecordVersion,
        kind: ObjKind,
    ) -> Result<(), RestoreError> {
        let v = self.u8()?;
        if v != version.0 {
            return Err(RestoreError::BadVersion {
                item: self.item,
                version: v,
            });
        }
        let k = self.u8()?;
        if k != kind as u32 as u8 {
            return Err(RestoreError::BadKind {
                item: self.item,
                kind: k,
            });
        }
        Ok(())
    }

    /// Checks that the whole record was read.
    pub(crate) fn finish(self) -> Result<(), RestoreError> {
        if self.at == self.data.len() {
            Ok(())
        } else {
            Err(RestoreError::TrailingBytes { item: self.item })
        }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, RestoreError> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, RestoreError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, RestoreError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, RestoreError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A 0/1 byte.
    pub(crate) fn bool(&mut self, field: &'static str) -> Result<bool, RestoreError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(self.bad_tag(field, value)),
        }
    }

    /// `n` bytes that must be zero (an unused field).
    pub(crate) fn zeros(&mut self, n: usize, field: &'static str) -> Result<(), RestoreError> {
        if self.bytes(n)?.iter().all(|&b| b == 0) {
            Ok(())
        } else {
            Err(self.bad_value(field))
        }
    }

    /// An object id in the arena.
    pub(crate) fn obj(&mut self) -> Result<ObjId, RestoreError> {
        let value = self.u16()?;
        ObjId::from_index(usize::from(value)).ok_or(RestoreError::BadObjId {
            item: self.item,
            value,
        })
    }

    /// An object id in the arena, or [`NO_OBJ`].
    pub(crate) fn opt_obj(&mut self) -> Result<Option<ObjId>, RestoreError> {
        let value = self.u16()?;
        if value == NO_OBJ {
            return Ok(None);
        }
        ObjId::from_index(usize::from(value))
            .map(Some)
            .ok_or(RestoreError::BadObjId {
                item: self.item,
                value,
            })
    }

    /// Known rights bits only.
    pub(crate) fn rights(&mut self, field: &'static str) -> Result<Rights, RestoreError> {
        let b = self.u8()?;
        Rights::from_bits(u32::from(b)).ok_or(self.bad_value(field))
    }

    pub(crate) fn mem_kind(&mut self) -> Result<MemKind, RestoreError> {
        Ok(match self.u8()? {
            0 => MemKind::Checkpointed,
            1 => MemKind::Eternal,
            2 => MemKind::HeapManaged,
            3 => MemKind::Device,
            value => return Err(self.bad_tag("memory kind", value)),
        })
    }

    /// A `BadTag` error for this item.
    pub(crate) fn bad_tag(&self, field: &'static str, value: u8) -> RestoreError {
        RestoreError::BadTag {
            item: self.item,
            field,
            value,
        }
    }

    /// A `BadValue` error for this item.
    pub(crate) fn bad_value(&self, field: &'static str) -> RestoreError {
        RestoreError::BadValue {
            item: self.item,
            field,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Reader, RestoreError, Writer};

    #[test]
    fn what_the_writer_writes_the_reader_reads_back_and_nothing_more() {
        let mut buf = [0u8; 16];
        let mut w = Writer::new(&mut buf);
        w.u8(7);
        w.u16(0x1234);
        w.u32(0xdead_beef);
        w.u64(u64::MAX - 1);
        let n = w.len();
        assert_eq!(n, 15);
        let mut r = Reader::new(3, &buf[..n]);
        assert_eq!(r.u8(), Ok(7));
        assert_eq!(r.u16(), Ok(0x1234));
        assert_eq!(r.u32(), Ok(0xdead_beef));
        assert_eq!(r.u64(), Ok(u64::MAX - 1));
        assert_eq!(r.finish(), Ok(()));
    }

    #[test]
    fn reading_past_the_end_is_a_truncated_record_not_a_panic() {
        let mut r = Reader::new(5, &[1, 2, 3]);
        assert_eq!(r.u32(), Err(RestoreError::Truncated { item: 5 }));
        let r = Reader::new(5, &[1]);
        assert_eq!(r.finish(), Err(RestoreError::TrailingBytes { item: 5 }));
    }

    #[test]
    #[should_panic(expected = "kernel bug")]
    fn writing_past_the_buffer_is_a_kernel_bug() {
        let mut buf = [0u8; 3];
        Writer::new(&mut buf).u32(1);
    }
}
