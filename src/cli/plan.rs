//! `tbb plan MANIFEST [--show-cached] [--json] [-o plan.json]`: what `apply` would run,
//! what it would reuse, and why. Read-only.

use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{study, Cli, CliError};

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// Override a manifest key (`budgets.completion_caps=[4096]`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    /// List the nodes that are reused too.
    #[arg(long)]
    show_cached: bool,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
    /// Save the plan, for `tbb apply PLAN.json` to run exactly it.
    #[arg(short = 'o', long = "out", value_name = "PLAN.json")]
    out: Option<PathBuf>,
}

pub fn exec(cli: &Cli, args: &PlanArgs) -> Result<()> {
    let study = study(cli, &args.manifest, &args.set)?;
    let cache = study.cache()?;
    let plan = study.plan(&cache);
    let json = serde_json::to_string_pretty(&plan).unwrap_or_default();
    if args.json {
        say!("{json}");
    } else {
        say!(
            "Plan for {} (study {}, {} nodes):\n",
            args.manifest.display(),
            study.manifest.study,
            plan.nodes.iter().filter(|n| n.node.is_some()).count()
        );
        say!("{}", plan.render(args.show_cached).trim_end());
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
    Ok(())
}
