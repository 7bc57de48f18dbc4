//! The strata section (paper Section 4.2 and Appendix D): the menu effect within the
//! pairs that neither menu truncated, and the worst-case bounds on the total menu
//! effect when each truncated failure could have gone either way.
//!
//! Owns: the layout of the `strata` table in the report.
//!
//! Invariants: one table per (lane, cap) stratum, the pooled row first, as written.
//!
//! Never: computes an effect or a bound.

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::ReportError;
use super::{configuration_label, strata_of, table, Stratum, Tables};

/// One row of `strata`.
struct StratumRow {
    stratum: Stratum,
    configuration: String,
    organization: String,
    pairs: u64,
    total: f64,
    neither: u64,
    neither_effect: f64,
    failures_8: u64,
    failures_128: u64,
    failures_both: u64,
    independent: (f64, f64),
    alike: (f64, f64),
}

fn rows(tables: &Tables) -> Result<Vec<StratumRow>, ReportError> {
    let Some(t) = table(tables, "strata") else {
        return Ok(Vec::new());
    };
    let (_, strata) = strata_of(&t)?;
    let (configuration, organization) = (t.text("configuration")?, t.text("organization")?);
    let (pairs, neither, f8, f128, both) = (
        t.int("pairs")?,
        t.int("pairs_neither_truncated")?,
        t.int("truncated_failures_8")?,
        t.int("truncated_failures_128")?,
        t.int("truncated_failures_both")?,
    );
    let (total, neither_effect) = (
        t.float("total_effect_pp")?,
        t.float("neither_truncated_effect_pp")?,
    );
    let (il, ih, al, ah) = (
        t.float("bound_independent_low_pp")?,
        t.float("bound_independent_high_pp")?,
        t.float("bound_alike_low_pp")?,
        t.float("bound_alike_high_pp")?,
    );
    Ok((0..t.len())
        .map(|i| StratumRow {
            stratum: strata[i].clone(),
            configuration: configuration[i].clone(),
            organization: organization[i].clone(),
            pairs: pairs[i],
            total: total[i],
            neither: neither[i],
            neither_effect: neither_effect[i],
            failures_8: f8[i],
            failures_128: f128[i],
            failures_both: both[i],
            independent: (il[i], ih[i]),
            alike: (al[i], ah[i]),
        })
        .collect())
}

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let rows = rows(tables)?;
    s.paragraph(vec![text(
        "Truncation depends on the assigned menu size, so the menu effect is split by \
         it: the pairs that neither menu truncated form a stratum the paired design \
         observes directly. The bounds keep every non-truncated outcome and let each \
         truncated failure go either way — with the two arms resolving \
         independently, or alike (every truncated failure of either arm failing, \
         which is the observed effect, or every one succeeding). They say nothing \
         about what a larger cap would do.",
    )]);
    let mut strata: Vec<Stratum> = rows.iter().map(|r| r.stratum.clone()).collect();
    strata.sort();
    strata.dedup();
    for stratum in &strata {
        s.heading(stratum.title());
        let mine: Vec<&StratumRow> = rows.iter().filter(|r| &r.stratum == stratum).collect();
        if let Some(pooled) = mine.iter().find(|r| r.configuration == "all") {
            s.paragraph(vec![text(format!(
                "The {} pairs that neither menu truncated have a menu effect of {} pp. \
                 With each truncated failure free to go either way, worst-case bounds \
                 place the total menu effect (observed {} pp) in {} pp with independent \
                 arms and in {} pp with the arms resolving alike.",
                format::count(pooled.neither),
                format::effect_pp(pooled.neither_effect),
                format::effect_pp(pooled.total),
                format::interval_pp(pooled.independent.0, pooled.independent.1),
                format::interval_pp(pooled.alike.0, pooled.alike.1)
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
                format::count(r.pairs),
                format::effect_pp(r.total),
                format::count(r.neither),
                format::effect_pp(r.neither_effect),
                format::count(r.failures_8),
                format::count(r.failures_128),
                format::count(r.failures_both),
                format::interval_pp(r.independent.0, r.independent.1),
                format::interval_pp(r.alike.0, r.alike.1),
            ]);
        }
        s.table(t);
    }
    Ok(())
}
