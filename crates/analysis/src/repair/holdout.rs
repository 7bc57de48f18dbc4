//! The structural holdout (paper Table 10, Figure 10): the public-handoff controller
//! against the model-run baseline on the held-out intents at 2 and 30 required calls,
//! with canonical delivery as its wrong-layer control — L, Γ, Σ, Δ with family-cluster
//! intervals, "activates" (L, Γ, Σ and, for the controller, Δ all positive, by an
//! intersection-union test) with Holm's correction over the controller and its
//! control, pooled over every configuration and on the manifest's confirmatory set;
//! and, per arm and depth, success, calls (and the controller's share) and model
//! requests per episode.
//!
//! Owns: the `holdout` and `holdout_arms` tables' rows ([`HoldoutRow`],
//! [`HoldoutArmsRow`]). The formulas and the design reading
//! are the repairs study's ([`super::repairs::rows_for`] over
//! [`super::repairs::HOLDOUT_LAYERS`]): the depth layer (2 → 30 calls, repair
//! `actor = controller`) and the encoding layer (raw → compact, repair
//! `delivery = canonical`). A row's population is `all` or `confirmatory`.
//!
//! Δ of the controller is its Σ minus canonical delivery's on the same cells; the
//! no-repair means cancel, so it is the controller's change from 2 to 30 calls minus
//! the control's and ranges over ±200 pp (the row's note says so).
//!
//! Never: runs episodes, reads files, or names an arm by its manifest name.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::repairs::{self, arm_in, HOLDOUT_LAYERS};
use crate::common::stats::{check_draws, DEFAULT_DRAWS, DEFAULT_SEED};
use crate::{AnalysisError, Context, Design, Names, Output, ParamProblem, Produced, Typed};
use tbb_tables::analyses::holdout::{ArmRole, HoldoutArmsRow, HoldoutRow, Population};
use tbb_tables::analyses::repairs::Role;
use tbb_tables::levels::{Actor, Menu, TerminalFlag};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::TableRow;

const KIND: &str = "holdout";

/// The note on the controller's rows.
const DELTA_RANGE: &str = "Δ is the controller's change in VTS from 2 to 30 calls minus \
                           canonical delivery's (the no-repair means cancel), so it ranges \
                           over ±200 pp";

/// The `holdout` analysis kind.
pub struct Holdout;

/// Its parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The confirmatory configurations (the rest are supplementary).
    pub confirmatory: Vec<String>,
    /// Bootstrap draws (default 10,000).
    #[serde(default)]
    pub draws: Option<u32>,
    /// Bootstrap seed (default 20261202).
    #[serde(default)]
    pub seed: Option<u64>,
}

impl Typed for Holdout {
    type Params = Params;
    const NAME: &'static str = KIND;
    const VERSION: &'static str = "holdout/1";
    const OUTPUTS: &'static [&'static str] = &[HoldoutRow::TABLE, HoldoutArmsRow::TABLE];

    fn check(params: &Params) -> Vec<ParamProblem> {
        let mut out: Vec<ParamProblem> = check_draws(params.draws).into_iter().collect();
        if params.confirmatory.is_empty() {
            out.push(ParamProblem {
                path: "confirmatory".into(),
                message: "the confirmatory set is empty".into(),
                help: Some(
                    "name the configurations chosen before the study ran, e.g. \
                     `confirmatory = [\"sim-basalt-pro\", \"sim-gale-swift\"]`"
                        .into(),
                ),
            });
        }
        out
    }

    fn needs(design: &Design) -> Option<String> {
        if !design.menus.contains(&Menu::Fixed) {
            return Some(
                "it needs the model-run baseline (`menu = \"fixed\"`, the base prompt, native \
                 delivery)"
                    .into(),
            );
        }
        if !design.actors.contains(&Actor::Controller) {
            return Some("it needs an arm with `actor = \"controller\"`".into());
        }
        let depths: BTreeSet<u8> = design.cells.iter().filter_map(|c| c.depth).collect();
        if !(depths.contains(&2) && depths.contains(&30)) {
            return Some("it needs cells at depth 2 and depth 30".into());
        }
        None
    }

    fn check_names(params: &Params, names: &Names<'_>) -> Vec<ParamProblem> {
        params
            .confirmatory
            .iter()
            .enumerate()
            .filter_map(|(j, c)| names.configuration(&format!("confirmatory.{j}"), c))
            .collect()
    }

    fn needs_with(params: &Params, design: &Design) -> Option<String> {
        params
            .confirmatory
            .iter()
            .find(|c| !design.configurations.contains(c))
            .map(|c| {
                format!(
                    "its confirmatory configuration `{c}` is not among the study's \
                     configurations; list names of the manifest's `[configurations]`"
                )
            })
    }

    fn run(params: &Params, input: &Context<'_>) -> Result<Produced, AnalysisError> {
        let draws = params.draws.unwrap_or(DEFAULT_DRAWS);
        let seed = params.seed.unwrap_or(DEFAULT_SEED);
        let present: BTreeSet<&str> = input
            .episodes
            .iter()
            .map(|r| r.configuration.as_str())
            .collect();
        if let Some(missing) = params
            .confirmatory
            .iter()
            .find(|c| !present.contains(c.as_str()))
        {
            return Err(AnalysisError::MissingData {
                analysis: KIND,
                detail: format!(
                    "confirmatory configuration `{missing}` has no episode in this study; \
                     list configurations of the manifest's `[configurations]`"
                ),
            });
        }
        let rows = rows(input.episodes, &params.confirmatory, draws, seed)?;
        Ok(vec![Output::of(&rows)?, Output::of(&arm_rows(input.episodes))?].into())
    }
}

/// The `holdout` rows: every configuration, then the confirmatory ones.
pub fn rows(
    episodes: &[EpisodeRow],
    confirmatory: &[String],
    draws: u32,
    seed: u64,
) -> Result<Vec<HoldoutRow>, AnalysisError> {
    let mut out = Vec::new();
    for (population, only_confirmatory) in
        [(Population::All, false), (Population::Confirmatory, true)]
    {
        let keep = |r: &&EpisodeRow| {
            !only_confirmatory || confirmatory.iter().any(|c| *c == r.configuration)
        };
        let rows = repairs::rows_for(
            episodes.iter().filter(keep),
            &HOLDOUT_LAYERS,
            KIND,
            draws,
            seed,
        )?;
        for mut r in rows {
            if r.layer == HOLDOUT_LAYERS[0].name && r.role == Role::Repair && r.estimable {
                r.note = Some(match r.note.take() {
                    Some(n) => format!("{n}; {DELTA_RANGE}"),
                    None => DELTA_RANGE.into(),
                });
            }
            out.push(HoldoutRow {
                population: Some(population),
                effects: r,
            });
        }
    }
    Ok(out)
}

/// The role of each repair of [`HOLDOUT_LAYERS`] as an arm of the design.
const REPAIR_ROLES: [ArmRole; 2] = [ArmRole::Controller, ArmRole::CanonicalDelivery];

/// Per arm of the holdout design (baseline, controller, canonical delivery), cap and
/// depth.
pub fn arm_rows(episodes: &[EpisodeRow]) -> Vec<HoldoutArmsRow> {
    let role = |r: &EpisodeRow| match arm_in(r, &HOLDOUT_LAYERS)? {
        None => Some(ArmRole::Baseline),
        Some(i) => REPAIR_ROLES.get(i).copied(),
    };
    // Roles sort in their declared order: baseline, controller, canonical delivery.
    type Key = (u32, ArmRole, u32);
    let mut groups: BTreeMap<Key, Vec<&EpisodeRow>> = BTreeMap::new();
    for r in episodes {
        let (Some(role), Some(depth)) = (role(r), r.depth) else {
            continue;
        };
        groups
            .entry((r.completion_cap, role, depth))
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .map(|((cap, role, depth), rows)| {
            let n = rows.len() as f64;
            let mean = |f: &dyn Fn(&EpisodeRow) -> f64| rows.iter().map(|r| f(r)).sum::<f64>() / n;
            let names: BTreeSet<&str> = rows.iter().map(|r| r.arm.as_str()).collect();
            let configurations: BTreeSet<&str> =
                rows.iter().map(|r| r.configuration.as_str()).collect();
            HoldoutArmsRow {
                completion_cap: cap,
                role,
                arm: names.into_iter().collect::<Vec<_>>().join("+"),
                depth,
                n_episodes: rows.len() as u32,
                n_configurations: configurations.len() as u32,
                vts: mean(&|r| f64::from(u8::from(crate::common::design::success(r)))),
                calls_per_episode: mean(&|r| f64::from(r.calls)),
                controller_calls_per_episode: mean(&|r| f64::from(r.calls_by_controller)),
                requests_per_episode: mean(&|r| f64::from(r.requests)),
                tokens_per_episode: mean(&|r| r.total_tokens as f64),
                n_budget_or_call_limit: rows
                    .iter()
                    .filter(|r| r.terminal_flag == Some(TerminalFlag::BudgetOrCallLimit))
                    .count() as u32,
            }
        })
        .collect()
}

// The report crate's tests render sections from these panels (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod tests;
