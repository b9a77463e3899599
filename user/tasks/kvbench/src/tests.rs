//! Host checks of the benchmark's parts: the emulated flash behaves as a NOR flash,
//! and every store carries out every workload (the runner checks every get) with the
//! device traffic its device model needs.

use crate::counts::{CountingNvm, DeviceCounts, Metered};
use crate::flash::{NorFlashEmu, SECTOR_BYTES};
use crate::stores::{KvStore, MapStore, SpiFram, Store, FLASH_PAGES};
use crate::workload::{run, Kind, WORKLOADS};
use amber_fram::{EmuFram, Fram, Part};
use amber_kv::{Config, Layout};
use amber_nvm::MmioNvm;
use core::cell::Cell;
use embedded_storage_async::nor_flash::{NorFlash, ReadNorFlash};

const BYTES: usize = FLASH_PAGES * SECTOR_BYTES as usize;

fn block_on<F: core::future::Future>(f: F) -> F::Output {
    let mut f = core::pin::pin!(f);
    let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    loop {
        if let core::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn the_emulated_flash_programs_only_zeros_and_erases_whole_sectors() {
    let mut array = vec![0u8; 2 * SECTOR_BYTES as usize];
    let counts = Cell::new(DeviceCounts::default());
    let mut f = NorFlashEmu::new(&mut array, &counts);
    block_on(f.write(250, &[0x0F; 10])).unwrap();
    block_on(f.write(250, &[0xF3; 1])).unwrap();
    let mut b = [0u8; 2];
    block_on(f.read(250, &mut b)).unwrap();
    assert_eq!(b, [0x03, 0x0F], "a program only clears bits");
    let c = counts.get();
    assert_eq!(
        (c.programs, c.bytes_written),
        (3, 11),
        "10 bytes across a page boundary"
    );
    assert!(
        block_on(f.erase(100, 4096)).is_err(),
        "erases are sector-aligned"
    );
    assert!(block_on(f.write(2 * SECTOR_BYTES - 1, &[0; 2])).is_err());
    block_on(f.erase(0, SECTOR_BYTES)).unwrap();
    block_on(f.read(250, &mut b)).unwrap();
    assert_eq!(b, [0xFF; 2]);
    assert_eq!(counts.get().erases, 1);
}

/// Runs every workload, shortened, on `make`'s stores.
fn every_workload(
    mut make: impl FnMut(&crate::workload::Workload, &mut dyn FnMut(&mut dyn Store)),
) {
    for w in &WORKLOADS {
        make(w, &mut |s: &mut dyn Store| {
            let o = run(s, w, 1500);
            let want = if w.kind == Kind::Scan { 1000 } else { 1500 };
            assert!(o.ops >= want, "{}: {} ops", w.name, o.ops);
            if w.kind == Kind::Scan {
                assert_eq!(
                    o.device.bytes_written, 0,
                    "{}: a scan writes nothing",
                    w.name
                );
            } else {
                assert!(
                    o.device.bytes_written > 0,
                    "{}: the puts reached the device",
                    w.name
                );
            }
        });
    }
}

fn config(layout: Layout, w: &crate::workload::Workload) -> Config {
    Config {
        layout,
        buckets: 1536 / layout.entries(),
        max_value: w.value as u16,
    }
}

#[test]
fn amber_kv_runs_every_workload_on_the_spi_fram_and_memory_mapped() {
    let mut mem = vec![0u64; BYTES / 8];
    for layout in [Layout::Linear, Layout::Bucketed { entries: 4 }] {
        every_workload(|w, check| {
            // SAFETY: `mem` outlives the device, and nothing else touches it meanwhile.
            let nvm = unsafe { MmioNvm::new(mem.as_mut_ptr().cast(), BYTES as u32) };
            let spent = Cell::new(DeviceCounts::default());
            let chip = EmuFram::new(Part::MB85RS4MT, nvm, 0, |_| {}).unwrap();
            let fram = Fram::new(Metered::new(chip, &spent), Part::MB85RS4MT);
            let mut s = KvStore::new(SpiFram::new(fram, &spent), config(layout, w));
            check(&mut s);
            assert!(s.counts().wire_bytes > s.counts().bytes_written);
            // SAFETY: as above.
            let nvm = unsafe { MmioNvm::new(mem.as_mut_ptr().cast(), BYTES as u32) };
            let counts = Cell::new(DeviceCounts::default());
            let mut s = KvStore::new(CountingNvm::new(nvm, &counts), config(layout, w));
            check(&mut s);
            assert!(s.counts().halfwords > 0);
        });
    }
}

#[test]
fn the_map_runs_every_workload_on_the_nor_flash_and_erases_when_it_must() {
    let mut array = vec![0u8; BYTES];
    let mut erases = 0;
    every_workload(|_, check| {
        let counts = Cell::new(DeviceCounts::default());
        let mut s = MapStore::new(NorFlashEmu::new(&mut array, &counts), &counts);
        check(&mut s);
        erases += s.counts().erases;
    });
    assert!(
        erases > 0,
        "the 256-byte workloads outgrow the flash and collect garbage"
    );
}
