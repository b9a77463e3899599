//! The QEMU machine Amber runs on, in one place for `xtask` and the integration tests.
//!
//! It finds `qemu-system-riscv32` (naming the Debian package when it is missing; xtask's
//! set-up, `tools/xtask/src/setup.rs`, installs that package) and
//! builds the command line: `virt`, an RV32IMC CPU (no A, F, D or H extension, so a
//! stray atomic or float instruction traps here before it does on an ESP32-C3), no
//! firmware, and the NVM as an `ivshmem-plain` device over a host file with
//! `share=on`, so that every guest store lands in the file at once and a SIGKILL of
//! QEMU is a power cut. With `-icount` it tells the kernel so (boot option
//! `amber.icount`): only then does the hart's instruction counter count instructions,
//! and the kernel labels its figures by it. It can start the machine halted behind
//! QEMU's gdb stub. It chooses the bus the kernel reaches the NVM by ([`NvmBus`], boot
//! option `amber.nvm-bus=spi`). It also says which NVM image sizes the machine takes
//! ([`check_nvm_size`]), so that a bad one is refused in words before QEMU starts.
//! This crate only builds commands; it never runs one.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The QEMU binary.
pub const QEMU: &str = "qemu-system-riscv32";
/// The Debian package that provides it.
pub const QEMU_PACKAGE: &str = "qemu-system-misc";
/// Default size of the NVM image.
pub const DEFAULT_NVM_SIZE: u64 = 4 << 20;

/// The largest NVM: the kernel places the ivshmem BAR in `virt`'s 32-bit PCIe memory
/// window, 1 GiB at 0x4000_0000, aligned to its size.
pub const MAX_NVM_SIZE: u64 = 1 << 30;

/// Why an NVM image cannot be the machine's NVM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NvmSizeError {
    /// ivshmem-plain's memory BAR must be a power of two: QEMU aborts
    /// (`pci_register_bar: Assertion is_power_of_2(size)`) on anything else.
    NotPowerOfTwo { size: u64 },
    /// Larger than the PCIe window the kernel maps it in.
    TooLarge { size: u64 },
    /// Too small for Amber's NVM format (superblock, boot record, checkpoint area).
    TooSmall { size: u64, min: u64 },
}

impl fmt::Display for NvmSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NvmSizeError::NotPowerOfTwo { size } => {
                let above = size.next_power_of_two();
                write!(
                    f,
                    "the NVM image is {size} bytes, but QEMU's ivshmem-plain device needs a power \
                     of two (it aborts otherwise): {} or {above} bytes",
                    above / 2
                )
            }
            NvmSizeError::TooLarge { size } => write!(
                f,
                "the NVM image is {size} bytes, more than the {MAX_NVM_SIZE} bytes of the PCIe \
                 window the kernel maps it in"
            ),
            NvmSizeError::TooSmall { size, min } => write!(
                f,
                "the NVM image is {size} bytes, too small for Amber's NVM format (at least {min} \
                 bytes)"
            ),
        }
    }
}

impl std::error::Error for NvmSizeError {}

/// Whether the kernel can lay its format out on a device of `size` bytes: its
/// superblock and its checkpoint area take it (the kernel's own checks).
fn kernel_takes(size: u64) -> bool {
    u32::try_from(size)
        .ok()
        .and_then(|s| amber_format::Superblock::for_device(s).ok())
        .is_some_and(|sb| amber_ckpt::layout::Layout::new(sb.kernel_area).is_ok())
}

/// Checks that an NVM image of `size` bytes can be this machine's NVM and Amber's.
pub fn check_nvm_size(size: u64) -> Result<(), NvmSizeError> {
    let min = (12..=30)
        .map(|b| 1u64 << b)
        .find(|&s| kernel_takes(s))
        .unwrap_or(MAX_NVM_SIZE);
    if size < min {
        return Err(NvmSizeError::TooSmall { size, min });
    }
    if size > MAX_NVM_SIZE {
        return Err(NvmSizeError::TooLarge { size });
    }
    if !size.is_power_of_two() {
        return Err(NvmSizeError::NotPowerOfTwo { size });
    }
    Ok(())
}

/// QEMU is not installed.
#[derive(Debug)]
pub struct QemuMissing;

impl fmt::Display for QemuMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{QEMU} was not found on PATH: `cargo xtask run` and `cargo xtask test` install it \
             when run as root; otherwise install it with `apt-get install {QEMU_PACKAGE}` \
             (Debian/Ubuntu package {QEMU_PACKAGE})"
        )
    }
}

impl std::error::Error for QemuMissing {}

/// Finds `qemu-system-riscv32` on `PATH`.
pub fn find_qemu() -> Result<PathBuf, QemuMissing> {
    on_path(QEMU).ok_or(QemuMissing)
}

/// Where `binary` is on `PATH`, if it is.
pub fn on_path(binary: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(binary))
        .find(|p| p.is_file())
}

/// Where the console goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Console {
    /// The terminal, with QEMU's monitor multiplexed (Ctrl-A X quits): for people.
    Terminal,
    /// Plain stdin/stdout, no monitor: for programs that drive the console.
    Stdio,
}

/// How the kernel reaches the NVM: memory-mapped (byte-addressable NVM: MRAM, Optane;
/// the default) or as one SPI FRAM through the FRAM protocol driver, as the ESP32-C3
/// does (the kernel's boot option `amber.nvm-bus=spi`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NvmBus {
    #[default]
    Mmio,
    Spi,
}

/// The environment variable naming the bus of machines that do not choose one
/// (`cargo xtask test --nvm-bus`).
pub const NVM_BUS_VAR: &str = "AMBER_NVM_BUS";

impl NvmBus {
    /// The bus `AMBER_NVM_BUS` names (`mmio` when unset).
    pub fn from_env() -> Result<NvmBus, String> {
        match std::env::var(NVM_BUS_VAR) {
            Ok(name) => NvmBus::from_name(&name).map_err(|e| format!("{NVM_BUS_VAR}: {e}")),
            Err(_) => Ok(NvmBus::Mmio),
        }
    }

    /// The bus named `mmio` or `spi`.
    pub fn from_name(name: &str) -> Result<NvmBus, String> {
        match name {
            "mmio" => Ok(NvmBus::Mmio),
            "spi" => Ok(NvmBus::Spi),
            _ => Err(format!("the NVM bus is `mmio` or `spi`, not `{name}`")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NvmBus::Mmio => "mmio",
            NvmBus::Spi => "spi",
        }
    }
}

/// One QEMU `virt` machine running Amber.
#[derive(Clone, Debug)]
pub struct Machine {
    pub kernel: PathBuf,
    /// The NVM image file and its size; `None` boots without an NVM device.
    pub nvm: Option<(PathBuf, u64)>,
    /// Kernel command line (`amber.*` options).
    pub bootargs: String,
    /// Count instructions (`-icount shift=0,sleep=off`): guest time becomes a function
    /// of retired instructions, so runs and measurements repeat exactly. The kernel
    /// is told by the boot option `amber.icount`.
    pub icount: bool,
    /// The NVM's bus; `spi` adds the boot option `amber.nvm-bus=spi`.
    pub nvm_bus: NvmBus,
    pub console: Console,
    /// Start halted, with QEMU's gdb stub on this TCP port (`-gdb tcp::PORT -S`):
    /// nothing runs until a debugger connects and continues.
    pub gdb: Option<u16>,
}

impl Machine {
    pub fn new(kernel: impl Into<PathBuf>) -> Self {
        Machine {
            kernel: kernel.into(),
            nvm: None,
            bootargs: String::new(),
            icount: false,
            nvm_bus: NvmBus::Mmio,
            console: Console::Stdio,
            gdb: None,
        }
    }

    pub fn nvm(mut self, image: impl Into<PathBuf>, size: u64) -> Self {
        self.nvm = Some((image.into(), size));
        self
    }

    pub fn bootargs(mut self, args: &str) -> Self {
        self.bootargs = args.to_owned();
        self
    }

    /// The arguments after the binary name.
    pub fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = [
            "-machine",
            "virt",
            "-cpu",
            "rv32,a=false,f=false,d=false,h=false",
            "-smp",
            "1",
            "-m",
            "128M",
            "-bios",
            "none",
            "-no-reboot",
        ]
        .map(String::from)
        .into();
        match self.console {
            Console::Terminal => a.push("-nographic".into()),
            Console::Stdio => a.extend(
                ["-display", "none", "-monitor", "none", "-serial", "stdio"].map(String::from),
            ),
        }
        a.push("-kernel".into());
        a.push(self.kernel.display().to_string());
        let cmdline = self.kernel_command_line();
        if !cmdline.is_empty() {
            a.push("-append".into());
            a.push(cmdline);
        }
        if let Some((image, size)) = &self.nvm {
            a.push("-object".into());
            a.push(format!(
                "memory-backend-file,id=nvm,mem-path={},size={size},share=on",
                image.display()
            ));
            a.push("-device".into());
            a.push("ivshmem-plain,memdev=nvm".into());
        }
        if self.icount {
            a.push("-icount".into());
            a.push("shift=0,sleep=off".into());
        }
        if let Some(port) = self.gdb {
            a.push("-gdb".into());
            a.push(format!("tcp::{port}"));
            a.push("-S".into());
        }
        a
    }

    /// The kernel's command line: the boot options, `amber.icount` under `-icount`,
    /// so that the kernel knows its instruction counter is exact, and the NVM bus
    /// where it is not the default.
    pub fn kernel_command_line(&self) -> String {
        let mut words: Vec<&str> = self.bootargs.split_ascii_whitespace().collect();
        if self.icount {
            words.push("amber.icount");
        }
        if self.nvm_bus == NvmBus::Spi {
            words.push("amber.nvm-bus=spi");
        }
        words.join(" ")
    }

    /// The command, with the binary found on `PATH`.
    pub fn command(&self) -> Result<Command, QemuMissing> {
        let mut c = Command::new(find_qemu()?);
        c.args(self.args());
        Ok(c)
    }
}

/// Creates a zero-filled NVM image of `size` bytes if `path` does not exist (a blank
/// device, which the kernel formats on first boot). An existing file is left as is.
pub fn ensure_nvm_image(path: &Path, size: u64) -> std::io::Result<bool> {
    if path.exists() {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::File::create(path)?.set_len(size)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_is_rv32imc_without_firmware_and_the_nvm_is_shared_with_the_file() {
        let args = Machine::new("k.elf")
            .nvm("/tmp/n.img", 4096)
            .args()
            .join(" ");
        assert!(
            args.contains("-cpu rv32,a=false,f=false,d=false,h=false"),
            "{args}"
        );
        assert!(args.contains("-bios none"), "{args}");
        assert!(
            args.contains("mem-path=/tmp/n.img,size=4096,share=on"),
            "without share=on nothing persists: {args}"
        );
        assert!(args.contains("ivshmem-plain,memdev=nvm"), "{args}");
    }

    #[test]
    fn nvm_sizes_the_machine_does_not_take_are_refused_in_words() {
        assert_eq!(check_nvm_size(DEFAULT_NVM_SIZE), Ok(()));
        let e = check_nvm_size((4 << 20) - 4096).unwrap_err();
        assert_eq!(e, NvmSizeError::NotPowerOfTwo { size: 4190208 });
        assert_eq!(
            e.to_string(),
            "the NVM image is 4190208 bytes, but QEMU's ivshmem-plain device needs a power of \
             two (it aborts otherwise): 2097152 or 4194304 bytes"
        );
        // Off by one either way: QEMU's "backing store size does not match" (exit 1).
        for size in [(4 << 20) - 1, (4 << 20) + 1] {
            assert!(matches!(
                check_nvm_size(size),
                Err(NvmSizeError::NotPowerOfTwo { .. })
            ));
        }
        let e = check_nvm_size(8192).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the NVM image is 8192 bytes, too small for Amber's NVM format (at least 16384 bytes)"
        );
        assert_eq!(check_nvm_size(16384), Ok(()));
        assert!(matches!(
            check_nvm_size(2 << 30),
            Err(NvmSizeError::TooLarge { .. })
        ));
        assert!(matches!(
            check_nvm_size(0),
            Err(NvmSizeError::TooSmall { .. })
        ));
    }

    #[test]
    fn the_kernel_is_told_exactly_when_instructions_are_counted() {
        let mut m = Machine::new("k.elf").bootargs("amber.log=debug");
        assert_eq!(m.kernel_command_line(), "amber.log=debug");
        assert!(!m.args().join(" ").contains("icount"));
        m.icount = true;
        let args = m.args().join(" ");
        assert!(args.contains("-icount shift=0,sleep=off"), "{args}");
        assert!(
            args.contains("-append amber.log=debug amber.icount"),
            "{args}"
        );
        assert_eq!(
            Machine::new("k.elf").kernel_command_line(),
            "",
            "no options, no -append"
        );
    }

    #[test]
    fn the_spi_bus_is_a_boot_option_and_mmio_the_default() {
        let mut m = Machine::new("k.elf");
        assert_eq!(m.kernel_command_line(), "");
        m.nvm_bus = NvmBus::from_name("spi").unwrap();
        assert_eq!(m.kernel_command_line(), "amber.nvm-bus=spi");
        assert_eq!(NvmBus::from_name("mmio"), Ok(NvmBus::Mmio));
        assert!(NvmBus::from_name("i2c").is_err());
    }

    #[test]
    fn a_gdb_machine_starts_halted_behind_its_stub() {
        let mut m = Machine::new("k.elf");
        assert!(!m.args().contains(&"-S".to_owned()));
        m.gdb = Some(4321);
        let args = m.args().join(" ");
        assert!(args.ends_with("-gdb tcp::4321 -S"), "{args}");
    }

    #[test]
    fn an_existing_image_is_never_replaced() {
        let dir = std::env::temp_dir().join(format!("amber-qemu-test-{}", std::process::id()));
        let img = dir.join("nvm.img");
        assert!(ensure_nvm_image(&img, 8192).unwrap());
        std::fs::write(&img, b"keep").unwrap();
        assert!(!ensure_nvm_image(&img, 8192).unwrap());
        assert_eq!(std::fs::read(&img).unwrap(), b"keep");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
