//! `tbb run-episode --config NAME --family F --v --w --d [--lane] [--prompt]
//! [--delivery] [--actor] [--cap N] [--json] [--allow-disabled]`.
//!
//! Owns: running one episode outside any study and printing what happened, the cause of
//! an infrastructure failure included. Never runs a configuration the catalogue marks
//! `enabled = false` unless asked to with `--allow-disabled`: a disabled configuration
//! is usually a paid route, and one command must not spend money by accident.

use std::path::PathBuf;

use clap::Args;
use miette::Result;
use serde::Serialize;

use super::{catalogue, family, load, print_json, runtime, CellArgs, Cli, CliError};
use crate::compile::compile;
use crate::grade::trace::InfraFailure;
use crate::grade::Verdict;
use crate::provider::build;
use crate::provider::chat::Sampling;
use tbb_harness::{
    run_episode, Actor, ArmForm, Delivery, EpisodeSpec, Menu, PromptVariant, Prompts,
};

#[derive(Debug, Args)]
pub struct RunEpisodeArgs {
    /// Configuration name (see `tbb configs`).
    #[arg(long)]
    config: String,
    /// Family name (see `tbb families`).
    #[arg(long)]
    family: String,
    #[command(flatten)]
    cell: CellArgs,
    /// Menu lane, by its name in the `lane` column: routed, fixed, router, or
    /// retrieval_k<k> (the k schemas BM25 ranks highest, k from 1 to 128).
    #[arg(long, default_value = "routed")]
    lane: Menu,
    /// System prompt variant, by its manifest name: base, workflow, interface_guide.
    #[arg(long, default_value = "base")]
    prompt: PromptVariant,
    /// How records reach the agent: native (the cell's encoding) or canonical (raw).
    #[arg(long, default_value = "native")]
    delivery: Delivery,
    /// Who issues the calls: model, or controller (the public-handoff controller,
    /// which follows the records' hand-offs and asks the model for the rest).
    #[arg(long, default_value = "model")]
    actor: Actor,
    #[command(flatten)]
    episode: super::EpisodeArgs,
    /// Also write the trace (gradable with `tbb grade`) to this file.
    #[arg(long)]
    trace_out: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Run the configuration even if the catalogue disables it (it may spend money).
    #[arg(long)]
    allow_disabled: bool,
}

#[derive(Serialize)]
struct Totals {
    requests: u32,
    calls: u32,
    input_tokens: u64,
    output_tokens: u64,
    reasoning_tokens: u64,
    total_tokens: u64,
    cost_usd: f64,
}

#[derive(Serialize)]
struct Output<'a> {
    episode_key: &'a str,
    configuration: &'a str,
    variant_id: &'a str,
    stop: crate::grade::trace::StopReason,
    verdict: &'a Verdict,
    /// What failed, when the infrastructure ended the episode (also in `verdict`).
    infra: Option<&'a InfraFailure>,
    usage: Totals,
    omitted: &'a [crate::provider::config::RequestField],
    /// The sampling fields the first request's wire body carried.
    sent: Option<Sampling>,
}

pub fn exec(cli: &Cli, args: &RunEpisodeArgs) -> Result<()> {
    crate::provider::install_crypto();
    let cat = catalogue(cli)?;
    let Some(config) = cat.get(&args.config) else {
        let names = cat.configurations.iter().map(|c| c.name.as_str());
        let best = crate::family::closest(&args.config, names);
        return Err(miette::miette!(
            help = best.map_or(String::from("run `tbb configs`"), |b| format!(
                "did you mean `{b}`?"
            )),
            "there is no configuration `{}` in the catalogue {}",
            args.config,
            cat.path.display()
        ));
    };
    if !config.enabled && !args.allow_disabled {
        return Err(CliError::Disabled {
            name: config.name.clone(),
        }
        .into());
    }
    let set = load(&cli.families)?;
    let fam = family(&set, &args.family)?;
    let variant = compile(fam, &args.cell.cell()).map_err(CliError::from)?;
    let prompts = Prompts::load(&cli.prompts)?;
    let provider = build(config).map_err(|e| miette::miette!("{e}"))?;
    let spec = EpisodeSpec {
        arm: ArmForm {
            menu: args.lane,
            prompt: args.prompt,
            delivery: args.delivery,
            actor: args.actor,
        },
        completion_cap: args.episode.cap,
        repeat: args.episode.repeat,
        study: args.episode.study.as_deref(),
        ..EpisodeSpec::frozen(&variant, config)
    };
    let rt = runtime()?;
    let episode = rt.block_on(run_episode(provider.as_ref(), &spec, &prompts, None));
    if let Some(path) = &args.trace_out {
        let text = serde_json::to_string_pretty(&episode.trace).unwrap_or_default();
        std::fs::write(path, text + "\n").map_err(|source| CliError::Write {
            path: path.clone(),
            source,
        })?;
    }
    let t = &episode.trace;
    let sum = |f: fn(&crate::grade::trace::Usage) -> u64| {
        t.turns.iter().map(|x| f(&x.response.usage)).sum::<u64>()
    };
    let (input, output) = (sum(|u| u.input_tokens), sum(|u| u.output_tokens));
    let totals = Totals {
        requests: episode.verdict.requests,
        calls: episode.verdict.calls,
        input_tokens: input,
        output_tokens: output,
        reasoning_tokens: sum(|u| u.reasoning_tokens.unwrap_or(0)),
        total_tokens: input + output,
        cost_usd: config.prices.cost_usd(input, output),
    };
    let key = episode.key.text();
    if args.json {
        print_json(&Output {
            episode_key: &key,
            configuration: &config.name,
            variant_id: &variant.variant_id,
            stop: t.stop,
            verdict: &episode.verdict,
            infra: episode.verdict.infra.as_ref(),
            usage: totals,
            omitted: &episode.omitted,
            sent: episode.transcript.wire_sampling,
        });
        return Ok(());
    }
    say!(
        "episode {} — {} on {} ({} at {})",
        &key[..16],
        config.name,
        variant.variant_id,
        variant.family,
        variant.cell
    );
    for (i, turn) in t.turns.iter().enumerate() {
        let r = &turn.response;
        let action = match (turn.executed.first(), r.tool_calls.len(), &r.text) {
            (Some(c), _, _) => format!("{} {}", c.tool, c.arguments),
            (None, n, _) if n > 1 => format!("{n} tool calls (not executed)"),
            (None, _, Some(text)) if !text.trim().is_empty() => {
                format!("answer {}", text.chars().take(120).collect::<String>())
            }
            _ => "(no text, no call)".to_string(),
        };
        say!(
            "#{i:<2} {:>6} in {:>5} out {:>5} reasoning  {:<10} {action}",
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.usage
                .reasoning_tokens
                .map_or("-".into(), |n| n.to_string()),
            r.finish_reason_raw
        );
        let delegated: Vec<_> = turn.executed.iter().filter(|c| !c.by.is_model()).collect();
        if let (Some(first), Some(last)) = (delegated.first(), delegated.last()) {
            say!(
                "    + {} call{} by the controller: {} {} … {} {}",
                delegated.len(),
                if delegated.len() == 1 { "" } else { "s" },
                first.tool,
                first.arguments,
                last.tool,
                last.arguments
            );
        }
    }
    if let Some(why) = &episode.transcript.controller_halt {
        say!("the controller halted: {why}");
    }
    let v = &episode.verdict;
    let marks: Vec<String> = v
        .obligations
        .in_order()
        .iter()
        .map(|(o, ok)| format!("{o:?}{}", if *ok { "✓" } else { "✗" }))
        .collect();
    say!("stop {:?}; vts={}; {}", t.stop, v.vts, marks.join(" "));
    if let Some(infra) = &v.infra {
        say!(
            "infrastructure failure: {} (last HTTP status {}, {} attempt{}): {}",
            crate::compile::cell::level_name(&infra.cause),
            infra
                .http_status
                .map_or("none".to_string(), |s| s.to_string()),
            infra.attempts,
            if infra.attempts == 1 { "" } else { "s" },
            infra.message
        );
    }
    if let Some(violation) = t
        .turns
        .iter()
        .find_map(|turn| turn.response.violation.as_ref())
    {
        say!("protocol violation by the model: {violation}");
    }
    if let (Some(o), Some(f)) = (v.first_unmet, v.terminal_flag) {
        say!(
            "failure record ({o:?}, {})",
            crate::compile::cell::level_name(&f)
        );
    }
    say!(
        "{} tokens ({} in, {} out), ${:.5}",
        totals.total_tokens,
        totals.input_tokens,
        totals.output_tokens,
        totals.cost_usd
    );
    Ok(())
}
