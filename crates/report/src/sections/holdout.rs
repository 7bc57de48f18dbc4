//! The structural holdout (paper Table 10, Figure 10): the public-handoff controller
//! and its wrong-layer control (canonical delivery) — L, Γ, Σ, Δ with intervals,
//! "activates", pooled and on the confirmatory set — and per arm and depth the
//! success, calls (the controller's among them) and model requests per episode, with
//! the paper's published values beside ours, labelled.
//!
//! Owns: the layout of the `holdout` and `holdout_arms` tables and their two figures,
//! and which row and mark each of the paper's values ([`paper::holdout`]) stands
//! beside.
//!
//! Never: computes an estimate, an interval or a test.

use tbb_tables::analyses::holdout::{ArmRole, HoldoutArmsRow, HoldoutRow, Population};
use tbb_tables::analyses::repairs::Role;
use tbb_tables::levels::level_name;
use tbb_tables::TableRow;

use super::super::document::{text, Align, Figure, Section, Table};
use super::super::figures::{self, Whisker, WhiskerSeries};
use super::super::format;
use super::super::paper::{holdout as q, Quote};
use super::super::ReportError;
use super::{absent, rows, Tables};

/// The paper's value of a quantity of the controller (layer depth) or its control
/// (layer D) in a population, where it prints one. The paper reads the pooled L and Σ
/// on the raw cells only; ours pool raw and compact.
fn paper(population: Population, layer: &str, quantity: &str) -> Option<Quote> {
    match (population, layer, quantity) {
        (Population::All, "depth", "L") => Some(q::CONTROLLER_L),
        (Population::All, "depth", "Σ") => Some(q::CONTROLLER_SIGMA),
        (Population::Confirmatory, "depth", "Γ") => Some(q::CONTROLLER_GAMMA_CONFIRMATORY),
        (Population::Confirmatory, "depth", "Δ") => Some(q::CONTROLLER_DELTA_CONFIRMATORY),
        (Population::All, "D", "L") => Some(q::CANONICAL_L),
        (Population::All, "D", "Γ") => Some(q::CANONICAL_GAMMA),
        _ => None,
    }
}

/// The paper's Table 10 per arm and depth: VTS, calls, the controller's calls,
/// requests; none where it publishes none.
fn paper_arm(role: ArmRole, depth: u32) -> [Option<Quote>; 4] {
    match (role, depth) {
        (ArmRole::Baseline, 2) => [Some(q::BASELINE_VTS_2), None, None, None],
        (ArmRole::Controller, 2) => [Some(q::CONTROLLER_VTS_2), None, None, None],
        (ArmRole::Baseline, 30) => [
            None,
            Some(q::BASELINE_CALLS_30),
            None,
            Some(q::BASELINE_REQUESTS_30),
        ],
        (ArmRole::Controller, 30) => [
            None,
            Some(q::CONTROLLER_CALLS_30),
            Some(q::CONTROLLER_BY_CONTROLLER_30),
            Some(q::CONTROLLER_REQUESTS_30),
        ],
        _ => [None; 4],
    }
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
    // Per row (repair and quantity): ours and the paper's, every configuration and
    // the confirmatory set.
    type Slots = [Option<Whisker>; 2];
    let mut whiskers: Vec<(String, Slots, Slots)> = Vec::new();
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
                .filter_map(|(name, _)| {
                    paper(population, &e.layer, name).map(|v| format!("{name} {}", v.text()))
                })
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
                let published = paper(population, &e.layer, name).and_then(|q| q.whisker());
                match whiskers.iter_mut().find(|(l, _, _)| *l == label) {
                    Some((_, slots, theirs)) => {
                        slots[k] = Some(w);
                        theirs[k] = published;
                    }
                    None => {
                        let (mut slots, mut theirs) = ([None, None], [None, None]);
                        slots[k] = Some(w);
                        theirs[k] = published;
                        whiskers.push((label, slots, theirs));
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
    s.note(vec![text(format!(
        "The paper reads the pooled L and Σ on the raw cells only and Γ, Δ on its {} \
         confirmatory configurations; ours pool the raw and compact cells. It prints no \
         Holm p, no Σ or Δ of the control, and no Γ or Δ of the controller over every \
         configuration.",
        q::CONFIRMATORY.text()
    ))]);
    if !whiskers.is_empty() {
        let rows: Vec<String> = whiskers.iter().map(|(l, _, _)| l.clone()).collect();
        let series = ["every configuration", "confirmatory set"]
            .iter()
            .enumerate()
            .map(|(k, name)| WhiskerSeries {
                name: (*name).into(),
                values: whiskers.iter().map(|(_, slots, _)| slots[k]).collect(),
            })
            .collect::<Vec<_>>();
        let paper_marks: Vec<Vec<Option<Whisker>>> = (0..2)
            .map(|k| whiskers.iter().map(|(_, _, theirs)| theirs[k]).collect())
            .collect();
        s.figure(Figure {
            file_name: "report-holdout-effects.svg".into(),
            caption: "The controller's and canonical delivery's L, Γ, Σ and Δ with 95% \
                      family-cluster intervals, over every configuration and on the \
                      confirmatory set; the paper's published values are the black \
                      diamonds below ours (legend \"paper\"; every configuration above \
                      the confirmatory set)."
                .into(),
            svg: figures::dot_whisker(
                "Structural holdout: effects (pp)",
                &rows,
                &series,
                &paper_marks,
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
    let mut paper_marks: [Vec<Option<Whisker>>; 3] = Default::default();
    for r in rows {
        let published = paper_arm(r.role, r.depth);
        let shown =
            |k: usize| published[k].map_or_else(|| format::MISSING.to_string(), |q| q.text());
        // The paper does not print the baseline's controller calls where it prints
        // the baseline's calls: no controller runs in it, so they are 0 by
        // construction, not a quoted value.
        let by_controller = if r.role == ArmRole::Baseline && published[1].is_some() {
            "0 (by construction)".to_string()
        } else {
            shown(2)
        };
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
            shown(0),
            shown(1),
            by_controller,
            shown(3),
        ]);
        labels.push(format!("{role} · {} calls", r.depth));
        for (k, quote) in published[1..].iter().enumerate() {
            paper_marks[k].push(quote.and_then(|q| q.whisker()));
        }
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
                      model requests however deep the chain. The black diamonds (legend \
                      \"paper\") are the paper's Table 10 values at 30 calls, each below \
                      ours in the same order (calls, the controller's, requests)."
                .into(),
            svg: figures::dot_whisker(
                "Structural holdout: calls and requests per episode",
                &labels,
                &series,
                &paper_marks,
                "per episode",
            )?,
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use tbb_analysis::repair::holdout;

    /// The report of the analysis's tables on the hand-built episodes of its own tests.
    pub(crate) fn rendered() -> crate::Rendered {
        let episodes = holdout::tests::episodes();
        super::super::testing::rendered(
            &holdout::Holdout,
            "holdout",
            &episodes,
            r#"{"draws": 200, "seed": 7, "confirmatory": ["c1"]}"#,
        )
    }

    /// The section, rendered from [`rendered`].
    #[test]
    fn the_structural_holdout_section() {
        let r = rendered();
        assert_eq!(r.figures.len(), 2);
        insta::assert_snapshot!(super::super::testing::section(&r, "## Structural holdout"));
    }
}
