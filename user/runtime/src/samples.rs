//! Per-call cost samples for the benchmarks: [`sample`] counts the instructions of
//! each of `n` calls of a closure (`instret` read right before and right after it,
//! less what the two reads cost themselves) and prints the series, in call order, as
//! run-length-encoded console lines that `cargo xtask bench` reads back:
//!
//! ```text
//! samples NAME TOTAL: 462*998 1203 470
//! ```
//!
//! `v*k` is `k` calls of `v` instructions in a row, `v` alone one call; `TOTAL` (the
//! calls of the whole series) is on every line, so a reader can tell a series cut short
//! from a complete one. Under `-icount` nearly every call costs the same, so a series of
//! 1,000 takes a line or two. This file measures and prints; it must never judge a
//! figure, and must only be called where instruction counts are exact
//! ([`crate::counters_exact`]).

use crate::instret;
use core::fmt::{self, Write};

/// Runs held before they are printed (a print between two calls is outside both).
const RUNS: usize = 64;
/// Runs per console line: at most 22 bytes each, so a line stays within one
/// `DebugWrite` (`MAX_DEBUG_WRITE`, 256 bytes) with a name of up to 32 bytes.
const RUNS_PER_LINE: usize = 8;

/// A series being collected: its name, its declared total and the runs not yet
/// printed.
struct Series<'a> {
    name: &'a str,
    total: u32,
    runs: [(u32, u32); RUNS],
    len: usize,
}

impl<'a> Series<'a> {
    fn new(name: &'a str, total: u32) -> Self {
        Series {
            name,
            total,
            runs: [(0, 0); RUNS],
            len: 0,
        }
    }

    /// Adds one call's count; prints the held runs first when none is free.
    fn push(&mut self, v: u32, emit: &mut impl FnMut(&str)) {
        if let Some((last, k)) = self.runs[..self.len].last_mut() {
            if *last == v {
                *k += 1;
                return;
            }
        }
        if self.len == RUNS {
            self.flush(emit);
        }
        self.runs[self.len] = (v, 1);
        self.len += 1;
    }

    /// Prints the held runs, [`RUNS_PER_LINE`] to a line.
    fn flush(&mut self, emit: &mut impl FnMut(&str)) {
        for chunk in self.runs[..self.len].chunks(RUNS_PER_LINE) {
            let mut line = Line::new();
            let _ = write!(line, "samples {} {}:", self.name, self.total);
            for &(v, k) in chunk {
                let _ = match k {
                    1 => write!(line, " {v}"),
                    _ => write!(line, " {v}*{k}"),
                };
            }
            emit(line.as_str());
        }
        self.len = 0;
    }
}

/// One console line, formatted without allocating; what does not fit is dropped
/// (a reader then finds the series short, never a wrong count).
struct Line {
    buf: [u8; crate::abi::MAX_DEBUG_WRITE as usize],
    len: usize,
}

impl Line {
    fn new() -> Self {
        Line {
            buf: [0; crate::abi::MAX_DEBUG_WRITE as usize],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only whole `&str`s are ever copied in (`write_str` refuses a partial one).
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Calls `f` `n` times, counting each call's instructions, and prints the series as
/// `samples NAME n: …` lines. Stops at the first error (the lines printed so far then
/// add up to fewer than `n`) and returns it.
pub fn sample<E>(name: &str, n: u32, mut f: impl FnMut() -> Result<(), E>) -> Result<(), E> {
    let mut emit = |line: &str| {
        let _ = crate::debug_write(line.as_bytes());
    };
    // What two back-to-back reads count: the window's own cost.
    let mut reads = u32::MAX;
    for _ in 0..8 {
        let t0 = instret();
        let t1 = instret();
        reads = reads.min(t1.wrapping_sub(t0));
    }
    let mut series = Series::new(name, n);
    let mut result = Ok(());
    for _ in 0..n {
        let t0 = instret();
        let r = f();
        let t1 = instret();
        if r.is_err() {
            result = r;
            break;
        }
        series.push(t1.wrapping_sub(t0).saturating_sub(reads), &mut emit);
    }
    series.flush(&mut emit);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(name: &str, values: &[u32]) -> Vec<String> {
        let mut out = Vec::new();
        let mut emit = |l: &str| out.push(l.to_string());
        let mut s = Series::new(name, values.len() as u32);
        for &v in values {
            s.push(v, &mut emit);
        }
        s.flush(&mut emit);
        out
    }

    #[test]
    fn equal_neighbours_become_one_run_in_call_order() {
        let mut v = vec![462; 998];
        v.extend([1203, 470]);
        assert_eq!(lines("null", &v), ["samples null 1000: 462*998 1203 470"]);
    }

    #[test]
    fn many_runs_take_several_lines_within_one_debug_write() {
        // Every call different: 200 runs, more than are held, with the longest numbers.
        let v: Vec<u32> = (0..200).map(|i| u32::MAX - i).collect();
        let out = lines("a_name_of_thirty_two_characters_", &v);
        assert_eq!(out.len(), 200usize.div_ceil(RUNS_PER_LINE));
        let mut back = Vec::new();
        for l in &out {
            assert!(l.len() <= crate::abi::MAX_DEBUG_WRITE as usize, "{l}");
            let (head, runs) = l.split_once(": ").unwrap();
            assert_eq!(head, "samples a_name_of_thirty_two_characters_ 200");
            back.extend(runs.split(' ').map(|r| r.parse::<u32>().unwrap()));
        }
        assert_eq!(back, v);
    }

    #[test]
    fn the_longest_run_fits_a_line() {
        let mut s = Line::new();
        write!(s, "samples {} {}:", "x".repeat(32), u32::MAX).unwrap();
        for _ in 0..RUNS_PER_LINE {
            write!(s, " {}*{}", u32::MAX, u32::MAX).unwrap();
        }
    }
}
