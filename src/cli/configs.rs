//! `tbb configs [--json]` and `tbb providers check`.

use clap::{Args, Subcommand};
use miette::Result;
use serde::Serialize;

use super::{catalogue, print_json, runtime, Cli};
use crate::provider::{build, ProviderKind};

#[derive(Debug, Args)]
pub struct ConfigsArgs {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    name: &'a str,
    organization: &'a str,
    provider: ProviderKind,
    model: &'a str,
    version: Option<&'a str>,
    route: String,
    enabled: bool,
    api_key_env: Option<&'a str>,
    price_input_per_mtok: f64,
    price_output_per_mtok: f64,
    /// Whether the route is on this machine (it gets the local default timeout).
    local: bool,
    timeout_ms: u64,
    context_window: Option<u64>,
}

pub fn exec(cli: &Cli, args: &ConfigsArgs) -> Result<()> {
    let cat = catalogue(cli)?;
    let rows: Vec<Row> = cat
        .configurations
        .iter()
        .map(|c| Row {
            name: &c.name,
            organization: &c.organization,
            provider: c.provider,
            model: &c.model,
            version: c.version.as_deref(),
            route: c.route(),
            enabled: c.enabled,
            api_key_env: c.api_key_env.as_deref(),
            price_input_per_mtok: c.prices.input_per_mtok,
            price_output_per_mtok: c.prices.output_per_mtok,
            local: c.is_local(),
            timeout_ms: c.timeout_ms,
            context_window: c.context_window,
        })
        .collect();
    if args.json {
        print_json(&rows);
        return Ok(());
    }
    say!(
        "{:<28} {:<14} {:<10} {:<26} {:>9} {:>9}  STATUS",
        "CONFIGURATION",
        "ORGANIZATION",
        "PROVIDER",
        "MODEL",
        "$/M IN",
        "$/M OUT"
    );
    for r in &rows {
        say!(
            "{:<28} {:<14} {:<10} {:<26} {:>9.3} {:>9.3}  {}",
            r.name,
            r.organization,
            crate::compile::cell::level_name(&r.provider),
            r.model,
            r.price_input_per_mtok,
            r.price_output_per_mtok,
            if r.enabled { "enabled" } else { "disabled" }
        );
    }
    let orgs: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.organization).collect();
    say!(
        "{} configurations from {} organizations",
        rows.len(),
        orgs.len()
    );
    Ok(())
}

#[derive(Debug, Subcommand)]
pub enum ProvidersCommand {
    /// Check credentials and reachability of every enabled live route, spending no
    /// tokens where the protocol allows.
    Check,
}

pub fn exec_providers(cli: &Cli, command: &ProvidersCommand) -> Result<()> {
    let ProvidersCommand::Check = command;
    crate::provider::install_crypto();
    let cat = catalogue(cli)?;
    let rt = runtime()?;
    let mut failed = 0;
    for c in cat
        .configurations
        .iter()
        .filter(|c| c.provider != ProviderKind::Sim)
    {
        if !c.enabled {
            say!("{:<28} skipped (disabled)", c.name);
            continue;
        }
        let outcome = match build(c) {
            Ok(p) => rt.block_on(p.check()),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(msg) => say!("{:<28} ok: {msg}", c.name),
            Err(e) => {
                failed += 1;
                say!("{:<28} FAILED: {e}", c.name);
            }
        }
    }
    if failed > 0 {
        return Err(miette::miette!("{failed} live route(s) failed the check"));
    }
    Ok(())
}
