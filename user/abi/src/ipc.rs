//! The layout of an IPC message beyond its four register words: what a task's `a5`
//! names (nothing, a descriptor, or its IPC buffer), the descriptor, the IPC buffer,
//! and the bounds on copies. Layout only: this file must never validate or trust a
//! descriptor or a buffer (the kernel checks every field).

/// "No slot": in [`IpcDesc::send_cap`] / [`IpcDesc::recv_slot`] and `TaskInfo`'s `a0`.
pub const NO_SLOT: u32 = u32::MAX;

/// Message words carried in registers `a1..a4`.
pub const MSG_WORDS: usize = 4;

/// The most bytes one message copies from sender to receiver.
pub const MAX_MSG_BYTES: u32 = 256;

/// The most bytes one `DebugWrite` prints.
pub const MAX_DEBUG_WRITE: u32 = 256;

/// Size of [`IpcDesc`] in bytes.
pub const IPC_DESC_SIZE: u32 = 36;

/// The IPC descriptor: a task's `a5` for Send, Call, Recv and Reply points at one in
/// its own memory (4-byte fields, little-endian, no alignment required).
///
/// | offset | field | who writes | meaning |
/// |--------|-------|------------|---------|
/// | 0 | `send_ptr` | task | bytes to send (Send, Call, Reply) |
/// | 4 | `send_len` | task | how many, ≤ [`MAX_MSG_BYTES`] |
/// | 8 | `send_cap` | task | slot to transfer (needs GRANT), or [`NO_SLOT`] |
/// | 12 | `recv_ptr` | task | buffer for received bytes (Recv, and Call's reply) |
/// | 16 | `recv_len` | task | its size (any; at most [`MAX_MSG_BYTES`] land) |
/// | 20 | `recv_slot` | task | empty slot for a received capability, or [`NO_SLOT`] |
/// | 24 | `got_len` | kernel | bytes copied into `recv_ptr` |
/// | 28 | `sent_len` | kernel | bytes the sender offered (> `got_len` = truncated) |
/// | 32 | `got_cap` | kernel | 1 if a capability landed in `recv_slot`, else 0 |
///
/// The sender's part must be readable by the sender; the whole descriptor of a
/// receiver must be readable and writable by the receiver.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpcDesc {
    /// Bytes to send.
    pub send_ptr: u32,
    /// Number of bytes to send.
    pub send_len: u32,
    /// Slot of a capability to transfer, or [`NO_SLOT`].
    pub send_cap: u32,
    /// Buffer for received bytes.
    pub recv_ptr: u32,
    /// Size of that buffer.
    pub recv_len: u32,
    /// Empty slot for a received capability, or [`NO_SLOT`].
    pub recv_slot: u32,
    /// Written by the kernel: bytes copied in.
    pub got_len: u32,
    /// Written by the kernel: bytes the sender offered.
    pub sent_len: u32,
    /// Written by the kernel: 1 if a capability landed in `recv_slot`.
    pub got_cap: u32,
}

impl IpcDesc {
    /// Byte offset of `got_len`; the kernel writes `got_len`, `sent_len`, `got_cap`
    /// as 12 bytes from here.
    pub const OUT_OFFSET: u32 = 24;

    /// A descriptor that sends nothing and receives nothing.
    pub const EMPTY: IpcDesc = IpcDesc {
        send_ptr: 0,
        send_len: 0,
        send_cap: NO_SLOT,
        recv_ptr: 0,
        recv_len: 0,
        recv_slot: NO_SLOT,
        got_len: 0,
        sent_len: 0,
        got_cap: 0,
    };

    /// Decodes the nine little-endian words.
    pub fn from_bytes(b: &[u8; IPC_DESC_SIZE as usize]) -> IpcDesc {
        let w = |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
        IpcDesc::from_words([w(0), w(1), w(2), w(3), w(4), w(5), w(6), w(7), w(8)])
    }

    /// The descriptor of the nine words `w`, in the order of the table.
    pub fn from_words(w: [u32; IPC_DESC_SIZE as usize / 4]) -> IpcDesc {
        let [send_ptr, send_len, send_cap, recv_ptr, recv_len, recv_slot, got_len, sent_len, got_cap] =
            w;
        IpcDesc {
            send_ptr,
            send_len,
            send_cap,
            recv_ptr,
            recv_len,
            recv_slot,
            got_len,
            sent_len,
            got_cap,
        }
    }

    /// Encodes as nine little-endian words.
    pub fn to_bytes(&self) -> [u8; IPC_DESC_SIZE as usize] {
        let words = [
            self.send_ptr,
            self.send_len,
            self.send_cap,
            self.recv_ptr,
            self.recv_len,
            self.recv_slot,
            self.got_len,
            self.sent_len,
            self.got_cap,
        ];
        let mut out = [0u8; IPC_DESC_SIZE as usize];
        for (chunk, w) in out.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// `a5` of an IPC syscall from here up selects the caller's IPC buffer
/// ([`IpcBuffer`], registered by `SetIpcBuffer`) instead of a descriptor; the low 12
/// bits are the bytes to send ([`ipc_buffer_msg`]). No descriptor can lie here: the
/// kernel refuses at boot every region that reaches this page.
pub const IPC_BUFFER_MSG: u32 = 0xFFFF_F000;

/// `a5` for a message of the caller's IPC buffer that sends its first `len` bytes
/// (0 when it only receives). A `len` over [`MAX_MSG_BYTES`] is refused (`TooLong`).
pub const fn ipc_buffer_msg(len: u16) -> u32 {
    IPC_BUFFER_MSG | (len as u32 & 0xFFF)
}

/// What a task's `a5` names for Send, Call, Recv, Reply and ReplyRecv.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgBytes {
    /// `a5` = 0: register words only.
    None,
    /// `a5` ≥ [`IPC_BUFFER_MSG`]: the IPC buffer, sending its first `len` bytes.
    Buffer {
        /// The low 12 bits of `a5`.
        len: u32,
    },
    /// Any other `a5`: the address of an [`IpcDesc`].
    Desc(u32),
}

impl MsgBytes {
    /// What `a5` names.
    #[inline(always)]
    pub const fn of(a5: u32) -> MsgBytes {
        if a5 == 0 {
            MsgBytes::None
        } else if a5 >= IPC_BUFFER_MSG {
            MsgBytes::Buffer {
                len: a5 - IPC_BUFFER_MSG,
            }
        } else {
            MsgBytes::Desc(a5)
        }
    }
}

/// Size of [`IpcBuffer`] in bytes.
pub const IPC_BUFFER_SIZE: u32 = 12 + MAX_MSG_BYTES;

/// A thread's IPC buffer: memory it registers once (`SetIpcBuffer`, 4-byte aligned,
/// in its task's own memory, readable and writable), checked then and never again, so
/// that a message through it costs no descriptor read and no pointer check (as seL4's
/// IPC buffer). With `a5` = [`ipc_buffer_msg`]`(len)` a thread sends `bytes[..len]`
/// and receives into `bytes` (up to [`MAX_MSG_BYTES`]; `Call` and `ReplyRecv` use the
/// one buffer for both, the bytes sent copied out before any land). No capability
/// moves through it: a capability sent to a thread receiving here is refused, as to a
/// descriptor with no receive slot.
///
/// | offset | field | who writes | meaning |
/// |--------|-------|------------|---------|
/// | 0 | `got_len` | kernel | bytes copied into `bytes` |
/// | 4 | `sent_len` | kernel | bytes the sender offered (> `got_len` = truncated) |
/// | 8 | `got_cap` | kernel | always 0 |
/// | 12 | `bytes` | both | the message |
///
/// The three words the kernel writes are the descriptor's (`IpcDesc::got_len` ..).
#[repr(C, align(4))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpcBuffer {
    /// Written by the kernel: bytes copied in.
    pub got_len: u32,
    /// Written by the kernel: bytes the sender offered.
    pub sent_len: u32,
    /// Written by the kernel: 0 (no capability comes through a buffer).
    pub got_cap: u32,
    /// The bytes sent from and received into.
    pub bytes: [u8; MAX_MSG_BYTES as usize],
}

impl IpcBuffer {
    /// Byte offset of `bytes`.
    pub const BYTES_OFFSET: u32 = 12;

    /// All zero.
    pub const ZERO: IpcBuffer = IpcBuffer {
        got_len: 0,
        sent_len: 0,
        got_cap: 0,
        bytes: [0; MAX_MSG_BYTES as usize],
    };
}

const _: () = assert!(core::mem::size_of::<IpcDesc>() == IPC_DESC_SIZE as usize);
const _: () = assert!(core::mem::size_of::<IpcBuffer>() == IPC_BUFFER_SIZE as usize);
const _: () = assert!(core::mem::offset_of!(IpcBuffer, bytes) == IpcBuffer::BYTES_OFFSET as usize);
const _: () = assert!(
    MAX_MSG_BYTES <= 0xFFF,
    "a buffer message's length fits a5's low 12 bits"
);
const _: () = assert!(core::mem::offset_of!(IpcDesc, got_len) == IpcDesc::OUT_OFFSET as usize);

#[cfg(test)]
mod tests {
    use super::IpcDesc;

    #[test]
    fn descriptor_encoding_round_trips() {
        let d = IpcDesc {
            send_ptr: 1,
            send_len: 2,
            send_cap: 3,
            recv_ptr: 4,
            recv_len: 5,
            recv_slot: 6,
            got_len: 7,
            sent_len: 8,
            got_cap: 9,
        };
        assert_eq!(IpcDesc::from_bytes(&d.to_bytes()), d);
        assert_eq!(IpcDesc::from_words([1, 2, 3, 4, 5, 6, 7, 8, 9]), d);
        assert_eq!(d.to_bytes()[24], 7, "got_len sits at OUT_OFFSET");
    }

    #[test]
    fn a5_names_nothing_a_descriptor_or_the_buffer() {
        use super::{ipc_buffer_msg, MsgBytes, IPC_BUFFER_MSG};
        assert_eq!(MsgBytes::of(0), MsgBytes::None);
        assert_eq!(MsgBytes::of(0x8000_0004), MsgBytes::Desc(0x8000_0004));
        assert_eq!(
            MsgBytes::of(IPC_BUFFER_MSG - 1),
            MsgBytes::Desc(IPC_BUFFER_MSG - 1)
        );
        assert_eq!(MsgBytes::of(ipc_buffer_msg(0)), MsgBytes::Buffer { len: 0 });
        assert_eq!(
            MsgBytes::of(ipc_buffer_msg(64)),
            MsgBytes::Buffer { len: 64 }
        );
        assert_eq!(MsgBytes::of(u32::MAX), MsgBytes::Buffer { len: 0xFFF });
    }
}
