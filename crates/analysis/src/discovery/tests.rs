//! The discovery analysis on hand-built episodes: every estimate computed by hand, the
//! intervals against a slow reference bootstrap written out below.

use std::collections::BTreeMap;

use super::*;
use crate::common::design::testing;
use tbb_tables::analyses::discovery::{ClusterUnit as U, RLevel as R, Statistic as S};
use tbb_tables::levels::{Menu, StopReason};

/// An episode of `arm` for `family` at R level `r`.
fn ep(arm: &str, family: &str, intent: &str, r: &str, available: bool, vts: bool) -> EpisodeRow {
    let mut e = testing::row("c", "org", family, intent, 128, "low", "raw", vts);
    e.arm = arm.into();
    e.lane = if arm == "fixed" {
        Menu::Fixed
    } else {
        Menu::Retrieval { k: 8 }
    };
    e.r = r.parse().unwrap_or_else(|e| panic!("{e}"));
    e.variant_id = format!("{family}-{r}").into();
    e.ok[0] = available;
    if !available {
        e.requests = 0;
        e.prompt_tokens = 0;
        e.completion_tokens = 0;
        e.total_tokens = 0;
        e.stop_reason = StopReason::Unavailable;
    }
    e
}

/// Four families, two intents, three required-tool clusters (C and D share one).
fn study() -> (Vec<EpisodeRow>, BTreeMap<String, String>) {
    let arm = "retrieval";
    let episodes = vec![
        ep(arm, "a", "i1", "low", true, true),
        ep(arm, "a", "i1", "high", false, false),
        ep(arm, "b", "i1", "low", true, false),
        ep(arm, "b", "i1", "high", true, true),
        ep(arm, "c", "i2", "low", true, true),
        ep(arm, "c", "i2", "high", true, false),
        ep(arm, "d", "i2", "low", false, false),
        ep(arm, "d", "i2", "high", false, false),
    ];
    let mut clusters = BTreeMap::new();
    for (family, cluster) in [
        ("a", "read_x+search"),
        ("b", "read_x+search+update_x"),
        ("c", "read_y+search"),
        ("d", "read_y+search"),
    ] {
        for r in ["low", "high"] {
            clusters.insert(format!("{family}-{r}"), cluster.to_string());
        }
    }
    (episodes, clusters)
}

fn params(draws: u32) -> DiscoveryParams {
    DiscoveryParams {
        draws: Some(draws),
        seed: Some(7),
    }
}

fn find(rows: &[DiscoveryRow], statistic: S, r: R, unit: U) -> &DiscoveryRow {
    rows.iter()
        .find(|x| x.statistic == statistic && x.r == r && x.cluster_unit == unit)
        .unwrap_or_else(|| panic!("no row {statistic:?} {r:?} {unit:?}"))
}

/// The unavailable episodes, their requests and tokens of an availability row.
fn unavailable(row: &DiscoveryRow) -> Option<[u64; 3]> {
    Some([
        row.unavailable?,
        row.unavailable_requests?,
        row.unavailable_tokens?,
    ])
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

#[test]
fn rates_and_contrasts_match_the_hand_computation() {
    let (episodes, clusters) = study();
    let rows = compute(&params(200), &episodes, &clusters).unwrap_or_else(|e| panic!("{e}"));
    // availability: low a b c (3 of 4), high b c (2 of 4).
    let a_low = find(&rows, S::Availability, R::Low, U::RequiredTools);
    close(a_low.estimate_pp, 75.0);
    assert_eq!((a_low.n, a_low.hits, a_low.n_clusters), (4, Some(3), 3));
    assert_eq!(unavailable(a_low), Some([1, 0, 0]));
    let a_high = find(&rows, S::Availability, R::High, U::Family);
    close(a_high.estimate_pp, 50.0);
    assert_eq!(a_high.n_clusters, 4);
    // The unavailable episodes sent nothing and used no token.
    assert_eq!(unavailable(a_high), Some([2, 0, 0]));
    // ITT: low a c (2 of 4); high b (1 of 4): the unavailable a and d count as failures.
    close(
        find(&rows, S::IttSuccess, R::Low, U::Intent).estimate_pp,
        50.0,
    );
    let itt_high = find(&rows, S::IttSuccess, R::High, U::Intent);
    close(itt_high.estimate_pp, 25.0);
    assert_eq!((itt_high.hits, itt_high.n_clusters), (Some(1), 2));
    // Among the available only: low a c of a b c; high b of b c.
    let pp = find(&rows, S::SuccessIfAvailable, R::Low, U::RequiredTools);
    close(pp.estimate_pp, 200.0 / 3.0);
    assert_eq!(pp.n, 3);
    close(
        find(&rows, S::SuccessIfAvailable, R::High, U::RequiredTools).estimate_pp,
        50.0,
    );
    // Contrasts, high − low per family: availability (−1, 0, 0, 0); ITT (−1, +1, −1, 0).
    let da = find(&rows, S::Availability, R::HighMinusLow, U::RequiredTools);
    close(da.estimate_pp, -25.0);
    assert_eq!((da.n, da.hits), (4, None));
    let dy = find(&rows, S::IttSuccess, R::HighMinusLow, U::Family);
    close(dy.estimate_pp, -25.0);
    assert!(dy.p_value.is_some() && a_low.p_value.is_none());
    // No per-protocol contrast, and three units for each of the 8 statistics.
    assert!(!rows
        .iter()
        .any(|x| x.statistic == S::SuccessIfAvailable && x.r == R::HighMinusLow));
    assert_eq!(rows.len(), 8 * 3);
}

/// The percentile bootstrap written the slow way: draw `n` cluster indices with
/// replacement from the row's stream, take the ratio of sums, sort, interpolate.
fn slow_interval(sums: &[f64], weights: &[f64], draws: u32, draw_seed: u64) -> (f64, f64, f64) {
    let n = sums.len() as u32;
    let mut stream = stats::IndexStream::new(draw_seed);
    let mut estimates: Vec<f64> = (0..draws)
        .map(|_| {
            let (mut s, mut w) = (0.0, 0.0);
            for _ in 0..n {
                let i = stream.index(n);
                s += sums[i];
                w += weights[i];
            }
            s / w
        })
        .collect();
    estimates.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        let pos = q * f64::from(draws - 1);
        let lo = pos.floor() as usize;
        let hi = (lo + 1).min(estimates.len() - 1);
        estimates[lo] + (pos - lo as f64) * (estimates[hi] - estimates[lo])
    };
    let theta = sums.iter().sum::<f64>() / weights.iter().sum::<f64>();
    let extreme = estimates
        .iter()
        .filter(|&&t| (t - theta).abs() >= theta.abs() * (1.0 - 1e-9))
        .count()
        .max(1);
    (
        quantile(0.025),
        quantile(0.975),
        extreme as f64 / f64::from(draws),
    )
}

#[test]
fn intervals_resample_the_required_tool_clusters() {
    let (episodes, clusters) = study();
    let rows = compute(&params(999), &episodes, &clusters).unwrap_or_else(|e| panic!("{e}"));
    let row = find(&rows, S::IttSuccess, R::HighMinusLow, U::RequiredTools);
    // Clusters in name order: read_x+search {a: −100}, read_x+search+update_x {b: +100},
    // read_y+search {c: −100, d: 0}.
    let (low, high, p) = slow_interval(
        &[-100.0, 100.0, -100.0],
        &[1.0, 1.0, 2.0],
        999,
        row.draw_seed,
    );
    close(row.ci_low_pp, low);
    close(row.ci_high_pp, high);
    close(row.p_value.unwrap_or(f64::NAN), p);
    assert_eq!(
        row.draw_seed,
        stats::derive_seed(
            7,
            &[
                "discovery",
                "retrieval",
                "itt_success",
                "high_minus_low",
                "required_tools"
            ]
        )
    );
    assert!(row.ci_low_pp <= row.estimate_pp && row.estimate_pp <= row.ci_high_pp);
}

#[test]
fn one_cluster_gives_a_degenerate_interval() {
    let episodes = vec![
        ep("fixed", "a", "i1", "low", true, true),
        ep("fixed", "a", "i1", "high", true, false),
    ];
    let clusters: BTreeMap<String, String> = [("a-low", "k"), ("a-high", "k")]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let rows = compute(&params(50), &episodes, &clusters).unwrap_or_else(|e| panic!("{e}"));
    let d = find(&rows, S::IttSuccess, R::HighMinusLow, U::Intent);
    close(d.estimate_pp, -100.0);
    close(d.ci_low_pp, -100.0);
    close(d.ci_high_pp, -100.0);
    // No unavailable episode: the row says so with zeros.
    assert_eq!(
        unavailable(find(&rows, S::Availability, R::Low, U::Family)),
        Some([0, 0, 0])
    );
}

#[test]
fn arms_are_analysed_apart_and_sorted_by_name() {
    let (mut episodes, mut clusters) = study();
    episodes.push(ep("fixed", "a", "i1", "low", true, true));
    episodes.push(ep("fixed", "a", "i1", "high", true, true));
    clusters.insert("a-low".into(), "read_x+search".into());
    let rows = compute(&params(20), &episodes, &clusters).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows[0].arm, "fixed");
    assert_eq!(rows[0].lane, "fixed");
    assert_eq!(rows.last().map(|r| r.arm.as_str()), Some("retrieval"));
    let fixed_rows = rows.iter().filter(|r| r.arm == "fixed").count();
    // No episode is unavailable: `success_if_available` has rows too (8 statistics).
    assert_eq!(fixed_rows, 8 * 3);
    // The table has one row per computed row, and reads back as them.
    let batch = DiscoveryRow::to_batch(&rows).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(batch.num_rows(), rows.len());
    let back = DiscoveryRow::from_batch(&batch).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.len(), rows.len());
    assert_eq!(back[0].statistic, S::Availability);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let (episodes, mut clusters) = study();
    clusters.remove("a-low");
    assert!(matches!(
        compute(&params(10), &episodes, &clusters),
        Err(AnalysisError::MissingData { .. })
    ));
    let (mut twice, clusters) = study();
    twice.push(twice[0].clone());
    assert!(matches!(
        compute(&params(10), &twice, &clusters),
        Err(AnalysisError::Inconsistent { .. })
    ));
    assert!(matches!(
        compute(&params(0), &study().0, &study().1),
        Err(AnalysisError::InvalidParameter { .. })
    ));
    assert!(compute(&params(10), &[], &BTreeMap::new()).is_err());
}
