//! `tbb status MANIFEST`: how much of a study is done, by node kind, and which tables
//! are published.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{print_json, study_and_cache, Cli};
use crate::pipeline::{Action, NodeKind};
use tbb_report::format::count;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// Override a manifest key; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    #[command(flatten)]
    models: super::models::ModelArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn exec(cli: &Cli, args: &StatusArgs) -> Result<()> {
    let (study, cache) = study_and_cache(cli, &args.manifest, &args.set, &args.models.models()?)?;
    let plan = study.plan(&cache)?;
    let mut by_kind: BTreeMap<NodeKind, (usize, usize)> = BTreeMap::new();
    for n in plan.nodes.iter().filter(|n| n.node.is_some()) {
        let e = by_kind.entry(n.kind).or_default();
        e.1 += 1;
        if n.action == Action::Cached {
            e.0 += 1;
        }
    }
    let lock = study.lockfile_path();
    let lock_state = match tbb_diag::input::read_text(&lock, tbb_diag::input::MAX_DATA_BYTES) {
        Ok(text) if text == study.lockfile_text => "up to date",
        Ok(_) => "would change",
        Err(_) => "missing",
    };
    if args.json {
        let kinds: BTreeMap<&str, serde_json::Value> = by_kind
            .iter()
            .map(|(k, (done, total))| (k.name(), serde_json::json!({"done": done, "total": total})))
            .collect();
        print_json(&serde_json::json!({
            "study": study.manifest.study,
            "nodes": kinds,
            "orphaned": plan.count(Action::Orphan),
            "lockfile": {"path": lock.display().to_string(), "state": lock_state},
            "complete": plan.is_empty(),
        }));
        return Ok(());
    }
    say!(
        "Study {} ({}):",
        study.manifest.study,
        args.manifest.display()
    );
    for (kind, (done, total)) in &by_kind {
        let pct = if *total == 0 {
            100.0
        } else {
            100.0 * *done as f64 / *total as f64
        };
        say!(
            "  {:<9} {:>7} / {:<7} done ({pct:.0}%)",
            kind.name(),
            count(*done as u64),
            count(*total as u64)
        );
    }
    if plan.count(Action::Orphan) > 0 {
        say!(
            "  orphaned  {} (kept in the cache)",
            plan.count(Action::Orphan)
        );
    }
    say!("  lockfile  {} ({lock_state})", lock.display());
    say!("  outputs   {}", study.outputs().display());
    say!(
        "{}",
        if plan.is_empty() {
            "Complete: `tbb plan` has nothing to run."
        } else {
            "Incomplete: run `tbb plan` to see what would run and why."
        }
    );
    Ok(())
}
