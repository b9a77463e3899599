//! The two doors from the portable kernel to the machine: raw user memory and the few
//! devices the kernel itself drives. The core must validate every user address against
//! the task's regions BEFORE it calls [`UserMemory`]; the core must never pass an
//! unchecked user address through these doors (implementations do not check).
//! The core takes both as `dyn`, never as generics, so that its syscall paths are
//! compiled here (for speed) rather than in the crate that names the types.

use crate::abi::MAX_MSG_BYTES;

/// Raw access to the physical address space tasks live in (there is no MMU).
pub trait UserMemory {
    /// Reads `buf.len()` bytes at `addr`. Only called for validated ranges.
    fn read(&mut self, addr: u32, buf: &mut [u8]);
    /// Writes `data` at `addr`. Only called for validated ranges.
    fn write(&mut self, addr: u32, data: &[u8]);
    /// Reads the little-endian word at `addr`, which is word aligned. Only called for
    /// validated ranges. A memory that can load whole words overrides this read of
    /// bytes.
    fn read_word(&mut self, addr: u32) -> u32 {
        let mut b = [0u8; 4];
        self.read(addr, &mut b);
        u32::from_le_bytes(b)
    }
    /// Writes `words` as little-endian words at `addr` (any alignment). Only called
    /// for validated ranges. A memory that can store whole words overrides this.
    fn write_words(&mut self, addr: u32, words: &[u32]) {
        write_words_bytewise(self, addr, words)
    }
    /// Copies `len` (at most [`MAX_MSG_BYTES`]) bytes from `from` to `to`, as if read
    /// whole and then written (the ranges may overlap). Only called for validated
    /// ranges. A memory that can copy in place overrides this staged copy.
    fn copy(&mut self, from: u32, to: u32, len: u32) {
        let mut buf = [0u8; MAX_MSG_BYTES as usize];
        let Some(part) = buf.get_mut(..len as usize) else {
            return;
        };
        self.read(from, part);
        self.write(to, part);
    }
    /// A message's delivery into the receiver's memory in one call: copies `len`
    /// bytes from `from` to `to` as [`UserMemory::copy`] does (none when `len` is 0),
    /// then writes the result words `[len, sent, got_cap]` at `out_at` as
    /// [`UserMemory::write_words`] does (none when `out_at` is 0). Only called for
    /// validated ranges. A memory that marks the pages the kernel writes overrides
    /// this, to find the receiver once.
    fn deliver(&mut self, from: u32, to: u32, len: u32, out_at: u32, sent: u32, got_cap: bool) {
        deliver_in_parts(self, from, to, len, out_at, [len, sent, u32::from(got_cap)])
    }
}

/// [`UserMemory::deliver`] by [`UserMemory::copy`], then [`UserMemory::write_words`] of
/// `out` (none when `len`, or `out_at`, is 0): the default, and what a memory that
/// delivers faster in its common case does otherwise. Out of line and cold, so that
/// such a memory's fast case carries no frame for it.
#[cold]
#[inline(never)]
pub fn deliver_in_parts<M: UserMemory + ?Sized>(
    mem: &mut M,
    from: u32,
    to: u32,
    len: u32,
    out_at: u32,
    out: [u32; 3],
) {
    if len > 0 {
        mem.copy(from, to, len);
    }
    if out_at != 0 {
        mem.write_words(out_at, &out);
    }
}

/// [`UserMemory::write_words`] through [`UserMemory::write`], a word's bytes at a
/// time: the default, and what a memory storing whole words does at an unaligned
/// address. Out of line: inlined, the compiler would serve an aligned caller's words
/// with these byte-wise stores too.
#[inline(never)]
pub fn write_words_bytewise<M: UserMemory + ?Sized>(mem: &mut M, addr: u32, words: &[u32]) {
    for (i, w) in words.iter().enumerate() {
        mem.write(addr.wrapping_add(4 * i as u32), &w.to_le_bytes());
    }
}

/// The machine services the kernel state machine needs.
pub trait Platform {
    /// Prints bytes a task wrote with `DebugWrite`, attributed to it.
    fn console(&mut self, task: &str, bytes: &[u8]);
    /// Moves console bytes received and not yet taken into `buf`, oldest first;
    /// returns how many (0: none waiting). Never blocks.
    fn console_read(&mut self, buf: &mut [u8]) -> usize;
    /// Enables an interrupt source (called at a driver's first `IrqWait`).
    fn irq_enable(&mut self, irq: u32);
    /// Completes a delivered interrupt so the source can fire again (on `IrqAck`).
    fn irq_complete(&mut self, irq: u32);
    /// Ticks since boot (the timer's time base).
    fn now_ticks(&self) -> u64;
    /// The board's cycle or instruction counter, for what the checkpoint cycle
    /// reports (how long a persist phase took); only differences of it are used.
    fn counter(&self) -> u64;
    /// Whether the hart's `cycle` and `instret` counters count exactly (QEMU
    /// `-icount`) rather than follow a clock; tasks learn it from `Now`.
    fn counter_exact(&self) -> bool;
    /// Reads and writes the NVM the kernel drives, at `offset` (for `NvmRead` and
    /// `NvmWrite`: the core checked the range lies in the caller's grant). The board
    /// refuses a range in the checkpoint area (`BadArgument`) and reports a device
    /// error as `NvmFailed`; a write is one store of the kernel's sequence (cut like
    /// any other).
    fn nvm_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), crate::abi::Error>;
    fn nvm_write(&mut self, offset: u32, data: &[u8]) -> Result<(), crate::abi::Error>;
    /// Where a memory-mapped NVM appears in the address space (an `eternal` memory
    /// object's address minus it is its NVM offset); `None` when nothing maps it.
    fn nvm_window(&self) -> Option<u32>;
    /// Whether the kernel reaches its NVM over a serial bus (SPI FRAM), so that tasks
    /// must too (`Now` tells them).
    fn nvm_on_bus(&self) -> bool;
    /// Whether the kernel numbers its NVM stores for an injected power cut
    /// (`amber.cut`), so that a task's NVM stores are cut in the same sequence only if
    /// it makes them by `NvmWrite` (`Now` tells tasks).
    fn nvm_stores_numbered(&self) -> bool;
}
