//! The truncation section (paper Section 4.2): the share of episodes truncated at the
//! completion cap by menu size and configuration, the matched-pair accounting of the
//! menu effect, the correlation of the per-configuration V effect with the truncation
//! rate, and three figures — the truncated share by menu size, and the V and W
//! effects of each configuration against its truncation rate at V = 128 (the paper's
//! Figures 6 and 7).
//!
//! Owns: the layout of the `truncation`, `truncation_pairs` and
//! `truncation_correlation` tables in the report (the W figure also reads
//! `contrasts_by_configuration`), and where the paper's truncation values
//! ([`paper::truncation`]) stand: a labelled "paper" row in the share and pair tables,
//! a sentence after ours, and black diamonds on the share and V figures — for the
//! routed lane at the paper's frozen cap only.
//!
//! Invariants: the V figure plots `v_effect_pp` of `truncation_pairs`, the variable
//! `truncation_correlation` correlates, so the r and ρ in its caption describe the
//! dots drawn. The W figure has no correlation in its caption because no table holds
//! one (the truncation analysis correlates the V effect only); the report does not
//! compute it.
//!
//! Never: computes a share, effect or correlation.

use tbb_tables::analyses::truncation::{
    TruncationCorrelationRow, TruncationPairsRow, TruncationRow,
};

use super::super::document::{text, Align, Figure, Section, Table};
use super::super::figures::{self, PaperMark, Point};
use super::super::format;
use super::super::paper::{self, truncation as q};
use super::super::ReportError;
use super::contrasts::configuration_rows;
use super::{absent, and_list, configuration_label, first_seen, rows, Stratum, Tables};

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let shares = rows::<TruncationRow>(tables)?;
    let pairs = rows::<TruncationPairsRow>(tables)?;
    let correlations = rows::<TruncationCorrelationRow>(tables)?;
    let by_configuration = configuration_rows(tables)?;

    s.paragraph(vec![text(
        "A truncated episode ended because a response was cut at the completion cap. \
         Pairs match each V = 8 episode with its V = 128 sibling (same family, \
         configuration, workflow, encoding and repeat, over the four endpoint \
         workflow × encoding cells); a pair loses when success at V = 8 becomes failure \
         at V = 128 and gains in the reverse case.",
    )]);
    if shares.is_none() {
        s.note(absent("Shares by menu size", "truncation", "truncation"));
    }
    if pairs.is_none() {
        s.note(absent(
            "Pair accounting and the effect-against-truncation figures",
            "truncation_pairs",
            "truncation",
        ));
    }
    if correlations.is_none() {
        s.note(absent(
            "Correlations",
            "truncation_correlation",
            "truncation",
        ));
    }

    let mut strata: Vec<Stratum> = Vec::new();
    strata.extend(
        shares
            .iter()
            .flatten()
            .map(|r| Stratum::new(&r.lane, u64::from(r.completion_cap))),
    );
    strata.extend(
        pairs
            .iter()
            .flatten()
            .map(|r| Stratum::new(&r.lane, u64::from(r.completion_cap))),
    );
    strata.extend(
        correlations
            .iter()
            .flatten()
            .map(|r| Stratum::new(&r.lane, u64::from(r.completion_cap))),
    );
    strata.sort();
    strata.dedup();

    for stratum in &strata {
        s.heading(stratum.title());
        let quoted = paper_stratum(stratum);
        if quoted {
            s.paragraph(vec![text(format!(
                "The paper's values (rows and figure marks labelled \"paper\") are its own \
                 panel's, routed menu at its frozen cap of {} tokens; the paper prints no \
                 share at V = 32, no per-configuration row, and no pair's truncation at \
                 V = 8.",
                paper::harness::COMPLETION_CAP.text()
            ))]);
        }
        if let Some(rows) = &shares {
            let mine: Vec<&TruncationRow> = rows
                .iter()
                .filter(|r| &Stratum::new(&r.lane, u64::from(r.completion_cap)) == stratum)
                .collect();
            if let Some(sentence) = share_sentence(&mine) {
                s.paragraph(vec![text(sentence)]);
            }
            s.table(share_table(stratum, &mine, quoted));
            s.figure(share_figure(stratum, &mine, quoted)?);
        }
        let correlation = correlations
            .iter()
            .flatten()
            .find(|r| &Stratum::new(&r.lane, u64::from(r.completion_cap)) == stratum);
        if let Some(rows) = &pairs {
            let mine: Vec<&TruncationPairsRow> = rows
                .iter()
                .filter(|r| &Stratum::new(&r.lane, u64::from(r.completion_cap)) == stratum)
                .collect();
            if let Some(pooled) = mine.iter().find(|r| r.configuration == "all") {
                s.paragraph(vec![text(pair_sentence(pooled))]);
            }
            s.table(pair_table(stratum, &mine, quoted));
            if let Some(c) = correlation {
                s.paragraph(vec![text(correlation_sentence(c))]);
            }
            if quoted {
                s.paragraph(vec![text(paper_correlation_sentence())]);
            }
            let configurations: Vec<&&TruncationPairsRow> =
                mine.iter().filter(|r| r.configuration != "all").collect();
            s.figure(v_figure(stratum, &configurations, correlation, quoted)?);
            match &by_configuration {
                Some(effects) => {
                    let points: Vec<Point> = configurations
                        .iter()
                        .filter_map(|p| {
                            effects
                                .iter()
                                .find(|e| {
                                    &Stratum::new(&e.lane, u64::from(e.completion_cap)) == stratum
                                        && e.contrast == "w"
                                        && e.configuration == p.configuration
                                })
                                .map(|e| Point {
                                    x: p.truncation_rate_128,
                                    y: e.estimate_pp,
                                })
                        })
                        .collect();
                    s.figure(w_figure(stratum, &points, quoted)?);
                }
                None => s.note(absent(
                    "The W-effect figure",
                    "contrasts_by_configuration",
                    "contrasts",
                )),
            }
        } else if let Some(c) = correlation {
            s.paragraph(vec![text(correlation_sentence(c))]);
            if quoted {
                s.paragraph(vec![text(paper_correlation_sentence())]);
            }
        }
    }
    Ok(())
}

/// Whether the paper's truncation values stand beside this stratum: the routed lane
/// at the paper's frozen cap.
fn paper_stratum(stratum: &Stratum) -> bool {
    stratum.lane == "routed" && stratum.cap == paper::harness::completion_cap()
}

/// The paper's truncated share at menu size `v`, as a share (0..=1), NaN where it
/// prints none.
fn paper_share(v: u64) -> f64 {
    let quote = match v {
        8 => q::SHARE_V8,
        128 => q::SHARE_V128,
        _ => return f64::NAN,
    };
    quote.whisker().map_or(f64::NAN, |w| w.estimate / 100.0)
}

/// The paper's quoted share at `v`, or "—".
fn paper_share_text(v: u64) -> String {
    match v {
        8 => q::SHARE_V8.text(),
        128 => q::SHARE_V128.text(),
        _ => format::MISSING.to_string(),
    }
}

/// The paper's correlation and never-truncating configurations.
fn paper_correlation_sentence() -> String {
    format!(
        "The paper's: Pearson r = {}, Spearman ρ = {} across its configurations; its {} \
         configurations that never truncate have V effects between {} and {} pp, and one \
         configuration loses {} pp at {} truncation.",
        q::PEARSON_R.text(),
        q::SPEARMAN_RHO.text(),
        q::NEVER_TRUNCATING.text(),
        q::NEVER_TRUNCATING_V_EFFECT_LOWEST.text(),
        q::NEVER_TRUNCATING_V_EFFECT_HIGHEST.text(),
        q::LOSS_WITHOUT_TRUNCATION_V_EFFECT.text(),
        q::LOSS_WITHOUT_TRUNCATION_RATE.text()
    )
}

/// "The share of episodes truncated at the cap is 1.6% at V = 8 and 13.6% at
/// V = 128; 391 of the 411 truncated episodes at V = 128 end before the first call."
fn share_sentence(rows: &[&TruncationRow]) -> Option<String> {
    let mut pooled: Vec<&&TruncationRow> =
        rows.iter().filter(|r| r.configuration == "all").collect();
    pooled.sort_by_key(|r| r.v);
    let largest = pooled.last()?;
    let at: Vec<String> = pooled
        .iter()
        .map(|r| format!("{} at V = {}", format::percent(r.truncated_share), r.v))
        .collect();
    let listed = and_list(&at);
    Some(format!(
        "Pooled over configurations, the share of episodes truncated at the cap is \
         {listed}; {} of the {} truncated episodes at V = {} end before the first call.",
        format::count(u64::from(largest.truncated_before_first_call)),
        format::count(u64::from(largest.truncated)),
        largest.v
    ))
}

fn share_table(stratum: &Stratum, rows: &[&TruncationRow], quoted: bool) -> Table {
    let mut sizes: Vec<u64> = rows.iter().map(|r| u64::from(r.v)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let largest = sizes.last().copied().unwrap_or(0);
    let mut t = Table::new(
        format!(
            "Episodes truncated at the cap by visible menu size, {}: share (truncated / \
             episodes), over every capacity cell at that size.",
            stratum.short()
        ),
        &[
            ("Configuration", Align::Left),
            ("Organization", Align::Left),
        ],
    );
    for v in &sizes {
        t.push_column(format!("V = {v}"), Align::Right);
    }
    t.push_column(
        format!("Before the first call, V = {largest}"),
        Align::Right,
    );
    let configurations = first_seen(
        &rows
            .iter()
            .map(|r| r.configuration.clone())
            .collect::<Vec<_>>(),
    );
    for configuration in configurations {
        let of: Vec<&&TruncationRow> = rows
            .iter()
            .filter(|r| r.configuration == configuration)
            .collect();
        let organization = of
            .first()
            .map_or_else(String::new, |r| r.organization.clone());
        let mut cells = vec![configuration_label(&configuration), organization];
        for v in &sizes {
            cells.push(of.iter().find(|r| u64::from(r.v) == *v).map_or_else(
                || format::MISSING.to_string(),
                |r| {
                    format!(
                        "{} ({})",
                        format::percent(r.truncated_share),
                        format::ratio(u64::from(r.truncated), u64::from(r.episodes))
                    )
                },
            ));
        }
        // "0/0" would read as a count; with nothing truncated the share is undefined.
        cells.push(
            of.iter()
                .find(|r| u64::from(r.v) == largest && r.truncated > 0)
                .map_or_else(
                    || format::MISSING.to_string(),
                    |r| {
                        format::ratio(
                            u64::from(r.truncated_before_first_call),
                            u64::from(r.truncated),
                        )
                    },
                ),
        );
        t.push(cells);
    }
    if quoted {
        let mut cells = vec!["paper (pooled)".to_string(), String::new()];
        cells.extend(sizes.iter().map(|v| paper_share_text(*v)));
        cells.push(if largest == 128 {
            format!(
                "{}/{}",
                q::BEFORE_FIRST_CALL_V128.text(),
                q::TRUNCATED_V128.text()
            )
        } else {
            format::MISSING.to_string()
        });
        t.push(cells);
    }
    t
}

fn share_figure(
    stratum: &Stratum,
    rows: &[&TruncationRow],
    quoted: bool,
) -> Result<Figure, ReportError> {
    let mut sizes: Vec<u64> = rows.iter().map(|r| u64::from(r.v)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let line = |configuration: &str| -> Vec<f64> {
        sizes
            .iter()
            .map(|v| {
                rows.iter()
                    .find(|r| r.configuration == configuration && u64::from(r.v) == *v)
                    .map_or(f64::NAN, |r| r.truncated_share)
            })
            .collect()
    };
    let configurations: Vec<String> = first_seen(
        &rows
            .iter()
            .map(|r| r.configuration.clone())
            .collect::<Vec<_>>(),
    )
    .into_iter()
    .filter(|c| c != "all")
    .collect();
    let each: Vec<(String, Vec<f64>)> = configurations
        .iter()
        .map(|c| (c.clone(), line(c)))
        .collect();
    let title = format!("Truncated at the cap by menu size, {}", stratum.short());
    let paper: Vec<f64> = if quoted {
        sizes.iter().map(|v| paper_share(*v)).collect()
    } else {
        Vec::new()
    };
    let marked = paper.iter().filter(|x| x.is_finite()).count();
    Ok(Figure {
        file_name: format!("report-truncation-by-menu-{}.svg", stratum.slug()),
        caption: format!(
            "Share of episodes truncated at the completion cap at each visible menu size \
             ({}): pooled over configurations (thick line with dots) and for each of the \
             {} configurations (thin grey lines, each named at its right-hand end).{}",
            stratum.short(),
            configurations.len(),
            if marked > 0 {
                format!(
                    " The black diamonds (legend \"paper (pooled)\") are the paper's pooled \
                     shares, {} at V = 8 and {} at V = 128.",
                    q::SHARE_V8.text(),
                    q::SHARE_V128.text()
                )
            } else {
                String::new()
            }
        ),
        svg: figures::share_lines(&title, &sizes, &line("all"), &each, &paper)?,
    })
}

/// "Of the 3,024 matched pairs, 472 lose success at V = 128 and 101 gain it. The 343
/// lost pairs whose V = 128 episode was truncated carry 11.3 of the 15.6 pp lost."
fn pair_sentence(r: &TruncationPairsRow) -> String {
    format!(
        "Of the {} matched pairs, {} lose success at V = 128 and {} gain it (V effect \
         {} pp). The {} lost pairs whose V = 128 episode was truncated carry {} of the \
         {} pp lost.",
        format::count(u64::from(r.pairs)),
        format::count(u64::from(r.lost)),
        format::count(u64::from(r.gained)),
        format::effect_pp(r.v_effect_pp),
        format::count(u64::from(r.lost_truncated_128)),
        format::fixed(r.lost_truncated_pp, 1),
        format::fixed(r.lost_pp, 1)
    )
}

fn pair_table(stratum: &Stratum, rows: &[&TruncationPairsRow], quoted: bool) -> Table {
    let mut t = Table::new(
        format!(
            "Matched V = 8 / V = 128 pairs, {}: losses and gains, the V effect over \
             pairs, and the part of the loss carried by pairs whose V = 128 episode was \
             truncated.",
            stratum.short()
        ),
        &[
            ("Configuration", Align::Left),
            ("Organization", Align::Left),
            ("Pairs", Align::Right),
            ("Lost", Align::Right),
            ("Gained", Align::Right),
            ("V effect (pp)", Align::Right),
            ("Lost (pp)", Align::Right),
            ("Lost, V = 128 truncated", Align::Right),
            ("Carried by them (pp)", Align::Right),
            ("Share of loss", Align::Right),
            ("Truncated at V = 128", Align::Right),
            ("Before the first call", Align::Right),
        ],
    );
    for r in rows {
        t.push(vec![
            configuration_label(&r.configuration),
            r.organization.clone(),
            format::count(u64::from(r.pairs)),
            format::count(u64::from(r.lost)),
            format::count(u64::from(r.gained)),
            format::effect_pp(r.v_effect_pp),
            format::fixed(r.lost_pp, 1),
            format::count(u64::from(r.lost_truncated_128)),
            format::fixed(r.lost_truncated_pp, 1),
            // No loss: no share (the table holds a null).
            format::percent(r.loss_share_truncated.unwrap_or(f64::NAN)),
            format!(
                "{} ({})",
                format::percent(r.truncation_rate_128),
                format::ratio(u64::from(r.truncated_128), u64::from(r.pairs))
            ),
            format::count(u64::from(r.truncated_128_before_first_call)),
        ]);
    }
    if quoted {
        let missing = || format::MISSING.to_string();
        t.push(vec![
            "paper (pooled)".into(),
            String::new(),
            q::PAIRS.text(),
            q::LOST.text(),
            q::GAINED.text(),
            missing(),
            q::LOST_PP.text(),
            q::LOST_TRUNCATED.text(),
            q::LOST_TRUNCATED_PP.text(),
            missing(),
            missing(),
            missing(),
        ]);
    }
    t
}

fn correlation_phrase(c: &TruncationCorrelationRow) -> String {
    // An undefined correlation is a null in the table, shown as missing.
    let (pearson, spearman) = (
        c.pearson_r.unwrap_or(f64::NAN),
        c.spearman_rho.unwrap_or(f64::NAN),
    );
    if pearson.is_finite() || spearman.is_finite() {
        format!(
            "Pearson r = {}, Spearman ρ = {}",
            format::correlation(pearson),
            format::correlation(spearman)
        )
    } else {
        "the correlations are undefined (fewer than two configurations, or a constant \
         variable)"
            .into()
    }
}

fn correlation_sentence(c: &TruncationCorrelationRow) -> String {
    // With no never-truncating configuration the range is null; it is not shown then.
    let (never_min, never_max) = (
        c.never_truncating_v_effect_min_pp.unwrap_or(f64::NAN),
        c.never_truncating_v_effect_max_pp.unwrap_or(f64::NAN),
    );
    let never = match c.never_truncating {
        0 => "Every configuration truncates some V = 128 pair episode.".to_string(),
        1 => format!(
            "The one configuration that never truncates at V = 128 has a V effect of {} pp.",
            format::effect_pp(never_min)
        ),
        n => format!(
            "The {} configurations that never truncate at V = 128 have V effects between \
             {} and {} pp.",
            format::count(u64::from(n)),
            format::effect_pp(never_min),
            format::effect_pp(never_max)
        ),
    };
    format!(
        "Across the {} configurations, the V effect against the truncation rate at \
         V = 128: {}. {never}",
        format::count(u64::from(c.n_configurations)),
        correlation_phrase(c)
    )
}

fn v_figure(
    stratum: &Stratum,
    rows: &[&&TruncationPairsRow],
    correlation: Option<&TruncationCorrelationRow>,
    quoted: bool,
) -> Result<Figure, ReportError> {
    let points: Vec<Point> = rows
        .iter()
        .map(|r| Point {
            x: r.truncation_rate_128,
            y: r.v_effect_pp,
        })
        .collect();
    let title = format!("V effect against truncation, {}", stratum.short());
    let statistics = correlation.map_or_else(
        || " (no truncation_correlation table: no correlation shown)".to_string(),
        |c| format!("; {}", correlation_phrase(c)),
    );
    // The paper prints two things of its Figure 6 one can place: one configuration's
    // point, and the range of the configurations at zero truncation.
    let paper: Vec<PaperMark> = if quoted {
        let point = |x: paper::Quote, y: paper::Quote| {
            let (x, y) = (x.whisker(), y.whisker());
            PaperMark {
                x: x.map_or(f64::NAN, |w| w.estimate / 100.0),
                y: y.map_or(f64::NAN, |w| w.estimate),
                low: f64::NAN,
                high: f64::NAN,
            }
        };
        let y = |q: paper::Quote| q.whisker().map_or(f64::NAN, |w| w.estimate);
        let range = (
            y(q::NEVER_TRUNCATING_V_EFFECT_LOWEST),
            y(q::NEVER_TRUNCATING_V_EFFECT_HIGHEST),
        );
        vec![
            point(
                q::LOSS_WITHOUT_TRUNCATION_RATE,
                q::LOSS_WITHOUT_TRUNCATION_V_EFFECT,
            ),
            PaperMark {
                x: 0.0,
                y: f64::NAN,
                low: range.0,
                high: range.1,
            },
        ]
    } else {
        Vec::new()
    };
    let paper_caption = if quoted {
        format!(
            " In black (legend \"paper\"), what the paper prints of its Figure 6: the \
             range of its {} never-truncating configurations' V effects ({} to {} pp, the \
             line at 0%) and one configuration at {} truncation with a V effect of {} pp \
             (the diamond); its r = {}, ρ = {}.",
            q::NEVER_TRUNCATING.text(),
            q::NEVER_TRUNCATING_V_EFFECT_LOWEST.text(),
            q::NEVER_TRUNCATING_V_EFFECT_HIGHEST.text(),
            q::LOSS_WITHOUT_TRUNCATION_RATE.text(),
            q::LOSS_WITHOUT_TRUNCATION_V_EFFECT.text(),
            q::PEARSON_R.text(),
            q::SPEARMAN_RHO.text()
        )
    } else {
        String::new()
    };
    Ok(Figure {
        file_name: format!("report-v-effect-truncation-{}.svg", stratum.slug()),
        caption: format!(
            "Each configuration's V effect (V = 128 minus V = 8 over its matched pairs, \
             pp) against the share of its V = 128 pair episodes truncated at the cap \
             ({}), one dot per configuration (n = {}){statistics}.{paper_caption}",
            stratum.short(),
            points.len()
        ),
        svg: figures::scatter(
            &title,
            &points,
            &paper,
            "V = 128 episodes truncated at the cap",
            "V effect (pp)",
        )?,
    })
}

fn w_figure(stratum: &Stratum, points: &[Point], quoted: bool) -> Result<Figure, ReportError> {
    let title = format!("W effect against truncation, {}", stratum.short());
    // The paper places none of Figure 7's points in its text; the range of its
    // configurations' W effects is all it prints, without their truncation rates.
    let paper_caption = if quoted {
        format!(
            " The paper prints no point of its Figure 7 with its truncation rate; its \
             configurations' W effects range from {} to {} pp.",
            q::W_EFFECT_LOWEST.text(),
            q::W_EFFECT_HIGHEST.text()
        )
    } else {
        String::new()
    };
    Ok(Figure {
        file_name: format!("report-w-effect-truncation-{}.svg", stratum.slug()),
        caption: format!(
            "Each configuration's W effect (workflow high minus low, pp, from the \
             per-configuration contrasts) against the share of its V = 128 pair episodes \
             truncated at the cap ({}), one dot per configuration (n = {}). No \
             correlation is shown: the truncation analysis correlates the V effect \
             only.{paper_caption}",
            stratum.short(),
            points.len()
        ),
        svg: figures::scatter(
            &title,
            points,
            &[],
            "V = 128 episodes truncated at the cap",
            "W effect (pp)",
        )?,
    })
}
