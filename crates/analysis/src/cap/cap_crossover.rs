//! The `cap_crossover` analysis kind: the completion-cap crossover (paper Appendix E).
//! A few configurations ran the capacity factorial on the routed lane at a low and a
//! moderately higher cap, the order of the two caps counterbalanced across repeats;
//! the question is how the menu penalty of each stratum changes with the cap.
//!
//! Reads this study's episodes and its `crossover_strata` table (written by an
//! analysis listed before it): `configuration` (Utf8), `stratum` (Utf8, nullable:
//! `B` truncation-heavy, `S` loss without much truncation, `N` null), `selected`
//! (Boolean; null reads as false). A configuration counts in its stratum when it is
//! selected and has one.
//!
//! Parameters: `draws` and `seed` (the family-cluster bootstrap, as in `contrasts`)
//! and `truncation_ceiling_pct` (the manipulation check's ceiling, default 5).
//!
//! Owns two tables; the caps, the menu contrast, the exclusion of provider failures
//! and rows without usage, the either-outcome bounds, truncation and repeat
//! disagreement are defined in [`super::two_caps`].
//!
//! * `cap_crossover` ([`CapCrossoverRow`]) — one row per stratum × cap × statistic
//!   (strata B, S, N, then `all` with truncation and repeat disagreement only): the
//!   columns the two cap studies share, then `truncation_persists` (whether some configuration
//!   of the stratum fails the manipulation check; null on `all` rows) and `reading`
//!   (when it does: a sentence saying the rows measure the menu penalty while
//!   truncation persists at the high cap, not the penalty once the cap stops binding;
//!   null otherwise). `excluded_provider_failure` and `excluded_missing_usage` count
//!   the rows left out of the row's configurations and cap(s); `bound_low_pp` and
//!   `bound_high_pp`, on the change rows of the menu contrast, are the smallest and
//!   largest change over every success/failure outcome of those rows, each row taking
//!   either outcome independently (exact: see [`super::two_caps`], "Either-outcome
//!   bounds").
//! * `cap_crossover_configurations` ([`CapCrossoverConfigurationsRow`]) — one row per
//!   configuration of the episodes × cap, with `manipulation_check_passed` (at most `truncation_ceiling_pct` % of the kept
//!   V = 128 episodes truncated at the high cap) for every configuration in a stratum,
//!   repeated on both caps' rows.
//!
//! Decisions: unlike the sweep, a configuration failing the manipulation check stays
//! in its stratum's estimate — the crossover's cap is what it is, and the tables say
//! so (`truncation_persists`, `reading`) instead of dropping the stratum.
//!
//! Never: reads files, or decides strata (the strata table does).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::two_caps::{self, CapRows, Resolved};
use crate::{AnalysisError, Context, Design, Input, Output, ParamProblem, Produced, Typed};
use tbb_tables::analyses::cap_crossover::{
    CapCrossoverConfigurationsRow, CapCrossoverRow, Reading,
};
use tbb_tables::analyses::two_caps::CapEstimate;
use tbb_tables::TableRow;

/// Name in error messages and the first part of every stream seed.
const KIND: &str = "cap_crossover";
/// The strata table it reads.
pub const STRATA_TABLE: &str = "crossover_strata";
/// The crossover's strata, in table order.
pub const STRATA: [&str; 3] = ["B", "S", "N"];
/// The manipulation check's ceiling when the manifest names none, in %.
pub const DEFAULT_CEILING_PCT: f64 = 5.0;

/// The `cap_crossover` analysis kind.
pub struct CapCrossover;

/// Its parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Bootstrap draws (default 10,000).
    #[serde(default)]
    pub draws: Option<u32>,
    /// Bootstrap seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// The manipulation check's ceiling on V = 128 truncation at the high cap, in %
    /// (default 5).
    #[serde(default)]
    pub truncation_ceiling_pct: Option<f64>,
}

impl Typed for CapCrossover {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "cap_crossover/1";
    const INPUTS: &'static [Input] = &[Input::Episodes, Input::Table(STRATA_TABLE)];
    const OUTPUTS: &'static [&'static str] =
        &[CapCrossoverRow::TABLE, CapCrossoverConfigurationsRow::TABLE];

    fn check(params: &Params) -> Vec<ParamProblem> {
        two_caps::check(
            params.draws,
            &[("truncation_ceiling_pct", params.truncation_ceiling_pct)],
        )
    }

    fn needs(design: &Design) -> Option<String> {
        two_caps::needs_two_caps(design)
    }

    fn run(params: &Params, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        run(params, input).map(Produced::from)
    }
}

/// The sentence of `reading` when `failing` of `members` configurations still
/// truncate above the ceiling at the high cap.
fn persisting(failing: usize, members: usize, ceiling: f64, high: u32) -> String {
    format!(
        "menu penalty with truncation persisting: {failing} of {members} configurations \
         still truncate more than {ceiling}% of their V = 128 episodes at {high} tokens, \
         so the higher cap did not remove the truncation"
    )
}

/// The `cap_crossover` and `cap_crossover_configurations` tables.
pub fn run(params: &Params, input: &Context<'_>) -> Result<Vec<Output>, AnalysisError> {
    let settings = Resolved::of(params.draws, params.seed);
    let ceiling = params.truncation_ceiling_pct.unwrap_or(DEFAULT_CEILING_PCT);
    let strata = two_caps::read_strata(KIND, STRATA_TABLE, input.tables, &STRATA)?;
    let data = CapRows::new(KIND, input.episodes)?;
    two_caps::check_selected_present(KIND, &strata, &data)?;
    let stratum_of = |c: &str| strata.get(c).and_then(|m| m.pooled_stratum());
    let passes = |c: &str| two_caps::passes_ceiling(&data, c, ceiling);

    let mut main = Vec::new();
    for stratum in STRATA {
        let members: BTreeSet<&str> = data
            .configurations()
            .filter(|c| stratum_of(c) == Some(stratum))
            .collect();
        let failing = members.iter().filter(|c| !passes(c)).count();
        let reading =
            (failing > 0).then(|| persisting(failing, members.len(), ceiling, data.caps.high));
        let block = two_caps::stratum_rows(KIND, &data, stratum, &members, settings);
        main.extend(
            block
                .into_iter()
                .map(|r| table_row(r, Some(failing > 0), reading.clone())),
        );
    }
    let every: BTreeSet<&str> = data
        .configurations()
        .filter(|c| stratum_of(c).is_some())
        .collect();
    let block = two_caps::stratum_rows(KIND, &data, two_caps::ALL, &every, settings);
    main.extend(block.into_iter().map(|r| table_row(r, None, None)));

    let mut configurations = Vec::new();
    for configuration in data.configurations() {
        let in_stratum = stratum_of(configuration).is_some();
        configurations.extend(
            two_caps::configuration_rows(
                &data,
                configuration,
                strata.get(configuration),
                in_stratum.then(|| passes(configuration)),
                in_stratum,
            )
            .map(CapCrossoverConfigurationsRow),
        );
    }
    Ok(vec![Output::of(&main)?, Output::of(&configurations)?])
}

/// A stratum's statistic as a row of the table, with its stratum's
/// `truncation_persists` and `reading` (none on `all` rows).
fn table_row(
    r: CapEstimate,
    truncation_persists: Option<bool>,
    reading: Option<String>,
) -> CapCrossoverRow {
    CapCrossoverRow {
        estimate: r,
        reading: Reading {
            truncation_persists,
            reading,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cap::two_caps::testing::{rows_at_cap, strata};
    use tbb_tables::analyses::two_caps::CapStatistic;
    use tbb_tables::analyses::two_caps::{CapConfiguration, CapRole};
    use tbb_tables::levels::{Encoding, InfraCause, Workflow};
    use tbb_tables::rows::EpisodeRow;

    const FAMILIES: [&str; 4] = ["f1", "f2", "f3", "f4"];

    /// `heavy` (B) fails and truncates every V = 128 cell of f1 and f2 at both caps;
    /// `lossy` (S) fails f1's V = 128 cells at both caps without truncation; `null`
    /// (N) never fails. Two repeats per cap.
    fn panel() -> Vec<EpisodeRow> {
        let mut rows = Vec::new();
        for repeat in 0..2 {
            for cap in [1024u32, 4096] {
                let mut heavy = rows_at_cap("heavy", &FAMILIES, cap, repeat, |f, i| {
                    !((4..8).contains(&i) && (f == "f1" || f == "f2"))
                });
                for r in &mut heavy {
                    r.truncated = !r.vts;
                }
                rows.extend(heavy);
                rows.extend(rows_at_cap("lossy", &FAMILIES, cap, repeat, |f, i| {
                    !((4..8).contains(&i) && f == "f1")
                }));
                rows.extend(rows_at_cap("null", &FAMILIES, cap, repeat, |_, _| true));
            }
        }
        rows
    }

    fn run_on(rows: &[EpisodeRow]) -> Vec<Output> {
        let tables = BTreeMap::from([(
            STRATA_TABLE.to_string(),
            strata(&[
                ("heavy", Some("B"), true),
                ("lossy", Some("S"), true),
                ("null", Some("N"), true),
            ]),
        )]);
        let context = Context {
            study: "crossover",
            episodes: rows,
            requests: &crate::NO_REQUESTS,
            tables: &tables,
            skipped: &[],
        };
        let params = Params {
            draws: Some(100),
            seed: Some(3),
            truncation_ceiling_pct: None,
        };
        run(&params, &context).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The two tables' rows, read back from their batches.
    fn tables_of(out: &[Output]) -> (Vec<CapCrossoverRow>, Vec<CapConfiguration>) {
        fn read<T>(e: tbb_tables::StoreError) -> T {
            panic!("{e}")
        }
        (
            CapCrossoverRow::from_batch(&out[0].batch).unwrap_or_else(read),
            CapCrossoverConfigurationsRow::from_batch(&out[1].batch)
                .unwrap_or_else(read)
                .into_iter()
                .map(|r| r.0)
                .collect(),
        )
    }

    /// The row of (stratum, arm_role, statistic).
    fn find<'a>(
        rows: &'a [CapCrossoverRow],
        stratum: &str,
        role: CapRole,
        statistic: CapStatistic,
    ) -> &'a CapCrossoverRow {
        rows.iter()
            .find(|r| {
                r.estimate.stratum == stratum
                    && r.estimate.arm_role == role
                    && r.estimate.statistic == statistic
            })
            .unwrap_or_else(|| panic!("no row {stratum} {role:?} {statistic:?}"))
    }

    fn contrast(rows: &[CapCrossoverRow], stratum: &str, role: CapRole) -> Option<f64> {
        find(rows, stratum, role, CapStatistic::VContrast)
            .estimate
            .estimate_pp
    }

    #[test]
    fn strata_contrasts_manipulation_check_and_schema() {
        let out = run_on(&panel());
        let names: Vec<String> = out[0]
            .batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(
            &names[names.len() - 2..],
            ["truncation_persists", "reading"]
        );
        let (t, c) = tables_of(&out);
        assert_eq!(t.len(), 3 * 7 + 4);
        // B: 2 of 4 families at −100 at both caps: −50, −50, change 0. S: −25.
        assert_eq!(contrast(&t, "B", CapRole::Low), Some(-50.0));
        assert_eq!(contrast(&t, "B", CapRole::Change), Some(0.0));
        assert_eq!(contrast(&t, "S", CapRole::High), Some(-25.0));
        assert_eq!(contrast(&t, "N", CapRole::Change), Some(0.0));
        // heavy truncates half of its V = 128 episodes at 4,096: the check fails, the
        // stratum is kept and the reading says what the rows measure.
        let b = find(&t, "B", CapRole::Change, CapStatistic::VContrast);
        assert_eq!(b.reading.truncation_persists, Some(true));
        let reading = b.reading.reading.as_deref().unwrap_or_default();
        assert!(
            reading.contains("truncation persisting: 1 of 1"),
            "{reading}"
        );
        let s = find(&t, "S", CapRole::Change, CapStatistic::VContrast);
        assert_eq!(
            (s.reading.truncation_persists, &s.reading.reading),
            (Some(false), &None)
        );
        let all = find(&t, "all", CapRole::High, CapStatistic::TruncatedShareV128);
        assert_eq!(all.reading.truncation_persists, None);
        // heavy: 2 families × 4 cells × 2 repeats truncated of 32 at each cap.
        let b = find(&t, "B", CapRole::High, CapStatistic::TruncatedShareV128);
        assert_eq!(
            (b.estimate.n_events, b.estimate.n_total),
            (Some(16), Some(32))
        );
        for r in &c {
            assert_eq!(
                r.manipulation_check_passed,
                Some(r.configuration != "heavy")
            );
            assert!(
                r.in_pooled_estimate,
                "the crossover keeps failing configurations"
            );
        }
    }

    #[test]
    fn excluded_rows_are_counted_and_bounded() {
        // Two excluded rows in heavy: f3's (128, low, raw) at 4,096 repeat 0 (a
        // provider failure) and f4's (8, low, raw) at 1,024 repeat 1 (no usage). Each
        // shares its cell with the other repeat's success, so its outcome moves its
        // unit's cell mean by 1/2, the unit's contrast by 12.5 pp and the stratum's
        // mean over 4 units by 3.125 pp. Kept-only: both cells are 1 (the other
        // repeat), change 0. Bounds: a failure of the high-cap V = 128 row lowers the
        // high contrast, and a failure of the low-cap V = 8 row raises the low
        // contrast; either lowers the change by 3.125 pp, success leaves it: the
        // change ranges over [−6.25, 0].
        let mut rows = panel();
        for r in &mut rows {
            let at = |cap: u32, repeat: u32, family: &str, v: u32| {
                r.configuration == "heavy"
                    && r.completion_cap == cap
                    && r.repeat == repeat
                    && r.family == family
                    && r.v == v
                    && r.w == Workflow::Low
                    && r.d == Encoding::Raw
            };
            if at(4096, 0, "f3", 128) {
                r.infra_failure = true;
                r.infra_error = Some(InfraCause::Timeout);
            } else if at(1024, 1, "f4", 8) {
                r.infra_failure = true;
                r.infra_error = Some(InfraCause::BadUsage);
            }
        }
        let (t, _) = tables_of(&run_on(&rows));
        let b = find(&t, "B", CapRole::Change, CapStatistic::VContrast);
        assert_eq!(
            (b.estimate.bound_low_pp, b.estimate.bound_high_pp),
            (Some(-6.25), Some(0.0))
        );
        assert_eq!(b.estimate.estimate_pp, Some(0.0));
        let excluded = |r: &CapCrossoverRow| {
            (
                r.estimate.excluded_provider_failure,
                r.estimate.excluded_missing_usage,
            )
        };
        assert_eq!(excluded(b), (1, 1));
        let low = find(&t, "B", CapRole::Low, CapStatistic::VContrast);
        assert_eq!(excluded(low), (0, 1));
        assert_eq!(low.estimate.bound_low_pp, None);
        // The N stratum has nothing excluded: its bounds are its estimate.
        let n = find(&t, "N", CapRole::Change, CapStatistic::VContrast);
        assert_eq!(
            (n.estimate.bound_low_pp, n.estimate.bound_high_pp),
            (Some(0.0), Some(0.0))
        );
    }
}
