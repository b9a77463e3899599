//! `cargo xtask`: builds the kernel for the device, boots it in QEMU, runs every test.
//!
//! The kernel is built in its own cargo invocation for `riscv32imc-unknown-none-elf`,
//! so the kernel's single-core atomics (which disable interrupts through `mstatus`)
//! never unify into a host or user-mode build. xtask only orchestrates: it must never
//! hold logic that a test or the kernel needs.

use amber_qemu::{ensure_nvm_image, find_qemu, Console, Machine, DEFAULT_NVM_SIZE};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const TARGET: &str = "riscv32imc-unknown-none-elf";
const KERNEL_PACKAGE: &str = "amber-kernel";

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  build                 build the kernel for riscv32imc (release)
  run [options]         build, then boot Amber in QEMU with the console on this terminal
                        (quit QEMU with Ctrl-A X)
      --nvm PATH        NVM image file (default target/amber/nvm.img; created blank if missing)
      --nvm-size BYTES  size of a newly created image (default 4194304)
      --format          erase the NVM and format it anew, whatever it holds
      --icount          count instructions (-icount shift=0,sleep=off): repeatable timing
      --bootargs ARGS   extra kernel options, e.g. \"amber.log=debug\"
  test                  run every check: rustfmt, clippy (host and device), host unit
                        tests, and the QEMU integration tests in tests/
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build") => build_kernel().map(|k| println!("{}", k.display())),
        Some("run") => run(&args[1..]),
        Some("test") => test(),
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
        None => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (xtask lives in tools/xtask).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("tools/xtask is two levels below the workspace root")
        .to_path_buf()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root());
    c
}

/// Runs `cmd`, failing with `what` when it does not exit with success.
fn step(what: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("xtask: {what}");
    let status = cmd
        .status()
        .map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Makes sure the toolchain has the device target. rustup installs the targets that
/// rust-toolchain.toml lists only together with the toolchain itself, so on a machine
/// whose toolchain was already there without the target, add it.
fn ensure_target() -> Result<(), String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(rustc)
        .current_dir(root())
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_owned();
    if Path::new(&sysroot)
        .join("lib/rustlib")
        .join(TARGET)
        .is_dir()
    {
        return Ok(());
    }
    step(
        "installing the riscv32imc target listed in rust-toolchain.toml",
        Command::new("rustup")
            .current_dir(root())
            .args(["target", "add", TARGET]),
    )
}

/// Builds the kernel ELF and returns its path.
fn build_kernel() -> Result<PathBuf, String> {
    ensure_target()?;
    step(
        "building the kernel for riscv32imc",
        cargo().args([
            "build",
            "--release",
            "-p",
            KERNEL_PACKAGE,
            "--target",
            TARGET,
        ]),
    )?;
    Ok(root()
        .join("target")
        .join(TARGET)
        .join("release")
        .join(KERNEL_PACKAGE))
}

fn run(args: &[String]) -> Result<(), String> {
    let mut nvm = root().join("target/amber/nvm.img");
    let mut size = DEFAULT_NVM_SIZE;
    let mut bootargs = Vec::new();
    let mut icount = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n\n{USAGE}"))
        };
        match a.as_str() {
            "--nvm" => nvm = PathBuf::from(value("--nvm")?),
            "--nvm-size" => {
                let v = value("--nvm-size")?;
                size = v
                    .parse()
                    .map_err(|_| format!("--nvm-size takes a number of bytes, not `{v}`"))?;
            }
            "--format" => bootargs.push("amber.format".to_owned()),
            "--icount" => icount = true,
            "--bootargs" => bootargs.push(value("--bootargs")?),
            other => return Err(format!("unknown option `{other}` for run\n\n{USAGE}")),
        }
    }
    find_qemu().map_err(|e| e.to_string())?;
    let kernel = build_kernel()?;
    if ensure_nvm_image(&nvm, size).map_err(|e| format!("cannot create {}: {e}", nvm.display()))? {
        eprintln!(
            "xtask: created a blank NVM image {} of {size} bytes",
            nvm.display()
        );
    }
    let size = std::fs::metadata(&nvm)
        .map_err(|e| format!("cannot read {}: {e}", nvm.display()))?
        .len();
    let mut machine = Machine::new(kernel)
        .nvm(&nvm, size)
        .bootargs(&bootargs.join(" "));
    machine.icount = icount;
    machine.console = Console::Terminal;
    eprintln!(
        "xtask: booting Amber in QEMU (quit with Ctrl-A X); NVM {}",
        nvm.display()
    );
    let mut cmd = machine.command().map_err(|e| e.to_string())?;
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start QEMU: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => Err(format!("Amber stopped with exit code {code}")),
        None => Err(format!("QEMU was stopped by a signal ({status})")),
    }
}

fn test() -> Result<(), String> {
    // Fail before any long build when QEMU is missing, naming the package.
    find_qemu().map_err(|e| e.to_string())?;
    step(
        "checking formatting (cargo fmt --check)",
        cargo().args(["fmt", "--all", "--check"]),
    )?;
    step(
        "linting host crates (clippy -D warnings)",
        cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    step(
        "linting the kernel for riscv32imc (clippy -D warnings)",
        cargo().args([
            "clippy",
            "-p",
            KERNEL_PACKAGE,
            "--target",
            TARGET,
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    let kernel = build_kernel()?;
    step(
        "running host unit tests and QEMU integration tests",
        cargo()
            .args(["test", "--workspace"])
            .env("AMBER_KERNEL", &kernel),
    )
}
