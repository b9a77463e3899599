//! A figure of the bench: one exact count (instructions retired, or bytes or words
//! written) that a benchmark guest printed under QEMU `-icount`, with the name it has
//! in the baseline and in the reports.
//!
//! Every figure here is a cost: lower is better, which is the direction the baseline
//! check judges. Figures that a host model computes (the key-value pricing, the
//! vNV-Heap model) are not figures of this kind; they stay text in the report. This
//! file must never hold a figure's value itself.

use std::fmt;

/// What a figure counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Instructions retired (`instret` under `-icount`).
    Instructions,
    /// Bytes written to or read from a device, or held in RAM.
    Bytes,
    /// 32-bit FRAM words written.
    Words,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Instructions => "instructions",
            Unit::Bytes => "bytes",
            Unit::Words => "words",
        }
    }
}

/// One exact figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// `part.subject.measure`, e.g. `syscall.null.mean`: dot-separated names of
    /// lower-case letters, digits and `-` (TOML bare keys); the first is the part that
    /// measures it.
    pub id: String,
    /// What it is, in words.
    pub label: String,
    pub value: f64,
    pub unit: Unit,
}

impl Figure {
    /// A figure named by `path` (each piece one id component). Fails on a piece that
    /// is not a name (a guest line that changed shape).
    pub fn new(
        path: &[&str],
        label: impl Into<String>,
        value: f64,
        unit: Unit,
    ) -> Result<Figure, String> {
        let id = path.join(".");
        if !path.iter().all(|p| is_name(p)) {
            return Err(format!(
                "`{id}` is not a figure id: each piece must be lower-case letters, digits and -"
            ));
        }
        Ok(Figure {
            id,
            label: label.into(),
            value,
            unit,
        })
    }

    /// The part that measures it (the id's first component).
    pub fn part(&self) -> &str {
        part_of(&self.id)
    }
}

/// The part of figure id `id`.
pub fn part_of(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

/// Whether `s` is one id component.
pub fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The id component for a name a guest prints ("10 objects + 17 KiB memory" ->
/// `10-objects-17-kib-memory`).
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// A value as the reports print it: whole numbers without a fraction, others with
/// the digits the guest gave (at most one decimal in practice).
pub struct Value(pub f64);

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.fract() == 0.0 && self.0.abs() < 1e15 {
            write!(f, "{}", self.0 as i64)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_names_become_id_components() {
        assert_eq!(slug("idle (nothing dirty)"), "idle-nothing-dirty");
        assert_eq!(
            slug("10 objects + 17 KiB memory"),
            "10-objects-17-kib-memory"
        );
        assert_eq!(slug("kv-lpht-spi"), "kv-lpht-spi");
        assert!(is_name(&slug(" odd -- name! ")));
        assert!(!is_name("a.b") && !is_name("") && !is_name("Upper"));
    }

    #[test]
    fn a_piece_that_is_not_a_name_is_refused() {
        let e = Figure::new(&["syscall", "null syscall"], "x", 1.0, Unit::Instructions);
        assert!(e.unwrap_err().contains("not a figure id"));
        assert!(Figure::new(&["checkpoint", ""], "x", 1.0, Unit::Bytes).is_err());
        let f = Figure::new(&["syscall", "null", "mean"], "x", 1.0, Unit::Instructions).unwrap();
        assert_eq!((f.id.as_str(), f.part()), ("syscall.null.mean", "syscall"));
    }

    #[test]
    fn values_print_whole_numbers_plainly() {
        assert_eq!(Value(132.0).to_string(), "132");
        assert_eq!(Value(699.4).to_string(), "699.4");
        assert_eq!(Value(0.0).to_string(), "0");
    }
}
