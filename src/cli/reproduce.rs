//! `tbb reproduce MANIFEST`: recomputes every published table of an applied study from
//! its stored episode rows in a scratch directory (`outputs/<study>/reproduce/`) and
//! compares each with the published one, typed field by field and byte for byte;
//! prints a summary and exits nonzero when any differs.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{locked_study_and_cache, Cli};
use crate::pipeline::reproduce;

#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// Override a manifest key, as given to apply; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    #[command(flatten)]
    models: super::models::ModelArgs,
    /// Seconds to wait for an apply on the same outputs (default: wait; 0: fail).
    #[arg(long, value_name = "SECONDS",
          value_parser = |s: &str| crate::limits::LOCK_TIMEOUT_SECONDS.parse_seconds(s))]
    lock_timeout: Option<f64>,
}

pub fn exec(cli: &Cli, args: &ReproduceArgs) -> Result<()> {
    let started = Instant::now();
    let models = args.models.models()?;
    let (study, _lock, cache) =
        locked_study_and_cache(cli, &args.manifest, &args.set, &models, args.lock_timeout)?;
    let reproduction = reproduce::reproduce(&study, &cache)?;
    let failures: Vec<_> = reproduction.failures().collect();
    for f in &failures {
        say!("FAILED {}", f.line());
    }
    let identical = reproduction
        .files
        .iter()
        .filter(|f| f.bytes_identical)
        .count();
    say!(
        "{}Reproduced study {}: {} files checked ({} byte-identical), {} passed, {} failed in {:.1}s; recomputed files in {}.",
        if failures.is_empty() { "" } else { "\n" },
        study.manifest.study,
        reproduction.files.len(),
        identical,
        reproduction.files.len() - failures.len(),
        failures.len(),
        started.elapsed().as_secs_f64(),
        reproduction.scratch.display()
    );
    Ok(reproduction.verdict()?)
}
