//! A write guard cannot coexist with a read guard on the same object.
use amber_nvm::sim::VecNvm;
use vnv_heap::{Config, VnvHeap};

fn main() {
    let config = Config::new(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(VecNvm::new(config.nvm_end().unwrap()), &mut cache, config).unwrap();
    let mut h = heap.alloc(1u32).unwrap();
    let read = heap.get_ref(&h).unwrap();
    let mut write = heap.get_mut(&mut h).unwrap();
    *write = *read;
}
