//! `tbb show MANIFEST [EPISODE] [--config … --family … --v … --w … --d … --arm …
//! --repeat …] [--html [PATH]]`: one stored episode, read like a person — the system
//! prompt, the request, every request and response, every observation, the verdict
//! and the limits with their headroom (`crate::show` builds and renders it).
//!
//! `--html` without a path writes `outputs/<study>/show/<key prefix>.html` (not the
//! report's `episodes/` directory, which apply owns). `--all --html` writes there the
//! page of every episode the selectors match (and `--verdict`, `--flag` keep): the
//! rows a reader filtered in `episodes.html`, whose keys link to that folder.
//!
//! A key prefix of a played ToolSandbox scenario shows that episode instead (its
//! conversation, a live user's and its grade from the saved world), as text or, with
//! `--html`, as a page at the same places (`crate::show::scenario`).

use std::path::PathBuf;

use clap::Args;
use miette::Result;

use super::manifest::parse_set;
use super::{study_and_cache, Cli, CliError};
use crate::show::{self, Selector};
use crate::tables::write_text;
use tbb_report::format::count;

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
    /// With --html: write the page of every episode the selectors match (every
    /// episode of the study when none is given) into outputs/<study>/show/.
    #[arg(long, requires = "html")]
    all: bool,
    /// With --all: only the episodes that passed, or only those that failed.
    #[arg(long, value_enum, requires = "all")]
    verdict: Option<Verdict>,
    /// With --all: only the episodes this terminal flag ended (`none`, `infra_failure`,
    /// `truncation`, `budget_or_call_limit`, `turn_limit`, `infeasibility`,
    /// `wrong_conclusion`, `contract_break`).
    #[arg(long, value_name = "FLAG", requires = "all",
          value_parser = clap::builder::PossibleValuesParser::new(show::terminal_flag_names()))]
    flag: Option<String>,
    /// Override a manifest key, as given to apply; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    #[command(flatten)]
    models: super::models::ModelArgs,
}

/// A verdict, as `--verdict` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Verdict {
    /// Verified task success.
    Pass,
    /// Anything else.
    Fail,
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
    if args.all {
        return write_all(&study, &cache, args);
    }
    // A key prefix may name a played ToolSandbox scenario.
    let prefix_alone = args.selector().fields.is_empty();
    if let Some(found) = args
        .episode
        .as_deref()
        .filter(|_| prefix_alone)
        .and_then(|p| show::scenario::locate(&study, p))
    {
        let view = show::scenario::load(&study, &cache, found?)?;
        match &args.html {
            None => {
                use std::io::Write as _;
                let _ = std::io::stdout()
                    .lock()
                    .write_all(show::scenario::text::render(&view).as_bytes());
            }
            Some(path) => {
                let path = path.clone().unwrap_or_else(|| {
                    study
                        .outputs()
                        .join(tbb_tables::paths::SHOWN_PAGES)
                        .join(show::page_name(&view.key))
                });
                write_text(&path, &show::scenario::html::render(&view)).map_err(|source| {
                    CliError::Write {
                        path: path.clone(),
                        source,
                    }
                })?;
                say!("Wrote {}.", path.display());
            }
        }
        return Ok(());
    }
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
                        .join(tbb_tables::paths::SHOWN_PAGES)
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

/// `--all --html`: the page of every selected episode, into `outputs/<study>/show/`.
fn write_all(
    study: &crate::pipeline::Study,
    cache: &crate::pipeline::cache::Cache,
    args: &ShowArgs,
) -> Result<()> {
    let dir = study.outputs().join(tbb_tables::paths::SHOWN_PAGES);
    if let Some(Some(_)) = &args.html {
        return Err(CliError::ShowAllWithPath { dir }.into());
    }
    let executes = show::select(study, &args.selector())?;
    let filter = show::VerdictFilter {
        passed: args.verdict.map(|v| v == Verdict::Pass),
        flag: args.flag.clone(),
    };
    let written = show::write_pages(study, cache, &executes, &filter, &dir)?;
    let mut also = Vec::new();
    if written.left_out > 0 {
        also.push(format!(
            "{} left out by --verdict/--flag",
            count(written.left_out as u64)
        ));
    }
    if written.not_run > 0 {
        also.push(format!(
            "{} not run yet (`tbb apply {}` runs them)",
            count(written.not_run as u64),
            args.manifest.display()
        ));
    }
    say!(
        "Wrote {} episode page{} ({}) into {}{}.",
        count(written.pages as u64),
        if written.pages == 1 { "" } else { "s" },
        megabytes(written.bytes),
        dir.display(),
        if also.is_empty() {
            String::new()
        } else {
            format!("; {}", also.join("; "))
        }
    );
    Ok(())
}

/// `3.2 MB`, `0.04 MB`: a size for a person.
fn megabytes(bytes: u64) -> String {
    let mb = bytes as f64 / 1e6;
    if mb >= 10.0 {
        format!("{mb:.0} MB")
    } else if mb >= 0.1 {
        format!("{mb:.1} MB")
    } else {
        format!("{mb:.2} MB")
    }
}
