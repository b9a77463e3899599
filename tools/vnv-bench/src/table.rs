//! A figure's numbers as a table: printed aligned to stdout and written as CSV.
//!
//! Cells are already-formatted strings so that the CSV and the printout show the same
//! digits. This file must never compute a result; it only lays out what a figure
//! produced.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// Rows of named columns.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Column names, the CSV header.
    pub header: Vec<String>,
    /// One entry per column in each row; an empty string is a missing value.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; it must have one cell per column.
    pub fn push(&mut self, row: Vec<String>) {
        assert_eq!(
            row.len(),
            self.header.len(),
            "row width must match the header"
        );
        self.rows.push(row);
    }

    /// The table as aligned text, one line per row.
    pub fn to_text(&self) -> String {
        let mut width: Vec<usize> = self.header.iter().map(String::len).collect();
        for row in &self.rows {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let cells: Vec<String> = row
                .iter()
                .zip(&width)
                .map(|(c, w)| format!("{c:>w$}"))
                .collect();
            let _ = writeln!(out, "  {}", cells.join("  "));
        }
        out
    }

    /// The table as CSV (no cell holds a comma or a quote, which `push` callers keep).
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let _ = writeln!(out, "{}", row.join(","));
        }
        out
    }

    /// Writes [`Table::to_csv`] to `path`.
    pub fn write_csv(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.to_csv())
    }
}

/// A number with `digits` decimals, as a cell.
pub fn num(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_has_a_header_line_and_one_line_per_row() {
        let mut t = Table::new(&["a", "b"]);
        t.push(vec!["1".into(), String::new()]);
        assert_eq!(t.to_csv(), "a,b\n1,\n");
        assert!(t.to_text().contains("  a  b"));
    }
}
