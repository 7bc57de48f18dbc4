//! The discovery study (pressure R): per arm, how often the required tools reach the
//! model (availability, A), success counted intention to treat, and the R contrast
//! (high − low), with cluster-bootstrap intervals.
//!
//! Owns: the `discovery` table ([`DiscoveryRow`]). One row per arm × statistic × R
//! level × cluster unit:
//!
//! * `arm`, `lane` (the arm's menu: `fixed`, `router`, `retrieval_k8`, ...);
//! * `statistic`: `availability` (share of episodes whose offered menu held every
//!   required tool, the `ok_a` column), `itt_success` (VTS over *every* assigned
//!   episode: one that stopped unavailable counts as a failure, as does an
//!   infrastructure failure), `success_if_available` (VTS among the available
//!   episodes only — descriptive, not a randomised comparison);
//! * `r`: `low`, `high`, or `high_minus_low` (the paired R contrast, for
//!   `availability` and `itt_success`);
//! * `cluster_unit`: `required_tools` (the primary unit), `family`, `intent`;
//!   `n_clusters`; `n` (episodes for a rate, pairs for a contrast); `hits` (episodes
//!   counted 1 for a rate; null for a contrast);
//! * `estimate_pp`, `ci_low_pp`, `ci_high_pp` (95% percentile cluster bootstrap),
//!   `p_value` (centered, two-sided; contrasts only, null for rates), `p_floor`,
//!   `draws`, `seed`, `draw_seed`;
//! * `unavailable`, `unavailable_requests`, `unavailable_tokens` (on `availability`
//!   rows at one R level, null elsewhere): the episodes that stopped for lack of
//!   availability, and the provider requests and reported tokens they used — 0 and 0
//!   by construction; the table shows it.
//!
//! # Clusters of required tools
//! A variant's required-tool cluster is the set of tools its reference program calls,
//! with the connector prefix taken off (`read_invoice+search+update_invoice`): the
//! variants table's `required_tool_kinds` column. Families of one intent share their
//! tool kinds, and a family whose decision triggers the permitted write adds that
//! write, so the clusters split intents by whether a write is required; at the
//! discovery cells the 36 core families fall into the clusters the table counts in
//! `n_clusters` (see docs/discovery.md for why that is not the paper's 18).
//!
//! # Estimates and pairs
//! A rate is the mean over episodes (each weighs 1). A contrast pairs, within an arm,
//! the R-low and R-high episodes of one block, configuration, family, V, W, D, depth,
//! completion cap and repeat; its estimate is the mean paired difference, and an
//! episode without its partner is left out. The bootstrap resamples whole clusters of
//! the row's unit and recomputes the ratio of sums ([`crate::common::stats`]); a row's stream
//! hashes `["discovery", arm, statistic, r, cluster_unit]` with the manifest's seed.
//!
//! Invariants: row order of the input does not matter; rows come out sorted by arm
//! name, then statistic, R level and cluster unit in the orders above.
//!
//! Never: runs episodes, reads files, or looks at anything but the episodes and the
//! variants table.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use serde::{Deserialize, Serialize};

use super::{AnalysisError, Context, Design, Input, Output, ParamProblem, Produced, Typed};
use crate::common::design::success;
use crate::common::stats::{self, ClusterTotals};
use tbb_tables::analyses::discovery::{ClusterUnit, DiscoveryRow, RLevel, Statistic};
use tbb_tables::levels::{level_name, Routing};
use tbb_tables::rows::{EpisodeRow, VariantRow};
use tbb_tables::TableRow;

/// Name of the kind.
const KIND: &str = "discovery";

/// The `discovery` analysis kind.
pub struct Discovery;

/// Its parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoveryParams {
    /// Bootstrap draws (default [`stats::DEFAULT_DRAWS`]).
    #[serde(default)]
    pub draws: Option<u32>,
    /// Bootstrap seed (default [`stats::DEFAULT_SEED`]).
    #[serde(default)]
    pub seed: Option<u64>,
}

impl Typed for Discovery {
    type Params = DiscoveryParams;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "discovery/1";
    const INPUTS: &'static [Input] = &[Input::Episodes, Input::Variants];
    const OUTPUTS: &'static [&'static str] = &[DiscoveryRow::TABLE];

    fn check(params: &DiscoveryParams) -> Vec<ParamProblem> {
        stats::check_draws(params.draws).into_iter().collect()
    }

    fn needs(design: &Design) -> Option<String> {
        let paired = design.cells.iter().any(|low| {
            low.r == tbb_tables::levels::Routing::Low
                && design.cells.iter().any(|high| {
                    high.r == tbb_tables::levels::Routing::High
                        && (high.v, high.w, high.d, high.depth) == (low.v, low.w, low.d, low.depth)
                })
        });
        (!paired).then(|| {
            "it needs matched R-low / R-high cells (the same V, W and D at r = \"low\" and \
             r = \"high\"); the manifest has none"
                .into()
        })
    }

    fn run(params: &DiscoveryParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let clusters = required_clusters(input.tables)?;
        let rows = compute(params, input.episodes, &clusters)?;
        Ok(vec![Output::of(&rows)?].into())
    }
}

/// variant id → required-tool cluster, from the variants table.
pub fn required_clusters(
    tables: &BTreeMap<String, RecordBatch>,
) -> Result<BTreeMap<String, String>, AnalysisError> {
    let rows: Vec<VariantRow> = crate::input_rows(KIND, tables)?;
    Ok(rows
        .into_iter()
        .map(|v| (v.variant_id, v.required_tool_kinds))
        .collect())
}

/// One observation: its value (0 or 1, or a difference) and its three cluster keys.
struct Obs<'a> {
    value: f64,
    keys: [&'a str; 3],
}

/// The rows, sorted.
pub fn compute(
    params: &DiscoveryParams,
    episodes: &[EpisodeRow],
    clusters: &BTreeMap<String, String>,
) -> Result<Vec<DiscoveryRow>, AnalysisError> {
    let draws = params.draws.unwrap_or(stats::DEFAULT_DRAWS);
    let seed = params.seed.unwrap_or(stats::DEFAULT_SEED);
    if draws == 0 {
        return Err(AnalysisError::InvalidParameter {
            analysis: KIND,
            detail: "draws must be at least 1".into(),
        });
    }
    let cluster_of = |e: &EpisodeRow| -> Result<&str, AnalysisError> {
        clusters
            .get(e.variant_id.as_str())
            .map(String::as_str)
            .ok_or_else(|| AnalysisError::MissingData {
                analysis: KIND,
                detail: format!(
                    "variant {} has no required-tool cluster in the variants table",
                    e.variant_id
                ),
            })
    };
    let mut arms: BTreeMap<&str, Vec<&EpisodeRow>> = BTreeMap::new();
    for e in episodes {
        arms.entry(e.arm.as_str()).or_default().push(e);
    }
    if arms.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis: KIND,
            detail: "no episode at r = low or r = high".into(),
        });
    }
    let mut out = Vec::new();
    for (arm, rows) in arms {
        let lane = rows.first().map_or_else(String::new, |e| e.lane.name());
        let mut push = |statistic: Statistic, r: RLevel, obs: &[Obs<'_>], extra: Extra| {
            // No episode to average (no available episode, say): no row.
            if obs.is_empty() {
                return;
            }
            let (statistic_name, r_name) = (level_name(&statistic), level_name(&r));
            for (u, unit) in ClusterUnit::ALL.into_iter().enumerate() {
                let keys: Vec<&str> = obs.iter().map(|o| o.keys[u]).collect();
                let (ids, names) = stats::cluster_ids(&keys);
                let values: Vec<f64> = obs.iter().map(|o| 100.0 * o.value).collect();
                let totals =
                    ClusterTotals::new(&values, &vec![1.0; values.len()], &ids, names.len());
                let draw_seed = stats::derive_seed(
                    seed,
                    &[KIND, arm, &statistic_name, &r_name, &level_name(&unit)],
                );
                let interval = stats::cluster_bootstrap(&totals, draws, draw_seed);
                let unavailable = |k: usize| extra.unavailable.map(|u| u[k]);
                out.push(DiscoveryRow {
                    arm: arm.to_string(),
                    lane: lane.clone(),
                    statistic,
                    r,
                    cluster_unit: unit,
                    n_clusters: names.len() as u32,
                    n: obs.len() as u32,
                    hits: extra.hits,
                    estimate_pp: interval.estimate,
                    ci_low_pp: interval.low,
                    ci_high_pp: interval.high,
                    // A rate has no null hypothesis to test.
                    p_value: extra.contrast.then_some(interval.p_value),
                    p_floor: interval.p_floor,
                    draws,
                    seed,
                    draw_seed,
                    unavailable: unavailable(0),
                    unavailable_requests: unavailable(1),
                    unavailable_tokens: unavailable(2),
                });
            }
        };
        fn obs_of<'e>(
            cluster: Result<&'e str, AnalysisError>,
            e: &'e EpisodeRow,
            value: bool,
        ) -> Result<Obs<'e>, AnalysisError> {
            Ok(Obs {
                value: f64::from(u8::from(value)),
                keys: [cluster?, e.family.as_str(), e.intent.as_str()],
            })
        }
        for r in [RLevel::Low, RLevel::High] {
            let r_name = level_name(&r);
            let at: Vec<&EpisodeRow> = rows
                .iter()
                .copied()
                .filter(|e| e.r.name() == r_name)
                .collect();
            if at.is_empty() {
                continue;
            }
            let available: Vec<Obs<'_>> = at
                .iter()
                .map(|e| obs_of(cluster_of(e), e, e.ok[0]))
                .collect::<Result<_, _>>()?;
            let unavailable: Vec<&&EpisodeRow> = at.iter().filter(|e| !e.ok[0]).collect();
            push(
                Statistic::Availability,
                r,
                &available,
                Extra {
                    hits: Some(at.iter().filter(|e| e.ok[0]).count() as u64),
                    contrast: false,
                    unavailable: Some([
                        unavailable.len() as u64,
                        unavailable.iter().map(|e| u64::from(e.requests)).sum(),
                        unavailable.iter().map(|e| e.total_tokens).sum(),
                    ]),
                },
            );
            let itt: Vec<Obs<'_>> = at
                .iter()
                .map(|e| obs_of(cluster_of(e), e, success(e)))
                .collect::<Result<_, _>>()?;
            push(
                Statistic::IttSuccess,
                r,
                &itt,
                Extra::rate(at.iter().filter(|e| success(e)).count()),
            );
            let given: Vec<&&EpisodeRow> = at.iter().filter(|e| e.ok[0]).collect();
            let per_protocol: Vec<Obs<'_>> = given
                .iter()
                .map(|e| obs_of(cluster_of(e), e, success(e)))
                .collect::<Result<_, _>>()?;
            push(
                Statistic::SuccessIfAvailable,
                r,
                &per_protocol,
                Extra::rate(given.iter().filter(|e| success(e)).count()),
            );
        }
        let pairs = pair(&rows)?;
        if !pairs.is_empty() {
            for (statistic, y) in [
                (
                    Statistic::Availability,
                    (|e: &EpisodeRow| e.ok[0]) as fn(&EpisodeRow) -> bool,
                ),
                (Statistic::IttSuccess, success),
            ] {
                let obs: Vec<Obs<'_>> = pairs
                    .iter()
                    .map(|(low, high)| {
                        Ok(Obs {
                            value: f64::from(u8::from(y(high))) - f64::from(u8::from(y(low))),
                            keys: [cluster_of(low)?, low.family.as_str(), low.intent.as_str()],
                        })
                    })
                    .collect::<Result<_, AnalysisError>>()?;
                push(
                    statistic,
                    RLevel::HighMinusLow,
                    &obs,
                    Extra {
                        hits: None,
                        contrast: true,
                        unavailable: None,
                    },
                );
            }
        }
    }
    // The levels' declaration order is the table's order.
    out.sort_by(|a, b| {
        (&a.arm, a.statistic, a.r, a.cluster_unit).cmp(&(&b.arm, b.statistic, b.r, b.cluster_unit))
    });
    Ok(out)
}

/// What a group of rows adds beside the bootstrap.
#[derive(Clone, Copy)]
struct Extra {
    hits: Option<u64>,
    contrast: bool,
    unavailable: Option<[u64; 3]>,
}

impl Extra {
    fn rate(hits: usize) -> Extra {
        Extra {
            hits: Some(hits as u64),
            contrast: false,
            unavailable: None,
        }
    }
}

/// The (R low, R high) pairs of one arm's episodes, sorted by their condition.
fn pair<'a>(
    rows: &[&'a EpisodeRow],
) -> Result<Vec<(&'a EpisodeRow, &'a EpisodeRow)>, AnalysisError> {
    type Key<'k> = (
        &'k str,
        &'k str,
        &'k str,
        u32,
        &'k str,
        &'k str,
        Option<u32>,
        u32,
        u32,
    );
    let mut slots: BTreeMap<Key<'a>, [Option<&'a EpisodeRow>; 2]> = BTreeMap::new();
    for &e in rows {
        let side = usize::from(e.r == Routing::High);
        let key = (
            e.block.as_str(),
            e.configuration.as_str(),
            e.family.as_str(),
            e.v,
            // By name, as the pairs were always ordered.
            e.w.name(),
            e.d.name(),
            e.depth,
            e.completion_cap,
            e.repeat,
        );
        if slots.entry(key).or_default()[side].replace(e).is_some() {
            return Err(AnalysisError::Inconsistent {
                analysis: KIND,
                detail: format!(
                    "two episodes of arm {} for family {} × configuration {} at v = {}, \
                     r = {}, repeat {}",
                    e.arm, e.family, e.configuration, e.v, e.r, e.repeat
                ),
            });
        }
    }
    Ok(slots
        .into_values()
        .filter_map(|s| match s {
            [Some(low), Some(high)] => Some((low, high)),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests;
