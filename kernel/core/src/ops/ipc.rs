//! Synchronous IPC over endpoints: Send, Call, Recv, Reply and ReplyRecv (a server's
//! Reply and its next Recv in one trap). A message is
//! four register words, a badge, an optional bounded copy of bytes and an optional
//! capability transfer, and it is delivered whole or not at all. The bytes go from a
//! descriptor's buffer or the sender's IPC buffer to a descriptor's buffer or the
//! receiver's IPC buffer (`a5`, [`MsgBytes`]); an IPC buffer was checked once, when
//! it was set, and lies in its task's own memory, which never changes. Both sides are
//! re-validated at the moment of delivery (a MemObj cap may have been revoked while a
//! partner waited). Each side's descriptor is read and checked once per delivery: the
//! caller's own at the syscall, a waiting partner's when the message reaches it. Wait
//! queues are derived from thread states, oldest first. This file must never write to a
//! task's memory before both sides validated.
//!
//! The fast path of Call and ReplyRecv ([`Kernel::fast_ipc`], as seL4's fastpath)
//! covers a client calling a server that waits and the server's answer: the partner
//! waits already, no capability moves, and the partner is the thread the scheduler
//! picks next, so the message goes across and the partner runs at once. It checks
//! everything first (buffers against the tasks' own regions only) and then changes
//! state as the general path would, in its order, or changes nothing.
//!
//! Invariants kept here:
//! - A thread blocked in `Reply { server }` is the `reply_to` of `server`, and a
//!   `reply_to` always names a thread blocked waiting for that server's reply.
//! - A transferred capability is recorded as derived from the sender's.

use super::access::{ipc_buffer_allowed, own_region_allowing, own_regions_allow_near};
use super::outcome::{Outcome, Results};
use crate::{
    abi::{
        Error, IpcBuffer, IpcDesc, MsgBytes, ObjKind, Rights, Sysno, IPC_DESC_SIZE, MAX_MSG_BYTES,
        NO_SLOT,
    },
    ids::{ObjId, ThreadId},
    kernel::Kernel,
    obj::{Block, Cap, CapGroup, CapRef, ThreadState},
    platform::UserMemory,
    spec::RegionSpec,
};

/// Which side of a delivery was invalid.
enum Party {
    /// The sender's message is invalid; the sender gets the error.
    Sender(Error),
    /// The receiver's buffers are invalid; the receiver gets the error.
    Receiver(Error),
}

/// A sender's validated message.
#[derive(Clone, Copy)]
struct SendPart {
    words: [u32; 4],
    ptr: u32,
    len: u32,
    cap: Option<(CapRef, Cap)>,
}

/// A receiver's validated buffers.
#[derive(Clone, Copy)]
struct RecvPart {
    /// Where the three result words go (a descriptor's `got_len`, or an IPC
    /// buffer's); 0 = nowhere.
    out: u32,
    ptr: u32,
    len: u32,
    slot: Option<CapRef>,
}

impl SendPart {
    /// A message of register words alone.
    fn words(words: [u32; 4]) -> SendPart {
        SendPart {
            words,
            ptr: 0,
            len: 0,
            cap: None,
        }
    }

    /// A message of `words` and the first `len` bytes of the IPC buffer at `buf`
    /// (checked when it was set), or `TooLong`.
    #[inline(always)]
    fn buffer(words: [u32; 4], buf: u32, len: u32) -> Result<SendPart, Error> {
        if len > MAX_MSG_BYTES {
            return Err(Error::TooLong);
        }
        Ok(SendPart {
            words,
            ptr: buf.wrapping_add(IpcBuffer::BYTES_OFFSET),
            len,
            cap: None,
        })
    }
}

impl RecvPart {
    /// Receiving register words alone.
    const NONE: RecvPart = RecvPart {
        out: 0,
        ptr: 0,
        len: 0,
        slot: None,
    };

    /// Receiving into the IPC buffer at `buf` (checked when it was set).
    #[inline(always)]
    fn buffer(buf: u32) -> RecvPart {
        RecvPart {
            out: buf,
            ptr: buf.wrapping_add(IpcBuffer::BYTES_OFFSET),
            len: MAX_MSG_BYTES,
            slot: None,
        }
    }
}

/// The descriptor at `ptr` (checked): the six words the kernel reads, a word at a
/// time where it is word aligned (the kernel's outputs are not read).
#[inline(always)]
fn read_desc_words(mem: &mut dyn UserMemory, ptr: u32) -> IpcDesc {
    if !ptr.is_multiple_of(4) {
        let mut b = [0u8; IPC_DESC_SIZE as usize];
        mem.read(ptr, &mut b);
        return IpcDesc::from_bytes(&b);
    }
    let mut w = |i: u32| mem.read_word(ptr.wrapping_add(4 * i));
    IpcDesc::from_words([w(0), w(1), w(2), w(3), w(4), w(5), 0, 0, 0])
}

/// For the fast paths: the descriptor at `desc` of a thread of group `g`, and the own
/// region of `g` that lets it read and write it, if one does (the general path looks
/// further).
#[inline(always)]
fn fast_desc<'g>(
    mem: &mut dyn UserMemory,
    g: &'g CapGroup,
    desc: u32,
) -> Option<(IpcDesc, &'g RegionSpec)> {
    let r = own_region_allowing(g, desc, IPC_DESC_SIZE, Rights::READ | Rights::WRITE)?;
    Some((read_desc_words(mem, desc), r))
}

/// The receiver's results for `words`: a1..a4, and the badge in a5 when given.
fn message([w0, w1, w2, w3]: [u32; 4], badge: Option<u32>) -> Results {
    match badge {
        Some(b) => Results::of(&[w0, w1, w2, w3, b]),
        None => Results::of(&[w0, w1, w2, w3]),
    }
}

impl Kernel {
    /// Reads the descriptor at `ptr` (non-zero) of thread `t`, which `t` must hold `need`.
    fn read_desc(
        &self,
        mem: &mut dyn UserMemory,
        t: ThreadId,
        ptr: u32,
        need: Rights,
    ) -> Result<IpcDesc, Error> {
        self.check_user(t, ptr, IPC_DESC_SIZE, need)?;
        Ok(read_desc_words(mem, ptr))
    }

    /// Validates the message thread `t` sends (words a1..a4, descriptor a5). Inlined,
    /// so that a register-only message (a5 = 0), the common case, costs no call.
    #[inline(always)]
    fn send_part(&self, mem: &mut dyn UserMemory, t: ThreadId) -> Result<SendPart, Error> {
        let th = self.thread(t);
        let ctx = &th.ctx;
        let words = [ctx.arg(1), ctx.arg(2), ctx.arg(3), ctx.arg(4)];
        match MsgBytes::of(ctx.arg(5)) {
            MsgBytes::None => Ok(SendPart::words(words)),
            MsgBytes::Buffer { len } => self.send_buffer(t, words, len),
            MsgBytes::Desc(desc) => {
                let d = self.read_desc(mem, t, desc, Rights::READ)?;
                self.send_desc(t, words, &d)
            }
        }
    }

    /// The message of `t`: `words` and the first `len` bytes of its IPC buffer. Out of
    /// line, as [`Kernel::send_desc`] is: [`Kernel::send_part`] is inlined in every
    /// syscall that sends.
    #[inline(never)]
    fn send_buffer(&self, t: ThreadId, words: [u32; 4], len: u32) -> Result<SendPart, Error> {
        let buf = self.thread(t).ipc_buffer.ok_or(Error::BadPointer)?;
        SendPart::buffer(words, buf, len)
    }

    /// Where `t` receives into its IPC buffer. Out of line, as
    /// [`Kernel::send_buffer`] is.
    #[inline(never)]
    fn recv_buffer(&self, t: ThreadId) -> Result<RecvPart, Error> {
        self.thread(t)
            .ipc_buffer
            .map(RecvPart::buffer)
            .ok_or(Error::BadPointer)
    }

    /// The message of `t`: `words` and what its descriptor `d` sends.
    fn send_desc(&self, t: ThreadId, words: [u32; 4], d: &IpcDesc) -> Result<SendPart, Error> {
        if d.send_len > MAX_MSG_BYTES {
            return Err(Error::TooLong);
        }
        self.check_user(t, d.send_ptr, d.send_len, Rights::READ)?;
        let cap = if d.send_cap == NO_SLOT {
            None
        } else {
            Some(self.lookup(t, d.send_cap, None, Rights::GRANT)?)
        };
        Ok(SendPart {
            words,
            ptr: d.send_ptr,
            len: d.send_len,
            cap,
        })
    }

    /// Validates where thread `t` receives (descriptor a5, read and written, or its
    /// IPC buffer). Inlined as [`Kernel::send_part`] is.
    #[inline(always)]
    fn recv_part(&self, mem: &mut dyn UserMemory, t: ThreadId) -> Result<RecvPart, Error> {
        let th = self.thread(t);
        match MsgBytes::of(th.ctx.arg(5)) {
            MsgBytes::None => Ok(RecvPart::NONE),
            MsgBytes::Buffer { .. } => self.recv_buffer(t),
            MsgBytes::Desc(desc) => {
                let d = self.read_desc(mem, t, desc, Rights::READ | Rights::WRITE)?;
                self.recv_desc(t, desc, &d)
            }
        }
    }

    /// Where `t` receives: the buffers of its descriptor `d`, which lies at `desc`.
    fn recv_desc(&self, t: ThreadId, desc: u32, d: &IpcDesc) -> Result<RecvPart, Error> {
        self.check_user(t, d.recv_ptr, d.recv_len, Rights::WRITE)?;
        let slot = if d.recv_slot == NO_SLOT {
            None
        } else {
            Some(self.empty_slot(t, d.recv_slot)?)
        };
        Ok(RecvPart {
            out: desc.wrapping_add(IpcDesc::OUT_OFFSET),
            ptr: d.recv_ptr,
            len: d.recv_len,
            slot,
        })
    }

    /// Delivers the validated message `sp` into the validated buffers `rp` of thread
    /// `r`, or nothing. Returns the receiver's results (words, and the badge in a5 when
    /// `badge` is given). Inlined into its three callers, so that the parts stay in
    /// registers.
    #[inline(always)]
    fn deliver(
        &mut self,
        mem: &mut dyn UserMemory,
        sp: SendPart,
        rp: RecvPart,
        badge: Option<u32>,
    ) -> Result<Results, Party> {
        let transfer = match (sp.cap, rp.slot) {
            (None, _) => None,
            (Some(_), None) => return Err(Party::Sender(Error::NoReceiveSlot)),
            (Some((from, cap)), Some(dst)) => {
                if !self.can_hold_another_region(dst.group, cap.obj) {
                    return Err(Party::Sender(Error::NoSpace));
                }
                Some((from, cap, dst))
            }
        };
        self.move_bytes(mem, sp, rp, transfer);
        Ok(message(sp.words, badge))
    }

    /// The delivery itself, once nothing can refuse it: the bytes and the receiver's
    /// descriptor words (one call of the memory), then the capability `transfer` names
    /// (from, what, to).
    #[inline(always)]
    fn move_bytes(
        &mut self,
        mem: &mut dyn UserMemory,
        sp: SendPart,
        rp: RecvPart,
        transfer: Option<(CapRef, Cap, CapRef)>,
    ) {
        let n = sp.len.min(rp.len).min(MAX_MSG_BYTES);
        // The result words are in range: recv_part checked all IPC_DESC_SIZE bytes of
        // a descriptor (and OUT_OFFSET + 12 == IPC_DESC_SIZE), or all of an IPC buffer
        // when it was set.
        if n > 0 || rp.out != 0 {
            mem.deliver(sp.ptr, rp.ptr, n, rp.out, sp.len, transfer.is_some());
        }
        if let Some((from, cap, dst)) = transfer {
            self.install(
                dst,
                Cap {
                    parent: Some(from),
                    ..cap
                },
            );
        }
    }

    /// `Send` / `Call` on endpoint slot a0: needs WRITE. Delivers to the oldest waiting
    /// receiver or blocks; `Call` then waits for the reply.
    pub(crate) fn sys_send(
        &mut self,
        mem: &mut dyn UserMemory,
        t: ThreadId,
        call: bool,
    ) -> Outcome {
        let slot = self.thread(t).ctx.arg(0);
        let cap = match self.lookup(t, slot, Some(ObjKind::Endpoint), Rights::WRITE) {
            Ok((_, cap)) => cap,
            Err(e) => return Outcome::err(e),
        };
        let sp = match self.send_part(mem, t) {
            Ok(sp) => sp,
            Err(e) => return Outcome::err(e),
        };
        // The caller's receive buffers are checked now too, although the reply is
        // delivered into them (checked again) only later.
        if call && self.thread(t).ctx.arg(5) != 0 {
            if let Err(e) = self.recv_part(mem, t) {
                return Outcome::err(e);
            }
        }
        let ep = cap.obj;
        loop {
            let Some(r) = self.oldest_blocked(|b| b == Block::Recv { ep }) else {
                self.block(
                    t,
                    Block::Send {
                        ep,
                        badge: cap.badge,
                        call,
                    },
                );
                return Outcome::Blocked;
            };
            let delivered = match self.recv_part(mem, r) {
                Ok(rp) => self.deliver(mem, sp, rp, Some(cap.badge)),
                Err(e) => Err(Party::Receiver(e)),
            };
            match delivered {
                Ok(res) => {
                    self.wake(r, Ok(res));
                    if !call {
                        return Outcome::ok();
                    }
                    self.thread_mut(r).reply_to = Some(t);
                    self.block(t, Block::Reply { server: r });
                    return Outcome::Blocked;
                }
                Err(Party::Sender(e)) => return Outcome::err(e),
                Err(Party::Receiver(e)) => self.wake(r, Err(e)),
            }
        }
    }

    /// `Recv` on endpoint slot a0: needs READ. Takes the oldest waiting sender's
    /// message or blocks. A reply this thread still owed is dropped (`PeerGone`). A
    /// persist callback asked to persist gets `Interrupted` and receives nothing (its
    /// owed reply stays owed).
    pub(crate) fn sys_recv(&mut self, mem: &mut dyn UserMemory, t: ThreadId) -> Outcome {
        self.recv(mem, t, None)
    }

    /// [`Kernel::sys_recv`], with `t`'s descriptor already read (`read`) when this
    /// syscall read it for a reply.
    fn recv(&mut self, mem: &mut dyn UserMemory, t: ThreadId, read: Option<IpcDesc>) -> Outcome {
        if self.cycle.phase.asks(t) {
            return Outcome::err(Error::Interrupted);
        }
        let slot = self.thread(t).ctx.arg(0);
        let ep = match self.lookup(t, slot, Some(ObjKind::Endpoint), Rights::READ) {
            Ok((_, cap)) => cap.obj,
            Err(e) => return Outcome::err(e),
        };
        let rp = match read {
            None => self.recv_part(mem, t),
            // Read for the reply with READ only: receiving also writes it.
            Some(d) => {
                let desc = self.thread(t).ctx.arg(5);
                self.check_user(t, desc, IPC_DESC_SIZE, Rights::READ | Rights::WRITE)
                    .and_then(|()| self.recv_desc(t, desc, &d))
            }
        };
        let rp = match rp {
            Ok(rp) => rp,
            Err(e) => return Outcome::err(e),
        };
        self.drop_reply(t);
        loop {
            let Some(s) = self.oldest_sender(|b| matches!(b, Block::Send { ep: e, .. } if e == ep))
            else {
                self.block(t, Block::Recv { ep });
                return Outcome::Blocked;
            };
            let ThreadState::Blocked(Block::Send { badge, call, .. }) = self.thread(s).state else {
                return Outcome::err(Error::WrongState);
            };
            let delivered = match self.send_part(mem, s) {
                Ok(sp) => self.deliver(mem, sp, rp, Some(badge)),
                Err(e) => Err(Party::Sender(e)),
            };
            match delivered {
                Ok(res) => {
                    if call {
                        self.thread_mut(t).reply_to = Some(s);
                        self.block(s, Block::Reply { server: t });
                    } else {
                        self.wake(s, Ok(Results::none()));
                    }
                    return Outcome::Done(Ok(res));
                }
                Err(Party::Receiver(e)) => return Outcome::err(e),
                Err(Party::Sender(e)) => self.wake(s, Err(e)),
            }
        }
    }

    /// `Reply`: answers the caller whose message this thread received last. If the
    /// caller's buffers turned invalid, the caller gets the error and the reply counts
    /// as given.
    pub(crate) fn sys_reply(&mut self, mem: &mut dyn UserMemory, t: ThreadId) -> Outcome {
        let Some(c) = self.thread(t).reply_to else {
            return Outcome::err(Error::WrongState);
        };
        match self.send_part(mem, t) {
            Ok(sp) => self.reply(mem, t, c, sp),
            Err(e) => Outcome::err(e),
        }
    }

    /// Delivers `t`'s validated reply `sp` to its caller `c`.
    #[inline(always)]
    fn reply(
        &mut self,
        mem: &mut dyn UserMemory,
        t: ThreadId,
        c: ThreadId,
        sp: SendPart,
    ) -> Outcome {
        let delivered = match self.recv_part(mem, c) {
            Ok(rp) => self.deliver(mem, sp, rp, None),
            Err(e) => Err(Party::Receiver(e)),
        };
        match delivered {
            Ok(res) => {
                self.thread_mut(t).reply_to = None;
                self.wake(c, Ok(res));
                Outcome::ok()
            }
            Err(Party::Sender(e)) => Outcome::err(e),
            Err(Party::Receiver(e)) => {
                self.thread_mut(t).reply_to = None;
                self.wake(c, Err(e));
                Outcome::ok()
            }
        }
    }

    /// `ReplyRecv` on endpoint slot a0: gives the reply `t` owes (words a1..a4, the
    /// send half of descriptor a5) as `Reply` does, then receives on a0 as `Recv` does
    /// (the receive half of a5), in one trap, so that a server's loop costs one syscall
    /// per request. With no reply owed it is a `Recv`. When the reply fails on the
    /// server's side (its own message or descriptor is invalid), that error is
    /// returned, the caller keeps waiting and nothing is received; a caller whose
    /// buffers turned invalid gets the error, as with `Reply`, and the receive goes on.
    ///
    /// The descriptor is read once, before the reply, for both halves (the receive
    /// still checks that `t` may write it): a reply whose bytes land in memory the
    /// descriptor shares does not change where the receive goes.
    pub(crate) fn sys_reply_recv(&mut self, mem: &mut dyn UserMemory, t: ThreadId) -> Outcome {
        let Some(c) = self.thread(t).reply_to else {
            return self.recv(mem, t, None);
        };
        let (sp, read) = match MsgBytes::of(self.thread(t).ctx.arg(5)) {
            MsgBytes::Desc(desc) => match self.read_desc(mem, t, desc, Rights::READ) {
                Ok(d) => {
                    let ctx = &self.thread(t).ctx;
                    let words = [ctx.arg(1), ctx.arg(2), ctx.arg(3), ctx.arg(4)];
                    (self.send_desc(t, words, &d), Some(d))
                }
                Err(e) => return Outcome::err(e),
            },
            MsgBytes::None | MsgBytes::Buffer { .. } => (self.send_part(mem, t), None),
        };
        let replied = match sp {
            Ok(sp) => self.reply(mem, t, c, sp),
            Err(e) => Outcome::err(e),
        };
        if let Outcome::Done(Err(e)) = replied {
            return Outcome::err(e);
        }
        self.recv(mem, t, read)
    }

    /// [`Kernel::fast_syscall`] for `Call` and `ReplyRecv` (syscall `nr`) by the
    /// current thread; `None`, having changed nothing, for any other call and whenever
    /// the general path might do anything else:
    /// - `Call`: a receiver waits on the endpoint; the message goes to the oldest, which
    ///   then owes the caller the reply and runs, while the caller waits for it
    ///   ([`Kernel::sys_send`]);
    /// - `ReplyRecv`: the caller owes a reply and no sender waits on the endpoint; the
    ///   reply goes to the thread it is owed to, which runs, and the caller waits on
    ///   the endpoint ([`Kernel::sys_reply_recv`]);
    /// - either way nothing is refused (capability, descriptors, buffers, on both
    ///   sides), no capability is sent, and the partner is the thread the scheduler
    ///   picks next: no other thread is ready at its priority or a more urgent one,
    ///   and no persist phase runs (nor is a checkpoint asked for). Returns the
    ///   partner.
    #[inline]
    pub fn fast_ipc(&mut self, mem: &mut dyn UserMemory, nr: u32) -> Option<ThreadId> {
        if self.cycle.busy() {
            return None;
        }
        self.fast_ipc_of(mem, self.current?, nr)
    }

    /// [`Kernel::fast_ipc`] by `t`, the current thread. Out of line: compiled here,
    /// where the syscall paths are built for speed, not where the glue calls it.
    #[inline(never)]
    fn fast_ipc_of(&mut self, mem: &mut dyn UserMemory, t: ThreadId, nr: u32) -> Option<ThreadId> {
        let th = self.thread(t);
        let ctx = &th.ctx;
        let (slot, desc) = (ctx.arg(0), ctx.arg(5));
        let words = [ctx.arg(1), ctx.arg(2), ctx.arg(3), ctx.arg(4)];
        let (group, priority) = (th.group, th.priority);
        let owed = if nr == Sysno::Call as u32 {
            None
        } else if nr == Sysno::ReplyRecv as u32 {
            Some(th.reply_to?)
        } else {
            return None;
        };
        let need = if owed.is_none() {
            Rights::WRITE
        } else {
            Rights::READ
        };
        let cap = self.endpoint_cap(group, slot, need)?;
        let ep = cap.obj;
        let sp = match MsgBytes::of(desc) {
            MsgBytes::None => SendPart::words(words),
            MsgBytes::Buffer { len } => {
                SendPart::buffer(words, self.thread(t).ipc_buffer?, len).ok()?
            }
            MsgBytes::Desc(desc) => self.fast_own_part(mem, group, words, desc)?,
        };
        let (r, badge, block) = match owed {
            None => {
                let r = self.oldest_blocked(|b| b == Block::Recv { ep })?;
                (r, Some(cap.badge), Block::Reply { server: r })
            }
            Some(c) => {
                if self.any_sender(|b| matches!(b, Block::Send { ep: e, .. } if e == ep)) {
                    return None;
                }
                (c, None, Block::Recv { ep })
            }
        };
        let partner = self.thread(r);
        if !self
            .sched_index
            .none_ready_up_to(partner.priority, t.index(), priority)
        {
            return None;
        }
        let rp = match MsgBytes::of(partner.ctx.arg(5)) {
            MsgBytes::None => RecvPart::NONE,
            MsgBytes::Buffer { .. } => RecvPart::buffer(partner.ipc_buffer?),
            MsgBytes::Desc(desc) => self.fast_recv_part(mem, partner.group, desc)?,
        };
        // Nothing can refuse the delivery from here (no capability moves).
        self.move_bytes(mem, sp, rp, None);
        self.hand_over(t, block, r, message(words, badge), owed.is_none());
        Some(r)
    }

    /// For the fast paths: the message a thread of group `g` sends (`words`,
    /// descriptor at `desc`), with the descriptor read once and both of its halves
    /// checked (the caller of `Call` and of `ReplyRecv` receives through it too),
    /// against the group's own regions only. `None` when the general path might
    /// decide otherwise: anything refused, a buffer elsewhere, a capability sent or a
    /// slot to receive one.
    fn fast_own_part(
        &self,
        mem: &mut dyn UserMemory,
        g: ObjId,
        words: [u32; 4],
        desc: u32,
    ) -> Option<SendPart> {
        let g = self.group(g)?;
        let (d, near) = fast_desc(mem, g, desc)?;
        let ok = d.send_cap == NO_SLOT
            && d.recv_slot == NO_SLOT
            && d.send_len <= MAX_MSG_BYTES
            && own_regions_allow_near(g, near, d.send_ptr, d.send_len, Rights::READ)
            && own_regions_allow_near(g, near, d.recv_ptr, d.recv_len, Rights::WRITE);
        ok.then_some(SendPart {
            words,
            ptr: d.send_ptr,
            len: d.send_len,
            cap: None,
        })
    }

    /// For the fast paths: where a waiting thread of group `g` receives, through its
    /// descriptor at `desc` ([`Kernel::recv_part`], against the group's own regions
    /// only, and without a slot to receive a capability into). Inlined: it has one
    /// caller, whose registers it shares.
    #[inline(always)]
    fn fast_recv_part(&self, mem: &mut dyn UserMemory, g: ObjId, desc: u32) -> Option<RecvPart> {
        let g = self.group(g)?;
        let (d, near) = fast_desc(mem, g, desc)?;
        let ok = d.recv_slot == NO_SLOT
            && own_regions_allow_near(g, near, d.recv_ptr, d.recv_len, Rights::WRITE);
        ok.then_some(RecvPart {
            out: desc.wrapping_add(IpcDesc::OUT_OFFSET),
            ptr: d.recv_ptr,
            len: d.recv_len,
            slot: None,
        })
    }

    /// `SetIpcBuffer(ptr)`: makes the [`IpcBuffer`] at `ptr` thread `t`'s (0: none),
    /// where [`ipc_buffer_allowed`] says it may lie: checked once, here, since own
    /// regions never change (a MemObj capability could be revoked). A refused call
    /// keeps the old buffer.
    pub(crate) fn sys_set_ipc_buffer(&mut self, t: ThreadId, ptr: u32) -> Result<(), Error> {
        let buffer = match ptr {
            0 => None,
            ptr if self
                .group(self.thread(t).group)
                .is_some_and(|g| ipc_buffer_allowed(g, ptr)) =>
            {
                Some(ptr)
            }
            _ => return Err(Error::BadPointer),
        };
        self.thread_mut(t).ipc_buffer = buffer;
        Ok(())
    }

    /// Forgets the reply `t` owes, waking that caller with `PeerGone`.
    pub(crate) fn drop_reply(&mut self, t: ThreadId) {
        if self.thread(t).reply_to.is_none() {
            return;
        }
        if let Some(c) = self.thread_mut(t).reply_to.take() {
            self.wake(c, Err(Error::PeerGone));
        }
    }
}
