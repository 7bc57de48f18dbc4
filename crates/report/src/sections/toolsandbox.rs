//! The ToolSandbox section: what adding distraction tools to a scenario's menu does to
//! ToolSandbox's grade and to the prompt tokens, as paired contrasts (10 − 0 and 3 − 0
//! tools) pooled and per configuration, the insufficient-information scenarios apart,
//! and the per-level and per-category summaries; beside them, the paper's Appendix K
//! statement, labelled as the paper's, and one line saying whether the panel's
//! intervals bear it out.
//!
//! Owns: the layout of the `toolsandbox_contrasts`, `toolsandbox_levels` and
//! `toolsandbox_categories` tables in the report, the counts of upstream's scenario set
//! it cites ([`UPSTREAM_BASE_SCENARIOS`], [`NEED_INTERNET`]), and the reading of the
//! paper's statement the agreement line checks ([`agreement`]).
//!
//! Never: computes a statistic (the `toolsandbox` analysis does), or decides agreement
//! from the paper's text: the line reads only the intervals in the table.

use tbb_tables::analyses::toolsandbox::{
    ToolsandboxCategoriesRow, ToolsandboxContrastsRow, ToolsandboxLevelsRow, SUBSET_INSUFFICIENT,
    SUBSET_SUFFICIENT,
};
use tbb_tables::TableRow;

use super::super::paper::toolsandbox as q;
use super::{absent, and_list, configuration_label, first_seen, rows, Tables};
use crate::document::{text, Align, Section, Table};
use crate::format;
use crate::ReportError;

/// Base scenarios in upstream's scenario export (ToolSandbox commit `165848b`, pinned
/// in `vendor/toolsandbox/`). Written here because no table carries it and the report
/// does not read the scenarios file; `tbb_toolsandbox::scenario`'s test
/// `the_export_holds_129_base_scenarios_in_three_variants` checks the count against the
/// pinned file, and `docs/toolsandbox.md` states it.
pub(crate) const UPSTREAM_BASE_SCENARIOS: u64 = 129;

/// Of them, the base scenarios whose tools call RapidAPI and so need the internet
/// (`Scenario::needs_internet`): tbb plays scenarios offline and never plays these.
/// Checked against the pinned file by `thirty_eight_base_scenarios_need_the_internet`.
pub(crate) const NEED_INTERNET: u64 = 38;

/// The analysis that writes the tables.
const ANALYSIS: &str = "toolsandbox";

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let contrasts = rows::<ToolsandboxContrastsRow>(tables)?;
    let levels = rows::<ToolsandboxLevelsRow>(tables)?;
    let categories = rows::<ToolsandboxCategoriesRow>(tables)?;
    match &levels {
        Some(levels) => s.paragraph(vec![text(played(levels))]),
        None => s.paragraph(absent(
            "What was played",
            ToolsandboxLevelsRow::TABLE,
            ANALYSIS,
        )),
    }
    match &contrasts {
        Some(contrasts) => {
            s.paragraph(vec![text(
                "Each contrast pairs a configuration's play of a base scenario with k \
                 distraction tools with its play of the same scenario, cap and repeat \
                 without them; the estimate is the mean paired difference (level − 0), \
                 its 95% interval a percentile cluster bootstrap over base scenarios \
                 (every pair of a drawn scenario comes along, in the pooled rows every \
                 configuration's). Pairs with an infrastructure failure are excluded and \
                 counted, as are rows whose partner was not played. Scenarios with \
                 insufficient information, where declining is right and an agent that \
                 does nothing scores, are reported apart; the headline is the others.",
            )]);
            headline(contrasts, s);
            s.paragraph(vec![text(format!(
                "The paper's statement ({}; it is qualitative, the paper prints no \
                 ToolSandbox number), in our words: {}.",
                q::MENU_COSTS_TOKENS_MORE_THAN_SUCCESS.cite,
                q::MENU_COSTS_TOKENS_MORE_THAN_SUCCESS.text()
            ))]);
            s.paragraph(vec![text(agreement(contrasts))]);
            s.heading("Per configuration");
            by_configuration(contrasts, SUBSET_SUFFICIENT, s);
            s.heading("Scenarios with insufficient information");
            if contrasts.iter().any(|r| r.subset == SUBSET_INSUFFICIENT) {
                by_configuration(contrasts, SUBSET_INSUFFICIENT, s);
            } else {
                s.paragraph(vec![text(
                    "No scenario with insufficient information was played.",
                )]);
            }
        }
        None => s.paragraph(absent(
            "The contrasts",
            ToolsandboxContrastsRow::TABLE,
            ANALYSIS,
        )),
    }
    s.heading("By distraction level");
    match &levels {
        Some(levels) => s.table(levels_table(levels)),
        None => s.paragraph(absent("The levels", ToolsandboxLevelsRow::TABLE, ANALYSIS)),
    }
    s.heading("By category");
    match &categories {
        Some(categories) => s.table(categories_table(categories)),
        None => s.paragraph(absent(
            "The categories",
            ToolsandboxCategoriesRow::TABLE,
            ANALYSIS,
        )),
    }
    Ok(())
}

/// The sentence saying which scenarios ran, from the pooled level rows.
fn played(levels: &[ToolsandboxLevelsRow]) -> String {
    let pooled: Vec<&ToolsandboxLevelsRow> =
        levels.iter().filter(|r| r.configuration == "all").collect();
    let bases = pooled.iter().map(|r| r.base_scenarios).max().unwrap_or(0);
    let episodes: u64 = pooled.iter().map(|r| u64::from(r.episodes)).sum();
    let tools: Vec<String> = first_seen(
        &pooled
            .iter()
            .map(|r| r.distraction_tools)
            .collect::<Vec<_>>(),
    )
    .iter()
    .map(u32::to_string)
    .collect();
    let configurations = first_seen(
        &levels
            .iter()
            .filter(|r| r.configuration != "all")
            .map(|r| r.configuration.clone())
            .collect::<Vec<_>>(),
    )
    .len();
    format!(
        "The study played {} ToolSandbox base scenarios, each with {} distraction \
         tools, with {} configuration{}: {} episodes. Upstream's export holds {} base \
         scenarios; the {} whose tools include a RapidAPI search need the internet and \
         are never played (tbb plays ToolSandbox offline), which leaves {} offline base scenarios.",
        format::count(u64::from(bases)),
        and_list(&tools),
        format::count(configurations as u64),
        if configurations == 1 { "" } else { "s" },
        format::count(episodes),
        format::count(UPSTREAM_BASE_SCENARIOS),
        format::count(NEED_INTERNET),
        format::count(UPSTREAM_BASE_SCENARIOS - NEED_INTERNET),
    )
}

/// What a measure is called in the tables.
fn measure_label(measure: &str) -> &'static str {
    match measure {
        "similarity" => "similarity (0–1)",
        "success" => "success (pp)",
        _ => "prompt tokens per episode",
    }
}

/// A level mean of `measure`.
fn level_mean(measure: &str, x: Option<f64>) -> String {
    let x = x.unwrap_or(f64::NAN);
    match measure {
        "similarity" => format::fixed(x, 3),
        // The success measure is 100 × [similarity = 1]: its mean is a percentage.
        "success" => format::percent(x / 100.0),
        _ => format::whole(x),
    }
}

/// A contrast's estimate with its interval, in its measure's unit.
fn difference(r: &ToolsandboxContrastsRow) -> String {
    let (e, l, h) = (
        r.estimate.unwrap_or(f64::NAN),
        r.ci_low.unwrap_or(f64::NAN),
        r.ci_high.unwrap_or(f64::NAN),
    );
    match r.measure.as_str() {
        "similarity" => format::fixed_with_interval(e, l, h, 3),
        "success" => format::effect_with_interval(e, l, h),
        _ => format::whole_with_interval(e, l, h),
    }
}

/// "10 − 0".
fn contrast_label(level: u32) -> String {
    format!("{level} − 0")
}

/// The measures in the order the section shows them: tokens first (the headline).
const SHOWN: [&str; 3] = ["prompt_tokens", "similarity", "success"];

/// The headline table: pooled over configurations, sufficient information, each
/// higher level (highest first) and measure.
fn headline(contrasts: &[ToolsandboxContrastsRow], s: &mut Section) {
    let pooled: Vec<&ToolsandboxContrastsRow> = contrasts
        .iter()
        .filter(|r| r.subset == SUBSET_SUFFICIENT && r.configuration == "all")
        .collect();
    if pooled.is_empty() {
        s.paragraph(vec![text(
            "No scenario with sufficient information was played: there is no headline \
             contrast.",
        )]);
        return;
    }
    let mut levels = first_seen(
        &pooled
            .iter()
            .map(|r| r.distraction_tools)
            .collect::<Vec<_>>(),
    );
    levels.sort_unstable_by(|a, b| b.cmp(a));
    let draws = pooled.first().map_or(0, |r| r.draws);
    let mut table = Table::new(
        format!(
            "Headline: the distraction-tool contrasts pooled over configurations, \
             scenarios with sufficient information; mean at 0 and at k tools over the \
             pairs, and the mean paired difference with its 95% cluster-bootstrap \
             interval over base scenarios ({} draws).",
            format::count(u64::from(draws))
        ),
        &[
            ("Contrast", Align::Left),
            ("Measure", Align::Left),
            ("Pairs", Align::Right),
            ("Base scenarios", Align::Right),
            ("At 0", Align::Right),
            ("At k", Align::Right),
            ("Difference [95% CI]", Align::Right),
            ("Excluded (infra)", Align::Right),
            ("Unpaired", Align::Right),
        ],
    );
    for level in levels {
        for measure in SHOWN {
            let Some(r) = pooled
                .iter()
                .find(|r| r.distraction_tools == level && r.measure == measure)
            else {
                continue;
            };
            table.push(vec![
                contrast_label(level),
                measure_label(measure).into(),
                format::count(u64::from(r.n_pairs)),
                format::count(u64::from(r.n_scenarios)),
                level_mean(measure, r.mean_at_zero),
                level_mean(measure, r.mean_at_level),
                difference(r),
                format::count(u64::from(r.excluded_infra)),
                format::count(u64::from(r.unpaired)),
            ]);
        }
    }
    s.table(table);
}

/// Whether a contrast's interval excludes 0 (`None` without an interval).
fn excludes_zero(r: &ToolsandboxContrastsRow) -> Option<bool> {
    let (low, high) = (r.ci_low?, r.ci_high?);
    (low.is_finite() && high.is_finite()).then_some(low > 0.0 || high < 0.0)
}

/// The line saying whether the panel bears out the paper's statement, read as: at the
/// highest level, pooled, sufficient information, the prompt-token interval lies above
/// 0 while the success interval contains 0.
pub(crate) fn agreement(contrasts: &[ToolsandboxContrastsRow]) -> String {
    let pooled = |measure: &str| {
        contrasts
            .iter()
            .filter(|r| {
                r.subset == SUBSET_SUFFICIENT && r.configuration == "all" && r.measure == measure
            })
            .max_by_key(|r| r.distraction_tools)
    };
    let (Some(tokens), Some(success)) = (pooled("prompt_tokens"), pooled("success")) else {
        return "Agreement with the paper's statement cannot be read: the table has no \
                pooled contrast of scenarios with sufficient information."
            .into();
    };
    let (Some(tokens_clear), Some(success_clear)) = (excludes_zero(tokens), excludes_zero(success))
    else {
        return format!(
            "Agreement with the paper's statement cannot be read: the pooled {} contrast \
             has no pairs.",
            contrast_label(tokens.distraction_tools)
        );
    };
    let tokens_up = tokens_clear && tokens.ci_low.is_some_and(|l| l > 0.0);
    let says = |clear: bool| if clear { "excludes" } else { "includes" };
    let verdict = if tokens_up && !success_clear {
        "agrees with the paper's statement"
    } else {
        "does not show the paper's statement in this form (tokens rising clearly while \
         success does not move clearly)"
    };
    format!(
        "Computed from the headline table: for the {} contrast the prompt-token interval {} 0 \
         ({}) and the success interval {} 0 ({} pp), so the panel {verdict}.",
        contrast_label(tokens.distraction_tools),
        says(tokens_clear),
        difference(tokens),
        says(success_clear),
        difference(success),
    )
}

/// The contrasts of one subset per configuration (then pooled) and level: the three
/// measures side by side.
fn by_configuration(contrasts: &[ToolsandboxContrastsRow], subset: &str, s: &mut Section) {
    let here: Vec<&ToolsandboxContrastsRow> =
        contrasts.iter().filter(|r| r.subset == subset).collect();
    let cells = first_seen(
        &here
            .iter()
            .map(|r| (r.configuration.clone(), r.distraction_tools))
            .collect::<Vec<_>>(),
    );
    let caption = if subset == SUBSET_SUFFICIENT {
        "The contrasts per configuration, scenarios with sufficient information \
         (\"all (pooled)\" repeats the headline): mean paired difference [95% interval], \
         resampling the configuration's base scenarios."
            .to_string()
    } else {
        "The contrasts of the scenarios with insufficient information, where declining \
         is right and an agent that does nothing scores (apart from the headline): mean \
         paired difference [95% interval], resampling base scenarios."
            .to_string()
    };
    let mut table = Table::new(
        caption,
        &[
            ("Configuration", Align::Left),
            ("Contrast", Align::Left),
            ("Pairs", Align::Right),
            ("Base scenarios", Align::Right),
            ("Prompt tokens", Align::Right),
            ("Similarity", Align::Right),
            ("Success (pp)", Align::Right),
            ("Excluded (infra)", Align::Right),
            ("Unpaired", Align::Right),
        ],
    );
    for (configuration, level) in cells {
        let of = |measure: &str| {
            here.iter().find(|r| {
                r.configuration == configuration
                    && r.distraction_tools == level
                    && r.measure == measure
            })
        };
        let Some(first) = of("prompt_tokens").or_else(|| of("similarity")) else {
            continue;
        };
        let shown =
            |measure: &str| of(measure).map_or_else(|| format::MISSING.into(), |r| difference(r));
        table.push(vec![
            configuration_label(&configuration),
            contrast_label(level),
            format::count(u64::from(first.n_pairs)),
            format::count(u64::from(first.n_scenarios)),
            shown("prompt_tokens"),
            shown("similarity"),
            shown("success"),
            format::count(u64::from(first.excluded_infra)),
            format::count(u64::from(first.unpaired)),
        ]);
    }
    s.table(table);
}

/// An optional mean with `decimals` decimals.
fn mean(x: Option<f64>, decimals: usize) -> String {
    format::fixed(x.unwrap_or(f64::NAN), decimals)
}

/// Every configuration (then pooled) at every level.
fn levels_table(levels: &[ToolsandboxLevelsRow]) -> Table {
    let mut table = Table::new(
        "Per configuration and distraction level, every scenario: means over the \
         episodes without an infrastructure failure (counted apart); \"ended at cap\" \
         counts episodes whose last response ended at the completion cap.",
        &[
            ("Configuration", Align::Left),
            ("Distraction tools", Align::Right),
            ("Episodes", Align::Right),
            ("Base scenarios", Align::Right),
            ("Infra failures", Align::Right),
            ("Menu size", Align::Right),
            ("Similarity", Align::Right),
            ("Success", Align::Right),
            ("Prompt tokens", Align::Right),
            ("Completion tokens", Align::Right),
            ("Minefield hits", Align::Right),
            ("Ended at cap", Align::Right),
            ("Cost (USD)", Align::Right),
        ],
    );
    for r in levels {
        table.push(vec![
            configuration_label(&r.configuration),
            r.distraction_tools.to_string(),
            format::count(u64::from(r.episodes)),
            format::count(u64::from(r.base_scenarios)),
            format::count(u64::from(r.infra_failures)),
            mean(r.mean_menu_size, 1),
            mean(r.mean_similarity, 3),
            format::percent(r.success_rate.unwrap_or(f64::NAN)),
            format::whole(r.mean_prompt_tokens.unwrap_or(f64::NAN)),
            format::whole(r.mean_completion_tokens.unwrap_or(f64::NAN)),
            format::count(u64::from(r.minefield_hits)),
            format::count(u64::from(r.truncated)),
            format::usd(r.cost_usd),
        ]);
    }
    table
}

/// The pooled rows of every category at every level.
fn categories_table(categories: &[ToolsandboxCategoriesRow]) -> Table {
    let mut table = Table::new(
        "Per upstream category and distraction level, every configuration pooled (a \
         scenario counts in each of its categories; the per-configuration rows are in \
         the toolsandbox_categories table): means over the episodes without an infrastructure \
         failure.",
        &[
            ("Category", Align::Left),
            ("Distraction tools", Align::Right),
            ("Episodes", Align::Right),
            ("Base scenarios", Align::Right),
            ("Infra failures", Align::Right),
            ("Similarity", Align::Right),
            ("Success", Align::Right),
            ("Prompt tokens", Align::Right),
        ],
    );
    for r in categories.iter().filter(|r| r.configuration == "all") {
        table.push(vec![
            r.category.replace('_', " "),
            r.distraction_tools.to_string(),
            format::count(u64::from(r.episodes)),
            format::count(u64::from(r.base_scenarios)),
            format::count(u64::from(r.infra_failures)),
            mean(r.mean_similarity, 3),
            format::percent(r.success_rate.unwrap_or(f64::NAN)),
            format::whole(r.mean_prompt_tokens.unwrap_or(f64::NAN)),
        ]);
    }
    table
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use tbb_analysis::toolsandbox::tests::panel;
    use tbb_analysis::toolsandbox::Toolsandbox;
    use tbb_analysis::{Context, Kind};
    use tbb_tables::{ScenarioEpisodeRow, TableRow};

    /// The report of the analysis's hand-computed panel.
    pub(crate) fn rendered() -> crate::Rendered {
        let batch = ScenarioEpisodeRow::to_batch(&panel()).unwrap_or_else(|e| panic!("{e}"));
        let input = BTreeMap::from([(ScenarioEpisodeRow::TABLE.to_string(), batch)]);
        let context = Context {
            study: "s",
            episodes: &[],
            requests: &tbb_analysis::NO_REQUESTS,
            tables: &input,
            skipped: &[],
        };
        let params =
            serde_json::from_str(r#"{"draws": 1000, "seed": 1}"#).unwrap_or_else(|e| panic!("{e}"));
        let produced = Toolsandbox
            .run(&params, &context)
            .unwrap_or_else(|e| panic!("{e}"));
        let tables: BTreeMap<String, _> = produced
            .tables
            .into_iter()
            .map(|o| (o.table.to_string(), o.batch))
            .collect();
        crate::render("s", &tables, &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_toolsandbox_section() {
        let r = rendered();
        let shown = super::super::testing::section(&r, "## ToolSandbox");
        let quote = super::q::MENU_COSTS_TOKENS_MORE_THAN_SUCCESS;
        assert_eq!(shown.matches(&quote.text()).count(), 1, "{shown}");
        assert!(shown.contains(quote.cite), "{shown}");
        // The panel's pooled 10 − 0: tokens +100 [60, 120], success 0 over three pairs.
        assert!(
            shown.contains("| 10 − 0 | prompt tokens per episode | 3 | 2 |"),
            "{shown}"
        );
        assert!(shown.contains("+100 [60, 120]"), "{shown}");
        assert!(
            shown.contains("so the panel agrees with the paper's statement"),
            "{shown}"
        );
        assert!(
            shown.contains("leaves 91 offline base scenarios"),
            "{shown}"
        );
        insta::assert_snapshot!(shown);
    }

    #[test]
    fn the_agreement_line_reads_the_intervals() {
        use tbb_tables::analyses::toolsandbox::ToolsandboxContrastsRow;
        let row = |measure: &str, low: f64, high: f64| ToolsandboxContrastsRow {
            subset: "sufficient".into(),
            configuration: "all".into(),
            organization: None,
            distraction_tools: 10,
            measure: measure.into(),
            n_pairs: 4,
            n_scenarios: 2,
            excluded_infra: 0,
            unpaired: 0,
            mean_at_zero: Some(1.0),
            mean_at_level: Some(1.0),
            estimate: Some((low + high) / 2.0),
            ci_low: Some(low),
            ci_high: Some(high),
            p_value: Some(0.5),
            p_floor: 0.001,
            draws: 1000,
            seed: 1,
            draw_seed: 2,
        };
        let agrees =
            super::agreement(&[row("prompt_tokens", 10.0, 30.0), row("success", -5.0, 1.0)]);
        assert!(agrees.contains("agrees"), "{agrees}");
        // Success falls clearly too: not the paper's pattern.
        let both =
            super::agreement(&[row("prompt_tokens", 10.0, 30.0), row("success", -9.0, -1.0)]);
        assert!(both.contains("does not show"), "{both}");
        // Tokens do not rise clearly.
        let flat = super::agreement(&[row("prompt_tokens", -1.0, 30.0), row("success", -5.0, 1.0)]);
        assert!(flat.contains("does not show"), "{flat}");
        // No pairs: no reading.
        let mut empty = row("prompt_tokens", 0.0, 0.0);
        (empty.ci_low, empty.ci_high) = (None, None);
        let none = super::agreement(&[empty, row("success", -5.0, 1.0)]);
        assert!(none.contains("cannot be read"), "{none}");
        assert!(super::agreement(&[]).contains("cannot be read"));
    }
}
