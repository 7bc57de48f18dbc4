//! `tbb report MANIFEST`: renders `report.md`, `report.html` and the figures from the
//! analysis tables already under `outputs/<study>/` — the report node of `apply`, on
//! demand (say, after editing a table in a notebook). `apply` republishes its own
//! report on the next run, since these files do not carry its node key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{study, Cli, CliError};
use crate::store::write_text;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// Override a manifest key; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
}

/// Tables that are not analysis results: the analyses' inputs, and what `tbb certify`
/// writes. (The report analysis of `tbb apply` never sees them; `tbb reproduce`
/// compares a report rendered here with the one it renders from the stored rows.)
const NOT_ANALYSES: [&str; 4] = ["variants", "episodes", "requests", "certificates"];

pub fn exec(cli: &Cli, args: &ReportArgs) -> Result<()> {
    let study = study(cli, &args.manifest, &args.set)?;
    let outputs = study.outputs();
    let mut tables = BTreeMap::new();
    let listing = std::fs::read_dir(&outputs).map_err(|source| CliError::Write {
        path: outputs.clone(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = listing
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    paths.sort();
    for path in paths {
        let Some(name) = path.file_stem().map(|s| s.to_string_lossy().to_string()) else {
            continue;
        };
        if NOT_ANALYSES.contains(&name.as_str()) {
            continue;
        }
        let (batches, _) = crate::store::read_table(&path)?;
        let schema = match batches.first() {
            Some(b) => b.schema(),
            None => continue,
        };
        // The report reads one batch per table; arrow-select (already built for
        // parquet) joins the reader's batches.
        let batch = arrow_select::concat::concat_batches(&schema, &batches)
            .map_err(|e| miette::miette!("cannot read {}: {e}", path.display()))?;
        tables.insert(name, batch);
    }
    if tables.is_empty() {
        return Err(miette::miette!(
            help = format!("run `tbb apply {}` first", args.manifest.display()),
            "there are no analysis tables under {}",
            outputs.display()
        ));
    }
    let skipped: Vec<(&str, String)> = crate::analysis::skipped(&study.manifest)
        .into_iter()
        .map(|(kind, why)| (kind.name(), why))
        .collect();
    let files = crate::report::render(&study.manifest.study, &tables, &skipped)?.into_files();
    for (name, text) in &files {
        let path = outputs.join(name);
        write_text(&path, text).map_err(|source| CliError::Write { path, source })?;
    }
    say!(
        "Wrote {} and {} figures from {} tables.",
        outputs.join("report.html").display(),
        files.len() - 2,
        tables.len()
    );
    Ok(())
}
