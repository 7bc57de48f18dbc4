//! `tbb reference-trace FAMILY --v --w --d [-o FILE]`.

use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::{family, load, CellArgs, Cli, CliError};
use crate::compile::compile;
use crate::grade::reference::reference_trace;

#[derive(Debug, Args)]
pub struct ReferenceTraceArgs {
    /// Family name.
    family: String,
    #[command(flatten)]
    cell: CellArgs,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn exec(cli: &Cli, args: &ReferenceTraceArgs) -> Result<()> {
    let set = load(&cli.families)?;
    let fam = family(&set, &args.family)?;
    let variant = compile(fam, &args.cell.cell()).map_err(CliError::from)?;
    let trace = reference_trace(&variant);
    let text = serde_json::to_string_pretty(&trace).unwrap_or_default();
    match &args.output {
        Some(path) => std::fs::write(path, text + "\n").map_err(|source| CliError::Write {
            path: path.clone(),
            source,
        })?,
        None => say!("{text}"),
    }
    Ok(())
}
