//! Cost per configuration at frozen prices (paper Appendix C/M: tokens × the
//! configuration's frozen route prices, without cache credit).
//!
//! Owns: the `costs` table. Unlike the capacity analyses it reads *every* row it is
//! given (all cells, lanes, repairs, caps and repeats of the study): it answers "what
//! did this study cost". One row per configuration and lane, plus lane `all` per
//! configuration, plus the pooled `configuration = "all"` rows first. Columns:
//! `configuration`, `organization`, `lane`, `episodes`, `successes`, `vts_rate`,
//! `infra_failures`, `prompt_tokens`, `completion_tokens`, `reasoning_tokens`,
//! `total_tokens`, `tokens_per_episode`, `cost_usd`, `cost_per_episode_usd`,
//! `cost_per_1000_episodes_usd`, `cost_per_success_usd` (null when nothing
//! succeeded). Infrastructure failures are kept: their tokens and cost count, and they
//! count as failures.
//!
//! The cost of an episode is the row's `cost_usd`, computed by the harness from the
//! frozen prices of the configuration (`provider::config`); this module only adds.
//!
//! Invariants: sums do not depend on row order: token sums are exact integers, and the
//! cost values of a group are sorted before they are added, so the float sum is the
//! same for any order of the rows.
//!
//! Never: reads prices or files, or resamples.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;

use crate::{Context, NoParams, Produced, Typed};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableBuilder;

use super::truncation::ALL;
use crate::common::design;
use crate::{AnalysisError, Output};

/// Name in error messages.
const KIND: &str = "costs";

/// The `costs` analysis kind.
pub struct Costs;

impl Typed for Costs {
    type Params = NoParams;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "costs/2";
    const OUTPUTS: &'static [&'static str] = &["costs"];

    fn run(_params: &NoParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        run(input.episodes).map(Produced::from)
    }
}

/// One row of the `costs` table.
#[derive(Debug, Clone, PartialEq)]
pub struct CostRow {
    /// Configuration or `all`.
    pub configuration: String,
    /// Organization or `all`.
    pub organization: String,
    /// Lane or `all`.
    pub lane: String,
    /// Episodes.
    pub episodes: u64,
    /// Successes.
    pub successes: u64,
    /// Infrastructure failures.
    pub infra_failures: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Reasoning tokens (where reported).
    pub reasoning_tokens: u64,
    /// Total tokens.
    pub total_tokens: u64,
    /// Cost in USD.
    pub cost_usd: f64,
}

impl CostRow {
    fn of(configuration: &str, organization: &str, lane: &str, rows: &[&EpisodeRow]) -> CostRow {
        let sum =
            |f: fn(&EpisodeRow) -> u64| rows.iter().map(|r| f(r)).fold(0, u64::saturating_add);
        let mut costs: Vec<f64> = rows.iter().map(|r| r.cost_usd).collect();
        costs.sort_by(f64::total_cmp);
        CostRow {
            configuration: configuration.into(),
            organization: organization.into(),
            lane: lane.into(),
            episodes: rows.len() as u64,
            successes: sum(|r| u64::from(design::success(r))),
            infra_failures: sum(|r| u64::from(r.infra_failure)),
            prompt_tokens: sum(|r| r.prompt_tokens),
            completion_tokens: sum(|r| r.completion_tokens),
            reasoning_tokens: sum(|r| r.reasoning_tokens),
            total_tokens: sum(|r| r.total_tokens),
            cost_usd: costs.iter().sum(),
        }
    }

    /// `x / n` (`n` is the episodes of a group, never 0).
    fn per(&self, x: f64, n: u64) -> f64 {
        x / n as f64
    }

    /// Cost per success, `None` when nothing succeeded.
    fn cost_per_success(&self) -> Option<f64> {
        (self.successes > 0).then(|| self.cost_usd / self.successes as f64)
    }
}

/// The rows: pooled first, then each configuration; within each, lane `all` first,
/// then the lanes sorted.
pub fn cost_rows(episodes: &[EpisodeRow]) -> Result<Vec<CostRow>, AnalysisError> {
    design::check_groups(KIND, episodes)?;
    let mut groups: BTreeMap<(bool, &str, &str, bool, &str), Vec<&EpisodeRow>> = BTreeMap::new();
    for row in episodes {
        for (pooled_config, config, org) in [
            (true, ALL, ALL),
            (false, row.configuration.as_str(), row.organization.as_str()),
        ] {
            for (pooled_lane, lane) in [(true, ALL), (false, row.lane.as_str())] {
                groups
                    .entry((!pooled_config, config, org, !pooled_lane, lane))
                    .or_default()
                    .push(row);
            }
        }
    }
    Ok(groups
        .iter()
        .map(|((_, config, org, _, lane), rows)| CostRow::of(config, org, lane, rows))
        .collect())
}

/// The `costs` table.
pub fn run(episodes: &[EpisodeRow]) -> Result<Vec<Output>, AnalysisError> {
    if episodes.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis: KIND,
            detail: "no episodes".into(),
        });
    }
    let rows = cost_rows(episodes)?;
    Ok(vec![Output {
        table: "costs",
        batch: table(&rows)?,
    }])
}

fn table(rows: &[CostRow]) -> Result<RecordBatch, AnalysisError> {
    Ok(TableBuilder::new()
        .text("configuration", rows.iter().map(|r| &r.configuration))
        .text("organization", rows.iter().map(|r| &r.organization))
        .text("lane", rows.iter().map(|r| &r.lane))
        .u64("episodes", rows.iter().map(|r| r.episodes))
        .u64("successes", rows.iter().map(|r| r.successes))
        .f64(
            "vts_rate",
            rows.iter().map(|r| r.per(r.successes as f64, r.episodes)),
        )
        .u64("infra_failures", rows.iter().map(|r| r.infra_failures))
        .u64("prompt_tokens", rows.iter().map(|r| r.prompt_tokens))
        .u64(
            "completion_tokens",
            rows.iter().map(|r| r.completion_tokens),
        )
        .u64("reasoning_tokens", rows.iter().map(|r| r.reasoning_tokens))
        .u64("total_tokens", rows.iter().map(|r| r.total_tokens))
        .f64(
            "tokens_per_episode",
            rows.iter()
                .map(|r| r.per(r.total_tokens as f64, r.episodes)),
        )
        .f64("cost_usd", rows.iter().map(|r| r.cost_usd))
        .f64(
            "cost_per_episode_usd",
            rows.iter().map(|r| r.per(r.cost_usd, r.episodes)),
        )
        .f64(
            "cost_per_1000_episodes_usd",
            rows.iter().map(|r| 1000.0 * r.per(r.cost_usd, r.episodes)),
        )
        .f64_opt(
            "cost_per_success_usd",
            rows.iter().map(CostRow::cost_per_success),
        )
        .build("costs")?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::row;

    fn ep(config: &str, lane: &str, vts: bool, tokens: u64, cost: f64) -> EpisodeRow {
        let mut r = row(config, "O", "f", "i", 8, "low", "raw", vts);
        r.lane = lane.into();
        r.prompt_tokens = tokens - 10;
        r.completion_tokens = 10;
        r.total_tokens = tokens;
        r.cost_usd = cost;
        r
    }

    #[test]
    fn costs_per_configuration_and_lane_by_hand() {
        let mut rows = vec![
            ep("a", "routed", true, 1_000, 0.25),
            ep("a", "fixed", false, 3_000, 0.75),
            ep("b", "routed", false, 500, 0.5),
        ];
        rows[1].infra_failure = true;
        let got = cost_rows(&rows).unwrap_or_else(|e| panic!("{e}"));
        let keys: Vec<(&str, &str)> = got
            .iter()
            .map(|r| (r.configuration.as_str(), r.lane.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("all", "all"),
                ("all", "fixed"),
                ("all", "routed"),
                ("a", "all"),
                ("a", "fixed"),
                ("a", "routed"),
                ("b", "all"),
                ("b", "routed"),
            ]
        );
        let all = &got[0];
        assert_eq!((all.episodes, all.successes, all.infra_failures), (3, 1, 1));
        assert_eq!((all.total_tokens, all.completion_tokens), (4_500, 30));
        assert_eq!(all.cost_usd, 1.5);
        // Cost per success: 1.5 / 1; configuration b never succeeds: null.
        assert_eq!(all.cost_per_success(), Some(1.5));
        assert_eq!(got[7].cost_per_success(), None);
        assert_eq!(got[3].per(got[3].cost_usd, got[3].episodes), 0.5);
    }

    #[test]
    fn the_sum_does_not_depend_on_row_order() {
        let rows: Vec<EpisodeRow> = (0..200)
            .map(|i| {
                ep(
                    "a",
                    "routed",
                    i % 3 == 0,
                    1_000 + i,
                    0.1 + (i as f64) * 1e-3 / 7.0,
                )
            })
            .collect();
        let mut reversed = rows.clone();
        reversed.reverse();
        let a = run(&rows).unwrap_or_else(|e| panic!("{e}"));
        let b = run(&reversed).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a[0].batch, b[0].batch);
        assert!(run(&[]).is_err());
    }
}
