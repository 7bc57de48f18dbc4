//! `tbb apply MANIFEST | PLAN.json [--locked] [--lock-timeout SECONDS]`: re-plans, prints
//! the plan, and runs it; one summary line at the end.
//!
//! Ctrl-C once drains the nodes in flight, commits them and exits (130); twice aborts
//! at once (committed nodes are safe either way).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{lock_outputs, runtime, study, Cli};
use crate::pipeline::apply::{self, Options};
use crate::pipeline::plan::{Plan, PLAN_FORMAT};
use crate::pipeline::{lockfile, PipelineError};

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The manifest file, or a plan saved by `tbb plan -o`.
    target: PathBuf,
    /// Override a manifest key (`budgets.completion_caps=[4096]`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    /// Refuse to run when the lockfile would change.
    #[arg(long)]
    locked: bool,
    /// Seconds to wait for another apply on the same outputs (default: wait; 0: fail).
    #[arg(long, value_name = "SECONDS")]
    lock_timeout: Option<f64>,
    /// List reused nodes in the printed plan too.
    #[arg(long)]
    show_cached: bool,
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
    let saved = read_plan(&args.target)?;
    let (manifest, overrides) = match &saved {
        Some(_) if !args.set.is_empty() => {
            return Err(PipelineError::PlanFile {
                path: args.target.clone(),
                message: "a saved plan runs with the overrides it was planned with; drop --set, or plan again with it".into(),
            }
            .into());
        }
        Some(p) => (PathBuf::from(&p.manifest), p.overrides.clone()),
        None => (args.target.clone(), args.set.clone()),
    };
    // Everything that can be wrong with the input is checked before anything is written.
    let study = study(cli, &manifest, &overrides)?;
    study.check_upstream()?;
    let providers = apply::providers(&study)?;
    let lock_path = study.lockfile_path();
    lockfile::check(&lock_path, &study.lockfile_text, args.locked)?;

    let outputs = study.outputs();
    let _lock = lock_outputs(&outputs, args.lock_timeout)?;
    let mut cache = study.cache()?;
    let plan = study.plan(&cache)?;
    if let Some(saved) = &saved {
        if saved.fingerprint != plan.fingerprint {
            let differ = saved
                .nodes
                .iter()
                .zip(&plan.nodes)
                .find(|(a, b)| a.id != b.id || a.key != b.key || a.action != b.action)
                .map(|(a, _)| format!("e.g. {}", a.id))
                .unwrap_or_else(|| "the manifest, lockfile or cache changed".into());
            return Err(PipelineError::StalePlan {
                path: args.target.clone(),
                manifest: saved.manifest.clone(),
                detail: format!("it no longer matches the manifest and the cache ({differ})"),
            }
            .into());
        }
    }
    say!(
        "Applying {} (study {}; configurations from {}):\n",
        manifest.display(),
        study.manifest.study,
        plan.catalogue
    );
    say!("{}", plan.render(args.show_cached).trim_end());
    lockfile::write(&lock_path, &study.lockfile_text)?;

    let options = Options {
        progress: true,
        ..Options::default()
    };
    let rt = runtime()?;
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
    let summary = rt.block_on(apply::run(&study, &mut cache, &plan, &providers, &options))?;
    for (id, why) in &summary.failures {
        tell!("failed: {id}: {why}");
    }
    say!("\n{}", summary.line(started.elapsed().as_secs_f64()));
    for short in &summary.short_prompts {
        tell!("  ! {short}");
    }
    if let Some((id, why)) = summary.failures.first() {
        return Err(PipelineError::Failed {
            count: summary.failures.len(),
            first: format!("{id}: {why}"),
        }
        .into());
    }
    Ok(())
}
