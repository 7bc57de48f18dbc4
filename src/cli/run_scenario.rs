//! `tbb run-scenario --scenario NAME --config NAME [--user NAME] [--cap N] [--repeat N]
//! [--study S] [--world-out FILE] [--json] [--allow-disabled]` and `tbb run-scenario --scenario NAME
//! --grade FILE`.
//!
//! Owns: playing one ToolSandbox scenario outside any study and printing its grade, and
//! grading a saved world again without running a tool. Never runs a configuration the
//! catalogue marks `enabled = false` unless asked to with `--allow-disabled`, and never
//! plays a scenario whose tools need the internet.

use std::path::PathBuf;

use clap::Args;
use miette::{miette, Result};
use tbb_harness::scenario::{grade, run_scenario, summary, ScenarioSpec};
use tbb_toolsandbox::context::Context;
use tbb_toolsandbox::scenario::Scenarios;
use tbb_toolsandbox::tools::Registry;

use super::{catalogue, print_json, runtime, Cli, CliError};
use crate::provider::build;
use tbb_harness::Prompts;

#[derive(Debug, Args)]
pub struct RunScenarioArgs {
    /// The scenario's name (ToolSandbox's, with its distraction suffix when it has one).
    #[arg(long)]
    scenario: String,
    /// Configuration name (see `tbb configs`); not needed with `--grade`.
    #[arg(long, required_unless_present = "grade")]
    config: Option<String>,
    #[command(flatten)]
    episode: super::EpisodeArgs,
    /// A live configuration that plays the user, prompted as upstream prompts its user
    /// simulator (default: the scripted user, offline).
    #[arg(long, conflicts_with = "grade")]
    user: Option<String>,
    /// Also write the saved world (every table, every snapshot) to this file.
    #[arg(long)]
    world_out: Option<PathBuf>,
    /// Grade this saved world (from `--world-out`) instead of playing: no tool runs.
    #[arg(long, conflicts_with_all = ["config", "world_out"])]
    grade: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Run the configuration even if the catalogue disables it (it may spend money).
    #[arg(long)]
    allow_disabled: bool,
}

pub fn exec(cli: &Cli, args: &RunScenarioArgs) -> Result<()> {
    let scenarios = Scenarios::builtin().map_err(|e| miette!("{e}"))?;
    let Some(scenario) = scenarios.get(&args.scenario) else {
        let names = scenarios.all().iter().map(|s| s.name.as_str());
        let best = crate::family::closest(&args.scenario, names);
        return Err(miette!(
            help = best.map_or(
                String::from("the scenarios are ToolSandbox's, listed in docs/toolsandbox.md"),
                |b| format!("did you mean `{b}`?")
            ),
            "there is no ToolSandbox scenario `{}`",
            args.scenario
        ));
    };
    if let Some(path) = &args.grade {
        let text = std::fs::read_to_string(path)
            .map_err(|e| miette!("cannot read {}: {e}", path.display()))?;
        let world: Context = serde_json::from_str(&text).map_err(|e| {
            miette!(
                help = "write it with `--world-out`",
                "{} is not a saved world: {e}",
                path.display()
            )
        })?;
        let graded = grade(scenario, &world).map_err(|e| miette!("{e}"))?;
        let out = serde_json::json!({
            "scenario": scenario.name,
            "similarity": graded.similarity,
            "success": graded.is_success(),
            "minefield_hit": graded.minefield_hit,
            "turns": graded.turn_count,
        });
        if args.json {
            print_json(&out);
        } else {
            say!(
                "{}: similarity {} ({}), {} turns{}",
                scenario.name,
                graded.similarity,
                if graded.is_success() {
                    "success"
                } else {
                    "failure"
                },
                graded.turn_count,
                if graded.minefield_hit {
                    ", a minefield was hit"
                } else {
                    ""
                }
            );
        }
        return Ok(());
    }
    if scenario.needs_internet() {
        return Err(miette!(
            help = "the study runs the offline scenarios only (docs/toolsandbox.md)",
            "scenario `{}` allows a tool that needs the internet (RapidAPI), which tbb does not call",
            scenario.name
        ));
    }
    crate::provider::install_crypto();
    let cat = catalogue(cli)?;
    let name = args.config.as_deref().unwrap_or_default();
    let config = configuration(&cat, name, args.allow_disabled)?;
    let user = match args.user.as_deref() {
        None => None,
        Some(name) => {
            let user = configuration(&cat, name, args.allow_disabled)?;
            if user.provider == crate::provider::ProviderKind::Sim {
                return Err(miette!(
                    help = "leave out --user for the scripted user, or name a live configuration",
                    "`{name}` is a simulated configuration: the panel plays agents, not users"
                ));
            }
            Some(user)
        }
    };
    let registry = Registry::builtin().map_err(|e| miette!("{e}"))?;
    let prompts = Prompts::load(&cli.prompts)?;
    let provider = build(config).map_err(|e| miette!("{e}"))?;
    let user_provider = match user {
        Some(u) => Some(build(u).map_err(|e| miette!("{e}"))?),
        None => None,
    };
    let spec = ScenarioSpec {
        scenario,
        registry: &registry,
        config,
        completion_cap: args.episode.cap,
        episode_budget: crate::grade::EPISODE_BUDGET,
        repeat: args.episode.repeat,
        study: args.episode.study.as_deref(),
        user,
    };
    let rt = runtime()?;
    let episode = rt.block_on(run_scenario(
        provider.as_ref(),
        &spec,
        &prompts.nudge,
        None,
        user_provider.as_deref(),
    ));
    if let Some(path) = &args.world_out {
        let text = serde_json::to_string(&episode.world).unwrap_or_default();
        std::fs::write(path, text + "\n").map_err(|source| CliError::Write {
            path: path.clone(),
            source,
        })?;
    }
    let graded = grade(scenario, &episode.world).map_err(|e| miette!("{e}"))?;
    let out = summary(&episode, &graded);
    if args.json {
        print_json(&out);
        return Ok(());
    }
    say!(
        "{} — {} on {}: similarity {} ({}), stopped by {:?}, {} calls, {} requests, {} user turns",
        &episode.key[..16],
        config.name,
        scenario.name,
        graded.similarity,
        if graded.is_success() {
            "success"
        } else {
            "failure"
        },
        episode.stop,
        episode.calls,
        episode.transcript.requests.len(),
        episode.user_turns,
    );
    Ok(())
}

/// The catalogue's configuration `name`, refused when it is unknown (with "did you
/// mean") or disabled (unless `allow_disabled`).
fn configuration<'a>(
    cat: &'a crate::provider::Catalogue,
    name: &str,
    allow_disabled: bool,
) -> Result<&'a crate::provider::Configuration> {
    let Some(config) = cat.get(name) else {
        let names = cat.configurations.iter().map(|c| c.name.as_str());
        let best = crate::family::closest(name, names);
        return Err(miette!(
            help = best.map_or(String::from("run `tbb configs`"), |b| format!(
                "did you mean `{b}`?"
            )),
            "there is no configuration `{name}` in the catalogue {}",
            cat.path.display()
        ));
    };
    if !config.enabled && !allow_disabled {
        return Err(CliError::Disabled {
            name: config.name.clone(),
        }
        .into());
    }
    Ok(config)
}
