//! Tests of the whole report: determinism, the Markdown snapshot of a small study,
//! figure contents counted in the SVG, notes for absent tables, and a contract test
//! that renders the tables the analyses actually write.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;

use super::figures::tests::{dots, paper_points, strokes};
use super::figures::{PAPER_COLOUR, SERIES_COLOURS};
use super::{render, ReportError};
use tbb_tables::analyses::cap_strata::SweepStrataRow;
use tbb_tables::analyses::cap_sweep::{CapSweepRow, Margin};
use tbb_tables::analyses::contrasts::{
    ClusterUnit, ContrastsByConfigurationRow, ContrastsRow, ContrastsSignFlipRow, Weighting,
};
use tbb_tables::analyses::costs::CostsRow;
use tbb_tables::analyses::first_responses::FirstResponsesRow;
use tbb_tables::analyses::lanes::LanesRow;
use tbb_tables::analyses::strata::StrataRow;
use tbb_tables::analyses::switches::{SwitchSummaryRow, SwitchesRow};
use tbb_tables::analyses::truncation::{
    TruncationCorrelationRow, TruncationPairsRow, TruncationRow,
};
use tbb_tables::analyses::truncation_strata::TruncationStratum;
use tbb_tables::analyses::two_caps::{CapEstimate, CapRole, CapStatistic};
use tbb_tables::levels::{FinishReason, Menu, ReasoningSource, ResponseKind};
use tbb_tables::{TableBuilder, TableRow};

/// The eight contrasts as the analysis names and labels them.
const CONTRASTS: [(&str, &str); 8] = [
    ("v", "visible menu (V 128 − 8)"),
    ("w", "workflow (W high − low)"),
    ("d_linked", "linked − raw encoding"),
    ("v_x_w", "V × W"),
    ("v_x_d", "V × D"),
    ("w_x_d", "W × D"),
    ("d_compact", "compact − raw at (8, low)"),
    ("d_typed", "typed − raw at (8, low)"),
];
const ESTIMATES: [f64; 8] = [-12.3, 0.8, -1.0, 3.0, 0.5, -0.4, -3.7, -0.9];

fn build(b: TableBuilder, name: &str) -> RecordBatch {
    b.build(name).unwrap_or_else(|e| panic!("{e}"))
}

/// A `contrasts` row of the routed lane at cap 1,024, unit weights, 756 units.
fn contrast_row(contrast: usize, cluster_unit: ClusterUnit, n_clusters: u32) -> ContrastsRow {
    ContrastsRow {
        analysis: "capacity".into(),
        lane: "routed".into(),
        completion_cap: 1024,
        weighting: Weighting::Unit,
        contrast: CONTRASTS[contrast].0.into(),
        label: CONTRASTS[contrast].1.into(),
        cluster_unit,
        n_clusters,
        n_units: 756,
        estimate_pp: ESTIMATES[contrast],
        ci_low_pp: ESTIMATES[contrast] - 2.25,
        ci_high_pp: ESTIMATES[contrast] + 2.5,
        p_value: 0.0,
        p_floor: 1e-4,
        p_holm: 0.0,
        draws: 10_000,
        seed: 20_261_202,
        draw_seed: contrast as u64,
    }
}

/// `contrasts`: one stratum (routed, 1024), unit weights, families (36) and intents
/// (12); the V contrast's p sits at the 1/draws floor.
fn contrasts() -> RecordBatch {
    let units = [(ClusterUnit::Family, 36u32), (ClusterUnit::Intent, 12)];
    let p = |i: usize| if i == 0 { 1e-4 } else { 0.05 * i as f64 };
    let rows: Vec<ContrastsRow> = units
        .iter()
        .flat_map(|&(u, n)| (0..8).map(move |i| (i, u, n)))
        .map(|(i, u, n)| ContrastsRow {
            p_value: p(i),
            p_holm: (8.0 * p(i)).min(1.0),
            ..contrast_row(i, u, n)
        })
        .collect();
    ContrastsRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"))
}

/// `contrasts_sign_flip`: intents only.
fn contrasts_sign_flip() -> RecordBatch {
    let p = |i: usize| if i == 0 { 2.0 / 4096.0 } else { 0.1 * i as f64 };
    let rows: Vec<ContrastsSignFlipRow> = (0..8)
        .map(|i| ContrastsSignFlipRow {
            analysis: "capacity".into(),
            lane: "routed".into(),
            completion_cap: 1024,
            weighting: Weighting::Unit,
            contrast: CONTRASTS[i].0.into(),
            cluster_unit: ClusterUnit::Intent,
            n_clusters: 12,
            n_units: 756,
            estimate_pp: ESTIMATES[i],
            assignments: 4096,
            p_value: p(i),
            p_floor: 2.0 / 4096.0,
            p_holm: (8.0 * p(i)).min(1.0),
        })
        .collect();
    ContrastsSignFlipRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"))
}

/// The per-configuration contrasts of two configurations.
fn contrasts_by_configuration() -> RecordBatch {
    let rows: Vec<ContrastsByConfigurationRow> =
        [("sim-a", "Org A", -30.0), ("sim-b", "Org B", 0.0)]
            .iter()
            .flat_map(|&(c, o, shift)| (0..8).map(move |i| (i, c, o, shift)))
            .map(|(i, c, o, shift)| ContrastsByConfigurationRow {
                analysis: "capacity".into(),
                lane: "routed".into(),
                completion_cap: 1024,
                configuration: c.into(),
                organization: o.into(),
                contrast: CONTRASTS[i].0.into(),
                label: CONTRASTS[i].1.into(),
                cluster_unit: ClusterUnit::Family,
                n_units: 36,
                estimate_pp: ESTIMATES[i] + shift,
                ci_low_pp: ESTIMATES[i] + shift - 5.0,
                ci_high_pp: ESTIMATES[i] + shift + 5.0,
                p_value: 0.5,
                p_floor: 1e-4,
                draws: 10_000,
                seed: 20_261_202,
                draw_seed: i as u64,
            })
            .collect();
    ContrastsByConfigurationRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"))
}

/// `truncation`: pooled and two configurations at V = 8, 32, 128; `sim-b` never
/// truncates (its before-first-call share is null).
fn truncation() -> RecordBatch {
    let configs = [("all", "all"), ("sim-a", "Org A"), ("sim-b", "Org B")];
    let rows: Vec<TruncationRow> = configs
        .iter()
        .flat_map(|&(c, o)| {
            [(8u32, 7u32), (32, 1), (128, 4)]
                .into_iter()
                .map(move |(v, n_cells)| {
                    let episodes = n_cells * 36 * if c == "all" { 2 } else { 1 };
                    let truncated = match (c, v) {
                        ("sim-b", _) => 0u32,
                        (_, 8) => 4,
                        (_, 32) => 3,
                        _ => 60,
                    };
                    let before = if v == 128 {
                        truncated.saturating_sub(5)
                    } else {
                        truncated
                    };
                    TruncationRow {
                        lane: "routed".into(),
                        completion_cap: 1024,
                        configuration: c.into(),
                        organization: o.into(),
                        v,
                        n_cells,
                        episodes,
                        successes: episodes - truncated,
                        vts_rate: 1.0 - f64::from(truncated) / f64::from(episodes),
                        truncated,
                        truncated_share: f64::from(truncated) / f64::from(episodes),
                        truncated_before_first_call: before,
                        truncated_before_first_call_share: (truncated > 0)
                            .then(|| f64::from(before) / f64::from(truncated)),
                    }
                })
        })
        .collect();
    TruncationRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"))
}

fn truncation_pairs() -> RecordBatch {
    // (configuration, organization, pairs, lost, gained, lost truncated, truncated 128)
    let rows = [
        ("all", "all", 288u32, 60u32, 10u32, 50u32, 55u32),
        ("sim-a", "Org A", 144, 58, 4, 50, 55),
        ("sim-b", "Org B", 144, 2, 6, 0, 0),
    ];
    let pp = |x: u32, n: u32| 100.0 * f64::from(x) / f64::from(n);
    let rows: Vec<TruncationPairsRow> = rows
        .iter()
        .map(
            |&(c, o, pairs, lost, gained, lost_truncated, truncated_128)| TruncationPairsRow {
                lane: "routed".into(),
                completion_cap: 1024,
                configuration: c.into(),
                organization: o.into(),
                pairs,
                lost,
                gained,
                v_effect_pp: pp(gained, pairs) - pp(lost, pairs),
                lost_pp: pp(lost, pairs),
                gained_pp: pp(gained, pairs),
                lost_truncated_128: lost_truncated,
                lost_truncated_pp: pp(lost_truncated, pairs),
                loss_share_truncated: Some(f64::from(lost_truncated) / f64::from(lost)),
                truncated_8: if truncated_128 > 0 { 2 } else { 0 },
                truncated_128,
                truncation_rate_128: f64::from(truncated_128) / f64::from(pairs),
                truncated_128_before_first_call: truncated_128.saturating_sub(5),
            },
        )
        .collect();
    TruncationPairsRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"))
}

fn truncation_correlation() -> RecordBatch {
    TruncationCorrelationRow::to_batch(&[TruncationCorrelationRow {
        lane: "routed".into(),
        completion_cap: 1024,
        n_configurations: 2,
        pearson_r: Some(-1.0),
        spearman_rho: Some(-1.0),
        never_truncating: 1,
        never_truncating_v_effect_min_pp: Some(2.777_777_777_777_778),
        never_truncating_v_effect_max_pp: Some(2.777_777_777_777_778),
    }])
    .unwrap_or_else(|e| panic!("{e}"))
}

fn strata() -> RecordBatch {
    let row = |configuration: &str, organization: &str| StrataRow {
        lane: "routed".into(),
        completion_cap: 1024,
        configuration: configuration.into(),
        organization: organization.into(),
        pairs: 0,
        total_effect_pp: 0.0,
        pairs_neither_truncated: 0,
        neither_truncated_effect_pp: None,
        truncated_failures_8: 2,
        truncated_failures_128: 55,
        truncated_failures_both: 1,
        bound_independent_low_pp: 0.0,
        bound_independent_high_pp: 0.0,
        bound_alike_low_pp: 0.0,
        bound_alike_high_pp: 0.0,
    };
    StrataRow::to_batch(&[
        StrataRow {
            pairs: 288,
            total_effect_pp: -17.36,
            pairs_neither_truncated: 231,
            neither_truncated_effect_pp: Some(-1.5),
            bound_independent_low_pp: -18.06,
            bound_independent_high_pp: 1.74,
            bound_alike_low_pp: -17.71,
            bound_alike_high_pp: 1.39,
            ..row("all", "all")
        },
        StrataRow {
            pairs: 144,
            total_effect_pp: -37.5,
            pairs_neither_truncated: 87,
            neither_truncated_effect_pp: Some(-4.6),
            bound_independent_low_pp: -38.9,
            bound_independent_high_pp: 0.7,
            bound_alike_low_pp: -38.2,
            bound_alike_high_pp: 0.0,
            ..row("sim-a", "Org A")
        },
    ])
    .unwrap_or_else(|e| panic!("{e}"))
}

fn lanes() -> RecordBatch {
    let row = LanesRow {
        completion_cap: 1024,
        scope: "all".into(),
        cluster_unit: ClusterUnit::Family,
        n_clusters: 36,
        n_units: 72,
        pairs: 864,
        unpaired_routed: 0,
        unpaired_fixed: 0,
        routed_vts: 0.85,
        fixed_vts: 0.826,
        estimate_pp: 2.4,
        ci_low_pp: 1.1,
        ci_high_pp: 3.8,
        p_value: 1e-4,
        p_floor: 1e-4,
        draws: 10_000,
        seed: 1,
        draw_seed: 2,
        routed_tokens_per_episode: 12_000.4,
        fixed_tokens_per_episode: 16_699.6,
        fixed_extra_tokens_per_episode: 4_699.2,
        routed_schema_exposures_per_episode: 30.0,
        fixed_schema_exposures_per_episode: 77.7,
        fixed_extra_schema_exposures_per_episode: 47.7,
    };
    let v128 = LanesRow {
        scope: "v=128".into(),
        pairs: 288,
        routed_vts: 0.7,
        fixed_vts: 0.64,
        estimate_pp: 6.0,
        ci_low_pp: 2.0,
        ci_high_pp: 10.0,
        p_value: 0.004,
        draw_seed: 3,
        routed_tokens_per_episode: 30_000.0,
        fixed_tokens_per_episode: 52_000.0,
        fixed_extra_tokens_per_episode: 22_000.0,
        routed_schema_exposures_per_episode: 146.0,
        fixed_schema_exposures_per_episode: 512.0,
        fixed_extra_schema_exposures_per_episode: 366.0,
        ..row.clone()
    };
    LanesRow::to_batch(&[row, v128]).unwrap_or_else(|e| panic!("{e}"))
}

fn cost_row(configuration: &str, organization: &str) -> CostsRow {
    CostsRow {
        configuration: configuration.into(),
        organization: organization.into(),
        lane: "all".into(),
        episodes: 0,
        successes: 0,
        vts_rate: 0.0,
        infra_failures: 0,
        prompt_tokens: 0,
        completion_tokens: 0,
        reasoning_tokens: 0,
        total_tokens: 0,
        tokens_per_episode: 0.0,
        cost_usd: 0.0,
        cost_per_episode_usd: 0.0,
        cost_per_1000_episodes_usd: 0.0,
        cost_per_success_usd: None,
    }
}

fn costs() -> RecordBatch {
    let rows = [
        (
            "all", "all", 864, 700, 1, 10_000_000, 500_000, 768.384, 0.889, 889.33, 1.0977,
        ),
        (
            "sim-a", "Org A", 432, 300, 1, 6_000_000, 300_000, 700.0, 1.62, 1620.37, 2.333,
        ),
        (
            "sim-b", "Org B", 432, 400, 0, 4_000_000, 200_000, 68.384, 0.158, 158.3, 0.171,
        ),
    ]
    .map(
        |(
            configuration,
            organization,
            episodes,
            successes,
            infra,
            prompt,
            completion,
            cost,
            per_episode,
            per_1000,
            per_success,
        )| {
            let total = prompt + completion;
            CostsRow {
                episodes,
                successes,
                vts_rate: successes as f64 / episodes as f64,
                infra_failures: infra,
                prompt_tokens: prompt,
                completion_tokens: completion,
                total_tokens: total,
                tokens_per_episode: total as f64 / episodes as f64,
                cost_usd: cost,
                cost_per_episode_usd: per_episode,
                cost_per_1000_episodes_usd: per_1000,
                cost_per_success_usd: Some(per_success),
                ..cost_row(configuration, organization)
            }
        },
    );
    CostsRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"))
}

fn first_responses() -> RecordBatch {
    let all = FirstResponsesRow {
        completion_cap: 1024,
        configuration: "all".into(),
        organization: "all".into(),
        visible_schemas: 128,
        configurations: 2,
        first_responses: 576,
        infra_failed: 1,
        cut: 60,
        cut_share: Some(60.0 / 576.0),
        reasoning_only: 45,
        reasoning_only_share: Some(0.75),
        cut_in_tool_call: 10,
        cut_in_tool_call_share: Some(10.0 / 60.0),
        cut_in_text: 4,
        cut_in_text_share: Some(4.0 / 60.0),
        cut_empty: 1,
        never_truncating: 1,
    };
    let sim_a = FirstResponsesRow {
        configuration: "sim-a".into(),
        organization: "Org A".into(),
        configurations: 1,
        first_responses: 288,
        cut_share: Some(60.0 / 288.0),
        never_truncating: 0,
        ..all.clone()
    };
    let sim_b = FirstResponsesRow {
        configuration: "sim-b".into(),
        organization: "Org B".into(),
        configurations: 1,
        first_responses: 288,
        infra_failed: 0,
        cut: 0,
        cut_share: Some(0.0),
        reasoning_only: 0,
        reasoning_only_share: None,
        cut_in_tool_call: 0,
        cut_in_tool_call_share: None,
        cut_in_text: 0,
        cut_in_text_share: None,
        cut_empty: 0,
        never_truncating: 1,
        ..all.clone()
    };
    FirstResponsesRow::to_batch(&[all, sim_a, sim_b]).unwrap_or_else(|e| panic!("{e}"))
}

/// Every table the report reads.
pub(crate) fn full_study() -> BTreeMap<String, RecordBatch> {
    [
        ("contrasts", contrasts()),
        ("contrasts_sign_flip", contrasts_sign_flip()),
        ("contrasts_by_configuration", contrasts_by_configuration()),
        ("truncation", truncation()),
        ("truncation_pairs", truncation_pairs()),
        ("truncation_correlation", truncation_correlation()),
        ("strata", strata()),
        ("lanes", lanes()),
        ("costs", costs()),
        ("first_responses", first_responses()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn rendered(tables: &BTreeMap<String, RecordBatch>) -> super::Rendered {
    render("capacity", tables, &[]).unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn figure<'a>(r: &'a super::Rendered, prefix: &str) -> &'a str {
    r.figures
        .iter()
        .find(|(name, _)| name.starts_with(prefix))
        .map(|(_, svg)| svg.as_str())
        .unwrap_or_else(|| panic!("no figure {prefix}"))
}

#[test]
fn rendering_twice_gives_identical_bytes() {
    let tables = full_study();
    let (a, b) = (rendered(&tables), rendered(&tables));
    assert_eq!(a, b);
    // Equal tables built anew (fresh buffers) render the same bytes too.
    assert_eq!(rendered(&full_study()), a);
}

#[test]
fn markdown_of_a_small_study() {
    // Sign-flip and per-configuration contrasts left out: their notes appear in place.
    let mut tables = full_study();
    tables.remove("contrasts_sign_flip");
    tables.remove("contrasts_by_configuration");
    insta::assert_snapshot!(rendered(&tables).markdown);
}

#[test]
fn the_contrast_figure_has_a_dot_and_a_whisker_per_contrast_and_cluster_unit() {
    let r = rendered(&full_study());
    let svg = figure(&r, "report-contrasts-routed-1024");
    // Families (the primary) take the first colour, intents the second.
    for colour in &SERIES_COLOURS[..2] {
        assert_eq!(dots(svg, *colour), 8);
        assert_eq!(strokes(svg, *colour), 8);
    }
    assert_eq!(dots(svg, SERIES_COLOURS[2]), 0);
    for (_, label) in CONTRASTS {
        let escaped = label.replace('&', "&amp;");
        assert!(svg.contains(&format!(">\n{escaped}\n</text>")), "{label}");
    }
    assert!(svg.contains(">\nfamilies (n = 36)\n</text>"));
}

#[test]
fn effect_figures_have_a_dot_per_configuration_and_the_share_figure_one_per_menu_size() {
    let r = rendered(&full_study());
    assert_eq!(
        r.figures
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        [
            "report-contrasts-routed-1024.svg",
            "report-truncation-by-menu-routed-1024.svg",
            "report-v-effect-truncation-routed-1024.svg",
            "report-w-effect-truncation-routed-1024.svg",
        ]
    );
    assert_eq!(dots(figure(&r, "report-v-effect"), SERIES_COLOURS[0]), 2);
    assert_eq!(dots(figure(&r, "report-w-effect"), SERIES_COLOURS[0]), 2);
    let shares = figure(&r, "report-truncation-by-menu");
    assert_eq!(dots(shares, SERIES_COLOURS[0]), 3);
    // Every configuration's line is named.
    for configuration in ["sim-a", "sim-b"] {
        assert!(
            shares.contains(&format!(">\n{configuration}\n</text>")),
            "{configuration}"
        );
    }
    assert_eq!(strokes(shares, SERIES_COLOURS[0]), 1);
    // The HTML holds every figure inline, and says how many.
    assert!(r.html.contains("<main data-figures=\"4\">"));
    assert_eq!(r.html.matches("<figure class=\"report-figure\"").count(), 4);
    assert_eq!(r.html.matches("<svg ").count(), 4);
    // The Markdown links each by its file name.
    for (name, _) in &r.figures {
        assert!(r.markdown.contains(&format!("]({name})")), "{name}");
    }
}

#[test]
fn an_analysis_the_design_cannot_run_is_noted_as_skipped_not_as_missing() {
    let mut tables = BTreeMap::new();
    tables.insert("costs".to_string(), costs());
    let skipped = [("contrasts", "it needs all 12 capacity cells".to_string())];
    let r = render("s", &tables, &skipped).unwrap_or_else(|e| panic!("{e}"));
    let line = "- *Contrasts: skipped, the `contrasts` analysis cannot run on this study's \
                design: it needs all 12 capacity cells.*";
    assert!(r.markdown.contains(line), "{}", r.markdown);
    assert!(!r.markdown.contains("add the `contrasts` analysis"));
    // The others are still absent for the ordinary reason.
    assert!(r
        .markdown
        .contains("add the `lanes` analysis to its manifest"));
}

#[test]
fn absent_tables_become_one_line_notes() {
    let mut tables = BTreeMap::new();
    tables.insert("costs".to_string(), costs());
    let r = rendered(&tables);
    for line in [
        "- *Contrasts: omitted, the study has no `contrasts`, `contrasts_sign_flip` or \
         `contrasts_by_configuration` table (add the `contrasts` analysis to its manifest).*",
        "- *Truncation: omitted, the study has no `truncation`, `truncation_pairs` or \
         `truncation_correlation` table (add the `truncation` analysis to its manifest).*",
        "- *Strata and bounds: omitted, the study has no `strata` table (add the `strata` \
         analysis to its manifest).*",
        "- *Lanes: omitted, the study has no `lanes` table (add the `lanes` analysis to \
         its manifest).*",
    ] {
        assert!(r.markdown.contains(line), "{line}\n---\n{}", r.markdown);
    }
    assert!(r.markdown.contains("## Costs"));
    assert!(!r.markdown.contains("## Lanes"));
    assert!(r.figures.is_empty());
    assert!(r.html.contains("<main data-figures=\"0\">"));

    // No table at all still renders: a title, the notes, nothing else.
    let empty = rendered(&BTreeMap::new());
    assert_eq!(empty.markdown.matches("omitted").count(), 6);

    // A table the report does not know is named, not dropped silently.
    tables.insert("mystery".to_string(), costs());
    assert!(rendered(&tables)
        .markdown
        .contains("- *Not shown in this report: `mystery`.*"));
}

#[test]
fn a_table_of_another_layout_is_an_error_naming_table_and_column() {
    let mut tables = full_study();
    tables.insert(
        "strata".into(),
        build(
            TableBuilder::new()
                .text("lane", ["routed"])
                .u32("completion_cap", [1024]),
            "strata",
        ),
    );
    match render("s", &tables, &[]) {
        Err(ReportError::Layout(tbb_tables::StoreError::Layout { table, detail })) => {
            assert_eq!(table, "strata");
            assert!(detail.contains("configuration"), "{detail}");
        }
        other => panic!("expected a layout error, got {other:?}"),
    }
}

#[test]
fn the_html_page_loads_nothing_and_escapes_table_text() {
    let mut tables = full_study();
    tables.insert(
        "costs".into(),
        CostsRow::to_batch(&[CostsRow {
            episodes: 1,
            successes: 1,
            vts_rate: 1.0,
            total_tokens: 10,
            tokens_per_episode: 10.0,
            cost_usd: 0.01,
            cost_per_1000_episodes_usd: 10.0,
            cost_per_success_usd: Some(0.01),
            ..cost_row("<script>alert(1)</script>", "O & P")
        }])
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let r = rendered(&tables);
    assert!(!r.html.contains("<script"));
    assert!(r.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(r.html.contains("O &amp; P"));
    for external in ["<link", "src=", "@import", "url("] {
        assert!(!r.html.contains(external), "{external}");
    }
    // The only URL is the SVG namespace, which browsers do not fetch.
    let urls = r.html.matches("http").count();
    assert_eq!(
        urls,
        r.html
            .matches("xmlns=\"http://www.w3.org/2000/svg\"")
            .count()
    );
    assert!(r.markdown.contains("\\<script\\>alert(1)\\</script\\>"));
}

/// The contract with the analyses: whatever tables they write for a small panel, the
/// report reads every column it needs from them.
#[test]
fn the_tables_the_analyses_write_render() {
    use tbb_analysis::common::design::testing::unit;
    use tbb_analysis::{AnalysisKind, Bootstrap, ClusterUnit};

    let mut episodes = Vec::new();
    for (config, org) in [("sim-a", "A"), ("sim-b", "B"), ("sim-c", "B")] {
        for (family, intent) in [("f1", "i1"), ("f2", "i1"), ("f3", "i2"), ("f4", "i3")] {
            for lane in [Menu::Routed, Menu::Fixed] {
                // sim-a fails and truncates at V = 128 (cells 4..8) in half its families.
                let fails = config == "sim-a" && family < "f3";
                let mut rows = unit(config, org, family, intent, |i| {
                    !(fails && (4..8).contains(&i))
                });
                for (i, r) in rows.iter_mut().enumerate() {
                    r.lane = lane;
                    if fails && (4..8).contains(&i) {
                        r.truncated = true;
                        r.truncated_before_first_call = i % 2 == 0;
                    }
                }
                episodes.extend(rows);
            }
        }
    }
    let mut tables = BTreeMap::new();
    let bootstrap = Bootstrap {
        draws: Some(200),
        seed: Some(7),
        cluster_units: vec![
            ClusterUnit::Family,
            ClusterUnit::Intent,
            ClusterUnit::Configuration,
        ],
    };
    // One first request per episode, reasoning reported: a truncated episode's was cut,
    // reasoning-only when it ended before its first call, else inside a tool call.
    let requests: Vec<tbb_tables::rows::RequestRow> = episodes
        .iter()
        .map(|e| {
            let (finish, kind) = match (e.truncated, e.truncated_before_first_call) {
                (true, true) => (FinishReason::Length, ResponseKind::ReasoningOnly),
                (true, false) => (FinishReason::Length, ResponseKind::CutInToolCall),
                _ => (FinishReason::ToolCalls, ResponseKind::ToolCall),
            };
            tbb_tables::rows::RequestRow {
                episode: std::sync::Arc::new(tbb_tables::rows::EpisodeColumns::of(e)),
                request: tbb_tables::rows::RequestColumns {
                    turn: 0,
                    visible_schemas: e.v,
                    prompt_tokens: Some(1000),
                    cached_tokens: Some(0),
                    completion_tokens: Some(500),
                    reasoning_tokens: Some(400),
                    reasoning_source: Some(ReasoningSource::Reported),
                    finish_reason: Some(finish),
                    finish_reason_raw: Some(finish.to_string()),
                    response_kind: Some(kind),
                    executed_call: kind == ResponseKind::ToolCall,
                    cumulative_calls: u32::from(kind == ResponseKind::ToolCall),
                    attempts: Some(1),
                    infra_cause: None,
                    wall_ms: 1,
                    cumulative_tokens: 1500,
                },
            }
        })
        .collect();
    for kind in [
        "contrasts",
        "truncation",
        "strata",
        "lanes",
        "costs",
        "first_responses",
    ] {
        let kind = AnalysisKind::get(kind).unwrap_or_else(|| panic!("{kind}"));
        let params = if kind.kind().parameters().is_empty() {
            serde_json::Map::new()
        } else {
            match serde_json::to_value(&bootstrap) {
                Ok(serde_json::Value::Object(m)) => m,
                _ => panic!("bootstrap parameters"),
            }
        };
        let context = tbb_analysis::Context {
            study: "panel",
            episodes: &episodes,
            requests: &requests,
            tables: &BTreeMap::new(),
            skipped: &[],
        };
        let produced = kind
            .kind()
            .run(&params, &context)
            .unwrap_or_else(|e| panic!("{e}"));
        for out in produced.tables {
            tables.insert(out.table.to_string(), out.batch);
        }
    }
    let r = render("panel", &tables, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(!r.markdown.contains("omitted"), "{}", r.markdown);
    assert!(!r.markdown.contains("Not shown"), "{}", r.markdown);
    // Two lanes × (contrasts, shares, V effect, W effect).
    assert_eq!(r.figures.len(), 8);
    let svg = figure(&r, "report-contrasts-routed-1024");
    for colour in &SERIES_COLOURS[..3] {
        assert_eq!(dots(svg, *colour), 8);
    }
    assert_eq!(
        dots(
            figure(&r, "report-v-effect-truncation-routed"),
            SERIES_COLOURS[0]
        ),
        3
    );
}

/// Renders the report of a directory of tables written by `tbb apply`, to look at by
/// eye: `TBB_REPORT_DIR=/tmp/x/outputs/smoke cargo test --lib render_a_directory --
/// --ignored` writes report.md, report.html and the figures into that directory.
#[test]
#[ignore = "reads the tables in TBB_REPORT_DIR and writes the report beside them"]
fn render_a_directory() {
    let Some(dir) = std::env::var_os("TBB_REPORT_DIR") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let mut tables = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "parquet")
            && !matches!(stem, "episodes" | "variants")
        {
            let (batches, _) = tbb_tables::read_table(&path).unwrap_or_else(|e| panic!("{e}"));
            // Analysis tables are small: one batch (render takes one per table).
            assert!(batches.len() <= 1, "{stem}: {} batches", batches.len());
            if let Some(b) = batches.into_iter().next() {
                tables.insert(stem.to_string(), b);
            }
        }
    }
    let study = dir
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("study")
        .to_string();
    let r = render(&study, &tables, &[]).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("report.md"), &r.markdown).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("report.html"), &r.html).unwrap_or_else(|e| panic!("{e}"));
    for (name, svg) in &r.figures {
        std::fs::write(dir.join(name), svg).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The cap study's section: one row per capacity configuration as the strata table
/// wrote it, with what runs and the paper's choice beside ours; and no note about it in
/// a study without the table.
#[test]
fn the_cap_study_section_shows_the_rule_reading_and_what_runs() {
    let row = |configuration: &str, truncated: u32, v_effect_pp: Option<f64>| SweepStrataRow {
        configuration: configuration.into(),
        upstream_episodes: 144,
        upstream_truncated: truncated,
        truncated_share: Some(f64::from(truncated) / 144.0),
        v_effect_pp,
        stratum: None,
        candidate_rank: None,
        selected: false,
        in_study: false,
    };
    let chosen = |stratum: TruncationStratum, r: SweepStrataRow| SweepStrataRow {
        stratum: Some(stratum),
        candidate_rank: Some(1),
        selected: true,
        in_study: true,
        ..r
    };
    let strata = SweepStrataRow::to_batch(&[
        chosen(TruncationStratum::B, row("heavy", 72, Some(-40.0))),
        chosen(TruncationStratum::M, row("mild", 14, Some(-9.5))),
        chosen(TruncationStratum::N, row("null", 0, Some(1.4))),
        row("other", 0, None),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let tables = BTreeMap::from([("sweep_strata".to_string(), strata)]);
    let r = rendered(&tables);
    for line in [
        "## Configurations of the cap study",
        "The rule selects 3 of 4 capacity configurations. The paper's sweep ran 8 configurations",
        "| heavy | 144 | 72 | 50.0% | -40.0 | B | 1 | yes |",
        "| other | 144 | 0 | 0.0% | — | — | — |  |",
    ] {
        assert!(r.markdown.contains(line), "{line}\n---\n{}", r.markdown);
    }
    assert!(!rendered(&full_study()).markdown.contains("cap study"));
}

/// The cap studies' section: the contrast per cap and its change with its interval,
/// bounds and margin verdict, the paper's values beside ours, and the truncation and
/// disagreement shares as percentages.
#[test]
fn the_cap_sweep_section_puts_ours_beside_the_papers() {
    let row = |stratum: &str, arm_role, statistic, estimate_pp, ci: Option<(f64, f64)>| {
        let change = arm_role == CapRole::Change;
        let (arm, completion_cap) = match arm_role {
            CapRole::Low => ("cap_1024", Some(1024)),
            CapRole::High => ("cap_16384", Some(16384)),
            CapRole::Change => ("cap_16384_minus_cap_1024", None),
        };
        CapSweepRow {
            estimate: CapEstimate {
                stratum: stratum.into(),
                arm: arm.into(),
                arm_role,
                completion_cap,
                statistic,
                n_configurations: 1,
                n_units: None,
                units_incomplete: None,
                n_clusters: None,
                n_events: None,
                n_total: None,
                estimate_pp: Some(estimate_pp),
                ci_low_pp: ci.map(|c| c.0),
                ci_high_pp: ci.map(|c| c.1),
                p_value: None,
                excluded_provider_failure: 0,
                excluded_missing_usage: 0,
                bound_low_pp: change.then_some(38.6),
                bound_high_pp: change.then_some(38.6),
                draws: None,
                seed: 0,
                draw_seed: None,
            },
            margin: Margin {
                margin_pp: change.then_some(5.0),
                clears_margin: change.then_some(true),
                within_margin: change.then_some(false),
            },
        }
    };
    let contrast = CapStatistic::VContrast;
    let rows = [
        row("B", CapRole::Low, contrast, -38.7, Some((-41.0, -36.3))),
        row("B", CapRole::High, contrast, -0.1, Some((-1.3, 1.2))),
        row("B", CapRole::Change, contrast, 38.6, Some((35.9, 41.2))),
        row(
            "B",
            CapRole::Low,
            CapStatistic::TruncatedShareV128,
            45.7,
            None,
        ),
        row(
            "all",
            CapRole::High,
            CapStatistic::RepeatDisagreement,
            12.5,
            None,
        ),
    ];
    let sweep = CapSweepRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"));
    let r = rendered(&BTreeMap::from([(CapSweepRow::TABLE.to_string(), sweep)]));
    for line in [
        "menu contrast (pp) per stratum at caps 1,024 and 16,384",
        "| B | -38.7 [-41.0, -36.3] | -0.1 [-1.3, 1.2] | +38.6 [35.9, 41.2] | [38.6, 38.6] | yes | -43.7 | -2.7 [-4.7, -0.9] | +41.0 [36.2, 45.5] |",
        "| B | 45.7% | — | — | — |",
        "| all (pooled) | — | — | — | 12.5% |",
        "beside the paper's Figure 2b",
    ] {
        assert!(r.markdown.contains(line), "{line}\n---\n{}", r.markdown);
    }
    // The figure: one stratum row; our two caps each a dot and a whisker; the paper's
    // two points black diamonds, the low cap's alone (it published no interval), the
    // high cap's with a line; one legend entry "paper".
    let svg = figure(&r, "report-cap-sweep");
    let counts: Vec<(usize, usize)> = SERIES_COLOURS[..3]
        .iter()
        .map(|&c| (dots(svg, c), strokes(svg, c)))
        .collect();
    assert_eq!(counts, [(1, 1), (1, 1), (0, 0)], "{svg}");
    assert_eq!(paper_points(svg), 2, "{svg}");
    assert_eq!(strokes(svg, PAPER_COLOUR), 1, "{svg}");
    assert_eq!(svg.matches(">\npaper\n</text>").count(), 1, "{svg}");
}

/// The switches section: per repair our verdict counts beside the paper's (found by
/// the component the repair changes), and a figure with one dot per switch and per
/// repaired incumbent.
#[test]
fn the_switches_section_counts_verdicts_beside_the_papers() {
    let comparison = |switch: &str, success_switch: f64, cost_switch_usd: f64| SwitchesRow {
        repair: "router".into(),
        baseline: "fixed".into(),
        component: "menu=router".into(),
        incumbent: "sim-a".into(),
        switch: switch.into(),
        n_units: 4,
        n_clusters: 2,
        success_repair: 0.9,
        success_switch,
        success_diff_pp: 100.0 * (0.9 - success_switch),
        success_ci_low_pp: 10.0,
        success_ci_high_pp: 60.0,
        cost_repair_usd: 0.002,
        cost_switch_usd,
        cost_diff_usd: 0.002 - cost_switch_usd,
        cost_ci_low_usd: -0.001,
        cost_ci_high_usd: 0.001,
        tokens_repair: 1000.0,
        tokens_switch: 1200.0,
        wall_ms_repair: 10.0,
        wall_ms_switch: 12.0,
        switch_dominates: false,
        draws: 200,
        seed: 7,
    };
    let switches = [
        comparison("sim-b", 0.5, 0.001),
        comparison("sim-c", 0.4, 0.003),
    ];
    let summary = [SwitchSummaryRow {
        repair: "router".into(),
        baseline: "fixed".into(),
        component: "menu=router".into(),
        n_incumbents: 1,
        success_superior: 1,
        pareto_nondominated: 1,
        cost_superior: 0,
    }];
    let tables = BTreeMap::from([
        (
            SwitchesRow::TABLE.to_string(),
            SwitchesRow::to_batch(&switches).unwrap_or_else(|e| panic!("{e}")),
        ),
        (
            SwitchSummaryRow::TABLE.to_string(),
            SwitchSummaryRow::to_batch(&summary).unwrap_or_else(|e| panic!("{e}")),
        ),
    ]);
    let r = rendered(&tables);
    let line = "| router | fixed | menu=router | 1 / 1 / 0 of 1 | 21 / 21 / 0 of 21 (connector-first router) |";
    assert!(r.markdown.contains(line), "{line}\n---\n{}", r.markdown);
    let svg = figure(&r, "report-switches-router");
    assert_eq!(
        (dots(svg, SERIES_COLOURS[0]), dots(svg, SERIES_COLOURS[1])),
        (2, 1),
        "{svg}"
    );
}
