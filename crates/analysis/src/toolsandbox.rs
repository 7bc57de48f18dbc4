//! The `toolsandbox` analysis kind: what adding distraction tools to a ToolSandbox
//! scenario's menu does to its grade and its tokens, over the played scenarios of
//! `toolsandbox_episodes` ([`ScenarioEpisodeRow`]).
//!
//! Owns: the rows of `toolsandbox_contrasts` ([`ToolsandboxContrastsRow`]),
//! `toolsandbox_categories` ([`ToolsandboxCategoriesRow`]) and `toolsandbox_levels`
//! ([`ToolsandboxLevelsRow`]).
//!
//! # Definitions
//! A row is *scored* unless it is an infrastructure failure; every mean below is over
//! scored rows only, and the failures are counted beside it.
//!
//! * *Pairs.* A pair is one (configuration, base scenario, completion cap, repeat)
//!   played both with 0 distraction tools and with `k` (each higher level the rows
//!   hold: 3 and 10), both rows scored. A (configuration, base scenario, cap, repeat)
//!   with a row at 0 or at `k` but no pair is counted once for that contrast: in
//!   `excluded_infra` when one of its rows is an infrastructure failure, else in
//!   `unpaired` (the other level was not played).
//! * *Subsets.* A pair is in `insufficient_information` when its scenario is (upstream's
//!   category: declining is right, so an agent that does nothing scores), else in
//!   `sufficient`, the headline. The two levels of a base scenario must agree (an
//!   [`AnalysisError::Inconsistent`] otherwise).
//! * *Measures.* Per pair, level − 0 of: ToolSandbox's `similarity` (0–1), `success`
//!   (100 × [similarity = 1], so the mean difference is in pp) and `prompt_tokens`. The
//!   estimate is the mean paired difference; `mean_at_zero` and `mean_at_level` are the
//!   measure's means over the same pairs.
//! * *Rows.* Per subset, per configuration and pooled (`all`: every configuration's
//!   pairs), per higher level, per measure. A subset, configuration and level with no
//!   row at 0 or at the level gives no row; one with rows but no pair gives a row with
//!   null means and estimate (its `excluded_infra` and `unpaired` say why).
//! * *Interval.* A percentile cluster bootstrap ([`stats`]) over base scenarios: a draw
//!   picks as many base scenarios as the row has, uniformly with replacement, and
//!   every pair of a picked scenario comes along (in `all`, every configuration's).
//!   Seeds (see [`stats`], "Seeds"): a row hashes the parts `["toolsandbox", subset,
//!   configuration, level]` (the level in decimal), so the three measures of one
//!   subset, configuration and level resample the same scenarios.
//! * *Categories.* A row counts in each of its `categories` (comma-separated); per
//!   category, configuration (and `all`) and distraction level: rows, infrastructure
//!   failures, base scenarios, and over the scored rows mean similarity, success rate
//!   and mean prompt tokens.
//! * *Levels.* Per configuration (and `all`) and distraction level, over both subsets:
//!   rows, base scenarios, rows with insufficient information, infrastructure failures,
//!   and over the scored rows the means of menu size, similarity, success, prompt and
//!   completion tokens, minefield hits, episodes that ended at the completion cap
//!   (`stop_reason` truncated) and their cost.
//!
//! Rows are sorted (configuration, base scenario, level, cap, repeat, scenario) before
//! anything is summed, so the tables do not depend on the input's order.
//!
//! Never: reads files or the clock, runs or grades a scenario, or decides which
//! scenarios are played (the engine plays the offline ones).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::common::stats::{self, ClusterTotals, DEFAULT_DRAWS, DEFAULT_SEED};
use crate::{
    input_rows, AnalysisError, Context, Design, Input, Output, ParamProblem, Produced, Typed,
};
use tbb_tables::analyses::toolsandbox::{
    ToolsandboxCategoriesRow, ToolsandboxContrastsRow, ToolsandboxLevelsRow, MEASURES,
    SUBSET_INSUFFICIENT, SUBSET_SUFFICIENT,
};
use tbb_tables::levels::StopReason;
use tbb_tables::{ScenarioEpisodeRow, TableRow};

/// Name in error messages and seeds.
const KIND: &str = "toolsandbox";
/// The pooled rows' configuration.
const ALL: &str = "all";
/// The subsets, headline first.
const SUBSETS: [&str; 2] = [SUBSET_SUFFICIENT, SUBSET_INSUFFICIENT];

/// The `toolsandbox` analysis's parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Bootstrap draws (default [`DEFAULT_DRAWS`]).
    #[serde(default)]
    pub draws: Option<u32>,
    /// Bootstrap seed (default [`DEFAULT_SEED`]).
    #[serde(default)]
    pub seed: Option<u64>,
}

/// The `toolsandbox` analysis kind.
pub struct Toolsandbox;

impl Typed for Toolsandbox {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "toolsandbox/1";
    const INPUTS: &'static [Input] = &[Input::ScenarioEpisodes];
    const OUTPUTS: &'static [&'static str] = &[
        ToolsandboxContrastsRow::TABLE,
        ToolsandboxCategoriesRow::TABLE,
        ToolsandboxLevelsRow::TABLE,
    ];

    fn check(params: &Params) -> Vec<ParamProblem> {
        stats::check_draws(params.draws).into_iter().collect()
    }

    fn needs(design: &Design) -> Option<String> {
        (!design.plays_toolsandbox).then(|| {
            "the study plays no ToolSandbox scenario: add a `[toolsandbox]` table".to_string()
        })
    }

    fn units(_params: &Params, _design: &Design) -> Vec<String> {
        vec![
            "the played scenarios' pairs (configuration × base scenario × cap × repeat) at \
             3 and 10 distraction tools against 0, per configuration and pooled, \
             base scenarios resampled; insufficient-information scenarios apart"
                .into(),
        ]
    }

    fn run(params: &Params, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let rows = input_rows::<ScenarioEpisodeRow>(KIND, input.tables)?;
        let draws = params.draws.unwrap_or(DEFAULT_DRAWS);
        if draws == 0 {
            return Err(AnalysisError::InvalidParameter {
                analysis: KIND,
                detail: "draws must be at least 1".into(),
            });
        }
        let seed = params.seed.unwrap_or(DEFAULT_SEED);
        let tables = tables(&rows, draws, seed)?;
        Ok(vec![
            Output::of(&tables.contrasts)?,
            Output::of(&tables.categories)?,
            Output::of(&tables.levels)?,
        ]
        .into())
    }
}

/// The three tables.
#[derive(Debug, Clone, PartialEq)]
pub struct Tables {
    /// `toolsandbox_contrasts`.
    pub contrasts: Vec<ToolsandboxContrastsRow>,
    /// `toolsandbox_categories`.
    pub categories: Vec<ToolsandboxCategoriesRow>,
    /// `toolsandbox_levels`.
    pub levels: Vec<ToolsandboxLevelsRow>,
}

/// The tables of `rows` with `draws` bootstrap draws from `seed`.
pub fn tables(rows: &[ScenarioEpisodeRow], draws: u32, seed: u64) -> Result<Tables, AnalysisError> {
    let mut sorted: Vec<&ScenarioEpisodeRow> = rows.iter().collect();
    sorted.sort_by(|a, b| {
        (
            &a.configuration,
            &a.base_scenario,
            a.distraction_tools,
            a.completion_cap,
            a.repeat,
            &a.scenario,
        )
            .cmp(&(
                &b.configuration,
                &b.base_scenario,
                b.distraction_tools,
                b.completion_cap,
                b.repeat,
                &b.scenario,
            ))
    });
    let organizations = organizations(&sorted)?;
    Ok(Tables {
        contrasts: contrasts(&sorted, &organizations, draws, seed)?,
        categories: categories(&sorted, &organizations),
        levels: levels(&sorted, &organizations),
    })
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Each configuration's organization; one configuration in two is an error.
fn organizations<'a>(
    rows: &[&'a ScenarioEpisodeRow],
) -> Result<BTreeMap<&'a str, &'a str>, AnalysisError> {
    let mut out: BTreeMap<&str, &str> = BTreeMap::new();
    for row in rows {
        let had = *out.entry(&row.configuration).or_insert(&row.organization);
        if had != &*row.organization {
            return Err(AnalysisError::Inconsistent {
                analysis: KIND,
                detail: format!(
                    "configuration `{}` is in two organizations (`{had}`, `{}`)",
                    row.configuration, row.organization
                ),
            });
        }
    }
    Ok(out)
}

/// The organization column of a configuration's rows (null on `all`).
fn organization(organizations: &BTreeMap<&str, &str>, configuration: &str) -> Option<String> {
    if configuration == ALL {
        return None;
    }
    organizations.get(configuration).map(|o| o.to_string())
}

/// A pair's two rows.
#[derive(Debug, Clone, Copy)]
struct Pair<'a> {
    zero: &'a ScenarioEpisodeRow,
    level: &'a ScenarioEpisodeRow,
}

/// The pairs of one subset, configuration and level, and what was left out.
#[derive(Debug, Clone, Default)]
struct Tally<'a> {
    pairs: Vec<Pair<'a>>,
    excluded_infra: u32,
    unpaired: u32,
}

impl<'a> Tally<'a> {
    fn absorb(&mut self, other: &Tally<'a>) {
        self.pairs.extend_from_slice(&other.pairs);
        self.excluded_infra += other.excluded_infra;
        self.unpaired += other.unpaired;
    }
}

/// A measure of one row, in the table's unit.
fn measure(name: &str, row: &ScenarioEpisodeRow) -> f64 {
    match name {
        "similarity" => row.similarity,
        "success" => 100.0 * f64::from(u8::from(row.success)),
        _ => row.prompt_tokens as f64,
    }
}

/// Which subset a row is in.
fn subset_of(row: &ScenarioEpisodeRow) -> usize {
    usize::from(row.insufficient_information)
}

/// (base scenario, completion cap, repeat): where a configuration's pairs are matched.
type Key<'a> = (&'a str, u32, u32);

fn contrasts(
    rows: &[&ScenarioEpisodeRow],
    organizations: &BTreeMap<&str, &str>,
    draws: u32,
    seed: u64,
) -> Result<Vec<ToolsandboxContrastsRow>, AnalysisError> {
    // configuration -> key -> level -> row.
    type Played<'a> = BTreeMap<&'a str, BTreeMap<Key<'a>, BTreeMap<u32, &'a ScenarioEpisodeRow>>>;
    let mut played: Played<'_> = BTreeMap::new();
    for row in rows {
        let key = (&*row.base_scenario, row.completion_cap, row.repeat);
        let at = played
            .entry(&row.configuration)
            .or_default()
            .entry(key)
            .or_default();
        if at.insert(row.distraction_tools, row).is_some() {
            return Err(AnalysisError::Inconsistent {
                analysis: KIND,
                detail: format!(
                    "configuration `{}` played base scenario `{}` with {} distraction tools \
                     twice at cap {} and repeat {}",
                    row.configuration,
                    row.base_scenario,
                    row.distraction_tools,
                    row.completion_cap,
                    row.repeat
                ),
            });
        }
    }
    let levels: BTreeSet<u32> = rows
        .iter()
        .map(|r| r.distraction_tools)
        .filter(|&k| k > 0)
        .collect();
    // (subset, configuration, level) -> tally.
    let mut tallies: BTreeMap<(usize, &str, u32), Tally<'_>> = BTreeMap::new();
    for (configuration, keys) in &played {
        for (key, at) in keys {
            let zero = at.get(&0).copied();
            for &k in &levels {
                let level = at.get(&k).copied();
                let subset = match (zero, level) {
                    (None, None) => continue,
                    (Some(z), _) => subset_of(z),
                    (None, Some(l)) => subset_of(l),
                };
                if let (Some(z), Some(l)) = (zero, level) {
                    if z.insufficient_information != l.insufficient_information {
                        return Err(AnalysisError::Inconsistent {
                            analysis: KIND,
                            detail: format!(
                                "base scenario `{}` has insufficient_information = {} with \
                                 0 distraction tools but {} with {k}",
                                key.0, z.insufficient_information, l.insufficient_information,
                            ),
                        });
                    }
                }
                let tally = tallies.entry((subset, configuration, k)).or_default();
                let infra =
                    zero.is_some_and(|r| r.infra_failure) || level.is_some_and(|r| r.infra_failure);
                match (zero, level) {
                    _ if infra => tally.excluded_infra += 1,
                    (Some(zero), Some(level)) => tally.pairs.push(Pair { zero, level }),
                    _ => tally.unpaired += 1,
                }
            }
        }
    }
    let mut out = Vec::new();
    for (s, subset) in SUBSETS.iter().enumerate() {
        for &k in &levels {
            let mut pooled: Option<Tally<'_>> = None;
            for configuration in played.keys() {
                let Some(tally) = tallies.get(&(s, configuration, k)) else {
                    continue;
                };
                pooled.get_or_insert_with(Tally::default).absorb(tally);
                out.extend(contrast_rows(
                    subset,
                    configuration,
                    organization(organizations, configuration),
                    k,
                    tally,
                    draws,
                    seed,
                ));
            }
            if let Some(tally) = pooled {
                out.extend(contrast_rows(subset, ALL, None, k, &tally, draws, seed));
            }
        }
    }
    // Per subset and level, configurations then `all`; reorder to subset, then
    // configuration (then `all`), then level.
    let rank = |r: &ToolsandboxContrastsRow| {
        (
            SUBSETS.iter().position(|s| *s == r.subset),
            r.configuration == ALL,
            r.configuration.clone(),
            r.distraction_tools,
            MEASURES.iter().position(|m| *m == r.measure),
        )
    };
    out.sort_by_key(rank);
    Ok(out)
}

/// The three measure rows of one tally.
fn contrast_rows(
    subset: &str,
    configuration: &str,
    organization: Option<String>,
    level: u32,
    tally: &Tally<'_>,
    draws: u32,
    seed: u64,
) -> Vec<ToolsandboxContrastsRow> {
    let bases: Vec<&str> = tally.pairs.iter().map(|p| &*p.zero.base_scenario).collect();
    let (clusters, names) = stats::cluster_ids(&bases);
    let ones = vec![1.0; tally.pairs.len()];
    let level_text = level.to_string();
    let draw_seed = stats::derive_seed(seed, &[KIND, subset, configuration, &level_text]);
    let n = tally.pairs.len();
    MEASURES
        .iter()
        .map(|&m| {
            let (mut sum_zero, mut sum_level) = (0.0, 0.0);
            let differences: Vec<f64> = tally
                .pairs
                .iter()
                .map(|p| {
                    let (z, l) = (measure(m, p.zero), measure(m, p.level));
                    sum_zero += z;
                    sum_level += l;
                    l - z
                })
                .collect();
            let interval = (n > 0).then(|| {
                let totals = ClusterTotals::new(&differences, &ones, &clusters, names.len());
                stats::cluster_bootstrap(&totals, draws, draw_seed)
            });
            ToolsandboxContrastsRow {
                subset: subset.into(),
                configuration: configuration.into(),
                organization: organization.clone(),
                distraction_tools: level,
                measure: m.into(),
                n_pairs: count(n),
                n_scenarios: count(names.len()),
                excluded_infra: tally.excluded_infra,
                unpaired: tally.unpaired,
                mean_at_zero: (n > 0).then(|| sum_zero / n as f64),
                mean_at_level: (n > 0).then(|| sum_level / n as f64),
                estimate: interval.map(|i| i.estimate),
                ci_low: interval.map(|i| i.low),
                ci_high: interval.map(|i| i.high),
                p_value: interval.map(|i| i.p_value),
                p_floor: 1.0 / f64::from(draws),
                draws,
                seed,
                draw_seed,
            }
        })
        .collect()
}

/// Sums over the rows of one group (a category or a whole level).
#[derive(Debug, Clone, Default)]
struct Sums<'a> {
    episodes: usize,
    infra: usize,
    insufficient: usize,
    bases: BTreeSet<&'a str>,
    scored: usize,
    menu: u64,
    similarity: f64,
    successes: usize,
    prompt: u64,
    completion: u64,
    minefield: usize,
    truncated: usize,
    cost: f64,
}

impl<'a> Sums<'a> {
    fn add(&mut self, row: &'a ScenarioEpisodeRow) {
        self.episodes += 1;
        self.insufficient += usize::from(row.insufficient_information);
        self.bases.insert(&row.base_scenario);
        if row.infra_failure {
            self.infra += 1;
            return;
        }
        self.scored += 1;
        self.menu += u64::from(row.menu_size);
        self.similarity += row.similarity;
        self.successes += usize::from(row.success);
        self.prompt = self.prompt.saturating_add(row.prompt_tokens);
        self.completion = self.completion.saturating_add(row.completion_tokens);
        self.minefield += usize::from(row.minefield_hit);
        self.truncated += usize::from(row.stop_reason == StopReason::Truncated);
        self.cost += row.cost_usd;
    }

    /// `total / scored`, null when nothing is scored.
    fn mean(&self, total: f64) -> Option<f64> {
        (self.scored > 0).then(|| total / self.scored as f64)
    }
}

/// Groups keyed by (pooled, configuration, …): configurations by name, then `all`.
type Grouped<'a, K> = BTreeMap<K, Sums<'a>>;

fn categories(
    rows: &[&ScenarioEpisodeRow],
    organizations: &BTreeMap<&str, &str>,
) -> Vec<ToolsandboxCategoriesRow> {
    // (category, pooled, configuration, level).
    let mut groups: Grouped<'_, (&str, bool, &str, u32)> = BTreeMap::new();
    for row in rows {
        for category in row
            .categories
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
        {
            for (pooled, configuration) in [(false, &*row.configuration), (true, ALL)] {
                groups
                    .entry((category, pooled, configuration, row.distraction_tools))
                    .or_default()
                    .add(row);
            }
        }
    }
    groups
        .into_iter()
        .map(
            |((category, _, configuration, level), s)| ToolsandboxCategoriesRow {
                category: category.into(),
                configuration: configuration.into(),
                organization: organization(organizations, configuration),
                distraction_tools: level,
                episodes: count(s.episodes),
                infra_failures: count(s.infra),
                base_scenarios: count(s.bases.len()),
                mean_similarity: s.mean(s.similarity),
                success_rate: s.mean(s.successes as f64),
                mean_prompt_tokens: s.mean(s.prompt as f64),
            },
        )
        .collect()
}

fn levels(
    rows: &[&ScenarioEpisodeRow],
    organizations: &BTreeMap<&str, &str>,
) -> Vec<ToolsandboxLevelsRow> {
    // (pooled, configuration, level).
    let mut groups: Grouped<'_, (bool, &str, u32)> = BTreeMap::new();
    for row in rows {
        for (pooled, configuration) in [(false, &*row.configuration), (true, ALL)] {
            groups
                .entry((pooled, configuration, row.distraction_tools))
                .or_default()
                .add(row);
        }
    }
    groups
        .into_iter()
        .map(|((_, configuration, level), s)| ToolsandboxLevelsRow {
            configuration: configuration.into(),
            organization: organization(organizations, configuration),
            distraction_tools: level,
            episodes: count(s.episodes),
            base_scenarios: count(s.bases.len()),
            insufficient_information_episodes: count(s.insufficient),
            infra_failures: count(s.infra),
            mean_menu_size: s.mean(s.menu as f64),
            mean_similarity: s.mean(s.similarity),
            success_rate: s.mean(s.successes as f64),
            mean_prompt_tokens: s.mean(s.prompt as f64),
            mean_completion_tokens: s.mean(s.completion as f64),
            minefield_hits: count(s.minefield),
            truncated: count(s.truncated),
            cost_usd: s.cost,
        })
        .collect()
}

// The report crate's tests render the section from this panel (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod tests;
