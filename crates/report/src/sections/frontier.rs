//! The frontier section: verified task success at 2, 6, 14 and 30 required calls with
//! the change from 2 calls (family-cluster intervals), how the episodes end, what they
//! spend, which limit they reach first — the paper's published frontier figures beside
//! this study's, labelled as the paper's — and Figure 9, every episode's cumulative
//! tokens against its executed calls with the episode budget and the call limits.
//!
//! Owns: the layout of the `frontier` and `frontier_paths` tables in the report, and
//! the paper's values ([`PAPER_CONTRASTS`], [`PAPER`]), which appear only in columns
//! and rows that say they are the paper's.
//!
//! Invariants: depths in the order the table holds them (by cap, then depth); a
//! missing value is "—". The figure draws one line per episode from (0, 0) — before
//! its first request — through each of its requests.
//!
//! Never: computes a statistic; every number of this study is a cell of a table (or a
//! count of its rows).

use std::collections::BTreeMap;

use super::super::document::{code, text, Align, Figure, Section, Table};
use super::super::figures::{self, PathSeries, Point};
use super::super::format;
use super::super::ReportError;
use super::{absent, table, Tables};
use tbb_analysis::frontier::FLAGS;

/// The paper's change in VTS from 2 calls, by depth: (depth, "estimate [low, high]").
pub(crate) const PAPER_CONTRASTS: [(u64, &str); 3] = [
    (6, "-3.8 [-8.8, 2.5]"),
    (14, "-6.2 [-12.5, 1.2]"),
    (30, "-91.2 [-95.0, -83.8]"),
];

/// What else the paper publishes about its frontier.
pub(crate) struct PaperFrontier {
    /// 30-call episodes within the episode budget.
    pub within_budget_30: u64,
    /// ... of which failed.
    pub within_budget_failed_30: u64,
    /// ... of which at an infeasibility stop.
    pub within_budget_infeasibility_30: u64,
    /// Executed calls at 30: median, q1, q3.
    pub calls_30: (u64, u64, u64),
    /// Median total tokens at 30 calls.
    pub tokens_median_30: u64,
    /// Median prompt tokens at 14 calls.
    pub prompt_median_14: u64,
    /// 14-call episodes over the episode budget.
    pub over_budget_14: u64,
}

/// The paper's published values.
pub(crate) const PAPER: PaperFrontier = PaperFrontier {
    within_budget_30: 11,
    within_budget_failed_30: 11,
    within_budget_infeasibility_30: 9,
    calls_30: (20, 18, 22),
    tokens_median_30: 132_392,
    prompt_median_14: 79_898,
    over_budget_14: 0,
};

/// The column headings of the terminal flags, in [`FLAGS`] order.
const FLAG_HEADINGS: [&str; 7] = [
    "Infra",
    "Truncation",
    "Budget / call limit",
    "Turn limit",
    "Infeasibility",
    "Wrong conclusion",
    "Contract break",
];

fn paper_contrast(depth: u64) -> &'static str {
    PAPER_CONTRASTS
        .iter()
        .find(|(d, _)| *d == depth)
        .map_or(format::MISSING, |(_, v)| v)
}

/// "median [q1–q3]" of whole numbers.
fn median_iqr(median: f64, q1: f64, q3: f64) -> String {
    format!(
        "{} [{}–{}]",
        format::whole(median),
        format::whole(q1),
        format::whole(q3)
    )
}

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    s.paragraph(vec![text(
        "The same frontier tasks at each depth: the number of calls a hand-off chain \
         requires. The call limit grows with the chain (certified minimum + 2); the episode \
         budget does not. The change in VTS from 2 calls pairs each episode with the \
         2-call episode of the same configuration and family; intervals are 95% \
         percentile bootstraps that resample families. Medians and quartiles \
         interpolate between order statistics. An episode reaches the budget at the \
         first request whose cumulative reported tokens exceed it, and the call limit \
         at the first response whose executed calls reach it; the earlier counts as \
         first.",
    )]);
    match table(tables, "frontier") {
        Some(t) => depth_tables(&t, s)?,
        None => s.note(absent("The depth table", "frontier", "frontier")),
    }
    match table(tables, "frontier_paths") {
        Some(t) => paths_figure(&t, s)?,
        None => s.note(absent("Figure 9", "frontier_paths", "frontier")),
    }
    Ok(())
}

fn depth_tables(
    t: &super::super::columns::Columns<'_>,
    s: &mut Section,
) -> Result<(), ReportError> {
    let (cap, depth, limit, budget) = (
        t.int("completion_cap")?,
        t.int("depth")?,
        t.int("call_limit")?,
        t.int("episode_budget")?,
    );
    let (n, families, vts) = (t.int("n_episodes")?, t.int("n_families")?, t.float("vts")?);
    let (est, lo, hi) = (
        t.float("contrast_pp")?,
        t.float("ci_low_pp")?,
        t.float("ci_high_pp")?,
    );
    let (calls, calls_q1, calls_q3) = (
        t.float("calls_median")?,
        t.float("calls_q1")?,
        t.float("calls_q3")?,
    );
    let (tokens, tokens_q1, tokens_q3) = (
        t.float("total_tokens_median")?,
        t.float("total_tokens_q1")?,
        t.float("total_tokens_q3")?,
    );
    let prompt = t.float("prompt_tokens_median")?;
    let (within, within_failed, within_infeasible) = (
        t.int("within_budget")?,
        t.int("within_budget_failed")?,
        t.int("within_budget_infeasibility")?,
    );
    let (budget_first, limit_first, neither) = (
        t.int("budget_first")?,
        t.int("call_limit_first")?,
        t.int("neither_limit")?,
    );
    let flags = FLAGS
        .iter()
        .map(|f| t.int(&format!("flag_{f}")))
        .collect::<Result<Vec<_>, _>>()?;
    let caps = cap.iter().copied().fold(Vec::<u64>::new(), |mut v, c| {
        if !v.contains(&c) {
            v.push(c);
        }
        v
    });
    let several_caps = caps.len() > 1;
    let label = |i: usize| {
        if several_caps {
            format!("{} (cap {})", depth[i], format::count(cap[i]))
        } else {
            depth[i].to_string()
        }
    };

    let mut main = Table::new(
        "VTS by depth and its change from 2 calls (pp, family-cluster 95% interval) beside \
         the paper's published change (column \"Paper change\"), executed calls and total tokens (median \
         [q1–q3]), the median episode's prompt tokens, the episodes within the episode \
         budget (of them: failed, at an infeasibility stop) and which limit the episodes \
         reach first.",
        &[
            ("Depth", Align::Right),
            ("Call limit", Align::Right),
            ("Episodes", Align::Right),
            ("Families", Align::Right),
            ("VTS", Align::Right),
            ("Change from 2", Align::Right),
            ("Paper change", Align::Right),
            ("Executed calls", Align::Right),
            ("Total tokens", Align::Right),
            ("Median prompt tokens", Align::Right),
            ("Within budget (failed, infeasible)", Align::Right),
            ("Budget / call limit / neither first", Align::Right),
        ],
    );
    let mut flag_table = Table::new(
        "Terminal flags by depth: how the failed episodes end (one flag each, by the \
         grader's precedence).",
        &[("Depth", Align::Right), ("Failed", Align::Right)],
    );
    for heading in FLAG_HEADINGS {
        flag_table.push_column(heading, Align::Right);
    }
    for i in 0..t.len() {
        main.push(vec![
            label(i),
            format::count(limit[i]),
            format::count(n[i]),
            format::count(families[i]),
            format::percent(vts[i]),
            format::effect_with_interval(est[i], lo[i], hi[i]),
            paper_contrast(depth[i]).to_string(),
            median_iqr(calls[i], calls_q1[i], calls_q3[i]),
            median_iqr(tokens[i], tokens_q1[i], tokens_q3[i]),
            format::whole(prompt[i]),
            format!(
                "{} ({}, {})",
                format::count(within[i]),
                format::count(within_failed[i]),
                format::count(within_infeasible[i])
            ),
            format!(
                "{} / {} / {}",
                format::count(budget_first[i]),
                format::count(limit_first[i]),
                format::count(neither[i])
            ),
        ]);
        let mut row = vec![label(i), format::count(flags.iter().map(|f| f[i]).sum())];
        row.extend(flags.iter().map(|f| format::count(f[i])));
        flag_table.push(row);
    }
    s.table(main);
    s.table(flag_table);

    // The paper's frontier figures beside this study's, at the first cap.
    let at = |d: u64| (0..t.len()).find(|&i| depth[i] == d && Some(&cap[i]) == caps.first());
    let show = |i: Option<usize>, f: &dyn Fn(usize) -> String| {
        i.map_or_else(|| format::MISSING.to_string(), f)
    };
    let mut paper = Table::new(
        "This study beside the paper's published frontier figures (the paper's column is \
         quoted, not computed; the paper ran real providers).",
        &[
            ("Quantity", Align::Left),
            ("This study", Align::Right),
            ("Paper", Align::Right),
        ],
    );
    for (d, published) in PAPER_CONTRASTS {
        paper.push(vec![
            format!("Change in VTS from 2 to {d} calls (pp)"),
            show(at(d), &|i| {
                format::effect_with_interval(est[i], lo[i], hi[i])
            }),
            published.into(),
        ]);
    }
    let d30 = at(30);
    paper.push(vec![
        "30 calls: episodes within the budget (failed, at an infeasibility stop)".into(),
        show(d30, &|i| {
            format!(
                "{} ({}, {})",
                format::count(within[i]),
                format::count(within_failed[i]),
                format::count(within_infeasible[i])
            )
        }),
        format!(
            "{} ({}, {})",
            PAPER.within_budget_30,
            PAPER.within_budget_failed_30,
            PAPER.within_budget_infeasibility_30
        ),
    ]);
    paper.push(vec![
        "30 calls: executed calls, median [q1–q3]".into(),
        show(d30, &|i| median_iqr(calls[i], calls_q1[i], calls_q3[i])),
        format!(
            "{} [{}–{}]",
            PAPER.calls_30.0, PAPER.calls_30.1, PAPER.calls_30.2
        ),
    ]);
    paper.push(vec![
        "30 calls: median total tokens".into(),
        show(d30, &|i| format::whole(tokens[i])),
        format::count(PAPER.tokens_median_30),
    ]);
    paper.push(vec![
        "30 calls: budget / call limit / neither reached first".into(),
        show(d30, &|i| {
            format!(
                "{} / {} / {}",
                format::count(budget_first[i]),
                format::count(limit_first[i]),
                format::count(neither[i])
            )
        }),
        "the budget before the call limit (Figure 9)".into(),
    ]);
    let d14 = at(14);
    paper.push(vec![
        "14 calls: median prompt tokens".into(),
        show(d14, &|i| format::whole(prompt[i])),
        format::count(PAPER.prompt_median_14),
    ]);
    paper.push(vec![
        "14 calls: episodes over the budget".into(),
        show(d14, &|i| format::count(n[i].saturating_sub(within[i]))),
        format::count(PAPER.over_budget_14),
    ]);
    s.table(paper);
    let budgets: Vec<u64> = budget.iter().copied().fold(Vec::new(), |mut v, b| {
        if !v.contains(&b) {
            v.push(b);
        }
        v
    });
    s.note(vec![
        text(format!(
            "Episode budget: {} reported tokens at every depth. The paper's prompt and \
             token figures count its providers' tokens; this study's count the simulated \
             panel's rendered requests with a real tokenizer, so the scale differs while \
             the shape (the budget binds before the call limit at 30 calls) is what the \
             comparison checks. See ",
            budgets
                .iter()
                .map(|b| format::count(*b))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        code("docs/frontier.md"),
        text("."),
    ]);
    Ok(())
}

/// Figure 9: one figure per completion cap.
fn paths_figure(
    t: &super::super::columns::Columns<'_>,
    s: &mut Section,
) -> Result<(), ReportError> {
    let (key, cap, depth) = (
        t.text("episode_key")?,
        t.int("completion_cap")?,
        t.int("depth")?,
    );
    let (request, calls, tokens) = (
        t.int("request")?,
        t.int("calls")?,
        t.int("cumulative_tokens")?,
    );
    let (limit, budget) = (t.int("call_limit")?, t.int("episode_budget")?);
    // cap → (depth → (episode → its (request, calls, tokens), the depth's largest call
    // limit), the cap's budget).
    type Episodes = BTreeMap<String, Vec<(u64, u64, u64)>>;
    type Depths = BTreeMap<u64, (Episodes, u64)>;
    let mut by_cap: BTreeMap<u64, (Depths, u64)> = BTreeMap::new();
    for i in 0..t.len() {
        let (depths, b) = by_cap
            .entry(cap[i])
            .or_insert_with(|| (BTreeMap::new(), budget[i]));
        *b = (*b).max(budget[i]);
        let (episodes, l) = depths
            .entry(depth[i])
            .or_insert_with(|| (BTreeMap::new(), limit[i]));
        *l = (*l).max(limit[i]);
        episodes
            .entry(key[i].clone())
            .or_default()
            .push((request[i], calls[i], tokens[i]));
    }
    for (cap, (depths, budget)) in &by_cap {
        let series: Vec<PathSeries> = depths
            .iter()
            .map(|(d, (episodes, l))| PathSeries {
                name: format!("{d} calls"),
                paths: episodes
                    .values()
                    .map(|path| {
                        let mut path = path.clone();
                        path.sort_unstable();
                        std::iter::once(Point { x: 0.0, y: 0.0 })
                            .chain(path.iter().map(|&(_, c, tok)| Point {
                                x: c as f64,
                                y: tok as f64 / 1000.0,
                            }))
                            .collect()
                    })
                    .collect(),
                limit: Some(*l as f64),
            })
            .collect();
        let cap_text = if by_cap.len() > 1 {
            format!(", cap {}", format::count(*cap))
        } else {
            String::new()
        };
        s.figure(Figure {
            file_name: format!("report-frontier-paths-{cap}.svg"),
            caption: format!(
                "Cumulative reported tokens (thousands) against executed calls{cap_text} (the \
                 paper's Figure 9): one line per episode and one colour per depth, through \
                 each provider request (episodes per depth: {}). The grey horizontal line is \
                 the episode budget ({} tokens), each vertical line its depth's call limit: a path that crosses the grey line \
                 before its vertical line reaches the budget first.",
                series
                    .iter()
                    .map(|x| format!("{} {}", x.name, format::count(x.paths.len() as u64)))
                    .collect::<Vec<_>>()
                    .join(", "),
                format::count(*budget)
            ),
            svg: figures::limit_paths(
                "Cumulative tokens against executed calls",
                &series,
                *budget as f64 / 1000.0,
                "executed calls",
                "cumulative tokens (thousands)",
            )?,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tbb_analysis::frontier::{tests::panel, Frontier, FrontierParams};
    use tbb_analysis::{Context, Typed};
    use tbb_tables::TableBuilder;

    /// The section, rendered from the analysis's tables on the hand-built panel of the
    /// analysis's own tests (budget 100 tokens; depths 2 and 30).
    #[test]
    fn the_frontier_section() {
        let (episodes, requests) = panel();
        let limits = tbb_analysis::frontier::tests::limits();
        let variants = TableBuilder::new()
            .text("variant_id", limits.keys())
            .u32("call_limit", limits.values().copied())
            .build("variants")
            .unwrap_or_else(|e| panic!("{e}"));
        let given = BTreeMap::from([("variants".to_string(), variants)]);
        let context = Context {
            study: "frontier",
            episodes: &episodes,
            requests: &requests,
            tables: &given,
            skipped: &[],
        };
        let params = FrontierParams {
            draws: Some(200),
            seed: Some(5),
            episode_budget: Some(100),
        };
        let produced =
            <Frontier as Typed>::run(&params, &context).unwrap_or_else(|e| panic!("{e}"));
        let tables: BTreeMap<String, arrow_array::RecordBatch> = produced
            .tables
            .into_iter()
            .map(|o| (o.table.to_string(), o.batch))
            .collect();
        let r = crate::render("frontier", &tables, &[]).unwrap_or_else(|e| panic!("{e}"));
        let from = r.markdown.find("## The depth frontier").unwrap_or(0);
        let to = r.markdown.rfind("<!--").unwrap_or(r.markdown.len());
        insta::assert_snapshot!(&r.markdown[from..to]);
        let svg = r
            .figures
            .iter()
            .find(|(name, _)| name == "report-frontier-paths-1024.svg")
            .map(|(_, svg)| svg.as_str())
            .unwrap_or_else(|| panic!("Figure 9 is drawn"));
        use crate::figures::{tests::strokes, SERIES_COLOURS};
        // Depth 2: 6 episodes and the call limit; depth 30: 6 episodes and the limit.
        assert_eq!(strokes(svg, SERIES_COLOURS[0]), 7);
        assert_eq!(strokes(svg, SERIES_COLOURS[1]), 7);
    }
}
