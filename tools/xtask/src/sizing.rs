//! The power-failure bound an app declares, computed on the host from its description
//! with the functions the guest runs: the heap service's part
//! (`amber_heap_service::declared`, from the `heapsvc` task's `AMBER_HEAP_MAX_DIRTY`
//! and `AMBER_HEAP_CLIENTS` settings) and the kernel's checkpoint bound
//! (`amber_core::checkpoint_bound`, from the tasks' RAM); and the capacitor that holds
//! it between V_warn and V_off (`harvest::capacitor_for`). `cargo xtask build APP`
//! prints it with the app's description; `cargo xtask harvest` sizes from it and
//! fails if the guest declares another figure. This file must never boot anything,
//! and must never give a size for an app one of whose persist callbacks declares no
//! bound.

use crate::app::App;
use crate::harvest::{capacitor_for, V_OFF, V_WARN};
use amber_heap_service::declared::{self, declared};
use amber_heap_service::InstrModel;

/// The instructions an app may take from the power-failure interrupt to its halt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    /// The persist phase the interrupt finds while the app serves (what the persist
    /// callbacks declare for it).
    pub serving: u64,
    /// The phase right after a restore (a warning inside it waits for it).
    pub restore: u64,
    /// The checkpoint after the phase.
    pub checkpoint: u64,
}

impl Bound {
    /// From the interrupt in a serving phase to the halt: what the capacitor is
    /// sized for.
    pub fn total(&self) -> u64 {
        self.serving + self.checkpoint
    }
}

/// What can be said of an app's power-failure bound.
#[derive(Debug, PartialEq, Eq)]
pub enum Sizing {
    Bounded(Bound),
    /// These tasks are persist callbacks that declare no bound for their part.
    Undeclared(Vec<String>),
}

/// The bound of `app` on the memory-mapped NVM bus (the harness's), or why there is
/// none. The persist callbacks are known by their crates: `heapsvc` declares its part;
/// `spidrv` declares nothing of its own, its work in a phase (the apply and the calls)
/// being inside the bound of its client `heapsvc`; `kvsvc` declares nothing.
pub fn power_failure_bound(app: &App) -> Result<Sizing, String> {
    let ram: u64 = app.tasks.iter().map(|t| u64::from(t.ram)).sum();
    let checkpoint = amber_core::checkpoint_bound(ram, false);
    let heapsvc = app.tasks.iter().filter(|t| t.krate == "heapsvc");
    let mut bound = Bound {
        serving: 0,
        restore: 0,
        checkpoint,
    };
    for t in heapsvc {
        let setting = |key: &str, default: u32| -> Result<u32, String> {
            t.env.get(key).map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| format!("task {}: {key} = {v:?} is not a number", t.name))
            })
        };
        let max_dirty = setting("AMBER_HEAP_MAX_DIRTY", declared::DEFAULT_MAX_DIRTY)?;
        let clients = setting("AMBER_HEAP_CLIENTS", declared::DEFAULT_CLIENTS)?;
        let d = declared(max_dirty, clients, declared::RING_CAPACITY, &InstrModel::QEMU_SPIDRV).map_err(|largest| {
            format!(
                "task {}: dirty limit {max_dirty} does not fit the driver's ring (at most {largest})",
                t.name
            )
        })?;
        bound.serving += d.phase.serving;
        bound.restore += d.phase.restore;
    }
    let has_heapsvc = bound.serving > 0;
    let undeclared: Vec<String> = app
        .tasks
        .iter()
        .filter(|t| t.krate == "kvsvc" || (t.krate == "spidrv" && !has_heapsvc))
        .map(|t| t.name.clone())
        .collect();
    Ok(if undeclared.is_empty() {
        Sizing::Bounded(bound)
    } else {
        Sizing::Undeclared(undeclared)
    })
}

/// The lines `cargo xtask build APP` prints about `app`: its description and the
/// capacitor its bound needs.
pub fn describe(app: &App) -> Result<Vec<String>, String> {
    let mut lines = vec![format!("app {}: {}", app.name, app.description)];
    let uf = |instructions: u64| (capacitor_for(instructions) * 1e6).ceil();
    lines.push(match power_failure_bound(app)? {
        Sizing::Bounded(b) if b.serving == 0 => format!(
            "app {}: power failure: checkpoint bound {} instructions (no persist callbacks): needs >= {:.0} µF between V_warn {V_WARN} V and V_off {V_OFF} V",
            app.name,
            b.checkpoint,
            uf(b.total())
        ),
        Sizing::Bounded(b) => format!(
            "app {}: power failure: persist and checkpoint bound {} instructions (persist {} declared + checkpoint {}): needs >= {:.0} µF between V_warn {V_WARN} V and V_off {V_OFF} V (a warning inside the phase after a restore: {} instructions, {:.0} µF)",
            app.name,
            b.total(),
            b.serving,
            b.checkpoint,
            uf(b.total()),
            b.restore + b.checkpoint,
            uf(b.restore + b.checkpoint)
        ),
        Sizing::Undeclared(tasks) => format!(
            "app {}: power failure: the persist callbacks {} declare no bound: no capacitor size",
            app.name,
            tasks.join(", ")
        ),
    });
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(name: &str) -> App {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../user/apps");
        crate::app::load(&root.join(format!("{name}.toml"))).unwrap()
    }

    #[test]
    fn the_heap_apps_bound_is_the_one_its_guest_prints() {
        // QEMU prints "power failure: persist and checkpoint bound 9837818
        // instructions (persist 8272242 declared + checkpoint 1565576)".
        let Sizing::Bounded(b) = power_failure_bound(&app("heap")).unwrap() else {
            panic!("the heap app declares its bound")
        };
        assert_eq!(
            (b.serving, b.checkpoint, b.total()),
            (8_272_242, 1_565_576, 9_837_818)
        );
        assert_eq!(b.restore, 12_156_924);
        let lines = describe(&app("heap")).unwrap();
        assert!(lines[1].contains("needs >= 13909 µF"), "{lines:?}");
        // One client, a 7,411-byte limit: QEMU prints "persist phase bounds: 7571164
        // instructions serving clients".
        let Sizing::Bounded(b) = power_failure_bound(&app("heapbench-nolimit")).unwrap() else {
            panic!("heapbench-nolimit declares its bound")
        };
        assert_eq!((b.serving, b.checkpoint), (7_571_164, 1_696_648));
    }

    #[test]
    fn an_app_without_callbacks_is_bounded_by_the_checkpoint_and_one_whose_callbacks_declare_nothing_is_not(
    ) {
        let Sizing::Bounded(b) = power_failure_bound(&app("ckcounter")).unwrap() else {
            panic!("no callbacks: the checkpoint bound alone")
        };
        assert_eq!(b.serving, 0);
        assert!(b.checkpoint > 0);
        assert_eq!(
            power_failure_bound(&app("kv")).unwrap(),
            Sizing::Undeclared(vec!["spidrv".into(), "kvsvc".into()])
        );
    }
}
