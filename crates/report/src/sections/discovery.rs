//! The discovery section: per arm, availability and intention-to-treat success at
//! both routing levels and the R contrast, with the required-tool-cluster intervals,
//! then the contrast under every cluster unit — and the paper's published discovery
//! figures beside this study's, labelled as the paper's.
//!
//! Owns: the layout of the `discovery` table in the report, and the paper's values
//! ([`PAPER`]), which appear only in sentences and columns that say they are the
//! paper's.
//!
//! Invariants: arms in the order the table holds them (by name).
//!
//! Never: computes a statistic; every number of this study is a cell of the table.

use super::super::columns::Columns;
use super::super::document::{code, text, Align, Section, Table};
use super::super::format;
use super::super::ReportError;
use super::{first_seen, table, unit_plural, Tables};

/// What the paper publishes about its discovery study.
pub(crate) struct PaperDiscovery {
    /// Clusters of required tools its discovery contrasts resample.
    pub clusters: u64,
    /// Released rows that stopped for lack of availability before any request.
    pub unavailable_rows: u64,
    /// Released rows with zero tokens (those, and 5 provider or execution failures).
    pub zero_token_rows: u64,
    /// Discovery conditions that failed for infrastructure reasons.
    pub infra_failures: u64,
}

/// The paper's published values.
pub(crate) const PAPER: PaperDiscovery = PaperDiscovery {
    clusters: 18,
    unavailable_rows: 1_113,
    zero_token_rows: 1_118,
    infra_failures: 1,
};

/// The primary resampling unit.
const PRIMARY: &str = "required_tools";

/// One row of the table, by its identity.
struct Find<'a> {
    arm: Vec<String>,
    statistic: Vec<String>,
    r: Vec<String>,
    unit: Vec<String>,
    t: &'a Columns<'a>,
}

impl Find<'_> {
    fn row(&self, arm: &str, statistic: &str, r: &str, unit: &str) -> Option<usize> {
        (0..self.t.len()).find(|&i| {
            self.arm[i] == arm
                && self.statistic[i] == statistic
                && self.r[i] == r
                && self.unit[i] == unit
        })
    }
}

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let Some(t) = table(tables, "discovery") else {
        return Ok(());
    };
    let find = Find {
        arm: t.text("arm")?,
        statistic: t.text("statistic")?,
        r: t.text("r")?,
        unit: t.text("cluster_unit")?,
        t: &t,
    };
    let (lane, n_clusters, n) = (t.text("lane")?, t.int("n_clusters")?, t.int("n")?);
    let (estimate, low, high) = (
        t.float("estimate_pp")?,
        t.float("ci_low_pp")?,
        t.float("ci_high_pp")?,
    );
    let (p, floor) = (t.float("p_value")?, t.float("p_floor")?);
    let (unavailable, unavailable_requests, unavailable_tokens) = (
        t.int_opt("unavailable")?,
        t.int_opt("unavailable_requests")?,
        t.int_opt("unavailable_tokens")?,
    );
    let rate = |i: Option<usize>| {
        i.map_or_else(
            || format::MISSING.to_string(),
            |i| format!("{}%", format::fixed(estimate[i], 1)),
        )
    };
    let contrast = |i: Option<usize>| {
        i.map_or_else(
            || format::MISSING.to_string(),
            |i| format::effect_with_interval(estimate[i], low[i], high[i]),
        )
    };
    let arms = first_seen(&find.arm);

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
        let at = |statistic: &str, r: &str| find.row(arm, statistic, r, PRIMARY);
        let lane_name = at("availability", "low")
            .or(at("availability", "high"))
            .map_or_else(String::new, |i| lane[i].clone());
        let un = |r: &str| {
            at("availability", r)
                .and_then(|i| unavailable[i])
                .map_or_else(|| format::MISSING.to_string(), format::count)
        };
        main.push(vec![
            arm.clone(),
            lane_name,
            rate(at("availability", "low")),
            rate(at("availability", "high")),
            rate(at("itt_success", "low")),
            rate(at("itt_success", "high")),
            contrast(at("availability", "high_minus_low")),
            contrast(at("itt_success", "high_minus_low")),
            format!("{} / {}", un("low"), un("high")),
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
        for unit in tbb_analysis::discovery::UNITS {
            if let Some(i) = find.row(arm, "itt_success", "high_minus_low", unit) {
                by_unit.push(vec![
                    arm.clone(),
                    unit_plural(unit),
                    format::count(n_clusters[i]),
                    format::count(n[i]),
                    contrast(Some(i)),
                    format::p_value(p[i], floor[i]),
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
        .and_then(|a| find.row(a, "availability", "low", PRIMARY))
        .map_or_else(
            || format::MISSING.to_string(),
            |i| format::count(n_clusters[i]),
        );
    paper.push(vec![
        "Clusters of required tools resampled".into(),
        clusters,
        format::count(PAPER.clusters),
    ]);
    let mut stopped = Vec::new();
    let mut spent = Vec::new();
    for arm in &arms {
        for r in ["low", "high"] {
            if let Some(i) = find.row(arm, "availability", r, PRIMARY) {
                let show =
                    |v: Option<u64>| v.map_or_else(|| format::MISSING.to_string(), format::count);
                stopped.push(format!("{arm} R {r}: {}", show(unavailable[i])));
                spent.push(format!(
                    "{arm} R {r}: {} requests, {} tokens",
                    show(unavailable_requests[i]),
                    show(unavailable_tokens[i])
                ));
            }
        }
    }
    paper.push(vec![
        "Episodes stopped for lack of availability before any request".into(),
        stopped.join("; "),
        format!(
            "{} (of {} zero-token rows)",
            format::count(PAPER.unavailable_rows),
            format::count(PAPER.zero_token_rows)
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
        format::count(PAPER.infra_failures),
    ]);
    s.table(paper);
    s.note(vec![text(format!(
        "The paper's discovery contrasts resample {} clusters of required tools; this \
         study's clusters are the distinct required tool kinds of its own families, so \
         their number differs (docs/discovery.md). The paper's router and retrieval \
         details beyond these figures are not published as numbers, so no other paper \
         value is shown.",
        PAPER.clusters
    ))]);
    Ok(())
}
