//! The mechanisms: how each parameter turns what the request shows into a rate.
//!
//! Every function here takes observable inputs only — the number of visible schemas,
//! the look-alike connectors among them, prompt tokens, hops already followed, requested
//! facts per record, the positions between a value and its name, the observation's
//! tokens, what the system prompt asks ([`Instructions`]) — and the configuration's
//! [`Params`]. None takes a pressure level or a prompt's name.

use rand::{Rng, RngExt};

use super::instructions::Instructions;
use super::observe::Layout;
use super::params::Params;

/// A standard normal draw (Box–Muller).
pub fn normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Inputs of the reasoning spend of one request.
#[derive(Debug, Clone, Copy)]
pub struct SpendInputs {
    /// Visible tool schemas.
    pub schemas: usize,
    /// Prompt tokens of the request.
    pub prompt_tokens: u64,
    /// Whether a call has already succeeded (the agent knows its tools).
    pub located: bool,
    /// What the system prompt asks.
    pub asked: Instructions,
}

/// Reasoning tokens spent on a request:
/// `(base + per_schema × scanned + per_ktok × prompt/1000) × (1 + per_check × checks)
///  × lognormal(σ)`, times `spike_factor` with chance
/// `reasoning_spike + spike_per_100_schemas × scanned/100`, where `scanned` is the
/// visible schemas (× `menu_rescan` once located).
///
/// The spike is what lets a larger cap rescue some truncated requests and not others:
/// an ordinary spend just over a 1,024 cap fits under 4,096, a deliberation over a long
/// menu (several thousand tokens) only under a much larger cap. Nothing here reads the
/// cap; it only decides what the spend is.
pub fn reasoning_tokens<R: Rng + ?Sized>(p: &Params, x: SpendInputs, rng: &mut R) -> u64 {
    let menu_share = if x.located { p.menu_rescan } else { 1.0 };
    let scanned = x.schemas as f64 * menu_share;
    let mut mean = p.reasoning_base
        + p.reasoning_per_schema * scanned
        + p.reasoning_per_ktok * x.prompt_tokens as f64 / 1000.0;
    mean *= 1.0 + p.reasoning_per_check * f64::from(x.asked.checks_per_call);
    // Draw the noise even when the mean is zero, so draws stay aligned across settings.
    let noise = (p.reasoning_sigma * normal(rng)).exp();
    let spike: f64 = rng.random();
    if spike < p.reasoning_spike + p.spike_per_100_schemas * scanned / 100.0 {
        mean *= p.spike_factor;
    }
    (mean * noise).round().max(0.0) as u64
}

/// Chance of an empty response.
pub fn stall_probability(p: &Params, prompt_tokens: u64) -> f64 {
    (p.stall + p.stall_per_10k * prompt_tokens as f64 / 10_000.0).clamp(0.0, 1.0)
}

/// Which kind of wrong search tool a confused agent picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confusion {
    /// The route.
    None,
    /// A near-miss connector (two shared coordinates).
    NearMiss,
    /// A look-alike connector (same collection only).
    Lookalike,
    /// Any other visible connector.
    Unrelated,
}

/// Draws the route choice of a search that no hand-off names: each visible near-miss
/// connector and each look-alike pulls with its own chance, and a long menu dilutes
/// attention in proportion to its size.
pub fn route_confusion<R: Rng + ?Sized>(
    p: &Params,
    near_miss: usize,
    lookalike: usize,
    unrelated: usize,
    schemas: usize,
    rng: &mut R,
) -> Confusion {
    let pull = |per: f64, n: usize| 1.0 - (1.0 - per).powi(n as i32);
    let near = pull(p.near_miss_confusion, near_miss);
    let look = pull(p.lookalike_confusion, lookalike);
    let dilute = if unrelated > 0 {
        (p.menu_dilution * schemas as f64 / 100.0).min(1.0)
    } else {
        0.0
    };
    let (a, b, c): (f64, f64, f64) = (rng.random(), rng.random(), rng.random());
    if a < near {
        Confusion::NearMiss
    } else if b < look {
        Confusion::Lookalike
    } else if c < dilute {
        Confusion::Unrelated
    } else {
        Confusion::None
    }
}

/// Share of hand-off and stale errors the checks asked before each call remove:
/// `1 − (1 − care_per_check)^checks`.
pub fn checking_care(p: &Params, asked: Instructions) -> f64 {
    1.0 - (1.0 - p.care_per_check).powi(i32::try_from(asked.checks_per_call).unwrap_or(i32::MAX))
}

/// Chance of following hop number `hop` (1-based) correctly.
pub fn follow_probability(p: &Params, hop: usize, asked: Instructions) -> f64 {
    let r = p.handoff_reliability * p.hop_decay.powi(hop.saturating_sub(1) as i32);
    let fail = 1.0 - r.clamp(0.0, 1.0);
    1.0 - fail * (1.0 - checking_care(p, asked))
}

/// Chance of reading a superseded hit instead of the current one.
pub fn stale_probability(p: &Params, hops_followed: usize, asked: Instructions) -> f64 {
    p.stale_confusion
        * (1.0 - p.hop_care).powi(hops_followed as i32)
        * (1.0 - checking_care(p, asked))
}

/// Inputs of the misread chance of one requested fact.
#[derive(Debug, Clone, Copy)]
pub struct ReadInputs {
    /// The observation's layout (only to know whether the prompt explains it).
    pub layout: Layout,
    /// Positions between the value and the name that explains it (0: side by side).
    pub positions: usize,
    /// Tokens of the observation the value is read from.
    pub view_tokens: u64,
    /// Requested facts this record holds.
    pub facts_in_record: usize,
    /// Hand-offs followed before this read.
    pub hops_followed: usize,
    /// Prompt tokens when the record was read.
    pub prompt_tokens: u64,
    /// What the system prompt asks.
    pub asked: Instructions,
}

/// Misread chance per requested fact:
/// `(misread + per_position × positions + per_ktok_view × view/1000)
///  × (1 + crowding × (facts − 1)) × (1 − hop_care)^hops
///  × (1 + context_misread × prompt/10k) × (1 − guide_relief if the layout is explained)`.
///
/// The layout enters only through what it does to the text (positions, tokens) and
/// through whether the prompt explains it; no rate belongs to a layout.
pub fn misread_probability(p: &Params, x: ReadInputs) -> f64 {
    let base = p.misread
        + p.misread_per_position * x.positions as f64
        + p.misread_per_ktok_view * x.view_tokens as f64 / 1000.0;
    let crowd = 1.0 + p.crowding * x.facts_in_record.saturating_sub(1) as f64;
    let care = (1.0 - p.hop_care).powi(x.hops_followed as i32);
    let context = 1.0 + p.context_misread * x.prompt_tokens as f64 / 10_000.0;
    let guide = if x.asked.explained.contains(x.layout) {
        1.0 - p.guide_relief
    } else {
        1.0
    };
    (base * crowd * care * context * guide).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::instructions::Explained;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn reasoning_grows_with_the_menu_and_shrinks_once_located() {
        let p = Params {
            reasoning_base: 100.0,
            reasoning_per_schema: 5.0,
            reasoning_sigma: 0.0,
            ..Params::default()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let x = |schemas, located| SpendInputs {
            schemas,
            prompt_tokens: 0,
            located,
            asked: Instructions::default(),
        };
        assert_eq!(reasoning_tokens(&p, x(8, false), &mut rng), 140);
        assert_eq!(reasoning_tokens(&p, x(128, false), &mut rng), 740);
        assert_eq!(reasoning_tokens(&p, x(128, true), &mut rng), 260);
    }

    #[test]
    fn deliberation_spikes_grow_with_the_schemas_scanned() {
        let p = Params {
            reasoning_base: 100.0,
            reasoning_sigma: 0.0,
            spike_per_100_schemas: 0.5,
            spike_factor: 10.0,
            menu_rescan: 0.25,
            ..Params::default()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut share = |schemas, located| {
            let x = SpendInputs {
                schemas,
                prompt_tokens: 0,
                located,
                asked: Instructions::default(),
            };
            let spikes = (0..20_000)
                .map(|_| reasoning_tokens(&p, x, &mut rng))
                .inspect(|&t| assert!(t == 100 || t == 1_000, "{t}"))
                .filter(|&t| t == 1_000)
                .count();
            spikes as f64 / 20_000.0
        };
        // Chances 0.5 × 128/100 = 0.64, 0.5 × 8/100 = 0.04, 0.5 × 0.25 × 128/100 = 0.16.
        for (schemas, located, chance) in [(128, false, 0.64), (8, false, 0.04), (128, true, 0.16)]
        {
            let got = share(schemas, located);
            assert!((got - chance).abs() < 0.015, "{schemas} {located}: {got}");
        }
    }

    #[test]
    fn misreads_follow_positions_view_crowding_and_the_guide() {
        let p = Params {
            misread_per_position: 0.01,
            misread_per_ktok_view: 0.02,
            crowding: 0.5,
            guide_relief: 0.5,
            ..Params::default()
        };
        let x = |positions, view_tokens, facts, explained| ReadInputs {
            layout: Layout::Compact,
            positions,
            view_tokens,
            facts_in_record: facts,
            hops_followed: 0,
            prompt_tokens: 0,
            asked: Instructions {
                checks_per_call: 0,
                explained,
            },
        };
        let none = Explained::default();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // A value beside its name, in an empty view: nothing to misread.
        assert_eq!(misread_probability(&p, x(0, 0, 4, none)), 0.0);
        assert!(close(misread_probability(&p, x(10, 0, 1, none)), 0.1));
        assert!(close(misread_probability(&p, x(10, 500, 1, none)), 0.11));
        assert!(close(misread_probability(&p, x(10, 0, 3, none)), 0.2));
        // The guide relieves the layouts it explains, and only those.
        assert!(close(
            misread_probability(&p, x(10, 0, 1, Explained::ALL)),
            0.05
        ));
        let raw_only = Instructions::read("Raw records keep their values under payload.");
        assert!(close(
            misread_probability(&p, x(10, 0, 1, raw_only.explained)),
            0.1
        ));
    }

    #[test]
    fn checks_add_reasoning_and_care_in_proportion_to_what_they_ask() {
        let p = Params {
            reasoning_base: 100.0,
            reasoning_sigma: 0.0,
            reasoning_per_check: 0.25,
            care_per_check: 0.5,
            handoff_reliability: 0.6,
            ..Params::default()
        };
        let asked = |checks_per_call| Instructions {
            checks_per_call,
            explained: Explained::default(),
        };
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let spend = |checks, rng: &mut ChaCha8Rng| {
            let x = SpendInputs {
                schemas: 0,
                prompt_tokens: 0,
                located: false,
                asked: asked(checks),
            };
            reasoning_tokens(&p, x, rng)
        };
        assert_eq!(spend(0, &mut rng), 100);
        assert_eq!(spend(1, &mut rng), 125);
        assert_eq!(spend(4, &mut rng), 200);
        // Failures 0.4, then halved per check.
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(follow_probability(&p, 1, asked(0)), 0.6));
        assert!(close(follow_probability(&p, 1, asked(1)), 0.8));
        assert!(close(follow_probability(&p, 1, asked(2)), 0.9));
    }

    #[test]
    fn confusion_needs_look_alikes() {
        let p = Params {
            near_miss_confusion: 1.0,
            lookalike_confusion: 1.0,
            ..Params::default()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        assert_eq!(
            route_confusion(&p, 0, 0, 10, 128, &mut rng),
            Confusion::None
        );
        assert_eq!(
            route_confusion(&p, 1, 0, 10, 128, &mut rng),
            Confusion::NearMiss
        );
        assert_eq!(
            route_confusion(&p, 0, 2, 0, 8, &mut rng),
            Confusion::Lookalike
        );
    }
}
