//! pong: an echo server. It receives on its endpoint (slot 0) and replies with the
//! first word plus one and the other words unchanged, forever, each reply and the next
//! receive in one `ReplyRecv`. Errors (a caller that sent instead of calling, a bad
//! message) are counted and skipped: a server must never die of its clients.

#![cfg_attr(target_os = "none", no_std, no_main)]

use amber_user::{recv, reply_recv};

amber_user::main!(main);

const ENDPOINT: u32 = 0;

fn main() {
    let mut next = recv(ENDPOINT, None);
    loop {
        next = match next {
            Ok((w, _badge)) => reply_recv(ENDPOINT, [w[0].wrapping_add(1), w[1], w[2], w[3]], None),
            Err(_) => {
                amber_user::yield_now();
                recv(ENDPOINT, None)
            }
        };
    }
}
