//! `NvmRead` and `NvmWrite`: a task moves bytes between its memory and the NVM grants
//! it holds (NvmRegion caps, `eternal` MemObjs) through the platform's NVM, and every
//! argument that leaves the grant, its rights or the task's memory is refused before
//! the NVM or the memory is touched. Public API only.

mod common;

use amber_core::{
    abi::{Error, Sysno, MAX_NVM_TRANSFER},
    CapSpec, MemKind,
};
use common::{data, task, Sys, R, RW, W};

/// Where the fake NVM is mapped, and the eternal area's place in it.
const WINDOW: u32 = 0x9000_0000;
const ETERNAL_OFFSET: u32 = 0x2000;

const CAPS: [CapSpec; 5] = [
    CapSpec::NvmRegion {
        offset: 0x1000,
        len: 0x400,
        rights: RW,
    },
    CapSpec::NvmRegion {
        offset: 0x1400,
        len: 0x100,
        rights: R,
    },
    CapSpec::MemObj {
        base: WINDOW + ETERNAL_OFFSET,
        len: 0x1000,
        rights: RW,
        kind: MemKind::Eternal,
    },
    CapSpec::Notification {
        name: "n",
        rights: RW,
    },
    CapSpec::NvmRegion {
        offset: 0x1500,
        len: 0x100,
        rights: W,
    },
];
const GRANT: u32 = 0;
const READ_ONLY: u32 = 1;
const ETERNAL: u32 = 2;
const NOTIFICATION: u32 = 3;
const WRITE_ONLY: u32 = 4;

fn system() -> Sys {
    let mut s = Sys::boot(&[task("drv", 1, &CAPS)]);
    s.plat.nvm = vec![0xEE; 0x4000];
    s.plat.nvm_window = Some(WINDOW);
    s
}

fn nvm(s: &mut Sys, nr: Sysno, slot: u32, offset: u32, buf: u32, len: u32) -> Result<(), Error> {
    s.sys("drv", nr, [slot, offset, buf, len, 0, 0]).status()
}

#[test]
fn a_write_lands_at_the_grants_offset_and_reads_back() {
    let mut s = system();
    let buf = data(0);
    s.mem.put(buf, b"eternal bytes");
    assert_eq!(nvm(&mut s, Sysno::NvmWrite, GRANT, 0x10, buf, 13), Ok(()));
    assert_eq!(&s.plat.nvm[0x1010..0x101D], b"eternal bytes");
    assert_eq!(s.plat.nvm[0x100F], 0xEE, "nothing before the range");
    assert_eq!(s.plat.nvm[0x101D], 0xEE, "nothing after it");

    assert_eq!(
        nvm(&mut s, Sysno::NvmRead, GRANT, 0x10, buf + 0x100, 13),
        Ok(())
    );
    assert_eq!(s.mem.get(buf + 0x100, 13), b"eternal bytes");
}

#[test]
fn an_eternal_memory_object_is_reached_at_its_offset_in_the_window() {
    let mut s = system();
    let buf = data(0);
    s.mem.put(buf, &[1, 2, 3, 4]);
    assert_eq!(nvm(&mut s, Sysno::NvmWrite, ETERNAL, 0xFFC, buf, 4), Ok(()));
    let at = (ETERNAL_OFFSET + 0xFFC) as usize;
    assert_eq!(&s.plat.nvm[at..at + 4], &[1, 2, 3, 4]);

    // Without a window an eternal object names no NVM offset.
    s.plat.nvm_window = None;
    assert_eq!(
        nvm(&mut s, Sysno::NvmRead, ETERNAL, 0, buf, 4),
        Err(Error::WrongKind)
    );
}

#[test]
fn ranges_outside_the_grant_lengths_over_the_limit_and_wrong_caps_are_refused() {
    let mut s = system();
    let buf = data(0);
    let before = s.plat.nvm.clone();
    let cases = [
        (Sysno::NvmWrite, GRANT, 0x3FF, 2, Error::BadArgument),
        (Sysno::NvmWrite, GRANT, u32::MAX, 2, Error::BadArgument),
        (Sysno::NvmWrite, GRANT, 0x400, 1, Error::BadArgument),
        (Sysno::NvmWrite, ETERNAL, 0x1000, 1, Error::BadArgument),
        (
            Sysno::NvmWrite,
            GRANT,
            0,
            MAX_NVM_TRANSFER + 1,
            Error::TooLong,
        ),
        (Sysno::NvmWrite, READ_ONLY, 0, 4, Error::NoRights),
        (Sysno::NvmRead, WRITE_ONLY, 0, 4, Error::NoRights),
        (Sysno::NvmWrite, NOTIFICATION, 0, 4, Error::WrongKind),
        (Sysno::NvmWrite, 9, 0, 4, Error::EmptySlot),
        (Sysno::NvmWrite, 99, 0, 4, Error::BadSlot),
    ];
    for (nr, slot, offset, len, want) in cases {
        assert_eq!(
            nvm(&mut s, nr, slot, offset, buf, len),
            Err(want),
            "{nr:?} slot {slot} offset {offset:#x} len {len}"
        );
    }
    assert_eq!(s.plat.nvm, before, "no refused call touched the NVM");
}

#[test]
fn the_buffer_must_lie_in_the_callers_memory_with_the_right_it_needs() {
    let mut s = system();
    let code = common::code(0);
    // A read stores into the buffer: the task's code region is not writable.
    assert_eq!(
        nvm(&mut s, Sysno::NvmRead, GRANT, 0, code, 4),
        Err(Error::BadPointer)
    );
    // Another task's memory, and memory that is nobody's.
    for buf in [data(1), 0x100, u32::MAX - 2] {
        assert_eq!(
            nvm(&mut s, Sysno::NvmWrite, GRANT, 0, buf, 4),
            Err(Error::BadPointer),
            "buffer {buf:#x}"
        );
    }
    // The code region may be read: a write from it is fine.
    assert_eq!(nvm(&mut s, Sysno::NvmWrite, GRANT, 0, code, 4), Ok(()));
}

#[test]
fn a_device_error_is_reported_and_now_tells_the_bus_and_the_numbering() {
    let mut s = system();
    s.plat.nvm.truncate(0x1002);
    let buf = data(0);
    assert_eq!(
        nvm(&mut s, Sysno::NvmWrite, GRANT, 0, buf, 4),
        Err(Error::NvmFailed)
    );
    let now = s.sys("drv", Sysno::Now, [0; 6]);
    assert_eq!(now.r[3], 0, "memory-mapped NVM");
    assert_eq!(now.r[4], 0, "no stores numbered for a cut");
    s.plat.nvm_on_bus = true;
    let now = s.sys("drv", Sysno::Now, [0; 6]);
    assert_eq!(now.r[3], 1, "NVM on a serial bus");
    s.plat.nvm_stores_numbered = true;
    let now = s.sys("drv", Sysno::Now, [0; 6]);
    assert_eq!(
        now.r[3..5],
        [1, 1],
        "a cut numbers the stores, on the bus still"
    );
}
