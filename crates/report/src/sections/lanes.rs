//! The lanes section (paper Appendix D, last paragraph): routed minus fixed menu lane,
//! with its cluster-bootstrap interval, and what the fixed lane costs in tokens and
//! schema exposures per episode.
//!
//! Owns: the layout of the `lanes` table in the report.
//!
//! Invariants: one pair of tables per completion cap, caps ascending; scopes and
//! cluster units in the order written. Token and exposure figures do not depend on
//! the cluster unit, so the cost table shows each scope once (its first row).
//!
//! Never: computes a difference, interval or exposure.

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::ReportError;
use super::{first_seen, table, unit_plural, Tables};

/// One row of `lanes`.
struct LaneRow {
    cap: u64,
    scope: String,
    cluster_unit: String,
    n_clusters: u64,
    pairs: u64,
    unpaired_routed: u64,
    unpaired_fixed: u64,
    routed_vts: f64,
    fixed_vts: f64,
    estimate: f64,
    low: f64,
    high: f64,
    p: f64,
    p_floor: f64,
    draws: u64,
    routed_tokens: f64,
    fixed_tokens: f64,
    extra_tokens: f64,
    routed_exposures: f64,
    fixed_exposures: f64,
    extra_exposures: f64,
}

fn rows(tables: &Tables) -> Result<Vec<LaneRow>, ReportError> {
    let Some(t) = table(tables, "lanes") else {
        return Ok(Vec::new());
    };
    let (scope, unit) = (t.text("scope")?, t.text("cluster_unit")?);
    let (cap, n_clusters, pairs, ur, uf, draws) = (
        t.int("completion_cap")?,
        t.int("n_clusters")?,
        t.int("pairs")?,
        t.int("unpaired_routed")?,
        t.int("unpaired_fixed")?,
        t.int("draws")?,
    );
    let (routed_vts, fixed_vts, estimate, low, high, p, p_floor) = (
        t.float("routed_vts")?,
        t.float("fixed_vts")?,
        t.float("estimate_pp")?,
        t.float("ci_low_pp")?,
        t.float("ci_high_pp")?,
        t.float("p_value")?,
        t.float("p_floor")?,
    );
    let (rt, ft, et, re, fe, ee) = (
        t.float("routed_tokens_per_episode")?,
        t.float("fixed_tokens_per_episode")?,
        t.float("fixed_extra_tokens_per_episode")?,
        t.float("routed_schema_exposures_per_episode")?,
        t.float("fixed_schema_exposures_per_episode")?,
        t.float("fixed_extra_schema_exposures_per_episode")?,
    );
    Ok((0..t.len())
        .map(|i| LaneRow {
            cap: cap[i],
            scope: scope[i].clone(),
            cluster_unit: unit[i].clone(),
            n_clusters: n_clusters[i],
            pairs: pairs[i],
            unpaired_routed: ur[i],
            unpaired_fixed: uf[i],
            routed_vts: routed_vts[i],
            fixed_vts: fixed_vts[i],
            estimate: estimate[i],
            low: low[i],
            high: high[i],
            p: p[i],
            p_floor: p_floor[i],
            draws: draws[i],
            routed_tokens: rt[i],
            fixed_tokens: ft[i],
            extra_tokens: et[i],
            routed_exposures: re[i],
            fixed_exposures: fe[i],
            extra_exposures: ee[i],
        })
        .collect())
}

/// `all` reads as "all cells"; `v=128` as "V = 128".
fn scope_label(scope: &str) -> String {
    match scope.strip_prefix("v=") {
        Some(v) => format!("V = {v}"),
        None if scope == "all" => "all cells".into(),
        None => scope.into(),
    }
}

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let rows = rows(tables)?;
    s.paragraph(vec![text(
        "The routed lane shows the full menu until the first executed call to an \
         operational tool, then only the operational tools; the fixed lane keeps the \
         full menu throughout. A pair is the same family, configuration, cell, cap and \
         repeat in both lanes. A schema exposure is one tool schema sent in one \
         request, counted over every request of the episode.",
    )]);
    let mut caps: Vec<u64> = rows.iter().map(|r| r.cap).collect();
    caps.sort_unstable();
    caps.dedup();
    for cap in caps {
        s.heading(format!("Completion cap {}", format::count(cap)));
        let mine: Vec<&LaneRow> = rows.iter().filter(|r| r.cap == cap).collect();
        if let Some(all) = mine.iter().find(|r| r.scope == "all") {
            s.paragraph(vec![text(format!(
                "Over {} paired episodes, the routed lane's VTS minus the fixed lane's is \
                 {} pp {} resampling {}, and the fixed lane uses {} more tokens and {} \
                 more schema exposures per episode.",
                format::count(all.pairs),
                format::effect_pp(all.estimate),
                format::interval_pp(all.low, all.high),
                unit_plural(&all.cluster_unit),
                format::whole(all.extra_tokens),
                format::fixed(all.extra_exposures, 1)
            ))]);
        }
        let draws = mine.first().map_or(0, |r| r.draws);
        let mut success = Table::new(
            format!(
                "Routed minus fixed lane, completion cap {}: VTS of each lane over the \
                 pairs and the paired difference with its 95% cluster-bootstrap interval \
                 ({} draws) and unadjusted p.",
                format::count(cap),
                format::count(draws)
            ),
            &[
                ("Scope", Align::Left),
                ("Cluster unit", Align::Left),
                ("Pairs", Align::Right),
                ("Unpaired (routed / fixed)", Align::Right),
                ("Routed VTS", Align::Right),
                ("Fixed VTS", Align::Right),
                ("Routed − fixed (pp)", Align::Right),
                ("95% CI", Align::Right),
                ("p", Align::Right),
            ],
        );
        for r in &mine {
            success.push(vec![
                scope_label(&r.scope),
                format!(
                    "{} ({})",
                    unit_plural(&r.cluster_unit),
                    format::count(r.n_clusters)
                ),
                format::count(r.pairs),
                format!(
                    "{} / {}",
                    format::count(r.unpaired_routed),
                    format::count(r.unpaired_fixed)
                ),
                format::percent(r.routed_vts),
                format::percent(r.fixed_vts),
                format::effect_pp(r.estimate),
                format::interval_pp(r.low, r.high),
                format::p_value(r.p, r.p_floor),
            ]);
        }
        s.table(success);
        let mut cost = Table::new(
            format!(
                "Tokens and schema exposures per episode by lane, completion cap {}.",
                format::count(cap)
            ),
            &[
                ("Scope", Align::Left),
                ("Routed tokens", Align::Right),
                ("Fixed tokens", Align::Right),
                ("Fixed extra tokens", Align::Right),
                ("Routed exposures", Align::Right),
                ("Fixed exposures", Align::Right),
                ("Fixed extra exposures", Align::Right),
            ],
        );
        let scopes = first_seen(&mine.iter().map(|r| r.scope.clone()).collect::<Vec<_>>());
        for scope in scopes {
            if let Some(r) = mine.iter().find(|r| r.scope == scope) {
                cost.push(vec![
                    scope_label(&r.scope),
                    format::whole(r.routed_tokens),
                    format::whole(r.fixed_tokens),
                    format::whole(r.extra_tokens),
                    format::fixed(r.routed_exposures, 1),
                    format::fixed(r.fixed_exposures, 1),
                    format::fixed(r.extra_exposures, 1),
                ]);
            }
        }
        s.table(cost);
    }
    Ok(())
}
