//! SVG figures, drawn with plotters' SVG backend: the contrasts as dots with
//! interval whiskers (the paper's Figure 2a), per-configuration effects against the
//! truncation rate (Figures 6–7), the truncated share by menu size, and the frontier's
//! episode paths against their two limits (Figure 9).
//!
//! Owns: chart geometry, colours and the SVG text of each figure. The data arrive
//! already selected and labelled by the section builders.
//!
//! Invariants: an SVG is a pure function of its input (plotters writes integer pixel
//! coordinates and fixed attribute order), so figures are byte-identical across runs.
//! Text stays text: without plotters' `ttf` feature the SVG backend writes `<text>`
//! elements with a generic `font-family` and lets the viewer pick the font, so no
//! font file is read and nothing depends on the fonts installed at render time.
//! Axis ranges are always finite and non-empty (plotters asserts on NaN ranges), and
//! a point or whisker with a non-finite coordinate is left out, never drawn at a
//! made-up place.
//!
//! Each marked element has a colour of its own, which is how the tests (and a reader
//! of the SVG) count points: dots are `<circle>`s filled with their series colour,
//! whiskers and data lines are `<polyline>`s stroked with it; legends use `<rect>`
//! swatches, so they add no circle. The paper's published points are another shape in
//! a colour no series takes: a black diamond (a `<polygon>` filled with
//! [`PAPER_COLOUR`]), its interval a thin black line, under one legend entry "paper"
//! whose swatch is a diamond too — so a reader never takes a quoted value for one of
//! this study's.
//!
//! Never: reads tables, computes statistics, or embeds fonts or raster images.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::format;
use super::ReportError;

/// The Okabe–Ito palette (distinguishable with the common colour-vision deficiencies),
/// in the order series take their colours.
pub(crate) const SERIES_COLOURS: [RGBColor; 5] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xE6, 0x9F, 0x00),
];
/// The paper's published points: near-black (no series, axis or text takes it, so
/// the tests can count them), drawn as diamonds.
pub(crate) const PAPER_COLOUR: RGBColor = RGBColor(0x11, 0x11, 0x11);
/// Half the diagonal of a paper diamond, pixels.
const DIAMOND: i32 = 6;
/// The legend entry of the paper's points.
pub(crate) const PAPER_LEGEND: &str = "paper";
/// The reference line at zero.
const ZERO_LINE: RGBColor = RGBColor(0x80, 0x80, 0x80);
/// The minor grid: one faint line between labelled ones.
const LIGHT_GRID: RGBColor = RGBColor(0xF2, 0xF2, 0xF2);
/// Lines of the individual configurations behind the pooled line.
const BACKGROUND_LINE: RGBColor = RGBColor(0xB4, 0xB4, 0xB4);
/// Generic family: the viewer's sans-serif font.
const FONT: &str = "sans-serif";
/// Pixels above the plot for the title.
const HEADER: u32 = 44;
/// Pixels above the plot for the title and a legend row.
const HEADER_WITH_LEGEND: u32 = 72;
/// The middle of the legend row.
const LEGEND_Y: i32 = 50;

/// A paper point at `$at` (chart coordinates): a diamond, one filled `<polygon>` in
/// the SVG. A macro because the composed element's type cannot be named outside
/// plotters.
macro_rules! diamond {
    ($at:expr) => {
        EmptyElement::at($at)
            + Polygon::new(
                vec![(0, -DIAMOND), (DIAMOND, 0), (0, DIAMOND), (-DIAMOND, 0)],
                PAPER_COLOUR.filled(),
            )
    };
}

/// The SVG colour attribute plotters writes for `c` (`#0072B2`).
#[cfg(test)]
pub(crate) fn svg_colour(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// An estimate with its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Whisker {
    /// The dot.
    pub estimate: f64,
    /// Left end.
    pub low: f64,
    /// Right end.
    pub high: f64,
}

/// One series of a dot-and-whisker chart: a value per row (or none).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WhiskerSeries {
    /// Legend text.
    pub name: String,
    /// One entry per row of the chart.
    pub values: Vec<Option<Whisker>>,
}

/// Dots with horizontal whiskers, one row per label, series stacked within a row
/// (the first on top, drawn thicker: the primary analysis), then the paper's points
/// (`paper`, each a list with one entry per row, like a series' values) below them as
/// diamonds, under one legend entry "paper" when any is drawn.
pub(crate) fn dot_whisker(
    title: &str,
    rows: &[String],
    series: &[WhiskerSeries],
    paper: &[Vec<Option<Whisker>>],
    x_desc: &str,
) -> Result<String, ReportError> {
    // A paper list with no value adds no slot, so a figure without quotes is drawn
    // as before.
    let paper: Vec<&Vec<Option<Whisker>>> = paper
        .iter()
        .filter(|p| p.iter().any(Option::is_some))
        .collect();
    let n_rows = rows.len().max(1);
    let n_series = (series.len() + paper.len()).max(1);
    let row_height = 14 * n_series as u32 + 18;
    let size = (840, HEADER_WITH_LEGEND + 60 + row_height * n_rows as u32);
    let values = series
        .iter()
        .flat_map(|s| s.values.iter())
        .chain(paper.iter().flat_map(|p| p.iter()))
        .flatten()
        .flat_map(|w| [w.estimate, w.low, w.high]);
    let (x0, x1) = padded_range(values, 0.0);
    render(title, size, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(HEADER_WITH_LEGEND)
            .margin_right(24)
            .margin_left(12)
            .margin_bottom(8)
            .x_label_area_size(50)
            .y_label_area_size(230)
            .build_cartesian_2d(x0..x1, -0.5..(n_rows as f64 - 0.5))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(LIGHT_GRID)
            .max_light_lines(1)
            .y_labels(0)
            .x_labels(10)
            .x_label_formatter(&|x| axis_number(*x, x1 - x0))
            .x_desc(x_desc)
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .draw()?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, -0.5), (0.0, n_rows as f64 - 0.5)],
            ZERO_LINE.stroke_width(1),
        )))?;
        // Row i is drawn at y = n − 1 − i so the first row is on top; series k of m
        // is offset within the row, the first highest.
        let offset = |k: usize| {
            if n_series == 1 {
                0.0
            } else {
                0.28 - 0.56 * k as f64 / (n_series - 1) as f64
            }
        };
        for (k, s) in series.iter().enumerate() {
            let colour = SERIES_COLOURS[k % SERIES_COLOURS.len()];
            let (width, radius) = if k == 0 { (3, 5) } else { (2, 4) };
            let placed: Vec<(f64, Whisker)> = s
                .values
                .iter()
                .enumerate()
                .filter_map(|(i, w)| w.map(|w| ((n_rows - 1 - i) as f64 + offset(k), w)))
                .collect();
            chart.draw_series(
                placed
                    .iter()
                    .filter(|(_, w)| w.low.is_finite() && w.high.is_finite())
                    .map(|&(y, w)| {
                        PathElement::new(vec![(w.low, y), (w.high, y)], colour.stroke_width(width))
                    }),
            )?;
            chart.draw_series(
                placed
                    .iter()
                    .filter(|(_, w)| w.estimate.is_finite())
                    .map(|&(y, w)| Circle::new((w.estimate, y), radius, colour.filled())),
            )?;
        }
        for (j, values) in paper.iter().enumerate() {
            let y_of = |i: usize| (n_rows - 1 - i) as f64 + offset(series.len() + j);
            chart.draw_series(values.iter().enumerate().filter_map(|(i, w)| {
                let w = (*w)?;
                (w.low.is_finite() && w.high.is_finite()).then(|| {
                    PathElement::new(
                        vec![(w.low, y_of(i)), (w.high, y_of(i))],
                        PAPER_COLOUR.stroke_width(1),
                    )
                })
            }))?;
            chart.draw_series(values.iter().enumerate().filter_map(|(i, w)| {
                let w = (*w)?;
                w.estimate
                    .is_finite()
                    .then(|| diamond!((w.estimate, y_of(i))))
            }))?;
        }
        let label_style = TextStyle::from((FONT, 15).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (i, label) in rows.iter().enumerate() {
            let (_, y) = chart.backend_coord(&(x0, (n_rows - 1 - i) as f64));
            let (x, _) = chart.backend_coord(&(x0, 0.0));
            root.draw(&Text::new(label.as_str(), (x - 10, y), label_style.clone()))?;
        }
        let (left, _) = chart.backend_coord(&(x0, 0.0));
        legend_swatches(
            root,
            (left, LEGEND_Y),
            series
                .iter()
                .enumerate()
                .map(|(k, s)| {
                    (
                        s.name.as_str(),
                        Swatch::Box(SERIES_COLOURS[k % SERIES_COLOURS.len()]),
                    )
                })
                .chain((!paper.is_empty()).then_some((PAPER_LEGEND, Swatch::Diamond))),
        )?;
        Ok(())
    })
}

/// A published point of a scatter chart: a diamond at (`x`, `y`) where `y` is
/// finite, and a vertical line over (`low`, `high`) where both are (a range the paper
/// prints for points it does not print one by one). `x` is a share (0..=1), as the
/// chart's points are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PaperMark {
    /// Horizontal value.
    pub x: f64,
    /// The point's vertical value (NaN: no point).
    pub y: f64,
    /// Bottom of the vertical range (NaN: no range).
    pub low: f64,
    /// Top of the vertical range.
    pub high: f64,
}

/// One point of a scatter chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    /// Horizontal value.
    pub x: f64,
    /// Vertical value.
    pub y: f64,
}

/// Points (x a share in 0..=1, drawn in percent; y in percentage points), with a
/// horizontal line at zero, and the paper's marks (with a legend of this study's
/// points and the paper's when there are any).
pub(crate) fn scatter(
    title: &str,
    points: &[Point],
    paper: &[PaperMark],
    x_desc: &str,
    y_desc: &str,
) -> Result<String, ReportError> {
    let finite: Vec<Point> = points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .copied()
        .collect();
    let paper: Vec<PaperMark> = paper.iter().filter(|m| m.x.is_finite()).copied().collect();
    let x_max = finite
        .iter()
        .map(|p| p.x)
        .chain(paper.iter().map(|m| m.x))
        .map(|x| 100.0 * x)
        .fold(0.0_f64, f64::max);
    // The axis starts at zero truncation and ends a little past the largest rate
    // (at least 10%, so a panel that never truncates still has a readable axis).
    let x1 = (x_max * 1.1).clamp(10.0, 105.0);
    // A little room left of zero, so a dot at 0% is not half hidden by the axis.
    let x0 = -0.025 * x1;
    let (y0, y1) = padded_range(
        finite
            .iter()
            .map(|p| p.y)
            .chain(paper.iter().flat_map(|m| [m.y, m.low, m.high])),
        0.0,
    );
    let colour = SERIES_COLOURS[0];
    let header = if paper.is_empty() {
        HEADER
    } else {
        HEADER_WITH_LEGEND
    };
    render(title, (760, 436 + header), |root| {
        let mut chart = xy_chart(
            root,
            header,
            (x0, x1),
            (y0, y1),
            &|x| format!("{}%", axis_number(*x, x1)),
            (x_desc, y_desc),
        )?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x0, 0.0), (x1, 0.0)],
            ZERO_LINE.stroke_width(1),
        )))?;
        chart.draw_series(
            finite
                .iter()
                .map(|p| Circle::new((100.0 * p.x, p.y), 5, colour.mix(0.85).filled())),
        )?;
        chart.draw_series(
            paper
                .iter()
                .filter(|m| m.low.is_finite() && m.high.is_finite())
                .map(|m| {
                    PathElement::new(
                        vec![(100.0 * m.x, m.low), (100.0 * m.x, m.high)],
                        PAPER_COLOUR.stroke_width(2),
                    )
                }),
        )?;
        chart.draw_series(
            paper
                .iter()
                .filter(|m| m.y.is_finite())
                .map(|m| diamond!((100.0 * m.x, m.y))),
        )?;
        if !paper.is_empty() {
            let (left, _) = chart.backend_coord(&(x0, 0.0));
            legend_swatches(
                root,
                (left, LEGEND_Y),
                [
                    ("this study", Swatch::Box(colour)),
                    (PAPER_LEGEND, Swatch::Diamond),
                ]
                .into_iter(),
            )?;
        }
        Ok(())
    })
}

/// A series of labelled points for [`frontier_scatter`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PointSeries {
    /// Legend text.
    pub name: String,
    /// The points (x and y in their axes' units).
    pub points: Vec<Point>,
}

/// Points of several series on linear axes (x from zero), with a thin line through
/// `frontier` (points sorted by x) in the first series' colour: the switches'
/// success–cost frontier of the repair figure.
pub(crate) fn frontier_scatter(
    title: &str,
    series: &[PointSeries],
    frontier: &[Point],
    x_desc: &str,
    y_desc: &str,
) -> Result<String, ReportError> {
    let finite = |p: &&Point| p.x.is_finite() && p.y.is_finite();
    let all: Vec<Point> = series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(finite)
        .copied()
        .collect();
    let (_, x1) = padded_range(all.iter().map(|p| p.x), 0.0);
    let x0 = -0.025 * x1;
    let (y0, y1) = padded_range(all.iter().map(|p| p.y), 0.0);
    render(title, (760, 500), |root| {
        let mut chart = xy_chart(
            root,
            HEADER_WITH_LEGEND,
            (x0, x1),
            (y0, y1),
            &|x| axis_number(*x, x1 - x0),
            (x_desc, y_desc),
        )?;
        let line: Vec<(f64, f64)> = frontier.iter().filter(finite).map(|p| (p.x, p.y)).collect();
        if line.len() > 1 {
            let colour = SERIES_COLOURS[0];
            chart.draw_series(std::iter::once(PathElement::new(
                line,
                colour.stroke_width(1),
            )))?;
        }
        for (k, s) in series.iter().enumerate() {
            let colour = SERIES_COLOURS[k % SERIES_COLOURS.len()];
            chart.draw_series(
                s.points
                    .iter()
                    .filter(finite)
                    .map(|p| Circle::new((p.x, p.y), 5, colour.mix(0.85).filled())),
            )?;
        }
        let (left, _) = chart.backend_coord(&(x0, 0.0));
        legend(
            root,
            (left, LEGEND_Y),
            series.iter().map(|s| s.name.as_str()),
        )?;
        Ok(())
    })
}

/// The episodes of one group for [`limit_paths`]: a thin line per episode, and the
/// group's call limit as a vertical line, both in the group's colour.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PathSeries {
    /// Legend text.
    pub name: String,
    /// One path per episode (x and y in their axes' units, in drawing order).
    pub paths: Vec<Vec<Point>>,
    /// Where the group's vertical limit line is drawn (x), if anywhere.
    pub limit: Option<f64>,
}

/// Paths of several groups on linear axes from zero, each group's limit a vertical
/// line in its colour and one shared horizontal limit (`ceiling`) in grey: which
/// line a path meets first is which limit binds first (the frontier's Figure 9).
pub(crate) fn limit_paths(
    title: &str,
    series: &[PathSeries],
    ceiling: f64,
    paper: &[Point],
    x_desc: &str,
    y_desc: &str,
) -> Result<String, ReportError> {
    let paper: Vec<Point> = paper
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .copied()
        .collect();
    let finite = |p: &&Point| p.x.is_finite() && p.y.is_finite();
    let points = || {
        series
            .iter()
            .flat_map(|s| s.paths.iter().flatten())
            .filter(finite)
    };
    let limits = series
        .iter()
        .filter_map(|s| s.limit)
        .filter(|x| x.is_finite());
    let (_, x1) = padded_range(
        points()
            .map(|p| p.x)
            .chain(limits)
            .chain(paper.iter().map(|p| p.x)),
        0.0,
    );
    let (_, y1) = padded_range(
        points()
            .map(|p| p.y)
            .chain(std::iter::once(ceiling).filter(|y| y.is_finite()))
            .chain(paper.iter().map(|p| p.y)),
        0.0,
    );
    let (x0, y0) = (-0.02 * x1, -0.02 * y1);
    render(title, (760, 500), |root| {
        let mut chart = xy_chart(
            root,
            HEADER_WITH_LEGEND,
            (x0, x1),
            (y0, y1),
            &|x| axis_number(*x, x1 - x0),
            (x_desc, y_desc),
        )?;
        if ceiling.is_finite() {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x0, ceiling), (x1, ceiling)],
                ZERO_LINE.stroke_width(2),
            )))?;
        }
        for (k, s) in series.iter().enumerate() {
            let colour = SERIES_COLOURS[k % SERIES_COLOURS.len()];
            chart.draw_series(s.paths.iter().map(|path| {
                let line: Vec<(f64, f64)> =
                    path.iter().filter(finite).map(|p| (p.x, p.y)).collect();
                PathElement::new(line, colour.mix(0.55).stroke_width(1))
            }))?;
            if let Some(x) = s.limit.filter(|x| x.is_finite()) {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(x, y0), (x, y1)],
                    colour.stroke_width(2),
                )))?;
            }
        }
        chart.draw_series(paper.iter().map(|p| diamond!((p.x, p.y))))?;
        let (left, _) = chart.backend_coord(&(x0, 0.0));
        legend_swatches(
            root,
            (left, LEGEND_Y),
            series
                .iter()
                .enumerate()
                .map(|(k, s)| {
                    (
                        s.name.as_str(),
                        Swatch::Box(SERIES_COLOURS[k % SERIES_COLOURS.len()]),
                    )
                })
                .chain(std::iter::once(("episode budget", Swatch::Box(ZERO_LINE))))
                .chain((!paper.is_empty()).then_some((PAPER_LEGEND, Swatch::Diamond))),
        )?;
        Ok(())
    })
}

/// The chart both scatters draw on: linear axes over `x` and `y` below a header of
/// `top` pixels, eight labelled ticks on each (x ticks written by `x_label`), a light
/// grid, and both axes' titles.
#[allow(clippy::type_complexity)]
fn xy_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    top: u32,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
    x_label: &dyn Fn(&f64) -> String,
    (x_desc, y_desc): (&str, &str),
) -> Result<
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    DrawingAreaErrorKind<std::io::Error>,
> {
    let mut chart = ChartBuilder::on(root)
        .margin(16)
        .margin_top(top)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .light_line_style(LIGHT_GRID)
        .max_light_lines(1)
        .x_labels(8)
        .y_labels(8)
        .x_label_formatter(x_label)
        .y_label_formatter(&|y| axis_number(*y, y1 - y0))
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .draw()?;
    Ok(chart)
}

/// The truncated share at each menu size: a line per configuration (thin, grey)
/// behind the pooled line (thick, with dots), and the paper's pooled shares as
/// diamonds. `categories` are the menu sizes, equally spaced (the sizes grow
/// geometrically, 8, 32, 128); each line, and `paper`, has one share per category,
/// NaN where that configuration has no episode (or the paper prints none).
pub(crate) fn share_lines(
    title: &str,
    categories: &[u64],
    pooled: &[f64],
    configurations: &[(String, Vec<f64>)],
    paper: &[f64],
) -> Result<String, ReportError> {
    let n = categories.len().max(1);
    let shares = pooled
        .iter()
        .chain(paper)
        .chain(configurations.iter().flat_map(|(_, values)| values))
        .filter(|s| s.is_finite())
        .map(|s| 100.0 * s);
    // At least 0–10%, so an axis of zeros is still an axis.
    let y1 = (shares.fold(0.0_f64, f64::max) * 1.12).clamp(10.0, 105.0);
    let x1 = n as f64 - 0.7;
    render(title, (760 + LINE_LABELS_WIDTH, 460), |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(16)
            .margin_top(HEADER_WITH_LEGEND)
            .margin_right(16 + LINE_LABELS_WIDTH)
            .x_label_area_size(56)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.3..x1, 0.0..y1)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(LIGHT_GRID)
            .max_light_lines(1)
            .x_labels(0)
            .y_labels(8)
            .y_label_formatter(&|y| format!("{}%", axis_number(*y, y1)))
            .y_desc("share of episodes truncated at the cap")
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .draw()?;
        let line = |values: &[f64]| -> Vec<(f64, f64)> {
            values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(i, v)| (i as f64, 100.0 * v))
                .collect()
        };
        for (_, values) in configurations {
            chart.draw_series(LineSeries::new(
                line(values),
                BACKGROUND_LINE.stroke_width(1),
            ))?;
        }
        // Each line is named at its right-hand end, the names spread apart where the
        // lines end close together, each joined to its line by a thin leader.
        let ends: Vec<(&str, (i32, i32))> = configurations
            .iter()
            .filter_map(|(name, values)| {
                let (x, y) = line(values).last().copied()?;
                Some((name.as_str(), chart.backend_coord(&(x, y))))
            })
            .collect();
        let (right, _) = chart.backend_coord(&(x1, 0.0));
        let (_, top) = chart.backend_coord(&(0.0, y1));
        let (_, bottom) = chart.backend_coord(&(0.0, 0.0));
        let wanted: Vec<i32> = ends.iter().map(|(_, (_, y))| *y).collect();
        let placed = spread_labels(&wanted, LINE_LABEL_GAP, (top, bottom));
        let name_style = TextStyle::from((FONT, 12).into_font())
            .color(&LABEL_GREY)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for ((name, (x, y)), label_y) in ends.iter().zip(placed) {
            root.draw(&PathElement::new(
                vec![(*x + 3, *y), (right + 6, *y), (right + 18, label_y)],
                LEADER_LINE.stroke_width(1),
            ))?;
            root.draw(&Text::new(
                name.to_string(),
                (right + 22, label_y),
                name_style.clone(),
            ))?;
        }
        let colour = SERIES_COLOURS[0];
        let pooled_points = line(pooled);
        chart.draw_series(LineSeries::new(
            pooled_points.clone(),
            colour.stroke_width(3),
        ))?;
        chart.draw_series(
            pooled_points
                .iter()
                .map(|&p| Circle::new(p, 5, colour.filled())),
        )?;
        let paper_points = line(paper);
        chart.draw_series(paper_points.iter().map(|&p| diamond!(p)))?;
        let label_style = TextStyle::from((FONT, 15).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        for (i, v) in categories.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(i as f64, 0.0));
            root.draw(&Text::new(
                format!("V = {v}"),
                (x, y + 8),
                label_style.clone(),
            ))?;
        }
        let (x, y) = chart.backend_coord(&((x1 - 0.3) / 2.0, 0.0));
        root.draw(&Text::new(
            "visible menu size (schemas)",
            (x, y + 30),
            TextStyle::from((FONT, 16).into_font())
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
        let (left, _) = chart.backend_coord(&(-0.3, 0.0));
        let mut names = vec![("all configurations (pooled)", Swatch::Box(colour))];
        if !configurations.is_empty() {
            names.push(("each configuration", Swatch::Box(BACKGROUND_LINE)));
        }
        if !paper_points.is_empty() {
            names.push(("paper (pooled)", Swatch::Diamond));
        }
        legend_swatches(root, (left, LEGEND_Y), names.into_iter())?;
        Ok(())
    })
}

/// Room on the right of [`share_lines`] for its lines' names, and the least vertical
/// distance between two of them (12-pixel text).
const LINE_LABELS_WIDTH: u32 = 150;
const LINE_LABEL_GAP: i32 = 13;
/// The leaders from lines to their names: lighter than the lines.
const LEADER_LINE: RGBColor = RGBColor(0xD2, 0xD2, 0xD2);
/// The lines' names: darker than the lines, lighter than the axes.
const LABEL_GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// Label positions as close to `wanted` (pixel rows, any order) as they can be with
/// at least `gap` between neighbours, inside `(top, bottom)` when the range holds
/// them all: a pass down the sorted rows pushes each below its neighbour, and a pass
/// up pulls the overflow back above `bottom`. Returned in the order of `wanted`.
fn spread_labels(wanted: &[i32], gap: i32, (top, bottom): (i32, i32)) -> Vec<i32> {
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by_key(|&i| (wanted[i], i));
    let mut at: Vec<i32> = order.iter().map(|&i| wanted[i]).collect();
    for k in 0..at.len() {
        let floor = if k == 0 { top } else { at[k - 1] + gap };
        at[k] = at[k].max(floor);
    }
    for k in (0..at.len()).rev() {
        let ceiling = if k + 1 == at.len() {
            bottom
        } else {
            at[k + 1] - gap
        };
        at[k] = at[k].min(ceiling);
    }
    let mut placed = vec![0; wanted.len()];
    for (k, &i) in order.iter().enumerate() {
        placed[i] = at[k];
    }
    placed
}

/// A legend row of coloured swatches in the series colours.
fn legend<'a>(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    at: (i32, i32),
    names: impl Iterator<Item = &'a str>,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    legend_with(
        root,
        at,
        names
            .enumerate()
            .map(|(k, n)| (n, SERIES_COLOURS[k % SERIES_COLOURS.len()])),
    )
}

/// A legend row of coloured box swatches.
fn legend_with<'a>(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    at: (i32, i32),
    entries: impl Iterator<Item = (&'a str, RGBColor)>,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    legend_swatches(root, at, entries.map(|(n, c)| (n, Swatch::Box(c))))
}

/// A legend entry's mark.
#[derive(Debug, Clone, Copy)]
enum Swatch {
    /// A box in a series' colour.
    Box(RGBColor),
    /// The paper's diamond.
    Diamond,
}

/// A legend row: swatch, name, gap, … from `at` (the swatch's left, text middle).
fn legend_swatches<'a>(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    at: (i32, i32),
    entries: impl Iterator<Item = (&'a str, Swatch)>,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let style = TextStyle::from((FONT, 15).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let (mut x, y) = at;
    for (name, swatch) in entries {
        match swatch {
            Swatch::Box(colour) => root.draw(&Rectangle::new(
                [(x, y - 5), (x + 14, y + 5)],
                colour.filled(),
            ))?,
            Swatch::Diamond => root.draw(&Polygon::new(
                vec![(x + 7, y - 7), (x + 14, y), (x + 7, y + 7), (x, y)],
                PAPER_COLOUR.filled(),
            ))?,
        }
        root.draw(&Text::new(name, (x + 20, y), style.clone()))?;
        // The SVG backend cannot measure text; 7.5 px per character of a 12 px
        // sans-serif font is a generous estimate, so entries do not overlap.
        x += 20 + (name.chars().count() as f64 * 7.5).ceil() as i32 + 24;
    }
    Ok(())
}

/// Draws on a fresh white SVG of `size` with `title` centred at the top (charts
/// leave [`HEADER`] pixels for it) and returns the SVG text, with a `<title>` element
/// too (for screen readers and as the tooltip of the standalone file).
fn render(
    title: &str,
    size: (u32, u32),
    draw: impl FnOnce(
        &DrawingArea<SVGBackend<'_>, Shift>,
    ) -> Result<(), DrawingAreaErrorKind<std::io::Error>>,
) -> Result<String, ReportError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let heading = TextStyle::from((FONT, 20).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        let drawn = root
            .fill(&WHITE)
            .and_then(|()| root.draw(&Text::new(title, (size.0 as i32 / 2, 12), heading)))
            .and_then(|()| draw(&root))
            .and_then(|()| root.present());
        drawn.map_err(|e| ReportError::Figure {
            figure: title.to_string(),
            detail: e.to_string(),
        })?;
    }
    Ok(with_title(&svg, title))
}

/// Inserts `<title>` as the first child of the `<svg>` element.
fn with_title(svg: &str, title: &str) -> String {
    let element = format!("<title>{}</title>\n", super::html::escape(title));
    match svg.find(">\n") {
        Some(end) if svg.starts_with("<svg") => {
            format!("{}{element}{}", &svg[..end + 2], &svg[end + 2..])
        }
        _ => svg.to_string(),
    }
}

/// The range of `values` and `include` (zero, for effects), padded by 6% on each
/// side; a degenerate range becomes ±1 around its value.
fn padded_range(values: impl Iterator<Item = f64>, include: f64) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((include, include), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let pad = 0.06 * (hi - lo);
    if pad > 0.0 {
        (lo - pad, hi + pad)
    } else {
        (lo - 1.0, hi + 1.0)
    }
}

/// An axis tick label: whole numbers on a wide axis, one decimal on a narrow one.
fn axis_number(x: f64, span: f64) -> String {
    format::fixed(x, if span >= 8.0 { 0 } else { 1 })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn line_names_spread_apart_inside_the_plot_and_keep_their_order() {
        // Far apart: where they are wanted.
        assert_eq!(spread_labels(&[100, 10, 200], 13, (0, 300)), [100, 10, 200]);
        // Three at one row: pushed down 13 apart, in the order given.
        assert_eq!(spread_labels(&[50, 50, 50], 13, (0, 300)), [50, 63, 76]);
        // At the bottom: pulled back up above it.
        assert_eq!(spread_labels(&[300, 299, 10], 13, (0, 300)), [300, 287, 10]);
        // Near the top: pushed below it.
        assert_eq!(spread_labels(&[-5, 0], 13, (0, 300)), [0, 13]);
        assert!(spread_labels(&[], 13, (0, 300)).is_empty());
    }

    /// `<circle>` elements filled with `colour`.
    pub(crate) fn dots(svg: &str, colour: RGBColor) -> usize {
        let fill = format!("fill=\"{}\"", svg_colour(colour));
        svg.lines()
            .filter(|l| l.starts_with("<circle") && l.contains(&fill))
            .count()
    }

    /// The paper's points: black `<polygon>` diamonds, less the legend's swatch.
    pub(crate) fn paper_points(svg: &str) -> usize {
        let fill = format!("fill=\"{}\"", svg_colour(PAPER_COLOUR));
        let diamonds = svg
            .lines()
            .filter(|l| l.starts_with("<polygon") && l.contains(&fill))
            .count();
        let legend = svg.contains(&format!(">\n{PAPER_LEGEND}\n</text>"))
            || svg.contains(">\npaper (pooled)\n</text>");
        diamonds - usize::from(legend)
    }

    /// `<polyline>` elements stroked with `colour`.
    pub(crate) fn strokes(svg: &str, colour: RGBColor) -> usize {
        let stroke = format!("stroke=\"{}\"", svg_colour(colour));
        svg.lines()
            .filter(|l| l.starts_with("<polyline") && l.contains(&stroke))
            .count()
    }

    fn w(estimate: f64) -> Option<Whisker> {
        Some(Whisker {
            estimate,
            low: estimate - 2.0,
            high: estimate + 2.0,
        })
    }

    #[test]
    fn a_dot_and_a_whisker_per_value_and_none_for_a_gap() {
        let rows: Vec<String> = ["V", "W", "D"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let series = vec![
            WhiskerSeries {
                name: "families".into(),
                values: vec![w(-12.0), w(1.0), w(-3.0)],
            },
            WhiskerSeries {
                name: "intents".into(),
                values: vec![w(-12.0), None, w(-3.0)],
            },
        ];
        let svg =
            dot_whisker("contrasts", &rows, &series, &[], "pp").unwrap_or_else(|e| panic!("{e}"));
        assert!(svg.starts_with("<svg") && svg.contains("<title>contrasts</title>"));
        assert_eq!(dots(&svg, SERIES_COLOURS[0]), 3);
        assert_eq!(strokes(&svg, SERIES_COLOURS[0]), 3);
        assert_eq!(dots(&svg, SERIES_COLOURS[1]), 2);
        assert_eq!(strokes(&svg, SERIES_COLOURS[1]), 2);
        assert_eq!(strokes(&svg, ZERO_LINE), 1);
        // Row labels and legend entries are SVG text, not paths.
        assert!(svg.contains(">\nV\n</text>") && svg.contains(">\nfamilies\n</text>"));
    }

    #[test]
    fn the_papers_points_are_diamonds_under_one_legend_entry() {
        let rows: Vec<String> = ["V", "W"].iter().map(|s| (*s).to_string()).collect();
        let series = vec![WhiskerSeries {
            name: "families".into(),
            values: vec![w(-12.0), w(1.0)],
        }];
        let paper = vec![vec![w(-12.3), None], vec![None, w(0.8)]];
        let svg = dot_whisker("c", &rows, &series, &paper, "pp").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(paper_points(&svg), 2);
        assert_eq!(strokes(&svg, PAPER_COLOUR), 2);
        assert_eq!(dots(&svg, SERIES_COLOURS[0]), 2);
        assert_eq!(svg.matches(">\npaper\n</text>").count(), 1);
        // No paper value: no slot and no legend entry.
        let none = dot_whisker("c", &rows, &series, &[vec![None, None]], "pp")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            none,
            dot_whisker("c", &rows, &series, &[], "pp").unwrap_or_else(|e| panic!("{e}"))
        );
        let marks = [
            PaperMark {
                x: 0.007,
                y: -18.1,
                low: f64::NAN,
                high: f64::NAN,
            },
            PaperMark {
                x: 0.0,
                y: f64::NAN,
                low: -2.1,
                high: 2.8,
            },
        ];
        let svg = scatter("v", &[Point { x: 0.1, y: -5.0 }], &marks, "x", "y")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(paper_points(&svg), 1);
        assert_eq!(strokes(&svg, PAPER_COLOUR), 1);
        assert!(svg.contains(">\nthis study\n</text>") && svg.contains(">\npaper\n</text>"));
        let lines = share_lines(
            "t",
            &[8, 32, 128],
            &[0.01, 0.05, 0.2],
            &[],
            &[0.016, f64::NAN, 0.136],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(paper_points(&lines), 2);
    }

    #[test]
    fn a_line_per_path_and_per_limit_and_one_budget_line() {
        let path = |n: u32| -> Vec<Point> {
            (0..=n)
                .map(|i| Point {
                    x: f64::from(i),
                    y: f64::from(i * i),
                })
                .collect()
        };
        let series = vec![
            PathSeries {
                name: "2 calls".into(),
                paths: vec![path(2), path(3)],
                limit: Some(4.0),
            },
            PathSeries {
                name: "30 calls".into(),
                paths: vec![path(20), path(18), path(25)],
                limit: Some(32.0),
            },
        ];
        let svg = limit_paths("paths", &series, 400.0, &[], "calls", "tokens")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(strokes(&svg, SERIES_COLOURS[0]), 3);
        assert_eq!(strokes(&svg, SERIES_COLOURS[1]), 4);
        assert_eq!(strokes(&svg, ZERO_LINE), 1);
        assert!(svg.contains(">\nepisode budget\n</text>"));
        let empty =
            limit_paths("paths", &[], f64::NAN, &[], "x", "y").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(strokes(&empty, ZERO_LINE), 0);
    }

    #[test]
    fn non_finite_values_are_left_out_and_ranges_stay_finite() {
        let points = [
            Point { x: 0.5, y: -40.0 },
            Point {
                x: f64::NAN,
                y: 1.0,
            },
            Point { x: 0.0, y: 2.0 },
        ];
        let svg = scatter("v", &points, &[], "x", "y").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dots(&svg, SERIES_COLOURS[0]), 2);
        let empty = scatter("v", &[], &[], "x", "y").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dots(&empty, SERIES_COLOURS[0]), 0);
        let lines = share_lines(
            "t",
            &[8, 32, 128],
            &[0.01, f64::NAN, 0.2],
            &[
                ("sim-a".to_string(), vec![0.0, 0.0, 0.1]),
                ("sim-b".to_string(), vec![0.02, 0.0, 0.3]),
            ],
            &[],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dots(&lines, SERIES_COLOURS[0]), 2);
        assert_eq!(strokes(&lines, SERIES_COLOURS[0]), 1);
        assert_eq!(strokes(&lines, BACKGROUND_LINE), 2);
        assert_eq!(strokes(&lines, LEADER_LINE), 2);
        assert!(lines.contains(">\nV = 128\n</text>"));
        assert!(lines.contains(">\nsim-a\n</text>") && lines.contains(">\nsim-b\n</text>"));
    }
}
