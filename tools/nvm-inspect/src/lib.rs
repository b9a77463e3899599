//! Reads an Amber NVM image and checks every invariant of its format, without
//! changing it: the superblock, the boot record, and the checkpoint area in the kernel
//! area (decoded by `amber_ckpt::inspect`), and describes what apps keep in the FRAM
//! partition (the key-value table, SQLite's files). The report lists what was found;
//! `problems` lists each invariant that fails, in words. This library must never write
//! to the image: it inspects a copy.

use amber_format::{boot_record_slots, Superblock, SuperblockError, SUPERBLOCK_LEN};
use amber_nvm::sim::VecNvm;
use amber_nvm::Nvm;
use std::fmt::Write;

/// What an inspection found.
#[derive(Debug)]
pub struct Report {
    /// Human-readable description of the image.
    pub text: String,
    /// Invariants that fail; empty when the image is consistent.
    pub problems: Vec<String>,
    /// The newest valid boot record (seq, boots, stress), if any.
    pub newest_boot: Option<(u64, u64, u64)>,
    /// The committed checkpoint version, when the checkpoint area holds one.
    pub committed: Option<u64>,
    /// The version recovery would resume (below `committed` after a rollback).
    pub resumes: Option<u64>,
    /// The kernel area (the checkpoint area), when the superblock is valid.
    pub kernel_area: Option<amber_format::Region>,
    /// Where every readable checkpoint copy lies.
    pub copies: Vec<amber_ckpt::CopyPlace>,
}

impl Report {
    /// An image whose checkpoint area could not be reached.
    fn unreadable(text: String, problems: Vec<String>) -> Report {
        Report {
            text,
            problems,
            newest_boot: None,
            committed: None,
            resumes: None,
            kernel_area: None,
            copies: Vec::new(),
        }
    }

    pub fn is_consistent(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Inspects an image.
pub fn inspect(image: &[u8]) -> Report {
    let mut text = String::new();
    let mut problems = Vec::new();
    let size = match u32::try_from(image.len()) {
        Ok(s) => s,
        Err(_) => {
            problems.push(format!("the image of {} bytes exceeds 4 GiB", image.len()));
            return Report::unreadable(text, problems);
        }
    };
    let _ = writeln!(text, "image: {size} bytes");
    if image.len() < SUPERBLOCK_LEN {
        problems.push("the image is smaller than a superblock".into());
        return Report::unreadable(text, problems);
    }
    let mut nvm = VecNvm::from_image(image.to_vec());
    let mut raw = [0u8; SUPERBLOCK_LEN];
    // In bounds: the length was checked above.
    nvm.read(0, &mut raw)
        .expect("superblock read within the image");
    let sb = match Superblock::decode(&raw, nvm.size()) {
        Ok(sb) => sb,
        Err(SuperblockError::Blank) => {
            let _ = writeln!(
                text,
                "superblock: blank (never formatted; the kernel formats it on boot)"
            );
            problems.push("the image is blank: it holds no Amber NVM yet".into());
            return Report::unreadable(text, problems);
        }
        Err(e) => {
            problems.push(format!("superblock: {e}"));
            return Report::unreadable(text, problems);
        }
    };
    let _ = writeln!(
        text,
        "superblock: format v{}, device {} bytes, checksum ok",
        sb.version, sb.nvm_size
    );
    let areas = [
        ("boot record", sb.boot_record, " (two slots)"),
        ("kernel area", sb.kernel_area, ""),
        ("ring area", sb.ring_area, " (eternal)"),
        ("FRAM", sb.fram_area, ""),
    ];
    for (name, area, what) in areas {
        let _ = writeln!(
            text,
            "  {name:<12} at {:#08x}, {} bytes{what}",
            area.offset, area.len
        );
    }
    let slots =
        boot_record_slots(&mut nvm, &sb).expect("the layout was checked to lie inside the image");
    let mut newest: Option<(u64, u64, u64)> = None;
    for (i, slot) in slots.iter().enumerate() {
        match slot {
            Some((seq, rec)) => {
                let _ = writeln!(
                    text,
                    "  boot record slot {i}: seq {seq}, boots {}, stress count {}",
                    rec.boots, rec.stress
                );
                if newest.is_none_or(|(s, _, _)| *seq > s) {
                    newest = Some((*seq, rec.boots, rec.stress));
                }
            }
            None => {
                let _ = writeln!(
                    text,
                    "  boot record slot {i}: invalid (never written, or torn by a power cut)"
                );
            }
        }
    }
    if let [Some((a, ra)), Some((b, rb))] = slots {
        if a == b {
            problems.push(format!("both boot record slots carry sequence number {a}"));
        }
        let (old, new) = if a < b { (ra, rb) } else { (rb, ra) };
        if new.boots < old.boots || new.stress < old.stress {
            problems.push("the newer boot record counts less than the older one".into());
        }
    }
    match newest {
        Some((seq, boots, stress)) => {
            let _ = writeln!(
                text,
                "newest boot record: seq {seq}: boot {boots}, stress count {stress}"
            );
        }
        None => problems.push("neither boot record slot passes its checksum".into()),
    }
    kv_table(image, sb.fram_area, &mut text);
    sqlite_files(image, sb.fram_area, &mut text);
    let ckpt = amber_ckpt::inspect(&mut nvm, sb.kernel_area);
    for l in &ckpt.lines {
        let _ = writeln!(text, "{l}");
    }
    problems.extend(ckpt.violations.iter().map(|v| format!("checkpoint: {v}")));
    Report {
        text,
        problems,
        newest_boot: newest,
        committed: ckpt.committed.map(|v| v.0),
        resumes: ckpt.resumes.map(|v| v.0),
        kernel_area: Some(sb.kernel_area),
        copies: ckpt.copies,
    }
}

/// Describes the `amber-kv` table at the start of the FRAM partition, if there is
/// one (the kv app's). Never a problem: the partition lags the driver's ring (committed
/// entries not yet applied are replayed after recovery), so a table caught in the middle
/// of an apply may read as incomplete without anything being wrong.
fn kv_table(image: &[u8], fram: amber_format::Region, text: &mut String) {
    let Some(part) = image.get(fram.offset as usize..(fram.offset + fram.len) as usize) else {
        return;
    };
    if !part.starts_with(b"AMBERKV1") {
        return;
    }
    let _ = match amber_kv::Table::open(VecNvm::from_image(part.to_vec()), 0) {
        Ok(t) => {
            let c = t.config();
            writeln!(
                text,
                "  FRAM: key-value table ({} buckets of {}, values up to {} bytes): {} keys, {} tombstones (as applied so far)",
                c.buckets,
                c.layout.entries(),
                c.max_value,
                t.len(),
                t.tombstones()
            )
        }
        Err(e) => writeln!(
            text,
            "  FRAM: key-value table not readable as applied so far ({e}); the driver's ring replays the rest after recovery"
        ),
    };
}

/// The SQLite task's files in the FRAM partition (its VFS, journal way:
/// `user/c/tasks/sqlite/vfs.c` writes this layout): two 16-byte size records at 0 and
/// 16 (sequence, database size, journal size, check), the journal's bytes from 64, the
/// database's after the journal's 64 KiB. Never a problem: SQLite's own
/// `PRAGMA integrity_check` judges the database, and a journal left behind is the hot
/// journal SQLite rolls back at its next open.
fn sqlite_files(image: &[u8], fram: amber_format::Region, text: &mut String) {
    const FORMAT: u32 = 0x51A3_B001;
    const JOURNAL_AT: usize = 64;
    const DB_AT: usize = JOURNAL_AT + 64 * 1024;
    let Some(part) = image.get(fram.offset as usize..(fram.offset + fram.len) as usize) else {
        return;
    };
    if part.len() < DB_AT + 100 {
        return;
    }
    let word = |at: usize| u32::from_le_bytes(part[at..at + 4].try_into().unwrap());
    let newest = (0..2)
        .map(|slot| {
            let r: [u32; 4] = std::array::from_fn(|i| word(slot * 16 + 4 * i));
            (
                r,
                FORMAT ^ r[0] ^ r[1].rotate_left(7) ^ r[2].rotate_left(13),
            )
        })
        .filter(|(r, check)| {
            r[3] == *check && (r[1] as usize) <= part.len() - DB_AT && r[2] as usize <= 64 * 1024
        })
        .map(|(r, _)| r)
        .max_by_key(|r| r[0]);
    let Some([seq, db, journal, _]) = newest else {
        return;
    };
    let header = &part[DB_AT..DB_AT + 100.min(db as usize)];
    let page = if header.starts_with(b"SQLite format 3\0") && header.len() >= 18 {
        match u16::from_be_bytes([header[16], header[17]]) {
            1 => 65536,
            n => u32::from(n),
        }
    } else {
        0
    };
    let _ = writeln!(
        text,
        "  FRAM: SQLite files (size record {seq}): database {db} bytes{}, journal {journal} bytes{}",
        if let Some(pages) = db.checked_div(page) {
            format!(" ({pages} pages of {page})")
        } else if db > 0 {
            " (no SQLite header)".to_owned()
        } else {
            String::new()
        },
        if journal > 0 {
            " (a hot journal: SQLite rolls it back at its next open)"
        } else {
            ""
        }
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use amber_format::{open, FormatPolicy};

    fn booted_image(boots: u64) -> Vec<u8> {
        let mut nvm = VecNvm::new(64 * 1024);
        for _ in 0..boots {
            let (mut h, _) = open(&mut nvm, FormatPolicy::IfBlank).unwrap();
            let mut rec = h.boot_record();
            rec.boots += 1;
            h.update(&mut nvm, rec).unwrap();
        }
        nvm.into_image()
    }

    #[test]
    fn a_booted_image_is_consistent_and_its_boot_count_is_reported() {
        let report = inspect(&booted_image(3));
        assert!(report.is_consistent(), "{:?}", report.problems);
        assert_eq!(report.newest_boot.map(|(_, boots, _)| boots), Some(3));
    }

    #[test]
    fn a_blank_or_corrupt_image_is_reported_inconsistent() {
        assert!(!inspect(&vec![0; 64 * 1024]).is_consistent());
        let mut image = booted_image(1);
        image[30] ^= 1;
        let report = inspect(&image);
        assert!(
            report.problems[0].contains("checksum"),
            "{:?}",
            report.problems
        );
    }

    /// An image whose checkpoint area holds versions 1 and 2 of two items.
    fn checkpointed_image() -> (Vec<u8>, amber_ckpt::Manager) {
        use amber_ckpt::{ItemId, Manager, Source};
        struct Two(u8);
        impl Source for Two {
            fn items(&self, f: &mut dyn FnMut(ItemId, u8, bool)) {
                f(ItemId(0), 1, true);
                f(ItemId(7), 2, self.0 == 1);
            }
            fn bytes<'a>(&'a self, id: ItemId, s: &'a mut [u8]) -> &'a [u8] {
                let n = 10 + id.0 as usize;
                s[..n].fill(self.0);
                &s[..n]
            }
        }
        let mut nvm = VecNvm::from_image(booted_image(1));
        let (h, _) = open(&mut nvm, FormatPolicy::IfBlank).unwrap();
        let area = h.superblock.kernel_area;
        let mut m = Manager::format(&mut nvm, area).unwrap();
        m.checkpoint(&mut nvm, &Two(1), [1; 16]).unwrap();
        m.checkpoint(&mut nvm, &Two(2), [2; 16]).unwrap();
        (nvm.into_image(), m)
    }

    #[test]
    fn an_image_without_a_checkpoint_is_consistent_and_says_so() {
        let report = inspect(&booted_image(1));
        assert!(report.is_consistent(), "{:?}", report.problems);
        assert!(report.text.contains("no checkpoint yet"), "{}", report.text);
        assert_eq!(report.committed, None);
    }

    #[test]
    fn a_checkpointed_image_shows_its_version_items_and_allocator() {
        let (image, _) = checkpointed_image();
        let report = inspect(&image);
        assert!(report.is_consistent(), "{:?}", report.problems);
        println!("{}", report.text);
        assert_eq!(report.committed, Some(2));
        for want in [
            "committed version: 2",
            "item 0: live",
            "item 7: live",
            "allocator:",
        ] {
            assert!(
                report.text.contains(want),
                "missing {want:?} in\n{}",
                report.text
            );
        }
    }

    #[test]
    fn a_corrupt_committed_copy_is_an_inconsistency() {
        let (mut image, _) = checkpointed_image();
        // Item 0 was written at v2 into slot 0 (v1 went to slot 1). Its descriptor
        // lies at kernel area + 0x100.
        let sb = amber_format::Superblock::for_device(image.len() as u32).unwrap();
        let at = (sb.kernel_area.offset + 0x100 + 12) as usize;
        image[at] ^= 1;
        let report = inspect(&image);
        assert!(!report.is_consistent());
        assert!(
            report.problems.iter().any(|p| p.contains(
                "checkpoint: recovery: version 2 is incomplete: item 0 slot 0 (its version unreadable)"
            ) && p.contains("resuming version 1")),
            "{:?}",
            report.problems
        );
        assert_eq!(report.committed, Some(2));
    }

    #[test]
    fn the_format_marker_is_reported_and_one_bad_byte_in_it_loses_nothing() {
        let (mut image, _) = checkpointed_image();
        let sb = amber_format::Superblock::for_device(image.len() as u32).unwrap();
        let marker = (sb.kernel_area.offset + 0x98) as usize;
        let report = inspect(&image);
        assert!(
            report.text.contains("format marker: clear"),
            "{}",
            report.text
        );
        // The attack on format 2 (0xA5 at the marker): now one byte of eight.
        image[marker] = 0xA5;
        let report = inspect(&image);
        assert!(report.is_consistent(), "{:?}", report.problems);
        assert!(
            report.text.contains("format marker: damaged")
                && report.text.contains("committed version: 2"),
            "{}",
            report.text
        );
        // The whole marker: a format was cut short; nothing to inspect.
        image[marker..marker + 8].copy_from_slice(b"AMBERFMT");
        let report = inspect(&image);
        assert!(
            report.text.contains("a format is in progress")
                && report.text.contains("no checkpoint yet"),
            "{}",
            report.text
        );
    }

    #[test]
    fn twins_are_shown_next_to_the_copies_they_double() {
        let (image, _) = checkpointed_image();
        let report = inspect(&image);
        // Item 7 was clean at v2: the checkpoint twinned its v1 copy.
        assert!(
            report.text.contains("twin of v1 kind 0x02, 17 bytes"),
            "{}",
            report.text
        );
    }

    #[test]
    fn both_boot_records_torn_is_reported() {
        let mut image = booted_image(2);
        image[0x100..0x100 + 56].fill(0x5A);
        let report = inspect(&image);
        assert!(!report.is_consistent());
        assert!(report.newest_boot.is_none());
    }

    #[test]
    fn sqlite_files_are_described_from_the_newer_valid_size_record() {
        const FORMAT: u32 = 0x51A3_B001;
        let fram = amber_format::Region {
            offset: 0,
            len: 128 * 1024,
        };
        let mut part = vec![0u8; fram.len as usize];
        let mut record = |slot: usize, r: [u32; 3]| {
            let check = FORMAT ^ r[0] ^ r[1].rotate_left(7) ^ r[2].rotate_left(13);
            for (i, w) in r.iter().chain([check].iter()).enumerate() {
                part[slot * 16 + 4 * i..][..4].copy_from_slice(&w.to_le_bytes());
            }
        };
        record(1, [1, 1024, 0]);
        record(0, [2, 2048, 600]);
        let db = 64 + 64 * 1024;
        part[db..db + 16].copy_from_slice(b"SQLite format 3\0");
        part[db + 16..db + 18].copy_from_slice(&512u16.to_be_bytes());
        let mut text = String::new();
        sqlite_files(&part, fram, &mut text);
        assert!(
            text.contains("size record 2): database 2048 bytes (4 pages of 512), journal 600 bytes (a hot journal"),
            "{text}"
        );
        part[0] ^= 1; // the newer record torn: the older one holds
        let mut text = String::new();
        sqlite_files(&part, fram, &mut text);
        assert!(
            text.contains(
                "size record 1): database 1024 bytes (2 pages of 512), journal 0 bytes\n"
            ),
            "{text}"
        );
        let mut text = String::new();
        sqlite_files(&vec![0u8; fram.len as usize], fram, &mut text);
        assert!(text.is_empty(), "a blank partition holds no files: {text}");
    }
}
