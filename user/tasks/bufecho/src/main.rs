//! bufecho: an echo server for messages that carry bytes. It replies with the four
//! words unchanged and the bytes it received, then waits for the next message, both in
//! one `ReplyRecv` that sends from and receives into one buffer (the kernel copies the
//! reply out before it receives the next message). It starts with a descriptor that
//! names a buffer of `MAX_MSG_BYTES`; after a message whose words are
//! [`USE_IPC_BUFFER`] it receives every later message into its IPC buffer instead. The
//! bench app's buffer round trips call it, one way and then the other. Errors are
//! counted and skipped: a server must never die of its clients, and must never send
//! bytes it did not receive.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::abi::MAX_MSG_BYTES;
use amber_user::{recv, reply_recv, IpcBuf, IpcBuffer, IpcDesc};

amber_user::main!(main);

const ENDPOINT: u32 = 0;

/// The words of the message that switches bufecho to its IPC buffer (the bench app
/// sends the same words, "ipcb" and 1, 2, 3).
const USE_IPC_BUFFER: [u32; 4] = [u32::from_le_bytes(*b"ipcb"), 1, 2, 3];

fn main() {
    with_descriptor();
    let mut mem = IpcBuffer::ZERO;
    let mut ipc = IpcBuf::register(&mut mem).expect("a buffer on the stack is the task's own");
    // The switch is answered with its words alone.
    let mut next = ipc.reply_recv(ENDPOINT, USE_IPC_BUFFER, 0);
    loop {
        next = match next {
            Ok((w, _badge)) => {
                let n = ipc.got().len();
                ipc.reply_recv(ENDPOINT, w, n)
            }
            Err(_) => {
                amber_user::yield_now();
                ipc.recv(ENDPOINT)
            }
        };
    }
}

/// Serves through a descriptor until the switch arrives (its reply still owed).
fn with_descriptor() {
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
                // The first word alone decides on the hot path (the whole is a memcmp).
                if w[0] == USE_IPC_BUFFER[0] && w == USE_IPC_BUFFER {
                    return;
                }
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
