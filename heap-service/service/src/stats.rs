//! The record of persists the service prints: how many, and the most any one of them
//! wrote, called and spent, next to the bound. Counting only: this file must never
//! decide anything about the heap.

use crate::PersistBound;

/// What one persist did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PersistCost {
    /// Bytes written to the driver.
    pub bytes: u64,
    /// Write calls to the driver.
    pub writes: u64,
    /// Instructions (`instret`) from the persist's start to its end.
    pub instructions: u64,
}

/// Which parts of a persist's cost went above the bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overrun {
    /// Bytes or writes: the vNV-Heap's guarantee is broken.
    pub storage: bool,
    /// Instructions: the cost model is too low.
    pub instructions: bool,
}

/// Persists so far and the largest of each figure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PersistLog {
    /// Persists recorded.
    pub count: u64,
    /// The largest bytes, writes and instructions, each over all persists (possibly of
    /// different persists).
    pub max: PersistCost,
}

impl PersistLog {
    /// Persists between two summary lines.
    pub const REPORT_EVERY: u64 = 200;

    /// Records one persist; returns what of it went above `bound`.
    pub fn record(&mut self, c: PersistCost, bound: &PersistBound) -> Overrun {
        self.count += 1;
        self.max.bytes = self.max.bytes.max(c.bytes);
        self.max.writes = self.max.writes.max(c.writes);
        self.max.instructions = self.max.instructions.max(c.instructions);
        Overrun {
            storage: c.bytes > bound.bytes || c.writes > bound.writes,
            instructions: c.instructions > bound.instructions,
        }
    }

    /// Whether the summary line is due (every [`Self::REPORT_EVERY`] persists).
    pub fn report_due(&self) -> bool {
        self.count > 0 && self.count.is_multiple_of(Self::REPORT_EVERY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_the_largest_of_each_figure_and_flags_what_exceeds_the_bound() {
        let bound = PersistBound {
            bytes: 100,
            writes: 10,
            instructions: 1000,
        };
        let mut log = PersistLog::default();
        let ok = PersistCost {
            bytes: 50,
            writes: 9,
            instructions: 10,
        };
        assert_eq!(log.record(ok, &bound), Overrun::default());
        let slow = PersistCost {
            bytes: 1,
            writes: 1,
            instructions: 2000,
        };
        let o = log.record(slow, &bound);
        assert!(o.instructions && !o.storage);
        assert_eq!(
            log.max,
            PersistCost {
                bytes: 50,
                writes: 9,
                instructions: 2000
            }
        );
        let big = PersistCost { bytes: 101, ..ok };
        assert!(log.record(big, &bound).storage);
    }

    #[test]
    fn a_summary_is_due_every_200_persists() {
        let mut log = PersistLog::default();
        let b = PersistBound::default();
        assert!(!log.report_due());
        for i in 1..=400 {
            log.record(PersistCost::default(), &b);
            assert_eq!(log.report_due(), i % 200 == 0);
        }
    }
}
