//! Boot, scheduling, the simple syscalls (Null, Yield, Exit, DebugWrite, Now), user
//! pointer checks, and faults. Each test name states the property it checks.
//! These tests use the public API only; they must never reach into kernel internals.

mod common;

use amber_core::{
    abi::{Error, Sysno, TaskState},
    BootError, CapSpec, Fault, FaultAction, FaultPolicy, Kernel, MemKind, RegionSpec, Rights,
    TaskSpec, MAX_REGIONS,
};
use common::{code, data, task, Sys, CODE_SIZE, DEVICE_BASE, R, RW, TASK_SIZE};

fn spec<'a>(name: &'a str, regions: &'a [RegionSpec], caps: &'a [CapSpec<'a>]) -> TaskSpec<'a> {
    TaskSpec {
        name,
        priority: 1,
        entry: code(0),
        stack_top: code(0) + TASK_SIZE,
        regions,
        caps,
        fault: FaultPolicy::End,
    }
}

#[test]
fn boot_makes_every_task_ready_with_entry_and_stack_in_its_context() {
    let s = Sys::boot(&[task("a", 1, &[]), task("b", 1, &[])]);
    for (i, n) in ["a", "b"].iter().enumerate() {
        let c = s.k.context(s.tid(n));
        assert_eq!(c.pc, code(i), "a task starts at its entry");
        assert_eq!(
            c.regs[2],
            code(i) + TASK_SIZE,
            "a task starts with sp = stack_top"
        );
        assert_eq!(s.state(n), TaskState::Ready);
    }
    assert_eq!(
        s.current_name().as_deref(),
        Some("a"),
        "the first of equal tasks runs first"
    );
}

#[test]
fn a_new_kernel_runs_nothing_and_boots_only_once() {
    let mut k = Kernel::new();
    assert_eq!(k.current(), None, "an unbooted kernel has nothing to run");
    let regs = common::regions(0);
    k.boot(&[spec("a", &regs, &[])]).unwrap();
    assert_eq!(
        k.boot(&[spec("a", &regs, &[])]),
        Err(BootError::AlreadyBooted)
    );
}

#[test]
fn bad_system_descriptions_are_refused_and_leave_the_kernel_empty() {
    let regs = common::regions(0);
    let bad_region = [RegionSpec {
        base: u32::MAX - 3,
        len: 8,
        rights: Rights::READ,
        kind: MemKind::Checkpointed,
    }];
    let too_many_regions = [regs[0]; MAX_REGIONS + 1];
    let many_caps = [CapSpec::Timer; 17];
    let bad_rights = [CapSpec::Notification {
        name: "n",
        rights: Rights::from_bits_retain(1 << 20),
    }];
    let cases: Vec<(Vec<TaskSpec>, BootError)> = vec![
        (vec![spec("", &regs, &[])], BootError::BadName { task: 0 }),
        (
            vec![spec("a_name_that_is_too_long", &regs, &[])],
            BootError::BadName { task: 0 },
        ),
        (
            vec![spec("a", &regs, &[]), spec("a", &regs, &[])],
            BootError::DuplicateTask { task: 1 },
        ),
        (
            vec![TaskSpec {
                priority: 8,
                ..spec("a", &regs, &[])
            }],
            BootError::BadPriority { task: 0 },
        ),
        (
            vec![spec("a", &bad_region, &[])],
            BootError::BadRegion { task: 0 },
        ),
        (
            vec![spec("a", &too_many_regions, &[])],
            BootError::TooManyRegions { task: 0 },
        ),
        (
            vec![spec("a", &regs, &many_caps)],
            BootError::TooManyCaps { task: 0 },
        ),
        (
            vec![spec("a", &regs, &[CapSpec::Task { name: "zz" }])],
            BootError::UnknownTask { task: 0 },
        ),
        (
            vec![spec(
                "a",
                &regs,
                &[
                    CapSpec::Endpoint {
                        name: "x",
                        rights: R,
                        badge: 0,
                    },
                    CapSpec::Notification {
                        name: "x",
                        rights: R,
                    },
                ],
            )],
            BootError::NameKindClash { task: 0 },
        ),
        (
            vec![spec(
                "a",
                &regs,
                &[CapSpec::Irq { irq: 3 }, CapSpec::Irq { irq: 3 }],
            )],
            BootError::IrqTwice { task: 0 },
        ),
        (
            vec![spec(
                "a",
                &regs,
                &[CapSpec::MemObj {
                    base: 0,
                    len: 0,
                    rights: R,
                    kind: MemKind::Eternal,
                }],
            )],
            BootError::BadRange { task: 0 },
        ),
        (
            vec![spec("a", &regs, &bad_rights)],
            BootError::BadRights { task: 0 },
        ),
    ];
    for (tasks, want) in cases {
        let mut k = Kernel::new();
        assert_eq!(k.boot(&tasks), Err(want));
        assert_eq!(k.current(), None, "a refused boot leaves nothing runnable");
        k.check_invariants().unwrap();
    }
    let sixteen: Vec<TaskSpec> = (0..16).map(|_| spec("a", &regs, &[])).collect();
    assert_eq!(Kernel::new().boot(&sixteen), Err(BootError::TooManyTasks));
}

#[test]
fn boot_caps_fill_slots_in_list_order_and_same_names_share_objects() {
    let caps_a = [
        CapSpec::Endpoint {
            name: "ep",
            rights: RW,
            badge: 7,
        },
        CapSpec::Notification {
            name: "n",
            rights: R,
        },
        CapSpec::Timer,
    ];
    let caps_b = [
        CapSpec::Notification {
            name: "n",
            rights: RW,
        },
        CapSpec::Endpoint {
            name: "ep",
            rights: R,
            badge: 0,
        },
    ];
    let mut s = Sys::boot(&[task("a", 1, &caps_a), task("b", 1, &caps_b)]);
    let info =
        |s: &mut Sys, who: &str, slot: u32| s.sys(who, Sysno::CapInfo, [slot, 0, 0, 0, 0, 0]);
    assert_eq!(
        info(&mut s, "a", 0).r[..3],
        [4, RW.bits(), 7],
        "slot 0 = first CapSpec: endpoint, RW, badge 7"
    );
    assert_eq!(info(&mut s, "a", 1).r[0], 5, "slot 1 = notification");
    assert_eq!(info(&mut s, "a", 2).r[0], 8, "slot 2 = timer");
    assert_eq!(
        info(&mut s, "a", 3).status(),
        Err(Error::EmptySlot),
        "slots past the list are empty"
    );
    // Sharing: a signal through b's slot 0 is seen through a's slot 1.
    assert_eq!(
        s.sys("b", Sysno::Signal, [0, 0b100, 0, 0, 0, 0]).status(),
        Ok(())
    );
    assert_eq!(
        s.sys("a", Sysno::Poll, [1, 0, 0, 0, 0, 0]).r[0],
        0b100,
        "same name = same notification"
    );
}

#[test]
fn regions_list_own_regions_then_memobj_caps_with_cap_rights() {
    let caps = [CapSpec::MemObj {
        base: common::SHARED_BASE,
        len: 0x100,
        rights: Rights::READ | Rights::GRANT,
        kind: MemKind::Eternal,
    }];
    let s = Sys::boot(&[task("a", 1, &caps)]);
    let r: Vec<RegionSpec> = s.k.regions(s.tid("a")).collect();
    assert_eq!(r.len(), 3);
    assert_eq!(r[0].base, code(0));
    assert_eq!(r[1].base, data(0));
    assert_eq!(r[2].base, common::SHARED_BASE);
    assert_eq!(
        r[2].rights,
        Rights::READ,
        "PMP rights are the cap's memory rights only (no GRANT)"
    );
    assert_eq!(r[2].kind, MemKind::Eternal);
}

#[test]
fn the_more_urgent_priority_runs_first_and_equal_priorities_round_robin_on_tick() {
    let mut s = Sys::boot(&[task("low", 3, &[]), task("b1", 1, &[]), task("b2", 1, &[])]);
    assert_eq!(
        s.current_name().as_deref(),
        Some("b1"),
        "priority 1 beats priority 3"
    );
    s.tick();
    assert_eq!(
        s.current_name().as_deref(),
        Some("b2"),
        "a tick rotates to the next equal-priority task"
    );
    s.tick();
    assert_eq!(
        s.current_name().as_deref(),
        Some("b1"),
        "round robin wraps around"
    );
    s.sys("b1", Sysno::Exit, [0; 6]);
    s.sys("b2", Sysno::Exit, [0; 6]);
    assert_eq!(
        s.current_name().as_deref(),
        Some("low"),
        "a less urgent task runs only when no more urgent one is ready"
    );
    s.sys("low", Sysno::Exit, [0; 6]);
    assert_eq!(s.k.current(), None, "nothing runnable means idle (None)");
}

#[test]
fn yield_gives_the_cpu_to_the_next_equal_priority_task() {
    let mut s = Sys::boot(&[task("a", 2, &[]), task("b", 2, &[])]);
    s.sys("a", Sysno::Yield, [0; 6]);
    assert_eq!(s.current_name().as_deref(), Some("b"));
}

#[test]
fn a_woken_more_urgent_task_preempts_at_once() {
    let caps = [CapSpec::Notification {
        name: "n",
        rights: RW,
    }];
    let mut s = Sys::boot(&[task("hi", 0, &caps), task("lo", 5, &caps)]);
    s.sys("hi", Sysno::Wait, [0; 6]);
    assert_eq!(
        s.current_name().as_deref(),
        Some("lo"),
        "the urgent task blocked, so the other runs"
    );
    s.sys("lo", Sysno::Signal, [0, 1, 0, 0, 0, 0]);
    assert_eq!(
        s.current_name().as_deref(),
        Some("hi"),
        "signalling the urgent task switches to it immediately"
    );
    assert_eq!(s.regs("hi").r[0], 1, "Wait returns the bits");
}

#[test]
fn syscalls_advance_pc_past_the_ecall_and_null_only_returns() {
    let mut s = Sys::boot(&[task("a", 1, &[])]);
    let pc = s.k.context(s.tid("a")).pc;
    let r = s.sys("a", Sysno::Null, [9, 9, 9, 9, 9, 9]);
    assert_eq!(
        r,
        common::Ret { a0: 0, r: [9; 5] },
        "Null returns 0 and leaves a1..a5"
    );
    assert_eq!(
        s.k.context(s.tid("a")).pc,
        pc + 4,
        "pc moves past the 4-byte ecall"
    );
}

#[test]
fn unknown_syscall_numbers_return_bad_syscall() {
    let mut s = Sys::boot(&[task("a", 1, &[])]);
    for nr in [Sysno::ALL.len() as u32, 64, 1000, u32::MAX] {
        assert_eq!(s.sys_raw("a", nr, [0; 6]).status(), Err(Error::BadSyscall));
    }
}

#[test]
fn exit_ends_the_task_records_the_code_and_keeps_its_capgroup() {
    let mut s = Sys::boot(&[
        task("a", 1, &[]),
        task("b", 1, &[CapSpec::Task { name: "a" }]),
    ]);
    s.sys("a", Sysno::Exit, [42, 0, 0, 0, 0, 0]);
    assert_eq!(s.state("a"), TaskState::Exited);
    assert_eq!(
        s.current_name().as_deref(),
        Some("b"),
        "an exited task never runs again"
    );
    let r = s.sys("b", Sysno::TaskInfo, [0, 0, 0, 0, 0, 0]);
    assert_eq!(r.status(), Ok(()));
    assert_eq!(
        r.r[1..3],
        [TaskState::Exited as u32, 42],
        "TaskInfo through a Task cap shows state and exit code"
    );
    for _ in 0..5 {
        s.tick();
        assert_eq!(s.current_name().as_deref(), Some("b"));
    }
}

#[test]
fn debug_write_prints_bytes_attributed_to_the_task() {
    let mut s = Sys::boot(&[task("hello", 1, &[])]);
    s.mem.put(data(0), b"hi there");
    assert_eq!(
        s.sys("hello", Sysno::DebugWrite, [data(0), 8, 0, 0, 0, 0])
            .status(),
        Ok(())
    );
    assert_eq!(
        s.plat.console,
        vec![("hello".to_string(), b"hi there".to_vec())]
    );
    s.mem.put(code(0), b"code");
    assert_eq!(
        s.sys("hello", Sysno::DebugWrite, [code(0), 4, 0, 0, 0, 0])
            .status(),
        Ok(()),
        "read-only code is readable"
    );
}

#[test]
fn console_read_hands_out_waiting_input_in_order_and_never_blocks() {
    let mut s = Sys::boot(&[task("shell", 1, &[])]);
    let r = s.sys("shell", Sysno::ConsoleRead, [data(0), 16, 0, 0, 0, 0]);
    assert_eq!(
        (r.status(), r.r[0]),
        (Ok(()), 0),
        "nothing waiting: 0 bytes, at once"
    );
    s.plat.console_in.extend(b"select 1;\n");
    let r = s.sys("shell", Sysno::ConsoleRead, [data(0), 4, 0, 0, 0, 0]);
    assert_eq!((r.status(), r.r[0]), (Ok(()), 4));
    assert_eq!(s.mem.get(data(0), 4), b"sele", "the oldest bytes first");
    let r = s.sys("shell", Sysno::ConsoleRead, [data(0) + 4, 64, 0, 0, 0, 0]);
    assert_eq!((r.status(), r.r[0]), (Ok(()), 6), "then the rest");
    assert_eq!(s.mem.get(data(0), 10), b"select 1;\n");
    s.plat.console_in.extend(b"x");
    for (ptr, len, why) in [
        (code(0), 1, Error::BadPointer), // read-only code: the kernel must not write it
        (0, 1, Error::BadPointer),       // no region at all
        (data(0), 257, Error::TooLong),  // past MAX_DEBUG_WRITE
    ] {
        let r = s.sys("shell", Sysno::ConsoleRead, [ptr, len, 0, 0, 0, 0]);
        assert_eq!(r.status(), Err(why), "{ptr:#x}+{len}");
    }
    assert_eq!(
        s.plat.console_in.len(),
        1,
        "a refused read takes nothing from the queue"
    );
}

#[test]
fn user_pointers_must_lie_inside_one_readable_non_device_region() {
    let regions = [
        common::regions(0)[0],
        common::regions(0)[1],
        RegionSpec {
            base: DEVICE_BASE,
            len: 0x100,
            rights: RW,
            kind: MemKind::Device,
        },
        RegionSpec {
            base: code(1),
            len: 0x10,
            rights: Rights::WRITE,
            kind: MemKind::Checkpointed,
        },
    ];
    let specs = [TaskSpec {
        regions: &regions,
        ..spec("a", &regions, &[])
    }];
    let mut s = Sys {
        k: Box::new(Kernel::new()),
        mem: common::FakeMem::new(),
        plat: Default::default(),
        version: 0,
    };
    s.k.boot(&specs).unwrap();
    let bad = [
        (0, 1),                                   // no region at all (kernel memory)
        (data(0) + TASK_SIZE - CODE_SIZE - 2, 4), // runs past the end of the data region
        (code(0) + CODE_SIZE - 2, 4),             // straddles code and data: two regions, not one
        (u32::MAX, 2),                            // wraps
        (DEVICE_BASE, 4),                         // device memory is never read by the kernel
        (code(1), 4),                             // write-only region, DebugWrite needs READ
    ];
    for (ptr, len) in bad {
        assert_eq!(
            s.sys("a", Sysno::DebugWrite, [ptr, len, 0, 0, 0, 0])
                .status(),
            Err(Error::BadPointer),
            "{ptr:#x}+{len}"
        );
    }
    assert_eq!(
        s.sys("a", Sysno::DebugWrite, [0xdead_beef, 0, 0, 0, 0, 0])
            .status(),
        Ok(()),
        "zero length is always valid"
    );
    assert_eq!(
        s.sys("a", Sysno::DebugWrite, [data(0), 257, 0, 0, 0, 0])
            .status(),
        Err(Error::TooLong)
    );
    assert!(
        s.plat.console.iter().all(|(_, b)| b.is_empty()),
        "nothing was printed from a refused pointer"
    );
}

#[test]
fn now_returns_the_platform_tick_count_split_in_two_words_and_whether_counters_are_exact() {
    let mut s = Sys::boot(&[task("a", 1, &[])]);
    s.plat.now = 0x1_2345_6789;
    assert_eq!(s.sys("a", Sysno::Now, [0; 6]).r[..3], [0x2345_6789, 1, 0]);
    s.plat.counter_exact = true;
    assert_eq!(s.sys("a", Sysno::Now, [0; 6]).r[2], 1);
}

#[test]
fn a_fault_with_end_policy_ends_only_that_task_and_reports_name_cause_and_address() {
    let mut s = Sys::boot(&[task("faulter", 1, &[]), task("heartbeat", 1, &[])]);
    s.switch_to("faulter");
    let rep = s.k.fault(Fault::LoadAccess, 0x8000_0000);
    assert_eq!(rep.task.as_str(), "faulter");
    assert_eq!(
        (rep.cause, rep.addr, rep.action),
        (Fault::LoadAccess, 0x8000_0000, FaultAction::Ended)
    );
    assert_eq!(
        rep.to_string(),
        "task faulter: load access fault at 0x80000000; task ended"
    );
    assert_eq!(s.state("faulter"), TaskState::Exited);
    assert_eq!(
        s.current_name().as_deref(),
        Some("heartbeat"),
        "the other task keeps running"
    );
    s.k.check_invariants().unwrap();
}

#[test]
fn a_fault_with_restart_policy_restarts_at_entry_with_caps_kept() {
    let caps = [CapSpec::Timer];
    let mut t = task("r", 1, &caps);
    t.fault = FaultPolicy::Restart;
    let mut s = Sys::boot(&[t]);
    let tid = s.tid("r");
    s.k.context_mut(tid).pc = code(0) + 0x40;
    s.k.context_mut(tid).regs[5] = 77;
    let rep = s.k.fault(Fault::from_mcause(2), 0);
    assert_eq!(
        (rep.cause, rep.action),
        (Fault::IllegalInstruction, FaultAction::Restarted)
    );
    let c = s.k.context(tid);
    assert_eq!(
        (c.pc, c.regs[2], c.regs[5]),
        (code(0), code(0) + TASK_SIZE, 0),
        "fresh context at entry/stack_top"
    );
    assert_eq!(
        s.sys("r", Sysno::CapInfo, [0; 6]).r[0],
        8,
        "the timer cap survives the restart"
    );
}

#[test]
fn fault_causes_decode_from_mcause() {
    use amber_core::Access;
    assert_eq!(Fault::from_mcause(1), Fault::InstructionAccess);
    assert_eq!(Fault::from_mcause(5), Fault::LoadAccess);
    assert_eq!(Fault::from_mcause(7), Fault::StoreAccess);
    assert_eq!(
        Fault::from_mcause(6),
        Fault::Misaligned {
            access: Access::Store
        }
    );
    assert_eq!(Fault::from_mcause(3), Fault::Breakpoint);
    assert_eq!(Fault::from_mcause(13), Fault::Other { mcause: 13 });
}
