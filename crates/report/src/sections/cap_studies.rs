//! The cap studies' results (paper Appendix E): the sweep's and the crossover's menu
//! contrast per stratum at each cap and its change between the caps, with the
//! published values of the paper beside ours (labelled as the paper's), then
//! truncation at V = 128 and repeat disagreement per cap; and a figure per study (the
//! paper's Figures 2b and 8): the contrast per stratum at each cap with its interval,
//! the paper's published points beside ours.
//!
//! Owns: the layout of the `cap_sweep` and `cap_crossover` tables and figures in the
//! report, and the paper's published values it quotes beside them.
//!
//! Invariants: rows in the order the analysis wrote them; a statistic the table lacks
//! is shown as "—".
//!
//! Never: computes an estimate, an interval or a bound.

use tbb_tables::analyses::cap_crossover::CapCrossoverRow;
use tbb_tables::analyses::cap_sweep::CapSweepRow;
use tbb_tables::analyses::two_caps::{CapEstimate, CapRole, CapStatistic};

use super::super::document::{text, Align, Figure, Section, Table};
use super::super::figures::{self, Whisker, WhiskerSeries};
use super::super::format;
use super::super::ReportError;
use super::{rows, Tables};

/// What the section shows of a row of either study's main table (the two share
/// their columns but for the sweep's margin verdict and the crossover's reading).
/// A null number reads as NaN, which the formatting and the figures show as "—" or
/// leave out.
struct StudyRow {
    stratum: String,
    role: CapRole,
    statistic: CapStatistic,
    completion_cap: Option<u32>,
    estimate: f64,
    low: f64,
    high: f64,
    bound_low: f64,
    bound_high: f64,
    /// The sweep's `clears_margin`; none in the crossover.
    clears_margin: Option<bool>,
    /// The crossover's `reading`; none in the sweep.
    reading: Option<String>,
}

fn or_nan(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

impl StudyRow {
    fn of(e: CapEstimate, clears_margin: Option<bool>, reading: Option<String>) -> StudyRow {
        StudyRow {
            stratum: e.stratum,
            role: e.arm_role,
            statistic: e.statistic,
            completion_cap: e.completion_cap,
            estimate: or_nan(e.estimate_pp),
            low: or_nan(e.ci_low_pp),
            high: or_nan(e.ci_high_pp),
            bound_low: or_nan(e.bound_low_pp),
            bound_high: or_nan(e.bound_high_pp),
            clears_margin,
            reading,
        }
    }
}

impl From<CapSweepRow> for StudyRow {
    fn from(r: CapSweepRow) -> StudyRow {
        StudyRow::of(r.estimate, r.margin.clears_margin, None)
    }
}

impl From<CapCrossoverRow> for StudyRow {
    fn from(r: CapCrossoverRow) -> StudyRow {
        StudyRow::of(r.estimate, None, r.reading.reading)
    }
}

/// A study's rows, if the study has its table.
type ReadRows = fn(&Tables) -> Result<Option<Vec<StudyRow>>, ReportError>;

fn sweep_rows(tables: &Tables) -> Result<Option<Vec<StudyRow>>, ReportError> {
    Ok(rows::<CapSweepRow>(tables)?.map(|rs| rs.into_iter().map(StudyRow::from).collect()))
}

fn crossover_rows(tables: &Tables) -> Result<Option<Vec<StudyRow>>, ReportError> {
    Ok(rows::<CapCrossoverRow>(tables)?.map(|rs| rs.into_iter().map(StudyRow::from).collect()))
}

/// One study: its table's rows, its name in captions, and the paper's values by
/// stratum (`(stratum, low cap, high cap, change)`, pp with intervals, as published).
struct Study {
    rows: ReadRows,
    name: &'static str,
    paper: &'static [(&'static str, &'static str, &'static str, &'static str)],
    paper_note: &'static str,
    /// The paper's figure this one stands beside.
    figure: &'static str,
    /// The paper's published points for the figure: `(stratum, arm role, estimate,
    /// interval)`, the interval where the paper gives one.
    paper_points: &'static [PaperPoint],
    /// The paper's row of the truncation and disagreement table: B's V = 128
    /// truncation at the low and high caps, then the repeats' disagreement at each.
    paper_repeats: [&'static str; 4],
}

/// A published point: `(stratum, arm role, estimate, interval)`, pp.
type PaperPoint = (&'static str, CapRole, f64, Option<(f64, f64)>);

const STUDIES: [Study; 2] = [
    Study {
        rows: sweep_rows,
        name: "sweep",
        paper: &[
            ("B", "-43.7", "-2.7 [-4.7, -0.9]", "+41.0 [36.2, 45.5]"),
            ("M", "", "", "2.8 (size of the move)"),
            ("N", "", "", "1.0 (size of the move)"),
        ],
        paper_note: "The paper's sweep (caps 1,024 and 16,384): its 6 B configurations truncated \
             30.6–69.8% of their V = 128 episodes at the low cap and at most 1.4% at the \
             high cap; the interaction cleared the pre-specified 5 pp margin.",
        figure: "2b",
        paper_points: &[
            ("B", CapRole::Low, -43.7, None),
            ("B", CapRole::High, -2.7, Some((-4.7, -0.9))),
        ],
        // Appendix E.1 (truncation); the Limitations (the sweep repeats disagree on
        // 17.5% at 1,024 tokens; no figure at the high cap).
        paper_repeats: ["30.6–69.8% (B)", "≤ 1.4% (B)", "17.5%", "—"],
    },
    Study {
        rows: crossover_rows,
        name: "crossover",
        paper: &[
            (
                "B",
                "-23.6 [-28.5, -18.8]",
                "-21.3 [-26.7, -16.1]",
                "+2.1 [-2.6, 6.8]; bounds [1.9, 2.6]",
            ),
            ("S", "", "", "+1.4 [-8.3, 11.1]"),
            ("N", "", "", "-0.3 [-4.5, 3.8]"),
        ],
        paper_note: "The paper's crossover (caps 1,024 and 4,096): its B configurations still \
             truncated 20.2–25.3% at the high cap, above the 5% ceiling, so its tables \
             describe the penalty under persisting truncation; the repeats disagreed on \
             24.2% of conditions at 1,024 and 21.2% at 4,096.",
        figure: "8",
        paper_points: &[
            ("B", CapRole::Low, -23.6, Some((-28.5, -18.8))),
            ("B", CapRole::High, -21.3, Some((-26.7, -16.1))),
        ],
        // Appendix E.2.
        paper_repeats: ["28.8–35.8% (B)", "20.2–25.3% (B)", "24.2%", "21.2%"],
    },
];

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    s.paragraph(vec![text(
        "Only the completion cap changes between the arms (the episode budget and the \
         call limit stay frozen). The menu contrast is the paired within-family \
         difference V = 128 − V = 8 over the four endpoint workflow × encoding cells, \
         pooled over a stratum's configurations, with family-cluster bootstrap \
         intervals; the change is the high cap's contrast minus the low cap's.",
    )]);
    for study in &STUDIES {
        let Some(t) = (study.rows)(tables)? else {
            continue;
        };
        let find = |st: &str, role: CapRole, stat: CapStatistic| {
            t.iter()
                .find(|r| r.stratum == st && r.role == role && r.statistic == stat)
        };
        let cap_of = |role: CapRole| {
            t.iter()
                .find(|r| r.role == role)
                .and_then(|r| r.completion_cap)
                .map_or_else(|| "—".into(), |c| format::count(u64::from(c)))
        };
        let (low_cap, high_cap) = (cap_of(CapRole::Low), cap_of(CapRole::High));
        let show = |r: Option<&StudyRow>| match r {
            Some(r) if !r.estimate.is_nan() => {
                if r.low.is_nan() {
                    format::effect_pp(r.estimate)
                } else {
                    format::effect_with_interval(r.estimate, r.low, r.high)
                }
            }
            _ => "—".into(),
        };
        let mut strata: Vec<&str> = Vec::new();
        for r in &t {
            if r.stratum != "all" && !strata.contains(&r.stratum.as_str()) {
                strata.push(&r.stratum);
            }
        }
        let mut contrast = Table::new(
            format!(
                "The {}: menu contrast (pp) per stratum at caps {low_cap} and {high_cap}, \
                 and its change; the paper's published values beside ours.",
                study.name
            ),
            &[
                ("Stratum", Align::Left),
                ("Low cap", Align::Right),
                ("High cap", Align::Right),
                ("Change", Align::Right),
                ("Either-outcome bounds", Align::Right),
                ("Clears the margin", Align::Left),
                ("Paper: low cap", Align::Right),
                ("Paper: high cap", Align::Right),
                ("Paper: change", Align::Right),
            ],
        );
        for st in &strata {
            let contrast_at = |role| find(st, role, CapStatistic::VContrast);
            let change = contrast_at(CapRole::Change);
            let paper = study.paper.iter().find(|p| p.0 == *st);
            contrast.push(vec![
                (*st).to_string(),
                show(contrast_at(CapRole::Low)),
                show(contrast_at(CapRole::High)),
                show(change),
                change.filter(|r| !r.bound_low.is_nan()).map_or_else(
                    || "—".into(),
                    |r| format::interval_pp(r.bound_low, r.bound_high),
                ),
                match change.and_then(|r| r.clears_margin) {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => "—".into(),
                },
                paper.map_or("", |p| p.1).to_string(),
                paper.map_or("", |p| p.2).to_string(),
                paper.map_or("", |p| p.3).to_string(),
            ]);
        }
        s.table(contrast);
        let whisker = |role: CapRole| -> Vec<Option<Whisker>> {
            strata
                .iter()
                .map(|st| {
                    find(st, role, CapStatistic::VContrast).map(|r| Whisker {
                        estimate: r.estimate,
                        low: r.low,
                        high: r.high,
                    })
                })
                .collect()
        };
        let published = |role: CapRole| -> Vec<Option<Whisker>> {
            strata
                .iter()
                .map(|st| {
                    study
                        .paper_points
                        .iter()
                        .find(|p| p.0 == *st && p.1 == role)
                        .map(|&(_, _, estimate, interval)| {
                            let (low, high) = interval.unwrap_or((f64::NAN, f64::NAN));
                            Whisker {
                                estimate,
                                low,
                                high,
                            }
                        })
                })
                .collect()
        };
        let series = vec![
            WhiskerSeries {
                name: format!("ours, {low_cap}"),
                values: whisker(CapRole::Low),
            },
            WhiskerSeries {
                name: format!("ours, {high_cap}"),
                values: whisker(CapRole::High),
            },
            WhiskerSeries {
                name: format!("paper's, {low_cap}"),
                values: published(CapRole::Low),
            },
            WhiskerSeries {
                name: format!("paper's, {high_cap}"),
                values: published(CapRole::High),
            },
        ];
        let labels: Vec<String> = strata.iter().map(|st| format!("stratum {st}")).collect();
        s.figure(Figure {
            file_name: format!("report-cap-{}.svg", study.name),
            caption: format!(
                "The {} (beside the paper's Figure {}): the menu contrast V = 128 − V = 8 \
                 per stratum at caps {low_cap} and {high_cap}, estimate (dot) and 95% \
                 family-cluster bootstrap interval (whisker); the paper's published \
                 points for stratum B are drawn beside ours, labelled as the paper's \
                 (a dot without a whisker where the paper gives no interval). The grey \
                 line marks no effect.",
                study.name, study.figure
            ),
            svg: figures::dot_whisker(
                &format!(
                    "The {}: menu contrast per stratum and completion cap",
                    study.name
                ),
                &labels,
                &series,
                "V = 128 − V = 8 (pp)",
            )?,
        });
        s.paragraph(vec![text(study.paper_note)]);
        let mut said: Vec<&str> = t.iter().filter_map(|r| r.reading.as_deref()).collect();
        said.sort_unstable();
        said.dedup();
        for r in said {
            s.paragraph(vec![text(r.to_string())]);
        }
        let mut other = Table::new(
            format!(
                "The {}: V = 128 truncation and repeat disagreement per stratum and cap \
                 (share of episodes, of conditions); the paper's values are labelled \
                 \"paper\".",
                study.name
            ),
            &[
                ("Stratum", Align::Left),
                ("Truncated at V = 128, low cap", Align::Right),
                ("High cap", Align::Right),
                ("Repeats disagree, low cap", Align::Right),
                ("High cap", Align::Right),
            ],
        );
        let pct = |r: Option<&StudyRow>| {
            r.filter(|r| !r.estimate.is_nan()).map_or_else(
                || "—".into(),
                |r| format!("{}%", format::fixed(r.estimate, 1)),
            )
        };
        for st in strata.iter().copied().chain(["all"]) {
            let truncated = |role| find(st, role, CapStatistic::TruncatedShareV128);
            let disagree = |role| find(st, role, CapStatistic::RepeatDisagreement);
            other.push(vec![
                super::configuration_label(st),
                pct(truncated(CapRole::Low)),
                pct(truncated(CapRole::High)),
                pct(disagree(CapRole::Low)),
                pct(disagree(CapRole::High)),
            ]);
        }
        let mut paper = vec!["paper".to_string()];
        paper.extend(study.paper_repeats.iter().map(|c| c.to_string()));
        other.push(paper);
        s.table(other);
    }
    Ok(())
}
