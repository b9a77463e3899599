//! The panic handler: a broken kernel invariant. Prints where, then exits QEMU with
//! `ExitCode::Panic`. It must never return and never allocate.

use crate::board::{Board, Chosen};
use crate::{console, exit::ExitCode};

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    match info.location() {
        Some(at) => console::panic_write(format_args!(
            "KERNEL PANIC at {}:{}:{}: {}",
            at.file(),
            at.line(),
            at.column(),
            info.message()
        )),
        None => console::panic_write(format_args!("KERNEL PANIC: {}", info.message())),
    }
    Chosen::exit(ExitCode::Panic)
}
