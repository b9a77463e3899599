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
use std::sync::OnceLock;

static MODEL: OnceLock<StorageModel> = OnceLock::new();

/// Chooses the storage model for the whole run; only the first call counts.
pub fn set_model(model: StorageModel) {
    let _ = MODEL.set(model);
}

/// The storage model every figure uses: the library's cost model unless `main` chose
/// the paper fit (see `cost.rs` and `vnv.rs`).
pub fn model() -> StorageModel {
    *MODEL.get_or_init(crate::vnv::library_storage_model)
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
