//! The costs section (paper Appendix C): what the study cost per configuration and
//! lane at the frozen prices.
//!
//! Owns: the layout of the `costs` table in the report.
//!
//! Invariants: rows in the order written (the pooled rows first, lane `all` first
//! within each configuration).
//!
//! Never: prices tokens or adds costs.

use tbb_tables::analyses::costs::CostsRow;

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::ReportError;
use super::{configuration_label, rows, Tables};

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(costs) = rows::<CostsRow>(tables)? else {
        return Ok(());
    };
    if let Some(pooled) = costs
        .iter()
        .find(|r| r.configuration == "all" && r.lane == "all")
    {
        s.paragraph(vec![text(format!(
            "At the frozen prices of each configuration (tokens × price, without cache \
             credit), the study's {} episodes cost {} for {} tokens; {} succeeded and {} \
             failed for infrastructure reasons (kept, and counted as failures).",
            format::count(pooled.episodes),
            format::usd(pooled.cost_usd),
            format::count(pooled.total_tokens),
            format::count(pooled.successes),
            format::count(pooled.infra_failures)
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
    for r in &costs {
        table.push(vec![
            configuration_label(&r.configuration),
            r.organization.clone(),
            r.lane.clone(),
            format::count(r.episodes),
            format::percent(r.vts_rate),
            format::count(r.infra_failures),
            format::whole(r.tokens_per_episode),
            format::usd(r.cost_usd),
            format::usd(r.cost_per_1000_episodes_usd),
            // No success: no cost per success (the table holds a null).
            format::usd(r.cost_per_success_usd.unwrap_or(f64::NAN)),
        ]);
    }
    s.table(table);
    Ok(())
}
