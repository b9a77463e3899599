//! sysfuzz: issues ROUNDS random syscalls with random arguments, seeded (the seed is
//! printed), and checks that every one returns. Then it calls the checker through the
//! one slot it never fuzzes, to show the kernel still serves IPC correctly.
//!
//! Slots: 0 = endpoint to an echo server, 1 = notification, 2 = timer, 3 = endpoint
//! to the checker (reserved: never an argument of a fuzzed call). The fuzzer skips
//! `Exit` and any wait (Recv, Wait, IrqWait) on a capability that could block it
//! forever, which it finds out with `CapInfo` first; everything else goes through.
//! `a5` often names the IPC buffer, and `SetIpcBuffer` gets random pointers, except
//! that one into task memory becomes the fuzzer's own spare buffer (a buffer over its
//! stack would let the kernel's result words overwrite the fuzzer's frames).

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::abi::{ipc_buffer_msg, IpcBuffer, ObjKind, Sysno, IPC_BUFFER_MSG};
use amber_user::{call_ep, cap_info, cycles, now, println, syscall, Rights, Rng};

amber_user::main!(main);

const ROUNDS: u32 = 100_000;
/// Where xtask puts task code and RAM: a DebugWrite from there could print garbage.
const TASK_MEMORY: (u32, u32) = (0x8100_0000, 0x8800_0000);
const CHECKER: u32 = 3;

/// Set to `Some(seed)` to repeat a run whose seed was printed.
const FIXED_SEED: Option<u32> = None;

/// Argument generation on top of the runtime's generator.
struct Args(Rng);

impl Args {
    fn next(&mut self) -> u32 {
        self.0.next_u32()
    }

    /// An argument: often a value that reaches deep into the kernel's checks
    /// (small slot numbers, rights masks, boundary pointers), otherwise anything.
    fn arg(&mut self, own: u32) -> u32 {
        const EDGES: [u32; 15] = [
            0,
            1,
            2,
            0xF,
            u32::MAX,
            0x7FFF_FFFF,
            0x8000_0000,
            0x8000_0000 - 4,
            0x1000_0000,
            0x8100_0000,
            0x8180_0000,
            0x8800_0000,
            IPC_BUFFER_MSG,
            ipc_buffer_msg(64),
            ipc_buffer_msg(257),
        ];
        match self.next() % 8 {
            0..=2 => self.next() % 20,
            3 => EDGES[(self.next() % EDGES.len() as u32) as usize],
            4 => own.wrapping_add(self.next() % 512),
            _ => self.next(),
        }
    }
}

/// Whether a wait on `slot` could block this task forever.
fn could_block(slot: u32) -> bool {
    match cap_info(slot) {
        Ok((
            Some(ObjKind::Endpoint | ObjKind::Notification | ObjKind::IrqNotification),
            rights,
            _,
        )) => rights.contains(Rights::READ),
        _ => false,
    }
}

fn main() {
    let stack_var = 0u32;
    let own = &stack_var as *const u32 as usize as u32;
    let seed = FIXED_SEED.unwrap_or((cycles() ^ now() as u32 ^ 0x9E37_79B9) | 1);
    println!("sysfuzz: seed {seed:#010x}, {ROUNDS} random syscalls");
    let mut rng = Args(Rng::new(seed));
    // The one IPC buffer the fuzzer registers; only the kernel writes it, during the
    // fuzzed calls, through its address (exposed, so the compiler keeps it in memory).
    let mut spare = IpcBuffer::ZERO;
    let spare = core::ptr::addr_of_mut!(spare).expose_provenance() as u32;
    let (mut ok, mut failed, mut skipped) = (0u32, 0u32, 0u32);
    for _ in 0..ROUNDS {
        // Mostly real syscall numbers, sometimes numbers that are not.
        let nr = if rng.next().is_multiple_of(16) {
            rng.next()
        } else {
            rng.next() % (Sysno::ALL.len() as u32 + 2)
        };
        let mut args = [0u32; 6];
        for a in &mut args {
            *a = rng.arg(own);
            if *a == CHECKER {
                *a = 0;
            }
        }
        let blocking =
            [Sysno::Recv, Sysno::ReplyRecv, Sysno::Wait, Sysno::IrqWait].map(|s| s as u32);
        if nr == Sysno::Exit as u32 || (blocking.contains(&nr) && could_block(args[0])) {
            skipped += 1;
            continue;
        }
        if nr == Sysno::DebugWrite as u32 && (TASK_MEMORY.0..TASK_MEMORY.1).contains(&args[0]) {
            // A pointer into task memory may be valid: print nothing, but still go
            // through the kernel's pointer checks.
            args[1] = 0;
        }
        if nr == Sysno::SetIpcBuffer as u32 && (TASK_MEMORY.0..TASK_MEMORY.1).contains(&args[0]) {
            args[0] = spare;
        }
        let r = syscall(nr, args);
        if r[0] == 0 {
            ok += 1;
        } else {
            failed += 1;
        }
    }
    println!(
        "sysfuzz: all {} calls returned: {ok} succeeded, {failed} refused, {skipped} skipped",
        ok + failed
    );
    let reply = call_ep(CHECKER, [41, 0, 0, 0], None).expect("the checker must still answer");
    assert_eq!(reply[0], 42, "the checker must still compute");
    println!("sysfuzz: checker answered 41 -> 42: the kernel still works");
}
