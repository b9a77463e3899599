//! The throughput figure: bars grouped by workload, one per store, on a logarithmic
//! axis (the stores differ by orders of magnitude). It draws what it is given; a
//! missing value is a gap.

use plotters::prelude::{
    ChartBuilder, Color, IntoDrawingArea, IntoFont, IntoLogRange, Rectangle, SVGBackend,
    SeriesLabelPosition, BLACK, WHITE,
};
use plotters::style::RGBColor;
use std::path::Path;

/// Okabe-Ito, colour-blind safe.
const PALETTE: [RGBColor; 5] = [
    RGBColor(0, 114, 178),
    RGBColor(86, 180, 233),
    RGBColor(0, 158, 115),
    RGBColor(230, 159, 0),
    RGBColor(213, 94, 0),
];

/// Draws `series` (name, one value per category) as grouped bars into `path`.
pub fn bars(
    path: &Path,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1200, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let values = series.iter().flat_map(|s| s.1.iter().flatten().copied());
    let (lo, hi) = values.fold((f64::MAX, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = (10f64.powf(lo.log10().floor()), hi * 3.0);
    let n = categories.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Key-value stores: modelled throughput (160 MHz RV32IMC + device time)",
            ("sans-serif", 20).into_font(),
        )
        .margin(12)
        .x_label_area_size(70)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..n, (lo..hi).log_scale())?;
    let labels = categories.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(categories.len() * 2 + 1)
        .x_label_formatter(&|x: &f64| {
            let i = (x - 0.5).round();
            if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("operations per second")
        .draw()?;
    let width = 0.8 / series.len() as f64;
    for (k, (name, vals)) in series.iter().enumerate() {
        let c = PALETTE[k % PALETTE.len()];
        chart
            .draw_series(vals.iter().enumerate().filter_map(|(i, v)| {
                let x0 = i as f64 + 0.1 + k as f64 * width;
                v.map(|v| Rectangle::new([(x0, lo), (x0 + width * 0.9, v)], c.filled()))
            }))?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
