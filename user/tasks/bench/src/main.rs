//! bench: measures the cost of a null syscall, of an IPC round trip (Call to an echo
//! server and its ReplyRecv, register words only) and of the same round trip carrying
//! 64 bytes each way (Call to `bufecho`, which sends the bytes back), the bytes named
//! first by descriptors on both sides and then by both sides' IPC buffers, in
//! retired instructions counted by `minstret` (the whole hart: user and kernel), under
//! `-icount shift=0,sleep=off`, where they are exact and repeat; without it
//! (`amber_user::counters_exact`) it says so and measures nothing. A figure that could
//! not be measured (the echo came back wrong) is printed as `not measured` with the
//! reason, so `cargo xtask bench`, which reads a number from every line, fails.
//! Before the figures it prints each of the four as `N` per-call samples
//! (`amber_user::sample`: `samples null|ipc|ipc64|ipc64buf 1000: …`), from which `cargo xtask
//! bench` draws their distribution. It prints figures; it never judges them.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{
    call_ep, counters_exact, instret, null, println, sample, Error, IpcBuf, IpcBuffer, IpcDesc,
};

amber_user::main!(main);

const N: u32 = 1000;
/// The register-only echo server (`pong`).
const ECHO: u32 = 0;
/// The echo server that sends the message's bytes back (`bufecho`).
const BUFECHO: u32 = 1;
/// Bytes the buffer round trip carries each way.
const BUF_BYTES: usize = 64;
/// The words that switch `bufecho` to its IPC buffer (its `USE_IPC_BUFFER`).
const USE_IPC_BUFFER: [u32; 4] = [u32::from_le_bytes(*b"ipcb"), 1, 2, 3];

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
        let words = self.call();
        echoed(
            words,
            self.desc.got_len,
            &core::hint::black_box(self.back),
            &self.out,
        )
    }
}

/// Why a reply with `words` that brought `got` bytes, `back` of them compared, is not
/// the echo of `out`, if it is not.
fn echoed(
    words: Result<[u32; 4], Error>,
    got: u32,
    back: &[u8],
    out: &[u8; BUF_BYTES],
) -> Result<(), &'static str> {
    match words {
        Err(_) => Err("the Call failed"),
        Ok(w) if w != [1, 2, 3, 4] => Err("the reply's words differ from the call's"),
        Ok(_) if got != BUF_BYTES as u32 => Err("the reply did not carry 64 bytes"),
        Ok(_) if back != out => Err("the reply's bytes differ from the call's"),
        Ok(_) => Ok(()),
    }
}

/// The 64-byte round trip through both sides' IPC buffers: `bufecho` switched to its
/// own, this thread's registered.
struct Buffered<'a> {
    ipc: IpcBuf<'a>,
    out: [u8; BUF_BYTES],
}

impl<'a> Buffered<'a> {
    /// Switches `bufecho` to its IPC buffer and registers `mem` as this thread's.
    fn new(mem: &'a mut IpcBuffer, out: [u8; BUF_BYTES]) -> Result<Self, &'static str> {
        match call_ep(BUFECHO, USE_IPC_BUFFER, None) {
            Ok(w) if w == USE_IPC_BUFFER => {}
            _ => return Err("bufecho did not switch to its IPC buffer"),
        }
        let ipc = IpcBuf::register(mem).map_err(|_| "SetIpcBuffer failed")?;
        Ok(Buffered { ipc, out })
    }

    /// One Call carrying the first 64 bytes of the IPC buffer, its reply landing
    /// there too. The bytes are in place, as `out` is for [`Buffers::call`]: the
    /// echo writes back what was sent, and [`Buffered::check`] fills them.
    fn call(&mut self) -> Result<[u32; 4], Error> {
        self.ipc.call(BUFECHO, [1, 2, 3, 4], BUF_BYTES)
    }

    /// As [`Buffers::check`]. The reply lands where the message was, so the bytes
    /// alone cannot tell an echo from no copy: the buffer is cleared first (the
    /// kernel must write `got_len` again), and `bufs`' descriptor Call, answered
    /// from bufecho's IPC buffer, shows that what it echoes is what it received.
    fn check(&mut self, bufs: &mut Buffers) -> Result<(), &'static str> {
        self.ipc.clear();
        self.ipc.bytes_mut()[..BUF_BYTES].copy_from_slice(&self.out);
        let words = self.call();
        echoed(
            words,
            self.ipc.got().len() as u32,
            self.ipc.got(),
            &self.out,
        )?;
        bufs.check()
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
    let mut mem = IpcBuffer::ZERO;
    let ipc_line = Buffered::new(&mut mem, bufs.out).and_then(|mut b| {
        b.check(&mut bufs)?;
        let cost = per_op(|| {
            let _ = b.call();
        });
        let _ = sample("ipc64buf", N, || b.call().map(drop));
        b.check(&mut bufs).map(|()| cost)
    });
    println!("bench: null syscall {null_cost} instructions (mean of {N})");
    println!("bench: IPC round trip {ipc_cost} instructions (Call + ReplyRecv, 4 words, two task switches, mean of {N})");
    match buf_line {
        Ok(cost) => println!("bench: IPC round trip with 64 B each way {cost} instructions (Call + ReplyRecv, 4 words and a 64-byte buffer copied to the server and back, two task switches, mean of {N})"),
        Err(why) => println!("bench: IPC round trip with 64 B each way: not measured ({why})"),
    }
    match ipc_line {
        Ok(cost) => println!("bench: IPC round trip with 64 B each way through IPC buffers {cost} instructions (Call + ReplyRecv, 4 words and 64 bytes from each side's registered IPC buffer, two task switches, mean of {N})"),
        Err(why) => println!("bench: IPC round trip with 64 B each way through IPC buffers: not measured ({why})"),
    }
}
