//! That every quote is rendered where it belongs, labelled as the paper's, and that no
//! paper number lives outside the quotes module.
//!
//! Each section is rendered from hand-built tables (or the analysis's own fixtures,
//! as its snapshot test does) and every quote of its group must appear in it as a
//! whole value in a labelled place: a table cell under a heading that says "Paper",
//! a row whose first cell says "paper", or a sentence that says "paper". A value of
//! this study that happens to equal a quote does not count, since it sits in none of
//! those places.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use tbb_tables::analyses::cap_crossover::{CapCrossoverRow, Reading};
use tbb_tables::analyses::cap_strata::{CapStrataRow, CrossoverStratum};
use tbb_tables::analyses::cap_strata::{CrossoverStrataRow, SweepStrataRow};
use tbb_tables::analyses::cap_sweep::{CapSweepRow, Margin};
use tbb_tables::analyses::contrasts::{ClusterUnit, ContrastsRow, Weighting};
use tbb_tables::analyses::discovery::DiscoveryRow;
use tbb_tables::analyses::pilot::PilotRow;
use tbb_tables::analyses::switches::SwitchSummaryRow;
use tbb_tables::analyses::truncation_strata::TruncationStratum;
use tbb_tables::analyses::two_caps::{CapEstimate, CapRole, CapStatistic};
use tbb_tables::TableRow;

use super::super::figures::tests::{paper_points, strokes};
use super::super::figures::PAPER_COLOUR;
use super::{Quote, Value};

/// The markdown of the section titled `title`, up to the next section.
pub(crate) fn only<'r>(markdown: &'r str, title: &str) -> &'r str {
    let heading = format!("## {title}\n");
    let Some(from) = markdown.find(&heading) else {
        panic!("no section {title}:\n{markdown}")
    };
    let rest = &markdown[from + heading.len()..];
    let to = rest
        .find("\n## ")
        .or_else(|| rest.rfind("<!--"))
        .unwrap_or(rest.len());
    &markdown[from..from + heading.len() + to]
}

/// Whether `line` holds `text` as a whole value, not inside a longer number.
fn holds(line: &str, text: &str) -> bool {
    line.match_indices(text).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let mut after = line[i + text.len()..].chars();
        let (next, then) = (after.next(), after.next());
        let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
        // A sign or a decimal point before, or a decimal or thousands separator
        // followed by a digit after, makes the match part of another number.
        let joins = matches!(before, Some('.' | ',' | '-' | '+'))
            || matches!(next, Some('.' | ',')) && digit(then);
        !digit(before) && !digit(next) && !joins
    })
}

/// The cells of a Markdown table row (an escaped `\|` stays inside its cell).
fn cells(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut escaped = false;
    for c in line.trim().chars() {
        if c == '|' && !escaped {
            out.push(String::new());
        } else if let Some(cell) = out.last_mut() {
            cell.push(c);
        }
        escaped = c == '\\' && !escaped;
    }
    // The row's leading and trailing pipes leave an empty cell at each end.
    out.into_iter()
        .skip(1)
        .map(|c| c.trim().to_string())
        .collect::<Vec<_>>()
        .split_last()
        .map(|(_, rest)| rest.to_vec())
        .unwrap_or_default()
}

/// Whether `text` sits somewhere in `markdown` labelled as the paper's.
fn labelled(markdown: &str, text: &str) -> bool {
    let lines: Vec<&str> = markdown.lines().collect();
    lines.iter().enumerate().any(|(i, line)| {
        if !holds(line, text) {
            return false;
        }
        if !line.starts_with('|') {
            return line.to_lowercase().contains("paper");
        }
        let row = cells(line);
        if row
            .first()
            .is_some_and(|c| c.to_lowercase().starts_with("paper"))
        {
            return true;
        }
        let first = (0..=i)
            .rev()
            .take_while(|&k| lines[k].starts_with('|'))
            .last()
            .unwrap_or(i);
        let header = cells(lines[first]);
        row.iter().enumerate().any(|(k, cell)| {
            holds(cell, text)
                && header
                    .get(k)
                    .is_some_and(|h| h.to_lowercase().contains("paper"))
        })
    })
}

/// Asserts that each of `quotes` is rendered in `markdown`, labelled as the paper's.
pub(crate) fn assert_quoted(markdown: &str, quotes: &[Quote]) {
    let missing: Vec<String> = quotes
        .iter()
        .filter(|q| !labelled(markdown, &q.text()))
        .map(|q| format!("{} = {} ({})", q.name, q.text(), q.cite))
        .collect();
    assert!(
        missing.is_empty(),
        "not shown as the paper's: {missing:#?}\n---\n{markdown}"
    );
}

#[test]
fn the_label_check_reads_tables_and_sentences() {
    let md = "Ours: -12.3.\n\nThe paper's: -1.5 pp.\n\n| Contrast | Ours | Paper |\n| :--- | ---: | ---: |\n| V | -12.3 | -14.6 |\n| paper | 3,024 | — |\n";
    assert!(labelled(md, "-1.5"));
    assert!(labelled(md, "-14.6"));
    assert!(labelled(md, "3,024"));
    // Ours, in a column that is not the paper's and a sentence that does not say so.
    assert!(!labelled(md, "-12.3"));
    // Not inside a longer number.
    assert!(!labelled(md, "1.5") && !labelled(md, "024") && !labelled(md, "4.6"));
}

fn row<R: TableRow>(rows: &[R]) -> RecordBatch {
    R::to_batch(rows).unwrap_or_else(|e| panic!("{e}"))
}

/// `contrasts` with every stratum, weighting and cluster unit the paper prints a value
/// for: the routed and fixed lanes at the frozen cap, unit and organization-equal
/// weights, families, intents and configurations. Our values are made up and never
/// the paper's.
fn contrasts() -> RecordBatch {
    let names = [
        "v",
        "w",
        "d_linked",
        "v_x_w",
        "v_x_d",
        "w_x_d",
        "d_compact",
        "d_typed",
    ];
    let mut rows = Vec::new();
    for lane in ["routed", "fixed"] {
        for weighting in [Weighting::Unit, Weighting::OrganizationEqual] {
            for (unit, n) in [
                (ClusterUnit::Family, 36),
                (ClusterUnit::Intent, 12),
                (ClusterUnit::Configuration, 21),
            ] {
                for (i, name) in names.iter().enumerate() {
                    let estimate = 0.25 + i as f64;
                    rows.push(ContrastsRow {
                        analysis: "capacity".into(),
                        lane: lane.into(),
                        completion_cap: 1024,
                        weighting,
                        contrast: (*name).into(),
                        label: (*name).into(),
                        cluster_unit: unit,
                        n_clusters: n,
                        n_units: 756,
                        estimate_pp: estimate,
                        ci_low_pp: estimate - 0.5,
                        ci_high_pp: estimate + 0.5,
                        p_value: 0.5,
                        p_floor: 1e-4,
                        p_holm: 0.5,
                        draws: 10_000,
                        seed: 1,
                        draw_seed: i as u64,
                    });
                }
            }
        }
    }
    row(&rows)
}

/// A cap study's estimate.
fn estimate(stratum: &str, arm_role: CapRole, statistic: CapStatistic) -> CapEstimate {
    CapEstimate {
        stratum: stratum.into(),
        arm: "arm".into(),
        arm_role,
        completion_cap: (arm_role != CapRole::Change).then_some(1024),
        statistic,
        n_configurations: 1,
        n_units: None,
        units_incomplete: None,
        n_clusters: None,
        n_events: None,
        n_total: None,
        estimate_pp: Some(0.25),
        ci_low_pp: Some(0.0),
        ci_high_pp: Some(0.5),
        p_value: None,
        excluded_provider_failure: 0,
        excluded_missing_usage: 0,
        bound_low_pp: None,
        bound_high_pp: None,
        draws: None,
        seed: 0,
        draw_seed: None,
    }
}

/// Every contrast estimate of `strata` at both caps and their change.
fn cap_estimates(strata: &[&str]) -> Vec<CapEstimate> {
    strata
        .iter()
        .flat_map(|s| {
            [CapRole::Low, CapRole::High, CapRole::Change]
                .map(|role| estimate(s, role, CapStatistic::VContrast))
        })
        .collect()
}

fn strata_row<S>(stratum: S) -> CapStrataRow<S> {
    CapStrataRow {
        configuration: "sim-a".into(),
        upstream_episodes: 144,
        upstream_truncated: 7,
        truncated_share: Some(7.0 / 144.0),
        v_effect_pp: Some(0.25),
        stratum: Some(stratum),
        candidate_rank: Some(1),
        selected: true,
        in_study: true,
    }
}

fn pilot() -> RecordBatch {
    let actions = [
        "probe",
        "retry",
        "cap4096",
        "router",
        "controller",
        "canonical",
        "combined",
        "switch",
        "trace_selector",
    ];
    let rows: Vec<PilotRow> = actions
        .iter()
        .map(|a| PilotRow {
            action: (*a).into(),
            n_blocks: 4,
            n_failed_probe: 2,
            success: 0.25,
            success_after_failed_probe: Some(0.5),
            policy_success: 0.75,
            cost_per_1000_usd: 0.25,
            action_cost_per_1000_usd: 0.125,
            policy_cost_per_1000_usd: 0.2,
            vs_switch_pp: (*a == "trace_selector").then_some(0.25),
            vs_switch_ci_low_pp: (*a == "trace_selector").then_some(0.0),
            vs_switch_ci_high_pp: (*a == "trace_selector").then_some(0.5),
            draws: 10,
            seed: 1,
        })
        .collect();
    row(&rows)
}

fn switch_summary() -> RecordBatch {
    let rows: Vec<SwitchSummaryRow> = [
        "menu=router",
        "menu=routed",
        "prompt=workflow_prompt",
        "prompt=interface_guide",
        "actor=controller",
    ]
    .iter()
    .map(|c| SwitchSummaryRow {
        repair: "r".into(),
        baseline: "b".into(),
        component: (*c).into(),
        n_incumbents: 3,
        success_superior: 2,
        pareto_nondominated: 2,
        cost_superior: 2,
    })
    .collect();
    row(&rows)
}

/// The tables of the sections quoted from hand-built rows: the capacity sections (the
/// report tests' study, with the contrasts above), the cap studies, discovery, the
/// switches and the pilot.
fn hand_built() -> BTreeMap<String, RecordBatch> {
    let mut tables = crate::tests::full_study();
    tables.insert("contrasts".into(), contrasts());
    let sweep: Vec<CapSweepRow> = cap_estimates(&["B", "M", "N"])
        .into_iter()
        .map(|estimate| CapSweepRow {
            estimate,
            margin: Margin {
                margin_pp: None,
                clears_margin: None,
                within_margin: None,
            },
        })
        .collect();
    let crossover: Vec<CapCrossoverRow> = cap_estimates(&["B", "S", "N"])
        .into_iter()
        .map(|estimate| CapCrossoverRow {
            estimate,
            reading: Reading {
                truncation_persists: None,
                reading: None,
            },
        })
        .collect();
    let no_discovery: [DiscoveryRow; 0] = [];
    for (name, batch) in [
        (CapSweepRow::TABLE, row(&sweep)),
        (CapCrossoverRow::TABLE, row(&crossover)),
        (
            SweepStrataRow::TABLE,
            row(&[strata_row(TruncationStratum::B)]),
        ),
        (
            CrossoverStrataRow::TABLE,
            row(&[strata_row(CrossoverStratum::S)]),
        ),
        (DiscoveryRow::TABLE, row(&no_discovery)),
        (SwitchSummaryRow::TABLE, switch_summary()),
        (PilotRow::TABLE, pilot()),
    ] {
        tables.insert(name.to_string(), batch);
    }
    tables
}

/// Each quote group is rendered, labelled, in its own section.
#[test]
fn every_quote_is_rendered_where_it_belongs() {
    let r = crate::render("quotes", &hand_built(), &[]).unwrap_or_else(|e| panic!("{e}"));
    let md = &r.markdown;
    let groups: [(&str, &[Quote]); 12] = [
        ("Contrasts", super::harness::ALL),
        ("Contrasts", super::contrasts::ALL),
        ("Truncation", super::truncation::ALL),
        ("Strata and bounds", super::strata::ALL),
        ("Lanes", super::lanes::ALL),
        ("Costs", super::costs::ALL),
        (
            "Reasoning-only first responses",
            super::first_responses::ALL,
        ),
        ("Configurations of the cap study", super::cap_strata::ALL),
        ("The cap study's menu contrast", super::cap_studies::ALL),
        (
            "Discovery: availability and the R contrast",
            super::discovery::ALL,
        ),
        (
            "Repair versus switching the configuration",
            super::switches::ALL,
        ),
        ("The policy pilot", super::pilot::ALL),
    ];
    for (title, quotes) in groups {
        assert_quoted(only(md, title), quotes);
    }
    // The sections drawn from the analyses' own fixtures.
    let decoders = super::super::sections::decoders::tests::rendered();
    assert_quoted(
        only(&decoders.markdown, "Decoders: what a failure record says"),
        super::decoders::ALL,
    );
    let repairs = super::super::sections::repairs::tests::rendered();
    assert_quoted(
        only(&repairs.markdown, "Repairs against their own layer"),
        super::repairs::ALL,
    );
    assert_quoted(
        only(&repairs.markdown, "Sentinel repeats"),
        super::sentinel::ALL,
    );
    let frontier = super::super::sections::frontier::tests::rendered();
    assert_quoted(
        only(&frontier.markdown, "The depth frontier"),
        super::frontier::ALL,
    );
    let anatomy = super::super::sections::interaction_anatomy::tests::rendered();
    assert_quoted(
        only(&anatomy.markdown, "The V × W anatomy"),
        super::interaction_anatomy::ALL,
    );
    let holdout = super::super::sections::holdout::tests::rendered();
    assert_quoted(
        only(&holdout.markdown, "Structural holdout"),
        super::holdout::ALL,
    );
    let toolsandbox = super::super::sections::toolsandbox::tests::rendered();
    assert_quoted(
        only(&toolsandbox.markdown, "ToolSandbox: distraction tools"),
        super::toolsandbox::ALL,
    );
}

/// The figures with a matching quantity mark the paper's points, one diamond each.
#[test]
fn the_figures_mark_the_papers_points() {
    let r = crate::render("quotes", &hand_built(), &[]).unwrap_or_else(|e| panic!("{e}"));
    let svg = |name: &str| {
        r.figures
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, svg)| svg.as_str())
            .unwrap_or_else(|| panic!("no figure {name}"))
    };
    let marks = [
        // V, W, compact and V × W (Figure 2a); the fixed lane's V.
        ("report-contrasts-routed-1024.svg", 4),
        ("report-contrasts-fixed-1024.svg", 1),
        // The shares at V = 8 and V = 128.
        ("report-truncation-by-menu-routed-1024.svg", 2),
        // One configuration's point of Figure 6 (and a range, a line).
        ("report-v-effect-truncation-routed-1024.svg", 1),
        // Stratum B at both caps.
        ("report-cap-sweep.svg", 2),
        ("report-cap-crossover.svg", 2),
    ];
    for (name, n) in marks {
        assert_eq!(paper_points(svg(name)), n, "{name}");
        assert!(svg(name).contains(">\npaper"), "{name}: no legend entry");
    }
    assert_eq!(
        strokes(
            svg("report-v-effect-truncation-routed-1024.svg"),
            PAPER_COLOUR
        ),
        1
    );
    // A stratum the paper has no value for is drawn without a mark.
    assert_eq!(
        paper_points(crate::tests::figure(
            &crate::render("s", &crate::tests::full_study(), &[]).unwrap_or_else(|e| panic!("{e}")),
            "report-w-effect",
        )),
        0
    );
    let decoders = super::super::sections::decoders::tests::rendered();
    assert_eq!(paper_points(&decoders.figures[0].1), 9);
}

/// Every source file of the crate but this module and the crate's tests, by path
/// (read from disk, so a section file added later is read too).
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if name != "paper" && name != "snapshots" {
                    walk(&path, out);
                }
            } else if name.ends_with(".rs") && name != "paper.rs" && name != "tests.rs" {
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                out.push((path.display().to_string(), text));
            }
        }
    }
    let mut out = Vec::new();
    walk(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut out,
    );
    out
}

/// A source file without its test module (which starts at the first `mod tests` or
/// `mod testing` at the file's top level).
fn without_tests(source: &str) -> &str {
    [
        "\nmod tests",
        "\npub(crate) mod tests",
        "\npub(crate) mod testing",
    ]
    .iter()
    .filter_map(|m| source.find(m))
    .min()
    .map_or(source, |end| &source[..end])
}

/// The numbers written in `line`, separators (`,` `_`) dropped: `1,024` and `1_024`
/// are both `1024`. Digits inside a name (`cap4096`, `CALLS_Q1_30`) are no number.
fn numbers(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let mut previous = ' ';
    for c in line.chars() {
        match current.as_mut() {
            Some(n) if c.is_ascii_digit() || matches!(c, '.' | ',' | '_') => n.push(c),
            Some(_) => {
                out.extend(current.take());
            }
            None if c.is_ascii_digit() && !(previous.is_alphanumeric() || previous == '_') => {
                current = Some(c.to_string());
            }
            None => {}
        }
        previous = c;
    }
    out.extend(current);
    out.into_iter()
        .map(|t| t.trim_end_matches(['.', ',', '_']).replace([',', '_'], ""))
        .collect()
}

/// A quote's numbers that would give it away in another file: those of three
/// significant digits or more (an integer's trailing zeros not counted) (one or two, like `0.5` or `12`, are any index, bound or
/// small count), but the report's own scale factors (`100.0`, per `1,000`).
fn telltales(q: &Quote) -> Vec<String> {
    let text = match q.value {
        // A count is written in code without its separators, and a share also as
        // the percentage the paper prints.
        Value::Count(n) => n.to_string(),
        _ => q.text(),
    };
    numbers(&text)
        .into_iter()
        .filter(|t| {
            // An integer's trailing zeros are not significant: 200 is as common a
            // bound as it is a count.
            let digits = if t.contains('.') {
                t.as_str()
            } else {
                t.trim_end_matches('0')
            };
            let significant = digits.trim_start_matches(['0', '.']).replace('.', "");
            significant.len() >= 3 && !matches!(t.as_str(), "100.0" | "1000" | "1000.0")
        })
        .collect()
}

/// Every quote of every group.
fn every_quote() -> Vec<Quote> {
    [
        super::harness::ALL,
        super::contrasts::ALL,
        super::interaction_anatomy::ALL,
        super::truncation::ALL,
        super::strata::ALL,
        super::lanes::ALL,
        super::costs::ALL,
        super::first_responses::ALL,
        super::decoders::ALL,
        super::cap_strata::ALL,
        super::cap_studies::ALL,
        super::discovery::ALL,
        super::repairs::ALL,
        super::sentinel::ALL,
        super::switches::ALL,
        super::frontier::ALL,
        super::holdout::ALL,
        super::pilot::ALL,
        super::toolsandbox::ALL,
    ]
    .concat()
}

/// No file but this module holds a `PAPER…` constant or one of the paper's numbers
/// (comments and tests aside: a test may build a table that matches the paper's).
#[test]
fn no_paper_number_lives_outside_this_module() {
    let quotes = every_quote();
    let mut found = Vec::new();
    let sources = sources();
    assert!(sources.len() > 20, "{}", sources.len());
    for (file, source) in &sources {
        let code = without_tests(source);
        for (i, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            if line
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|word| {
                    word.starts_with("PAPER") && word != "PAPER_COLOUR" && word != "PAPER_LEGEND"
                })
            {
                found.push(format!("{file}:{}: a PAPER constant: {line}", i + 1));
            }
            let written = numbers(line);
            for q in &quotes {
                if let Some(t) = telltales(q).into_iter().find(|t| written.contains(t)) {
                    found.push(format!("{file}:{}: {t} of {}: {line}", i + 1, q.name));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// Every group's quotes are distinct constants with a citation.
#[test]
fn every_quote_has_a_citation() {
    let quotes = every_quote();
    for q in &quotes {
        assert!(!q.cite.trim().is_empty(), "{}", q.name);
        assert_ne!(q.text(), "—", "{} prints as missing", q.name);
    }
    assert!(quotes.len() > 150, "{}", quotes.len());
}
