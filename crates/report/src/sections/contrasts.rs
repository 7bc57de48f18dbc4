//! The contrasts section: the eight capacity contrasts with bootstrap intervals and
//! Holm p-values per cluster unit (unit and organization-equal weights), the exact
//! sign-flip tests, the per-configuration contrasts, and the contrast figure (the
//! paper's Figure 2a) — with the paper's published values beside ours, in columns and
//! figure marks labelled as the paper's.
//!
//! Owns: the layout of the `contrasts`, `contrasts_sign_flip` and
//! `contrasts_by_configuration` tables in the report, and which of their rows each of
//! the paper's contrast values ([`paper::contrasts`]) stands beside: the routed
//! lane's rows at the paper's frozen cap (and the fixed lane's V there).
//!
//! Invariants: contrasts, weightings and cluster units appear in the order the
//! analysis wrote them (the paper's order of the eight; the manifest's order of the
//! units), except that the family cluster — the paper's primary analysis — is put
//! first when present. The estimate column is the first cluster unit's: a contrast's
//! estimate does not depend on the resampled unit.
//!
//! Never: recomputes an estimate, interval or p-value.

use tbb_tables::analyses::contrasts::{
    ClusterUnit, ContrastsByConfigurationRow, ContrastsRow, ContrastsSignFlipRow, Weighting,
};

use super::super::document::{code, text, Align, Figure, Section, Table};
use super::super::figures::{self, Whisker, WhiskerSeries};
use super::super::format;
use super::super::paper::{self, Quote};
use super::super::ReportError;
use super::{absent, and_list, first_seen, rows, unit_plural, Stratum, Tables};

/// What the paper prints for one contrast of one stratum and weighting.
#[derive(Debug, Default)]
struct Published {
    /// The estimate with its family-cluster interval (or the estimate alone).
    estimate: Option<Quote>,
    /// Per cluster unit: the interval (with the estimate, for families) and Holm p.
    by_unit: Vec<(ClusterUnit, Option<Quote>, Option<Quote>)>,
    /// The exact sign-flip test over intents: p and Holm p.
    sign_flip: Option<(Quote, Quote)>,
}

/// Whether the paper's capacity values stand beside this stratum: the paper's main
/// runs are the routed lane (and its fixed-menu pair) at the frozen cap.
fn paper_stratum(stratum: &Stratum) -> bool {
    stratum.cap == paper::harness::completion_cap()
        && (stratum.lane == "routed" || stratum.lane == "fixed")
}

/// The paper's values for `contrast` (the analysis's name) in `stratum`.
fn published(stratum: &Stratum, weighting: Weighting, contrast: &str) -> Published {
    use paper::contrasts as q;
    use ClusterUnit::{Configuration, Family};
    if !paper_stratum(stratum) {
        return Published::default();
    }
    let routed = stratum.lane == "routed";
    match (weighting, contrast, routed) {
        (Weighting::Unit, "v", true) => Published {
            estimate: Some(q::V),
            by_unit: vec![
                (Family, Some(q::V), Some(q::V_HOLM)),
                (
                    Configuration,
                    Some(q::V_CONFIGURATIONS),
                    Some(q::V_CONFIGURATIONS_HOLM),
                ),
            ],
            sign_flip: None,
        },
        (Weighting::Unit, "v", false) => Published {
            estimate: Some(q::V_FIXED),
            by_unit: vec![(Family, Some(q::V_FIXED), None)],
            sign_flip: None,
        },
        (Weighting::Unit, "w", true) => Published {
            estimate: Some(q::W),
            by_unit: vec![
                (Family, Some(q::W), None),
                (
                    Configuration,
                    Some(q::W_CONFIGURATIONS),
                    Some(q::W_CONFIGURATIONS_HOLM),
                ),
            ],
            sign_flip: None,
        },
        (Weighting::Unit, "d_compact", true) => Published {
            estimate: Some(q::COMPACT),
            by_unit: vec![
                (Family, Some(q::COMPACT), Some(q::COMPACT_HOLM)),
                (
                    Configuration,
                    Some(q::COMPACT_CONFIGURATIONS),
                    Some(q::COMPACT_CONFIGURATIONS_HOLM),
                ),
            ],
            sign_flip: Some((q::COMPACT_SIGN_FLIP_P, q::COMPACT_SIGN_FLIP_HOLM)),
        },
        (Weighting::Unit, "v_x_w", true) => Published {
            estimate: Some(q::V_X_W),
            by_unit: vec![(Family, Some(q::V_X_W), Some(q::V_X_W_HOLM))],
            sign_flip: None,
        },
        (Weighting::OrganizationEqual, "v", true) => Published {
            estimate: Some(q::V_ORGANIZATION_EQUAL),
            ..Published::default()
        },
        (Weighting::OrganizationEqual, "w", true) => Published {
            estimate: Some(q::W_ORGANIZATION_EQUAL),
            ..Published::default()
        },
        (Weighting::OrganizationEqual, "d_compact", true) => Published {
            estimate: Some(q::COMPACT_ORGANIZATION_EQUAL),
            ..Published::default()
        },
        _ => Published::default(),
    }
}

/// A quote's text, or "—".
fn shown(q: Option<Quote>) -> String {
    q.map_or_else(|| format::MISSING.to_string(), |q| q.text())
}

/// One row of `contrasts` or `contrasts_sign_flip`, as the tables lay them out (the
/// latter has no interval: `low` and `high` are NaN, and `n_assignments` is set).
#[derive(Debug, Clone)]
struct TestRow {
    stratum: Stratum,
    weighting: Weighting,
    contrast: String,
    label: String,
    cluster_unit: ClusterUnit,
    n_clusters: u64,
    n_units: u64,
    estimate: f64,
    low: f64,
    high: f64,
    p: f64,
    p_floor: f64,
    p_holm: f64,
    draws: u64,
    seed: u64,
    n_assignments: u64,
}

fn bootstrap_rows(tables: &Tables) -> Result<Option<Vec<TestRow>>, ReportError> {
    Ok(rows::<ContrastsRow>(tables)?.map(|rows| {
        rows.into_iter()
            .map(|r| TestRow {
                stratum: Stratum::new(&r.lane, u64::from(r.completion_cap)),
                weighting: r.weighting,
                contrast: r.contrast,
                label: r.label,
                cluster_unit: r.cluster_unit,
                n_clusters: u64::from(r.n_clusters),
                n_units: u64::from(r.n_units),
                estimate: r.estimate_pp,
                low: r.ci_low_pp,
                high: r.ci_high_pp,
                p: r.p_value,
                p_floor: r.p_floor,
                p_holm: r.p_holm,
                draws: u64::from(r.draws),
                seed: r.seed,
                n_assignments: 0,
            })
            .collect()
    }))
}

fn sign_flip_rows(tables: &Tables) -> Result<Option<Vec<TestRow>>, ReportError> {
    Ok(rows::<ContrastsSignFlipRow>(tables)?.map(|rows| {
        rows.into_iter()
            .map(|r| TestRow {
                stratum: Stratum::new(&r.lane, u64::from(r.completion_cap)),
                weighting: r.weighting,
                // The sign-flip table has no label column; the bootstrap table's
                // label is looked up by contrast name when the table is laid out.
                label: r.contrast.clone(),
                contrast: r.contrast,
                cluster_unit: r.cluster_unit,
                n_clusters: u64::from(r.n_clusters),
                n_units: u64::from(r.n_units),
                estimate: r.estimate_pp,
                low: f64::NAN,
                high: f64::NAN,
                p: r.p_value,
                p_floor: r.p_floor,
                p_holm: r.p_holm,
                draws: 0,
                seed: 0,
                n_assignments: r.assignments,
            })
            .collect()
    }))
}

/// The rows of `contrasts_by_configuration`, if the study has it (the truncation
/// section plots the W effects from it).
pub(crate) fn configuration_rows(
    tables: &Tables,
) -> Result<Option<Vec<ContrastsByConfigurationRow>>, ReportError> {
    rows::<ContrastsByConfigurationRow>(tables)
}

/// The cluster units of `rows` in report order: family first, then as written.
fn cluster_units(rows: &[&TestRow]) -> Vec<ClusterUnit> {
    let mut units = first_seen(&rows.iter().map(|r| r.cluster_unit).collect::<Vec<_>>());
    if let Some(i) = units.iter().position(|u| *u == ClusterUnit::Family) {
        let family = units.remove(i);
        units.insert(0, family);
    }
    units
}

fn weighting_phrase(weighting: Weighting) -> &'static str {
    match weighting {
        Weighting::Unit => "each family × configuration unit weighted equally",
        Weighting::OrganizationEqual => {
            "each organization weighted equally, and each unit equally within it"
        }
    }
}

fn weighting_title(weighting: Weighting) -> &'static str {
    match weighting {
        Weighting::Unit => "unit weights",
        Weighting::OrganizationEqual => "organization-equal weights",
    }
}

/// Fills the section.
pub(crate) fn section(tables: &Tables, s: &mut Section) -> Result<(), ReportError> {
    let bootstrap = bootstrap_rows(tables)?;
    let sign_flip = sign_flip_rows(tables)?;
    let by_configuration = configuration_rows(tables)?;

    match &bootstrap {
        Some(rows) => {
            if let Some(first) = rows.first() {
                s.paragraph(vec![text(format!(
                    "Each contrast is a paired within-family difference in verified task \
                     success (VTS), in percentage points (pp), averaged over family × \
                     configuration units. Intervals are 95% percentile cluster bootstraps \
                     ({} draws, seed {}) resampling the cluster unit named in the column; \
                     Holm corrects the eight p-values of each cluster unit. A p-value at \
                     the bootstrap's floor (1 / draws) is shown as ≤ the floor: the true p \
                     may be smaller, and a Holm value computed from it is an upper bound.",
                    format::count(first.draws),
                    first.seed
                ))]);
            } else {
                s.note(vec![
                    text("The "),
                    code("contrasts"),
                    text(" table has no rows."),
                ]);
            }
        }
        None => s.note(absent(
            "Bootstrap intervals and the contrast figure",
            "contrasts",
            "contrasts",
        )),
    }

    let mut strata: Vec<Stratum> = Vec::new();
    for rows in [&bootstrap, &sign_flip].into_iter().flatten() {
        strata.extend(rows.iter().map(|r| r.stratum.clone()));
    }
    if let Some(rows) = &by_configuration {
        strata.extend(
            rows.iter()
                .map(|r| Stratum::new(&r.lane, u64::from(r.completion_cap))),
        );
    }
    strata.sort();
    strata.dedup();

    if !strata.is_empty() {
        s.paragraph(vec![text(format!(
            "The paper's values (columns and figure marks labelled \"paper\") are its \
             own panel's, for the routed menu at its frozen cap of {} tokens (and V for the \
             fixed menu there); a stratum at another lane or cap has no paper \
             counterpart. The paper prints no number for linked − raw or typed − raw \
             (\"no detectable effect\"), nor for V × D and W × D, and no per-intent \
             interval.",
            paper::harness::COMPLETION_CAP.text()
        ))]);
    }
    for stratum in &strata {
        s.heading(stratum.title());
        let labels = labels_of(bootstrap.as_deref(), by_configuration.as_deref());
        if let Some(rows) = &bootstrap {
            let mine: Vec<&TestRow> = rows.iter().filter(|r| &r.stratum == stratum).collect();
            let weightings = first_seen(&mine.iter().map(|r| r.weighting).collect::<Vec<_>>());
            for &weighting in &weightings {
                let rows: Vec<&TestRow> = mine
                    .iter()
                    .copied()
                    .filter(|r| r.weighting == weighting)
                    .collect();
                s.table(bootstrap_table(stratum, weighting, &rows));
                if weighting == Weighting::Unit || weightings.len() == 1 {
                    s.figure(contrast_figure(stratum, weighting, &rows)?);
                }
            }
        }
        match &sign_flip {
            Some(rows) => {
                let mine: Vec<&TestRow> = rows.iter().filter(|r| &r.stratum == stratum).collect();
                let weightings = first_seen(&mine.iter().map(|r| r.weighting).collect::<Vec<_>>());
                for &weighting in &weightings {
                    let rows: Vec<&TestRow> = mine
                        .iter()
                        .copied()
                        .filter(|r| r.weighting == weighting)
                        .collect();
                    s.table(sign_flip_table(stratum, weighting, &rows, &labels));
                }
            }
            None => s.note(absent(
                "Exact sign-flip tests",
                "contrasts_sign_flip",
                "contrasts",
            )),
        }
        match &by_configuration {
            Some(rows) => {
                let mine: Vec<&ContrastsByConfigurationRow> = rows
                    .iter()
                    .filter(|r| &Stratum::new(&r.lane, u64::from(r.completion_cap)) == stratum)
                    .collect();
                s.table(configuration_table(stratum, &mine));
            }
            None => s.note(absent(
                "Per-configuration contrasts",
                "contrasts_by_configuration",
                "contrasts",
            )),
        }
    }
    Ok(())
}

/// Contrast name → label, from whichever table has labels.
fn labels_of(
    bootstrap: Option<&[TestRow]>,
    by_configuration: Option<&[ContrastsByConfigurationRow]>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let pairs = bootstrap
        .into_iter()
        .flatten()
        .map(|r| (&r.contrast, &r.label))
        .chain(
            by_configuration
                .into_iter()
                .flatten()
                .map(|r| (&r.contrast, &r.label)),
        );
    for (name, label) in pairs {
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.clone(), label.clone()));
        }
    }
    out
}

fn label_for(labels: &[(String, String)], contrast: &str) -> String {
    labels
        .iter()
        .find(|(n, _)| n == contrast)
        .map_or_else(|| contrast.to_string(), |(_, l)| l.clone())
}

fn bootstrap_table(stratum: &Stratum, weighting: Weighting, rows: &[&TestRow]) -> Table {
    let units = cluster_units(rows);
    let n_units = rows.first().map_or(0, |r| r.n_units);
    let mut t = Table::new(
        format!(
            "The contrasts, {}, {} ({} units): estimate, 95% interval and Holm p by \
             resampled cluster unit.",
            stratum.short(),
            weighting_phrase(weighting),
            format::count(n_units)
        ),
        &[("Contrast", Align::Left), ("Estimate (pp)", Align::Right)],
    );
    for unit in &units {
        let n = rows
            .iter()
            .find(|r| r.cluster_unit == *unit)
            .map_or(0, |r| r.n_clusters);
        t.push_column(
            format!(
                "95% CI, {} ({})",
                unit_plural(unit.name()),
                format::count(n)
            ),
            Align::Right,
        );
        t.push_column(
            format!("Holm p, {}", unit_plural(unit.name())),
            Align::Right,
        );
    }
    let contrasts = first_seen(&rows.iter().map(|r| r.contrast.clone()).collect::<Vec<_>>());
    let published: Vec<Published> = contrasts
        .iter()
        .map(|c| published(stratum, weighting, c))
        .collect();
    // The paper's columns: its estimate when it prints no interval with it, else one
    // pair (interval, Holm p) per cluster unit of ours it prints one for.
    let any_interval = published.iter().any(|p| !p.by_unit.is_empty());
    let any_estimate = published.iter().any(|p| p.estimate.is_some());
    let paper_units: Vec<ClusterUnit> = units
        .iter()
        .copied()
        .filter(|u| {
            published
                .iter()
                .any(|p| p.by_unit.iter().any(|b| b.0 == *u))
        })
        .collect();
    if any_estimate && !any_interval {
        t.push_column("Paper estimate", Align::Right);
    }
    // One column per unit, the interval and its Holm p together: a column each made the
    // table wider than the report's column (CI's check_report.py measures it).
    for unit in &paper_units {
        let what = if *unit == ClusterUnit::Family {
            "estimate [95% CI]"
        } else {
            "95% CI"
        };
        t.push_column(
            format!("Paper {what}; Holm p, {}", unit_plural(unit.name())),
            Align::Right,
        );
    }
    for (contrast, published) in contrasts.iter().zip(&published) {
        let of: Vec<&&TestRow> = rows.iter().filter(|r| &r.contrast == contrast).collect();
        let Some(first) = of.first() else { continue };
        let mut cells = vec![first.label.clone(), format::effect_pp(first.estimate)];
        for unit in &units {
            match of.iter().find(|r| r.cluster_unit == *unit) {
                Some(r) => {
                    cells.push(format::interval_pp(r.low, r.high));
                    // Holm p is floored through its raw p: see the section preamble.
                    cells.push(if format::at_floor(r.p, r.p_floor) {
                        format!("≤{}", format::plain_p(r.p_holm))
                    } else {
                        format::plain_p(r.p_holm)
                    });
                }
                None => cells.extend([format::MISSING.to_string(), format::MISSING.into()]),
            }
        }
        if any_estimate && !any_interval {
            cells.push(shown(published.estimate));
        }
        for unit in &paper_units {
            let (interval, holm) = published
                .by_unit
                .iter()
                .find(|b| b.0 == *unit)
                .map_or((None, None), |b| (b.1, b.2));
            cells.push(match (interval, holm) {
                (None, None) => format::MISSING.to_string(),
                (Some(i), None) => i.text(),
                (None, Some(p)) => format!("p {}", p.text()),
                (Some(i), Some(p)) => format!("{}; p {}", i.text(), p.text()),
            });
        }
        t.push(cells);
    }
    t
}

fn contrast_figure(
    stratum: &Stratum,
    weighting: Weighting,
    rows: &[&TestRow],
) -> Result<Figure, ReportError> {
    let units = cluster_units(rows);
    let contrasts = first_seen(&rows.iter().map(|r| r.contrast.clone()).collect::<Vec<_>>());
    let labels: Vec<String> = contrasts
        .iter()
        .map(|c| {
            rows.iter()
                .find(|r| &r.contrast == c)
                .map_or_else(|| c.clone(), |r| r.label.clone())
        })
        .collect();
    let series: Vec<WhiskerSeries> = units
        .iter()
        .map(|unit| {
            let n = rows
                .iter()
                .find(|r| r.cluster_unit == *unit)
                .map_or(0, |r| r.n_clusters);
            WhiskerSeries {
                name: format!("{} (n = {})", unit_plural(unit.name()), format::count(n)),
                values: contrasts
                    .iter()
                    .map(|c| {
                        rows.iter()
                            .find(|r| &r.contrast == c && r.cluster_unit == *unit)
                            .map(|r| Whisker {
                                estimate: r.estimate,
                                low: r.low,
                                high: r.high,
                            })
                    })
                    .collect(),
            }
        })
        .collect();
    // The paper's points: its family-cluster estimates and intervals (Figure 2a).
    let paper_points: Vec<Option<Whisker>> = contrasts
        .iter()
        .map(|c| {
            published(stratum, weighting, c)
                .estimate
                .and_then(|q| q.whisker())
        })
        .collect();
    let marked = paper_points.iter().flatten().count();
    let draws = rows.first().map_or(0, |r| r.draws);
    let resampling = and_list(
        &units
            .iter()
            .map(|u| unit_plural(u.name()))
            .collect::<Vec<_>>(),
    );
    let title = format!("Capacity contrasts, {}", stratum.short());
    Ok(Figure {
        file_name: format!("report-contrasts-{}.svg", stratum.slug()),
        caption: format!(
            "The contrasts ({}, {}): estimate (dot) and 95% percentile cluster-bootstrap \
             interval (whisker), {} draws, resampling {} — one whisker per cluster unit, \
             the first (top of each row, thicker) the primary analysis. {}The grey line \
             marks no effect.",
            stratum.short(),
            weighting_title(weighting),
            format::count(draws),
            resampling,
            if marked > 0 {
                format!(
                    "The black diamonds (legend \"paper\") are the paper's published \
                     points for {marked} of the contrasts, with its family-cluster \
                     interval where it prints one (its Figure 2a). "
                )
            } else {
                String::new()
            }
        ),
        svg: figures::dot_whisker(
            &title,
            &labels,
            &series,
            &[paper_points],
            "difference in VTS (pp)",
        )?,
    })
}

fn sign_flip_table(
    stratum: &Stratum,
    weighting: Weighting,
    rows: &[&TestRow],
    labels: &[(String, String)],
) -> Table {
    let units = cluster_units(rows);
    let mut t = Table::new(
        format!(
            "Exact sign-flip tests over clusters (every assignment of signs to the \
             clusters' summed differences), {}, {}. The smallest attainable p is \
             2 / assignments; Holm corrects the contrasts of each cluster unit.",
            stratum.short(),
            weighting_title(weighting)
        ),
        &[("Contrast", Align::Left), ("Estimate (pp)", Align::Right)],
    );
    for unit in &units {
        let (n, assignments) = rows
            .iter()
            .find(|r| r.cluster_unit == *unit)
            .map_or((0, 0), |r| (r.n_clusters, r.n_assignments));
        t.push_column(
            format!(
                "p, {} ({}; {} assignments)",
                unit_plural(unit.name()),
                format::count(n),
                format::count(assignments)
            ),
            Align::Right,
        );
        t.push_column(
            format!("Holm p, {}", unit_plural(unit.name())),
            Align::Right,
        );
    }
    let contrasts = first_seen(&rows.iter().map(|r| r.contrast.clone()).collect::<Vec<_>>());
    let published: Vec<Option<(Quote, Quote)>> = contrasts
        .iter()
        .map(|c| published(stratum, weighting, c).sign_flip)
        .collect();
    // The paper's sign-flip test is over its 12 intents.
    let paper_columns =
        units.contains(&ClusterUnit::Intent) && published.iter().any(Option::is_some);
    if paper_columns {
        t.push_column("Paper p, intents", Align::Right);
        t.push_column("Paper Holm p, intents", Align::Right);
    }
    for (contrast, published) in contrasts.iter().zip(&published) {
        let of: Vec<&&TestRow> = rows.iter().filter(|r| &r.contrast == contrast).collect();
        let Some(first) = of.first() else { continue };
        let mut cells = vec![
            label_for(labels, contrast),
            format::effect_pp(first.estimate),
        ];
        for unit in &units {
            match of.iter().find(|r| r.cluster_unit == *unit) {
                Some(r) => {
                    cells.push(format::p_value(r.p, r.p_floor));
                    cells.push(format::plain_p(r.p_holm));
                }
                None => cells.extend([format::MISSING.to_string(), format::MISSING.into()]),
            }
        }
        if paper_columns {
            cells.push(shown(published.map(|p| p.0)));
            cells.push(shown(published.map(|p| p.1)));
        }
        t.push(cells);
    }
    t
}

fn configuration_table(stratum: &Stratum, rows: &[&ContrastsByConfigurationRow]) -> Table {
    let contrasts = first_seen(&rows.iter().map(|r| r.contrast.clone()).collect::<Vec<_>>());
    let mut t = Table::new(
        format!(
            "Each configuration's contrasts over its families, {}: estimate (pp) and \
             95% family-bootstrap interval, unadjusted. The paper's configurations are \
             other ones, so no paper value stands beside these rows.",
            stratum.short()
        ),
        &[
            ("Configuration", Align::Left),
            ("Organization", Align::Left),
        ],
    );
    for c in &contrasts {
        let label = rows
            .iter()
            .find(|r| &r.contrast == c)
            .map_or_else(|| c.clone(), |r| r.label.clone());
        t.push_column(label, Align::Right);
    }
    let configurations = first_seen(
        &rows
            .iter()
            .map(|r| r.configuration.clone())
            .collect::<Vec<_>>(),
    );
    for configuration in configurations {
        let of: Vec<&&ContrastsByConfigurationRow> = rows
            .iter()
            .filter(|r| r.configuration == configuration)
            .collect();
        let organization = of
            .first()
            .map_or_else(String::new, |r| r.organization.clone());
        let mut cells = vec![configuration.clone(), organization];
        for c in &contrasts {
            cells.push(of.iter().find(|r| &r.contrast == c).map_or_else(
                || format::MISSING.to_string(),
                |r| format::effect_with_interval(r.estimate_pp, r.ci_low_pp, r.ci_high_pp),
            ));
        }
        t.push(cells);
    }
    t
}
