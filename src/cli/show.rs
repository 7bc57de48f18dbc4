//! `tbb show MANIFEST [EPISODE] [--config … --family … --v … --w … --d … --arm …
//! --repeat …] [--html [PATH]]`: one stored episode, read like a person — the system
//! prompt, the request, every request and response, every observation, the verdict
//! and the limits with their headroom (`crate::show` builds and renders it).
//!
//! `--html` without a path writes `outputs/<study>/show/<key prefix>.html` (not the
//! report's `episodes/` directory, which apply owns).

use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{study_and_cache, Cli, CliError};
use crate::show::{self, Selector};
use crate::tables::write_text;

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// A prefix of the episode's key (`transcript_ref` in episodes.parquet).
    episode: Option<String>,
    /// Select by configuration.
    #[arg(long)]
    config: Option<String>,
    /// Select by family.
    #[arg(long)]
    family: Option<String>,
    /// Select by visible menu size.
    #[arg(long)]
    v: Option<String>,
    /// Select by workflow level (low, medium, high).
    #[arg(long)]
    w: Option<String>,
    /// Select by encoding (raw, compact, typed, linked).
    #[arg(long)]
    d: Option<String>,
    /// Select by routing difficulty (low, high).
    #[arg(long)]
    r: Option<String>,
    /// Select by frontier depth.
    #[arg(long)]
    depth: Option<String>,
    /// Select by arm name.
    #[arg(long)]
    arm: Option<String>,
    /// Select by completion cap.
    #[arg(long)]
    cap: Option<String>,
    /// Select by repeat.
    #[arg(long)]
    repeat: Option<String>,
    /// Select by design block.
    #[arg(long)]
    block: Option<String>,
    /// Write the episode as one self-contained HTML page (default
    /// outputs/<study>/show/<key prefix>.html) instead of printing it.
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    #[allow(clippy::option_option)]
    html: Option<Option<PathBuf>>,
    /// Override a manifest key, as given to apply; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    #[command(flatten)]
    models: super::models::ModelArgs,
}

impl ShowArgs {
    fn selector(&self) -> Selector {
        let fields = [
            ("cfg", &self.config),
            ("family", &self.family),
            ("v", &self.v),
            ("w", &self.w),
            ("d", &self.d),
            ("r", &self.r),
            ("depth", &self.depth),
            ("block", &self.block),
            ("arm", &self.arm),
            ("cap", &self.cap),
            ("rep", &self.repeat),
        ];
        Selector {
            prefix: self.episode.clone(),
            fields: fields
                .into_iter()
                .filter_map(|(k, v)| v.as_ref().map(|v| (k, v.clone())))
                .collect(),
        }
    }
}

pub fn exec(cli: &Cli, args: &ShowArgs) -> Result<()> {
    let (study, cache) = study_and_cache(cli, &args.manifest, &args.set, &args.models.models()?)?;
    let execute = show::locate(&study, &args.selector())?;
    let view = show::load(&study, &cache, execute)?;
    match &args.html {
        None => {
            use std::io::Write as _;
            let _ = std::io::stdout()
                .lock()
                .write_all(show::text::render(&view).as_bytes());
        }
        Some(path) => {
            let (path, placed) = match path {
                Some(p) => (p.clone(), show::html::Placed::Elsewhere),
                None => (
                    study
                        .outputs()
                        .join("show")
                        .join(show::page_name(&view.key)),
                    show::html::Placed::InStudy { matched: &[] },
                ),
            };
            write_text(&path, &show::html::render(&view, placed)).map_err(|source| {
                CliError::Write {
                    path: path.clone(),
                    source,
                }
            })?;
            say!("Wrote {}.", path.display());
        }
    }
    Ok(())
}
