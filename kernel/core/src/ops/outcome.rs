//! How a syscall ends for its caller, and how its result reaches the caller's
//! registers: the vocabulary every syscall handler in `ops/` shares. Plain data; it
//! must never look at a thread or an object.

use crate::{abi::Error, context::reg};

/// Up to five result values for a1..a5. "None" is its own state, not an empty array,
/// so that a call without results (the null syscall among them) returns without
/// zeroing the array (`memset`, 39 instructions on a null syscall).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Results(Option<Values>);

/// The first `n` of `vals` are the results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Values {
    vals: [u32; 5],
    n: usize,
}

impl Results {
    /// No results (a1..a5 untouched).
    #[inline]
    pub(crate) fn none() -> Results {
        Results(None)
    }

    /// The first (up to five) of `v` for a1, a2, ...
    #[inline]
    pub(crate) fn of(v: &[u32]) -> Results {
        let mut r = Values { vals: [0; 5], n: 0 };
        for (d, s) in r.vals.iter_mut().zip(v) {
            *d = *s;
            r.n += 1;
        }
        Results(Some(r))
    }
}

/// How a syscall ended for its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Finished: write the status and results now.
    Done(Result<Results, Error>),
    /// The caller blocked; whoever wakes it writes its results.
    Blocked,
    /// The caller ended.
    Exited,
}

impl Outcome {
    /// Success with no results.
    #[inline]
    pub(crate) fn ok() -> Outcome {
        Outcome::Done(Ok(Results::none()))
    }

    /// Failure.
    #[inline]
    pub(crate) fn err(e: Error) -> Outcome {
        Outcome::Done(Err(e))
    }
}

/// Writes a syscall result: a0 = 0 and the results, or a0 = the error code (results
/// registers untouched).
#[inline]
pub(crate) fn write_results(regs: &mut [u32; 32], r: Result<Results, Error>) {
    match r {
        Ok(res) => {
            regs[reg::A0] = 0;
            // One test per register rather than a slice copy: the compiler turns the
            // copy into a `memcpy` call that costs a null syscall about 50 instructions.
            if let Some(Values { vals, n }) = res.0 {
                for (i, v) in vals.iter().enumerate() {
                    if i < n {
                        regs[reg::A0 + 1 + i] = *v;
                    }
                }
            }
        }
        Err(e) => regs[reg::A0] = e as u32,
    }
}
