//! Boards: where concrete devices are wired together. Each board module offers the
//! same functions (console, timer, interrupts, NVM discovery, exit) to the rest of
//! the kernel; only this folder names device addresses. `esp32c3` comes later.

mod qemu_virt;

pub use qemu_virt::{
    bootargs, console_task_output, enable_user_counters, exit, exit_success, external_interrupt,
    find_nvm, init_interrupts, irq_complete, irq_enable, ticks, timer_interrupt,
    uart_bytes_received, uptime_ms, uptime_us, External, CONSOLE_UART,
};
