//! The mechanisms: how each parameter turns what the request shows into a rate.
//!
//! Every function here takes observable inputs only — the number of visible schemas,
//! the look-alike connectors among them, prompt tokens, hops already followed, requested
//! facts per record, the observation's layout, the system prompt's wording — and the
//! configuration's [`Params`]. None takes a pressure label, but two are dials on what
//! they observe: [`misread_probability`] takes its base rate from the layout's own
//! parameter, and [`PromptCues::read`] matches two fixed phrases.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::observe::Layout;
use super::params::Params;

/// What the system prompt asks of the agent, read from its text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptCues {
    /// It explains how to read records by interface (payload, fields, dictionaries).
    pub interface_guide: bool,
    /// It asks for private verification before each tool request.
    pub verify_each_call: bool,
}

impl PromptCues {
    /// Reads the cues from the system text (case-insensitive phrases).
    pub fn read(system: &str) -> PromptCues {
        let s = system.to_lowercase();
        PromptCues {
            interface_guide: s.contains("read returned records by")
                || (s.contains("field_dictionary") && s.contains("payload")),
            verify_each_call: s.contains("before each tool request")
                || s.contains("before every tool request"),
        }
    }
}

/// A standard normal draw (Box–Muller).
pub fn normal(rng: &mut ChaCha8Rng) -> f64 {
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
    /// Prompt cues.
    pub cues: PromptCues,
}

/// Reasoning tokens spent on a request:
/// `(base + per_schema × scanned + per_ktok × prompt/1000) × verify multiplier
///  × lognormal(σ)`, times `spike_factor` with chance
/// `reasoning_spike + spike_per_100_schemas × scanned/100`, where `scanned` is the
/// visible schemas (× `menu_rescan` once located).
///
/// The spike is what lets a larger cap rescue some truncated requests and not others:
/// an ordinary spend just over a 1,024 cap fits under 4,096, a deliberation over a long
/// menu (several thousand tokens) only under a much larger cap. Nothing here reads the
/// cap; it only decides what the spend is.
pub fn reasoning_tokens(p: &Params, x: SpendInputs, rng: &mut ChaCha8Rng) -> u64 {
    let menu_share = if x.located { p.menu_rescan } else { 1.0 };
    let scanned = x.schemas as f64 * menu_share;
    let mut mean = p.reasoning_base
        + p.reasoning_per_schema * scanned
        + p.reasoning_per_ktok * x.prompt_tokens as f64 / 1000.0;
    if x.cues.verify_each_call {
        mean *= p.verify_prompt_reasoning;
    }
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
pub fn route_confusion(
    p: &Params,
    near_miss: usize,
    lookalike: usize,
    unrelated: usize,
    schemas: usize,
    rng: &mut ChaCha8Rng,
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

/// Chance of following hop number `hop` (1-based) correctly.
pub fn follow_probability(p: &Params, hop: usize, cues: PromptCues) -> f64 {
    let r = p.handoff_reliability * p.hop_decay.powi(hop.saturating_sub(1) as i32);
    let fail = 1.0 - r.clamp(0.0, 1.0);
    let care = if cues.verify_each_call {
        p.verify_prompt_care
    } else {
        0.0
    };
    1.0 - fail * (1.0 - care)
}

/// Chance of reading a superseded hit instead of the current one.
pub fn stale_probability(p: &Params, hops_followed: usize, cues: PromptCues) -> f64 {
    let care = if cues.verify_each_call {
        p.verify_prompt_care
    } else {
        0.0
    };
    p.stale_confusion * (1.0 - p.hop_care).powi(hops_followed as i32) * (1.0 - care)
}

/// Inputs of the misread chance of one requested fact.
#[derive(Debug, Clone, Copy)]
pub struct ReadInputs {
    /// The observation's layout.
    pub layout: Layout,
    /// Requested facts this record holds.
    pub facts_in_record: usize,
    /// Hand-offs followed before this read.
    pub hops_followed: usize,
    /// Prompt tokens when the record was read.
    pub prompt_tokens: u64,
    /// Prompt cues.
    pub cues: PromptCues,
}

/// Misread chance per requested fact:
/// `base(layout) × (1 + crowding × (facts − 1)) × (1 − hop_care)^hops
///  × (1 + context_misread × prompt/10k) × (1 − guide_relief if guided)`.
pub fn misread_probability(p: &Params, x: ReadInputs) -> f64 {
    let base = match x.layout {
        Layout::Raw => p.misread_raw,
        Layout::Compact => p.misread_compact,
        Layout::Typed => p.misread_typed,
        Layout::Linked => p.misread_linked,
    };
    let crowd = 1.0 + p.crowding * x.facts_in_record.saturating_sub(1) as f64;
    let care = (1.0 - p.hop_care).powi(x.hops_followed as i32);
    let context = 1.0 + p.context_misread * x.prompt_tokens as f64 / 10_000.0;
    let guide = if x.cues.interface_guide {
        1.0 - p.guide_relief
    } else {
        1.0
    };
    (base * crowd * care * context * guide).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

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
            cues: PromptCues::default(),
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
                cues: PromptCues::default(),
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
    fn misreads_follow_layout_crowding_and_the_guide() {
        let p = Params {
            misread_compact: 0.1,
            crowding: 0.5,
            guide_relief: 0.5,
            ..Params::default()
        };
        let x = |layout, facts, guide| ReadInputs {
            layout,
            facts_in_record: facts,
            hops_followed: 0,
            prompt_tokens: 0,
            cues: PromptCues {
                interface_guide: guide,
                verify_each_call: false,
            },
        };
        assert_eq!(misread_probability(&p, x(Layout::Raw, 4, false)), 0.0);
        assert!((misread_probability(&p, x(Layout::Compact, 1, false)) - 0.1).abs() < 1e-12);
        assert!((misread_probability(&p, x(Layout::Compact, 3, false)) - 0.2).abs() < 1e-12);
        assert!((misread_probability(&p, x(Layout::Compact, 1, true)) - 0.05).abs() < 1e-12);
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

    #[test]
    fn cues_are_read_from_the_prompt() {
        let c = PromptCues::read(
            "Work step by step. Read returned records by their interface: raw ...",
        );
        assert!(c.interface_guide && !c.verify_each_call);
        let c = PromptCues::read("Before each tool request, check privately the connector.");
        assert!(c.verify_each_call && !c.interface_guide);
    }
}
