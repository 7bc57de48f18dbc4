//! The `truncation_strata` analysis kind: the cap sweep's strata (paper Appendix E.1),
//! read from another study's `truncation` table — the capacity panel's, bound in the
//! manifest with `inputs = { truncation = { from = "capacity" } }`.
//!
//! Owns: the `truncation_strata` table, one row per configuration of this study's
//! episodes (sorted by configuration): `configuration`, `organization`, `lane`,
//! `completion_cap`, `v` (the stratum read: by default the routed lane at the frozen
//! 1,024-token cap, V = 128), `upstream_episodes`, `upstream_truncated`,
//! `truncated_share` (the upstream row's; null when the upstream table has no row for
//! the configuration) and `stratum`:
//!
//! * `B` (truncation-heavy): share ≥ 20 %;
//! * `M` (mild): 5 % ≤ share < 20 %;
//! * `N` (none): no truncated episode;
//! * null: no upstream row, or a share above 0 and below 5 % (outside the sweep's
//!   strata).
//!
//! The rule is decided on the integer counts (`5 × truncated ≥ episodes` for B), so a
//! share of exactly 20 % or 5 % falls in the stratum it opens. The paper's N also asks
//! for a V effect within 3 pp of zero; that check is the sweep's, not this table's.
//!
//! Invariants: a configuration of this study absent upstream is listed with null
//! share and stratum, never dropped.
//!
//! Never: reads files (the pipeline hands it the upstream table).

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::{AnalysisError, Context, Input, Output, Produced, Typed};
use tbb_tables::analyses::truncation::TruncationRow;
use tbb_tables::analyses::truncation_strata::{TruncationStrataRow, TruncationStratum};
use tbb_tables::levels::Menu;
use tbb_tables::TableRow;

/// Name in error messages.
const KIND: &str = "truncation_strata";
/// The upstream table it reads.
const TABLE: &str = TruncationRow::TABLE;

/// The `truncation_strata` analysis kind.
pub struct TruncationStrata;

/// A menu lane of the upstream stratum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Routed menu.
    Routed,
    /// Fixed menu.
    Fixed,
}

/// Its parameters: which upstream stratum to read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Menu lane (default routed).
    #[serde(default)]
    pub lane: Option<Lane>,
    /// Completion cap (default 1,024, the frozen cap).
    #[serde(default)]
    pub completion_cap: Option<u32>,
}

/// The menu size the share is read at.
const V: u32 = 128;

impl Typed for TruncationStrata {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "truncation_strata/1";
    const INPUTS: &'static [Input] = &[Input::Episodes, Input::Table(TABLE)];
    const OUTPUTS: &'static [&'static str] = &[TruncationStrataRow::TABLE];

    fn run(params: &Params, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let lane = match params.lane.unwrap_or(Lane::Routed) {
            Lane::Routed => Menu::Routed,
            Lane::Fixed => Menu::Fixed,
        };
        let cap = params
            .completion_cap
            .unwrap_or(tbb_tables::levels::COMPLETION_CAP);
        let table = input
            .tables
            .get(TABLE)
            .ok_or_else(|| AnalysisError::InputTable {
                analysis: KIND,
                table: TABLE.into(),
                detail: "it was not given".into(),
            })?;
        let upstream = upstream_counts(KIND, table, lane, cap)?;
        let mut configurations: BTreeMap<&str, &str> = BTreeMap::new();
        for row in input.episodes {
            configurations.insert(&row.configuration, &row.organization);
        }
        let rows: Vec<TruncationStrataRow> = configurations
            .iter()
            .map(|(&configuration, &organization)| {
                let counts = upstream.get(configuration).copied();
                TruncationStrataRow {
                    configuration: configuration.into(),
                    organization: organization.into(),
                    lane: lane.name(),
                    completion_cap: cap,
                    v: V,
                    upstream_episodes: counts.map(|c| c.0),
                    upstream_truncated: counts.map(|c| c.1),
                    truncated_share: counts
                        .filter(|c| c.0 > 0)
                        .map(|(e, t)| f64::from(t) / f64::from(e)),
                    stratum: counts.and_then(|(episodes, truncated)| stratum(episodes, truncated)),
                }
            })
            .collect();
        Ok(vec![Output::of(&rows)?].into())
    }
}

/// The sweep's stratum of `truncated` of `episodes`: B at 20 % or more, M from 5 % to
/// below 20 %, N with none truncated, `None` otherwise (no episode, or above 0 and
/// below 5 %).
pub fn stratum(episodes: u32, truncated: u32) -> Option<TruncationStratum> {
    let (e, t) = (u64::from(episodes), u64::from(truncated));
    if e == 0 {
        None
    } else if 5 * t >= e {
        Some(TruncationStratum::B)
    } else if 20 * t >= e {
        Some(TruncationStratum::M)
    } else if t == 0 {
        Some(TruncationStratum::N)
    } else {
        None
    }
}

/// `(episodes, truncated)` by configuration at (`lane`, `cap`, V = 128) in an upstream
/// `truncation` table (pooled `all` rows left out); errors name `analysis`.
pub(crate) fn upstream_counts(
    analysis: &'static str,
    table: &RecordBatch,
    lane: Menu,
    cap: u32,
) -> Result<BTreeMap<String, (u32, u32)>, AnalysisError> {
    let lane_name = lane.name();
    let rows = TruncationRow::from_batch(table).map_err(|e| AnalysisError::InputTable {
        analysis,
        table: TABLE.into(),
        detail: e.to_string(),
    })?;
    let mut out = BTreeMap::new();
    for row in &rows {
        let config = row.configuration.as_str();
        if row.lane != lane_name
            || row.completion_cap != cap
            || row.v != V
            || config == crate::capacity::truncation::ALL
        {
            continue;
        }
        if out
            .insert(config.to_string(), (row.episodes, row.truncated))
            .is_some()
        {
            return Err(AnalysisError::Inconsistent {
                analysis,
                detail: format!(
                    "the upstream truncation table has two rows for {config} at lane {lane}, cap {cap}, V = {V}"
                ),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::unit;
    use arrow_array::{Array, Float64Array, StringArray};

    #[test]
    fn the_sweep_rule_at_its_boundaries() {
        // B opens at exactly 20 %, M at exactly 5 %; N is no truncation at all.
        use TruncationStratum::{B, M, N};
        assert_eq!(stratum(100, 20), Some(B));
        assert_eq!(stratum(5, 1), Some(B));
        assert_eq!(stratum(100, 100), Some(B));
        assert_eq!(stratum(100, 19), Some(M));
        assert_eq!(stratum(100, 5), Some(M));
        assert_eq!(stratum(20, 1), Some(M));
        assert_eq!(stratum(100, 4), None);
        assert_eq!(stratum(21, 1), None, "1/21 = 4.8 % is below M");
        assert_eq!(stratum(100, 0), Some(N));
        assert_eq!(stratum(0, 0), None);
    }

    fn upstream() -> RecordBatch {
        // (lane, cap, configuration, v, episodes, truncated)
        let rows: [(&str, u32, &str, u32, u32, u32); 7] = [
            ("routed", 1024, "all", 128, 40, 12),
            ("routed", 1024, "heavy", 128, 20, 5),
            ("routed", 1024, "heavy", 8, 20, 0),
            ("routed", 1024, "mild", 128, 20, 1),
            ("routed", 1024, "clean", 128, 20, 0),
            ("fixed", 1024, "clean", 128, 20, 20),
            ("routed", 4096, "clean", 128, 20, 20),
        ];
        let rows: Vec<TruncationRow> = rows
            .iter()
            .map(
                |&(lane, cap, configuration, v, episodes, truncated)| TruncationRow {
                    lane: lane.into(),
                    completion_cap: cap,
                    configuration: configuration.into(),
                    organization: configuration.into(),
                    v,
                    n_cells: 4,
                    episodes,
                    successes: episodes - truncated,
                    vts_rate: 0.0,
                    truncated,
                    truncated_share: 0.0,
                    truncated_before_first_call: 0,
                    truncated_before_first_call_share: None,
                },
            )
            .collect();
        TruncationRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_configuration_of_this_study_gets_a_row_absent_ones_with_nulls() {
        let mut episodes = Vec::new();
        for config in ["mild", "heavy", "clean", "newcomer"] {
            episodes.extend(unit(config, "org", "f1", "i1", |_| true));
        }
        let tables = BTreeMap::from([(TABLE.to_string(), upstream())]);
        let context = Context {
            study: "sweep",
            episodes: &episodes,
            requests: &crate::NO_REQUESTS,
            tables: &tables,
            skipped: &[],
        };
        let out =
            TruncationStrata::run(&Params::default(), &context).unwrap_or_else(|e| panic!("{e}"));
        let batch = &out.tables[0].batch;
        let text = |name: &str| -> Vec<Option<String>> {
            let c = batch
                .column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                .unwrap_or_else(|| panic!("{name}"));
            (0..c.len())
                .map(|i| (!c.is_null(i)).then(|| c.value(i).to_string()))
                .collect()
        };
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            text("configuration"),
            [s("clean"), s("heavy"), s("mild"), s("newcomer")]
        );
        // heavy 5/20 = 25 % (B), mild 1/20 = 5 % (M), clean 0/20 (N), newcomer absent.
        assert_eq!(text("stratum"), [s("N"), s("B"), s("M"), None]);
        let share = batch
            .column_by_name("truncated_share")
            .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
            .unwrap_or_else(|| panic!("truncated_share"));
        let got: Vec<Option<f64>> = share.iter().collect();
        assert_eq!(got, [Some(0.0), Some(0.25), Some(0.05), None]);

        // The fixed lane's stratum reads other rows.
        let fixed = Params {
            lane: Some(Lane::Fixed),
            completion_cap: None,
        };
        let out = TruncationStrata::run(&fixed, &context).unwrap_or_else(|e| panic!("{e}"));
        let c = out.tables[0]
            .batch
            .column_by_name("stratum")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .unwrap_or_else(|| panic!("stratum"));
        assert_eq!(c.value(0), "B");
        assert!(c.is_null(1) && c.is_null(2) && c.is_null(3));
    }

    #[test]
    fn a_table_without_the_columns_is_an_input_error() {
        let tables = BTreeMap::from([(
            TABLE.to_string(),
            tbb_tables::TableBuilder::new()
                .text("lane", ["routed"])
                .build("truncation")
                .unwrap_or_else(|e| panic!("{e}")),
        )]);
        let context = Context {
            study: "sweep",
            episodes: &[],
            requests: &crate::NO_REQUESTS,
            tables: &tables,
            skipped: &[],
        };
        let err = TruncationStrata::run(&Params::default(), &context).err();
        assert!(
            matches!(err, Some(AnalysisError::InputTable { .. })),
            "{err:?}"
        );
    }
}
