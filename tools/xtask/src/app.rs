//! Image assembly: from an app description (`user/apps/NAME.toml`) to one bootable
//! kernel ELF that carries its tasks.
//!
//! Tasks and the memory they share are placed where the board's memory map says
//! (`amber_kernel::board`); an app that goes past a limit of the kernel
//! (`amber_core`'s) is refused here, by name, rather than at boot. Each task is built
//! in its own cargo invocation (so the kernel's single-core atomics never reach U-mode
//! code), linked at its place, and told where each memory capability it holds lies
//! (`AMBER_MEM_<NAME>` and `AMBER_MEM_<NAME>_LEN`, read with `amber_user::memory!`);
//! its loadable bytes are extracted from the ELF. Then a Rust file describing every
//! task (addresses, priority, fault policy, capabilities, where its segments lie) and
//! holding each segment's bytes (`include_bytes!`) in a section of its own is
//! generated, with the list the kernel's `build.rs` places those sections by (each at
//! its load address, so the loader of the kernel's image places the tasks too), and
//! the kernel is built with `AMBER_APP` pointing at it. This file must never guess: an unknown key, an overlapping or misaligned
//! region, a segment outside its task's regions are errors naming the task.

use amber_format::Superblock;
use amber_kernel::board::esp32c3::map::{pins_refusal, FramPins, PinUse, PAPER_PINS};
use amber_kernel::board::{MemoryMap, Range, BOARDS};
use object::read::elf::{ElfFile32, FileHeader, ProgramHeader};
use object::Endianness;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The board apps are built for unless told otherwise (`AMBER_BOARD` of the kernel
/// build): the one `cargo xtask run` and the tests boot.
pub const BOARD: &str = "qemu_virt";
/// Regions are aligned to this (a multiple of the 4-byte PMP granule).
const REGION_ALIGN: u32 = 256;

/// The memory map of board `board` (a name of `amber_kernel::board::BOARDS`).
pub fn board_map(board: &str) -> Result<&'static MemoryMap, String> {
    BOARDS
        .iter()
        .find(|(name, _)| *name == board)
        .map(|(_, map)| *map)
        .ok_or_else(|| {
            let names: Vec<&str> = BOARDS.iter().map(|(n, _)| *n).collect();
            format!("no board `{board}` (boards: {})", names.join(", "))
        })
}

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
    /// Memory the tasks share by name, in bytes: placed by xtask in the board's RAM
    /// that no checkpoint copies, and granted by `heap` caps.
    #[serde(default)]
    pub memory: BTreeMap<String, u32>,
    /// What the app asks of the ESP32-C3 board (other boards have no such choices).
    #[serde(default)]
    pub esp32c3: Esp32c3Config,
    pub tasks: Vec<Task>,
}

/// An app's `[esp32c3]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Esp32c3Config {
    /// The GPIO whose falling edge (an external supply comparator's output) is the
    /// power-failure interrupt, instead of the brown-out detector.
    pub power_failure_gpio: Option<u32>,
    /// The FRAM's wires where they differ from the paper's board
    /// (`amber_kernel::board::esp32c3::map::PAPER_PINS`).
    #[serde(default)]
    pub pins: PinsConfig,
    /// Sizes of the app's `memory` on this board where they differ (`name = bytes`).
    #[serde(default)]
    pub memory: BTreeMap<String, u32>,
    /// Sizes of tasks on this board where they differ (`name = { code, ram, stack }`).
    #[serde(default)]
    pub tasks: BTreeMap<String, TaskSizes>,
}

/// `[esp32c3] pins = { sck, miso, mosi, cs }`: each GPIO number, or the paper's.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinsConfig {
    pub sck: Option<u32>,
    pub miso: Option<u32>,
    pub mosi: Option<u32>,
    pub cs: Option<u32>,
}

impl Esp32c3Config {
    /// The FRAM's pins: the app's, the paper's board's where it names none.
    pub fn fram_pins(&self) -> FramPins {
        let p = PAPER_PINS;
        FramPins {
            sck: self.pins.sck.unwrap_or(p.sck),
            miso: self.pins.miso.unwrap_or(p.miso),
            mosi: self.pins.mosi.unwrap_or(p.mosi),
            cs: self.pins.cs.unwrap_or(p.cs),
        }
    }
}

/// A task's sizes on one board (`[esp32c3.tasks]`).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSizes {
    pub code: u32,
    pub ram: u32,
    pub stack: u32,
}

impl App {
    /// The app as built for board `board`: on the ESP32-C3, with the sizes its
    /// `[esp32c3]` table gives; each size is then checked as `load` checks the
    /// description's own. A size for a memory or task the app lacks is refused.
    pub fn on_board(mut self, board: &str) -> Result<App, String> {
        if board != "esp32c3" {
            return Ok(self);
        }
        let at = |what: &str| format!("app `{}`: [esp32c3] {what}", self.name);
        for (name, &len) in &self.esp32c3.memory {
            let Some(size) = self.memory.get_mut(name) else {
                return Err(at(&format!("memory `{name}`: the app has no such memory")));
            };
            *size = len;
        }
        for (name, sizes) in &self.esp32c3.tasks {
            let Some(t) = self.tasks.iter_mut().find(|t| &t.name == name) else {
                return Err(at(&format!("tasks `{name}`: the app has no such task")));
            };
            (t.code, t.ram, t.stack) = (sizes.code, sizes.ram, sizes.stack);
        }
        check_sizes(&self).map_err(|why| at(&why))?;
        Ok(self)
    }
}

fn default_checkpoint_ms() -> u32 {
    10
}

/// One task of an app.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub name: String,
    /// Its program: the package in `user/tasks/` (Rust), or the folder in
    /// `user/c/tasks/` (C).
    #[serde(rename = "crate")]
    pub krate: String,
    /// The language of its program: "rust" (the default) or "c" (`crate::ctask`).
    #[serde(default = "default_lang")]
    pub lang: String,
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

fn default_lang() -> String {
    "rust".into()
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
    /// The interrupt `irq` of the board, delivered to this task.
    Irq { irq: u32 },
    /// A timer.
    Timer {},
    /// A range of device registers, mapped through PMP; with a `name`, the task is
    /// told where it is.
    Mmio {
        #[serde(default)]
        name: Option<String>,
        base: u32,
        len: u32,
        rights: Vec<String>,
    },
    /// An area of the NVM that is never rolled back (`ring` or `fram`, where the
    /// superblock places them), mapped through PMP in the board's NVM window, or an
    /// NvmRegion of it on a board without one ([`eternal_is_nvm_region`]).
    Eternal { area: String, rights: Vec<String> },
    /// Shared memory of the app (`memory`), or `len` bytes of it from `offset`,
    /// mapped through PMP: RAM no checkpoint copies (its owner persists it itself).
    Heap {
        memory: String,
        #[serde(default)]
        offset: u32,
        #[serde(default)]
        len: Option<u32>,
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
    /// The memory map of the board it is placed on.
    pub board: &'static MemoryMap,
    /// The lengths of the ring area and the FRAM partition of the NVM it is placed for
    /// (0 where that NVM has none).
    pub nvm_areas: (u32, u32),
    pub code_base: u32,
    pub ram_base: u32,
    /// Where each memory cap the task holds lies, by the name the task knows it by:
    /// (name, base, length).
    pub memory: Vec<(String, u32, u32)>,
    /// The range of each of its caps that is a memory range, by slot.
    pub ranges: Vec<Option<(u32, u32)>>,
}

/// Reads and checks an app description, refusing what the kernel would refuse at boot
/// with the limit it would hit.
pub fn load(path: &Path) -> Result<App, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let app: App = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad_app = |why: String| Err(format!("{}: {why}", path.display()));
    if app.tasks.is_empty() {
        return bad_app("an app needs at least one task".into());
    }
    let c3 = &app.esp32c3;
    if let Some((what, pin, why)) = pins_refusal(&c3.fram_pins(), c3.power_failure_gpio) {
        let key = match what {
            PinUse::Sck => "pins.sck",
            PinUse::Miso => "pins.miso",
            PinUse::Mosi => "pins.mosi",
            PinUse::Cs => "pins.cs",
            PinUse::PowerFailure => "power_failure_gpio",
        };
        return bad_app(format!(
            "[esp32c3] {key} = {pin}: GPIO{pin} cannot be {}: {why}",
            what.name()
        ));
    }
    crate::validate::rules(&app).map_err(|e| format!("{}: {e}", path.display()))?;
    check_sizes(&app).map_err(|e| format!("{}: {e}", path.display()))?;
    for t in &app.tasks {
        let bad = |why: &str| Err(format!("{}: task `{}`: {why}", path.display(), t.name));
        if t.fault != "end" && t.fault != "restart" {
            return bad("fault must be \"end\" or \"restart\"");
        }
        if t.lang != "rust" && t.lang != "c" {
            return bad("lang must be \"rust\" or \"c\"");
        }
        if let Some(k) = t.env.keys().find(|k| {
            k.is_empty()
                || ["AMBER_MEM_", "AMBER_BOARD_", "AMBER_TASK_", "AMBER_NVM_"]
                    .iter()
                    .any(|p| k.starts_with(p))
                || !k
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        }) {
            return bad(&format!(
                "env name `{k}` must be made of A-Z, 0-9 and _ (AMBER_MEM_, AMBER_BOARD_, AMBER_TASK_ and AMBER_NVM_ are xtask's)"
            ));
        }
        let mut names = Vec::new();
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
            match c {
                Cap::Mmio { base, len, .. } if base % 4 != 0 || len % 4 != 0 || *len == 0 => {
                    return bad("a memory range must be non-empty and 4-byte aligned");
                }
                Cap::Eternal { area, .. } if !["ring", "fram"].contains(&area.as_str()) => {
                    return bad(&format!("NVM area `{area}` does not exist (ring, fram)"));
                }
                _ => {}
            }
            if let Some(name) = memory_name(c).flatten() {
                if names.contains(&name) {
                    return bad(&format!("two memory capabilities are called `{name}`"));
                }
                names.push(name);
            }
        }
    }
    Ok(app)
}

/// The rules of an app's sizes: every memory a non-zero multiple of the region
/// alignment, every task's code and RAM a non-zero multiple of 4 bytes, its stack a
/// non-zero multiple of 16 smaller than its RAM, and every part of a memory a task is
/// granted inside that memory.
fn check_sizes(app: &App) -> Result<(), String> {
    if let Some((name, len)) = app
        .memory
        .iter()
        .find(|(_, len)| **len == 0 || *len % REGION_ALIGN != 0)
    {
        return Err(format!(
            "memory `{name}` of {len} bytes must be a non-zero multiple of {REGION_ALIGN}"
        ));
    }
    for t in &app.tasks {
        let bad = |why: String| Err(format!("task `{}`: {why}", t.name));
        if t.code == 0 || t.ram == 0 || t.code % 4 != 0 || t.ram % 4 != 0 {
            return bad("code and ram must be non-zero multiples of 4 bytes".into());
        }
        if t.stack == 0 || t.stack % 16 != 0 || t.stack >= t.ram {
            return bad("stack must be a non-zero multiple of 16 bytes smaller than ram".into());
        }
        for c in &t.caps {
            let Cap::Heap {
                memory,
                offset,
                len,
                ..
            } = c
            else {
                continue;
            };
            let Some(&size) = app.memory.get(memory) else {
                return bad(format!("memory `{memory}` is not in the app's `memory`"));
            };
            let len = len.unwrap_or(size.saturating_sub(*offset));
            if offset % 4 != 0 || len % 4 != 0 || len == 0 || offset + len > size {
                return bad(format!(
                    "a part of memory `{memory}` must be non-empty, 4-byte aligned and \
                     inside its {size} bytes"
                ));
            }
        }
    }
    Ok(())
}

/// For a memory capability, the name the task knows it by (if it has one); `None`
/// for any other capability.
fn memory_name(c: &Cap) -> Option<Option<&str>> {
    match c {
        Cap::Mmio { name, .. } => Some(name.as_deref()),
        Cap::Eternal { area, .. } => Some(Some(area)),
        Cap::Heap { memory, .. } => Some(Some(memory)),
        _ => None,
    }
}

fn align_up(x: u32, a: u32) -> u32 {
    x.div_ceil(a) * a
}

/// Assigns each task its code and RAM, in the order of the description, the app's
/// shared memory its place in the board's never-checkpointed RAM, and every memory
/// capability its range, for an NVM of `nvm_size` bytes (whose areas the superblock
/// places, and the board maps at its NVM window), on board `board`. An app that does
/// not fit is refused with what overflows and by how many bytes.
pub fn place<'a>(app: &'a App, nvm_size: u32, board: &str) -> Result<Vec<Placed<'a>>, String> {
    let map = board_map(board)?;
    let full = |what: &str, over: u32, range: &Range| {
        format!(
            "app `{}`: {what} does not fit on board {board}: {over} bytes past the {} bytes at {:#010x}",
            app.name, range.len, range.base
        )
    };
    let inside = |r: &Range, end: u32| end <= r.end();
    let mut shared = BTreeMap::new();
    let mut heap = map.heap_ram.base;
    for (name, len) in &app.memory {
        shared.insert(name.as_str(), heap);
        heap += len;
        if !inside(&map.heap_ram, heap) {
            return Err(full(
                "its shared memory",
                heap - map.heap_ram.end(),
                &map.heap_ram,
            ));
        }
    }
    let mut code = map.task_code.base;
    let mut ram = map.task_ram.base;
    let mut out = Vec::new();
    let align = map.task_code_align;
    if let Some(t) = app.tasks.iter().find(|t| t.code % align != 0) {
        return Err(format!(
            "app `{}`: task `{}`: its code region of {} bytes must be a multiple of {align} \
             on board {board} (where each task's code starts and ends)",
            app.name, t.name, t.code
        ));
    }
    let nvm_areas = Superblock::for_device(nvm_size)
        .map(|sb| (sb.ring_area.len, sb.fram_area.len))
        .unwrap_or_default();
    for task in &app.tasks {
        let mut memory = Vec::new();
        let mut ranges = Vec::new();
        for c in &task.caps {
            let range = match c {
                Cap::Mmio { base, len, .. } => Some((*base, *len)),
                Cap::Eternal { area, .. } => Some(nvm_area(map, nvm_size, area).ok_or_else(|| {
                    format!(
                        "task `{}`: board {board} with an NVM of {nvm_size} bytes has no `{area}` area",
                        task.name
                    )
                })?),
                Cap::Heap {
                    memory,
                    offset,
                    len,
                    ..
                } => {
                    let size = app.memory[memory];
                    Some((shared[memory.as_str()] + offset, len.unwrap_or(size - offset)))
                }
                _ => None,
            };
            if let (Some((base, len)), Some(Some(name))) = (range, memory_name(c)) {
                memory.push((name.to_owned(), base, len));
            }
            ranges.push(range);
        }
        out.push(Placed {
            task,
            board: map,
            nvm_areas,
            code_base: code,
            ram_base: ram,
            memory,
            ranges,
        });
        code = align_up(code + task.code, REGION_ALIGN.max(align));
        ram = align_up(ram + task.ram, REGION_ALIGN);
        if !inside(&map.task_code, code) {
            let what = format!("task code (up to `{}`)", task.name);
            return Err(full(&what, code - map.task_code.end(), &map.task_code));
        }
        if !inside(&map.task_ram, ram) {
            let what = format!("task RAM (up to `{}`)", task.name);
            return Err(full(&what, ram - map.task_ram.end(), &map.task_ram));
        }
    }
    Ok(out)
}

/// Where NVM area `area` of a device of `nvm_size` bytes lies: in the board's address
/// space when the NVM is memory-mapped, else its offset in the NVM (see
/// [`eternal_is_nvm_region`]).
fn nvm_area(map: &MemoryMap, nvm_size: u32, area: &str) -> Option<(u32, u32)> {
    let sb = Superblock::for_device(nvm_size).ok()?;
    let region = if area == "ring" {
        sb.ring_area
    } else {
        sb.fram_area
    };
    let base = match map.nvm_window {
        Some(window) => window + region.offset,
        None => region.offset,
    };
    (region.len > 0).then_some((base, region.len))
}

/// Whether an `eternal` capability is granted as an NvmRegion (the area's range of the
/// NVM, reached only with `NvmRead`/`NvmWrite`) rather than a memory object mapped by
/// PMP: on a board whose NVM has no address (the ESP32-C3's FRAM is on SPI). The task
/// is then told the area's NVM offset as its "base".
pub fn eternal_is_nvm_region(map: &MemoryMap) -> bool {
    map.nvm_window.is_none()
}

/// The environment task `p` is built with: its app's settings, where each memory
/// capability it holds lies (`AMBER_MEM_<NAME>`, `AMBER_MEM_<NAME>_LEN`), and the
/// board's places that tasks may name but never reach (`AMBER_BOARD_KERNEL`, the
/// kernel's RAM; `AMBER_BOARD_TASK_RAM`, the first task's RAM; `AMBER_BOARD_CONSOLE`,
/// the kernel's console device; `AMBER_BOARD_CODE_ALIAS`), its own (`AMBER_TASK_CODE`,
/// `AMBER_TASK_RAM`) and the sizes of the NVM's ring area and FRAM partition
/// (`AMBER_NVM_RING_LEN`, `AMBER_NVM_FRAM_LEN`; 0 where it has none): all decimal.
pub fn task_env(p: &Placed) -> BTreeMap<String, String> {
    let mut env = p.task.env.clone();
    let map = p.board;
    for (key, value) in [
        ("AMBER_BOARD_KERNEL", map.kernel.base),
        ("AMBER_BOARD_TASK_RAM", map.task_ram.base),
        ("AMBER_BOARD_CONSOLE", map.console),
        ("AMBER_BOARD_CODE_ALIAS", map.code_alias),
        ("AMBER_TASK_CODE", p.code_base),
        ("AMBER_TASK_RAM", p.ram_base),
        ("AMBER_NVM_RING_LEN", p.nvm_areas.0),
        ("AMBER_NVM_FRAM_LEN", p.nvm_areas.1),
    ] {
        env.insert(key.to_owned(), value.to_string());
    }
    for (name, base, len) in &p.memory {
        let key = format!("AMBER_MEM_{}", name.to_uppercase().replace('-', "_"));
        env.insert(format!("{key}_LEN"), len.to_string());
        env.insert(key, base.to_string());
    }
    env
}

/// The `memory.x` a task is linked with. Its read-only data (region `RODATA`) goes
/// with its code where one bus sees both, and into its RAM where code is reached
/// through an instruction-bus alias (the ESP32-C3's instruction bus serves only
/// aligned words, and a task's constants are read by bytes).
pub fn memory_x(p: &Placed) -> String {
    let rodata = if p.board.code_alias == 0 {
        "CODE"
    } else {
        "RAM"
    };
    format!(
        "/* Generated by cargo xtask for task `{}`. */\n\
         MEMORY\n{{\n    CODE (rx) : ORIGIN = {:#010x}, LENGTH = {}\n    RAM (rw) : ORIGIN = {:#010x}, LENGTH = {}\n}}\n\
         REGION_ALIAS(\"RODATA\", {rodata});\n\
         STACK_SIZE = {};\n",
        p.task.name, p.code_base, p.task.code, p.ram_base, p.task.ram, p.task.stack
    )
}

/// A loadable segment extracted from a task ELF.
pub struct Segment {
    pub addr: u32,
    pub len: u32,
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
        segments.push(Segment {
            addr,
            len,
            file: out,
        });
    }
    // In address order: the kernel zeroes the gaps between them in one pass.
    segments.sort_by_key(|s| s.addr);
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
/// `nvm_size` is the NVM the app's eternal areas were placed for (0: it has none).
pub fn generate(app: &App, placed: &[(Placed, Vec<Segment>, u32)], nvm_size: u32) -> String {
    let eternal = app
        .tasks
        .iter()
        .flat_map(|t| &t.caps)
        .any(|c| matches!(c, Cap::Eternal { .. }));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by `cargo xtask` from user/apps/{}.toml. Do not edit.\n\
         pub const APP_NAME: &str = {:?};\n\
         pub const APP_DESCRIPTION: &str = {:?};\n\
         pub const CHECKPOINT_MS: u32 = {};\n\
         pub const NVM_SIZE: u32 = {};\n\
         pub const POWER_FAILURE_GPIO: Option<u32> = {:?};\n\
         pub const FRAM_PINS: crate::board::esp32c3::map::FramPins = \
         crate::board::esp32c3::map::{:?};\n\
         pub static TASKS: &[TaskImage] = &[",
        app.name,
        app.name,
        app.description,
        app.checkpoint_ms,
        if eternal { nvm_size } else { 0 },
        app.esp32c3.power_failure_gpio,
        app.esp32c3.fram_pins()
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
            let _ = writeln!(s, "            ({:#010x}, {}),", seg.addr, seg.len);
        }
        let _ = writeln!(s, "        ],");
        let _ = writeln!(s, "        caps: &[");
        for (c, range) in t.caps.iter().zip(&p.ranges) {
            let (base, len) = range.unwrap_or_default();
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
                Cap::Mmio { rights: r, .. } => format!(
                    "CapSpec::MemObj {{ base: {base:#010x}, len: {len:#x}, rights: {}, kind: amber_core::MemKind::Device }}",
                    rights(r)
                ),
                Cap::Eternal { rights: r, .. } if eternal_is_nvm_region(p.board) => format!(
                    "CapSpec::NvmRegion {{ offset: {base:#x}, len: {len:#x}, rights: {} }}",
                    rights(r)
                ),
                Cap::Eternal { rights: r, .. } => format!(
                    "CapSpec::MemObj {{ base: {base:#010x}, len: {len:#x}, rights: {}, kind: amber_core::MemKind::Eternal }}",
                    rights(r)
                ),
                Cap::Heap { rights: r, .. } => format!(
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
    // Every segment as a section of the kernel's image at its own address
    // (`task_sections`), so that the loader places it; by assembly, so that no kernel
    // symbol covers a task's code (a debugger would name the task's functions by it).
    for (i, seg) in placed
        .iter()
        .flat_map(|(_, segments, _)| segments)
        .enumerate()
    {
        let incbin = format!(".incbin {:?}", seg.file.display().to_string());
        let _ = writeln!(
            s,
            "core::arch::global_asm!({:?}, {incbin:?}, \".popsection\");",
            format!(".pushsection {TASK_SECTION}{i}, \"a\"")
        );
    }
    s
}

/// The prefix of the kernel image's section that holds a task segment (numbered from
/// 0 in the order [`generate`] lists them).
const TASK_SECTION: &str = ".amber_task.";

/// The list the kernel's `build.rs` places the task segments' sections with: one line
/// per segment, its section and load address, in [`generate`]'s order.
pub fn task_sections(placed: &[(Placed, Vec<Segment>, u32)]) -> String {
    placed
        .iter()
        .flat_map(|(_, segments, _)| segments)
        .enumerate()
        .map(|(i, seg)| format!("{TASK_SECTION}{i} {:#010x}\n", seg.addr))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use amber_core::{MAX_TASKS, SLOTS};

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
    fn tasks_are_placed_in_order_without_overlap_where_the_board_says() {
        let mut a = app(ONE).unwrap();
        a.tasks.push(app(ONE).unwrap().tasks.remove(0));
        a.tasks[1].name = "b".into();
        let p = place(&a, 4 << 20, BOARD).unwrap();
        let map = board_map(BOARD).unwrap();
        assert_eq!(p[0].code_base, map.task_code.base);
        assert_eq!(p[1].code_base, map.task_code.base + 4096);
        assert_eq!(p[1].ram_base, map.task_ram.base + 4096);
    }

    #[test]
    fn read_only_data_stays_with_the_code_unless_code_is_seen_through_an_alias() {
        let a = app(ONE).unwrap();
        let on = |board| memory_x(&place(&a, 512 << 10, board).unwrap()[0]);
        assert!(
            on(BOARD).contains("REGION_ALIAS(\"RODATA\", CODE);"),
            "{}",
            on(BOARD)
        );
        let c3 = on("esp32c3");
        assert!(c3.contains("REGION_ALIAS(\"RODATA\", RAM);"), "{c3}");
    }

    #[test]
    fn a_power_failure_gpio_the_c3_board_uses_is_refused_naming_why() {
        let with_pin = |pin: u32| {
            app(&ONE.replace(
                "[[tasks]]",
                &format!("[esp32c3]\npower_failure_gpio = {pin}\n[[tasks]]"),
            ))
        };
        assert_eq!(with_pin(3).unwrap().esp32c3.power_failure_gpio, Some(3));
        assert_eq!(app(ONE).unwrap().esp32c3.power_failure_gpio, None);
        for (pin, why) in [
            (6, "the FRAM's SCK uses it already"),
            (1, "the FRAM's CS uses it already"),
            (20, "UART0"),
            (12, "SPI flash"),
            (9, "strapping"),
            (2, "strapping"),
            (22, "GPIO0..=GPIO21"),
        ] {
            let e = with_pin(pin).unwrap_err();
            assert!(
                e.contains(&format!(
                    "power_failure_gpio = {pin}: GPIO{pin} cannot be the power-failure comparator's input"
                )) && e.contains(why),
                "{e}"
            );
        }
    }

    #[test]
    fn the_fram_pins_default_to_the_paper_s_board_and_an_app_may_move_them() {
        let with = |pins: &str| {
            app(&ONE.replace(
                "[[tasks]]",
                &format!("[esp32c3]\npins = {{ {pins} }}\n[[tasks]]"),
            ))
        };
        let paper = app(ONE).unwrap().esp32c3.fram_pins();
        assert_eq!((paper.sck, paper.miso, paper.mosi, paper.cs), (6, 2, 7, 1));
        let moved = with("cs = 10, sck = 4").unwrap().esp32c3.fram_pins();
        assert_eq!((moved.sck, moved.miso, moved.mosi, moved.cs), (4, 2, 7, 10));
        let generated = generate(&with("cs = 10").unwrap(), &[], 0);
        assert!(
            generated.contains("FramPins { sck: 6, miso: 2, mosi: 7, cs: 10 }"),
            "{generated}"
        );
        for (pins, why) in [
            (
                "cs = 18",
                "pins.cs = 18: GPIO18 cannot be the FRAM's CS: the USB-Serial-JTAG port",
            ),
            (
                "mosi = 16",
                "pins.mosi = 16: GPIO16 cannot be the FRAM's MOSI: the module's SPI flash",
            ),
            (
                "sck = 21",
                "pins.sck = 21: GPIO21 cannot be the FRAM's SCK: UART0",
            ),
            (
                "cs = 8",
                "pins.cs = 8: GPIO8 cannot be the FRAM's CS: it is a strapping pin",
            ),
            (
                "sck = 2, miso = 3",
                "pins.sck = 2: GPIO2 cannot be the FRAM's SCK: it is a strapping pin",
            ),
            (
                "mosi = 6",
                "pins.mosi = 6: GPIO6 cannot be the FRAM's MOSI: the FRAM's SCK uses it already",
            ),
            ("clk = 4", "unknown field `clk`"),
        ] {
            let e = with(pins).unwrap_err();
            assert!(e.contains(why), "{pins}: {e}");
        }
    }

    #[test]
    fn an_app_too_big_for_the_c3_is_refused_with_what_overflows_by_how_much() {
        let big = ONE.replace("code = 4096", "code = 45056");
        let mut a = app(&big).unwrap();
        a.tasks.push(app(&big).unwrap().tasks.remove(0));
        a.tasks[1].name = "b".into();
        assert!(place(&a, 4 << 20, BOARD).is_ok(), "QEMU has room");
        let e = place(&a, 512 << 10, "esp32c3").err().unwrap();
        assert_eq!(
            e,
            "app `t`: task code (up to `b`) does not fit on board esp32c3: \
             4096 bytes past the 86016 bytes at 0x403b8000"
        );
    }

    #[test]
    fn on_the_c3_a_task_code_region_is_whole_pages() {
        let a = app(&ONE.replace("code = 4096", "code = 4352")).unwrap();
        assert!(
            place(&a, 4 << 20, BOARD).is_ok(),
            "QEMU takes 256-byte multiples"
        );
        let e = place(&a, 512 << 10, "esp32c3").err().unwrap();
        assert!(
            e.contains("must be a multiple of 4096 on board esp32c3"),
            "{e}"
        );
    }

    #[test]
    fn the_esp32c3_table_gives_that_boards_sizes_and_refuses_unknown_names() {
        let toml = |extra: &str| {
            ONE.replace(
                "[[tasks]]",
                &format!("[memory]\nspi = 0x7400\n[esp32c3]\n{extra}\n[[tasks]]"),
            )
        };
        let a = app(&toml(
            "memory = { spi = 0x2000 }\ntasks = { a = { code = 8192, ram = 2048, stack = 512 } }",
        ))
        .unwrap();
        assert_eq!(
            a.memory["spi"], 0x7400,
            "QEMU keeps the description's sizes"
        );
        let c3 = a.on_board("esp32c3").unwrap();
        assert_eq!(c3.memory["spi"], 0x2000);
        let t = &c3.tasks[0];
        assert_eq!((t.code, t.ram, t.stack), (8192, 2048, 512));
        let refused = |extra: &str| app(&toml(extra)).unwrap().on_board("esp32c3").unwrap_err();
        for (extra, why) in [
            (
                "memory = { cache = 0x100 }",
                "memory `cache`: the app has no such memory",
            ),
            (
                "tasks = { z = { code = 4096, ram = 4096, stack = 512 } }",
                "tasks `z`: the app has no such task",
            ),
            (
                "tasks = { a = { code = 4096, ram = 512, stack = 512 } }",
                "stack must be",
            ),
        ] {
            let e = refused(extra);
            assert!(e.contains(why), "{extra}: {e}");
        }
    }

    #[test]
    fn on_a_board_without_an_nvm_window_an_eternal_area_is_its_nvm_range() {
        let a = app(&with(
            "",
            "{ kind = \"eternal\", area = \"ring\", rights = [\"read\"] }",
        ))
        .unwrap();
        let sb = Superblock::for_device(512 << 10).unwrap();
        let p = place(&a, 512 << 10, "esp32c3").unwrap();
        assert_eq!(
            p[0].ranges,
            vec![Some((sb.ring_area.offset, sb.ring_area.len))]
        );
        let env = task_env(&p[0]);
        assert_eq!(env["AMBER_NVM_RING_LEN"], (16 << 10).to_string());
        assert_eq!(env["AMBER_NVM_FRAM_LEN"], (64 << 10).to_string());
        assert!(eternal_is_nvm_region(p[0].board));
        assert!(!eternal_is_nvm_region(board_map(BOARD).unwrap()));
    }

    /// `ONE` with `caps` (a TOML array) and `top` (tables before the first task).
    fn with(top: &str, caps: &str) -> String {
        ONE.replace("stack = 1024", &format!("stack = 1024\ncaps = [{caps}]"))
            .replace("[[tasks]]", &format!("{top}\n[[tasks]]"))
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        assert!(app(&ONE.replace("stack = 1024", "stack = 1024\nstak = 1")).is_err());
        assert!(
            app(&ONE.replace("stack = 1024", "stack = 4096")).is_err(),
            "stack must leave room"
        );
        assert!(app(&ONE.replace("priority = 1", "priority = 1\nfault = \"retry\"")).is_err());
        let env = |e: &str| ONE.replace("stack = 1024", &format!("stack = 1024\nenv = {{ {e} }}"));
        assert_eq!(
            app(&env("AMBER_X = \"1\"")).unwrap().tasks[0].env["AMBER_X"],
            "1"
        );
        assert!(app(&env("\"a-b\" = \"1\"")).is_err());
        assert!(
            app(&env("AMBER_MEM_X = \"1\"")).is_err(),
            "memory addresses are xtask's to set"
        );
        assert!(
            app(&env("AMBER_BOARD_KERNEL = \"1\"")).is_err(),
            "and so are the board's"
        );
    }

    #[test]
    fn an_app_past_a_kernel_limit_is_refused_with_the_limit() {
        let many = |n: usize| {
            let task = &ONE[ONE.find("[[tasks]]").unwrap()..];
            let tasks: String = (0..n)
                .map(|i| task.replace("name = \"a\"", &format!("name = \"t{i}\"")))
                .collect();
            app(&format!("name = \"t\"\n{tasks}"))
        };
        assert!(many(MAX_TASKS).is_ok(), "{:?}", many(MAX_TASKS).err());
        let e = many(MAX_TASKS + 1).unwrap_err();
        assert!(e.contains("MAX_TASKS"), "{e}");
        let e = app(&ONE.replace("priority = 1", "priority = 8")).unwrap_err();
        assert!(e.contains("NUM_PRIORITIES"), "{e}");
        let e = app(&ONE.replace("name = \"a\"", "name = \"a-name-of-17-bytes\"")).unwrap_err();
        assert!(e.contains("MAX_NAME"), "{e}");
        let timers = vec!["{ kind = \"timer\" }"; SLOTS + 1].join(", ");
        let e = app(&with("", &timers)).unwrap_err();
        assert!(e.contains("SLOTS"), "{e}");
        let mmio =
            ["{ kind = \"mmio\", base = 0x1000, len = 4, rights = [\"read\"] }"; 7].join(", ");
        let e = app(&with("", &mmio)).unwrap_err();
        assert!(e.contains("MAX_REGIONS"), "{e}");
    }

    #[test]
    fn shared_memory_is_placed_in_the_board_ram_no_checkpoint_copies() {
        let heap = |offset: u32, len: u32| {
            with(
                "[memory]\nspi = 0x1000\ncache = 0x200",
                &format!(
                    "{{ kind = \"heap\", memory = \"cache\", rights = [\"read\"] }}, \
                     {{ kind = \"heap\", memory = \"spi\", offset = {offset}, len = {len}, rights = [\"read\"] }}"
                ),
            )
        };
        let a = app(&heap(0x100, 0x100)).unwrap();
        let p = place(&a, 4 << 20, BOARD).unwrap();
        let map = board_map(BOARD).unwrap();
        let cache = (map.heap_ram.base, 0x200);
        let spi_part = (map.heap_ram.base + 0x200 + 0x100, 0x100);
        assert_eq!(p[0].ranges, vec![Some(cache), Some(spi_part)]);
        let env = task_env(&p[0]);
        assert_eq!(env["AMBER_MEM_SPI"], spi_part.0.to_string());
        assert_eq!(env["AMBER_MEM_SPI_LEN"], "256");
        assert_eq!(env["AMBER_MEM_CACHE"], cache.0.to_string());
        assert_eq!(env["AMBER_TASK_RAM"], map.task_ram.base.to_string());
        assert_eq!(env["AMBER_BOARD_CONSOLE"], map.console.to_string());
        assert!(
            app(&heap(0xF04, 0x100)).is_err(),
            "a part must lie inside its memory"
        );
        assert!(app(&heap(0x102, 0x100)).is_err(), "and be 4-byte aligned");
        assert!(
            app(&with(
                "",
                "{ kind = \"heap\", memory = \"none\", rights = [] }"
            ))
            .is_err(),
            "memory must be declared"
        );
    }

    #[test]
    fn eternal_areas_are_where_the_superblock_places_them_in_the_nvm_window() {
        let a = app(&with(
            "",
            "{ kind = \"eternal\", area = \"ring\", rights = [\"read\"] }",
        ))
        .unwrap();
        let sb = Superblock::for_device(4 << 20).unwrap();
        let window = board_map(BOARD).unwrap().nvm_window.unwrap();
        let p = place(&a, 4 << 20, BOARD).unwrap();
        assert_eq!(
            p[0].ranges,
            vec![Some((window + sb.ring_area.offset, sb.ring_area.len))]
        );
        assert!(
            place(&a, 64 << 10, BOARD).is_err(),
            "a small NVM has no ring area"
        );
        assert!(app(&with(
            "",
            "{ kind = \"eternal\", area = \"disk\", rights = [] }"
        ))
        .is_err());
    }
}
