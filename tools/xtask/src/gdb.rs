//! The command line that attaches gdb to QEMU's gdb stub (`cargo xtask run --gdb`)
//! with the kernel's symbols and every task's.
//!
//! Each task ELF is linked at the place `app.rs` gives it (`memory.x`), so gdb takes
//! its load addresses from the file itself (`add-symbol-file FILE` with no address).
//! The debugger is Debian's `gdb-multiarch` (package of the same name), which knows
//! RISC-V; `riscv64-unknown-elf-gdb` takes the same arguments. This file only builds
//! the line; it never runs a debugger.

use std::path::{Path, PathBuf};

/// The debugger the printed line calls.
pub const GDB: &str = "gdb-multiarch";
/// The Debian package that provides it.
pub const GDB_PACKAGE: &str = "gdb-multiarch";
/// QEMU's default gdb stub port (`-s`).
pub const DEFAULT_PORT: u16 = 1234;

/// The shell command line: gdb with the kernel image's symbols, each task's symbols
/// added, attached to the stub on `port` of this host.
pub fn attach_command(kernel: &Path, tasks: &[PathBuf], port: u16) -> String {
    let mut words = vec![
        GDB.to_owned(),
        "-q".to_owned(),
        // add-symbol-file asks for confirmation otherwise.
        "-iex".to_owned(),
        quote("set confirm off"),
        quote(&kernel.display().to_string()),
    ];
    for t in tasks {
        words.push("-ex".to_owned());
        words.push(quote(&format!("add-symbol-file {}", t.display())));
    }
    words.push("-ex".to_owned());
    words.push(quote(&format!("target remote localhost:{port}")));
    words.join(" ")
}

/// `s` as one shell word: as it is when it holds only characters no shell treats
/// specially, else in single quotes.
fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=,@".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_is_added_and_the_stub_is_the_chosen_port() {
        let line = attach_command(
            Path::new("/w/target/amber/apps/demo.elf"),
            &[
                PathBuf::from("/w/target/amber/apps/demo/hello/hello.elf"),
                PathBuf::from("/w/target/amber/apps/demo/ping/ping.elf"),
            ],
            4321,
        );
        assert_eq!(
            line,
            "gdb-multiarch -q -iex 'set confirm off' /w/target/amber/apps/demo.elf \
             -ex 'add-symbol-file /w/target/amber/apps/demo/hello/hello.elf' \
             -ex 'add-symbol-file /w/target/amber/apps/demo/ping/ping.elf' \
             -ex 'target remote localhost:4321'"
        );
    }

    #[test]
    fn paths_with_spaces_or_quotes_stay_one_word() {
        assert_eq!(quote("/a b/k.elf"), "'/a b/k.elf'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }
}
