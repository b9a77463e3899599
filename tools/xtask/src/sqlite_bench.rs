//! `cargo xtask bench`'s SQLite part: the `sqlite-bench` apps (whole-system
//! persistence, and SQLite's own journal on NVM) under `-icount`, one table of what a
//! durable transaction costs each way (instructions, NVM bytes, ESP32-C3 time by the
//! key-value bench's device model), and whether the whole-system way reaches TreeSLS's
//! claim: at least 2x the journal's throughput on write transactions. It measures and
//! reports; it never fails on a figure.
//!
//! Each phase of the task (`user/c/tasks/sqlite/bench.c`) prints `sqlite-bench: begin
//! PHASE` and then its counts; the NVM bytes of a phase are the bytes its VFS wrote
//! (the journal way) plus those of the checkpoints the kernel logged between the two
//! lines (the whole-system way; `amber.log=debug` prints one line per checkpoint). The
//! debug lines cost instructions of their own, so the instructions come from a second
//! run without them: under `-icount` both runs do the same work.

use kv_bench_model::{seconds, Counts, Device};

/// The apps, the way each persists, and its name in the table.
const WAYS: [(&str, &str); 2] = [
    ("sqlite-bench", "whole-system"),
    ("sqlite-bench-journal", "own journal"),
];
/// What the task (named `sqlite` in both apps) prints; its last line.
const MARKER: &str = "[sqlite] sqlite-bench: ";
const DONE: &str = "[sqlite] sqlite-bench: done";
/// TreeSLS's claim: whole-system persistence at least this many times the throughput
/// of an application's own log, on write transactions.
const CLAIM: f64 = 2.0;

/// One phase of one way.
#[derive(Clone, Debug, Default, PartialEq)]
struct Phase {
    name: String,
    ops: u64,
    txns: u64,
    instructions: u64,
    nvm_bytes: u64,
}

/// The phases of a run's console `lines`: counts from the task's result lines, NVM
/// bytes from them and from the checkpoint lines between a phase's begin and result.
fn phases(lines: &[String]) -> Result<Vec<Phase>, String> {
    let mut out = Vec::new();
    let mut checkpoint_bytes = 0;
    for line in lines {
        if let Some(rest) = line.split(MARKER).nth(1) {
            if rest.starts_with("begin ") {
                checkpoint_bytes = 0;
                continue;
            }
            if rest.starts_with("done") {
                break;
            }
            let mut words = rest.split_whitespace();
            let name = words.next().unwrap_or_default().to_owned();
            let fields: Vec<&str> = words.collect();
            let field = |key: &str| -> Result<u64, String> {
                fields
                    .windows(2)
                    .find(|w| w[0] == key)
                    .and_then(|w| w[1].parse().ok())
                    .ok_or_else(|| format!("no `{key}` in the bench line `{line}`"))
            };
            out.push(Phase {
                name,
                ops: field("ops")?,
                txns: field("txns")?,
                instructions: field("instructions")?,
                nvm_bytes: field("vfs-nvm-bytes")? + checkpoint_bytes,
            });
        } else if line.contains(" DEBUG] checkpoint ") {
            let bytes = line
                .split(", ")
                .find_map(|part| part.split_once(" NVM bytes").map(|(n, _)| n))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("no NVM bytes in the checkpoint line `{line}`"))?;
            checkpoint_bytes += bytes;
        }
    }
    Ok(out)
}

/// ESP32-C3 seconds of `p` by the key-value bench's model: its instructions at
/// 160 MHz and its NVM bytes on the 40 MHz SPI bus of the FRAM (one wire byte each:
/// commands and addresses left out, so a lower bound of the device time).
fn c3_seconds(p: &Phase) -> f64 {
    seconds(
        Device::SpiFram,
        &Counts {
            ops: p.ops as f64,
            instructions: p.instructions as f64,
            wire_bytes: p.nvm_bytes as f64,
            ..Counts::default()
        },
    )
}

/// Runs both ways and prints the table and the claim's verdict.
pub fn run(
    build: impl Fn(&str) -> Result<std::path::PathBuf, String>,
    console: impl Fn(&std::path::Path, &str, &str) -> Result<Vec<String>, String>,
) -> Result<(), String> {
    println!("== SQLite: whole-system persistence vs its own journal on NVM (sqlite-bench apps, -icount) ==");
    let mut ways = Vec::new();
    for (app, way) in WAYS {
        let kernel = build(app)?;
        let timed = phases(&console(&kernel, "", DONE)?)?;
        let counted = phases(&console(&kernel, "amber.log=debug", DONE)?)?;
        if timed.len() != counted.len() || timed.is_empty() {
            return Err(format!("{app}: the two runs printed other phases"));
        }
        let merged: Vec<Phase> = timed
            .into_iter()
            .zip(counted)
            .map(|(t, c)| Phase {
                nvm_bytes: c.nvm_bytes,
                ..t
            })
            .collect();
        ways.push((way, merged));
    }
    println!(
        "| phase | way | ops | durable txns | instructions per op | NVM bytes per txn | ESP32-C3 µs per op |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for i in 0..ways[0].1.len() {
        for (way, phases) in &ways {
            let p = &phases[i];
            let per_txn = p
                .nvm_bytes
                .checked_div(p.txns)
                .map_or("-".to_owned(), |b| b.to_string());
            println!(
                "| {} | {way} | {} | {} | {} | {per_txn} | {:.1} |",
                p.name,
                p.ops,
                p.txns,
                p.instructions / p.ops.max(1),
                c3_seconds(p) * 1e6 / p.ops.max(1) as f64
            );
        }
    }
    let (whole, journal) = (&ways[0].1, &ways[1].1);
    let mut met = true;
    for (w, j) in whole.iter().zip(journal).filter(|(w, _)| w.txns > 0) {
        let ratio = c3_seconds(j) / c3_seconds(w);
        met &= ratio >= CLAIM;
        println!(
            "{}: whole-system {ratio:.2}x the journal's throughput on the ESP32-C3 model \
             (QEMU instructions alone: {:.2}x)",
            w.name,
            j.instructions as f64 / w.instructions as f64
        );
    }
    println!(
        "TreeSLS's claim (whole-system at least {CLAIM}x its own journal on write transactions): {}",
        if met { "met" } else { "not met" }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phases_nvm_bytes_are_its_vfs_bytes_and_the_checkpoints_logged_inside_it() {
        let lines: Vec<String> = [
            "[ 0.1 INFO ] [sqlite] sqlite-bench: begin insert-1",
            "[ 0.1 DEBUG] checkpoint 3 (request): 4 items, 9000 data bytes, 9100 NVM bytes, 12 µs",
            "[ 0.2 DEBUG] checkpoint 4 (request): 4 items, 900 data bytes, 1000 NVM bytes (1100 wire bytes), 12 µs",
            "[ 0.3 INFO ] [sqlite] sqlite-bench: insert-1 ops 2 txns 2 instructions 500 vfs-nvm-bytes 7",
            "[ 0.4 DEBUG] checkpoint 5 (request): 4 items, 900 data bytes, 50 NVM bytes, 12 µs",
            "[ 0.5 INFO ] [sqlite] sqlite-bench: begin select-point",
            "[ 0.6 INFO ] [sqlite] sqlite-bench: select-point ops 200 txns 0 instructions 80 vfs-nvm-bytes 0",
            "[ 0.7 INFO ] [sqlite] sqlite-bench: done (database 1024 bytes)",
        ]
        .map(str::to_owned)
        .to_vec();
        let p = phases(&lines).unwrap();
        assert_eq!(
            p,
            [
                Phase {
                    name: "insert-1".into(),
                    ops: 2,
                    txns: 2,
                    instructions: 500,
                    nvm_bytes: 9100 + 1000 + 7
                },
                Phase {
                    name: "select-point".into(),
                    ops: 200,
                    txns: 0,
                    instructions: 80,
                    nvm_bytes: 0
                }
            ],
            "a checkpoint between phases counts for neither"
        );
        assert!(phases(&["[sqlite] sqlite-bench: x ops 1".to_owned()]).is_err());
        assert!(
            phases(&["[ 0.0 INFO ] app sqlite-bench: SQLite benchmark".to_owned()])
                .unwrap()
                .is_empty(),
            "the kernel's line naming the app is not the task's"
        );
    }
}
