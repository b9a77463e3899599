//! The bench app's figures as `cargo xtask bench` reads them: every figure line must
//! carry its number ("N instructions"), so a benchmark that could not measure fails
//! the bench instead of printing nothing quietly. It reads and reports; it must never
//! judge a figure against a target.

/// The number a figure line carries: the integer right before " instructions".
pub fn figure(line: &str) -> Option<u64> {
    let (before, _) = line.split_once(" instructions")?;
    before.rsplit(' ').next()?.parse().ok()
}

/// Fails naming the first line that carries no figure.
pub fn require_figures(lines: &[String]) -> Result<(), String> {
    match lines.iter().find(|l| figure(l).is_none()) {
        Some(l) => Err(format!("a benchmark printed no figure: {}", l.trim_end())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_is_the_number_before_instructions() {
        assert_eq!(
            figure("[bench] bench: null syscall 462 instructions (mean of 1000)"),
            Some(462)
        );
        assert_eq!(
            figure("[bench] bench: IPC round trip with 64 B each way 3100 instructions (…)"),
            Some(3100)
        );
    }

    #[test]
    fn a_line_without_a_figure_fails_the_bench() {
        let lines = vec![
            "[bench] bench: null syscall 462 instructions (mean of 1000)".to_string(),
            "[bench] bench: IPC round trip with 64 B each way: not measured (the Call failed)"
                .to_string(),
        ];
        let e = require_figures(&lines).unwrap_err();
        assert!(e.contains("not measured (the Call failed)"), "{e}");
        assert!(require_figures(&lines[..1]).is_ok());
    }
}
