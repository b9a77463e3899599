//! `cargo xtask run --gdb`: QEMU starts halted behind its gdb stub and runs nothing
//! until a debugger lets it go, and the attach line xtask prints names the kernel image
//! and every task's ELF of the app, all of which exist. Speaking the gdb remote
//! protocol itself, the test finds the hart waiting at the reset vector with nothing on
//! the console; where `gdb-multiarch` is installed (CI installs it) it then runs the
//! printed line itself: breakpoints on a kernel function and on a task's `main`, set by
//! name, are hit at their addresses, and the console then shows the task's greeting.

use amber_tests::{app, record, scratch, xtask, Qemu};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The app `cargo xtask run` boots by default.
const APP: &str = "demo";
/// QEMU `virt`'s reset vector (its boot ROM), where a halted hart waits.
const RESET_VECTOR: u32 = 0x1000;
/// Bound on waits for the guest or the debugger (each ends as soon as they are done).
const TIMEOUT: Duration = Duration::from_secs(120);

/// A TCP port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Splits a shell command line of plain words and single-quoted ones (what xtask
/// prints) into its words.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted, mut started) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                started = true;
            }
            ' ' if !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            _ => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// The task names of `user/apps/NAME.toml` (each `name = "..."` after a `[[tasks]]`).
fn task_names(app: &str) -> Vec<String> {
    let desc = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../user/apps/{app}.toml"));
    let text = std::fs::read_to_string(&desc).expect("the app description");
    let mut names = Vec::new();
    let mut in_task = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_task = line == "[[tasks]]";
        } else if let Some(v) = line.strip_prefix("name = ").filter(|_| in_task) {
            names.push(v.trim_matches('"').to_owned());
        }
    }
    names
}

fn is_elf(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(b"\x7fELF"))
}

/// A gdb remote-protocol connection to QEMU's stub.
struct Stub(TcpStream);

impl Stub {
    fn connect(port: u16) -> Stub {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => {
                    s.set_read_timeout(Some(TIMEOUT)).unwrap();
                    return Stub(s);
                }
                Err(e) if Instant::now() > deadline => {
                    panic!("QEMU's gdb stub on port {port} never accepted: {e}")
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// Sends one packet and returns the stub's answer (acknowledging it).
    fn ask(&mut self, packet: &str) -> String {
        let sum = packet.bytes().fold(0u8, |s, b| s.wrapping_add(b));
        write!(self.0, "${packet}#{sum:02x}").unwrap();
        let mut byte = [0u8];
        // Skip acknowledgements up to the answer's start.
        loop {
            self.0
                .read_exact(&mut byte)
                .expect("an answer from the stub");
            if byte[0] == b'$' {
                break;
            }
        }
        let mut answer = Vec::new();
        loop {
            self.0.read_exact(&mut byte).unwrap();
            if byte[0] == b'#' {
                break;
            }
            answer.push(byte[0]);
        }
        let mut checksum = [0u8; 2];
        self.0.read_exact(&mut checksum).unwrap();
        self.0.write_all(b"+").unwrap();
        String::from_utf8(answer).unwrap()
    }
}

/// Ends QEMU (a child of xtask) and xtask, whatever happened in the test.
struct Teardown(u32);

impl Drop for Teardown {
    fn drop(&mut self) {
        let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.0));
        for pid in children.unwrap_or_default().split_whitespace() {
            let _ = Command::new("kill").args(["-9", pid]).status();
        }
    }
}

/// Runs `line` (the printed attach command) with `extra` gdb arguments in batch mode;
/// returns what gdb printed.
fn run_gdb(line: &str, extra: &[&str]) -> String {
    let mut words = shell_words(line);
    words.push("-batch".into());
    words.extend(extra.iter().map(|s| s.to_string()));
    let mut gdb = Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gdb-multiarch starts");
    let deadline = Instant::now() + TIMEOUT;
    while gdb.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = gdb.kill();
            panic!("gdb did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = gdb.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn run_with_gdb_waits_for_the_debugger_and_prints_an_attach_line_with_every_symbol_file() {
    let port = free_port();
    let nvm = scratch("gdb").join("nvm.img");
    let mut cmd = Command::new(xtask());
    cmd.args([
        "run",
        "--app",
        APP,
        "--no-build",
        &format!("--gdb={port}"),
        "--nvm",
    ])
    .arg(&nvm);
    let mut q = Qemu::spawn(cmd);
    let teardown = Teardown(q.id());

    // The attach line names the image and every task's ELF, which exist.
    let line = q
        .expect_within("qemu stderr: gdb-multiarch ", TIMEOUT)
        .trim_start_matches("qemu stderr: ")
        .to_owned();
    let words = shell_words(&line);
    let kernel = PathBuf::from(&words[4]);
    assert_eq!(
        kernel.canonicalize().unwrap(),
        app(APP).canonicalize().unwrap(),
        "gdb reads the kernel's symbols from the image QEMU boots: {line}"
    );
    let tasks: Vec<PathBuf> = words
        .iter()
        .filter_map(|w| w.strip_prefix("add-symbol-file "))
        .map(PathBuf::from)
        .collect();
    let mut named: Vec<String> = tasks
        .iter()
        .map(|t| t.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    named.sort();
    let mut expected = task_names(APP);
    expected.sort();
    assert_eq!(
        named, expected,
        "one symbol file per task of the app: {line}"
    );
    for f in tasks.iter().chain([&kernel]) {
        assert!(is_elf(f), "{} is not an ELF file: {line}", f.display());
    }
    assert!(
        line.ends_with(&format!("-ex 'target remote localhost:{port}'")),
        "{line}"
    );

    // Halted at the reset vector, nothing on the console.
    let mut stub = Stub::connect(port);
    let stop = stub.ask("?");
    assert!(
        stop.starts_with('T') || stop.starts_with('S'),
        "the stub reports a stopped hart: {stop}"
    );
    let regs = stub.ask("g");
    // x0..x31 then pc, each 8 hex digits of a little-endian u32.
    let pc = u32::from_le_bytes(
        (0..4)
            .map(|i| u8::from_str_radix(&regs[256 + 2 * i..258 + 2 * i], 16).unwrap())
            .collect::<Vec<_>>()
            .try_into()
            .unwrap(),
    );
    assert_eq!(pc, RESET_VECTOR, "the hart has not run: pc {pc:#x}");
    let console: Vec<String> = q
        .transcript()
        .lines()
        .filter(|l| !l.starts_with("qemu stderr: "))
        .map(str::to_owned)
        .collect();
    assert!(
        console.is_empty(),
        "nothing runs before the debugger lets it: {console:?}"
    );

    let how = if amber_qemu::on_path("gdb-multiarch").is_some() {
        drop(stub);
        let out = run_gdb(
            &line,
            &[
                "-ex",
                "break amber_kernel::kmain::kmain",
                "-ex",
                "break hello::main",
                "-ex",
                "continue",
                "-ex",
                "continue",
            ],
        );
        assert!(
            out.contains("Breakpoint 1, amber_kernel::kmain::kmain"),
            "the kernel's symbols: {out}"
        );
        assert!(
            out.contains("Breakpoint 2, hello::main ()"),
            "a task's symbols at its load address: {out}"
        );
        "gdb-multiarch ran the printed line: breakpoints on the kernel's kmain and a task's main hit"
    } else {
        eprintln!("gdb-multiarch is not installed: the protocol check alone ran");
        // Continue; the stub answers when the hart stops again, which it never does.
        write!(stub.0, "$c#63").unwrap();
        "continued by the gdb protocol (gdb-multiarch not installed)"
    };
    q.expect_within("[hello] Hello from U-mode!", TIMEOUT);
    // Power off; xtask then reaps QEMU and ends by itself.
    drop(teardown);
    q.exit_code();
    record(&format!(
        "run --gdb (QEMU): halted at the reset vector until attached, {} symbol files named and present; {how}",
        tasks.len() + 1
    ));
}
