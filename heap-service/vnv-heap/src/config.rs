//! Configuration, the metadata each object costs, and the worst-case cost of persist.
//!
//! Everything here is computed from a [`Config`] alone, never from a heap's state: the
//! bound must hold for every state the configuration allows. Keep [`wcec_bound`] in
//! step with `VnvHeap::persist` in `heap.rs` (its storage calls and the scan steps it
//! counts); the tests measure one against the other.

use crate::bits::RamPlan;
use crate::cache::RUN_BYTES;
use crate::format::{bitmap_bytes, BLOCK_BYTES, ENTRY_BYTES, HALF_BYTES, HEADER_BYTES};

/// How a heap is laid out, how much RAM it caches in and how much dirty state it may
/// hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Upper bound on the bytes `persist` writes for objects. Each dirty object counts
    /// its size plus [`Config::DIRTY_OVERHEAD`] bytes (its entry half, which persist
    /// writes with an object created since the last persist), and each freed object
    /// whose dead entry half is not written yet counts the overhead alone, as the paper
    /// counts metadata towards the limit.
    pub max_dirty_bytes: u32,
    /// Number of object ids (an array uses one per chunk). Fixed at format time.
    pub max_objects: u16,
    /// Byte offset of the heap on the storage device. Fixed at format time.
    pub nvm_offset: u32,
    /// Bytes of NVM for object data (each object keeps two copies, rounded to 32-byte
    /// blocks). Fixed at format time.
    pub nvm_data_bytes: u32,
    /// Length of the cache buffer passed to `VnvHeap::new` and `VnvHeap::open`, RAM
    /// metadata included; both refuse a buffer of any other length
    /// ([`HeapError::CacheSizeMismatch`](crate::HeapError::CacheSizeMismatch)).
    /// [`wcec_bound`] needs it because persist scans every cache unit. Not stored on
    /// NVM: a heap may be reopened with another cache size.
    pub cache_bytes: u32,
}

impl Config {
    /// Bytes each dirty object adds to the dirty count on top of its size (a pending
    /// free counts this alone).
    pub const DIRTY_OVERHEAD: u32 = HALF_BYTES;

    /// A configuration with the given dirty limit and cache buffer length, 64 object
    /// ids, the heap at offset 0 and 16 KiB of NVM data area.
    pub const fn new(max_dirty_bytes: u32, cache_bytes: u32) -> Config {
        Config {
            max_dirty_bytes,
            max_objects: 64,
            nvm_offset: 0,
            nvm_data_bytes: 16 * 1024,
            cache_bytes,
        }
    }

    /// Bytes of NVM the heap occupies from offset 0 of the device, or `None` if the
    /// configuration does not fit a 32-bit address space.
    pub fn nvm_end(&self) -> Option<u32> {
        crate::format::Layout::new(self.nvm_offset, self.max_objects, self.nvm_data_bytes)
            .ok()
            .map(|l| l.end())
    }

    /// Bytes of RAM the heap takes from a cache buffer of
    /// [`cache_bytes`](Self::cache_bytes) for its bitmaps (before alignment), leaving
    /// the rest for cached objects.
    pub fn ram_metadata_bytes(&self) -> usize {
        let len = self.cache_bytes as usize;
        self.ram_plan().map(|p| p.metadata_bytes()).unwrap_or(len)
    }

    /// Bytes of the metadata buffer a split heap (`VnvHeap::new_split`) needs, 8-aligned,
    /// for an arena of `arena_bytes` (its units: `arena_bytes / 8`, at most 65,534): the
    /// bitmaps (as in [`ram_metadata_bytes`](Self::ram_metadata_bytes)), a table of
    /// [`SPLIT_BYTES_PER_UNIT`] bytes (id and state) for every arena unit, resident
    /// object or not, and [`SPLIT_BYTES_PER_ID`] bytes (the description) per id. The
    /// unit table is the price of keeping every header out of the arena (which a client
    /// may write): half the arena's size again, against the 8 bytes per resident object
    /// of the shared layout. A split heap's
    /// [`cache_bytes`](Self::cache_bytes) is the metadata buffer's length plus the
    /// arena's, which never gives it more units than a shared cache of that length (so
    /// [`wcec_bound`] holds for both).
    pub const fn split_metadata_bytes(&self, arena_bytes: u32) -> u32 {
        let units = arena_bytes as usize / crate::bits::UNIT;
        let units = if units > crate::bits::MAX_UNITS {
            crate::bits::MAX_UNITS
        } else {
            units
        };
        RamPlan::split_meta_bytes(units, self.max_objects, self.nvm_data_bytes / BLOCK_BYTES) as u32
    }

    /// NVM data blocks (32 bytes each) of the data area.
    fn nvm_blocks(&self) -> u32 {
        self.nvm_data_bytes / BLOCK_BYTES
    }

    /// The split of an 8-aligned cache buffer of `cache_bytes` bytes.
    fn ram_plan(&self) -> Option<RamPlan> {
        RamPlan::new(
            self.cache_bytes as usize,
            self.max_objects,
            self.nvm_blocks(),
        )
    }

    /// Most cache units (8-byte arena units) a heap under this configuration can have:
    /// exactly its count for an 8-aligned buffer; a misaligned one loses up to 7 bytes
    /// to alignment and never has more units.
    fn max_cache_units(&self) -> u32 {
        self.ram_plan().map_or(0, |p| p.units as u32)
    }
}

/// RAM and NVM metadata each object costs (32-bit and 64-bit targets alike: the heap
/// stores no pointers in its metadata).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetadataCost {
    /// RAM bytes in front of each resident object in the cache: its id, state (dirty,
    /// pinned, two second-chance marks, reader count), first NVM block and length, so
    /// that writing it back reads nothing. For objects whose size is a multiple of 8
    /// (or 5 to 7 more) the cache footprint equals that of a 4-byte header: the arena
    /// is cut in 8-byte units.
    pub resident_bytes: u32,
    /// RAM bytes in front of an object created since the last persist while its
    /// description is not on NVM (type tag and flags too); it keeps them until evicted.
    pub new_resident_bytes: u32,
    /// RAM bytes per swapped-out object beyond the per-id bits: none (its handle holds
    /// its location).
    pub swapped_out_bytes: u32,
    /// RAM bits per object id, resident or not, allocated or not (live, handle held,
    /// resident, created this epoch, description to write, working half and whether
    /// written, committed slot and whether the other was written).
    pub bits_per_id: u32,
    /// RAM bits per 8-byte cache unit (used, object start): the cache allocator.
    pub bits_per_cache_unit: u32,
    /// RAM bits per 32-byte NVM data block (used, freed since the last persist).
    pub bits_per_nvm_block: u32,
    /// NVM bytes per object id: the entry pair (plus one bit in each commit record
    /// copy's slot bitmap).
    pub nvm_bytes_per_id: u32,
}

/// RAM bytes per arena unit of a split heap's header table (see
/// [`Config::split_metadata_bytes`]); they replace [`MetadataCost::resident_bytes`].
pub const SPLIT_BYTES_PER_UNIT: u32 = crate::bits::SPLIT_HEADER_BYTES as u32;
/// RAM bytes per id of a split heap's description table.
pub const SPLIT_BYTES_PER_ID: u32 = crate::bits::SPLIT_DESC_BYTES as u32;

/// The metadata this implementation keeps.
pub const METADATA: MetadataCost = MetadataCost {
    resident_bytes: 8,
    new_resident_bytes: 16,
    swapped_out_bytes: 0,
    bits_per_id: crate::bits::ID_BITMAPS as u32,
    bits_per_cache_unit: 2,
    bits_per_nvm_block: 2,
    nvm_bytes_per_id: ENTRY_BYTES,
};

/// Time and energy of storage operations and of the CPU, for turning a [`WcecBound`]
/// into a duration and an energy.
///
/// A storage operation of `n` bytes costs `op + n * byte`; this must be an upper bound
/// of the real cost of every operation size. CPU work is counted in cycles at
/// `cpu_hz`, drawing `cpu_mw`: `cpu_fixed_cycles` once per persist,
/// `cpu_per_object_cycles` per object written and `cpu_per_step_cycles` per scan step
/// (as [`VnvHeap::scan_steps`](crate::VnvHeap::scan_steps) counts them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostModel {
    pub read_op_ns: u64,
    pub read_byte_ns: u64,
    pub write_op_ns: u64,
    pub write_byte_ns: u64,
    pub flush_ns: u64,
    pub read_op_nj: u64,
    pub read_byte_nj: u64,
    pub write_op_nj: u64,
    pub write_byte_nj: u64,
    pub flush_nj: u64,
    /// CPU clock in Hz; 0 counts no CPU time or energy at all.
    pub cpu_hz: u64,
    /// Power drawn while the CPU works, in milliwatts.
    pub cpu_mw: u64,
    /// Cycles persist spends once beyond its scans (entering, encoding and
    /// checksumming the commit record, the flush calls).
    pub cpu_fixed_cycles: u64,
    /// Cycles persist spends per object it writes, beyond the storage operations
    /// (decoding its description, encoding and checksumming its entry half).
    pub cpu_per_object_cycles: u64,
    /// Cycles per scan step: one cache unit visited or one bitmap word combined.
    pub cpu_per_step_cycles: u64,
}

impl CostModel {
    /// Counts nothing: only the byte, operation and step counts of a bound are
    /// meaningful.
    pub const ZERO: CostModel = CostModel {
        read_op_ns: 0,
        read_byte_ns: 0,
        write_op_ns: 0,
        write_byte_ns: 0,
        flush_ns: 0,
        read_op_nj: 0,
        read_byte_nj: 0,
        write_op_nj: 0,
        write_byte_nj: 0,
        flush_nj: 0,
        cpu_hz: 0,
        cpu_mw: 0,
        cpu_fixed_cycles: 0,
        cpu_per_object_cycles: 0,
        cpu_per_step_cycles: 0,
    };

    /// The paper's set-up (section 7.1): ESP32-C3 at 160 MHz, MB85RS4MT FRAM on SPI at
    /// 40 MHz, one SPI call per 4-byte word, 40 mA at 3.3 V (132 mW) worst case (7.4).
    ///
    /// Numbers and where they come from (the wire time of 8 bytes at 40 MHz is only
    /// 1.6 µs; the rest is per-call driver overhead, so time goes by word calls):
    /// - one 4-byte read call takes 47 µs: the module-swapping baseline's bad case in
    ///   figure 2 reads one 1 KiB module, 256 word reads, in about 12 ms.
    /// - one 4-byte write call takes 78 µs: figure 3's NVM-only queue writes and reads
    ///   one 256-byte element per push + pop, 64 word writes and 64 word reads, in about
    ///   7 983 µs, so 125 µs per write + read, 78 µs per write (an FRAM write is two SPI
    ///   transactions, WREN then WRITE). Check: figure 2's module worst case (write back
    ///   1 KiB, then read 1 KiB) comes out at 32.0 ms; the paper shows about 32 ms.
    /// - per byte: a quarter word (11 750 ns read, 19 500 ns write); per operation: one
    ///   extra word call (47 000 ns read, 78 000 ns write), covering the partial last
    ///   word, so `op + n * byte` bounds `ceil(n / 4)` calls.
    /// - energy = time × 132 mW: 1 551 nJ per read byte, 6 204 nJ per read operation,
    ///   2 574 nJ per written byte, 10 296 nJ per write operation.
    /// - flush: FRAM has no write cache, 0.
    /// - CPU at 160 MHz and 132 mW (0.825 nJ per cycle). All three figures are
    ///   estimates from reading the code, not measured on hardware:
    ///   - 10 cycles per scan step ([`CYCLES_PER_SCAN_STEP`]): one inlined bit test
    ///     (bounds compare and branch, word index, load, shift, mask, branch: about 8
    ///     RV32 instructions) plus the loop's increment and compare, at about one
    ///     instruction per cycle. vnv-bench charges the same constant.
    ///   - 9 600 cycles (60 µs) per object and 16 000 cycles (100 µs) fixed: kept from
    ///     the first estimate (above the paper's 56 µs best-case reference retrieval),
    ///     now without the scans, which the steps count. They are far above an
    ///     instruction count of that work (decoding an 8-byte description, a CRC-32
    ///     over a 16-byte entry half or the 32-byte commit record: hundreds of cycles;
    ///     vnv-bench charges 200 cycles per storage call and 80 per API call).
    pub const fn esp32c3_spi_fram() -> CostModel {
        const READ_WORD_NS: u64 = 47_000;
        const WRITE_WORD_NS: u64 = 78_000;
        const MW: u64 = 132;
        CostModel {
            read_op_ns: READ_WORD_NS,
            read_byte_ns: READ_WORD_NS / 4,
            write_op_ns: WRITE_WORD_NS,
            write_byte_ns: WRITE_WORD_NS / 4,
            flush_ns: 0,
            read_op_nj: READ_WORD_NS * MW / 1000,
            read_byte_nj: (READ_WORD_NS / 4 * MW).div_ceil(1000),
            write_op_nj: WRITE_WORD_NS * MW / 1000,
            write_byte_nj: (WRITE_WORD_NS / 4 * MW).div_ceil(1000),
            flush_nj: 0,
            cpu_hz: 160_000_000,
            cpu_mw: MW,
            cpu_fixed_cycles: 16_000,
            cpu_per_object_cycles: 9_600,
            cpu_per_step_cycles: CYCLES_PER_SCAN_STEP,
        }
    }

    /// The same board with a lean driver that moves a whole access in one SPI
    /// transaction (the paper's driver issues one per 4-byte word): per call the
    /// command (opcode and 24-bit address, 4 bytes at 40 MHz: 800 ns) and about 200 ns
    /// of chip select and driver work, 1,000 ns for a read; a write also sends WREN in a
    /// transaction of its own, 1,400 ns; per byte the wire time at 40 MHz, 200 ns
    /// (5 MB/s). A 4-byte read call so takes 1.8 µs, 2.2 MB/s. Estimates from the
    /// MB85RS4MT's command format and the SPI clock, not measured on the board; the CPU
    /// figures are those of [`esp32c3_spi_fram`](Self::esp32c3_spi_fram).
    pub const fn esp32c3_spi_fram_bulk() -> CostModel {
        const MW: u64 = 132;
        const READ_CALL_NS: u64 = 1_000;
        const WRITE_CALL_NS: u64 = 1_400;
        const BYTE_NS: u64 = 200;
        CostModel {
            read_op_ns: READ_CALL_NS,
            read_byte_ns: BYTE_NS,
            write_op_ns: WRITE_CALL_NS,
            write_byte_ns: BYTE_NS,
            read_op_nj: READ_CALL_NS * MW / 1000,
            read_byte_nj: (BYTE_NS * MW).div_ceil(1000),
            write_op_nj: (WRITE_CALL_NS * MW).div_ceil(1000),
            write_byte_nj: (BYTE_NS * MW).div_ceil(1000),
            ..Self::esp32c3_spi_fram()
        }
    }

    /// Nanoseconds of `cycles` at `cpu_hz`, rounded up (0 if `cpu_hz` is 0).
    pub fn cpu_ns(&self, cycles: u64) -> u64 {
        self.per_hz(u128::from(cycles) * 1_000_000_000)
    }

    /// Nanojoules of `cycles` at `cpu_hz` and `cpu_mw`, rounded up (0 if `cpu_hz` is 0).
    pub fn cpu_nj(&self, cycles: u64) -> u64 {
        // ns × mW = pJ, so nJ = cycles × 10^9 / hz × mW / 1000.
        self.per_hz(u128::from(cycles) * u128::from(self.cpu_mw) * 1_000_000)
    }

    fn per_hz(&self, x: u128) -> u64 {
        if self.cpu_hz == 0 {
            return 0;
        }
        u64::try_from(x.div_ceil(u128::from(self.cpu_hz))).unwrap_or(u64::MAX)
    }
}

/// Estimated ESP32-C3 cycles per scan step (see [`CostModel::esp32c3_spi_fram`]); not
/// measured on hardware. The benchmarks charge every counted step this much.
pub const CYCLES_PER_SCAN_STEP: u64 = 10;

/// Worst-case cost of one `persist` call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WcecBound {
    /// Objects written (at most).
    pub objects: u64,
    /// `Nvm::write` calls.
    pub writes: u64,
    /// Bytes passed to `Nvm::write`.
    pub bytes_written: u64,
    /// `Nvm::read` calls.
    pub reads: u64,
    /// Bytes passed to `Nvm::read`.
    pub bytes_read: u64,
    /// `Nvm::flush` calls (persist issues no `fence`).
    pub flushes: u64,
    /// Scan steps, as [`VnvHeap::scan_steps`](crate::VnvHeap::scan_steps) counts them.
    pub scan_steps: u64,
    /// CPU cycles under the cost model (fixed + per object + per step).
    pub cpu_cycles: u64,
    /// Time under the cost model (storage and CPU), nanoseconds.
    pub time_ns: u64,
    /// Energy under the cost model (storage and CPU), nanojoules.
    pub energy_nj: u64,
}

/// The worst-case storage traffic, scan steps, time and energy of `VnvHeap::persist`
/// under `config`, whatever the heap's state.
///
/// Derivation (see `persist` in `heap.rs`):
/// - Storage: each dirty object counts its size plus `H = DIRTY_OVERHEAD` (16) bytes
///   towards `M = max_dirty_bytes`, at least `1 + H`; each freed object waiting for its
///   dead half counts `H`. Persist writes an object's bytes (one write per object at
///   most: contiguous ones are gathered into writes of up to 256 bytes, so a run of `k`
///   objects below 256 bytes takes at most `k` writes, an object of `n >= 256` bytes
///   held by a writer at most `ceil(n / 256)`) and, if it was created since the last
///   persist, its 16-byte half; a free's dead half is one 16-byte write. An object of
///   `n` bytes so costs at most `ceil(n / 256) + 1` writes for `n + H` bytes of budget,
///   never more than 2 writes per 17 bytes, and a free 1 write per 16. Each of the
///   `N` ids is at most one of them (a freed id is reused only after its dead half is
///   written): at most `2n + f` writes for `n = min(floor(M / 17), N)` objects and
///   `f = min(floor((M - 17n) / 16), N - n)` frees, and at most `M` bytes. Then flush, the commit record (`R = 32 + 4 ceil(N / 32)` bytes
///   for `N = max_objects`, in `ceil(R / 256)` writes), flush. Nothing is read.
/// - Scan steps: one pass over the `U` cache units, and at most one more per unit for
///   moving the bytes of objects created since the last persist behind a short
///   header once their description is written; one step per word of an id bitmap
///   (`ceil(N / 32)` words) for the frees, two per word for the record's slot bitmap;
///   then five whole id-bitmap and two block-bitmap operations (`ceil(B / 32)` words,
///   `B = nvm_data_bytes / 32`): `2U + 8 ceil(N/32) + 2 ceil(B/32)`, where `U` is the
///   arena units of a `cache_bytes` buffer. Writing an object back scans nothing.
/// - CPU: `cpu_fixed_cycles + (objects) * cpu_per_object_cycles + steps *
///   cpu_per_step_cycles`, an object being a dirty object or a free.
pub fn wcec_bound(config: &Config, cost: &CostModel) -> WcecBound {
    let m = config.max_dirty_bytes;
    let h = Config::DIRTY_OVERHEAD;
    // Each id contributes one object or one waiting free (a freed id is taken again
    // only once its dead half is written), so at most `N` of them in all.
    let ids = u32::from(config.max_objects);
    let live = (m / (1 + h)).min(ids);
    let objects = u64::from(live);
    let free_in_rest = u64::from(((m - live * (1 + h)) / h).min(ids - live));
    let record = HEADER_BYTES + bitmap_bytes(config.max_objects);
    let d = objects + free_in_rest;
    let writes = 2 * objects + free_in_rest + u64::from(record.div_ceil(RUN_BYTES as u32));
    let bytes_written = u64::from(m) + u64::from(record);
    let reads = 0;
    let bytes_read = 0;
    let flushes = 2;
    let words = |bits: u32| u64::from(bits.div_ceil(32));
    let scan_steps = 2 * u64::from(config.max_cache_units())
        + 8 * words(config.max_objects.into())
        + 2 * words(config.nvm_blocks());
    let cpu_cycles = cost.cpu_fixed_cycles
        + d * cost.cpu_per_object_cycles
        + scan_steps * cost.cpu_per_step_cycles;
    let time_ns = reads * cost.read_op_ns
        + bytes_read * cost.read_byte_ns
        + writes * cost.write_op_ns
        + bytes_written * cost.write_byte_ns
        + flushes * cost.flush_ns
        + cost.cpu_ns(cpu_cycles);
    let energy_nj = reads * cost.read_op_nj
        + bytes_read * cost.read_byte_nj
        + writes * cost.write_op_nj
        + bytes_written * cost.write_byte_nj
        + flushes * cost.flush_nj
        + cost.cpu_nj(cpu_cycles);
    WcecBound {
        objects: d,
        writes,
        bytes_written,
        reads,
        bytes_read,
        flushes,
        scan_steps,
        cpu_cycles,
        time_ns,
        energy_nj,
    }
}
