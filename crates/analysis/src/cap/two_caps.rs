//! What the two completion-cap studies (`cap_sweep` and `cap_crossover`, paper
//! Appendix E) share: the two caps read from the data, the strata table another
//! analysis writes, the kept and excluded rows, the per-stratum menu contrast at each
//! cap and its change between the caps with family-cluster bootstraps, the
//! either-outcome bounds on that change, V = 128 truncation and repeat disagreement.
//! It is not a kind itself: the two kinds call it and add their own readings.
//!
//! # Caps
//! The rows read are the no-repair capacity rows of the routed lane
//! ([`design::capacity_rows`], lane `routed`); they must hold exactly two completion
//! caps, the lower one playing the `low` role and the higher the `high` role, their
//! difference the `change` ([`CapRole`], the tables' level). The tables name them `cap_<cap>`
//! (`cap_1024`) and the change `cap_<high>_minus_cap_<low>`, in columns published as
//! `arm` and `arm_role` (names kept from the paper's tables; an arm of the harness is
//! something else, a prompt × menu × delivery × actor form).
//!
//! # Kept and excluded rows
//! A row with an infrastructure failure (`infra_failure`: the provider failed after
//! retries, or the usage it reported was missing or not counts — cause `bad_usage`)
//! is excluded from the estimates and counted. Its outcome is unknown, not a failure
//! of the model: counting it as a failure would pull its cap's estimate downwards.
//!
//! # The menu contrast
//! A unit is a family × configuration. At each cap a unit's value is the paper's V
//! main effect over the four endpoint W × D cells ([`Contrast::V`]: the mean over
//! (W, D) ∈ {low, high} × {raw, linked} of mean success at V = 128 minus at V = 8,
//! repeats averaged within a cell), in pp. A stratum's estimate at a cap is the mean
//! over its units; its change is the mean over units of (high − low). A unit lacking a
//! kept row in one of its eight endpoint cells at a cap is left out at that cap and
//! of the change, and counted (`units_incomplete`). Intervals come from the family
//! cluster bootstrap of [`stats::cluster_bootstrap`] (every unit of a family, over all
//! the stratum's configurations, resampled together); a row's stream hashes
//! `[kind, stratum, label, statistic]` (the label as in the `arm` column) with the
//! analysis's seed ([`stats::derive_seed`]).
//!
//! # Either-outcome bounds
//! With every excluded row put back with an outcome, the change is, for each row, an
//! affine function of that row's 0/1 outcome alone (its cell's denominator counts the
//! row whatever its outcome), with a coefficient whose sign is the sign of its cell's
//! V weight, times +1 in the high cap and −1 in the low cap (zero outside the endpoint
//! cells). So the smallest and largest change over all `2^k` assignments are reached by
//! giving every row the outcome its coefficient's sign asks for: the bounds are exact,
//! without enumerating (a test checks them against the enumeration).
//!
//! # Truncation and repeat disagreement
//! V = 128 truncation counts the kept episodes at V = 128 (the four endpoint cells)
//! with the `truncated` flag. A *condition* is a configuration × capacity cell ×
//! family in one cap; it disagrees when its kept repeats do not all have the same
//! success. Conditions with fewer than two kept repeats are not counted.
//!
//! Invariants: row order never matters (everything is grouped in sorted maps); counts
//! are exact integers.
//!
//! Never: reads files, runs episodes, or decides a kind's own rules (which
//! configurations are pooled, what a manipulation check means): the kinds do.

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::RecordBatch;
use serde::Deserialize;

use crate::common::design::{self, Contrast, N_ENDPOINTS};
use crate::common::stats::{self, ClusterTotals, Interval};
use crate::{AnalysisError, ParamProblem};
use tbb_tables::analyses::two_caps::{CapConfiguration, CapEstimate, CapRole, CapStatistic};
use tbb_tables::levels::{InfraCause, Menu};
use tbb_tables::rows::EpisodeRow;

/// The lane both studies run.
pub const LANE: Menu = crate::capacity::lanes::ROUTED;
/// The pseudo-stratum of rows pooling every configuration in a stratum.
pub const ALL: &str = "all";

/// The two caps of the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The lower cap.
    pub low: u32,
    /// The higher cap.
    pub high: u32,
}

impl Caps {
    /// `cap_1024`, `cap_16384`, `cap_16384_minus_cap_1024` (the `arm` column).
    pub fn label(self, role: CapRole) -> String {
        match role {
            CapRole::Low => format!("cap_{}", self.low),
            CapRole::High => format!("cap_{}", self.high),
            CapRole::Change => format!("cap_{}_minus_cap_{}", self.high, self.low),
        }
    }

    /// The cap a role plays (none for the change: the `completion_cap` column).
    pub fn cap(self, role: CapRole) -> Option<u32> {
        match role {
            CapRole::Low => Some(self.low),
            CapRole::High => Some(self.high),
            CapRole::Change => None,
        }
    }
}

/// The parameters both kinds share (`draws`, `seed` typed like the `contrasts`
/// kind's; the cluster unit is always the family).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// Draws per bootstrap.
    pub draws: u32,
    /// The seed every row's `draw_seed` derives from.
    pub seed: u64,
}

impl Resolved {
    /// Defaults filled in ([`stats::DEFAULT_DRAWS`], [`stats::DEFAULT_SEED`]).
    pub fn of(draws: Option<u32>, seed: Option<u64>) -> Resolved {
        Resolved {
            draws: draws.unwrap_or(stats::DEFAULT_DRAWS).max(1),
            seed: seed.unwrap_or(stats::DEFAULT_SEED),
        }
    }
}

/// Range checks of `draws` and a percentage parameter, at their paths.
pub fn check(draws: Option<u32>, percentages: &[(&str, Option<f64>)]) -> Vec<ParamProblem> {
    let mut problems: Vec<ParamProblem> = stats::check_draws(draws).into_iter().collect();
    for (path, value) in percentages {
        if let Some(v) = value {
            if !(0.0..=100.0).contains(v) {
                problems.push(ParamProblem {
                    path: (*path).into(),
                    message: format!("{path} = {v} is not a percentage from 0 to 100"),
                    help: Some("the paper uses 5".into()),
                });
            }
        }
    }
    problems
}

/// The design needs of both kinds: matched V pairs, and exactly two completion caps.
pub fn needs_two_caps(design: &crate::Design) -> Option<String> {
    design.needs_v_pairs().or_else(|| {
        (design.completion_caps.len() != 2).then(|| {
            format!(
                "it compares exactly two completion caps; the manifest runs {} ({})",
                design.completion_caps.len(),
                design
                    .completion_caps
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    })
}

/// One configuration's line in the strata table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// Its stratum (`None`: in no stratum).
    pub stratum: Option<String>,
    /// Whether the study selected it (a null reads as not selected).
    pub selected: bool,
}

impl Membership {
    /// Its stratum when it is selected and has one.
    pub fn pooled_stratum(&self) -> Option<&str> {
        self.stratum.as_deref().filter(|_| self.selected)
    }
}

/// The columns of a strata table (`sweep_strata`, `crossover_strata`) the cap studies
/// read; its other columns are the strata analyses' own. Each column must be there
/// (`deserialize_with`: an absent column is an error, not a column of nulls), and a
/// null `selected` reads as not selected.
#[derive(Debug, Clone, PartialEq, Deserialize)]
struct StrataLine {
    #[serde(deserialize_with = "Option::deserialize")]
    configuration: Option<String>,
    #[serde(deserialize_with = "Option::deserialize")]
    stratum: Option<String>,
    #[serde(deserialize_with = "Option::deserialize")]
    selected: Option<bool>,
}

/// Reads a strata table (`configuration`, `stratum` nullable, `selected`), checking
/// every stratum is one of `allowed` and no configuration is listed twice.
pub fn read_strata(
    kind: &'static str,
    table: &str,
    tables: &BTreeMap<String, RecordBatch>,
    allowed: &[&str],
) -> Result<BTreeMap<String, Membership>, AnalysisError> {
    let bad = |detail: String| AnalysisError::InputTable {
        analysis: kind,
        table: table.to_string(),
        detail,
    };
    let batch = tables
        .get(table)
        .ok_or_else(|| bad("it was not given".into()))?;
    let lines: Vec<StrataLine> =
        tbb_tables::read_rows(table, batch).map_err(|e| bad(e.to_string()))?;
    let mut out = BTreeMap::new();
    for (i, line) in lines.into_iter().enumerate() {
        let Some(configuration) = line.configuration else {
            return Err(bad(format!("row {i} has no configuration")));
        };
        if let Some(s) = &line.stratum {
            if !allowed.contains(&s.as_str()) {
                return Err(bad(format!(
                    "configuration {configuration} has stratum `{s}`; this analysis knows {}",
                    allowed.join(", ")
                )));
            }
        }
        let membership = Membership {
            stratum: line.stratum,
            selected: line.selected.unwrap_or(false),
        };
        if out.contains_key(&configuration) {
            return Err(bad(format!(
                "configuration {configuration} is listed twice"
            )));
        }
        out.insert(configuration, membership);
    }
    Ok(out)
}

/// Success or failure counts of one endpoint cell of one unit in one cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    wins: u32,
    count: u32,
}

/// One unit's eight endpoint cells in each of the two caps.
type UnitCells = [[Tally; N_ENDPOINTS]; 2];

/// A family × configuration unit, configuration first so a configuration's units are
/// neighbours.
type UnitKey<'a> = (&'a str, &'a str);

/// A row excluded for an infrastructure failure, where it would count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Excluded<'a> {
    unit: UnitKey<'a>,
    cap_index: usize,
    /// Its endpoint cell, `None` outside the endpoint cells.
    endpoint: Option<usize>,
}

/// The routed-lane capacity rows of both caps, kept and excluded, grouped.
#[derive(Debug, Clone)]
pub struct CapRows<'a> {
    /// The two caps.
    pub caps: Caps,
    /// Each configuration's organization.
    pub organizations: BTreeMap<&'a str, &'a str>,
    units: BTreeMap<UnitKey<'a>, UnitCells>,
    excluded: Vec<Excluded<'a>>,
    /// Excluded rows by (configuration, cap index): provider failures and missing or
    /// invalid usage (`bad_usage`).
    excluded_counts: BTreeMap<(&'a str, usize), (u32, u32)>,
    /// Kept V = 128 episodes and how many were truncated, by (configuration, cap).
    truncation: BTreeMap<(&'a str, usize), (u32, u32)>,
    /// Kept successes of each condition by repeat: (configuration, cap, family, cell)
    /// -> successes of its repeats.
    conditions: BTreeMap<(&'a str, usize, &'a str, usize), BTreeMap<u32, bool>>,
}

/// The caps of the data's routed capacity rows, exactly two.
fn caps_of(kind: &'static str, rows: &[(&EpisodeRow, usize)]) -> Result<Caps, AnalysisError> {
    let caps: BTreeSet<u32> = rows.iter().map(|(r, _)| r.completion_cap).collect();
    match caps.iter().copied().collect::<Vec<u32>>()[..] {
        [low, high] => Ok(Caps { low, high }),
        ref found => Err(AnalysisError::MissingData {
            analysis: kind,
            detail: format!(
                "it compares exactly two completion caps on the routed lane's capacity cells; \
                 the episodes hold {} ({})",
                found.len(),
                found
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

impl<'a> CapRows<'a> {
    /// Groups the routed capacity rows of `episodes`; two caps exactly, one row per
    /// condition and repeat.
    pub fn new(
        kind: &'static str,
        episodes: &'a [EpisodeRow],
    ) -> Result<CapRows<'a>, AnalysisError> {
        let rows: Vec<(&EpisodeRow, usize)> = design::capacity_rows(episodes)
            .into_iter()
            .filter(|(stratum, _)| stratum.lane == LANE)
            .flat_map(|(_, rows)| rows)
            .collect();
        let caps = caps_of(kind, &rows)?;
        design::check_groups(kind, rows.iter().map(|(r, _)| *r))?;
        let mut out = CapRows {
            caps,
            organizations: BTreeMap::new(),
            units: BTreeMap::new(),
            excluded: Vec::new(),
            excluded_counts: BTreeMap::new(),
            truncation: BTreeMap::new(),
            conditions: BTreeMap::new(),
        };
        let mut seen: BTreeSet<(&str, &str, usize, u32, u32)> = BTreeSet::new();
        for &(row, cell) in &rows {
            let cap_index = usize::from(row.completion_cap == caps.high);
            let configuration = row.configuration.as_str();
            out.organizations
                .insert(configuration, row.organization.as_str());
            if !seen.insert((
                configuration,
                &row.family,
                cell,
                row.completion_cap,
                row.repeat,
            )) {
                return Err(AnalysisError::Inconsistent {
                    analysis: kind,
                    detail: format!(
                        "two episodes for family {} × configuration {} at {}, cap {}, repeat {}",
                        row.family,
                        configuration,
                        design::CELLS[cell].label(),
                        row.completion_cap,
                        row.repeat
                    ),
                });
            }
            let unit = (configuration, row.family.as_str());
            let endpoint = (cell < N_ENDPOINTS).then_some(cell);
            let cells = out.units.entry(unit).or_default();
            if row.infra_failure {
                out.excluded.push(Excluded {
                    unit,
                    cap_index,
                    endpoint,
                });
                let counts = out
                    .excluded_counts
                    .entry((configuration, cap_index))
                    .or_default();
                if row.infra_error == Some(InfraCause::BadUsage) {
                    counts.1 += 1;
                } else {
                    counts.0 += 1;
                }
                continue;
            }
            let won = design::success(row);
            if let Some(c) = endpoint {
                cells[cap_index][c].wins += u32::from(won);
                cells[cap_index][c].count += 1;
            }
            if design::CELLS[cell].v == 128 {
                let t = out
                    .truncation
                    .entry((configuration, cap_index))
                    .or_default();
                t.0 += 1;
                t.1 += u32::from(row.truncated);
            }
            out.conditions
                .entry((configuration, cap_index, row.family.as_str(), cell))
                .or_default()
                .insert(row.repeat, won);
        }
        Ok(out)
    }

    /// Every configuration of the rows, sorted.
    pub fn configurations(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.organizations.keys().copied()
    }

    /// Kept V = 128 episodes and truncated ones of a configuration in a cap.
    pub fn truncation(&self, configuration: &str, role: CapRole) -> (u32, u32) {
        let i = usize::from(role == CapRole::High);
        self.truncation
            .get(&(configuration, i))
            .copied()
            .unwrap_or_default()
    }

    /// Excluded rows (provider failures, missing usage) of a configuration in a cap
    /// (both caps for [`CapRole::Change`]).
    pub fn excluded(&self, configuration: &str, role: CapRole) -> (u32, u32) {
        let indices: &[usize] = match role {
            CapRole::Low => &[0],
            CapRole::High => &[1],
            CapRole::Change => &[0, 1],
        };
        indices
            .iter()
            .filter_map(|&a| self.excluded_counts.get(&(configuration, a)))
            .fold((0, 0), |acc, c| (acc.0 + c.0, acc.1 + c.1))
    }

    /// (disagreeing, counted) conditions of some configurations in a cap.
    pub fn repeat_disagreement(
        &self,
        configurations: &BTreeSet<&str>,
        role: CapRole,
    ) -> (u32, u32) {
        let i = usize::from(role == CapRole::High);
        let mut out = (0, 0);
        for ((configuration, a, _, _), repeats) in &self.conditions {
            if *a != i || !configurations.contains(configuration) || repeats.len() < 2 {
                continue;
            }
            let mut outcomes = repeats.values();
            let first = outcomes.next().copied();
            out.0 += u32::from(outcomes.any(|&o| Some(o) != first));
            out.1 += 1;
        }
        out
    }

    /// The units of some configurations.
    fn units_of<'s>(
        &'s self,
        configurations: &'s BTreeSet<&str>,
    ) -> impl Iterator<Item = (&'s UnitKey<'a>, &'s UnitCells)> + 's {
        self.units
            .iter()
            .filter(move |((c, _), _)| configurations.contains(c))
    }

    /// The menu contrast of some configurations in each cap and its change, with
    /// family-cluster bootstraps.
    pub fn v_contrasts(
        &self,
        kind: &str,
        stratum: &str,
        configurations: &BTreeSet<&str>,
        settings: Resolved,
    ) -> Vec<ContrastRow> {
        let mut values: [Vec<(f64, &str)>; 3] = Default::default();
        let mut incomplete = [0u32; 3];
        for ((_, family), cells) in self.units_of(configurations) {
            let low = unit_v_contrast(&cells[0]);
            let high = unit_v_contrast(&cells[1]);
            for (i, v) in [low, high].into_iter().enumerate() {
                match v {
                    Some(v) => values[i].push((v, family)),
                    None => incomplete[i] += 1,
                }
            }
            match (low, high) {
                (Some(l), Some(h)) => values[2].push((h - l, family)),
                _ => incomplete[2] += 1,
            }
        }
        let bounds = self.change_bounds(configurations);
        [CapRole::Low, CapRole::High, CapRole::Change]
            .into_iter()
            .zip(values)
            .zip(incomplete)
            .map(|((role, values), units_incomplete)| {
                let draw_seed = stats::derive_seed(
                    settings.seed,
                    &[
                        kind,
                        stratum,
                        &self.caps.label(role),
                        CapStatistic::VContrast.name(),
                    ],
                );
                let (interval, n_clusters) = family_bootstrap(&values, settings.draws, draw_seed);
                ContrastRow {
                    role,
                    n_units: values.len() as u32,
                    units_incomplete,
                    n_clusters,
                    interval,
                    draw_seed,
                    bounds: if role == CapRole::Change {
                        bounds
                    } else {
                        None
                    },
                }
            })
            .collect()
    }

    /// The smallest and largest change of the menu contrast over every outcome of the
    /// excluded rows of some configurations (see the module doc); `None` when a unit
    /// still lacks an endpoint cell with every row put back.
    pub fn change_bounds(&self, configurations: &BTreeSet<&str>) -> Option<(f64, f64)> {
        let weights = Contrast::V.weights();
        let extreme = |maximise: bool| -> Option<f64> {
            let mut cells: BTreeMap<UnitKey<'a>, UnitCells> = self
                .units_of(configurations)
                .map(|(k, c)| (*k, *c))
                .collect();
            for e in &self.excluded {
                let (Some(cell), Some(unit)) = (e.endpoint, cells.get_mut(&e.unit)) else {
                    continue;
                };
                let cap_sign = if e.cap_index == 1 { 1.0 } else { -1.0 };
                let raises = weights[cell] * cap_sign > 0.0;
                unit[e.cap_index][cell].count += 1;
                unit[e.cap_index][cell].wins += u32::from(raises == maximise);
            }
            let changes: Vec<f64> = cells
                .values()
                .map(|c| Some(unit_v_contrast(&c[1])? - unit_v_contrast(&c[0])?))
                .collect::<Option<Vec<f64>>>()?;
            (!changes.is_empty()).then(|| changes.iter().sum::<f64>() / changes.len() as f64)
        };
        Some((extreme(false)?, extreme(true)?))
    }
}

/// A unit's menu contrast in one cap, in pp; `None` when an endpoint cell has no row.
fn unit_v_contrast(cells: &[Tally; N_ENDPOINTS]) -> Option<f64> {
    let weights = Contrast::V.weights();
    let mut total = 0.0;
    for (tally, w) in cells.iter().zip(weights) {
        if tally.count == 0 {
            return None;
        }
        total += w * f64::from(tally.wins) / f64::from(tally.count);
    }
    Some(100.0 * total)
}

/// The family-cluster bootstrap of unit values (each with its family): the interval
/// and the number of families.
pub fn family_bootstrap(values: &[(f64, &str)], draws: u32, draw_seed: u64) -> (Interval, u32) {
    let families: Vec<&str> = values.iter().map(|(_, f)| *f).collect();
    let (clusters, names) = stats::cluster_ids(&families);
    let unit_values: Vec<f64> = values.iter().map(|(v, _)| *v).collect();
    let ones = vec![1.0; values.len()];
    let totals = ClusterTotals::new(&unit_values, &ones, &clusters, names.len());
    (
        stats::cluster_bootstrap(&totals, draws, draw_seed),
        names.len() as u32,
    )
}

/// One bootstrapped menu contrast of a stratum.
#[derive(Debug, Clone, PartialEq)]
pub struct ContrastRow {
    /// Which cap, or the change.
    pub role: CapRole,
    /// Units averaged.
    pub n_units: u32,
    /// Units left out for lacking an endpoint cell.
    pub units_incomplete: u32,
    /// Families.
    pub n_clusters: u32,
    /// Estimate and interval.
    pub interval: Interval,
    /// The stream seed.
    pub draw_seed: u64,
    /// Either-outcome bounds (the change only).
    pub bounds: Option<(f64, f64)>,
}

/// Every row of one stratum: the menu contrast (two caps and the change), V = 128
/// truncation and repeat disagreement in each cap.
pub fn stratum_rows(
    kind: &str,
    data: &CapRows<'_>,
    stratum: &str,
    configurations: &BTreeSet<&str>,
    settings: Resolved,
) -> Vec<CapEstimate> {
    let excluded = |role: CapRole| {
        configurations
            .iter()
            .map(|c| data.excluded(c, role))
            .fold((0, 0), |acc, c| (acc.0 + c.0, acc.1 + c.1))
    };
    let n_configurations = configurations.len() as u32;
    let mut out = Vec::new();
    let share = |role: CapRole, statistic: CapStatistic, (events, total): (u32, u32)| {
        let ex = excluded(role);
        CapEstimate {
            stratum: stratum.to_string(),
            arm: data.caps.label(role),
            arm_role: role,
            completion_cap: data.caps.cap(role),
            statistic,
            n_configurations,
            n_units: None,
            units_incomplete: None,
            n_clusters: None,
            n_events: Some(events),
            n_total: Some(total),
            estimate_pp: (total > 0).then(|| 100.0 * f64::from(events) / f64::from(total)),
            ci_low_pp: None,
            ci_high_pp: None,
            p_value: None,
            excluded_provider_failure: ex.0,
            excluded_missing_usage: ex.1,
            bound_low_pp: None,
            bound_high_pp: None,
            draws: None,
            seed: settings.seed,
            draw_seed: None,
        }
    };
    if stratum != ALL {
        for c in data.v_contrasts(kind, stratum, configurations, settings) {
            let ex = excluded(c.role);
            let defined = c.n_units > 0;
            out.push(CapEstimate {
                stratum: stratum.to_string(),
                arm: data.caps.label(c.role),
                arm_role: c.role,
                completion_cap: data.caps.cap(c.role),
                statistic: CapStatistic::VContrast,
                n_configurations,
                n_units: Some(c.n_units),
                units_incomplete: Some(c.units_incomplete),
                n_clusters: Some(c.n_clusters),
                n_events: None,
                n_total: None,
                estimate_pp: defined.then_some(c.interval.estimate),
                ci_low_pp: defined.then_some(c.interval.low),
                ci_high_pp: defined.then_some(c.interval.high),
                p_value: defined.then_some(c.interval.p_value),
                excluded_provider_failure: ex.0,
                excluded_missing_usage: ex.1,
                bound_low_pp: c.bounds.map(|b| b.0),
                bound_high_pp: c.bounds.map(|b| b.1),
                draws: Some(settings.draws),
                seed: settings.seed,
                draw_seed: Some(c.draw_seed),
            });
        }
    }
    for role in CapRole::CAPS {
        let truncation = configurations
            .iter()
            .map(|c| data.truncation(c, role))
            .fold((0, 0), |acc, t| (acc.0 + t.1, acc.1 + t.0));
        out.push(share(role, CapStatistic::TruncatedShareV128, truncation));
    }
    for role in CapRole::CAPS {
        out.push(share(
            role,
            CapStatistic::RepeatDisagreement,
            data.repeat_disagreement(configurations, role),
        ));
    }
    out
}

/// Whether a configuration truncates at most `ceiling_pct` % of its kept V = 128
/// episodes at the high cap (decided on the integer counts; no episode fails it).
pub fn passes_ceiling(data: &CapRows<'_>, configuration: &str, ceiling_pct: f64) -> bool {
    let (episodes, truncated) = data.truncation(configuration, CapRole::High);
    episodes > 0 && 100.0 * f64::from(truncated) <= ceiling_pct * f64::from(episodes)
}

/// `truncated / episodes`, none without an episode (the `truncated_share_v128`
/// column of the configurations tables).
fn truncated_share(episodes: u32, truncated: u32) -> Option<f64> {
    (episodes > 0).then(|| f64::from(truncated) / f64::from(episodes))
}

/// The rows of `configuration` in its study's `_configurations` table, low cap first:
/// `membership` its row of the strata table, `check` its manipulation check (where the
/// study applies one), `pooled` whether its units enter its stratum's pooled estimate.
pub fn configuration_rows(
    data: &CapRows<'_>,
    configuration: &str,
    membership: Option<&Membership>,
    check: Option<bool>,
    pooled: bool,
) -> [CapConfiguration; 2] {
    CapRole::CAPS.map(|role| {
        let (episodes_v128, truncated_v128) = data.truncation(configuration, role);
        let (excluded_provider_failure, excluded_missing_usage) =
            data.excluded(configuration, role);
        CapConfiguration {
            configuration: configuration.to_string(),
            organization: data
                .organizations
                .get(configuration)
                .copied()
                .unwrap_or_default()
                .to_string(),
            stratum: membership.and_then(|m| m.stratum.clone()),
            selected: membership.is_some_and(|m| m.selected),
            arm: data.caps.label(role),
            arm_role: role,
            completion_cap: data.caps.cap(role),
            episodes_v128,
            truncated_v128,
            truncated_share_v128: truncated_share(episodes_v128, truncated_v128),
            excluded_provider_failure,
            excluded_missing_usage,
            manipulation_check_passed: check,
            in_pooled_estimate: pooled,
        }
    })
}

/// Every selected configuration of the strata table must have rows.
pub fn check_selected_present(
    kind: &'static str,
    strata: &BTreeMap<String, Membership>,
    data: &CapRows<'_>,
) -> Result<(), AnalysisError> {
    let absent: Vec<&str> = strata
        .iter()
        .filter(|(c, m)| {
            m.pooled_stratum().is_some() && !data.organizations.contains_key(c.as_str())
        })
        .map(|(c, _)| c.as_str())
        .collect();
    if absent.is_empty() {
        return Ok(());
    }
    Err(AnalysisError::MissingData {
        analysis: kind,
        detail: format!(
            "the strata table selects configurations with no routed capacity episodes: {}",
            absent.join(", ")
        ),
    })
}

#[cfg(test)]
pub(crate) mod testing {
    //! Episodes and strata tables for the cap studies' tests.
    use super::*;
    use crate::common::design::testing::unit;
    use tbb_tables::TableBuilder;

    /// Every capacity cell of `families` for a configuration at a cap and repeat,
    /// success decided by `f(family, cell index)`.
    pub fn rows_at_cap(
        configuration: &str,
        families: &[&str],
        cap: u32,
        repeat: u32,
        f: impl Fn(&str, usize) -> bool,
    ) -> Vec<EpisodeRow> {
        let mut out = Vec::new();
        for family in families {
            for mut r in unit(configuration, "org", family, "i", |i| f(family, i)) {
                r.completion_cap = cap;
                r.repeat = repeat;
                out.push(r);
            }
        }
        out
    }

    /// A strata table: (configuration, stratum, selected).
    pub fn strata(rows: &[(&str, Option<&str>, bool)]) -> RecordBatch {
        TableBuilder::new()
            .text("configuration", rows.iter().map(|r| r.0))
            .text_opt("stratum", rows.iter().map(|r| r.1))
            .bool("selected", rows.iter().map(|r| r.2))
            .build("strata")
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{rows_at_cap, strata};
    use super::*;
    use tbb_tables::levels::{Encoding, Workflow};
    use tbb_tables::TableBuilder;

    const FAMILIES: [&str; 3] = ["f1", "f2", "f3"];

    #[test]
    fn exactly_two_caps_are_required() {
        let rows = rows_at_cap("c", &FAMILIES, 1024, 0, |_, _| true);
        let err = CapRows::new("cap_sweep", &rows)
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().unwrap_or("").contains("hold 1 (1024)"),
            "{err:?}"
        );
        let mut three = rows.clone();
        three.extend(rows_at_cap("c", &FAMILIES, 2048, 0, |_, _| true));
        three.extend(rows_at_cap("c", &FAMILIES, 4096, 0, |_, _| true));
        assert!(CapRows::new("cap_sweep", &three).is_err());
        let mut two = rows;
        two.extend(rows_at_cap("c", &FAMILIES, 4096, 0, |_, _| true));
        let data = CapRows::new("cap_sweep", &two).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            data.caps,
            Caps {
                low: 1024,
                high: 4096
            }
        );
    }

    #[test]
    fn repeat_disagreement_by_hand() {
        // Configuration c, 3 families × 12 cells = 36 conditions per cap, two repeats.
        // Low cap: repeat 1 flips f1's cells 0, 1, 2 and f2's cell 11: 4 of 36 disagree.
        // High cap: identical repeats, except f3 cell 4 has only one repeat (not
        // counted): 0 of 35.
        let mut rows = rows_at_cap("c", &FAMILIES, 1024, 0, |_, _| true);
        rows.extend(rows_at_cap("c", &FAMILIES, 1024, 1, |f, i| {
            !((f == "f1" && i < 3) || (f == "f2" && i == 11))
        }));
        rows.extend(rows_at_cap("c", &FAMILIES, 4096, 0, |_, i| i % 2 == 0));
        let mut again = rows_at_cap("c", &FAMILIES, 4096, 1, |_, i| i % 2 == 0);
        again.retain(|r| {
            !(r.family == "f3" && r.v == 128 && r.w == Workflow::Low && r.d == Encoding::Raw)
        });
        rows.extend(again);
        let data = CapRows::new("t", &rows).unwrap_or_else(|e| panic!("{e}"));
        let configs = BTreeSet::from(["c"]);
        assert_eq!(data.repeat_disagreement(&configs, CapRole::Low), (4, 36));
        assert_eq!(data.repeat_disagreement(&configs, CapRole::High), (0, 35));
        // An excluded repeat leaves its condition with one kept repeat: not counted.
        for r in rows
            .iter_mut()
            .filter(|r| r.completion_cap == 1024 && r.repeat == 1 && r.family == "f1" && r.v == 8)
        {
            if r.w == Workflow::Low && r.d == Encoding::Raw {
                r.infra_failure = true;
            }
        }
        let data = CapRows::new("t", &rows).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(data.repeat_disagreement(&configs, CapRole::Low), (3, 35));
    }

    #[test]
    fn either_outcome_bounds_by_hand_and_by_enumeration() {
        // One configuration, one family, one repeat, every cell a success in both
        // caps, except three rows excluded: (128, low, raw) and (8, high, raw) in the
        // high cap, (8, low, linked) in the low cap.
        let mut rows = rows_at_cap("c", &["f"], 1024, 0, |_, _| true);
        rows.extend(rows_at_cap("c", &["f"], 4096, 0, |_, _| true));
        let pick = |r: &EpisodeRow, cap: u32, v: u32, w: &str, d: &str| {
            r.completion_cap == cap && r.v == v && r.w.name() == w && r.d.name() == d
        };
        for r in &mut rows {
            if pick(r, 4096, 128, "low", "raw")
                || pick(r, 4096, 8, "high", "raw")
                || pick(r, 1024, 8, "low", "linked")
            {
                r.infra_failure = true;
                r.infra_error = Some(InfraCause::ServerError);
            }
        }
        let data = CapRows::new("t", &rows).unwrap_or_else(|e| panic!("{e}"));
        let configs = BTreeSet::from(["c"]);
        // By hand: each excluded row is its cell's only row, so its outcome x is its
        // cell's mean. With every kept cell at 1, the high cap's contrast is
        // 25 (x₁₂₈ₗᵣ − x₈ₕᵣ) pp and the low cap's 25 (1 − x₈ₗₗ) pp, so the change is
        // 25 (x₁₂₈ₗᵣ − x₈ₕᵣ + x₈ₗₗ − 1) pp: from −50 (0, 1, 0) to +25 (1, 0, 1).
        assert_eq!(data.change_bounds(&configs), Some((-50.0, 25.0)));
        // With the rows excluded the unit lacks three endpoint cells: it is left out.
        let rows_out = stratum_rows("t", &data, "B", &configs, Resolved::of(Some(10), Some(1)));
        let change = rows_out
            .iter()
            .find(|r| r.statistic == CapStatistic::VContrast && r.arm_role == CapRole::Change)
            .unwrap_or_else(|| panic!("no change row"));
        assert_eq!(
            (change.n_units, change.units_incomplete, change.estimate_pp),
            (Some(0), Some(1), None)
        );
        assert_eq!(
            (change.bound_low_pp, change.bound_high_pp),
            (Some(-50.0), Some(25.0))
        );
        assert_eq!(
            (
                change.excluded_provider_failure,
                change.excluded_missing_usage
            ),
            (3, 0)
        );

        // By enumeration of the 2^3 outcomes: the same extremes.
        let excluded: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].infra_failure).collect();
        let mut seen = Vec::new();
        for mask in 0u32..(1 << excluded.len()) {
            let mut filled = rows.clone();
            for (k, &i) in excluded.iter().enumerate() {
                filled[i].infra_failure = false;
                filled[i].infra_error = None;
                filled[i].vts = mask >> k & 1 == 1;
            }
            let data = CapRows::new("t", &filled).unwrap_or_else(|e| panic!("{e}"));
            let r = stratum_rows("t", &data, "B", &configs, Resolved::of(Some(10), Some(1)));
            let change = r
                .iter()
                .find(|r| r.statistic == CapStatistic::VContrast && r.arm_role == CapRole::Change)
                .and_then(|r| r.estimate_pp)
                .unwrap_or(f64::NAN);
            seen.push(change);
        }
        let lo = seen.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = seen.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!((lo, hi), (-50.0, 25.0));
    }

    #[test]
    fn bounds_with_several_rows_per_cell_match_the_enumeration() {
        // Two repeats, two families; excluded rows share cells with kept ones, so an
        // outcome moves its cell mean by 1/2, not 1.
        let mut rows = Vec::new();
        for (cap, repeat) in [(1024, 0), (1024, 1), (4096, 0), (4096, 1)] {
            rows.extend(rows_at_cap("c", &["f1", "f2"], cap, repeat, |f, i| {
                !(i + repeat as usize + f.len()).is_multiple_of(3)
            }));
        }
        let marks = [3usize, 17, 40, 77, 90];
        for &i in &marks {
            rows[i].infra_failure = true;
            rows[i].infra_error = Some(InfraCause::BadUsage);
        }
        let configs = BTreeSet::from(["c"]);
        let data = CapRows::new("t", &rows).unwrap_or_else(|e| panic!("{e}"));
        let bounds = data.change_bounds(&configs).unwrap_or((f64::NAN, f64::NAN));
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for mask in 0u32..(1 << marks.len()) {
            let mut filled = rows.clone();
            for (k, &i) in marks.iter().enumerate() {
                filled[i].infra_failure = false;
                filled[i].vts = mask >> k & 1 == 1;
            }
            let data = CapRows::new("t", &filled).unwrap_or_else(|e| panic!("{e}"));
            let v = data.v_contrasts("t", "B", &configs, Resolved::of(Some(1), Some(1)))[2]
                .interval
                .estimate;
            lo = lo.min(v);
            hi = hi.max(v);
        }
        assert!(
            (bounds.0 - lo).abs() < 1e-9 && (bounds.1 - hi).abs() < 1e-9,
            "{bounds:?} vs ({lo}, {hi})"
        );
        assert_eq!(data.excluded("c", CapRole::Change), (0, 5));
    }

    #[test]
    fn the_strata_table_is_checked() {
        let tables = BTreeMap::from([(
            "s".to_string(),
            strata(&[
                ("a", Some("B"), true),
                ("b", None, false),
                ("c", Some("N"), false),
            ]),
        )]);
        let m = read_strata("t", "s", &tables, &["B", "N"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m["a"].pooled_stratum(), Some("B"));
        assert_eq!(m["b"].pooled_stratum(), None);
        assert_eq!(m["c"].pooled_stratum(), None, "not selected");
        assert!(matches!(
            read_strata("t", "s", &tables, &["N"]),
            Err(AnalysisError::InputTable { .. })
        ));
        let twice = BTreeMap::from([(
            "s".to_string(),
            strata(&[("a", Some("B"), true), ("a", Some("B"), true)]),
        )]);
        assert!(read_strata("t", "s", &twice, &["B"]).is_err());
        assert!(read_strata("t", "missing", &tables, &["B"]).is_err());
    }

    /// The strata analyses write more columns than the cap studies read, in their own
    /// order; the three read are found by name, and a null `selected` is "no".
    #[test]
    fn a_whole_strata_table_is_read_for_its_three_columns() {
        let whole = TableBuilder::new()
            .text("configuration", ["a", "b", "c"])
            .u32("upstream_episodes", [144, 144, 144])
            .u32("upstream_truncated", [72, 0, 0])
            .f64_opt("truncated_share", [Some(0.5), Some(0.0), None])
            .f64_opt("v_effect_pp", [Some(-40.0), Some(1.0), None])
            .text_opt("stratum", [Some("B"), Some("N"), None])
            .u32_opt("candidate_rank", [Some(1), Some(1), None])
            .bool_opt("selected", [Some(true), None, Some(false)])
            .bool("in_study", [true, true, false])
            .build("sweep_strata")
            .unwrap_or_else(|e| panic!("{e}"));
        let tables = BTreeMap::from([("sweep_strata".to_string(), whole)]);
        let m = read_strata("t", "sweep_strata", &tables, &["B", "M", "N"])
            .unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(&str, Option<&str>, bool)> = m
            .iter()
            .map(|(c, m)| (c.as_str(), m.stratum.as_deref(), m.selected))
            .collect();
        assert_eq!(
            got,
            [
                ("a", Some("B"), true),
                ("b", Some("N"), false),
                ("c", None, false)
            ]
        );
    }
}
