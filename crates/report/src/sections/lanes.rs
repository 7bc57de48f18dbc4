//! The lanes section (paper Appendix D, last paragraph): routed minus fixed menu lane,
//! with its cluster-bootstrap interval, and what the fixed lane costs in tokens and
//! schema exposures per episode.
//!
//! Owns: the layout of the `lanes` table in the report, and where the paper's lane
//! values ([`paper::lanes`]) stand: a sentence after ours and a labelled "paper" row
//! in both tables at the paper's frozen cap.
//!
//! Invariants: one pair of tables per completion cap, caps ascending; scopes and
//! cluster units in the order written, then the paper's row where it applies. Token
//! and exposure figures do not depend on the cluster unit, so the cost table shows
//! each scope once (its first row).
//!
//! Never: computes a difference, interval or exposure.

use tbb_tables::analyses::lanes::LanesRow;

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::paper::{self, lanes as q};
use super::super::ReportError;
use super::{first_seen, rows, unit_plural, Tables};

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
    let rows = rows::<LanesRow>(tables)?.unwrap_or_default();
    s.paragraph(vec![text(
        "The routed lane shows the full menu until the first executed call to an \
         operational tool, then only the operational tools; the fixed lane keeps the \
         full menu throughout. A pair is the same family, configuration, cell, cap and \
         repeat in both lanes. A schema exposure is one tool schema sent in one \
         request, counted over every request of the episode.",
    )]);
    let mut caps: Vec<u32> = rows.iter().map(|r| r.completion_cap).collect();
    caps.sort_unstable();
    caps.dedup();
    for cap in caps {
        s.heading(format!("Completion cap {}", format::count(u64::from(cap))));
        let mine: Vec<&LanesRow> = rows.iter().filter(|r| r.completion_cap == cap).collect();
        if let Some(all) = mine.iter().find(|r| r.scope == "all") {
            s.paragraph(vec![text(format!(
                "Over {} paired episodes, the routed lane's VTS minus the fixed lane's is \
                 {} pp {} resampling {}, and the fixed lane uses {} more tokens and {} \
                 more schema exposures per episode.",
                format::count(u64::from(all.pairs)),
                format::effect_pp(all.estimate_pp),
                format::interval_pp(all.ci_low_pp, all.ci_high_pp),
                unit_plural(all.cluster_unit.name()),
                format::whole(all.fixed_extra_tokens_per_episode),
                format::fixed(all.fixed_extra_schema_exposures_per_episode, 1)
            ))]);
        }
        let quoted = u64::from(cap) == paper::harness::completion_cap();
        if quoted {
            s.paragraph(vec![text(format!(
                "The paper's (its panel at this cap; labelled \"paper\" in the tables): over \
                 {} paired episodes, routed minus fixed is {} pp, and the fixed lane uses {} \
                 more tokens and {} more schema exposures per episode. It prints neither \
                 lane's VTS or tokens on their own, nor a V = 128 scope or a p-value.",
                q::PAIRS.text(),
                q::ROUTED_MINUS_FIXED.text(),
                q::FIXED_EXTRA_TOKENS.text(),
                q::FIXED_EXTRA_EXPOSURES.text()
            ))]);
        }
        let missing = || format::MISSING.to_string();
        let draws = mine.first().map_or(0, |r| u64::from(r.draws));
        let mut success = Table::new(
            format!(
                "Routed minus fixed lane, completion cap {}: VTS of each lane over the \
                 pairs and the paired difference with its 95% cluster-bootstrap interval \
                 ({} draws) and unadjusted p.",
                format::count(u64::from(cap)),
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
                    unit_plural(r.cluster_unit.name()),
                    format::count(u64::from(r.n_clusters))
                ),
                format::count(u64::from(r.pairs)),
                format!(
                    "{} / {}",
                    format::count(u64::from(r.unpaired_routed)),
                    format::count(u64::from(r.unpaired_fixed))
                ),
                format::percent(r.routed_vts),
                format::percent(r.fixed_vts),
                format::effect_pp(r.estimate_pp),
                format::interval_pp(r.ci_low_pp, r.ci_high_pp),
                format::p_value(r.p_value, r.p_floor),
            ]);
        }
        if quoted {
            let (estimate, interval) = q::ROUTED_MINUS_FIXED.whisker().map_or_else(
                || (missing(), missing()),
                |w| {
                    (
                        format::effect_pp(w.estimate),
                        format::interval_pp(w.low, w.high),
                    )
                },
            );
            success.push(vec![
                "paper (all cells)".into(),
                missing(),
                q::PAIRS.text(),
                missing(),
                missing(),
                missing(),
                estimate,
                interval,
                missing(),
            ]);
        }
        s.table(success);
        let mut cost = Table::new(
            format!(
                "Tokens and schema exposures per episode by lane, completion cap {}.",
                format::count(u64::from(cap))
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
                    format::whole(r.routed_tokens_per_episode),
                    format::whole(r.fixed_tokens_per_episode),
                    format::whole(r.fixed_extra_tokens_per_episode),
                    format::fixed(r.routed_schema_exposures_per_episode, 1),
                    format::fixed(r.fixed_schema_exposures_per_episode, 1),
                    format::fixed(r.fixed_extra_schema_exposures_per_episode, 1),
                ]);
            }
        }
        if quoted {
            cost.push(vec![
                "paper (all cells)".into(),
                missing(),
                missing(),
                q::FIXED_EXTRA_TOKENS.text(),
                missing(),
                missing(),
                q::FIXED_EXTRA_EXPOSURES.text(),
            ]);
        }
        s.table(cost);
    }
    Ok(())
}
