//! A read-only look at a checkpoint area: what it holds, in lines of text, what
//! recovery would do with it (the same `recover::plan` the kernel runs), and every
//! invariant that fails. Used by the host tool `nvm-inspect`. It must never write.
//!
//! Leftovers of a power cut (a torn commit copy, a torn format marker, torn or
//! uncommitted copies in slots the committed state does not use, items whose twin a
//! cut kept from being written) are described but are not violations: recovery
//! handles them. What no cut can leave (a bad copy the committed state uses, a copy
//! that contradicts it, overlapping copies, a commit record that recovery stops on)
//! is a violation.

use crate::desc::Copy;
use crate::error::Finding;
use crate::layout::{Layout, COMMIT_SLOT_LEN};
use crate::recover::{plan, read_marker, Marker, Pick};
use crate::space::Usage;
use crate::{CkptError, Version, MAX_ITEMS};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use amber_format::Region;
use amber_nvm::Nvm;

/// What [`inspect`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inspection {
    /// A description of the area, one line each.
    pub lines: Vec<String>,
    /// Every invariant that fails, in words; empty when the area is consistent.
    pub violations: Vec<String>,
    /// The committed version, when a commit record was found.
    pub committed: Option<Version>,
    /// The version recovery would resume (below `committed` after a rollback).
    pub resumes: Option<Version>,
    /// Blocks held by every copy recovery keeps.
    pub usage: Option<Usage>,
    /// Where every readable copy lies (for tools that damage images on purpose).
    pub copies: Vec<CopyPlace>,
}

/// Where one readable copy lies on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPlace {
    pub item: crate::ItemId,
    pub slot: u8,
    pub version: Version,
    pub twin: bool,
    /// Whether the item is live in the state recovery resumes.
    pub live: bool,
    /// Its 16-byte descriptor.
    pub descriptor: Region,
    /// Its data (length 0 for an empty item).
    pub data: Region,
}

impl Inspection {
    pub fn is_consistent(&self) -> bool {
        self.violations.is_empty()
    }
}

fn describe(c: &Copy) -> String {
    match *c {
        Copy::Empty => "empty".into(),
        Copy::Erased => "erased".into(),
        Copy::Invalid(p) => format!("unreadable ({p})"),
        Copy::Data {
            version,
            kind,
            len,
            extent,
            twin,
            ..
        } => format!(
            "{}{version} kind {kind:#04x}, {len} bytes at block {} ({} blocks)",
            if twin { "twin of " } else { "" },
            extent.first.0,
            extent.blocks
        ),
    }
}

/// Decodes and verifies the checkpoint area `area` of `nvm`, without writing.
pub fn inspect(nvm: &mut impl Nvm, area: Region) -> Inspection {
    let mut out = Inspection::default();
    if let Err(e) = run(nvm, area, &mut out) {
        out.violations
            .push(format!("reading the checkpoint area: {e}"));
    }
    out
}

fn run(nvm: &mut impl Nvm, area: Region, out: &mut Inspection) -> Result<(), CkptError> {
    let layout = Layout::new(area)?;
    out.lines.push(format!(
        "checkpoint area at {:#x}, {} bytes: format {}, {} ORoots, {} blocks of {} bytes",
        area.offset,
        area.len,
        crate::layout::CKPT_FORMAT,
        MAX_ITEMS,
        layout.blocks,
        crate::layout::BLOCK
    ));
    out.lines.push(match read_marker(nvm, &layout)? {
        Marker::Clear => "format marker: clear".into(),
        Marker::Formatting => "format marker: a format is in progress (it was cut short)".into(),
        Marker::Damaged => {
            "format marker: damaged (a marker store torn by a power cut, or corruption); \
             recovery ignores it"
                .into()
        }
    });
    let record = layout.commit_record();
    for s in 0..2u32 {
        let mut raw = [0u8; COMMIT_SLOT_LEN];
        nvm.read(layout.commit_slot(s).0, &mut raw)?;
        let text = match record.read_slot(nvm, s)? {
            Some((seq, payload)) => match crate::layout::CommitPayload::decode(&payload, &layout) {
                Ok(c) => format!(
                    "seq {seq}, version {}, {} live items",
                    c.version.0,
                    c.live.iter().count()
                ),
                Err(e) => format!("seq {seq}: {e}"),
            },
            None if raw.iter().all(|&b| b == 0) => "empty (never written, or cleared)".into(),
            None => "fails its checksum (a commit a power cut tore, or corruption)".into(),
        };
        out.lines.push(format!("commit copy {s}: {text}"));
    }
    let plan = match plan(nvm, area) {
        Ok(p) => p,
        Err(CkptError::NotFormatted) => {
            out.lines.push(
                "no checkpoint yet (the area was never formatted, or its format was cut short)"
                    .into(),
            );
            return Ok(());
        }
        Err(e) => {
            out.violations.push(format!("recovery stops: {e}"));
            return Ok(());
        }
    };
    let report = &plan.report;
    out.committed = Some(report.committed);
    out.resumes = Some(report.resumed);
    out.lines
        .push(format!("committed version: {}", report.committed.0));
    out.lines.push(format!(
        "recovery resumes version {}{}",
        report.resumed.0,
        match report.erased_uncommitted {
            0 => String::new(),
            n => format!(", erasing {n} uncommitted copies"),
        }
    ));
    for f in &report.findings {
        let text = format!("recovery: {f}");
        match f {
            Finding::RolledBack { .. }
            | Finding::RepairedFromTwin { .. }
            | Finding::Contradicts { .. }
            | Finding::Overlaps { .. } => out.violations.push(text),
            Finding::FormatMarkerDamaged
            | Finding::CommitSlotDamaged { .. }
            | Finding::Cleared { .. } => out.lines.push(text),
        }
    }
    let commit = plan.resumed.commit;
    let mut live = 0;
    let mut untwinned = 0;
    for (i, slots) in plan.copies.iter().enumerate() {
        let id = i as u16;
        let is_live = commit.live.contains(id);
        if !is_live && !slots.iter().any(Copy::is_stored) {
            continue;
        }
        let d = commit.slot_of(id) as usize;
        let pick = plan.resumed.picks[i];
        let state = if is_live {
            live += 1;
            match pick {
                Pick::Twin(_) => "live (from its twin)",
                _ => "live",
            }
        } else {
            "not live"
        };
        out.lines
            .push(format!("item {id}: {state}, designated slot {d}"));
        let twinned = is_live && slots[1 - d].is_twin();
        if is_live && !twinned && !matches!(pick, Pick::Twin(_)) {
            untwinned += 1;
        }
        for (s, c) in slots.iter().enumerate() {
            if let Copy::Data {
                version,
                twin,
                len,
                extent,
                ..
            } = *c
            {
                out.copies.push(CopyPlace {
                    item: crate::ItemId(id),
                    slot: s as u8,
                    version,
                    twin,
                    live: is_live,
                    descriptor: Region {
                        offset: layout.desc(id, s as u8).0,
                        len: crate::layout::DESC_LEN as u32,
                    },
                    data: Region {
                        offset: layout.block(extent.first).0,
                        len,
                    },
                });
            }
            let erased = plan
                .actions
                .iter()
                .any(|&(a, b, _)| a == id && b as usize == s);
            let tag = if erased {
                " [recovery erases or rewrites it]"
            } else if is_live && s == d {
                " [committed]"
            } else if c.is_twin() {
                " [twin]"
            } else if c.version().is_some() {
                " [older copy]"
            } else {
                ""
            };
            out.lines.push(format!("  slot {s}: {}{tag}", describe(c)));
        }
    }
    let u = plan.resumed.space.usage();
    out.lines.push(format!(
        "live items: {live}, {untwinned} of them without a twin (written in the newest \
         checkpoint, or a cut came before their twin)"
    ));
    out.lines.push(format!(
        "allocator: {} of {} bytes used in {} extents, {} bytes free",
        u.used_bytes, u.total_bytes, u.extents, u.free_bytes
    ));
    out.usage = Some(u);
    Ok(())
}
