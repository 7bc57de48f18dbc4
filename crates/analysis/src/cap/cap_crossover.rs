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
//! * `cap_crossover` — one row per stratum × cap × statistic (strata B, S, N, then
//!   `all` with truncation and repeat disagreement only): the shared columns of
//!   [`two_caps::main_table`], then `truncation_persists` (whether some configuration
//!   of the stratum fails the manipulation check; null on `all` rows) and `reading`
//!   (when it does: a sentence saying the rows measure the menu penalty while
//!   truncation persists at the high cap, not the penalty once the cap stops binding;
//!   null otherwise). `excluded_provider_failure` and `excluded_missing_usage` count
//!   the rows left out of the row's configurations and cap(s); `bound_low_pp` and
//!   `bound_high_pp`, on the change rows of the menu contrast, are the smallest and
//!   largest change over every success/failure outcome of those rows, each row taking
//!   either outcome independently (exact: see [`super::two_caps`], "Either-outcome
//!   bounds").
//! * `cap_crossover_configurations` — one row per configuration of the episodes ×
//!   cap: the columns of [`two_caps::configuration_table`], with
//!   `manipulation_check_passed` (at most `truncation_ceiling_pct` % of the kept
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

use super::two_caps::{self, CapRole, CapRows, ConfigurationRow, Resolved};
use crate::{AnalysisError, Context, Design, Input, Output, ParamProblem, Produced, Typed};

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
    const OUTPUTS: &'static [&'static str] = &["cap_crossover", "cap_crossover_configurations"];

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

    let mut rows = Vec::new();
    // (truncation persists, reading) of each row.
    let mut readings: Vec<(Option<bool>, Option<String>)> = Vec::new();
    for stratum in STRATA {
        let members: BTreeSet<&str> = data
            .configurations()
            .filter(|c| stratum_of(c) == Some(stratum))
            .collect();
        let failing = members.iter().filter(|c| !passes(c)).count();
        let reading =
            (failing > 0).then(|| persisting(failing, members.len(), ceiling, data.caps.high));
        let block = two_caps::stratum_rows(KIND, &data, stratum, &members, settings);
        readings.extend(block.iter().map(|_| (Some(failing > 0), reading.clone())));
        rows.extend(block);
    }
    let every: BTreeSet<&str> = data
        .configurations()
        .filter(|c| stratum_of(c).is_some())
        .collect();
    let block = two_caps::stratum_rows(KIND, &data, two_caps::ALL, &every, settings);
    readings.extend(block.iter().map(|_| (None, None)));
    rows.extend(block);

    let main = two_caps::main_table(
        &rows,
        data.caps,
        settings.seed,
        |t| {
            t.bool_opt("truncation_persists", readings.iter().map(|r| r.0))
                .text_opt("reading", readings.iter().map(|r| r.1.as_deref()))
        },
        "cap_crossover",
    )?;

    let mut configurations = Vec::new();
    for configuration in data.configurations() {
        let membership = strata.get(configuration);
        let in_stratum = stratum_of(configuration).is_some();
        for role in CapRole::CAPS {
            let (episodes_v128, truncated_v128) = data.truncation(configuration, role);
            configurations.push(ConfigurationRow {
                configuration,
                organization: data
                    .organizations
                    .get(configuration)
                    .copied()
                    .unwrap_or_default(),
                stratum: membership.and_then(|m| m.stratum.as_deref()),
                selected: membership.is_some_and(|m| m.selected),
                role,
                episodes_v128,
                truncated_v128,
                excluded: data.excluded(configuration, role),
                manipulation_check_passed: in_stratum.then(|| passes(configuration)),
                in_pooled_estimate: in_stratum,
            });
        }
    }
    let by_configuration = two_caps::configuration_table(
        &configurations,
        data.caps,
        |t| t,
        "cap_crossover_configurations",
    )?;
    Ok(vec![
        Output {
            table: "cap_crossover",
            batch: main,
        },
        Output {
            table: "cap_crossover_configurations",
            batch: by_configuration,
        },
    ])
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow_array::{Array, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array};

    use super::*;
    use crate::cap::two_caps::testing::{rows_at_cap, strata};
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
            requests: &[],
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

    fn col<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> &'a T {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<T>())
            .unwrap_or_else(|| panic!("column {name}"))
    }

    fn find(batch: &RecordBatch, stratum: &str, role: &str, statistic: &str) -> usize {
        let s = col::<StringArray>(batch, "stratum");
        let a = col::<StringArray>(batch, "arm_role");
        let t = col::<StringArray>(batch, "statistic");
        (0..batch.num_rows())
            .find(|&i| s.value(i) == stratum && a.value(i) == role && t.value(i) == statistic)
            .unwrap_or_else(|| panic!("no row {stratum} {role} {statistic}"))
    }

    #[test]
    fn strata_contrasts_manipulation_check_and_schema() {
        let out = run_on(&panel());
        let t = &out[0].batch;
        let names: Vec<String> = t
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(
            &names[names.len() - 2..],
            ["truncation_persists", "reading"]
        );
        assert_eq!(t.num_rows(), 3 * 7 + 4);
        let est = col::<Float64Array>(t, "estimate_pp");
        // B: 2 of 4 families at −100 at both caps: −50, −50, change 0. S: −25.
        assert_eq!(est.value(find(t, "B", "low", "v_contrast")), -50.0);
        assert_eq!(est.value(find(t, "B", "change", "v_contrast")), 0.0);
        assert_eq!(est.value(find(t, "S", "high", "v_contrast")), -25.0);
        assert_eq!(est.value(find(t, "N", "change", "v_contrast")), 0.0);
        // heavy truncates half of its V = 128 episodes at 4,096: the check fails, the
        // stratum is kept and the reading says what the rows measure.
        let persists = col::<BooleanArray>(t, "truncation_persists");
        let reading = col::<StringArray>(t, "reading");
        let b = find(t, "B", "change", "v_contrast");
        assert!(persists.value(b));
        assert!(
            reading.value(b).contains("truncation persisting: 1 of 1"),
            "{}",
            reading.value(b)
        );
        let s = find(t, "S", "change", "v_contrast");
        assert!(!persists.value(s) && reading.is_null(s));
        let all = find(t, "all", "high", "truncated_share_v128");
        assert!(persists.is_null(all));
        // heavy: 2 families × 4 cells × 2 repeats truncated of 32 at each cap.
        assert_eq!(
            (
                col::<UInt32Array>(t, "n_events").value(find(
                    t,
                    "B",
                    "high",
                    "truncated_share_v128"
                )),
                col::<UInt32Array>(t, "n_total").value(find(
                    t,
                    "B",
                    "high",
                    "truncated_share_v128"
                )),
            ),
            (16, 32)
        );
        let c = &out[1].batch;
        let name = col::<StringArray>(c, "configuration");
        let passed = col::<BooleanArray>(c, "manipulation_check_passed");
        let pooled = col::<BooleanArray>(c, "in_pooled_estimate");
        for i in 0..c.num_rows() {
            assert_eq!(passed.value(i), name.value(i) != "heavy");
            assert!(
                pooled.value(i),
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
                    && r.w == "low"
                    && r.d == "raw"
            };
            if at(4096, 0, "f3", 128) {
                r.infra_failure = true;
                r.infra_error = Some("timeout".into());
            } else if at(1024, 1, "f4", 8) {
                r.infra_failure = true;
                r.infra_error = Some("bad_usage".into());
            }
        }
        let out = run_on(&rows);
        let t = &out[0].batch;
        let b = find(t, "B", "change", "v_contrast");
        let lo = col::<Float64Array>(t, "bound_low_pp").value(b);
        let hi = col::<Float64Array>(t, "bound_high_pp").value(b);
        assert_eq!((lo, hi), (-6.25, 0.0));
        assert_eq!(col::<Float64Array>(t, "estimate_pp").value(b), 0.0);
        let provider = col::<UInt32Array>(t, "excluded_provider_failure");
        let usage = col::<UInt32Array>(t, "excluded_missing_usage");
        assert_eq!((provider.value(b), usage.value(b)), (1, 1));
        let low = find(t, "B", "low", "v_contrast");
        assert_eq!((provider.value(low), usage.value(low)), (0, 1));
        assert!(col::<Float64Array>(t, "bound_low_pp").is_null(low));
        // The N stratum has nothing excluded: its bounds are its estimate.
        let n = find(t, "N", "change", "v_contrast");
        assert_eq!(
            (
                col::<Float64Array>(t, "bound_low_pp").value(n),
                col::<Float64Array>(t, "bound_high_pp").value(n)
            ),
            (0.0, 0.0)
        );
    }
}
