//! Boot options: the `amber.*` words of the kernel command line (`/chosen/bootargs`).
//!
//! | option                 | meaning                                                  |
//! |------------------------|----------------------------------------------------------|
//! | `amber.format`         | format the NVM whatever it holds (xtask `run --format`)  |
//! | `amber.log=LEVEL`      | `error`, `warn`, `info` (default), `debug` or `trace`    |
//! | `amber.test=idle`      | exit with success after 10 timer ticks and one UART byte |
//! | `amber.test=nvm-stress`| rewrite the boot record forever, printing the count      |
//! | `amber.test=panic`     | panic on purpose (tests the panic path)                  |
//! | `amber.test=ckpt-bench`| measure checkpoint and recovery cost (formats the area!) |
//! | `amber.cut=K` or `K:B` | power cut: stop at the K-th NVM store since boot (from 1), |
//! |                        | after writing its first B bytes (default 0)              |
//! | `amber.memtrack=MODE`  | task memory dirty tracking: `protect` (PMP write-protect, |
//! |                        | first store traps; default) or `copy` (copy every checkpoint) |
//! | `amber.pfi=V`          | power-failure interrupt when checkpoint V (from 2) is due: |
//! |                        | it joins V's persist phase, as a PFI arriving then would |
//! | `amber.icount`         | QEMU runs with `-icount`: `minstret` counts instructions |
//! |                        | exactly (amber-qemu adds it); without it costs are host time |
//!
//! Words that do not start with `amber.` belong to someone else and are ignored; an
//! `amber.` word this file does not know is an error, so a typo never goes unnoticed.
//! Parsing must never panic, whatever the command line holds.

use core::fmt;
use log::LevelFilter;

/// What the kernel does after boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Boot and idle.
    Normal,
    /// Prove that timer and external interrupts arrive, then exit with success.
    IdleTest,
    /// Rewrite NVM in a loop, for power-cut tests.
    NvmStress,
    /// Panic on purpose.
    PanicTest,
    /// Measure checkpoints on synthetic systems (formats the checkpoint area).
    CkptBench,
}

/// How checkpoints find the task memory that changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemTrack {
    /// After each checkpoint PMP makes task RAM read-only; the first store traps and
    /// marks it dirty. Clean memory is not copied.
    Protect,
    /// Every checkpoint copies all task RAM.
    Copy,
}

/// A power cut injected at an NVM store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutAt {
    /// The store (counted from 1 since boot) that is torn.
    pub store: u64,
    /// Bytes of that store that reach NVM.
    pub keep: usize,
}

/// The parsed options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootArgs {
    pub format: bool,
    pub log: LevelFilter,
    pub mode: Mode,
    pub cut: Option<CutAt>,
    pub memtrack: MemTrack,
    /// Raise the power-failure interrupt when this checkpoint version is due.
    pub pfi: Option<u64>,
    /// The instruction counter is exact (QEMU `-icount`).
    pub icount: bool,
}

impl Default for BootArgs {
    fn default() -> Self {
        BootArgs {
            format: false,
            log: LevelFilter::Info,
            mode: Mode::Normal,
            cut: None,
            memtrack: MemTrack::Protect,
            pfi: None,
            icount: false,
        }
    }
}

/// A command line word the kernel refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootArgError<'a> {
    /// An `amber.` option that does not exist.
    UnknownOption(&'a str),
    /// A known option with a value it does not take.
    BadValue { option: &'a str, value: &'a str },
}

impl fmt::Display for BootArgError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BootArgError::UnknownOption(o) => write!(f, "unknown boot option `{o}`"),
            BootArgError::BadValue { option, value } => {
                write!(
                    f,
                    "boot option `{option}` does not take the value `{value}`"
                )
            }
        }
    }
}

/// Parses a kernel command line.
pub fn parse(cmdline: &str) -> Result<BootArgs, BootArgError<'_>> {
    let mut args = BootArgs::default();
    for word in cmdline.split_ascii_whitespace() {
        let Some(option) = word.strip_prefix("amber.") else {
            continue;
        };
        let (name, value) = match option.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (option, None),
        };
        let bad = || BootArgError::BadValue {
            option: word,
            value: value.unwrap_or(""),
        };
        match (name, value) {
            ("format", None) => args.format = true,
            ("icount", None) => args.icount = true,
            ("log", Some(v)) => args.log = v.parse().map_err(|_| bad())?,
            ("test", Some("idle")) => args.mode = Mode::IdleTest,
            ("test", Some("nvm-stress")) => args.mode = Mode::NvmStress,
            ("test", Some("panic")) => args.mode = Mode::PanicTest,
            ("test", Some("ckpt-bench")) => args.mode = Mode::CkptBench,
            ("cut", Some(v)) => args.cut = Some(parse_cut(v).ok_or_else(bad)?),
            ("memtrack", Some("protect")) => args.memtrack = MemTrack::Protect,
            ("memtrack", Some("copy")) => args.memtrack = MemTrack::Copy,
            ("pfi", Some(v)) => {
                args.pfi = Some(v.parse().ok().filter(|&v: &u64| v >= 2).ok_or_else(bad)?)
            }
            ("format" | "icount" | "log" | "test" | "cut" | "memtrack" | "pfi", _) => {
                return Err(bad())
            }
            _ => return Err(BootArgError::UnknownOption(word)),
        }
    }
    Ok(args)
}

/// `K` or `K:B`, with K >= 1.
fn parse_cut(v: &str) -> Option<CutAt> {
    let (k, b) = match v.split_once(':') {
        Some((k, b)) => (k, b.parse().ok()?),
        None => (v, 0),
    };
    let store: u64 = k.parse().ok()?;
    (store >= 1).then_some(CutAt { store, keep: b })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_command_line_gives_the_defaults() {
        assert_eq!(parse(""), Ok(BootArgs::default()));
    }

    #[test]
    fn every_documented_option_is_understood() {
        let a = parse("console=ttyS0 amber.format amber.log=debug amber.test=nvm-stress").unwrap();
        assert!(a.format);
        assert_eq!(a.log, LevelFilter::Debug);
        assert_eq!(a.mode, Mode::NvmStress);
        assert_eq!(parse("amber.test=idle").unwrap().mode, Mode::IdleTest);
        assert_eq!(parse("amber.test=panic").unwrap().mode, Mode::PanicTest);
        assert!(parse("amber.icount").unwrap().icount);
        assert!(
            !parse("").unwrap().icount,
            "costs are host time unless told"
        );
    }

    #[test]
    fn typos_and_bad_values_are_refused_by_name() {
        assert_eq!(
            parse("amber.fromat"),
            Err(BootArgError::UnknownOption("amber.fromat"))
        );
        assert_eq!(
            parse("amber.test=fly"),
            Err(BootArgError::BadValue {
                option: "amber.test=fly",
                value: "fly"
            })
        );
        assert!(parse("amber.log=loud").is_err());
        assert!(parse("amber.format=yes").is_err(), "format takes no value");
        assert!(parse("amber.icount=1").is_err(), "icount takes no value");
        assert!(parse("amber.test").is_err(), "test needs a value");
        assert!(parse("amber.cut=0").is_err(), "stores count from 1");
        assert!(parse("amber.cut=x:1").is_err());
        assert!(parse("amber.memtrack=sometimes").is_err());
        assert!(
            parse("amber.pfi=1").is_err(),
            "checkpoint 1 is the fresh start"
        );
        assert!(parse("amber.pfi").is_err());
    }

    #[test]
    fn power_cuts_and_memory_tracking_are_understood() {
        let a = parse("amber.cut=120:3 amber.memtrack=copy").unwrap();
        assert_eq!(
            a.cut,
            Some(CutAt {
                store: 120,
                keep: 3
            })
        );
        assert_eq!(a.memtrack, MemTrack::Copy);
        assert_eq!(
            parse("amber.cut=7").unwrap().cut,
            Some(CutAt { store: 7, keep: 0 })
        );
        assert_eq!(parse("").unwrap().memtrack, MemTrack::Protect);
        assert_eq!(parse("amber.pfi=42").unwrap().pfi, Some(42));
    }
}
