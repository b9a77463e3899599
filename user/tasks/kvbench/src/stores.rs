//! The stores under test behind one interface: `amber-kv` tables (on any NVM that
//! counts its traffic) and `sequential-storage`'s map on the emulated NOR flash, with
//! every cache that crate offers (its fastest configuration). A store that fails an
//! operation panics: a benchmark of a broken store must not print a figure.

use crate::counts::{CountingNvm, DeviceCounts, Metered};
use crate::flash::NorFlashEmu;
use amber_fram::{EmuFram, Fram};
use amber_kv::{Config, Table, OP_STACK_BYTES};
use amber_nvm::{MmioNvm, Nvm, NvmError};
use core::cell::Cell;
use core::future::Future;
use core::mem::size_of;
use core::pin::pin;
use core::task::{Context, Poll, Waker};
use sequential_storage::cache::key_pointers::ArrayKeyPointers;
use sequential_storage::cache::page_pointers::ArrayPagePointers;
use sequential_storage::cache::page_states::ArrayPageStates;
use sequential_storage::cache::Cache;
use sequential_storage::map::{MapConfig, MapStorage};

/// Keys the workloads use (the size of the map's key cache).
pub const KEYS: usize = 1000;
/// Pages (sectors) of the flash range the map gets.
pub const FLASH_PAGES: usize = 128;
/// The map's buffer: the largest key and value serialized (4 + 256 bytes).
const MAP_BUFFER: usize = 4 + 256;

/// One store under test.
pub trait Store {
    fn put(&mut self, key: u32, value: &[u8]);
    /// The value of `key` into `out`: its length.
    fn get(&mut self, key: u32, out: &mut [u8]) -> Option<usize>;
    /// Reads every item the store holds; how many it read.
    fn scan(&mut self) -> u32;
    /// Device traffic so far.
    fn counts(&self) -> DeviceCounts;
    /// Bytes of RAM the store keeps between operations, and bytes of buffer an
    /// operation needs besides.
    fn ram(&self) -> (usize, usize);
}

/// Runs a future that never waits (the emulated flash answers at once) to completion.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// An NVM that tells its traffic.
pub trait Counted: Nvm {
    fn counts(&self) -> DeviceCounts;
}

impl<N: Nvm> Counted for CountingNvm<'_, N> {
    fn counts(&self) -> DeviceCounts {
        self.counted()
    }
}

/// The FRAM over SPI: Amber's MB85RS protocol driver over the emulated chip, the
/// chip's own instructions measured apart.
pub struct SpiFram<'c> {
    fram: Fram<Metered<'c, EmuFram<MmioNvm>>>,
    spent: &'c Cell<DeviceCounts>,
}

impl<'c> SpiFram<'c> {
    pub fn new(fram: Fram<Metered<'c, EmuFram<MmioNvm>>>, spent: &'c Cell<DeviceCounts>) -> Self {
        SpiFram { fram, spent }
    }
}

impl Nvm for SpiFram<'_> {
    fn size(&self) -> u32 {
        self.fram.size()
    }
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        self.fram.read(offset, buf)
    }
    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        self.fram.write(offset, data)
    }
    fn fence(&mut self) {
        self.fram.fence()
    }
    fn flush(&mut self) -> Result<(), NvmError> {
        self.fram.flush()
    }
}

impl Counted for SpiFram<'_> {
    fn counts(&self) -> DeviceCounts {
        let s = self.fram.stats();
        DeviceCounts {
            transactions: s.transactions,
            wire_bytes: s.wire_bytes,
            bytes_written: s.bytes_written,
            ..self.spent.get()
        }
    }
}

/// An `amber-kv` table.
pub struct KvStore<N> {
    table: Table<N>,
    buf: [u8; 256],
}

impl<N: Counted> KvStore<N> {
    /// A new table with `config` at the start of `nvm`.
    pub fn new(nvm: N, config: Config) -> Self {
        KvStore {
            table: Table::format(nvm, 0, config).expect("format the table"),
            buf: [0; 256],
        }
    }
}

impl<N: Counted> Store for KvStore<N> {
    fn put(&mut self, key: u32, value: &[u8]) {
        self.table.put(key, value).expect("amber-kv put");
    }

    fn get(&mut self, key: u32, out: &mut [u8]) -> Option<usize> {
        self.table.get(key, out).expect("amber-kv get")
    }

    fn scan(&mut self) -> u32 {
        let (mut from, mut n) = (0, 0);
        while let Some(e) = self
            .table
            .next_entry(from, &mut self.buf)
            .expect("amber-kv scan")
        {
            from = e.slot + 1;
            n += 1;
        }
        n
    }

    fn counts(&self) -> DeviceCounts {
        self.table.nvm().counts()
    }

    fn ram(&self) -> (usize, usize) {
        (size_of::<Table<N>>() - size_of::<N>(), OP_STACK_BYTES)
    }
}

/// The map's caches: page states, page pointers and a pointer for every key.
pub type MapCache = Cache<
    ArrayPageStates<FLASH_PAGES>,
    ArrayPagePointers<FLASH_PAGES>,
    ArrayKeyPointers<u32, KEYS>,
    u32,
>;

/// `sequential-storage`'s map on the emulated NOR flash.
pub struct MapStore<'m> {
    map: MapStorage<u32, NorFlashEmu<'m>, MapCache>,
    buf: [u8; MAP_BUFFER],
    counts: &'m Cell<DeviceCounts>,
}

impl<'m> MapStore<'m> {
    /// A map over the whole of `flash` (erased), with every cache.
    pub fn new(flash: NorFlashEmu<'m>, counts: &'m Cell<DeviceCounts>) -> Self {
        let end = (FLASH_PAGES * crate::flash::SECTOR_BYTES as usize) as u32;
        assert_eq!(
            embedded_storage_async::nor_flash::ReadNorFlash::capacity(&flash),
            end as usize
        );
        let cache = Cache::new(
            ArrayPageStates::new(),
            ArrayPagePointers::new(),
            ArrayKeyPointers::new(),
        );
        MapStore {
            map: MapStorage::new(flash, MapConfig::new(0..end), cache),
            buf: [0; MAP_BUFFER],
            counts,
        }
    }
}

impl Store for MapStore<'_> {
    fn put(&mut self, key: u32, value: &[u8]) {
        block_on(self.map.store_item(&mut self.buf, &key, &value)).expect("map store_item");
    }

    fn get(&mut self, key: u32, out: &mut [u8]) -> Option<usize> {
        let v =
            block_on(self.map.fetch_item::<&[u8]>(&mut self.buf, &key)).expect("map fetch_item")?;
        out[..v.len()].copy_from_slice(v);
        Some(v.len())
    }

    /// Every item on the flash, older copies of a key included (the map's iterator
    /// returns them; the newest is the last).
    fn scan(&mut self) -> u32 {
        let mut it =
            block_on(self.map.fetch_all_items(&mut self.buf)).expect("map fetch_all_items");
        let mut buf = [0u8; MAP_BUFFER];
        let mut n = 0;
        while block_on(it.next::<&[u8]>(&mut buf))
            .expect("map iterate")
            .is_some()
        {
            n += 1;
        }
        n
    }

    fn counts(&self) -> DeviceCounts {
        self.counts.get()
    }

    fn ram(&self) -> (usize, usize) {
        (
            size_of::<MapStorage<u32, NorFlashEmu<'_>, MapCache>>() - size_of::<NorFlashEmu<'_>>(),
            MAP_BUFFER,
        )
    }
}
