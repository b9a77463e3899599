//! Syscall wrappers: one safe function per syscall of `amber_abi`, plus the raw
//! `ecall` they share. Each returns the kernel's error code as an [`Error`]. The raw
//! [`syscall`] is public for tests that must send arbitrary numbers (sysfuzz); it
//! cannot harm the kernel, which checks every argument.

use amber_abi::{Error, IpcDesc, ObjKind, Rights, Sysno, WatchFlags, NO_SLOT};

/// The six result registers a0..a5 of an `ecall`.
pub type Regs = [u32; 6];

/// Issues `ecall` with `a7 = nr` and `a0..a5 = args`; returns `a0..a5`.
#[cfg(target_arch = "riscv32")]
pub fn syscall(nr: u32, args: Regs) -> Regs {
    let mut r = args;
    // SAFETY: `ecall` traps to the kernel, which reads a0..a5 and a7, writes a0..a5 and
    // resumes after the instruction. It touches only memory the arguments name, and
    // only after checking the task may access it.
    unsafe {
        core::arch::asm!(
            "ecall",
            inlateout("a0") r[0],
            inlateout("a1") r[1],
            inlateout("a2") r[2],
            inlateout("a3") r[3],
            inlateout("a4") r[4],
            inlateout("a5") r[5],
            in("a7") nr,
            options(nostack),
        );
    }
    r
}

/// On the host there is no kernel to call: the runtime builds there only so that the
/// workspace builds, and any call says so.
#[cfg(not(target_arch = "riscv32"))]
pub fn syscall(nr: u32, _args: Regs) -> Regs {
    panic!("Amber syscall {nr} called on the host: tasks run only on the device")
}

fn call(nr: Sysno, args: Regs) -> Result<Regs, Error> {
    let r = syscall(nr as u32, args);
    Error::check(r[0]).map(|()| r)
}

fn ptr<T>(p: *const T) -> u32 {
    p as usize as u32
}

/// Does nothing in the kernel (for measuring syscall cost).
pub fn null() {
    let _ = call(Sysno::Null, [0; 6]);
}

/// Gives the CPU to the next ready task of the same priority.
pub fn yield_now() {
    let _ = call(Sysno::Yield, [0; 6]);
}

/// Ends the task with `code`.
pub fn exit(code: u32) -> ! {
    let _ = call(Sysno::Exit, [code, 0, 0, 0, 0, 0]);
    // The kernel never returns from Exit; if it did, stay here rather than run on.
    loop {
        core::hint::spin_loop();
    }
}

/// Writes bytes to the kernel console (at most `MAX_DEBUG_WRITE` per call).
pub fn debug_write(bytes: &[u8]) -> Result<(), Error> {
    call(
        Sysno::DebugWrite,
        [ptr(bytes.as_ptr()), bytes.len() as u32, 0, 0, 0, 0],
    )
    .map(drop)
}

/// Takes console input that is waiting (at most `MAX_DEBUG_WRITE` bytes per call) into
/// `buf`; returns how many bytes, 0 when none are waiting (it never blocks).
pub fn console_read(buf: &mut [u8]) -> Result<usize, Error> {
    call(
        Sysno::ConsoleRead,
        [ptr(buf.as_ptr()), buf.len() as u32, 0, 0, 0, 0],
    )
    .map(|r| r[1] as usize)
}

fn desc_arg(desc: Option<&mut IpcDesc>) -> u32 {
    desc.map_or(0, |d| ptr(d as *const IpcDesc))
}

/// Sends four words on an endpoint; blocks until a receiver takes them.
pub fn send(ep: u32, words: [u32; 4], desc: Option<&mut IpcDesc>) -> Result<(), Error> {
    let [a, b, c, d] = words;
    call(Sysno::Send, [ep, a, b, c, d, desc_arg(desc)]).map(drop)
}

/// Sends four words and waits for the reply's four words.
pub fn call_ep(ep: u32, words: [u32; 4], desc: Option<&mut IpcDesc>) -> Result<[u32; 4], Error> {
    let [a, b, c, d] = words;
    call(Sysno::Call, [ep, a, b, c, d, desc_arg(desc)]).map(|r| [r[1], r[2], r[3], r[4]])
}

/// Waits for a message: its four words and the sender's badge.
pub fn recv(ep: u32, desc: Option<&mut IpcDesc>) -> Result<([u32; 4], u32), Error> {
    call(Sysno::Recv, [ep, 0, 0, 0, 0, desc_arg(desc)]).map(|r| ([r[1], r[2], r[3], r[4]], r[5]))
}

/// Replies to the caller of the last message received.
pub fn reply(words: [u32; 4], desc: Option<&mut IpcDesc>) -> Result<(), Error> {
    let [a, b, c, d] = words;
    call(Sysno::Reply, [0, a, b, c, d, desc_arg(desc)]).map(drop)
}

/// Replies to the caller of the last message received (if one is owed), then waits for
/// the next message on `ep`, in one syscall: a server's loop. The descriptor's send half
/// goes with the reply, its receive half takes the message.
pub fn reply_recv(
    ep: u32,
    words: [u32; 4],
    desc: Option<&mut IpcDesc>,
) -> Result<([u32; 4], u32), Error> {
    let [a, b, c, d] = words;
    call(Sysno::ReplyRecv, [ep, a, b, c, d, desc_arg(desc)])
        .map(|r| ([r[1], r[2], r[3], r[4]], r[5]))
}

/// Sets notification bits.
pub fn signal(notification: u32, bits: u32) -> Result<(), Error> {
    call(Sysno::Signal, [notification, bits, 0, 0, 0, 0]).map(drop)
}

/// Waits until some notification bits are set; returns and clears them.
pub fn wait(notification: u32) -> Result<u32, Error> {
    call(Sysno::Wait, [notification, 0, 0, 0, 0, 0]).map(|r| r[1])
}

/// Returns and clears the notification bits, without waiting.
pub fn poll(notification: u32) -> Result<u32, Error> {
    call(Sysno::Poll, [notification, 0, 0, 0, 0, 0]).map(|r| r[1])
}

/// Waits for the interrupt of an IrqNotification.
pub fn irq_wait(irq: u32) -> Result<(), Error> {
    call(Sysno::IrqWait, [irq, 0, 0, 0, 0, 0]).map(drop)
}

/// Acknowledges the delivered interrupt so it can fire again.
pub fn irq_ack(irq: u32) -> Result<(), Error> {
    call(Sysno::IrqAck, [irq, 0, 0, 0, 0, 0]).map(drop)
}

/// Arms `timer` to set `bits` on `notification` at tick `deadline` (bits 0 disarms).
pub fn timer_set(timer: u32, notification: u32, bits: u32, deadline: u64) -> Result<(), Error> {
    let args = [
        timer,
        notification,
        bits,
        deadline as u32,
        (deadline >> 32) as u32,
        0,
    ];
    call(Sysno::TimerSet, args).map(drop)
}

/// Copies the capability in `src` into the empty slot `dst`, with at most `rights`,
/// and a badge (0 keeps the source's).
pub fn cap_derive(src: u32, dst: u32, rights: Rights, badge: u32) -> Result<(), Error> {
    call(Sysno::CapDerive, [src, dst, rights.bits(), badge, 0, 0]).map(drop)
}

/// Empties a slot.
pub fn cap_delete(slot: u32) -> Result<(), Error> {
    call(Sysno::CapDelete, [slot, 0, 0, 0, 0, 0]).map(drop)
}

/// Deletes every capability derived from the one in `slot`, in every task.
pub fn cap_revoke(slot: u32) -> Result<(), Error> {
    call(Sysno::CapRevoke, [slot, 0, 0, 0, 0, 0]).map(drop)
}

/// The kind, rights and badge of the capability in `slot`.
pub fn cap_info(slot: u32) -> Result<(Option<ObjKind>, Rights, u32), Error> {
    call(Sysno::CapInfo, [slot, 0, 0, 0, 0, 0]).map(|r| {
        (
            ObjKind::from_u32(r[1]),
            Rights::from_bits_truncate(r[2]),
            r[3],
        )
    })
}

/// Deletes the object the capability in `slot` names (revoking every capability to it).
pub fn obj_delete(slot: u32) -> Result<(), Error> {
    call(Sysno::ObjDelete, [slot, 0, 0, 0, 0, 0]).map(drop)
}

/// (thread id, state, exit code) of the task in `slot`, or of the caller.
pub fn task_info(slot: Option<u32>) -> Result<(u32, u32, u32), Error> {
    call(Sysno::TaskInfo, [slot.unwrap_or(NO_SLOT), 0, 0, 0, 0, 0]).map(|r| (r[1], r[2], r[3]))
}

/// Timer ticks since boot.
pub fn now() -> u64 {
    call(Sysno::Now, [0; 6]).map_or(0, |r| r[1] as u64 | (r[2] as u64) << 32)
}

/// Whether [`crate::instret`] and [`crate::cycles`] count exactly (QEMU `-icount`):
/// only then is a difference of two `instret` readings an instruction count; otherwise
/// the counters follow the host's clock. Ask before printing a figure, not once: a
/// restore may resume the task on a machine that counts the other way.
pub fn counters_exact() -> bool {
    call(Sysno::Now, [0; 6]).is_ok_and(|r| r[3] == 1)
}

/// Whether the kernel reaches its NVM over a serial bus (SPI FRAM): then a task
/// reaches its NVM grants only by [`nvm_read`] and [`nvm_write`], since the chip is
/// the kernel's to drive; on memory-mapped NVM it may also load and store them.
pub fn nvm_on_bus() -> bool {
    call(Sysno::Now, [0; 6]).is_ok_and(|r| r[4] == 1)
}

/// Whether the kernel numbers every NVM store for an injected power cut (boot option
/// `amber.cut`): a store a task makes by loads and stores on memory-mapped NVM is not
/// in that sequence and cannot be cut at a chosen point, one made by [`nvm_write`] is.
pub fn nvm_stores_numbered() -> bool {
    call(Sysno::Now, [0; 6]).is_ok_and(|r| r[5] == 1)
}

/// Reads `buf.len()` (at most `MAX_NVM_TRANSFER`) bytes at `offset` of the NVM grant
/// in `slot` (an `eternal` memory object or an NvmRegion) through the kernel.
pub fn nvm_read(slot: u32, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
    let (ptr, len) = (ptr(buf.as_ptr()), buf.len() as u32);
    call(Sysno::NvmRead, [slot, offset, ptr, len, 0, 0]).map(drop)
}

/// Writes `data` (at most `MAX_NVM_TRANSFER` bytes) at `offset` of the NVM grant in
/// `slot` through the kernel: one store in the kernel's own sequence of NVM stores.
pub fn nvm_write(slot: u32, offset: u32, data: &[u8]) -> Result<(), Error> {
    let (ptr, len) = (ptr(data.as_ptr()), data.len() as u32);
    call(Sysno::NvmWrite, [slot, offset, ptr, len, 0, 0]).map(drop)
}

/// Asks for a whole-system checkpoint and returns once it has committed: everything
/// this task did before the call survives any later power cut.
pub fn checkpoint() -> Result<(), Error> {
    call(Sysno::Checkpoint, [0; 6]).map(drop)
}

/// A commit watch for a task that only needs to know of restores: `restore_bits` on
/// `notification` after each restore, no news of commits (the kernel still writes
/// `watch[1]` after each). [`signalled`] then tells the task it was restored. `flags`
/// as for [`commit_watch`]: `WatchFlags::PERSIST_CALLBACK` makes every checkpoint wait
/// for this task's [`persist_done`].
pub fn watch_restores(
    watch: &mut [u64; 2],
    notification: u32,
    restore_bits: u32,
    flags: WatchFlags,
) -> Result<(), Error> {
    commit_watch(
        watch.as_mut_ptr() as usize as u32,
        notification,
        0,
        restore_bits,
        flags,
    )
}

/// Whether any of `bits` is signalled on `notification` (the poll clears them all).
pub fn signalled(notification: u32, bits: u32) -> bool {
    poll(notification).is_ok_and(|got| got & bits != 0)
}

/// Watches the u64 at `ptr` (in this task's memory): after every checkpoint commits,
/// the kernel writes the value it had in that checkpoint to `ptr + 8` and signals
/// `commit_bits` on `notification`; after a restore it signals `restore_bits`.
/// `ptr` = 0 removes the watch. `flags` makes the task a persist callback or a
/// service that runs while callbacks persist (see the ABI's "Persist callbacks").
pub fn commit_watch(
    ptr: u32,
    notification: u32,
    commit_bits: u32,
    restore_bits: u32,
    flags: WatchFlags,
) -> Result<(), Error> {
    call(
        Sysno::CommitWatch,
        [
            ptr,
            notification,
            commit_bits,
            restore_bits,
            flags.bits(),
            0,
        ],
    )
    .map(drop)
}

/// A persist callback reports that it has persisted; `bound` is its static bound on
/// that work in instructions (0 = none), which the kernel prints next to the measured
/// cost on a power failure. When every callback is done, the kernel takes its
/// checkpoint before any other task runs. `WrongState` when no persist was asked of
/// this task.
pub fn persist_done(bound: u32) -> Result<(), Error> {
    call(Sysno::PersistDone, [bound, 0, 0, 0, 0, 0]).map(drop)
}
