//! Applying a plan: compile the variants it needs, run its episodes with bounded
//! concurrency per provider route, grade each from its stored transcript, run the
//! analyses and publish the tables — committing every finished node to the cache.
//!
//! Commit order is what makes a killed run resumable: an execute node and its grade
//! are committed together in a batch (every 512 nodes or every second), after the
//! blobs and objects they refer to; a table node is recorded only after its file is
//! renamed into place. Anything not committed simply reruns next time, and because
//! every episode is seeded from its own key, the rerun gives the same result.
//!
//! Never: decides staleness (the plan does), prints (the caller gets progress through
//! indicatif bars it asked for and a [`Summary`]), or lets one failed node stop the
//! others: failures are collected ([`NodeFailure`], each with its cause), their
//! dependents failed as upstream failures naming them, and reported at the end. When a
//! table node that publishes report files fails, the files it published before are
//! removed: a report must never disagree with the tables beside it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use petgraph::graph::NodeIndex;
use serde::Serialize;
use tokio::task::JoinSet;

use super::cache::{Batch, Cache, NewEntry};
use super::dag::{Node, Publish, Work};
use super::failure::{Cause, NodeFailure};
use super::key::NodeKind;
use super::plan::{Estimate, Plan};
use super::publish::{publish, FreshRequests, Outcomes, RequestRows};
use super::served_prompts;
use super::{CompilePayload, ExecutePayload, PipelineError, Study, TablePayload};
use crate::analysis::Input;
use crate::harness::transcript::BlobStore;
use crate::harness::{run_episode, Episode, EpisodeSpec};
use crate::store::requests::{self, EpisodeRequests};
use crate::store::tables::EpisodeRow;
use tbb_core::compile::{compile, Variant};
use tbb_core::grade::grade_with_budget;
use tbb_provider::retry::RouteLimits;
use tbb_provider::{Configuration, Provider};

/// How to apply.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Set (by a Ctrl-C handler) to stop starting nodes, drain and commit.
    pub interrupt: Arc<AtomicBool>,
    /// Draw progress bars on stderr (when it is a terminal).
    pub progress: bool,
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
    /// Files published under `outputs/<study>/` (tables, report, figures).
    pub files: usize,
    /// Episodes that ended as infrastructure failures (recorded as such).
    pub infra_failures: usize,
    /// Failures, in DAG order.
    pub failures: Vec<Failed>,
    /// Report files (report, figures, episode pages) removed because the node that
    /// publishes them failed: they described results this apply replaced or could not
    /// compute, and would have disagreed with the tables beside them.
    pub removed: Vec<String>,
    /// Configurations on this machine whose servers counted this apply's first
    /// requests far shorter than they are (`served_prompts`).
    pub short_prompts: Vec<super::served_prompts::ShortPrompts>,
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
    /// The one summary line.
    pub fn line(&self, seconds: f64) -> String {
        format!(
            "Apply complete: {} run ({} failed), {} cached, {} files written in {seconds:.1}s{}.",
            crate::report::format::count(self.run as u64),
            self.failed,
            crate::report::format::count(self.cached as u64),
            self.files,
            if self.infra_failures > 0 {
                format!(
                    "; {} episodes were infrastructure failures",
                    self.infra_failures
                )
            } else {
                String::new()
            }
        )
    }
}

/// Builds the provider of every configuration the manifest runs (before anything is
/// locked or written: a missing key stops here).
pub fn providers(study: &Study) -> Result<Vec<Arc<dyn Provider>>, PipelineError> {
    tbb_provider::install_crypto();
    study
        .manifest
        .configurations
        .iter()
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
    let runs: Vec<&Node> = plan
        .nodes
        .iter()
        .filter(|p| p.action.runs() && p.kind == NodeKind::Execute)
        .filter_map(|p| p.node.map(|i| &dag.graph[i]))
        .collect();
    if runs.is_empty() {
        return Estimate::default();
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
    const EXCHANGE_TOKENS: u64 = 150;
    const RESPONSE_TOKENS: u64 = 152;
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
        let prompt: u64 = (0..requests).map(|i| base + i * EXCHANGE_TOKENS).sum();
        let completion = requests * RESPONSE_TOKENS;
        e.requests += requests;
        e.prompt_tokens += prompt;
        e.completion_tokens += completion;
        e.cost_usd += config.prices.cost_usd(prompt, completion);
    }
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
    result: Result<(ExecutePayload, BlobStore, EpisodeRow, EpisodeRequests), NodeFailure>,
}

/// Runs the plan's nodes. `plan` must come from `study.plan(cache)` under the outputs
/// lock.
pub async fn run(
    study: &Study,
    cache: &mut Cache,
    plan: &Plan,
    providers: &[Arc<dyn Provider>],
    options: &Options,
) -> Result<Summary, PipelineError> {
    let dag = &study.dag;
    // A missing or stale upstream study stops the run before anything is paid for.
    study.check_upstream()?;
    cache.remove_temporaries()?;
    let runs: HashSet<NodeIndex> = plan
        .nodes
        .iter()
        .filter(|p| p.action.runs())
        .filter_map(|p| p.node)
        .collect();
    let mut summary = Summary {
        cached: plan.count(super::Action::Cached),
        ..Summary::default()
    };
    let mut failed: HashMap<NodeIndex, NodeFailure> = HashMap::new();
    let bars = Bars::new(options.progress);

    // Objects the key inputs refer to go in first.
    let mut pending = Batch {
        objects: dag
            .objects
            .iter()
            .filter(|(h, _)| !cache.has_object(h))
            .map(|(h, v)| (h.clone(), v.to_string()))
            .collect(),
        ..Batch::default()
    };

    // Stage 1: compile what anything that runs needs (every variant for the variants
    // and requests tables and for an analysis that reads them: request rows are read
    // off traces, which are rebuilt against their variants).
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
            Work::Execute { compile, .. } | Work::Grade { compile, .. } if runs.contains(&i) => {
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
    let compile_bar = bars.stage("compile", needed.len());
    for &c in &needed {
        let node = &dag.graph[c];
        let compiled = study
            .compiled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&c);
        match compiled.map_or_else(|| compile_node(study, node), Ok) {
            Ok(v) => {
                let payload = CompilePayload::of(&v);
                if let Some(old) = recorded
                    .get(&*node.key)
                    .and_then(|p| serde_json::from_str::<CompilePayload>(p).ok())
                {
                    if old.variant_hash != payload.variant_hash {
                        failed.insert(
                            c,
                            NodeFailure::Nondeterministic {
                                old: old.variant_hash,
                                new: payload.variant_hash,
                            },
                        );
                        continue;
                    }
                }
                if runs.contains(&c) {
                    pending.nodes.push(entry(node, &payload));
                    summary.run += 1;
                }
                variants.insert(c, Arc::new(v));
            }
            Err(e) => {
                failed.insert(c, e);
            }
        }
        compile_bar.inc(1);
    }
    compile_bar.finish();
    cache.commit(std::mem::take(&mut pending))?;

    // Stage 2: episodes. Execute nodes run their episode and grade it at once; grade
    // nodes whose episode is cached regrade the stored transcript.
    let executes: Vec<NodeIndex> = dag
        .nodes()
        .filter(|(i, n)| n.kind == NodeKind::Execute && runs.contains(i))
        .map(|(i, _)| i)
        .collect();
    let regrades: Vec<NodeIndex> = dag
        .nodes()
        .filter(|(i, n)| match n.work {
            Work::Grade { execute, .. } => runs.contains(i) && !runs.contains(&execute),
            _ => false,
        })
        .map(|(i, _)| i)
        .collect();
    let episode_bar = bars.stage("episodes", executes.len() + regrades.len());
    // Requests are what a slow route is slow at: a live study gets their own bar, with
    // the plan's estimate as its length and the tokens per second the routes return.
    let request_bar = bars.requests(plan.estimate.requests, &study.manifest.configurations);
    let providers: Vec<Arc<dyn Provider>> = providers
        .iter()
        .map(|p| Counted::wrap(p.clone(), &request_bar))
        .collect();
    let mut rows: HashMap<NodeIndex, EpisodeRow> = HashMap::new();
    // The requests of the episodes graded live, for the requests table (the others are
    // read back from their transcripts when it is published).
    let mut fresh_requests: FreshRequests = HashMap::new();
    let mut firsts: Vec<served_prompts::Reported> = Vec::new();
    let prompts = Arc::new(study.prompts.clone());
    let configs: Vec<Arc<Configuration>> = study
        .manifest
        .configurations
        .iter()
        .cloned()
        .map(Arc::new)
        .collect();
    let routes = RouteLimits::default();
    let jobs = in_flight_limit(&study.manifest.configurations);
    let mut tasks: JoinSet<Finished> = JoinSet::new();
    let mut task_nodes: HashMap<tokio::task::Id, NodeIndex> = HashMap::new();
    let mut blobs_pending: HashSet<String> = HashSet::new();
    let mut last_flush = Instant::now();
    let mut interrupted = false;
    // An ordered schedule's arm waits for the previous arm's episode of its condition
    // when that one runs in this apply too; it is released when that one ends, however
    // it ends.
    let mut unfinished: HashSet<NodeIndex> = executes.iter().copied().collect();
    let mut waiting: HashMap<NodeIndex, Vec<NodeIndex>> = HashMap::new();
    let mut released: std::collections::VecDeque<NodeIndex> = std::collections::VecDeque::new();
    let mut next = executes.into_iter();
    loop {
        // Keep the slots busy unless interrupted.
        while !interrupted && tasks.len() < jobs {
            if options.interrupt.load(Ordering::SeqCst) {
                interrupted = true;
                break;
            }
            let Some(e) = released.pop_front().or_else(|| next.next()) else {
                break;
            };
            let Work::Execute {
                compile,
                config,
                arm,
                cap,
                repeat,
                after,
                ..
            } = &dag.graph[e].work
            else {
                continue;
            };
            if let Some(before) = after.filter(|b| unfinished.contains(b)) {
                waiting.entry(before).or_default().push(e);
                continue;
            }
            let (compile, config, cap, repeat) = (*compile, *config, *cap, *repeat);
            let form = study.manifest.arms[*arm].form;
            let grade = dag
                .graph
                .neighbors(e)
                .find(|&g| dag.graph[g].kind == NodeKind::Grade);
            let (Some(grade), Some(variant)) = (grade, variants.get(&compile).cloned()) else {
                failed.insert(e, upstream_failure(dag, &failed, compile));
                unfinished.remove(&e);
                released.extend(waiting.remove(&e).unwrap_or_default());
                continue;
            };
            let provider = providers[config].clone();
            let config = configs[config].clone();
            let prompts = prompts.clone();
            let routes = routes.clone();
            let study_name = study.manifest.study.clone();
            let budget = study.manifest.budgets.episode_budget;
            let grade_key = dag.graph[grade].key.clone();
            let execute_key = dag.graph[e].key.clone();
            let handle = tasks.spawn(async move {
                let spec = EpisodeSpec {
                    variant: &variant,
                    config: &config,
                    arm: form,
                    completion_cap: cap,
                    episode_budget: budget,
                    repeat,
                };
                let episode = run_episode(provider.as_ref(), &spec, &prompts, Some(&routes)).await;
                let result = finish(episode, &spec, &study_name, &execute_key, &grade_key);
                Finished {
                    execute: e,
                    grade,
                    result,
                }
            });
            task_nodes.insert(handle.id(), e);
        }
        let Some(joined) = tasks.join_next().await else {
            break;
        };
        let done = match joined {
            Ok(done) => done,
            Err(e) => {
                // A panicking episode is a bug of ours: its node fails, the others go on.
                if let Some(&node) = task_nodes.get(&e.id()) {
                    failed.insert(
                        node,
                        NodeFailure::internal(format!("the episode task failed: {e}")),
                    );
                    unfinished.remove(&node);
                    released.extend(waiting.remove(&node).unwrap_or_default());
                }
                continue;
            }
        };
        unfinished.remove(&done.execute);
        released.extend(waiting.remove(&done.execute).unwrap_or_default());
        episode_bar.inc(1);
        match done.result {
            Ok((payload, blobs, row, read)) => {
                for (r, text) in blobs.blobs {
                    if !cache.has_blob(&r) && blobs_pending.insert(r.clone()) {
                        pending.blobs.push((r, text));
                    }
                }
                if row.infra_failure {
                    summary.infra_failures += 1;
                }
                pending
                    .nodes
                    .push(entry(&dag.graph[done.execute], &payload));
                pending.nodes.push(entry(&dag.graph[done.grade], &row));
                rows.insert(done.grade, row);
                if let (
                    Work::Execute {
                        config,
                        compile,
                        arm,
                        ..
                    },
                    Some(prompt_tokens),
                ) = (
                    &dag.graph[done.execute].work,
                    read.requests.first().and_then(|r| r.prompt_tokens),
                ) {
                    firsts.push(served_prompts::Reported {
                        config: *config,
                        compile: *compile,
                        arm: *arm,
                        prompt_tokens,
                    });
                }
                fresh_requests.insert(done.grade, read);
                summary.run += 2;
            }
            Err(why) => {
                failed.insert(done.execute, why);
            }
        }
        if pending.nodes.len() >= 512 || last_flush.elapsed() >= Duration::from_secs(1) {
            cache.commit(std::mem::take(&mut pending))?;
            blobs_pending.clear();
            last_flush = Instant::now();
        }
    }
    cache.commit(std::mem::take(&mut pending))?;
    if interrupted {
        bars.clear();
        return Err(PipelineError::Interrupted {
            committed: summary.run,
        });
    }

    // Regrade cached transcripts.
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
                None => Err(upstream_failure(dag, &failed, compile)),
                Some(variant) => regrade(
                    study,
                    &dag.graph[execute],
                    payloads.get(&*dag.graph[execute].key),
                    &blobs,
                    variant,
                    &dag.graph[g].key,
                ),
            };
            match result {
                Ok(row) => {
                    pending.nodes.push(entry(&dag.graph[g], &row));
                    rows.insert(g, row);
                    summary.run += 1;
                }
                Err(why) => {
                    failed.insert(g, why);
                }
            }
            episode_bar.inc(1);
        }
        cache.commit(std::mem::take(&mut pending))?;
    }
    episode_bar.finish();
    request_bar.finish();
    summary.short_prompts = served_prompts::check(study, &variants, &firsts);

    // Every grade node's row, in DAG order.
    let grades: Vec<NodeIndex> = dag
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::Grade)
        .map(|(i, _)| i)
        .collect();
    let missing: Vec<&str> = grades
        .iter()
        .filter(|g| !rows.contains_key(g))
        .map(|&g| dag.graph[g].key.as_ref())
        .collect();
    let stored = cache.payloads(&missing)?;
    let mut all_rows = Vec::with_capacity(grades.len());
    // Why the first grade without a row has none, and how many have none.
    let mut rowless: Option<(NodeIndex, NodeFailure)> = None;
    let mut rowless_count = 0;
    for &g in &grades {
        let row = match rows.remove(&g) {
            Some(row) => Ok(row),
            None => missing_row(dag, &failed, &stored, g),
        };
        match row {
            Ok(mut row) => {
                row.study = study.manifest.study.clone();
                if let Work::Grade { execute, .. } = dag.graph[g].work {
                    place_in_design(&mut row, &study.manifest, &dag.graph[execute].work);
                }
                all_rows.push(row);
            }
            Err(why) => {
                rowless_count += 1;
                rowless.get_or_insert((g, why));
            }
        }
    }
    let incomplete = rowless.map(|(g, why)| NodeFailure::EpisodesIncomplete {
        count: rowless_count,
        first: dag.graph[g].id.to_string(),
        cause: Box::new(why),
    });

    // Stage 3: analyses and tables.
    let mut outcomes = Outcomes::default();
    let mut requests = RequestRows::new(fresh_requests);
    let finals: Vec<NodeIndex> = dag
        .nodes()
        .filter(|(i, n)| matches!(n.kind, NodeKind::Analysis | NodeKind::Table) && runs.contains(i))
        .map(|(i, _)| i)
        .collect();
    let table_bar = bars.stage("analyses", finals.len());
    for i in finals {
        let node = &dag.graph[i];
        // A failed analysis, or a failed requests table, fails what reads it.
        let upstream = dag
            .graph
            .neighbors_directed(i, petgraph::Direction::Incoming)
            .find(|u| {
                failed.contains_key(u)
                    && matches!(
                        dag.graph[*u].work,
                        Work::Analysis { .. } | Work::Table(Publish::Requests)
                    )
            });
        let result: Result<(), NodeFailure> = if let Some(why) = &incomplete {
            Err(why.clone())
        } else if let Some(u) = upstream {
            Err(upstream_failure(dag, &failed, u))
        } else {
            match node.work {
                Work::Analysis { .. } => outcomes
                    .run(study, cache, i, &all_rows, &variants, &mut || {
                        requests.get(study, cache, &variants, &all_rows)
                    })
                    .map(|payload| {
                        pending.nodes.push(NewEntry {
                            kind: node.kind,
                            id: node.id.to_string(),
                            key: node.key.to_string(),
                            input: node.input.full().canonical(),
                            payload,
                        });
                    }),
                Work::Table(_) => publish(
                    study,
                    i,
                    &variants,
                    &all_rows,
                    &mut requests,
                    &outcomes,
                    cache,
                )
                .map(|files| {
                    summary.files += files.len();
                    pending.nodes.push(entry(node, &TablePayload { files }));
                }),
                _ => Ok(()),
            }
        };
        match result {
            Ok(()) => summary.run += 1,
            Err(e) => {
                failed.insert(i, e);
            }
        }
        cache.commit(std::mem::take(&mut pending))?;
        table_bar.inc(1);
    }
    table_bar.finish();
    bars.clear();
    summary.removed = remove_stale_reports(study, cache, &failed)?;
    if cache.node_files() > 32 {
        cache.compact()?;
    }

    let order: HashMap<NodeIndex, usize> = dag
        .graph
        .node_indices()
        .enumerate()
        .map(|(k, i)| (i, k))
        .collect();
    let mut failures: Vec<(NodeIndex, NodeFailure)> = failed.into_iter().collect();
    failures.sort_by_key(|(i, _)| order.get(i).copied());
    summary.failed = failures.len();
    summary.failures = failures
        .into_iter()
        .map(|(i, failure)| Failed {
            node: dag.graph[i].id.to_string(),
            cause: failure.cause(),
            root_cause: failure.root().cause(),
            message: failure.to_string(),
            failure,
        })
        .collect();
    Ok(summary)
}

/// Where a row sits in the design — its block, its arm's name and its schedule —
/// taken from the DAG at publication, like the study's name, so that renaming a block
/// or an arm relabels cached rows without rerunning them.
pub fn place_in_design(row: &mut EpisodeRow, manifest: &crate::manifest::Manifest, work: &Work) {
    if let Work::Execute {
        block,
        arm,
        schedule,
        position,
        ..
    } = work
    {
        row.block = manifest
            .blocks
            .get(*block)
            .map_or_else(String::new, |b| b.name.clone());
        row.arm = manifest
            .arms
            .get(*arm)
            .map_or_else(String::new, |a| a.name.clone());
        row.schedule = schedule.to_string();
        row.schedule_position = *position;
    }
}

fn upstream_failure(
    dag: &super::Dag,
    failed: &HashMap<NodeIndex, NodeFailure>,
    upstream: NodeIndex,
) -> NodeFailure {
    let node = dag.graph[upstream].id.as_ref();
    match failed.get(&upstream) {
        Some(why) => NodeFailure::upstream(node, why),
        None => NodeFailure::internal(format!("{node} has no result, yet did not fail")),
    }
}

/// Why grade node `g`, which did not grade in this apply, has no row: its own failure,
/// its episode's, or its stored row's.
fn missing_row(
    dag: &super::Dag,
    failed: &HashMap<NodeIndex, NodeFailure>,
    stored: &HashMap<String, String>,
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
    match stored.get(&*node.key) {
        Some(payload) => {
            super::rows::read(payload).map_err(|detail| NodeFailure::StoredRowUnreadable {
                node: node.id.to_string(),
                detail,
            })
        }
        None => Err(NodeFailure::internal(format!(
            "{} is neither in the cache nor graded in this apply",
            node.id
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
    let recorded: Vec<&str> = tables
        .iter()
        .filter_map(|&i| cache.latest(&dag.graph[i].id))
        .map(|e| e.key.as_ref())
        .collect();
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

fn entry<T: Serialize>(node: &Node, payload: &T) -> NewEntry {
    NewEntry {
        kind: node.kind,
        id: node.id.to_string(),
        key: node.key.to_string(),
        input: node.input.full().canonical(),
        payload: serde_json::to_string(payload).unwrap_or_default(),
    }
}

/// Takes a live episode's verdict and trace as the harness left them (graded in
/// memory by [`crate::harness::run_episode`]) and reads its requests off its transcript
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
    execute_key: &str,
    grade_key: &str,
) -> Result<(ExecutePayload, BlobStore, EpisodeRow, EpisodeRequests), NodeFailure> {
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
    let row = episode.row(study, spec, execute_key, grade_key);
    let read = requests::read(&episode.transcript, trace, &episode.blobs)
        .map_err(|e| NodeFailure::internal(e.to_string()))?;
    // The episode is moved, not cloned: its menu blob alone is ~60 KiB at V = 128.
    let payload = ExecutePayload {
        episode_key: episode.key,
        transcript: episode.transcript,
        omitted: episode.omitted,
        attempts: episode.attempts,
        wall_ms: episode.wall_ms,
    };
    Ok((payload, episode.blobs, row, read))
}

/// Grades a cached transcript.
fn regrade(
    study: &Study,
    execute: &Node,
    payload: Option<&String>,
    blobs: &BlobStore,
    variant: &Arc<Variant>,
    grade_key: &str,
) -> Result<EpisodeRow, NodeFailure> {
    let Work::Execute {
        config,
        arm,
        cap,
        repeat,
        ..
    } = execute.work
    else {
        return Err(NodeFailure::internal("not an execute node"));
    };
    let payload: ExecutePayload = payload
        .ok_or_else(|| NodeFailure::internal(format!("{} is not in the cache", execute.id)))
        .and_then(|p| {
            super::rows::read(p).map_err(|detail| NodeFailure::StoredRowUnreadable {
                node: execute.id.to_string(),
                detail,
            })
        })?;
    let config = &study.manifest.configurations[config];
    let spec = EpisodeSpec {
        variant,
        config,
        arm: study.manifest.arms[arm].form,
        completion_cap: cap,
        episode_budget: study.manifest.budgets.episode_budget,
        repeat,
    };
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
    let mut row = episode.row(&study.manifest.study, &spec, &execute.key, grade_key);
    // The episode holds no blobs (the cache's are shared by every regrade, not copied
    // into each): its schemas are counted against the cache's, as the live episode
    // counted them against its own.
    row.schema_exposures = crate::harness::schema_exposures(&episode.transcript, blobs);
    Ok(row)
}

/// Episodes in flight: the sum of every route's concurrency (each route's own limit is
/// enforced per request by [`RouteLimits`]), at least 1 and at most 256.
fn in_flight_limit(configs: &[Configuration]) -> usize {
    let mut by_route: BTreeMap<String, u32> = BTreeMap::new();
    for c in configs {
        by_route.entry(c.route()).or_insert(c.concurrency.max(1));
    }
    (by_route.values().map(|&n| n as usize).sum::<usize>()).clamp(1, 256)
}

/// The progress bars of an apply: one per stage that has nodes (a stage with none
/// draws nothing), and one of provider requests when a live route runs.
struct Bars {
    multi: MultiProgress,
    show: bool,
}

impl Bars {
    fn new(show: bool) -> Bars {
        let multi = MultiProgress::with_draw_target(if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        Bars { multi, show }
    }

    fn add(&self, name: &str, len: u64, template: &str) -> ProgressBar {
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = self.multi.add(ProgressBar::new(len));
        bar.set_style(style);
        bar.set_prefix(name.to_string());
        bar
    }

    /// The bar of a stage with `len` nodes; hidden when it has none.
    fn stage(&self, name: &str, len: usize) -> ProgressBar {
        if !self.show || len == 0 {
            return ProgressBar::hidden();
        }
        self.add(
            name,
            len as u64,
            "{prefix:>9} [{bar:32}] {pos}/{len} {per_sec} ETA {eta}",
        )
    }

    /// The bar of provider requests: shown when a configuration is live, its length
    /// the plan's estimate (grown when the run asks more).
    fn requests(&self, estimate: u64, configs: &[Configuration]) -> ProgressBar {
        if !self.show || configs.iter().all(Configuration::wall_time_is_modelled) {
            return ProgressBar::hidden();
        }
        self.add(
            "requests",
            estimate.max(1),
            "{prefix:>9} [{bar:32}] {pos}/≈{len} {msg} ETA {eta}",
        )
    }

    fn clear(&self) {
        let _ = self.multi.clear();
    }
}

/// A provider that advances the requests bar as each request (each attempt) ends, with
/// the tokens per second returned so far. Only wraps when the bar is drawn: the hot
/// path of a hidden bar stays the provider itself.
struct Counted {
    inner: Arc<dyn Provider>,
    bar: ProgressBar,
    tokens: std::sync::atomic::AtomicU64,
    started: Instant,
}

impl Counted {
    fn wrap(inner: Arc<dyn Provider>, bar: &ProgressBar) -> Arc<dyn Provider> {
        if bar.is_hidden() {
            return inner;
        }
        Arc::new(Counted {
            inner,
            bar: bar.clone(),
            tokens: std::sync::atomic::AtomicU64::new(0),
            started: Instant::now(),
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
            if let Ok(usage) = result.as_ref().map(|r| r.usage) {
                let n = usage.map_or(0, |u| u.input_tokens + u.output_tokens);
                self.tokens.fetch_add(n, Ordering::Relaxed);
            }
            self.bar.inc(1);
            if self.bar.position() > self.bar.length().unwrap_or(0) {
                self.bar.set_length(self.bar.position());
            }
            let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
            let tokens = self.tokens.load(Ordering::Relaxed) as f64;
            self.bar
                .set_message(format!("{:.0} tok/s", tokens / seconds));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_without_nodes_has_no_bar_and_the_sim_panel_no_request_bar() {
        let bars = Bars::new(true);
        assert_eq!(bars.stage("compile", 0).length(), None);
        assert_eq!(bars.stage("episodes", 3).length(), Some(3));
        let sim: Configuration = toml::from_str(
            "name = \"s\"\norganization = \"o\"\nprovider = \"sim\"\nmodel = \"m\"\nsim = {}\n\
             prices = { input_per_mtok = 0.0, output_per_mtok = 0.0 }",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let live = Configuration {
            provider: tbb_provider::ProviderKind::Openai,
            sim: None,
            ..sim.clone()
        };
        assert_eq!(bars.requests(40, std::slice::from_ref(&sim)).length(), None);
        assert_eq!(bars.requests(40, &[sim, live.clone()]).length(), Some(40));
        assert_eq!(bars.requests(0, &[live]).length(), Some(1));
        // Hidden, it draws nothing at all.
        assert_eq!(Bars::new(false).stage("compile", 5).length(), None);
    }
}
