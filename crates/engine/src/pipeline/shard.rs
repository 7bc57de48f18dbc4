//! Shards of an apply: `tbb apply MANIFEST --locked --shard i/n` runs the episodes of
//! the conditions that fall to shard `i` of `n` (with the compile and grade nodes they
//! need) and publishes nothing; a final `tbb apply --locked` merges and publishes.
//!
//! Owns: what a shard is ([`ShardSpec`]: `i/n`, or `auto` from the launcher's
//! environment), the partition of a study's conditions among shards ([`deal`]), and
//! each shard's share of a route's concurrency ([`Shard`], the scheduler's
//! [`Filter`] for a shard).
//!
//! Numbering: shards count from 0 (`0/4` … `3/4`), as Kubernetes' `JOB_COMPLETION_INDEX`
//! does. A Slurm array may start at any index: `auto` takes
//! `SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN` of `SLURM_ARRAY_TASK_COUNT` shards, and
//! refuses an array that is not one contiguous range with step 1 (`--array=1,3,7` or
//! `--array=0-9:2`), whose tasks could not be numbered that way.
//!
//! The partition. A condition is an execute node's identity without its arm and its cap
//! (`cfg=…, family=…, v=…, w=…, d=…, r=…, rep=…`, and `block=…`): every arm of a
//! condition falls to the same shard, so an ordered (`sequential`, `counterbalanced`)
//! schedule keeps its order inside one process. Its place is the blake3 of that string —
//! names of configurations, families and levels, never node indices or key material, so
//! it does not change with the code's version or the manifest's order. Each route's
//! conditions, sorted by that hash, are dealt round-robin to the route's shards: every
//! shard gets its route's conditions within one of each other (a plain hash split gave
//! the slowest shard 1.6× its share of one route).
//!
//! The trade-off of dealing: round-robin in hash order cannot also keep every
//! condition in place when conditions are added. A new family's conditions take ranks
//! among the old ones, and every old condition of that route ranked after the first
//! new one may move to another shard. What holds (and is tested): the partition is a
//! function of the set of each route's conditions alone (not of the manifest's order,
//! the code, or other routes: a family added under other configurations moves nothing),
//! and conditions ranked before the first new one keep their shard. A moved condition
//! costs nothing once committed: the cache is keyed by content, so whichever shard it
//! falls to next reuses it. Moves only matter between shards of one run, and every
//! shard runs the same locked study.
//!
//! Provider limits are global. A route's `concurrency` is the total across all shards:
//! a route is given to at most `concurrency` shards (`min(concurrency, n)`, starting at
//! a shard picked by the route's hash so small routes spread over shards), and the
//! route's slots are divided among them, floor or ceiling, each at least one, summing to
//! `concurrency`. With `n` shards at once, a route never has more episodes — each has
//! one request in flight at a time — in flight than its `concurrency`. The simulated
//! panel's routes have no provider behind them: they are dealt to every shard, each with
//! the route's full slots.
//!
//! Never: reads the environment itself ([`ShardSpec::resolve`] is given a lookup),
//! runs, reads or writes the cache, or decides what is stale.

use std::collections::{BTreeMap, HashSet};

use petgraph::graph::NodeIndex;
use thiserror::Error;

use super::dag::{Dag, Work};
use super::identity::Fields;
use super::scheduler::{self, Filter};
use tbb_provider::Configuration;

/// One shard of `count`: `index` in `0..count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// From 0.
    pub index: u32,
    /// At least 1.
    pub count: u32,
}

impl std::fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Kubernetes Indexed Job: the pod's index, from 0.
pub const KUBERNETES_INDEX: &str = "JOB_COMPLETION_INDEX";
/// Slurm array: this task's id.
pub const SLURM_ID: &str = "SLURM_ARRAY_TASK_ID";
/// Slurm array: how many tasks.
pub const SLURM_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";
/// Slurm array: the first task's id.
pub const SLURM_MIN: &str = "SLURM_ARRAY_TASK_MIN";
/// Slurm array: the last task's id.
pub const SLURM_MAX: &str = "SLURM_ARRAY_TASK_MAX";
/// Slurm array: the step between ids.
pub const SLURM_STEP: &str = "SLURM_ARRAY_TASK_STEP";

/// A `--shard` that names no shard, or a shard run that cannot run.
#[derive(Debug, Error, miette::Diagnostic, PartialEq, Eq)]
pub enum ShardError {
    /// Not `INDEX/COUNT` nor `auto`.
    #[error("`--shard {given}` is not a shard: expected INDEX/COUNT or `auto`")]
    #[diagnostic(
        code(tbb::shard::syntax),
        help("shards count from 0: the four shards of a study are --shard 0/4 … --shard 3/4; under a Kubernetes Indexed Job or a Slurm array, --shard auto reads the index from the environment")
    )]
    Syntax {
        /// What was given.
        given: String,
    },
    /// `i/0`.
    #[error("`--shard {given}` splits the study into no shards")]
    #[diagnostic(
        code(tbb::shard::none),
        help("COUNT is the number of shards, at least 1: e.g. --shard 0/4")
    )]
    NoShards {
        /// What was given.
        given: String,
    },
    /// `i/n` with `i >= n`.
    #[error("shard {index} does not exist among {count} shards: shards count from 0, so the last is {last}/{count}", last = .count.saturating_sub(1))]
    #[diagnostic(
        code(tbb::shard::out_of_range),
        help("give INDEX from 0 to COUNT-1 (a 1-based launcher index needs 1 taken off; --shard auto does it for Slurm arrays)")
    )]
    OutOfRange {
        /// The index given.
        index: u32,
        /// The count given.
        count: u32,
    },
    /// `--shard` without `--locked`.
    #[error("--shard needs --locked")]
    #[diagnostic(
        code(tbb::shard::unlocked),
        help("every shard must run the same resolved study (the same families, prompts, configurations and prices), and only the lockfile pins it: commit lockfiles/<study>.lock with the manifest and pass --locked")
    )]
    Unlocked,
    /// `--shards` with `i/n` and another count.
    #[error("--shard {spec} and --shards {shards} disagree on the number of shards")]
    #[diagnostic(
        code(tbb::shard::count_disagrees),
        help("--shards goes with --shard auto; with --shard INDEX/COUNT, drop it")
    )]
    CountDisagrees {
        /// The shard given.
        spec: ShardSpec,
        /// `--shards`.
        shards: u32,
    },
    /// `auto` outside a launcher.
    #[error("--shard auto found no launcher: neither {KUBERNETES_INDEX} (a Kubernetes Indexed Job) nor {SLURM_ID} (a Slurm array) is set")]
    #[diagnostic(
        code(tbb::shard::no_launcher),
        help("run it as a pod of an Indexed Job (with --shards N) or a task of a Slurm array, or name the shard: --shard INDEX/COUNT")
    )]
    NoLauncher,
    /// Both launchers' variables are set.
    #[error("--shard auto found both {KUBERNETES_INDEX} (Kubernetes) and {SLURM_ID} (Slurm) set, and cannot tell which numbers the shards")]
    #[diagnostic(
        code(tbb::shard::two_launchers),
        help("unset the one that does not belong to this job, or name the shard: --shard INDEX/COUNT")
    )]
    TwoLaunchers,
    /// Kubernetes gives the index, not the count.
    #[error(
        "{KUBERNETES_INDEX} is set (a Kubernetes Indexed Job) but the number of shards is not"
    )]
    #[diagnostic(
        code(tbb::shard::count_missing),
        help("pass --shards N with N the Job's spec.completions (Kubernetes does not put it in the pod's environment)")
    )]
    CountMissing,
    /// A launcher variable that is missing or not a number.
    #[error("{variable} is {}: --shard auto needs {expected}", .value.as_deref().map_or_else(|| "not set".to_string(), |v| format!("`{v}`")))]
    #[diagnostic(
        code(tbb::shard::bad_variable),
        help("the launcher sets it; when running by hand, name the shard instead: --shard INDEX/COUNT")
    )]
    BadVariable {
        /// The variable.
        variable: &'static str,
        /// Its value, when set.
        value: Option<String>,
        /// What it must be.
        expected: &'static str,
    },
    /// A Slurm array whose ids are not one contiguous range.
    #[error("the Slurm array is not one contiguous range of ids ({detail}): its tasks cannot be numbered as shards 0 to {SLURM_COUNT}-1")]
    #[diagnostic(
        code(tbb::shard::slurm_array),
        help("submit it as --array=MIN-MAX (step 1, e.g. --array=0-15), or name the shard: --shard INDEX/COUNT")
    )]
    SlurmArray {
        /// What does not fit.
        detail: String,
    },
}

impl ShardSpec {
    /// `INDEX/COUNT`, from 0: `0/4` … `3/4`.
    pub fn parse(given: &str) -> Result<ShardSpec, ShardError> {
        let syntax = || ShardError::Syntax {
            given: given.to_string(),
        };
        let (index, count) = given.trim().split_once('/').ok_or_else(syntax)?;
        let number = |s: &str| s.trim().parse::<u32>().map_err(|_| syntax());
        let (index, count) = (number(index)?, number(count)?);
        ShardSpec::new(index, count, given)
    }

    fn new(index: u32, count: u32, given: &str) -> Result<ShardSpec, ShardError> {
        if count == 0 {
            return Err(ShardError::NoShards {
                given: given.to_string(),
            });
        }
        if index >= count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(ShardSpec { index, count })
    }

    /// `--shard GIVEN [--shards SHARDS]`: `auto` reads the launcher's variables through
    /// `env`, anything else is `INDEX/COUNT`.
    pub fn resolve(
        given: &str,
        shards: Option<u32>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ShardSpec, ShardError> {
        if given.trim() != "auto" {
            let spec = ShardSpec::parse(given)?;
            return match shards {
                Some(n) if n != spec.count => Err(ShardError::CountDisagrees { spec, shards: n }),
                _ => Ok(spec),
            };
        }
        match (env(KUBERNETES_INDEX), env(SLURM_ID)) {
            (Some(_), Some(_)) => Err(ShardError::TwoLaunchers),
            (None, None) => Err(ShardError::NoLauncher),
            (Some(index), None) => {
                let index = number(KUBERNETES_INDEX, Some(index), "a number from 0")?;
                let count = shards.ok_or(ShardError::CountMissing)?;
                ShardSpec::new(index, count, &format!("{index}/{count}"))
            }
            (None, Some(id)) => slurm(id, shards, env),
        }
    }
}

/// A launcher variable as a number.
fn number(
    variable: &'static str,
    value: Option<String>,
    expected: &'static str,
) -> Result<u32, ShardError> {
    value
        .as_deref()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .ok_or(ShardError::BadVariable {
            variable,
            value,
            expected,
        })
}

/// A Slurm array task's shard: its id less the array's first id, of the array's count.
fn slurm(
    id: String,
    shards: Option<u32>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ShardSpec, ShardError> {
    let id = number(SLURM_ID, Some(id), "a number")?;
    let count = number(SLURM_COUNT, env(SLURM_COUNT), "the array's task count")?;
    let min = number(SLURM_MIN, env(SLURM_MIN), "the array's first task id")?;
    if let Some(step) = env(SLURM_STEP) {
        if number(SLURM_STEP, Some(step), "a number")? != 1 {
            return Err(ShardError::SlurmArray {
                detail: format!("{SLURM_STEP} is not 1"),
            });
        }
    }
    if let Some(max) = env(SLURM_MAX) {
        let max = number(SLURM_MAX, Some(max), "the array's last task id")?;
        if u64::from(max) + 1 != u64::from(min) + u64::from(count) {
            return Err(ShardError::SlurmArray {
                detail: format!("ids {min} to {max} are not {count} tasks"),
            });
        }
    }
    let index = id.checked_sub(min).ok_or(ShardError::SlurmArray {
        detail: format!("{SLURM_ID} {id} is below {SLURM_MIN} {min}"),
    })?;
    if let Some(n) = shards.filter(|&n| n != count) {
        return Err(ShardError::CountDisagrees {
            spec: ShardSpec { index, count },
            shards: n,
        });
    }
    ShardSpec::new(index, count, &format!("{index}/{count}"))
}

/// A route as the partition sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Its name (`Configuration::route`): where its rotation starts.
    pub name: String,
    /// Its `concurrency` (the scheduler's slots of the whole route).
    pub slots: usize,
    /// Whether a provider's limit stands behind it (a simulated route has none).
    pub limited: bool,
}

impl Route {
    /// The shards this route's conditions are dealt to, in dealing order: at most its
    /// slots of them when limited, starting at a shard picked by its name's hash.
    pub fn shards(&self, count: u32) -> Vec<u32> {
        let taken = if self.limited {
            (self.slots.max(1) as u64).min(u64::from(count)) as u32
        } else {
            count
        };
        let start = (hash(&format!("route\0{}", self.name)) % u64::from(count)) as u32;
        (0..taken).map(|k| (start + k) % count).collect()
    }

    /// Shard `index`'s slots of this route: its floor or ceiling share of the route's
    /// slots when limited (0 for a shard the route is not given to), the route's slots
    /// when not.
    pub fn share(&self, spec: ShardSpec) -> usize {
        if !self.limited {
            return self.slots;
        }
        let shards = self.shards(spec.count);
        match shards.iter().position(|&s| s == spec.index) {
            None => 0,
            Some(place) => {
                let m = shards.len();
                self.slots / m + usize::from(place < self.slots % m)
            }
        }
    }
}

/// The place of a string in the partition: the first 8 bytes of its blake3, with a
/// domain prefix so that no other hash of tbb's coincides with it.
fn hash(text: &str) -> u64 {
    let digest = blake3::hash(format!("tbb shard/1\0{text}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// Deals `conditions` (identity, route index) to `count` shards: each route's, in
/// order of their hash, round-robin over [`Route::shards`]. Returns each condition's
/// shard, in the order given.
pub fn deal(conditions: &[(String, usize)], routes: &[Route], count: u32) -> Vec<u32> {
    let mut by_route: BTreeMap<usize, Vec<(u64, &str, usize)>> = BTreeMap::new();
    for (place, (identity, route)) in conditions.iter().enumerate() {
        by_route
            .entry(*route)
            .or_default()
            .push((hash(identity), identity, place));
    }
    let mut shard_of = vec![0; conditions.len()];
    for (route, mut members) in by_route {
        // The identity breaks a tie of hashes, so the order never depends on the given one.
        members.sort_unstable();
        let shards = routes.get(route).map_or_else(
            || Route {
                name: String::new(),
                slots: 1,
                limited: false,
            },
            Route::clone,
        );
        let shards = shards.shards(count);
        for (rank, (_, _, place)) in members.into_iter().enumerate() {
            shard_of[place] = shards[rank % shards.len()];
        }
    }
    shard_of
}

/// An execute node's condition: its identity without its arm and its cap.
pub fn condition(fields: &Fields) -> String {
    fields
        .iter()
        .filter(|(k, _)| !matches!(*k, "arm" | "cap"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The routes of `configs` as the scheduler numbers them, and each configuration's.
pub fn routes(configs: &[Configuration]) -> (Vec<usize>, Vec<Route>) {
    let (of_config, slots) = scheduler::routes(configs);
    let routes = slots
        .iter()
        .enumerate()
        .map(|(r, &slots)| {
            let first = of_config
                .iter()
                .position(|&c| c == r)
                .and_then(|c| configs.get(c));
            Route {
                name: first.map(Configuration::route).unwrap_or_default(),
                slots,
                limited: first.is_some_and(|c| !c.wall_time_is_modelled()),
            }
        })
        .collect();
    (of_config, routes)
}

/// One shard of a study: the scheduler's [`Filter`] that admits the execute nodes of
/// its conditions, with its share of each route's slots, and publishes nothing.
#[derive(Debug, Clone)]
pub struct Shard {
    /// Which shard.
    pub spec: ShardSpec,
    executes: HashSet<NodeIndex>,
    routes: Vec<Route>,
}

impl Shard {
    /// Shard `spec` of the study of `dag` over `configs` (the manifest's).
    pub fn new(dag: &Dag, configs: &[Configuration], spec: ShardSpec) -> Shard {
        let (route_of_config, routes) = routes(configs);
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        let mut conditions: Vec<(String, usize)> = Vec::new();
        let mut of_node: Vec<(NodeIndex, usize)> = Vec::new();
        for (i, node) in dag.nodes() {
            let (Work::Execute { config, .. } | Work::Scenario { config, .. }) = node.work else {
                continue;
            };
            let identity = condition(&node.fields);
            let c = *index.entry(identity.clone()).or_insert_with(|| {
                let route = route_of_config.get(config).copied().unwrap_or(0);
                conditions.push((identity, route));
                conditions.len() - 1
            });
            of_node.push((i, c));
        }
        let dealt = deal(&conditions, &routes, spec.count);
        let executes = of_node
            .into_iter()
            .filter(|&(_, c)| dealt[c] == spec.index)
            .map(|(i, _)| i)
            .collect();
        Shard {
            spec,
            executes,
            routes,
        }
    }

    /// The execute nodes of this shard's conditions.
    pub fn episodes(&self) -> &HashSet<NodeIndex> {
        &self.executes
    }
}

impl Filter for Shard {
    fn executes(&self, _: &Dag, execute: NodeIndex) -> bool {
        self.executes.contains(&execute)
    }

    fn publishes(&self) -> bool {
        false
    }

    fn slots(&self, slots: &[usize]) -> Vec<usize> {
        slots
            .iter()
            .enumerate()
            .map(|(r, &whole)| match self.routes.get(r) {
                Some(route) => Route {
                    slots: whole,
                    ..route.clone()
                }
                .share(self.spec),
                None => whole,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
