//! `tbb apply MANIFEST | PLAN.json [--locked] [--lock-timeout SECONDS] [--json]
//! [--shard INDEX/COUNT | --shard auto [--shards N]]`: re-plans, prints the plan, and
//! runs it; one summary line at the end, or with `--json` a machine-readable summary on
//! stdout (everything else then goes to stderr). Progress goes to stderr: bars on a
//! terminal, plain lines otherwise, JSON events with `--json`
//! (`crate::pipeline::reporter`).
//!
//! With `--shard` (which needs `--locked`) it runs one shard's episodes
//! (`crate::pipeline::shard`), under the outputs lock shared with the other shards, and
//! neither publishes nor writes the lockfile.
//!
//! Ctrl-C once drains the nodes in flight, commits them and exits (130); twice aborts
//! at once (committed nodes are safe either way).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{lock_outputs, runtime, study, Cli};
use crate::pipeline::apply::{self, Options};
use crate::pipeline::episode_claims::ClaimSettings;
use crate::pipeline::plan::{Plan, PLAN_FORMAT};
use crate::pipeline::preflight::{self, Checked};
use crate::pipeline::reporter::Rendering;
use crate::pipeline::shard::{Shard, ShardError, ShardSpec};
use crate::pipeline::{lockfile, retry, NodeKind, PipelineError};

#[derive(Debug, Args)]
#[command(after_help = "\
Exit status: 0 when every node ran or was reused; 1 when some nodes failed (the others
were committed; the failures are listed, and rerun on the next apply); 2 on bad input or
outputs locked by another command; 4 when the preflight found a live route down or
refusing its key (nothing was run; --no-preflight skips the check); 5 when no node
failed but episodes ended as infrastructure failures (recorded as failures of their
configuration; the count, the causes and the `--retry-infra` command that reruns exactly
them are printed) or a route's breaker stopped it (its
remaining episodes stay planned; see --max-infra-failures); 130 when interrupted.

With --json, stdout holds one JSON object when the run ends (exit 0, 1 or 5):
  {\"format\": \"tbb-apply-summary/1\", \"study\", \"manifest\", \"ok\", \"exit_code\",
   \"run\", \"failed\", \"cached\", \"files\", \"episodes\", \"infra_failures\",
   \"infra_causes\", \"stopped_routes\": [{\"route\", \"failures\", \"cause\", \"not_run\"}],
   \"seconds\", \"failures\": [{\"node\", \"cause\", \"root_cause\", \"message\"}],
   \"removed\": [...]}
`run`, `failed` and `cached` count nodes (`failed`: nodes that produced no result, an
error of tbb's, never an episode's verdict); `episodes` holds what the episodes came to,
by where each came from: {\"run\": {...}, \"regraded\": {...}, \"cached\": {...}}, each
{\"episodes\", \"verified_successes\", \"task_failures\", \"infra_failures\",
\"terminal_flags\": {\"truncation\": 2, ...}} (`regraded` and `cached` only when there
are some; `cached` is counted when the apply publishes).
A failure's cause is one of upstream_failed, stored_row_unreadable, compile,
nondeterministic, analysis_refused, io, upstream_study_changed, internal; root_cause is
the cause at the start of a chain of upstream failures. `removed` lists the report files
deleted because the node publishing them failed (a report never disagrees with the
tables beside it).

Progress goes to stderr: bars on a terminal, plain lines when stderr is a pipe or a file,
and with --json one JSON event a line among the plan's text, e.g.
  {\"event\": \"stage_started\", \"stage\": \"episodes\", \"nodes\": 36288}
  {\"event\": \"node_finished\", \"stage\": \"episodes\", \"node\": \"execute[...]\", \"ok\": true}
  {\"event\": \"stage_finished\", \"stage\": \"episodes\", \"done\": 36288, \"failed\": 0,
   \"verdicts\": {\"run\": {\"episodes\": 36288, \"verified_successes\": ..., ...}}}
  {\"event\": \"finished\"}
(stages: compile, episodes, requests, analyses).")]
pub struct ApplyArgs {
    /// The manifest file, or a plan saved by `tbb plan -o`.
    target: PathBuf,
    /// Override a manifest key (`budgets.completion_caps=[4096]`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    #[command(flatten)]
    models: super::models::ModelArgs,
    /// Rerun exactly the episodes that ended as infrastructure failures (each then
    /// records attempt 2, 3, …; the lockfile records the retry). Without it they stay
    /// failures of their configuration.
    #[arg(long)]
    retry_infra: bool,
    /// Refuse to run when the lockfile would change.
    #[arg(long)]
    locked: bool,
    /// Seconds to wait for another apply on the same outputs, or for the publishing
    /// lease of a shared cache (default: wait; 0: fail).
    #[arg(long, value_name = "SECONDS",
          value_parser = |s: &str| crate::limits::LOCK_TIMEOUT_SECONDS.parse_seconds(s))]
    lock_timeout: Option<f64>,
    /// List reused nodes in the printed plan too.
    #[arg(long)]
    show_cached: bool,
    /// Print a machine-readable summary (JSON) on stdout at the end; the plan and the
    /// summary line go to stderr.
    #[arg(long)]
    json: bool,
    /// Run one shard of the study's episodes and publish nothing (needs --locked):
    /// INDEX/COUNT counting from 0 (0/4 … 3/4), or `auto` for the index a Kubernetes
    /// Indexed Job or a Slurm array gives. Once every shard has run, `tbb apply --locked`
    /// merges and publishes.
    #[arg(long, value_name = "INDEX/COUNT|auto")]
    shard: Option<String>,
    /// The number of shards, for --shard auto under Kubernetes (the Job's completions).
    #[arg(long, value_name = "N", requires = "shard")]
    shards: Option<u32>,
    /// Skip the preflight: by default, before the first request, every live route with
    /// episodes to run is checked (as `tbb providers check` does) and the apply stops,
    /// running nothing, when one is down or refuses its key.
    #[arg(long)]
    no_preflight: bool,
    /// Stop scheduling a route after N of its episodes in a row ended as
    /// infrastructure failures (its remaining episodes are not run and stay planned);
    /// 0 never stops. Overrides every route's `max_infra_failures` in the catalogue
    /// (default 8).
    #[arg(long, value_name = "N")]
    max_infra_failures: Option<u32>,
}

/// The shard of `--shard GIVEN [--shards N]` (`auto` reads this process's environment).
pub(super) fn shard_spec(given: &str, shards: Option<u32>) -> Result<ShardSpec, ShardError> {
    ShardSpec::resolve(given, shards, &|name| std::env::var(name).ok())
}

/// What a shard takes of a plan, in one line.
pub(super) fn shard_line(shard: &Shard, plan: &Plan) -> String {
    let runs: Vec<_> = plan
        .nodes
        .iter()
        .filter(|p| p.action.runs() && p.kind == NodeKind::Execute)
        .filter_map(|p| p.node)
        .collect();
    let taken = runs.iter().filter(|i| shard.episodes().contains(i)).count();
    format!(
        "Shard {}: {} of the {} episodes to run fall to this shard ({} in all); it publishes \
         nothing: once every shard has run, `tbb apply --locked` merges and publishes.",
        shard.spec,
        crate::report::format::count(taken as u64),
        crate::report::format::count(runs.len() as u64),
        crate::report::format::count(shard.episodes().len() as u64),
    )
}

/// The format tag of `tbb apply --json`'s summary.
const SUMMARY_FORMAT: &str = "tbb-apply-summary/1";

/// `tbb apply --json`'s summary.
#[derive(serde::Serialize)]
struct JsonSummary<'a> {
    format: &'static str,
    study: &'a str,
    manifest: String,
    ok: bool,
    exit_code: i32,
    seconds: f64,
    #[serde(flatten)]
    summary: &'a apply::Summary,
}

fn read_plan(path: &Path) -> Result<Option<Plan>, PipelineError> {
    // A missing file is not a plan: the manifest loader says it does not exist.
    if !path.exists() {
        return Ok(None);
    }
    let text = tbb_diag::input::read_text(path, tbb_diag::input::MAX_DATA_BYTES).map_err(|e| {
        PipelineError::PlanFile {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    })?;
    if !text.trim_start().starts_with('{') {
        return Ok(None);
    }
    let plan: Plan = serde_json::from_str(&text).map_err(|e| PipelineError::PlanFile {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    if plan.format != PLAN_FORMAT {
        return Err(PipelineError::PlanFile {
            path: path.to_path_buf(),
            message: format!("format `{}`, expected `{PLAN_FORMAT}`", plan.format),
        });
    }
    Ok(Some(plan))
}

pub fn exec(cli: &Cli, args: &ApplyArgs) -> Result<()> {
    let started = Instant::now();
    let shard = match &args.shard {
        Some(_) if !args.locked => return Err(ShardError::Unlocked.into()),
        Some(given) => Some(shard_spec(given, args.shards)?),
        None => None,
    };
    let saved = read_plan(&args.target)?;
    let (manifest, overrides, models) = match &saved {
        Some(_) if !args.set.is_empty() || !args.models.model.is_empty() => {
            return Err(PipelineError::PlanFile {
                path: args.target.clone(),
                message: "a saved plan runs with the overrides and models it was planned with; drop --set and --model, or plan again with them".into(),
            }
            .into());
        }
        Some(p) => (
            PathBuf::from(&p.manifest),
            p.overrides.clone(),
            crate::manifest::Models {
                configurations: p.models.clone(),
            },
        ),
        None => (args.target.clone(), args.set.clone(), args.models.models()?),
    };
    // Everything that can be wrong with the input is checked before anything is written.
    let mut study = study(cli, &manifest, &overrides, &models)?;
    study.check_upstream()?;
    let providers = apply::providers(&study)?;
    let lock_path = study.lockfile_path();
    lockfile::check(&lock_path, &study.lockfile_text, args.locked)?;

    let outputs = study.outputs();
    let _lock = lock_outputs(&outputs, args.lock_timeout, shard.is_some())?;
    let mut cache = study.cache()?;
    if args.retry_infra {
        study = retry_infra(study, &cache, args.locked, &text_to(args.json))?;
    }
    let plan = study.plan(&cache)?;
    let shard = shard.map(|spec| Shard::new(&study.dag, &study.manifest.configurations, spec));
    if let Some(saved) = &saved {
        if saved.fingerprint != plan.fingerprint {
            let differ = saved
                .nodes
                .iter()
                .zip(&plan.nodes)
                .find(|(a, b)| {
                    a.id.as_deref() != Some(&*Plan::id_of(b, &study.dag))
                        || a.key != b.key
                        || a.action != b.action
                })
                .map(|(a, _)| format!("e.g. {}", a.id.as_deref().unwrap_or_default()))
                .unwrap_or_else(|| "the manifest, lockfile or cache changed".into());
            return Err(PipelineError::StalePlan {
                path: args.target.clone(),
                manifest: saved.manifest.clone(),
                detail: format!("it no longer matches the manifest and the cache ({differ})"),
            }
            .into());
        }
    }
    // With --json, stdout is the summary's alone.
    let text = |line: &str| {
        if args.json {
            tell!("{line}");
        } else {
            say!("{line}");
        }
    };
    text(&format!(
        "Applying {} (study {}; configurations from {}):\n",
        manifest.display(),
        study.manifest.study,
        plan.catalogue
    ));
    text(plan.render(&study.dag, args.show_cached).trim_end());
    let mut options = Options {
        reporter: Rendering::choose(args.json, std::io::stderr().is_terminal()).on_stderr(),
        max_infra_failures: args.max_infra_failures,
        claims: cache.shared().map(|_| {
            let what = match &shard {
                Some(shard) => format!("tbb apply {} --shard {}", manifest.display(), shard.spec),
                None => format!("tbb apply {}", manifest.display()),
            };
            let ttl = cli
                .claim_ttl
                .map_or(ClaimSettings::DEFAULT_TTL, Duration::from_secs_f64);
            ClaimSettings::of_this_process(&what, ttl)
        }),
        lease_timeout: args
            .lock_timeout
            .map(|s| Duration::from_secs_f64(s.max(0.0))),
        ..Options::default()
    };
    let writes_lockfile = shard.is_none();
    if let Some(shard) = shard {
        text(&format!("\n{}", shard_line(&shard, &plan)));
        options.filter = Arc::new(shard);
    }
    let rt = runtime()?;
    if !args.no_preflight {
        // Before anything is written: a dead route leaves no trace of this apply.
        let checked = rt.block_on(preflight::check(
            &study,
            &plan,
            options.filter.as_ref(),
            &providers,
        ))?;
        for line in checked {
            match line {
                Checked::Ok { config, detail } => {
                    text(&format!("preflight {config}: ok: {detail}"));
                }
                Checked::Warning { config, detail } => tell!(
                    "preflight {config}: warning: the route answered, but its check failed: \
                     {detail} (going on)"
                ),
            }
        }
    }
    // A shard's --locked checked that the lockfile is this study's already.
    if writes_lockfile {
        lockfile::write(&lock_path, &study.lockfile_text)?;
    }

    let interrupt = options.interrupt.clone();
    rt.spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            interrupt.store(true, Ordering::SeqCst);
            tell!("\nInterrupted: finishing the nodes in flight (Ctrl-C again to abort)…");
            if tokio::signal::ctrl_c().await.is_ok() {
                tell!("Aborted: committed nodes are kept; run apply again to resume.");
                std::process::exit(super::exit_codes::INTERRUPTED);
            }
        }
    });
    let summary = rt.block_on(apply::run(&study, &mut cache, plan, &providers, &options))?;
    for failed in &summary.failures {
        tell!("failed: {}: {}", failed.node, failed.message);
    }
    if !summary.removed.is_empty() {
        tell!(
            "removed the report files of the failed nodes, which would disagree with the tables: {}",
            summary.removed.join(", ")
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    text(&format!("\n{}", summary.line(seconds)));
    if writes_lockfile && summary.failures.is_empty() && summary.stopped_routes.is_empty() {
        text(&published(&outputs));
    }
    for short in &summary.short_prompts {
        tell!("  ! {short}");
    }
    let retry_command = format!(
        "tbb apply {}{}{} --retry-infra",
        manifest.display(),
        overrides
            .iter()
            .map(|(k, v)| format!(" --set '{k}={v}'"))
            .collect::<String>(),
        super::models::ModelArgs {
            model: models
                .configurations
                .iter()
                .map(|(f, _)| f.clone())
                .collect(),
            base_url: args.models.base_url.clone(),
        }
        .flags()
    );
    let infra = infra_failures(&summary, &manifest, &retry_command);
    if args.json {
        let exit_code = if !summary.failures.is_empty() {
            super::exit_codes::NODES_FAILED
        } else if infra.is_some() {
            super::exit_codes::INFRA_FAILURES
        } else {
            super::exit_codes::OK
        };
        let json = JsonSummary {
            format: SUMMARY_FORMAT,
            study: &study.manifest.study,
            manifest: manifest.display().to_string(),
            ok: exit_code == super::exit_codes::OK,
            exit_code,
            seconds,
            summary: &summary,
        };
        // Plain data: serialising cannot fail.
        say!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
    }
    if let Some(failed) = summary.failures.first() {
        return Err(PipelineError::Failed {
            count: summary.failures.len(),
            first: format!("{}: {}", failed.node, failed.message),
        }
        .into());
    }
    match infra {
        Some(error) => Err(error.into()),
        None => Ok(()),
    }
}

/// Prints a line of apply's text: on stdout, or on stderr with `--json`.
fn text_to(json: bool) -> impl Fn(&str) {
    move |line: &str| {
        if json {
            eprintln!("{line}");
        } else {
            say!("{line}");
        }
    }
}

/// `--retry-infra`: the study with the episodes that ended as infrastructure failures
/// due to run again at their next attempt (recorded in the lockfile it writes; with
/// `--locked`, only when that changes nothing).
fn retry_infra(
    study: crate::pipeline::Study,
    cache: &crate::pipeline::Cache,
    locked: bool,
    text: &dyn Fn(&str),
) -> Result<crate::pipeline::Study> {
    let (retries, rerun) = retry::next(&study, cache)?;
    if rerun == 0 {
        text("--retry-infra: no episode ended as an infrastructure failure; nothing to retry.\n");
        return Ok(study);
    }
    text(&format!(
        "--retry-infra: rerunning the {rerun} episodes that ended as infrastructure failures \
         (each records its attempt; the lockfile records the retry).\n"
    ));
    let study = study.with_retries(retries);
    lockfile::check(&study.lockfile_path(), &study.lockfile_text, locked)?;
    Ok(study)
}

/// Where the study's results are, for the last lines of an apply that published them:
/// the folder, its report and its tables.
fn published(outputs: &Path) -> String {
    let mut tables: Vec<String> = std::fs::read_dir(outputs)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter_map(|name| name.strip_suffix(".parquet").map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    tables.sort();
    let mut lines = vec![format!("Outputs:  {}/", outputs.display())];
    let report = outputs.join("report.html");
    if report.is_file() {
        lines.push(format!("Report:   {}", report.display()));
    }
    if !tables.is_empty() {
        lines.push(format!(
            "Tables:   {} Parquet files, <name>.parquet: {}",
            tables.len(),
            tables.join(", ")
        ));
    }
    lines.join("\n")
}

/// The error of an apply whose episodes ended as infrastructure failures or whose
/// route a breaker stopped (everything else committed), if any.
fn infra_failures(
    summary: &apply::Summary,
    manifest: &Path,
    retry_command: &str,
) -> Option<PipelineError> {
    if summary.infra_failures == 0 && summary.stopped_routes.is_empty() {
        return None;
    }
    let causes: Vec<String> = summary
        .infra_causes
        .iter()
        .map(|(cause, n)| format!("{cause} ×{n}"))
        .collect();
    let stopped: String = summary
        .stopped_routes
        .iter()
        .map(|s| {
            format!(
                "; route {} stopped after {} in a row, {} of its episodes not run",
                s.route, s.failures, s.not_run
            )
        })
        .collect();
    let retry = if summary.infra_failures == 0 {
        String::new()
    } else {
        format!("; once it is, `{retry_command}` reruns exactly those episodes")
    };
    let rerun = if summary.stopped_routes.is_empty() {
        String::new()
    } else {
        format!(
            "; `tbb apply {}` runs the episodes not run once the route is back",
            manifest.display()
        )
    };
    Some(PipelineError::InfraFailures {
        count: summary.infra_failures,
        causes: if causes.is_empty() {
            "none".into()
        } else {
            causes.join(", ")
        },
        stopped,
        advice: format!(
            "the episodes that ended as infrastructure failures are recorded as failures of \
             their configuration (`infra_failure` in the episodes table): check the route \
             (`tbb providers check`){retry}{rerun}"
        ),
    })
}
