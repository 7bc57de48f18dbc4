//! The pipeline: a manifest becomes a DAG of content-keyed nodes ([`dag`]), compared
//! with the cache ([`cache`]) into a plan that says what runs and why ([`plan`]), and
//! applied ([`apply`]): a [`scheduler`] picks the nodes a run takes and the episode
//! that starts next within each route's slots, a [`committer`] batches finished nodes
//! into the cache in resumable order, and a [`reporter`] renders the [`events`] the
//! stages emit; analysis results and published files are [`publish`]'s.
//!
//! Owns: everything about caching — keys ([`key`]), the cache under
//! `outputs/<study>/cache/` and where its files are kept ([`backend`]), the published
//! tables' freshness, the outputs lock ([`lock`]) and the lockfiles ([`lockfile`]). It
//! is the only module that knows a result can be reused.
//!
//! Invariants: a plan is read-only; a node is recorded only after its result is written
//! (temporary file, fsync, rename); a plan made right after an apply has nothing to
//! run; the same manifest and lockfile give byte-identical tables, wall times aside.
//!
//! Never: decides what an episode, a verdict or a statistic is — it calls the harness,
//! the grader and the analyses, and stores what they return.

pub mod apply;
pub mod backend;
pub mod cache;
pub mod cache_index;
pub mod certify;
pub mod claims;
pub mod committer;
pub mod context;
pub mod dag;
pub mod episode_claims;
pub mod eta;
pub mod events;
pub mod failure;
mod graded_rows;
pub mod identity;
pub mod key;
pub mod lease;
pub mod lock;
pub mod lockfile;
pub mod plan;
pub mod preflight;
pub mod publish;
pub mod remote;
pub mod reporter;
pub mod reproduce;
pub mod request_spill;
pub mod retry;
pub mod rows;
pub mod scenarios;
pub mod scheduler;
pub mod served_prompts;
pub mod shard;
pub mod upstream;
pub mod verdicts;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use cache::Cache;
pub use dag::Dag;
pub use key::{KeyInput, NodeKind, Reason};
pub use plan::{Action, Plan};

use crate::manifest::{Manifest, Models};
use tbb_core::compile::Variant;
use tbb_core::family::FamilySet;
use tbb_harness::transcript::Transcript;
use tbb_harness::Prompts;
use tbb_provider::config::RequestField;

/// Where a study reads and writes.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The task families.
    pub families: PathBuf,
    /// The system prompts.
    pub prompts: PathBuf,
    /// The outputs root: a study writes `<outputs>/<study>/`.
    pub outputs: PathBuf,
    /// Where lockfiles live.
    pub lockfiles: PathBuf,
    /// The URL of a shared cache (`--cache`, `TBB_CACHE`; [`remote`]), which
    /// `outputs/<study>/cache/` is kept in step with.
    pub cache: Option<String>,
}

/// Why the pipeline stopped.
#[derive(Debug, Error, miette::Diagnostic)]
pub enum PipelineError {
    /// The manifest is invalid.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Manifest(#[from] crate::manifest::ManifestError),
    /// The families are invalid.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Family(#[from] tbb_core::family::FamilyError),
    /// A prompt is unreadable.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Prompt(#[from] tbb_harness::prompts::PromptError),
    /// The cache is unusable.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cache(#[from] cache::CacheError),
    /// Another apply holds the outputs.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Lock(#[from] lock::LockError),
    /// Another apply publishes from the same shared cache, or this one lost its lease.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Lease(#[from] lease::LeaseError),
    /// The lockfile is missing, drifted or unwritable.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Lockfile(#[from] lockfile::LockfileError),
    /// A table cannot be written.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Store(#[from] tbb_tables::StoreError),
    /// A configuration cannot be used (missing key, bad parameters).
    #[error("configuration `{config}` cannot run: {source}")]
    #[diagnostic(
        code(tbb::pipeline::provider),
        help("set the environment variable it names, fix it in the catalogue, or drop it from the manifest's [configurations]")
    )]
    Provider {
        /// Its name.
        config: String,
        /// Why.
        source: tbb_provider::ProviderError,
    },
    /// The preflight of an apply found a live route down or refusing its key: nothing
    /// was run or recorded.
    #[error("configuration `{config}` cannot run: its route {route} {cause}")]
    #[diagnostic(
        code(tbb::pipeline::route_unavailable),
        help("{fix}; or pass --no-preflight to run anyway (its episodes would be recorded as infrastructure failures)")
    )]
    RouteUnavailable {
        /// The configuration.
        config: String,
        /// Its route (base URL, or the provider's default).
        route: String,
        /// What the check found ("is down (...)", "refuses the key (...)").
        cause: String,
        /// How to fix it.
        fix: String,
    },
    /// Episodes of this apply ended as infrastructure failures (recorded as failures of
    /// their configuration), or a route's breaker stopped it; everything else was
    /// committed.
    #[error("{count} episodes ended as infrastructure failures ({causes}){stopped}")]
    #[diagnostic(code(tbb::pipeline::infra_failures), help("{advice}"))]
    InfraFailures {
        /// How many.
        count: usize,
        /// Their causes, with how many each ("server_error ×3, transport ×1").
        causes: String,
        /// What the breaker stopped, as a clause ("" when nothing).
        stopped: String,
        /// What to do next.
        advice: String,
    },
    /// A name that becomes part of a path (a study, a manifest file, a study an
    /// analysis reads from) is not an identifier.
    #[error("the {what} {problem}, so it cannot name {place}")]
    #[diagnostic(
        code(tbb::pipeline::name),
        help(
            "rename it: a name that becomes part of a path is an identifier: {}",
            tbb_diag::names::RULE
        )
    )]
    PathName {
        /// Whose name it is (`manifest file name`).
        what: &'static str,
        /// The path it would have named (`lockfiles/<name>.lock`).
        place: String,
        /// What is wrong with it (its message is part of this one, not a cause below it).
        problem: tbb_diag::names::NotAnIdentifier,
    },
    /// A saved plan no longer matches the manifest and the cache.
    #[error("the saved plan {} is stale: {detail}", path.display())]
    #[diagnostic(
        code(tbb::pipeline::stale_plan),
        help("run `tbb plan {manifest} -o {}` again and review it", path.display())
    )]
    StalePlan {
        /// The plan file.
        path: PathBuf,
        /// Its manifest.
        manifest: String,
        /// What changed.
        detail: String,
    },
    /// A saved plan cannot be read.
    #[error("cannot use the plan {}: {message}", path.display())]
    #[diagnostic(
        code(tbb::pipeline::plan_file),
        help("a plan file is what `tbb plan MANIFEST -o plan.json` writes")
    )]
    PlanFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `tbb explain` was given a node the manifest does not have.
    #[error("the manifest has no node `{id}`")]
    #[diagnostic(code(tbb::pipeline::unknown_node), help("{help}"))]
    UnknownNode {
        /// What was asked for.
        id: String,
        /// Closest identities or how to list them.
        help: String,
    },
    /// A table an analysis reads from another study is missing or stale.
    #[error("upstream study `{study}`: {problem}")]
    #[diagnostic(code(tbb::pipeline::upstream), help("{help}"))]
    Upstream {
        /// The upstream study.
        study: String,
        /// What is wrong with its table.
        problem: String,
        /// The command that fixes it, or how to find it.
        help: String,
    },
    /// An analysis would fail on the other studies' tables it reads.
    #[error("analysis {analysis}: {problem}")]
    #[diagnostic(
        code(tbb::pipeline::preflight),
        help("fix the manifest as the message says, then plan again; nothing was run")
    )]
    Preflight {
        /// The analysis kind.
        analysis: String,
        /// Why it would fail.
        problem: String,
    },
    /// `tbb report`: the manifest has no report analysis.
    #[error("the manifest {manifest} has no report analysis")]
    #[diagnostic(
        code(tbb::report::none),
        help("add `[[analyses]] kind = \"report\"` after the analyses it should show, then `tbb apply {manifest}`")
    )]
    NoReport {
        /// The manifest.
        manifest: String,
    },
    /// `tbb report`: what the report shows is not up to date.
    #[error("the report of {manifest} is not up to date: {pending} nodes it reads must run first (e.g. {first})")]
    #[diagnostic(
        code(tbb::report::stale),
        help("run `tbb apply {manifest}`: it runs them and publishes the report; `tbb report` only rewrites the report apply recorded")
    )]
    ReportStale {
        /// The manifest.
        manifest: String,
        /// Nodes the report reads, directly or not, that must run.
        pending: usize,
        /// The first of them.
        first: String,
    },
    /// `tbb report`: the report could not be written.
    #[error("cannot write the report: {failure}")]
    #[diagnostic(code(tbb::report::failed))]
    ReportFailed {
        /// Why.
        failure: failure::NodeFailure,
    },
    /// The vendored ToolSandbox data a study with `[toolsandbox]` plays do not read.
    #[error("cannot read the vendored ToolSandbox data: {failure}")]
    #[diagnostic(
        code(tbb::toolsandbox::data),
        help("vendor/toolsandbox/ is built into tbb and pinned by hash: rebuild tbb from a clean checkout")
    )]
    ToolSandboxData {
        /// Why.
        failure: failure::NodeFailure,
    },
    /// Ctrl-C: in-flight nodes were drained and committed.
    #[error("interrupted: {committed} nodes committed before stopping")]
    #[diagnostic(
        code(tbb::pipeline::interrupted),
        help("run the same `tbb apply` again to resume; nothing committed is lost")
    )]
    Interrupted {
        /// Nodes committed by this run.
        committed: usize,
    },
    /// Some nodes failed; the rest were committed.
    #[error("{count} nodes failed; the first: {first}")]
    #[diagnostic(
        code(tbb::pipeline::failed),
        help("the failed nodes are not recorded and rerun on the next apply")
    )]
    Failed {
        /// How many.
        count: usize,
        /// The first failure.
        first: String,
    },
}

/// What a compile node records: enough to estimate requests without recompiling.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompilePayload {
    /// The variant's content hash (checked on every recompilation).
    pub variant_hash: String,
    /// Its certified minimum number of calls.
    pub certified_min_calls: u32,
    /// Bytes of its menu's schemas (JSON).
    pub menu_bytes: u64,
    /// Bytes of its user request.
    pub request_bytes: u64,
}

impl CompilePayload {
    /// The layout of this row in the cache: bump it when a field is added, removed,
    /// renamed or retyped, so that every compile node reruns ([`rows`]).
    pub const ROW_VERSION: u32 = 1;
}

impl CompilePayload {
    /// Of a compiled variant.
    pub fn of(v: &Variant) -> CompilePayload {
        let menu: u64 = v
            .menu
            .iter()
            .map(|t| (t.name.len() + t.description.len() + t.parameters.to_string().len()) as u64)
            .sum();
        CompilePayload {
            variant_hash: v.variant_hash.clone(),
            certified_min_calls: v.certified_min_calls,
            menu_bytes: menu,
            request_bytes: v.user_request.len() as u64,
        }
    }
}

/// What an execute node records (the blobs it refers to are stored once, apart).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecutePayload {
    /// The episode key (seed source).
    pub episode_key: tbb_tables::HexKey,
    /// Every request and response.
    pub transcript: Transcript,
    /// Request fields the profile omitted.
    pub omitted: Vec<RequestField>,
    /// Provider attempts, retries included.
    pub attempts: u32,
    /// Wall time in milliseconds.
    pub wall_ms: u64,
}

impl ExecutePayload {
    /// The layout of this row in the cache: bump it when a field is added, removed,
    /// renamed or retyped, so that every execute node reruns ([`rows`]).
    pub const ROW_VERSION: u32 = 1;
}

/// What a table node records: the files it wrote, relative to `outputs/<study>/`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TablePayload {
    /// File names.
    pub files: Vec<String>,
}

impl TablePayload {
    /// The layout of this row in the cache: bump it when a field is added, removed,
    /// renamed or retyped, so that every table node reruns ([`rows`]).
    pub const ROW_VERSION: u32 = 1;
}

/// A loaded study: the manifest, what it reads, and its DAG.
pub struct Study {
    /// The manifest.
    pub manifest: Manifest,
    /// `--set` overrides it was loaded with.
    pub overrides: Vec<(String, String)>,
    /// The `--model` configurations it was loaded with.
    pub models: Models,
    /// The episodes `--retry-infra` reran, as the lockfile records them (read from the
    /// lockfile on disk when the study loads; [`retry`]).
    pub retries: Vec<retry::Retry>,
    /// Every family.
    pub families: FamilySet,
    /// The prompts.
    pub prompts: Prompts,
    /// Paths.
    pub paths: Paths,
    /// The lockfile this study would write.
    pub lockfile_text: String,
    /// blake3 of it.
    pub lockfile_hash: String,
    /// The DAG.
    pub dag: Dag,
    /// Tables its analyses read from other studies, and their state.
    pub upstream: Vec<upstream::Status>,
    /// `(analysis, problem)` of the analyses that would fail on the other studies'
    /// tables they read ([`upstream::preflight`]); apply refuses.
    pub preflight: Vec<(String, String)>,
    /// Variants the plan's estimate compiled, by compile node, handed to apply's
    /// compile stage so that no variant is compiled twice in one command (compiling
    /// was a third of a small live study's CPU, done twice).
    pub compiled: std::sync::Mutex<std::collections::HashMap<petgraph::graph::NodeIndex, Variant>>,
    /// The vendored ToolSandbox data, read when first asked for ([`Study::toolsandbox`]).
    toolsandbox_data: std::sync::OnceLock<std::sync::Arc<scenarios::ToolSandboxData>>,
    /// `<outputs>/<study>/`, made once by [`tbb_diag::names::path_under`].
    outputs_dir: PathBuf,
    /// `<lockfiles>/<manifest file stem>.lock`, made once the same way.
    lockfile_file: PathBuf,
}

impl Study {
    /// Loads a manifest and everything it reads, and builds its DAG. Reads only.
    pub fn load(
        manifest: &Path,
        overrides: &[(String, String)],
        paths: &Paths,
    ) -> Result<Study, PipelineError> {
        Study::load_with_models(manifest, overrides, &Models::default(), paths)
    }

    /// [`Study::load`] for a run with `--model` flags.
    pub fn load_with_models(
        manifest: &Path,
        overrides: &[(String, String)],
        models: &Models,
        paths: &Paths,
    ) -> Result<Study, PipelineError> {
        Ok(Study::load_inner(manifest, overrides, models, paths, false)?.0)
    }

    /// [`Study::load`] and [`Study::cache`] at once: the cache's index is read on a
    /// second thread while the DAG is built (together a cached plan's whole time).
    pub fn load_with_cache(
        manifest: &Path,
        overrides: &[(String, String)],
        models: &Models,
        paths: &Paths,
    ) -> Result<(Study, Cache), PipelineError> {
        let (study, cache) = Study::load_inner(manifest, overrides, models, paths, true)?;
        match cache {
            Some(cache) => Ok((study, cache)),
            None => {
                let cache = study.cache()?;
                Ok((study, cache))
            }
        }
    }

    fn load_inner(
        manifest: &Path,
        overrides: &[(String, String)],
        models: &Models,
        paths: &Paths,
        with_cache: bool,
    ) -> Result<(Study, Option<Cache>), PipelineError> {
        let families = FamilySet::load(&paths.families)?;
        let manifest = Manifest::load_with_models(manifest, &families, overrides, models)?;
        // The manifest loader has refused a study name that is not an identifier; the
        // paths are made by the one function that refuses it again, whatever loaded it.
        let outputs_dir = tbb_diag::names::path_under(&paths.outputs, &manifest.study, "")
            .map_err(|problem| PipelineError::PathName {
                what: "study name",
                place: format!("{}/<study>/", paths.outputs.display()),
                problem,
            })?;
        let lockfile_file = lockfile::path_for(&paths.lockfiles, &manifest)?;
        let cache_dir = outputs_dir.join("cache");
        std::thread::scope(|scope| {
            let study_name = manifest.study.clone();
            let cache = with_cache.then(|| {
                scope.spawn(move || {
                    open_cache(&cache_dir, paths, &study_name, cache::SyncMode::Pull)
                })
            });
            let prompts = Prompts::load(&paths.prompts)?;
            let retries = retry::recorded(&lockfile_file);
            let built = Built::new(&manifest, &families, &prompts, paths, &retries);
            // A panic while reading the cache is a bug; it resurfaces as one.
            let cache = match cache.map(|c| c.join()) {
                Some(Ok(cache)) => Some(cache?),
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                None => None,
            };
            Ok((
                Study {
                    manifest,
                    overrides: overrides.to_vec(),
                    models: models.clone(),
                    retries,
                    families,
                    prompts,
                    paths: paths.clone(),
                    lockfile_text: built.lockfile_text,
                    lockfile_hash: built.lockfile_hash,
                    dag: built.dag,
                    upstream: built.upstream,
                    preflight: built.preflight,
                    compiled: Default::default(),
                    toolsandbox_data: Default::default(),
                    outputs_dir,
                    lockfile_file,
                },
                cache,
            ))
        })
    }

    /// The study with `retries` recorded instead of the lockfile's (`--retry-infra`):
    /// its lockfile and DAG made again, the retried execute nodes under their new keys.
    pub fn with_retries(self, retries: Vec<retry::Retry>) -> Study {
        let built = Built::new(
            &self.manifest,
            &self.families,
            &self.prompts,
            &self.paths,
            &retries,
        );
        Study {
            retries,
            lockfile_text: built.lockfile_text,
            lockfile_hash: built.lockfile_hash,
            dag: built.dag,
            upstream: built.upstream,
            preflight: built.preflight,
            compiled: Default::default(),
            ..self
        }
    }

    /// The vendored ToolSandbox scenarios and tools, read once per command (only a
    /// study with `[toolsandbox]` asks).
    pub fn toolsandbox(
        &self,
    ) -> Result<std::sync::Arc<scenarios::ToolSandboxData>, failure::NodeFailure> {
        if let Some(data) = self.toolsandbox_data.get() {
            return Ok(data.clone());
        }
        let data = scenarios::ToolSandboxData::builtin()?;
        Ok(self.toolsandbox_data.get_or_init(|| data).clone())
    }

    /// Refuses when a table its analyses read from another study is missing or stale,
    /// naming the command that fixes it (`tbb apply` calls this before writing
    /// anything).
    pub fn check_upstream(&self) -> Result<(), PipelineError> {
        match self.upstream.iter().find(|s| s.problem.is_some()) {
            None => match self.preflight.first() {
                None => Ok(()),
                Some((analysis, problem)) => Err(PipelineError::Preflight {
                    analysis: analysis.clone(),
                    problem: problem.clone(),
                }),
            },
            Some(s) => Err(PipelineError::Upstream {
                study: s.pin.study.clone(),
                problem: s.problem.clone().unwrap_or_default(),
                help: match &s.fix {
                    Some(fix) => format!(
                        "run `{fix}` to bring its `{}` table up to date, then apply this study again",
                        s.pin.table
                    ),
                    None => format!(
                        "put the manifest of study `{}` beside {} (its `[study] name` must be `{}`), or change `from`",
                        s.pin.study,
                        self.manifest.path.display(),
                        s.pin.study
                    ),
                },
            }),
        }
    }

    /// `outputs/<study>/`.
    pub fn outputs(&self) -> PathBuf {
        self.outputs_dir.clone()
    }

    /// The lockfile's path.
    pub fn lockfile_path(&self) -> PathBuf {
        self.lockfile_file.clone()
    }

    /// Opens the study's cache (read-only until something commits). A shared cache
    /// ([`Paths::cache`]) is first brought in step with its store both ways, and sends
    /// the store whatever it commits.
    pub fn cache(&self) -> Result<Cache, PipelineError> {
        Ok(open_cache(
            &self.outputs().join("cache"),
            &self.paths,
            &self.manifest.study,
            cache::SyncMode::PullAndPush,
        )?)
    }

    /// The configurations with episodes to run in `plan` that a `--model` flag made
    /// and the catalogue does not list, in the manifest's order.
    fn unlisted(&self, plan: &Plan) -> Vec<plan::Unlisted> {
        let running: std::collections::HashSet<usize> = plan
            .nodes
            .iter()
            .filter(|n| n.action.runs() && n.kind == NodeKind::Execute)
            .filter_map(|n| match self.dag.graph[n.node?].work {
                dag::Work::Execute { config, .. } => Some(config),
                _ => None,
            })
            .collect();
        self.manifest
            .configurations
            .iter()
            .enumerate()
            .filter(|(i, c)| running.contains(i) && self.manifest.unlisted.contains(&c.name))
            .map(|(_, c)| plan::Unlisted {
                configuration: c.name.clone(),
                flag: self
                    .manifest
                    .models
                    .iter()
                    .find(|(name, _)| *name == c.name)
                    .map_or_else(String::new, |(_, flag)| flag.clone()),
                route: c.route(),
            })
            .collect()
    }

    /// The plan against `cache`, with the request estimate.
    pub fn plan(&self, cache: &Cache) -> Result<Plan, PipelineError> {
        let mut p = plan::plan(&self.dag, cache, &self.outputs())?;
        p.manifest = self.manifest.path.display().to_string();
        p.overrides = self.overrides.clone();
        p.models = self.models.configurations.clone();
        p.keys = self
            .manifest
            .configurations
            .iter()
            .filter(|c| c.provider != tbb_provider::ProviderKind::Sim)
            .map(|c| plan::KeyLine {
                configuration: c.name.clone(),
                route: c.route(),
                status: tbb_provider::key_status(c),
            })
            .collect();
        p.manifest_hash = self.manifest.content_hash.clone();
        p.lockfile_hash = self.lockfile_hash.clone();
        p.upstream = self.upstream.clone();
        p.preflight = self.preflight.clone();
        p.skipped_analyses = self
            .manifest
            .skipped_analyses()
            .into_iter()
            .map(|(kind, why)| (kind.name().to_string(), why))
            .collect();
        let design = self.manifest.design();
        p.units = self
            .manifest
            .analyses
            .iter()
            .flat_map(|a| {
                let units = a.kind.kind().units(&a.params, &design);
                units
                    .into_iter()
                    .map(move |u| (a.kind.name().to_string(), u))
            })
            .collect();
        p.estimate = apply::estimate(self, cache, &p);
        p.catalogue = self.manifest.catalogue.display().to_string();
        p.context = context::warnings(self, &std::collections::HashMap::new());
        p.unlisted = self.unlisted(&p);
        p.fingerprint = plan::fingerprint(&p, &self.dag);
        Ok(p)
    }
}

/// What a study makes of its manifest and inputs: its lockfile, DAG and upstream
/// tables' state.
struct Built {
    lockfile_text: String,
    lockfile_hash: String,
    dag: Dag,
    upstream: Vec<upstream::Status>,
    preflight: Vec<(String, String)>,
}

impl Built {
    fn new(
        manifest: &Manifest,
        families: &FamilySet,
        prompts: &Prompts,
        paths: &Paths,
        retries: &[retry::Retry],
    ) -> Built {
        let pins = upstream::pins(manifest, &paths.outputs);
        let lockfile_text =
            lockfile::render(manifest, families, prompts, &paths.prompts, &pins, retries);
        let lockfile_hash = key::hash_hex(lockfile_text.as_bytes());
        let upstream = upstream::statuses(&upstream::Context {
            manifest,
            families,
            prompts,
            paths,
            pins: &pins,
        });
        let preflight = upstream::preflight(manifest, &upstream, &paths.outputs);
        let dag = Dag::build(
            manifest,
            &dag::Inputs {
                families,
                prompts,
                prompts_dir: &paths.prompts,
                lockfile_hash: &lockfile_hash,
                upstream: &pins,
                attempts: &retry::attempts(retries),
            },
        );
        Built {
            lockfile_text,
            lockfile_hash,
            dag,
            upstream,
            preflight,
        }
    }
}

/// The cache in `dir`, kept in step with the shared store `paths` names, if any.
fn open_cache(
    dir: &Path,
    paths: &Paths,
    study: &str,
    sync: cache::SyncMode,
) -> Result<Cache, cache::CacheError> {
    match &paths.cache {
        None => Cache::open(dir),
        Some(url) => {
            let remote = remote::Remote::connect(url, study)?;
            Ok(Cache::open_shared(dir, remote, sync)?.0)
        }
    }
}

/// The repository's smoke study, its outputs and lockfiles in a fresh temporary
/// directory (removed when the returned handle drops): what the unit tests of a
/// study's DAG, plan and scheduler load.
#[cfg(test)]
pub(crate) fn smoke_study() -> (Study, tempfile::TempDir) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let paths = Paths {
        families: repo.join("families"),
        prompts: repo.join("prompts"),
        outputs: dir.path().join("outputs"),
        lockfiles: dir.path().join("lockfiles"),
        cache: None,
    };
    let study = Study::load(&repo.join("manifests/smoke.toml"), &[], &paths)
        .unwrap_or_else(|e| panic!("{e}"));
    (study, dir)
}
