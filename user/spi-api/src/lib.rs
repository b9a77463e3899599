//! The SPI FRAM driver's IPC protocol, shared by the driver task and its clients.
//!
//! A request is a Call on the driver's endpoint with four words `[op, addr, len, 0]`
//! and, for a write, the bytes in the message's bounded copy; the reply is
//! `[status, writer index low, writer index high, free ring bytes]` and, for a read,
//! the bytes. A
//! write is durable in the driver's ring when the reply arrives, but reaches the chip
//! only after the checkpoint that covers it has committed; a read sees the device with
//! every pending write laid over it. This crate holds numbers and client calls only,
//! never driver logic.

#![cfg_attr(not(test), no_std)]

use amber_user::abi::NO_SLOT;
use amber_user::{call_ep, Error, IpcDesc};

/// Write `len` bytes (in the message) at device address `addr`.
pub const OP_WRITE: u32 = 1;
/// Read `len` bytes at `addr` (returned in the reply's message).
pub const OP_READ: u32 = 2;
/// Largest write or read per request.
pub const MAX_CHUNK: usize = 256;

/// Why the driver refused a request (the reply's status word, 0 = success).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpiError {
    /// The range lies outside the FRAM.
    OutsideDevice,
    /// More than [`MAX_CHUNK`] bytes, or an unknown operation.
    BadRequest,
    /// The chip or the ring failed (see the driver's console line).
    Device,
    /// The IPC itself failed.
    Ipc(Error),
}

impl SpiError {
    /// The status word for this error.
    pub fn status(self) -> u32 {
        match self {
            SpiError::OutsideDevice => 1,
            SpiError::BadRequest => 2,
            SpiError::Device | SpiError::Ipc(_) => 3,
        }
    }

    fn from_status(s: u32) -> Result<(), SpiError> {
        match s {
            0 => Ok(()),
            1 => Err(SpiError::OutsideDevice),
            2 => Err(SpiError::BadRequest),
            _ => Err(SpiError::Device),
        }
    }
}

fn desc(send: &[u8], recv: &mut [u8]) -> IpcDesc {
    IpcDesc {
        send_ptr: send.as_ptr() as usize as u32,
        send_len: send.len() as u32,
        send_cap: NO_SLOT,
        recv_ptr: recv.as_mut_ptr() as usize as u32,
        recv_len: recv.len() as u32,
        recv_slot: NO_SLOT,
        ..IpcDesc::default()
    }
}

/// What the driver's ring looks like after a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// The ring's writer index: the visible index that makes this write reach the chip.
    pub writer: u64,
    /// Bytes the ring can still take before it needs a checkpoint. A client that must
    /// be able to write a known amount later without a checkpoint in between (a heap
    /// service's persist) keeps this above that amount.
    pub free: u32,
}

/// Bytes one write of `len` bytes takes in the driver's ring: its record header and
/// the data, rounded up to the ring's alignment. A write that does not fit in the rest
/// of the ring's lap also pads that rest (at most one such pad per lap).
pub const fn ring_bytes(len: u32) -> u32 {
    (amber_vring::ENTRY_HEADER_LEN + len).next_multiple_of(amber_vring::ALIGN)
}

/// Writes `data` at `addr` through the driver on endpoint `ep`.
pub fn write(ep: u32, addr: u32, data: &[u8]) -> Result<Written, SpiError> {
    if data.len() > MAX_CHUNK {
        return Err(SpiError::BadRequest);
    }
    let mut d = desc(data, &mut []);
    let r =
        call_ep(ep, [OP_WRITE, addr, data.len() as u32, 0], Some(&mut d)).map_err(SpiError::Ipc)?;
    SpiError::from_status(r[0])?;
    Ok(Written {
        writer: r[1] as u64 | (r[2] as u64) << 32,
        free: r[3],
    })
}

/// Reads `buf.len()` bytes at `addr`, including writes not yet on the chip.
pub fn read(ep: u32, addr: u32, buf: &mut [u8]) -> Result<(), SpiError> {
    if buf.len() > MAX_CHUNK {
        return Err(SpiError::BadRequest);
    }
    let len = buf.len() as u32;
    let mut d = desc(&[], buf);
    let r = call_ep(ep, [OP_READ, addr, len, 0], Some(&mut d)).map_err(SpiError::Ipc)?;
    SpiError::from_status(r[0])?;
    if d.got_len != len {
        return Err(SpiError::Device);
    }
    Ok(())
}
