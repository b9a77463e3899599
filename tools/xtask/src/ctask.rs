//! C tasks: builds a task written in C (`lang = "c"` in the app description; its
//! program in `user/c/tasks/NAME/`) into an ELF linked at its place, as a Rust task is.
//!
//! The compiler is Debian's `riscv64-unknown-elf-gcc` with picolibc (its rv32im/ilp32
//! libraries serve `-march=rv32imc -mabi=ilp32`: no atomics, no floating point, the
//! soft-float and 64-bit helpers from libgcc). The task links with the Rust tasks'
//! `task.x` and the app's `memory.x`, with the C runtime (`user/c/runtime`: start-up,
//! console, `malloc` over the RAM between its bss and its stack) and with
//! `amber_sys.h`, generated here from `amber-abi` (`amber_c::header`) so that C and
//! Rust never disagree on a number. A task's `task.toml` lists its sources, flags and
//! any source taken from a crate of the registry (SQLite's amalgamation, from
//! `libsqlite3-sys`, pinned by Cargo.lock). Objects are cached by a hash of what went
//! into them, so an unchanged `sqlite3.c` is compiled once. The app's build settings
//! (`env`) reach the task's own sources as `amber_env.h`, never the registry's, so their
//! objects are shared by every app. This file must never hold a task's logic.

use crate::app::Placed;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The C compiler (and linker driver), from Debian's `gcc-riscv64-unknown-elf`.
pub const CC: &str = "riscv64-unknown-elf-gcc";
/// The Debian packages C tasks need: the compiler and picolibc (`setup::NEEDS` installs
/// them).
pub const PACKAGES: [&str; 2] = ["gcc-riscv64-unknown-elf", "picolibc-riscv64-unknown-elf"];
/// What picolibc's package installs and the compiler's `--specs` reads.
pub const PICOLIBC_SPECS: &str = "/usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs";
/// The code model every C object is built for: RV32IMC, soft float (the ESP32-C3's ISA).
const ARCH: [&str; 3] = ["-march=rv32imc", "-mabi=ilp32", "--specs=picolibc.specs"];
/// What every object is built with.
const CFLAGS: [&str; 9] = [
    "-Os",
    "-g",
    "-ffunction-sections",
    "-fdata-sections",
    "-fno-common",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-std=gnu11",
];

/// A C task's `task.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskToml {
    /// Its own sources, in its folder.
    sources: Vec<String>,
    /// Flags for every object of the task (its sources and the registry's).
    #[serde(default)]
    cflags: Vec<String>,
    /// Sources taken from crates of the registry.
    #[serde(default)]
    registry: Vec<RegistrySource>,
}

/// A source file of a crate that cargo downloads (pinned by Cargo.lock), compiled with
/// the task: the crate must be a dependency of the workspace (see `user/c/Cargo.toml`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistrySource {
    package: String,
    /// The file, relative to the crate's folder; its folder is on the include path.
    file: String,
    /// Flags for this file only (warnings of code that is not ours).
    #[serde(default)]
    cflags: Vec<String>,
}

fn root() -> PathBuf {
    crate::root()
}

/// Whether the C toolchain is there; if not, what to install.
pub fn check_toolchain() -> Result<(), String> {
    let picolibc = Path::new(PICOLIBC_SPECS);
    if amber_qemu::on_path(CC).is_some() && picolibc.is_file() {
        return Ok(());
    }
    Err(format!(
        "C tasks need {CC} and picolibc: apt-get install {} (`cargo xtask test` installs them as root)",
        PACKAGES.join(" ")
    ))
}

/// The folder of C task `program`.
fn task_folder(program: &str) -> PathBuf {
    root().join("user/c/tasks").join(program)
}

/// Builds C task `p` into `elf`, in `dir` (where its memory.x is).
pub fn build(p: &Placed, dir: &Path, elf: &Path) -> Result<(), String> {
    check_toolchain()?;
    let folder = task_folder(&p.task.krate);
    let toml_path = folder.join("task.toml");
    let text = std::fs::read_to_string(&toml_path).map_err(|e| {
        format!(
            "C task `{}`: cannot read {}: {e}",
            p.task.name,
            toml_path.display()
        )
    })?;
    let desc: TaskToml =
        toml::from_str(&text).map_err(|e| format!("{}: {e}", toml_path.display()))?;
    let include = dir.join("include");
    std::fs::create_dir_all(&include)
        .map_err(|e| format!("cannot create {}: {e}", include.display()))?;
    write_if_changed(&include.join("amber_sys.h"), &amber_c::header())?;
    write_if_changed(&include.join("amber_env.h"), &env_header(p))?;
    let runtime = root().join("user/c/runtime");
    let mut includes = vec![
        include.clone(),
        root().join("user/c/include"),
        folder.clone(),
    ];
    let mut registry_objs = Vec::new();
    for r in &desc.registry {
        let pkg = registry_package(&r.package)?;
        let file = pkg.join(&r.file);
        let dir_of = file.parent().unwrap_or(&pkg).to_path_buf();
        includes.push(dir_of.clone());
        let flags: Vec<String> = desc.cflags.iter().chain(&r.cflags).cloned().collect();
        registry_objs.push(compile(&file, &[dir_of], &flags)?);
    }
    let mut objs = Vec::new();
    for src in ["start.S", "amber.c"] {
        objs.push(compile(&runtime.join(src), &includes, &[])?);
    }
    for src in &desc.sources {
        objs.push(compile(&folder.join(src), &includes, &desc.cflags)?);
    }
    objs.extend(registry_objs);
    let code_end = format!(
        "--defsym=__amber_code_end={:#x}+{}",
        p.code_base, p.task.code
    );
    let mut cmd = Command::new(CC);
    cmd.args(ARCH)
        .args(["-nostartfiles", "-Wl,--gc-sections"])
        .arg(format!("-Wl,{code_end}"))
        // The heap picolibc's malloc takes (its sbrk): from the end of bss to the stack.
        .args([
            "-Wl,--defsym=__heap_start=_ebss",
            "-Wl,--defsym=__heap_end=_stack_top-STACK_SIZE",
        ])
        .arg(format!("-L{}", dir.display()))
        .arg(format!("-L{}", root().join("user/runtime").display()))
        .arg("-Ttask.x")
        .args(&objs)
        .arg("-o")
        .arg(elf);
    crate::step(
        &format!("linking C task `{}` ({})", p.task.name, p.task.krate),
        &mut cmd,
    )
}

/// The app's build settings and the task's places, as `#define`s (`amber_env.h`):
/// what a Rust task reads with `option_env!`.
fn env_header(p: &Placed) -> String {
    let mut s = String::from(
        "/* Generated by cargo xtask: the task's build settings (app description `env`)\n \
         * and places. Do not edit. */\n#ifndef AMBER_ENV_H\n#define AMBER_ENV_H\n",
    );
    for (k, v) in crate::app::task_env(p) {
        let value = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
            format!("{v}u")
        } else {
            format!("{v:?}")
        };
        s.push_str(&format!("#define {k} {value}\n"));
    }
    s.push_str("#endif\n");
    s
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Compiles `src` (with `includes` on the path and `flags`) into the object cache,
/// `target/amber/c-objects/`, unless an object of the same inputs is there; returns
/// the object. The key hashes the source, every header in the include folders, the
/// flags and the compiler's version.
fn compile(src: &Path, includes: &[PathBuf], flags: &[String]) -> Result<PathBuf, String> {
    let mut h = Sha256::new();
    let text = std::fs::read(src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
    h.update(&text);
    h.update(src.to_string_lossy().as_bytes());
    for f in ARCH.iter().chain(CFLAGS.iter()) {
        h.update(f.as_bytes());
    }
    for f in flags {
        h.update(f.as_bytes());
    }
    for dir in includes {
        h.update(dir.to_string_lossy().as_bytes());
        let mut headers: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "h"))
                    .collect()
            })
            .unwrap_or_default();
        headers.sort();
        for hdr in headers {
            h.update(std::fs::read(&hdr).unwrap_or_default());
        }
    }
    h.update(compiler_version()?.as_bytes());
    let key: String = h.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let stem = src.file_stem().unwrap_or_default().to_string_lossy();
    let cache = root().join("target/amber/c-objects");
    std::fs::create_dir_all(&cache)
        .map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    let obj = cache.join(format!("{stem}-{key}.o"));
    if obj.is_file() {
        return Ok(obj);
    }
    let partial = cache.join(format!("{stem}-{key}.o.partial"));
    let mut cmd = Command::new(CC);
    cmd.args(ARCH)
        .args(CFLAGS)
        .args(includes.iter().map(|i| format!("-I{}", i.display())))
        .args(flags)
        .arg("-c")
        .arg(src)
        .arg("-o")
        .arg(&partial);
    crate::step(
        &format!("compiling {} for rv32imc", src.display()),
        &mut cmd,
    )?;
    std::fs::rename(&partial, &obj).map_err(|e| format!("cannot move {}: {e}", obj.display()))?;
    Ok(obj)
}

fn compiler_version() -> Result<String, String> {
    let out = Command::new(CC)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {CC}: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The folder cargo downloaded registry crate `name` into, as `cargo metadata` says
/// (the version Cargo.lock pins; cargo fetches it if it is missing).
fn registry_package(name: &str) -> Result<PathBuf, String> {
    let out = crate::cargo()
        .args(["metadata", "--format-version", "1", "--locked"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let meta: Metadata = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("cannot read cargo metadata: {e}"))?;
    meta.packages
        .into_iter()
        .find(|p| p.name == name)
        .and_then(|p| Path::new(&p.manifest_path).parent().map(Path::to_path_buf))
        .ok_or_else(|| {
            format!("crate `{name}` is not a dependency of the workspace (user/c/Cargo.toml)")
        })
}

#[derive(Deserialize)]
struct Metadata {
    packages: Vec<Package>,
}

#[derive(Deserialize)]
struct Package {
    name: String,
    manifest_path: String,
}
