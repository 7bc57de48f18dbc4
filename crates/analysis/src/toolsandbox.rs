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
pub mod tests {
    #![cfg_attr(not(test), allow(dead_code, unused_imports))]
    use super::*;
    use crate::common::stats::IndexStream;
    use crate::Kind;
    use tbb_tables::Name;

    /// A scored row of `configuration` (organization `O`) playing `base` with `tools`
    /// distraction tools at cap 1024, repeat 0.
    pub fn row(
        configuration: &str,
        base: &str,
        tools: u32,
        similarity: f64,
        prompt: u64,
    ) -> ScenarioEpisodeRow {
        let scenario = if tools == 0 {
            base.to_string()
        } else {
            format!("{base}_{tools}_distraction_tools")
        };
        ScenarioEpisodeRow {
            study: "s".into(),
            configuration: Name::new(configuration),
            organization: Name::new("O"),
            model: Name::new("m"),
            route: "r".into(),
            scenario: Name::new(&scenario),
            base_scenario: Name::new(base),
            distraction_tools: tools,
            menu_size: 4 + tools,
            categories: "multiple_tool_call,canonicalization".into(),
            insufficient_information: false,
            multiple_user_turn: false,
            completion_cap: 1024,
            repeat: 0,
            similarity,
            success: similarity == 1.0,
            milestone_similarity: similarity,
            minefield_hit: false,
            milestones: 2,
            milestones_matched: 2,
            milestone_mapping_json: "[]".into(),
            turns: 3,
            calls: 1,
            requests: 2,
            user_turns: 0,
            prompt_tokens: prompt,
            completion_tokens: 10,
            total_tokens: prompt + 10,
            cost_usd: 0.001,
            stop_reason: StopReason::Answer,
            infra_failure: false,
            infra_error: None,
            episode_key: format!("{configuration}/{scenario}"),
            transcript_ref: "t".into(),
            node_key: "n".into(),
        }
    }

    pub fn insufficient(mut r: ScenarioEpisodeRow) -> ScenarioEpisodeRow {
        r.insufficient_information = true;
        r.categories = "insufficient_information,single_user_turn".into();
        r
    }

    pub fn failed(mut r: ScenarioEpisodeRow) -> ScenarioEpisodeRow {
        r.infra_failure = true;
        r.stop_reason = StopReason::InfraFailure;
        r.similarity = 0.0;
        r.success = false;
        r
    }

    /// The hand-computed panel (prompt tokens in brackets):
    ///
    /// * a, s1: 0 → 1.0 [100], 3 → 0.5 [150], 10 → 0.25 [300];
    /// * a, s2: 0 → 0.5 [200], 3 → 0.5 [200], 10 → 1.0 [260];
    /// * b, s1: 0 → 0.0 [50], 3 → an infrastructure failure, 10 → 0.0 [90];
    /// * b, s2: 0 → 0.0 [80] only;
    /// * a, s3 and s4 (insufficient information): 1.0 at every level, prompt 10 at 0
    ///   and 30 at 10 (and 20 at 3) for both.
    pub fn panel() -> Vec<ScenarioEpisodeRow> {
        vec![
            row("a", "s1", 0, 1.0, 100),
            row("a", "s1", 3, 0.5, 150),
            row("a", "s1", 10, 0.25, 300),
            row("a", "s2", 0, 0.5, 200),
            row("a", "s2", 3, 0.5, 200),
            row("a", "s2", 10, 1.0, 260),
            row("b", "s1", 0, 0.0, 50),
            failed(row("b", "s1", 3, 0.0, 70)),
            row("b", "s1", 10, 0.0, 90),
            row("b", "s2", 0, 0.0, 80),
            insufficient(row("a", "s3", 0, 1.0, 10)),
            insufficient(row("a", "s3", 3, 1.0, 20)),
            insufficient(row("a", "s3", 10, 1.0, 30)),
            insufficient(row("a", "s4", 0, 1.0, 10)),
            insufficient(row("a", "s4", 3, 1.0, 20)),
            insufficient(row("a", "s4", 10, 1.0, 30)),
        ]
    }

    fn find<'r>(
        rows: &'r [ToolsandboxContrastsRow],
        subset: &str,
        configuration: &str,
        level: u32,
        measure: &str,
    ) -> &'r ToolsandboxContrastsRow {
        rows.iter()
            .find(|r| {
                r.subset == subset
                    && r.configuration == configuration
                    && r.distraction_tools == level
                    && r.measure == measure
            })
            .unwrap_or_else(|| panic!("no row {subset} {configuration} {level} {measure}"))
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    fn computed() -> Tables {
        tables(&panel(), 10_000, 7).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn paired_differences_and_level_means_by_hand() {
        let t = computed();
        let c = &t.contrasts;
        // a, 10 − 0: s1 −0.75, −100 pp, +200; s2 +0.5, +100 pp, +60.
        let sim = find(c, "sufficient", "a", 10, "similarity");
        assert_eq!((sim.n_pairs, sim.n_scenarios), (2, 2));
        assert!(close(sim.estimate, -0.125), "{sim:?}");
        assert!(close(sim.mean_at_zero, 0.75) && close(sim.mean_at_level, 0.625));
        let success = find(c, "sufficient", "a", 10, "success");
        assert!(close(success.estimate, 0.0));
        assert!(close(success.mean_at_zero, 50.0) && close(success.mean_at_level, 50.0));
        let tokens = find(c, "sufficient", "a", 10, "prompt_tokens");
        assert!(close(tokens.estimate, 130.0));
        assert!(close(tokens.mean_at_zero, 150.0) && close(tokens.mean_at_level, 280.0));
        assert_eq!(tokens.organization.as_deref(), Some("O"));
        // a, 3 − 0: s1 −0.5, −100 pp, +50; s2 0, 0, 0.
        assert!(close(
            find(c, "sufficient", "a", 3, "similarity").estimate,
            -0.25
        ));
        assert!(close(
            find(c, "sufficient", "a", 3, "success").estimate,
            -50.0
        ));
        assert!(close(
            find(c, "sufficient", "a", 3, "prompt_tokens").estimate,
            25.0
        ));
        // The three measures of a row share their draws.
        assert_eq!(sim.draw_seed, tokens.draw_seed);
        assert_ne!(
            sim.draw_seed,
            find(c, "sufficient", "a", 3, "similarity").draw_seed
        );
    }

    #[test]
    fn missing_partners_and_infrastructure_failures_are_counted_not_paired() {
        let c = computed().contrasts;
        // b, 10 − 0: s1 pairs (0, +40); s2 has no row at 10.
        let b10 = find(&c, "sufficient", "b", 10, "prompt_tokens");
        assert_eq!((b10.n_pairs, b10.excluded_infra, b10.unpaired), (1, 0, 1));
        assert!(close(b10.estimate, 40.0));
        // b, 3 − 0: s1's 3 failed, s2 has no 3: no pair, a row with null estimates.
        let b3 = find(&c, "sufficient", "b", 3, "prompt_tokens");
        assert_eq!((b3.n_pairs, b3.excluded_infra, b3.unpaired), (0, 1, 1));
        assert_eq!(
            (b3.estimate, b3.ci_low, b3.mean_at_zero, b3.n_scenarios),
            (None, None, None, 0)
        );
        // Pooled: a's and b's pairs and losses.
        let all3 = find(&c, "sufficient", "all", 3, "prompt_tokens");
        assert_eq!(
            (all3.n_pairs, all3.excluded_infra, all3.unpaired),
            (2, 1, 1)
        );
        assert!(close(all3.estimate, 25.0));
        assert_eq!(all3.organization, None);
    }

    #[test]
    fn the_pooled_bootstrap_resamples_base_scenarios_with_all_their_pairs() {
        let c = computed().contrasts;
        // all, 10 − 0: s1 holds a's +200 and b's +40, s2 a's +60; mean 100. A draw is
        // s1 s1 (120), s1 s2 (100) or s2 s2 (60), with chances 1/4, 1/2, 1/4: the
        // 2.5 % and 97.5 % quantiles of 10,000 draws are 60 and 120.
        let tokens = find(&c, "sufficient", "all", 10, "prompt_tokens");
        assert_eq!((tokens.n_pairs, tokens.n_scenarios), (3, 2));
        assert!(close(tokens.estimate, 100.0));
        assert_eq!((tokens.ci_low, tokens.ci_high), (Some(60.0), Some(120.0)));
        // Similarity: s1 (−0.75 + 0) / 2 per pair, s2 +0.5: draws −0.375, −0.25/3, 0.5.
        let sim = find(&c, "sufficient", "all", 10, "similarity");
        assert!(close(sim.estimate, -0.25 / 3.0));
        assert!(
            close(sim.ci_low, -0.375) && close(sim.ci_high, 0.5),
            "{sim:?}"
        );
        // Every interval holds its estimate.
        for r in &c {
            if let (Some(e), Some(l), Some(h)) = (r.estimate, r.ci_low, r.ci_high) {
                assert!(l <= e + 1e-12 && e <= h + 1e-12, "{r:?}");
            }
        }
    }

    /// The bootstrap written out directly: each draw picks scenarios from the row's
    /// stream and averages every pair of every picked scenario.
    #[test]
    fn the_interval_equals_a_direct_bootstrap() {
        let mut rows = panel();
        // More scenarios, uneven pair counts, for a less trivial draw.
        for (i, (d0, d10)) in [(10, 90), (40, 40), (0, 300), (70, 20)].iter().enumerate() {
            let base = format!("t{i}");
            rows.push(row("a", &base, 0, 0.0, *d0));
            rows.push(row("a", &base, 10, 0.0, *d10));
            if i % 2 == 0 {
                rows.push(row("b", &base, 0, 0.0, d0 + 5));
                rows.push(row("b", &base, 10, 0.0, d10 + 1));
            }
        }
        let draws = 2_000;
        let t = tables(&rows, draws, 11).unwrap_or_else(|e| panic!("{e}"));
        let got = find(&t.contrasts, "sufficient", "all", 10, "prompt_tokens");
        // Pairs by scenario, scenarios in name order (the cluster ids' order).
        let mut by_scenario: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for z in rows.iter().filter(|r| r.distraction_tools == 0) {
            let partner = rows.iter().find(|r| {
                r.distraction_tools == 10
                    && r.configuration == z.configuration
                    && r.base_scenario == z.base_scenario
            });
            if let Some(l) = partner.filter(|l| !l.infra_failure && !z.infra_failure) {
                if !z.insufficient_information {
                    by_scenario
                        .entry(z.base_scenario.to_string())
                        .or_default()
                        .push(l.prompt_tokens as f64 - z.prompt_tokens as f64);
                }
            }
        }
        let scenarios: Vec<&Vec<f64>> = by_scenario.values().collect();
        let n = scenarios.len();
        let mut stream = IndexStream::new(got.draw_seed);
        let mut sample: Vec<f64> = (0..draws)
            .map(|_| {
                let picked: Vec<f64> = (0..n)
                    .flat_map(|_| scenarios[stream.index(n as u32)].iter().copied())
                    .collect();
                picked.iter().sum::<f64>() / picked.len() as f64
            })
            .collect();
        let all: Vec<f64> = scenarios.iter().flat_map(|v| v.iter().copied()).collect();
        let estimate = all.iter().sum::<f64>() / all.len() as f64;
        let want = stats::summarize(estimate, &mut sample);
        assert_eq!(got.n_scenarios as usize, n);
        assert_eq!(got.estimate, Some(want.estimate));
        // Integer differences: every order of summation is exact.
        assert_eq!((got.ci_low, got.ci_high), (Some(want.low), Some(want.high)));
        assert_eq!(got.p_value, Some(want.p_value));
    }

    #[test]
    fn the_insufficient_information_subset_is_apart_and_equal_pairs_have_no_width() {
        let c = computed().contrasts;
        // Only a played s3 and s4: no row of b in that subset.
        assert!(!c
            .iter()
            .any(|r| r.subset == "insufficient_information" && r.configuration == "b"));
        // Its pairs are not among the sufficient ones.
        assert_eq!(find(&c, "sufficient", "a", 10, "similarity").n_pairs, 2);
        let tokens = find(&c, "insufficient_information", "a", 10, "prompt_tokens");
        assert_eq!((tokens.n_pairs, tokens.n_scenarios), (2, 2));
        // Every pair +20: every draw is 20.
        assert_eq!(
            (tokens.estimate, tokens.ci_low, tokens.ci_high),
            (Some(20.0), Some(20.0), Some(20.0))
        );
        let sim = find(&c, "insufficient_information", "all", 3, "similarity");
        assert_eq!(
            (sim.estimate, sim.ci_low, sim.ci_high),
            (Some(0.0), Some(0.0), Some(0.0))
        );
        // Row order: subset (headline first), configurations then all, level, measure.
        let order: Vec<(&str, &str, u32, &str)> = c
            .iter()
            .map(|r| {
                (
                    r.subset.as_str(),
                    r.configuration.as_str(),
                    r.distraction_tools,
                    r.measure.as_str(),
                )
            })
            .collect();
        assert_eq!(order.len(), (3 * 2 + 2 * 2) * 3);
        assert_eq!(order[0], ("sufficient", "a", 3, "similarity"));
        assert_eq!(order[5], ("sufficient", "a", 10, "prompt_tokens"));
        assert_eq!(order[12], ("sufficient", "all", 3, "similarity"));
        assert_eq!(
            order[18],
            ("insufficient_information", "a", 3, "similarity")
        );
        // An empty subset gives no row at all.
        let sufficient_only: Vec<ScenarioEpisodeRow> = panel()
            .into_iter()
            .filter(|r| !r.insufficient_information)
            .collect();
        let t = tables(&sufficient_only, 100, 1).unwrap_or_else(|e| panic!("{e}"));
        assert!(t.contrasts.iter().all(|r| r.subset == "sufficient"));
    }

    #[test]
    fn categories_split_the_column_and_leave_failures_out_of_the_means() {
        let t = computed();
        let cat = |category: &str, configuration: &str, level: u32| {
            t.categories
                .iter()
                .find(|r| {
                    r.category == category
                        && r.configuration == configuration
                        && r.distraction_tools == level
                })
                .unwrap_or_else(|| panic!("no {category} {configuration} {level}"))
        };
        let names: BTreeSet<&str> = t.categories.iter().map(|r| r.category.as_str()).collect();
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            [
                "canonicalization",
                "insufficient_information",
                "multiple_tool_call",
                "single_user_turn"
            ]
        );
        // b at 3: one row, a failure: no mean.
        let b3 = cat("canonicalization", "b", 3);
        assert_eq!((b3.episodes, b3.infra_failures), (1, 1));
        assert_eq!((b3.mean_similarity, b3.success_rate), (None, None));
        // all at 0, multiple_tool_call: a s1 1.0 [100], a s2 0.5 [200], b s1 0 [50],
        // b s2 0 [80].
        let all0 = cat("multiple_tool_call", "all", 0);
        assert_eq!((all0.episodes, all0.base_scenarios), (4, 2));
        assert!(close(all0.mean_similarity, 0.375));
        assert!(close(all0.success_rate, 0.25));
        assert!(close(all0.mean_prompt_tokens, 107.5));
        let ins = cat("insufficient_information", "a", 10);
        assert_eq!((ins.episodes, ins.base_scenarios), (2, 2));
        assert!(close(ins.success_rate, 1.0));
        // Categories in name order, configurations then all.
        assert_eq!(t.categories[0].category, "canonicalization");
        assert_eq!(t.categories[0].configuration, "a");
    }

    #[test]
    fn levels_summarise_every_configuration_and_the_pool() {
        let mut rows = panel();
        rows[2].stop_reason = StopReason::Truncated;
        rows[2].minefield_hit = true;
        let t = tables(&rows, 100, 1).unwrap_or_else(|e| panic!("{e}"));
        let shown: Vec<(&str, u32)> = t
            .levels
            .iter()
            .map(|r| (r.configuration.as_str(), r.distraction_tools))
            .collect();
        assert_eq!(
            shown,
            [
                ("a", 0),
                ("a", 3),
                ("a", 10),
                ("b", 0),
                ("b", 3),
                ("b", 10),
                ("all", 0),
                ("all", 3),
                ("all", 10)
            ]
        );
        let a10 = &t.levels[2];
        // s1 0.25 [300], s2 1.0 [260], s3 and s4 1.0 [30].
        assert_eq!((a10.episodes, a10.base_scenarios), (4, 4));
        assert_eq!(a10.insufficient_information_episodes, 2);
        assert!(close(a10.mean_similarity, 3.25 / 4.0));
        assert!(close(a10.success_rate, 0.75));
        assert!(close(a10.mean_prompt_tokens, 620.0 / 4.0));
        assert!(close(a10.mean_completion_tokens, 10.0));
        assert!(close(a10.mean_menu_size, 14.0));
        assert_eq!((a10.minefield_hits, a10.truncated), (1, 1));
        let all3 = &t.levels[7];
        // a s1 [150], a s2 [200], b s1 failed, a s3 and s4 [20].
        assert_eq!((all3.episodes, all3.infra_failures), (5, 1));
        assert!(close(
            all3.mean_prompt_tokens,
            (150.0 + 200.0 + 20.0 + 20.0) / 4.0
        ));
        assert_eq!(all3.organization, None);
    }

    #[test]
    fn the_order_of_the_rows_does_not_matter() {
        let mut reversed = panel();
        reversed.reverse();
        assert_eq!(
            tables(&reversed, 500, 3).ok(),
            tables(&panel(), 500, 3).ok()
        );
    }

    #[test]
    fn contradictions_are_errors() {
        let mut twice = panel();
        twice.push(row("a", "s1", 3, 0.0, 1));
        assert!(matches!(
            tables(&twice, 10, 1),
            Err(AnalysisError::Inconsistent { .. })
        ));
        let mut flagged = panel();
        flagged[1].insufficient_information = true;
        assert!(matches!(
            tables(&flagged, 10, 1),
            Err(AnalysisError::Inconsistent { .. })
        ));
        let mut organizations = panel();
        organizations[0].organization = Name::new("P");
        assert!(matches!(
            tables(&organizations, 10, 1),
            Err(AnalysisError::Inconsistent { .. })
        ));
    }

    #[test]
    fn the_kind_reads_the_scenario_table_and_writes_three_tables() {
        let batch = ScenarioEpisodeRow::to_batch(&panel()).unwrap_or_else(|e| panic!("{e}"));
        let tables = BTreeMap::from([(ScenarioEpisodeRow::TABLE.to_string(), batch)]);
        let context = Context {
            study: "s",
            episodes: &[],
            requests: &crate::NO_REQUESTS,
            tables: &tables,
            skipped: &[],
        };
        let params = Toolsandbox
            .parse(&serde_json::from_str(r#"{"draws": 50, "seed": 3}"#).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e:?}"));
        let produced = Toolsandbox
            .run(&params, &context)
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = produced.tables.iter().map(|o| o.table).collect();
        assert_eq!(names, Toolsandbox::OUTPUTS);
        let contrasts = ToolsandboxContrastsRow::from_batch(&produced.tables[0].batch)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(contrasts, computed_with(50, 3).contrasts);
        // Without the table: an input error naming it.
        let empty = BTreeMap::new();
        let bare = Context {
            tables: &empty,
            ..context
        };
        assert!(matches!(
            Toolsandbox.run(&params, &bare),
            Err(AnalysisError::InputTable { .. })
        ));
        // draws = 0 and unknown parameters are refused.
        let zero = serde_json::from_str(r#"{"draws": 0}"#).unwrap_or_default();
        assert!(Toolsandbox.parse(&zero).is_err());
        let unknown = serde_json::from_str(r#"{"cluster_units": ["family"]}"#).unwrap_or_default();
        assert!(Toolsandbox.parse(&unknown).is_err());
    }

    fn computed_with(draws: u32, seed: u64) -> Tables {
        tables(&panel(), draws, seed).unwrap_or_else(|e| panic!("{e}"))
    }
}
