//! kvbench: the key-value peer comparison (app `kvbench`, run by `cargo xtask bench`
//! under `-icount`). Every workload of `kvbench::workload` runs on five stores, each
//! on a fresh 512 KiB device:
//!
//! | store | what |
//! |---|---|
//! | `kv-lpht-spi` | `amber-kv`, linear layout, on the MB85RS4MT FRAM through Amber's SPI protocol driver (the chip emulated over RAM) |
//! | `kv-clht-spi` | `amber-kv`, buckets of 4, same FRAM |
//! | `kv-lpht-mmio` | `amber-kv`, linear layout, on memory-mapped NVM (RAM here; MRAM-like) |
//! | `kv-clht-mmio` | `amber-kv`, buckets of 4, memory-mapped |
//! | `map-nor` | `sequential-storage`'s map with every cache, on the emulated W25Q32JV NOR flash |
//!
//! The tables hold 1,536 entries (1,000 keys used) of values up to the workload's
//! size. Each result is one line `kvbench: store=S workload=W ops=N instructions=I
//! ...` with the device counters and the stores' RAM; then `kvbench: done`.
//! Instructions are `instret` around each store call (the whole hart: the kernel's
//! 10 ms tick is in them too; `ticks=` says how many fell in the run), less the
//! instructions the emulated chips spent inside. The device regions are "heap" memory
//! objects (never checkpointed; the app takes no periodic checkpoints).

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_fram::{EmuFram, Fram, Part};
use amber_kv::{Config, Layout};
use amber_nvm::MmioNvm;
use amber_user::{memory, now, println, Memory};
use core::cell::Cell;
use kvbench::counts::{CountingNvm, DeviceCounts, Metered};
use kvbench::flash::NorFlashEmu;
use kvbench::stores::{KvStore, MapStore, SpiFram, Store};
use kvbench::workload::{run, Workload, OPS, WORKLOADS};

amber_user::main!(main);

/// The emulated flash's array and the FRAM's (or memory-mapped NVM's) array: the
/// app's memories `flash` and `nvm`, each [`DEVICE_BYTES`] (user/apps/kvbench.toml).
const FLASH: Memory = memory!("FLASH");
const NVM: Memory = memory!("NVM");
const DEVICE_BYTES: usize = 512 * 1024;
/// Entries of every `amber-kv` table.
const CAPACITY: u32 = 1536;

const STORES: [&str; 5] = [
    "kv-lpht-spi",
    "kv-clht-spi",
    "kv-lpht-mmio",
    "kv-clht-mmio",
    "map-nor",
];

fn config(layout: Layout, w: &Workload) -> Config {
    Config {
        layout,
        buckets: CAPACITY / layout.entries(),
        max_value: w.value as u16,
    }
}

/// The NVM array as a memory-mapped device.
fn nvm() -> MmioNvm {
    // SAFETY: the app grants this task its memory `nvm` (DEVICE_BYTES or more),
    // and only the one store built at a time uses it.
    unsafe { MmioNvm::new(NVM.base as *mut u8, DEVICE_BYTES as u32) }
}

fn kv_spi(layout: Layout, w: &Workload) -> ((usize, usize), kvbench::workload::Outcome) {
    let spent = Cell::new(DeviceCounts::default());
    let chip = EmuFram::new(Part::MB85RS4MT, nvm(), 0, |_| {}).expect("the array fits the part");
    let fram = Fram::new(Metered::new(chip, &spent), Part::MB85RS4MT);
    let mut s = KvStore::new(SpiFram::new(fram, &spent), config(layout, w));
    (s.ram(), run(&mut s, w, OPS))
}

fn kv_mmio(layout: Layout, w: &Workload) -> ((usize, usize), kvbench::workload::Outcome) {
    let counts = Cell::new(DeviceCounts::default());
    let mut s = KvStore::new(CountingNvm::new(nvm(), &counts), config(layout, w));
    (s.ram(), run(&mut s, w, OPS))
}

fn map_nor(w: &Workload) -> ((usize, usize), kvbench::workload::Outcome) {
    let counts = Cell::new(DeviceCounts::default());
    // SAFETY: the app grants this task its memory `flash` (DEVICE_BYTES or more) and only this flash uses it while it lives.
    let array = unsafe { core::slice::from_raw_parts_mut(FLASH.base as *mut u8, DEVICE_BYTES) };
    let mut s = MapStore::new(NorFlashEmu::new(array, &counts), &counts);
    (s.ram(), run(&mut s, w, OPS))
}

#[cfg(target_os = "none")]
const _: () = assert!(
    FLASH.len >= DEVICE_BYTES && NVM.len >= DEVICE_BYTES,
    "the app grants memories `flash` and `nvm` of DEVICE_BYTES bytes each"
);

fn main() {
    for w in &WORKLOADS {
        for store in STORES {
            let t0 = now();
            let ((ram_state, ram_buffer), o) = match store {
                "kv-lpht-spi" => kv_spi(Layout::Linear, w),
                "kv-clht-spi" => kv_spi(Layout::Bucketed { entries: 4 }, w),
                "kv-lpht-mmio" => kv_mmio(Layout::Linear, w),
                "kv-clht-mmio" => kv_mmio(Layout::Bucketed { entries: 4 }, w),
                _ => map_nor(w),
            };
            let d = o.device;
            println!(
                "kvbench: store={store} workload={} ops={} instructions={} emulation={} transactions={} wire={} written={} programs={} erases={} halfwords={} ram_state={ram_state} ram_buffer={ram_buffer} ticks={}",
                w.name,
                o.ops,
                o.instructions,
                d.emulation_instructions,
                d.transactions,
                d.wire_bytes,
                d.bytes_written,
                d.programs,
                d.erases,
                d.halfwords,
                now() - t0
            );
        }
    }
    println!("kvbench: done");
}
