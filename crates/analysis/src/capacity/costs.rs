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

use crate::{Context, NoParams, Produced, Typed};
use tbb_tables::analyses::costs::CostsRow;
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

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
    const OUTPUTS: &'static [&'static str] = &[CostsRow::TABLE];

    fn run(_params: &NoParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        run(input.episodes).map(Produced::from)
    }
}

/// One group's row of the `costs` table.
fn cost_row(configuration: &str, organization: &str, lane: &str, rows: &[&EpisodeRow]) -> CostsRow {
    let sum = |f: fn(&EpisodeRow) -> u64| rows.iter().map(|r| f(r)).fold(0, u64::saturating_add);
    let mut costs: Vec<f64> = rows.iter().map(|r| r.cost_usd).collect();
    costs.sort_by(f64::total_cmp);
    let episodes = rows.len() as u64;
    let successes = sum(|r| u64::from(design::success(r)));
    let total_tokens = sum(|r| r.total_tokens);
    let cost_usd: f64 = costs.iter().sum();
    // `episodes` is never 0: a group holds at least the row that made it.
    let per_episode = |x: f64| x / episodes as f64;
    CostsRow {
        configuration: configuration.into(),
        organization: organization.into(),
        lane: lane.into(),
        episodes,
        successes,
        vts_rate: per_episode(successes as f64),
        infra_failures: sum(|r| u64::from(r.infra_failure)),
        prompt_tokens: sum(|r| r.prompt_tokens),
        completion_tokens: sum(|r| r.completion_tokens),
        reasoning_tokens: sum(|r| r.reasoning_tokens),
        total_tokens,
        tokens_per_episode: per_episode(total_tokens as f64),
        cost_usd,
        cost_per_episode_usd: per_episode(cost_usd),
        cost_per_1000_episodes_usd: 1000.0 * per_episode(cost_usd),
        cost_per_success_usd: (successes > 0).then(|| cost_usd / successes as f64),
    }
}

/// The rows: pooled first, then each configuration; within each, lane `all` first,
/// then the lanes sorted.
pub fn cost_rows(episodes: &[EpisodeRow]) -> Result<Vec<CostsRow>, AnalysisError> {
    design::check_groups(KIND, episodes)?;
    // Lanes sort by name.
    let mut groups: BTreeMap<(bool, &str, &str, bool, String), Vec<&EpisodeRow>> = BTreeMap::new();
    for row in episodes {
        for (pooled_config, config, org) in [
            (true, ALL, ALL),
            (false, row.configuration.as_str(), row.organization.as_str()),
        ] {
            for (pooled_lane, lane) in [(true, ALL.to_string()), (false, row.lane.name())] {
                groups
                    .entry((!pooled_config, config, org, !pooled_lane, lane))
                    .or_default()
                    .push(row);
            }
        }
    }
    Ok(groups
        .iter()
        .map(|((_, config, org, _, lane), rows)| cost_row(config, org, lane, rows))
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
    Ok(vec![Output::of(&rows)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::row;
    use tbb_tables::levels::Menu;

    fn ep(config: &str, lane: Menu, vts: bool, tokens: u64, cost: f64) -> EpisodeRow {
        let mut r = row(config, "O", "f", "i", 8, "low", "raw", vts);
        r.lane = lane;
        r.prompt_tokens = tokens - 10;
        r.completion_tokens = 10;
        r.total_tokens = tokens;
        r.cost_usd = cost;
        r
    }

    #[test]
    fn costs_per_configuration_and_lane_by_hand() {
        let mut rows = vec![
            ep("a", Menu::Routed, true, 1_000, 0.25),
            ep("a", Menu::Fixed, false, 3_000, 0.75),
            ep("b", Menu::Routed, false, 500, 0.5),
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
        assert_eq!(all.cost_per_success_usd, Some(1.5));
        assert_eq!(got[7].cost_per_success_usd, None);
        assert_eq!(got[3].cost_per_episode_usd, 0.5);
    }

    #[test]
    fn the_sum_does_not_depend_on_row_order() {
        let rows: Vec<EpisodeRow> = (0..200)
            .map(|i| {
                ep(
                    "a",
                    Menu::Routed,
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
