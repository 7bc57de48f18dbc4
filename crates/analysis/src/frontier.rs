//! The frontier study: verified task success as the hand-off chain grows from 2 to 30
//! required calls, with the call limit growing alongside (certified minimum + 2) and
//! the episode budget held fixed — and which of the two limits each episode meets
//! first.
//!
//! Owns: two tables ([`FrontierRow`], [`FrontierPathsRow`]), read from this study's
//! baseline rows (actor `model`, delivery
//! `native`) of the frontier cells (`depth` set); other arms' rows are left out.
//!
//! * `frontier` — one row per completion cap × depth, by cap then depth:
//!   - `completion_cap`, `depth`, `call_limit` (the largest call limit of the depth's
//!     variants; the frozen contract gives every family the same), `episode_budget`;
//!   - `n_episodes`, `n_families`, `vts` (share of episodes that succeed);
//!   - `n_pairs`, `contrast_pp`, `ci_low_pp`, `ci_high_pp`, `p_value`, `p_floor`,
//!     `draws`, `seed`, `draw_seed`: the change in VTS from depth 2 (null on the
//!     depth-2 row itself), see "The contrast" below;
//!   - one count per terminal flag: `flag_infra_failure`, `flag_truncation`,
//!     `flag_budget_or_call_limit`, `flag_turn_limit`, `flag_infeasibility`,
//!     `flag_wrong_conclusion`, `flag_contract_break` (they add up to the failures);
//!   - `calls_median`, `calls_q1`, `calls_q3` (executed calls), `total_tokens_median`,
//!     `total_tokens_q1`, `total_tokens_q3`, `prompt_tokens_median` (the episode's
//!     prompt tokens summed over its requests);
//!   - `within_budget` (episodes with `total_tokens ≤ episode_budget`), and of those
//!     `within_budget_failed` and, of the failed, `within_budget_infeasibility` (terminal
//!     flag `infeasibility`);
//!   - `budget_first`, `call_limit_first`, `neither_limit`: which limit the episode
//!     reaches first, from its request rows (see "Which limit first"); they add up to
//!     `n_episodes`.
//! * `frontier_paths` — one row per provider request of every such episode, by cap,
//!   depth, configuration, family, arm, repeat, then request: `episode_key`,
//!   `configuration`, `family`, `arm`, `repeat`, `completion_cap`, `depth`, `request`
//!   (the request's index in the episode, from 0), `calls` (executed calls so far,
//!   this response's included), `cumulative_tokens` (reported prompt + completion
//!   tokens so far, this request's included), the episode's `call_limit` and the
//!   study's `episode_budget`, its `first_limit` (`budget`, `call_limit`, `neither`)
//!   and its `vts`. The report's Figure 9 draws it.
//!
//! # The contrast
//! An episode at depth `d` is paired with the depth-2 episode of the same block, arm,
//! configuration, family, completion cap and repeat; an episode without its partner is
//! left out. The estimate is the mean paired difference of success, in pp; the
//! interval is the 95% percentile bootstrap of [`crate::common::stats`] over family clusters
//! (each pair belongs to its family; a draw resamples the families with replacement
//! and recomputes the mean of the pairs it holds). A row's stream hashes
//! `["frontier", cap, depth]` (cap and depth in decimal) with the manifest's seed.
//!
//! # Medians and quartiles
//! `q1`, median and `q3` are the 25%, 50% and 75% quantiles with linear interpolation
//! between order statistics, position `q (n − 1)` of the sorted values (numpy's
//! default, the convention of the bootstrap's percentiles,
//! [`stats::quantile_sorted`]). On 2, 4, 6, 9 that is 3.5, 5 and 6.75.
//!
//! # Which limit first
//! The budget is *reached* at the first request whose `cumulative_tokens` exceeds the
//! episode budget (the harness stops on `>`, as it does); the call limit at the first
//! request whose executed calls so far equal (or pass) the call limit. The limit
//! reached at the earlier request is the one reached first; at the same request the
//! budget counts first (the harness checks the budget before it executes a call). An
//! episode that reaches neither — it answered, was cut, or stopped earlier — counts as
//! `neither`.
//!
//! An episode's request rows are found by its condition (block, arm, configuration,
//! variant, completion cap, repeat), which both tables carry: the request rows name
//! the episode's execute node, the episode rows its grade node.
//!
//! Invariants: row order of the input does not matter; the same rows, draws and seed
//! give the same tables bit for bit. Counts are exact integers from the rows.
//!
//! Never: runs episodes, reads transcripts or files, or decides an episode's verdict
//! or flag (the grader did); it only counts and resamples what the rows hold.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use arrow_array::RecordBatch;
use serde::{Deserialize, Serialize};

use super::{
    AnalysisError, Context, Design, Input, Output, ParamProblem, Produced, Requests, Typed,
};
use crate::common::stats::{self, ClusterTotals};
pub use tbb_tables::analyses::frontier::FirstLimit;
use tbb_tables::analyses::frontier::{FrontierPathsRow, FrontierRow};
use tbb_tables::levels::{Actor, Delivery, TerminalFlag};
use tbb_tables::rows::{EpisodeRow, VariantRow};
use tbb_tables::{HexKey, TableRow};

/// Name of the kind.
const KIND: &str = "frontier";
/// The reference depth of every contrast.
pub const REFERENCE_DEPTH: u32 = 2;
/// The terminal flags, in the grader's precedence order (infrastructure first): the
/// core's own list. The table has one `flag_<name>` count per flag, in this order
/// ([`FrontierRow::flag_counts`]).
pub const FLAGS: &[TerminalFlag] = TerminalFlag::ALL;

/// The `frontier` analysis kind.
pub struct Frontier;

/// Its parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontierParams {
    /// Bootstrap draws (default [`stats::DEFAULT_DRAWS`]).
    #[serde(default)]
    pub draws: Option<u32>,
    /// Bootstrap seed (default [`stats::DEFAULT_SEED`]).
    #[serde(default)]
    pub seed: Option<u64>,
    /// The episode budget the limits are measured against (default: the frozen
    /// contract's, [`tbb_tables::levels::EPISODE_BUDGET`]); keep it equal to the
    /// manifest's `[budgets] episode_budget`.
    #[serde(default)]
    pub episode_budget: Option<u64>,
}

impl FrontierParams {
    fn budget(&self) -> u64 {
        self.episode_budget
            .unwrap_or(tbb_tables::levels::EPISODE_BUDGET)
    }
}

impl Typed for Frontier {
    type Params = FrontierParams;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "frontier/1";
    const INPUTS: &'static [Input] = &[Input::Episodes, Input::Requests, Input::Variants];
    const OUTPUTS: &'static [&'static str] = &[FrontierRow::TABLE, FrontierPathsRow::TABLE];

    fn check(params: &FrontierParams) -> Vec<ParamProblem> {
        let mut problems: Vec<ParamProblem> =
            stats::check_draws(params.draws).into_iter().collect();
        if params.episode_budget == Some(0) {
            problems.push(ParamProblem {
                path: "episode_budget".into(),
                message: "episode_budget = 0 must be a positive number of tokens".into(),
                help: Some("use the manifest's [budgets] episode_budget (128000)".into()),
            });
        }
        problems
    }

    fn needs(design: &Design) -> Option<String> {
        let depths: BTreeSet<u8> = design.cells.iter().filter_map(|c| c.depth).collect();
        if depths.is_empty() {
            return Some("it reads frontier cells; the manifest has no cell with a `depth`".into());
        }
        (!depths.contains(&(REFERENCE_DEPTH as u8))).then(|| {
            format!(
                "its contrasts start from depth {REFERENCE_DEPTH}; the manifest has no cell \
                 with depth = {REFERENCE_DEPTH}"
            )
        })
    }

    fn run(params: &FrontierParams, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let limits = call_limits(input.tables)?;
        let (rows, paths) = compute(params, input.episodes, input.requests, &limits)?;
        Ok(vec![Output::of(&rows)?, Output::of(&paths)?].into())
    }
}

/// variant id → call limit, from the variants table.
pub fn call_limits(
    tables: &BTreeMap<String, RecordBatch>,
) -> Result<BTreeMap<String, u32>, AnalysisError> {
    let rows: Vec<VariantRow> = crate::input_rows(KIND, tables)?;
    Ok(rows
        .into_iter()
        .map(|v| (v.variant_id, v.call_limit))
        .collect())
}

/// The rule of "Which limit first" (module doc) on one episode's requests, given as
/// (request index, executed calls so far, cumulative tokens) in any order.
pub fn first_limit(requests: &[Step], call_limit: u32, budget: u64) -> FirstLimit {
    let mut sorted = requests.to_vec();
    sorted.sort_unstable();
    let budget_at = sorted.iter().find(|r| r.2 > budget).map(|r| r.0);
    let limit_at = sorted.iter().find(|r| r.1 >= call_limit).map(|r| r.0);
    match (budget_at, limit_at) {
        (Some(b), Some(l)) if l < b => FirstLimit::CallLimit,
        (Some(_), _) => FirstLimit::Budget,
        (None, Some(_)) => FirstLimit::CallLimit,
        (None, None) => FirstLimit::Neither,
    }
}

/// The 25%, 50% and 75% quantiles of `values` (module doc, "Medians and quartiles");
/// NaN when there is none.
pub fn quartiles(values: &[f64]) -> [f64; 3] {
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    [0.25, 0.5, 0.75].map(|q| stats::quantile_sorted(&sorted, q))
}

/// The key pairing an episode with its depth-2 partner: block, arm, configuration,
/// family, repeat (the completion cap is the row's).
type PairKey<'a> = (&'a str, &'a str, &'a str, &'a str, u32);

/// One request of an episode: its index, executed calls and cumulative tokens so far.
pub type Step = (u32, u32, u64);

/// The condition of one scored episode, as episode and request rows both carry it:
/// block, arm, configuration, variant, completion cap, repeat.
type Condition<'a> = (&'a str, &'a str, &'a str, &'a str, u32, u32);

fn condition(e: &EpisodeRow) -> Condition<'_> {
    (
        &e.block,
        &e.arm,
        &e.configuration,
        &e.variant_id,
        e.completion_cap,
        e.repeat,
    )
}

fn pair_key(e: &EpisodeRow) -> PairKey<'_> {
    (&e.block, &e.arm, &e.configuration, &e.family, e.repeat)
}

/// Both tables' rows, sorted.
pub fn compute(
    params: &FrontierParams,
    episodes: &[EpisodeRow],
    requests: &dyn Requests,
    limits: &BTreeMap<String, u32>,
) -> Result<(Vec<FrontierRow>, Vec<FrontierPathsRow>), AnalysisError> {
    let draws = params.draws.unwrap_or(stats::DEFAULT_DRAWS);
    let seed = params.seed.unwrap_or(stats::DEFAULT_SEED);
    let budget = params.budget();
    if draws == 0 {
        return Err(AnalysisError::InvalidParameter {
            analysis: KIND,
            detail: "draws must be at least 1".into(),
        });
    }
    let baseline =
        |actor: Actor, delivery: Delivery| actor == Actor::Model && delivery == Delivery::Native;
    // (cap, depth) → its episodes.
    let mut cells: BTreeMap<(u32, u32), Vec<&EpisodeRow>> = BTreeMap::new();
    let mut seen: BTreeSet<Condition<'_>> = BTreeSet::new();
    for e in episodes {
        if let (Some(depth), true) = (e.depth, baseline(e.actor, e.delivery)) {
            if !seen.insert(condition(e)) {
                return Err(AnalysisError::Inconsistent {
                    analysis: KIND,
                    detail: format!(
                        "two episode rows for one condition (configuration {}, variant {}, \
                         arm {}, repeat {})",
                        e.configuration, e.variant_id, e.arm, e.repeat
                    ),
                });
            }
            cells.entry((e.completion_cap, depth)).or_default().push(e);
        }
    }
    if cells.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis: KIND,
            detail: "no baseline episode (actor model, delivery native) of a frontier cell \
                     (a cell with `depth`)"
                .into(),
        });
    }
    // episode key → (request, calls so far, tokens so far) of its requests: a request
    // row and its episode's row carry the same episode key.
    // Keyed by the episodes' own keys, which outlive the pass over the requests (a
    // request of no episode row is not read).
    let mut by_episode: HashMap<HexKey, Vec<Step>> = episodes
        .iter()
        .map(|e| (e.episode_key, Vec::new()))
        .collect();
    requests.for_each(&mut |r| {
        if let Some(steps) = by_episode.get_mut(&r.episode.episode_key) {
            steps.push((
                r.request.turn,
                r.request.cumulative_calls,
                r.request.cumulative_tokens,
            ));
        }
    })?;
    let limit_of = |e: &EpisodeRow| -> Result<u32, AnalysisError> {
        limits
            .get(e.variant_id.as_str())
            .copied()
            .ok_or_else(|| AnalysisError::MissingData {
                analysis: KIND,
                detail: format!(
                    "variant {} has no call limit in the variants table",
                    e.variant_id
                ),
            })
    };

    let mut rows = Vec::new();
    let mut paths = Vec::new();
    for (&(cap, depth), list) in &cells {
        let mut list = list.clone();
        list.sort_by(|a, b| {
            (a.configuration.as_str(), a.family.as_str(), a.arm.as_str())
                .cmp(&(b.configuration.as_str(), b.family.as_str(), b.arm.as_str()))
                .then(a.repeat.cmp(&b.repeat))
                .then(a.block.cmp(&b.block))
                .then(a.node_key.cmp(&b.node_key))
        });
        let n = list.len();
        let mut flags = [0u64; FLAGS.len()];
        let mut first = [0u64; 3];
        let (mut within, mut within_failed, mut within_infeasible) = (0u64, 0u64, 0u64);
        let mut call_limit = 0u32;
        for e in &list {
            if let Some(flag) = e.terminal_flag {
                let Some(k) = FLAGS.iter().position(|f| *f == flag) else {
                    return Err(AnalysisError::Inconsistent {
                        analysis: KIND,
                        detail: format!(
                            "episode {} has an unknown terminal flag `{flag}`",
                            e.node_key
                        ),
                    });
                };
                flags[k] += 1;
            }
            if e.total_tokens <= budget {
                within += 1;
                if !e.vts {
                    within_failed += 1;
                    if e.terminal_flag == Some(TerminalFlag::Infeasibility) {
                        within_infeasible += 1;
                    }
                }
            }
            let limit = limit_of(e)?;
            call_limit = call_limit.max(limit);
            let own = by_episode
                .get(&e.episode_key)
                .map_or(&[][..], Vec::as_slice);
            let which = first_limit(own, limit, budget);
            first[which as usize] += 1;
            let mut own = own.to_vec();
            own.sort_unstable();
            paths.extend(
                own.iter()
                    .map(|&(request, calls, tokens)| FrontierPathsRow {
                        episode_key: e.episode_key.to_string(),
                        configuration: e.configuration.to_string(),
                        family: e.family.to_string(),
                        arm: e.arm.to_string(),
                        repeat: e.repeat,
                        completion_cap: cap,
                        depth,
                        request,
                        calls,
                        cumulative_tokens: tokens,
                        call_limit: limit,
                        episode_budget: budget,
                        first_limit: which,
                        vts: e.vts,
                    }),
            );
        }
        let column =
            |f: &dyn Fn(&EpisodeRow) -> f64| -> Vec<f64> { list.iter().map(|e| f(e)).collect() };
        let families: BTreeSet<&str> = list.iter().map(|e| e.family.as_str()).collect();
        let contrast = if depth == REFERENCE_DEPTH {
            None
        } else {
            let reference: BTreeMap<PairKey<'_>, bool> = cells
                .get(&(cap, REFERENCE_DEPTH))
                .map(|l| l.iter().map(|e| (pair_key(e), e.vts)).collect())
                .unwrap_or_default();
            let (values, families): (Vec<f64>, Vec<&str>) = list
                .iter()
                .filter_map(|e| {
                    reference.get(&pair_key(e)).map(|&at2| {
                        (
                            100.0 * (f64::from(u8::from(e.vts)) - f64::from(u8::from(at2))),
                            e.family.as_str(),
                        )
                    })
                })
                .unzip();
            let (ids, names) = stats::cluster_ids(&families);
            let totals = ClusterTotals::new(&values, &vec![1.0; values.len()], &ids, names.len());
            let draw_seed = stats::derive_seed(seed, &[KIND, &cap.to_string(), &depth.to_string()]);
            Some((
                values.len(),
                stats::cluster_bootstrap(&totals, draws, draw_seed),
                draw_seed,
            ))
        };
        let successes = list.iter().filter(|e| e.vts).count();
        let interval = contrast.as_ref().map(|c| c.1);
        let of_contrast =
            |f: fn(&stats::Interval) -> f64| interval.as_ref().map(f).and_then(finite);
        let [calls_q1, calls_median, calls_q3] = quartiles(&column(&|e| f64::from(e.calls)));
        let [tokens_q1, tokens_median, tokens_q3] = quartiles(&column(&|e| e.total_tokens as f64));
        rows.push(FrontierRow {
            completion_cap: cap,
            depth,
            call_limit,
            episode_budget: budget,
            n_episodes: n as u64,
            n_families: families.len() as u64,
            vts: successes as f64 / n as f64,
            n_pairs: contrast.as_ref().map(|c| c.0 as u64),
            contrast_pp: of_contrast(|i| i.estimate),
            ci_low_pp: of_contrast(|i| i.low),
            ci_high_pp: of_contrast(|i| i.high),
            p_value: of_contrast(|i| i.p_value),
            p_floor: of_contrast(|i| i.p_floor),
            draws,
            seed,
            draw_seed: contrast.as_ref().map(|c| c.2),
            flag_infra_failure: flags[0],
            flag_truncation: flags[1],
            flag_budget_or_call_limit: flags[2],
            flag_turn_limit: flags[3],
            flag_infeasibility: flags[4],
            flag_wrong_conclusion: flags[5],
            flag_contract_break: flags[6],
            calls_median: finite(calls_median),
            calls_q1: finite(calls_q1),
            calls_q3: finite(calls_q3),
            total_tokens_median: finite(tokens_median),
            total_tokens_q1: finite(tokens_q1),
            total_tokens_q3: finite(tokens_q3),
            prompt_tokens_median: finite(quartiles(&column(&|e| e.prompt_tokens as f64))[1]),
            within_budget: within,
            within_budget_failed: within_failed,
            within_budget_infeasibility: within_infeasible,
            budget_first: first[FirstLimit::Budget as usize],
            call_limit_first: first[FirstLimit::CallLimit as usize],
            neither_limit: first[FirstLimit::Neither as usize],
        });
    }
    Ok((rows, paths))
}

/// A finite value, or null.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

// The report crate's tests render sections from these panels (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod tests {
    #![cfg_attr(not(test), allow(dead_code, unused_imports))]
    use std::sync::Arc;

    use super::*;
    use crate::common::design::testing;
    use arrow_array::{Array, StringArray};
    use tbb_tables::levels::{
        Domain, Encoding, FinishReason, ReasoningSource, ResponseKind, Routing, Split, Workflow,
    };
    use tbb_tables::rows::RequestRow;
    use tbb_tables::rows::{EpisodeColumns, RequestColumns};

    /// A frontier episode of `config` and `family` at `depth` (call limit depth + 2):
    /// its success, terminal flag, executed calls, prompt and total tokens.
    #[allow(clippy::too_many_arguments)]
    pub fn episode(
        config: &str,
        family: &str,
        depth: u32,
        vts: bool,
        flag: Option<TerminalFlag>,
        calls: u32,
        prompt: u64,
        total: u64,
    ) -> EpisodeRow {
        let mut e = testing::row(config, "org", family, family, 8, "low", "raw", vts);
        e.depth = Some(depth);
        e.variant_id = format!("{family}-d{depth}").into();
        e.terminal_flag = flag;
        e.calls = calls;
        e.prompt_tokens = prompt;
        e.total_tokens = total;
        e.episode_key = blake3::hash(format!("k-{config}/{family}/{depth}").as_bytes()).into();
        e
    }

    /// The request rows of `e`: one per (calls so far, tokens so far), turns from 0.
    pub fn requests(e: &EpisodeRow, path: &[(u32, u64)]) -> Vec<RequestRow> {
        let columns = Arc::new(EpisodeColumns::of(e));
        path.iter()
            .enumerate()
            .map(|(turn, &(calls, tokens))| RequestRow {
                episode: columns.clone(),
                request: RequestColumns {
                    turn: turn as u32,
                    visible_schemas: 8,
                    prompt_tokens: Some(tokens),
                    cached_tokens: Some(0),
                    completion_tokens: Some(0),
                    reasoning_tokens: None,
                    reasoning_source: Some(ReasoningSource::Unknown),
                    finish_reason: Some(FinishReason::ToolCalls),
                    finish_reason_raw: Some("tool_calls".into()),
                    response_kind: Some(ResponseKind::ToolCall),
                    executed_call: true,
                    cumulative_calls: calls,
                    attempts: Some(1),
                    infra_cause: None,
                    wall_ms: 0,
                    cumulative_tokens: tokens,
                },
            })
            .collect()
    }

    /// Call limits: depth + 2 for every family of [`panel`].
    /// A variants table of the variants of [`limits`] with their call limits (the
    /// other columns are placeholders).
    pub fn variants(limits: &BTreeMap<String, u32>) -> RecordBatch {
        let rows: Vec<VariantRow> = limits
            .iter()
            .map(|(id, &call_limit)| VariantRow {
                variant_id: id.clone(),
                family: id.clone(),
                intent: String::new(),
                domain: Domain::Accounting,
                split: Split::Frontier,
                v: 8,
                w: Workflow::Low,
                d: Encoding::Raw,
                r: Routing::Low,
                depth: None,
                certified_min_calls: call_limit,
                call_limit,
                turn_limit: call_limit,
                menu_size: 8,
                n_operational_tools: 1,
                answer_json: "{}".into(),
                sources_json: "[]".into(),
                variant_hash: String::new(),
                required_tool_kinds: String::new(),
            })
            .collect();
        VariantRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn limits() -> BTreeMap<String, u32> {
        ["fa", "fb", "fc"]
            .iter()
            .flat_map(|f| [2u32, 30].map(|d| (format!("{f}-d{d}"), d + 2)))
            .collect()
    }

    /// Budget 100 (small numbers). Three families, two configurations, depths 2 and
    /// 30:
    /// * depth 2: every episode succeeds except (c2, fc);
    /// * depth 30: (c1, fa) succeeds; (c2, fa) fails within the budget at an
    ///   infeasibility stop; (c1, fb) fails within the budget with a wrong conclusion;
    ///   the other three exceed the budget — (c2, fb) after reaching the call limit
    ///   (32 calls) at request 2, (c1, fc) and (c2, fc) at the budget first.
    pub fn panel() -> (Vec<EpisodeRow>, Vec<RequestRow>) {
        let bf = Some(TerminalFlag::BudgetOrCallLimit);
        let e = vec![
            episode("c1", "fa", 2, true, None, 2, 20, 30),
            episode("c2", "fa", 2, true, None, 3, 30, 40),
            episode("c1", "fb", 2, true, None, 2, 25, 35),
            episode("c2", "fb", 2, true, None, 2, 10, 20),
            episode("c1", "fc", 2, true, None, 4, 40, 50),
            episode(
                "c2",
                "fc",
                2,
                false,
                Some(TerminalFlag::WrongConclusion),
                2,
                60,
                70,
            ),
            episode("c1", "fa", 30, true, None, 30, 80, 90),
            episode(
                "c2",
                "fa",
                30,
                false,
                Some(TerminalFlag::Infeasibility),
                12,
                50,
                60,
            ),
            episode(
                "c1",
                "fb",
                30,
                false,
                Some(TerminalFlag::WrongConclusion),
                31,
                90,
                100,
            ),
            episode("c2", "fb", 30, false, bf, 32, 120, 130),
            episode("c1", "fc", 30, false, bf, 20, 140, 150),
            episode("c2", "fc", 30, false, bf, 18, 110, 120),
        ];
        let paths: [&[(u32, u64)]; 12] = [
            &[(1, 10), (2, 30)],
            &[(3, 40)],
            &[(2, 35)],
            &[(2, 20)],
            &[(4, 50)],
            &[(2, 70)],
            &[(10, 20), (30, 60), (30, 90)],
            &[(12, 60)],
            &[(31, 100)],
            &[(20, 50), (31, 90), (32, 99), (32, 130)],
            &[(20, 90), (20, 150)],
            &[(18, 120)],
        ];
        let r = e
            .iter()
            .zip(paths)
            .flat_map(|(e, p)| requests(e, p))
            .collect();
        (e, r)
    }

    fn params(draws: u32) -> FrontierParams {
        FrontierParams {
            draws: Some(draws),
            seed: Some(7),
            episode_budget: Some(100),
        }
    }

    /// Executed calls: q1, median, q3 (NaN for a null).
    fn calls(r: &FrontierRow) -> [f64; 3] {
        [r.calls_q1, r.calls_median, r.calls_q3].map(|q| q.unwrap_or(f64::NAN))
    }

    /// Episodes reaching the budget first, the call limit first, neither.
    fn first(r: &FrontierRow) -> [u64; 3] {
        [r.budget_first, r.call_limit_first, r.neither_limit]
    }

    /// The flag columns are named after [`FLAGS`], in its order: the analysis counts
    /// a terminal flag by its position there.
    #[test]
    fn the_flag_columns_follow_the_flags() {
        let columns = FrontierRow::column_names().unwrap_or_else(|e| panic!("{e}"));
        let flag_columns: Vec<&String> =
            columns.iter().filter(|c| c.starts_with("flag_")).collect();
        let want: Vec<String> = FLAGS.iter().map(|f| format!("flag_{f}")).collect();
        assert_eq!(flag_columns, want.iter().collect::<Vec<_>>());
    }

    #[test]
    fn quartiles_interpolate_between_order_statistics() {
        assert_eq!(quartiles(&[9.0, 2.0, 6.0, 4.0]), [3.5, 5.0, 6.75]);
        assert_eq!(
            quartiles(&[18.0, 20.0, 22.0, 20.0, 21.0]),
            [20.0, 20.0, 21.0]
        );
        assert_eq!(quartiles(&[7.0]), [7.0; 3]);
        assert!(quartiles(&[]).iter().all(|q| q.is_nan()));
    }

    #[test]
    fn which_limit_first_follows_the_earlier_request_and_the_budget_on_a_tie() {
        // Tokens pass 100 at request 2, calls reach 4 at request 3: budget.
        let budget_first = [(0, 2, 50), (1, 3, 90), (2, 3, 101), (3, 4, 120)];
        assert_eq!(first_limit(&budget_first, 4, 100), FirstLimit::Budget);
        // Exactly the budget is not past it; the calls reach the limit at request 2.
        let at_budget = [(0, 3, 60), (1, 3, 100), (2, 4, 100)];
        assert_eq!(first_limit(&at_budget, 4, 100), FirstLimit::CallLimit);
        // Both at the same request: the budget.
        assert_eq!(first_limit(&[(0, 4, 101)], 4, 100), FirstLimit::Budget);
        // Row order does not matter.
        let mut shuffled = budget_first;
        shuffled.reverse();
        assert_eq!(first_limit(&shuffled, 4, 100), FirstLimit::Budget);
        assert_eq!(first_limit(&[(0, 1, 10)], 4, 100), FirstLimit::Neither);
        assert_eq!(first_limit(&[], 4, 100), FirstLimit::Neither);
    }

    #[test]
    fn the_depth_rows_by_hand() {
        let (mut episodes, mut requests) = panel();
        episodes.reverse();
        requests.reverse();
        let (rows, paths) = compute(&params(200), &episodes, &requests, &limits())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rows.len(), 2);
        let (d2, d30) = (&rows[0], &rows[1]);
        assert_eq!(
            (d2.depth, d2.call_limit, d2.n_episodes, d2.n_families),
            (2, 4, 6, 3)
        );
        assert_eq!(d2.vts, 5.0 / 6.0);
        assert!(d2.n_pairs.is_none() && d2.contrast_pp.is_none() && d2.draw_seed.is_none());
        assert_eq!(d2.flag_counts(), [0, 0, 0, 0, 0, 1, 0]);
        // Calls 2, 3, 2, 2, 4, 2 → sorted 2 2 2 2 3 4: q1 2, median 2, q3 2.75.
        assert_eq!(calls(d2), [2.0, 2.0, 2.75]);
        // Totals 20 30 35 40 50 70: q1 at 1.25 → 31.25, median 37.5, q3 at 3.75 → 47.5.
        assert_eq!(
            (
                d2.total_tokens_q1,
                d2.total_tokens_median,
                d2.total_tokens_q3
            ),
            (Some(31.25), Some(37.5), Some(47.5))
        );
        // Prompts 10 20 25 30 40 60: median 27.5.
        assert_eq!(d2.prompt_tokens_median, Some(27.5));
        assert_eq!(
            (
                d2.within_budget,
                d2.within_budget_failed,
                d2.within_budget_infeasibility
            ),
            (6, 1, 0)
        );
        // (c1, fc) executes its 4th call, the depth-2 call limit, and answers: it
        // reached the limit (without passing it).
        assert_eq!(first(d2), [0, 1, 5]);

        assert_eq!((d30.depth, d30.call_limit, d30.n_episodes), (30, 32, 6));
        assert_eq!(d30.vts, 1.0 / 6.0);
        assert_eq!(d30.flag_counts(), [0, 0, 3, 0, 1, 1, 0]);
        // Calls 12 18 20 30 31 32: q1 at 1.25 → 18.5, median 25, q3 at 3.75 → 30.75.
        assert_eq!(calls(d30), [18.5, 25.0, 30.75]);
        assert_eq!(
            (
                d30.within_budget,
                d30.within_budget_failed,
                d30.within_budget_infeasibility
            ),
            (3, 2, 1)
        );
        // (c2, fb) reaches 32 calls at request 2 and passes the budget at 3; (c1, fc)
        // and (c2, fc) pass the budget; (c1, fa) reaches 30 of 32 calls: neither.
        assert_eq!(first(d30), [2, 1, 3]);
        // Pairs (30 − 2): fa 0, −100; fb −100, −100; fc −100, 0 → mean −400 / 6.
        let (Some(pairs), Some(estimate)) = (d30.n_pairs, d30.contrast_pp) else {
            panic!("depth 30 has a contrast")
        };
        assert_eq!(pairs, 6);
        assert!((estimate - (-400.0 / 6.0)).abs() < 1e-12);
        assert_eq!(
            d30.draw_seed,
            Some(stats::derive_seed(7, &["frontier", "1024", "30"]))
        );

        // One path row per request, with the episode's limits and which came first.
        assert_eq!(paths.len(), requests.len());
        let c2fb: Vec<&FrontierPathsRow> = paths
            .iter()
            .filter(|p| p.configuration == "c2" && p.family == "fb" && p.depth == 30)
            .collect();
        assert_eq!(
            c2fb.iter()
                .map(|p| (p.request, p.calls, p.cumulative_tokens))
                .collect::<Vec<_>>(),
            [(0, 20, 50), (1, 31, 90), (2, 32, 99), (3, 32, 130)]
        );
        assert!(c2fb.iter().all(|p| p.call_limit == 32
            && p.episode_budget == 100
            && p.first_limit == FirstLimit::CallLimit
            && p.episode_key == blake3::hash(b"k-c2/fb/30").to_hex().as_str()));
    }

    /// The family-cluster bootstrap recomputed draw by draw from the index stream:
    /// each draw picks 3 families with replacement and averages the pairs they hold.
    #[test]
    fn the_cluster_interval_matches_a_slow_reference() {
        let (episodes, requests) = panel();
        let draws = 500;
        let (rows, _) = compute(&params(draws), &episodes, &requests, &limits())
            .unwrap_or_else(|e| panic!("{e}"));
        let (Some(draw_seed), Some(interval_low), Some(interval_high)) =
            (rows[1].draw_seed, rows[1].ci_low_pp, rows[1].ci_high_pp)
        else {
            panic!("depth 30 has a contrast")
        };
        // Families in sorted order, with their pairs' differences.
        let pairs: [&[f64]; 3] = [&[0.0, -100.0], &[-100.0, -100.0], &[-100.0, 0.0]];
        let mut stream = stats::IndexStream::new(draw_seed);
        let mut estimates: Vec<f64> = (0..draws)
            .map(|_| {
                let (mut sum, mut n) = (0.0, 0.0);
                for _ in 0..3 {
                    let family = pairs[stream.index(3)];
                    sum += family.iter().sum::<f64>();
                    n += family.len() as f64;
                }
                sum / n
            })
            .collect();
        estimates.sort_by(f64::total_cmp);
        let low = stats::quantile_sorted(&estimates, 0.025);
        let high = stats::quantile_sorted(&estimates, 0.975);
        assert!((interval_low - low).abs() < 1e-9, "{interval_low} vs {low}");
        assert!(
            (interval_high - high).abs() < 1e-9,
            "{interval_high} vs {high}"
        );
        // Every family averages −100 / 3 ... −200 / 2: the draws lie between the
        // most and least favourable families' means.
        assert!(interval_low >= -100.0 && interval_high <= -50.0);
    }

    #[test]
    fn equal_families_give_a_degenerate_interval() {
        // Every family loses one of its two pairs: each draw's mean is −50.
        let mut episodes = Vec::new();
        for f in ["fa", "fb", "fc"] {
            for (c, ok30) in [("c1", true), ("c2", false)] {
                episodes.push(episode(c, f, 2, true, None, 2, 10, 10));
                episodes.push(episode(c, f, 30, ok30, None, 30, 10, 10));
            }
        }
        let (rows, _) =
            compute(&params(100), &episodes, &[], &limits()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (rows[1].contrast_pp, rows[1].ci_low_pp, rows[1].ci_high_pp),
            (Some(-50.0), Some(-50.0), Some(-50.0))
        );
        // No request rows: no episode reaches a limit.
        assert_eq!(first(&rows[1]), [0, 0, 6]);
    }

    #[test]
    fn other_arms_and_unpaired_episodes_are_left_out() {
        let (mut episodes, requests) = panel();
        // A controller episode at depth 30 and a canonical one: not the baseline.
        let mut controller = episode("c3", "fa", 30, true, None, 30, 10, 10);
        controller.actor = Actor::Controller;
        let mut canonical = episode("c3", "fb", 30, true, None, 30, 10, 10);
        canonical.delivery = Delivery::Canonical;
        // A baseline depth-30 episode of a configuration with no depth-2 partner.
        let lonely = episode("c4", "fa", 30, true, None, 30, 10, 10);
        episodes.extend([controller, canonical, lonely]);
        let (rows, _) =
            compute(&params(50), &episodes, &requests, &limits()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rows[1].n_episodes, 7,
            "the lonely episode counts in the rates"
        );
        assert_eq!(rows[1].n_pairs, Some(6), "but pairs with nothing");
        assert!(compute(&params(50), &[], &[], &limits()).is_err());
        // Two rows for one condition contradict the episodes table's contract.
        let (mut twice, _) = panel();
        twice.push(twice[0].clone());
        assert!(matches!(
            compute(&params(50), &twice, &[], &limits()),
            Err(AnalysisError::Inconsistent { .. })
        ));
    }

    #[test]
    fn the_kind_writes_both_tables() {
        let (episodes, requests) = panel();
        let limits = limits();
        let tables = BTreeMap::from([(VariantRow::TABLE.to_string(), variants(&limits))]);
        let context = Context {
            study: "frontier",
            episodes: &episodes,
            requests: &requests,
            tables: &tables,
            skipped: &[],
        };
        let produced =
            <Frontier as Typed>::run(&params(50), &context).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = produced.tables.iter().map(|o| o.table).collect();
        assert_eq!(names, [FrontierRow::TABLE, FrontierPathsRow::TABLE]);
        assert_eq!(produced.tables[0].batch.num_rows(), 2);
        assert_eq!(produced.tables[1].batch.num_rows(), requests.len());
        // The paths table names which limit came first as published: plain text.
        let first_limits: Option<BTreeSet<&str>> = produced.tables[1]
            .batch
            .column_by_name("first_limit")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .map(|a| a.iter().flatten().collect());
        assert_eq!(
            first_limits,
            Some(BTreeSet::from(["budget", "call_limit", "neither"]))
        );
        let missing = Context {
            tables: &BTreeMap::new(),
            ..context
        };
        assert!(<Frontier as Typed>::run(&params(50), &missing).is_err());
    }
}
