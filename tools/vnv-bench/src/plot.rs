//! SVG drawing of the figures with plotters: line panels and grouped-bar panels.
//!
//! A figure is one SVG file of one or more panels side by side, each panel either
//! lines over a numeric x axis or bars grouped by category, so that it can be set
//! beside the paper's figure of the same number. This file must never change a value:
//! it draws what it is given, and a missing value is a gap, not a zero.

use plotters::prelude::{
    ChartBuilder, Circle, Color, DrawingArea, IntoDrawingArea, IntoFont, IntoLogRange, LineSeries,
    PathElement, Rectangle, SVGBackend, SeriesLabelPosition, BLACK, WHITE,
};
use plotters::style::RGBColor;
use std::path::Path;

/// Colours of the series, in order (colour-blind safe, Okabe-Ito).
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(0, 0, 0),
];

/// One named series of values; `None` is a gap.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// For lines: `(x, y)`; for bars: one value per category, x is ignored.
    pub points: Vec<(f64, Option<f64>)>,
}

/// How a panel is drawn.
#[derive(Clone, Debug)]
pub enum Kind {
    /// Lines over a numeric x axis, optionally with a logarithmic y axis.
    Lines { log_y: bool },
    /// Bars grouped by these categories (one bar per series in each group).
    Bars { categories: Vec<String> },
}

/// One panel of a figure.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Caption above the panel.
    pub title: String,
    /// X axis description.
    pub x_label: String,
    /// Y axis description.
    pub y_label: String,
    /// Lines or bars.
    pub kind: Kind,
    /// The data.
    pub series: Vec<Series>,
}

type Error = Box<dyn std::error::Error>;

fn y_max(panel: &Panel, headroom: f64) -> f64 {
    let m = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().filter_map(|p| p.1))
        .fold(0.0f64, f64::max);
    if m > 0.0 {
        m * headroom
    } else {
        1.0
    }
}

fn draw_lines<DB: plotters::prelude::DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    log_y: bool,
) -> Result<(), Error>
where
    DB::ErrorType: 'static,
{
    let xs = || {
        panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
    };
    let x0 = xs().fold(f64::INFINITY, f64::min);
    let x1 = xs().fold(f64::NEG_INFINITY, f64::max);
    let (x0, x1) = if x0 < x1 { (x0, x1) } else { (0.0, 1.0) };
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.title, ("sans-serif", 16).into_font())
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70);
    if log_y {
        let y_lo = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter_map(|p| p.1))
            .filter(|&y| y > 0.0)
            .fold(f64::INFINITY, f64::min);
        let y_lo = if y_lo.is_finite() { y_lo / 2.0 } else { 1.0 };
        let mut chart =
            builder.build_cartesian_2d(x0..x1, (y_lo..y_max(panel, 1.15) * 2.0).log_scale())?;
        series(&mut chart, panel, SeriesLabelPosition::LowerRight)?;
    } else {
        let mut chart = builder.build_cartesian_2d(x0..x1, 0.0..y_max(panel, 1.15))?;
        series(&mut chart, panel, SeriesLabelPosition::UpperLeft)?;
    }
    Ok(())
}

/// Draws the mesh, every series (lines and points, broken where values are missing)
/// and the legend on a chart with either y axis.
fn series<'a, DB, Y>(
    chart: &mut plotters::chart::ChartContext<
        'a,
        DB,
        plotters::coord::cartesian::Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    panel: &Panel,
    position: SeriesLabelPosition,
) -> Result<(), Error>
where
    DB: plotters::prelude::DrawingBackend + 'a,
    DB::ErrorType: 'static,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>
        + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .draw()?;
    for (i, s) in panel.series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        for run in runs(&s.points) {
            chart.draw_series(LineSeries::new(run.clone(), c.stroke_width(2)))?;
            chart.draw_series(run.into_iter().map(|p| Circle::new(p, 3, c.filled())))?;
        }
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
            .label(&s.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
    }
    legend(chart, position)
}

fn legend<'a, DB: plotters::prelude::DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut plotters::chart::ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), Error>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// The contiguous stretches of defined points (a `None` breaks the line).
fn runs(points: &[(f64, Option<f64>)]) -> Vec<Vec<(f64, f64)>> {
    let mut out = vec![Vec::new()];
    for &(x, y) in points {
        match y {
            Some(y) => out.last_mut().expect("never empty").push((x, y)),
            None => out.push(Vec::new()),
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

fn draw_bars<DB: plotters::prelude::DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    categories: &[String],
) -> Result<(), Error>
where
    DB::ErrorType: 'static,
{
    let n = categories.len() as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 16).into_font())
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..n - 0.5, 0.0..y_max(panel, 1.4))?;
    let label = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < categories.len() {
            categories[i as usize].clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(categories.len() * 2 + 1)
        .x_label_formatter(&label)
        .x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .draw()?;
    let k = panel.series.len().max(1) as f64;
    let w = 0.8 / k;
    for (si, s) in panel.series.iter().enumerate() {
        let c = PALETTE[si % PALETTE.len()];
        let bars = s.points.iter().enumerate().filter_map(|(ci, p)| {
            let y = p.1?;
            let left = ci as f64 - 0.4 + si as f64 * w;
            Some(Rectangle::new(
                [(left, 0.0), (left + w * 0.9, y)],
                c.filled(),
            ))
        });
        chart
            .draw_series(bars)?
            .label(&s.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    Ok(())
}

/// Draws `panels` side by side into an SVG at `path`.
pub fn render(path: &Path, panels: &[Panel]) -> Result<(), Error> {
    let width = 520 * panels.len().max(1) as u32;
    let root = SVGBackend::new(path, (width, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (area, panel) in areas.iter().zip(panels) {
        match &panel.kind {
            Kind::Lines { log_y } => draw_lines(area, panel, *log_y)?,
            Kind::Bars { categories } => draw_bars(area, panel, categories)?,
        }
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_splits_a_line_into_runs() {
        let r = runs(&[
            (1.0, Some(1.0)),
            (2.0, None),
            (3.0, Some(3.0)),
            (4.0, Some(4.0)),
        ]);
        assert_eq!(r, vec![vec![(1.0, 1.0)], vec![(3.0, 3.0), (4.0, 4.0)]]);
    }
}
