//! A thread's IPC buffer as a value ([`IpcBuf`]): registered with the kernel when made,
//! removed when dropped, and the one way the runtime sends and receives bytes through
//! it (`a5` = `ipc_buffer_msg(len)`). It must never hand out the buffer's memory while a
//! call that may write it is under way (every call takes `&mut self`).

use core::{marker::PhantomData, ptr::NonNull};

use amber_abi::{ipc_buffer_msg, Error, IpcBuffer, Sysno, MAX_MSG_BYTES};

use crate::sys::syscall;

/// The calling thread's registered IPC buffer. The kernel writes it only during this
/// thread's own IPC calls that name it (these methods), so between them it is plain
/// memory. Dropping it removes the registration.
pub struct IpcBuf<'a> {
    // A pointer, not `&'a mut`: the kernel writes through it during an `ecall`, which
    // sees it as the exposed address passed to `SetIpcBuffer`.
    buf: NonNull<IpcBuffer>,
    _borrow: PhantomData<&'a mut IpcBuffer>,
}

impl<'a> IpcBuf<'a> {
    /// Registers `buf` as the calling thread's IPC buffer (`SetIpcBuffer`). Fails with
    /// `BadPointer` when it does not lie in the task's own read-write memory (a buffer
    /// on the stack or in a `static` does).
    pub fn register(buf: &'a mut IpcBuffer) -> Result<IpcBuf<'a>, Error> {
        let buf = NonNull::from(buf);
        let at = buf.as_ptr().expose_provenance() as u32;
        let r = syscall(Sysno::SetIpcBuffer as u32, [at, 0, 0, 0, 0, 0]);
        Error::check(r[0])?;
        Ok(IpcBuf {
            buf,
            _borrow: PhantomData,
        })
    }

    fn get(&self) -> &IpcBuffer {
        // SAFETY: `buf` came from a `&'a mut` this value holds the borrow of, and the
        // kernel writes it only during the `ecall`s of `&mut self` methods.
        unsafe { self.buf.as_ref() }
    }

    /// The bytes to send: fill the first `len` before a call that sends `len`.
    pub fn bytes_mut(&mut self) -> &mut [u8; MAX_MSG_BYTES as usize] {
        // SAFETY: as in `get`, and `&mut self` excludes every other reference.
        unsafe { &mut self.buf.as_mut().bytes }
    }

    /// Zeroes all of it: the kernel's result words and the bytes.
    pub fn clear(&mut self) {
        // SAFETY: as in `get`, and `&mut self` excludes every other reference.
        unsafe { *self.buf.as_mut() = IpcBuffer::ZERO };
    }

    /// The bytes the last message received brought.
    pub fn got(&self) -> &[u8] {
        let b = self.get();
        &b.bytes[..(b.got_len.min(MAX_MSG_BYTES)) as usize]
    }

    /// How many bytes the sender of the last message received offered (more than
    /// [`IpcBuf::got`] holds when they did not fit).
    pub fn sent_len(&self) -> u32 {
        self.get().sent_len
    }

    /// The IPC syscall `nr` with `a0`, `words` and the first `len` bytes.
    fn ipc(&mut self, nr: Sysno, a0: u32, words: [u32; 4], len: usize) -> Result<[u32; 6], Error> {
        let len = u16::try_from(len)
            .ok()
            .filter(|&n| u32::from(n) <= MAX_MSG_BYTES)
            .ok_or(Error::TooLong)?;
        let [a, b, c, d] = words;
        let r = syscall(nr as u32, [a0, a, b, c, d, ipc_buffer_msg(len)]);
        Error::check(r[0]).map(|()| r)
    }

    /// `Call`: sends `words` and the first `len` bytes, and waits for the reply, whose
    /// words it returns and whose bytes are then in [`IpcBuf::got`].
    pub fn call(&mut self, ep: u32, words: [u32; 4], len: usize) -> Result<[u32; 4], Error> {
        self.ipc(Sysno::Call, ep, words, len)
            .map(|r| [r[1], r[2], r[3], r[4]])
    }

    /// `Recv`: waits for a message on `ep`; its words and the sender's badge, its bytes
    /// then in [`IpcBuf::got`].
    pub fn recv(&mut self, ep: u32) -> Result<([u32; 4], u32), Error> {
        self.ipc(Sysno::Recv, ep, [0; 4], 0)
            .map(|r| ([r[1], r[2], r[3], r[4]], r[5]))
    }

    /// `ReplyRecv`: replies with `words` and the first `len` bytes (when a reply is
    /// owed), then waits for the next message on `ep`, as [`IpcBuf::recv`].
    pub fn reply_recv(
        &mut self,
        ep: u32,
        words: [u32; 4],
        len: usize,
    ) -> Result<([u32; 4], u32), Error> {
        self.ipc(Sysno::ReplyRecv, ep, words, len)
            .map(|r| ([r[1], r[2], r[3], r[4]], r[5]))
    }
}

impl Drop for IpcBuf<'_> {
    fn drop(&mut self) {
        // Nothing to do about a refusal: removing a buffer cannot fail.
        let _ = syscall(Sysno::SetIpcBuffer as u32, [0; 6]);
    }
}
