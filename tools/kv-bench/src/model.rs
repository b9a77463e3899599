//! The device models: modelled time of a run = its instructions at 160 MHz (the
//! ESP32-C3's clock, one instruction per cycle) plus the device time of its traffic,
//! from each part's datasheet. This file must never read a host clock and never
//! change a count: it prices what `kvbench` counted (and, as the library
//! `kv_bench_model`, what `cargo xtask bench` counts of SQLite's benchmark).
//!
//! | device | time charged | source |
//! |---|---|---|
//! | SPI bus (FRAM and NOR) | 200 ns per wire byte: 8 clocks at 40 MHz (the SPI clock of the paper's set-up and the MB85RS4MT's maximum) | MB85RS4MT datasheet (Fujitsu, DS501-00048), AC characteristics: fCK 40 MHz |
//! | FRAM MB85RS4MT | nothing more: a WRITE completes as its last bit is clocked, no erase, no busy wait | same: "no write wait" |
//! | NOR W25Q32JV | + 0.4 ms per page program (tPP, typical; maximum 3 ms), + 45 ms per 4 KiB sector erase (tSE, typical; maximum 400 ms); commands at 40 MHz like the FRAM (its READ 03h runs up to 50 MHz) | W25Q32JV datasheet (Winbond, revision F, 2017), AC electrical characteristics |
//! | memory-mapped NVM (MRAM-like) | 35 ns per 16-bit access | AS3004316 parallel MRAM (Avalanche), the paper's device M1: 35 ns read and write cycle |

/// The CPU clock.
pub const CPU_HZ: f64 = 160e6;
/// One byte on the 40 MHz SPI bus.
pub const SPI_BYTE_NS: f64 = 8.0 * 25.0;
/// W25Q32JV page program, typical.
pub const NOR_PAGE_PROGRAM_NS: f64 = 0.4e6;
/// W25Q32JV 4 KiB sector erase, typical.
pub const NOR_SECTOR_ERASE_NS: f64 = 45e6;
/// AS3004316 16-bit access.
pub const MRAM_HALFWORD_NS: f64 = 35.0;

/// The device under a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    SpiFram,
    SpiNor,
    MemoryMapped,
}

/// What a run did, as `kvbench` counted it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    pub ops: f64,
    pub instructions: f64,
    pub wire_bytes: f64,
    pub programs: f64,
    pub erases: f64,
    pub halfwords: f64,
}

/// Device time of a run in nanoseconds.
pub fn device_ns(device: Device, c: &Counts) -> f64 {
    match device {
        Device::SpiFram => c.wire_bytes * SPI_BYTE_NS,
        Device::SpiNor => {
            c.wire_bytes * SPI_BYTE_NS
                + c.programs * NOR_PAGE_PROGRAM_NS
                + c.erases * NOR_SECTOR_ERASE_NS
        }
        Device::MemoryMapped => c.halfwords * MRAM_HALFWORD_NS,
    }
}

/// Modelled time of a run in seconds: CPU and device, one after the other (the CPU
/// waits for every transfer, as a polled SPI driver does).
pub fn seconds(device: Device, c: &Counts) -> f64 {
    c.instructions / CPU_HZ + device_ns(device, c) * 1e-9
}

/// Modelled operations per second.
pub fn throughput(device: Device, c: &Counts) -> f64 {
    c.ops / seconds(device, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_is_instructions_at_160_mhz_plus_the_datasheet_device_time() {
        let c = Counts {
            ops: 10.0,
            instructions: 160.0,
            wire_bytes: 5.0,
            programs: 2.0,
            erases: 1.0,
            halfwords: 4.0,
        };
        assert!((seconds(Device::SpiFram, &c) - (1e-6 + 1e-6)).abs() < 1e-15);
        let nor = 1e-6 + 1e-6 + 0.8e-3 + 45e-3;
        assert!((seconds(Device::SpiNor, &c) - nor).abs() < 1e-12);
        assert!((seconds(Device::MemoryMapped, &c) - (1e-6 + 140e-9)).abs() < 1e-15);
        assert!((throughput(Device::SpiFram, &c) - 5e6).abs() < 1e-3);
    }
}
