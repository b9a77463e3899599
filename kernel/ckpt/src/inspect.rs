//! A read-only look at a checkpoint area: what it holds, in lines of text, and every
//! invariant that fails. Used by the host tool `nvm-inspect`. It must never write.
//!
//! Leftovers of a power cut (a torn commit copy, torn or uncommitted copies in slots
//! the committed state does not use, older copies whose data an interrupted checkpoint
//! overwrote) are described but are not violations: recovery handles them.

use crate::desc::Copy;
use crate::layout::{CommitPayload, Layout};
use crate::recover::{check_state, classify_other, not_formatted, read_table, OtherSlot};
use crate::space::Usage;
use crate::{Version, MAX_ITEMS};
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
    /// Blocks held by every valid copy: committed, older, and (until recovery erases
    /// them) uncommitted leftovers of a cut.
    pub usage: Option<Usage>,
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
        Copy::Tombstone { version } => format!("{version} deleted"),
        Copy::Data {
            version,
            kind,
            len,
            extent,
            ..
        } => format!(
            "{version} kind {kind:#04x}, {len} bytes at block {} ({} blocks)",
            extent.first.0, extent.blocks
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

fn run(nvm: &mut impl Nvm, area: Region, out: &mut Inspection) -> Result<(), crate::CkptError> {
    let layout = Layout::new(area)?;
    let line = |out: &mut Inspection, s: String| out.lines.push(s);
    line(
        out,
        format!(
            "checkpoint area at {:#x}, {} bytes: format {}, {} ORoots, {} blocks of {} bytes",
            area.offset,
            area.len,
            crate::layout::CKPT_FORMAT,
            MAX_ITEMS,
            layout.blocks,
            crate::layout::BLOCK
        ),
    );
    if not_formatted(nvm, &layout)? {
        line(
            out,
            "no checkpoint yet (the area was never formatted, or its format was cut short)".into(),
        );
        return Ok(());
    }
    let record = layout.commit_record();
    let mut slots = [None, None];
    for (s, slot) in slots.iter_mut().enumerate() {
        match record.read_slot(nvm, s as u32)? {
            Some((seq, payload)) => match CommitPayload::decode(&payload, &layout) {
                Ok(c) => {
                    line(
                        out,
                        format!("commit copy {s}: seq {seq}, version {}", c.version.0),
                    );
                    *slot = Some((seq, c));
                }
                Err(e) => out.violations.push(format!("commit copy {s}: {e}")),
            },
            None => line(
                out,
                format!(
                    "commit copy {s}: invalid (never written, cleared, or torn by a power cut)"
                ),
            ),
        }
    }
    let newest = match slots {
        [Some(a), Some(b)] => {
            if a.0 == b.0 {
                out.violations
                    .push(format!("both commit copies carry sequence number {}", a.0));
            }
            let (old, new) = if a.0 < b.0 { (a, b) } else { (b, a) };
            if old.1.version >= new.1.version {
                out.violations.push(format!(
                    "the newer commit copy holds {}, not above the older copy's {}",
                    new.1.version, old.1.version
                ));
            }
            new.1
        }
        [Some(a), None] | [None, Some(a)] => a.1,
        [None, None] => {
            out.violations
                .push("neither commit record copy passes its checksum".into());
            return Ok(());
        }
    };
    let g = newest.version;
    out.committed = Some(g);
    line(out, format!("committed version: {}", g.0));
    let copies = read_table(nvm, &layout)?;
    let check = check_state(&layout, &copies, &newest);
    for b in &check.bad {
        out.violations.push(format!(
            "{} slot {} ({}) is part of the committed state but {}",
            b.item, b.slot, b.version, b.problem
        ));
    }
    let mut space = check.space;
    let mut items = 0;
    for (i, slots) in copies.iter().enumerate() {
        if slots.iter().all(|c| *c == Copy::Empty) {
            continue;
        }
        let id = i as u16;
        let d = newest.slot_of(id) as usize;
        let o = 1 - d;
        let state = match slots[d] {
            Copy::Data { .. } => {
                items += 1;
                "live"
            }
            Copy::Tombstone { .. } => "deleted",
            Copy::Empty => "never committed",
            _ => "CORRUPT",
        };
        line(
            out,
            format!("item {id}: {state}, committed copy in slot {d}"),
        );
        for s in 0..2 {
            let mut text = format!("  slot {s}: {}", describe(&slots[s]));
            if s == o {
                match classify_other(&slots[o], &slots[d], g) {
                    OtherSlot::Uncommitted => {
                        text.push_str(" [uncommitted: recovery erases it]");
                        // Its blocks were allocated from free space: they must not
                        // overlap anything either.
                        if let Some(e) = slots[o].extent() {
                            if !space.claim(e) {
                                out.violations.push(format!(
                                    "item {id} slot {o}: its uncommitted copy overlaps another copy's blocks"
                                ));
                            }
                        }
                    }
                    OtherSlot::Contradicts => out.violations.push(format!(
                        "item {id} slot {o}: an older slot holds a copy not older than the committed one"
                    )),
                    OtherSlot::Keep => {
                        if let Some(e) = slots[o].extent() {
                            if !space.claim(e) {
                                out.violations.push(format!(
                                    "item {id} slot {o}: its data overlaps another copy's blocks"
                                ));
                            }
                        }
                        if matches!(slots[o], Copy::Invalid(_)) {
                            text.push_str(
                                " [torn or overwritten by an interrupted checkpoint, or corrupt; \
                                 not part of the committed state, no rollback to it]",
                            );
                        } else if slots[o].version().is_some() {
                            text.push_str(" [older copy]");
                        }
                    }
                }
            } else {
                text.push_str(" [committed]");
            }
            line(out, text);
        }
    }
    let u = space.usage();
    line(out, format!("live items: {items}"));
    line(
        out,
        format!(
            "allocator: {} of {} bytes used in {} extents, {} bytes free",
            u.used_bytes, u.total_bytes, u.extents, u.free_bytes
        ),
    );
    out.usage = Some(u);
    Ok(())
}
