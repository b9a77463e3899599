//! How a client reaches the service: one Call with four words and a bounded copy each
//! way. The trait exists so that the client library runs on the host against a
//! service model in tests; on the device the only implementation is [`Endpoint`]. A
//! channel must never retry or reorder calls: the protocol is not idempotent (alloc).

use amber_user::abi::NO_SLOT;
use amber_user::{call_ep, Error, IpcDesc};

/// A way to make one request to a heap service.
///
/// `Copy + PartialEq` because every handle keeps its channel (to free its object when
/// dropped) and the heap checks that a handle came through the same channel.
pub trait Channel: Copy + PartialEq {
    /// Sends `words` and `send` (at most [`CHUNK`](crate::CHUNK) bytes), waits for the
    /// reply, stores its bytes in `recv` and returns its words and how many bytes came.
    fn call(
        &self,
        words: [u32; 4],
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<([u32; 4], usize), Error>;
}

/// The heap service's endpoint, by the capability slot that holds it (with WRITE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint(pub u32);

impl Channel for Endpoint {
    fn call(
        &self,
        words: [u32; 4],
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<([u32; 4], usize), Error> {
        let mut d = IpcDesc {
            send_ptr: send.as_ptr() as usize as u32,
            send_len: send.len() as u32,
            send_cap: NO_SLOT,
            recv_ptr: recv.as_mut_ptr() as usize as u32,
            recv_len: recv.len() as u32,
            recv_slot: NO_SLOT,
            ..IpcDesc::default()
        };
        let r = call_ep(self.0, words, Some(&mut d))?;
        Ok((r, d.got_len as usize))
    }
}
