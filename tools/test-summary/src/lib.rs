//! The figures a test proved, for the summary at the end of `cargo xtask test`.
//!
//! cargo captures what a passing test prints, so the crash states explored, the crash
//! cycles survived and the syscalls fuzzed never reach the terminal. A test that
//! proves such figures calls [`record`] with one line saying them (after its checks,
//! so that only what held is recorded): the line is printed as before and, when
//! `cargo xtask test` runs the tests, appended to the file `AMBER_TEST_SUMMARY` names,
//! which xtask prints at the end. Host-only, std-only; it must never decide anything
//! a test asserts.

use std::io::Write;

/// The environment variable naming the summary file (set by `cargo xtask test`).
pub const SUMMARY_VAR: &str = "AMBER_TEST_SUMMARY";

/// Prints `line` and, under `cargo xtask test`, appends it to the summary file. The
/// line is written with one `write` to a file opened for appending, so lines of tests
/// running in parallel never interleave. A summary that cannot be written is reported
/// on stderr; it never fails the test.
pub fn record(line: &str) {
    println!("{line}");
    let Some(path) = std::env::var_os(SUMMARY_VAR) else {
        return;
    };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "cannot append to the test summary {}: {e}",
            std::path::Path::new(&path).display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{record, SUMMARY_VAR};

    // The only test of this crate: it alone sets the variable in this process.
    #[test]
    fn lines_from_parallel_tests_land_whole_in_the_summary() {
        let path = std::env::temp_dir().join(format!("amber-summary-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        std::env::set_var(SUMMARY_VAR, &path);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..50 {
                        record(&format!("thread {t} line {i}: {}", "x".repeat(200)));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        std::env::remove_var(SUMMARY_VAR);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 400);
        for t in 0..8 {
            for i in 0..50 {
                let want = format!("thread {t} line {i}: {}", "x".repeat(200));
                assert!(
                    lines.contains(&want.as_str()),
                    "{want:?} is missing or torn"
                );
            }
        }
    }
}
