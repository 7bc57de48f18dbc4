//! The costs section (paper Appendix C): what the study cost per configuration and
//! lane at the frozen prices.
//!
//! Owns: the layout of the `costs` table in the report, and where the paper's cost
//! values ([`paper::costs`]) stand: two labelled "paper" rows (its capacity episodes,
//! its every row) after ours, and a sentence.
//!
//! Invariants: rows in the order written (the pooled rows first, lane `all` first
//! within each configuration), then the paper's.
//!
//! Never: prices tokens or adds costs.

use tbb_tables::analyses::costs::CostsRow;

use super::super::document::{text, Align, Section, Table};
use super::super::format;
use super::super::paper::costs as q;
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
    let missing = || format::MISSING.to_string();
    table.push(vec![
        "paper, capacity episodes".into(),
        String::new(),
        "all".into(),
        missing(),
        q::CAPACITY_VTS.text(),
        q::INFRA_FAILURES_CAPACITY.text(),
        missing(),
        missing(),
        missing(),
        missing(),
    ]);
    table.push(vec![
        "paper, every scored row".into(),
        String::new(),
        "all".into(),
        q::ROWS.text(),
        missing(),
        q::INFRA_FAILURES.text(),
        missing(),
        q::COST.text(),
        missing(),
        missing(),
    ]);
    s.table(table);
    s.paragraph(vec![text(format!(
        "The paper's (its {} configurations at their providers' frozen route prices, \
         labelled \"paper\" in the table): its {} scored rows cost {}, from {} for {} to \
         {} for {}; mean VTS over its capacity episodes is {}, and {} conditions failed \
         for infrastructure reasons ({} of them capacity). It prints no tokens per \
         episode and no cost per 1,000 episodes or per success, and its prices are real \
         providers' where ours are the simulated catalogue's.",
        q::CONFIGURATIONS.text(),
        q::ROWS.text(),
        q::COST.text(),
        q::CHEAPEST_COST.text(),
        q::CHEAPEST.text(),
        q::MOST_EXPENSIVE_COST.text(),
        q::MOST_EXPENSIVE.text(),
        q::CAPACITY_VTS.text(),
        q::INFRA_FAILURES.text(),
        q::INFRA_FAILURES_CAPACITY.text()
    ))]);
    Ok(())
}
