//! Build-time settings of a task: decimal numbers an app description sets through a
//! task's `env` (read with `option_env!`), parsed at compile time. A bad value stops
//! the build with the reason; nothing here runs on the device.

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
