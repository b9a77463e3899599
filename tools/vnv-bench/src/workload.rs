//! The key-value workload of the paper's §7.5: value sizes and key access patterns.
//!
//! 256 values (64 of 32 B, 128 of 128 B, 32 of 256 B, 32 of 1024 B) in a seeded random
//! order, and three ways of choosing the key of each update: sequential, unequal
//! (weights `sin^4(5/32 * key) + 0.1`) and uniformly random. Every system under test
//! gets the very same keys. The storage-traffic table (issue 16) adds two patterns of its
//! own: uniform and partitioned ([`Traffic`]). This file must never depend on the
//! system under test.

use crate::rng::Rng;

/// `(count, size)` of the values, from the paper (after Cao et al., 2020).
pub const VALUE_MIX: [(usize, usize); 4] = [(64, 32), (128, 128), (32, 256), (32, 1024)];

/// The value size of each key `0..256`, shuffled with `seed`.
pub fn value_sizes(seed: u64) -> Vec<usize> {
    let mut sizes: Vec<usize> = VALUE_MIX
        .iter()
        .flat_map(|&(n, size)| std::iter::repeat_n(size, n))
        .collect();
    Rng::new(seed).shuffle(&mut sizes);
    sizes
}

/// How the key of each update is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Keys 0, 1, 2, ... in turn.
    Sequential,
    /// Key `k` with probability proportional to `sin^4(5/32 * k) + 0.1`.
    Unequal,
    /// Every key equally likely.
    Random,
}

impl Pattern {
    /// All patterns, in the paper's order.
    pub const ALL: [Pattern; 3] = [Pattern::Sequential, Pattern::Unequal, Pattern::Random];

    /// The paper's name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Sequential => "sequential",
            Pattern::Unequal => "unequal",
            Pattern::Random => "random",
        }
    }
}

/// The paper's non-normalised weight of `key` in the unequal pattern.
pub fn unequal_weight(key: usize) -> f64 {
    (5.0 / 32.0 * key as f64).sin().powi(4) + 0.1
}

/// `n` keys in `0..keys` drawn by `pattern` with `seed`.
pub fn key_sequence(pattern: Pattern, keys: usize, n: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    match pattern {
        Pattern::Sequential => (0..n).map(|i| i % keys).collect(),
        Pattern::Random => (0..n).map(|_| rng.below(keys)).collect(),
        Pattern::Unequal => {
            let mut cumulative = Vec::with_capacity(keys);
            let mut total = 0.0;
            for k in 0..keys {
                total += unequal_weight(k);
                cumulative.push(total);
            }
            (0..n)
                .map(|_| {
                    let x = rng.unit() * total;
                    cumulative.partition_point(|&c| c <= x).min(keys - 1)
                })
                .collect()
        }
    }
}

/// How the traffic table (issue 16) picks the key of each update: every key equally
/// likely, or keys drawn from one of [`PARTITIONS`] partitions of consecutive keys,
/// chosen at random every [`PARTITION_RUN`] updates (the paper's Fig. 5 access
/// patterns as the issue states them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// Every key equally likely.
    Uniform,
    /// A random partition every [`PARTITION_RUN`] updates; keys uniform within it.
    Partitioned,
}

/// Partitions of the partitioned pattern (each holds `keys / PARTITIONS` keys).
pub const PARTITIONS: usize = 16;
/// Updates drawn from one partition before the next is chosen.
pub const PARTITION_RUN: usize = 100;

impl Traffic {
    /// Both patterns.
    pub const ALL: [Traffic; 2] = [Traffic::Uniform, Traffic::Partitioned];

    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Traffic::Uniform => "uniform",
            Traffic::Partitioned => "partitioned",
        }
    }
}

/// `n` keys in `0..keys` drawn by `pattern` with `seed` (`keys` a multiple of
/// [`PARTITIONS`] for the partitioned pattern).
pub fn traffic_keys(pattern: Traffic, keys: usize, n: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    match pattern {
        Traffic::Uniform => (0..n).map(|_| rng.below(keys)).collect(),
        Traffic::Partitioned => {
            let per = keys / PARTITIONS;
            let mut base = 0;
            (0..n)
                .map(|i| {
                    if i % PARTITION_RUN == 0 {
                        base = rng.below(PARTITIONS) * per;
                    }
                    base + rng.below(per)
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_mix_is_256_values_of_58_kib() {
        let s = value_sizes(1);
        assert_eq!(s.len(), 256);
        assert_eq!(s.iter().sum::<usize>(), 59_392);
        assert_ne!(s, value_sizes(2), "the order depends on the seed");
    }

    #[test]
    fn unequal_keys_follow_the_weights() {
        let keys = key_sequence(Pattern::Unequal, 256, 200_000, 3);
        let mut hits = [0usize; 256];
        for k in keys {
            hits[k] += 1;
        }
        // sin^4(5/32 k) peaks near k = 10 (1.1) and vanishes near k = 0 (0.1).
        assert!(
            hits[10] > 5 * hits[0],
            "hot key {} cold key {}",
            hits[10],
            hits[0]
        );
    }

    #[test]
    fn partitioned_keys_stay_in_one_partition_for_each_run() {
        let keys = traffic_keys(Traffic::Partitioned, 192, 1000, 9);
        for run in keys.chunks(PARTITION_RUN) {
            let p = run[0] / (192 / PARTITIONS);
            assert!(run.iter().all(|k| k / (192 / PARTITIONS) == p));
        }
        let parts: std::collections::BTreeSet<_> = keys.iter().map(|k| k / 12).collect();
        assert!(parts.len() > 4, "the runs visit several partitions");
    }

    #[test]
    fn sequential_keys_cycle() {
        assert_eq!(
            key_sequence(Pattern::Sequential, 3, 5, 0),
            vec![0, 1, 2, 0, 1]
        );
    }
}
