//! hello: the first U-mode program. It prints a greeting with its thread id and exits
//! with code 0. It must never touch anything but its own memory.

#![cfg_attr(target_os = "none", no_std, no_main)]

amber_user::main!(main);

fn main() {
    let (tid, _, _) = amber_user::task_info(None).unwrap_or((u32::MAX, 0, 0));
    amber_user::println!("Hello from U-mode! I am thread {tid}, confined by PMP.");
}
