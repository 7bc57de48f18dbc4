//! The `cap_sweep` analysis kind: the completion-cap sweep (paper Appendix E.1). The
//! same configurations ran the capacity factorial on the routed lane at a low and a
//! much higher cap; the question is whether the menu penalty of the truncation-heavy
//! configurations shrinks when the cap stops cutting their responses.
//!
//! Reads this study's episodes and its `sweep_strata` table (written by an analysis
//! listed before it): `configuration` (Utf8), `stratum` (Utf8, nullable: `B`, `M` or
//! `N`), `selected` (Boolean; null reads as false). A configuration counts in its
//! stratum when it is selected and has one; others are listed, never pooled.
//!
//! Parameters: `draws` and `seed` (the family-cluster bootstrap, as in `contrasts`),
//! `margin_pp` (the pre-specified margin, default 5) and `truncation_ceiling_pct`
//! (the manipulation check's ceiling, default 5).
//!
//! Owns two tables; the caps, the menu contrast, exclusions, bounds, truncation and
//! repeat disagreement are defined in [`super::two_caps`].
//!
//! * `cap_sweep` ([`CapSweepRow`]) — one row per stratum × cap × statistic: the
//!   columns the two cap studies share (`stratum`, `arm`, `arm_role`, `completion_cap`,
//!   `statistic`, `n_configurations`, `n_units`, `units_incomplete`, `n_clusters`,
//!   `n_events`, `n_total`, `estimate_pp`, `ci_low_pp`, `ci_high_pp`, `p_value`,
//!   `excluded_provider_failure`, `excluded_missing_usage`, `bound_low_pp`,
//!   `bound_high_pp`, `draws`, `seed`, `draw_seed`), then `margin_pp`,
//!   `clears_margin` and `within_margin`, set on the change rows of the menu contrast
//!   only. `clears_margin`: the interval lies wholly above the margin (the high cap
//!   recovers more than the margin); `within_margin`: it lies wholly inside
//!   (−margin, margin) (no change as large as the margin). Strata come in the order B,
//!   M, N, then `all` (every configuration in a stratum, manipulation check aside:
//!   truncation and repeat disagreement only).
//! * `cap_sweep_configurations` ([`CapSweepConfigurationsRow`]) — one row per
//!   configuration of the episodes × cap. `manipulation_check_passed` is
//!   set for stratum-B configurations only (at most `truncation_ceiling_pct` % of
//!   their kept V = 128 episodes truncated at the high cap) and repeated on both caps'
//!   rows; `in_pooled_estimate` says whether its units enter its stratum's contrast.
//!
//! Decisions: the pooled stratum-B contrast uses only the B configurations that pass
//! the manipulation check (a B configuration still truncating at the high cap did not
//! receive the treatment); with none passing, its rows have no estimate. Strata M and
//! N are controls and are never filtered.
//!
//! Never: reads files, or decides strata (the strata table does).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::two_caps::{self, CapRows, Resolved};
use crate::{AnalysisError, Context, Design, Input, Output, ParamProblem, Produced, Typed};
use tbb_tables::analyses::cap_sweep::{CapSweepConfigurationsRow, CapSweepRow, Margin};
use tbb_tables::analyses::two_caps::{CapEstimate, CapRole, CapStatistic};
use tbb_tables::TableRow;

/// Name in error messages and the first part of every stream seed.
const KIND: &str = "cap_sweep";
/// The strata table it reads.
pub const STRATA_TABLE: &str = "sweep_strata";
/// The sweep's strata, in table order.
pub const STRATA: [&str; 3] = ["B", "M", "N"];
/// The stratum whose pooled contrast is the primary estimand.
const PRIMARY: &str = "B";
/// The pre-specified margin when the manifest names none, in pp.
pub const DEFAULT_MARGIN_PP: f64 = 5.0;
/// The manipulation check's ceiling when the manifest names none, in %.
pub const DEFAULT_CEILING_PCT: f64 = 5.0;

/// The `cap_sweep` analysis kind.
pub struct CapSweep;

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
    /// The pre-specified margin on the change, in pp (default 5).
    #[serde(default)]
    pub margin_pp: Option<f64>,
    /// The manipulation check's ceiling on V = 128 truncation at the high cap, in %
    /// (default 5).
    #[serde(default)]
    pub truncation_ceiling_pct: Option<f64>,
}

impl Typed for CapSweep {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "cap_sweep/1";
    const INPUTS: &'static [Input] = &[Input::Episodes, Input::Table(STRATA_TABLE)];
    const OUTPUTS: &'static [&'static str] =
        &[CapSweepRow::TABLE, CapSweepConfigurationsRow::TABLE];

    fn check(params: &Params) -> Vec<ParamProblem> {
        two_caps::check(
            params.draws,
            &[
                ("margin_pp", params.margin_pp),
                ("truncation_ceiling_pct", params.truncation_ceiling_pct),
            ],
        )
    }

    fn needs(design: &Design) -> Option<String> {
        two_caps::needs_two_caps(design)
    }

    fn run(params: &Params, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        run(params, input).map(Produced::from)
    }
}

/// The `cap_sweep` and `cap_sweep_configurations` tables.
pub fn run(params: &Params, input: &Context<'_>) -> Result<Vec<Output>, AnalysisError> {
    let settings = Resolved::of(params.draws, params.seed);
    let margin = params.margin_pp.unwrap_or(DEFAULT_MARGIN_PP);
    let ceiling = params.truncation_ceiling_pct.unwrap_or(DEFAULT_CEILING_PCT);
    let strata = two_caps::read_strata(KIND, STRATA_TABLE, input.tables, &STRATA)?;
    let data = CapRows::new(KIND, input.episodes)?;
    two_caps::check_selected_present(KIND, &strata, &data)?;

    let stratum_of = |c: &str| strata.get(c).and_then(|m| m.pooled_stratum());
    let passes = |c: &str| two_caps::passes_ceiling(&data, c, ceiling);
    let pooled = |c: &str| match stratum_of(c) {
        Some(PRIMARY) => passes(c),
        Some(_) => true,
        None => false,
    };

    let mut rows = Vec::new();
    for stratum in STRATA {
        let members: BTreeSet<&str> = data
            .configurations()
            .filter(|c| stratum_of(c) == Some(stratum) && pooled(c))
            .collect();
        rows.extend(two_caps::stratum_rows(
            KIND, &data, stratum, &members, settings,
        ));
    }
    let every: BTreeSet<&str> = data
        .configurations()
        .filter(|c| stratum_of(c).is_some())
        .collect();
    rows.extend(two_caps::stratum_rows(
        KIND,
        &data,
        two_caps::ALL,
        &every,
        settings,
    ));

    let main: Vec<CapSweepRow> = rows.into_iter().map(|r| table_row(r, margin)).collect();

    let mut configurations = Vec::new();
    for configuration in data.configurations() {
        let check = (stratum_of(configuration) == Some(PRIMARY)).then(|| passes(configuration));
        configurations.extend(
            two_caps::configuration_rows(
                &data,
                configuration,
                strata.get(configuration),
                check,
                pooled(configuration),
            )
            .map(CapSweepConfigurationsRow),
        );
    }
    Ok(vec![Output::of(&main)?, Output::of(&configurations)?])
}

/// A stratum's statistic as a row of the table: the margin columns are set on the
/// change rows of the menu contrast only, the verdicts where that row has an interval.
fn table_row(r: CapEstimate, margin: f64) -> CapSweepRow {
    let is_change = r.arm_role == CapRole::Change && r.statistic == CapStatistic::VContrast;
    let interval = r.ci_low_pp.zip(r.ci_high_pp).filter(|_| is_change);
    CapSweepRow {
        estimate: r,
        margin: Margin {
            margin_pp: is_change.then_some(margin),
            clears_margin: interval.map(|(lo, _)| lo > margin),
            within_margin: interval.map(|(lo, hi)| -margin < lo && hi < margin),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow_array::RecordBatch;

    use super::*;
    use crate::cap::two_caps::testing::{rows_at_cap, strata};
    use crate::common::stats::IndexStream;
    use tbb_tables::analyses::two_caps::CapConfiguration;
    use tbb_tables::levels::{Encoding, Workflow};
    use tbb_tables::rows::EpisodeRow;

    const FAMILIES: [&str; 5] = ["f1", "f2", "f3", "f4", "f5"];

    /// Index of an endpoint cell with V = 128 (cells 4 to 7).
    fn large(i: usize) -> bool {
        (4..8).contains(&i)
    }

    /// Configurations: `heavy_ok` (B) loses f1–f3's V = 128 cells at 1,024 and only
    /// f1's at 16,384, truncating them at the low cap only; `heavy_stuck` (B) fails
    /// every V = 128 cell at both caps, truncated at both; `mild` (M) and `clean` (N)
    /// never fail; `outsider` is in no stratum. Two repeats per cap.
    fn panel() -> Vec<EpisodeRow> {
        let mut rows = Vec::new();
        for repeat in 0..2 {
            for (cap, lost) in [(1024u32, 3usize), (16384, 1)] {
                let mut ok = rows_at_cap("heavy_ok", &FAMILIES, cap, repeat, |f, i| {
                    !(large(i) && FAMILIES[..lost].contains(&f))
                });
                for r in &mut ok {
                    r.truncated = cap == 1024 && !r.vts;
                }
                rows.extend(ok);
                let mut stuck =
                    rows_at_cap("heavy_stuck", &FAMILIES, cap, repeat, |_, i| !large(i));
                for r in &mut stuck {
                    r.truncated = !r.vts;
                }
                rows.extend(stuck);
                for c in ["mild", "clean", "outsider"] {
                    rows.extend(rows_at_cap(c, &FAMILIES, cap, repeat, |_, _| true));
                }
            }
        }
        rows
    }

    fn strata_table() -> BTreeMap<String, RecordBatch> {
        BTreeMap::from([(
            STRATA_TABLE.to_string(),
            strata(&[
                ("heavy_ok", Some("B"), true),
                ("heavy_stuck", Some("B"), true),
                ("mild", Some("M"), true),
                ("clean", Some("N"), true),
                ("outsider", None, false),
            ]),
        )])
    }

    fn run_on(rows: &[EpisodeRow], params: &Params) -> Vec<Output> {
        let tables = strata_table();
        let context = Context {
            study: "sweep",
            episodes: rows,
            requests: &crate::NO_REQUESTS,
            tables: &tables,
            skipped: &[],
        };
        run(params, &context).unwrap_or_else(|e| panic!("{e}"))
    }

    fn params(draws: u32) -> Params {
        Params {
            draws: Some(draws),
            seed: Some(5),
            ..Params::default()
        }
    }

    /// The two tables' rows, read back from their batches.
    fn tables_of(out: &[Output]) -> (Vec<CapSweepRow>, Vec<CapConfiguration>) {
        fn read<T>(e: tbb_tables::StoreError) -> T {
            panic!("{e}")
        }
        (
            CapSweepRow::from_batch(&out[0].batch).unwrap_or_else(read),
            CapSweepConfigurationsRow::from_batch(&out[1].batch)
                .unwrap_or_else(read)
                .into_iter()
                .map(|r| r.0)
                .collect(),
        )
    }

    /// The row of (stratum, arm_role, statistic).
    fn find<'a>(
        rows: &'a [CapSweepRow],
        stratum: &str,
        role: CapRole,
        statistic: CapStatistic,
    ) -> &'a CapSweepRow {
        rows.iter()
            .find(|r| {
                r.estimate.stratum == stratum
                    && r.estimate.arm_role == role
                    && r.estimate.statistic == statistic
            })
            .unwrap_or_else(|| panic!("no row {stratum} {role:?} {statistic:?}"))
    }

    #[test]
    fn the_output_schema() {
        let out = run_on(&panel(), &params(50));
        let names: Vec<&str> = out.iter().map(|o| o.table).collect();
        assert_eq!(names, ["cap_sweep", "cap_sweep_configurations"]);
        let columns = |b: &RecordBatch| -> Vec<String> {
            b.schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect()
        };
        assert_eq!(
            columns(&out[0].batch),
            [
                "stratum",
                "arm",
                "arm_role",
                "completion_cap",
                "statistic",
                "n_configurations",
                "n_units",
                "units_incomplete",
                "n_clusters",
                "n_events",
                "n_total",
                "estimate_pp",
                "ci_low_pp",
                "ci_high_pp",
                "p_value",
                "excluded_provider_failure",
                "excluded_missing_usage",
                "bound_low_pp",
                "bound_high_pp",
                "draws",
                "seed",
                "draw_seed",
                "margin_pp",
                "clears_margin",
                "within_margin",
            ]
        );
        assert_eq!(
            columns(&out[1].batch),
            [
                "configuration",
                "organization",
                "stratum",
                "selected",
                "arm",
                "arm_role",
                "completion_cap",
                "episodes_v128",
                "truncated_v128",
                "truncated_share_v128",
                "excluded_provider_failure",
                "excluded_missing_usage",
                "manipulation_check_passed",
                "in_pooled_estimate",
            ]
        );
        let (t, c) = tables_of(&out);
        // 3 strata × (3 contrast + 2 truncation + 2 disagreement) + all × 4.
        assert_eq!(t.len(), 3 * 7 + 4);
        // 5 configurations × 2 caps.
        assert_eq!(c.len(), 10);
        let b_change = find(&t, "B", CapRole::Change, CapStatistic::VContrast);
        assert_eq!(b_change.estimate.arm, "cap_16384_minus_cap_1024");
        assert_eq!(
            find(&t, "B", CapRole::Low, CapStatistic::VContrast)
                .estimate
                .arm,
            "cap_1024"
        );
    }

    #[test]
    fn a_b_configuration_over_the_ceiling_is_left_out_of_the_pooled_estimate() {
        let (t, c) = tables_of(&run_on(&panel(), &params(200)));
        // heavy_stuck truncates all its V = 128 episodes at 16,384: out. heavy_ok:
        // low cap −60 pp (3 of 5 families at −100), high −20 pp: change +40.
        let low = find(&t, "B", CapRole::Low, CapStatistic::VContrast);
        let high = find(&t, "B", CapRole::High, CapStatistic::VContrast);
        let change = find(&t, "B", CapRole::Change, CapStatistic::VContrast);
        assert_eq!(change.estimate.n_configurations, 1);
        assert_eq!(
            (low.estimate.estimate_pp, high.estimate.estimate_pp),
            (Some(-60.0), Some(-20.0))
        );
        assert_eq!(change.estimate.estimate_pp, Some(40.0));
        // Over the 5 pp margin: its interval [0, 100]... is at least 0 (every family
        // changes by 0 or +100), so it clears only if the lower end is above 5.
        let lo = change.estimate.ci_low_pp.unwrap_or(f64::NAN);
        assert_eq!(change.margin.clears_margin, Some(lo > 5.0));
        assert_eq!(
            low.margin.clears_margin, None,
            "margin columns live on change rows only"
        );
        // The configurations table says why.
        for r in &c {
            let (passed, pooled) = (r.manipulation_check_passed, r.in_pooled_estimate);
            match r.configuration.as_str() {
                "heavy_stuck" => {
                    assert!(passed == Some(false) && !pooled);
                    assert_eq!(r.truncated_share_v128, Some(1.0));
                }
                "heavy_ok" => {
                    assert!(passed == Some(true) && pooled);
                    let want = if r.arm_role == CapRole::Low { 0.6 } else { 0.0 };
                    assert_eq!(r.truncated_share_v128, Some(want));
                }
                "mild" | "clean" => assert!(passed.is_none() && pooled),
                _ => assert!(passed.is_none() && !pooled),
            }
        }
        // Raising the ceiling to 100 % lets heavy_stuck in: B at the low cap becomes
        // (−60 − 100) / 2 = −80 pp.
        let lenient = Params {
            truncation_ceiling_pct: Some(100.0),
            ..params(200)
        };
        let (t, _) = tables_of(&run_on(&panel(), &lenient));
        let low = find(&t, "B", CapRole::Low, CapStatistic::VContrast);
        assert_eq!(low.estimate.estimate_pp, Some(-80.0));
        // Controls: M and N never move.
        let n = find(&t, "N", CapRole::Change, CapStatistic::VContrast);
        assert_eq!(n.estimate.estimate_pp, Some(0.0));
        assert_eq!(n.margin.within_margin, Some(true));
    }

    /// The interaction bootstrap written plainly: per unit the change of its menu
    /// contrast, computed from the rows; per draw, families picked from the row's
    /// stream, every unit of a picked family gathered, the plain mean taken; the
    /// interval from the sorted draws.
    fn slow_interaction(
        rows: &[EpisodeRow],
        configs: &[&str],
        draws: u32,
        draw_seed: u64,
    ) -> (f64, f64, f64) {
        let mut units: Vec<(String, f64)> = Vec::new();
        for config in configs {
            for family in FAMILIES {
                let mut change = 0.0;
                for (cap, sign) in [(1024u32, -1.0), (16384, 1.0)] {
                    for w in [Workflow::Low, Workflow::High] {
                        for d in [Encoding::Raw, Encoding::Linked] {
                            let mean = |v: u32| {
                                let hits: Vec<f64> = rows
                                    .iter()
                                    .filter(|r| {
                                        r.configuration == *config
                                            && r.family == family
                                            && r.completion_cap == cap
                                            && r.v == v
                                            && r.w == w
                                            && r.d == d
                                    })
                                    .map(|r| if r.vts { 1.0 } else { 0.0 })
                                    .collect();
                                hits.iter().sum::<f64>() / hits.len() as f64
                            };
                            change += sign * 100.0 * (mean(128) - mean(8)) / 4.0;
                        }
                    }
                }
                units.push((family.to_string(), change));
            }
        }
        let mut families: Vec<String> = units.iter().map(|u| u.0.clone()).collect();
        families.sort();
        families.dedup();
        let estimate = units.iter().map(|u| u.1).sum::<f64>() / units.len() as f64;
        let mut stream = IndexStream::new(draw_seed);
        let mut sample = Vec::new();
        for _ in 0..draws {
            let mut picked = Vec::new();
            for _ in 0..families.len() {
                let f = &families[stream.index(families.len() as u32)];
                picked.extend(units.iter().filter(|u| &u.0 == f).map(|u| u.1));
            }
            sample.push(picked.iter().sum::<f64>() / picked.len() as f64);
        }
        sample.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let pos = p * (sample.len() - 1) as f64;
            let lo = pos.floor() as usize;
            let frac = pos - lo as f64;
            if frac > 0.0 {
                sample[lo] + frac * (sample[lo + 1] - sample[lo])
            } else {
                sample[lo]
            }
        };
        (estimate, q(0.025), q(0.975))
    }

    #[test]
    fn the_interaction_bootstrap_equals_a_slow_reference() {
        // Let both B configurations in and vary the families so the interval is wide.
        let mut rows = panel();
        for r in &mut rows {
            if r.configuration == "heavy_stuck" && r.completion_cap == 16384 && r.family == "f4" {
                r.vts = true;
            }
            if r.configuration == "heavy_ok"
                && r.repeat == 1
                && r.family == "f5"
                && r.v == 8
                && r.w == Workflow::High
            {
                r.vts = false;
            }
        }
        let lenient = Params {
            truncation_ceiling_pct: Some(100.0),
            ..params(3_000)
        };
        let (t, _) = tables_of(&run_on(&rows, &lenient));
        let change = find(&t, "B", CapRole::Change, CapStatistic::VContrast);
        let draw_seed = change.estimate.draw_seed.unwrap_or_default();
        let (estimate, lo, hi) =
            slow_interaction(&rows, &["heavy_ok", "heavy_stuck"], 3_000, draw_seed);
        let value = |v: Option<f64>| v.unwrap_or(f64::NAN);
        let got = (
            value(change.estimate.estimate_pp),
            value(change.estimate.ci_low_pp),
            value(change.estimate.ci_high_pp),
        );
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(
            close(got.0, estimate) && close(got.1, lo) && close(got.2, hi),
            "{got:?} vs {:?}",
            (estimate, lo, hi)
        );
        assert!(lo < hi, "the reference interval is not degenerate");
        // The stream is the documented one.
        assert_eq!(
            draw_seed,
            crate::common::stats::derive_seed(
                5,
                &[KIND, "B", "cap_16384_minus_cap_1024", "v_contrast"]
            )
        );
    }

    #[test]
    fn repeat_disagreement_in_the_table() {
        // heavy_ok's repeat 1 at the low cap flips f2's (8, medium, raw) cell (index 9).
        let mut rows = panel();
        for r in &mut rows {
            if r.configuration == "heavy_ok"
                && r.completion_cap == 1024
                && r.repeat == 1
                && r.family == "f2"
                && r.w == Workflow::Medium
            {
                r.vts = false;
            }
        }
        let (t, _) = tables_of(&run_on(&rows, &params(10)));
        let disagreement =
            |stratum, role| find(&t, stratum, role, CapStatistic::RepeatDisagreement);
        let b = disagreement("B", CapRole::Low);
        // B pools heavy_ok only: 5 families × 12 cells = 60 conditions, 1 disagrees.
        assert_eq!(
            (b.estimate.n_events, b.estimate.n_total),
            (Some(1), Some(60))
        );
        assert!((b.estimate.estimate_pp.unwrap_or(f64::NAN) - 100.0 / 60.0).abs() < 1e-12);
        let all = disagreement("all", CapRole::Low);
        // all: the four stratified configurations.
        assert_eq!(
            (all.estimate.n_events, all.estimate.n_total),
            (Some(1), Some(240))
        );
        assert_eq!(
            disagreement("all", CapRole::High).estimate.n_events,
            Some(0)
        );
    }

    #[test]
    fn parameters_are_typed_and_checked_at_their_path() {
        let Some(kind) = crate::AnalysisKind::get(KIND) else {
            panic!("cap_sweep is registered")
        };
        assert_eq!(
            kind.kind().parameters(),
            ["draws", "seed", "margin_pp", "truncation_ceiling_pct"]
        );
        let parse = |json: &str| {
            let given: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}"));
            kind.kind().parse(&given)
        };
        assert!(parse(r#"{"draws": 100, "margin_pp": 5}"#).is_ok());
        let problems = parse(r#"{"truncation_ceiling_pct": 120}"#)
            .err()
            .unwrap_or_default();
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "truncation_ceiling_pct");
        let problems = parse(r#"{"draws": 0}"#).err().unwrap_or_default();
        assert_eq!(problems[0].path, "draws");
    }

    #[test]
    fn a_missing_strata_column_is_an_input_error() {
        let tables = BTreeMap::from([(
            STRATA_TABLE.to_string(),
            tbb_tables::TableBuilder::new()
                .text("configuration", ["x"])
                .build("s")
                .unwrap_or_else(|e| panic!("{e}")),
        )]);
        let rows = panel();
        let context = Context {
            study: "sweep",
            episodes: &rows,
            requests: &crate::NO_REQUESTS,
            tables: &tables,
            skipped: &[],
        };
        assert!(matches!(
            run(&params(10), &context),
            Err(AnalysisError::InputTable { .. })
        ));
    }
}
