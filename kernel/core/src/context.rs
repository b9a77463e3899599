//! A thread's saved user registers, in the layout the trap entry code stores them.
//! Layout only: this file must never change the `repr(C)` offsets (regs at 0, pc at
//! 128); the assembly in `amber-kernel` depends on them.

/// The user register file: `regs[i]` is `x_i` (`regs[0]` is unused), `pc` is where the
/// thread resumes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context {
    /// `x0..x31`; `x0` is never read.
    pub regs: [u32; 32],
    /// The user pc (mepc).
    pub pc: u32,
}

/// Register numbers of the ABI registers.
pub(crate) mod reg {
    /// Stack pointer.
    pub const SP: usize = 2;
    /// First argument and the status on return.
    pub const A0: usize = 10;
    /// Syscall number.
    pub const A7: usize = 17;
}

impl Context {
    /// All registers zero.
    pub const ZERO: Context = Context {
        regs: [0; 32],
        pc: 0,
    };

    /// A fresh context that starts at `entry` with `sp = stack_top`.
    pub fn start(entry: u32, stack_top: u32) -> Context {
        let mut c = Context::ZERO;
        c.pc = entry;
        c.regs[reg::SP] = stack_top;
        c
    }

    /// Argument `i` (0..=5), i.e. `a_i`.
    pub(crate) fn arg(&self, i: usize) -> u32 {
        self.regs[reg::A0 + i]
    }
}

const _: () = assert!(core::mem::offset_of!(Context, regs) == 0);
const _: () = assert!(core::mem::offset_of!(Context, pc) == 128);
const _: () = assert!(core::mem::size_of::<Context>() == 132);
