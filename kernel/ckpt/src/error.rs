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
    /// A field of the descriptor is impossible (checked before its CRC).
    DescriptorField { what: BadField },
    /// The data of a copy that recovery checked fails its CRC when read back.
    DataChecksum,
    /// The committed state points at a slot that holds no copy (erased).
    NoCopy,
    /// The committed state points at a copy tagged above the committed version.
    NewerThanCommit { version: Version },
    /// Two descriptors claim the same NVM blocks.
    ExtentOverlap,
    /// The designated slot holds a twin, which only ever lies in the other slot.
    TwinDesignated,
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
            Problem::TwinDesignated => f.write_str("the committed slot holds a twin, not a copy"),
        }
    }
}

/// Which field of a descriptor is impossible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadField {
    /// An erased slot with a version, kind, length or block.
    ErasedWithFields,
    /// A copy tagged version 0.
    VersionZero,
    /// An extent outside the extent space or not aligned to its size.
    Extent,
    /// A state value that no format 3 descriptor has.
    State,
}

impl fmt::Display for BadField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BadField::ErasedWithFields => "an erased slot carries fields",
            BadField::VersionZero => "a copy tagged version 0",
            BadField::Extent => "its extent lies outside the extent space or is misaligned",
            BadField::State => "unknown state",
        })
    }
}

/// One copy a committed state needs that cannot be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadCopy {
    pub item: ItemId,
    pub slot: u8,
    /// The version its descriptor names, when the descriptor could be read.
    pub version: Option<Version>,
    pub problem: Problem,
}

impl fmt::Display for BadCopy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} slot {}", self.item, self.slot)?;
        match self.version {
            Some(v) => write!(f, " ({v})")?,
            None => f.write_str(" (its version unreadable)")?,
        }
        write!(f, ": {}", self.problem)
    }
}

/// Why one committed version cannot be restored: the first copy it needs that is
/// bad (in item order) and how many are bad in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Damage {
    pub version: Version,
    pub first: BadCopy,
    pub count: u32,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "version {} is incomplete: {}, with no intact twin",
            self.version.0, self.first
        )?;
        if self.count > 1 {
            write!(f, " (and {} more bad copies)", self.count - 1)?;
        }
        Ok(())
    }
}

/// What recovery had to fall back on when the newest committed version is damaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// The commit record's other copy holds no older version (only one was ever
    /// committed since the area was formatted, or a rollback cleared it).
    None,
    /// The commit record's other copy fails its checksum.
    RecordDamaged { slot: u32 },
    /// The older version is damaged as well.
    Incomplete(Damage),
}

/// Something recovery found and dealt with, in words for the console and
/// `nvm-inspect`. None of these loses committed state silently: each says what it
/// cost. (The texts avoid "cannot" and "refusing", the words of a boot that stops.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finding {
    /// The format marker is neither zero nor the marker: a marker store torn by a
    /// power cut, or corruption. Ignored.
    FormatMarkerDamaged,
    /// A commit record copy fails its checksum (a commit a power cut tore, or
    /// corruption); `resumed` is the version the other copy holds.
    CommitSlotDamaged { slot: u32, resumed: Version },
    /// The newest version was incomplete; recovery went back to `to`.
    RolledBack {
        from: Version,
        to: Version,
        because: BadCopy,
    },
    /// A designated copy was bad and its twin intact: the twin was used and the copy
    /// rewritten from it. Nothing was lost.
    RepairedFromTwin {
        bad: BadCopy,
        twin_slot: u8,
        twin_version: Version,
    },
    /// An unreadable copy in a slot the resumed state does not use: erased.
    Cleared {
        item: ItemId,
        slot: u8,
        problem: Problem,
    },
    /// A valid copy that contradicts the resumed state (a twin of another version,
    /// or a copy not older than the committed one): erased.
    Contradicts {
        item: ItemId,
        slot: u8,
        version: Version,
    },
    /// A valid copy whose blocks another copy holds: erased.
    Overlaps { item: ItemId, slot: u8 },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Finding::FormatMarkerDamaged => f.write_str(
                "the format marker is damaged (a marker store torn by a power cut, or corruption); ignored",
            ),
            Finding::CommitSlotDamaged { slot, resumed } => write!(
                f,
                "commit slot {slot} fails its checksum (a commit a power cut tore, or corruption); \
                 resuming version {} from slot {}",
                resumed.0,
                1 - slot
            ),
            Finding::RolledBack { from, to, because } => {
                write!(
                    f,
                    "version {} is incomplete: {because}, with no intact twin; rolled back: ",
                    from.0
                )?;
                if from.0 == to.0 + 1 {
                    write!(f, "version {} is lost", from.0)?;
                } else {
                    write!(f, "versions {}..={} are lost", to.0 + 1, from.0)?;
                }
                write!(f, ", resuming version {}", to.0)
            }
            Finding::RepairedFromTwin {
                bad,
                twin_slot,
                twin_version,
            } => write!(
                f,
                "{bad}; its twin in slot {twin_slot} ({twin_version}) is intact: restored from \
                 the twin and rewritten, nothing lost"
            ),
            Finding::Cleared {
                item,
                slot,
                problem,
            } => write!(
                f,
                "{item} slot {slot}: {problem} (a copy a power cut tore, or corruption); the \
                 resumed state does not use it: erased"
            ),
            Finding::Contradicts {
                item,
                slot,
                version,
            } => write!(
                f,
                "{item} slot {slot} holds {version}, which contradicts the committed copy: erased"
            ),
            Finding::Overlaps { item, slot } => write!(
                f,
                "{item} slot {slot}: its data overlaps another copy's: erased"
            ),
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
    /// The newest committed version is damaged and so is what it could fall back on.
    Corrupt { newest: Damage, older: Fallback },
    /// A committed copy read back after recovery fails its checksum (it changed on
    /// NVM since recovery checked it).
    ReadBack { bad: BadCopy },
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
            CkptError::Corrupt { newest, older } => {
                write!(f, "{newest}; ")?;
                match older {
                    Fallback::None => f.write_str("no older version is kept to fall back on"),
                    Fallback::RecordDamaged { slot } => write!(
                        f,
                        "the older version's commit record (slot {slot}) fails its checksum"
                    ),
                    Fallback::Incomplete(d) => write!(f, "{d}; no committed version is whole"),
                }
            }
            CkptError::ReadBack { bad } => write!(f, "reading back the committed copy of {bad}"),
            CkptError::NotFormatted => f.write_str(
                "the checkpoint area was never formatted (or a format of it was cut short)",
            ),
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
