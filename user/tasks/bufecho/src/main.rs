//! bufecho: an echo server for messages that carry bytes. It receives on its endpoint
//! (slot 0) into one buffer of `MAX_MSG_BYTES` and replies with the four words
//! unchanged and the bytes it received, then waits for the next message, both in one
//! `ReplyRecv` whose descriptor sends from and receives into that same buffer (the
//! kernel copies the reply out before it receives the next message). The bench app's
//! buffer round trip calls it. Errors are counted and skipped: a server must never die
//! of its clients, and must never send bytes it did not receive.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::abi::MAX_MSG_BYTES;
use amber_user::{recv, reply_recv, IpcDesc};

amber_user::main!(main);

const ENDPOINT: u32 = 0;

fn main() {
    let mut buf = [0u8; MAX_MSG_BYTES as usize];
    let mut desc = IpcDesc {
        recv_ptr: buf.as_mut_ptr() as usize as u32,
        recv_len: MAX_MSG_BYTES,
        ..IpcDesc::EMPTY
    };
    let mut next = recv(ENDPOINT, Some(&mut desc));
    loop {
        next = match next {
            Ok((w, _badge)) => {
                desc.send_ptr = desc.recv_ptr;
                desc.send_len = desc.got_len;
                reply_recv(ENDPOINT, w, Some(&mut desc))
            }
            Err(_) => {
                amber_user::yield_now();
                recv(ENDPOINT, Some(&mut desc))
            }
        };
    }
}
