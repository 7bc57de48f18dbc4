//! The discovery section: per arm, availability and intention-to-treat success at
//! both routing levels and the R contrast, with the required-tool-cluster intervals,
//! then the contrast under every cluster unit — and the paper's published discovery
//! figures beside this study's, labelled as the paper's.
//!
//! Owns: the layout of the `discovery` table in the report, and where the paper's
//! values ([`paper::discovery`]) stand: only in sentences and columns that say they
//! are the paper's.
//!
//! Invariants: arms in the order the table holds them (by name).
//!
//! Never: computes a statistic; every number of this study is a cell of the table.

use tbb_tables::analyses::discovery::{ClusterUnit, DiscoveryRow, RLevel, Statistic};
use tbb_tables::levels::level_name;

use super::super::document::{code, text, Align, Section, Table};
use super::super::format;
use super::super::paper::discovery as q;
use super::super::ReportError;
use super::{first_seen, rows, unit_plural, Tables};

/// The primary resampling unit.
const PRIMARY: ClusterUnit = ClusterUnit::RequiredTools;

/// The row of `arm`, `statistic`, `r` and `unit`, if the table has it.
fn find<'t>(
    rows: &'t [DiscoveryRow],
    arm: &str,
    statistic: Statistic,
    r: RLevel,
    unit: ClusterUnit,
) -> Option<&'t DiscoveryRow> {
    rows.iter()
        .find(|x| x.arm == arm && x.statistic == statistic && x.r == r && x.cluster_unit == unit)
}

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(t) = rows::<DiscoveryRow>(tables)? else {
        return Ok(());
    };
    let rate = |row: Option<&DiscoveryRow>| {
        row.map_or_else(
            || format::MISSING.to_string(),
            |x| format!("{}%", format::fixed(x.estimate_pp, 1)),
        )
    };
    let contrast = |row: Option<&DiscoveryRow>| {
        row.map_or_else(
            || format::MISSING.to_string(),
            |x| format::effect_with_interval(x.estimate_pp, x.ci_low_pp, x.ci_high_pp),
        )
    };
    let arm_names: Vec<String> = t.iter().map(|x| x.arm.clone()).collect();
    let arms = first_seen(&arm_names);

    s.paragraph(vec![
        text(
            "Each arm decides which of the 128 catalogue tools the model is shown before \
             its first request; R low and R high differ only in whether near-miss \
             connectors (two of the route's three coordinates) are in the catalogue. \
             Availability is the share of episodes whose offered menu held every tool \
             the reference program calls; an episode without it sends no request and \
             counts as a failure, so success is intention to treat (ITT). Intervals are \
             95% percentile bootstraps that resample clusters of required tools (the \
             tool kinds a family's reference program calls, e.g. ",
        ),
        code("read_invoice+search"),
        text("); the R contrast pairs each R-high episode with its R-low sibling."),
    ]);
    let mut main = Table::new(
        "Availability (A) and ITT success per arm at each routing level, and the R \
         contrast (high − low, pp) with intervals over required-tool clusters.",
        &[
            ("Arm", Align::Left),
            ("Menu", Align::Left),
            ("A, R low", Align::Right),
            ("A, R high", Align::Right),
            ("ITT, R low", Align::Right),
            ("ITT, R high", Align::Right),
            ("A: high − low", Align::Right),
            ("ITT: high − low", Align::Right),
            ("Unavailable (low / high)", Align::Right),
        ],
    );
    for arm in &arms {
        let at = |statistic: Statistic, r: RLevel| find(&t, arm, statistic, r, PRIMARY);
        let lane_name = at(Statistic::Availability, RLevel::Low)
            .or(at(Statistic::Availability, RLevel::High))
            .map_or_else(String::new, |x| x.lane.clone());
        let un = |r: RLevel| {
            at(Statistic::Availability, r)
                .and_then(|x| x.unavailable)
                .map_or_else(|| format::MISSING.to_string(), format::count)
        };
        main.push(vec![
            arm.clone(),
            lane_name,
            rate(at(Statistic::Availability, RLevel::Low)),
            rate(at(Statistic::Availability, RLevel::High)),
            rate(at(Statistic::IttSuccess, RLevel::Low)),
            rate(at(Statistic::IttSuccess, RLevel::High)),
            contrast(at(Statistic::Availability, RLevel::HighMinusLow)),
            contrast(at(Statistic::IttSuccess, RLevel::HighMinusLow)),
            format!("{} / {}", un(RLevel::Low), un(RLevel::High)),
        ]);
    }
    s.table(main);

    let mut by_unit = Table::new(
        "The R contrast of ITT success (high − low, pp) under each resampling unit.",
        &[
            ("Arm", Align::Left),
            ("Resampled", Align::Left),
            ("Clusters", Align::Right),
            ("Pairs", Align::Right),
            ("Estimate [95% CI]", Align::Right),
            ("p", Align::Right),
        ],
    );
    for arm in &arms {
        for unit in ClusterUnit::ALL {
            if let Some(x) = find(&t, arm, Statistic::IttSuccess, RLevel::HighMinusLow, unit) {
                by_unit.push(vec![
                    arm.clone(),
                    unit_plural(&level_name(&unit)),
                    format::count(u64::from(x.n_clusters)),
                    format::count(u64::from(x.n)),
                    contrast(Some(x)),
                    // A contrast always has a p-value; a missing one prints as "—".
                    format::p_value(x.p_value.unwrap_or(f64::NAN), x.p_floor),
                ]);
            }
        }
    }
    s.table(by_unit);

    // The paper's figures beside this study's cells.
    let mut paper = Table::new(
        "This study beside the paper's published discovery figures (the paper's column \
         is quoted, not computed; the paper ran real providers at its own scale).",
        &[
            ("Quantity", Align::Left),
            ("This study", Align::Left),
            ("Paper", Align::Right),
        ],
    );
    let clusters = arms
        .first()
        .and_then(|a| find(&t, a, Statistic::Availability, RLevel::Low, PRIMARY))
        .map_or_else(
            || format::MISSING.to_string(),
            |x| format::count(u64::from(x.n_clusters)),
        );
    paper.push(vec![
        "Clusters of required tools resampled".into(),
        clusters,
        q::CLUSTERS.text(),
    ]);
    let mut stopped = Vec::new();
    let mut spent = Vec::new();
    for arm in &arms {
        for r in [RLevel::Low, RLevel::High] {
            if let Some(x) = find(&t, arm, Statistic::Availability, r, PRIMARY) {
                let show =
                    |v: Option<u64>| v.map_or_else(|| format::MISSING.to_string(), format::count);
                let r = level_name(&r);
                stopped.push(format!("{arm} R {r}: {}", show(x.unavailable)));
                spent.push(format!(
                    "{arm} R {r}: {} requests, {} tokens",
                    show(x.unavailable_requests),
                    show(x.unavailable_tokens)
                ));
            }
        }
    }
    paper.push(vec![
        "Episodes stopped for lack of availability before any request".into(),
        stopped.join("; "),
        format!(
            "{} (of {} zero-token rows)",
            q::UNAVAILABLE_ROWS.text(),
            q::ZERO_TOKEN_ROWS.text()
        ),
    ]);
    paper.push(vec![
        "What those episodes sent and used".into(),
        spent.join("; "),
        "no recorded provider response".into(),
    ]);
    paper.push(vec![
        "Discovery conditions failed for infrastructure reasons".into(),
        "see the costs section (infra failures per lane)".into(),
        q::INFRA_FAILURES.text(),
    ]);
    s.table(paper);
    s.note(vec![text(format!(
        "The paper's discovery contrasts resample {} clusters of required tools; this \
         study's clusters are the distinct required tool kinds of its own families, so \
         their number differs (docs/discovery.md). The paper's router and retrieval \
         details beyond these figures are not published as numbers, so no other paper \
         value is shown.",
        q::CLUSTERS.text()
    ))]);
    Ok(())
}
