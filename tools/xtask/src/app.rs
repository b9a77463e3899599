//! Image assembly: from an app description (`user/apps/NAME.toml`) to one bootable
//! kernel ELF that carries its tasks.
//!
//! Each task is built in its own cargo invocation (so the kernel's single-core atomics
//! never reach U-mode code), linked at the fixed addresses this file assigns, and its
//! loadable bytes are extracted from the ELF. Then a Rust file describing every task
//! (addresses, priority, fault policy, capabilities, and the bytes by `include_bytes!`)
//! is generated, and the kernel is built with `AMBER_APP` pointing at it. This file
//! must never guess: an unknown key, an overlapping or misaligned region, a segment
//! outside its task's regions are errors naming the task.

use object::read::elf::{ElfFile32, FileHeader, ProgramHeader};
use object::Endianness;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where task code is placed (right above the kernel's 16 MiB) and where task RAM is.
const CODE_BASE: u32 = 0x8100_0000;
const RAM_BASE: u32 = 0x8180_0000;
const RAM_END: u32 = 0x8700_0000;
/// RAM for heap-managed MemObjs (`kind = "heap"` caps): above task RAM, never part of a
/// task's own region, so it is left out of the checkpoint (its owner persists it).
const HEAP_BASE: u32 = RAM_END;
const HEAP_END: u32 = 0x8800_0000;
/// Regions are aligned to this (a multiple of the 4-byte PMP granule).
const REGION_ALIGN: u32 = 256;

/// An app description.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct App {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Period of the periodic checkpoint in milliseconds (0 = none; default 10).
    #[serde(default = "default_checkpoint_ms")]
    pub checkpoint_ms: u32,
    pub tasks: Vec<Task>,
}

fn default_checkpoint_ms() -> u32 {
    10
}

/// One task of an app.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub name: String,
    /// The package in `user/tasks/` that holds its program.
    #[serde(rename = "crate")]
    pub krate: String,
    /// 0 is the most important.
    pub priority: u8,
    /// Bytes for code and read-only data.
    pub code: u32,
    /// Bytes for data, bss and stack.
    pub ram: u32,
    /// Bytes of `ram` reserved for the stack, at its top.
    pub stack: u32,
    /// What the kernel does when the task faults: "end" or "restart".
    #[serde(default = "default_fault")]
    pub fault: String,
    /// Capabilities the task holds at boot, in slot order from slot 0.
    #[serde(default)]
    pub caps: Vec<Cap>,
    /// Build-time settings: environment variables set while the task is compiled,
    /// which it reads with `option_env!` (names of `A-Z`, `0-9`, `_` only).
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
}

fn default_fault() -> String {
    "end".into()
}

/// A capability given at boot.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Cap {
    /// An endpoint; the same name in several tasks is the same endpoint.
    Endpoint {
        name: String,
        rights: Vec<String>,
        #[serde(default)]
        badge: u32,
    },
    /// A notification; the same name in several tasks is the same object.
    Notification { name: String, rights: Vec<String> },
    /// The interrupt `irq` of the PLIC, delivered to this task.
    Irq { irq: u32 },
    /// A timer.
    Timer {},
    /// A range of device registers, mapped through PMP.
    Mmio {
        base: u32,
        len: u32,
        rights: Vec<String>,
    },
    /// A range of eternal memory (NVM that is never rolled back), mapped through PMP.
    Eternal {
        base: u32,
        len: u32,
        rights: Vec<String>,
    },
    /// A range of heap-managed RAM in [0x8700_0000, 0x8800_0000), mapped through PMP:
    /// never checkpointed (the heap service that owns it persists it itself).
    Heap {
        base: u32,
        len: u32,
        rights: Vec<String>,
    },
    /// A range of NVM.
    Nvm {
        offset: u32,
        len: u32,
        rights: Vec<String>,
    },
    /// A capability to another task's CapGroup.
    Task { name: String },
}

/// A task placed in memory.
pub struct Placed<'a> {
    pub task: &'a Task,
    pub code_base: u32,
    pub ram_base: u32,
}

/// Reads and checks an app description.
pub fn load(path: &Path) -> Result<App, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let app: App = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if app.tasks.is_empty() {
        return Err(format!(
            "{}: an app needs at least one task",
            path.display()
        ));
    }
    for t in &app.tasks {
        let bad = |why: &str| Err(format!("{}: task `{}`: {why}", path.display(), t.name));
        if t.fault != "end" && t.fault != "restart" {
            return bad("fault must be \"end\" or \"restart\"");
        }
        if t.code == 0 || t.ram == 0 || t.code % 4 != 0 || t.ram % 4 != 0 {
            return bad("code and ram must be non-zero multiples of 4 bytes");
        }
        if t.stack == 0 || t.stack % 16 != 0 || t.stack >= t.ram {
            return bad("stack must be a non-zero multiple of 16 bytes smaller than ram");
        }
        if let Some(k) = t.env.keys().find(|k| {
            k.is_empty()
                || !k
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        }) {
            return bad(&format!("env name `{k}` must be made of A-Z, 0-9 and _"));
        }
        for c in &t.caps {
            let rights = match c {
                Cap::Endpoint { rights, .. }
                | Cap::Notification { rights, .. }
                | Cap::Mmio { rights, .. }
                | Cap::Eternal { rights, .. }
                | Cap::Heap { rights, .. }
                | Cap::Nvm { rights, .. } => rights.as_slice(),
                _ => &[],
            };
            if let Some(r) = rights
                .iter()
                .find(|r| !["read", "write", "grant"].contains(&r.as_str()))
            {
                return bad(&format!("unknown right `{r}` (read, write, grant)"));
            }
            if let Cap::Mmio { base, len, .. }
            | Cap::Eternal { base, len, .. }
            | Cap::Heap { base, len, .. } = c
            {
                if base % 4 != 0 || len % 4 != 0 || *len == 0 {
                    return bad("a memory range must be non-empty and 4-byte aligned");
                }
            }
            if let Cap::Heap { base, len, .. } = c {
                if *base < HEAP_BASE || base.checked_add(*len).is_none_or(|end| end > HEAP_END) {
                    return bad(&format!(
                        "a heap range must lie in [{HEAP_BASE:#x}, {HEAP_END:#x})"
                    ));
                }
            }
        }
    }
    Ok(app)
}

fn align_up(x: u32, a: u32) -> u32 {
    x.div_ceil(a) * a
}

/// Assigns each task its code and RAM region, in the order of the description.
pub fn place(app: &App) -> Result<Vec<Placed<'_>>, String> {
    let mut code = CODE_BASE;
    let mut ram = RAM_BASE;
    let mut out = Vec::new();
    for task in &app.tasks {
        out.push(Placed {
            task,
            code_base: code,
            ram_base: ram,
        });
        code = align_up(code + task.code, REGION_ALIGN);
        ram = align_up(ram + task.ram, REGION_ALIGN);
        if code > RAM_BASE || ram > RAM_END {
            return Err(format!("app `{}` does not fit in task memory", app.name));
        }
    }
    Ok(out)
}

/// The `memory.x` a task is linked with.
pub fn memory_x(p: &Placed) -> String {
    format!(
        "/* Generated by cargo xtask for task `{}`. */\n\
         MEMORY\n{{\n    CODE (rx) : ORIGIN = {:#010x}, LENGTH = {}\n    RAM (rw) : ORIGIN = {:#010x}, LENGTH = {}\n}}\n\
         STACK_SIZE = {};\n",
        p.task.name, p.code_base, p.task.code, p.ram_base, p.task.ram, p.task.stack
    )
}

/// A loadable segment extracted from a task ELF.
pub struct Segment {
    pub addr: u32,
    pub file: PathBuf,
}

/// Extracts the loadable bytes of `elf` into files under `dir`, checking that each
/// segment lies in the task's code or RAM region. Returns the segments and the entry.
pub fn extract(elf: &Path, p: &Placed, dir: &Path) -> Result<(Vec<Segment>, u32), String> {
    let data = std::fs::read(elf).map_err(|e| format!("cannot read {}: {e}", elf.display()))?;
    let file = ElfFile32::<Endianness>::parse(&*data)
        .map_err(|e| format!("{} is not a 32-bit ELF: {e}", elf.display()))?;
    let endian = file.endian();
    let inside = |addr: u32, len: u32, base: u32, size: u32| {
        addr >= base && (addr as u64 + len as u64) <= base as u64 + size as u64
    };
    let mut segments = Vec::new();
    for (i, ph) in file.elf_program_headers().iter().enumerate() {
        if ph.p_type(endian) != object::elf::PT_LOAD || ph.p_filesz(endian) == 0 {
            continue;
        }
        let addr = ph.p_paddr(endian);
        let bytes = ph
            .data(endian, &*data)
            .map_err(|_| format!("{}: segment {i} lies outside the file", elf.display()))?;
        let len = bytes.len() as u32;
        if !inside(addr, len, p.code_base, p.task.code)
            && !inside(addr, len, p.ram_base, p.task.ram)
        {
            return Err(format!(
                "task `{}`: segment {i} ({addr:#x}+{len:#x}) lies outside its code and RAM regions",
                p.task.name
            ));
        }
        let out = dir.join(format!("{}.{i}.bin", p.task.name));
        std::fs::write(&out, bytes).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
        segments.push(Segment { addr, file: out });
    }
    let entry = file.elf_header().e_entry(endian);
    if !inside(entry, 4, p.code_base, p.task.code) {
        return Err(format!(
            "task `{}`: entry {entry:#x} is not in its code",
            p.task.name
        ));
    }
    Ok((segments, entry))
}

fn rights(list: &[String]) -> String {
    let mut parts: Vec<String> = list
        .iter()
        .map(|r| format!("amber_abi::Rights::{}", r.to_uppercase()))
        .collect();
    if parts.is_empty() {
        parts.push("amber_abi::Rights::empty()".into());
    }
    parts.join(".union(") + &")".repeat(list.len().saturating_sub(1))
}

/// The Rust source the kernel includes (`AMBER_APP`): one `TaskImage` per task.
pub fn generate(app: &App, placed: &[(Placed, Vec<Segment>, u32)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by `cargo xtask` from user/apps/{}.toml. Do not edit.\n\
         pub const APP_NAME: &str = {:?};\n\
         pub const APP_DESCRIPTION: &str = {:?};\n\
         pub const CHECKPOINT_MS: u32 = {};\n\
         pub static TASKS: &[TaskImage] = &[",
        app.name, app.name, app.description, app.checkpoint_ms
    );
    for (p, segments, entry) in placed {
        let t = p.task;
        let _ = writeln!(s, "    TaskImage {{");
        let _ = writeln!(s, "        name: {:?},", t.name);
        let _ = writeln!(s, "        priority: {},", t.priority);
        let _ = writeln!(s, "        entry: {entry:#010x},");
        let _ = writeln!(s, "        code: ({:#010x}, {}),", p.code_base, t.code);
        let _ = writeln!(s, "        ram: ({:#010x}, {}),", p.ram_base, t.ram);
        let _ = writeln!(s, "        stack_top: {:#010x},", p.ram_base + t.ram);
        let fault = if t.fault == "restart" {
            "Restart"
        } else {
            "End"
        };
        let _ = writeln!(s, "        fault: amber_core::FaultPolicy::{fault},");
        let _ = writeln!(s, "        segments: &[");
        for seg in segments {
            let _ = writeln!(
                s,
                "            ({:#010x}, include_bytes!({:?})),",
                seg.addr,
                seg.file.display().to_string()
            );
        }
        let _ = writeln!(s, "        ],");
        let _ = writeln!(s, "        caps: &[");
        for c in &t.caps {
            let line = match c {
                Cap::Endpoint {
                    name,
                    rights: r,
                    badge,
                } => format!(
                    "CapSpec::Endpoint {{ name: {name:?}, rights: {}, badge: {badge} }}",
                    rights(r)
                ),
                Cap::Notification { name, rights: r } => {
                    format!("CapSpec::Notification {{ name: {name:?}, rights: {} }}", rights(r))
                }
                Cap::Irq { irq } => format!("CapSpec::Irq {{ irq: {irq} }}"),
                Cap::Timer {} => "CapSpec::Timer".to_owned(),
                Cap::Mmio {
                    base,
                    len,
                    rights: r,
                } => format!(
                    "CapSpec::MemObj {{ base: {base:#010x}, len: {len:#x}, rights: {}, kind: amber_core::MemKind::Device }}",
                    rights(r)
                ),
                Cap::Eternal {
                    base,
                    len,
                    rights: r,
                } => format!(
                    "CapSpec::MemObj {{ base: {base:#010x}, len: {len:#x}, rights: {}, kind: amber_core::MemKind::Eternal }}",
                    rights(r)
                ),
                Cap::Heap {
                    base,
                    len,
                    rights: r,
                } => format!(
                    "CapSpec::MemObj {{ base: {base:#010x}, len: {len:#x}, rights: {}, kind: amber_core::MemKind::HeapManaged }}",
                    rights(r)
                ),
                Cap::Nvm {
                    offset,
                    len,
                    rights: r,
                } => format!(
                    "CapSpec::NvmRegion {{ offset: {offset:#x}, len: {len:#x}, rights: {} }}",
                    rights(r)
                ),
                Cap::Task { name } => format!("CapSpec::Task {{ name: {name:?} }}"),
            };
            let _ = writeln!(s, "            amber_core::{line},");
        }
        let _ = writeln!(s, "        ],");
        let _ = writeln!(s, "    }},");
    }
    s.push_str("];\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loads `toml` through a file of its own: tests run in parallel threads,
    /// so a shared file name would let one test read another's half-written text.
    fn app(toml: &str) -> Result<App, String> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!("xtask-app-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("a{}.toml", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::write(&p, toml).unwrap();
        let app = load(&p);
        std::fs::remove_file(&p).unwrap();
        app
    }

    const ONE: &str = r#"
        name = "t"
        [[tasks]]
        name = "a"
        crate = "hello"
        priority = 1
        code = 4096
        ram = 4096
        stack = 1024
    "#;

    #[test]
    fn tasks_are_placed_in_order_without_overlap() {
        let mut a = app(ONE).unwrap();
        a.tasks.push(app(ONE).unwrap().tasks.remove(0));
        let p = place(&a).unwrap();
        assert_eq!(p[0].code_base, CODE_BASE);
        assert_eq!(p[1].code_base, CODE_BASE + 4096);
        assert_eq!(p[1].ram_base, RAM_BASE + 4096);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        assert!(app(&ONE.replace("stack = 1024", "stack = 1024\nstak = 1")).is_err());
        assert!(
            app(&ONE.replace("stack = 1024", "stack = 4096")).is_err(),
            "stack must leave room"
        );
        assert!(app(&ONE.replace("priority = 1", "priority = 1\nfault = \"retry\"")).is_err());
        let heap = |base: &str| {
            ONE.replace(
                "stack = 1024",
                &format!("stack = 1024\ncaps = [{{ kind = \"heap\", base = {base}, len = 4096, rights = [\"read\"] }}]"),
            )
        };
        assert!(app(&heap("0x87000000")).is_ok());
        assert!(
            app(&heap("0x81800000")).is_err(),
            "heap memory must not overlap task RAM"
        );
        assert!(app(&heap("0x87fff000")).is_ok());
        assert!(app(&heap("0x87fff004")).is_err(), "must end by 0x8800_0000");
        let env = |e: &str| ONE.replace("stack = 1024", &format!("stack = 1024\nenv = {{ {e} }}"));
        assert_eq!(
            app(&env("AMBER_X = \"1\"")).unwrap().tasks[0].env["AMBER_X"],
            "1"
        );
        assert!(app(&env("\"a-b\" = \"1\"")).is_err());
    }
}
