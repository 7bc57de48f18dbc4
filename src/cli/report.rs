//! `tbb report MANIFEST [--lock-timeout SECONDS]`: writes `report.md`, `report.html`,
//! the figures and the linked episode pages exactly as `tbb apply` published them — the
//! report analysis recorded in the cache, through the one publisher apply uses — under
//! the outputs lock apply takes. Use it to restore a report that was deleted or
//! overwritten without running anything else.
//!
//! It refuses when anything the report reads must run first (`tbb apply` then), so the
//! report it writes is always apply's, and the next plan has nothing to do for it.

use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{lock_outputs, study, Cli};
use crate::pipeline::publish::republish_report;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// Override a manifest key; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    #[command(flatten)]
    models: super::models::ModelArgs,
    /// Seconds to wait for another command holding the same outputs (default: wait;
    /// 0: fail).
    #[arg(long, value_name = "SECONDS")]
    lock_timeout: Option<f64>,
}

pub fn exec(cli: &Cli, args: &ReportArgs) -> Result<()> {
    let study = study(cli, &args.manifest, &args.set, &args.models.models()?)?;
    let outputs = study.outputs();
    let _lock = lock_outputs(&outputs, args.lock_timeout, false)?;
    let mut cache = study.cache()?;
    let plan = study.plan(&cache)?;
    let files = republish_report(&study, &mut cache, &plan)?;
    let figures = files.iter().filter(|f| f.ends_with(".svg")).count();
    let pages = files.iter().filter(|f| f.starts_with("episodes/")).count();
    let index = if files.iter().any(|f| f == crate::report::index::FILE) {
        format!("{}, ", crate::report::index::FILE)
    } else {
        String::new()
    };
    say!(
        "Wrote {}, report.md, {index}{figures} figures and {pages} episode pages: the report `tbb apply` recorded.",
        outputs.join("report.html").display(),
    );
    Ok(())
}
