//! `tbb certify MANIFEST [--configurations a,b]`: re-derives every episode of an applied
//! study from its saved responses, offline, and compares each row with the stored one;
//! writes `outputs/<study>/certificates.parquet` (the selected configurations' episodes
//! only, with `--configurations`) and prints a pass/fail summary. Exits
//! nonzero when any episode fails. Progress goes to stderr: a bar on a terminal, plain
//! lines otherwise.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{locked_study_and_cache, Cli};
use crate::pipeline::certify::{self, Options};
use crate::pipeline::reporter::Rendering;
use tbb_report::format::count;

/// Failures listed in the summary; the table has them all.
const SHOWN: usize = 10;

#[derive(Debug, Args)]
pub struct CertifyArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// Override a manifest key, as given to apply; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    #[command(flatten)]
    models: super::models::ModelArgs,
    /// Only these configurations (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    configurations: Vec<String>,
    /// Seconds to wait for an apply on the same outputs (default: wait; 0: fail).
    #[arg(long, value_name = "SECONDS",
          value_parser = |s: &str| crate::limits::LOCK_TIMEOUT_SECONDS.parse_seconds(s))]
    lock_timeout: Option<f64>,
}

pub fn exec(cli: &Cli, args: &CertifyArgs) -> Result<()> {
    let started = Instant::now();
    let models = args.models.models()?;
    let (study, _lock, cache) =
        locked_study_and_cache(cli, &args.manifest, &args.set, &models, args.lock_timeout)?;
    let options = Options {
        configurations: args.configurations.clone(),
        reporter: Rendering::choose(false, std::io::stderr().is_terminal()).on_stderr(),
    };
    let certification = certify::certify(&study, &cache, &options)?;
    let path = certify::write(&study, &certification)?;
    let failures: Vec<_> = certification.failures().collect();
    for c in failures.iter().take(SHOWN) {
        say!("FAILED {}", c.line());
        if c.mismatched.len() > 1 {
            say!("       mismatched fields: {}", c.mismatched.join(", "));
        }
    }
    if failures.len() > SHOWN {
        say!(
            "… and {} more (see {})",
            failures.len() - SHOWN,
            path.display()
        );
    }
    say!(
        "{}Certified study {}: {} episodes checked, {} passed, {} failed in {:.1}s; wrote {}.",
        if failures.is_empty() { "" } else { "\n" },
        study.manifest.study,
        count(certification.checked() as u64),
        count((certification.checked() - failures.len()) as u64),
        count(failures.len() as u64),
        started.elapsed().as_secs_f64(),
        path.display()
    );
    Ok(certification.verdict()?)
}
