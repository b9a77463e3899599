//! Reads the figures out of the lines the benchmark guests print: the bench app's
//! syscall and IPC means, the checkpoint benchmark's rows and recovery, the kernel's
//! checkpoint summary after 500 checkpoints, the heap benchmark's lines and the
//! key-value benchmark's records. Each reader knows the shape of its lines and fails
//! naming a line it cannot read, so a guest that changes what it prints fails the
//! bench instead of dropping a figure quietly.
//!
//! This file only reads; it must never invent or adjust a figure.

use super::figure::{slug, Figure, Unit};

/// The number at the start of `text` (digits, one optional fraction).
fn leading_number(text: &str) -> Option<f64> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    text[..end].trim_end_matches('.').parse().ok()
}

/// The number right after the first `key` in `text`.
pub fn number_after(text: &str, key: &str) -> Option<f64> {
    let (_, rest) = text.split_once(key)?;
    leading_number(rest)
}

/// The number right before the first ` key` in `text` (the word before it).
fn number_before(text: &str, key: &str) -> Option<f64> {
    let (before, _) = text.split_once(key)?;
    before.trim_end().rsplit([' ', '(']).next()?.parse().ok()
}

/// The text of a guest line after `marker` (e.g. `bench:`), trimmed.
fn after<'a>(line: &'a str, marker: &str) -> Result<&'a str, String> {
    line.split_once(marker)
        .map(|(_, rest)| rest.trim())
        .ok_or_else(|| format!("a line without `{marker}`: {line}"))
}

fn unreadable(what: &str, line: &str) -> String {
    format!("a {what} line the bench cannot read: {}", line.trim_end())
}

/// The bench app's four means: the name it prints before the figure, and the id.
const BENCH_MEANS: [(&str, &str); 4] = [
    ("null syscall", "null"),
    ("IPC round trip", "ipc-round-trip"),
    ("IPC round trip with 64 B each way", "ipc-64b-descriptors"),
    (
        "IPC round trip with 64 B each way through IPC buffers",
        "ipc-64b-buffers",
    ),
];

/// `bench: NAME N instructions (HOW)`, one line per mean: `syscall.ID.mean`.
pub fn bench_app(lines: &[String]) -> Result<Vec<Figure>, String> {
    let mut out = Vec::new();
    for line in lines {
        let text = after(line, "bench:")?;
        let (head, tail) = text
            .split_once(" instructions")
            .ok_or_else(|| format!("a benchmark printed no figure: {}", line.trim_end()))?;
        let (name, n) = head
            .rsplit_once(' ')
            .ok_or_else(|| unreadable("bench", line))?;
        let value: f64 = n.parse().map_err(|_| unreadable("bench", line))?;
        let id = BENCH_MEANS
            .iter()
            .find(|(printed, _)| *printed == name)
            .map(|(_, id)| *id)
            .ok_or_else(|| {
                format!("the bench app printed a figure the bench does not know: {name}")
            })?;
        out.push(Figure::new(
            &["syscall", id, "mean"],
            format!("{name}{tail}"),
            value,
            Unit::Instructions,
        )?);
    }
    for (name, id) in BENCH_MEANS {
        if !out.iter().any(|f| f.id == format!("syscall.{id}.mean")) {
            return Err(format!("the bench app printed no figure for `{name}`"));
        }
    }
    Ok(out)
}

/// The checkpoint benchmark's lines (`amber.test=ckpt-bench`): per scenario its pause
/// and NVM bytes, those of the idle checkpoint after it (which writes the twins) and
/// those of a full copy of the same system; then the recovery.
pub fn ckbench(lines: &[String]) -> Result<Vec<Figure>, String> {
    let mut out = Vec::new();
    let mut scenario: Option<String> = None;
    let number = |field: &str, line: &str| {
        leading_number(field.trim()).ok_or_else(|| unreadable("ckbench", line))
    };
    for line in lines {
        let text = after(line, "ckbench:")?;
        if text.starts_with("scenario |") || text.contains("twins of what it wrote") {
            continue;
        }
        if let Some(rest) = text.strip_prefix("recovery of ") {
            let validate = number_before(rest, " instructions to validate")
                .ok_or_else(|| unreadable("ckbench", line))?;
            let read = number_before(rest, " instructions to read every item back")
                .ok_or_else(|| unreadable("ckbench", line))?;
            let what = rest.split_once(':').map_or(rest, |(w, _)| w);
            out.push(Figure::new(
                &["checkpoint", "recovery", "validate"],
                format!("recovery of {what}: validate every copy and rebuild the allocator"),
                validate,
                Unit::Instructions,
            )?);
            out.push(Figure::new(
                &["checkpoint", "recovery", "read-back"],
                format!("recovery of {what}: read every item back"),
                read,
                Unit::Instructions,
            )?);
            continue;
        }
        let fields: Vec<&str> = text.split(" | ").collect();
        if let Some(twins) = text.strip_prefix("then, nothing dirty:") {
            let name = scenario
                .as_deref()
                .ok_or_else(|| unreadable("ckbench", line))?;
            let [_, pause, _, nvm] = fields[..] else {
                return Err(unreadable("ckbench", line));
            };
            let twins = twins.split(" | ").next().unwrap_or("").trim();
            for (measure, value, unit, what) in [
                ("twins-pause", pause, Unit::Instructions, "pause"),
                ("twins-nvm-bytes", nvm, Unit::Bytes, "NVM bytes"),
            ] {
                out.push(Figure::new(
                    &["checkpoint", &slug(name), measure],
                    format!("{name}: the next idle checkpoint ({twins}), {what}"),
                    number(value, line)?,
                    unit,
                )?);
            }
            continue;
        }
        let [name, pause, _, nvm, _] = fields[..] else {
            return Err(unreadable("ckbench", line));
        };
        let (name, full) = match name.strip_suffix(", full copy") {
            Some(n) => (n, true),
            None => (name, false),
        };
        let (pause_id, nvm_id, how) = if full {
            ("full-copy-pause", "full-copy-nvm-bytes", "full copy")
        } else {
            ("pause", "nvm-bytes", "checkpoint")
        };
        out.push(Figure::new(
            &["checkpoint", &slug(name), pause_id],
            format!("{name}: {how} pause"),
            number(pause, line)?,
            Unit::Instructions,
        )?);
        out.push(Figure::new(
            &["checkpoint", &slug(name), nvm_id],
            format!("{name}: {how} NVM bytes written"),
            number(nvm, line)?,
            Unit::Bytes,
        )?);
        scenario = Some(name.to_owned());
    }
    Ok(out)
}

/// The kernel's summary after its checkpoints (`checkpoints: 500 since boot, ... mean
/// pause P instructions, mean B NVM bytes [(W FRAM wire bytes)] for D data bytes`):
/// `part.run.pause`, `.nvm-bytes` and, on the SPI bus, `.wire-bytes`.
pub fn checkpoint_summary(line: &str, part: &str, run: &str) -> Result<Vec<Figure>, String> {
    let bad = || unreadable("checkpoint summary", line);
    let count = number_after(line, "checkpoints: ").ok_or_else(bad)?;
    let mut out = vec![
        Figure::new(
            &[part, run, "pause"],
            format!("{run}: mean checkpoint pause over {count} checkpoints"),
            number_after(line, "mean pause ").ok_or_else(bad)?,
            Unit::Instructions,
        )?,
        Figure::new(
            &[part, run, "nvm-bytes"],
            format!("{run}: mean NVM bytes per checkpoint"),
            number_before(line, " NVM bytes").ok_or_else(bad)?,
            Unit::Bytes,
        )?,
    ];
    if line.contains(" FRAM wire bytes") {
        out.push(Figure::new(
            &[part, run, "wire-bytes"],
            format!("{run}: mean FRAM wire bytes per checkpoint"),
            number_before(line, " FRAM wire bytes").ok_or_else(bad)?,
            Unit::Bytes,
        )?);
    }
    Ok(out)
}

/// The heap benchmark's lines (app `app`): best-case pins by object size, releases,
/// swap-ins of an object not cached, and FRAM words written per checkpoint.
pub fn heapbench(lines: &[String], app: &str) -> Result<Vec<Figure>, String> {
    let mut out = Vec::new();
    for line in lines {
        let text = after(line, "heapbench:")?;
        if text == "done" {
            continue;
        }
        let bad = || unreadable("heapbench", line);
        let (head, rest) = text.split_once(": ").ok_or_else(bad)?;
        let mut push = |subject: &str, measure: &str, label: String, v: Option<f64>, unit| {
            out.push(Figure::new(
                &["heap", app, subject, measure],
                label,
                v.ok_or_else(bad)?,
                unit,
            )?);
            Ok::<(), String>(())
        };
        let (service, library) = rest.split_once(", library ").unwrap_or((rest, ""));
        if let Some(object) = head.strip_prefix("dirty limit ") {
            let subject = "fram-words-per-checkpoint";
            let of = format!("FRAM words per checkpoint, dirty limit {object}");
            push(
                subject,
                "mean",
                format!("{of}: mean"),
                number_after(rest, "per checkpoint mean "),
                Unit::Words,
            )?;
            push(
                subject,
                "max",
                format!("{of}: max"),
                number_after(rest, " max "),
                Unit::Words,
            )?;
            push(
                subject,
                "persist-mean",
                format!("{of}: by the persist, mean"),
                number_after(rest, "(persist "),
                Unit::Words,
            )?;
            push(
                subject,
                "write-back-mean",
                format!("{of}: by eviction write-backs, mean"),
                number_after(rest, "write-back "),
                Unit::Words,
            )?;
            push(
                subject,
                "largest-persist",
                format!("{of}: the largest persist"),
                number_after(rest, "largest persist "),
                Unit::Words,
            )?;
        } else if let Some((op, _)) = head.split_once(" not cached") {
            let subject = format!("{}-not-cached", slug(op));
            for (side, text) in [("service", service), ("library", library)] {
                for m in ["mean", "max"] {
                    push(
                        &subject,
                        &format!("{side}-{m}"),
                        format!("{op} not cached (a swap-in from the FRAM), {side}, {m} of 20"),
                        number_after(text, &format!("{m} ")),
                        Unit::Instructions,
                    )?;
                }
            }
        } else if head.starts_with("release ") {
            let subject = slug(head);
            for (side, text) in [("service", service), ("library", library)] {
                for pin in ["read", "write"] {
                    push(
                        &subject,
                        &format!("{side}-{pin}-pin"),
                        format!("{head}: {side}, {pin} pin (mean of 200)"),
                        number_after(text, &format!("{pin} pin ")),
                        Unit::Instructions,
                    )?;
                }
            }
        } else if head.starts_with("get_ref ") || head.starts_with("get_mut ") {
            let subject = slug(head);
            push(
                &subject,
                "service",
                format!("{head}, object cached: service (mean of 200)"),
                number_after(service, "service "),
                Unit::Instructions,
            )?;
            push(
                &subject,
                "library",
                format!("{head}, object cached: library (mean of 200)"),
                leading_number(library),
                Unit::Instructions,
            )?;
        } else {
            return Err(bad());
        }
    }
    Ok(out)
}

/// The key-value benchmark's records (`store=S workload=W ops=N instructions=I ...
/// written=B ... ram_state=R ram_buffer=F ...`): per store and workload the
/// instructions of the store's calls (the emulated chips' own left out) and the
/// device bytes written; per store its RAM.
pub fn kvbench(lines: &[String]) -> Result<Vec<Figure>, String> {
    let mut out: Vec<Figure> = Vec::new();
    for line in lines {
        let text = after(line, "kvbench:")?;
        if text == "done" {
            continue;
        }
        let bad = || unreadable("kvbench", line);
        let field = |key: &str| {
            text.split_whitespace()
                .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
                .ok_or_else(bad)
        };
        let number = |key: &str| field(key)?.parse::<f64>().map_err(|_| bad());
        let (store, workload) = (field("store")?, field("workload")?);
        let ops = number("ops")?;
        out.push(Figure::new(
            &["kv", store, workload, "instructions"],
            format!("{store}, {workload}: instructions of {ops} operations"),
            number("instructions")?,
            Unit::Instructions,
        )?);
        out.push(Figure::new(
            &["kv", store, workload, "written"],
            format!("{store}, {workload}: device bytes written by {ops} operations"),
            number("written")?,
            Unit::Bytes,
        )?);
        if !out.iter().any(|f| f.id == format!("kv.{store}.ram-state")) {
            out.push(Figure::new(
                &["kv", store, "ram-state"],
                format!("{store}: RAM the store keeps"),
                number("ram_state")?,
                Unit::Bytes,
            )?);
            out.push(Figure::new(
                &["kv", store, "ram-buffer"],
                format!("{store}: RAM an operation uses (stack or buffer)"),
                number("ram_buffer")?,
                Unit::Bytes,
            )?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    fn value(figures: &[Figure], id: &str) -> f64 {
        figures
            .iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("no figure {id} in {figures:#?}"))
            .value
    }

    #[test]
    fn the_bench_apps_four_means_are_read_by_name() {
        let lines = owned(&[
            "[   0.009 INFO ] [bench] bench: null syscall 132 instructions (mean of 1000)",
            "[   0.009 INFO ] [bench] bench: IPC round trip 989 instructions (Call + ReplyRecv, 4 words, two task switches, mean of 1000)",
            "[   0.009 INFO ] [bench] bench: IPC round trip with 64 B each way 1702 instructions (Call + ReplyRecv, mean of 1000)",
            "[   0.009 INFO ] [bench] bench: IPC round trip with 64 B each way through IPC buffers 1381 instructions (mean of 1000)",
        ]);
        let f = bench_app(&lines).unwrap();
        assert_eq!(value(&f, "syscall.null.mean"), 132.0);
        assert_eq!(value(&f, "syscall.ipc-round-trip.mean"), 989.0);
        assert_eq!(value(&f, "syscall.ipc-64b-descriptors.mean"), 1702.0);
        assert_eq!(value(&f, "syscall.ipc-64b-buffers.mean"), 1381.0);
        assert_eq!(f[0].label, "null syscall (mean of 1000)");
        // One missing, one that did not measure, one unknown: each fails by name.
        assert!(bench_app(&lines[..3])
            .unwrap_err()
            .contains("through IPC buffers"));
        let failed = owned(&[
            "[bench] bench: IPC round trip with 64 B each way: not measured (the Call failed)",
        ]);
        assert!(bench_app(&failed)
            .unwrap_err()
            .contains("not measured (the Call failed)"));
        let unknown = owned(&["[bench] bench: IPC one way 500 instructions (x)"]);
        assert!(bench_app(&unknown).unwrap_err().contains("IPC one way"));
    }

    #[test]
    fn the_checkpoint_rows_give_pause_and_bytes_with_their_twins_and_full_copy() {
        let lines = owned(&[
            "[   0.000 INFO ] ckbench: scenario | pause | dirty data bytes | NVM bytes | NVM/dirty",
            "[   0.000 INFO ] ckbench:   then, nothing dirty: twins of what it wrote | pause | twin bytes | NVM bytes",
            "[   0.002 INFO ] ckbench: 1 dirty kernel object | 8226 instructions | 182 | 274 | 1.505",
            "[   0.002 INFO ] ckbench:   then, nothing dirty: 1 twins | 8235 instructions | 182 | 274",
            "[   0.003 INFO ] ckbench: 1 dirty kernel object, full copy | 281699 instructions | 20320 | 20684 | 1.018",
            "[   0.015 INFO ] ckbench: recovery of 18 items (20320 bytes): 684660 instructions to validate and rebuild, 240683 instructions to read every item back",
        ]);
        let f = ckbench(&lines).unwrap();
        assert_eq!(f.len(), 8);
        let k = "checkpoint.1-dirty-kernel-object";
        assert_eq!(value(&f, &format!("{k}.pause")), 8226.0);
        assert_eq!(value(&f, &format!("{k}.nvm-bytes")), 274.0);
        assert_eq!(value(&f, &format!("{k}.twins-pause")), 8235.0);
        assert_eq!(value(&f, &format!("{k}.twins-nvm-bytes")), 274.0);
        assert_eq!(value(&f, &format!("{k}.full-copy-pause")), 281699.0);
        assert_eq!(value(&f, &format!("{k}.full-copy-nvm-bytes")), 20684.0);
        assert_eq!(value(&f, "checkpoint.recovery.validate"), 684660.0);
        assert_eq!(value(&f, "checkpoint.recovery.read-back"), 240683.0);
        let garbled = owned(&["ckbench: idle | lots | 0 | 76 | 0.000"]);
        assert!(ckbench(&garbled).unwrap_err().contains("cannot read"));
    }

    #[test]
    fn the_kernels_checkpoint_summary_gives_pause_and_bytes_and_wire_bytes_on_spi() {
        let mmio = "[   4.990 INFO ] checkpoints: 500 since boot, last version 500, mean pause 90337 instructions, mean 6716 NVM bytes for 6538 data bytes";
        let f = checkpoint_summary(mmio, "memtrack", "bank-protect").unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(value(&f, "memtrack.bank-protect.pause"), 90337.0);
        assert_eq!(value(&f, "memtrack.bank-protect.nvm-bytes"), 6716.0);
        let spi = "checkpoints: 500 since boot, last version 500, mean pause 61729 instructions, mean 341 NVM bytes (349 FRAM wire bytes) for 145 data bytes";
        let f = checkpoint_summary(spi, "nvm-bus", "demo-spi").unwrap();
        assert_eq!(value(&f, "nvm-bus.demo-spi.nvm-bytes"), 341.0);
        assert_eq!(value(&f, "nvm-bus.demo-spi.wire-bytes"), 349.0);
        assert!(checkpoint_summary("checkpoints: 500 since boot", "x", "y").is_err());
    }

    #[test]
    fn every_heapbench_line_is_read() {
        let lines = owned(&[
            "[heapbench] heapbench: get_ref 4 B: service 119, library 106 instructions (mean of 200)",
            "[heapbench] heapbench: get_mut 64 B: service 113, library 103 instructions (mean of 200)",
            "[heapbench] heapbench: release 16 B: service read pin 23 write pin 20, library read pin 7 write pin 4 instructions (mean of 200)",
            "[heapbench] heapbench: get_ref 256 B not cached (read from the FRAM): service mean 61278 max 62507, library mean 38165 max 38165 instructions (20 each; for the last the service read 256 FRAM bytes, the library's driver put 259 bytes on the wire in 1 transactions)",
            "[heapbench] heapbench: dirty limit 1024 B: 100 checkpoints (100 persists), FRAM words per checkpoint mean 699.4 max 938 (persist 218.1, write-back 481.2; largest persist 250); 2000 updates of 32 objects of 64-256 B",
            "[heapbench] heapbench: done",
        ]);
        let f = heapbench(&lines, "heapbench").unwrap();
        let h = "heap.heapbench";
        assert_eq!(value(&f, &format!("{h}.get-ref-4-b.service")), 119.0);
        assert_eq!(value(&f, &format!("{h}.get-ref-4-b.library")), 106.0);
        assert_eq!(value(&f, &format!("{h}.get-mut-64-b.library")), 103.0);
        assert_eq!(
            value(&f, &format!("{h}.release-16-b.service-read-pin")),
            23.0
        );
        assert_eq!(
            value(&f, &format!("{h}.release-16-b.service-write-pin")),
            20.0
        );
        assert_eq!(
            value(&f, &format!("{h}.release-16-b.library-read-pin")),
            7.0
        );
        assert_eq!(
            value(&f, &format!("{h}.release-16-b.library-write-pin")),
            4.0
        );
        assert_eq!(
            value(&f, &format!("{h}.get-ref-256-b-not-cached.service-mean")),
            61278.0
        );
        assert_eq!(
            value(&f, &format!("{h}.get-ref-256-b-not-cached.service-max")),
            62507.0
        );
        assert_eq!(
            value(&f, &format!("{h}.get-ref-256-b-not-cached.library-mean")),
            38165.0
        );
        let w = format!("{h}.fram-words-per-checkpoint");
        assert_eq!(value(&f, &format!("{w}.mean")), 699.4);
        assert_eq!(value(&f, &format!("{w}.max")), 938.0);
        assert_eq!(value(&f, &format!("{w}.persist-mean")), 218.1);
        assert_eq!(value(&f, &format!("{w}.write-back-mean")), 481.2);
        assert_eq!(value(&f, &format!("{w}.largest-persist")), 250.0);
        assert_eq!(f.len(), 2 + 2 + 4 + 4 + 5);
        let odd = owned(&["[heapbench] heapbench: get_ref 4 B: service failed"]);
        assert!(heapbench(&odd, "heapbench")
            .unwrap_err()
            .contains("cannot read"));
    }

    #[test]
    fn kvbench_records_give_instructions_and_bytes_and_the_stores_ram_once() {
        let lines = owned(&[
            "[kvbench] kvbench: store=kv-lpht-spi workload=put-uniform-4 ops=10000 instructions=20675993 emulation=39589465 transactions=40316 wire=333792 written=40000 programs=0 erases=0 halfwords=0 ram_state=40 ram_buffer=328 ticks=7",
            "[kvbench] kvbench: store=kv-lpht-spi workload=scan-16 ops=10000 instructions=12233879 emulation=42832756 transactions=25360 wire=384320 written=0 programs=0 erases=0 halfwords=0 ram_state=40 ram_buffer=328 ticks=6",
            "[kvbench] kvbench: done",
        ]);
        let f = kvbench(&lines).unwrap();
        assert_eq!(f.len(), 2 + 2 + 2);
        assert_eq!(
            value(&f, "kv.kv-lpht-spi.put-uniform-4.instructions"),
            20675993.0
        );
        assert_eq!(value(&f, "kv.kv-lpht-spi.scan-16.written"), 0.0);
        assert_eq!(value(&f, "kv.kv-lpht-spi.ram-buffer"), 328.0);
        let short = owned(&["[kvbench] kvbench: store=x workload=y ops=1"]);
        assert!(kvbench(&short).unwrap_err().contains("cannot read"));
    }
}
