//! A board's memory map: where the kernel, the tasks' code and RAM, and the RAM that
//! checkpoints leave out may go, how the instruction and data buses see the same SRAM,
//! how many PMP entries the CPU has, and where a memory-mapped NVM appears. Each board
//! defines one (`qemu_virt/map.rs`), and from it the kernel's link script is written
//! (`build.rs`) and `cargo xtask` places an app's tasks and memory. Plain constants:
//! this file must depend on nothing, since `build.rs` compiles it too.

/// A range of addresses, `[base, base + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub base: u32,
    pub len: u32,
}

impl Range {
    /// One past the last address.
    pub const fn end(&self) -> u32 {
        self.base + self.len
    }
}

/// Where things go on a board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryMap {
    /// The kernel image, its stack and its heap (the link script's RAM).
    pub kernel: Range,
    /// Tasks' code and read-only data, at the addresses instructions are fetched from.
    pub task_code: Range,
    /// Tasks' data, bss and stacks: checkpointed.
    pub task_ram: Range,
    /// RAM no checkpoint copies, for `heap` memory objects (their owner persists them).
    pub heap_ram: Range,
    /// What to add to a data address to get the address the same byte has on the
    /// instruction bus (0 when one bus sees everything; 0x70_0000 on the ESP32-C3).
    pub code_alias: u32,
    /// PMP entries the CPU has.
    pub pmp_entries: usize,
    /// Where the NVM is mapped into the address space, when it is memory-mapped.
    pub nvm_window: Option<u32>,
}
