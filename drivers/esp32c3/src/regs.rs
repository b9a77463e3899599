//! Register access: [`Regs`] reads and writes 32-bit registers by address; [`Mmio`]
//! does it with volatile accesses on the chip, the tests with a recording fake. The
//! sequences in this crate name each address exactly once, as a constant.

/// 32-bit register access by physical address.
pub trait Regs {
    fn read(&mut self, addr: u32) -> u32;
    fn write(&mut self, addr: u32, value: u32);

    /// Read, change, write back.
    fn modify(&mut self, addr: u32, f: impl FnOnce(u32) -> u32) {
        let v = self.read(addr);
        self.write(addr, f(v));
    }

    fn set_bits(&mut self, addr: u32, bits: u32) {
        self.modify(addr, |v| v | bits);
    }

    fn clear_bits(&mut self, addr: u32, bits: u32) {
        self.modify(addr, |v| v & !bits);
    }

    /// Orders every register access before it ahead of every one after it (RISC-V
    /// `fence`): esp-idf fences after interrupt-controller writes before interrupts may
    /// be taken, so that the CPU never sees a line in a state older than the one
    /// written.
    fn fence(&mut self);
}

/// The chip's registers, reached by volatile loads and stores.
pub struct Mmio(());

impl Mmio {
    /// # Safety
    ///
    /// Only on an ESP32-C3, by the one owner of the registers the caller then touches
    /// (the board), with every address passed being a device register of the chip.
    pub const unsafe fn new() -> Self {
        Mmio(())
    }
}

impl Regs for Mmio {
    fn read(&mut self, addr: u32) -> u32 {
        // SAFETY: `Mmio::new`'s contract: `addr` is a 32-bit device register.
        unsafe { (addr as usize as *const u32).read_volatile() }
    }

    fn write(&mut self, addr: u32, value: u32) {
        // SAFETY: as in `read`.
        unsafe { (addr as usize as *mut u32).write_volatile(value) }
    }

    fn fence(&mut self) {
        #[cfg(target_arch = "riscv32")]
        // SAFETY: `fence` only orders memory and device accesses.
        unsafe {
            core::arch::asm!("fence", options(nostack, preserves_flags))
        };
    }
}
