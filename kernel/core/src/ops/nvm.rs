//! `NvmRead` and `NvmWrite`: a task moves bytes between its memory and an NVM grant it
//! holds (an `eternal` memory object, or an NvmRegion) through the kernel's own NVM
//! driver, so that its stores reach the device in one sequence with the kernel's (the
//! crash harness numbers and cuts them all; on a serial bus the kernel alone drives
//! the chip, never in the middle of a task's transfer). This file checks every
//! argument and then calls [`Platform`]; it must never reach NVM outside the grant,
//! and never touch the grant's bytes itself.

use crate::{
    abi::{Error, Rights, MAX_NVM_TRANSFER},
    ids::ThreadId,
    kernel::Kernel,
    obj::Object,
    platform::{Platform, UserMemory},
    spec::MemKind,
};

impl Kernel {
    /// `NvmRead(slot, offset, buf, len)` (`write` false) or `NvmWrite` (true).
    pub(crate) fn sys_nvm(
        &mut self,
        t: ThreadId,
        write: bool,
        a: [u32; 6],
        mem: &mut dyn UserMemory,
        plat: &mut dyn Platform,
    ) -> Result<(), Error> {
        let [slot, offset, buf, len, ..] = a;
        let (on_grant, on_buf) = if write {
            (Rights::WRITE, Rights::READ)
        } else {
            (Rights::READ, Rights::WRITE)
        };
        let (_, cap) = self.lookup(t, slot, None, on_grant)?;
        let (start, size) = match *self.obj(cap.obj) {
            Object::NvmRegion(n) => (n.offset, n.len),
            Object::MemObj(m) if m.kind == MemKind::Eternal => {
                let window = plat.nvm_window().ok_or(Error::WrongKind)?;
                (m.base.checked_sub(window).ok_or(Error::WrongKind)?, m.len)
            }
            _ => return Err(Error::WrongKind),
        };
        if len > MAX_NVM_TRANSFER {
            return Err(Error::TooLong);
        }
        match offset.checked_add(len) {
            Some(end) if end <= size => {}
            _ => return Err(Error::BadArgument),
        }
        self.check_user(t, buf, len, on_buf)?;
        let mut bytes = [0u8; MAX_NVM_TRANSFER as usize];
        let bytes = &mut bytes[..len as usize];
        if bytes.is_empty() {
            return Ok(());
        }
        let at = start + offset;
        if write {
            mem.read(buf, bytes);
            plat.nvm_write(at, bytes)
        } else {
            plat.nvm_read(at, bytes)?;
            mem.write(buf, bytes);
            Ok(())
        }
    }
}
