//! Build-time settings of a task: decimal numbers an app description sets through a
//! task's `env` (read with `option_env!`), and where the memory its capabilities grant
//! lies ([`memory!`], which `cargo xtask` sets), parsed at compile time. A bad value
//! stops the build with the reason; nothing here runs on the device.

/// `value` (the text of `option_env!(name)`) as a decimal `u32`, or `default` when the
/// variable is unset. Evaluated in a `const`, so that an empty value, a non-digit or a
/// number above `u32::MAX` is a compile error.
pub const fn build_setting(value: Option<&str>, default: u32) -> u32 {
    let Some(s) = value else {
        return default;
    };
    let b = s.as_bytes();
    assert!(!b.is_empty(), "a build setting (app `env`) is empty");
    let mut v: u32 = 0;
    let mut i = 0;
    while i < b.len() {
        assert!(
            b[i].is_ascii_digit(),
            "build settings (app `env`) must be decimal numbers"
        );
        v = match v.checked_mul(10) {
            Some(t) => match t.checked_add((b[i] - b'0') as u32) {
                Some(t) => t,
                None => panic!("a build setting (app `env`) is above u32::MAX"),
            },
            None => panic!("a build setting (app `env`) is above u32::MAX"),
        };
        i += 1;
    }
    v
}

/// A range of memory a capability of the task grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory {
    pub base: usize,
    pub len: usize,
}

impl Memory {
    /// The memory `cargo xtask` placed (`AMBER_MEM_<NAME>` and `_LEN`; see
    /// [`memory!`](crate::memory!)). On the device a missing one is a compile error: the app grants the
    /// task no such memory. On the host, where tasks only have to compile, it is empty.
    pub const fn placed(base: Option<&str>, len: Option<&str>) -> Memory {
        match (base, len) {
            (Some(base), Some(len)) => Memory {
                base: build_setting(Some(base), 0) as usize,
                len: build_setting(Some(len), 0) as usize,
            },
            _ if cfg!(target_os = "none") => {
                panic!("the app description grants this task no memory of that name")
            }
            _ => Memory { base: 0, len: 0 },
        }
    }
}

/// The memory that the capability the app description calls `$name` grants this task,
/// as a [`Memory`]: `memory!("SPI")` for a `heap` cap of memory `spi`, an `eternal` cap
/// of area `ring` is `memory!("RING")`, a named `mmio` cap its name (upper case, `-`
/// as `_`). `cargo xtask` places it and says where at build time; no task writes an
/// address.
#[macro_export]
macro_rules! memory {
    ($name:literal) => {
        $crate::Memory::placed(
            option_env!(concat!("AMBER_MEM_", $name)),
            option_env!(concat!("AMBER_MEM_", $name, "_LEN")),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_gives_the_default_and_digits_their_number() {
        assert_eq!(build_setting(None, 7), 7);
        assert_eq!(build_setting(Some("0"), 7), 0);
        assert_eq!(build_setting(Some("4294967295"), 7), u32::MAX);
        const AT_COMPILE_TIME: u32 = build_setting(Some("1024"), 0);
        assert_eq!(AT_COMPILE_TIME, 1024);
    }

    #[test]
    fn placed_memory_is_read_from_its_two_settings() {
        const SPI: Memory = Memory::placed(Some("2264924160"), Some("256"));
        assert_eq!(
            SPI,
            Memory {
                base: 0x8700_0000,
                len: 256
            }
        );
        assert_eq!(
            Memory::placed(None, None),
            Memory { base: 0, len: 0 },
            "on the host a task only has to compile"
        );
    }

    #[test]
    #[should_panic(expected = "decimal")]
    fn a_non_digit_is_refused() {
        build_setting(Some("1k"), 0);
    }

    #[test]
    #[should_panic(expected = "above u32::MAX")]
    fn a_number_too_large_is_refused() {
        build_setting(Some("4294967296"), 0);
    }

    #[test]
    #[should_panic(expected = "empty")]
    fn an_empty_value_is_refused() {
        build_setting(Some(""), 0);
    }
}
