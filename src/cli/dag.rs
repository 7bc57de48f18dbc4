//! `tbb dag MANIFEST --dot`: a study's DAG in Graphviz DOT (`| dot -Tsvg > dag.svg`).

use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{study, Cli};

#[derive(Debug, Args)]
pub struct DagArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// Print Graphviz DOT (the only format).
    #[arg(long, required = true)]
    dot: bool,
    /// Override a manifest key; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    #[command(flatten)]
    models: super::models::ModelArgs,
}

pub fn exec(cli: &Cli, args: &DagArgs) -> Result<()> {
    let study = study(cli, &args.manifest, &args.set, &args.models.models()?)?;
    say!("{}", study.dag.dot().trim_end());
    Ok(())
}
