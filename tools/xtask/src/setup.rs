//! What xtask's commands need from the host system besides the Rust toolchain, in one
//! list ([`NEEDS`]), and the set-up that provides it: before a command starts, every
//! need of that command is probed; what is missing is installed with `apt-get` when
//! xtask runs as root on a machine that has it (saying so), and otherwise the one
//! command that installs it is printed (an error for a need the command cannot do
//! without, a note for one it can). So `cargo xtask run` and `cargo xtask test` are the
//! whole set-up on a fresh Debian machine, and CI installs nothing of its own. The
//! list: QEMU, gdb-multiarch, Python's venv module, and the C toolchain of C tasks
//! (`riscv64-unknown-elf-gcc` and picolibc, `ctask.rs`).
//!
//! To add a need (a C toolchain, a Python module), add one entry to [`NEEDS`]: what it
//! is, how to tell it is there, its Debian package and the commands that need it. This
//! file must never install anything but the Debian packages of that list, and never
//! ask for a password (no `sudo`): a user who is not root is told the command.

use std::process::{Command, Stdio};

/// How to tell that a need is met.
#[derive(Clone, Copy, Debug)]
pub enum Probe {
    /// A program on `PATH`.
    Program(&'static str),
    /// `python3 -c CODE` succeeds (for modules of Python's standard library that
    /// Debian packages apart).
    Python(&'static str),
    /// A file a package installs.
    File(&'static str),
}

impl Probe {
    fn met(self) -> bool {
        match self {
            Probe::Program(name) => amber_qemu::on_path(name).is_some(),
            Probe::Python(code) => Command::new("python3")
                .args(["-c", code])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            Probe::File(path) => std::path::Path::new(path).is_file(),
        }
    }
}

/// One thing some xtask commands need from the host.
#[derive(Debug)]
pub struct Need {
    /// What it is, as the user knows it.
    pub what: &'static str,
    pub probe: Probe,
    /// The Debian package that provides it.
    pub package: &'static str,
    /// The xtask commands that need it (`run`, `test`, `bench`, `harvest`, ...).
    pub commands: &'static [&'static str],
    /// `None` when those commands cannot run without it; otherwise what they leave
    /// out without it.
    pub without: Option<&'static str>,
}

/// Everything xtask's commands need from the host (besides the Rust toolchain, which
/// rust-toolchain.toml and rustup provide): one entry per need.
pub const NEEDS: [Need; 5] = [
    Need {
        what: amber_qemu::QEMU,
        probe: Probe::Program(amber_qemu::QEMU),
        package: amber_qemu::QEMU_PACKAGE,
        commands: &["run", "test", "bench", "harvest"],
        without: None,
    },
    Need {
        what: crate::gdb::GDB,
        probe: Probe::Program(crate::gdb::GDB),
        package: crate::gdb::GDB_PACKAGE,
        commands: &["test"],
        without: Some("the `run --gdb` test checks QEMU's gdb stub by protocol only, without running the gdb line it prints"),
    },
    Need {
        what: "Python's venv module",
        probe: Probe::Python("import ensurepip, venv"),
        package: "python3-venv",
        // The test command checks the ESP32-C3 images with esptool and boots them in
        // the C3 simulator (unicorn), both installed from PyPI into virtual
        // environments under target/.
        commands: &["test"],
        without: None,
    },
    // C tasks (the ccounter and sqlite apps, `ctask.rs`): the test command builds every
    // app, the bench runs the sqlite apps.
    Need {
        what: crate::ctask::CC,
        probe: Probe::Program(crate::ctask::CC),
        package: crate::ctask::PACKAGES[0],
        commands: &["test", "bench"],
        without: None,
    },
    Need {
        what: "picolibc for riscv64-unknown-elf",
        probe: Probe::File(crate::ctask::PICOLIBC_SPECS),
        package: crate::ctask::PACKAGES[1],
        commands: &["test", "bench"],
        without: None,
    },
];

/// What set-up does about the missing needs of a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing is missing.
    Nothing,
    /// Install these packages with apt-get (xtask is root and apt-get is there).
    Install(Vec<&'static str>),
    /// Tell the user: `required` is empty when the command can go on without them.
    Tell {
        command: String,
        required: Vec<&'static str>,
        optional: Vec<(&'static str, &'static str)>,
    },
}

/// The plan for `command` given which needs are met and whether xtask may install.
pub fn plan(command: &str, met: impl Fn(&Need) -> bool, can_install: bool) -> Plan {
    let missing: Vec<&Need> = NEEDS
        .iter()
        .filter(|n| n.commands.contains(&command) && !met(n))
        .collect();
    if missing.is_empty() {
        return Plan::Nothing;
    }
    let packages: Vec<&'static str> = missing.iter().map(|n| n.package).collect();
    if can_install {
        return Plan::Install(packages);
    }
    Plan::Tell {
        command: format!(
            "apt-get update && apt-get install -y --no-install-recommends {} (as root)",
            packages.join(" ")
        ),
        required: missing
            .iter()
            .filter(|n| n.without.is_none())
            .map(|n| n.what)
            .collect(),
        optional: missing
            .iter()
            .filter_map(|n| Some((n.what, n.without?)))
            .collect(),
    }
}

/// Whether this process runs as root.
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Makes sure the host has what `command` needs: installs what is missing (as root,
/// with apt-get, saying so), or fails naming the command that installs it (for a
/// need the command cannot do without; otherwise it says what is left out and goes on).
pub fn ensure(command: &str) -> Result<(), String> {
    let met = |n: &Need| n.probe.met();
    let can_install = amber_qemu::on_path("apt-get").is_some() && is_root();
    match plan(command, met, can_install) {
        Plan::Nothing => Ok(()),
        Plan::Install(packages) => {
            eprintln!(
                "xtask: `{command}` needs {}, missing here: installing it with apt-get (as root)",
                packages.join(", ")
            );
            crate::step(
                "apt-get update",
                Command::new("apt-get")
                    .arg("update")
                    .env("DEBIAN_FRONTEND", "noninteractive"),
            )?;
            crate::step(
                &format!("apt-get install {}", packages.join(" ")),
                Command::new("apt-get")
                    .args(["install", "-y", "--no-install-recommends"])
                    .args(&packages)
                    .env("DEBIAN_FRONTEND", "noninteractive"),
            )?;
            match NEEDS
                .iter()
                .find(|n| n.commands.contains(&command) && !met(n))
            {
                Some(n) => Err(format!(
                    "{} is still missing after installing {}",
                    n.what, n.package
                )),
                None => Ok(()),
            }
        }
        Plan::Tell {
            command: install,
            required,
            optional,
        } => {
            for (what, without) in &optional {
                eprintln!("xtask: {what} is not installed, so {without}");
            }
            if required.is_empty() {
                eprintln!("xtask: to install what is missing: {install}");
                Ok(())
            } else {
                Err(format!(
                    "`{command}` needs {}, which is not installed; install it with: {install}",
                    required.join(" and ")
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_done_when_every_need_of_the_command_is_met() {
        assert_eq!(plan("test", |_| true, true), Plan::Nothing);
        // A need of another command only is not this command's business.
        assert_eq!(
            plan("run", |n| n.package != "gdb-multiarch", false),
            Plan::Nothing
        );
    }

    #[test]
    fn as_root_with_apt_every_missing_package_is_installed_at_once() {
        assert_eq!(
            plan("test", |_| false, true),
            Plan::Install(vec![
                "qemu-system-misc",
                "gdb-multiarch",
                "python3-venv",
                "gcc-riscv64-unknown-elf",
                "picolibc-riscv64-unknown-elf"
            ])
        );
        assert_eq!(
            plan("run", |_| false, true),
            Plan::Install(vec!["qemu-system-misc"])
        );
    }

    #[test]
    fn otherwise_the_one_command_is_named_and_only_required_needs_stop_the_command() {
        let Plan::Tell {
            command,
            required,
            optional,
        } = plan(
            "test",
            |n| n.package != "qemu-system-misc" && n.package != "gdb-multiarch",
            false,
        )
        else {
            panic!("a user who is not root must be told the command");
        };
        assert!(
            command.contains(
                "apt-get install -y --no-install-recommends qemu-system-misc gdb-multiarch"
            ),
            "{command}"
        );
        assert_eq!(required, ["qemu-system-riscv32"]);
        assert_eq!(optional.len(), 1);
        assert_eq!(optional[0].0, "gdb-multiarch");
        // gdb alone missing: a note, not a stop.
        let Plan::Tell { required, .. } = plan("test", |n| n.package != "gdb-multiarch", false)
        else {
            panic!("gdb missing must be told");
        };
        assert!(required.is_empty());
    }
}
