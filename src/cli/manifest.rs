//! `tbb manifest check MANIFEST [--set key=value ...] [--json]`: loads a manifest through
//! every layer (file, `TBB_*` environment, `--set`), validates it against the families
//! and the catalogue, builds every configuration's provider as apply would (a missing
//! key fails here, and no request is sent), and prints what it resolves to.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use miette::Result;
use serde_json::json;

use super::{load, print_json, Cli};
use crate::manifest::Manifest;

#[derive(Debug, Subcommand)]
pub enum ManifestCommand {
    /// Validate a manifest and print what it resolves to.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The manifest file.
    manifest: PathBuf,
    /// Override a key (`budgets.completion_caps=[4096]`, `repeats=2`); repeatable;
    /// applied after the file and the `TBB_*` environment.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, String)>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(super) fn parse_set(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("`{s}` is not KEY=VALUE")),
    }
}

pub fn exec(cli: &Cli, command: &ManifestCommand) -> Result<()> {
    let ManifestCommand::Check(args) = command;
    let families = load(&cli.families)?;
    let manifest = Manifest::load(&args.manifest, &families, &args.set)?;
    let m = &manifest;
    super::check_catalogue(cli, m)?;
    // Plan and apply load the system prompts with the study; a missing or malformed
    // prompt file fails check as it would fail them.
    tbb_harness::prompts::Prompts::load(&cli.prompts)?;
    // Apply builds every configuration's provider before it runs anything (a missing
    // key or an unusable route stops it there); check builds them too, without sending
    // a request, so that nothing apply would reject passes check.
    crate::provider::install_crypto();
    let unusable: Vec<String> = m
        .configurations
        .iter()
        .filter_map(|c| {
            crate::provider::build(c)
                .err()
                .map(|e| format!("configuration `{}` cannot run: {e}", c.name))
        })
        .collect();
    if !unusable.is_empty() {
        return Err(miette::miette!(
            code = "tbb::manifest::unusable_configuration",
            help = "set the environment variable each names, fix it in the catalogue, or drop it from the manifest's [configurations]",
            "{} of the manifest's configurations cannot run, so `tbb apply` would refuse it:\n{}",
            unusable.len(),
            unusable.join("\n")
        ));
    }
    if args.json {
        print_json(&json!({
            "study": m.study,
            "content_hash": m.content_hash,
            "families": m.families.len(),
            "cells": m.cells.len(),
            "configurations": m.configurations.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
            "arms": m.arms,
            "blocks": m.blocks,
            "episodes": m.episode_count(),
            "skipped_analyses": m.skipped_analyses()
                .into_iter()
                .map(|(kind, why)| json!({"analysis": kind.name(), "reason": why}))
                .collect::<Vec<_>>(),
        }));
        return Ok(());
    }
    say!(
        "study {} ({})",
        m.study,
        &m.content_hash[..16.min(m.content_hash.len())]
    );
    for a in &m.arms {
        let components: Vec<String> = a
            .form
            .columns()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let cap = a
            .completion_cap
            .map(|c| format!(", cap={c}"))
            .unwrap_or_default();
        say!("arm {}: {}{cap}", a.name, components.join(", "));
    }
    for b in &m.blocks {
        let caps: Vec<String> = b.completion_caps.iter().map(u32::to_string).collect();
        say!(
            "block {}: {} families × {} cells × {} configurations × {} arms (caps {}) × {} repeats{}, {} schedule",
            b.name,
            b.families.len(),
            b.cells.len(),
            b.configurations.len(),
            b.arms.len(),
            caps.join(", "),
            b.repeats,
            if b.first_repeat > 0 {
                format!(" from repeat {}", b.first_repeat)
            } else {
                String::new()
            },
            tbb_harness::arm::name_of(&crate::manifest::Schedule::NAMES, b.schedule),
        );
    }
    say!("{} episodes", m.episode_count());
    for (kind, why) in m.skipped_analyses() {
        say!(
            "analysis {} cannot run on this design and will be skipped: {why}",
            kind.name()
        );
    }
    Ok(())
}
