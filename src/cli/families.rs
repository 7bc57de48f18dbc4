//! `tbb families [--json]`.

use clap::Args;
use miette::Result;
use serde::Serialize;

use super::{load, print_json, Cli};
use crate::family::{Domain, Split};

#[derive(Debug, Args)]
pub struct FamiliesArgs {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    family: &'a str,
    intent: &'a str,
    domain: Domain,
    split: Split,
    route: String,
    decision: &'a str,
    state_change: Option<String>,
    operational_tools: Vec<String>,
    content_hash: String,
}

pub fn exec(cli: &Cli, args: &FamiliesArgs) -> Result<()> {
    let set = load(&cli.families)?;
    let rows: Vec<Row> = set
        .families
        .iter()
        .map(|f| Row {
            family: &f.name,
            intent: f.intent.name(),
            domain: f.domain(),
            split: f.split(),
            route: format!(
                "{}/{}/{}",
                f.route.workspace.name, f.route.region.name, f.route.collection.name
            ),
            decision: &f.decision,
            state_change: f
                .permitted_change
                .as_ref()
                .map(|c| f.route.tool_name(&c.tool)),
            operational_tools: f.operational_tools(),
            content_hash: crate::family::hex(f.content_hash()),
        })
        .collect();
    if args.json {
        print_json(&rows);
        return Ok(());
    }
    say!(
        "{:<38} {:<30} {:<10} {:<8} {:<20} ROUTE",
        "FAMILY",
        "INTENT",
        "DOMAIN",
        "SPLIT",
        "DECISION"
    );
    for r in &rows {
        say!(
            "{:<38} {:<30} {:<10} {:<8} {:<20} {}",
            r.family,
            r.intent,
            crate::compile::cell::level_name(&r.domain),
            crate::compile::cell::level_name(&r.split),
            r.decision,
            r.route
        );
    }
    let count = |s: Split| rows.iter().filter(|r| r.split == s).count();
    say!(
        "{} families: {} core, {} holdout, {} frontier ({} intents)",
        rows.len(),
        count(Split::Core),
        count(Split::Holdout),
        count(Split::Frontier),
        set.intents.len()
    );
    Ok(())
}
