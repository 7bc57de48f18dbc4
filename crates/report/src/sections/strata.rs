//! The strata section (paper Section 4.2 and Appendix D): the menu effect within the
//! pairs that neither menu truncated, and the worst-case bounds on the total menu
//! effect when each truncated failure could have gone either way.
//!
//! Owns: the layout of the `strata` table in the report, and where the paper's
//! strata and bounds ([`paper::strata`]) stand: a sentence after ours and a labelled
//! "paper" row in the routed lane's table at the paper's frozen cap.
//!
//! Invariants: one table per (lane, cap) stratum, the pooled row first, as written,
//! then the paper's row where it applies.
//!
//! Never: computes an effect or a bound.

use tbb_tables::analyses::strata::StrataRow;

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::paper::{self, strata as q};
use super::super::ReportError;
use super::{configuration_label, rows, Stratum, Tables};

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let rows = rows::<StrataRow>(tables)?.unwrap_or_default();
    s.paragraph(vec![text(
        "Truncation depends on the assigned menu size, so the menu effect is split by \
         it: the pairs that neither menu truncated form a stratum the paired design \
         observes directly. The bounds keep every non-truncated outcome and let each \
         truncated failure go either way — with the two arms resolving \
         independently, or alike (every truncated failure of either arm failing, \
         which is the observed effect, or every one succeeding). They say nothing \
         about what a larger cap would do.",
    )]);
    let mut strata: Vec<Stratum> = rows
        .iter()
        .map(|r| Stratum::new(&r.lane, u64::from(r.completion_cap)))
        .collect();
    strata.sort();
    strata.dedup();
    for stratum in &strata {
        s.heading(stratum.title());
        let mine: Vec<&StrataRow> = rows
            .iter()
            .filter(|r| &Stratum::new(&r.lane, u64::from(r.completion_cap)) == stratum)
            .collect();
        // The paper's main runs: the routed lane at its frozen cap.
        let quoted = stratum.lane == "routed" && stratum.cap == paper::harness::completion_cap();
        if let Some(pooled) = mine.iter().find(|r| r.configuration == "all") {
            s.paragraph(vec![text(format!(
                "The {} pairs that neither menu truncated have a menu effect of {} pp. \
                 With each truncated failure free to go either way, worst-case bounds \
                 place the total menu effect (observed {} pp) in {} pp with independent \
                 arms and in {} pp with the arms resolving alike.",
                format::count(u64::from(pooled.pairs_neither_truncated)),
                format::effect_pp(neither_effect(pooled)),
                format::effect_pp(pooled.total_effect_pp),
                format::interval_pp(
                    pooled.bound_independent_low_pp,
                    pooled.bound_independent_high_pp
                ),
                format::interval_pp(pooled.bound_alike_low_pp, pooled.bound_alike_high_pp)
            ))]);
        }
        if quoted {
            s.paragraph(vec![text(format!(
                "The paper's (routed menu, cap {}; labelled \"paper\" in the table): its {} \
                 pairs that neither menu truncated have a menu effect of {} pp, and the \
                 worst-case bounds are {} pp with independent arms and {} pp with the arms \
                 resolving alike. It prints neither the total effect over these pairs nor \
                 the pairs that both menus truncated, nor any configuration's row.",
                paper::harness::COMPLETION_CAP.text(),
                q::PAIRS_NEITHER_TRUNCATED.text(),
                q::EFFECT_NEITHER_TRUNCATED.text(),
                q::BOUNDS_INDEPENDENT.text(),
                q::BOUNDS_ALIKE.text()
            ))]);
        }
        let mut t = Table::new(
            format!(
                "Menu effect by truncation stratum and truncation-resolution bounds (pp), \
                 {}.",
                stratum.short()
            ),
            &[
                ("Configuration", Align::Left),
                ("Organization", Align::Left),
                ("Pairs", Align::Right),
                ("Total effect", Align::Right),
                ("Pairs neither truncated", Align::Right),
                ("Effect within", Align::Right),
                ("Truncated failures, V = 8", Align::Right),
                ("V = 128", Align::Right),
                ("Both", Align::Right),
                ("Bounds, independent", Align::Right),
                ("Bounds, alike", Align::Right),
            ],
        );
        for r in &mine {
            t.push(vec![
                configuration_label(&r.configuration),
                r.organization.clone(),
                format::count(u64::from(r.pairs)),
                format::effect_pp(r.total_effect_pp),
                format::count(u64::from(r.pairs_neither_truncated)),
                format::effect_pp(neither_effect(r)),
                format::count(u64::from(r.truncated_failures_8)),
                format::count(u64::from(r.truncated_failures_128)),
                format::count(u64::from(r.truncated_failures_both)),
                format::interval_pp(r.bound_independent_low_pp, r.bound_independent_high_pp),
                format::interval_pp(r.bound_alike_low_pp, r.bound_alike_high_pp),
            ]);
        }
        if quoted {
            let missing = || format::MISSING.to_string();
            t.push(vec![
                "paper (pooled)".into(),
                String::new(),
                q::PAIRS.text(),
                missing(),
                q::PAIRS_NEITHER_TRUNCATED.text(),
                q::EFFECT_NEITHER_TRUNCATED.text(),
                q::TRUNCATED_FAILURES_V8.text(),
                q::TRUNCATED_FAILURES_V128.text(),
                missing(),
                q::BOUNDS_INDEPENDENT.text(),
                q::BOUNDS_ALIKE.text(),
            ]);
        }
        s.table(t);
    }
    Ok(())
}

/// The effect within the pairs neither menu truncated; with no such pair the table
/// holds a null, shown as missing.
fn neither_effect(r: &StrataRow) -> f64 {
    r.neither_truncated_effect_pp.unwrap_or(f64::NAN)
}
