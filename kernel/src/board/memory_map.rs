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
    /// Tasks' code (and their read-only data where `code_alias` is 0), at the
    /// addresses instructions are fetched from.
    pub task_code: Range,
    /// What each task's code region starts and ends on (a multiple of 256).
    pub task_code_align: u32,
    /// Tasks' data, bss and stacks (and read-only data where `code_alias` is not 0):
    /// checkpointed.
    pub task_ram: Range,
    /// RAM no checkpoint copies, for `heap` memory objects (their owner persists them).
    pub heap_ram: Range,
    /// What to add to a data address to get the address the same byte has on the
    /// instruction bus (0 when one bus sees everything; 0x70_0000 on the ESP32-C3).
    pub code_alias: u32,
    /// A device register only the kernel may touch (its console UART's first
    /// register): what the `faulter` app reaches for to show a task is kept off devices.
    pub console: u32,
    /// PMP entries the CPU has.
    pub pmp_entries: usize,
    /// Where the NVM is mapped into the address space, when it is memory-mapped.
    pub nvm_window: Option<u32>,
}

impl MemoryMap {
    /// The physical (data-bus) address of `addr`: an address in the task code range is
    /// an instruction-bus alias, [`MemoryMap::code_alias`] above the byte it names.
    pub const fn physical(&self, addr: u32) -> u32 {
        if addr >= self.task_code.base && addr < self.task_code.end() {
            addr - self.code_alias
        } else {
            addr
        }
    }

    /// The first pair (by index) of `ranges`, each `(base, len)`, that share a byte of
    /// physical memory once aliases are undone: two tasks' regions must never, even
    /// when one is seen through the instruction bus and the other through the data
    /// bus. Empty ranges share nothing.
    pub fn first_physical_overlap(&self, ranges: &[(u32, u32)]) -> Option<(usize, usize)> {
        let span = |(base, len): (u32, u32)| {
            let start = self.physical(base) as u64;
            (start, start + len as u64)
        };
        for (i, &a) in ranges.iter().enumerate() {
            for (j, &b) in ranges.iter().enumerate().skip(i + 1) {
                let ((a0, a1), (b0, b1)) = (span(a), span(b));
                if a0 < b1 && b0 < a1 {
                    return Some((i, j));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map with the ESP32-C3's shape (code seen 0x70_0000 above its SRAM) whose
    /// addresses this test chooses.
    const ALIASED: MemoryMap = MemoryMap {
        kernel: Range {
            base: 0x3FC8_0000,
            len: 0x4_0000,
        },
        task_code: Range {
            base: 0x403C_0000,
            len: 0x8000,
        },
        task_code_align: 256,
        task_ram: Range {
            base: 0x3FCC_8000,
            len: 0x1_0000,
        },
        heap_ram: Range {
            base: 0x3FCD_8000,
            len: 0x4000,
        },
        code_alias: 0x70_0000,
        console: 0x6000_0000,
        pmp_entries: 16,
        nvm_window: None,
    };

    #[test]
    fn regions_that_alias_the_same_sram_overlap() {
        // Task code at 0x403C_0000 is SRAM 0x3FCC_0000.
        assert_eq!(ALIASED.physical(0x403C_0000), 0x3FCC_0000);
        assert_eq!(ALIASED.physical(0x3FCC_8000), 0x3FCC_8000);
        let code = (0x403C_0000, 0x2000);
        assert_eq!(
            ALIASED.first_physical_overlap(&[code, (0x3FCC_8000, 0x2000)]),
            None
        );
        assert_eq!(
            ALIASED.first_physical_overlap(&[code, (0x3FCC_8000, 0x100), (0x3FCC_1F00, 0x100)]),
            Some((0, 2)),
            "RAM through the data bus on top of code through the instruction bus"
        );
        assert_eq!(
            ALIASED.first_physical_overlap(&[code, (0x403C_1000, 4)]),
            Some((0, 1))
        );
        assert_eq!(
            ALIASED.first_physical_overlap(&[code, (0x403C_2000, 0)]),
            None
        );
    }
}
