//! User task tests: the programs of user/apps run in U-mode under PMP, talk over IPC
//! (words, and bytes through descriptors and IPC buffers), get stopped when they touch
//! what is not theirs, survive a syscall fuzzer, and drive a device from user space
//! through an IrqNotification.

use amber_tests::{app_machine, number_after, record, Qemu};
use std::time::Duration;

const SLOW: Duration = Duration::from_secs(90);

#[test]
fn hello_prints_from_user_mode_and_exits() {
    let mut q = Qemu::boot(&app_machine("hello"));
    q.expect("[hello] Hello from U-mode!");
    q.expect("hello exited with code 0");
    q.kill();
}

#[test]
fn pingpong_passes_a_counter_ten_thousand_times() {
    let mut q = Qemu::boot(&app_machine("pingpong"));
    let line = q.expect_within("pingpong: final count", SLOW);
    assert_eq!(
        number_after(&line, "final count "),
        Some(10_000),
        "every round trip must add exactly one: {line}"
    );
    q.expect("ping exited with code 0");
    q.kill();
}

#[test]
fn the_bench_app_gets_its_bytes_echoed_through_descriptors_and_through_ipc_buffers() {
    // Each figure line comes only after the bench checked its echo (words, length and
    // bytes): "not measured" names what came back wrong. Under -icount, where the
    // bench measures at all.
    let mut m = app_machine("bench");
    m.icount = true;
    let mut q = Qemu::boot(&m);
    // The words of the lines a measured figure prints (a failed check prints
    // "not measured" and the reason instead).
    for what in [
        "instructions (Call + ReplyRecv, 4 words, two task switches",
        "instructions (Call + ReplyRecv, 4 words and a 64-byte buffer copied",
        "instructions (Call + ReplyRecv, 4 words and 64 bytes from each side's registered IPC buffer",
    ] {
        q.expect_within(what, SLOW);
    }
    q.expect("bench exited with code 0");
    assert!(
        !q.transcript().contains("not measured"),
        "{}",
        q.transcript()
    );
    q.kill();
}

#[test]
fn faulter_is_stopped_at_every_forbidden_access_while_the_heartbeat_goes_on() {
    let mut q = Qemu::boot(&app_machine("faulter"));
    // The faulter names the address of each access before it makes it (None: an
    // illegal instruction, whose mtval is the instruction). The causes and the
    // addresses of QEMU `virt`'s map (tools/c3sim checks the same on the ESP32-C3).
    let expected = [
        ("load access fault", Some("0x80000000")),
        ("store access fault", Some("0x81800000")),
        ("load access fault", Some("0x10000000")),
        ("illegal instruction", None),
        ("store access fault", Some("0x81002000")),
        ("instruction access fault", Some("0x81802000")),
    ];
    for (cause, addr) in expected {
        let announced = q.expect("[faulter] faulter: ");
        if let Some(addr) = addr {
            assert!(
                announced.ends_with(&format!(" at {addr}")),
                "the faulter should reach for {addr}: {announced}"
            );
        }
        let line = q.expect("task faulter: ");
        assert!(
            line.contains(&format!("{cause} at {}", addr.unwrap_or("0x"))),
            "expected a {cause} at {addr:?}, got: {line}"
        );
        assert!(
            line.contains("restart"),
            "the faulter's policy is restart: {line}"
        );
    }
    q.expect("faulter: done, all 6 forbidden accesses were stopped");
    // The heartbeat keeps beating after the faults: two more beats arrive.
    let beat = q.expect("[heartbeat] heartbeat");
    let n = number_after(&beat, "] heartbeat ").expect("a heartbeat number");
    q.expect(&format!("[heartbeat] heartbeat {}", n + 2));
    assert!(
        !q.transcript().contains("faulter: ERROR"),
        "a forbidden access went through:\n{}",
        q.transcript()
    );
    q.kill();
}

#[test]
fn sysfuzz_makes_100000_random_syscalls_and_the_kernel_still_works() {
    let mut q = Qemu::boot(&app_machine("sysfuzz"));
    q.expect("sysfuzz: seed");
    let done = q.expect_within("calls returned", SLOW);
    let ok = number_after(&done, "returned: ").unwrap();
    let refused = number_after(&done, "succeeded, ").unwrap();
    let skipped = number_after(&done, "refused, ").unwrap();
    assert_eq!(ok + refused + skipped, 100_000, "{done}");
    assert!(refused > ok, "most random calls must be refused: {done}");
    q.expect("checker answered 41 -> 42: the kernel still works");
    q.expect("sysfuzz exited with code 0");
    assert!(!q.transcript().contains("KERNEL PANIC"));
    q.kill();
    record(&format!(
        "sysfuzz (QEMU, U-mode): {} random syscalls ({ok} succeeded, {refused} refused, {skipped} skipped), the kernel still works",
        ok + refused + skipped
    ));
}

#[test]
fn a_user_space_driver_gets_its_interrupts_through_an_irq_notification() {
    let mut q = Qemu::boot(&app_machine("driver"));
    for n in 1..=5 {
        q.expect(&format!("rtcdrv: alarm {n} fired"));
    }
    q.expect("rtcdrv: 5 alarms received through the IrqNotification");
    q.kill();
}
