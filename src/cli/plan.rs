//! `tbb plan MANIFEST [--show-cached] [--json] [-o plan.json] [--shard INDEX/COUNT|auto
//! [--shards N]]`: what `apply` would run, what it would reuse, and why; with `--shard`,
//! how much of it falls to that shard. Read-only.

use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{study_and_cache, Cli, CliError};

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// Override a manifest key (`budgets.completion_caps=[4096]`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    #[command(flatten)]
    models: super::models::ModelArgs,
    /// List the nodes that are reused too.
    #[arg(long)]
    show_cached: bool,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
    /// Save the plan, for `tbb apply PLAN.json` to run exactly it.
    #[arg(short = 'o', long = "out", value_name = "PLAN.json")]
    out: Option<PathBuf>,
    /// Say how many of the episodes to run fall to this shard of `tbb apply --shard`.
    #[arg(long, value_name = "INDEX/COUNT|auto")]
    shard: Option<String>,
    /// The number of shards, for --shard auto under Kubernetes.
    #[arg(long, value_name = "N", requires = "shard")]
    shards: Option<u32>,
}

pub fn exec(cli: &Cli, args: &PlanArgs) -> Result<()> {
    let shard = match &args.shard {
        Some(given) => Some(super::apply::shard_spec(given, args.shards)?),
        None => None,
    };
    let models = args.models.models()?;
    let (study, cache) = study_and_cache(cli, &args.manifest, &args.set, &models)?;
    let mut plan = study.plan(&cache)?;
    let shard = shard.map(|spec| {
        crate::pipeline::shard::Shard::new(&study.dag, &study.manifest.configurations, spec)
    });
    // Serialising 36,000 planned nodes is a third of a cached plan's time: only
    // when asked for.
    let json = if args.json || args.out.is_some() {
        plan.name_nodes(&study.dag);
        serde_json::to_string_pretty(&plan).unwrap_or_default()
    } else {
        String::new()
    };
    if args.json {
        say!("{json}");
    } else {
        say!(
            "Plan for {} (study {}, {} nodes; configurations from {}):\n",
            args.manifest.display(),
            study.manifest.study,
            plan.nodes.iter().filter(|n| n.node.is_some()).count(),
            plan.catalogue
        );
        say!("{}", plan.render(&study.dag, args.show_cached).trim_end());
        if let Some(shard) = &shard {
            say!("\n{}", super::apply::shard_line(shard, &plan));
        }
    }
    if let Some(remote) = cache.shared() {
        let cached: Vec<&str> = plan
            .nodes
            .iter()
            .filter(|n| n.action == crate::pipeline::Action::Cached)
            .map(|n| n.key.as_ref())
            .collect();
        let (in_store, here) = cache.where_cached(&cached);
        // On stderr with --json: stdout is the plan's alone.
        let line = format!(
            "\nShared cache {}: {in_store} of the {} cached nodes are in the store, {here} only \
             in this machine's cache (an apply with the same --cache sends them).",
            remote.url(),
            cached.len()
        );
        if args.json {
            tell!("{}", line.trim_start());
        } else {
            say!("{line}");
        }
    }
    if let Some(out) = &args.out {
        std::fs::write(out, format!("{json}\n")).map_err(|source| CliError::Write {
            path: out.clone(),
            source,
        })?;
        if !args.json {
            say!(
                "\nSaved the plan to {0}; `tbb apply {0}` runs exactly it.",
                out.display()
            );
        }
    }
    // The DAG, the cache index and the plan hold ~100,000 small allocations; freeing
    // them one by one costs more than the plan itself, and the process ends here.
    // None of them owns a file or a lock.
    std::mem::forget((study, cache, plan));
    Ok(())
}
