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

use super::super::document::{text, Align, Figure, Section, Table};
use super::super::figures::{self, Whisker, WhiskerSeries};
use super::super::format;
use super::super::ReportError;
use super::{table, Tables};

/// One study: its table, its name in captions, and the paper's values by stratum
/// (`(stratum, low cap, high cap, change)`, pp with intervals, as published).
struct Study {
    table: &'static str,
    name: &'static str,
    paper: &'static [(&'static str, &'static str, &'static str, &'static str)],
    paper_note: &'static str,
    /// The paper's figure this one stands beside.
    figure: &'static str,
    /// The paper's published points for the figure: `(stratum, arm role, estimate,
    /// interval)`, the interval where the paper gives one.
    paper_points: &'static [PaperPoint],
}

/// A published point: `(stratum, arm role, estimate, interval)`, pp.
type PaperPoint = (&'static str, &'static str, f64, Option<(f64, f64)>);

const STUDIES: [Study; 2] = [
    Study {
        table: "cap_sweep",
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
            ("B", "low", -43.7, None),
            ("B", "high", -2.7, Some((-4.7, -0.9))),
        ],
    },
    Study {
        table: "cap_crossover",
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
            ("B", "low", -23.6, Some((-28.5, -18.8))),
            ("B", "high", -21.3, Some((-26.7, -16.1))),
        ],
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
        let Some(t) = table(tables, study.table) else {
            continue;
        };
        let (stratum, arm_role, statistic) = (
            t.text("stratum")?,
            t.text("arm_role")?,
            t.text("statistic")?,
        );
        let (estimate, low, high) = (
            t.float("estimate_pp")?,
            t.float("ci_low_pp")?,
            t.float("ci_high_pp")?,
        );
        let (bound_low, bound_high) = (t.float("bound_low_pp")?, t.float("bound_high_pp")?);
        let caps = t.int_opt("completion_cap")?;
        let clears = t.flag_opt("clears_margin").ok();
        let reading = t.text_opt("reading").ok();
        let find = |st: &str, role: &str, stat: &str| {
            (0..t.len()).find(|&i| stratum[i] == st && arm_role[i] == role && statistic[i] == stat)
        };
        let cap_of = |role: &str| {
            (0..t.len())
                .find(|&i| arm_role[i] == role)
                .and_then(|i| caps[i])
                .map_or_else(|| "—".into(), format::count)
        };
        let (low_cap, high_cap) = (cap_of("low"), cap_of("high"));
        let show = |i: Option<usize>| match i {
            Some(i) if !estimate[i].is_nan() => {
                if low[i].is_nan() {
                    format::effect_pp(estimate[i])
                } else {
                    format::effect_with_interval(estimate[i], low[i], high[i])
                }
            }
            _ => "—".into(),
        };
        let mut strata: Vec<&str> = Vec::new();
        for st in &stratum {
            if st != "all" && !strata.contains(&st.as_str()) {
                strata.push(st);
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
            let change = find(st, "change", "v_contrast");
            let paper = study.paper.iter().find(|p| p.0 == *st);
            contrast.push(vec![
                (*st).to_string(),
                show(find(st, "low", "v_contrast")),
                show(find(st, "high", "v_contrast")),
                show(change),
                change.filter(|&i| !bound_low[i].is_nan()).map_or_else(
                    || "—".into(),
                    |i| format::interval_pp(bound_low[i], bound_high[i]),
                ),
                match (&clears, change) {
                    (Some(c), Some(i)) => match c[i] {
                        Some(true) => "yes".into(),
                        Some(false) => "no".into(),
                        None => "—".into(),
                    },
                    _ => "—".into(),
                },
                paper.map_or("", |p| p.1).to_string(),
                paper.map_or("", |p| p.2).to_string(),
                paper.map_or("", |p| p.3).to_string(),
            ]);
        }
        s.table(contrast);
        let whisker = |role: &str| -> Vec<Option<Whisker>> {
            strata
                .iter()
                .map(|st| {
                    find(st, role, "v_contrast").map(|i| Whisker {
                        estimate: estimate[i],
                        low: low[i],
                        high: high[i],
                    })
                })
                .collect()
        };
        let published = |role: &str| -> Vec<Option<Whisker>> {
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
                values: whisker("low"),
            },
            WhiskerSeries {
                name: format!("ours, {high_cap}"),
                values: whisker("high"),
            },
            WhiskerSeries {
                name: format!("paper's, {low_cap}"),
                values: published("low"),
            },
            WhiskerSeries {
                name: format!("paper's, {high_cap}"),
                values: published("high"),
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
        if let Some(reading) = &reading {
            let mut said: Vec<&str> = reading.iter().flatten().map(String::as_str).collect();
            said.sort_unstable();
            said.dedup();
            for r in said {
                s.paragraph(vec![text(r.to_string())]);
            }
        }
        let mut other = Table::new(
            format!(
                "The {}: V = 128 truncation and repeat disagreement per stratum and cap \
                 (share of episodes, of conditions).",
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
        let pct = |i: Option<usize>| {
            i.filter(|&i| !estimate[i].is_nan()).map_or_else(
                || "—".into(),
                |i| format!("{}%", format::fixed(estimate[i], 1)),
            )
        };
        for st in strata.iter().copied().chain(["all"]) {
            other.push(vec![
                super::configuration_label(st),
                pct(find(st, "low", "truncated_share_v128")),
                pct(find(st, "high", "truncated_share_v128")),
                pct(find(st, "low", "repeat_disagreement")),
                pct(find(st, "high", "repeat_disagreement")),
            ]);
        }
        s.table(other);
    }
    Ok(())
}
