//! The SPI bus shared by the kernel and the SPI driver task (docs/nvm-buses.md), on
//! QEMU with `--nvm-bus spi`: the kernel's checkpoint area goes through the FRAM
//! protocol driver to an emulated chip, and a checkpoint waits until the driver task
//! has finished the request it is in (its transfers happen only inside requests) and
//! said `PersistDone` between requests.
//!
//! Under `-icount` (so each run repeats exactly) the power-failure interrupt is
//! injected as periodic checkpoint V becomes due (`amber.pfi=V`), for V in turn, until
//! it has arrived while the driver was inside a writer's request (the kernel's halt
//! report says how many tasks of the persist phase were inside a request at the
//! interrupt, and as the checkpoint was written). Every checkpoint must have been
//! written with no request in flight, and after a reboot from such a checkpoint every
//! record it covers must reach the FRAM, with the image consistent.

use amber_qemu::NvmBus;
use amber_tests::{app_machine, number_after, record, Qemu};
use std::time::Duration;

/// A generous bound on a wait that the guest's progress ends first.
const GUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Where the FRAM partition lies in a 4 MiB NVM image (superblock format v3), and the
/// records the writer keeps there (`user/tasks/writer`).
const FRAM_OFFSET: usize = 0x38_0000;
const SLOTS: usize = 64 * 1024;
/// Checkpoints at which the interrupt is tried, and how many must catch the driver
/// inside a request.
const TRIES: std::ops::Range<u64> = 20..32;
const WANTED: usize = 2;

fn fram_record(image: &[u8], n: usize) -> u32 {
    let at = FRAM_OFFSET + 4 * (n % SLOTS);
    u32::from_le_bytes(image[at..at + 4].try_into().unwrap())
}

#[test]
fn a_power_failure_inside_a_driver_request_waits_for_it_and_loses_nothing() {
    let mut caught = Vec::new();
    let mut machine = None;
    for v in TRIES {
        let mut m = app_machine("spiring");
        m.nvm_bus = NvmBus::Spi;
        m.icount = true;
        m.bootargs = format!("amber.pfi={v}");
        let mut q = Qemu::boot(&m);
        let committed = q.expect_within("power failure: checkpoint ", GUEST_TIMEOUT);
        let transcript = q.transcript();
        let Some(line) = transcript
            .lines()
            .find(|l| l.contains("tasks of the persist phase were inside a request"))
        else {
            panic!(
                "pfi={v}: no persist phase before the checkpoint: it did not wait for the \
                 driver (is spidrv a persist callback?)\n{transcript}"
            );
        };
        let (begin, end) = (
            number_after(line, "power failure: ").unwrap(),
            number_after(line, "at the interrupt, ").unwrap(),
        );
        assert!(
            committed.contains(&format!("checkpoint {v} committed"))
                && committed.contains("FRAM wire bytes"),
            "{committed}\n{transcript}"
        );
        assert_eq!(q.exit_code(), 0);
        assert_eq!(
            end,
            0,
            "pfi={v}: the checkpoint was written while the driver was inside a request\n{transcript}"
        );
        if begin > 0 {
            caught.push(v);
            machine = Some(m);
            if caught.len() == WANTED {
                break;
            }
        }
    }
    let Some(mut m) = machine else {
        panic!("no power failure in {TRIES:?} arrived while the driver was inside a request");
    };
    // Boot again from the last checkpoint that waited: every record it covers reaches
    // the chip once the driver has replayed its ring.
    m.bootargs.clear();
    let image = m.nvm.as_ref().unwrap().0.clone();
    let mut q = Qemu::boot(&m);
    let line = q.expect_within("writer: restored at ", GUEST_TIMEOUT);
    let resumed = number_after(&line, "writer: restored at ").unwrap() as usize;
    q.expect_within("spidrv: restored at writer index", GUEST_TIMEOUT);
    let next = (resumed / 1000 + 2) * 1000;
    q.expect_within(&format!("writer: {next} written"), GUEST_TIMEOUT);
    q.kill();
    let bytes = std::fs::read(&image).unwrap();
    let report = nvm_inspect::inspect(&bytes);
    assert!(report.is_consistent(), "{:?}", report.problems);
    assert!(
        resumed > 0,
        "the checkpoint covered no record: nothing was checked"
    );
    for n in 1..=resumed {
        assert_eq!(
            fram_record(&bytes, n),
            n as u32,
            "record {n} was committed (the writer resumed at {resumed}) but is not on the FRAM"
        );
    }
    record(&format!(
        "SPI bus (QEMU, app spiring, --nvm-bus spi, -icount): power failures at checkpoints {caught:?} \
         arrived inside a driver request; each checkpoint waited for it (0 requests in flight as \
         written); records 1 to {resumed} on the FRAM after the reboot"
    ));
}
