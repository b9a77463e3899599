//! The MB85RS command set this driver speaks: one byte per command, sent first in a
//! transaction (chip select low), followed by an address and data where the command
//! takes them.
//!
//! Only the six commands below are used; this file must never grow an opcode the
//! simulation does not model (the sleep, ID and fast-read commands are left out on
//! purpose, so that every byte the driver sends is checked by the host tests).

/// Set the write-enable latch (WEL). Required before every WRITE and WRSR.
pub const WREN: u8 = 0x06;
/// Reset the write-enable latch.
pub const WRDI: u8 = 0x04;
/// Read the status register: the chip then shifts the register out on MISO.
pub const RDSR: u8 = 0x05;
/// Write the status register (its non-volatile bits WPEN, BP1, BP0); one data byte.
pub const WRSR: u8 = 0x01;
/// Read memory: address, then the chip shifts out bytes from successive addresses.
pub const READ: u8 = 0x03;
/// Write memory: address, then every data byte is stored as it arrives, at successive
/// addresses. The chip resets WEL when chip select rises.
pub const WRITE: u8 = 0x02;
