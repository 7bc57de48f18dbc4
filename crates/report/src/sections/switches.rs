//! Repair versus switching the configuration (the `switches` analysis): per repair,
//! how many incumbents the repair serves better than every switch (success-superior),
//! leaves undominated (Pareto), or serves more cheaply than every switch
//! (cost-superior), beside the paper's published counts; and per repair a figure of
//! success against cost: every configuration's no-repair point on the stressed cells
//! (the switches, with their success–cost frontier) and every incumbent's repaired
//! point.
//!
//! Owns: the layout of the `switch_summary` and `switches` tables in the report, which
//! row each of the paper's counts ([`paper::switches`]) stands beside, and the
//! mapping from a repair's changed component to the paper's name for it.
//!
//! Never: computes a verdict or an interval (the analysis did); the frontier drawn is
//! the two-criterion one of the points shown, labelled as such.

use tbb_tables::analyses::switches::{SwitchSummaryRow, SwitchesRow};

use super::super::document::{text, Align, Figure, Section, Table};
use super::super::figures::{self, Point, PointSeries};
use super::super::format;
use super::super::paper::{switches as q, Quote};
use super::super::ReportError;
use super::{rows, Tables};

/// The paper's name for a repair and its counts (success-superior, nondominated,
/// cost-superior, of N), by the component the repair changes.
fn paper(component: &str) -> Option<(&'static str, Quote)> {
    match component {
        "menu=router" => Some(("connector-first router", q::ROUTER)),
        "menu=routed" => Some(("routed menu", q::ROUTED_MENU)),
        "prompt=workflow_prompt" => Some(("workflow prompt", q::WORKFLOW_PROMPT)),
        "prompt=interface_guide" => Some(("interface guide", q::INTERFACE_GUIDE)),
        "actor=controller" => Some(("public-handoff controller", q::CONTROLLER)),
        _ => None,
    }
}

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    s.paragraph(vec![text(
        "Each repair is compared with switching to every other configuration on the \
         same stressed cells, both re-executed: success and cost differences per \
         condition, with family-cluster bootstrap intervals. Success-superior: every \
         switch's success interval lies above zero; cost-superior: every cost interval \
         lies below zero; Pareto-nondominated: no switch is at least as good on \
         success, tokens, wall time and cost and better on one (point estimates).",
    )]);
    if let Some(summary) = rows::<SwitchSummaryRow>(tables)? {
        let mut out = Table::new(
            "Repair versus switch: incumbents for which the repair is success-superior / \
             Pareto-nondominated / cost-superior against every switch, of N; the \
             paper's published counts beside ours.",
            &[
                ("Repair (arm)", Align::Left),
                ("No-repair arm", Align::Left),
                ("Changes", Align::Left),
                ("Ours", Align::Right),
                ("Paper", Align::Right),
            ],
        );
        for r in summary {
            let paper = paper(&r.component);
            out.push(vec![
                r.repair,
                r.baseline,
                r.component,
                format!(
                    "{} / {} / {} of {}",
                    format::count(r.success_superior),
                    format::count(r.pareto_nondominated),
                    format::count(r.cost_superior),
                    format::count(r.n_incumbents)
                ),
                paper.map_or_else(|| "—".into(), |(name, q)| format!("{} ({name})", q.text())),
            ]);
        }
        s.table(out);
    }
    if let Some(comparisons) = rows::<SwitchesRow>(tables)? {
        let mut repairs: Vec<&str> = Vec::new();
        for c in &comparisons {
            if !repairs.contains(&c.repair.as_str()) {
                repairs.push(&c.repair);
            }
        }
        for r in repairs {
            // Each configuration once: its no-repair point as a switch, its repaired
            // point as an incumbent (the first pairing; a complete design has one).
            let mut switches: Vec<(&str, Point)> = Vec::new();
            let mut repaired: Vec<(&str, Point)> = Vec::new();
            for c in comparisons.iter().filter(|c| c.repair == r) {
                if !switches.iter().any(|(n, _)| *n == c.switch) {
                    let p = Point {
                        x: 1000.0 * c.cost_switch_usd,
                        y: 100.0 * c.success_switch,
                    };
                    switches.push((&c.switch, p));
                }
                if !repaired.iter().any(|(n, _)| *n == c.incumbent) {
                    let p = Point {
                        x: 1000.0 * c.cost_repair_usd,
                        y: 100.0 * c.success_repair,
                    };
                    repaired.push((&c.incumbent, p));
                }
            }
            let frontier = frontier(switches.iter().map(|(_, p)| *p).collect());
            s.figure(Figure {
                file_name: format!("report-switches-{}.svg", slug(r)),
                caption: format!(
                    "Repair `{r}` against switching: success on the stressed cells against \
                     cost per 1,000 episodes at the frozen prices. One dot per \
                     configuration without the repair (the switches, {}), one per \
                     incumbent with it ({}); the line joins the switches that no other \
                     switch beats on both success and cost (the two-criterion \
                     frontier; the table's Pareto check adds tokens and wall time).",
                    format::count(switches.len() as u64),
                    format::count(repaired.len() as u64)
                ),
                svg: figures::frontier_scatter(
                    &format!("Repair {r} versus switching"),
                    &[
                        PointSeries {
                            name: "switch (no repair)".into(),
                            points: switches.iter().map(|(_, p)| *p).collect(),
                        },
                        PointSeries {
                            name: format!("incumbent with {r}"),
                            points: repaired.iter().map(|(_, p)| *p).collect(),
                        },
                    ],
                    &frontier,
                    "cost per 1,000 episodes (USD)",
                    "success (%)",
                )?,
            });
        }
    }
    Ok(())
}

/// The points no other point beats on both success (higher) and cost (lower), by
/// increasing cost.
fn frontier(mut points: Vec<Point>) -> Vec<Point> {
    points.retain(|p| p.x.is_finite() && p.y.is_finite());
    points.sort_by(|a, b| a.x.total_cmp(&b.x).then(b.y.total_cmp(&a.y)));
    let mut out: Vec<Point> = Vec::new();
    for p in points {
        if out.last().is_none_or(|last| p.y > last.y) {
            out.push(p);
        }
    }
    out
}

/// A file-name-safe form of an arm name.
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frontier_keeps_what_nothing_cheaper_beats() {
        let p = |x, y| Point { x, y };
        let got = frontier(vec![
            p(3.0, 90.0),
            p(1.0, 50.0),
            p(2.0, 40.0),
            p(1.0, 60.0),
            p(4.0, 80.0),
        ]);
        assert_eq!(got, [p(1.0, 60.0), p(3.0, 90.0)]);
    }
}
