//! The repairs study and its sentinel repeats (paper Section 4.3): each layer's repair
//! against its own pressure and its wrong-layer controls (L, Γ, Σ, Δ, activation,
//! equivalence margins), the generic-rescue benchmark, and the repeats' agreement and
//! re-estimated gains — with the paper's published values beside ours, labelled.
//!
//! Owns: the layout of the `repairs` and `sentinel` tables in the report, and which
//! row each of the paper's values ([`paper::repairs`], [`paper::sentinel`]) stands
//! beside.
//!
//! Invariants: rows in the order the analyses wrote them; a missing value is "—".
//!
//! Never: computes an estimate, an interval, a test or a margin.

use tbb_tables::analyses::repairs::{RepairsRow, Role};
use tbb_tables::analyses::sentinel::SentinelRow;

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::paper::{repairs as q, sentinel as sq, Quote};
use super::super::ReportError;
use super::{rows, Tables};

/// The paper's L, Γ, Σ and margin of a repair's row (its generic-rescue benchmark
/// for the benchmark row), where it prints them.
fn paper_repair(role: Role, repair: &str) -> [Option<Quote>; 4] {
    match (role, repair) {
        (Role::GenericRescueBenchmark, _) => [
            Some(q::BENCHMARK_L),
            Some(q::BENCHMARK_GAMMA),
            Some(q::BENCHMARK_SIGMA),
            None,
        ],
        (_, "routed_menu") => [
            Some(q::ROUTED_MENU_L),
            None,
            Some(q::ROUTED_MENU_SIGMA),
            None,
        ],
        (_, "workflow_prompt") => [
            Some(q::WORKFLOW_PROMPT_L),
            None,
            Some(q::WORKFLOW_PROMPT_SIGMA),
            Some(q::WORKFLOW_PROMPT_MARGIN),
        ],
        (_, "interface_guide") => [
            Some(q::INTERFACE_GUIDE_L),
            None,
            Some(q::INTERFACE_GUIDE_SIGMA),
            Some(q::INTERFACE_GUIDE_MARGIN),
        ],
        _ => [None; 4],
    }
}

/// The paper's repeated gain of a repair.
fn paper_gain(repair: &str) -> Option<Quote> {
    match repair {
        "routed_menu" => Some(sq::ROUTED_MENU_GAIN),
        "workflow_prompt" => Some(sq::WORKFLOW_PROMPT_GAIN),
        "interface_guide" => Some(sq::INTERFACE_GUIDE_GAIN),
        _ => None,
    }
}

/// A quote's text, or "—".
fn shown(q: Option<Quote>) -> String {
    q.map_or_else(|| "—".to_string(), |q| q.text())
}

/// A missing value as the formatters' "—".
fn or_nan(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

/// Fills the repairs section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(repairs) = rows::<RepairsRow>(tables)? else {
        return Ok(());
    };
    s.paragraph(vec![text(
        "For each layer, μ is the mean success at the unstressed (0) and stressed (1) \
         level under the no-repair arm (fixed menu, base prompt) and under a repair. \
         L = μ⁰₀ − μ⁰₁ is the loss under the pressure, Γ = μ¹ − μ⁰ at the stressed level \
         the repair's stress gain, Σ = Γ minus the same difference unstressed its \
         selectivity, and Δ the own repair's Σ minus the best wrong-layer control's Σ on \
         the same cells. Intervals: 95% family-cluster percentile bootstrap. A repair \
         activates when the intersection-union test of L, Γ, Σ > 0 rejects after Holm's \
         correction over the layers; the margin is the smallest symmetric equivalence \
         margin at which two one-sided tests reject a stress gain (Γ) outside it at 5% \
         (on Σ in brackets).",
    )]);
    let mut own = Table::new(
        format!(
            "Each layer's repair on its own cells (pp), ours beside the paper's (labelled \
             \"paper\"); the last row is the generic-rescue benchmark, (p₀, p₁, r) = \
             ({}, {}, {}) as in the paper, computed by the same formulas.",
            q::BENCHMARK_P0.text(),
            q::BENCHMARK_P1.text(),
            q::BENCHMARK_R.text()
        ),
        &[
            ("Layer", Align::Left),
            ("Repair", Align::Left),
            ("Cells", Align::Right),
            ("L", Align::Right),
            ("Γ", Align::Right),
            ("Σ", Align::Right),
            ("Δ", Align::Right),
            ("IUT p", Align::Right),
            ("Holm p", Align::Right),
            ("Activates", Align::Right),
            ("Margin", Align::Right),
            ("Paper L", Align::Right),
            ("Paper Γ", Align::Right),
            ("Paper Σ", Align::Right),
            ("Paper margin", Align::Right),
        ],
    );
    let mut controls = Table::new(
        "Wrong-layer controls: the other layers' repairs on the same cells (pp).",
        &[
            ("Layer", Align::Left),
            ("Control", Align::Left),
            ("Γ", Align::Right),
            ("Σ", Align::Right),
            ("Margin", Align::Right),
        ],
    );
    let iv = |x: Option<f64>, lo: Option<f64>, hi: Option<f64>| {
        format::effect_with_interval(or_nan(x), or_nan(lo), or_nan(hi))
    };
    let gamma = |r: &RepairsRow| iv(r.gamma_pp, r.gamma_pp_ci_low, r.gamma_pp_ci_high);
    let sigma = |r: &RepairsRow| iv(r.sigma_pp, r.sigma_pp_ci_low, r.sigma_pp_ci_high);
    let margin_of = |r: &RepairsRow| match r.tost_margin_pp {
        Some(margin) if margin.is_finite() => format!(
            "{} [{}]",
            format::fixed(margin, 1),
            format::fixed(or_nan(r.tost_margin_sigma_pp), 1)
        ),
        _ => "—".into(),
    };
    let mut unestimable = Vec::new();
    let mut n_controls = 0;
    for r in &repairs {
        if !r.estimable {
            unestimable.push(format!(
                "{} ({}): {}",
                r.layer,
                r.repair,
                r.note.clone().unwrap_or_default()
            ));
            continue;
        }
        match r.role {
            Role::WrongLayerControl => {
                n_controls += 1;
                controls.push(vec![
                    r.layer.clone(),
                    r.repair.clone(),
                    gamma(r),
                    sigma(r),
                    margin_of(r),
                ]);
            }
            Role::Repair | Role::GenericRescueBenchmark => {
                let [paper_l, paper_gamma, paper_sigma, paper_margin] =
                    paper_repair(r.role, &r.repair);
                own.push(vec![
                    r.layer.clone(),
                    r.repair.clone(),
                    if r.n_cells == 0 {
                        "—".into()
                    } else {
                        format::count(u64::from(r.n_cells))
                    },
                    iv(r.l_pp, r.l_pp_ci_low, r.l_pp_ci_high),
                    gamma(r),
                    sigma(r),
                    iv(r.delta_pp, r.delta_pp_ci_low, r.delta_pp_ci_high),
                    format::p_value(or_nan(r.p_iut), r.p_floor),
                    format::plain_p(or_nan(r.p_holm)),
                    r.activates
                        .map_or("—".into(), |a| if a { "yes" } else { "no" }.into()),
                    margin_of(r),
                    shown(paper_l),
                    shown(paper_gamma),
                    shown(paper_sigma),
                    shown(paper_margin),
                ]);
            }
        }
    }
    s.table(own);
    if n_controls > 0 {
        s.table(controls);
    }
    for line in unestimable {
        s.note(vec![text(format!("Not estimable — {line}."))]);
    }
    s.note(vec![text(format!(
        "The paper's values (labelled \"paper\") are its {}-configuration panel's; it does \
         not publish Γ or Δ for these repairs, nor the routed menu's margin or any \
         wrong-layer control's, and its router (layer R) is reported with the discovery \
         study.",
        q::PROMPT_CONFIGURATIONS.text()
    ))]);
    Ok(())
}

/// Fills the sentinel section.
pub(crate) fn sentinel(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(sentinel) = rows::<SentinelRow>(tables)? else {
        return Ok(());
    };
    let mut table = Table::new(
        "Sentinel repeats: each layer's pair (no-repair arm and repair on its stressed \
         cell) run several times; shares of condition groups, and the repair's stress \
         gain Γ over the repeats (pp, family-cluster interval). The paper's values are \
         labelled \"paper\".",
        &[
            ("Scope", Align::Left),
            ("Repair", Align::Left),
            ("Cell", Align::Left),
            ("Groups", Align::Right),
            ("Runs", Align::Right),
            ("pass@1", Align::Right),
            ("All runs", Align::Right),
            ("Any run", Align::Right),
            ("Disagreement", Align::Right),
            ("Gain", Align::Right),
            ("Paper gain", Align::Right),
        ],
    );
    for row in &sentinel {
        let r = row.repair.clone().unwrap_or_default();
        table.push(vec![
            row.scope.clone(),
            if r.is_empty() {
                "—".into()
            } else {
                r.clone()
            },
            row.cells.clone(),
            format::count(u64::from(row.n_groups)),
            format!(
                "{} ({} each)",
                format::count(u64::from(row.n_runs)),
                row.runs_max
            ),
            format::percent(row.pass_at_1),
            format::percent(row.all_runs),
            format::percent(row.any_run),
            format::percent(row.disagreement),
            format::effect_with_interval(
                or_nan(row.gain_pp),
                or_nan(row.gain_pp_ci_low),
                or_nan(row.gain_pp_ci_high),
            ),
            shown(paper_gain(&r)),
        ]);
    }
    // The paper's gains of repairs this study did not repeat, as its own rows.
    for repair in ["routed_menu", "workflow_prompt", "interface_guide"] {
        if !sentinel
            .iter()
            .any(|row| row.repair.as_deref() == Some(repair))
        {
            let mut row = vec!["paper".to_string(), repair.to_string()];
            row.extend(std::iter::repeat_n("—".to_string(), 8));
            row.push(shown(paper_gain(repair)));
            table.push(row);
        }
    }
    table.push(vec![
        "paper".into(),
        "—".into(),
        format!(
            "{} groups, {} configurations, {} families",
            sq::GROUPS.text(),
            sq::CONFIGURATIONS.text(),
            sq::FAMILIES.text()
        ),
        sq::GROUPS.text(),
        format!("{} ({} each)", sq::ROWS.text(), sq::RUNS_EACH.text()),
        sq::PASS_AT_1.text(),
        sq::ALL_RUNS.text(),
        sq::ANY_RUN.text(),
        sq::DISAGREEMENT.text(),
        "—".into(),
        "—".into(),
    ]);
    s.table(table);
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use tbb_analysis::repair::{repairs, sentinel};
    use tbb_analysis::{Context, Kind};

    /// The report of the analyses' tables on hand-built episodes (the panels of the
    /// analyses' own tests).
    pub(crate) fn rendered() -> crate::Rendered {
        let mut tables = BTreeMap::new();
        for (kind, episodes, params) in [
            (
                &repairs::Repairs as &dyn Kind,
                repairs::tests::panel(),
                r#"{"draws": 100, "seed": 1}"#,
            ),
            (
                &sentinel::Sentinel as &dyn Kind,
                sentinel::tests::panel(),
                r#"{"draws": 200, "seed": 3}"#,
            ),
        ] {
            let params = serde_json::from_str(params).unwrap_or_else(|e| panic!("{e}"));
            let context = Context {
                study: "repairs",
                episodes: &episodes,
                requests: &tbb_analysis::NO_REQUESTS,
                tables: &BTreeMap::new(),
                skipped: &[],
            };
            let produced = kind
                .run(&params, &context)
                .unwrap_or_else(|e| panic!("{e}"));
            for out in produced.tables {
                tables.insert(out.table.to_string(), out.batch);
            }
        }
        crate::render("repairs", &tables, &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The two sections, rendered from [`rendered`].
    #[test]
    fn the_repairs_and_sentinel_sections() {
        let r = rendered();
        let from = r.markdown.find("## Repairs against").unwrap_or(0);
        let to = r.markdown.rfind("<!--").unwrap_or(r.markdown.len());
        insta::assert_snapshot!(&r.markdown[from..to]);
    }
}
