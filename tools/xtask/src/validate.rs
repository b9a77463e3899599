//! Checks an app description against every rule the kernel checks when it boots the
//! app, before anything is built, and refuses a bad one with a message naming the
//! field (`tasks[2].priority = 200: ...`). Without it the kernel would find the fault
//! at first boot, after the NVM was opened.
//!
//! Two layers. First this file's own rules, each against the limit of the crate whose
//! check the kernel runs (imported, never copied): the task count (the kernel's task
//! tables and the root CapGroup, `amber_core::MAX_TASKS`), names, priorities, capability
//! counts, memory regions, capability names and kinds, interrupts, task references,
//! ranges and the object arena. Then the kernel's own check, `amber_core`'s
//! `Kernel::boot`, run here on the host over the same description: a rule added to the
//! kernel later is enforced at build time even before this file learns to name its
//! field. The kernel keeps its checks as the second line (`system::check_app`). This
//! file must never build anything or change the description.

use crate::app::{App, Cap, Placed};
use amber_core::{
    CapSpec, FaultPolicy, Kernel, MemKind, RegionSpec, Rights, TaskSpec, MAX_NAME, MAX_OBJECTS,
    MAX_REGIONS, MAX_TASKS, NUM_PRIORITIES, SLOTS,
};
use amber_kernel::board::MemoryMap;
use std::collections::BTreeMap;
use std::path::Path;

/// Checks the app placed as `placed`, as described in `path`, with the kernel's own
/// check (`app::load` has run [`rules`]).
pub fn check(placed: &[Placed], path: &Path) -> Result<(), String> {
    kernel_check(placed).map_err(|e| format!("{}: {e}", path.display()))
}

/// The rules, in the order the kernel checks them (`app::load` runs them first).
pub fn rules(app: &App) -> Result<(), String> {
    let n = app.tasks.len();
    if n > MAX_TASKS {
        return Err(format!(
            "tasks[{MAX_TASKS}] (`{}`): an app has at most {MAX_TASKS} tasks (the kernel's task \
             tables, amber_core::MAX_TASKS); this one has {n}",
            app.tasks[MAX_TASKS].name
        ));
    }
    // Shared names: endpoint or notification, and where first used.
    let mut named: BTreeMap<&str, (bool, String)> = BTreeMap::new();
    let mut irqs: BTreeMap<u32, String> = BTreeMap::new();
    // The root CapGroup, and a CapGroup and a Thread per task.
    let mut objects = 1 + 2 * n;
    for (i, t) in app.tasks.iter().enumerate() {
        let at = format!("tasks[{i}]");
        let name_len = t.name.len();
        if name_len == 0 || name_len > MAX_NAME {
            return Err(format!(
                "{at}.name = {:?}: a task name is 1 to {MAX_NAME} bytes (amber_core::MAX_NAME), \
                 this one is {name_len}",
                t.name
            ));
        }
        if let Some(j) = app.tasks[..i].iter().position(|e| e.name == t.name) {
            return Err(format!(
                "{at}.name = {:?}: tasks[{j}] has the same name; task names are unique",
                t.name
            ));
        }
        if t.priority >= NUM_PRIORITIES {
            return Err(format!(
                "{at}.priority = {}: a priority is below {NUM_PRIORITIES} \
                 (amber_core::NUM_PRIORITIES; 0 is the most urgent)",
                t.priority
            ));
        }
        if t.caps.len() > SLOTS {
            return Err(format!(
                "{at}.caps: {} capabilities, a task holds at most {SLOTS} (amber_core::SLOTS)",
                t.caps.len()
            ));
        }
        // Its code and its RAM, then one region per memory capability.
        let regions = 2 + t
            .caps
            .iter()
            .filter(|c| matches!(c, Cap::Mmio { .. } | Cap::Eternal { .. } | Cap::Heap { .. }))
            .count();
        if regions > MAX_REGIONS {
            return Err(format!(
                "{at}.caps: its code, its RAM and {} memory capabilities (mmio, eternal, heap) \
                 are {regions} regions; PMP confines a task to {MAX_REGIONS} \
                 (amber_core::MAX_REGIONS)",
                regions - 2
            ));
        }
        for (k, c) in t.caps.iter().enumerate() {
            let cap = format!("{at}.caps[{k}]");
            match c {
                Cap::Endpoint { name, .. } | Cap::Notification { name, .. } => {
                    let endpoint = matches!(c, Cap::Endpoint { .. });
                    let kind = |e: bool| if e { "an endpoint" } else { "a notification" };
                    match named.get(name.as_str()) {
                        Some((e, first)) if *e != endpoint => {
                            return Err(format!(
                                "{cap}.name = {name:?}: {} here, but {first} makes it {}; a \
                                 name is one kind of object",
                                kind(endpoint),
                                kind(*e)
                            ))
                        }
                        Some(_) => {}
                        None => {
                            named.insert(name, (endpoint, cap.clone()));
                            objects += 1;
                        }
                    }
                }
                Cap::Irq { irq } => {
                    if let Some(first) = irqs.insert(*irq, cap.clone()) {
                        return Err(format!(
                            "{cap}.irq = {irq}: {first} has this interrupt already; each is \
                             given once"
                        ));
                    }
                    objects += 1;
                }
                Cap::Task { name } => {
                    if !app.tasks.iter().any(|o| &o.name == name) {
                        return Err(format!("{cap}.name = {name:?}: the app has no such task"));
                    }
                }
                Cap::Timer {} => objects += 1,
                Cap::Mmio { base, len, .. } => {
                    range(&cap, "base", *base, *len)?;
                    objects += 1;
                }
                // xtask places them (`app::place`), inside the board's memory.
                Cap::Eternal { .. } | Cap::Heap { .. } => objects += 1,
                Cap::Nvm { offset, len, .. } => {
                    range(&cap, "offset", *offset, *len)?;
                    objects += 1;
                }
            }
        }
    }
    if objects > MAX_OBJECTS {
        return Err(format!(
            "the app needs {objects} kernel objects (a CapGroup and a Thread per task, the \
             root, one per shared name and per other capability); the arena holds \
             {MAX_OBJECTS} (amber_core::MAX_OBJECTS)"
        ));
    }
    Ok(())
}

/// A range of `len` bytes at `start` must be non-empty and not wrap around 4 GiB.
fn range(cap: &str, field: &str, start: u32, len: u32) -> Result<(), String> {
    if len == 0 || start.checked_add(len - 1).is_none() {
        return Err(format!(
            "{cap}: {field} {start:#x} and len {len:#x} are an empty range or wrap around 4 GiB"
        ));
    }
    Ok(())
}

/// The rights names of an app description (checked by `app::load`).
fn rights(list: &[String]) -> Rights {
    list.iter().fold(Rights::empty(), |r, s| {
        r | match s.as_str() {
            "read" => Rights::READ,
            "write" => Rights::WRITE,
            "grant" => Rights::GRANT,
            _ => Rights::empty(),
        }
    })
}

/// The kernel's view of cap `c`; `placed` is where xtask put it, if it is memory.
fn cap_spec<'a>(c: &'a Cap, placed: Option<(u32, u32)>, map: &MemoryMap) -> CapSpec<'a> {
    let (at, size) = placed.unwrap_or_default();
    let mem = |base, len, r: &[String], kind| CapSpec::MemObj {
        base,
        len,
        rights: rights(r),
        kind,
    };
    match c {
        Cap::Endpoint {
            name,
            rights: r,
            badge,
        } => CapSpec::Endpoint {
            name,
            rights: rights(r),
            badge: *badge,
        },
        Cap::Notification { name, rights: r } => CapSpec::Notification {
            name,
            rights: rights(r),
        },
        Cap::Irq { irq } => CapSpec::Irq { irq: *irq },
        Cap::Timer {} => CapSpec::Timer,
        Cap::Mmio {
            base, len, rights, ..
        } => mem(*base, *len, rights, MemKind::Device),
        Cap::Eternal { rights: r, .. } if crate::app::eternal_is_nvm_region(map) => {
            CapSpec::NvmRegion {
                offset: at,
                len: size,
                rights: rights(r),
            }
        }
        Cap::Eternal { rights, .. } => mem(at, size, rights, MemKind::Eternal),
        Cap::Heap { rights, .. } => mem(at, size, rights, MemKind::HeapManaged),
        Cap::Nvm {
            offset,
            len,
            rights: r,
        } => CapSpec::NvmRegion {
            offset: *offset,
            len: *len,
            rights: rights(r),
        },
        Cap::Task { name } => CapSpec::Task { name },
    }
}

/// Boots the app's capability tree with the kernel's own code, on the host.
fn kernel_check(placed: &[Placed]) -> Result<(), String> {
    let caps: Vec<Vec<CapSpec>> = placed
        .iter()
        .map(|p| {
            let slots = p.task.caps.iter().zip(&p.ranges);
            slots.map(|(c, &r)| cap_spec(c, r, p.board)).collect()
        })
        .collect();
    let regions: Vec<[RegionSpec; 2]> = placed
        .iter()
        .map(|p| {
            let region = |base, len, rights| RegionSpec {
                base,
                len,
                rights,
                kind: MemKind::Checkpointed,
            };
            [
                region(p.code_base, p.task.code, Rights::READ | Rights::EXEC),
                region(p.ram_base, p.task.ram, Rights::READ | Rights::WRITE),
            ]
        })
        .collect();
    let specs: Vec<TaskSpec> = placed
        .iter()
        .zip(&caps)
        .zip(&regions)
        .map(|((p, caps), regions)| TaskSpec {
            name: &p.task.name,
            priority: p.task.priority,
            entry: p.code_base,
            stack_top: p.ram_base + p.task.ram,
            regions,
            caps,
            fault: if p.task.fault == "restart" {
                FaultPolicy::Restart
            } else {
                FaultPolicy::End
            },
        })
        .collect();
    let mut kernel = Box::new(Kernel::new());
    kernel.boot(&specs).map_err(|e| match e.task() {
        Some(i) => format!("tasks[{i}] (`{}`): {e} (the kernel's check)", specs[i].name),
        None => format!("{e} (the kernel's check)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An app of `tasks` copies of a task, with `edit` applied to its TOML text.
    fn app(tasks: usize, edit: impl Fn(usize, String) -> String) -> App {
        let mut text = String::from("name = \"t\"\n");
        for i in 0..tasks {
            text.push_str(&edit(
                i,
                format!(
                    "[[tasks]]\nname = \"t{i}\"\ncrate = \"hello\"\npriority = 1\ncode = 4096\n\
                     ram = 4096\nstack = 1024\ncaps = [{{ kind = \"endpoint\", name = \"ep\", \
                     rights = [\"read\"] }}]\n"
                ),
            ));
        }
        toml::from_str(&text).expect("the test's TOML parses")
    }

    /// Both layers' verdicts: this file's rule and the kernel's own check.
    fn verdicts(a: &App) -> (Result<(), String>, Result<(), String>) {
        let placed = crate::app::place(a, amber_qemu::DEFAULT_NVM_SIZE as u32, crate::app::BOARD)
            .expect("the test apps fit");
        (rules(a), kernel_check(&placed))
    }

    /// Refused by both layers; returns this file's message.
    fn refused(a: &App) -> String {
        refused_twice(a).0
    }

    /// Refused by both layers; returns both messages.
    fn refused_twice(a: &App) -> (String, String) {
        let (mine, kernel) = verdicts(a);
        let kernel = kernel.expect_err("the kernel's own check refuses it too (the second line)");
        (mine.expect_err("xtask refuses it"), kernel)
    }

    #[test]
    fn a_good_app_passes_both_layers() {
        assert_eq!(verdicts(&app(3, |_, t| t)), (Ok(()), Ok(())));
    }

    #[test]
    fn nine_tasks_are_refused_naming_the_ninth_and_the_limit() {
        // The kernel runs 8 (its tables); amber_core's tree would take 15, so the
        // kernel's own count check is in `system::check_app`, on the device.
        let a = app(MAX_TASKS + 1, |_, t| t);
        let (mine, _) = verdicts(&a);
        assert_eq!(
            mine.unwrap_err(),
            format!(
                "tasks[{MAX_TASKS}] (`t{MAX_TASKS}`): an app has at most {MAX_TASKS} tasks (the \
                 kernel's task tables, amber_core::MAX_TASKS); this one has {}",
                MAX_TASKS + 1
            )
        );
        let (_, kernel) = refused_twice(&app(amber_core::MAX_TASKS + 1, |_, t| t));
        assert_eq!(
            kernel,
            format!(
                "more than {} tasks (the kernel's check)",
                amber_core::MAX_TASKS
            )
        );
    }

    #[test]
    fn a_name_used_for_two_kinds_is_refused_naming_both_places() {
        let a = app(2, |i, t| {
            if i == 1 {
                t.replace(
                    "kind = \"endpoint\", name = \"ep\"",
                    "kind = \"notification\", name = \"ep\"",
                )
            } else {
                t
            }
        });
        let (mine, kernel) = refused_twice(&a);
        assert_eq!(
            mine,
            "tasks[1].caps[0].name = \"ep\": a notification here, but tasks[0].caps[0] makes it \
             an endpoint; a name is one kind of object"
        );
        assert_eq!(
            kernel,
            "tasks[1] (`t1`): a `caps` name is used for an endpoint and for a notification \
             (the kernel's check)"
        );
    }

    #[test]
    fn a_39_byte_name_is_refused_with_its_length_and_the_limit() {
        let long = "a-name-of-thirty-nine-bytes-is-too-long";
        assert_eq!(long.len(), 39);
        let a = app(1, |_, t| {
            t.replace("name = \"t0\"", &format!("name = \"{long}\""))
        });
        let (mine, kernel) = refused_twice(&a);
        assert_eq!(
            mine,
            format!(
                "tasks[0].name = \"{long}\": a task name is 1 to 16 bytes (amber_core::MAX_NAME), \
                 this one is 39"
            )
        );
        assert_eq!(
            kernel,
            format!("tasks[0] (`{long}`): its `name` is empty or longer than 16 bytes (the kernel's check)")
        );
    }

    #[test]
    fn priority_200_is_refused_with_the_limit() {
        let a = app(2, |i, t| {
            if i == 1 {
                t.replace("priority = 1", "priority = 200")
            } else {
                t
            }
        });
        let (mine, kernel) = refused_twice(&a);
        assert_eq!(
            mine,
            "tasks[1].priority = 200: a priority is below 8 (amber_core::NUM_PRIORITIES; 0 is the \
             most urgent)"
        );
        assert_eq!(
            kernel,
            "tasks[1] (`t1`): its `priority` is not below 8 (the kernel's check)"
        );
    }

    #[test]
    fn two_tasks_of_one_name_are_refused_before_they_share_a_build_directory() {
        let a = app(3, |i, t| {
            if i == 2 {
                t.replace("name = \"t2\"", "name = \"t0\"")
            } else {
                t
            }
        });
        let (mine, kernel) = refused_twice(&a);
        assert_eq!(
            mine,
            "tasks[2].name = \"t0\": tasks[0] has the same name; task names are unique"
        );
        assert_eq!(
            kernel,
            "tasks[2] (`t0`): its `name` is the name of an earlier task (the kernel's check)"
        );
    }

    #[test]
    fn capabilities_beyond_the_kernel_limits_are_refused_by_field() {
        fn caps(extra: &str) -> impl Fn(usize, String) -> String + '_ {
            move |_, t| t.replace("[\"read\"] }]", &format!("[\"read\"] }}{extra}]"))
        }
        let irq_twice = app(2, caps(", { kind = \"irq\", irq = 10 }"));
        assert!(refused(&irq_twice).starts_with("tasks[1].caps[1].irq = 10: tasks[0].caps[1] has"));
        let mmio =
            ", { kind = \"mmio\", base = 0x10000000, len = 256, rights = [\"read\"] }".repeat(7);
        let regions = app(1, caps(&mmio));
        assert!(refused(&regions).contains("are 9 regions; PMP confines a task to 8"));
        let timers = ", { kind = \"timer\" }".repeat(16);
        assert!(
            refused(&app(1, caps(&timers))).contains("17 capabilities, a task holds at most 16")
        );
        let nobody = app(1, caps(", { kind = \"task\", name = \"nobody\" }"));
        assert!(refused(&nobody).contains("caps[1].name = \"nobody\": the app has no such task"));
        let wraps = app(
            1,
            caps(", { kind = \"nvm\", offset = 0xFFFFFF00, len = 0x200, rights = [\"read\"] }"),
        );
        assert!(refused(&wraps).contains("wrap around 4 GiB"));
        let many = ", { kind = \"timer\" }".repeat(8);
        assert!(refused(&app(8, caps(&many))).contains("kernel objects"));
    }
}
