//! The structural holdout (paper Table 10, Figure 10): the public-handoff controller
//! and its wrong-layer control (canonical delivery) — L, Γ, Σ, Δ with intervals,
//! "activates", pooled and on the confirmatory set — and per arm and depth the
//! success, calls (the controller's among them) and model requests per episode, with
//! the paper's published values beside ours, labelled.
//!
//! Owns: the layout of the `holdout` and `holdout_arms` tables and their two figures,
//! and the paper's values it quotes.
//!
//! Never: computes an estimate, an interval or a test.

use tbb_tables::analyses::holdout::{ArmRole, HoldoutArmsRow, HoldoutRow, Population};
use tbb_tables::analyses::repairs::Role;
use tbb_tables::levels::level_name;
use tbb_tables::TableRow;

use super::super::document::{text, Align, Figure, Section, Table};
use super::super::figures::{self, Whisker, WhiskerSeries};
use super::super::format;
use super::super::ReportError;
use super::{absent, rows, Tables};

/// The paper's values per (population, layer, quantity), as published. The paper
/// reads the pooled L and Σ on the raw cells only; ours pool raw and compact.
const PAPER: [(Population, &str, &str, &str); 6] = [
    (Population::All, "depth", "L", "96.1 [93.6, 98.0]"),
    (Population::All, "depth", "Σ", "95.1 [92.6, 97.3]"),
    (Population::Confirmatory, "depth", "Γ", "95.8 [89.6, 100.0]"),
    (Population::Confirmatory, "depth", "Δ", "93.8 [85.4, 102.1]"),
    (Population::All, "D", "L", "-1.2 [-3.7, 1.2]"),
    (Population::All, "D", "Γ", "-0.2 [-2.5, 1.7]"),
];

/// The paper's Table 10 per (role, depth): VTS, calls, the controller's calls,
/// requests; "—" where it publishes none. The baseline's controller calls are not
/// printed by the paper: no controller runs in it, so they are 0 by construction.
const PAPER_ARMS: [(ArmRole, u32, &str, &str, &str, &str); 3] = [
    (ArmRole::Baseline, 2, "96.7%", "—", "—", "—"),
    (ArmRole::Controller, 2, "97.4%", "—", "—", "—"),
    (
        ArmRole::Baseline,
        30,
        "—",
        "18.9",
        "0 (by construction)",
        "19.8",
    ),
];

/// The paper's controller at 30 calls.
const PAPER_CONTROLLER_30: (&str, &str, &str) = ("29.9", "28.7", "2.2");

fn paper(population: Population, layer: &str, quantity: &str) -> String {
    PAPER
        .iter()
        .find(|p| p.0 == population && p.1 == layer && p.2 == quantity)
        .map_or("—".into(), |p| p.3.to_string())
}

/// Fills the holdout section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    s.paragraph(vec![text(
        "The controller follows the hand-offs the returned records name and issues \
         those calls itself; the model makes the first call and writes the answer (and \
         any change of state the decision calls for). Its layer is the chain's depth, \
         2 → 30 required calls; its wrong-layer control is canonical delivery, which \
         returns every record raw whatever the cell's encoding (layer D, raw → compact). \
         μ is the mean success at the unstressed (0) and stressed (1) level; \
         L = μ⁰₀ − μ⁰₁, Γ = μ¹₁ − μ⁰₁, Σ = Γ − (μ¹₀ − μ⁰₀), Δ = the repair's Σ minus its \
         control's on the same cells. Intervals: 95% family-cluster bootstrap (one \
         family per held-out intent). The controller activates when L, Γ, Σ and Δ are \
         all positive by an intersection-union test, Holm-corrected with its control.",
    )]);
    match rows::<HoldoutRow>(tables)? {
        Some(rows) => effects(&rows, s)?,
        None => s.note(absent("The effects", "holdout", "holdout")),
    }
    match rows::<HoldoutArmsRow>(tables)? {
        Some(rows) => arms(&rows, s)?,
        None => s.note(absent(
            "Calls and requests per arm",
            "holdout_arms",
            "holdout",
        )),
    }
    Ok(())
}

/// A missing value as the formatters' "—".
fn or_nan(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

/// A quantity's (estimate, low, high) on a row, as the formatters read them.
type Quantity = fn(&HoldoutRow) -> [Option<f64>; 3];

fn effects(rows: &[HoldoutRow], s: &mut Section) -> Result<(), ReportError> {
    let quantities: [(&str, Quantity); 4] = [
        ("L", |r| {
            let e = &r.effects;
            [e.l_pp, e.l_pp_ci_low, e.l_pp_ci_high]
        }),
        ("Γ", |r| {
            let e = &r.effects;
            [e.gamma_pp, e.gamma_pp_ci_low, e.gamma_pp_ci_high]
        }),
        ("Σ", |r| {
            let e = &r.effects;
            [e.sigma_pp, e.sigma_pp_ci_low, e.sigma_pp_ci_high]
        }),
        ("Δ", |r| {
            let e = &r.effects;
            [e.delta_pp, e.delta_pp_ci_low, e.delta_pp_ci_high]
        }),
    ];
    let mut out = Table::new(
        "The controller (layer depth) and canonical delivery (layer D), each with the \
         other as its wrong-layer control (pp); ours beside the paper's (labelled \
         \"paper\").",
        &[
            ("Configurations", Align::Left),
            ("Layer", Align::Left),
            ("Repair", Align::Left),
            ("Role", Align::Left),
            ("L", Align::Right),
            ("Γ", Align::Right),
            ("Σ", Align::Right),
            ("Δ", Align::Right),
            ("Holm p", Align::Right),
            ("Activates", Align::Right),
            ("Paper", Align::Left),
        ],
    );
    let mut whiskers: Vec<(String, [Option<Whisker>; 2])> = Vec::new();
    let mut notes = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let population = r.population.ok_or_else(|| ReportError::NullValue {
            table: HoldoutRow::TABLE.into(),
            column: "population".into(),
            row: i,
        })?;
        let e = &r.effects;
        if !e.estimable {
            notes.push(format!(
                "Not estimable — {} {} ({}): {}.",
                level_name(&population),
                e.layer,
                e.repair,
                e.note.clone().unwrap_or_default()
            ));
            continue;
        }
        let cell = |q: [Option<f64>; 3]| {
            format::effect_with_interval(or_nan(q[0]), or_nan(q[1]), or_nan(q[2]))
        };
        let own = e.role == Role::Repair;
        let published: Vec<String> = if own {
            quantities
                .iter()
                .map(|(name, _)| (name, paper(population, &e.layer, name)))
                .filter(|(_, v)| v != "—")
                .map(|(name, v)| format!("{name} {v}"))
                .collect()
        } else {
            Vec::new()
        };
        out.push(vec![
            format!(
                "{} ({})",
                level_name(&population),
                format::count(u64::from(e.n_configurations))
            ),
            e.layer.clone(),
            e.repair.clone(),
            level_name(&e.role).replace('_', " "),
            cell(quantities[0].1(r)),
            cell(quantities[1].1(r)),
            cell(quantities[2].1(r)),
            cell(quantities[3].1(r)),
            if own {
                format::p_value(or_nan(e.p_holm), e.p_floor)
            } else {
                "—".into()
            },
            e.activates
                .map_or("—".into(), |a| if a { "yes" } else { "no" }.into()),
            if published.is_empty() {
                "—".into()
            } else {
                published.join("; ")
            },
        ]);
        if own {
            for (name, q) in &quantities {
                let [estimate, low, high] = q(r).map(or_nan);
                let w = Whisker {
                    estimate,
                    low,
                    high,
                };
                let label = format!("{} {name}", e.repair.replace('_', " "));
                let k = usize::from(population != Population::All);
                match whiskers.iter_mut().find(|(l, _)| *l == label) {
                    Some((_, slots)) => slots[k] = Some(w),
                    None => {
                        let mut slots = [None, None];
                        slots[k] = Some(w);
                        whiskers.push((label, slots));
                    }
                }
            }
        }
    }
    s.table(out);
    for n in notes {
        s.note(vec![text(n)]);
    }
    if let Some(n) = rows
        .iter()
        .filter_map(|r| r.effects.note.as_ref())
        .find(|n| n.contains("±200"))
    {
        s.note(vec![text(format!("On Δ: {n}."))]);
    }
    s.note(vec![text(
        "The paper reads the pooled L and Σ on the raw cells only and Γ, Δ on its two \
         confirmatory configurations; ours pool the raw and compact cells.",
    )]);
    if !whiskers.is_empty() {
        let rows: Vec<String> = whiskers.iter().map(|(l, _)| l.clone()).collect();
        let series = ["every configuration", "confirmatory set"]
            .iter()
            .enumerate()
            .map(|(k, name)| WhiskerSeries {
                name: (*name).into(),
                values: whiskers.iter().map(|(_, slots)| slots[k]).collect(),
            })
            .collect::<Vec<_>>();
        s.figure(Figure {
            file_name: "report-holdout-effects.svg".into(),
            caption: "The controller's and canonical delivery's L, Γ, Σ and Δ with 95% \
                      family-cluster intervals, over every configuration and on the \
                      confirmatory set."
                .into(),
            svg: figures::dot_whisker(
                "Structural holdout: effects (pp)",
                &rows,
                &series,
                "percentage points",
            )?,
        });
    }
    Ok(())
}

fn arms(rows: &[HoldoutArmsRow], s: &mut Section) -> Result<(), ReportError> {
    let mut out = Table::new(
        "Per arm and depth (raw and compact pooled): success, executed calls, the \
         controller's share of them and model requests per episode; ours beside the \
         paper's Table 10 (labelled \"paper\", — where it publishes none).",
        &[
            ("Arm", Align::Left),
            ("Depth", Align::Right),
            ("Episodes", Align::Right),
            ("VTS", Align::Right),
            ("Calls", Align::Right),
            ("By controller", Align::Right),
            ("Requests", Align::Right),
            ("Tokens", Align::Right),
            ("Budget/call limit", Align::Right),
            ("Paper VTS", Align::Right),
            ("Paper calls", Align::Right),
            ("Paper by controller", Align::Right),
            ("Paper requests", Align::Right),
        ],
    );
    let mut labels = Vec::new();
    let mut series: Vec<WhiskerSeries> = [
        "executed calls",
        "of which the controller's",
        "model requests",
    ]
    .iter()
    .map(|name| WhiskerSeries {
        name: (*name).into(),
        values: Vec::new(),
    })
    .collect();
    for r in rows {
        let published = PAPER_ARMS
            .iter()
            .find(|p| p.0 == r.role && p.1 == r.depth)
            .map(|p| [p.2, p.3, p.4, p.5])
            .or_else(|| {
                (r.role == ArmRole::Controller && r.depth == 30).then_some([
                    "—",
                    PAPER_CONTROLLER_30.0,
                    PAPER_CONTROLLER_30.1,
                    PAPER_CONTROLLER_30.2,
                ])
            })
            .unwrap_or(["—"; 4]);
        let one = |x: f64| format::fixed(x, 1);
        let role = level_name(&r.role).replace('_', " ");
        out.push(vec![
            role.clone(),
            r.depth.to_string(),
            format::count(u64::from(r.n_episodes)),
            format::percent(r.vts),
            one(r.calls_per_episode),
            one(r.controller_calls_per_episode),
            one(r.requests_per_episode),
            format::whole(r.tokens_per_episode),
            format::count(u64::from(r.n_budget_or_call_limit)),
            published[0].into(),
            published[1].into(),
            published[2].into(),
            published[3].into(),
        ]);
        labels.push(format!("{role} · {} calls", r.depth));
        for (k, x) in [
            r.calls_per_episode,
            r.controller_calls_per_episode,
            r.requests_per_episode,
        ]
        .into_iter()
        .enumerate()
        {
            series[k].values.push(Some(Whisker {
                estimate: x,
                low: x,
                high: x,
            }));
        }
    }
    s.table(out);
    if !labels.is_empty() {
        s.figure(Figure {
            file_name: "report-holdout-calls.svg".into(),
            caption: "Executed calls (the controller's among them) and model requests per \
                      episode, per arm and depth: the controller's episodes cost about two \
                      model requests however deep the chain."
                .into(),
            svg: figures::dot_whisker(
                "Structural holdout: calls and requests per episode",
                &labels,
                &series,
                "per episode",
            )?,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tbb_analysis::repair::holdout;

    /// The section, rendered from the analysis's tables on the hand-built episodes of
    /// its own tests.
    #[test]
    fn the_structural_holdout_section() {
        let episodes = holdout::tests::episodes();
        let r = super::super::testing::rendered(
            &holdout::Holdout,
            "holdout",
            &episodes,
            r#"{"draws": 200, "seed": 7, "confirmatory": ["c1"]}"#,
        );
        assert_eq!(r.figures.len(), 2);
        insta::assert_snapshot!(super::super::testing::section(&r, "## Structural holdout"));
    }
}
