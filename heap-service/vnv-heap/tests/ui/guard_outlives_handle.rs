//! A guard cannot outlive its handle: dropping (freeing) the object while a guard
//! lives is rejected.
use amber_nvm::sim::VecNvm;
use vnv_heap::{Config, VnvHeap};

fn main() {
    let config = Config::new(256, 512);
    let mut cache = [0u8; 512];
    let heap = VnvHeap::new(VecNvm::new(config.nvm_end().unwrap()), &mut cache, config).unwrap();
    let h = heap.alloc(1u32).unwrap();
    let guard = heap.get_ref(&h).unwrap();
    drop(h);
    let _dangling = *guard;
}
