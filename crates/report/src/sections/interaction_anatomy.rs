//! The V × W anatomy section (the paper's Appendix D): the interaction expected if the
//! two pressures acted independently, the share of the coefficient from units in which
//! every stressed cell fails, the coefficient without the units whose sign the
//! single-stress cells force, and the units the joint stress rescues; the paper's
//! figures beside the panel's for the paper's stratum (the routed lane at its frozen
//! cap).
//!
//! Owns: the layout of the `interaction_anatomy` table in the report.
//!
//! Never: computes a statistic (the `interaction_anatomy` analysis does).

use tbb_tables::analyses::interaction_anatomy::InteractionAnatomyRow;

use super::super::paper::{self, interaction_anatomy as q};
use super::{first_seen, rows, Stratum, Tables};
use crate::document::{text, Align, Section, Table};
use crate::format;
use crate::ReportError;

/// The paper's figures, in the section's row order: the coefficient (as the contrasts
/// quote it, families resampled), the independent expectation, the all-stressed-fail
/// units, the unforced coefficient (its interval's resampling unit is not stated; shown
/// on the family row, the paper's primary unit), the joint rescues.
fn paper_column() -> [String; 5] {
    [
        paper::contrasts::V_X_W.text(),
        q::EXPECTED_INDEPENDENT.text(),
        format!(
            "{} from {} of {} units",
            q::ALL_FAIL_SHARE.text(),
            q::ALL_FAIL_UNITS.text(),
            q::UNITS.text()
        ),
        q::UNFORCED.text(),
        format!(
            "{} of {} ({})",
            q::JOINT_RESCUES.text(),
            q::UNITS.text(),
            q::JOINT_RESCUE_SHARE.text()
        ),
    ]
}

/// Fills the section: one table per stratum, the routed lane first.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(rows) = rows::<InteractionAnatomyRow>(tables)? else {
        return Ok(());
    };
    let mut strata: Vec<Stratum> = first_seen(
        &rows
            .iter()
            .map(|r| Stratum::new(&r.lane, u64::from(r.completion_cap)))
            .collect::<Vec<_>>(),
    );
    strata.sort();
    s.paragraph(vec![text(
        "The V × W coefficient averages one difference-in-differences per family × \
         configuration × encoding (raw, linked), the units below: the joint-stress cell \
         minus the two single-stress cells plus the baseline cell. When both single-stress \
         cells fail a unit's value cannot be negative, and when both succeed it cannot be \
         positive: the single-stress cells force its sign.",
    )]);
    for stratum in strata {
        let here: Vec<&InteractionAnatomyRow> = rows
            .iter()
            .filter(|r| r.lane == stratum.lane && u64::from(r.completion_cap) == stratum.cap)
            .collect();
        let Some(first) = here.first() else { continue };
        let is_paper = first.lane == "routed"
            && u64::from(first.completion_cap) == paper::harness::completion_cap();
        let quoted = paper_column();
        let paper = |i: usize| {
            if is_paper {
                quoted[i].clone()
            } else {
                format::MISSING.to_string()
            }
        };
        s.heading(stratum.title());
        let mut table = Table::new(
            format!(
                "Where the V × W interaction comes from, {} (pp; the paper's figures are \
                 for its routed lane at the frozen cap).",
                stratum.short()
            ),
            &[
                ("Quantity", Align::Left),
                ("Panel", Align::Right),
                ("Paper", Align::Right),
            ],
        );
        table.push(vec![
            "V × W coefficient, every unit".into(),
            format::effect_pp(first.observed_pp),
            paper(0),
        ]);
        table.push(vec![
            "Expected if the pressures acted independently".into(),
            first
                .expected_independent_pp
                .map_or_else(|| "—".into(), format::effect_pp),
            paper(1),
        ]);
        table.push(vec![
            "From units in which every stressed cell fails".into(),
            format!(
                "{} from {} of {} units",
                first
                    .all_stressed_fail_share
                    .map_or_else(|| "—".into(), format::percent),
                format::count(u64::from(first.all_stressed_fail_units)),
                format::count(u64::from(first.n_units)),
            ),
            paper(2),
        ]);
        for r in &here {
            table.push(vec![
                format!(
                    "Without the {} sign-forced units ({} units, {} clusters resampled)",
                    format::count(u64::from(r.forced_units)),
                    format::count(u64::from(r.unforced_units)),
                    r.cluster_unit.name(),
                ),
                format::effect_with_interval(r.unforced_pp, r.ci_low_pp, r.ci_high_pp),
                if r.cluster_unit.name() == "family" {
                    paper(3)
                } else {
                    "—".into()
                },
            ]);
        }
        table.push(vec![
            "Joint stress succeeds while a single stress fails".into(),
            format!(
                "{} of {} ({})",
                format::count(u64::from(first.joint_rescue_units)),
                format::count(u64::from(first.n_units)),
                format::percent(first.joint_rescue_share),
            ),
            paper(4),
        ]);
        s.table(table);
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use tbb_tables::analyses::contrasts::ClusterUnit;
    use tbb_tables::analyses::interaction_anatomy::InteractionAnatomyRow;

    fn row(lane: &str, unit: ClusterUnit) -> InteractionAnatomyRow {
        InteractionAnatomyRow {
            lane: lane.into(),
            completion_cap: 1024,
            n_units: 1512,
            observed_pp: 2.25,
            expected_independent_pp: Some(0.4),
            all_stressed_fail_units: 40,
            all_stressed_fail_share: Some(0.5),
            forced_units: 1100,
            unforced_units: 412,
            cluster_unit: unit,
            n_clusters: 36,
            unforced_pp: 1.5,
            ci_low_pp: -0.5,
            ci_high_pp: 3.5,
            joint_rescue_units: 150,
            joint_rescue_share: 150.0 / 1512.0,
            draws: 1000,
            seed: 1,
            draw_seed: 2,
        }
    }

    /// The report of a hand-built table: the routed lane (families and intents
    /// resampled) and the fixed lane.
    pub(crate) fn rendered() -> crate::Rendered {
        let rows = [
            row("routed", ClusterUnit::Family),
            row("routed", ClusterUnit::Intent),
            row("fixed", ClusterUnit::Family),
        ];
        let out = tbb_analysis::Output::of(&rows).unwrap_or_else(|e| panic!("{e}"));
        let tables = BTreeMap::from([(out.table.to_string(), out.batch)]);
        crate::render("s", &tables, &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The section: the paper's figures on the routed lane only, and its unforced
    /// interval on the family row only.
    #[test]
    fn the_interaction_anatomy_section() {
        let r = rendered();
        let section = super::super::testing::section(&r, "## The V × W anatomy");
        for quote in super::paper_column() {
            assert_eq!(section.matches(&quote).count(), 1, "{quote}: {section}");
        }
        insta::assert_snapshot!(section);
    }
}
