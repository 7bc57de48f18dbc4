//! The policy pilot (paper Table 13): what to do after a probe episode — retry it
//! unchanged, restart it with a repair, or switch the configuration — and whether a
//! selector reading only the probe's public numbers chooses as well as switching.
//!
//! Owns: the `pilot` and `trace_selector` tables ([`PilotRow`], [`TraceSelectorRow`]).
//! A *block* is one condition (a configuration other than the switch, a family, a
//! cell) with its probe: the `probe` arm at repeat 0. Its actions, each an independent restart of the same condition:
//! the unchanged retry (the probe's arm at `retry_repeat`), each arm of `actions` at
//! repeat 0, and the fixed switch (the probe's arm run by the `switch` configuration).
//! A block enters only when every action ran.
//!
//! # Per action
//! success (share of blocks), success after a failed probe (share of the blocks whose
//! probe failed), the practitioner's policy (keep a successful probe, take the action
//! only after a failure) and cost per 1,000 conditions at the catalogue's frozen
//! prices: the probe charged once plus the action (`cost_per_1000_usd`), the action
//! alone (`action_cost_per_1000_usd`), and the policy's (the probe, plus the action
//! only after a failure).
//!
//! # The trace selector
//! A depth-one decision tree on public numeric features of the probe ([`FEATURES`]:
//! token counts, calls, requests, whether a response hit the cap — nothing hidden),
//! choosing one action per block. Fitted with each intent held out: over the training
//! blocks, every feature and every threshold between two consecutive distinct values
//! splits the blocks in two, each side takes the action with the most successes there
//! (ties to the earlier action), and the split with the most successes wins (ties to
//! the earlier feature, then the lower threshold); no split beats a single action only
//! if it is strictly better. The held-out intent's blocks take the fitted rule's
//! action. Its success against the switch, paired by block, has an intent-cluster
//! percentile interval with the fitted rules held fixed.
//!
//! Never: reads anything but episode rows; fits a rule on the intent it predicts.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{AnalysisError, Context, Design, Names, Output, ParamProblem, Produced, Typed};
use crate::common::stats::{self, check_draws, IndexStream, DEFAULT_DRAWS, DEFAULT_SEED};
use tbb_tables::analyses::pilot::{PilotRow, ProbeFeature, TraceSelectorRow};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

const KIND: &str = "pilot";

/// A public numeric feature of the probe: its name and its value.
pub type Feature = (ProbeFeature, fn(&EpisodeRow) -> f64);

/// The probe's public numeric features, in the order the fit tries them (a tie goes to
/// the earlier).
pub const FEATURES: [Feature; 6] = [
    (ProbeFeature::PromptTokens, |r| r.prompt_tokens as f64),
    (ProbeFeature::CompletionTokens, |r| {
        r.completion_tokens as f64
    }),
    (ProbeFeature::ReasoningTokens, |r| r.reasoning_tokens as f64),
    (ProbeFeature::Calls, |r| f64::from(r.calls)),
    (ProbeFeature::Requests, |r| f64::from(r.requests)),
    (ProbeFeature::HitCap, |r| f64::from(u8::from(r.truncated))),
];

/// The `pilot` analysis kind.
pub struct Pilot;

/// Its parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The probe's arm.
    pub probe: String,
    /// The repeat at which the probe's arm reruns as the unchanged retry (default 1).
    #[serde(default)]
    pub retry_repeat: Option<u32>,
    /// The restart arms, in table order.
    pub actions: Vec<String>,
    /// The configuration of the fixed switch.
    pub switch: String,
    /// Bootstrap draws (default 10,000).
    #[serde(default)]
    pub draws: Option<u32>,
    /// Bootstrap seed (default 20261202).
    #[serde(default)]
    pub seed: Option<u64>,
}

impl Typed for Pilot {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "pilot/1";
    const OUTPUTS: &'static [&'static str] = &[PilotRow::TABLE, TraceSelectorRow::TABLE];

    fn check(params: &Params) -> Vec<ParamProblem> {
        let mut out: Vec<ParamProblem> = check_draws(params.draws).into_iter().collect();
        if params.retry_repeat == Some(0) {
            out.push(ParamProblem {
                path: "retry_repeat".into(),
                message: "the retry cannot be the probe's own repeat 0".into(),
                help: Some("run the probe's arm again in a block with `first_repeat = 1`".into()),
            });
        }
        if params.actions.contains(&params.probe) {
            out.push(ParamProblem {
                path: "actions".into(),
                message: format!("the probe's arm `{}` is listed as an action", params.probe),
                help: Some("the unchanged retry is the probe's arm at `retry_repeat`".into()),
            });
        }
        out
    }

    fn check_names(params: &Params, names: &Names<'_>) -> Vec<ParamProblem> {
        let mut out: Vec<ParamProblem> = names.arm("probe", &params.probe).into_iter().collect();
        for (j, action) in params.actions.iter().enumerate() {
            out.extend(names.arm(&format!("actions.{j}"), action));
        }
        out.extend(names.configuration("switch", &params.switch));
        out
    }

    fn needs_with(params: &Params, design: &Design) -> Option<String> {
        (!design.configurations.contains(&params.switch)).then(|| {
            format!(
                "its switch configuration `{}` is not among the study's configurations",
                params.switch
            )
        })
    }

    fn run(params: &Params, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let draws = params.draws.unwrap_or(DEFAULT_DRAWS);
        let seed = params.seed.unwrap_or(DEFAULT_SEED);
        let blocks = blocks(input.episodes, params)?;
        let selector = select(&blocks);
        let rows = rows(&blocks, &selector, &action_names(params), draws, seed);
        Ok(vec![
            Output::of(&rows)?,
            Output {
                table: TraceSelectorRow::TABLE,
                batch: TraceSelectorRow::to_batch(&selector_rows(
                    &selector.rules,
                    &action_names(params),
                ))?,
            },
        ]
        .into())
    }
}

/// The actions' names in table order: the retry, the arms, the switch.
pub fn action_names(params: &Params) -> Vec<String> {
    std::iter::once("retry".to_string())
        .chain(params.actions.iter().cloned())
        .chain(std::iter::once("switch".to_string()))
        .collect()
}

/// One block: its probe and its actions' outcomes, in [`action_names`] order.
#[derive(Debug, Clone)]
pub struct Block<'a> {
    /// The intent (the cluster and the selector's fold).
    pub intent: &'a str,
    /// The probe.
    pub probe: &'a EpisodeRow,
    /// Each action's episode.
    pub actions: Vec<&'a EpisodeRow>,
}

/// The blocks of the study (see the module doc).
pub fn blocks<'a>(
    episodes: &'a [EpisodeRow],
    params: &Params,
) -> Result<Vec<Block<'a>>, AnalysisError> {
    type Condition<'a> = (
        &'a str,
        &'a str,
        u32,
        &'a str,
        &'a str,
        &'a str,
        Option<u32>,
    );
    let condition = |r: &'a EpisodeRow, configuration: &'a str| -> Condition<'a> {
        (
            configuration,
            r.family.as_str(),
            r.v,
            // By name, as the conditions were always ordered.
            r.w.name(),
            r.d.name(),
            r.r.name(),
            r.depth,
        )
    };
    let retry = params.retry_repeat.unwrap_or(1);
    // (condition, arm, repeat) → row.
    let mut index: BTreeMap<(Condition<'a>, &'a str, u32), &'a EpisodeRow> = BTreeMap::new();
    for r in episodes {
        let key = (condition(r, &r.configuration), r.arm.as_str(), r.repeat);
        if index.insert(key, r).is_some() {
            return Err(AnalysisError::Inconsistent {
                analysis: KIND,
                detail: format!(
                    "two episodes of arm {} for {} × {} at repeat {}",
                    r.arm, r.configuration, r.family, r.repeat
                ),
            });
        }
    }
    let mut out = Vec::new();
    for ((cond, arm, repeat), probe) in &index {
        if *arm != params.probe || *repeat != 0 || cond.0 == params.switch {
            continue;
        }
        let switch_cond = (
            params.switch.as_str(),
            cond.1,
            cond.2,
            cond.3,
            cond.4,
            cond.5,
            cond.6,
        );
        let mut actions = vec![index.get(&(*cond, params.probe.as_str(), retry))];
        actions.extend(
            params
                .actions
                .iter()
                .map(|a| index.get(&(*cond, a.as_str(), 0))),
        );
        actions.push(index.get(&(switch_cond, params.probe.as_str(), 0)));
        if let Some(actions) = actions.into_iter().collect::<Option<Vec<_>>>() {
            out.push(Block {
                intent: probe.intent.as_str(),
                probe,
                actions: actions.into_iter().copied().collect(),
            });
        }
    }
    if out.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis: KIND,
            detail: format!(
                "no block: no condition where the probe arm `{}` ran at repeat 0 and the \
                 retry (repeat {retry}), every action ({}) and the switch `{}` ran too",
                params.probe,
                params.actions.join(", "),
                params.switch
            ),
        });
    }
    Ok(out)
}

fn ok(r: &EpisodeRow) -> bool {
    crate::common::design::success(r)
}

/// A fitted depth-one rule: `feature ≤ threshold` → `low`, else `high` (no feature:
/// `low` everywhere).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The fold (the held-out intent).
    pub fold: String,
    /// Index into [`FEATURES`], or `None` for a single action.
    pub feature: Option<usize>,
    /// The split.
    pub threshold: f64,
    /// The action at or below it (index into the actions).
    pub low: usize,
    /// The action above it.
    pub high: usize,
    /// Successes of the rule on its training blocks.
    pub training_successes: u32,
}

impl Rule {
    /// The rule's action for a probe.
    pub fn choose(&self, probe: &EpisodeRow) -> usize {
        match self.feature {
            Some(f) if FEATURES[f].1(probe) > self.threshold => self.high,
            _ => self.low,
        }
    }
}

/// The best action of some blocks: (action, successes), ties to the earlier action.
fn best(blocks: &[&Block<'_>], n_actions: usize) -> (usize, u32) {
    let mut best = (0, 0);
    for a in 0..n_actions {
        let s = blocks.iter().filter(|b| ok(b.actions[a])).count() as u32;
        if a == 0 || s > best.1 {
            best = (a, s);
        }
    }
    best
}

/// Fits the depth-one tree on `training` (see the module doc).
pub fn fit(fold: &str, training: &[&Block<'_>]) -> Rule {
    let n_actions = training.first().map_or(0, |b| b.actions.len());
    let (single, single_successes) = best(training, n_actions);
    let mut rule = Rule {
        fold: fold.into(),
        feature: None,
        threshold: f64::NAN,
        low: single,
        high: single,
        training_successes: single_successes,
    };
    for (f, (_, value)) in FEATURES.iter().enumerate() {
        let values: BTreeSet<u64> = training.iter().map(|b| value(b.probe).to_bits()).collect();
        let mut sorted: Vec<f64> = values.into_iter().map(f64::from_bits).collect();
        sorted.sort_by(f64::total_cmp);
        for pair in sorted.windows(2) {
            let threshold = (pair[0] + pair[1]) / 2.0;
            let (low, high): (Vec<&Block<'_>>, Vec<&Block<'_>>) =
                training.iter().partition(|b| value(b.probe) <= threshold);
            let (a_low, s_low) = best(&low, n_actions);
            let (a_high, s_high) = best(&high, n_actions);
            if s_low + s_high > rule.training_successes {
                rule = Rule {
                    fold: fold.into(),
                    feature: Some(f),
                    threshold,
                    low: a_low,
                    high: a_high,
                    training_successes: s_low + s_high,
                };
            }
        }
    }
    rule
}

/// The selector's rules (one per intent) and its choice per block.
#[derive(Debug, Clone)]
pub struct Selector {
    /// The fitted rule of each fold.
    pub rules: Vec<Rule>,
    /// The chosen action of each block.
    pub chosen: Vec<usize>,
}

/// Fits the selector with each intent held out.
pub fn select(blocks: &[Block<'_>]) -> Selector {
    let intents: BTreeSet<&str> = blocks.iter().map(|b| b.intent).collect();
    let mut chosen = vec![0; blocks.len()];
    let mut rules = Vec::new();
    for held in intents {
        let training: Vec<&Block<'_>> = blocks.iter().filter(|b| b.intent != held).collect();
        let rule = fit(held, &training);
        for (i, b) in blocks.iter().enumerate() {
            if b.intent == held {
                chosen[i] = rule.choose(b.probe);
            }
        }
        rules.push(rule);
    }
    Selector { rules, chosen }
}

/// The `pilot` rows: the probe, each action, then the trace selector.
pub fn rows<'a>(
    blocks: &[Block<'a>],
    selector: &Selector,
    names: &[String],
    draws: u32,
    seed: u64,
) -> Vec<PilotRow> {
    let n = blocks.len() as f64;
    let failed: Vec<bool> = blocks.iter().map(|b| !ok(b.probe)).collect();
    let n_failed = failed.iter().filter(|f| **f).count();
    let probe_cost: f64 = blocks.iter().map(|b| b.probe.cost_usd).sum::<f64>() / n;
    let row = |action: String, pick: &dyn Fn(usize) -> &'a EpisodeRow| -> PilotRow {
        let success = (0..blocks.len()).filter(|&i| ok(pick(i))).count() as f64 / n;
        let after = (0..blocks.len())
            .filter(|&i| failed[i] && ok(pick(i)))
            .count() as f64;
        let policy = (0..blocks.len())
            .filter(|&i| !failed[i] || ok(pick(i)))
            .count() as f64
            / n;
        let action_cost = (0..blocks.len()).map(|i| pick(i).cost_usd).sum::<f64>() / n;
        let after_failure_cost = (0..blocks.len())
            .filter(|&i| failed[i])
            .map(|i| pick(i).cost_usd)
            .sum::<f64>()
            / n;
        PilotRow {
            action,
            n_blocks: blocks.len() as u32,
            n_failed_probe: n_failed as u32,
            success,
            success_after_failed_probe: (n_failed > 0).then(|| after / n_failed as f64),
            policy_success: policy,
            cost_per_1000_usd: 1000.0 * (probe_cost + action_cost),
            action_cost_per_1000_usd: 1000.0 * action_cost,
            policy_cost_per_1000_usd: 1000.0 * (probe_cost + after_failure_cost),
            vs_switch_pp: None,
            vs_switch_ci_low_pp: None,
            vs_switch_ci_high_pp: None,
            draws,
            seed,
        }
    };
    let mut out = vec![PilotRow {
        cost_per_1000_usd: 1000.0 * probe_cost,
        policy_cost_per_1000_usd: 1000.0 * probe_cost,
        ..row("probe".into(), &|i| blocks[i].probe)
    }];
    for (a, name) in names.iter().enumerate() {
        out.push(row(name.clone(), &|i| blocks[i].actions[a]));
    }
    let mut selected = row("trace_selector".into(), &|i| {
        blocks[i].actions[selector.chosen[i]]
    });
    let switch = names.len() - 1;
    let (estimate, low, high) = versus(blocks, selector, switch, draws, seed);
    selected.vs_switch_pp = Some(estimate);
    selected.vs_switch_ci_low_pp = Some(low);
    selected.vs_switch_ci_high_pp = Some(high);
    out.push(selected);
    out
}

/// The selector's success minus the switch's, pp, paired by block, with its
/// intent-cluster 95% percentile interval (the rules held fixed).
fn versus(
    blocks: &[Block<'_>],
    selector: &Selector,
    switch: usize,
    draws: u32,
    seed: u64,
) -> (f64, f64, f64) {
    let intents: Vec<&str> = blocks
        .iter()
        .map(|b| b.intent)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // Per intent: (sum of differences, blocks).
    let mut per: Vec<(f64, f64)> = vec![(0.0, 0.0); intents.len()];
    for (i, b) in blocks.iter().enumerate() {
        let k = intents.iter().position(|x| *x == b.intent).unwrap_or(0);
        let d = f64::from(u8::from(ok(b.actions[selector.chosen[i]])))
            - f64::from(u8::from(ok(b.actions[switch])));
        per[k].0 += d;
        per[k].1 += 1.0;
    }
    let total = |picks: &mut dyn Iterator<Item = usize>| {
        let (s, n) = picks.fold((0.0, 0.0), |acc, k| (acc.0 + per[k].0, acc.1 + per[k].1));
        100.0 * s / n
    };
    let estimate = total(&mut (0..intents.len()));
    let mut stream = IndexStream::new(stats::derive_seed(seed, &[KIND, "selector_vs_switch"]));
    let m = intents.len() as u32;
    let mut values: Vec<f64> = (0..draws)
        .map(|_| {
            let picks: Vec<usize> = (0..m).map(|_| stream.index(m)).collect();
            total(&mut picks.into_iter())
        })
        .collect();
    let (low, high) = stats::quantile_pair(&mut values, 0.025, 0.975);
    (estimate, low, high)
}

/// The `trace_selector` rows: one per fitted rule, actions by name.
pub fn selector_rows(rules: &[Rule], names: &[String]) -> Vec<TraceSelectorRow> {
    let name = |a: usize| names.get(a).cloned().unwrap_or_default();
    rules
        .iter()
        .map(|r| TraceSelectorRow {
            held_out_intent: r.fold.clone(),
            feature: r.feature.map(|f| FEATURES[f].0),
            // A single action has no split (its threshold is NaN).
            threshold: r.threshold.is_finite().then_some(r.threshold),
            action_at_or_below: name(r.low),
            action_above: name(r.high),
            training_successes: r.training_successes,
        })
        .collect()
}

// The report crate's tests render sections from these panels (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod tests;
