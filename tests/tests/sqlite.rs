//! C tasks and SQLite on QEMU: the SQL shell keeps its tables across a power cut on
//! both ways of persisting (whole-system: the database in checkpointed task memory;
//! its own journal: database and rollback journal on NVM), takes SQL from the console,
//! answers bad input and a full database with SQLite's own message and goes on; a C
//! task's bad syscall arguments get the ABI's error codes; and crash-and-reboot cycles
//! of the C example app and of SQLite's crash workload on both ways, cut by SIGKILL at
//! a random instant and at a random NVM store. After every recovery the workload runs
//! `PRAGMA integrity_check` and checks its table (every transaction whole, the last
//! ones present); the harness holds what it recovered to what it had acknowledged:
//! every acknowledged transaction present, nothing after the next one visible.
//!
//! Cycles per workload: a fifth of `AMBER_CRASH_CYCLES` (default 100), at least 8:
//! SQLite's checkpoints are large and the suite must stay within CI's time.

use amber_kernel::exit::ExitCode;
use amber_tests::{app_machine, number_after, record, scratch, xtask, Qemu, Rng};
use std::process::Command;
use std::time::{Duration, Instant};

/// Bound on a wait the guest's own progress ends first (the machine may be busy).
const GUEST_TIMEOUT: Duration = Duration::from_secs(120);

fn cycles() -> usize {
    let all: usize = std::env::var("AMBER_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    (all / 5).max(8)
}

/// Sends one line of SQL and returns the console lines up to the shell's next prompt.
fn sql(q: &mut Qemu, line: &str) -> Vec<String> {
    q.send(format!("{line}\n").as_bytes());
    let echo = format!("sqlite> {}", line.split('\n').next().unwrap_or(""));
    q.expect(&echo);
    let mut out = Vec::new();
    loop {
        let l = q.expect("[sqlite] ");
        let text = l[l.find("[sqlite] ").unwrap() + 9..].to_owned();
        if text.trim_end() == "sqlite>" {
            return out;
        }
        if !text.starts_with("   ...>") {
            out.push(text);
        }
    }
}

fn shell_keeps_its_tables_across_a_power_cut(app: &str) {
    let machine = app_machine(app);
    let mut q = Qemu::boot(&machine);
    q.expect("[sqlite] SQLite 3.");
    assert!(sql(&mut q, "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);").is_empty());
    assert!(sql(&mut q, "INSERT INTO t(v) VALUES ('one'), ('two'), (NULL);").is_empty());
    assert_eq!(
        sql(&mut q, "SELECT k, v FROM t ORDER BY k;"),
        ["1|one", "2|two", "3|"]
    );
    assert_eq!(
        sql(&mut q, "SELEC 1;"),
        ["Error: near \"SELEC\": syntax error"],
        "bad SQL gets SQLite's message"
    );
    assert_eq!(
        sql(&mut q, "SELECT nope FROM t;"),
        ["Error: no such column: nope"]
    );
    // A statement across lines runs once complete.
    assert_eq!(sql(&mut q, "SELECT count(*)\nFROM t;"), ["3"]);
    // Outgrowing the database's room (256 KiB of RAM, or the NVM area) is SQLITE_FULL:
    // the statement is undone, the tables stay.
    assert!(sql(&mut q, "CREATE TABLE big(b);").is_empty());
    assert_eq!(
        sql(
            &mut q,
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000) \
             INSERT INTO big SELECT randomblob(200) FROM c;"
        ),
        ["Error: database or disk is full"]
    );
    assert_eq!(sql(&mut q, "SELECT count(*) FROM big;"), ["0"]);
    assert_eq!(sql(&mut q, "PRAGMA integrity_check;"), ["ok"]);
    // Acknowledged (the prompt came back): a power cut now loses nothing.
    q.kill();
    let mut q = Qemu::boot(&machine);
    q.expect("[sqlite] sqlite>");
    assert_eq!(
        sql(&mut q, "SELECT k, v FROM t ORDER BY k;"),
        ["1|one", "2|two", "3|"],
        "{app}: the rows must survive the power cut"
    );
    assert_eq!(sql(&mut q, "PRAGMA integrity_check;"), ["ok"]);
}

#[test]
fn the_sql_shell_keeps_its_tables_across_a_power_cut_whole_system_way() {
    shell_keeps_its_tables_across_a_power_cut("sqlite");
}

#[test]
fn the_sql_shell_keeps_its_tables_across_a_power_cut_journal_way() {
    shell_keeps_its_tables_across_a_power_cut("sqlite-journal");
}

/// `cargo xtask run --app sqlite` (the built image) on the NVM image `nvm`.
fn xtask_run_sqlite(nvm: &std::path::Path) -> Qemu {
    let mut cmd = Command::new(xtask());
    cmd.args(["run", "--app", "sqlite", "--no-build", "--nvm"])
        .arg(nvm);
    Qemu::spawn(cmd)
}

/// Cuts the power of the QEMU that `xtask run` (`q`) started: SIGKILL, then xtask ends.
fn cut_power_under_xtask(q: &mut Qemu) {
    let pid = q.id();
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"));
    for child in children.unwrap_or_default().split_whitespace() {
        let _ = Command::new("kill").args(["-9", child]).status();
    }
    q.kill();
}

#[test]
fn cargo_xtask_run_app_sqlite_takes_piped_sql_and_keeps_its_rows_across_a_power_cut() {
    let nvm = scratch("sqlite-xtask-run").join("nvm.img");
    let mut q = xtask_run_sqlite(&nvm);
    q.expect("[sqlite] SQLite 3.");
    // A script arrives at once, as from a pipe: the kernel's input queue holds the
    // sender back while the shell works through it.
    let mut script = String::from("CREATE TABLE seeds(n INTEGER, name TEXT);\n");
    for i in 0..100 {
        script.push_str(&format!(
            "INSERT INTO seeds VALUES ({i}, 'seed number {i}');\n"
        ));
    }
    script.push_str("SELECT count(*), sum(n) FROM seeds;\n");
    q.send(script.as_bytes());
    q.expect("[sqlite] 100|4950");
    assert!(
        !q.transcript().contains("bytes dropped"),
        "the input queue must hold the sender back, never drop a byte"
    );
    cut_power_under_xtask(&mut q);
    let mut q = xtask_run_sqlite(&nvm);
    q.expect("[sqlite] sqlite>");
    assert_eq!(
        sql(
            &mut q,
            "SELECT name FROM seeds WHERE n IN (0, 99) ORDER BY n;"
        ),
        ["seed number 0", "seed number 99"]
    );
    cut_power_under_xtask(&mut q);
}

#[test]
fn the_benchmark_workload_runs_every_phase_on_both_ways() {
    for (app, journal) in [("sqlite-bench", false), ("sqlite-bench-journal", true)] {
        let mut q = Qemu::boot(&app_machine(app));
        let mut phases = Vec::new();
        loop {
            let line = q.expect_within("[sqlite] sqlite-bench: ", GUEST_TIMEOUT);
            if line.contains("sqlite-bench: done") {
                break;
            }
            if line.contains("sqlite-bench: begin ") {
                continue;
            }
            let txns = number_after(&line, " txns ").expect("txns");
            let bytes = number_after(&line, " vfs-nvm-bytes ").expect("vfs-nvm-bytes");
            assert!(
                number_after(&line, " instructions ").unwrap_or(0) > 0,
                "{line}"
            );
            assert_eq!(
                bytes > 0,
                journal && txns > 0,
                "only the journal way writes NVM through its VFS, and only to commit: {line}"
            );
            phases.push(line);
        }
        assert_eq!(phases.len(), 7, "{app}: {phases:#?}");
    }
}

#[test]
fn a_c_tasks_bad_syscall_arguments_get_the_abis_error_codes() {
    use amber_abi::Error;
    let mut q = Qemu::boot(&app_machine("ccounter"));
    let line = q.expect("ccounter: abi errors ");
    let want = format!(
        "ccounter: abi errors {} {} {} {} {} ({})",
        Error::BadPointer as u32,
        Error::TooLong as u32,
        Error::BadSyscall as u32,
        Error::BadSlot as u32,
        Error::EmptySlot as u32,
        Error::BadPointer.describe()
    );
    assert!(line.ends_with(&want), "{line}\nwanted {want}");
    q.expect("ccounter: 1000 committed");
}

/// What a crash workload's console lines must satisfy; returns a violation, if any.
trait Check {
    fn line(&mut self, line: &str) -> Option<String>;
    /// Progress so far (must grow).
    fn progress(&self) -> u64;
    /// The figures of the summary line beyond the harness's own.
    fn figures(&self) -> String;
}

/// The ccounter app: printed counts never go back.
#[derive(Default)]
struct Counter {
    last: u64,
}

impl Check for Counter {
    fn line(&mut self, line: &str) -> Option<String> {
        if line.contains("VIOLATION") || line.contains("; task ended") {
            return Some(line.to_owned());
        }
        let n = number_after(line, "ccounter: ")?;
        if n < self.last {
            return Some(format!("ccounter printed {n} after {}", self.last));
        }
        self.last = n;
        None
    }

    fn progress(&self) -> u64 {
        self.last
    }

    fn figures(&self) -> String {
        format!("count {} reached", self.last)
    }
}

/// SQLite's crash workload: every recovery checked by the task (integrity, whole
/// transactions), and what it recovered between the last acknowledged transaction and
/// the one after it.
#[derive(Default)]
struct Transactions {
    acknowledged: u64,
    integrity_checks: u64,
}

impl Check for Transactions {
    fn line(&mut self, line: &str) -> Option<String> {
        if line.contains("VIOLATION") || line.contains("; task ended") {
            return Some(line.to_owned());
        }
        if let Some(t) = number_after(line, "sqlite: committed ") {
            self.acknowledged = self.acknowledged.max(t);
        }
        // A line a cut ended halfway is not a report (the task prints VIOLATION on
        // its own line when a check fails).
        if let Some(t) = number_after(line, "sqlite: recovered ")
            .filter(|_| line.ends_with("transactions, integrity ok"))
        {
            self.integrity_checks += 1;
            if t < self.acknowledged {
                return Some(format!(
                    "recovered {t} transactions after {} were acknowledged",
                    self.acknowledged
                ));
            }
            if t > self.acknowledged + 1 {
                return Some(format!(
                    "recovered {t} transactions: more than the {} acknowledged and the one \
                     being committed",
                    self.acknowledged
                ));
            }
        }
        None
    }

    fn progress(&self) -> u64 {
        if self.integrity_checks < 2 {
            0
        } else {
            self.acknowledged
        }
    }

    fn figures(&self) -> String {
        format!(
            "{} integrity checks ok, {} transactions acknowledged",
            self.integrity_checks, self.acknowledged
        )
    }
}

/// `cycles()` crash-and-reboot cycles of `app` on one NVM image: even cycles end by
/// SIGKILL at a random instant, odd ones at a chosen NVM store among the first
/// `stores` after boot (torn after a random number of bytes).
/// Returns nvm-inspect's description of the image after the last cut.
fn crash_cycles(app: &str, what: &str, stores: u64, check: &mut dyn Check) -> String {
    let total = cycles();
    let mut rng = Rng::from_env(app);
    let machine = app_machine(app);
    let image = machine
        .nvm
        .as_ref()
        .expect("apps boot with an NVM")
        .0
        .clone();
    let (mut sigkills, mut store_cuts, mut recoveries, mut cuts_in_boot) = (0, 0, 0, 0);
    let mut inspected = String::new();
    for cycle in 0..total {
        let by_store = cycle % 2 == 1;
        let mut m = machine.clone();
        if by_store {
            m.bootargs = format!("amber.cut={}:{}", 1 + rng.below(stores), rng.below(9));
        }
        let mut q = Qemu::boot(&m);
        let fail =
            |q: &Qemu, why: &str| -> ! { panic!("{app} cycle {cycle}: {why}\n{}", q.transcript()) };
        let until = Instant::now() + GUEST_TIMEOUT;
        let mut booted = false;
        while let Some(line) = q.next_line(until.saturating_duration_since(Instant::now())) {
            if line.contains("KERNEL PANIC") || line.contains("refusing") {
                fail(&q, "boot failed");
            }
            if line.contains("recovered checkpoint") {
                recoveries += 1;
            }
            if line.contains("recovered checkpoint") || line.contains("fresh start") {
                booted = true;
                break;
            }
        }
        if !booted {
            if by_store {
                cuts_in_boot += 1;
            } else {
                fail(&q, "no recovery");
            }
        }
        let deadline = Instant::now()
            + if by_store {
                GUEST_TIMEOUT
            } else {
                Duration::from_millis(100 + rng.below(400))
            };
        while booted && Instant::now() < deadline {
            let Some(line) = q.next_line(deadline.saturating_duration_since(Instant::now())) else {
                break;
            };
            if let Some(why) = check.line(&line) {
                fail(&q, &format!("invariant broken: {why}"));
            }
            if line.contains("KERNEL PANIC") {
                fail(&q, "kernel panic");
            }
        }
        std::thread::sleep(Duration::from_millis(20));
        let cut_fired = q.try_exit_code() == Some(ExitCode::PowerCut.code());
        q.kill();
        // What the guest printed before the cut counts too: an acknowledgement the
        // harness did not read would make the next recovery look too far ahead.
        while let Some(line) = q.next_line(Duration::from_millis(500)) {
            if let Some(why) = check.line(&line) {
                fail(&q, &format!("invariant broken: {why}"));
            }
        }
        if by_store && cut_fired {
            store_cuts += 1;
        } else {
            sigkills += 1;
        }
        let report = nvm_inspect::inspect(&std::fs::read(&image).expect("the NVM image"));
        assert!(
            report.is_consistent(),
            "{app} cycle {cycle}: nvm-inspect after the cut: {:?}\n{}",
            report.problems,
            report.text
        );
        inspected = report.text;
    }
    let figures = format!(
        "{total} cycles ({sigkills} SIGKILL, {store_cuts} cuts at a chosen store, \
         {cuts_in_boot} of them before recovery finished), {recoveries} recoveries, {}, \
         violations: 0",
        check.figures()
    );
    eprintln!("crash test {app}: {figures}");
    assert!(
        recoveries > 0,
        "{app}: no cycle recovered from a checkpoint"
    );
    assert!(store_cuts > 0, "{app}: no injected store cut fired");
    assert!(
        check.progress() > 0,
        "{app}: no progress over {total} cycles"
    );
    record(&format!("crash cycles, {what} (QEMU): {figures}"));
    inspected
}

#[test]
fn the_c_example_apps_committed_count_only_grows_across_power_cuts() {
    let _ = crash_cycles(
        "ccounter",
        "C example app ccounter",
        400,
        &mut Counter::default(),
    );
}

#[test]
fn sqlite_whole_system_way_keeps_every_acknowledged_transaction_and_nothing_after() {
    let _ = crash_cycles(
        "sqlite-crash",
        "SQLite, whole-system way (app sqlite-crash)",
        400,
        &mut Transactions::default(),
    );
}

#[test]
fn sqlite_journal_way_keeps_every_acknowledged_transaction_and_nothing_after() {
    // The VFS's NVM writes are numbered with the kernel's stores (it writes through
    // NvmWrite): the chosen stores reach well into the workload's transactions.
    let inspected = crash_cycles(
        "sqlite-crash-journal",
        "SQLite, its own journal on NVM (app sqlite-crash-journal)",
        4000,
        &mut Transactions::default(),
    );
    // nvm-inspect reads the VFS's size records as vfs.c writes them.
    assert!(
        inspected.contains("FRAM: SQLite files (size record ")
            && inspected.contains(" pages of 512)"),
        "{inspected}"
    );
}
