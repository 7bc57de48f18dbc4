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
//! * `cap_sweep` — one row per stratum × cap × statistic: the shared columns of
//!   [`two_caps::main_table`] (`stratum`, `arm`, `arm_role`, `completion_cap`,
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
//! * `cap_sweep_configurations` — one row per configuration of the episodes × cap:
//!   the columns of [`two_caps::configuration_table`]. `manipulation_check_passed` is
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

use super::two_caps::{self, CapRole, CapRows, ConfigurationRow, Resolved};
use crate::{AnalysisError, Context, Design, Input, Output, ParamProblem, Produced, Typed};

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
    const OUTPUTS: &'static [&'static str] = &["cap_sweep", "cap_sweep_configurations"];

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

    let is_change = |r: &two_caps::Row| {
        r.role == CapRole::Change && r.statistic == two_caps::statistic::V_CONTRAST
    };
    let interval = |r: &two_caps::Row| r.ci_low_pp.zip(r.ci_high_pp).filter(|_| is_change(r));
    let main = two_caps::main_table(
        &rows,
        data.caps,
        settings.seed,
        |t| {
            t.f64_opt(
                "margin_pp",
                rows.iter().map(|r| is_change(r).then_some(margin)),
            )
            .bool_opt(
                "clears_margin",
                rows.iter().map(|r| interval(r).map(|(lo, _)| lo > margin)),
            )
            .bool_opt(
                "within_margin",
                rows.iter()
                    .map(|r| interval(r).map(|(lo, hi)| -margin < lo && hi < margin)),
            )
        },
        "cap_sweep",
    )?;

    let mut configurations = Vec::new();
    for configuration in data.configurations() {
        let membership = strata.get(configuration);
        let stratum = membership.and_then(|m| m.stratum.as_deref());
        let check = (stratum_of(configuration) == Some(PRIMARY)).then(|| passes(configuration));
        for role in CapRole::CAPS {
            let (episodes_v128, truncated_v128) = data.truncation(configuration, role);
            configurations.push(ConfigurationRow {
                configuration,
                organization: data
                    .organizations
                    .get(configuration)
                    .copied()
                    .unwrap_or_default(),
                stratum,
                selected: membership.is_some_and(|m| m.selected),
                role,
                episodes_v128,
                truncated_v128,
                excluded: data.excluded(configuration, role),
                manipulation_check_passed: check,
                in_pooled_estimate: pooled(configuration),
            });
        }
    }
    let by_configuration = two_caps::configuration_table(
        &configurations,
        data.caps,
        |t| t,
        "cap_sweep_configurations",
    )?;
    Ok(vec![
        Output {
            table: "cap_sweep",
            batch: main,
        },
        Output {
            table: "cap_sweep_configurations",
            batch: by_configuration,
        },
    ])
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow_array::{
        Array, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
    };

    use super::*;
    use crate::cap::two_caps::testing::{rows_at_cap, strata};
    use crate::common::stats::IndexStream;
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
            requests: &[],
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

    fn col<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> &'a T {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<T>())
            .unwrap_or_else(|| panic!("column {name}"))
    }

    /// The row index of (stratum, arm_role, statistic).
    fn find(batch: &RecordBatch, stratum: &str, role: &str, statistic: &str) -> usize {
        let s = col::<StringArray>(batch, "stratum");
        let a = col::<StringArray>(batch, "arm_role");
        let t = col::<StringArray>(batch, "statistic");
        (0..batch.num_rows())
            .find(|&i| s.value(i) == stratum && a.value(i) == role && t.value(i) == statistic)
            .unwrap_or_else(|| panic!("no row {stratum} {role} {statistic}"))
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
        // 3 strata × (3 contrast + 2 truncation + 2 disagreement) + all × 4.
        assert_eq!(out[0].batch.num_rows(), 3 * 7 + 4);
        // 5 configurations × 2 caps.
        assert_eq!(out[1].batch.num_rows(), 10);
        let arm = col::<StringArray>(&out[0].batch, "arm");
        let b_change = find(&out[0].batch, "B", "change", "v_contrast");
        assert_eq!(arm.value(b_change), "cap_16384_minus_cap_1024");
        assert_eq!(
            arm.value(find(&out[0].batch, "B", "low", "v_contrast")),
            "cap_1024"
        );
    }

    #[test]
    fn a_b_configuration_over_the_ceiling_is_left_out_of_the_pooled_estimate() {
        let out = run_on(&panel(), &params(200));
        let t = &out[0].batch;
        let est = col::<Float64Array>(t, "estimate_pp");
        let n_cfg = col::<UInt32Array>(t, "n_configurations");
        // heavy_stuck truncates all its V = 128 episodes at 16,384: out. heavy_ok:
        // low cap −60 pp (3 of 5 families at −100), high −20 pp: change +40.
        let low = find(t, "B", "low", "v_contrast");
        let high = find(t, "B", "high", "v_contrast");
        let change = find(t, "B", "change", "v_contrast");
        assert_eq!(n_cfg.value(change), 1);
        assert_eq!((est.value(low), est.value(high)), (-60.0, -20.0));
        assert_eq!(est.value(change), 40.0);
        // Over the 5 pp margin: its interval [0, 100]... is at least 0 (every family
        // changes by 0 or +100), so it clears only if the lower end is above 5.
        let lo = col::<Float64Array>(t, "ci_low_pp").value(change);
        let clears = col::<BooleanArray>(t, "clears_margin");
        assert_eq!(clears.value(change), lo > 5.0);
        assert!(
            clears.is_null(low),
            "margin columns live on change rows only"
        );
        // The configurations table says why.
        let c = &out[1].batch;
        let name = col::<StringArray>(c, "configuration");
        let passed = col::<BooleanArray>(c, "manipulation_check_passed");
        let pooled = col::<BooleanArray>(c, "in_pooled_estimate");
        let share = col::<Float64Array>(c, "truncated_share_v128");
        let role = col::<StringArray>(c, "arm_role");
        for i in 0..c.num_rows() {
            match name.value(i) {
                "heavy_stuck" => {
                    assert!(!passed.value(i) && !pooled.value(i));
                    assert_eq!(share.value(i), 1.0);
                }
                "heavy_ok" => {
                    assert!(passed.value(i) && pooled.value(i));
                    let want = if role.value(i) == "low" { 0.6 } else { 0.0 };
                    assert_eq!(share.value(i), want);
                }
                "mild" | "clean" => assert!(passed.is_null(i) && pooled.value(i)),
                _ => assert!(passed.is_null(i) && !pooled.value(i)),
            }
        }
        // Raising the ceiling to 100 % lets heavy_stuck in: B at the low cap becomes
        // (−60 − 100) / 2 = −80 pp.
        let lenient = Params {
            truncation_ceiling_pct: Some(100.0),
            ..params(200)
        };
        let out = run_on(&panel(), &lenient);
        let t = &out[0].batch;
        let low = find(t, "B", "low", "v_contrast");
        assert_eq!(col::<Float64Array>(t, "estimate_pp").value(low), -80.0);
        // Controls: M and N never move.
        let n = find(t, "N", "change", "v_contrast");
        assert_eq!(col::<Float64Array>(t, "estimate_pp").value(n), 0.0);
        assert!(col::<BooleanArray>(t, "within_margin").value(n));
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
                    for w in ["low", "high"] {
                        for d in ["raw", "linked"] {
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
                && r.w == "high"
            {
                r.vts = false;
            }
        }
        let lenient = Params {
            truncation_ceiling_pct: Some(100.0),
            ..params(3_000)
        };
        let out = run_on(&rows, &lenient);
        let t = &out[0].batch;
        let change = find(t, "B", "change", "v_contrast");
        let draw_seed = col::<UInt64Array>(t, "draw_seed").value(change);
        let (estimate, lo, hi) =
            slow_interaction(&rows, &["heavy_ok", "heavy_stuck"], 3_000, draw_seed);
        let got = (
            col::<Float64Array>(t, "estimate_pp").value(change),
            col::<Float64Array>(t, "ci_low_pp").value(change),
            col::<Float64Array>(t, "ci_high_pp").value(change),
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
                && r.w == "medium"
            {
                r.vts = false;
            }
        }
        let out = run_on(&rows, &params(10));
        let t = &out[0].batch;
        let events = col::<UInt32Array>(t, "n_events");
        let total = col::<UInt32Array>(t, "n_total");
        let est = col::<Float64Array>(t, "estimate_pp");
        let i = find(t, "B", "low", "repeat_disagreement");
        // B pools heavy_ok only: 5 families × 12 cells = 60 conditions, 1 disagrees.
        assert_eq!((events.value(i), total.value(i)), (1, 60));
        assert!((est.value(i) - 100.0 / 60.0).abs() < 1e-12);
        let all = find(t, "all", "low", "repeat_disagreement");
        // all: the four stratified configurations.
        assert_eq!((events.value(all), total.value(all)), (1, 240));
        let high = find(t, "all", "high", "repeat_disagreement");
        assert_eq!(events.value(high), 0);
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
            requests: &[],
            tables: &tables,
            skipped: &[],
        };
        assert!(matches!(
            run(&params(10), &context),
            Err(AnalysisError::InputTable { .. })
        ));
    }
}
