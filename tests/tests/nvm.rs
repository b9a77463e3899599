//! NVM tests on QEMU: the boot counter persists in the image file, a SIGKILL while the
//! kernel rewrites NVM never loses a committed value, and a damaged superblock is
//! refused without a byte of the image changing.

use amber_kernel::exit::ExitCode;
use amber_tests::{machine, number_after, record, scratch, Qemu, Rng};
use std::time::{Duration, Instant};

/// Boots normally, returns the boot number the kernel reports, and powers off.
fn boot_once(image: &std::path::Path) -> (String, u64) {
    let mut q = Qemu::boot(&machine(image, ""));
    let line = q.expect("NVM");
    q.expect("entering the idle loop");
    q.kill();
    let boots =
        number_after(&line, "boot ").unwrap_or_else(|| panic!("no boot number in {line:?}"));
    (line, boots)
}

#[test]
fn the_boot_counter_increases_across_three_boots_on_the_same_nvm_file() {
    let image = scratch("boot-counter").join("nvm.img");
    let (first, b1) = boot_once(&image);
    assert!(
        first.contains("formatted a new NVM of 4194304 bytes"),
        "{first}"
    );
    let (second, b2) = boot_once(&image);
    assert!(second.contains("found NVM format v3"), "{second}");
    let (_, b3) = boot_once(&image);
    assert_eq!((b1, b2, b3), (1, 2, 3), "each boot must count exactly once");
}

#[test]
fn a_power_cut_while_nvm_is_rewritten_never_loses_a_printed_value() {
    let image = scratch("stress-cut").join("nvm.img");
    let mut rng = Rng::from_env("stress-cut");
    let cycles = 8;
    let mut last_printed = 0;
    for cycle in 0..cycles {
        let mut q = Qemu::boot(&machine(&image, "amber.test=nvm-stress"));
        let found = q.expect("NVM");
        let recovered = number_after(&found, "stress count ").unwrap_or(0);
        assert!(
            recovered >= last_printed,
            "cycle {cycle}: the kernel printed {last_printed} as committed, \
             but after the cut the NVM holds {recovered}"
        );
        q.expect("nvm-stress: committed");
        // Cut at a random instant 0..400 ms after the first commit, reading the console
        // until then so that the last printed value is known.
        let deadline = Instant::now() + Duration::from_millis(rng.below(400));
        while let Some(line) = q.next_line(deadline.saturating_duration_since(Instant::now())) {
            if let Some(n) = number_after(&line, "nvm-stress: committed ") {
                last_printed = n;
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        q.kill();
        let report = nvm_inspect::inspect(&std::fs::read(&image).unwrap());
        assert!(
            report.is_consistent(),
            "cycle {cycle}: nvm-inspect after the cut: {:?}\n{}",
            report.problems,
            report.text
        );
        eprintln!("cycle {cycle}: recovered {recovered}, cut after printing {last_printed}");
    }
    let (line, _) = boot_once(&image);
    let recovered = number_after(&line, "stress count ").unwrap();
    assert!(
        recovered >= last_printed,
        "final boot holds {recovered} < printed {last_printed}"
    );
    assert!(last_printed > 0, "the stress loop never committed anything");
    record(&format!(
        "boot record (QEMU): {cycles} SIGKILLs while it was rewritten, the last printed value ({last_printed}) never lost"
    ));
}

/// Boots an image that must be refused; returns the refusal line and checks that the
/// image file is byte-for-byte what it was.
fn expect_refusal(image: &std::path::Path, needle: &str) -> String {
    let before = std::fs::read(image).unwrap();
    let mut q = Qemu::boot(&machine(image, ""));
    let line = q.expect(needle);
    assert!(
        line.contains("Nothing was written") && line.contains("amber.format"),
        "the refusal must say the NVM is untouched and how to format it: {line}"
    );
    assert_eq!(q.exit_code(), ExitCode::NvmRefused.code());
    assert!(
        std::fs::read(image).unwrap() == before,
        "a refused NVM image was modified"
    );
    line
}

#[test]
fn a_corrupted_superblock_is_refused_with_a_clear_message_and_left_unchanged() {
    let image = scratch("corrupt-superblock").join("nvm.img");
    boot_once(&image);
    let mut bytes = std::fs::read(&image).unwrap();
    bytes[20] ^= 0x10; // inside the layout fields, covered by the checksum
    std::fs::write(&image, &bytes).unwrap();
    expect_refusal(&image, "superblock checksum is wrong");

    // Only the explicit option formats it.
    let mut q = Qemu::boot(&machine(&image, "amber.format"));
    q.expect("formatted a new NVM of 4194304 bytes");
    q.expect("entering the idle loop");
    q.kill();
    assert!(nvm_inspect::inspect(&std::fs::read(&image).unwrap()).is_consistent());
}

#[test]
fn a_foreign_image_and_another_format_version_are_refused_by_name() {
    let image = scratch("foreign").join("nvm.img");
    let mut bytes = vec![0u8; amber_qemu::DEFAULT_NVM_SIZE as usize];
    bytes[..16].copy_from_slice(b"not an amber nvm");
    std::fs::write(&image, &bytes).unwrap();
    expect_refusal(&image, "not an Amber NVM");

    let image = scratch("other-version").join("nvm.img");
    boot_once(&image);
    let mut bytes = std::fs::read(&image).unwrap();
    // The format before this one (the same bytes, fewer sizes partitioned).
    bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
    let crc = amber_format::crc32(&bytes[..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&image, &bytes).unwrap();
    expect_refusal(&image, "holds format v2");
}
