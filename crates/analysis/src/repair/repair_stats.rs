//! The statistics of a repair against its own layer (paper Section 4.3): the loss L,
//! the stress gain Γ, the selectivity Σ and the wrong-layer advantage Δ, their
//! family-cluster bootstrap, the intersection-union test of "activates", and the
//! smallest equivalence margin of the two one-sided tests.
//!
//! Owns: these formulas and their draws. The `repairs` and `sentinel` analyses decide
//! which episodes go in; this module sees only success tallies.
//!
//! # Quantities
//! For one layer, `μ[a][z]` is the mean success under arm `a` (0 = the no-repair arm)
//! at pressure `z` (0 unstressed, 1 stressed). For a repair arm `a ≥ 1`:
//! `L = μ⁰₀ − μ⁰₁` (the same for every arm), `Γ_a = μᵃ₁ − μ⁰₁`,
//! `Σ_a = (μᵃ₁ − μ⁰₁) − (μᵃ₀ − μ⁰₀)`; the layer's own repair is arm 1 and
//! `Δ = Σ₁ − max_{a ≥ 2} Σ_a` over the other layers' repairs run on the same cells
//! (undefined when there is none). All in percentage points.
//!
//! # Means and the bootstrap
//! Each family (the cluster) holds a [`Tally`] per arm and pressure: successes and
//! episodes. `μ[a][z]` is the ratio of sums over families, so every quantity is paired
//! within family (all arms and pressures of a family move together in a draw). A draw
//! picks `n` families with replacement from [`IndexStream`] (the stream of
//! [`crate::common::stats`]) and recomputes every quantity of every arm from the same picks,
//! so Δ's maximum is taken inside each draw.
//!
//! # One-sided p-values and the intersection-union test
//! The one-sided p of `H0: θ ≤ 0` is the centered bootstrap's upper tail, the one-sided
//! half of [`crate::common::stats::centered_p`]: the draws' spread around the estimate stands
//! for the estimate's spread around the truth under the null, so
//! `p⁺ = #{b : θ*_b − θ̂ ≥ θ̂} / B`, never below `1 / B`. "Activates" is the
//! intersection of `L > 0`, `Γ > 0` and `Σ > 0`; by Berger's intersection-union
//! principle a level-α test of the intersection rejects when each part's level-α test
//! does, so its p is `max(p⁺_L, p⁺_Γ, p⁺_Σ)`. Holm's correction over the layers is
//! [`crate::common::stats::holm`].
//!
//! # The smallest equivalence margin
//! Schuirmann's two one-sided tests at level α for `|θ| < m` reject `θ ≤ −m` and
//! `θ ≥ m`. With the same centered bootstrap: `p_low(m) = #{θ*_b ≥ 2θ̂ + m} / B` and
//! `p_high(m) = #{θ*_b ≤ 2θ̂ − m} / B`, each at least `1 / B`. Both fall as `m` grows;
//! the margin is the infimum of the `m ≥ 0` at which both are at most α: with
//! `k = ⌊αB⌋`, the larger of the `(k+1)`-th largest of `θ*_b − 2θ̂` and of `2θ̂ − θ*_b`
//! (and 0). Every margin above it rejects; at it exactly, `k + 1` draws sit on the
//! boundary and it does not. When `1 / B > α` no margin rejects (`None`).
//!
//! Invariants: pure functions of their arguments; the same tallies, draws and seed give
//! the same bits.
//!
//! Never: reads episodes, tables, clocks or any random source but [`IndexStream`].

use crate::common::stats::{quantile_pair, IndexStream};

/// The level of every test here.
pub const ALPHA: f64 = 0.05;

/// Successes and episodes of one family under one arm at one pressure.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// Successful episodes.
    pub successes: f64,
    /// Episodes.
    pub episodes: f64,
}

impl Tally {
    /// Adds one episode.
    pub fn add(&mut self, success: bool) {
        self.successes += f64::from(u8::from(success));
        self.episodes += 1.0;
    }
}

/// One family's tallies: `[arm][z]`, arm 0 the no-repair arm.
pub type FamilyTallies = Vec<[Tally; 2]>;

/// The quantities of one layer, pp: `gamma[a]`, `sigma[a]` for every arm (index 0, the
/// no-repair arm, is 0 by definition).
#[derive(Debug, Clone, PartialEq)]
pub struct Effects {
    /// L.
    pub loss: f64,
    /// Γ per arm.
    pub gamma: Vec<f64>,
    /// Σ per arm.
    pub sigma: Vec<f64>,
    /// Δ of arm 1 against arms 2.., `None` without a wrong-layer arm.
    pub delta: Option<f64>,
}

/// The effects from the means `mu[a][z]` (shares in [0, 1]).
pub fn effects(mu: &[[f64; 2]]) -> Effects {
    let Some(base) = mu.first() else {
        return Effects {
            loss: f64::NAN,
            gamma: Vec::new(),
            sigma: Vec::new(),
            delta: None,
        };
    };
    let loss = 100.0 * (base[0] - base[1]);
    let gamma: Vec<f64> = mu.iter().map(|m| 100.0 * (m[1] - base[1])).collect();
    let sigma: Vec<f64> = mu
        .iter()
        .map(|m| 100.0 * ((m[1] - base[1]) - (m[0] - base[0])))
        .collect();
    let delta = match (sigma.get(1), sigma.get(2..)) {
        (Some(own), Some(others)) if !others.is_empty() => {
            Some(own - others.iter().copied().fold(f64::NEG_INFINITY, f64::max))
        }
        _ => None,
    };
    Effects {
        loss,
        gamma,
        sigma,
        delta,
    }
}

/// `μ[a][z]` over the families at `picks` (indices into `families`, repeats allowed).
pub fn means(families: &[FamilyTallies], picks: impl IntoIterator<Item = usize>) -> Vec<[f64; 2]> {
    let arms = families.first().map_or(0, Vec::len);
    let mut sums = vec![[Tally::default(); 2]; arms];
    for f in picks {
        for (sum, tally) in sums.iter_mut().zip(&families[f]) {
            for z in 0..2 {
                sum[z].successes += tally[z].successes;
                sum[z].episodes += tally[z].episodes;
            }
        }
    }
    sums.iter()
        .map(|t| [0, 1].map(|z| t[z].successes / t[z].episodes))
        .collect()
}

/// The generic rescue of the paper's check: baseline success `p0 > p1` at low and high
/// pressure, and a repair that rescues a share `r` of all failures, whatever their
/// layer (`q_z = p_z + r (1 − p_z)`). Its effects, pp.
pub fn generic_rescue(p0: f64, p1: f64, r: f64) -> Effects {
    let q = |p: f64| p + r * (1.0 - p);
    effects(&[[p0, p1], [q(p0), q(p1)]])
}

/// The full-sample effects and `draws` bootstrap effects of one layer (see the module
/// doc). Every family must hold the same number of arms.
pub fn bootstrap(
    families: &[FamilyTallies],
    draws: u32,
    draw_seed: u64,
) -> (Effects, Vec<Effects>) {
    let full = effects(&means(families, 0..families.len()));
    let n = families.len();
    if n == 0 {
        return (full, Vec::new());
    }
    let mut stream = IndexStream::new(draw_seed);
    let mut out = Vec::with_capacity(draws as usize);
    let mut picks = vec![0usize; n];
    for _ in 0..draws {
        for p in picks.iter_mut() {
            *p = stream.index(n as u32);
        }
        out.push(effects(&means(families, picks.iter().copied())));
    }
    (full, out)
}

/// A bootstrap's summary for one quantity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Full-sample estimate, pp.
    pub estimate: f64,
    /// 2.5% quantile of the draws.
    pub low: f64,
    /// 97.5% quantile of the draws.
    pub high: f64,
    /// One-sided p of `H0: θ ≤ 0`.
    pub p_positive: f64,
}

/// Summarises one quantity's draws (NaN draws, from a draw with an empty arm, are left
/// out).
pub fn summarize(estimate: f64, draws: &[f64]) -> Summary {
    let mut finite: Vec<f64> = draws.iter().copied().filter(|x| x.is_finite()).collect();
    if finite.is_empty() || !estimate.is_finite() {
        return Summary {
            estimate,
            low: f64::NAN,
            high: f64::NAN,
            p_positive: f64::NAN,
        };
    }
    let p_positive = p_positive(estimate, &finite);
    let (low, high) = quantile_pair(&mut finite, 0.025, 0.975);
    Summary {
        estimate,
        low,
        high,
        p_positive,
    }
}

/// The one-sided p of `H0: θ ≤ 0`: `#{θ* − θ̂ ≥ θ̂} / B`, at least `1 / B`.
pub fn p_positive(estimate: f64, draws: &[f64]) -> f64 {
    if draws.is_empty() {
        return f64::NAN;
    }
    let threshold = estimate - 1e-9 * estimate.abs().max(1e-9);
    let count = draws.iter().filter(|&&t| t - estimate >= threshold).count();
    count.max(1) as f64 / draws.len() as f64
}

/// The intersection-union p: the largest of the parts' one-sided p-values (NaN when
/// any part is NaN).
pub fn intersection_union_p(parts: &[f64]) -> f64 {
    if parts.is_empty() || parts.iter().any(|p| p.is_nan()) {
        return f64::NAN;
    }
    parts.iter().copied().fold(0.0, f64::max)
}

/// The smallest symmetric margin at which the two one-sided tests reject, at `alpha`,
/// a value outside `(−m, m)` (see the module doc); `None` when no margin can.
pub fn tost_margin(estimate: f64, draws: &[f64], alpha: f64) -> Option<f64> {
    let b = draws.len();
    if b == 0 || !estimate.is_finite() || 1.0 / b as f64 > alpha {
        return None;
    }
    let k = (alpha * b as f64 + 1e-9).floor() as usize;
    if k >= b {
        return Some(0.0);
    }
    let kth_largest = |mut values: Vec<f64>| -> f64 {
        let (_, &mut x, _) = values.select_nth_unstable_by(b - 1 - k, f64::total_cmp);
        x
    };
    let up = kth_largest(draws.iter().map(|t| t - 2.0 * estimate).collect());
    let down = kth_largest(draws.iter().map(|t| 2.0 * estimate - t).collect());
    Some(up.max(down).max(0.0))
}

/// The two one-sided tests' p at margin `m` (the larger of the two), as the module doc
/// defines them: what [`tost_margin`] inverts.
pub fn tost_p(estimate: f64, draws: &[f64], m: f64) -> f64 {
    let b = draws.len() as f64;
    let low = draws.iter().filter(|&&t| t >= 2.0 * estimate + m).count();
    let high = draws.iter().filter(|&&t| t <= 2.0 * estimate - m).count();
    (low.max(high).max(1)) as f64 / b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(successes: f64, episodes: f64) -> Tally {
        Tally {
            successes,
            episodes,
        }
    }

    #[test]
    fn generic_rescue_gives_the_papers_check_exactly() {
        // (p0, p1, r) = (0.8, 0.4, 0.5): q = (0.9, 0.7); L = 40, Γ = 30, Σ = 30 − 10.
        let e = generic_rescue(0.8, 0.4, 0.5);
        assert!((e.loss - 40.0).abs() < 1e-9, "{e:?}");
        assert!((e.gamma[1] - 30.0).abs() < 1e-9, "{e:?}");
        assert!((e.sigma[1] - 20.0).abs() < 1e-9, "{e:?}");
        assert_eq!(e.delta, None);
    }

    #[test]
    fn l_gamma_sigma_delta_on_a_hand_built_table() {
        // Two families, 10 episodes per (arm, z). Arms: none, own, control A, control B.
        //          none      own       ctrl A    ctrl B
        // f1 z0:   9/10      9/10      9/10      10/10
        // f1 z1:   5/10      8/10      6/10      7/10
        // f2 z0:   8/10      9/10      8/10      8/10
        // f2 z1:   4/10      8/10      4/10      4/10
        let f1 = vec![
            [tally(9.0, 10.0), tally(5.0, 10.0)],
            [tally(9.0, 10.0), tally(8.0, 10.0)],
            [tally(9.0, 10.0), tally(6.0, 10.0)],
            [tally(10.0, 10.0), tally(7.0, 10.0)],
        ];
        let f2 = vec![
            [tally(8.0, 10.0), tally(4.0, 10.0)],
            [tally(9.0, 10.0), tally(8.0, 10.0)],
            [tally(8.0, 10.0), tally(4.0, 10.0)],
            [tally(8.0, 10.0), tally(4.0, 10.0)],
        ];
        let e = effects(&means(&[f1, f2], 0..2));
        // μ⁰ = (0.85, 0.45): L = 40. Own: μ = (0.9, 0.8): Γ = 35, Σ = 35 − 5 = 30.
        // A: (0.85, 0.5): Γ = 5, Σ = 5. B: (0.9, 0.55): Γ = 10, Σ = 10 − 5 = 5.
        // Δ = 30 − max(5, 5) = 25.
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(e.loss, 40.0));
        assert!(close(e.gamma[1], 35.0) && close(e.sigma[1], 30.0));
        assert!(close(e.gamma[2], 5.0) && close(e.sigma[2], 5.0));
        assert!(close(e.gamma[3], 10.0) && close(e.sigma[3], 5.0));
        assert!(e.delta.is_some_and(|d| close(d, 25.0)));
        // Repeating a family in the picks weighs it twice: f1, f1, f2.
        let f1_again = effects(&means(
            &[
                vec![[tally(1.0, 2.0), tally(0.0, 2.0)]],
                vec![[tally(2.0, 2.0), tally(2.0, 2.0)]],
            ],
            [0, 0, 1],
        ));
        // μ⁰ = (4/6, 2/6): L = 33.3.
        assert!(close(f1_again.loss, 100.0 / 3.0));
    }

    #[test]
    fn the_bootstrap_moves_every_arm_with_the_same_picks() {
        // Every family identical: every draw equals the estimate, so Δ's interval is a
        // point and the p of a positive quantity is its floor.
        let fam = vec![
            [tally(9.0, 10.0), tally(5.0, 10.0)],
            [tally(9.0, 10.0), tally(8.0, 10.0)],
            [tally(9.0, 10.0), tally(6.0, 10.0)],
        ];
        let (full, draws) = bootstrap(&[fam.clone(), fam.clone(), fam], 200, 7);
        assert_eq!(draws.len(), 200);
        assert!(draws.iter().all(|d| d == &full));
        let deltas: Vec<f64> = draws.iter().filter_map(|d| d.delta).collect();
        let s = summarize(full.delta.unwrap_or(f64::NAN), &deltas);
        assert!((s.low - 20.0).abs() < 1e-9 && (s.high - 20.0).abs() < 1e-9);
        assert_eq!(s.p_positive, 1.0 / 200.0);
    }

    #[test]
    fn one_sided_p_is_the_centered_upper_tail() {
        // θ̂ = 1; draws 0..=9: θ* − 1 ≥ 1 ⇔ θ* ≥ 2: 8 of 10.
        let draws: Vec<f64> = (0..10).map(f64::from).collect();
        assert_eq!(p_positive(1.0, &draws), 0.8);
        // θ̂ = 5: θ* ≥ 10: none, so the floor 1/10.
        assert_eq!(p_positive(5.0, &draws), 0.1);
        // A negative estimate: θ* ≥ 2θ̂ = −4: all ten.
        assert_eq!(p_positive(-2.0, &draws), 1.0);
    }

    #[test]
    fn iut_is_the_largest_part_and_holm_runs_over_layers() {
        assert_eq!(intersection_union_p(&[0.01, 0.2, 0.03]), 0.2);
        assert!(intersection_union_p(&[0.01, f64::NAN]).is_nan());
        // Four layers: IUT p 0.01, 0.02, 0.04, 0.5 → Holm 0.04, 0.06, 0.08, 0.5.
        let holm = crate::common::stats::holm(&[0.02, 0.01, 0.5, 0.04]);
        let want = [0.06, 0.04, 0.5, 0.08];
        for (h, w) in holm.iter().zip(want) {
            assert!((h - w).abs() < 1e-12, "{holm:?}");
        }
    }

    /// The slow reference: the smallest margin on a grid of step `step` at which
    /// [`tost_p`] is at most α, by trying every grid point from 0 upward.
    fn brute_force_margin(estimate: f64, draws: &[f64], step: f64) -> f64 {
        let mut m = 0.0;
        let mut i = 0u32;
        while tost_p(estimate, draws, m) > ALPHA {
            i += 1;
            m = f64::from(i) * step;
        }
        m
    }

    #[test]
    fn tost_margin_matches_a_brute_force_search() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for case in 0..20 {
            let b = [200usize, 1000, 997][case % 3];
            let centre: f64 = rng.random_range(-3.0..3.0);
            let spread: f64 = rng.random_range(0.5..4.0);
            let draws: Vec<f64> = (0..b)
                .map(|_| centre + spread * (rng.random::<f64>() - 0.5) * 4.0)
                .collect();
            let estimate = centre + rng.random_range(-0.5..0.5);
            let Some(m) = tost_margin(estimate, &draws, ALPHA) else {
                panic!("{b} draws can reject at 5%")
            };
            let step = 1e-3;
            let slow = brute_force_margin(estimate, &draws, step);
            // The margin is an infimum: the first grid point at or above it that
            // rejects is within one step above it.
            assert!(
                slow >= m - 1e-9 && slow <= m + step + 1e-9,
                "case {case}: fast {m}, slow {slow}"
            );
            assert!(tost_p(estimate, &draws, m + 1e-6) <= ALPHA);
        }
        // Too few draws to reach 5%: no margin.
        assert_eq!(tost_margin(0.0, &[1.0; 10], ALPHA), None);
    }

    #[test]
    fn tost_margin_by_hand() {
        // θ̂ = 0, 20 draws −9.5, −8.5, …, 9.5: k = ⌊0.05 × 20⌋ = 1, so the second
        // largest of θ* (8.5) and of −θ* (8.5): margin 8.5.
        let draws: Vec<f64> = (0..20).map(|i| f64::from(i) - 9.5).collect();
        assert_eq!(tost_margin(0.0, &draws, ALPHA), Some(8.5));
        // θ̂ = 1: θ* − 2 has second largest 6.5; 2 − θ* has 10.5.
        assert_eq!(tost_margin(1.0, &draws, ALPHA), Some(10.5));
    }
}
