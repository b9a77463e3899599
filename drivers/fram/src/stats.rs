//! Counters of the driver's bus traffic, for benchmarks (FRAM words written per
//! checkpoint, transactions per heap operation).
//!
//! They count what the driver *issued*, failed transactions included; they must never
//! be used to decide what reached the chip (that is the crash tests' job).

/// Bus traffic issued by a [`crate::Fram`] since it was made or since
/// [`crate::Fram::reset_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FramStats {
    /// SPI transactions (chip-select cycles).
    pub transactions: u64,
    /// Bytes clocked on the wire in both directions' frames: opcodes, addresses, data.
    pub wire_bytes: u64,
    /// WRITE commands (one per non-empty `write`).
    pub writes: u64,
    /// Data bytes sent by WRITE commands.
    pub bytes_written: u64,
    /// READ commands (one per non-empty `read`).
    pub reads: u64,
    /// Data bytes received by READ commands.
    pub bytes_read: u64,
}
