//! Checkpoint triggers and recovery on QEMU: the power-failure interrupt commits a
//! checkpoint and halts, and the next boot resumes exactly that checkpoint; damaged
//! checkpoint data is refused by name, without a byte of the checkpoint area changing.

use amber_kernel::exit::ExitCode;
use amber_tests::{app_machine, number_after, Qemu};
use std::time::Duration;

/// The console byte that raises the power-failure interrupt (Ctrl-P).
const POWER_FAIL: u8 = 0x10;

#[test]
fn a_power_failure_interrupt_commits_a_checkpoint_that_the_next_boot_resumes() {
    let machine = app_machine("ckcounter");
    let mut q = Qemu::boot(&machine);
    q.expect("fresh start");
    let before = q.expect("counter: ");
    let printed = number_after(&before, "counter: ").expect("a count");
    q.send(&[POWER_FAIL]);
    let done = q.expect("power failure: checkpoint");
    assert!(
        done.contains("committed in") && done.contains("since the interrupt; halting"),
        "{done}"
    );
    let version = number_after(&done, "power failure: checkpoint ").expect("a version");
    assert_eq!(
        q.exit_code(),
        0,
        "after the power-failure checkpoint the machine halts"
    );

    let mut q = Qemu::boot(&machine);
    let line = q.expect("recovered checkpoint");
    assert_eq!(
        number_after(&line, "recovered checkpoint "),
        Some(version),
        "the next boot must resume the checkpoint the power failure committed"
    );
    let after = q.expect_within("counter: ", Duration::from_secs(30));
    let resumed = number_after(&after, "counter: ").expect("a count");
    assert!(
        resumed >= printed,
        "the counter went back from {printed} to {resumed} across the power failure"
    );
    q.kill();
}

#[test]
fn damaged_checkpoint_data_is_refused_by_name_and_left_unchanged() {
    let machine = app_machine("bank");
    let image = machine.nvm.as_ref().unwrap().0.clone();
    let mut q = Qemu::boot(&machine);
    q.expect("fresh start");
    q.expect("bank: ");
    q.kill();
    // Overwrite a large part of the checkpoint area, where the backups live.
    let mut bytes = std::fs::read(&image).unwrap();
    for b in &mut bytes[0x1000..0x40000] {
        *b ^= 0x5A;
    }
    std::fs::write(&image, &bytes).unwrap();

    let mut q = Qemu::boot(&machine);
    let line = q.expect("cannot recover from the NVM");
    assert!(line.contains("checkpoint area was not changed"), "{line}");
    assert_eq!(q.exit_code(), ExitCode::NvmRefused.code());
    // Only the boot counter (before the checkpoint area) may have moved.
    assert!(
        std::fs::read(&image).unwrap()[0x1000..] == bytes[0x1000..],
        "a refused checkpoint area was modified"
    );
    let report = nvm_inspect::inspect(&bytes);
    assert!(
        !report.is_consistent(),
        "nvm-inspect must see the damage too"
    );
}

#[test]
fn a_checkpoint_of_another_app_is_refused_and_an_explicit_format_starts_afresh() {
    let counter = app_machine("ckcounter");
    let image = counter.nvm.as_ref().unwrap().0.clone();
    let mut q = Qemu::boot(&counter);
    q.expect("fresh start");
    q.expect("counter: 300 committed");
    q.kill();

    // The bank app on the counter's NVM: refused, by name.
    let mut bank = app_machine("bank");
    bank.nvm = counter.nvm.clone();
    let mut q = Qemu::boot(&bank);
    q.expect("holds a checkpoint of another app");
    assert_eq!(q.exit_code(), ExitCode::NvmRefused.code());

    // An explicit format erases the counter's checkpoint: the bank starts afresh.
    bank.bootargs = "amber.format".into();
    let mut q = Qemu::boot(&bank);
    q.expect("formatted a new NVM");
    q.expect("fresh start: app bank");
    q.expect("bank: 500 transfers");
    q.kill();
    assert!(nvm_inspect::inspect(&std::fs::read(&image).unwrap()).is_consistent());
}
