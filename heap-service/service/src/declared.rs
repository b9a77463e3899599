//! The `heapsvc` task's heaps and the bounds it declares, as functions of its two build
//! settings (the dirty limit, `AMBER_HEAP_MAX_DIRTY`, and the number of clients,
//! `AMBER_HEAP_CLIENTS`): the task takes its configuration and its bounds from here,
//! and `cargo xtask` computes the same bounds on the host from an app's description
//! (to print the capacitor an app needs), so the figure a user sizes from is the one
//! the service declares at run time. Pure arithmetic over `bound.rs`; this file must
//! never depend on a heap's state.

use crate::bound::{
    max_dirty_for_ring, persist_bound, persist_work, phase_bound, ring_reserve, InstrModel,
    PersistBound, PhaseBound,
};
use vnv_heap::Config;

/// The dirty limit when `AMBER_HEAP_MAX_DIRTY` is not set.
pub const DEFAULT_MAX_DIRTY: u32 = 1024;
/// The clients (and heaps) when `AMBER_HEAP_CLIENTS` is not set.
pub const DEFAULT_CLIENTS: u32 = 2;
/// The most clients the service takes.
pub const MAX_CLIENTS: u32 = 2;
/// Each heap's arena: its client's part of the app's memory `heap-caches`.
pub const ARENA_BYTES: u32 = 8 * 1024;
/// The smallest pending cap. The cap is the most ring bytes the service lets wait in
/// the driver (written since the last checkpoint): every read scans them (in the
/// driver's index, copying the bytes they overlay), so the instruction bounds assume
/// the cap. It is this or the ring reserve, whichever is larger (a larger dirty limit
/// needs a larger reserve, and the cap must leave room for one request and a persist).
/// 24 KiB: with two heaps the reserve (one request and two persists) is about 16 KiB,
/// and the cap leaves about 8 KiB of requests between the checkpoints the service asks
/// for.
pub const PENDING_CAP_MIN: u32 = 24 * 1024;
/// The driver's ring on a 4 MiB NVM (QEMU's): its 64 KiB ring area (as `spidrv`
/// places it), less the ring's header. A 512 KiB NVM has a 16 KiB one.
pub const RING_CAPACITY: u32 = amber_vring::layout::capacity_for(64 * 1024);

/// One heap without its cache: 48 ids, 24 KiB of data (each object kept twice), the
/// dirty limit `max_dirty` (which bounds a persist), at FRAM offset 0.
const fn base_config(max_dirty: u32) -> Config {
    Config {
        max_dirty_bytes: max_dirty,
        max_objects: 48,
        nvm_offset: 0,
        nvm_data_bytes: 24 * 1024,
        cache_bytes: 0,
    }
}

/// Bytes of one heap's metadata buffer (bitmaps, a 4-byte header per arena unit).
pub const fn meta_bytes(max_dirty: u32) -> u32 {
    base_config(max_dirty).split_metadata_bytes(ARENA_BYTES)
}

/// The configuration every bound is computed from (offset 0; the heaps differ in
/// their offset only): an 8 KiB arena and its metadata.
pub const fn heap_config(max_dirty: u32) -> Config {
    Config {
        cache_bytes: ARENA_BYTES + meta_bytes(max_dirty),
        ..base_config(max_dirty)
    }
}

/// The largest client object: 1 KiB, or less if a write pin of it would not fit the
/// dirty limit (the object is one piece in the arena, dirty as a whole).
pub const fn max_object(max_dirty: u32) -> u32 {
    if max_dirty - Config::DIRTY_OVERHEAD < 1024 {
        max_dirty - Config::DIRTY_OVERHEAD
    } else {
        1024
    }
}

/// What the service keeps and declares with a dirty limit and a number of clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Declared {
    /// Ring bytes one request and one persist of every heap may write: kept free.
    pub reserve: u32,
    /// The most ring bytes let wait in the driver.
    pub pending_cap: u32,
    /// A persist of every heap.
    pub persist: PersistBound,
    /// The instructions declared to the kernel for the service's part of a persist
    /// phase, by kind of phase.
    pub phase: PhaseBound,
}

/// The bounds of the service built with dirty limit `max_dirty` and `clients` heaps,
/// over a driver ring of `ring_capacity` bytes, under the instruction model `m`; `Err`
/// with the largest dirty limit the ring allows when it cannot hold the reserve (the
/// service refuses to start). The pending cap is [`PENDING_CAP_MIN`], or the ring's
/// capacity where that is smaller, or the reserve where that is larger.
pub fn declared(
    max_dirty: u32,
    clients: u32,
    ring_capacity: u32,
    m: &InstrModel,
) -> Result<Declared, u32> {
    let config = heap_config(max_dirty);
    let max_object = max_object(max_dirty);
    // One request and one persist of every heap.
    let others = u64::from(clients.saturating_sub(1));
    let reserve = u32::try_from(
        u64::from(ring_reserve(&config, max_object)) + others * persist_work(&config).ring_bytes(),
    )
    .unwrap_or(u32::MAX);
    if reserve > ring_capacity {
        return Err(max_dirty_for_ring(&config, max_object, ring_capacity).unwrap_or(0));
    }
    let pending_cap = reserve.max(PENDING_CAP_MIN.min(ring_capacity));
    let one = persist_bound(&config, pending_cap, m);
    let n = u64::from(clients);
    Ok(Declared {
        reserve,
        pending_cap,
        persist: PersistBound {
            bytes: n * one.bytes,
            writes: n * one.writes,
            instructions: n * one.instructions,
        },
        // A request begins with at most `pending_cap - reserve` ring bytes pending
        // (the service checkpoints before it would take more); a checkpoint commits at
        // most `pending_cap` for the driver to apply.
        phase: phase_bound(
            &config,
            n,
            ARENA_BYTES,
            max_object,
            pending_cap - reserve,
            pending_cap,
            m,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_apps_bounds_are_the_ones_its_service_declares_at_run_time() {
        // `heapsvc` on QEMU (app `heap`, two clients, 1 KiB limit) prints "persist
        // phase bounds: 8272242 instructions serving clients, 12156924 after a restore".
        let d = declared(
            DEFAULT_MAX_DIRTY,
            DEFAULT_CLIENTS,
            RING_CAPACITY,
            &InstrModel::QEMU_SPIDRV,
        )
        .unwrap();
        assert_eq!(d.phase.serving, 8_272_242);
        assert_eq!(d.phase.restore, 12_156_924);
        assert_eq!(d.pending_cap, PENDING_CAP_MIN);
        assert!(d.reserve < d.pending_cap);
    }

    #[test]
    fn more_clients_and_a_larger_limit_declare_more_and_too_large_a_limit_is_refused() {
        let m = InstrModel::QEMU_SPIDRV;
        let one = declared(1024, 1, RING_CAPACITY, &m).unwrap();
        let two = declared(1024, 2, RING_CAPACITY, &m).unwrap();
        assert!(two.phase.serving > one.phase.serving);
        assert_eq!(two.persist.bytes, 2 * one.persist.bytes);
        assert!(declared(4096, 2, RING_CAPACITY, &m).unwrap().phase.serving > two.phase.serving);
        let largest = declared(1 << 20, 2, RING_CAPACITY, &m).unwrap_err();
        assert!(
            largest > 1024,
            "the refusal names a larger limit that fits: {largest}"
        );
    }

    #[test]
    fn on_the_spi_bus_the_service_declares_its_dearer_driver_calls() {
        // `heapsvc` on QEMU with `--nvm-bus spi` (app `heap`) prints "persist phase
        // bounds: 23934002 instructions serving clients, 26744460 after a restore".
        let spi = declared(
            DEFAULT_MAX_DIRTY,
            DEFAULT_CLIENTS,
            RING_CAPACITY,
            &InstrModel::QEMU_SPIDRV_ON_BUS,
        );
        let mmio = declared(
            DEFAULT_MAX_DIRTY,
            DEFAULT_CLIENTS,
            RING_CAPACITY,
            &InstrModel::QEMU_SPIDRV,
        );
        let (spi, mmio) = (spi.unwrap(), mmio.unwrap());
        assert_eq!(
            (spi.reserve, spi.pending_cap),
            (mmio.reserve, mmio.pending_cap)
        );
        assert_eq!(
            (spi.phase.serving, spi.phase.restore),
            (24_030_002, 26_872_460)
        );
        assert!(spi.phase.serving > 2 * mmio.phase.serving);
    }

    #[test]
    fn on_a_512_kib_fram_the_cap_is_its_16_kib_ring_and_the_bounds_smaller() {
        // The ESP32-C3's heap app: its SPI driver's ring is 16 KiB (amber-format).
        let ring = amber_vring::layout::capacity_for(16 * 1024);
        let m = InstrModel::QEMU_SPIDRV_ON_BUS;
        let c3 = declared(DEFAULT_MAX_DIRTY, DEFAULT_CLIENTS, ring, &m).unwrap();
        let qemu = declared(DEFAULT_MAX_DIRTY, DEFAULT_CLIENTS, RING_CAPACITY, &m).unwrap();
        assert_eq!(c3.pending_cap, ring);
        assert!(
            c3.reserve < c3.pending_cap,
            "requests fit between the persists"
        );
        assert_eq!(c3.reserve, qemu.reserve);
        assert!(c3.phase.serving < qemu.phase.serving);
        assert!(c3.phase.restore < qemu.phase.restore);
        assert_eq!(
            declared(8192, DEFAULT_CLIENTS, 4096, &m),
            Err(max_dirty_for_ring(&heap_config(8192), max_object(8192), 4096).unwrap_or(0))
        );
    }

    #[test]
    fn the_largest_object_fits_a_write_pin_under_the_limit() {
        assert_eq!(max_object(1024), 1024 - Config::DIRTY_OVERHEAD);
        assert_eq!(max_object(4096), 1024);
    }
}
