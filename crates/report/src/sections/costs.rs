//! The costs section (paper Appendix C): what the study cost per configuration and
//! lane at the frozen prices.
//!
//! Owns: the layout of the `costs` table in the report.
//!
//! Invariants: rows in the order written (the pooled rows first, lane `all` first
//! within each configuration).
//!
//! Never: prices tokens or adds costs.

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::ReportError;
use super::{configuration_label, table, Tables};

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(t) = table(tables, "costs") else {
        return Ok(());
    };
    let (configuration, organization, lane) = (
        t.text("configuration")?,
        t.text("organization")?,
        t.text("lane")?,
    );
    let (episodes, successes, infra, total_tokens) = (
        t.int("episodes")?,
        t.int("successes")?,
        t.int("infra_failures")?,
        t.int("total_tokens")?,
    );
    let (vts, tokens_per_episode, cost, per_1000, per_success) = (
        t.float("vts_rate")?,
        t.float("tokens_per_episode")?,
        t.float("cost_usd")?,
        t.float("cost_per_1000_episodes_usd")?,
        t.float("cost_per_success_usd")?,
    );
    let pooled = (0..t.len()).find(|&i| configuration[i] == "all" && lane[i] == "all");
    if let Some(i) = pooled {
        s.paragraph(vec![text(format!(
            "At the frozen prices of each configuration (tokens × price, without cache \
             credit), the study's {} episodes cost {} for {} tokens; {} succeeded and {} \
             failed for infrastructure reasons (kept, and counted as failures).",
            format::count(episodes[i]),
            format::usd(cost[i]),
            format::count(total_tokens[i]),
            format::count(successes[i]),
            format::count(infra[i])
        ))]);
    }
    let mut table = Table::new(
        "Cost per configuration and lane at frozen prices (lane \"all\" pools the \
         lanes; \"all (pooled)\" the configurations).",
        &[
            ("Configuration", Align::Left),
            ("Organization", Align::Left),
            ("Lane", Align::Left),
            ("Episodes", Align::Right),
            ("VTS", Align::Right),
            ("Infra failures", Align::Right),
            ("Tokens per episode", Align::Right),
            ("Cost (USD)", Align::Right),
            ("Per 1,000 episodes", Align::Right),
            ("Per success", Align::Right),
        ],
    );
    for i in 0..t.len() {
        table.push(vec![
            configuration_label(&configuration[i]),
            organization[i].clone(),
            lane[i].clone(),
            format::count(episodes[i]),
            format::percent(vts[i]),
            format::count(infra[i]),
            format::whole(tokens_per_episode[i]),
            format::usd(cost[i]),
            format::usd(per_1000[i]),
            format::usd(per_success[i]),
        ]);
    }
    s.table(table);
    Ok(())
}
