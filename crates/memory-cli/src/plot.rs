//! `--plot FILE.svg`: the tokens sent per model call, one line per
//! pipeline, against the budget; `--plot-cost FILE.svg`: the cumulative
//! cost ([`cumulative_cost`]).
//!
//! Drawn with `plotters`' SVG backend and no font engine: text goes into the
//! SVG as `<text>` elements in a generic `sans-serif` family, which any SVG
//! viewer renders with its own fonts.

mod cost;

use std::path::Path;

use plotters::prelude::*;

pub use cost::cumulative_cost;

use crate::CliError;
use crate::report::{PipelineReport, Report, Row, mean};

/// Size of the picture, in pixels.
const SIZE: (u32, u32) = (1200, 700);

/// Line colours, one per pipeline in order (then again).
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
];

/// The budget line's colour.
const BUDGET: RGBColor = RGBColor(214, 39, 40);

/// Trajectory boundaries' colour.
const BOUNDARY: RGBColor = RGBColor(185, 185, 185);

/// Past this many calls, markers are drawn small.
const DENSE: usize = 200;

/// A budget more than this many times the largest context is drawn off the
/// chart (named in the legend) rather than squashing the lines flat.
const BUDGET_HEADROOM: usize = 3;

/// Draws `report` into the SVG file `path`: x is the model call's index
/// across the replay, y its `tokens_out`; one line per pipeline, the budget
/// as a dashed horizontal line, summarizer calls as triangles, cache breaks
/// as crosses, trajectory starts as light vertical lines, a legend, axis
/// labels and a title naming the input file.
///
/// # Errors
///
/// [`CliError::Plot`] when the file cannot be written.
///
/// ```
/// use memory_cli::report::{Report, Row, Totals};
/// let rows = vec![
///     Row { turn: 2, tokens_out: 40, ..Row::default() },
///     Row { turn: 4, tokens_out: 90, cache_break: true, ..Row::default() },
/// ];
/// let report = Report {
///     input: "session.json".into(), pipeline: "window".into(), counter: "chars".into(),
///     budget: 100, totals: Totals::of(&rows, &memory_core::Budget::tokens(100)), rows, ..Report::default()
/// };
/// let path = std::env::temp_dir().join(format!("memory-plot-doc-{}.svg", std::process::id()));
/// memory_cli::plot::tokens_per_call(&report, &path).unwrap();
/// let svg = std::fs::read_to_string(&path).unwrap();
/// assert!(svg.contains("window") && svg.contains("budget"));
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn tokens_per_call(report: &Report, path: &Path) -> Result<(), CliError> {
    written(path, draw(report, path))
}

/// The plot error for `path`, when drawing it failed.
fn written(path: &Path, drawn: Result<(), String>) -> Result<(), CliError> {
    drawn.map_err(|problem| CliError::Plot {
        file: path.display().to_string(),
        problem,
    })
}

/// The input's file name, for a title.
fn input_name(report: &Report) -> String {
    Path::new(&report.input).file_name().map_or_else(
        || report.input.clone(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The chart `draw` paints on: call index by tokens.
type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordusize, plotters::coord::types::RangedCoordusize>,
>;

fn draw(report: &Report, path: &Path) -> Result<(), String> {
    let sections = report.sections();
    let calls = sections.iter().map(|s| s.rows.len()).max().unwrap_or(0);
    let largest = sections
        .iter()
        .flat_map(|s| s.rows.iter().map(|r| r.tokens_out))
        .max()
        .unwrap_or(0);
    let budget_drawn = report.budget <= largest.max(1) * BUDGET_HEADROOM;
    let top = if budget_drawn {
        largest.max(report.budget)
    } else {
        largest
    };
    // Room above the lines for the legend.
    let y_max = (top.max(1) as f64 * 1.35).ceil() as usize;
    let x_max = calls.max(2) - 1;
    let title = format!(
        "Tokens sent per model call: {} (budget {}, counter {})",
        input_name(report),
        report.budget,
        report.counter
    );

    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(text)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(20)
        .x_label_area_size(55)
        .y_label_area_size(80)
        .build_cartesian_2d(0..x_max, 0..y_max)
        .map_err(text)?;
    chart
        .configure_mesh()
        .x_desc("model call (index across the replay)")
        .y_desc("tokens sent (tokens_out)")
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .max_light_lines(1)
        .light_line_style(RGBColor(242, 242, 242))
        .bold_line_style(RGBColor(220, 220, 220))
        .draw()
        .map_err(text)?;

    let rows = sections.first().map_or(&[][..], |s| &s.rows[..]);
    trajectory_starts(&mut chart, rows, top)?;
    budget_line(&mut chart, report.budget, x_max, budget_drawn)?;
    // Markers shrink where calls crowd together, so the lines stay visible.
    let (marker, stroke) = if calls <= DENSE { (6, 2) } else { (3, 1) };
    for (i, section) in sections.iter().enumerate() {
        pipeline_line(&mut chart, i, section, marker, stroke)?;
    }
    marker_legend(&mut chart)?;
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(text)
}

/// Draws the series' labels at `position`, in the style every plot shares.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(position)
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .draw()
        .map_err(text)
}

/// A light vertical line where each trajectory after the first starts.
fn trajectory_starts(chart: &mut Chart<'_, '_>, rows: &[Row], top: usize) -> Result<(), String> {
    let starts: Vec<usize> = rows
        .windows(2)
        .enumerate()
        .filter(|(_, pair)| pair[0].trajectory != pair[1].trajectory)
        .map(|(i, _)| i + 1)
        .collect();
    if starts.is_empty() {
        return Ok(());
    }
    let boundary = BOUNDARY.stroke_width(1);
    chart
        .draw_series(
            starts
                .iter()
                .map(|&x| PathElement::new(vec![(x, 0), (x, top)], boundary)),
        )
        .map_err(text)?
        .label(format!(
            "start of a trajectory ({} in all)",
            starts.len() + 1
        ))
        .legend(move |(x, y)| PathElement::new(vec![(x + 8, y - 6), (x + 8, y + 6)], boundary));
    Ok(())
}

/// The budget as a dashed line, or only named in the legend when it is far
/// above every context.
fn budget_line(
    chart: &mut Chart<'_, '_>,
    budget: usize,
    x_max: usize,
    drawn: bool,
) -> Result<(), String> {
    let style = BUDGET.stroke_width(2);
    let (series, label) = if drawn {
        (
            chart.draw_series(DashedLineSeries::new(
                vec![(0, budget), (x_max, budget)],
                10,
                6,
                style,
            )),
            format!("budget ({budget} tokens)"),
        )
    } else {
        (
            chart.draw_series(std::iter::empty::<PathElement<(usize, usize)>>()),
            format!("budget ({budget} tokens, far above every context)"),
        )
    };
    series
        .map_err(text)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    Ok(())
}

/// One pipeline's line, with its summarizer calls as triangles and its
/// cache breaks as crosses.
fn pipeline_line(
    chart: &mut Chart<'_, '_>,
    i: usize,
    section: &PipelineReport,
    marker: i32,
    stroke: u32,
) -> Result<(), String> {
    let colour = COLOURS[i % COLOURS.len()];
    let points = section
        .rows
        .iter()
        .enumerate()
        .map(|(x, r)| (x, r.tokens_out));
    // The first line solid and wide, the others dashed on top of it, so
    // pipelines that agree still show each other.
    let anno = if i == 0 {
        chart.draw_series(LineSeries::new(points, colour.stroke_width(3)))
    } else {
        let dash = 14 - 3 * (i as i32 % 4);
        chart.draw_series(DashedLineSeries::new(
            points,
            dash,
            6,
            colour.stroke_width(2),
        ))
    };
    let legend_style = colour.stroke_width(3);
    anno.map_err(text)?
        .label(line_label(section))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], legend_style));
    let rows = section.rows.iter().enumerate();
    chart
        .draw_series(
            rows.clone()
                .filter(|(_, r)| r.summarizer_calls > 0)
                .map(|(x, r)| TriangleMarker::new((x, r.tokens_out), marker + 1, colour.filled())),
        )
        .map_err(text)?;
    chart
        .draw_series(
            rows.filter(|(_, r)| r.cache_break).map(|(x, r)| {
                Cross::new((x, r.tokens_out), marker - 1, colour.stroke_width(stroke))
            }),
        )
        .map_err(text)?;
    Ok(())
}

/// Legend entries for the two kinds of marker.
fn marker_legend(chart: &mut Chart<'_, '_>) -> Result<(), String> {
    chart
        .draw_series(std::iter::empty::<TriangleMarker<(usize, usize), i32>>())
        .map_err(text)?
        .label("summarizer call")
        .legend(|(x, y)| TriangleMarker::new((x + 10, y), 7, BLACK.filled()));
    chart
        .draw_series(std::iter::empty::<Cross<(usize, usize), i32>>())
        .map_err(text)?
        .label("cache break (the previous context is not a prefix)")
        .legend(|(x, y)| Cross::new((x + 10, y), 5, BLACK.stroke_width(2)));
    Ok(())
}

/// `window: mean 812 tokens, 3 cache breaks, 0 summarizer calls`.
fn line_label(section: &PipelineReport) -> String {
    let t = &section.totals;
    format!(
        "{}: mean {} tokens, {} cache breaks, {} summarizer calls",
        section.pipeline,
        mean(t.tokens_out, t.calls),
        t.cache_breaks,
        t.summarizer_calls
    )
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Row, Totals};

    /// Two pipelines over two trajectories: one that summarizes now and
    /// then, one that slides a window.
    fn report() -> Report {
        let section = |pipeline: &str, summarize: bool| {
            let rows: Vec<Row> = (0..40)
                .map(|i| {
                    let grown = 300 + 90 * (i % 20);
                    let over = grown > 1500;
                    Row {
                        trajectory: i / 20,
                        turn: i,
                        tokens_out: match (summarize, over) {
                            (true, true) => 500 + 40 * (i % 5),
                            (false, true) => 1450 + (i * 37) % 50,
                            _ => grown,
                        },
                        summarizer_calls: u64::from(summarize && over && i % 5 == 0),
                        cache_break: over && (!summarize || i % 5 == 0),
                        valid: true,
                        fits: true,
                        ..Row::default()
                    }
                })
                .collect();
            PipelineReport {
                pipeline: pipeline.into(),
                totals: Totals::of(&rows, &memory_core::Budget::tokens(1500)),
                rows,
            }
        };
        let base = Report {
            input: "some/dir/session.json".into(),
            counter: "chars".into(),
            budget: 1500,
            ..Report::default()
        };
        Report::with_sections(
            base,
            vec![section("summarize", true), section("window", false)],
        )
    }

    #[test]
    fn the_svg_names_every_pipeline_the_budget_and_the_markers() {
        let dir = std::env::temp_dir().join(format!("memory-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plot.svg");
        tokens_per_call(&report(), &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for text in [
            "session.json",
            "summarize: mean",
            "window: mean",
            "budget (1500 tokens)",
            "summarizer call",
            "cache break",
            "start of a trajectory",
            "model call",
            "tokens sent",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert!(svg.contains("<polygon"), "summarizer markers are triangles");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_path_is_an_error_not_a_panic() {
        let path = std::env::temp_dir().join("no-such-dir-for-memory-plots/x/plot.svg");
        let e = tokens_per_call(&report(), &path).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("cannot write the plot"), "{e}");
    }
}
