//! The reply's status word, and the errors a client sees, each named for what went
//! wrong. Plain values only: this file must never grow a status without a sentence
//! saying when the service returns it, and never panic on an unknown one.

use amber_user::Error;
use core::fmt;

/// The status word of a reply (word 0): 0 is success, anything else names the reason
/// the service refused the request.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Done.
    Ok = 0,
    /// An unknown operation, a read or write of more than [`CHUNK`](crate::CHUNK)
    /// bytes, or a write whose message does not carry `len` bytes.
    BadRequest = 1,
    /// No live object has this id (never allocated, freed, or not the first id of an
    /// object).
    NoSuchObject = 2,
    /// The object was allocated through a capability with another badge.
    NotOwner = 3,
    /// `offset + len` lies past the end of the object.
    OutOfRange = 4,
    /// An allocation of 0 bytes or of more than the service's largest object.
    BadSize = 5,
    /// Every object id of the heap is in use.
    OutOfIds = 6,
    /// The heap's NVM data area has no room for the object (space freed since the last
    /// persist is reusable only after the next one).
    NvmFull = 7,
    /// The service's cache cannot make room for the object's piece.
    CacheFull = 8,
    /// The service failed (its storage, or a broken heap); its console line says why.
    Failed = 9,
    /// `OP_PIN` of an object pinned in a conflicting way (a write pin while any pin
    /// exists, or a read pin while a write pin exists), or `OP_FREE` of a pinned object.
    Pinned = 10,
    /// `OP_UNPIN` of an object that holds no pin of that mode.
    NotPinned = 11,
    /// `OP_PIN` replied an offset and size that do not lie inside the client's window
    /// or are misaligned for the type (the client library's own check; never sent).
    BadWindow = 12,
}

impl Status {
    /// Every status, in code order.
    pub const ALL: [Status; 13] = [
        Status::Ok,
        Status::BadRequest,
        Status::NoSuchObject,
        Status::NotOwner,
        Status::OutOfRange,
        Status::BadSize,
        Status::OutOfIds,
        Status::NvmFull,
        Status::CacheFull,
        Status::Failed,
        Status::Pinned,
        Status::NotPinned,
        Status::BadWindow,
    ];

    /// The status with code `n`, or `None` for a code this library does not know.
    pub fn from_u32(n: u32) -> Option<Status> {
        Self::ALL.get(usize::try_from(n).ok()?).copied()
    }

    /// The client's error for this status (`Ok` for [`Status::Ok`]).
    pub fn check(self) -> Result<(), HeapError> {
        Err(match self {
            Status::Ok => return Ok(()),
            Status::BadRequest => HeapError::BadRequest,
            Status::NoSuchObject => HeapError::NoSuchObject,
            Status::NotOwner => HeapError::NotOwner,
            Status::OutOfRange => HeapError::OutOfRange,
            Status::BadSize => HeapError::BadSize,
            Status::OutOfIds => HeapError::OutOfIds,
            Status::NvmFull => HeapError::NvmFull,
            Status::CacheFull => HeapError::CacheFull,
            Status::Failed => HeapError::ServiceFailed,
            Status::Pinned => HeapError::Pinned,
            Status::NotPinned => HeapError::NotPinned,
            Status::BadWindow => HeapError::BadWindow,
        })
    }
}

/// Why a heap call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapError {
    /// The service did not understand the request ([`Status::BadRequest`]).
    BadRequest,
    /// No live object has this id ([`Status::NoSuchObject`]).
    NoSuchObject,
    /// The object belongs to another client ([`Status::NotOwner`]).
    NotOwner,
    /// A read or write past the end of the object ([`Status::OutOfRange`]).
    OutOfRange,
    /// The type is zero-sized or larger than the service's largest object
    /// ([`Status::BadSize`]).
    BadSize,
    /// Every object id is in use ([`Status::OutOfIds`]).
    OutOfIds,
    /// The heap's NVM is full ([`Status::NvmFull`]).
    NvmFull,
    /// The service's cache cannot make room ([`Status::CacheFull`]).
    CacheFull,
    /// The service failed ([`Status::Failed`]) or answered with a status this library
    /// does not know.
    ServiceFailed,
    /// The object is pinned in a conflicting way ([`Status::Pinned`]).
    Pinned,
    /// The object holds no pin of that mode ([`Status::NotPinned`]).
    NotPinned,
    /// The service's pin reply points outside the window or is misaligned.
    BadWindow,
    /// `Heap::from_id`: the object has `stored` bytes, the type `expected`.
    SizeMismatch { stored: u32, expected: u32 },
    /// The handle belongs to another heap service (another endpoint).
    WrongHeap,
    /// The reply carried another number of bytes than asked for.
    BadReply { asked: u32, got: u32 },
    /// The IPC itself failed (for example `PeerGone`: the service ended).
    Ipc(Error),
}

impl HeapError {
    /// Turns a reply's status word into a result.
    pub fn check_status(word: u32) -> Result<(), HeapError> {
        Status::from_u32(word).map_or(Err(HeapError::ServiceFailed), Status::check)
    }
}

impl fmt::Display for HeapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HeapError::BadRequest => f.write_str("the heap service did not understand the request"),
            HeapError::NoSuchObject => f.write_str("no live heap object has this id"),
            HeapError::NotOwner => f.write_str("the heap object belongs to another client"),
            HeapError::OutOfRange => f.write_str("access past the end of the heap object"),
            HeapError::BadSize => {
                f.write_str("the object size is 0 or above the heap service's largest object")
            }
            HeapError::OutOfIds => f.write_str("every heap object id is in use"),
            HeapError::NvmFull => f.write_str("the heap's NVM has no room for the object"),
            HeapError::CacheFull => f.write_str("the heap service's cache cannot make room"),
            HeapError::ServiceFailed => {
                f.write_str("the heap service failed (see its console line)")
            }
            HeapError::SizeMismatch { stored, expected } => write!(
                f,
                "the heap object has {stored} bytes but the type has {expected}"
            ),
            HeapError::Pinned => f.write_str("the heap object is pinned in a conflicting way"),
            HeapError::NotPinned => f.write_str("the heap object holds no such pin"),
            HeapError::BadWindow => {
                f.write_str("the heap service pinned the object outside the client's window")
            }
            HeapError::WrongHeap => f.write_str("the handle belongs to another heap service"),
            HeapError::BadReply { asked, got } => {
                write!(
                    f,
                    "the heap service sent {got} bytes where {asked} were asked for"
                )
            }
            HeapError::Ipc(e) => write!(f, "IPC to the heap service failed: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{HeapError, Status};

    #[test]
    fn every_status_round_trips_through_its_code_and_only_ok_is_success() {
        for (i, s) in Status::ALL.iter().enumerate() {
            assert_eq!(*s as u32, i as u32, "ALL must be in code order");
            assert_eq!(Status::from_u32(*s as u32), Some(*s));
            assert_eq!(HeapError::check_status(*s as u32).is_ok(), *s == Status::Ok);
        }
    }

    #[test]
    fn an_unknown_status_is_a_failure_not_a_success_or_a_panic() {
        assert_eq!(Status::from_u32(13), None);
        assert_eq!(
            HeapError::check_status(u32::MAX),
            Err(HeapError::ServiceFailed)
        );
    }
}
