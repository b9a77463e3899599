//! `cargo xtask`: builds the kernel for the device, boots it in QEMU (also halted for
//! gdb), runs every test and sums up what they showed, inspects an NVM image.
//!
//! The kernel is built in its own cargo invocation for `riscv32imc-unknown-none-elf`,
//! so the kernel's single-core atomics (which disable interrupts through `mstatus`)
//! never unify into a host or user-mode build. xtask only orchestrates: it must never
//! hold logic that a test or the kernel needs.

mod app;
mod bench;
mod c3sim;
mod ctask;
mod esp32c3;
mod esp_image;
mod gdb;
mod harvest;
mod setup;
mod sizing;
mod sqlite_bench;
mod validate;

use amber_qemu::{check_nvm_size, ensure_nvm_image, Console, Machine, NvmBus, DEFAULT_NVM_SIZE};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const TARGET: &str = "riscv32imc-unknown-none-elf";
const KERNEL_PACKAGE: &str = "amber-kernel";
/// Beside the generated `app.rs`: where the kernel's `build.rs` finds the task
/// segments' sections and load addresses (`app::task_sections`).
const TASK_SECTIONS: &str = "task-sections.txt";

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  build [APP]           build the kernel for riscv32imc (release), with the tasks of
                        user/apps/APP.toml when APP is given; prints the app's
                        description and the capacitor its power-failure bound needs
  build --board esp32c3 [APP]
                        the same for the ESP32-C3, and its flashable image:
                        target/amber/esp32c3/APP.elf and APP.bin, validated by esptool
                        image-info (installed from PyPI into target/esptool-venv)
  flash --board esp32c3 APP [--port PORT]
                        build the C3 image, write it with espflash (installed if
                        missing) and open the monitor; stops at once without a board
  run --board esp32c3 --sim [--app NAME] [--fram PATH]
                        boot the C3 image in tools/c3sim (unicorn, from PyPI into
                        target/c3sim-venv); console on this terminal, Ctrl-B brown-out
  run [options]         build, then boot Amber in QEMU with the console on this terminal
                        (quit QEMU with Ctrl-A X)
      --app NAME        the app to boot (user/apps/NAME.toml; default: demo)
      --nvm PATH        NVM image file (default target/amber/nvm.img; created blank if missing)
      --nvm-size BYTES  size of a newly created image (default 4194304)
      --format          erase the NVM and format it anew, whatever it holds
      --icount          count instructions (-icount shift=0,sleep=off): repeatable timing,
                        and figures in exact instructions (without it they are host time)
      --nvm-bus BUS     mmio (default: memory-mapped NVM) or spi (the kernel's NVM is one
                        emulated SPI FRAM behind the FRAM driver, as on the ESP32-C3)
      --bootargs ARGS   extra kernel options, e.g. \"amber.log=debug\"
      --gdb[=PORT]      start halted with QEMU's gdb stub on PORT (default 1234) and print
                        the gdb-multiarch command that attaches with every symbol file
      --no-build        boot the image built last (target/amber/apps/APP.elf) as it is
  bench [PART..] [options]
                        run the benchmarks (QEMU -icount: exact instruction and byte
                        counts) and write their report with the commit measured:
                        target/amber/bench/report.md, .csv, .svg and latency.svg;
                        the host models' CSV and SVG in target/kv-bench, target/vnv-bench
      PART              only these parts: syscall, checkpoint, memtrack, nvm-bus,
                        heap, kv, sqlite, vnv-heap (e.g. `bench sqlite`)
      --fast            only the syscall/IPC and checkpoint parts (seconds)
      --check           fail naming every figure more than 3 % above the baseline
                        (tools/xtask/bench-baseline.toml) or no longer measured
      --save-baseline   write the figures measured into the baseline
      --baseline FILE   another baseline file;  --out DIR  another report folder
      --no-build        measure the images built last as they are
  test [options]        run every check: rustfmt, clippy (host and device), the API
                        docs (broken intra-doc links refused), the bench check's fast
                        part, host unit tests, and the QEMU integration tests in tests/;
                        ends with what they showed (crash states, crash cycles,
                        syscalls fuzzed)
      --crash-cycles N  crash-and-reboot cycles per workload (default 100)
      --nvm-bus BUS     the NVM bus of every QEMU test that does not choose one (mmio,
                        the default, or spi)
  inspect [IMAGE]       decode and verify an NVM image with nvm-inspect (default
                        target/amber/nvm.img, the one `run` uses)
  harvest --app APP --trace FILE [--cap UF] [--cycles N [--repeat]] [--name NAME]
          [--no-build]  run APP on harvested energy (capacitor model on the host, QEMU
                        -icount per power cycle); traces in tools/xtask/traces/; default
                        capacitor: the smallest the declared bound needs; --repeat
                        plays the trace until N cycles are done (--cycles 0: only
                        calibrate and print the size); SVG and NVM image
                        target/amber/harvest/NAME.* (default APP-TRACE)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build") if args.get(1).is_some_and(|a| a == "--board") => {
            esp32c3::build_cmd(&args[2..])
        }
        Some("build") => match args.get(1) {
            Some(app) => describe(app).and_then(|()| build_app(app, DEFAULT_NVM_SIZE)),
            None => build_kernel(None),
        }
        .map(|k| println!("{}", k.display())),
        Some("run") if args.get(1).is_some_and(|a| a == "--board") => match &args[2..] {
            [board, sim, rest @ ..] if board == esp32c3::BOARD && sim == "--sim" => {
                c3sim::run_cmd(rest)
            }
            _ => Err("usage: cargo xtask run --board esp32c3 --sim [--app NAME]".to_owned()),
        },
        Some("run") => run(&args[1..]),
        Some("flash") => esp32c3::flash_cmd(&args[1..]),
        Some("test") => test(&args[1..]),
        Some("bench") => bench::cmd(&args[1..]),
        Some("inspect") => inspect(&args[1..]),
        Some("harvest") => setup::ensure("harvest")
            .and_then(|()| harvest::run(&args[1..], |name| build_app(name, DEFAULT_NVM_SIZE))),
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

/// Builds the kernel ELF, carrying the app generated at `app_rs` if any. Returns its
/// path: cargo's output for an app (which `build_app` copies out), and
/// `target/amber/amber-kernel.elf` for the bare kernel.
fn build_kernel(app_rs: Option<&Path>) -> Result<PathBuf, String> {
    build_kernel_on(app::BOARD, app_rs)
}

/// [`build_kernel`] for board `board`; a board other than the default builds in its
/// own target folder (`target/BOARD`), so that switching never rebuilds the other, and
/// the bare kernel goes to `target/amber/BOARD/amber-kernel.elf`.
fn build_kernel_on(board: &str, app_rs: Option<&Path>) -> Result<PathBuf, String> {
    ensure_target()?;
    let mut cmd = cargo();
    cmd.args(board_config(board));
    if board == esp32c3::BOARD {
        cmd.args(KERNEL_FOR_SIZE.iter().flat_map(|c| ["--config", c]));
    }
    cmd.args([
        "build",
        "--release",
        "-p",
        KERNEL_PACKAGE,
        "--target",
        TARGET,
    ])
    .env("AMBER_BOARD", board);
    if board == esp32c3::BOARD {
        cmd.args(["--features", "small-checksum"]);
    }
    match app_rs {
        Some(p) => cmd.env("AMBER_APP", p),
        None => cmd.env_remove("AMBER_APP"),
    };
    step(
        &format!("building the kernel for riscv32imc ({board})"),
        &mut cmd,
    )?;
    let built = release_dir_on(board).join(KERNEL_PACKAGE);
    if app_rs.is_some() {
        return Ok(built);
    }
    // Copied out, so that building an app (same cargo output path) cannot replace it.
    let out = match board {
        app::BOARD => root().join("target/amber"),
        other => apps_dir(other),
    };
    let bare = out.join("amber-kernel.elf");
    std::fs::create_dir_all(&out)
        .and_then(|()| std::fs::copy(&built, &bare))
        .map_err(|e| format!("cannot copy the kernel to {}: {e}", bare.display()))?;
    Ok(bare)
}

fn release_dir_on(board: &str) -> PathBuf {
    match board {
        app::BOARD => root().join("target"),
        other => board_target_dir(other),
    }
    .join(TARGET)
    .join("release")
}

/// Cargo's settings for building the kernel and tasks of `board`: another board than
/// the default builds in its own target folder.
fn board_config(board: &str) -> Vec<String> {
    match board {
        app::BOARD => vec![],
        other => vec![
            "--config".to_owned(),
            format!("build.target-dir={:?}", board_target_dir(other)),
        ],
    }
}

/// The ESP32-C3's kernel is built for size (opt-level "z", amber-core too: about 16 KB
/// less code than "s" with amber-core at 2; and the feature `small-checksum`, 12 KiB
/// less of CRC tables), for its 393 KB of SRAM hold the kernel, every task and the
/// app's memory; QEMU's builds, and every figure measured on them, stay as they are.
/// Its tasks stay at "s" ("z" made the heap app's larger).
const KERNEL_FOR_SIZE: [&str; 2] = [
    "profile.release.opt-level=\"z\"",
    "profile.release.package.amber-core.opt-level=\"z\"",
];

/// The cargo target folder of a board other than the default.
fn board_target_dir(board: &str) -> PathBuf {
    root().join("target").join(board)
}

/// Where the app builds of `board` go: `target/amber/apps` for the default board,
/// `target/amber/BOARD` for another.
fn apps_dir(board: &str) -> PathBuf {
    match board {
        app::BOARD => root().join("target/amber/apps"),
        other => root().join("target/amber").join(other),
    }
}

/// The app descriptions in user/apps.
fn app_names() -> Result<Vec<String>, String> {
    let dir = root().join("user/apps");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_suffix(".toml").map(str::to_owned)
        })
        .collect();
    names.sort();
    Ok(names)
}

/// Prints app `name`'s description and the capacitor its power-failure bound needs.
fn describe(name: &str) -> Result<(), String> {
    for line in sizing::describe(&load_app(name)?)? {
        println!("{line}");
    }
    Ok(())
}

/// The description of app `name`, `user/apps/NAME.toml`.
fn load_app(name: &str) -> Result<app::App, String> {
    app::load(&app_desc(name))
}

/// The description of app `name`: `user/apps/NAME.toml`.
fn app_desc(name: &str) -> PathBuf {
    root().join("user/apps").join(format!("{name}.toml"))
}

/// The kernel image of app `name`: `target/amber/apps/NAME.elf`.
fn app_image(name: &str) -> PathBuf {
    apps_dir(app::BOARD).join(format!("{name}.elf"))
}

/// Where the build of app `name` keeps task `task`'s files (its ELF is `TASK.elf`).
fn task_dir(name: &str, task: &str) -> PathBuf {
    apps_dir(app::BOARD).join(name).join(task)
}

/// Builds every task of `user/apps/NAME.toml` at its place, for an NVM of `nvm_size`
/// bytes, then the kernel carrying them; returns `target/amber/apps/NAME.elf`.
fn build_app(name: &str, nvm_size: u64) -> Result<PathBuf, String> {
    build_app_on(app::BOARD, name, nvm_size)
}

/// [`build_app`] for board `board`, into [`apps_dir`]`(board)`.
fn build_app_on(board: &str, name: &str, nvm_size: u64) -> Result<PathBuf, String> {
    ensure_target()?;
    let app = load_app(name)?.on_board(board)?;
    let nvm_size = u32::try_from(nvm_size).map_err(|_| {
        format!("an NVM of {nvm_size} bytes is larger than the 4 GiB Amber addresses")
    })?;
    let placed = app::place(&app, nvm_size, board)?;
    validate::check(&placed, &app_desc(name))?;
    let out = apps_dir(board).join(name);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let runtime = root().join("user/runtime");
    let mut built = Vec::new();
    for p in placed {
        let dir = out.join(&p.task.name);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        std::fs::write(dir.join("memory.x"), app::memory_x(&p))
            .map_err(|e| format!("cannot write memory.x: {e}"))?;
        let elf = dir.join(format!("{}.elf", p.task.name));
        if p.task.lang == "c" {
            ctask::build(&p, &dir, &elf)?;
            let (segments, entry) = app::extract(&elf, &p, &dir)?;
            built.push((p, segments, entry));
            continue;
        }
        step(
            &format!("building task `{}` ({})", p.task.name, p.task.krate),
            cargo()
                .args(board_config(board))
                .args([
                    "rustc",
                    "--release",
                    "-p",
                    &p.task.krate,
                    // The task's program (its package may have a library too).
                    "--bin",
                    &p.task.krate,
                    "--target",
                    TARGET,
                    "--",
                ])
                .args([
                    format!("-Clink-arg=-L{}", dir.display()),
                    format!("-Clink-arg=-L{}", runtime.display()),
                    "-Clink-arg=-Ttask.x".to_owned(),
                    // The place in the arguments, so that cargo relinks when it moves
                    // (it does not see memory.x change).
                    format!(
                        "-Clink-arg=--defsym=__amber_code_end={:#x}+{}",
                        p.code_base, p.task.code
                    ),
                    format!(
                        "-Clink-arg=--defsym=__amber_ram_end={:#x}+{}",
                        p.ram_base, p.task.ram
                    ),
                ])
                .envs(app::task_env(&p)),
        )?;
        std::fs::copy(release_dir_on(board).join(&p.task.krate), &elf)
            .map_err(|e| format!("cannot copy the ELF of task `{}`: {e}", p.task.name))?;
        let (segments, entry) = app::extract(&elf, &p, &dir)?;
        built.push((p, segments, entry));
    }
    let app_rs = out.join("app.rs");
    std::fs::write(&app_rs, app::generate(&app, &built, nvm_size))
        .map_err(|e| format!("cannot write {}: {e}", app_rs.display()))?;
    let sections = out.join(TASK_SECTIONS);
    std::fs::write(&sections, app::task_sections(&built))
        .map_err(|e| format!("cannot write {}: {e}", sections.display()))?;
    let kernel = build_kernel_on(board, Some(&app_rs))?;
    let image = apps_dir(board).join(format!("{name}.elf"));
    std::fs::copy(&kernel, &image).map_err(|e| format!("cannot copy the kernel image: {e}"))?;
    Ok(image)
}

fn run(args: &[String]) -> Result<(), String> {
    let mut nvm = root().join("target/amber/nvm.img");
    let mut size = DEFAULT_NVM_SIZE;
    let mut bootargs = Vec::new();
    let mut icount = false;
    let mut nvm_bus = NvmBus::Mmio;
    let mut gdb = None;
    let mut build = true;
    let mut app = "demo".to_owned();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n\n{USAGE}"))
        };
        match a.as_str() {
            "--nvm" => nvm = PathBuf::from(value("--nvm")?),
            "--app" => app = value("--app")?,
            "--nvm-size" => {
                let v = value("--nvm-size")?;
                size = v
                    .parse()
                    .map_err(|_| format!("--nvm-size takes a number of bytes, not `{v}`"))?;
            }
            "--format" => bootargs.push("amber.format".to_owned()),
            "--icount" => icount = true,
            "--nvm-bus" => nvm_bus = NvmBus::from_name(&value("--nvm-bus")?)?,
            "--bootargs" => bootargs.push(value("--bootargs")?),
            "--gdb" => gdb = Some(gdb::DEFAULT_PORT),
            "--no-build" => build = false,
            other => match other.strip_prefix("--gdb=") {
                Some(port) => {
                    gdb =
                        Some(port.parse().map_err(|_| {
                            format!("--gdb=PORT takes a TCP port number, not `{port}`")
                        })?)
                }
                None => return Err(format!("unknown option `{other}` for run\n\n{USAGE}")),
            },
        }
    }
    setup::ensure("run")?;
    // Before the build: an image QEMU or the kernel would not take is named at once.
    let existing = std::fs::metadata(&nvm).map(|m| m.len()).ok();
    match existing {
        Some(len) => check_nvm_size(len).map_err(|e| format!("--nvm {}: {e}", nvm.display()))?,
        None => check_nvm_size(size).map_err(|e| format!("--nvm-size {size}: {e}"))?,
    }
    let kernel = if build {
        build_app(&app, existing.unwrap_or(size))?
    } else {
        let image = app_image(&app);
        if !image.is_file() {
            return Err(format!(
                "--no-build: there is no image of app `{app}` at {}; build it first \
                 (`cargo xtask build {app}`, or run without --no-build)",
                image.display()
            ));
        }
        image
    };
    if ensure_nvm_image(&nvm, size).map_err(|e| format!("cannot create {}: {e}", nvm.display()))? {
        eprintln!(
            "xtask: created a blank NVM image {} of {size} bytes",
            nvm.display()
        );
    }
    let size = std::fs::metadata(&nvm)
        .map_err(|e| format!("cannot read {}: {e}", nvm.display()))?
        .len();
    let mut machine = Machine::new(&kernel)
        .nvm(&nvm, size)
        .bootargs(&bootargs.join(" "));
    machine.icount = icount;
    machine.nvm_bus = nvm_bus;
    machine.console = Console::Terminal;
    machine.gdb = gdb;
    eprintln!(
        "xtask: booting Amber in QEMU (quit with Ctrl-A X); NVM {}",
        nvm.display()
    );
    if let Some(port) = gdb {
        let tasks = load_app(&app)?
            .tasks
            .iter()
            .map(|t| task_dir(&app, &t.name).join(format!("{}.elf", t.name)))
            .collect::<Vec<_>>();
        if let Some(missing) = tasks.iter().find(|t| !t.is_file()) {
            return Err(format!(
                "the symbols of a task are missing: {} (build the app again)",
                missing.display()
            ));
        }
        let have_gdb = amber_qemu::on_path(gdb::GDB).is_some();
        eprintln!(
            "xtask: QEMU waits, halted, for gdb on localhost:{port}; attach with {}{}:\n{}",
            gdb::GDB,
            if have_gdb {
                String::new()
            } else {
                format!(" (not installed: apt-get install {})", gdb::GDB_PACKAGE)
            },
            gdb::attach_command(&kernel, &tasks, port)
        );
    }
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

/// `cargo xtask inspect [IMAGE]`: nvm-inspect on IMAGE (relative to where the command
/// was given), by default the image `run` uses.
fn inspect(args: &[String]) -> Result<(), String> {
    let image = match args {
        [] => root().join("target/amber/nvm.img"),
        [path] if !path.starts_with('-') => std::env::current_dir()
            .map_err(|e| format!("cannot tell the current directory: {e}"))?
            .join(path),
        _ => return Err(format!("usage: cargo xtask inspect [IMAGE]\n\n{USAGE}")),
    };
    if !image.is_file() {
        return Err(format!(
            "there is no NVM image at {} (`cargo xtask run` creates target/amber/nvm.img)",
            image.display()
        ));
    }
    step(
        &format!("inspecting {}", image.display()),
        cargo()
            .args(["run", "--quiet", "-p", "nvm-inspect", "--"])
            .arg(&image),
    )
}

fn test(args: &[String]) -> Result<(), String> {
    let mut cycles = None;
    let mut bus = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{a} needs a value\n\n{USAGE}"))
        };
        match a.as_str() {
            "--crash-cycles" => {
                let n = value()?;
                cycles = Some(
                    n.parse::<u32>()
                        .map_err(|_| format!("--crash-cycles takes a number, not `{n}`"))?,
                )
            }
            "--nvm-bus" => bus = Some(NvmBus::from_name(value()?)?),
            _ => return Err(format!("unknown option `{a}` for test\n\n{USAGE}")),
        }
    }
    // Before any long build: what the tests need from the host (installed here when
    // xtask can), and the device target the lint below needs as much as a build does.
    setup::ensure("test")?;
    ensure_target()?;
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
    esp32c3::lint()?;
    step(
        "building the API docs (cargo doc, broken intra-doc links refused)",
        cargo()
            .args(["doc", "--workspace", "--no-deps", "--quiet"])
            .env("RUSTDOCFLAGS", "-D rustdoc::broken_intra_doc_links"),
    )?;
    let _ = std::fs::remove_dir_all(root().join("target/amber-tests"));
    let kernel = build_kernel(None)?;
    for name in app_names()? {
        build_app(&name, DEFAULT_NVM_SIZE)?;
    }
    // The hot paths against the bench baseline, on the images just built.
    bench::check_fast()?;
    esp32c3::test_all()?;
    c3sim::test_all()?;
    let summary = root().join("target/amber/test-summary.txt");
    let _ = std::fs::remove_file(&summary);
    let xtask = std::env::current_exe().map_err(|e| format!("cannot find xtask itself: {e}"))?;
    let mut cmd = cargo();
    cmd.args(["test", "--workspace"])
        .env("AMBER_KERNEL", &kernel)
        .env("AMBER_APPS", root().join("target/amber/apps"))
        .env("AMBER_XTASK", xtask)
        .env(amber_test_summary::SUMMARY_VAR, &summary);
    if let Some(n) = cycles {
        cmd.env("AMBER_CRASH_CYCLES", n.to_string());
    }
    if let Some(bus) = bus {
        cmd.env(amber_qemu::NVM_BUS_VAR, bus.name());
    }
    step(
        "running host unit tests and QEMU integration tests",
        &mut cmd,
    )?;
    print_summary(&summary)
}

/// Prints the figures the tests recorded (`amber-test-summary`), sorted so that the
/// same run reads the same way whatever order the tests finished in.
fn print_summary(path: &Path) -> Result<(), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.sort_unstable();
    if lines.is_empty() {
        eprintln!("xtask: every check passed (no test recorded figures)");
        return Ok(());
    }
    println!("xtask: every check passed; what the tests showed:");
    for l in lines {
        println!("  {l}");
    }
    Ok(())
}
