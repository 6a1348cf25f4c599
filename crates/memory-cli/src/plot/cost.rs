//! `--plot-cost FILE.svg`: what a session has cost so far, call by call,
//! one line per pipeline.

use std::path::Path;

use plotters::prelude::*;

use super::{COLOURS, legend, text};
use crate::CliError;
use crate::report::{PipelineReport, Report};

/// Draws the cumulative `cost` of each pipeline's calls into the SVG file
/// `path`: x is the model call's index across the replay, y the sum of the
/// costs up to it (in fresh input tokens, under the report's pricing).
///
/// # Errors
///
/// [`CliError::Plot`] when the file cannot be written.
///
/// ```
/// use memory_cli::report::{Report, Row, Totals};
/// let rows = vec![
///     Row { tokens_out: 40, cost: 50.0, ..Row::default() },
///     Row { tokens_out: 90, cost: 70.0, ..Row::default() },
/// ];
/// let report = Report {
///     input: "session.json".into(), pipeline: "window".into(), pricing: "anthropic".into(),
///     budget: 100, totals: Totals::of(&rows, &memory_core::Budget::tokens(100)), rows, ..Report::default()
/// };
/// let path = std::env::temp_dir().join(format!("memory-cost-doc-{}.svg", std::process::id()));
/// memory_cli::plot::cumulative_cost(&report, &path).unwrap();
/// let svg = std::fs::read_to_string(&path).unwrap();
/// assert!(svg.contains("window: 120 in all"));
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn cumulative_cost(report: &Report, path: &Path) -> Result<(), CliError> {
    super::written(path, draw(report, path))
}

/// Each pipeline's label and its cost so far, call by call.
fn cumulative(sections: &[PipelineReport]) -> Vec<(String, Vec<(usize, f64)>)> {
    sections
        .iter()
        .map(|s| {
            let mut sum = 0.0;
            let points = s
                .rows
                .iter()
                .enumerate()
                .map(|(x, r)| {
                    sum += r.cost;
                    (x, sum)
                })
                .collect();
            (
                format!("{}: {:.0} in all", s.pipeline, s.totals.cost),
                points,
            )
        })
        .collect()
}

fn draw(report: &Report, path: &Path) -> Result<(), String> {
    let sections = report.sections();
    let lines = cumulative(&sections);
    let calls = sections.iter().map(|s| s.rows.len()).max().unwrap_or(0);
    let top = lines
        .iter()
        .filter_map(|(_, points)| points.last().map(|p| p.1))
        .fold(1.0, f64::max);
    let root = SVGBackend::new(path, super::SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(text)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Cumulative cost: {} (budget {}, {})",
                super::input_name(report),
                report.budget,
                report.pricing
            ),
            ("sans-serif", 24),
        )
        .margin(20)
        .x_label_area_size(55)
        .y_label_area_size(90)
        .build_cartesian_2d(0..calls.max(2) - 1, 0.0..top * 1.15)
        .map_err(text)?;
    chart
        .configure_mesh()
        .x_desc("model call (index across the replay)")
        .y_desc("cost so far (fresh input tokens)")
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .max_light_lines(1)
        .draw()
        .map_err(text)?;
    for (i, (label, points)) in lines.into_iter().enumerate() {
        let style = COLOURS[i % COLOURS.len()].stroke_width(3);
        chart
            .draw_series(LineSeries::new(points, style))
            .map_err(text)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(text)
}
