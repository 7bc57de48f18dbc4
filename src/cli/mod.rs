//! Command-line plumbing: clap definitions, one file per command, printing. No benchmark
//! logic lives here: each command calls the library and formats what comes back.

/// `println!` that does not panic when stdout is closed early (`tbb ... | head`): a
/// reader that has gone away is not an error of ours. What it prints is escaped
/// ([`tbb_diag::terminal::escape`]): lines quote what models, tools and servers wrote.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(std::io::stdout().lock(), "{}", tbb_diag::terminal::escape(&line));
    }};
}

/// `eprintln!` escaped like [`say!`]: failures and warnings quote servers and files.
macro_rules! tell {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(std::io::stderr().lock(), "{}", tbb_diag::terminal::escape(&line));
    }};
}

mod apply;
mod audit;
mod certify;
mod compile;
mod configs;
mod dag;
mod explain;
mod families;
mod grade;
mod manifest;
mod models;
mod plan;
mod reference_trace;
mod report;
mod reproduce;
mod run_episode;
mod run_scenario;
mod show;
mod status;

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use miette::{Diagnostic, Result};
use thiserror::Error;

use crate::compile::{Cell, CompileError, Encoding, Routing, Workflow};
use crate::family::FamilySet;

/// Exit codes, in one place.
pub mod exit_codes {
    /// Success.
    pub const OK: i32 = 0;
    /// Some nodes of an apply failed (the others were committed).
    pub const NODES_FAILED: i32 = 1;
    /// A user error: bad input, unknown names, unreadable files.
    pub const USER_ERROR: i32 = 2;
    /// A check found a difference: `certify` an episode that does not re-derive,
    /// `reproduce` a table that does not, `audit` a family that breaks a guarantee.
    pub const CHECK_FAILED: i32 = 3;
    /// `apply`'s preflight found a live route down or refusing its key: nothing ran.
    pub const ROUTE_UNAVAILABLE: i32 = 4;
    /// `apply` committed everything, but episodes ended as infrastructure failures
    /// or a route's breaker stopped it.
    pub const INFRA_FAILURES: i32 = 5;
    /// Interrupted by Ctrl-C (128 + SIGINT).
    pub const INTERRUPTED: i32 = 130;

    /// The exit code of an error.
    pub fn of(report: &miette::Report) -> i32 {
        use crate::pipeline::PipelineError;
        use crate::pipeline::{certify::CertifyError, reproduce::ReproduceError};
        if matches!(
            report.downcast_ref::<CertifyError>(),
            Some(CertifyError::Failed { .. })
        ) || matches!(
            report.downcast_ref::<ReproduceError>(),
            Some(ReproduceError::Failed { .. })
        ) || report.downcast_ref::<super::audit::AuditFailed>().is_some()
        {
            return CHECK_FAILED;
        }
        match report.downcast_ref::<PipelineError>() {
            Some(PipelineError::Interrupted { .. }) => INTERRUPTED,
            Some(PipelineError::Failed { .. }) => NODES_FAILED,
            Some(PipelineError::RouteUnavailable { .. }) => ROUTE_UNAVAILABLE,
            Some(PipelineError::InfraFailures { .. }) => INFRA_FAILURES,
            _ => USER_ERROR,
        }
    }
}

/// tbb: ToolBottleneckBench — compile matched task variants, grade episodes exactly.
#[derive(Debug, Parser)]
#[command(name = "tbb", version, about, long_about = None)]
pub struct Cli {
    /// Directory of the task families.
    #[arg(long, global = true, env = "TBB_FAMILIES", default_value = "families")]
    pub families: PathBuf,
    /// The configuration catalogue of the commands without a manifest (default
    /// manifests/configurations.toml). A manifest names its own (`catalogue` under
    /// `[study]`); given with a manifest, this must name the same file.
    #[arg(long, global = true, env = "TBB_CONFIGS")]
    pub configs: Option<PathBuf>,
    /// Directory of the system prompts.
    #[arg(long, global = true, env = "TBB_PROMPTS", default_value = "prompts")]
    pub prompts: PathBuf,
    /// Root of everything studies write (`<outputs>/<study>/`).
    #[arg(long, global = true, env = "TBB_OUTPUTS", default_value = "outputs")]
    pub outputs: PathBuf,
    /// Directory of the lockfiles.
    #[arg(
        long,
        global = true,
        env = "TBB_LOCKFILES",
        default_value = "lockfiles"
    )]
    pub lockfiles: PathBuf,
    /// A cache shared through object storage, which `<outputs>/<study>/cache/` is kept
    /// in step with: s3://BUCKET/PREFIX, gs://…, az://…, file:///DIR. Credentials come
    /// only from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
    /// AWS_ENDPOINT_URL, AWS_REGION, AWS_ALLOW_HTTP; GOOGLE_*, AZURE_*).
    #[arg(long, global = true, env = "TBB_CACHE", value_name = "URL")]
    pub cache: Option<String>,
    /// On a shared cache: how long a claim on a live episode, or the publishing lease,
    /// outlives its holder's last renewal (default 60). A process that dies holding
    /// one delays the others this long; the machines' clocks must agree well within it.
    #[arg(long, global = true, env = "TBB_CLAIM_TTL", value_name = "SECONDS",
          value_parser = |s: &str| crate::limits::CLAIM_TTL_SECONDS.parse_seconds(s))]
    pub claim_ttl: Option<f64>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the task families.
    Families(families::FamiliesArgs),
    /// Compile one family at one cell and print the variant.
    Compile(compile::CompileArgs),
    /// Grade a trace file.
    Grade(grade::GradeArgs),
    /// Write the trace of a variant's reference program with the correct answer.
    ReferenceTrace(reference_trace::ReferenceTraceArgs),
    /// List the configurations of the catalogue.
    Configs(configs::ConfigsArgs),
    /// Run one episode of one configuration on one variant and grade it.
    RunEpisode(Box<run_episode::RunEpisodeArgs>),
    /// Play one ToolSandbox scenario with one configuration and grade it, or grade a
    /// saved world again.
    RunScenario(Box<run_scenario::RunScenarioArgs>),
    /// Live provider routes.
    Providers {
        #[command(subcommand)]
        command: configs::ProvidersCommand,
    },
    /// Study manifests.
    Manifest {
        #[command(subcommand)]
        command: manifest::ManifestCommand,
    },
    /// Show what `apply` would run, what it would reuse, and why.
    Plan(plan::PlanArgs),
    /// Run what changed: episodes, grades, analyses, tables.
    Apply(apply::ApplyArgs),
    /// How much of a study is done.
    Status(status::StatusArgs),
    /// Why a node would rerun: the diff of its cached and current key inputs.
    Explain(explain::ExplainArgs),
    /// Print a study's DAG.
    Dag(dag::DagArgs),
    /// Write report.md, report.html and the figures exactly as `apply` published them.
    Report(report::ReportArgs),
    /// Run the audits of the generator and the grader over the families.
    Audit(audit::AuditArgs),
    /// Re-derive every episode of an applied study from its saved responses, offline.
    Certify(certify::CertifyArgs),
    /// Recompute every published table of an applied study from its stored rows and compare.
    Reproduce(reproduce::ReproduceArgs),
    /// Show one stored episode: prompt, requests, responses, observations, verdict, limits.
    Show(Box<show::ShowArgs>),
}

/// The levels of a cell, as flags.
#[derive(Debug, Args)]
pub struct CellArgs {
    /// Visible menu size: 8, 32 or 128.
    #[arg(long, default_value_t = 8)]
    pub v: u16,
    /// Workflow pressure: low, medium, high.
    #[arg(long, default_value = "low")]
    pub w: Workflow,
    /// Returned-record encoding: raw, compact, typed, linked.
    #[arg(long, default_value = "raw")]
    pub d: Encoding,
    /// Routing difficulty: low, high.
    #[arg(long, default_value = "low")]
    pub r: Routing,
    /// Frontier depth in required calls (2, 6, 14, 30), overriding --w.
    #[arg(long)]
    pub depth: Option<u8>,
}

impl CellArgs {
    fn cell(&self) -> Cell {
        Cell {
            v: self.v,
            w: self.w,
            d: self.d,
            r: self.r,
            depth: self.depth,
        }
    }
}

/// Where an episode run outside a study's apply sits: its cap, its repeat and the
/// study it belongs to, as `run-episode` and `run-scenario` take them.
#[derive(Debug, Args)]
pub struct EpisodeArgs {
    /// Completion cap per request, in tokens (1 to 1000000).
    #[arg(long, default_value_t = tbb_harness::COMPLETION_CAP,
          value_parser = |s: &str| crate::limits::COMPLETION_CAP.parse::<u32>(s))]
    pub cap: u32,
    /// Repeat index, from 0.
    #[arg(long, default_value_t = 0,
          value_parser = |s: &str| crate::limits::REPEAT_INDEX.parse::<u32>(s))]
    pub repeat: u32,
    /// The study the episode belongs to (its manifest's `[study] name`): part of the
    /// episode's key and seed, so this reruns that study's episode. Without it, the
    /// episode belongs to no study.
    #[arg(long)]
    pub study: Option<String>,
}

/// Errors of the command line itself.
#[derive(Debug, Error, Diagnostic)]
pub enum CliError {
    /// Unknown family.
    #[error("there is no family `{name}`")]
    #[diagnostic(code(tbb::cli::unknown_family), help("{}", .suggestion.as_deref().map_or("run `tbb families` to list them".to_string(), |s| format!("did you mean `{s}`?"))))]
    UnknownFamily {
        /// What was asked for.
        name: String,
        /// The closest name.
        suggestion: Option<String>,
    },
    /// Compilation failed.
    #[error(transparent)]
    #[diagnostic(code(tbb::compile))]
    Compile(#[from] CompileError),
    /// A trace could not be read.
    #[error("cannot read trace {}: {message}", path.display())]
    #[diagnostic(
        code(tbb::cli::trace),
        help("a trace is the JSON that `tbb reference-trace` or the harness writes")
    )]
    Trace {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A disabled configuration was asked for without `--allow-disabled`.
    #[error("configuration `{name}` is disabled in the catalogue")]
    #[diagnostic(
        code(tbb::cli::disabled),
        help(
            "pass --allow-disabled to run it anyway (a disabled configuration is usually \
             a paid route), or set `enabled = true` for it in the catalogue"
        )
    )]
    Disabled {
        /// The configuration.
        name: String,
    },
    /// `--configs`/`TBB_CONFIGS` names another catalogue than the manifest's.
    #[error(
        "--configs (or TBB_CONFIGS) names {}, but {} reads its configurations from {}",
        given.display(),
        manifest.display(),
        catalogue.display()
    )]
    #[diagnostic(
        code(tbb::cli::catalogue),
        help(
            "a manifest names its catalogue (`catalogue` under [study], relative to the \
             manifest, default configurations.toml beside it): set it there or with \
             `--set study.catalogue=PATH`, and drop --configs / unset TBB_CONFIGS"
        )
    )]
    CatalogueMismatch {
        /// What `--configs` named.
        given: PathBuf,
        /// The manifest.
        manifest: PathBuf,
        /// The catalogue it names.
        catalogue: PathBuf,
    },
    /// `tbb show --all` was given a page path.
    #[error("--all writes a page per episode into {}: give --html without a path", dir.display())]
    #[diagnostic(
        code(tbb::cli::show_all_path),
        help("drop the path after --html, or drop --all to write the one episode's page there")
    )]
    ShowAllWithPath {
        /// Where --all writes.
        dir: PathBuf,
    },
    /// Output could not be written.
    #[error("cannot write {}: {source}", path.display())]
    #[diagnostic(code(tbb::cli::write))]
    Write {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// Parses the arguments and runs the command.
pub fn run() -> Result<()> {
    let cli = Cli::parse();
    match &cli.command {
        Command::Families(a) => families::exec(&cli, a),
        Command::Compile(a) => compile::exec(&cli, a),
        Command::Grade(a) => grade::exec(&cli, a),
        Command::ReferenceTrace(a) => reference_trace::exec(&cli, a),
        Command::Configs(a) => configs::exec(&cli, a),
        Command::RunEpisode(a) => run_episode::exec(&cli, a),
        Command::RunScenario(a) => run_scenario::exec(&cli, a),
        Command::Providers { command } => configs::exec_providers(&cli, command),
        Command::Manifest { command } => manifest::exec(&cli, command),
        Command::Plan(a) => plan::exec(&cli, a),
        Command::Apply(a) => apply::exec(&cli, a),
        Command::Status(a) => status::exec(&cli, a),
        Command::Explain(a) => explain::exec(&cli, a),
        Command::Dag(a) => dag::exec(&cli, a),
        Command::Report(a) => report::exec(&cli, a),
        Command::Audit(a) => audit::exec(&cli, a),
        Command::Certify(a) => certify::exec(&cli, a),
        Command::Reproduce(a) => reproduce::exec(&cli, a),
        Command::Show(a) => show::exec(&cli, a),
    }
}

fn paths(cli: &Cli) -> crate::pipeline::Paths {
    crate::pipeline::Paths {
        families: cli.families.clone(),
        prompts: cli.prompts.clone(),
        outputs: cli.outputs.clone(),
        lockfiles: cli.lockfiles.clone(),
        cache: cli.cache.clone(),
    }
}

/// Loads a study, with the configurations of its `--model` flags.
fn study(
    cli: &Cli,
    manifest: &Path,
    overrides: &[(String, String)],
    models: &crate::manifest::Models,
) -> Result<crate::pipeline::Study> {
    let study = crate::pipeline::Study::load_with_models(manifest, overrides, models, &paths(cli))?;
    check_catalogue(cli, &study.manifest)?;
    Ok(study)
}

/// [`study`] and its cache, read at once (for the read-only commands: `apply` reads
/// its cache only under the outputs lock).
fn study_and_cache(
    cli: &Cli,
    manifest: &Path,
    overrides: &[(String, String)],
    models: &crate::manifest::Models,
) -> Result<(crate::pipeline::Study, crate::pipeline::cache::Cache)> {
    let (study, cache) =
        crate::pipeline::Study::load_with_cache(manifest, overrides, models, &paths(cli))?;
    check_catalogue(cli, &study.manifest)?;
    Ok((study, cache))
}

/// [`study`] and its cache, read under the lock on its outputs (an apply must not
/// rewrite the cache or publish while a check reads them); a study never applied has
/// no outputs to lock, and the check says so.
fn locked_study_and_cache(
    cli: &Cli,
    manifest: &Path,
    overrides: &[(String, String)],
    models: &crate::manifest::Models,
    lock_timeout: Option<f64>,
) -> Result<(
    crate::pipeline::Study,
    Option<crate::pipeline::lock::OutputsLock>,
    crate::pipeline::cache::Cache,
)> {
    let study = study(cli, manifest, overrides, models)?;
    let outputs = study.outputs();
    let lock = if outputs.is_dir() {
        Some(lock_outputs(&outputs, lock_timeout, false)?)
    } else {
        None
    };
    let cache = study.cache()?;
    Ok((study, lock, cache))
}

/// Takes the lock on a study's outputs for this command line, saying on stderr whom
/// it waits for; `lock_timeout` in seconds (`None`: wait; 0: fail at once).
/// A shard (`shared`) shares it with the other shards.
fn lock_outputs(
    outputs: &Path,
    lock_timeout: Option<f64>,
    shared: bool,
) -> Result<crate::pipeline::lock::OutputsLock> {
    use crate::pipeline::lock::OutputsLock;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let timeout = lock_timeout.map(|s| std::time::Duration::from_secs_f64(s.max(0.0)));
    let take = if shared {
        OutputsLock::acquire_shared
    } else {
        OutputsLock::acquire
    };
    Ok(take(outputs, &command, timeout, &mut |holder| {
        tell!(
            "Blocking: waiting for lock on {} ({holder})",
            outputs.display()
        );
    })?)
}

/// The catalogue of a command without a manifest: `--configs`, `TBB_CONFIGS`, or
/// manifests/configurations.toml.
fn catalogue(cli: &Cli) -> Result<crate::provider::Catalogue> {
    let path = cli
        .configs
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CATALOGUE));
    Ok(crate::provider::Catalogue::load(&path)?)
}

/// The catalogue commands without a manifest read when none is named.
const DEFAULT_CATALOGUE: &str = "manifests/configurations.toml";

/// One rule for where configurations come from: a manifest reads the catalogue it
/// names. `--configs`/`TBB_CONFIGS` given with a manifest must name that same file;
/// any other is refused rather than ignored, so no run silently uses a catalogue its
/// user did not mean.
fn check_catalogue(cli: &Cli, manifest: &crate::manifest::Manifest) -> Result<(), CliError> {
    let Some(given) = &cli.configs else {
        return Ok(());
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if same(given, &manifest.catalogue) {
        return Ok(());
    }
    Err(CliError::CatalogueMismatch {
        given: given.clone(),
        manifest: manifest.path.clone(),
        catalogue: manifest.catalogue.clone(),
    })
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| miette::miette!("cannot start the async runtime: {e}"))
}

fn load(root: &Path) -> Result<FamilySet> {
    Ok(FamilySet::load(root)?)
}

fn family<'a>(set: &'a FamilySet, name: &str) -> Result<&'a crate::family::Family, CliError> {
    set.get(name).ok_or_else(|| CliError::UnknownFamily {
        name: name.to_string(),
        suggestion: set.suggest(name).map(str::to_string),
    })
}

fn print_json<T: serde::Serialize>(value: &T) {
    // Serialising our own types to JSON cannot fail (no non-string map keys).
    say!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// The manifest loader refuses every `TBB_*` variable nothing reads, so its list of
    /// the command line's variables must be exactly the ones clap reads.
    #[test]
    fn the_manifest_knows_every_variable_the_command_line_reads() {
        let command = Cli::command();
        let read: Vec<String> = command
            .get_arguments()
            .filter_map(|a| a.get_env())
            .map(|e| e.to_string_lossy().into_owned())
            .collect();
        assert_eq!(read, tbb_engine::manifest::layers::COMMAND_LINE_VARIABLES);
    }
}
