//! `cargo xtask build --board esp32c3 [APP]`: the kernel (and the app's tasks) built for
//! the ESP32-C3, the flashable RAM-only image written beside the ELF
//! (`target/amber/esp32c3/APP.bin`, [`crate::esp_image`]), a static check of every ELF
//! that goes into it, and the sizes printed: the image, and the RAM each part leaves.
//! [`validate`] has the image checked by a tool nobody here wrote (`esptool
//! image-info`, from PyPI into `target/esptool-venv`). Orchestration only: the formats
//! are in `esp_image.rs`, the board in `kernel/src/board/esp32c3/`.

use crate::{app, apps_dir, build_app_on, build_kernel_on, esp_image, load_app, root, step};
use object::read::elf::{ElfFile32, FileHeader, ProgramHeader};
use object::{Endianness, Object, ObjectSection, ObjectSymbol, SectionKind};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const BOARD: &str = "esp32c3";
/// The apps the C3 builds in the test command (the simulator boots all but bank).
/// `kv` is not among them: its key-value service takes the 512 KiB FRAM whole.
pub const APPS: &[&str] = &[
    "demo",
    "faulter",
    "ckcounter",
    "ckcounter-comparator",
    "bank",
    "heap",
];
/// The FRAM the board carries (MB85RS4MT): the NVM size apps are built for.
pub const NVM_SIZE: u64 = 512 * 1024;
/// The C3 fetches up to this many bytes past the last instruction it runs (esp-idf
/// `SOC_MEMPROT_CPU_PREFETCH_PAD_SIZE`): they must lie in the task's own executable
/// region, or the prefetch of its last instructions faults on the PMP.
pub const PREFETCH_PAD: u32 = 16;

/// `build --board BOARD [APP]`: the build, then esptool's validation of the image
/// (the first run installs esptool from PyPI).
pub fn build_cmd(args: &[String]) -> Result<(), String> {
    match args {
        [board] if board == BOARD => validate(&build(None)?),
        [board, name] if board == BOARD => validate(&build(Some(name))?),
        [board, ..] => Err(format!(
            "build --board: `{board}` is not a board this command builds images for (only {BOARD}; \
             the QEMU board is `cargo xtask build [APP]`)"
        )),
        [] => Err("build --board needs a board name: build --board esp32c3 [APP]".to_owned()),
    }
}

/// Builds the kernel (with app `name`'s tasks if given) for the C3, checks its ELF
/// and the tasks', writes the image and prints the figures. Returns the image.
pub fn build(name: Option<&str>) -> Result<PathBuf, String> {
    let (elf, stem) = match name {
        Some(n) => (build_app_on(BOARD, n, NVM_SIZE)?, n.to_owned()),
        None => (build_kernel_on(BOARD, None)?, "amber-kernel".to_owned()),
    };
    let data = std::fs::read(&elf).map_err(|e| format!("cannot read {}: {e}", elf.display()))?;
    check_elf(&data).map_err(|e| format!("{}: {e}", elf.display()))?;
    if let Some(n) = name {
        let a = load_app(n)?.on_board(BOARD)?;
        for p in app::place(&a, NVM_SIZE as u32, BOARD)? {
            let t = apps_dir(BOARD)
                .join(n)
                .join(&p.task.name)
                .join(format!("{}.elf", p.task.name));
            let bytes =
                std::fs::read(&t).map_err(|e| format!("cannot read {}: {e}", t.display()))?;
            check_instructions(&bytes).map_err(|e| format!("{}: {e}", t.display()))?;
            let end = code_end(&bytes).map_err(|e| format!("{}: {e}", t.display()))?;
            prefetch_pad_fits(&p.task.name, p.code_base, p.task.code, end)?;
        }
    }
    let (entry, segments) = esp_image::from_elf(&data)?;
    let image =
        esp_image::write(entry, &segments).map_err(|e| format!("{}: {e}", elf.display()))?;
    let bin = apps_dir(BOARD).join(format!("{stem}.bin"));
    std::fs::write(&bin, &image).map_err(|e| format!("cannot write {}: {e}", bin.display()))?;
    let map = app::board_map(BOARD)?;
    let end = symbol(&data, "_end").ok_or("the kernel ELF has no `_end`")?;
    println!(
        "{}: {} bytes, {} segments; kernel SRAM {} of {} bytes used, {} left",
        bin.display(),
        image.len(),
        segments.len(),
        end - map.kernel.base,
        map.kernel.len,
        map.kernel.end() - end
    );
    if let Some(n) = name {
        let a = load_app(n)?.on_board(BOARD)?;
        let code: u32 = a.tasks.iter().map(|t| t.code.next_multiple_of(256)).sum();
        let ram: u32 = a.tasks.iter().map(|t| t.ram.next_multiple_of(256)).sum();
        let heap: u32 = a.memory.values().sum();
        println!(
            "app {n} on {BOARD}: task code {code} of {} bytes ({} left), task RAM {ram} of {} ({} left), \
             never-checkpointed RAM {heap} of {} ({} left)",
            map.task_code.len,
            map.task_code.len - code,
            map.task_ram.len,
            map.task_ram.len - ram,
            map.heap_ram.len,
            map.heap_ram.len - heap
        );
    }
    Ok(bin)
}

/// One past the last byte of the ELF's executable segments (0 when it has none).
fn code_end(elf: &[u8]) -> Result<u32, String> {
    let file = ElfFile32::<Endianness>::parse(elf).map_err(|e| format!("not a 32-bit ELF: {e}"))?;
    let endian = file.endian();
    Ok(file
        .elf_program_headers()
        .iter()
        .filter(|ph| ph.p_type(endian) == object::elf::PT_LOAD)
        .filter(|ph| ph.p_flags(endian).contains(object::elf::PF_X))
        .map(|ph| ph.p_vaddr(endian) + ph.p_memsz(endian))
        .max()
        .unwrap_or(0))
}

/// Whether task `task`'s code, ending at `end`, leaves [`PREFETCH_PAD`] bytes of its
/// code region (`len` bytes at `base`) after it.
pub fn prefetch_pad_fits(task: &str, base: u32, len: u32, end: u32) -> Result<(), String> {
    let region_end = base as u64 + len as u64;
    if end as u64 + PREFETCH_PAD as u64 <= region_end {
        return Ok(());
    }
    Err(format!(
        "task `{task}`: its code ends at {end:#010x}, {} bytes before the end of its code region \
         ({base:#010x}+{len:#x}); the ESP32-C3 fetches up to {PREFETCH_PAD} bytes past the last \
         instruction (esp-idf SOC_MEMPROT_CPU_PREFETCH_PAD_SIZE), and those must lie in the task's \
         own region: give it {} more bytes of code",
        region_end.saturating_sub(end as u64),
        end as u64 + PREFETCH_PAD as u64 - region_end
    ))
}

fn symbol(elf: &[u8], name: &str) -> Option<u32> {
    let file = object::File::parse(elf).ok()?;
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .map(|s| s.address() as u32)
}

/// The kernel ELF's static check: RV32 only, no A- or F-extension instruction, no
/// access to `mie`, `mip` or `minstret` (the C3 has none of them), and a vector table
/// of 32 jumps at a 256-byte aligned address.
pub fn check_elf(elf: &[u8]) -> Result<(), String> {
    check_instructions(elf)?;
    let file = object::File::parse(elf).map_err(|e| format!("not an ELF: {e}"))?;
    let table = file
        .symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains("trap7vectors")))
        .ok_or("no trap vector table (arch::riscv32::trap::vectors)")?;
    let base = table.address();
    if base % 256 != 0 {
        return Err(format!(
            "the trap vector table at {base:#x} is not 256-byte aligned"
        ));
    }
    let text = file
        .sections()
        .find(|s| (s.address()..s.address() + s.size()).contains(&base))
        .ok_or("the vector table is in no section")?;
    let bytes = text.data().map_err(|e| e.to_string())?;
    let at = (base - text.address()) as usize;
    for slot in 0..32 {
        let word = bytes
            .get(at + 4 * slot..at + 4 * slot + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .ok_or("the vector table runs past its section")?;
        // `jal x0, offset`: opcode 0x6F, rd 0.
        if word & 0xFFF != 0x06F {
            return Err(format!(
                "vector table slot {slot} ({word:#010x}) is not a jump"
            ));
        }
    }
    Ok(())
}

/// Every instruction of every executable section: none from the A or F/D extensions
/// (the C3 is RV32IMC), none touching `mie` (0x304), `mip` (0x344) or `minstret`
/// (0xB02/0xB82). Sections are decoded from their start, 2 or 4 bytes at a time.
pub fn check_instructions(elf: &[u8]) -> Result<(), String> {
    let file = ElfFile32::<Endianness>::parse(elf).map_err(|e| format!("not a 32-bit ELF: {e}"))?;
    if file.elf_header().e_machine(file.endian()) != object::elf::EM_RISCV {
        return Err("not a RISC-V ELF".to_owned());
    }
    for section in file.sections().filter(|s| s.kind() == SectionKind::Text) {
        let bytes = section.data().map_err(|e| e.to_string())?;
        let mut i = 0;
        while i + 2 <= bytes.len() {
            let half = u16::from_le_bytes([bytes[i], bytes[i + 1]]);
            let addr = section.address() + i as u64;
            if half & 0b11 != 0b11 {
                if let Some(what) = compressed_fp(half) {
                    return Err(format!(
                        "{what} at {addr:#x} ({half:#06x}): the C3 has no F/D"
                    ));
                }
                i += 2;
                continue;
            }
            let Some(b) = bytes.get(i..i + 4) else {
                return Err(format!("a 4-byte instruction is cut off at {addr:#x}"));
            };
            let word = u32::from_le_bytes(b.try_into().unwrap());
            if let Some(what) = forbidden(word) {
                return Err(format!("{what} at {addr:#x} ({word:#010x})"));
            }
            i += 4;
        }
    }
    Ok(())
}

/// Why a 32-bit instruction may not run on the C3, if it may not.
fn forbidden(word: u32) -> Option<String> {
    let opcode = word & 0x7F;
    match opcode {
        0x2F => return Some("an atomic (A-extension) instruction: the C3 has none".to_owned()),
        0x07 | 0x27 | 0x43 | 0x47 | 0x4B | 0x4F | 0x53 => {
            return Some("a floating-point instruction: the C3 has no F/D".to_owned())
        }
        _ => {}
    }
    let funct3 = (word >> 12) & 7;
    if opcode == 0x73 && funct3 != 0 && funct3 != 4 {
        let csr = word >> 20;
        let name = match csr {
            0x304 => "mie",
            0x344 => "mip",
            0xB02 | 0xB82 => "minstret",
            _ => return None,
        };
        return Some(format!(
            "an access to `{name}` (CSR {csr:#x}), which the C3 does not have"
        ));
    }
    None
}

/// C.FLD/C.FLW/C.FSD/C.FSW and their stack-pointer forms (RV32C quadrants 0 and 2,
/// funct3 odd).
fn compressed_fp(half: u16) -> Option<&'static str> {
    let quadrant = half & 0b11;
    let funct3 = half >> 13;
    ((quadrant == 0 || quadrant == 2) && funct3 & 1 == 1 && half != 0)
        .then_some("a compressed floating-point load or store")
}

/// The esptool that validates images: `target/esptool-venv/bin/esptool`, made with
/// `python3 -m venv` and pip when missing.
fn esptool() -> Result<PathBuf, String> {
    let venv = root().join("target/esptool-venv");
    let bin = venv.join("bin/esptool");
    if bin.is_file() {
        return Ok(bin);
    }
    step(
        "creating a Python virtual environment for esptool (target/esptool-venv)",
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
    )
    .map_err(|e| format!("{e} (Debian: apt-get install python3-venv)"))?;
    step(
        "installing esptool from PyPI into target/esptool-venv",
        Command::new(venv.join("bin/pip")).args(["install", "--quiet", "esptool"]),
    )?;
    Ok(bin)
}

/// `flash --board esp32c3 APP [--port PORT]`: builds and validates the image, writes
/// it at flash offset 0 with espflash (installed with `cargo install` when missing)
/// and opens espflash's monitor. Without a board (no `--port` and no USB serial
/// device) it stops before building, saying so.
pub fn flash_cmd(args: &[String]) -> Result<(), String> {
    let usage = "usage: cargo xtask flash --board esp32c3 APP [--port PORT]";
    let (name, port) = match args {
        [flag, board, name] if flag == "--board" && board == BOARD => (name, None),
        [flag, board, name, p, port] if flag == "--board" && board == BOARD && p == "--port" => {
            (name, Some(PathBuf::from(port)))
        }
        _ => return Err(usage.to_owned()),
    };
    let port = match port {
        Some(p) if p.exists() => p,
        Some(p) => {
            return Err(format!(
                "no serial port {}: is the board attached?",
                p.display()
            ))
        }
        None => serial_ports()?.into_iter().next().ok_or(concat!(
            "no ESP32-C3 attached: no USB serial device (/dev/ttyUSB*, /dev/ttyACM*); ",
            "connect the board or name its port with --port"
        ))?,
    };
    let bin = build(Some(name))?;
    validate(&bin)?;
    if Command::new("espflash").arg("--version").output().is_err() {
        step(
            "installing espflash (cargo install espflash --locked)",
            Command::new("cargo").args(["install", "espflash", "--locked"]),
        )?;
    }
    step(
        &format!(
            "writing {} to flash offset 0 through {}",
            bin.display(),
            port.display()
        ),
        Command::new("espflash")
            .args(["write-bin", "--port"])
            .arg(&port)
            .arg("0x0")
            .arg(&bin),
    )?;
    step(
        "opening the monitor (quit: Ctrl-C)",
        Command::new("espflash")
            .args(["monitor", "--port"])
            .arg(&port),
    )
}

/// The USB serial devices there are, in name order.
fn serial_ports() -> Result<Vec<PathBuf>, String> {
    let dev = std::fs::read_dir("/dev").map_err(|e| format!("cannot list /dev: {e}"))?;
    let mut ports: Vec<PathBuf> = dev
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ttyUSB") || n.starts_with("ttyACM"))
        })
        .collect();
    ports.sort();
    Ok(ports)
}

/// The device lint of the kernel with this board (in the board's own target folder).
pub fn lint() -> Result<(), String> {
    step(
        "linting the kernel for the ESP32-C3 (clippy -D warnings)",
        crate::cargo()
            .arg("--config")
            .arg(format!(
                "build.target-dir={:?}",
                crate::board_target_dir(BOARD)
            ))
            .args([
                "clippy",
                "-p",
                crate::KERNEL_PACKAGE,
                "--target",
                crate::TARGET,
            ])
            .args(["--", "-D", "warnings"])
            .env("AMBER_BOARD", BOARD),
    )
}

/// The test command's part: every app of [`APPS`] built for the C3 and its image
/// validated by esptool.
pub fn test_all() -> Result<(), String> {
    for name in APPS {
        validate(&build(Some(name))?)?;
    }
    Ok(())
}

/// Has `esptool image-info` check the image: chip ESP32-C3, checksum and SHA-256
/// valid, every segment in IRAM or DRAM.
pub fn validate(bin: &Path) -> Result<(), String> {
    let out = Command::new(esptool()?)
        .args(["--chip", "esp32c3", "image-info"])
        .arg(bin)
        .output()
        .map_err(|e| format!("cannot run esptool: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let fail = |why: &str| {
        Err(format!(
            "esptool image-info {}: {why}\n{text}",
            bin.display()
        ))
    };
    if !out.status.success() {
        return fail(&format!(
            "failed ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    check_image_info(&text).or_else(|why| fail(&why))?;
    println!(
        "{}: esptool image-info: ESP32-C3, checksum and SHA-256 valid, segments in IRAM/DRAM",
        bin.display()
    );
    Ok(())
}

/// Reads esptool's `image-info` report (esptool 5).
fn check_image_info(text: &str) -> Result<(), String> {
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .ok_or_else(|| format!("no `{prefix}` line"))
    };
    if !line("Chip ID:")?.contains("(ESP32-C3)") {
        return Err("not an ESP32-C3 image".to_owned());
    }
    for what in ["Checksum:", "Validation hash:"] {
        if !line(what)?.trim_end().ends_with("(valid)") {
            return Err(format!("{what} not valid"));
        }
    }
    let table = text
        .split("Segments Information")
        .nth(1)
        .and_then(|t| t.split("Image Footer").next())
        .ok_or("no segment table")?;
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    if rows.is_empty() {
        return Err("no segments".to_owned());
    }
    for row in rows {
        // Columns: segment, length, load address, file offset, then the memory types.
        let types: Vec<&str> = row
            .split_whitespace()
            .skip(4)
            .map(|t| t.trim_end_matches(','))
            .collect();
        if !types.iter().any(|t| *t == "IRAM" || *t == "DRAM") {
            return Err(format!("segment outside IRAM and DRAM: `{}`", row.trim()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_s_code_must_leave_the_prefetch_pad_in_its_region() {
        prefetch_pad_fits("t", 0x403B_8000, 0x1000, 0x403B_8FF0).unwrap();
        let e = prefetch_pad_fits("t", 0x403B_8000, 0x1000, 0x403B_8FF2).unwrap_err();
        assert!(
            e.contains("task `t`") && e.contains("14 bytes before") && e.contains("2 more bytes"),
            "{e}"
        );
        assert!(prefetch_pad_fits("t", 0x403B_8000, 0x1000, 0x403B_9000).is_err());
    }

    #[test]
    fn forbidden_instructions_are_named() {
        assert!(forbidden(0x1000_202F).unwrap().contains("atomic"), "lr.w");
        assert!(forbidden(0x0000_2007).unwrap().contains("floating"), "flw");
        assert!(
            forbidden(0x3040_1073).unwrap().contains("mie"),
            "csrw mie, x0"
        );
        assert!(
            forbidden(0x3440_2073).unwrap().contains("mip"),
            "csrr x0, mip"
        );
        assert!(
            forbidden(0xB020_2573).unwrap().contains("minstret"),
            "csrr a0, minstret"
        );
        assert_eq!(forbidden(0x3004_7073), None, "csrci mstatus, 8");
        assert_eq!(
            forbidden(0x7E20_2573),
            None,
            "csrr a0, 0x7e2 (the C3's cycle counter)"
        );
        assert_eq!(forbidden(0x0000_0013), None, "nop");
        assert_eq!(forbidden(0x0250_0533), None, "mul a0, zero, t0");
        assert!(compressed_fp(0x6008).is_some(), "c.flw");
        assert!(compressed_fp(0x2002).is_some(), "c.fldsp");
        assert_eq!(compressed_fp(0x4108), None, "c.lw");
        assert_eq!(compressed_fp(0x0001), None, "c.nop");
    }

    const INFO: &str = "Chip ID: 5 (ESP32-C3)\n\nSegments Information\n====\n\
        Segment   Length   Load addr   File offs  Memory types\n-------\n\
        \x20     0  0x00008  0x40380000  0x00000018  IRAM\n\
        \x20     1  0x00010  0x3fc90000  0x00000028  DRAM, BYTE_ACCESSIBLE\n\n\
        ESP32-C3 Image Footer\n=====\nChecksum: 0x39 (valid)\nValidation hash: 0eb1 (valid)\n";

    #[test]
    fn image_info_reports_are_read_strictly() {
        check_image_info(INFO).unwrap();
        let bad = INFO.replace(
            "Checksum: 0x39 (valid)",
            "Checksum: 0x39 (invalid: calculated 0x12)",
        );
        assert!(check_image_info(&bad).unwrap_err().contains("Checksum"));
        let bad = INFO.replace("DRAM, BYTE_ACCESSIBLE", "RTC_DRAM");
        assert!(check_image_info(&bad).unwrap_err().contains("outside"));
        let bad = INFO.replace("DRAM, BYTE_ACCESSIBLE", "DROM");
        assert!(check_image_info(&bad).unwrap_err().contains("outside"));
        let bad = INFO.replace("5 (ESP32-C3)", "0 (ESP32)");
        assert!(check_image_info(&bad).is_err());
    }
}
