//! The errors of the heap, as named values with a message in words.
//!
//! Nothing here may panic or allocate; `Display` writes straight to the formatter.

use amber_nvm::NvmError;
use core::fmt;

/// What went wrong in a heap operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapError {
    /// The storage failed. The heap is poisoned afterwards: every later call returns
    /// [`HeapError::Poisoned`] and the heap must be reopened from storage.
    Storage(NvmError),
    /// An earlier storage error left RAM and NVM out of step; reopen the heap.
    Poisoned,
    /// The configuration cannot describe a heap.
    BadConfig { reason: &'static str },
    /// The storage is smaller than the configuration needs.
    StorageTooSmall { needed: u32, size: u32 },
    /// The cache buffer cannot hold the RAM metadata and at least one object.
    CacheTooSmall { needed: usize, size: usize },
    /// The cache buffer's length is not [`Config::cache_bytes`](crate::Config), on which
    /// the persist bound depends.
    CacheSizeMismatch { configured: u32, given: usize },
    /// `open` found no commit record at all (the device was never formatted).
    NotFormatted,
    /// `open` found metadata that fails its checks.
    CorruptMetadata { at: u32, what: &'static str },
    /// The stored heap was written by another format version.
    UnsupportedVersion { found: u16 },
    /// The stored heap was created with a different geometry.
    ConfigMismatch {
        what: &'static str,
        stored: u32,
        given: u32,
    },
    /// The type is zero-sized or aligned to more than 8 bytes, or an array chunk is empty.
    UnsupportedType { size: usize, align: usize },
    /// The object (or array chunk) is larger than 65535 bytes or than the cache.
    ObjectTooLarge { size: usize, limit: usize },
    /// Every object id is in use.
    OutOfIds,
    /// The NVM data area has no free run of blocks large enough (frees become reusable
    /// only after the next persist).
    NvmFull { needed_blocks: u32 },
    /// The cache cannot make room: too many objects are pinned by guards.
    CacheFull { needed: usize },
    /// Marking the object dirty would exceed the dirty limit even after writing back
    /// every unpinned dirty object.
    DirtyLimitExceeded { needed: u32, dirty: u32, limit: u32 },
    /// The handle belongs to another heap.
    WrongHeap,
    /// No live object has this id.
    NoSuchObject { id: u16 },
    /// The id is stored with another size, type or kind (object or array).
    TypeMismatch { id: u16 },
    /// A handle for this id already exists.
    AlreadyHeld { id: u16 },
    /// The object is already borrowed in a conflicting way, or too many read guards
    /// (2047) are held on it.
    Borrowed { id: u16 },
    /// `unpin` of an object that holds no raw pin of that kind.
    NotPinned { id: u16 },
    /// An index past the end of an array.
    IndexOutOfRange { index: u32, len: u32 },
    /// A push onto a [`Queue`](crate::Queue) that holds its capacity.
    QueueFull { capacity: u32 },
    /// The 32-bit epoch counter is exhausted (after about 4 billion persists).
    EpochsExhausted,
    /// A heap call was made from inside another (not possible through the safe API).
    Busy,
}

impl From<NvmError> for HeapError {
    fn from(e: NvmError) -> Self {
        HeapError::Storage(e)
    }
}

impl fmt::Display for HeapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HeapError::Storage(e) => write!(f, "storage failed: {e}; reopen the heap"),
            HeapError::Poisoned => f.write_str("an earlier storage error poisoned the heap; reopen it"),
            HeapError::BadConfig { reason } => write!(f, "bad heap configuration: {reason}"),
            HeapError::StorageTooSmall { needed, size } => {
                write!(f, "the heap needs {needed} bytes of NVM but the device has {size}")
            }
            HeapError::CacheTooSmall { needed, size } => {
                write!(f, "the cache needs at least {needed} bytes but has {size}")
            }
            HeapError::CacheSizeMismatch { configured, given } => write!(
                f,
                "the cache buffer has {given} bytes but the configuration's cache_bytes says {configured}"
            ),
            HeapError::NotFormatted => f.write_str("no heap was ever persisted on this device"),
            HeapError::CorruptMetadata { at, what } => {
                write!(f, "corrupt heap metadata at NVM offset {at:#x}: {what}")
            }
            HeapError::UnsupportedVersion { found } => {
                write!(f, "the stored heap has format version {found}, this code reads version {}", crate::format::FORMAT_VERSION)
            }
            HeapError::ConfigMismatch { what, stored, given } => {
                write!(f, "the stored heap has {what} = {stored} but the configuration says {given}")
            }
            HeapError::UnsupportedType { size, align } => write!(
                f,
                "type of size {size} and alignment {align} cannot be stored (need size > 0, alignment <= 8)"
            ),
            HeapError::ObjectTooLarge { size, limit } => {
                write!(f, "object of {size} bytes exceeds the limit of {limit} bytes")
            }
            HeapError::OutOfIds => f.write_str("every object id is in use"),
            HeapError::NvmFull { needed_blocks } => write!(
                f,
                "no free run of {needed_blocks} NVM blocks (space freed since the last persist is reusable only after the next one)"
            ),
            HeapError::CacheFull { needed } => {
                write!(f, "cannot make {needed} bytes of cache room: too many objects are pinned")
            }
            HeapError::DirtyLimitExceeded { needed, dirty, limit } => write!(
                f,
                "making {needed} more bytes dirty would exceed the dirty limit ({dirty} of {limit} bytes are dirty and pinned)"
            ),
            HeapError::NotPinned { id } => {
                write!(f, "object #{id} holds no raw pin of that kind")
            }
            HeapError::WrongHeap => f.write_str("the handle belongs to another heap"),
            HeapError::NoSuchObject { id } => write!(f, "no live object has id {id}"),
            HeapError::TypeMismatch { id } => {
                write!(f, "object {id} is stored with another size, type or kind")
            }
            HeapError::AlreadyHeld { id } => write!(f, "a handle for object {id} already exists"),
            HeapError::Borrowed { id } => write!(f, "object {id} is already borrowed"),
            HeapError::IndexOutOfRange { index, len } => {
                write!(f, "index {index} is out of range for an array of {len} elements")
            }
            HeapError::QueueFull { capacity } => {
                write!(f, "the queue holds its capacity of {capacity} elements")
            }
            HeapError::EpochsExhausted => f.write_str("the persist epoch counter is exhausted"),
            HeapError::Busy => f.write_str("the heap is busy with another call"),
        }
    }
}
