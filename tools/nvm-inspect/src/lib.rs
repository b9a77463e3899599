//! Reads an Amber NVM image and checks every invariant of its format, without
//! changing it. The report lists what was found; `problems` lists each invariant that
//! fails, in words. This library must never write to the image: it inspects a copy.

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
}

impl Report {
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
            return Report {
                text,
                problems,
                newest_boot: None,
            };
        }
    };
    let _ = writeln!(text, "image: {size} bytes");
    if image.len() < SUPERBLOCK_LEN {
        problems.push("the image is smaller than a superblock".into());
        return Report {
            text,
            problems,
            newest_boot: None,
        };
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
            return Report {
                text,
                problems,
                newest_boot: None,
            };
        }
        Err(e) => {
            problems.push(format!("superblock: {e}"));
            return Report {
                text,
                problems,
                newest_boot: None,
            };
        }
    };
    let _ = writeln!(
        text,
        "superblock: format v{}, device {} bytes, checksum ok",
        sb.version, sb.nvm_size
    );
    let _ = writeln!(
        text,
        "  boot record  at {:#08x}, {} bytes (two slots)",
        sb.boot_record.offset, sb.boot_record.len
    );
    let _ = writeln!(
        text,
        "  kernel area  at {:#08x}, {} bytes",
        sb.kernel_area.offset, sb.kernel_area.len
    );
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
    Report {
        text,
        problems,
        newest_boot: newest,
    }
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

    #[test]
    fn both_boot_records_torn_is_reported() {
        let mut image = booted_image(2);
        image[0x100..0x100 + 56].fill(0x5A);
        let report = inspect(&image);
        assert!(!report.is_consistent());
        assert!(report.newest_boot.is_none());
    }
}
