//! bench: measures the cost of a null syscall, of an IPC round trip (Call to an echo
//! server and its ReplyRecv, register words only) and of the same round trip carrying
//! a 64-byte buffer each way (Call to `bufecho`, which sends the bytes back), in
//! retired instructions counted by `minstret` (the whole hart: user and kernel), under
//! `-icount shift=0,sleep=off`, where they are exact and repeat; without it
//! (`amber_user::counters_exact`) it says so and measures nothing. A figure that could
//! not be measured (the echo came back wrong) is printed as `not measured` with the
//! reason, so `cargo xtask bench`, which reads a number from every line, fails.
//! Before the figures it prints each of the three as `N` per-call samples
//! (`amber_user::sample`: `samples null|ipc|ipc64 1000: …`), from which `cargo xtask
//! bench` draws their distribution. It prints figures; it never judges them.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{call_ep, counters_exact, instret, null, println, sample, IpcDesc};

amber_user::main!(main);

const N: u32 = 1000;
/// The register-only echo server (`pong`).
const ECHO: u32 = 0;
/// The echo server that sends the message's bytes back (`bufecho`).
const BUFECHO: u32 = 1;
/// Bytes the buffer round trip carries each way.
const BUF_BYTES: usize = 64;

/// Instructions per iteration of `f`, minus the loop's own cost.
fn per_op(mut f: impl FnMut()) -> u32 {
    let t0 = instret();
    for _ in 0..N {
        core::hint::black_box(());
    }
    let empty = instret().wrapping_sub(t0);
    let t0 = instret();
    for _ in 0..N {
        f();
    }
    let total = instret().wrapping_sub(t0);
    total.saturating_sub(empty) / N
}

/// The two buffers of the 64-byte round trip and the descriptor that names them.
struct Buffers {
    out: [u8; BUF_BYTES],
    back: [u8; BUF_BYTES],
    desc: IpcDesc,
}

impl Buffers {
    fn new() -> Self {
        let mut out = [0u8; BUF_BYTES];
        for (i, b) in out.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        Buffers {
            out,
            back: [0; BUF_BYTES],
            desc: IpcDesc::EMPTY,
        }
    }

    /// One Call carrying `out`, its reply landing in `back`. The descriptor is set
    /// again each time (the kernel writes its result words).
    fn call(&mut self) -> Result<[u32; 4], amber_user::Error> {
        self.desc = IpcDesc {
            send_ptr: self.out.as_ptr() as usize as u32,
            send_len: BUF_BYTES as u32,
            recv_ptr: self.back.as_mut_ptr() as usize as u32,
            recv_len: BUF_BYTES as u32,
            ..IpcDesc::EMPTY
        };
        call_ep(BUFECHO, [1, 2, 3, 4], Some(&mut self.desc))
    }

    /// Why one checked call is not the echo it should be, if it is not.
    fn check(&mut self) -> Result<(), &'static str> {
        self.back = [0; BUF_BYTES];
        match self.call() {
            Err(_) => Err("the Call failed"),
            Ok(w) if w != [1, 2, 3, 4] => Err("the reply's words differ from the call's"),
            Ok(_) if self.desc.got_len != BUF_BYTES as u32 => {
                Err("the reply did not carry 64 bytes")
            }
            Ok(_) if core::hint::black_box(self.back) != self.out => {
                Err("the reply's bytes differ from the call's")
            }
            Ok(_) => Ok(()),
        }
    }
}

fn main() {
    if !counters_exact() {
        println!(
            "bench: not measured: instret counts instructions only under -icount (cargo xtask bench, or run --icount)"
        );
        return;
    }
    // Each mean, then its distribution (every call counted on its own; a series whose
    // calls fail stops short, which `cargo xtask bench` reports). The register-only
    // figures come before the first call to `bufecho`: until then it has never run and
    // is not blocked, and every blocked thread lengthens the Call's and the ReplyRecv's
    // wait-queue scan (by about 50 instructions a round trip).
    let null_cost = per_op(null);
    let _ = sample("null", N, || {
        null();
        Ok::<(), ()>(())
    });
    let ipc_cost = per_op(|| {
        let _ = call_ep(ECHO, [1, 2, 3, 4], None);
    });
    let _ = sample("ipc", N, || call_ep(ECHO, [1, 2, 3, 4], None).map(drop));
    let mut bufs = Buffers::new();
    let buf_line = bufs.check().and_then(|()| {
        let cost = per_op(|| {
            let _ = bufs.call();
        });
        let _ = sample("ipc64", N, || bufs.call().map(drop));
        // The last measured call must have echoed too.
        bufs.check().map(|()| cost)
    });
    println!("bench: null syscall {null_cost} instructions (mean of {N})");
    println!("bench: IPC round trip {ipc_cost} instructions (Call + ReplyRecv, 4 words, two task switches, mean of {N})");
    match buf_line {
        Ok(cost) => println!("bench: IPC round trip with 64 B each way {cost} instructions (Call + ReplyRecv, 4 words and a 64-byte buffer copied to the server and back, two task switches, mean of {N})"),
        Err(why) => println!("bench: IPC round trip with 64 B each way: not measured ({why})"),
    }
}
