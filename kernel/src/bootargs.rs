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
//! | `amber.energy=B`       | the energy left at the power-failure interrupt lasts B   |
//! |                        | instructions: the machine dies (as at brown-out) at the first |
//! |                        | kernel NVM store after them, before it lands (`cargo xtask harvest`) |
//! | `amber.warn=N`         | power-failure interrupt at the first trap once N instructions |
//! |                        | have retired since boot (`cargo xtask harvest`)          |
//! | `amber.icount`         | QEMU runs with `-icount`: `minstret` counts instructions |
//! |                        | exactly (amber-qemu adds it; the QEMU board reads it) |
//! | `amber.nvm-bus=BUS`    | `mmio` (default) or `spi`: how the board reaches its NVM |
//! |                        | (amber-qemu adds it; the QEMU board reads it)            |
//!
//! Words that do not start with `amber.` belong to someone else and are ignored; an
//! `amber.` word this file does not know is an error, so a typo never goes unnoticed.
//! So is an option given twice (which value was meant?) and a command line that is
//! not UTF-8 (its words could not be told apart; one of them might be a typo). Parsing
//! must never panic, whatever the command line holds.

pub use amber_nvm::CutAt;
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
    /// Instructions the machine lasts after the power-failure interrupt.
    pub energy: Option<u64>,
    /// Raise the power-failure interrupt at this timer tick since boot.
    pub warn: Option<u64>,
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
            energy: None,
            warn: None,
        }
    }
}

/// A command line the kernel refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootArgError<'a> {
    /// An `amber.` option that does not exist.
    UnknownOption(&'a str),
    /// A known option with a value it does not take.
    BadValue { option: &'a str, value: &'a str },
    /// An option given twice: its two words.
    Repeated { first: &'a str, second: &'a str },
    /// The command line is not UTF-8: the first bad byte and its offset.
    NotUtf8 { byte: u8, at: usize },
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
            BootArgError::Repeated { first, second } => write!(
                f,
                "boot option `{second}` repeats `{first}`: give each option once"
            ),
            BootArgError::NotUtf8 { byte, at } => write!(
                f,
                "the boot options are not UTF-8 (byte {byte:#04x} at offset {at}); none was applied"
            ),
        }
    }
}

/// The options, in the order of [`parse`]'s table; each may be given once.
const OPTIONS: [&str; 10] = [
    "format", "icount", "log", "test", "cut", "memtrack", "pfi", "nvm-bus", "energy", "warn",
];

/// Parses a kernel command line (the bytes of `/chosen/bootargs`, without its NUL).
pub fn parse(cmdline: &[u8]) -> Result<BootArgs, BootArgError<'_>> {
    let cmdline = core::str::from_utf8(cmdline).map_err(|e| BootArgError::NotUtf8 {
        byte: cmdline[e.valid_up_to()],
        at: e.valid_up_to(),
    })?;
    let mut args = BootArgs::default();
    let mut seen: [Option<&str>; OPTIONS.len()] = [None; OPTIONS.len()];
    for word in cmdline.split_ascii_whitespace() {
        let Some(option) = word.strip_prefix("amber.") else {
            continue;
        };
        let (name, value) = match option.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (option, None),
        };
        if let Some(i) = OPTIONS.iter().position(|&o| o == name) {
            if let Some(first) = seen[i] {
                return Err(BootArgError::Repeated {
                    first,
                    second: word,
                });
            }
            seen[i] = Some(word);
        }
        let bad = || BootArgError::BadValue {
            option: word,
            value: value.unwrap_or(""),
        };
        match (name, value) {
            ("format", None) => args.format = true,
            // The board's to read (`Board::counter_exact`, `Board::nvm`): accepted, never
            // applied here.
            ("icount", None) | ("nvm-bus", Some("mmio" | "spi")) => {}
            ("log", Some(v)) => args.log = v.parse().map_err(|_| bad())?,
            ("test", Some("idle")) => args.mode = Mode::IdleTest,
            ("test", Some("nvm-stress")) => args.mode = Mode::NvmStress,
            ("test", Some("panic")) => args.mode = Mode::PanicTest,
            ("test", Some("ckpt-bench")) => args.mode = Mode::CkptBench,
            ("cut", Some(v)) => args.cut = Some(parse_cut(v).ok_or_else(bad)?),
            ("memtrack", Some("protect")) => args.memtrack = MemTrack::Protect,
            ("memtrack", Some("copy")) => args.memtrack = MemTrack::Copy,
            ("energy", Some(v)) => args.energy = Some(v.parse().map_err(|_| bad())?),
            ("warn", Some(v)) => args.warn = Some(v.parse().map_err(|_| bad())?),
            ("pfi", Some(v)) => {
                args.pfi = Some(v.parse().ok().filter(|&v: &u64| v >= 2).ok_or_else(bad)?)
            }
            (n, _) if OPTIONS.contains(&n) => return Err(bad()),
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
        assert_eq!(parse(b""), Ok(BootArgs::default()));
    }

    #[test]
    fn every_documented_option_is_understood() {
        let a = parse(b"console=ttyS0 amber.format amber.log=debug amber.test=nvm-stress").unwrap();
        assert!(a.format);
        assert_eq!(a.log, LevelFilter::Debug);
        assert_eq!(a.mode, Mode::NvmStress);
        assert_eq!(parse(b"amber.test=idle").unwrap().mode, Mode::IdleTest);
        assert_eq!(parse(b"amber.test=panic").unwrap().mode, Mode::PanicTest);
        assert_eq!(parse(b"amber.icount"), Ok(BootArgs::default()));
        assert_eq!(parse(b"amber.nvm-bus=spi"), Ok(BootArgs::default()));
        assert!(matches!(
            parse(b"amber.nvm-bus=i2c"),
            Err(BootArgError::BadValue { .. })
        ));
    }

    #[test]
    fn typos_and_bad_values_are_refused_by_name() {
        assert_eq!(
            parse(b"amber.fromat"),
            Err(BootArgError::UnknownOption("amber.fromat"))
        );
        assert_eq!(
            parse(b"amber.test=fly"),
            Err(BootArgError::BadValue {
                option: "amber.test=fly",
                value: "fly"
            })
        );
        assert!(parse(b"amber.log=loud").is_err());
        assert!(parse(b"amber.format=yes").is_err(), "format takes no value");
        assert!(parse(b"amber.icount=1").is_err(), "icount takes no value");
        assert!(parse(b"amber.test").is_err(), "test needs a value");
        assert!(parse(b"amber.cut=0").is_err(), "stores count from 1");
        assert!(parse(b"amber.cut=x:1").is_err());
        assert!(parse(b"amber.memtrack=sometimes").is_err());
        assert!(
            parse(b"amber.pfi=1").is_err(),
            "checkpoint 1 is the fresh start"
        );
        assert!(parse(b"amber.pfi").is_err());
    }

    #[test]
    fn power_cuts_and_memory_tracking_are_understood() {
        let a = parse(b"amber.cut=120:3 amber.memtrack=copy").unwrap();
        assert_eq!(
            a.cut,
            Some(CutAt {
                store: 120,
                keep: 3
            })
        );
        assert_eq!(a.memtrack, MemTrack::Copy);
        assert_eq!(
            parse(b"amber.cut=7").unwrap().cut,
            Some(CutAt { store: 7, keep: 0 })
        );
        assert_eq!(parse(b"").unwrap().memtrack, MemTrack::Protect);
        assert_eq!(parse(b"amber.pfi=42").unwrap().pfi, Some(42));
        assert_eq!(parse(b"amber.energy=900").unwrap().energy, Some(900));
        assert!(parse(b"amber.energy=lots").is_err());
        assert_eq!(parse(b"amber.warn=7").unwrap().warn, Some(7));
    }

    #[test]
    fn a_repeated_option_is_refused_naming_both_words() {
        let e = parse(b"amber.log=debug console=x amber.log=warn").unwrap_err();
        assert_eq!(
            e,
            BootArgError::Repeated {
                first: "amber.log=debug",
                second: "amber.log=warn"
            }
        );
        assert_eq!(
            e.to_string(),
            "boot option `amber.log=warn` repeats `amber.log=debug`: give each option once"
        );
        assert!(parse(b"amber.format amber.format").is_err());
        assert!(
            parse(b"amber.cut=3 amber.cut=3").is_err(),
            "even with the same value"
        );
        assert!(
            parse(b"other=1 other=2").is_ok(),
            "words not ours are not ours to judge"
        );
    }

    #[test]
    fn a_command_line_that_is_not_utf8_is_refused_whole() {
        // A typo (`amber.fromat`) beside the bad byte must not slip through silently.
        let e = parse(b"amber.fromat amber.log=debug \xff").unwrap_err();
        assert_eq!(e, BootArgError::NotUtf8 { byte: 0xFF, at: 29 });
        assert_eq!(
            e.to_string(),
            "the boot options are not UTF-8 (byte 0xff at offset 29); none was applied"
        );
    }
}
