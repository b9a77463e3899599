//! What can go wrong in the checkpoint manager, as named values shown to the user in
//! words. Nothing here may panic or hide which item or version is affected.

use crate::{ItemId, Version};
use amber_nvm::NvmError;
use core::fmt;

/// Why a copy of an item cannot be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The copy's CRC, which covers its descriptor and its data, fails (corrupt, or
    /// torn by a power cut).
    Checksum,
    /// The descriptor's CRC is right but a field is impossible.
    DescriptorField { what: &'static str },
    /// The data of a copy that recovery checked fails its CRC when read back.
    DataChecksum,
    /// The committed state points at a slot that holds no copy (erased).
    NoCopy,
    /// The committed state points at a copy tagged above the committed version.
    NewerThanCommit { version: Version },
    /// Two descriptors claim the same NVM blocks.
    ExtentOverlap,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Problem::Checksum => f.write_str("its descriptor or its data fails their checksum"),
            Problem::DescriptorField { what } => write!(f, "its descriptor is impossible: {what}"),
            Problem::DataChecksum => f.write_str("its data fails its checksum when read back"),
            Problem::NoCopy => f.write_str("the committed slot holds no copy"),
            Problem::NewerThanCommit { version } => {
                write!(
                    f,
                    "the committed slot holds {version}, newer than the commit"
                )
            }
            Problem::ExtentOverlap => f.write_str("its data overlaps another item's data"),
        }
    }
}

/// What went wrong in the checkpoint manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CkptError {
    /// The NVM device failed (or lost power).
    Nvm(NvmError),
    /// The extent space has no free run of `need` bytes. Nothing was committed.
    NoSpace { need: u64 },
    /// A committed copy is corrupt and no older committed version is complete.
    Corrupt {
        item: ItemId,
        slot: u8,
        version: Version,
        problem: Problem,
    },
    /// The checkpoint area holds no commit record and is blank: format it.
    NotFormatted,
    /// Neither commit record copy passes its checksum, and the area is not blank.
    CommitRecordCorrupt,
    /// The commit record belongs to another format version or another layout.
    FormatMismatch {
        found_format: u16,
        layout_matches: bool,
    },
    /// The area is too small for the ORoot table and one block of data.
    AreaTooSmall { len: u32, need: u32 },
    /// The source reported an item id at or above `MAX_ITEMS`.
    BadItem { id: u16 },
    /// An item is larger than any extent the area can hold.
    TooLarge { item: ItemId, len: usize },
    /// The item does not exist in the committed state.
    NoSuchItem { item: ItemId },
    /// The caller's buffer is shorter than the item.
    BufferTooSmall { item: ItemId, len: u32 },
    /// An earlier checkpoint failed part-way on an NVM error; recover before the next.
    Interrupted,
    /// The committed version is `layout::MAX_VERSION`: descriptors cannot tag another.
    VersionsExhausted,
}

impl CkptError {
    /// Whether the area simply was never formatted (the kernel formats it then).
    pub fn is_unformatted(&self) -> bool {
        matches!(self, CkptError::NotFormatted)
    }
}

impl From<NvmError> for CkptError {
    fn from(e: NvmError) -> Self {
        CkptError::Nvm(e)
    }
}

impl fmt::Display for CkptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CkptError::Nvm(e) => write!(f, "checkpoint area: {e}"),
            CkptError::NoSpace { need } => write!(
                f,
                "the checkpoint area has no free extent of {need} bytes; the checkpoint was not committed"
            ),
            CkptError::Corrupt {
                item,
                slot,
                version,
                problem,
            } => write!(
                f,
                "the committed copy of {item} (slot {slot}, {version}) is corrupt: {problem}; \
                 no older committed version is complete"
            ),
            CkptError::NotFormatted => f.write_str("the checkpoint area was never formatted"),
            CkptError::CommitRecordCorrupt => f.write_str(
                "neither copy of the checkpoint commit record passes its checksum: the area is corrupt",
            ),
            CkptError::FormatMismatch {
                found_format,
                layout_matches,
            } => write!(
                f,
                "the checkpoint area holds format {found_format}{}, this kernel reads format {} with this layout",
                if layout_matches { "" } else { " with another layout" },
                crate::layout::CKPT_FORMAT
            ),
            CkptError::AreaTooSmall { len, need } => write!(
                f,
                "the checkpoint area of {len} bytes is too small (at least {need} bytes are needed)"
            ),
            CkptError::BadItem { id } => write!(
                f,
                "item id {id} is out of range (at most {} items)",
                crate::MAX_ITEMS
            ),
            CkptError::TooLarge { item, len } => {
                write!(f, "{item} of {len} bytes does not fit in the checkpoint area")
            }
            CkptError::NoSuchItem { item } => {
                write!(f, "{item} does not exist in the committed checkpoint")
            }
            CkptError::BufferTooSmall { item, len } => {
                write!(f, "{item} holds {len} bytes, more than the buffer")
            }
            CkptError::Interrupted => f.write_str(
                "an earlier checkpoint stopped on an NVM error; recover before taking another",
            ),
            CkptError::VersionsExhausted => write!(
                f,
                "the checkpoint area has committed its last version ({}): format it again",
                crate::layout::MAX_VERSION
            ),
        }
    }
}
