//! The repairs study and its sentinel repeats (paper Section 4.3): each layer's repair
//! against its own pressure and its wrong-layer controls (L, Γ, Σ, Δ, activation,
//! equivalence margins), the generic-rescue benchmark, and the repeats' agreement and
//! re-estimated gains — with the paper's published values beside ours, labelled.
//!
//! Owns: the layout of the `repairs` and `sentinel` tables in the report, and the
//! paper's values it quotes.
//!
//! Invariants: rows in the order the analyses wrote them; a missing value is "—".
//!
//! Never: computes an estimate, an interval, a test or a margin.

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::ReportError;
use super::{table, Tables};

/// The paper's values per repair: (repair, L, Σ, margin), as published.
const PAPER_REPAIRS: [(&str, &str, &str, &str); 3] = [
    ("routed_menu", "17.5 [14.9, 20.2]", "4.9 [2.2, 7.5]", "—"),
    (
        "workflow_prompt",
        "2.4 [-0.4, 5.0]",
        "0.0 [-2.4, 2.4]",
        "3.6",
    ),
    (
        "interface_guide",
        "1.5 [-0.1, 3.1]",
        "0.7 [-1.7, 3.1]",
        "1.7",
    ),
];

/// The paper's repeated gains per repair.
const PAPER_GAINS: [(&str, &str); 3] = [
    ("routed_menu", "7.1 [2.5, 11.7]"),
    ("workflow_prompt", "-1.2 [-2.5, 0.0]"),
    ("interface_guide", "-0.4 [-3.3, 2.5]"),
];

fn paper<'a>(list: &'a [(&str, &'a str)], repair: &str) -> &'a str {
    list.iter()
        .find(|(r, _)| *r == repair)
        .map_or("—", |(_, v)| v)
}

/// Fills the repairs section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(t) = table(tables, "repairs") else {
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
    let (layer, repair, role) = (t.text("layer")?, t.text("repair")?, t.text("role")?);
    let estimable = t.flag("estimable")?;
    let note = t.text_opt("note")?;
    let cells = t.int("n_cells")?;
    let col = |name: &str| t.float(name);
    let (l, l_lo, l_hi) = (col("l_pp")?, col("l_pp_ci_low")?, col("l_pp_ci_high")?);
    let (g, g_lo, g_hi) = (
        col("gamma_pp")?,
        col("gamma_pp_ci_low")?,
        col("gamma_pp_ci_high")?,
    );
    let (sg, sg_lo, sg_hi) = (
        col("sigma_pp")?,
        col("sigma_pp_ci_low")?,
        col("sigma_pp_ci_high")?,
    );
    let (d, d_lo, d_hi) = (
        col("delta_pp")?,
        col("delta_pp_ci_low")?,
        col("delta_pp_ci_high")?,
    );
    let (p_iut, p_holm, floor) = (col("p_iut")?, col("p_holm")?, col("p_floor")?);
    let activates = t.flag_opt("activates")?;
    let (margin, margin_sigma) = (col("tost_margin_pp")?, col("tost_margin_sigma_pp")?);
    let mut own = Table::new(
        "Each layer's repair on its own cells (pp), ours beside the paper's (labelled \
         \"paper\"); the last row is the generic-rescue benchmark, (p₀, p₁, r) = \
         (0.8, 0.4, 0.5), computed by the same formulas.",
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
    let iv = |x: &[f64], lo: &[f64], hi: &[f64], i: usize| {
        format::effect_with_interval(x[i], lo[i], hi[i])
    };
    let margin_of = |i: usize| {
        if margin[i].is_finite() {
            format!(
                "{} [{}]",
                format::fixed(margin[i], 1),
                format::fixed(margin_sigma[i], 1)
            )
        } else {
            "—".into()
        }
    };
    let mut unestimable = Vec::new();
    let mut n_controls = 0;
    for i in 0..t.len() {
        if !estimable[i] {
            unestimable.push(format!(
                "{} ({}): {}",
                layer[i],
                repair[i],
                note[i].clone().unwrap_or_default()
            ));
            continue;
        }
        match role[i].as_str() {
            "wrong_layer_control" => {
                n_controls += 1;
                controls.push(vec![
                    layer[i].clone(),
                    repair[i].clone(),
                    iv(&g, &g_lo, &g_hi, i),
                    iv(&sg, &sg_lo, &sg_hi, i),
                    margin_of(i),
                ]);
            }
            _ => {
                let find = |list: &[(&str, &str, &str, &str)], k: usize| {
                    list.iter()
                        .find(|x| x.0 == repair[i])
                        .map_or("—".to_string(), |x| [x.1, x.2, x.3][k].to_string())
                };
                own.push(vec![
                    layer[i].clone(),
                    repair[i].clone(),
                    if cells[i] == 0 {
                        "—".into()
                    } else {
                        format::count(cells[i])
                    },
                    iv(&l, &l_lo, &l_hi, i),
                    iv(&g, &g_lo, &g_hi, i),
                    iv(&sg, &sg_lo, &sg_hi, i),
                    iv(&d, &d_lo, &d_hi, i),
                    format::p_value(p_iut[i], floor[i]),
                    format::plain_p(p_holm[i]),
                    activates[i].map_or("—".into(), |a| if a { "yes" } else { "no" }.into()),
                    margin_of(i),
                    find(&PAPER_REPAIRS, 0),
                    find(&PAPER_REPAIRS, 1),
                    find(&PAPER_REPAIRS, 2),
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
    s.note(vec![text(
        "The paper's values (labelled \"paper\") are its 21-configuration panel's; it does \
         not publish Γ or Δ for these repairs, and its router (layer R) is reported with \
         the discovery study.",
    )]);
    Ok(())
}

/// Fills the sentinel section.
pub(crate) fn sentinel(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(t) = table(tables, "sentinel") else {
        return Ok(());
    };
    let (scope, repair, cells) = (t.text("scope")?, t.text_opt("repair")?, t.text("cells")?);
    let (groups, runs, runs_max) = (t.int("n_groups")?, t.int("n_runs")?, t.int("runs_max")?);
    let (pass, all, any, dis) = (
        t.float("pass_at_1")?,
        t.float("all_runs")?,
        t.float("any_run")?,
        t.float("disagreement")?,
    );
    let (g, lo, hi) = (
        t.float("gain_pp")?,
        t.float("gain_pp_ci_low")?,
        t.float("gain_pp_ci_high")?,
    );
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
    for i in 0..t.len() {
        let r = repair[i].clone().unwrap_or_default();
        table.push(vec![
            scope[i].clone(),
            if r.is_empty() {
                "—".into()
            } else {
                r.clone()
            },
            cells[i].clone(),
            format::count(groups[i]),
            format!("{} ({} each)", format::count(runs[i]), runs_max[i]),
            format::percent(pass[i]),
            format::percent(all[i]),
            format::percent(any[i]),
            format::percent(dis[i]),
            format::effect_with_interval(g[i], lo[i], hi[i]),
            paper(&PAPER_GAINS, &r).to_string(),
        ]);
    }
    table.push(vec![
        "paper".into(),
        "—".into(),
        "480 groups, 20 configurations, 4 families".into(),
        "480".into(),
        "1,440 (3 each)".into(),
        "89.7%".into(),
        "82.7%".into(),
        "94.8%".into(),
        "12.1%".into(),
        "—".into(),
        "—".into(),
    ]);
    s.table(table);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tbb_analysis::repair::{repairs, sentinel};
    use tbb_analysis::{Context, Kind};

    /// The two sections, rendered from the analyses' tables on hand-built episodes
    /// (the panels of the analyses' own tests).
    #[test]
    fn the_repairs_and_sentinel_sections() {
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
                requests: &[],
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
        let r = crate::render("repairs", &tables, &[]).unwrap_or_else(|e| panic!("{e}"));
        let from = r.markdown.find("## Repairs against").unwrap_or(0);
        let to = r.markdown.rfind("<!--").unwrap_or(r.markdown.len());
        insta::assert_snapshot!(&r.markdown[from..to]);
    }
}
