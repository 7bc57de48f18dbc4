//! The `configurations` analysis kind: the paper's Appendix C table (its Table 4) as one
//! table — per configuration and stratum, its baseline success, every effect of the
//! capacity factorial the `contrasts` analysis estimated for it, its truncation at
//! V = 128 and its cost.
//!
//! Owns: the `configurations` table's rows ([`ConfigurationsRow`]).
//!
//! # Definitions
//! Read over the no-repair episodes of the twelve capacity cells ([`design`]), per
//! stratum (lane, completion cap) and configuration: `vts` is success over them
//! (infrastructure failures count as failures); `baseline_vts` success at the baseline
//! cell (8, low, raw); `truncated_share_v128` the share of its V = 128 episodes cut at
//! the cap; tokens and cost are sums and means over its episodes. The effects are the
//! `estimate_pp` of `contrasts_by_configuration` for the same stratum and
//! configuration, families resampled (null where the table has none: a configuration
//! whose factorial is incomplete).
//!
//! Never: re-estimates an effect (the `contrasts` analysis does; this table quotes it),
//! runs episodes or reads files.

use std::collections::BTreeMap;

use crate::common::design::{self, BASELINE, CELLS};
use crate::{input_rows, AnalysisError, Context, Input, NoParams, Output, Produced, Typed};
use tbb_tables::analyses::configurations::ConfigurationsRow;
use tbb_tables::analyses::contrasts::{ClusterUnit, ContrastsByConfigurationRow};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

/// Name in error messages.
const KIND: &str = "configurations";
/// The upstream per-configuration contrasts.
const CONTRASTS: &str = ContrastsByConfigurationRow::TABLE;

/// The `configurations` analysis kind.
pub struct Configurations;

impl Typed for Configurations {
    type Params = NoParams;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "configurations/1";
    const INPUTS: &'static [Input] = &[Input::Episodes, Input::Table(CONTRASTS)];
    const OUTPUTS: &'static [&'static str] = &[ConfigurationsRow::TABLE];

    fn run(_params: &NoParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let effects: Vec<ContrastsByConfigurationRow> = input_rows(KIND, input.tables)?;
        Ok(vec![Output::of(&rows(input.episodes, &effects))?].into())
    }
}

/// (lane, cap, configuration, contrast) → estimate, families resampled.
type Effects<'a> = BTreeMap<(&'a str, u32, &'a str, &'a str), f64>;

/// The rows: strata as the capacity tables order them, configurations by name.
pub fn rows(
    episodes: &[EpisodeRow],
    effects: &[ContrastsByConfigurationRow],
) -> Vec<ConfigurationsRow> {
    let mut by_effect: Effects<'_> = BTreeMap::new();
    for e in effects
        .iter()
        .filter(|e| e.cluster_unit == ClusterUnit::Family)
    {
        by_effect
            .entry((&e.lane, e.completion_cap, &e.configuration, &e.contrast))
            .or_insert(e.estimate_pp);
    }
    let mut out = Vec::new();
    for (stratum, rows) in design::capacity_rows(episodes) {
        let lane = stratum.lane.name();
        let mut by_config: BTreeMap<&str, Vec<(&EpisodeRow, usize)>> = BTreeMap::new();
        for &(row, cell) in &rows {
            by_config
                .entry(&row.configuration)
                .or_default()
                .push((row, cell));
        }
        for (configuration, rows) in by_config {
            let effect = |contrast: &str| {
                by_effect
                    .get(&(
                        lane.as_str(),
                        stratum.completion_cap,
                        configuration,
                        contrast,
                    ))
                    .copied()
            };
            let share = |pick: &dyn Fn(&EpisodeRow, usize) -> bool,
                         hit: &dyn Fn(&EpisodeRow) -> bool| {
                let picked: Vec<&EpisodeRow> = rows
                    .iter()
                    .filter(|(r, c)| pick(r, *c))
                    .map(|(r, _)| *r)
                    .collect();
                let n = picked.len();
                let hits = picked.into_iter().filter(|r| hit(r)).count();
                (n, (n > 0).then(|| hits as f64 / n as f64))
            };
            let (episodes, vts) = share(&|_, _| true, &design::success);
            let (baseline_episodes, baseline_vts) =
                share(&|_, c| CELLS[c] == BASELINE, &design::success);
            let (_, truncated_share_v128) = share(&|r, _| r.v == 128, &|r| r.truncated);
            let tokens: u64 = rows.iter().map(|(r, _)| r.total_tokens).sum();
            let cost_usd: f64 = rows.iter().map(|(r, _)| r.cost_usd).sum();
            let organization = rows
                .first()
                .map(|(r, _)| r.organization.to_string())
                .unwrap_or_default();
            out.push(ConfigurationsRow {
                lane: lane.clone(),
                completion_cap: stratum.completion_cap,
                configuration: configuration.to_string(),
                organization,
                episodes: u32::try_from(episodes).unwrap_or(u32::MAX),
                vts: vts.unwrap_or(f64::NAN),
                baseline_episodes: u32::try_from(baseline_episodes).unwrap_or(u32::MAX),
                baseline_vts,
                v_pp: effect("v"),
                w_pp: effect("w"),
                d_linked_pp: effect("d_linked"),
                v_x_w_pp: effect("v_x_w"),
                v_x_d_pp: effect("v_x_d"),
                w_x_d_pp: effect("w_x_d"),
                d_compact_pp: effect("d_compact"),
                d_typed_pp: effect("d_typed"),
                truncated_share_v128,
                tokens_per_episode: tokens as f64 / episodes.max(1) as f64,
                cost_usd,
                cost_per_episode_usd: cost_usd / episodes.max(1) as f64,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::design::testing::row;

    fn effect(
        configuration: &str,
        contrast: &str,
        unit: ClusterUnit,
        pp: f64,
    ) -> ContrastsByConfigurationRow {
        ContrastsByConfigurationRow {
            analysis: "contrasts".into(),
            lane: "routed".into(),
            completion_cap: 1024,
            configuration: configuration.into(),
            organization: "O".into(),
            contrast: contrast.into(),
            label: contrast.into(),
            cluster_unit: unit,
            n_units: 2,
            estimate_pp: pp,
            ci_low_pp: pp - 1.0,
            ci_high_pp: pp + 1.0,
            p_value: 0.5,
            p_floor: 0.001,
            draws: 100,
            seed: 1,
            draw_seed: 2,
        }
    }

    #[test]
    fn one_row_per_configuration_by_hand() {
        // Configuration a: at the baseline cell one success of two; at (128, low, raw)
        // one truncated failure and one success; each episode 100 tokens and $0.25.
        let mut episodes = vec![
            row("a", "O", "f1", "i", 8, "low", "raw", true),
            row("a", "O", "f2", "i", 8, "low", "raw", false),
            row("a", "O", "f1", "i", 128, "low", "raw", false),
            row("a", "O", "f2", "i", 128, "low", "raw", true),
            // Not a capacity cell at R high: left out.
            row("a", "O", "f1", "i", 8, "low", "raw", true),
        ];
        episodes[2].truncated = true;
        episodes[4].r = "high".parse().unwrap_or_else(|e| panic!("{e}"));
        for e in &mut episodes {
            e.total_tokens = 100;
            e.cost_usd = 0.25;
        }
        let effects = [
            effect("a", "v", ClusterUnit::Family, -12.5),
            effect("a", "v", ClusterUnit::Intent, -99.0),
            effect("a", "w", ClusterUnit::Family, 3.0),
        ];
        let got = rows(&episodes, &effects);
        assert_eq!(got.len(), 1);
        let a = &got[0];
        assert_eq!((a.lane.as_str(), a.completion_cap), ("routed", 1024));
        assert_eq!((a.episodes, a.baseline_episodes), (4, 2));
        assert_eq!(a.vts, 0.5);
        assert_eq!(a.baseline_vts, Some(0.5));
        assert_eq!(a.truncated_share_v128, Some(0.5));
        assert_eq!(
            (a.v_pp, a.w_pp, a.d_compact_pp),
            (Some(-12.5), Some(3.0), None)
        );
        assert_eq!(a.tokens_per_episode, 100.0);
        assert_eq!((a.cost_usd, a.cost_per_episode_usd), (1.0, 0.25));
    }
}
