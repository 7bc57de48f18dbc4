//! Applying a plan: the stages of a run in order — compile the variants it needs, run
//! its episodes, regrade cached transcripts, assemble the rows, run the analyses and
//! publish the tables — wired to the [`super::scheduler`] (which nodes this run takes,
//! which episode starts next), the [`super::committer`] (what is committed when) and a
//! [`super::reporter::Reporter`] (which renders the [`Event`]s each stage emits).
//!
//! Commit order is what makes a killed run resumable (the committer's doc): anything
//! not committed simply reruns next time, and because every episode is seeded from its
//! own key, the rerun gives the same result.
//!
//! Never: decides staleness (the plan does), prints (its caller's reporter renders the
//! events; the caller gets a [`Summary`]), or lets one failed node stop the others:
//! failures are collected ([`NodeFailure`], each with its cause), their dependents
//! failed as upstream failures naming them, and reported at the end. When a table node
//! that publishes report files fails, the files it published before are removed: a
//! report must never disagree with the tables beside it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use petgraph::graph::NodeIndex;
use serde::Serialize;
use tokio::task::JoinSet;

use super::cache::{Cache, CacheError};
use super::committer::Committer;
use super::dag::{Dag, ExecuteSpec, Node, Publish, Work};
use super::episode_claims::{ClaimSettings, EpisodeClaims, Taken};
use super::events::{Event, Stage};
use super::failure::{Cause, NodeFailure};
use super::graded_rows::GradedRows;
use super::key::NodeKind;
use super::lease::Lease;
use super::plan::{Estimate, Plan};
use super::publish::{publish, Outcomes};
use super::reporter::{Reporter, Silent};
use super::request_spill::RequestRows;
use super::scheduler::{self, Everything, Filter, Scheduler};
use super::served_prompts;
use super::verdicts::{plural, Verdicts};
use super::{CompilePayload, ExecutePayload, PipelineError, Study, TablePayload};
use tbb_analysis::Input;
use tbb_core::compile::{compile, Variant};
use tbb_core::grade::grade_with_budget;
use tbb_core::grade::trace::InfraCause;
use tbb_harness::transcript::BlobStore;
use tbb_harness::{run_episode, Episode, EpisodeSpec};
use tbb_provider::retry::RouteLimits;
use tbb_provider::{Configuration, Provider};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::{requests, Name};

/// How to apply.
#[derive(Clone)]
pub struct Options {
    /// Set (by a Ctrl-C handler) to stop starting nodes, drain and commit.
    pub interrupt: Arc<AtomicBool>,
    /// What renders the run's progress ([`Silent`] by default).
    pub reporter: Arc<dyn Reporter>,
    /// Which of the plan's nodes this run takes ([`Everything`] by default; a shard
    /// takes its conditions).
    pub filter: Arc<dyn Filter>,
    /// Consecutive infrastructure failures that stop a route, for every route
    /// (`--max-infra-failures`); `None`: each route's catalogue entry, or the default.
    pub max_infra_failures: Option<u32>,
    /// Who this apply is, and how long its claims live, when its cache is shared
    /// through a store: its live episodes then take claims
    /// ([`super::episode_claims`]) and its publishing takes the store's lease
    /// ([`super::lease`]). `None`: neither (a local cache has its outputs lock).
    pub claims: Option<ClaimSettings>,
    /// How long to wait for the publishing lease (`--lock-timeout`; `None`: wait).
    pub lease_timeout: Option<std::time::Duration>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            interrupt: Arc::default(),
            reporter: Arc::new(Silent),
            filter: Arc::new(Everything),
            max_infra_failures: None,
            claims: None,
            lease_timeout: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("interrupt", &self.interrupt)
            .finish_non_exhaustive()
    }
}

/// What an apply did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Nodes run and committed.
    pub run: usize,
    /// Nodes that failed (not committed).
    pub failed: usize,
    /// Nodes reused from the cache.
    pub cached: usize,
    /// Of the episodes planned to run, those another process sharing the cache ran
    /// (its claims were held when this apply came to them): reused, not paid twice.
    #[serde(skip_serializing_if = "is_zero")]
    pub ran_elsewhere: usize,
    /// Files published under `outputs/<study>/` (tables, report, figures).
    pub files: usize,
    /// The grader's verdicts of the episodes run, regraded and reused (verified
    /// successes, task failures by terminal flag, infrastructure failures): what the
    /// episodes came to, where `failed` counts nodes that came to nothing.
    pub episodes: Verdicts,
    /// Episodes that ended as infrastructure failures (recorded as such).
    pub infra_failures: usize,
    /// Their causes (as the episode rows name them), with how many each.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub infra_causes: std::collections::BTreeMap<String, usize>,
    /// Failures, in DAG order.
    pub failures: Vec<Failed>,
    /// Report files (report, figures, episode pages) removed because the node that
    /// publishes them failed: they described results this apply replaced or could not
    /// compute, and would have disagreed with the tables beside them.
    pub removed: Vec<String>,
    /// Configurations on this machine whose servers counted this apply's first
    /// requests far shorter than they are (`served_prompts`).
    pub short_prompts: Vec<super::served_prompts::ShortPrompts>,
    /// Routes their breaker stopped: their episodes not started stay planned, and the
    /// tables are not published (they would lack those episodes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stopped_routes: Vec<StoppedRoute>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A route its breaker stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoppedRoute {
    /// The route.
    pub route: String,
    /// The consecutive infrastructure failures that stopped it.
    pub failures: u32,
    /// The last one's cause and message.
    pub cause: String,
    /// Its episodes this apply did not run (they stay planned).
    pub not_run: usize,
}

/// One failed node, as the summary and `tbb apply --json` give it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failed {
    /// Its identity.
    pub node: String,
    /// Its cause.
    pub cause: Cause,
    /// The cause at the root of its chain of upstream failures (its own cause when it
    /// failed by itself).
    pub root_cause: Cause,
    /// The failure as the summary prints it.
    pub message: String,
    /// The failure.
    #[serde(skip)]
    pub failure: NodeFailure,
}

impl Summary {
    /// The summary: the nodes run, reused and in error (`Apply complete: 12 nodes run, 0
    /// cached, no node errors; …`), then what the episodes came to (`Episodes: 2 run: 0
    /// verified successes, 2 task failures (truncation ×2), 0 infrastructure
    /// failures.`), each group of them on its line.
    pub fn line(&self, seconds: f64) -> String {
        let errors = match self.failed {
            0 => "no node errors".to_string(),
            n => format!(
                "{} (listed above)",
                plural(n as u64, "node error", "node errors")
            ),
        };
        let episodes: String = self
            .episodes
            .summary_lines()
            .iter()
            .enumerate()
            .map(|(k, line)| {
                let head = if k == 0 { "Episodes: " } else { "          " };
                format!("\n{head}{line}.")
            })
            .collect();
        format!(
            "Apply complete: {} run, {} cached, {errors}; {} files written in {seconds:.1}s.",
            plural(self.run as u64, "node", "nodes"),
            tbb_report::format::count(self.cached as u64),
            self.files,
        ) + &episodes
            + &if self.ran_elsewhere > 0 {
                format!(
                    "\n{} of the episodes were run meanwhile by other processes sharing the cache \
                 and reused from it.",
                    tbb_report::format::count(self.ran_elsewhere as u64)
                )
            } else {
                String::new()
            }
            + &self
                .stopped_routes
                .iter()
                .map(|s| {
                    format!(
                        "\nStopped route {} after {} infrastructure failures in a row (the last: \
                     {}): {} of its episodes were not run and stay planned; the tables are \
                     not published until they have run.",
                        s.route,
                        s.failures,
                        s.cause,
                        tbb_report::format::count(s.not_run as u64)
                    )
                })
                .collect::<String>()
    }
}

/// Builds the provider of every configuration the manifest runs, then of the live
/// configuration that plays ToolSandbox's user, if any (before anything is locked or
/// written: a missing key stops here).
pub fn providers(study: &Study) -> Result<Vec<Arc<dyn Provider>>, PipelineError> {
    tbb_provider::install_crypto();
    let user = study
        .manifest
        .toolsandbox
        .as_ref()
        .and_then(|t| t.user.as_ref());
    study
        .manifest
        .configurations
        .iter()
        .chain(user)
        .map(|c| {
            tbb_provider::build(c).map_err(|source| PipelineError::Provider {
                config: c.name.clone(),
                source,
            })
        })
        .collect()
}

/// Expected provider traffic of the plan's execute nodes: each variant's certified
/// minimum plus a final answer, prompts of its menu, request and system prompt (4 bytes
/// a token) growing by one exchange per request, 152 completion tokens a response (the
/// paper's median). An estimate for budgeting, not a prediction.
pub fn estimate(study: &Study, cache: &Cache, plan: &Plan) -> Estimate {
    let dag = &study.dag;
    let running = |kind: NodeKind| -> Vec<&Node> {
        plan.nodes
            .iter()
            .filter(|p| p.action.runs() && p.kind == kind)
            .filter_map(|p| p.node.map(|i| &dag.graph[i]))
            .collect()
    };
    let runs = running(NodeKind::Execute);
    let scenarios = running(NodeKind::Scenario);
    if runs.is_empty() {
        let mut e = Estimate::default();
        super::scenarios::estimate(study, &scenarios, &mut e);
        return e;
    }
    let compiles: Vec<NodeIndex> = {
        let mut set: Vec<NodeIndex> = runs
            .iter()
            .filter_map(|n| match n.work {
                Work::Execute { compile, .. } => Some(compile),
                _ => None,
            })
            .collect();
        set.sort();
        set.dedup();
        set
    };
    let keys: Vec<&str> = compiles
        .iter()
        .map(|&c| dag.graph[c].key.as_ref())
        .collect();
    let cached = cache.payloads(&keys).unwrap_or_default();
    let mut info: HashMap<NodeIndex, CompilePayload> = HashMap::new();
    for &c in &compiles {
        let node = &dag.graph[c];
        let payload = cached
            .get(&*node.key)
            .and_then(|p| serde_json::from_str(p).ok())
            .or_else(|| {
                let v = compile_node(study, node).ok()?;
                let payload = CompilePayload::of(&v);
                // Kept for apply's compile stage (the variant is the same: compiling
                // is a pure function of the node).
                study
                    .compiled
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(c, v);
                Some(payload)
            });
        if let Some(p) = payload {
            info.insert(c, p);
        }
    }
    let mut e = Estimate::default();
    for n in runs {
        let Work::Execute {
            compile,
            config,
            arm,
            ..
        } = n.work
        else {
            continue;
        };
        let Some(p) = info.get(&compile) else {
            continue;
        };
        let config = &study.manifest.configurations[config];
        let prompt = study.manifest.arms[arm].form.prompt;
        let requests = u64::from(p.certified_min_calls) + 1;
        let base = (p.menu_bytes + p.request_bytes + study.prompts.system(prompt).len() as u64) / 4;
        e.add(
            config,
            Estimate::conversation(base, requests),
            &study.manifest.unlisted,
        );
    }
    super::scenarios::estimate(study, &scenarios, &mut e);
    e
}

pub(super) fn compile_node(study: &Study, node: &Node) -> Result<Variant, NodeFailure> {
    let Work::Compile { family, cell } = &node.work else {
        return Err(NodeFailure::internal("not a compile node"));
    };
    compile(&study.families.families[*family], cell).map_err(|e| NodeFailure::Compile {
        detail: e.to_string(),
    })
}

/// One finished episode, ready to commit.
struct Finished {
    execute: NodeIndex,
    grade: NodeIndex,
    result: Result<Played, NodeFailure>,
}

/// An ended episode of either benchmark.
enum Played {
    /// One of tbb's own families.
    Episode(Box<Ran>),
    /// A ToolSandbox scenario.
    Scenario(Box<super::scenarios::Played>),
}

impl Played {
    /// Its infrastructure failure, as the route's breaker and the summary count it:
    /// the cause and the provider's message.
    fn infra(&self) -> Option<(Option<InfraCause>, String)> {
        let (failed, cause, failure) = match self {
            Played::Episode(ran) => (
                ran.row.infra_failure,
                ran.row.infra_error,
                ran.payload.transcript.infra.as_ref(),
            ),
            Played::Scenario(p) => (
                p.row.infra_failure,
                p.row.infra_error,
                p.payload.infra.as_ref(),
            ),
        };
        if !failed {
            return None;
        }
        let name = cause.map_or("unknown", InfraCause::name);
        let text = match failure {
            Some(failure) => format!("{name}: {}", failure.message),
            None => name.to_string(),
        };
        Some((cause, text))
    }
}

/// What a live episode leaves: its execute node's payload and blobs, its row, its
/// requests as the record the cache stores beside the transcript (the requests table
/// reads them back from there), and its first request's prompt tokens (for the
/// served-prompts check).
struct Ran {
    payload: ExecutePayload,
    blobs: BlobStore,
    row: EpisodeRow,
    record: String,
    first_prompt_tokens: Option<u64>,
}

/// What the episode stages leave for the rows and the analyses.
struct Graded {
    /// Rows graded in this apply, each in its grade node's slot.
    rows: GradedRows,
    /// The first request of each live episode of a configuration served on this
    /// machine, for the served-prompts check.
    firsts: Vec<served_prompts::Reported>,
    /// ToolSandbox rows graded in this apply, by scenario grade node.
    scenario_rows: HashMap<NodeIndex, tbb_tables::ScenarioEpisodeRow>,
}

/// An apply in progress: what it takes, what failed, what it did so far.
struct Applying<'a> {
    study: &'a Study,
    /// The nodes this run takes.
    runs: HashSet<NodeIndex>,
    failed: HashMap<NodeIndex, NodeFailure>,
    summary: Summary,
    committer: Committer,
    reporter: &'a dyn Reporter,
    /// The episodes stage's counts, from the live episodes to the regrades.
    episode_counts: Counts,
    /// The verdicts of the episodes run, regraded and reused.
    verdicts: Verdicts,
}

/// Runs the plan's nodes. `plan` must come from `study.plan(cache)` under the outputs
/// lock.
///
/// Takes the plan: its list of nodes (one per node of the DAG) is dropped once the
/// nodes to run are known, not held to the end.
pub async fn run(
    study: &Study,
    cache: &mut Cache,
    mut plan: Plan,
    providers: &[Arc<dyn Provider>],
    options: &Options,
) -> Result<Summary, PipelineError> {
    let dag = &study.dag;
    // A missing or stale upstream study stops the run before anything is paid for.
    study.check_upstream()?;
    let publishes = options.filter.publishes();
    // A shard shares the cache with the other shards running beside it: their
    // temporary files are not leftovers (the merge, which runs alone, removes those).
    if publishes {
        cache.remove_temporaries()?;
    }
    // Objects the key inputs refer to go in first.
    let objects = dag
        .objects
        .iter()
        .filter(|(h, _)| !cache.has_object(h))
        .map(|(h, v)| (h.clone(), v.to_string()))
        .collect();
    let mut apply = Applying {
        study,
        runs: scheduler::selected(dag, &plan, options.filter.as_ref()),
        failed: HashMap::new(),
        summary: Summary {
            cached: plan.count(super::Action::Cached),
            ..Summary::default()
        },
        committer: Committer::new(objects),
        reporter: options.reporter.as_ref(),
        episode_counts: Counts::default(),
        verdicts: Verdicts::default(),
    };
    let estimate = std::mem::take(&mut plan.estimate);
    drop(plan);
    cache.reserve(apply.runs.len());
    let variants = apply.compile(cache)?;
    let mut graded = Graded {
        rows: if publishes {
            GradedRows::new(dag)
        } else {
            GradedRows::none()
        },
        firsts: Vec::new(),
        scenario_rows: HashMap::new(),
    };
    let interrupted = apply
        .episodes(cache, &estimate, providers, options, &variants, &mut graded)
        .await?;
    if interrupted {
        apply.reporter.event(&Event::Finished);
        return Err(PipelineError::Interrupted {
            committed: apply.summary.run,
        });
    }
    apply.regrade(cache, &variants, &mut graded)?;
    apply.summary.short_prompts = served_prompts::check(study, &variants, &graded.firsts);
    if !publishes {
        // A shard's episodes are committed: the rows and tables are the merge's.
        apply.reporter.event(&Event::Finished);
        return apply.finish(cache, false);
    }
    if !apply.summary.stopped_routes.is_empty() {
        // Episodes a stopped route did not run have no rows: the tables wait for them.
        apply.reporter.event(&Event::Finished);
        return apply.finish(cache, true);
    }
    // Two applies sharing a store publish one at a time (a local cache has the
    // outputs lock for that).
    let mut lease = match (cache.shared_store(), &options.claims) {
        (Some(remote), Some(settings)) => Some(
            Lease::take(
                remote,
                settings.clone(),
                options.lease_timeout,
                &mut |holder| options.reporter.event(&Event::LeaseHeld { holder }),
            )
            .await?,
        ),
        _ => None,
    };
    let (rows, incomplete) = apply.rows(cache, graded.rows)?;
    let (scenario_rows, incomplete) =
        apply.scenario_rows(cache, graded.scenario_rows, incomplete)?;
    let requests = RequestRows::new();
    apply.finals(
        cache,
        &variants,
        (&rows, scenario_rows),
        requests,
        incomplete.as_ref(),
        lease.as_mut(),
    )?;
    // Published: the rows and variants are not needed while the cache is compacted.
    drop((rows, variants));
    apply.reporter.event(&Event::Finished);
    apply.finish(cache, true)
}

impl Applying<'_> {
    /// Stage 1: compiles what anything that runs needs (every variant for the variants
    /// and requests tables and for an analysis that reads them: request rows are read
    /// off traces, which are rebuilt against their variants), committing the compile
    /// nodes that run.
    fn compile(
        &mut self,
        cache: &mut Cache,
    ) -> Result<HashMap<NodeIndex, Arc<Variant>>, PipelineError> {
        let (study, dag) = (self.study, &self.study.dag);
        let runs = &self.runs;
        let publishes_variants = runs.iter().any(|&i| match dag.graph[i].work {
            Work::Table(Publish::Variants | Publish::Requests) => true,
            Work::Analysis { index } => study.manifest.analyses[index]
                .kind
                .kind()
                .inputs()
                .iter()
                .any(|i| matches!(i, Input::Variants | Input::Requests)),
            _ => false,
        });
        let mut needed: Vec<NodeIndex> = dag
            .nodes()
            .filter_map(|(i, n)| match n.work {
                Work::Compile { .. } if publishes_variants || runs.contains(&i) => Some(i),
                Work::Execute { compile, .. } | Work::Grade { compile, .. }
                    if runs.contains(&i) =>
                {
                    Some(compile)
                }
                _ => None,
            })
            .collect();
        needed.sort();
        needed.dedup();
        let recorded: HashMap<String, String> = {
            let keys: Vec<&str> = needed
                .iter()
                .filter(|i| !runs.contains(i))
                .map(|&i| dag.graph[i].key.as_ref())
                .collect();
            cache.payloads(&keys)?
        };
        let mut variants: HashMap<NodeIndex, Arc<Variant>> = HashMap::new();
        let mut counts = Counts::default();
        self.reporter.event(&Event::StageStarted {
            stage: Stage::Compile,
            nodes: needed.len() as u64,
        });
        for &c in &needed {
            let node = &dag.graph[c];
            let compiled = study
                .compiled
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&c);
            let result = compiled
                .map_or_else(|| compile_node(study, node), Ok)
                .and_then(|v| {
                    let payload = CompilePayload::of(&v);
                    let old = recorded
                        .get(&*node.key)
                        .and_then(|p| serde_json::from_str::<CompilePayload>(p).ok());
                    match old {
                        Some(old) if old.variant_hash != payload.variant_hash => {
                            Err(NodeFailure::Nondeterministic {
                                old: old.variant_hash,
                                new: payload.variant_hash,
                            })
                        }
                        _ => Ok((v, payload)),
                    }
                });
            let ok = result.is_ok();
            match result {
                Ok((v, payload)) => {
                    if self.runs.contains(&c) {
                        self.committer.node(dag, c, &payload);
                        self.summary.run += 1;
                    }
                    variants.insert(c, Arc::new(v));
                }
                Err(e) => {
                    self.failed.insert(c, e);
                }
            }
            counts.node(self.reporter, Stage::Compile, node, ok);
        }
        counts.finish(self.reporter, Stage::Compile, None);
        self.committer.flush(cache)?;
        Ok(variants)
    }

    /// Stage 2: runs the episodes, in the scheduler's order, each graded as it ends and
    /// handed to the committer. Returns whether the run was interrupted (what ended is
    /// committed either way).
    async fn episodes(
        &mut self,
        cache: &mut Cache,
        estimate: &Estimate,
        providers: &[Arc<dyn Provider>],
        options: &Options,
        variants: &HashMap<NodeIndex, Arc<Variant>>,
        graded: &mut Graded,
    ) -> Result<bool, PipelineError> {
        let (study, dag) = (self.study, &self.study.dag);
        let configs_of_manifest = &study.manifest.configurations;
        let (route_of_config, slots) = scheduler::routes(configs_of_manifest);
        let slots = options.filter.slots(&slots);
        let units = scheduler::units(dag, &self.runs, &route_of_config);
        let regrades = self.regrades().len();
        self.reporter.event(&Event::StageStarted {
            stage: Stage::Episodes,
            nodes: (units.len() + regrades) as u64,
        });
        let mut schedule = Scheduler::new(units, &slots).with_breakers(&scheduler::breakers(
            configs_of_manifest,
            options.max_infra_failures,
        ));
        let route_names: Vec<String> = {
            let mut names = vec![String::new(); slots.len()];
            for (c, &r) in configs_of_manifest.iter().zip(&route_of_config) {
                if let Some(name) = names.get_mut(r) {
                    *name = c.route();
                }
            }
            names
        };
        // Requests are what a slow route is slow at: a live study has them as a stage
        // of their own, with the plan's estimate as its size.
        let live = !configs_of_manifest
            .iter()
            .all(Configuration::wall_time_is_modelled);
        let sent = Arc::new(AtomicU64::new(0));
        let providers: Vec<Arc<dyn Provider>> = if live {
            self.reporter.event(&Event::StageStarted {
                stage: Stage::Requests,
                nodes: estimate.requests,
            });
            providers
                .iter()
                .map(|p| Counted::wrap(p.clone(), &options.reporter, &sent))
                .collect()
        } else {
            providers.to_vec()
        };
        let prompts = Arc::new(study.prompts.clone());
        // A study that plays ToolSandbox reads its data once, before any scenario runs.
        let toolsandbox = match &study.manifest.toolsandbox {
            Some(_) => Some(
                study
                    .toolsandbox()
                    .map_err(|failure| PipelineError::ToolSandboxData { failure })?,
            ),
            None => None,
        };
        let manifest = Arc::new(study.manifest.clone());
        // The live user's provider follows the configurations' ([`providers`]).
        let user_provider: Option<Arc<dyn Provider>> = study
            .manifest
            .toolsandbox
            .as_ref()
            .and_then(|t| t.user.as_ref())
            .and_then(|_| providers.get(configs_of_manifest.len()).cloned());
        let configs: Vec<Arc<Configuration>> =
            configs_of_manifest.iter().cloned().map(Arc::new).collect();
        // Only a server on this machine has its first requests checked
        // ([`served_prompts::check`]): keeping a first request of every episode of a
        // simulated or remote configuration held 4.2 MB at four repeats of capacity.
        let local: Vec<bool> = configs.iter().map(|c| c.is_local()).collect();
        let routes = RouteLimits::default();
        // Live episodes on a shared cache are claimed before they run.
        let mut claims = match (cache.shared_store(), &options.claims) {
            (Some(remote), Some(settings)) if live => {
                Some(EpisodeClaims::new(remote, settings.clone()))
            }
            _ => None,
        };
        let mut tasks: JoinSet<Finished> = JoinSet::new();
        let mut task_nodes: HashMap<tokio::task::Id, NodeIndex> = HashMap::new();
        let mut interrupted = false;
        let mut counts = Counts::default();
        loop {
            // Keep the slots busy unless interrupted.
            while !interrupted {
                if options.interrupt.load(Ordering::SeqCst) {
                    interrupted = true;
                    break;
                }
                let Some(e) = schedule.start_next() else {
                    break;
                };
                let node = &dag.graph[e];
                if let Work::Scenario { config, .. } = node.work {
                    if !configs[config].wall_time_is_modelled()
                        && !claimed(claims.as_mut(), e, node, &mut schedule, self.reporter)?
                    {
                        continue;
                    }
                    let (Some(grade), Some(data)) = (dag.scenario_grade_of(e), toolsandbox.clone())
                    else {
                        self.failed.insert(
                            e,
                            NodeFailure::internal("a scenario node without its grade"),
                        );
                        schedule.finished(e);
                        continue;
                    };
                    let play = super::scenarios::Play {
                        data,
                        manifest: Arc::clone(&manifest),
                        work: node.work.clone(),
                        provider: providers[config].clone(),
                        user: user_provider.clone(),
                        routes: routes.clone(),
                        nudge: prompts.nudge.clone(),
                        run_key: node.key.clone(),
                        grade_key: dag.graph[grade].key.clone(),
                    };
                    let handle = tasks.spawn(async move {
                        let result = play.run().await.map(|p| Played::Scenario(Box::new(p)));
                        Finished {
                            execute: e,
                            grade,
                            result,
                        }
                    });
                    task_nodes.insert(handle.id(), e);
                    continue;
                }
                let grade = dag.grade_of(e);
                let Work::Execute { compile, .. } = node.work else {
                    schedule.finished(e);
                    continue;
                };
                let spec = ExecuteSpec::of(&study.manifest, &node.work);
                let (Some(grade), Some(variant), Some(spec)) =
                    (grade, variants.get(&compile).cloned(), spec)
                else {
                    self.failed
                        .insert(e, upstream_failure(dag, &self.failed, compile));
                    schedule.finished(e);
                    continue;
                };
                let config = configs[spec.config].clone();
                if !config.wall_time_is_modelled()
                    && !claimed(claims.as_mut(), e, node, &mut schedule, self.reporter)?
                {
                    continue;
                }
                let provider = providers[spec.config].clone();
                let prompts = prompts.clone();
                let routes = routes.clone();
                let study_name = study.manifest.study.clone();
                let grade_key = dag.graph[grade].key.clone();
                let execute_key = node.key.clone();
                let handle = tasks.spawn(async move {
                    let spec = spec.spec(&variant, &config, &study_name);
                    let episode =
                        run_episode(provider.as_ref(), &spec, &prompts, Some(&routes)).await;
                    let result = finish(episode, &spec, &study_name, &execute_key, &grade_key)
                        .map(|ran| Played::Episode(Box::new(ran)));
                    Finished {
                        execute: e,
                        grade,
                        result,
                    }
                });
                task_nodes.insert(handle.id(), e);
            }
            let waits_for_others =
                !interrupted && claims.as_ref().is_some_and(EpisodeClaims::has_deferred);
            if tasks.is_empty() && !waits_for_others {
                break;
            }
            let joined = match claims.as_ref().map(EpisodeClaims::next_due) {
                Some(due) if tasks.is_empty() => {
                    tokio::time::sleep(due).await;
                    None
                }
                Some(due) => tokio::select! {
                    joined = tasks.join_next() => joined,
                    () = tokio::time::sleep(due) => None,
                },
                None => tasks.join_next().await,
            };
            if let Some(claims) = claims.as_mut() {
                self.claims_due(claims, cache, &mut schedule, &mut counts)?;
            }
            let Some(joined) = joined else {
                // Others may wait on the claims of what ended here: commit it in time
                // even while nothing else ends.
                self.commit_due(cache, claims.as_mut())?;
                continue;
            };
            let done = match joined {
                Ok(done) => done,
                Err(e) => {
                    // A panicking episode is a bug of ours: its node fails, the others go on.
                    if let Some(&node) = task_nodes.get(&e.id()) {
                        self.failed.insert(
                            node,
                            NodeFailure::internal(format!("the episode task failed: {e}")),
                        );
                        schedule.finished(node);
                        counts.node(self.reporter, Stage::Episodes, &dag.graph[node], false);
                    }
                    continue;
                }
            };
            let infra = done.result.as_ref().ok().and_then(Played::infra);
            // A request the served model cannot hold says nothing of the route's health.
            let route_failed = infra
                .as_ref()
                .is_some_and(|(cause, _)| *cause != Some(InfraCause::ContextExceeded));
            let infra = infra.map(|(_, text)| text);
            if let Some((route, failures)) = schedule.ended(done.execute, route_failed) {
                let route = route_names.get(route).cloned().unwrap_or_default();
                let cause = infra.clone().unwrap_or_default();
                self.reporter.event(&Event::RouteStopped {
                    route: &route,
                    failures,
                    cause: &cause,
                });
                self.summary.stopped_routes.push(StoppedRoute {
                    route,
                    failures,
                    cause,
                    not_run: 0,
                });
            }
            let execute = &dag.graph[done.execute];
            counts.node(self.reporter, Stage::Episodes, execute, done.result.is_ok());
            if let Some(claims) = claims.as_mut() {
                claims.ended(done.execute);
            }
            match done.result {
                Ok(Played::Scenario(played)) => {
                    let super::scenarios::Played {
                        payload,
                        blobs,
                        row,
                    } = *played;
                    if row.infra_failure {
                        self.summary.infra_failures += 1;
                        let cause = row.infra_error.map_or("", InfraCause::name).to_string();
                        *self.summary.infra_causes.entry(cause).or_default() += 1;
                    }
                    self.committer.scenario(
                        cache,
                        blobs.blobs,
                        dag,
                        (done.execute, &payload),
                        (done.grade, &row),
                    );
                    graded.scenario_rows.insert(done.grade, row);
                    self.summary.run += 2;
                }
                Ok(Played::Episode(ran)) => {
                    let Ran {
                        payload,
                        blobs,
                        row,
                        record,
                        first_prompt_tokens,
                    } = *ran;
                    self.verdicts.run.add(&row);
                    if row.infra_failure {
                        self.summary.infra_failures += 1;
                        // Keyed by name: the summary lists the causes in their names' order.
                        let cause = row.infra_error.map_or("", InfraCause::name).to_string();
                        *self.summary.infra_causes.entry(cause).or_default() += 1;
                    }
                    self.committer.episode(
                        cache,
                        blobs.blobs,
                        record,
                        dag,
                        (done.execute, &payload),
                        (done.grade, &row),
                    );
                    graded.rows.insert(done.grade, row);
                    if let (
                        Work::Execute {
                            config,
                            compile,
                            arm,
                            ..
                        },
                        Some(prompt_tokens),
                    ) = (&execute.work, first_prompt_tokens)
                    {
                        if local.get(*config).copied().unwrap_or(false) {
                            graded.firsts.push(served_prompts::Reported {
                                config: *config,
                                compile: *compile,
                                arm: *arm,
                                prompt_tokens,
                            });
                        }
                    }
                    self.summary.run += 2;
                }
                Err(why) => {
                    self.failed.insert(done.execute, why);
                }
            }
            self.commit_due(cache, claims.as_mut())?;
        }
        self.committer.flush(cache)?;
        if let Some(claims) = claims.as_mut() {
            claims.committed().map_err(CacheError::from)?;
            // Interrupted: what was taken and not committed is free for others at once.
            claims.release_all();
        }
        self.episode_counts = counts;
        // The episodes a stopped route did not start are left out of this run: not
        // recorded, so the next plan runs them.
        for e in schedule.not_started() {
            let route = match dag.graph[e].work {
                Work::Execute { config, .. } => route_of_config.get(config).copied(),
                _ => None,
            };
            let name = route.and_then(|r| route_names.get(r));
            if let Some(stopped) = self
                .summary
                .stopped_routes
                .iter_mut()
                .find(|s| Some(&s.route) == name)
            {
                stopped.not_run += 1;
            }
            self.runs.remove(&e);
            if let Some(g) = dag.grade_of(e) {
                self.runs.remove(&g);
            }
        }
        if live {
            self.reporter.event(&Event::StageFinished {
                stage: Stage::Requests,
                done: sent.load(Ordering::Relaxed),
                failed: 0,
                verdicts: None,
            });
        }
        Ok(interrupted)
    }

    /// Renews this apply's claims and, when a poll is due, takes in what the store
    /// gained: a deferred episode committed by its holder is reused (dropped from this
    /// run, counted cached), one whose holder's claim expired is run here.
    fn claims_due(
        &mut self,
        claims: &mut EpisodeClaims,
        cache: &mut Cache,
        schedule: &mut Scheduler,
        counts: &mut Counts,
    ) -> Result<(), PipelineError> {
        let dag = &self.study.dag;
        let lost = claims.renew_due().map_err(CacheError::from)?;
        if lost > 0 {
            self.reporter
                .event(&Event::ClaimsLost { count: lost as u64 });
        }
        if !claims.poll_is_due() {
            return Ok(());
        }
        cache.refresh()?;
        let resolved = claims
            .poll_due(&|e| is_committed(dag, cache, e))
            .map_err(CacheError::from)?;
        for e in resolved.committed {
            self.ran_elsewhere(e, schedule, counts);
        }
        for e in resolved.taken_over {
            schedule.resume(e);
        }
        Ok(())
    }

    /// Episode `execute`, planned here, was committed by another process: its nodes
    /// are reused (dropped from this run, counted cached).
    fn ran_elsewhere(&mut self, execute: NodeIndex, schedule: &mut Scheduler, counts: &mut Counts) {
        let dag = &self.study.dag;
        schedule.finished(execute);
        self.runs.remove(&execute);
        if let Some(g) = dag.grade_of(execute) {
            self.runs.remove(&g);
        }
        self.summary.cached += 2;
        self.summary.ran_elsewhere += 1;
        counts.node(self.reporter, Stage::Episodes, &dag.graph[execute], true);
    }

    /// Commits what is due, and releases the claims of the episodes that ended once
    /// nothing is pending.
    fn commit_due(
        &mut self,
        cache: &mut Cache,
        claims: Option<&mut EpisodeClaims>,
    ) -> Result<(), PipelineError> {
        self.committer.tick(cache)?;
        if let Some(claims) = claims.filter(|_| self.committer.all_committed()) {
            claims.committed().map_err(CacheError::from)?;
        }
        Ok(())
    }

    /// Grade nodes this run takes whose episode is cached: they regrade the stored
    /// transcript.
    fn regrades(&self) -> Vec<NodeIndex> {
        let dag = &self.study.dag;
        dag.nodes()
            .filter(|(i, n)| match n.work {
                Work::Grade { execute, .. } | Work::ScenarioGrade { run: execute } => {
                    self.runs.contains(i) && !self.runs.contains(&execute)
                }
                _ => false,
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Stage 2, continued: grades the saved worlds of cached ToolSandbox scenarios again
    /// (their grader changed; no tool runs).
    fn regrade_scenarios(
        &mut self,
        cache: &mut Cache,
        regrades: &[NodeIndex],
        counts: &mut Counts,
        rows: &mut HashMap<NodeIndex, tbb_tables::ScenarioEpisodeRow>,
    ) -> Result<(), PipelineError> {
        let (study, dag) = (self.study, &self.study.dag);
        if regrades.is_empty() {
            return Ok(());
        }
        let data = study
            .toolsandbox()
            .map_err(|failure| PipelineError::ToolSandboxData { failure })?;
        let keys: Vec<&str> = regrades
            .iter()
            .filter_map(|&g| match dag.graph[g].work {
                Work::ScenarioGrade { run } => Some(dag.graph[run].key.as_ref()),
                _ => None,
            })
            .collect();
        let payloads = cache.payloads(&keys)?;
        for &g in regrades {
            let Work::ScenarioGrade { run } = dag.graph[g].work else {
                continue;
            };
            let node = &dag.graph[run];
            let result = data
                .node_spec(&study.manifest, &node.work)
                .and_then(|spec| {
                    super::scenarios::regrade(
                        &spec,
                        &node.id(),
                        &node.key,
                        payloads.get(&*node.key).map(String::as_str),
                        &dag.graph[g].key,
                    )
                });
            if let Some(row) = self.regraded(counts, g, result) {
                rows.insert(g, row);
            }
        }
        self.committer.flush(cache)?;
        Ok(())
    }

    /// Counts, commits and keeps the outcome of regrading grade node `g` (of either
    /// benchmark): its row when it graded, else its failure, recorded.
    fn regraded<Row: Serialize>(
        &mut self,
        counts: &mut Counts,
        g: NodeIndex,
        result: Result<Row, NodeFailure>,
    ) -> Option<Row> {
        let node = &self.study.dag.graph[g];
        counts.node(self.reporter, Stage::Episodes, node, result.is_ok());
        match result {
            Ok(row) => {
                self.committer.node(&self.study.dag, g, &row);
                self.summary.run += 1;
                Some(row)
            }
            Err(why) => {
                self.failed.insert(g, why);
                None
            }
        }
    }

    /// Stage 2, continued: regrades cached transcripts; ends the episodes stage.
    fn regrade(
        &mut self,
        cache: &mut Cache,
        variants: &HashMap<NodeIndex, Arc<Variant>>,
        graded: &mut Graded,
    ) -> Result<(), PipelineError> {
        let (study, dag) = (self.study, &self.study.dag);
        let (scenario_regrades, regrades): (Vec<NodeIndex>, Vec<NodeIndex>) = self
            .regrades()
            .into_iter()
            .partition(|&g| dag.graph[g].kind == NodeKind::ScenarioGrade);
        let rows = &mut graded.rows;
        let mut counts = std::mem::take(&mut self.episode_counts);
        if !regrades.is_empty() {
            let keys: Vec<&str> = regrades
                .iter()
                .filter_map(|&g| match dag.graph[g].work {
                    Work::Grade { execute, .. } => Some(dag.graph[execute].key.as_ref()),
                    _ => None,
                })
                .collect();
            let payloads = cache.payloads(&keys)?;
            let blobs = BlobStore {
                blobs: cache.blobs()?.into_iter().collect(),
            };
            for &g in &regrades {
                let Work::Grade { execute, compile } = dag.graph[g].work else {
                    continue;
                };
                let result = match variants.get(&compile) {
                    None => Err(upstream_failure(dag, &self.failed, compile)),
                    Some(variant) => regrade(
                        study,
                        &dag.graph[execute],
                        payloads.get(&*dag.graph[execute].key),
                        &blobs,
                        variant,
                        &dag.graph[g].key,
                    ),
                };
                if let Some(row) = self.regraded(&mut counts, g, result) {
                    self.verdicts.regraded.add(&row);
                    rows.insert(g, row);
                }
            }
            self.committer.flush(cache)?;
        }
        self.regrade_scenarios(
            cache,
            &scenario_regrades,
            &mut counts,
            &mut graded.scenario_rows,
        )?;
        counts.finish(self.reporter, Stage::Episodes, Some(&self.verdicts));
        Ok(())
    }

    /// Every grade node's row, in DAG order, placed in the design; with the failure
    /// that stops the tables when some grade node has none (the first one's cause, and
    /// how many).
    fn rows(
        &mut self,
        cache: &Cache,
        mut graded: GradedRows,
    ) -> Result<(Vec<EpisodeRow>, Option<NodeFailure>), PipelineError> {
        let (study, dag) = (self.study, &self.study.dag);
        // The stored rows of the episodes not graded here.
        let mut stored = super::rows::stored_rows::<EpisodeRow>(cache, dag, graded.ungraded())?;
        let mut rowless: Option<(NodeIndex, NodeFailure)> = None;
        let mut rowless_count = 0;
        let study_name = Name::new(&study.manifest.study);
        for (g, slot) in graded.slots_mut() {
            if slot.is_none() {
                match missing_row(dag, &self.failed, stored.remove(&g), g) {
                    Ok(row) => {
                        self.verdicts.cached.add(&row);
                        *slot = Some(row);
                    }
                    Err(why) => {
                        rowless_count += 1;
                        rowless.get_or_insert((g, why));
                    }
                }
            }
            if let Some(row) = slot {
                row.study = study_name.clone();
                if let Work::Grade { execute, .. } = dag.graph[g].work {
                    place_in_design(row, &study.manifest, &dag.graph[execute].work);
                    // A stored row read its keys as its own copies: the DAG's equal
                    // ones are shared instead.
                    share(&mut row.transcript_ref, &dag.graph[execute].key);
                    share(&mut row.node_key, &dag.graph[g].key);
                }
            }
        }
        let all_rows = graded.into_rows();
        let incomplete = rowless.map(|(g, why)| NodeFailure::EpisodesIncomplete {
            count: rowless_count,
            first: dag.graph[g].id(),
            cause: Box::new(why),
        });
        Ok((all_rows, incomplete))
    }

    /// Every scenario grade node's row, in DAG order; with the failure that stops the
    /// tables when some has none (after `incomplete`, the episodes', if any).
    fn scenario_rows(
        &self,
        cache: &Cache,
        graded: HashMap<NodeIndex, tbb_tables::ScenarioEpisodeRow>,
        incomplete: Option<NodeFailure>,
    ) -> Result<(Vec<tbb_tables::ScenarioEpisodeRow>, Option<NodeFailure>), PipelineError> {
        let dag = &self.study.dag;
        let (rows, missing) = super::scenarios::rows(dag, cache, graded)?;
        let incomplete = incomplete.or_else(|| {
            let &first = missing.first()?;
            let cause = match self.failed.get(&first) {
                Some(why) => why.clone(),
                None => match dag.graph[first].work {
                    Work::ScenarioGrade { run } if self.failed.contains_key(&run) => {
                        upstream_failure(dag, &self.failed, run)
                    }
                    _ => NodeFailure::internal("its stored row is missing or does not read"),
                },
            };
            Some(NodeFailure::EpisodesIncomplete {
                count: missing.len(),
                first: dag.graph[first].id(),
                cause: Box::new(cause),
            })
        });
        Ok((rows, incomplete))
    }

    /// Stage 3: analyses and tables, in DAG order, each committed as it ends.
    fn finals(
        &mut self,
        cache: &mut Cache,
        variants: &HashMap<NodeIndex, Arc<Variant>>,
        (all_rows, scenario_rows): (&[EpisodeRow], Vec<tbb_tables::ScenarioEpisodeRow>),
        mut requests: RequestRows,
        incomplete: Option<&NodeFailure>,
        mut lease: Option<&mut Lease>,
    ) -> Result<(), PipelineError> {
        let (study, dag) = (self.study, &self.study.dag);
        let mut outcomes = Outcomes::with_scenarios(scenario_rows);
        let finals: Vec<NodeIndex> = dag
            .nodes()
            .filter(|(i, n)| {
                matches!(n.kind, NodeKind::Analysis | NodeKind::Table) && self.runs.contains(i)
            })
            .map(|(i, _)| i)
            .collect();
        let mut counts = Counts::default();
        self.reporter.event(&Event::StageStarted {
            stage: Stage::Analyses,
            nodes: finals.len() as u64,
        });
        for i in finals {
            // Publishing beside another apply's would mix their files: a lease lost
            // (this process stalled past its time to live) stops here.
            if let Some(lease) = lease.as_deref_mut() {
                lease.check()?;
            }
            let node = &dag.graph[i];
            // A failed analysis, or a failed requests table, fails what reads it.
            let upstream = dag
                .graph
                .neighbors_directed(i, petgraph::Direction::Incoming)
                .find(|u| {
                    self.failed.contains_key(u)
                        && matches!(
                            dag.graph[*u].work,
                            Work::Analysis { .. } | Work::Table(Publish::Requests)
                        )
                });
            let result: Result<(), NodeFailure> = if let Some(why) = incomplete {
                Err(why.clone())
            } else if let Some(u) = upstream {
                Err(upstream_failure(dag, &self.failed, u))
            } else {
                match node.work {
                    Work::Analysis { .. } => outcomes
                        .run(study, cache, i, all_rows, variants, &mut || {
                            requests.get(study, cache, variants, all_rows)
                        })
                        .map(|payload| self.committer.node_json(dag, i, payload)),
                    Work::Table(_) => publish(
                        study,
                        i,
                        variants,
                        all_rows,
                        &mut requests,
                        &outcomes,
                        cache,
                    )
                    .map(|files| {
                        self.summary.files += files.len();
                        self.committer.node(dag, i, &TablePayload { files });
                    }),
                    _ => Ok(()),
                }
            };
            counts.node(self.reporter, Stage::Analyses, node, result.is_ok());
            match result {
                Ok(()) => self.summary.run += 1,
                Err(e) => {
                    self.failed.insert(i, e);
                }
            }
            self.committer.flush(cache)?;
        }
        counts.finish(self.reporter, Stage::Analyses, None);
        Ok(())
    }

    /// Removes the stale report files of failed table nodes, compacts a fragmented
    /// cache (`alone`: not a shard, whose fellow shards read and add files beside it)
    /// and lists the failures in DAG order.
    fn finish(mut self, cache: &mut Cache, alone: bool) -> Result<Summary, PipelineError> {
        let (study, dag) = (self.study, &self.study.dag);
        self.summary.removed = remove_stale_reports(study, cache, &self.failed)?;
        if alone && cache.node_files() > 32 {
            cache.compact()?;
        }
        let order: HashMap<NodeIndex, usize> = dag
            .graph
            .node_indices()
            .enumerate()
            .map(|(k, i)| (i, k))
            .collect();
        let mut failures: Vec<(NodeIndex, NodeFailure)> = self.failed.into_iter().collect();
        failures.sort_by_key(|(i, _)| order.get(i).copied());
        self.summary.failed = failures.len();
        self.summary.episodes = self.verdicts;
        self.summary.failures = failures
            .into_iter()
            .map(|(i, failure)| Failed {
                node: dag.graph[i].id(),
                cause: failure.cause(),
                root_cause: failure.root().cause(),
                message: failure.to_string(),
                failure,
            })
            .collect();
        Ok(self.summary)
    }
}

/// Nodes of a stage that ended, as its events say.
#[derive(Debug, Default)]
struct Counts {
    done: u64,
    failed: u64,
}

impl Counts {
    fn node(&mut self, reporter: &dyn Reporter, stage: Stage, node: &Node, ok: bool) {
        if ok {
            self.done += 1;
        } else {
            self.failed += 1;
        }
        let id = if reporter.names_nodes() {
            node.id()
        } else {
            String::new()
        };
        reporter.event(&Event::NodeFinished {
            stage,
            node: &id,
            ok,
        });
    }

    fn finish(&self, reporter: &dyn Reporter, stage: Stage, verdicts: Option<&Verdicts>) {
        reporter.event(&Event::StageFinished {
            stage,
            done: self.done,
            failed: self.failed,
            verdicts,
        });
    }
}

/// Where a row sits in the design — its block, its arm's name, its schedule and the
/// attempt that ran it — taken from the DAG at publication, like the study's name, so
/// that renaming a block or an arm relabels cached rows without rerunning them.
pub fn place_in_design(row: &mut EpisodeRow, manifest: &crate::manifest::Manifest, work: &Work) {
    if let Work::Execute {
        block,
        arm,
        schedule,
        position,
        attempt,
        ..
    } = work
    {
        row.place(tbb_tables::Placement {
            block: manifest
                .blocks
                .get(*block)
                .map_or_else(Name::default, |b| Name::new(&b.name)),
            arm: manifest
                .arms
                .get(*arm)
                .map_or_else(Name::default, |a| Name::new(&a.name)),
            schedule: schedule.clone(),
            schedule_position: *position,
            attempt: *attempt,
        });
    }
}

/// Whether the cache holds episode `execute` committed: its execute and grade nodes.
/// `held` becomes `shared` when they are equal.
fn share(held: &mut Arc<str>, shared: &Arc<str>) {
    if *held == *shared {
        *held = shared.clone();
    }
}

/// Whether live episode `e` may start now: `true` when there are no claims (a local
/// cache) or this apply took its claim; `false` when it was deferred, another holding it
/// or having just held it (its last holder may have committed it since this apply
/// planned: the next poll looks before it is paid for).
fn claimed(
    claims: Option<&mut EpisodeClaims>,
    e: NodeIndex,
    node: &Node,
    schedule: &mut Scheduler,
    reporter: &dyn Reporter,
) -> Result<bool, PipelineError> {
    let Some(claims) = claims else {
        return Ok(true);
    };
    match claims.take(e, &node.key).map_err(CacheError::from)? {
        Taken::Ours => Ok(true),
        Taken::AfterAnother => {
            schedule.defer(e);
            Ok(false)
        }
        Taken::Held(holder) => {
            schedule.defer(e);
            if claims.first_news_of(&holder.holder) {
                reporter.event(&Event::ClaimHeld {
                    node: &node.id(),
                    holder: &holder.holder,
                });
            }
            Ok(false)
        }
    }
}

fn is_committed(dag: &Dag, cache: &Cache, execute: NodeIndex) -> bool {
    cache.get(&dag.graph[execute].key).is_some()
        && dag
            .grade_of(execute)
            .is_some_and(|g| cache.get(&dag.graph[g].key).is_some())
}

fn upstream_failure(
    dag: &super::Dag,
    failed: &HashMap<NodeIndex, NodeFailure>,
    upstream: NodeIndex,
) -> NodeFailure {
    let node = dag.graph[upstream].id();
    match failed.get(&upstream) {
        Some(why) => NodeFailure::upstream(&node, why),
        None => NodeFailure::internal(format!("{node} has no result, yet did not fail")),
    }
}

/// Why grade node `g`, which did not grade in this apply, has no row: its own failure,
/// its episode's, or its stored row's.
fn missing_row(
    dag: &super::Dag,
    failed: &HashMap<NodeIndex, NodeFailure>,
    stored: Option<Result<EpisodeRow, String>>,
    g: NodeIndex,
) -> Result<EpisodeRow, NodeFailure> {
    let node = &dag.graph[g];
    if let Some(why) = failed.get(&g) {
        return Err(why.clone());
    }
    if let Work::Grade { execute, .. } = node.work {
        if failed.contains_key(&execute) {
            return Err(upstream_failure(dag, failed, execute));
        }
    }
    match stored {
        Some(row) => row.map_err(|detail| NodeFailure::StoredRowUnreadable {
            node: node.id(),
            detail,
        }),
        None => Err(NodeFailure::internal(format!(
            "{} is neither in the cache nor graded in this apply",
            node.id()
        ))),
    }
}

/// Removes the report files (text files: report, figures, episode pages) that each
/// failed table node published last time (as its latest record in the cache lists
/// them): they describe results this apply replaced or could not compute, and a report
/// must never disagree with the tables beside it. Returns the files removed.
fn remove_stale_reports(
    study: &Study,
    cache: &Cache,
    failed: &HashMap<NodeIndex, NodeFailure>,
) -> Result<Vec<String>, PipelineError> {
    let dag = &study.dag;
    let mut tables: Vec<NodeIndex> = failed
        .keys()
        .copied()
        .filter(|&i| dag.graph[i].kind == NodeKind::Table)
        .collect();
    tables.sort();
    let latest: Vec<&super::cache::Entry> = tables
        .iter()
        .filter_map(|&i| cache.latest(&dag.graph[i].id()))
        .collect();
    let texts = cache.texts(&latest)?;
    let recorded: Vec<&str> = texts.iter().map(|t| t.key.as_str()).collect();
    let payloads = cache.payloads(&recorded)?;
    let mut removed = Vec::new();
    for payload in payloads.values() {
        // An unreadable record names no file: there is nothing of its to remove.
        if let Ok(TablePayload { files }) = super::rows::read::<TablePayload>(payload) {
            removed.extend(super::publish::remove_text_files(&study.outputs(), &files));
        }
    }
    removed.sort();
    Ok(removed)
}

/// Takes a live episode's verdict and trace as the harness left them (graded in
/// memory by [`tbb_harness::run_episode`]) and reads its requests off its transcript
/// and that trace for the requests table.
///
/// Why not grade from the stored transcript here, as a regrade would: rebuilding the
/// trace (every menu blob parsed again, every body reference hashed again) cost more
/// than the episode itself over HTTP, for a check that belongs to certification. `tbb
/// certify` replays every stored transcript through the episode loop, refuses any
/// request that is not the recorded one and compares every row field, so a transcript
/// that does not rebuild the live trace fails there (tests/it/certify.rs); the harness
/// tests hold `Transcript::trace` equal to the live trace, and debug builds (every
/// test run) still check it here.
fn finish(
    episode: Episode,
    spec: &EpisodeSpec<'_>,
    study: &str,
    execute_key: &Arc<str>,
    grade_key: &Arc<str>,
) -> Result<Ran, NodeFailure> {
    let trace = &episode.trace;
    if cfg!(debug_assertions) {
        let rebuilt = episode
            .transcript
            .trace(&episode.blobs, spec.variant)
            .ok_or_else(|| {
                NodeFailure::internal("the stored transcript does not rebuild a trace")
            })?;
        if &rebuilt != trace
            || grade_with_budget(spec.variant, &rebuilt, spec.episode_budget) != episode.verdict
        {
            return Err(NodeFailure::internal(
                "the stored transcript does not rebuild the live trace",
            ));
        }
    }
    let row = EpisodeRow::of_episode(
        &episode,
        study,
        spec,
        execute_key.clone(),
        grade_key.clone(),
    );
    let read = requests::read(&episode.transcript, trace, &episode.blobs)
        .map_err(|e| NodeFailure::internal(e.to_string()))?;
    // Stored once, so that no later apply reads this transcript again for them.
    let record = tbb_tables::stored_requests::to_json(&read);
    // The episode is moved, not cloned: its menu blob alone is ~60 KiB at V = 128.
    let payload = ExecutePayload {
        episode_key: episode.key,
        transcript: episode.transcript,
        omitted: episode.omitted,
        attempts: episode.attempts,
        wall_ms: episode.wall_ms,
    };
    Ok(Ran {
        payload,
        blobs: episode.blobs,
        row,
        first_prompt_tokens: read.requests.first().and_then(|r| r.prompt_tokens),
        record,
    })
}

/// Grades a cached transcript.
fn regrade(
    study: &Study,
    execute: &Node,
    payload: Option<&String>,
    blobs: &BlobStore,
    variant: &Arc<Variant>,
    grade_key: &Arc<str>,
) -> Result<EpisodeRow, NodeFailure> {
    let spec = ExecuteSpec::of(&study.manifest, &execute.work)
        .ok_or_else(|| NodeFailure::internal("not an execute node of this manifest"))?;
    let payload: ExecutePayload = payload
        .ok_or_else(|| NodeFailure::internal(format!("{} is not in the cache", execute.id())))
        .and_then(|p| {
            super::rows::read(p).map_err(|detail| NodeFailure::StoredRowUnreadable {
                node: execute.id(),
                detail,
            })
        })?;
    let spec = spec.spec(
        variant,
        &study.manifest.configurations[spec.config],
        &study.manifest.study,
    );
    let trace = payload
        .transcript
        .trace(blobs, variant)
        .ok_or_else(|| NodeFailure::internal("the cached transcript does not rebuild a trace"))?;
    let verdict = grade_with_budget(variant, &trace, spec.episode_budget);
    let episode = Episode {
        key: payload.episode_key,
        trace,
        verdict,
        transcript: payload.transcript,
        blobs: BlobStore::default(),
        omitted: payload.omitted,
        attempts: payload.attempts,
        wall_ms: payload.wall_ms,
    };
    let mut row = EpisodeRow::of_episode(
        &episode,
        &study.manifest.study,
        &spec,
        execute.key.clone(),
        grade_key.clone(),
    );
    // The episode holds no blobs (the cache's are shared by every regrade, not copied
    // into each): its schemas are counted against the cache's, as the live episode
    // counted them against its own.
    row.schema_exposures = tbb_harness::schema_exposures(&episode.transcript, blobs);
    Ok(row)
}

/// A provider that counts each request (each attempt) as it ends, and tells the
/// reporter when it wants each one. Wraps only live routes' providers: the simulated
/// panel's hot path stays the provider itself.
struct Counted {
    inner: Arc<dyn Provider>,
    reporter: Option<Arc<dyn Reporter>>,
    sent: Arc<AtomicU64>,
}

impl Counted {
    fn wrap(
        inner: Arc<dyn Provider>,
        reporter: &Arc<dyn Reporter>,
        sent: &Arc<AtomicU64>,
    ) -> Arc<dyn Provider> {
        Arc::new(Counted {
            inner,
            reporter: reporter.counts_requests().then(|| reporter.clone()),
            sent: sent.clone(),
        })
    }
}

impl Provider for Counted {
    fn chat<'a>(
        &'a self,
        request: &'a tbb_provider::ChatRequest,
    ) -> tbb_provider::BoxFuture<'a, Result<tbb_provider::ChatResponse, tbb_provider::ProviderError>>
    {
        Box::pin(async move {
            let result = self.inner.chat(request).await;
            self.sent.fetch_add(1, Ordering::Relaxed);
            if let Some(reporter) = &self.reporter {
                let tokens = result
                    .as_ref()
                    .ok()
                    .and_then(|r| r.usage)
                    .map_or(0, |u| u.input_tokens + u.output_tokens);
                reporter.event(&Event::RequestFinished { tokens });
            }
            result
        })
    }

    fn wire_sampling(&self, request: &tbb_provider::ChatRequest) -> tbb_provider::chat::Sampling {
        self.inner.wire_sampling(request)
    }

    fn check<'a>(
        &'a self,
    ) -> tbb_provider::BoxFuture<'a, Result<String, tbb_provider::ProviderError>> {
        self.inner.check()
    }
}
