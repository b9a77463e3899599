//! `cargo xtask run --board esp32c3 --sim [--app NAME] [--fram PATH]` and the test
//! command's simulator part: the flashable C3 image booted by `tools/c3sim` (Python, on
//! PyPI's `unicorn`, installed into `target/c3sim-venv` on first use). Orchestration
//! only: the simulator and its peripheral models are in `tools/c3sim`, the image in
//! `esp32c3.rs`.

use crate::{esp32c3, root, step};
use std::path::PathBuf;
use std::process::Command;

/// The unicorn release the simulator was written against (its trap-entry contract and
/// the pc it reports for exceptions are version-specific, tools/c3sim/c3sim/machine.py).
const UNICORN: &str = "unicorn==2.1.4";

/// The venv's python, made with `python3 -m venv` and pip when missing.
fn python() -> Result<PathBuf, String> {
    let venv = root().join("target/c3sim-venv");
    let bin = venv.join("bin/python");
    let probe = Command::new(&bin)
        .args([
            "-c",
            "import unicorn, sys; sys.exit(unicorn.__version__ != '2.1.4')",
        ])
        .status();
    if probe.is_ok_and(|s| s.success()) {
        return Ok(bin);
    }
    step(
        "creating a Python virtual environment for the C3 simulator (target/c3sim-venv)",
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
    )
    .map_err(|e| format!("{e} (Debian: apt-get install python3-venv)"))?;
    step(
        &format!("installing {UNICORN} from PyPI into target/c3sim-venv"),
        Command::new(venv.join("bin/pip")).args(["install", "--quiet", UNICORN]),
    )?;
    Ok(bin)
}

fn simulator(python: &PathBuf) -> Command {
    let mut cmd = Command::new(python);
    cmd.current_dir(root().join("tools/c3sim"));
    cmd
}

/// `run --board esp32c3 --sim [--app NAME] [--fram PATH] [--instructions N]`.
pub fn run_cmd(args: &[String]) -> Result<(), String> {
    let usage = "usage: cargo xtask run --board esp32c3 --sim [--app NAME] [--fram PATH] [--instructions N]";
    let mut app = "demo".to_owned();
    let mut fram = root().join("target/amber/esp32c3/fram.img");
    let mut extra = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value\n{usage}"))
        };
        match a.as_str() {
            "--app" => app = value()?,
            // The simulator runs in tools/c3sim: a relative path is the caller's.
            "--fram" => {
                fram = std::env::current_dir()
                    .map_err(|e| format!("cannot tell the current directory: {e}"))?
                    .join(value()?)
            }
            "--instructions" => extra.extend(["--instructions".to_owned(), value()?]),
            other => return Err(format!("unknown option `{other}`\n{usage}")),
        }
    }
    let bin = esp32c3::build(Some(&app))?;
    let c3 = crate::load_app(&app)?.esp32c3;
    if let Some(pin) = c3.power_failure_gpio {
        extra.extend(["--comparator-gpio".to_owned(), pin.to_string()]);
    }
    // The simulated board wires its FRAM where the app says it is.
    let p = c3.fram_pins();
    extra.extend([
        "--pins".to_owned(),
        format!("{},{},{},{}", p.sck, p.miso, p.mosi, p.cs),
    ]);
    let python = python()?;
    eprintln!(
        "xtask: booting {} in the C3 simulator (Ctrl-B: the supply falls, Ctrl-C: quit); FRAM {}",
        bin.display(),
        fram.display()
    );
    let status = simulator(&python)
        .args(["-m", "c3sim", "--interactive", "--fram"])
        .arg(&fram)
        .args(&extra)
        .arg(&bin)
        .status()
        .map_err(|e| format!("cannot start the simulator: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the simulator stopped: {status}"))
    }
}

/// The test command's part: the simulator's own unit tests, then the boot and
/// crash-cycle checks on the images `esp32c3::test_all` built.
pub fn test_all() -> Result<(), String> {
    let python = python()?;
    step(
        "unit-testing the C3 simulator's models (python -m unittest)",
        simulator(&python).args(["-m", "unittest", "discover", "-s", "tests", "-t", "."]),
    )?;
    let images = root().join("target/amber/esp32c3");
    step(
        "booting the C3 images in the simulator (demo, faulter; brown-out, comparator; ckcounter and heap crash cycles)",
        simulator(&python)
            .args(["-m", "c3sim.check", "--images"])
            .arg(&images)
            .arg("--work")
            .arg(root().join("target/c3sim")),
    )
}
