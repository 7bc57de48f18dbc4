//! The capacity design: its twelve cells, the paper's eight contrasts with their
//! weights (Appendix D), and the paired units the contrasts average.
//!
//! Owns: which episode rows belong to the capacity analysis, how they group into
//! strata and units, the per-unit cell means, the per-unit contrast values in
//! percentage points, and the matched V = 8 / V = 128 episode pairs of Section 4.2.
//!
//! # Cells
//! The eight endpoint cells {V 8, 128} × {W low, high} × {D raw, linked} at R low, in
//! [`CELLS`] order (V slowest, D fastest), then the four checkpoints (32, low, raw),
//! (8, medium, raw), (8, low, compact), (8, low, typed). A row belongs to a cell when
//! its `v`, `w`, `d` match, its `r` is `low` and it has no frontier depth; rows of
//! other cells (discovery, frontier, ...) are ignored.
//!
//! # Contrasts
//! For an endpoint cell `c` with mean success `m_c`, `s_a(c)` is −1 at the low and +1
//! at the high level of axis `a` (V 8 → 128, W low → high, D raw → linked):
//! main effect `(1/4) Σ_c s_a(c) m_c` (the average of four paired differences),
//! pairwise interaction `(1/2) Σ_c s_a(c) s_b(c) m_c` (the average of two
//! differences-in-differences), and compact − raw and typed − raw with weight +1 at
//! their checkpoint and −1 at (8, low, raw). Values are in percentage points (×100).
//!
//! # Strata, units, repeats
//! The capacity analysis reads the no-repair rows (`repair = "none"`) only; repaired
//! arms belong to the repairs analysis. Rows are split into strata by menu lane and
//! completion cap, and every stratum is analysed on its own (the paper's primary
//! analysis is the routed lane at the frozen 1,024-token cap; the fixed lane gives the
//! "full menu kept visible" contrast). Within a stratum a *unit* is a family ×
//! configuration; a unit's cell mean averages its repeats (usually one), so every
//! unit counts once whatever its number of repeats. Matched V pairs instead pair
//! episodes repeat by repeat.
//!
//! Infrastructure failures are kept and count as failures ([`success`]).
//!
//! Invariants: results never depend on row order (everything is grouped through
//! sorted maps); a unit that lacks any of the twelve cells, or a V pair without its
//! partner, is an error naming what is missing, never silently dropped; two rows for
//! one condition (same unit, cell and repeat) are an error.
//!
//! Never: draws random numbers or computes intervals (that is [`crate::common::stats`]).

use std::collections::BTreeMap;

use crate::AnalysisError;
use crate::ClusterUnit;
use tbb_tables::levels::{Domain, Encoding, Menu, PromptVariant, Routing, Workflow};
use tbb_tables::rows::EpisodeRow;

/// The repair of the rows the capacity analysis reads (the base prompt, `none`).
pub const NO_REPAIR: PromptVariant = PromptVariant::Base;
/// The routing level of every capacity cell.
pub const CAPACITY_R: Routing = Routing::Low;
/// How many units or cells an error message lists before "and N more".
const LIST_AT_MOST: usize = 5;

/// A cell of the capacity design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DesignCell {
    /// Menu size.
    pub v: u32,
    /// Workflow level.
    pub w: Workflow,
    /// Encoding.
    pub d: Encoding,
}

impl DesignCell {
    const fn new(v: u32, w: Workflow, d: Encoding) -> DesignCell {
        DesignCell { v, w, d }
    }

    /// `(8, low, raw)`.
    pub fn label(&self) -> String {
        format!("({}, {}, {})", self.v, self.w, self.d)
    }
}

/// The baseline cell (8, low, raw).
pub const BASELINE: DesignCell = DesignCell::new(8, Workflow::Low, Encoding::Raw);

/// The twelve cells: the eight endpoints (V slowest, D fastest), then the four
/// checkpoints.
pub const CELLS: [DesignCell; 12] = [
    DesignCell::new(8, Workflow::Low, Encoding::Raw),
    DesignCell::new(8, Workflow::Low, Encoding::Linked),
    DesignCell::new(8, Workflow::High, Encoding::Raw),
    DesignCell::new(8, Workflow::High, Encoding::Linked),
    DesignCell::new(128, Workflow::Low, Encoding::Raw),
    DesignCell::new(128, Workflow::Low, Encoding::Linked),
    DesignCell::new(128, Workflow::High, Encoding::Raw),
    DesignCell::new(128, Workflow::High, Encoding::Linked),
    DesignCell::new(32, Workflow::Low, Encoding::Raw),
    DesignCell::new(8, Workflow::Medium, Encoding::Raw),
    DesignCell::new(8, Workflow::Low, Encoding::Compact),
    DesignCell::new(8, Workflow::Low, Encoding::Typed),
];

/// Number of endpoint cells (the first entries of [`CELLS`]).
pub const N_ENDPOINTS: usize = 8;

/// The index in [`CELLS`] of a row's cell, if it is a capacity cell.
pub fn cell_index(row: &EpisodeRow) -> Option<usize> {
    if row.r != CAPACITY_R || row.depth.is_some() {
        return None;
    }
    CELLS
        .iter()
        .position(|c| c.v == row.v && c.w == row.w && c.d == row.d)
}

/// Whether the episode succeeded: VTS, with infrastructure failures counted as
/// failures.
pub fn success(row: &EpisodeRow) -> bool {
    row.vts && !row.infra_failure
}

/// The three axes of the endpoint cube.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Axis {
    V,
    W,
    D,
}

/// `s_a(c)` for endpoint index `i` (bit 2: V, bit 1: W, bit 0: D).
fn sign(axis: Axis, i: usize) -> f64 {
    let bit = match axis {
        Axis::V => 2,
        Axis::W => 1,
        Axis::D => 0,
    };
    if (i >> bit) & 1 == 1 {
        1.0
    } else {
        -1.0
    }
}

/// The eight contrasts of the capacity factorial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Contrast {
    /// Visible menu, 128 minus 8.
    V,
    /// Workflow, high minus low.
    W,
    /// Encoding, linked minus raw.
    DLinked,
    /// V × W interaction.
    VxW,
    /// V × D interaction.
    VxD,
    /// W × D interaction.
    WxD,
    /// Compact minus raw at (8, low).
    DCompact,
    /// Typed minus raw at (8, low).
    DTyped,
}

impl Contrast {
    /// The eight, in the paper's order.
    pub const ALL: [Contrast; 8] = [
        Contrast::V,
        Contrast::W,
        Contrast::DLinked,
        Contrast::VxW,
        Contrast::VxD,
        Contrast::WxD,
        Contrast::DCompact,
        Contrast::DTyped,
    ];

    /// The name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Contrast::V => "v",
            Contrast::W => "w",
            Contrast::DLinked => "d_linked",
            Contrast::VxW => "v_x_w",
            Contrast::VxD => "v_x_d",
            Contrast::WxD => "w_x_d",
            Contrast::DCompact => "d_compact",
            Contrast::DTyped => "d_typed",
        }
    }

    /// A readable label for reports.
    pub fn label(self) -> &'static str {
        match self {
            Contrast::V => "visible menu (V 128 − 8)",
            Contrast::W => "workflow (W high − low)",
            Contrast::DLinked => "linked − raw encoding",
            Contrast::VxW => "V × W",
            Contrast::VxD => "V × D",
            Contrast::WxD => "W × D",
            Contrast::DCompact => "compact − raw at (8, low)",
            Contrast::DTyped => "typed − raw at (8, low)",
        }
    }

    /// Its weight on each of the twelve [`CELLS`].
    pub fn weights(self) -> [f64; 12] {
        let mut w = [0.0; 12];
        let main = |axis: Axis, w: &mut [f64; 12]| {
            for (i, x) in w.iter_mut().enumerate().take(N_ENDPOINTS) {
                *x = sign(axis, i) / 4.0;
            }
        };
        let interaction = |a: Axis, b: Axis, w: &mut [f64; 12]| {
            for (i, x) in w.iter_mut().enumerate().take(N_ENDPOINTS) {
                *x = sign(a, i) * sign(b, i) / 2.0;
            }
        };
        let checkpoint = |cell: DesignCell, w: &mut [f64; 12]| {
            for (i, c) in CELLS.iter().enumerate() {
                if *c == cell {
                    w[i] = 1.0;
                } else if *c == BASELINE {
                    w[i] = -1.0;
                }
            }
        };
        match self {
            Contrast::V => main(Axis::V, &mut w),
            Contrast::W => main(Axis::W, &mut w),
            Contrast::DLinked => main(Axis::D, &mut w),
            Contrast::VxW => interaction(Axis::V, Axis::W, &mut w),
            Contrast::VxD => interaction(Axis::V, Axis::D, &mut w),
            Contrast::WxD => interaction(Axis::W, Axis::D, &mut w),
            Contrast::DCompact => checkpoint(CELLS[10], &mut w),
            Contrast::DTyped => checkpoint(CELLS[11], &mut w),
        }
        w
    }
}

/// A stratum of the capacity analysis: one menu lane at one completion cap. Strata
/// sort by the lane's name (`fixed` before `routed`), then the cap, as the tables list
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Stratum {
    /// Menu lane.
    pub lane: Menu,
    /// Completion cap per request.
    pub completion_cap: u32,
}

impl Ord for Stratum {
    fn cmp(&self, other: &Stratum) -> std::cmp::Ordering {
        (self.lane.name(), self.completion_cap).cmp(&(other.lane.name(), other.completion_cap))
    }
}

impl PartialOrd for Stratum {
    fn partial_cmp(&self, other: &Stratum) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The capacity rows of each stratum, each with its index in [`CELLS`]: no-repair
/// rows of capacity cells only. Strata come out sorted (lane, then cap).
pub fn capacity_rows(rows: &[EpisodeRow]) -> BTreeMap<Stratum, Vec<(&EpisodeRow, usize)>> {
    let mut by_key: BTreeMap<(Menu, u32), Vec<(&EpisodeRow, usize)>> = BTreeMap::new();
    for row in rows {
        if row.repair != NO_REPAIR {
            continue;
        }
        if let Some(cell) = cell_index(row) {
            by_key
                .entry((row.lane, row.completion_cap))
                .or_default()
                .push((row, cell));
        }
    }
    // Sorted again, by the lane's name.
    by_key
        .into_iter()
        .map(|((lane, completion_cap), rows)| {
            (
                Stratum {
                    lane,
                    completion_cap,
                },
                rows,
            )
        })
        .collect()
}

/// A family × configuration unit, with the coarser groups it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Unit {
    /// Family.
    pub family: String,
    /// Its intent.
    pub intent: String,
    /// Its record domain.
    pub domain: Domain,
    /// Configuration.
    pub configuration: String,
    /// Its organization.
    pub organization: String,
}

impl Unit {
    /// The unit of a row.
    pub fn of(row: &EpisodeRow) -> Unit {
        Unit {
            family: row.family.to_string(),
            intent: row.intent.to_string(),
            domain: row.domain,
            configuration: row.configuration.to_string(),
            organization: row.organization.to_string(),
        }
    }

    /// The unit's cluster under `unit`.
    pub fn cluster(&self, unit: ClusterUnit) -> &str {
        match unit {
            ClusterUnit::Family => &self.family,
            ClusterUnit::Intent => &self.intent,
            ClusterUnit::Domain => self.domain.name(),
            ClusterUnit::Configuration => &self.configuration,
            ClusterUnit::Organization => &self.organization,
        }
    }
}

/// The distinct family and configuration names of some rows, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names<'a> {
    /// Families.
    pub families: Vec<&'a str>,
    /// Configurations.
    pub configurations: Vec<&'a str>,
}

/// Checks that every family keeps one intent and domain and every configuration one
/// organization across `rows`, and returns the sorted names.
pub fn check_groups<'a>(
    analysis: &'static str,
    rows: impl IntoIterator<Item = &'a EpisodeRow>,
) -> Result<Names<'a>, AnalysisError> {
    let mut families: BTreeMap<&str, (&str, Domain)> = BTreeMap::new();
    let mut configurations: BTreeMap<&str, &str> = BTreeMap::new();
    // Rows usually come grouped: a row like the previous one needs no lookup.
    let mut previous: Option<&EpisodeRow> = None;
    for row in rows {
        if let Some(p) = previous {
            if p.family == row.family
                && p.intent == row.intent
                && p.domain == row.domain
                && p.configuration == row.configuration
                && p.organization == row.organization
            {
                continue;
            }
        }
        previous = Some(row);
        let seen = *families
            .entry(&row.family)
            .or_insert((&row.intent, row.domain));
        if seen != (row.intent.as_str(), row.domain) {
            return Err(AnalysisError::Inconsistent {
                analysis,
                detail: format!(
                    "family {} appears with intent/domain {}/{} and {}/{}",
                    row.family, seen.0, seen.1, row.intent, row.domain
                ),
            });
        }
        let org = *configurations
            .entry(&row.configuration)
            .or_insert(&row.organization);
        if org != row.organization {
            return Err(AnalysisError::Inconsistent {
                analysis,
                detail: format!(
                    "configuration {} appears under organizations {} and {}",
                    row.configuration, org, row.organization
                ),
            });
        }
    }
    Ok(Names {
        families: families.into_keys().collect(),
        configurations: configurations.into_keys().collect(),
    })
}

/// Mean success of every unit in every cell of one stratum.
#[derive(Debug, Clone, PartialEq)]
pub struct CellMeans {
    /// The stratum.
    pub stratum: Stratum,
    /// Units, sorted by (family, configuration).
    pub units: Vec<Unit>,
    /// `means[u][c]`: unit `u`'s mean success over its repeats in [`CELLS`]`[c]`.
    pub means: Vec<[f64; 12]>,
}

impl CellMeans {
    /// Each unit's value of `contrast`, in percentage points, in unit order.
    pub fn unit_differences(&self, contrast: Contrast) -> Vec<f64> {
        let w = contrast.weights();
        self.means
            .iter()
            .map(|m| 100.0 * m.iter().zip(&w).map(|(m, w)| m * w).sum::<f64>())
            .collect()
    }

    /// The unit indices of each configuration, configurations sorted.
    pub fn by_configuration(&self) -> BTreeMap<&str, Vec<usize>> {
        let mut out: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, u) in self.units.iter().enumerate() {
            out.entry(u.configuration.as_str()).or_default().push(i);
        }
        out
    }
}

/// Lists at most [`LIST_AT_MOST`] items and how many more there are.
fn list(items: &[String]) -> String {
    let shown = items
        .iter()
        .take(LIST_AT_MOST)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if items.len() > LIST_AT_MOST {
        format!("{shown}; and {} more", items.len() - LIST_AT_MOST)
    } else {
        shown
    }
}

/// The cell means of one stratum's rows (as from [`capacity_rows`]). Every unit must
/// have every one of the twelve cells.
pub fn cell_means(
    analysis: &'static str,
    stratum: &Stratum,
    rows: &[(&EpisodeRow, usize)],
) -> Result<CellMeans, AnalysisError> {
    let Names {
        families,
        configurations,
    } = check_groups(analysis, rows.iter().map(|(r, _)| *r))?;
    if rows.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis,
            detail: format!(
                "no capacity-cell episodes in lane {} at cap {}",
                stratum.lane, stratum.completion_cap
            ),
        });
    }
    // Names interned in sorted order, so a unit is (family id, configuration id) and
    // units sort by (family, configuration).
    let id = |names: &[&str], name: &str| names.binary_search(&name).unwrap_or(0);
    // (unit id, cell, repeat, row index), sorted: duplicates become neighbours.
    let mut runs: Vec<(usize, usize, u32, usize)> = Vec::with_capacity(rows.len());
    let mut previous: Option<(&EpisodeRow, usize)> = None;
    for (i, &(row, cell)) in rows.iter().enumerate() {
        let unit = match previous {
            Some((p, unit)) if p.family == row.family && p.configuration == row.configuration => {
                unit
            }
            _ => {
                id(&families, &row.family) * configurations.len()
                    + id(&configurations, &row.configuration)
            }
        };
        previous = Some((row, unit));
        runs.push((unit, cell, row.repeat, i));
    }
    runs.sort_unstable();
    if let Some(w) = runs
        .windows(2)
        .find(|w| w[0].0 == w[1].0 && w[0].1 == w[1].1 && w[0].2 == w[1].2)
    {
        let row = rows[w[1].3].0;
        return Err(AnalysisError::Inconsistent {
            analysis,
            detail: format!(
                "two episodes for family {} × configuration {} at cell {}, repeat {} \
                 (lane {}, cap {})",
                row.family,
                row.configuration,
                CELLS[w[1].1].label(),
                row.repeat,
                stratum.lane,
                stratum.completion_cap
            ),
        });
    }
    let mut missing: Vec<String> = Vec::new();
    let mut units = Vec::new();
    let mut means = Vec::new();
    for group in runs.chunk_by(|a, b| a.0 == b.0) {
        let mut wins = [0u32; 12];
        let mut count = [0u32; 12];
        for &(_, cell, _, i) in group {
            count[cell] += 1;
            wins[cell] += u32::from(success(rows[i].0));
        }
        let first = rows[group[0].3].0;
        let mut m = [0.0; 12];
        for c in 0..12 {
            if count[c] == 0 {
                missing.push(format!(
                    "{} × {} at {}",
                    first.family,
                    first.configuration,
                    CELLS[c].label()
                ));
            } else {
                m[c] = f64::from(wins[c]) / f64::from(count[c]);
            }
        }
        units.push(Unit::of(first));
        means.push(m);
    }
    if !missing.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis,
            detail: format!(
                "{} unit-cells of the capacity design are missing in lane {} at cap {}: {}",
                missing.len(),
                stratum.lane,
                stratum.completion_cap,
                list(&missing)
            ),
        });
    }
    Ok(CellMeans {
        stratum: stratum.clone(),
        units,
        means,
    })
}

/// A matched pair: the same family, configuration, W, D and repeat at V = 8 and at
/// V = 128 (an endpoint W × D cell), in one stratum.
#[derive(Debug, Clone, Copy)]
pub struct VPair<'a> {
    /// The V = 8 episode.
    pub small: &'a EpisodeRow,
    /// The V = 128 episode.
    pub large: &'a EpisodeRow,
}

impl VPair<'_> {
    /// Success at V = 8.
    pub fn y_small(&self) -> bool {
        success(self.small)
    }

    /// Success at V = 128.
    pub fn y_large(&self) -> bool {
        success(self.large)
    }

    /// Whether the V = 8 episode failed at the cap (a truncated failure).
    pub fn free_small(&self) -> bool {
        self.small.truncated && !success(self.small)
    }

    /// Whether the V = 128 episode failed at the cap (a truncated failure).
    pub fn free_large(&self) -> bool {
        self.large.truncated && !success(self.large)
    }
}

/// The matched V pairs of one stratum's rows, sorted by (configuration, family, W, D,
/// repeat). Every endpoint episode must have its partner.
pub fn v_pairs<'a>(
    analysis: &'static str,
    stratum: &Stratum,
    rows: &[(&'a EpisodeRow, usize)],
) -> Result<Vec<VPair<'a>>, AnalysisError> {
    check_groups(analysis, rows.iter().map(|(r, _)| *r))?;
    type Key<'k> = (&'k str, &'k str, &'k str, &'k str, u32);
    let mut slots: BTreeMap<Key<'a>, [Option<&'a EpisodeRow>; 2]> = BTreeMap::new();
    for &(row, cell) in rows {
        if cell >= N_ENDPOINTS {
            continue;
        }
        let side = usize::from(CELLS[cell].v != 8);
        let slot = slots
            // The levels' names, not the levels: the pairs come out in the order
            // they always did (by name).
            .entry((
                &row.configuration,
                &row.family,
                row.w.name(),
                row.d.name(),
                row.repeat,
            ))
            .or_default();
        if slot[side].replace(row).is_some() {
            return Err(AnalysisError::Inconsistent {
                analysis,
                detail: format!(
                    "two episodes for family {} × configuration {} at {}, repeat {} \
                     (lane {}, cap {})",
                    row.family,
                    row.configuration,
                    CELLS[cell].label(),
                    row.repeat,
                    stratum.lane,
                    stratum.completion_cap
                ),
            });
        }
    }
    let mut pairs = Vec::with_capacity(slots.len());
    let mut missing = Vec::new();
    for ((configuration, family, w, d, repeat), slot) in &slots {
        match slot {
            [Some(small), Some(large)] => pairs.push(VPair { small, large }),
            [Some(_), None] | [None, Some(_)] => {
                let lacking = if slot[0].is_none() { 8 } else { 128 };
                missing.push(format!(
                    "{family} × {configuration} at ({lacking}, {w}, {d}), repeat {repeat}"
                ));
            }
            [None, None] => {}
        }
    }
    if !missing.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis,
            detail: format!(
                "{} matched V = 8 / V = 128 episodes are missing their partner in lane {} \
                 at cap {}: {}",
                missing.len(),
                stratum.lane,
                stratum.completion_cap,
                list(&missing)
            ),
        });
    }
    if pairs.is_empty() {
        return Err(AnalysisError::MissingData {
            analysis,
            detail: format!(
                "no V = 8 / V = 128 endpoint episodes in lane {} at cap {}",
                stratum.lane, stratum.completion_cap
            ),
        });
    }
    Ok(pairs)
}

// The report crate's tests render sections from these panels (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod testing {
    #![cfg_attr(not(test), allow(dead_code, unused_imports))]
    //! Episode rows for the analysis tests.
    use tbb_tables::levels::{Actor, Delivery, Domain, Menu, PromptVariant, Routing, StopReason};
    use tbb_tables::rows::EpisodeRow;
    use tbb_tables::HexKey;

    /// A capacity row with everything but the fields tests vary set to defaults.
    #[allow(clippy::too_many_arguments)]
    pub fn row(
        configuration: &str,
        organization: &str,
        family: &str,
        intent: &str,
        v: u32,
        w: &str,
        d: &str,
        vts: bool,
    ) -> EpisodeRow {
        EpisodeRow {
            study: "test".into(),
            configuration: configuration.into(),
            organization: organization.into(),
            model: "m".into(),
            route: "sim".into(),
            quantization: None,
            reasoning_effort: None,
            lane: Menu::Routed,
            repair: PromptVariant::Base,
            block: "main".into(),
            arm: "routed".into(),
            delivery: Delivery::Native,
            actor: Actor::Model,
            schedule: "routed".into(),
            schedule_position: None,
            completion_cap: 1024,
            repeat: 0,
            variant_id: format!("{family}-{v}-{w}-{d}").into(),
            family: family.into(),
            intent: intent.into(),
            domain: Domain::Accounting,
            v,
            w: w.parse().unwrap_or_else(|e| panic!("{e}")),
            d: d.parse().unwrap_or_else(|e| panic!("{e}")),
            r: Routing::Low,
            depth: None,
            vts,
            ok: [vts; 9],
            first_unmet: None,
            terminal_flag: None,
            truncated: false,
            truncated_before_first_call: false,
            calls: 3,
            calls_by_controller: 0,
            requests: 4,
            // The full menu, then three narrowed requests of min(v, 6) tools.
            schema_exposures: u64::from(v) + 3 * u64::from(v.min(6)),
            turns: 4,
            prompt_tokens: 1000,
            completion_tokens: 100,
            reasoning_tokens: 0,
            total_tokens: 1100,
            cost_usd: 0.001,
            wall_ms: 0,
            infra_failure: false,
            infra_error: None,
            infra_http_status: None,
            infra_attempts: None,
            sent_temperature: Some(0.0),
            sent_seed: Some(1),
            sent_parallel_tool_calls: Some(false),
            stop_reason: StopReason::Answer,
            episode_key: HexKey::from([0; 32]),
            transcript_ref: "".into(),
            node_key: "".into(),
            attempt: 1,
        }
    }

    /// All twelve cells of one unit, success decided by `f(cell index)`.
    pub fn unit(
        configuration: &str,
        organization: &str,
        family: &str,
        intent: &str,
        f: impl Fn(usize) -> bool,
    ) -> Vec<EpisodeRow> {
        super::CELLS
            .iter()
            .enumerate()
            .map(|(i, c)| {
                row(
                    configuration,
                    organization,
                    family,
                    intent,
                    c.v,
                    c.w.name(),
                    c.d.name(),
                    f(i),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{row, unit};
    use super::*;

    fn means_of(rows: &[EpisodeRow]) -> CellMeans {
        let strata = capacity_rows(rows);
        let (stratum, rows) = strata.iter().next().unwrap_or_else(|| panic!("no rows"));
        cell_means("test", stratum, rows).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn contrast_weights_are_the_papers() {
        // Main effects: ±1/4 on the endpoints, nothing on the checkpoints.
        let v = Contrast::V.weights();
        assert_eq!(
            &v[..8],
            &[-0.25, -0.25, -0.25, -0.25, 0.25, 0.25, 0.25, 0.25]
        );
        assert!(v[8..].iter().all(|&x| x == 0.0));
        let w = Contrast::W.weights();
        assert_eq!(
            &w[..8],
            &[-0.25, -0.25, 0.25, 0.25, -0.25, -0.25, 0.25, 0.25]
        );
        let d = Contrast::DLinked.weights();
        assert_eq!(
            &d[..8],
            &[-0.25, 0.25, -0.25, 0.25, -0.25, 0.25, -0.25, 0.25]
        );
        // V × W: +1/2 where V and W are both low or both high.
        let vw = Contrast::VxW.weights();
        assert_eq!(&vw[..8], &[0.5, 0.5, -0.5, -0.5, -0.5, -0.5, 0.5, 0.5]);
        // Compact: +1 at (8, low, compact), −1 at (8, low, raw).
        let c = Contrast::DCompact.weights();
        assert_eq!((c[10], c[0]), (1.0, -1.0));
        assert_eq!(c.iter().filter(|&&x| x != 0.0).count(), 2);
        let t = Contrast::DTyped.weights();
        assert_eq!((t[11], t[0]), (1.0, -1.0));
        // Every contrast sums to zero: a constant success rate has no effect.
        for contrast in Contrast::ALL {
            assert_eq!(contrast.weights().iter().sum::<f64>(), 0.0, "{contrast:?}");
        }
    }

    #[test]
    fn a_contrast_computed_by_hand() {
        // One unit: success everywhere except (128, high, raw), (128, high, linked)
        // and (8, low, compact).
        //   V:   V = 128 cells sum to 2, V = 8 cells to 4: (2 − 4) / 4 = −50 pp.
        //   W:   high cells sum to 2, low cells to 4: −50 pp.
        //   D:   linked and raw cells both sum to 3: 0.
        //   V×W: (1/2)[(m(8,low,·) + m(128,high,·)) − (m(8,high,·) + m(128,low,·))]
        //        = (1/2)[(2 + 0) − (2 + 2)] = −1: −100 pp.
        //   V×D, W×D: 0. Compact: 0 − 1 = −100 pp. Typed: 1 − 1 = 0.
        let rows = unit("c", "o", "f", "i", |i| !matches!(i, 6 | 7 | 10));
        let m = means_of(&rows);
        let got: Vec<f64> = Contrast::ALL
            .iter()
            .map(|&c| m.unit_differences(c)[0])
            .collect();
        assert_eq!(got, vec![-50.0, -50.0, 0.0, -100.0, 0.0, 0.0, -100.0, 0.0]);
    }

    #[test]
    fn repeats_are_averaged_within_a_unit_cell() {
        let mut rows = unit("c", "o", "f", "i", |_| true);
        let mut again = row("c", "o", "f", "i", 128, "low", "raw", false);
        again.repeat = 1;
        rows.push(again);
        let m = means_of(&rows);
        assert_eq!(m.means[0][4], 0.5);
        // V = 1/4 (0.5 − 1) -> −12.5 pp.
        assert_eq!(m.unit_differences(Contrast::V), vec![-12.5]);
    }

    #[test]
    fn infrastructure_failures_count_as_failures() {
        let mut rows = unit("c", "o", "f", "i", |_| true);
        rows[4].infra_failure = true;
        let m = means_of(&rows);
        assert_eq!(m.means[0][4], 0.0);
    }

    #[test]
    fn a_missing_cell_is_named() {
        let mut rows = unit("c", "o", "f", "i", |_| true);
        rows.retain(|r| !(r.v == 8 && r.d == Encoding::Typed));
        let strata = capacity_rows(&rows);
        let (stratum, rows) = strata.iter().next().unwrap_or_else(|| panic!("no rows"));
        let err = cell_means("contrasts", stratum, rows)
            .err()
            .map(|e| e.to_string());
        let err = err.unwrap_or_default();
        assert!(err.contains("f × c at (8, low, typed)"), "{err}");
    }

    #[test]
    fn duplicates_and_split_groups_are_errors() {
        let mut rows = unit("c", "o", "f", "i", |_| true);
        rows.push(rows[0].clone());
        let strata = capacity_rows(&rows);
        let (stratum, r) = strata.iter().next().unwrap_or_else(|| panic!("no rows"));
        assert!(matches!(
            cell_means("t", stratum, r),
            Err(AnalysisError::Inconsistent { .. })
        ));
        let mut rows = unit("c", "o", "f", "i", |_| true);
        rows.extend(unit("c", "other-org", "g", "i", |_| true));
        let strata = capacity_rows(&rows);
        let (stratum, r) = strata.iter().next().unwrap_or_else(|| panic!("no rows"));
        assert!(matches!(
            cell_means("t", stratum, r),
            Err(AnalysisError::Inconsistent { .. })
        ));
    }

    #[test]
    fn rows_outside_the_design_are_ignored_and_strata_split_by_lane_and_cap() {
        let mut rows = unit("c", "o", "f", "i", |_| true);
        let mut discovery = row("c", "o", "f", "i", 8, "low", "raw", false);
        discovery.r = Routing::High;
        let mut repaired = row("c", "o", "f", "i", 8, "low", "raw", false);
        repaired.repair = PromptVariant::Workflow;
        let mut off_design = row("c", "o", "f", "i", 32, "high", "linked", false);
        off_design.repeat = 5;
        rows.extend([discovery, repaired, off_design]);
        let mut fixed = unit("c", "o", "f", "i", |_| false);
        for r in &mut fixed {
            r.lane = Menu::Fixed;
        }
        rows.extend(fixed);
        let strata = capacity_rows(&rows);
        // By the lane's name: fixed before routed.
        let keys: Vec<(Menu, u32)> = strata.keys().map(|s| (s.lane, s.completion_cap)).collect();
        assert_eq!(keys, vec![(Menu::Fixed, 1024), (Menu::Routed, 1024)]);
        assert!(strata.values().all(|r| r.len() == 12));
    }

    #[test]
    fn v_pairs_match_on_family_configuration_w_d_and_repeat() {
        let rows = unit("c", "o", "f", "i", |i| i < 4);
        let strata = capacity_rows(&rows);
        let (stratum, r) = strata.iter().next().unwrap_or_else(|| panic!("no rows"));
        let pairs = v_pairs("t", stratum, r).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pairs.len(), 4);
        for p in &pairs {
            assert_eq!((p.small.v, p.large.v), (8, 128));
            assert_eq!((&p.small.w, &p.small.d), (&p.large.w, &p.large.d));
            assert!(p.y_small() && !p.y_large());
        }
        // A lone V = 128 episode is named.
        let mut rows = rows;
        let mut lone = row("c", "o", "f", "i", 128, "low", "raw", true);
        lone.repeat = 1;
        rows.push(lone);
        let strata = capacity_rows(&rows);
        let (stratum, r) = strata.iter().next().unwrap_or_else(|| panic!("no rows"));
        let err = v_pairs("t", stratum, r)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("f × c at (8, low, raw), repeat 1"), "{err}");
    }
}
