//! The frontier section: verified task success at 2, 6, 14 and 30 required calls with
//! the change from 2 calls (family-cluster intervals), how the episodes end, what they
//! spend, which limit they reach first — the paper's published frontier figures beside
//! this study's, labelled as the paper's — and Figure 9, every episode's cumulative
//! tokens against its executed calls with the episode budget and the call limits.
//!
//! Owns: the layout of the `frontier` and `frontier_paths` tables in the report, and
//! where the paper's values ([`paper::frontier`]) stand: only in columns and rows
//! that say they are the paper's.
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
use super::super::paper::{frontier as q, Quote};
use super::super::ReportError;
use super::{absent, rows, Tables};
use tbb_tables::analyses::frontier::{FrontierPathsRow, FrontierRow};
use tbb_tables::TableRow;

/// The paper's change in VTS from 2 calls, by the depth it reports.
const CHANGES_QUOTED: [(u64, Quote); 3] =
    [(6, q::CHANGE_6), (14, q::CHANGE_14), (30, q::CHANGE_30)];

/// The column headings of the terminal flags, in [`FrontierRow::flag_counts`] order.
const FLAG_HEADINGS: [&str; 7] = [
    "Infra",
    "Truncation",
    "Budget / call limit",
    "Turn limit",
    "Infeasibility",
    "Wrong conclusion",
    "Contract break",
];

fn paper_contrast(depth: u64) -> String {
    CHANGES_QUOTED
        .iter()
        .find(|(d, _)| *d == depth)
        .map_or_else(|| format::MISSING.to_string(), |(_, q)| q.text())
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
    match rows::<FrontierRow>(tables)? {
        Some(t) => depth_tables(&t, s),
        None => s.note(absent("The depth table", FrontierRow::TABLE, "frontier")),
    }
    match rows::<FrontierPathsRow>(tables)? {
        Some(t) => paths_figure(&t, s)?,
        None => s.note(absent("Figure 9", FrontierPathsRow::TABLE, "frontier")),
    }
    Ok(())
}

/// A null value prints as "—", as a non-finite one does.
fn or_missing(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

/// "estimate [low, high]" of a depth's change from 2 calls ("—" on the depth-2 row).
fn change(r: &FrontierRow) -> String {
    format::effect_with_interval(
        or_missing(r.contrast_pp),
        or_missing(r.ci_low_pp),
        or_missing(r.ci_high_pp),
    )
}

fn calls_iqr(r: &FrontierRow) -> String {
    median_iqr(
        or_missing(r.calls_median),
        or_missing(r.calls_q1),
        or_missing(r.calls_q3),
    )
}

fn within_budget(r: &FrontierRow) -> String {
    format!(
        "{} ({}, {})",
        format::count(r.within_budget),
        format::count(r.within_budget_failed),
        format::count(r.within_budget_infeasibility)
    )
}

fn limits_first(r: &FrontierRow) -> String {
    format!(
        "{} / {} / {}",
        format::count(r.budget_first),
        format::count(r.call_limit_first),
        format::count(r.neither_limit)
    )
}

fn depth_tables(t: &[FrontierRow], s: &mut Section) {
    let caps = t.iter().fold(Vec::<u32>::new(), |mut v, r| {
        if !v.contains(&r.completion_cap) {
            v.push(r.completion_cap);
        }
        v
    });
    let several_caps = caps.len() > 1;
    let label = |r: &FrontierRow| {
        if several_caps {
            format!(
                "{} (cap {})",
                r.depth,
                format::count(u64::from(r.completion_cap))
            )
        } else {
            r.depth.to_string()
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
    for r in t {
        main.push(vec![
            label(r),
            format::count(u64::from(r.call_limit)),
            format::count(r.n_episodes),
            format::count(r.n_families),
            format::percent(r.vts),
            change(r),
            paper_contrast(u64::from(r.depth)),
            calls_iqr(r),
            median_iqr(
                or_missing(r.total_tokens_median),
                or_missing(r.total_tokens_q1),
                or_missing(r.total_tokens_q3),
            ),
            format::whole(or_missing(r.prompt_tokens_median)),
            within_budget(r),
            limits_first(r),
        ]);
        let flags = r.flag_counts();
        let mut row = vec![label(r), format::count(flags.iter().sum())];
        row.extend(flags.iter().map(|f| format::count(*f)));
        flag_table.push(row);
    }
    s.table(main);
    s.table(flag_table);

    // The paper's frontier figures beside this study's, at the first cap.
    let at = |d: u64| {
        t.iter()
            .find(|r| u64::from(r.depth) == d && Some(&r.completion_cap) == caps.first())
    };
    let show = |r: Option<&FrontierRow>, f: &dyn Fn(&FrontierRow) -> String| {
        r.map_or_else(|| format::MISSING.to_string(), f)
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
    paper.push(vec![
        "Families (the intervals' clusters)".into(),
        show(t.first(), &|r| format::count(r.n_families)),
        q::FAMILIES.text(),
    ]);
    for (d, published) in CHANGES_QUOTED {
        paper.push(vec![
            format!("Change in VTS from 2 to {d} calls (pp)"),
            show(at(d), &change),
            published.text(),
        ]);
    }
    let d30 = at(30);
    paper.push(vec![
        "30 calls: episodes within the budget (failed, at an infeasibility stop)".into(),
        show(d30, &within_budget),
        // Every one of the paper's 30-call episodes within the budget failed.
        format!(
            "{} ({}, {})",
            q::WITHIN_BUDGET_30.text(),
            q::WITHIN_BUDGET_30.text(),
            q::WITHIN_BUDGET_INFEASIBLE_30.text()
        ),
    ]);
    paper.push(vec![
        "30 calls: executed calls, median [q1–q3]".into(),
        show(d30, &calls_iqr),
        format!(
            "{} [{}–{}]",
            q::CALLS_MEDIAN_30.text(),
            q::CALLS_Q1_30.text(),
            q::CALLS_Q3_30.text()
        ),
    ]);
    paper.push(vec![
        "30 calls: median total tokens".into(),
        show(d30, &|r| format::whole(or_missing(r.total_tokens_median))),
        q::TOKENS_MEDIAN_30.text(),
    ]);
    paper.push(vec![
        "30 calls: budget / call limit / neither reached first".into(),
        show(d30, &limits_first),
        "the budget before the call limit (Figure 9)".into(),
    ]);
    let d14 = at(14);
    paper.push(vec![
        "14 calls: median prompt tokens".into(),
        show(d14, &|r| format::whole(or_missing(r.prompt_tokens_median))),
        q::PROMPT_MEDIAN_14.text(),
    ]);
    paper.push(vec![
        "14 calls: episodes over the budget".into(),
        show(d14, &|r| {
            format::count(r.n_episodes.saturating_sub(r.within_budget))
        }),
        q::OVER_BUDGET_14.text(),
    ]);
    s.table(paper);
    let budgets: Vec<u64> = t.iter().fold(Vec::new(), |mut v, r| {
        if !v.contains(&r.episode_budget) {
            v.push(r.episode_budget);
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
}

/// Figure 9: one figure per completion cap.
fn paths_figure(t: &[FrontierPathsRow], s: &mut Section) -> Result<(), ReportError> {
    // cap → (depth → (episode → its (request, calls, tokens), the depth's largest call
    // limit), the cap's budget).
    type Episodes = BTreeMap<String, Vec<(u64, u64, u64)>>;
    type Depths = BTreeMap<u64, (Episodes, u64)>;
    let mut by_cap: BTreeMap<u64, (Depths, u64)> = BTreeMap::new();
    for r in t {
        let (depths, b) = by_cap
            .entry(u64::from(r.completion_cap))
            .or_insert_with(|| (BTreeMap::new(), r.episode_budget));
        *b = (*b).max(r.episode_budget);
        let limit = u64::from(r.call_limit);
        let (episodes, l) = depths
            .entry(u64::from(r.depth))
            .or_insert_with(|| (BTreeMap::new(), limit));
        *l = (*l).max(limit);
        episodes.entry(r.episode_key.clone()).or_default().push((
            u64::from(r.request),
            u64::from(r.calls),
            r.cumulative_tokens,
        ));
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
        // The paper's medians at 30 calls stand on this figure only at its budget: at
        // another the axes, and where the budget binds, are not the paper's.
        let at_papers_budget = *budget == q::episode_budget();
        let paper_point = |x: Quote, y: Quote| Point {
            x: x.count().map_or(f64::NAN, |c| c as f64),
            y: y.count().map_or(f64::NAN, |c| c as f64 / 1000.0),
        };
        let paper_marks: Vec<Point> = if at_papers_budget && depths.contains_key(&30) {
            vec![paper_point(q::CALLS_MEDIAN_30, q::TOKENS_MEDIAN_30)]
        } else {
            Vec::new()
        };
        let paper_text = format!(
            "The paper's 30-call episodes have a median of {} executed calls and {} tokens \
             (its budget {} tokens){}.",
            q::CALLS_MEDIAN_30.text(),
            q::TOKENS_MEDIAN_30.text(),
            q::EPISODE_BUDGET.text(),
            if paper_marks.is_empty() {
                "; not drawn, as this figure's budget or depths are not the paper's"
            } else {
                ", the black diamond (legend \"paper\")"
            }
        );
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
                 before its vertical line reaches the budget first. {paper_text}",
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
                &paper_marks,
                "executed calls",
                "cumulative tokens (thousands)",
            )?,
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use tbb_analysis::frontier::{tests::panel, Frontier, FrontierParams};
    use tbb_analysis::{Context, Typed};

    /// The report of the analysis's tables on the hand-built panel of the analysis's
    /// own tests (budget 100 tokens; depths 2 and 30).
    pub(crate) fn rendered() -> crate::Rendered {
        rendered_at(100)
    }

    /// The same at an episode budget of `budget` tokens.
    fn rendered_at(budget: u64) -> crate::Rendered {
        let (episodes, requests) = panel();
        let limits = tbb_analysis::frontier::tests::limits();
        let variants = tbb_analysis::frontier::tests::variants(&limits);
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
            episode_budget: Some(budget),
        };
        let produced =
            <Frontier as Typed>::run(&params, &context).unwrap_or_else(|e| panic!("{e}"));
        let tables: BTreeMap<String, arrow_array::RecordBatch> = produced
            .tables
            .into_iter()
            .map(|o| (o.table.to_string(), o.batch))
            .collect();
        crate::render("frontier", &tables, &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The section, rendered from [`rendered`].
    #[test]
    fn the_frontier_section() {
        let r = rendered();
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
        // At a budget that is not the paper's, its point is not drawn.
        assert_eq!(crate::figures::tests::paper_points(svg), 0);
    }

    /// At the paper's episode budget, Figure 9 marks the paper's medians at 30 calls.
    #[test]
    fn figure_9_marks_the_papers_point_at_its_budget() {
        let r = rendered_at(crate::paper::frontier::episode_budget());
        let svg = r
            .figures
            .iter()
            .find(|(name, _)| name == "report-frontier-paths-1024.svg")
            .map(|(_, svg)| svg.as_str())
            .unwrap_or_else(|| panic!("Figure 9 is drawn"));
        assert_eq!(crate::figures::tests::paper_points(svg), 1);
        assert!(svg.contains(">\npaper\n</text>"));
        assert!(r.markdown.contains("the black diamond (legend \"paper\")"));
    }
}
