//! The per-configuration section (the paper's Appendix C, Table 4): baseline success,
//! every effect of the capacity factorial, truncation at V = 128 and cost, one row per
//! configuration.
//!
//! Owns: the layout of the `configurations` table in the report.
//!
//! Never: computes a statistic (the `configurations` analysis does, quoting the
//! `contrasts` analysis's effects).

use tbb_tables::analyses::configurations::ConfigurationsRow;

use super::{first_seen, rows, Stratum, Tables};
use crate::document::{Align, Section, Table};
use crate::format;
use crate::ReportError;

/// Fills the section: one table per stratum, the routed lane first.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(rows) = rows::<ConfigurationsRow>(tables)? else {
        return Ok(());
    };
    let mut strata: Vec<Stratum> = first_seen(
        &rows
            .iter()
            .map(|r| Stratum::new(&r.lane, u64::from(r.completion_cap)))
            .collect::<Vec<_>>(),
    );
    strata.sort();
    let effect = |x: Option<f64>| x.map_or_else(|| "—".into(), format::effect_pp);
    for stratum in strata {
        s.heading(stratum.title());
        let mut table = Table::new(
            format!(
                "Per configuration, {}: success at the baseline cell (8, low, raw) and over \
                 the capacity cells, the factorial's effects (pp, families resampled, as \
                 the contrasts table gives them), the share of V = 128 episodes truncated \
                 at the cap, and the cost per episode at frozen prices.",
                stratum.short()
            ),
            &[
                ("Configuration", Align::Left),
                ("Organization", Align::Left),
                ("Baseline", Align::Right),
                ("VTS", Align::Right),
                ("V", Align::Right),
                ("W", Align::Right),
                ("Linked", Align::Right),
                ("Compact", Align::Right),
                ("Typed", Align::Right),
                ("V × W", Align::Right),
                ("V × D", Align::Right),
                ("W × D", Align::Right),
                ("Truncated, V = 128", Align::Right),
                ("Cost per episode", Align::Right),
            ],
        );
        for r in rows
            .iter()
            .filter(|r| r.lane == stratum.lane && u64::from(r.completion_cap) == stratum.cap)
        {
            table.push(vec![
                r.configuration.clone(),
                r.organization.clone(),
                r.baseline_vts.map_or_else(|| "—".into(), format::percent),
                format::percent(r.vts),
                effect(r.v_pp),
                effect(r.w_pp),
                effect(r.d_linked_pp),
                effect(r.d_compact_pp),
                effect(r.d_typed_pp),
                effect(r.v_x_w_pp),
                effect(r.v_x_d_pp),
                effect(r.w_x_d_pp),
                r.truncated_share_v128
                    .map_or_else(|| "—".into(), format::percent),
                format::usd(r.cost_per_episode_usd),
            ]);
        }
        s.table(table);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tbb_tables::analyses::configurations::ConfigurationsRow;

    fn row(configuration: &str, v_pp: Option<f64>) -> ConfigurationsRow {
        ConfigurationsRow {
            lane: "routed".into(),
            completion_cap: 1024,
            configuration: configuration.into(),
            organization: "Org".into(),
            episodes: 432,
            vts: 0.875,
            baseline_episodes: 36,
            baseline_vts: Some(35.0 / 36.0),
            v_pp,
            w_pp: Some(2.5),
            d_linked_pp: Some(-1.25),
            v_x_w_pp: Some(0.0),
            v_x_d_pp: None,
            w_x_d_pp: Some(1.0),
            d_compact_pp: Some(-5.5),
            d_typed_pp: Some(0.0),
            truncated_share_v128: Some(0.25),
            tokens_per_episode: 12_345.0,
            cost_usd: 10.8,
            cost_per_episode_usd: 0.025,
        }
    }

    /// The section from a hand-built table: a value the contrasts table lacks shows "—".
    #[test]
    fn the_configurations_section() {
        let rows = [row("sim-a", Some(-12.3)), row("sim-b", None)];
        let out = tbb_analysis::Output::of(&rows).unwrap_or_else(|e| panic!("{e}"));
        let tables = BTreeMap::from([(out.table.to_string(), out.batch)]);
        let r = crate::render("s", &tables, &[]).unwrap_or_else(|e| panic!("{e}"));
        insta::assert_snapshot!(super::super::testing::section(&r, "## Per configuration"));
    }
}
