//! The statistics of the capacity analysis: the percentile cluster bootstrap of a
//! (weighted) mean, its centered two-sided p-value, Holm's correction, the exact
//! sign-flip test over clusters, Pearson's r, Spearman's ρ, and equal-group weights.
//!
//! Owns: every formula and every random draw the analyses make, and how a bootstrap's
//! random stream is derived from the manifest's seed.
//!
//! # The bootstrap
//! The statistic is a ratio of sums over units, `Σ w_u d_u / Σ w_u` (the plain mean
//! when every weight is 1; organization-equal when the weights come from
//! [`equal_group_weights`]). Units are grouped into clusters (families, intents,
//! configurations, ...). [`ClusterTotals`] precomputes each cluster's `Σ w d` and
//! `Σ w` once; a draw picks `n` cluster indices uniformly with replacement (`n` = the
//! number of clusters) and its estimate is `Σ sums[i] / Σ weights[i]` over the picked
//! indices. Weights stay those of the full sample (they are not recomputed within a
//! draw).
//!
//! * Indices: an [`IndexStream`] over `ChaCha8Rng::seed_from_u64(draw_seed)`: each
//!   64-bit word (`next_u64`) is cut into four 16-bit lanes, low lane first, and an
//!   index below `n` is Lemire's multiply-and-reject on one lane
//!   (`m = lane · n`; reject while `m mod 2^16 < 2^16 mod n`; the index is
//!   `m >> 16`): exactly uniform, and a 36-cluster draw needs 9 words, not 36.
//!   (With more than 2^16 clusters, [`draw_index`] on `next_u32` instead.)
//!   A draw's estimate adds its picked totals in two interleaved running sums (even
//!   and odd picks), combined at the end.
//! * Interval: 95% percentile interval, the 2.5% and 97.5% quantiles of the draws
//!   with linear interpolation between order statistics (numpy's default, "type 7":
//!   position `q (B − 1)`).
//! * p-value: centered percentile, two-sided: the share of draws with
//!   `|θ*_b − θ̂| ≥ |θ̂|` (θ̂ the full-sample estimate), and never below `1 / B`: a
//!   `B`-draw bootstrap cannot resolve a smaller p. Tables carry that floor as
//!   `p_floor`; a p equal to it means "at most this".
//!
//! # Seeds
//! Every bootstrap has its own stream so that no two rows of a table share draws by
//! accident (the eight contrasts, the cluster units, the weightings, the lanes ...).
//! [`derive_seed`] hashes, with blake3, the bytes
//! `b"tbb.analysis.seed/1"`, then the manifest seed as 8 little-endian bytes, then for
//! each part of the row's identity its length as 8 little-endian bytes followed by its
//! UTF-8 bytes; the first 8 bytes of the hash, little-endian, are the row's
//! `draw_seed`, written in the table. `ChaCha8Rng::seed_from_u64(draw_seed)` then
//! reproduces the row's draws with nothing but the rows and this module. The parts each
//! analysis hashes are listed in its module doc.
//!
//! # The exact sign-flip test
//! Under the null that every cluster's total is symmetric about zero, the `2^n`
//! assignments of signs to the `n` cluster totals `S_c = Σ_{u∈c} w_u d_u` are equally
//! likely. The p-value is the share of assignments with `|Σ s_c S_c| ≥ |Σ S_c|`
//! (ties count, up to a relative tolerance of 1e-9 for rounding). The assignments come
//! in mirror pairs with the same `|·|`, so the first sign is held at + and the other
//! `2^(n−1)` are enumerated in Gray-code order (one sign changes per step). The
//! smallest attainable p is `2 / 2^n` (the observed assignment and its mirror).
//! At most [`MAX_SIGN_FLIP_CLUSTERS`] clusters are enumerated.
//!
//! Invariants: every function is a pure function of its arguments; the same arguments
//! give the same bits. Nothing here knows about episodes or tables.
//!
//! Never: reads a clock or an OS random source, or uses a hash map's iteration order.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use serde::{Deserialize, Serialize};

use crate::{AnalysisError, ParamProblem};

/// Units a bootstrap resamples together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterUnit {
    /// Task family.
    Family,
    /// Intent.
    Intent,
    /// Record domain.
    Domain,
    /// Configuration.
    Configuration,
    /// Organization.
    Organization,
}

impl ClusterUnit {
    /// Every unit.
    pub const ALL: [ClusterUnit; 5] = [
        ClusterUnit::Family,
        ClusterUnit::Intent,
        ClusterUnit::Domain,
        ClusterUnit::Configuration,
        ClusterUnit::Organization,
    ];

    /// The name written in manifests.
    pub fn name(self) -> &'static str {
        match self {
            ClusterUnit::Family => "family",
            ClusterUnit::Intent => "intent",
            ClusterUnit::Domain => "domain",
            ClusterUnit::Configuration => "configuration",
            ClusterUnit::Organization => "organization",
        }
    }
}

/// The parameters of an analysis with cluster-bootstrap intervals (`contrasts`,
/// `lanes`): `None` and an empty list mean the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bootstrap {
    /// Bootstrap draws (default [`DEFAULT_DRAWS`]).
    #[serde(default)]
    pub draws: Option<u32>,
    /// Bootstrap seed (default [`DEFAULT_SEED`]).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Units resampled together (default, and when empty: [`DEFAULT_UNITS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_units: Vec<ClusterUnit>,
}

impl Bootstrap {
    /// Range checks: at least one draw, each cluster unit once.
    pub fn check(&self) -> Vec<ParamProblem> {
        let mut problems: Vec<ParamProblem> = check_draws(self.draws).into_iter().collect();
        let mut seen = std::collections::BTreeSet::new();
        for (j, u) in self.cluster_units.iter().enumerate() {
            if !seen.insert(u.name()) {
                problems.push(ParamProblem {
                    path: format!("cluster_units.{j}"),
                    message: format!("cluster unit `{}` is listed twice", u.name()),
                    help: None,
                });
            }
        }
        problems
    }
}

/// The range check of a bootstrap's `draws` parameter: at least one draw.
pub fn check_draws(draws: Option<u32>) -> Option<ParamProblem> {
    (draws == Some(0)).then(|| ParamProblem {
        path: "draws".into(),
        message: "draws = 0 must be a positive integer".into(),
        help: Some("10000 is usual; 1000 is enough for a smoke run".into()),
    })
}

/// Bootstrap draws when a manifest names none.
pub const DEFAULT_DRAWS: u32 = 10_000;
/// Bootstrap seed when a manifest names none.
pub const DEFAULT_SEED: u64 = 20_261_202;
/// Cluster units when a manifest names none (the paper's three).
pub const DEFAULT_UNITS: [ClusterUnit; 3] = [
    ClusterUnit::Family,
    ClusterUnit::Intent,
    ClusterUnit::Configuration,
];
/// Coverage of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// The largest number of clusters the exact sign-flip test enumerates
/// (`2^21` assignments; 21 is the panel's configuration count).
pub const MAX_SIGN_FLIP_CLUSTERS: usize = 22;
/// Relative tolerance under which two statistics count as tied.
const TIE_TOLERANCE: f64 = 1e-9;

/// An analysis's bootstrap settings, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Draws per bootstrap.
    pub draws: u32,
    /// The manifest seed every `draw_seed` derives from.
    pub seed: u64,
    /// Cluster units, in the order given, without repeats.
    pub units: Vec<ClusterUnit>,
}

impl Settings {
    /// The settings of analysis `kind` with parameters `analysis`: `None` and an
    /// empty list mean the defaults ([`DEFAULT_DRAWS`], [`DEFAULT_SEED`],
    /// [`DEFAULT_UNITS`]).
    pub fn resolve(kind: &'static str, analysis: &Bootstrap) -> Result<Settings, AnalysisError> {
        let draws = analysis.draws.unwrap_or(DEFAULT_DRAWS);
        if draws == 0 {
            return Err(AnalysisError::InvalidParameter {
                analysis: kind,
                detail: "draws must be at least 1".into(),
            });
        }
        let mut units: Vec<ClusterUnit> = Vec::new();
        let given: &[ClusterUnit] = if analysis.cluster_units.is_empty() {
            &DEFAULT_UNITS
        } else {
            &analysis.cluster_units
        };
        for unit in given {
            if !units.contains(unit) {
                units.push(*unit);
            }
        }
        Ok(Settings {
            draws,
            seed: analysis.seed.unwrap_or(DEFAULT_SEED),
            units,
        })
    }
}

/// The stream seed of one bootstrap: see the module doc, "Seeds".
pub fn derive_seed(seed: u64, parts: &[&str]) -> u64 {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"tbb.analysis.seed/1");
    hasher.update(&seed.to_le_bytes());
    for part in parts {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let hash = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// The generator of one bootstrap.
pub fn rng(draw_seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(draw_seed)
}

/// A uniform index in `0..n` (`n ≥ 1`): Lemire's multiply-and-reject on 32-bit words,
/// exactly uniform. [`IndexStream`] uses it for more than 2^16 clusters.
#[inline]
pub fn draw_index<R: Rng>(rng: &mut R, n: u32) -> usize {
    let n64 = u64::from(n);
    let mut m = u64::from(rng.next_u32()) * n64;
    if (m as u32) < n {
        // 2^32 mod n: the words below it in the low half would be over-represented.
        let threshold = n.wrapping_neg() % n;
        while (m as u32) < threshold {
            m = u64::from(rng.next_u32()) * n64;
        }
    }
    (m >> 32) as usize
}

/// Uniform indices from 16-bit lanes of a ChaCha8 stream (see the module doc).
#[derive(Debug, Clone)]
pub struct IndexStream {
    rng: ChaCha8Rng,
    word: u64,
    lanes: u32,
}

impl IndexStream {
    /// The stream of `draw_seed`.
    pub fn new(draw_seed: u64) -> IndexStream {
        IndexStream {
            rng: rng(draw_seed),
            word: 0,
            lanes: 0,
        }
    }

    #[inline]
    fn lane(&mut self) -> u32 {
        if self.lanes == 0 {
            self.word = self.rng.next_u64();
            self.lanes = 4;
        }
        let x = (self.word & 0xFFFF) as u32;
        self.word >>= 16;
        self.lanes -= 1;
        x
    }

    /// A uniform index in `0..n` (`n ≥ 1`).
    #[inline]
    pub fn index(&mut self, n: u32) -> usize {
        if n > 1 << 16 {
            return draw_index(&mut self.rng, n);
        }
        // lane < 2^16 and n ≤ 2^16: the product fits in 32 bits.
        let mut m = self.lane() * n;
        if (m & 0xFFFF) < n {
            let threshold = (1u32 << 16) % n;
            while (m & 0xFFFF) < threshold {
                m = self.lane() * n;
            }
        }
        (m >> 16) as usize
    }
}

/// Dense cluster ids for a list of cluster keys: ids follow the keys' sorted order,
/// so they do not depend on the order of the units. Returns the ids and the sorted
/// distinct keys.
pub fn cluster_ids<S: AsRef<str>>(keys: &[S]) -> (Vec<usize>, Vec<String>) {
    let mut names: Vec<&str> = keys.iter().map(AsRef::as_ref).collect();
    names.sort_unstable();
    names.dedup();
    let ids = keys
        .iter()
        .map(|k| names.binary_search(&k.as_ref()).unwrap_or(0))
        .collect();
    (ids, names.into_iter().map(str::to_string).collect())
}

/// Weights under which every group (e.g. organization) counts equally and, within a
/// group, every unit equally: `1 / (groups × units in the group)`. They sum to 1.
pub fn equal_group_weights<S: AsRef<str>>(groups: &[S]) -> Vec<f64> {
    let (ids, names) = cluster_ids(groups);
    let mut sizes = vec![0usize; names.len()];
    for &id in &ids {
        sizes[id] += 1;
    }
    let n_groups = names.len() as f64;
    ids.iter()
        .map(|&id| 1.0 / (n_groups * sizes[id] as f64))
        .collect()
}

/// Per-cluster totals of a weighted mean: `Σ w d` and `Σ w` of each cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterTotals {
    /// `Σ_{u∈c} w_u d_u`, by cluster id.
    pub sums: Vec<f64>,
    /// `Σ_{u∈c} w_u`, by cluster id.
    pub weights: Vec<f64>,
}

impl ClusterTotals {
    /// Totals of `values` (one per unit) with `weights` (one per unit; positive), the
    /// unit in `clusters[i]` (ids below `n_clusters`, each used at least once).
    pub fn new(
        values: &[f64],
        weights: &[f64],
        clusters: &[usize],
        n_clusters: usize,
    ) -> ClusterTotals {
        let mut sums = vec![0.0; n_clusters];
        let mut totals = vec![0.0; n_clusters];
        for ((&v, &w), &c) in values.iter().zip(weights).zip(clusters) {
            sums[c] += w * v;
            totals[c] += w;
        }
        ClusterTotals {
            sums,
            weights: totals,
        }
    }

    /// Number of clusters.
    pub fn len(&self) -> usize {
        self.sums.len()
    }

    /// Whether there is no cluster.
    pub fn is_empty(&self) -> bool {
        self.sums.is_empty()
    }

    /// The full-sample estimate `Σ sums / Σ weights`.
    pub fn estimate(&self) -> f64 {
        self.sums.iter().sum::<f64>() / self.weights.iter().sum::<f64>()
    }
}

/// The `draws` bootstrap estimates of one stream, in draw order.
pub fn bootstrap_draws(totals: &ClusterTotals, draws: u32, draw_seed: u64) -> Vec<f64> {
    let n = totals.len();
    let mut out = Vec::with_capacity(draws as usize);
    if n == 0 {
        return out;
    }
    let n32 = n as u32;
    if n32 > 1 << 16 {
        let mut stream = IndexStream::new(draw_seed);
        for _ in 0..draws {
            let (mut s, mut w) = (0.0, 0.0);
            for _ in 0..n {
                let i = stream.index(n32);
                s += totals.sums[i];
                w += totals.weights[i];
            }
            out.push(s / w);
        }
        return out;
    }
    // The same stream as `IndexStream::index` (tests check it draw for draw), with its
    // state in locals so that the loop keeps it in registers.
    let threshold = (1u32 << 16) % n32;
    let mut rng = rng(draw_seed);
    let (mut word, mut lanes) = (0u64, 0u32);
    let mut next = || -> usize {
        loop {
            if lanes == 0 {
                word = rng.next_u64();
                lanes = 4;
            }
            let m = ((word & 0xFFFF) as u32) * n32;
            word >>= 16;
            lanes -= 1;
            if (m & 0xFFFF) >= threshold {
                return (m >> 16) as usize;
            }
        }
    };
    // (Σ w d, Σ w) side by side: one load per pick.
    let pairs: Vec<[f64; 2]> = totals
        .sums
        .iter()
        .zip(&totals.weights)
        .map(|(&s, &w)| [s, w])
        .collect();
    for _ in 0..draws {
        // Two interleaved running sums halve the chain of dependent additions.
        let (mut s0, mut s1, mut w0, mut w1) = (0.0, 0.0, 0.0, 0.0);
        for _ in 0..n / 2 {
            let a = pairs[next()];
            let b = pairs[next()];
            s0 += a[0];
            w0 += a[1];
            s1 += b[0];
            w1 += b[1];
        }
        if n % 2 == 1 {
            let a = pairs[next()];
            s0 += a[0];
            w0 += a[1];
        }
        out.push((s0 + s1) / (w0 + w1));
    }
    out
}

/// A bootstrap's summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Full-sample estimate.
    pub estimate: f64,
    /// 2.5% quantile of the draws.
    pub low: f64,
    /// 97.5% quantile of the draws.
    pub high: f64,
    /// Centered two-sided p, at least `p_floor`.
    pub p_value: f64,
    /// `1 / draws`.
    pub p_floor: f64,
}

/// The percentile cluster bootstrap of `totals` with `draws` draws from `draw_seed`.
/// With no cluster, every number is NaN.
pub fn cluster_bootstrap(totals: &ClusterTotals, draws: u32, draw_seed: u64) -> Interval {
    let estimate = if totals.is_empty() {
        f64::NAN
    } else {
        totals.estimate()
    };
    let mut sample = bootstrap_draws(totals, draws, draw_seed);
    summarize(estimate, &mut sample)
}

/// Interval and p-value from a full-sample estimate and its draws (reordered in place).
pub fn summarize(estimate: f64, draws: &mut [f64]) -> Interval {
    let p_floor = 1.0 / draws.len().max(1) as f64;
    if draws.is_empty() || estimate.is_nan() {
        return Interval {
            estimate,
            low: f64::NAN,
            high: f64::NAN,
            p_value: f64::NAN,
            p_floor,
        };
    }
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let p_value = centered_p(estimate, draws);
    let (low, high) = quantile_pair(draws, tail, 1.0 - tail);
    Interval {
        estimate,
        low,
        high,
        p_value,
        p_floor,
    }
}

/// The centered two-sided bootstrap p: share of draws with `|θ* − θ̂| ≥ |θ̂|`, at least
/// `1 / draws`.
pub fn centered_p(estimate: f64, draws: &[f64]) -> f64 {
    let threshold = estimate.abs() * (1.0 - TIE_TOLERANCE);
    let count = draws
        .iter()
        .filter(|&&t| (t - estimate).abs() >= threshold)
        .count();
    count.max(1) as f64 / draws.len() as f64
}

/// The `q` quantile of sorted values, linear between order statistics (numpy's
/// default): position `q (n − 1)`.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let frac = pos - lo as f64;
    match sorted.get(lo + 1) {
        Some(&next) if frac > 0.0 => sorted[lo] + frac * (next - sorted[lo]),
        _ => sorted[lo],
    }
}

/// Two quantiles (`q_low ≤ q_high`) of unsorted values by selection, equal to
/// [`quantile_sorted`] on the sorted values; reorders `values`. The second selection
/// runs only over the values above the first quantile's order statistic.
pub fn quantile_pair(values: &mut [f64], q_low: f64, q_high: f64) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let position = |q: f64| {
        let pos = q * (n - 1) as f64;
        let lo = (pos.floor() as usize).min(n - 1);
        (lo, pos - lo as f64)
    };
    // The order statistic at `k` of `part` and, when
    // interpolation needs it, the next one: the minimum of what lies above.
    let at = |part: &mut [f64], k: usize, frac: f64| -> f64 {
        let (_, &mut x, above) = part.select_nth_unstable_by(k, f64::total_cmp);
        if frac > 0.0 && !above.is_empty() {
            let next = above.iter().copied().fold(f64::INFINITY, f64::min);
            x + frac * (next - x)
        } else {
            x
        }
    };
    let (lo_l, frac_l) = position(q_low);
    let (lo_h, frac_h) = position(q_high);
    let low = at(values, lo_l, frac_l);
    let high = if lo_h > lo_l {
        // Everything right of lo_l is ≥ values[lo_l]: rank lo_h overall is rank
        // lo_h − lo_l − 1 there.
        at(&mut values[lo_l + 1..], lo_h - lo_l - 1, frac_h)
    } else {
        at(values, lo_h, frac_h)
    };
    (low, high)
}

/// Holm's step-down adjustment of `p` (in the given order): sorted ascending,
/// `p_(i) ↦ max_{j ≤ i} min(1, (m − j + 1) p_(j))`. NaN p-values are left out of the
/// family and stay NaN.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]).then(a.cmp(&b)));
    let m = order.len();
    let mut out = vec![f64::NAN; p.len()];
    let mut running: f64 = 0.0;
    for (j, &i) in order.iter().enumerate() {
        let adjusted = ((m - j) as f64 * p[i]).min(1.0);
        running = running.max(adjusted);
        out[i] = running;
    }
    out
}

/// The exact two-sided sign-flip p over cluster totals `sums` (see the module doc).
/// `None` with no cluster or more than [`MAX_SIGN_FLIP_CLUSTERS`].
pub fn sign_flip_p(sums: &[f64]) -> Option<f64> {
    let n = sums.len();
    if n == 0 || n > MAX_SIGN_FLIP_CLUSTERS {
        return None;
    }
    let observed: f64 = sums.iter().sum();
    let scale: f64 = sums.iter().map(|s| s.abs()).sum();
    let threshold = observed.abs() - TIE_TOLERANCE * scale.max(1.0);
    // signs[c] for c ≥ 1 flip in Gray-code order; sign 0 stays +.
    let mut signs = vec![1.0f64; n];
    let mut current = observed;
    let mut count: u64 = u64::from(current.abs() >= threshold);
    let steps: u64 = 1u64 << (n - 1);
    for k in 1..steps {
        let c = k.trailing_zeros() as usize + 1;
        current -= 2.0 * signs[c] * sums[c];
        signs[c] = -signs[c];
        if current.abs() >= threshold {
            count += 1;
        }
    }
    Some(count as f64 / steps as f64)
}

/// The smallest p the exact sign-flip test can give with `n` clusters: `2 / 2^n`.
pub fn sign_flip_floor(n: usize) -> f64 {
    2.0 / 2f64.powi(n as i32)
}

/// Pearson's correlation; `None` with fewer than two pairs or a constant variable.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len().min(y.len());
    if n < 2 {
        return None;
    }
    let mx = x[..n].iter().sum::<f64>() / n as f64;
    let my = y[..n].iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x[..n].iter().zip(&y[..n]) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// Ranks from 1, ties getting the average of the ranks they span.
pub fn average_ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]).then(a.cmp(&b)));
    let mut ranks = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        // Positions i..=j hold ranks i+1 ..= j+1.
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = rank;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's ρ: Pearson's r of the average ranks.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len().min(y.len());
    pearson(&average_ranks(&x[..n]), &average_ranks(&y[..n]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
    }

    /// The bootstrap written out directly: for each draw, pick clusters from the same
    /// index stream, gather every unit of every picked cluster, and take the weighted
    /// mean of the gathered units.
    fn slow_bootstrap(
        values: &[f64],
        weights: &[f64],
        clusters: &[usize],
        n_clusters: usize,
        draws: u32,
        draw_seed: u64,
    ) -> Vec<f64> {
        let mut stream = IndexStream::new(draw_seed);
        let mut out = Vec::new();
        for _ in 0..draws {
            let mut picked: Vec<(f64, f64)> = Vec::new();
            for _ in 0..n_clusters {
                let c = stream.index(n_clusters as u32);
                for u in 0..values.len() {
                    if clusters[u] == c {
                        picked.push((values[u], weights[u]));
                    }
                }
            }
            let num: f64 = picked.iter().map(|(v, w)| v * w).sum();
            let den: f64 = picked.iter().map(|(_, w)| w).sum();
            out.push(num / den);
        }
        out
    }

    #[test]
    fn the_fast_bootstrap_equals_the_direct_one_draw_for_draw() {
        // Unit differences in pp that are multiples of 25 (as contrasts of 0/1 cells
        // are): every sum is exact, so the two must agree bit for bit.
        let values: Vec<f64> = (0..30).map(|i| ((i * 7 % 9) as f64 - 4.0) * 25.0).collect();
        let ones = vec![1.0; values.len()];
        let clusters: Vec<usize> = (0..values.len()).map(|i| (i * 5) % 7).collect();
        let totals = ClusterTotals::new(&values, &ones, &clusters, 7);
        let fast = bootstrap_draws(&totals, 2_000, 42);
        let slow = slow_bootstrap(&values, &ones, &clusters, 7, 2_000, 42);
        assert_eq!(fast, slow);
        // Unequal weights and non-dyadic values: equal up to rounding.
        let values: Vec<f64> = (0..30).map(|i| (i as f64 / 3.0).sin() * 100.0).collect();
        let weights: Vec<f64> = (0..30).map(|i| 1.0 / (1 + i % 4) as f64).collect();
        let totals = ClusterTotals::new(&values, &weights, &clusters, 7);
        let fast = bootstrap_draws(&totals, 2_000, 7);
        let slow = slow_bootstrap(&values, &weights, &clusters, 7, 2_000, 7);
        assert_eq!(fast.len(), slow.len());
        for (a, b) in fast.iter().zip(&slow) {
            assert!(close(*a, *b), "{a} vs {b}");
        }
    }

    #[test]
    fn the_bootstrap_is_reproducible_from_its_seed_and_differs_across_seeds() {
        let values = [0.0, 25.0, -50.0, 100.0, 75.0, -25.0];
        let ones = [1.0; 6];
        let totals = ClusterTotals::new(&values, &ones, &[0, 1, 2, 3, 4, 5], 6);
        let a = cluster_bootstrap(&totals, 1_000, 9);
        let b = cluster_bootstrap(&totals, 1_000, 9);
        assert_eq!(a, b);
        assert_ne!(
            bootstrap_draws(&totals, 50, 9),
            bootstrap_draws(&totals, 50, 10)
        );
    }

    #[test]
    fn a_two_cluster_bootstrap_interval_spans_the_two_cluster_means() {
        // Clusters with means 10 and 30 (equal weights): a draw is 10, 20 or 30 with
        // probabilities 1/4, 1/2, 1/4, so with 10,000 draws the 2.5% and 97.5%
        // quantiles are 10 and 30, and |θ* − 20| ≥ 20 never happens: p = 1/B.
        let totals = ClusterTotals::new(&[0.0, 20.0, 30.0, 30.0], &[1.0; 4], &[0, 0, 1, 1], 2);
        assert_eq!(totals.estimate(), 20.0);
        let i = cluster_bootstrap(&totals, 10_000, 1);
        assert_eq!((i.estimate, i.low, i.high), (20.0, 10.0, 30.0));
        assert_eq!((i.p_value, i.p_floor), (1e-4, 1e-4));
        // One cluster: every draw is the estimate; a zero estimate has p = 1.
        let one = ClusterTotals::new(&[5.0, -5.0], &[1.0; 2], &[0, 0], 1);
        let i = cluster_bootstrap(&one, 100, 1);
        assert_eq!((i.estimate, i.low, i.high, i.p_value), (0.0, 0.0, 0.0, 1.0));
    }

    #[test]
    fn the_centered_p_counts_draws_at_least_as_far_from_the_estimate() {
        // θ̂ = 2; |θ* − 2| ≥ 2 for θ* ∈ {0, 4, 5, -1}: 4 of 8.
        let draws = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, -1.0, 2.5];
        assert_eq!(centered_p(2.0, &draws), 0.5);
        // θ̂ = 10: only θ* ≤ 0 is that far (0 and −1): 2 of 8.
        assert_eq!(centered_p(10.0, &draws), 0.25);
        // No draw that far: the floor 1/4.
        assert_eq!(centered_p(100.0, &[99.0, 100.0, 101.0, 102.0]), 0.25);
    }

    #[test]
    fn quantiles_interpolate_like_numpy_and_selection_matches_sorting() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&sorted, 0.25), 1.75);
        assert_eq!(quantile_sorted(&sorted, 0.5), 2.5);
        assert_eq!(quantile_sorted(&sorted, 1.0), 4.0);
        assert_eq!(quantile_sorted(&sorted, 0.0), 1.0);
        let mut values: Vec<f64> = (0..1001).map(|i| ((i * 7919) % 1001) as f64).collect();
        let mut s = values.clone();
        s.sort_by(f64::total_cmp);
        let (lo, hi) = quantile_pair(&mut values, 0.025, 0.975);
        assert_eq!(lo, quantile_sorted(&s, 0.025));
        assert_eq!(hi, quantile_sorted(&s, 0.975));
        assert_eq!((lo, hi), (25.0, 975.0));
        // Every size from 1 to 40, ties included, several quantile pairs.
        for n in 1..=40usize {
            let base: Vec<f64> = (0..n).map(|i| ((i * 17 + 5) % 11) as f64 / 4.0).collect();
            let mut sorted = base.clone();
            sorted.sort_by(f64::total_cmp);
            for (ql, qh) in [(0.025, 0.975), (0.0, 1.0), (0.3, 0.3), (0.1, 0.55)] {
                let mut v = base.clone();
                let got = quantile_pair(&mut v, ql, qh);
                let want = (quantile_sorted(&sorted, ql), quantile_sorted(&sorted, qh));
                assert_eq!(got, want, "n = {n}, q = ({ql}, {qh})");
            }
        }
    }

    #[test]
    fn holm_adjusts_known_p_values() {
        // m = 4, sorted 0.005, 0.01, 0.03, 0.04 -> 0.02, 0.03, 0.06, max(0.06, 0.04).
        let adjusted = holm(&[0.01, 0.04, 0.03, 0.005]);
        let expected = [0.03, 0.06, 0.06, 0.02];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!(close(*a, e), "{adjusted:?}");
        }
        // Capped at 1; the bootstrap floor over eight contrasts becomes 8e-4.
        assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
        let floor = holm(&[1e-4; 8]);
        assert!(floor.iter().all(|&p| close(p, 8e-4)));
        // NaN stays out of the family.
        let h = holm(&[0.01, f64::NAN, 0.02]);
        assert!(close(h[0], 0.02) && h[1].is_nan() && close(h[2], 0.02));
    }

    #[test]
    fn the_sign_flip_p_counts_assignments_by_hand() {
        // Totals 1, 2, 3: signed sums 6, 4, 2, 0, 0, -2, -4, -6; |·| ≥ 6 twice of 8.
        assert_eq!(sign_flip_p(&[1.0, 2.0, 3.0]), Some(0.25));
        // Totals 1, -1, 2: observed 2; signed sums ±2 (4 of them), 0, 0, ±4 (2):
        // |·| ≥ 2 six times of 8.
        assert_eq!(sign_flip_p(&[1.0, -1.0, 2.0]), Some(0.75));
        // All zero: every assignment ties.
        assert_eq!(sign_flip_p(&[0.0, 0.0]), Some(1.0));
        // Twelve equal positive totals: only the observed assignment and its mirror
        // reach the maximum, 2 / 4096.
        assert_eq!(sign_flip_p(&[25.0; 12]), Some(sign_flip_floor(12)));
        assert_eq!(sign_flip_floor(12), 2.0 / 4096.0);
        assert_eq!(sign_flip_p(&[]), None);
        assert_eq!(sign_flip_p(&[1.0; MAX_SIGN_FLIP_CLUSTERS + 1]), None);
    }

    #[test]
    fn the_gray_code_enumeration_equals_brute_force() {
        let sums: Vec<f64> = (0..10)
            .map(|i| ((i * 37 % 11) as f64 - 5.0) / 3.0)
            .collect();
        let observed: f64 = sums.iter().sum();
        let mut count = 0;
        for mask in 0u32..(1 << sums.len()) {
            let t: f64 = sums
                .iter()
                .enumerate()
                .map(|(c, s)| if mask >> c & 1 == 1 { -s } else { *s })
                .sum();
            if t.abs() >= observed.abs() - 1e-9 {
                count += 1;
            }
        }
        let brute = count as f64 / 1024.0;
        assert_eq!(sign_flip_p(&sums), Some(brute));
    }

    #[test]
    fn pearson_and_spearman_on_known_data() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [2.0, 4.0, 5.0, 4.0, 5.0];
        // Σdxdy = 6, Σdx² = 10, Σdy² = 6: r = 6 / √60.
        assert!(close(
            pearson(&x, &y).unwrap_or(f64::NAN),
            6.0 / 60f64.sqrt()
        ));
        // Ranks of y: 1, 2.5, 4.5, 2.5, 4.5: ρ = 7 / √90.
        assert_eq!(average_ranks(&y), vec![1.0, 2.5, 4.5, 2.5, 4.5]);
        assert!(close(
            spearman(&x, &y).unwrap_or(f64::NAN),
            7.0 / 90f64.sqrt()
        ));
        // Monotone but not linear: ρ = 1, r < 1.
        let cubes = [1.0, 8.0, 27.0, 64.0, 125.0];
        assert!(close(spearman(&x, &cubes).unwrap_or(f64::NAN), 1.0));
        assert!(pearson(&x, &cubes).unwrap_or(1.0) < 1.0);
        // Undefined for a constant variable or a single pair.
        assert_eq!(pearson(&x, &[3.0; 5]), None);
        assert_eq!(spearman(&[1.0], &[2.0]), None);
    }

    #[test]
    fn organization_equal_weights_count_each_group_once() {
        // Group a has one unit, group b three: a's unit weighs 1/2, b's 1/6 each.
        let w = equal_group_weights(&["b", "a", "b", "b"]);
        assert!(close(w[1], 0.5) && close(w[0], 1.0 / 6.0) && close(w[3], 1.0 / 6.0));
        // The weighted mean is the mean of the group means: (10 + (0+3+6)/3) / 2.
        let (ids, names) = cluster_ids(&["b", "a", "b", "b"]);
        assert_eq!(names, vec!["a", "b"]);
        assert_eq!(ids, vec![1, 0, 1, 1]);
        let t = ClusterTotals::new(&[0.0, 10.0, 3.0, 6.0], &w, &ids, 2);
        assert!(close(t.estimate(), 6.5));
    }

    #[test]
    fn indices_are_uniform_and_in_range() {
        let mut rng = rng(3);
        let mut stream = IndexStream::new(3);
        let mut counts = [0u32; 12];
        let mut lanes = [0u32; 12];
        for _ in 0..120_000 {
            counts[draw_index(&mut rng, 12)] += 1;
            lanes[stream.index(12)] += 1;
        }
        // Each count ~ Binomial(120000, 1/12): mean 10,000, sd ≈ 96.
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
        assert!(
            lanes.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{lanes:?}"
        );
        assert_eq!(draw_index(&mut rng, 1), 0);
        assert_eq!(stream.index(1), 0);
        // Large n: in range on both paths.
        assert!(stream.index(1 << 16) < 1 << 16);
        assert!(stream.index((1 << 16) + 3) < (1 << 16) + 3);
    }

    #[test]
    fn the_fast_loop_follows_the_index_stream_through_rejections() {
        // n = 40,000: 2^16 mod n = 25,536, so about 39% of lanes are rejected; odd n
        // too. The fast loop must pick exactly the clusters `IndexStream` picks.
        for n in [40_000usize, 7, 65_536, 70_001] {
            let sums: Vec<f64> = (0..n).map(|i| (i % 97) as f64).collect();
            let weights: Vec<f64> = (0..n).map(|i| 1.0 + (i % 3) as f64).collect();
            let totals = ClusterTotals {
                sums: sums.clone(),
                weights: weights.clone(),
            };
            let fast = bootstrap_draws(&totals, 3, 77);
            let mut stream = IndexStream::new(77);
            let direct: Vec<f64> = (0..3)
                .map(|_| {
                    let picks: Vec<usize> = (0..n).map(|_| stream.index(n as u32)).collect();
                    let s: f64 = picks.iter().map(|&i| sums[i]).sum();
                    let w: f64 = picks.iter().map(|&i| weights[i]).sum();
                    s / w
                })
                .collect();
            // Integer-valued sums below 2^53: every order of addition is exact.
            assert_eq!(fast, direct, "n = {n}");
        }
    }

    #[test]
    fn the_lanes_of_a_word_are_used_low_first() {
        // With n = 2^16 nothing is rejected and the index is the lane itself.
        let mut stream = IndexStream::new(8);
        let word = rng(8).next_u64();
        let got: Vec<usize> = (0..4).map(|_| stream.index(1 << 16)).collect();
        let want: Vec<usize> = (0..4)
            .map(|k| ((word >> (16 * k)) & 0xFFFF) as usize)
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn seeds_differ_by_every_part_and_are_stable() {
        let a = derive_seed(20_261_202, &["contrasts", "routed", "v", "family"]);
        assert_eq!(
            a,
            derive_seed(20_261_202, &["contrasts", "routed", "v", "family"])
        );
        assert_ne!(
            a,
            derive_seed(20_261_203, &["contrasts", "routed", "v", "family"])
        );
        assert_ne!(
            a,
            derive_seed(20_261_202, &["contrasts", "routed", "w", "family"])
        );
        // Lengths are hashed: moving a boundary between parts changes the seed.
        assert_ne!(derive_seed(1, &["ab", "c"]), derive_seed(1, &["a", "bc"]));
    }

    #[test]
    fn settings_fill_in_the_defaults() {
        let analysis = Bootstrap::default();
        let s = Settings::resolve("contrasts", &analysis).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((s.draws, s.seed), (10_000, 20_261_202));
        assert_eq!(s.units, DEFAULT_UNITS.to_vec());
        let zero = Bootstrap {
            draws: Some(0),
            ..analysis
        };
        assert!(Settings::resolve("contrasts", &zero).is_err());
        assert_eq!(zero.check().len(), 1);
    }
}
