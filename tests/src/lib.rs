//! The harness for QEMU integration tests: boot Amber, read its console line by line,
//! send it bytes, cut its power (SIGKILL), and read its exit code.
//!
//! Every wait has a timeout, and every failure panics with the whole console
//! transcript, so a red test says what the kernel printed. The kernel ELF comes from
//! `AMBER_KERNEL`, which `cargo xtask test` sets after building it (and the apps'
//! images from `AMBER_APPS`, xtask itself from `AMBER_XTASK`). The harness must never
//! decide what a test asserts; it only drives and reports. Tests record the figures
//! they proved with [`record`], for the summary at the end of `cargo xtask test`.

pub use amber_test_summary::record;

use amber_qemu::{Machine, NvmBus};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Default bound on any single wait: generous, since every wait ends as soon as the
/// guest gets there and the machine may be busy.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The kernel ELF to boot.
pub fn kernel() -> PathBuf {
    match std::env::var_os("AMBER_KERNEL") {
        Some(p) => PathBuf::from(p),
        None => panic!(
            "AMBER_KERNEL is not set: run the integration tests with `cargo xtask test`, \
             which builds the kernel for riscv32imc first"
        ),
    }
}

/// The kernel image of an app built by `cargo xtask test` (`user/apps/NAME.toml`).
pub fn app(name: &str) -> PathBuf {
    match std::env::var_os("AMBER_APPS") {
        Some(dir) => PathBuf::from(dir).join(format!("{name}.elf")),
        None => panic!(
            "AMBER_APPS is not set: run the integration tests with `cargo xtask test`, \
             which builds every app in user/apps first"
        ),
    }
}

/// The xtask binary that runs the tests (for tests of its own commands).
pub fn xtask() -> PathBuf {
    match std::env::var_os("AMBER_XTASK") {
        Some(p) => PathBuf::from(p),
        None => panic!("AMBER_XTASK is not set: run the integration tests with `cargo xtask test`"),
    }
}

/// A machine booting app `name` with a fresh NVM image of its own (each call gets
/// another scratch directory, so tests in parallel never share an image).
pub fn app_machine(name: &str) -> Machine {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let image = scratch(&format!("app-{name}-{}-{n}", std::process::id())).join("nvm.img");
    on_bus(Machine::new(app(name)).nvm(image, amber_qemu::DEFAULT_NVM_SIZE))
}

/// `machine` on the NVM bus `AMBER_NVM_BUS` names (`cargo xtask test --nvm-bus`;
/// `mmio` when unset).
pub fn on_bus(mut machine: Machine) -> Machine {
    machine.nvm_bus = NvmBus::from_env().unwrap_or_else(|e| panic!("{e}"));
    machine
}

/// A scratch directory for one test, under `target/amber-tests/`, emptied first.
pub fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/amber-tests")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("cannot create the test's scratch directory");
    dir
}

/// A machine with an NVM image at `image` of the default size, on the bus
/// `AMBER_NVM_BUS` names.
pub fn machine(image: &Path, bootargs: &str) -> Machine {
    on_bus(
        Machine::new(kernel())
            .nvm(image, amber_qemu::DEFAULT_NVM_SIZE)
            .bootargs(bootargs),
    )
}

/// A running QEMU.
pub struct Qemu {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    transcript: Arc<Mutex<String>>,
}

fn pump(
    from: impl Read + Send + 'static,
    prefix: &'static str,
    tx: std::sync::mpsc::Sender<String>,
    log: Arc<Mutex<String>>,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            let line = format!("{prefix}{}", line.trim_end_matches('\r'));
            log.lock().unwrap().push_str(&format!("{line}\n"));
            if tx.send(line).is_err() {
                break;
            }
        }
    });
}

impl Qemu {
    /// Starts the machine; the console is read continuously from then on.
    pub fn boot(machine: &Machine) -> Qemu {
        Qemu::spawn(machine.command().unwrap_or_else(|e| panic!("{e}")))
    }

    /// Starts `cmd`, a command that runs QEMU with its console on stdout (a command
    /// line built by hand, with what one `Machine` cannot express such as boot options
    /// that are not UTF-8, or `xtask run`), read as [`Qemu::boot`] reads a machine's.
    pub fn spawn(mut cmd: std::process::Command) -> Qemu {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start QEMU: {e}"));
        let (tx, lines) = channel();
        let transcript = Arc::new(Mutex::new(String::new()));
        pump(
            child.stdout.take().unwrap(),
            "",
            tx.clone(),
            transcript.clone(),
        );
        pump(
            child.stderr.take().unwrap(),
            "qemu stderr: ",
            tx,
            transcript.clone(),
        );
        let stdin = child.stdin.take().unwrap();
        Qemu {
            child,
            stdin,
            lines,
            transcript,
        }
    }

    /// Everything the machine printed so far.
    pub fn transcript(&self) -> String {
        self.transcript.lock().unwrap().clone()
    }

    fn fail(&mut self, why: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(Duration::from_millis(50));
        panic!(
            "{why}\n--- console transcript ---\n{}--- end ---",
            self.transcript()
        );
    }

    /// Waits for a console line containing `needle` and returns it.
    pub fn expect(&mut self, needle: &str) -> String {
        self.expect_within(needle, TIMEOUT)
    }

    /// As `expect`, with an explicit timeout.
    pub fn expect_within(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => self.fail(&format!(
                    "no console line containing {needle:?} within {timeout:?}"
                )),
                Err(RecvTimeoutError::Disconnected) => {
                    self.fail(&format!("QEMU exited before printing {needle:?}"))
                }
            }
        }
    }

    /// The next console line, if one arrives within `timeout`.
    pub fn next_line(&mut self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Sends bytes to the console UART.
    pub fn send(&mut self, bytes: &[u8]) {
        self.stdin
            .write_all(bytes)
            .and_then(|_| self.stdin.flush())
            .expect("console input");
    }

    /// Cuts power: SIGKILL, no warning to the guest. Returns once QEMU is gone.
    pub fn kill(&mut self) {
        // `Child::kill` sends SIGKILL on Unix.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The process id of what was started.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// QEMU's exit code if it has exited by itself, without waiting.
    pub fn try_exit_code(&mut self) -> Option<i32> {
        self.child.try_wait().ok().flatten().and_then(|s| s.code())
    }

    /// Waits for QEMU to exit by itself and returns its exit code.
    pub fn exit_code(&mut self) -> i32 {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => match status.code() {
                    Some(code) => {
                        // Let the readers drain what QEMU printed last.
                        std::thread::sleep(Duration::from_millis(50));
                        return code;
                    }
                    None => self.fail(&format!("QEMU died by a signal: {status}")),
                },
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => self.fail(&format!("QEMU did not exit within {TIMEOUT:?}")),
                Err(e) => self.fail(&format!("cannot wait for QEMU: {e}")),
            }
        }
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The number after `key` in `line` (e.g. `number_after("boot 3,", "boot ")` = 3).
pub fn number_after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// A small seeded generator (xorshift64*) for reproducible random cut instants.
pub struct Rng {
    state: u64,
    seed: u64,
}

impl Rng {
    /// Seeded from `AMBER_SEED` when set, else from the clock; the seed is printed so a
    /// failing run can be repeated.
    pub fn from_env(test: &str) -> Rng {
        let seed = std::env::var("AMBER_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
        eprintln!("{test}: seed {seed} (repeat with AMBER_SEED={seed})");
        Rng {
            state: seed.max(1),
            seed,
        }
    }

    /// The seed it started from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}
