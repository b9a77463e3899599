//! Task entry and panic: `_start` runs the task's main, then exits; a panic prints
//! where and why, then exits with [`crate::PANIC_EXIT`]. Device builds only. The
//! kernel starts `_start` with `sp` at the top of the task's stack.

core::arch::global_asm!(
    r#"
    .section .text.start, "ax"
    .global _start
_start:
    call {start}
1:  j 1b
"#,
    start = sym start,
);

unsafe extern "C" {
    /// Defined by the task through [`crate::main!`].
    fn amber_main();
}

extern "C" fn start() -> ! {
    // SAFETY: `amber_main` is the plain `extern "C" fn()` that `main!` defines.
    unsafe { amber_main() };
    crate::exit(0)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    match info.location() {
        Some(at) => crate::println!(
            "panicked at {}:{}: {}",
            at.file(),
            at.line(),
            info.message()
        ),
        None => crate::println!("panicked: {}", info.message()),
    }
    crate::exit(crate::PANIC_EXIT)
}
