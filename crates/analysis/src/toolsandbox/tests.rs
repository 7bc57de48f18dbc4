//! Tests of the `toolsandbox` kind, and the small panel of rows the report crate's tests
//! render its section from (feature `fixtures`).
#![cfg_attr(not(test), allow(dead_code, unused_imports))]
use super::*;
use crate::common::stats::IndexStream;
use crate::Kind;
use tbb_tables::Name;

/// A scored row of `configuration` (organization `O`) playing `base` with `tools`
/// distraction tools at cap 1024, repeat 0.
pub fn row(
    configuration: &str,
    base: &str,
    tools: u32,
    similarity: f64,
    prompt: u64,
) -> ScenarioEpisodeRow {
    let scenario = if tools == 0 {
        base.to_string()
    } else {
        format!("{base}_{tools}_distraction_tools")
    };
    ScenarioEpisodeRow {
        study: "s".into(),
        configuration: Name::new(configuration),
        organization: Name::new("O"),
        model: Name::new("m"),
        route: "r".into(),
        scenario: Name::new(&scenario),
        base_scenario: Name::new(base),
        distraction_tools: tools,
        menu_size: 4 + tools,
        categories: "multiple_tool_call,canonicalization".into(),
        insufficient_information: false,
        multiple_user_turn: false,
        completion_cap: 1024,
        repeat: 0,
        similarity,
        success: similarity == 1.0,
        milestone_similarity: similarity,
        minefield_hit: false,
        milestones: 2,
        milestones_matched: 2,
        milestone_mapping_json: "[]".into(),
        turns: 3,
        calls: 1,
        requests: 2,
        user_turns: 0,
        prompt_tokens: prompt,
        completion_tokens: 10,
        total_tokens: prompt + 10,
        cost_usd: 0.001,
        user_configuration: None,
        user_requests: 0,
        user_prompt_tokens: 0,
        user_completion_tokens: 0,
        user_cost_usd: 0.0,
        stop_reason: StopReason::Answer,
        infra_failure: false,
        infra_error: None,
        episode_key: format!("{configuration}/{scenario}"),
        transcript_ref: "t".into(),
        node_key: "n".into(),
    }
}

pub fn insufficient(mut r: ScenarioEpisodeRow) -> ScenarioEpisodeRow {
    r.insufficient_information = true;
    r.categories = "insufficient_information,single_user_turn".into();
    r
}

pub fn failed(mut r: ScenarioEpisodeRow) -> ScenarioEpisodeRow {
    r.infra_failure = true;
    r.stop_reason = StopReason::InfraFailure;
    r.similarity = 0.0;
    r.success = false;
    r
}

/// The hand-computed panel (prompt tokens in brackets):
///
/// * a, s1: 0 → 1.0 [100], 3 → 0.5 [150], 10 → 0.25 [300];
/// * a, s2: 0 → 0.5 [200], 3 → 0.5 [200], 10 → 1.0 [260];
/// * b, s1: 0 → 0.0 [50], 3 → an infrastructure failure, 10 → 0.0 [90];
/// * b, s2: 0 → 0.0 [80] only;
/// * a, s3 and s4 (insufficient information): 1.0 at every level, prompt 10 at 0
///   and 30 at 10 (and 20 at 3) for both.
pub fn panel() -> Vec<ScenarioEpisodeRow> {
    vec![
        row("a", "s1", 0, 1.0, 100),
        row("a", "s1", 3, 0.5, 150),
        row("a", "s1", 10, 0.25, 300),
        row("a", "s2", 0, 0.5, 200),
        row("a", "s2", 3, 0.5, 200),
        row("a", "s2", 10, 1.0, 260),
        row("b", "s1", 0, 0.0, 50),
        failed(row("b", "s1", 3, 0.0, 70)),
        row("b", "s1", 10, 0.0, 90),
        row("b", "s2", 0, 0.0, 80),
        insufficient(row("a", "s3", 0, 1.0, 10)),
        insufficient(row("a", "s3", 3, 1.0, 20)),
        insufficient(row("a", "s3", 10, 1.0, 30)),
        insufficient(row("a", "s4", 0, 1.0, 10)),
        insufficient(row("a", "s4", 3, 1.0, 20)),
        insufficient(row("a", "s4", 10, 1.0, 30)),
    ]
}

fn find<'r>(
    rows: &'r [ToolsandboxContrastsRow],
    subset: &str,
    configuration: &str,
    level: u32,
    measure: &str,
) -> &'r ToolsandboxContrastsRow {
    rows.iter()
        .find(|r| {
            r.subset == subset
                && r.configuration == configuration
                && r.distraction_tools == level
                && r.measure == measure
        })
        .unwrap_or_else(|| panic!("no row {subset} {configuration} {level} {measure}"))
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-12)
}

fn computed() -> Tables {
    tables(&panel(), 10_000, 7).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn paired_differences_and_level_means_by_hand() {
    let t = computed();
    let c = &t.contrasts;
    // a, 10 − 0: s1 −0.75, −100 pp, +200; s2 +0.5, +100 pp, +60.
    let sim = find(c, "sufficient", "a", 10, "similarity");
    assert_eq!((sim.n_pairs, sim.n_scenarios), (2, 2));
    assert!(close(sim.estimate, -0.125), "{sim:?}");
    assert!(close(sim.mean_at_zero, 0.75) && close(sim.mean_at_level, 0.625));
    let success = find(c, "sufficient", "a", 10, "success");
    assert!(close(success.estimate, 0.0));
    assert!(close(success.mean_at_zero, 50.0) && close(success.mean_at_level, 50.0));
    let tokens = find(c, "sufficient", "a", 10, "prompt_tokens");
    assert!(close(tokens.estimate, 130.0));
    assert!(close(tokens.mean_at_zero, 150.0) && close(tokens.mean_at_level, 280.0));
    assert_eq!(tokens.organization.as_deref(), Some("O"));
    // a, 3 − 0: s1 −0.5, −100 pp, +50; s2 0, 0, 0.
    assert!(close(
        find(c, "sufficient", "a", 3, "similarity").estimate,
        -0.25
    ));
    assert!(close(
        find(c, "sufficient", "a", 3, "success").estimate,
        -50.0
    ));
    assert!(close(
        find(c, "sufficient", "a", 3, "prompt_tokens").estimate,
        25.0
    ));
    // The three measures of a row share their draws.
    assert_eq!(sim.draw_seed, tokens.draw_seed);
    assert_ne!(
        sim.draw_seed,
        find(c, "sufficient", "a", 3, "similarity").draw_seed
    );
}

#[test]
fn missing_partners_and_infrastructure_failures_are_counted_not_paired() {
    let c = computed().contrasts;
    // b, 10 − 0: s1 pairs (0, +40); s2 has no row at 10.
    let b10 = find(&c, "sufficient", "b", 10, "prompt_tokens");
    assert_eq!((b10.n_pairs, b10.excluded_infra, b10.unpaired), (1, 0, 1));
    assert!(close(b10.estimate, 40.0));
    // b, 3 − 0: s1's 3 failed, s2 has no 3: no pair, a row with null estimates.
    let b3 = find(&c, "sufficient", "b", 3, "prompt_tokens");
    assert_eq!((b3.n_pairs, b3.excluded_infra, b3.unpaired), (0, 1, 1));
    assert_eq!(
        (b3.estimate, b3.ci_low, b3.mean_at_zero, b3.n_scenarios),
        (None, None, None, 0)
    );
    // Pooled: a's and b's pairs and losses.
    let all3 = find(&c, "sufficient", "all", 3, "prompt_tokens");
    assert_eq!(
        (all3.n_pairs, all3.excluded_infra, all3.unpaired),
        (2, 1, 1)
    );
    assert!(close(all3.estimate, 25.0));
    assert_eq!(all3.organization, None);
}

#[test]
fn the_pooled_bootstrap_resamples_base_scenarios_with_all_their_pairs() {
    let c = computed().contrasts;
    // all, 10 − 0: s1 holds a's +200 and b's +40, s2 a's +60; mean 100. A draw is
    // s1 s1 (120), s1 s2 (100) or s2 s2 (60), with chances 1/4, 1/2, 1/4: the
    // 2.5 % and 97.5 % quantiles of 10,000 draws are 60 and 120.
    let tokens = find(&c, "sufficient", "all", 10, "prompt_tokens");
    assert_eq!((tokens.n_pairs, tokens.n_scenarios), (3, 2));
    assert!(close(tokens.estimate, 100.0));
    assert_eq!((tokens.ci_low, tokens.ci_high), (Some(60.0), Some(120.0)));
    // Similarity: s1 (−0.75 + 0) / 2 per pair, s2 +0.5: draws −0.375, −0.25/3, 0.5.
    let sim = find(&c, "sufficient", "all", 10, "similarity");
    assert!(close(sim.estimate, -0.25 / 3.0));
    assert!(
        close(sim.ci_low, -0.375) && close(sim.ci_high, 0.5),
        "{sim:?}"
    );
    // Every interval holds its estimate.
    for r in &c {
        if let (Some(e), Some(l), Some(h)) = (r.estimate, r.ci_low, r.ci_high) {
            assert!(l <= e + 1e-12 && e <= h + 1e-12, "{r:?}");
        }
    }
}

/// The bootstrap written out directly: each draw picks scenarios from the row's
/// stream and averages every pair of every picked scenario.
#[test]
fn the_interval_equals_a_direct_bootstrap() {
    let mut rows = panel();
    // More scenarios, uneven pair counts, for a less trivial draw.
    for (i, (d0, d10)) in [(10, 90), (40, 40), (0, 300), (70, 20)].iter().enumerate() {
        let base = format!("t{i}");
        rows.push(row("a", &base, 0, 0.0, *d0));
        rows.push(row("a", &base, 10, 0.0, *d10));
        if i % 2 == 0 {
            rows.push(row("b", &base, 0, 0.0, d0 + 5));
            rows.push(row("b", &base, 10, 0.0, d10 + 1));
        }
    }
    let draws = 2_000;
    let t = tables(&rows, draws, 11).unwrap_or_else(|e| panic!("{e}"));
    let got = find(&t.contrasts, "sufficient", "all", 10, "prompt_tokens");
    // Pairs by scenario, scenarios in name order (the cluster ids' order).
    let mut by_scenario: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for z in rows.iter().filter(|r| r.distraction_tools == 0) {
        let partner = rows.iter().find(|r| {
            r.distraction_tools == 10
                && r.configuration == z.configuration
                && r.base_scenario == z.base_scenario
        });
        if let Some(l) = partner.filter(|l| !l.infra_failure && !z.infra_failure) {
            if !z.insufficient_information {
                by_scenario
                    .entry(z.base_scenario.to_string())
                    .or_default()
                    .push(l.prompt_tokens as f64 - z.prompt_tokens as f64);
            }
        }
    }
    let scenarios: Vec<&Vec<f64>> = by_scenario.values().collect();
    let n = scenarios.len();
    let mut stream = IndexStream::new(got.draw_seed);
    let mut sample: Vec<f64> = (0..draws)
        .map(|_| {
            let picked: Vec<f64> = (0..n)
                .flat_map(|_| scenarios[stream.index(n as u32)].iter().copied())
                .collect();
            picked.iter().sum::<f64>() / picked.len() as f64
        })
        .collect();
    let all: Vec<f64> = scenarios.iter().flat_map(|v| v.iter().copied()).collect();
    let estimate = all.iter().sum::<f64>() / all.len() as f64;
    let want = stats::summarize(estimate, &mut sample);
    assert_eq!(got.n_scenarios as usize, n);
    assert_eq!(got.estimate, Some(want.estimate));
    // Integer differences: every order of summation is exact.
    assert_eq!((got.ci_low, got.ci_high), (Some(want.low), Some(want.high)));
    assert_eq!(got.p_value, Some(want.p_value));
}

#[test]
fn the_insufficient_information_subset_is_apart_and_equal_pairs_have_no_width() {
    let c = computed().contrasts;
    // Only a played s3 and s4: no row of b in that subset.
    assert!(!c
        .iter()
        .any(|r| r.subset == "insufficient_information" && r.configuration == "b"));
    // Its pairs are not among the sufficient ones.
    assert_eq!(find(&c, "sufficient", "a", 10, "similarity").n_pairs, 2);
    let tokens = find(&c, "insufficient_information", "a", 10, "prompt_tokens");
    assert_eq!((tokens.n_pairs, tokens.n_scenarios), (2, 2));
    // Every pair +20: every draw is 20.
    assert_eq!(
        (tokens.estimate, tokens.ci_low, tokens.ci_high),
        (Some(20.0), Some(20.0), Some(20.0))
    );
    let sim = find(&c, "insufficient_information", "all", 3, "similarity");
    assert_eq!(
        (sim.estimate, sim.ci_low, sim.ci_high),
        (Some(0.0), Some(0.0), Some(0.0))
    );
    // Row order: subset (headline first), configurations then all, level, measure.
    let order: Vec<(&str, &str, u32, &str)> = c
        .iter()
        .map(|r| {
            (
                r.subset.as_str(),
                r.configuration.as_str(),
                r.distraction_tools,
                r.measure.as_str(),
            )
        })
        .collect();
    assert_eq!(order.len(), (3 * 2 + 2 * 2) * 3);
    assert_eq!(order[0], ("sufficient", "a", 3, "similarity"));
    assert_eq!(order[5], ("sufficient", "a", 10, "prompt_tokens"));
    assert_eq!(order[12], ("sufficient", "all", 3, "similarity"));
    assert_eq!(
        order[18],
        ("insufficient_information", "a", 3, "similarity")
    );
    // An empty subset gives no row at all.
    let sufficient_only: Vec<ScenarioEpisodeRow> = panel()
        .into_iter()
        .filter(|r| !r.insufficient_information)
        .collect();
    let t = tables(&sufficient_only, 100, 1).unwrap_or_else(|e| panic!("{e}"));
    assert!(t.contrasts.iter().all(|r| r.subset == "sufficient"));
}

#[test]
fn categories_split_the_column_and_leave_failures_out_of_the_means() {
    let t = computed();
    let cat = |category: &str, configuration: &str, level: u32| {
        t.categories
            .iter()
            .find(|r| {
                r.category == category
                    && r.configuration == configuration
                    && r.distraction_tools == level
            })
            .unwrap_or_else(|| panic!("no {category} {configuration} {level}"))
    };
    let names: BTreeSet<&str> = t.categories.iter().map(|r| r.category.as_str()).collect();
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        [
            "canonicalization",
            "insufficient_information",
            "multiple_tool_call",
            "single_user_turn"
        ]
    );
    // b at 3: one row, a failure: no mean.
    let b3 = cat("canonicalization", "b", 3);
    assert_eq!((b3.episodes, b3.infra_failures), (1, 1));
    assert_eq!((b3.mean_similarity, b3.success_rate), (None, None));
    // all at 0, multiple_tool_call: a s1 1.0 [100], a s2 0.5 [200], b s1 0 [50],
    // b s2 0 [80].
    let all0 = cat("multiple_tool_call", "all", 0);
    assert_eq!((all0.episodes, all0.base_scenarios), (4, 2));
    assert!(close(all0.mean_similarity, 0.375));
    assert!(close(all0.success_rate, 0.25));
    assert!(close(all0.mean_prompt_tokens, 107.5));
    let ins = cat("insufficient_information", "a", 10);
    assert_eq!((ins.episodes, ins.base_scenarios), (2, 2));
    assert!(close(ins.success_rate, 1.0));
    // Categories in name order, configurations then all.
    assert_eq!(t.categories[0].category, "canonicalization");
    assert_eq!(t.categories[0].configuration, "a");
}

#[test]
fn levels_summarise_every_configuration_and_the_pool() {
    let mut rows = panel();
    rows[2].stop_reason = StopReason::Truncated;
    rows[2].minefield_hit = true;
    let t = tables(&rows, 100, 1).unwrap_or_else(|e| panic!("{e}"));
    let shown: Vec<(&str, u32)> = t
        .levels
        .iter()
        .map(|r| (r.configuration.as_str(), r.distraction_tools))
        .collect();
    assert_eq!(
        shown,
        [
            ("a", 0),
            ("a", 3),
            ("a", 10),
            ("b", 0),
            ("b", 3),
            ("b", 10),
            ("all", 0),
            ("all", 3),
            ("all", 10)
        ]
    );
    let a10 = &t.levels[2];
    // s1 0.25 [300], s2 1.0 [260], s3 and s4 1.0 [30].
    assert_eq!((a10.episodes, a10.base_scenarios), (4, 4));
    assert_eq!(a10.insufficient_information_episodes, 2);
    assert!(close(a10.mean_similarity, 3.25 / 4.0));
    assert!(close(a10.success_rate, 0.75));
    assert!(close(a10.mean_prompt_tokens, 620.0 / 4.0));
    assert!(close(a10.mean_completion_tokens, 10.0));
    assert!(close(a10.mean_menu_size, 14.0));
    assert_eq!((a10.minefield_hits, a10.truncated), (1, 1));
    let all3 = &t.levels[7];
    // a s1 [150], a s2 [200], b s1 failed, a s3 and s4 [20].
    assert_eq!((all3.episodes, all3.infra_failures), (5, 1));
    assert!(close(
        all3.mean_prompt_tokens,
        (150.0 + 200.0 + 20.0 + 20.0) / 4.0
    ));
    assert_eq!(all3.organization, None);
}

#[test]
fn the_order_of_the_rows_does_not_matter() {
    let mut reversed = panel();
    reversed.reverse();
    assert_eq!(
        tables(&reversed, 500, 3).ok(),
        tables(&panel(), 500, 3).ok()
    );
}

#[test]
fn contradictions_are_errors() {
    let mut twice = panel();
    twice.push(row("a", "s1", 3, 0.0, 1));
    assert!(matches!(
        tables(&twice, 10, 1),
        Err(AnalysisError::Inconsistent { .. })
    ));
    let mut flagged = panel();
    flagged[1].insufficient_information = true;
    assert!(matches!(
        tables(&flagged, 10, 1),
        Err(AnalysisError::Inconsistent { .. })
    ));
    let mut organizations = panel();
    organizations[0].organization = Name::new("P");
    assert!(matches!(
        tables(&organizations, 10, 1),
        Err(AnalysisError::Inconsistent { .. })
    ));
}

#[test]
fn the_kind_reads_the_scenario_table_and_writes_three_tables() {
    let batch = ScenarioEpisodeRow::to_batch(&panel()).unwrap_or_else(|e| panic!("{e}"));
    let tables = BTreeMap::from([(ScenarioEpisodeRow::TABLE.to_string(), batch)]);
    let context = Context {
        study: "s",
        episodes: &[],
        requests: &crate::NO_REQUESTS,
        tables: &tables,
        skipped: &[],
    };
    let params = Toolsandbox
        .parse(&serde_json::from_str(r#"{"draws": 50, "seed": 3}"#).unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e:?}"));
    let produced = Toolsandbox
        .run(&params, &context)
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = produced.tables.iter().map(|o| o.table).collect();
    assert_eq!(names, Toolsandbox::OUTPUTS);
    let contrasts = ToolsandboxContrastsRow::from_batch(&produced.tables[0].batch)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(contrasts, computed_with(50, 3).contrasts);
    // Without the table: an input error naming it.
    let empty = BTreeMap::new();
    let bare = Context {
        tables: &empty,
        ..context
    };
    assert!(matches!(
        Toolsandbox.run(&params, &bare),
        Err(AnalysisError::InputTable { .. })
    ));
    // draws = 0 and unknown parameters are refused.
    let zero = serde_json::from_str(r#"{"draws": 0}"#).unwrap_or_default();
    assert!(Toolsandbox.parse(&zero).is_err());
    let unknown = serde_json::from_str(r#"{"cluster_units": ["family"]}"#).unwrap_or_default();
    assert!(Toolsandbox.parse(&unknown).is_err());
}

fn computed_with(draws: u32, seed: u64) -> Tables {
    tables(&panel(), draws, seed).unwrap_or_else(|e| panic!("{e}"))
}
