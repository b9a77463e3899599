//! Console output: formats into a buffer of one console line and hands it to the
//! kernel with `DebugWrite`. It never allocates; text longer than a buffer is sent in
//! several writes.

use core::fmt::{self, Write};

const BUF: usize = amber_abi::MAX_DEBUG_WRITE as usize;

/// A formatting buffer that flushes to the kernel console.
pub struct Console {
    buf: [u8; BUF],
    len: usize,
}

impl Console {
    pub const fn new() -> Self {
        Console {
            buf: [0; BUF],
            len: 0,
        }
    }

    /// Sends what is buffered. Console output is best effort: a failed write is
    /// dropped, since there is nowhere else to report it.
    pub fn flush(&mut self) {
        if self.len > 0 {
            let _ = crate::debug_write(&self.buf[..self.len]);
            self.len = 0;
        }
    }
}

impl Default for Console {
    fn default() -> Self {
        Self::new()
    }
}

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            if self.len == BUF {
                self.flush();
            }
            self.buf[self.len] = b;
            self.len += 1;
        }
        Ok(())
    }
}

#[doc(hidden)]
pub fn _print(args: fmt::Arguments) {
    let mut c = Console::new();
    let _ = c.write_fmt(args);
    c.flush();
}
