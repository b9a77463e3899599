//! The console's input queue: bytes the board received, waiting for a task's
//! `ConsoleRead`. Run-time state only (never checkpointed: input not yet taken is lost
//! with the power, as a UART's FIFO would be). It holds a sender back rather than drop
//! a byte: once fewer than [`SLACK`] bytes are free the kernel stops the console's
//! receiver (the board's FIFO fills and its sender waits), and restarts it when a read
//! has made room for [`RESUME`]. Portable and host-tested; it must never touch a device.

/// Bytes the queue holds.
pub const CAPACITY: usize = 512;
/// Free bytes below which the receiver is stopped: more than any board's receive FIFO
/// (the 16550's 16 bytes, the ESP32-C3's 128), which the board drains after the stop.
pub const SLACK: usize = 160;
/// Free bytes at which a stopped receiver starts again.
pub const RESUME: usize = CAPACITY / 2;

/// What the board's receiver should do after a change to the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receiver {
    /// Leave it as it is.
    Keep,
    /// Stop it: the queue is nearly full.
    Stop,
    /// Start it again: a read made room.
    Start,
}

/// A ring of received bytes, oldest first.
pub struct ConsoleIn {
    bytes: [u8; CAPACITY],
    head: usize,
    len: usize,
    /// Whether the receiver was stopped (and not yet started again).
    stopped: bool,
    /// Bytes that came while the queue was full (the board had more than [`SLACK`] in
    /// its FIFO): dropped, and counted so the loss is never silent.
    pub dropped: u32,
}

impl ConsoleIn {
    pub const EMPTY: ConsoleIn = ConsoleIn {
        bytes: [0; CAPACITY],
        head: 0,
        len: 0,
        stopped: false,
        dropped: 0,
    };

    /// Queues a received byte.
    pub fn push(&mut self, byte: u8) -> Receiver {
        if self.len == CAPACITY {
            self.dropped = self.dropped.saturating_add(1);
        } else {
            self.bytes[(self.head + self.len) % CAPACITY] = byte;
            self.len += 1;
        }
        if !self.stopped && CAPACITY - self.len < SLACK {
            self.stopped = true;
            return Receiver::Stop;
        }
        Receiver::Keep
    }

    /// Moves the oldest bytes into `buf`; returns how many, and what the receiver
    /// should do now.
    pub fn take(&mut self, buf: &mut [u8]) -> (usize, Receiver) {
        let n = buf.len().min(self.len);
        for b in buf.iter_mut().take(n) {
            *b = self.bytes[self.head];
            self.head = (self.head + 1) % CAPACITY;
        }
        self.len -= n;
        if self.stopped && CAPACITY - self.len >= RESUME {
            self.stopped = false;
            return (n, Receiver::Start);
        }
        (n, Receiver::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_out_in_the_order_they_came_in_across_the_ring_end() {
        let mut q = ConsoleIn::EMPTY;
        let mut out = [0u8; 300];
        for round in 0..3u8 {
            for i in 0..300u32 {
                assert_eq!(q.push((i as u8).wrapping_add(round)), Receiver::Keep);
            }
            let mut got = 0;
            while got < 300 {
                got += q.take(&mut out[got..]).0;
            }
            assert!(
                (0..300u32).all(|i| out[i as usize] == (i as u8).wrapping_add(round)),
                "round {round}"
            );
        }
        assert_eq!(q.dropped, 0);
    }

    #[test]
    fn the_receiver_stops_before_the_queue_is_full_and_starts_once_half_is_free() {
        let mut q = ConsoleIn::EMPTY;
        for i in 0..CAPACITY - SLACK {
            assert_eq!(q.push(1), Receiver::Keep, "byte {i}");
        }
        assert_eq!(q.push(1), Receiver::Stop, "fewer than SLACK bytes free");
        for _ in 0..SLACK - 1 {
            assert_eq!(q.push(1), Receiver::Keep, "stopped once only");
        }
        assert_eq!(q.dropped, 0, "the slack takes what the FIFO still held");
        assert_eq!(q.push(1), Receiver::Keep);
        assert_eq!(
            q.dropped, 1,
            "a byte past the capacity is counted, not hidden"
        );
        let mut buf = [0u8; 128];
        assert_eq!(q.take(&mut buf), (128, Receiver::Keep), "128 free: not yet");
        assert_eq!(q.take(&mut buf), (128, Receiver::Start), "half free: start");
        assert_eq!(q.take(&mut buf), (128, Receiver::Keep));
    }
}
