//! vNV-Heap benchmarks (work in progress, see issue 5).
fn main() {}
