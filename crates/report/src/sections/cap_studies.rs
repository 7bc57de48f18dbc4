//! The cap studies' results (paper Appendix E): the sweep's and the crossover's menu
//! contrast per stratum at each cap and its change between the caps, with the
//! published values of the paper beside ours (labelled as the paper's), then
//! truncation at V = 128 and repeat disagreement per cap; and a figure per study (the
//! paper's Figures 2b and 8): the contrast per stratum at each cap with its interval,
//! the paper's published points beside ours.
//!
//! Owns: the layout of the `cap_sweep` and `cap_crossover` tables and figures in the
//! report, and which of their rows and marks each of the paper's values
//! ([`paper::cap_studies`]) stands beside.
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
use super::super::paper::{self, cap_studies as q, Quote};
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

/// One study: its table's rows, its name in captions, and what the paper prints of
/// it (each a function of [`paper::cap_studies`]).
struct Study {
    rows: ReadRows,
    name: &'static str,
    /// The paper's contrast of a stratum at the low cap, the high cap, and its change
    /// (empty where the paper prints none).
    paper: fn(&str) -> [String; 3],
    /// The paper's sentence about the study.
    paper_note: fn() -> String,
    /// The paper's figure this one stands beside.
    figure: &'static str,
    /// The paper's published point of a stratum at the low or high cap.
    paper_point: fn(&str, CapRole) -> Option<Quote>,
    /// The paper's row of the truncation and disagreement table: B's V = 128
    /// truncation at the low and high caps, then the repeats' disagreement at each.
    paper_repeats: fn() -> [String; 4],
}

fn sweep_paper(stratum: &str) -> [String; 3] {
    match stratum {
        "B" => [
            q::SWEEP_B_LOW.text(),
            q::SWEEP_B_HIGH.text(),
            q::SWEEP_B_CHANGE.text(),
        ],
        "M" => [
            String::new(),
            String::new(),
            format!("{} (size of the move)", q::SWEEP_M_MOVE.text()),
        ],
        "N" => [
            String::new(),
            String::new(),
            format!("{} (size of the move)", q::SWEEP_N_MOVE.text()),
        ],
        _ => Default::default(),
    }
}

fn sweep_note() -> String {
    format!(
        "The paper's sweep (caps {} and {}): its {} B configurations truncated {} of their \
         V = 128 episodes at the low cap and at most {} at the high cap; the interaction \
         cleared the pre-specified {} pp margin.",
        q::SWEEP_LOW_CAP.text(),
        q::SWEEP_HIGH_CAP.text(),
        paper::cap_strata::SWEEP_B.text(),
        q::SWEEP_B_TRUNCATED_LOW.text(),
        q::SWEEP_B_TRUNCATED_HIGH.text(),
        q::SWEEP_MARGIN.text()
    )
}

fn sweep_point(stratum: &str, role: CapRole) -> Option<Quote> {
    match (stratum, role) {
        ("B", CapRole::Low) => Some(q::SWEEP_B_LOW),
        ("B", CapRole::High) => Some(q::SWEEP_B_HIGH),
        _ => None,
    }
}

/// The Limitations give the sweep's disagreement at the low cap; none at the high.
fn sweep_repeats() -> [String; 4] {
    [
        format!("{} (B)", q::SWEEP_B_TRUNCATED_LOW.text()),
        format!("≤ {} (B)", q::SWEEP_B_TRUNCATED_HIGH.text()),
        q::SWEEP_DISAGREEMENT_LOW.text(),
        format::MISSING.to_string(),
    ]
}

fn crossover_paper(stratum: &str) -> [String; 3] {
    match stratum {
        "B" => [
            q::CROSSOVER_B_LOW.text(),
            q::CROSSOVER_B_HIGH.text(),
            format!(
                "{}; bounds {}",
                q::CROSSOVER_B_CHANGE.text(),
                q::CROSSOVER_B_BOUNDS.text()
            ),
        ],
        "S" => [String::new(), String::new(), q::CROSSOVER_S_CHANGE.text()],
        "N" => [String::new(), String::new(), q::CROSSOVER_N_CHANGE.text()],
        _ => Default::default(),
    }
}

fn crossover_note() -> String {
    format!(
        "The paper's crossover (caps {} and {}): its B configurations still truncated {} \
         at the high cap, above the {} ceiling, so its tables describe the penalty under \
         persisting truncation; the repeats disagreed on {} of conditions at {} and {} at \
         {}.",
        q::CROSSOVER_LOW_CAP.text(),
        q::CROSSOVER_HIGH_CAP.text(),
        q::CROSSOVER_B_TRUNCATED_HIGH.text(),
        q::CROSSOVER_CEILING.text(),
        q::CROSSOVER_DISAGREEMENT_LOW.text(),
        q::CROSSOVER_LOW_CAP.text(),
        q::CROSSOVER_DISAGREEMENT_HIGH.text(),
        q::CROSSOVER_HIGH_CAP.text()
    )
}

fn crossover_point(stratum: &str, role: CapRole) -> Option<Quote> {
    match (stratum, role) {
        ("B", CapRole::Low) => Some(q::CROSSOVER_B_LOW),
        ("B", CapRole::High) => Some(q::CROSSOVER_B_HIGH),
        _ => None,
    }
}

fn crossover_repeats() -> [String; 4] {
    [
        format!("{} (B)", q::CROSSOVER_B_TRUNCATED_LOW.text()),
        format!("{} (B)", q::CROSSOVER_B_TRUNCATED_HIGH.text()),
        q::CROSSOVER_DISAGREEMENT_LOW.text(),
        q::CROSSOVER_DISAGREEMENT_HIGH.text(),
    ]
}

const STUDIES: [Study; 2] = [
    Study {
        rows: sweep_rows,
        name: "sweep",
        paper: sweep_paper,
        paper_note: sweep_note,
        figure: "2b",
        paper_point: sweep_point,
        paper_repeats: sweep_repeats,
    },
    Study {
        rows: crossover_rows,
        name: "crossover",
        paper: crossover_paper,
        paper_note: crossover_note,
        figure: "8",
        paper_point: crossover_point,
        paper_repeats: crossover_repeats,
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
            let [paper_low, paper_high, paper_change] = (study.paper)(st);
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
                paper_low,
                paper_high,
                paper_change,
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
                .map(|st| (study.paper_point)(st, role).and_then(|q| q.whisker()))
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
        ];
        let paper_marks = [published(CapRole::Low), published(CapRole::High)];
        let labels: Vec<String> = strata.iter().map(|st| format!("stratum {st}")).collect();
        s.figure(Figure {
            file_name: format!("report-cap-{}.svg", study.name),
            caption: format!(
                "The {} (beside the paper's Figure {}): the menu contrast V = 128 − V = 8 \
                 per stratum at caps {low_cap} and {high_cap}, estimate (dot) and 95% \
                 family-cluster bootstrap interval (whisker); the paper's published \
                 points for stratum B are the black diamonds below ours (legend \
                 \"paper\"; its low cap above its high cap, a diamond without a line \
                 where the paper gives no interval). The grey line marks no effect.",
                study.name, study.figure
            ),
            svg: figures::dot_whisker(
                &format!(
                    "The {}: menu contrast per stratum and completion cap",
                    study.name
                ),
                &labels,
                &series,
                &paper_marks,
                "V = 128 − V = 8 (pp)",
            )?,
        });
        s.paragraph(vec![text((study.paper_note)())]);
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
        paper.extend((study.paper_repeats)());
        other.push(paper);
        s.table(other);
    }
    Ok(())
}
