//! Boot tests: the kernel reaches its idle loop with timer and UART interrupts working,
//! and every way boot can fail ends with a message in words and its own exit code.

use amber_kernel::exit::ExitCode;
use amber_tests::{kernel, machine, scratch, Qemu};

#[test]
fn boot_reaches_the_idle_loop_and_serves_timer_and_uart_interrupts() {
    let dir = scratch("idle");
    let mut q = Qemu::boot(&machine(&dir.join("nvm.img"), "amber.test=idle"));
    q.expect("formatted a new NVM of 4194304 bytes");
    q.expect("entering the idle loop");
    q.send(b"x");
    let line = q.expect("idle test passed");
    assert!(
        line.contains("timer ticks") && line.contains(", 1 console bytes received"),
        "{line}"
    );
    assert_eq!(
        q.exit_code(),
        0,
        "the idle test exits with success through the test device"
    );
}

#[test]
fn a_kernel_panic_prints_its_location_and_exits_with_the_panic_code() {
    let dir = scratch("panic");
    let mut q = Qemu::boot(&machine(&dir.join("nvm.img"), "amber.test=panic"));
    let line = q.expect("KERNEL PANIC at ");
    assert!(
        line.contains("kernel/src/kmain.rs:") && line.contains("panic requested"),
        "the panic line must name file, line and message: {line}"
    );
    assert_eq!(q.exit_code(), ExitCode::Panic.code());
}

#[test]
fn an_unknown_boot_option_is_refused_by_name() {
    let dir = scratch("bad-option");
    let mut q = Qemu::boot(&machine(&dir.join("nvm.img"), "amber.fromat"));
    q.expect("unknown boot option `amber.fromat`");
    assert_eq!(q.exit_code(), ExitCode::BadBootArgs.code());
}

#[test]
fn a_repeated_boot_option_is_refused_naming_both() {
    let dir = scratch("repeated-option");
    let mut q = Qemu::boot(&machine(
        &dir.join("nvm.img"),
        "amber.log=debug amber.log=warn",
    ));
    q.expect("boot option `amber.log=warn` repeats `amber.log=debug`");
    assert_eq!(q.exit_code(), ExitCode::BadBootArgs.code());
}

#[test]
fn boot_options_that_are_not_utf8_are_refused_whole() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("not-utf8");
    // A typo beside the bad byte: before, the whole line was dropped without a word.
    let mut cmd = machine(&dir.join("nvm.img"), "").command().expect("QEMU");
    cmd.arg("-append")
        .arg(std::ffi::OsStr::from_bytes(b"amber.fromat \xff"));
    let mut q = Qemu::spawn(cmd);
    q.expect("the boot options are not UTF-8 (byte 0xff at offset 13); none was applied");
    assert_eq!(q.exit_code(), ExitCode::BadBootArgs.code());
}

#[test]
fn without_an_nvm_device_boot_stops_with_a_clear_message() {
    let mut q = Qemu::boot(&amber_qemu::Machine::new(kernel()));
    q.expect("no NVM device");
    assert_eq!(q.exit_code(), ExitCode::NoNvmDevice.code());
}
