//! The SPI FRAM driver's IPC protocol, shared by the driver task and its clients.
//!
//! Every client has a buffer of [`MAX_CHUNK`] bytes shared with the driver alone, in
//! the driver's never-checkpointed memory `spi` (a "heap" memory of the app): the
//! driver holds all of it, the client with badge `b` the [`MAX_CHUNK`] bytes at
//! [`buffer_offset`]`(b)` of it, which the app grants as a part of `spi`, and the rest,
//! from [`INDEX_OFFSET`], is the driver's pending-entry index (as large as the app makes
//! `spi`: the driver refuses to start with one too small for its ring). A request is a Call on the driver's endpoint with
//! four words `[op, addr, len, check]` and no message bytes: a write's bytes are at
//! the start of the buffer, and a read's come back there. The reply is `[status,
//! writer index low, writer index high, free ring bytes]` for a write and `[status,
//! writer index low, writer index high, check]` for a read. A write is durable in the
//! driver's ring when the reply arrives, but reaches the chip only after the checkpoint
//! that covers it has committed; a read sees the device with every pending write laid
//! over it. The client is blocked in its Call while the driver uses the buffer, so the
//! two never touch it at once; the driver still copies a write out of it before it
//! checks anything.
//!
//! The check word is the [`payload_check`] of the bytes in the buffer. The buffer lies
//! outside the checkpoint but the message words do not (they are the threads'
//! registers): a checkpoint taken while a request is in flight (the driver has it but
//! has not copied the write's bytes yet, or has replied to a read whose bytes the
//! client has not copied out yet) comes back after a restore with the words and
//! without the bytes. Whoever reads the buffer compares: the driver refuses a write
//! whose bytes do not match ([`SpiError::Stale`], nothing written) and the client
//! writes the buffer again; the client reads again. [`Client`] does both. The same
//! check catches an app that grants a client the wrong part of `spi`: client and
//! driver then never see the same bytes, and every request ends `Stale`. This crate
//! holds numbers and client calls only, never driver logic.

#![cfg_attr(not(test), no_std)]

use amber_user::{call_ep, Error, Memory};

/// Write the first `len` bytes of the client's buffer at device address `addr`.
pub const OP_WRITE: u32 = 1;
/// Read `len` bytes at `addr` into the start of the client's buffer.
pub const OP_READ: u32 = 2;
/// Largest write or read per request: the size of a client's buffer.
pub const MAX_CHUNK: usize = 256;
/// Clients the driver serves: badges 1 to `MAX_CLIENTS`.
pub const MAX_CLIENTS: u32 = 4;
/// Where the driver's pending-entry index begins in its memory `spi`: after every
/// client's buffer.
pub const INDEX_OFFSET: usize = MAX_CLIENTS as usize * MAX_CHUNK;

/// Where in `spi` the buffer of the client with `badge` (1 to [`MAX_CLIENTS`]) is, or
/// `None` for a badge the driver does not serve.
pub const fn buffer_offset(badge: u32) -> Option<usize> {
    if badge == 0 || badge > MAX_CLIENTS {
        return None;
    }
    Some((badge as usize - 1) * MAX_CHUNK)
}

/// Requests a [`Client`] makes for one write or read whose buffer a restore lost
/// ([`SpiError::Stale`]) before it gives up: each loss takes a restore, so more than a
/// few in a row mean the buffer is not the client's alone.
const ATTEMPTS: usize = 8;

const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// The check word of the bytes a request or a read's reply leaves in the buffer: their
/// CRC-32 (ISO-HDLC).
pub fn payload_check(bytes: &[u8]) -> u32 {
    CRC32.checksum(bytes)
}

/// Why the driver refused a request (the reply's status word, 0 = success).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpiError {
    /// The range lies outside the FRAM.
    OutsideDevice,
    /// More than [`MAX_CHUNK`] bytes, or an unknown operation.
    BadRequest,
    /// The chip or the ring failed (see the driver's console line).
    Device,
    /// The driver's ring is full; nothing was written. Ask for a checkpoint (the
    /// `Checkpoint` syscall), which makes the ring visible so that the driver applies
    /// and frees it before it serves the next call, then write again. The driver never
    /// asks itself: it must keep serving persist callbacks during the checkpoint's
    /// persist phase.
    Full,
    /// The buffer does not hold the bytes the request's check word describes: a
    /// restore found the request in flight and lost the buffer (it is outside the
    /// checkpoint). Nothing was written; write the buffer again and repeat.
    Stale,
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
            SpiError::Full => 4,
            SpiError::Stale => 5,
        }
    }

    fn from_status(s: u32) -> Result<(), SpiError> {
        match s {
            0 => Ok(()),
            1 => Err(SpiError::OutsideDevice),
            2 => Err(SpiError::BadRequest),
            4 => Err(SpiError::Full),
            5 => Err(SpiError::Stale),
            _ => Err(SpiError::Device),
        }
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
    amber_vring::layout::entry_span(len)
}

/// A client of the driver: its endpoint capability and its shared buffer.
#[derive(Clone, Copy, Debug)]
pub struct Client {
    ep: u32,
    buf: *mut u8,
}

impl Client {
    /// The client calling the driver on endpoint slot `ep`, whose buffer is `buf`
    /// (`amber_user::memory!("SPI")`: its part of the driver's memory); `None` when
    /// it is smaller than [`MAX_CHUNK`].
    ///
    /// # Safety
    ///
    /// The app must grant this task `buf` with read and write, shared with the driver
    /// alone, and nothing else in the task may use it: only `Client`s made from it
    /// (which touch it only inside a call, and tasks are single-threaded).
    pub unsafe fn new(ep: u32, buf: Memory) -> Option<Client> {
        (buf.len >= MAX_CHUNK).then_some(Client {
            ep,
            buf: buf.base as *mut u8,
        })
    }

    /// Writes `data` (at most [`MAX_CHUNK`] bytes) at `addr`. A full ring is
    /// [`SpiError::Full`]: ask for a checkpoint and write again. A buffer a restore
    /// lost is filled and sent again here (see the crate doc).
    pub fn write(&mut self, addr: u32, data: &[u8]) -> Result<Written, SpiError> {
        if data.len() > MAX_CHUNK {
            return Err(SpiError::BadRequest);
        }
        let check = payload_check(data);
        for _ in 0..ATTEMPTS {
            // SAFETY: `new`'s contract: the buffer holds MAX_CHUNK bytes this task may
            // write, and only the driver (blocked in Recv, or serving another client)
            // and other `Client`s (not running: this one is) use it.
            unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), self.buf, data.len()) };
            match self.call(OP_WRITE, addr, data.len(), check) {
                Err(SpiError::Stale) => continue,
                r => {
                    return r.map(|r| Written {
                        writer: r[1] as u64 | (r[2] as u64) << 32,
                        free: r[3],
                    })
                }
            }
        }
        Err(SpiError::Stale)
    }

    /// Reads `buf.len()` bytes (at most [`MAX_CHUNK`]) at `addr`, including writes
    /// not yet on the chip. Bytes a restore lost from the buffer are read again (see
    /// the crate doc).
    pub fn read(&mut self, addr: u32, buf: &mut [u8]) -> Result<(), SpiError> {
        if buf.len() > MAX_CHUNK {
            return Err(SpiError::BadRequest);
        }
        for _ in 0..ATTEMPTS {
            let r = self.call(OP_READ, addr, buf.len(), 0)?;
            // SAFETY: as in `write`; the driver wrote these bytes before it replied.
            unsafe { core::ptr::copy_nonoverlapping(self.buf, buf.as_mut_ptr(), buf.len()) };
            if payload_check(buf) == r[3] {
                return Ok(());
            }
        }
        Err(SpiError::Stale)
    }

    fn call(&mut self, op: u32, addr: u32, len: usize, check: u32) -> Result<[u32; 4], SpiError> {
        let r = call_ep(self.ep, [op, addr, len as u32, check], None).map_err(SpiError::Ipc)?;
        SpiError::from_status(r[0])?;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_badge_has_its_own_buffer_before_the_index() {
        assert_eq!(buffer_offset(0), None, "badge 0 is no client");
        assert_eq!(buffer_offset(MAX_CLIENTS + 1), None);
        assert_eq!(buffer_offset(1), Some(0));
        let all: Vec<usize> = (1..=MAX_CLIENTS).filter_map(buffer_offset).collect();
        assert_eq!(all.len(), MAX_CLIENTS as usize);
        for (i, &at) in all.iter().enumerate() {
            assert!(
                at + MAX_CHUNK <= INDEX_OFFSET,
                "the index follows the buffers"
            );
            assert_eq!(at % 256, 0, "a PMP region of its own, 256-aligned");
            if i > 0 {
                assert_eq!(at - all[i - 1], MAX_CHUNK, "no two overlap");
            }
        }
    }

    #[test]
    fn the_check_is_crc32_and_tells_a_lost_buffer_from_the_bytes_written() {
        assert_eq!(payload_check(b"123456789"), 0xCBF4_3926, "CRC-32/ISO-HDLC");
        // What a restore leaves of a buffer on QEMU: zeros.
        let record = 3076u32.to_le_bytes();
        assert_ne!(payload_check(&record), payload_check(&[0; 4]));
        assert_ne!(
            payload_check(&[0; 4]),
            payload_check(&[0; 5]),
            "the length counts"
        );
    }

    #[test]
    fn statuses_round_trip() {
        for e in [
            SpiError::OutsideDevice,
            SpiError::BadRequest,
            SpiError::Device,
            SpiError::Full,
            SpiError::Stale,
        ] {
            assert_eq!(SpiError::from_status(e.status()), Err(e));
        }
        assert_eq!(SpiError::from_status(0), Ok(()));
    }
}
