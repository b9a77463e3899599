//! The figures, one file each, named after the paper's figure they stand beside.
//!
//! A figure runs its systems, returns its numbers as a [`Table`] and its drawing as
//! plot panels, and may state target checks. Figures depend on the baselines, on
//! `vnv.rs` (the only door to the heap) and on the cost model; they must never print
//! or write files themselves, `main.rs` does that.

pub mod fig2_reference;
pub mod fig3_queue;
pub mod fig4_persist;
pub mod fig5_kv;
pub mod traffic;

use crate::cost::{Cost, StorageModel};
use crate::plot::Panel;
use crate::table::Table;
use std::cell::Cell;

thread_local! {
    static MODEL: Cell<StorageModel> = const { Cell::new(StorageModel::WORD) };
}

/// Chooses the storage model the figures run next use (`main` runs them under each
/// model it was asked for).
pub fn set_model(model: StorageModel) {
    MODEL.with(|m| m.set(model));
}

/// The storage model every figure uses now (see `cost.rs`): the paper's word model
/// unless `main` chose another.
pub fn model() -> StorageModel {
    MODEL.with(Cell::get)
}

/// Microseconds of `cost` under [`model`].
pub fn us(cost: &Cost) -> f64 {
    cost.time_us(&model())
}

/// One output figure: `<name>.csv` and `<name>.svg`.
pub struct Figure {
    /// File stem, e.g. `fig2_reference`.
    pub name: &'static str,
    /// One line saying what the figure shows.
    pub title: String,
    /// The numbers.
    pub table: Table,
    /// The drawing.
    pub panels: Vec<Panel>,
}

/// A target of the issue, checked against the numbers.
pub struct Check {
    /// What is promised.
    pub target: String,
    /// Whether it holds.
    pub met: bool,
    /// The numbers that decide it, in words.
    pub detail: String,
}

/// What one benchmark produces.
pub struct Output {
    /// Its figures.
    pub figures: Vec<Figure>,
    /// Its target checks (possibly none).
    pub checks: Vec<Check>,
}
