//! Boards: where concrete devices are wired together. Each board module offers the
//! same functions (console, timer, interrupts, NVM discovery, exit) to the rest of
//! the kernel; only this folder names device addresses. `esp32c3` comes later.

mod qemu_virt;

pub use qemu_virt::{
    bootargs, exit, exit_success, external_interrupt, find_nvm, init_interrupts, ticks,
    timer_interrupt, uart_bytes_received, uptime_ms, CONSOLE_UART,
};
