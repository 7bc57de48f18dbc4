//! Every value of the paper that the report quotes, each with where the paper prints
//! it, grouped by the report section that shows it.
//!
//! Owns: the paper's numbers (and the few names and p-values it prints as text), their
//! citations, and how a quoted value is written ([`Quote::text`]). A section reads its
//! group here and decides which of its rows each quote stands beside; no other file of
//! the crate holds a paper number (a test reads the sections' sources to keep it so).
//!
//! Why typed Rust constants and not a data file: a section names the quote it shows
//! (`paper::lanes::ROUTED_MINUS_FIXED`), so a misspelt or removed quote fails to
//! compile instead of rendering "—"; a figure reads the same constant as a number for
//! the point it marks and a table reads it as text, so the two cannot disagree; and
//! nothing is parsed at render time, so nothing can fail there. Each group is one
//! [`quotes!`] block, one line per value — name, value, citation — which reads as the
//! list to audit against the paper.
//!
//! Invariants: a value is the paper's, digit for digit, in the paper's units (pp,
//! percent, counts, USD); only the sign and spacing follow the report's formatting
//! (`+0.8`, `[-14.6, -9.9]`, `$768.38`). A value the paper prints only as words is
//! not here; the one exception is a finding the paper states only qualitatively and a
//! section sets beside its table ([`toolsandbox`]), kept as a paraphrase in our words
//! (never the paper's sentence) and shown labelled as the paper's. The citations name the paper's figure, table or appendix where the value
//! is printed, or, for a value printed only in running text, the results paragraph.
//!
//! Never: holds a value of this study, or computes one from the paper's (no share is
//! derived from two of its counts: "127 of 192" stays two counts).

use super::figures::Whisker;
use super::format;

/// How a quoted value is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    /// A difference in percentage points, signed: `+0.8`.
    Pp(f64),
    /// A difference in percentage points with its interval: `-12.3 [-14.6, -9.9]`.
    PpCi(f64, f64, f64),
    /// An interval alone (the paper prints no estimate beside it): `[-19.8, -5.7]`.
    Interval(f64, f64),
    /// An unsigned level with its interval (balanced accuracy, %): `53.4 [44.6, 60.1]`.
    Ci(f64, f64, f64),
    /// A percentage as printed, one decimal: `13.6%`.
    Percent(f64),
    /// A percentage the paper prints whole (a rule's threshold): `20%`.
    WholePercent(u64),
    /// A range of percentages: `30.6–69.8%`.
    PercentRange(f64, f64),
    /// A count: `3,024`.
    Count(u64),
    /// A number with the paper's decimals: `47.7` is `Decimal(47.7, 1)`.
    Decimal(f64, usize),
    /// US dollars, in cents: `$768.38`.
    Usd(f64),
    /// Printed text kept verbatim: a p-value as the paper writes it (`<.001`), a name.
    Text(&'static str),
}

/// One quoted value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Quote {
    /// The constant's name, for test messages.
    pub name: &'static str,
    /// The value.
    pub value: Value,
    /// Where the paper prints it.
    pub cite: &'static str,
}

impl Quote {
    /// The value as the report writes it.
    pub(crate) fn text(&self) -> String {
        match self.value {
            Value::Pp(x) => format::effect_pp(x),
            Value::PpCi(e, l, h) => format::effect_with_interval(e, l, h),
            Value::Interval(l, h) => format::interval_pp(l, h),
            Value::Ci(e, l, h) => format!(
                "{} [{}, {}]",
                format::fixed(e, 1),
                format::fixed(l, 1),
                format::fixed(h, 1)
            ),
            Value::Percent(x) => format!("{}%", format::fixed(x, 1)),
            Value::WholePercent(n) => format!("{n}%"),
            Value::PercentRange(l, h) => {
                format!("{}–{}%", format::fixed(l, 1), format::fixed(h, 1))
            }
            Value::Count(n) => format::count(n),
            Value::Decimal(x, d) => format::fixed(x, d),
            // The paper prints cents, below a dollar too (`$0.88`), where the
            // report's own amounts go to four decimals.
            Value::Usd(x) => format!("${}", format::fixed(x, 2)),
            Value::Text(t) => t.to_string(),
        }
    }

    /// The value as a figure's mark: an estimate with its interval where the paper
    /// prints one (NaN ends otherwise); none for a value that is not a point.
    pub(crate) fn whisker(&self) -> Option<Whisker> {
        let (estimate, low, high) = match self.value {
            Value::Pp(x) | Value::Percent(x) | Value::Decimal(x, _) => (x, f64::NAN, f64::NAN),
            Value::PpCi(e, l, h) | Value::Ci(e, l, h) => (e, l, h),
            Value::Interval(l, h) | Value::PercentRange(l, h) => (f64::NAN, l, h),
            Value::WholePercent(_) | Value::Count(_) | Value::Usd(_) | Value::Text(_) => {
                return None
            }
        };
        Some(Whisker {
            estimate,
            low,
            high,
        })
    }

    /// A count's value (none for another kind of value).
    pub(crate) fn count(&self) -> Option<u64> {
        match self.value {
            Value::Count(n) => Some(n),
            _ => None,
        }
    }
}

/// Declares a group's quotes, one `NAME: value, "citation";` per line, and (for the
/// tests) `ALL`, every quote of the group.
macro_rules! quotes {
    ($($(#[doc = $doc:literal])* $name:ident: $value:expr, $cite:literal;)*) => {
        $(
            $(#[doc = $doc])*
            pub(crate) const $name: Quote = Quote {
                name: stringify!($name),
                value: $value,
                cite: $cite,
            };
        )*
        /// Every quote of the group.
        #[cfg(test)]
        pub(crate) const ALL: &[Quote] = &[$($name),*];
    };
}

/// The harness contract of the paper's main runs.
pub(crate) mod harness {
    use super::{Quote, Value::*};
    quotes! {
        /// The frozen completion cap (tokens per request) of every capacity result the
        /// contrasts, truncation, strata and lanes sections quote: their paper values
        /// stand beside this study's strata at this cap only.
        COMPLETION_CAP: Count(1_024), "harness contract (frozen budgets)";
    }

    /// [`COMPLETION_CAP`] as a number.
    pub(crate) fn completion_cap() -> u64 {
        COMPLETION_CAP.count().unwrap_or(0)
    }
}

/// The eight capacity contrasts (Figure 2a), routed menu at the frozen cap unless
/// named "fixed".
pub(crate) mod contrasts {
    use super::{Quote, Value::*};
    quotes! {
        /// V (128 − 8), families resampled.
        V: PpCi(-12.3, -14.6, -9.9), "capacity results, Figure 2a";
        V_HOLM: Text("<.001"), "capacity results, Figure 2a";
        /// V, configurations resampled.
        V_CONFIGURATIONS: Interval(-19.8, -5.7), "capacity results; Appendix D";
        V_CONFIGURATIONS_HOLM: Text(".011"), "capacity results; Appendix D";
        /// V with the full menu kept visible (the fixed lane).
        V_FIXED: PpCi(-17.5, -20.2, -14.9), "capacity results (full menu kept visible)";
        /// W (high − low), families resampled.
        W: PpCi(0.8, -1.2, 2.8), "capacity results, Figure 2a";
        W_CONFIGURATIONS: Interval(-4.6, 6.5), "Appendix D";
        W_CONFIGURATIONS_HOLM: Text("1.000"), "Appendix D";
        /// Compact − raw at (8, low), families resampled.
        COMPACT: PpCi(-3.7, -5.7, -1.9), "encoding results, Figure 2a";
        COMPACT_HOLM: Text(".003"), "encoding results";
        COMPACT_CONFIGURATIONS: Interval(-5.0, -2.5), "Appendix D";
        COMPACT_CONFIGURATIONS_HOLM: Text("<.001"), "Appendix D";
        /// Compact − raw, exact sign-flip test over the 12 intents.
        COMPACT_SIGN_FLIP_P: Text(".0098"), "encoding results; Appendix D";
        COMPACT_SIGN_FLIP_HOLM: Text(".068"), "encoding results; Appendix D";
        /// V × W, families resampled.
        V_X_W: PpCi(3.0, 0.2, 5.7), "encoding results, Figure 2a";
        V_X_W_HOLM: Text(".202"), "encoding results; Appendix D";
        /// Organization-equal weights.
        V_ORGANIZATION_EQUAL: Pp(-15.3), "Appendix D";
        W_ORGANIZATION_EQUAL: Pp(3.8), "Appendix D";
        COMPACT_ORGANIZATION_EQUAL: Pp(-4.7), "Appendix D";
    }
}

/// Where the V × W interaction comes from (Appendix D), routed menu at the frozen cap.
pub(crate) mod interaction_anatomy {
    use super::{Quote, Value::*};
    quotes! {
        /// The interaction expected if the two pressures acted independently.
        EXPECTED_INDEPENDENT: Pp(0.1), "Appendix D";
        /// The share of the coefficient from the units whose every stressed cell fails,
        /// those units, and the units in all (configuration × family × encoding).
        ALL_FAIL_SHARE: Percent(68.9), "Appendix D";
        ALL_FAIL_UNITS: Count(31), "Appendix D";
        UNITS: Count(1_512), "Appendix D";
        /// The coefficient without the units whose sign the single-stress cells force.
        UNFORCED: PpCi(2.0, -0.3, 4.1), "Appendix D";
        /// Units where joint stress succeeds while a single stress fails, and their
        /// share.
        JOINT_RESCUES: Count(200), "Appendix D";
        JOINT_RESCUE_SHARE: Percent(13.2), "Appendix D";
    }
}

/// Truncation at the frozen cap (routed menu).
pub(crate) mod truncation {
    use super::{Quote, Value::*};
    quotes! {
        /// Share of capacity episodes truncated at the cap, V = 8.
        SHARE_V8: Percent(1.6), "truncation results";
        /// The same at V = 128.
        SHARE_V128: Percent(13.6), "truncation results";
        /// Truncated episodes at V = 128, and those before any call.
        TRUNCATED_V128: Count(411), "truncation results";
        BEFORE_FIRST_CALL_V128: Count(391), "truncation results";
        /// Matched V = 8 / V = 128 pairs: pairs, lost, gained.
        PAIRS: Count(3_024), "truncation results";
        LOST: Count(472), "truncation results";
        GAINED: Count(101), "truncation results";
        /// Lost pairs whose V = 128 episode was truncated, and the pp they carry.
        LOST_TRUNCATED: Count(343), "truncation results";
        LOST_TRUNCATED_PP: Decimal(11.3, 1), "truncation results";
        LOST_PP: Decimal(15.6, 1), "truncation results";
        /// V effect against the V = 128 truncation rate across configurations.
        PEARSON_R: Decimal(-0.95, 2), "truncation results, Figure 6 (Appendix D)";
        SPEARMAN_RHO: Decimal(-0.82, 2), "truncation results, Figure 6 (Appendix D)";
        /// Configurations that never truncate, and the range of their V effects.
        NEVER_TRUNCATING: Count(8), "truncation results";
        NEVER_TRUNCATING_V_EFFECT_LOWEST: Pp(-2.1), "truncation results";
        NEVER_TRUNCATING_V_EFFECT_HIGHEST: Pp(2.8), "truncation results";
        /// A loss without truncation: one configuration's V effect and truncation rate
        /// (a point of Figure 6).
        LOSS_WITHOUT_TRUNCATION_V_EFFECT: Pp(-18.1), "truncation results";
        LOSS_WITHOUT_TRUNCATION_RATE: Percent(0.7), "truncation results";
        /// The per-configuration W effects (Figure 7's vertical axis), lowest and highest.
        W_EFFECT_LOWEST: Pp(-30.6), "capacity results; Table 4 (Appendix C)";
        W_EFFECT_HIGHEST: Pp(34.7), "capacity results; Table 4 (Appendix C)";
    }
}

/// The truncation strata and the worst-case bounds (routed menu, frozen cap).
pub(crate) mod strata {
    use super::{Quote, Value::*};
    quotes! {
        PAIRS: Count(3_024), "truncation results";
        /// Pairs that neither menu truncated, and the menu effect within them.
        PAIRS_NEITHER_TRUNCATED: Count(2_595), "stratification results";
        EFFECT_NEITHER_TRUNCATED: Pp(-1.5), "stratification results";
        /// Truncated failures of the V = 8 and V = 128 arms.
        TRUNCATED_FAILURES_V8: Count(48), "Appendix D";
        TRUNCATED_FAILURES_V128: Count(411), "Appendix D";
        /// Worst-case bounds on the total menu effect, arms resolving independently.
        BOUNDS_INDEPENDENT: Interval(-13.9, 1.3), "stratification results; Appendix D";
        /// The same with both arms resolving alike.
        BOUNDS_ALIKE: Interval(-12.3, -0.3), "Appendix D";
    }
}

/// Routed against fixed menu lane at the frozen cap.
pub(crate) mod lanes {
    use super::{Quote, Value::*};
    quotes! {
        PAIRS: Count(3_024), "Appendix D (lanes)";
        /// Routed − fixed VTS.
        ROUTED_MINUS_FIXED: PpCi(2.4, 1.1, 3.8), "Appendix D (lanes)";
        /// What the fixed lane uses more per episode.
        FIXED_EXTRA_TOKENS: Count(4_699), "Appendix D (lanes)";
        FIXED_EXTRA_EXPOSURES: Decimal(47.7, 1), "Appendix D (lanes)";
    }
}

/// What the paper's panel cost, and its outcomes.
pub(crate) mod costs {
    use super::{Quote, Value::*};
    quotes! {
        /// Every scored row, and what they cost at frozen route prices.
        ROWS: Count(26_576), "cost paragraph (Appendix C)";
        COST: Usd(768.38), "cost paragraph (Appendix C)";
        CONFIGURATIONS: Count(21), "evaluation setup";
        /// Conditions failed for infrastructure reasons: all, and the capacity ones.
        INFRA_FAILURES: Count(9), "Appendix D";
        INFRA_FAILURES_CAPACITY: Count(8), "Appendix D";
        /// Mean VTS over the capacity episodes.
        CAPACITY_VTS: Percent(82.1), "capacity results";
        /// The most and the least expensive configuration.
        MOST_EXPENSIVE: Text("Claude Opus 5"), "cost paragraph; Table 4";
        MOST_EXPENSIVE_COST: Usd(165.18), "cost paragraph; Table 4";
        CHEAPEST: Text("Qwen3.7 Flash"), "cost paragraph; Table 4";
        CHEAPEST_COST: Usd(0.88), "cost paragraph; Table 4";
    }
}

/// Table 8: first responses to a 128-schema request cut at the frozen cap.
pub(crate) mod first_responses {
    use super::{Quote, Value::*};
    quotes! {
        /// Configurations whose usage reports reasoning tokens.
        CONFIGURATIONS: Count(9), "Appendix E, Table 8";
        /// First responses that ended at the cap.
        CUT: Count(171), "Appendix E, Table 8";
        /// Of those, reasoning tokens only (count and printed share).
        REASONING_ONLY: Count(120), "Appendix E, Table 8";
        REASONING_ONLY_SHARE: Percent(70.2), "Appendix E, Table 8";
        /// Of those, inside a tool call and inside visible text.
        CUT_IN_TOOL_CALL: Count(39), "Appendix E, Table 8";
        CUT_IN_TEXT: Count(12), "Appendix E, Table 8";
        /// Configurations that never truncate a first response.
        NEVER_TRUNCATING: Count(5), "Appendix E, Table 8";
    }
}

/// The decoders (Table 11, Figure 11).
pub(crate) mod decoders {
    use super::{Quote, Value::*};
    quotes! {
        /// Packets: labelled (V, W, D), and excluded for several failures or an
        /// infrastructure failure.
        PACKETS: Count(127), "decoder results";
        PACKETS_V: Count(87), "decoder results";
        PACKETS_W: Count(28), "decoder results";
        PACKETS_D: Count(12), "decoder results";
        EXCLUDED_MULTI_FAILURE: Count(36), "decoder results";
        EXCLUDED_INFRA_FAILURE: Count(2), "decoder results";
        /// Balanced accuracy (%) per feature set, 95% intent-cluster interval.
        FIRST_UNMET: Ci(53.4, 44.6, 60.1), "Table 11";
        TERMINAL_FLAG: Ci(48.5, 43.0, 55.4), "Table 11";
        JOINT: Ci(48.9, 42.4, 58.9), "Table 11";
        JOINT_AND_TRACE_SHAPE: Ci(51.3, 44.8, 57.0), "Table 11";
        TRACE_SHAPE: Ci(52.4, 44.2, 60.2), "Table 11";
        CALL_COUNTS: Ci(54.8, 47.8, 61.3), "Table 11";
        OBLIGATION_VECTOR: Ci(52.5, 44.3, 62.4), "Table 11";
        TERMINATION_AWARE: Ci(54.1, 45.9, 63.2), "Table 11";
        MENU_SIZE_PROXY: Ci(71.8, 60.4, 82.6), "Table 11";
        /// A constant guess's balanced accuracy (%).
        CONSTANT_GUESS: Percent(33.3), "decoder methods";
        /// Returned-state (D) cases the joint record recovers, of the D cases.
        JOINT_RECOVERS_D: Count(1), "Table 11 text";
        /// Termination-aware labels' recall of D (%).
        TERMINATION_AWARE_RECALL_D: Percent(8.3), "Table 11 text";
        /// Paired gains (pp, 99% intent-cluster intervals): the first set over the
        /// second.
        GAIN_JOINT_OVER_FIRST_UNMET: PpCi(-4.4, -15.0, 9.7), "Figure 11";
        GAIN_TRACE_OVER_JOINT: PpCi(2.3, -9.1, 10.3), "Figure 11";
        GAIN_TRACE_OVER_CALL_COUNTS: PpCi(-3.5, -9.4, 5.1), "Figure 11";
        GAIN_TRACE_OVER_FIRST_UNMET: PpCi(-2.1, -15.1, 12.4), "Figure 11";
        GAIN_TRACE_OVER_TRACE_SHAPE: PpCi(-1.1, -7.6, 6.8), "Figure 11";
        /// The joint record on the failing stressed rows of multi-failure packets:
        /// rows, balanced accuracy, and D cases recovered of the D rows.
        MULTI_ROWS: Count(83), "decoder results (multi-failure packets)";
        MULTI_BALANCED_ACCURACY: Percent(62.4), "decoder results (multi-failure packets)";
        MULTI_RECOVERS_D: Count(3), "decoder results (multi-failure packets)";
        MULTI_D_ROWS: Count(26), "decoder results (multi-failure packets)";
    }
}

/// Which configurations the cap studies ran (Appendix E).
pub(crate) mod cap_strata {
    use super::{Quote, Value::*};
    quotes! {
        SWEEP_CONFIGURATIONS: Count(8), "Appendix E.1";
        SWEEP_B: Count(6), "Appendix E.1";
        SWEEP_M: Count(1), "Appendix E.1";
        SWEEP_N: Count(1), "Appendix E.1";
        /// The truncation share at V = 128 from which a configuration is in B.
        SWEEP_B_RULE: WholePercent(20), "Appendix E.1";
        CROSSOVER_CONFIGURATIONS: Count(4), "Appendix E.2";
        CROSSOVER_B: Count(2), "Appendix E.2";
        CROSSOVER_S: Count(1), "Appendix E.2";
        CROSSOVER_N: Count(1), "Appendix E.2";
    }
}

/// The cap studies: the sweep (Appendix E.1, Figure 2b) and the crossover (Appendix
/// E.2, Table 7, Figure 8).
pub(crate) mod cap_studies {
    use super::{Quote, Value::*};
    quotes! {
        SWEEP_LOW_CAP: Count(1_024), "Appendix E.1";
        SWEEP_HIGH_CAP: Count(16_384), "Appendix E.1";
        /// Stratum B's menu contrast at the low and high cap, and the change.
        SWEEP_B_LOW: Pp(-43.7), "Appendix E.1, Figure 2b";
        SWEEP_B_HIGH: PpCi(-2.7, -4.7, -0.9), "Appendix E.1, Figure 2b";
        SWEEP_B_CHANGE: PpCi(41.0, 36.2, 45.5), "Appendix E.1";
        /// The pre-specified margin the interaction must clear (pp).
        SWEEP_MARGIN: Count(5), "Appendix E.1";
        /// The size of strata M's and N's moves (printed unsigned).
        SWEEP_M_MOVE: Decimal(2.8, 1), "Appendix E.1";
        SWEEP_N_MOVE: Decimal(1.0, 1), "Appendix E.1";
        /// Stratum B's V = 128 truncation at the low cap, and at most at the high cap.
        SWEEP_B_TRUNCATED_LOW: PercentRange(30.6, 69.8), "Appendix E.1";
        SWEEP_B_TRUNCATED_HIGH: Percent(1.4), "Appendix E.1";
        /// The sweep's repeats disagree, at the low cap.
        SWEEP_DISAGREEMENT_LOW: Percent(17.5), "Limitations";
        CROSSOVER_LOW_CAP: Count(1_024), "Appendix E.2";
        CROSSOVER_HIGH_CAP: Count(4_096), "Appendix E.2";
        CROSSOVER_B_LOW: PpCi(-23.6, -28.5, -18.8), "Appendix E.2, Table 7, Figure 8";
        CROSSOVER_B_HIGH: PpCi(-21.3, -26.7, -16.1), "Appendix E.2, Table 7, Figure 8";
        CROSSOVER_B_CHANGE: PpCi(2.1, -2.6, 6.8), "Appendix E.2";
        CROSSOVER_B_BOUNDS: Interval(1.9, 2.6), "Appendix E.2";
        CROSSOVER_S_CHANGE: PpCi(1.4, -8.3, 11.1), "Appendix E.2";
        CROSSOVER_N_CHANGE: PpCi(-0.3, -4.5, 3.8), "Appendix E.2";
        CROSSOVER_B_TRUNCATED_LOW: PercentRange(28.8, 35.8), "Appendix E.2";
        CROSSOVER_B_TRUNCATED_HIGH: PercentRange(20.2, 25.3), "Appendix E.2";
        /// The manipulation check's ceiling on truncation at the high cap.
        CROSSOVER_CEILING: WholePercent(5), "Appendix E.2";
        CROSSOVER_DISAGREEMENT_LOW: Percent(24.2), "Appendix E.2";
        CROSSOVER_DISAGREEMENT_HIGH: Percent(21.2), "Appendix E.2";
    }
}

/// Discovery.
pub(crate) mod discovery {
    use super::{Quote, Value::*};
    quotes! {
        /// Clusters of required tools the discovery contrasts resample.
        CLUSTERS: Count(18), "contrast methods";
        /// Released rows that stopped for lack of availability before any request,
        /// of the rows that report zero tokens.
        UNAVAILABLE_ROWS: Count(1_113), "zero-token rows (audits appendix)";
        ZERO_TOKEN_ROWS: Count(1_118), "zero-token rows (audits appendix)";
        /// Discovery conditions failed for infrastructure reasons.
        INFRA_FAILURES: Count(1), "Appendix D";
    }
}

/// Each layer's repair (repair results) and the generic-rescue benchmark.
pub(crate) mod repairs {
    use super::{Quote, Value::*};
    quotes! {
        ROUTED_MENU_L: PpCi(17.5, 14.9, 20.2), "repair results";
        ROUTED_MENU_SIGMA: PpCi(4.9, 2.2, 7.5), "repair results";
        WORKFLOW_PROMPT_L: PpCi(2.4, -0.4, 5.0), "repair results";
        WORKFLOW_PROMPT_SIGMA: PpCi(0.0, -2.4, 2.4), "repair results";
        WORKFLOW_PROMPT_MARGIN: Decimal(3.6, 1), "repair results";
        INTERFACE_GUIDE_L: PpCi(1.5, -0.1, 3.1), "repair results";
        INTERFACE_GUIDE_SIGMA: PpCi(0.7, -1.7, 3.1), "repair results";
        INTERFACE_GUIDE_MARGIN: Decimal(1.7, 1), "repair results";
        /// The prompt repairs' panel.
        PROMPT_CONFIGURATIONS: Count(20), "evaluation setup";
        /// The generic-rescue benchmark's parameters (p₀, p₁, r) and its L, Γ, Σ.
        BENCHMARK_P0: Decimal(0.8, 1), "generic-rescue benchmark";
        BENCHMARK_P1: Decimal(0.4, 1), "generic-rescue benchmark";
        BENCHMARK_R: Decimal(0.5, 1), "generic-rescue benchmark";
        BENCHMARK_L: Count(40), "generic-rescue benchmark";
        BENCHMARK_GAMMA: Count(30), "generic-rescue benchmark";
        BENCHMARK_SIGMA: Count(20), "generic-rescue benchmark";
    }
}

/// The sentinel repeats (repair results).
pub(crate) mod sentinel {
    use super::{Quote, Value::*};
    quotes! {
        GROUPS: Count(480), "sentinel results";
        ROWS: Count(1_440), "sentinel results";
        RUNS_EACH: Count(3), "sentinel results";
        CONFIGURATIONS: Count(20), "sentinel results";
        FAMILIES: Count(4), "sentinel results";
        PASS_AT_1: Percent(89.7), "sentinel results";
        ALL_RUNS: Percent(82.7), "sentinel results";
        ANY_RUN: Percent(94.8), "sentinel results";
        DISAGREEMENT: Percent(12.1), "sentinel results";
        ROUTED_MENU_GAIN: PpCi(7.1, 2.5, 11.7), "sentinel results";
        WORKFLOW_PROMPT_GAIN: PpCi(-1.2, -2.5, 0.0), "sentinel results";
        INTERFACE_GUIDE_GAIN: PpCi(-0.4, -3.3, 2.5), "sentinel results";
    }
}

/// Repair against switching: incumbents for which a repair is success-superior,
/// Pareto-nondominated and cost-superior, of the incumbents.
pub(crate) mod switches {
    use super::{Quote, Value::*};
    quotes! {
        ROUTER: Text("21 / 21 / 0 of 21"), "switch results";
        ROUTED_MENU: Text("0 / 9 / 1 of 21"), "switch results";
        WORKFLOW_PROMPT: Text("0 / 10 / 1 of 20"), "switch results";
        INTERFACE_GUIDE: Text("0 / 9 / 1 of 20"), "switch results";
        CONTROLLER: Text("17 / 17 / 4 of 17"), "switch results";
    }
}

/// The depth frontier (Figure 9).
pub(crate) mod frontier {
    use super::{Quote, Value::*};
    quotes! {
        /// The episode budget (reported tokens) at every depth: the frontier's figure
        /// marks the paper's point only on a study with this budget.
        EPISODE_BUDGET: Count(128_000), "harness contract (frozen budgets)";
        FAMILIES: Count(4), "frontier results";
        /// The change in VTS from 2 calls.
        CHANGE_6: PpCi(-3.8, -8.8, 2.5), "frontier results";
        CHANGE_14: PpCi(-6.2, -12.5, 1.2), "frontier results";
        CHANGE_30: PpCi(-91.2, -95.0, -83.8), "frontier results";
        /// 30-call episodes within the episode budget (all failed), and of them at an
        /// infeasibility stop.
        WITHIN_BUDGET_30: Count(11), "frontier results";
        WITHIN_BUDGET_INFEASIBLE_30: Count(9), "frontier results";
        /// Executed calls at 30: median and interquartile range.
        CALLS_MEDIAN_30: Count(20), "frontier results";
        CALLS_Q1_30: Count(18), "frontier results";
        CALLS_Q3_30: Count(22), "frontier results";
        /// Median total tokens at 30 calls.
        TOKENS_MEDIAN_30: Count(132_392), "frontier results";
        /// Median prompt tokens at 14 calls, and 14-call episodes over the budget.
        PROMPT_MEDIAN_14: Count(79_898), "frontier results";
        OVER_BUDGET_14: Count(0), "frontier results";
    }

    /// [`EPISODE_BUDGET`] as a number.
    pub(crate) fn episode_budget() -> u64 {
        EPISODE_BUDGET.count().unwrap_or(0)
    }
}

/// The structural holdout (Appendix I, Table 10, Figure 10).
pub(crate) mod holdout {
    use super::{Quote, Value::*};
    quotes! {
        /// Configurations of the confirmatory set.
        CONFIRMATORY: Count(2), "holdout results";
        /// The controller, every configuration (raw cells).
        CONTROLLER_L: PpCi(96.1, 93.6, 98.0), "holdout results";
        CONTROLLER_SIGMA: PpCi(95.1, 92.6, 97.3), "holdout results";
        /// The controller on the confirmatory configurations.
        CONTROLLER_GAMMA_CONFIRMATORY: PpCi(95.8, 89.6, 100.0), "holdout results";
        CONTROLLER_DELTA_CONFIRMATORY: PpCi(93.8, 85.4, 102.1), "holdout results";
        /// The wrong-layer control (canonical delivery).
        CANONICAL_L: PpCi(-1.2, -3.7, 1.2), "holdout results";
        CANONICAL_GAMMA: PpCi(-0.2, -2.5, 1.7), "holdout results";
        /// Table 10: success at 2 calls.
        BASELINE_VTS_2: Percent(96.7), "Table 10";
        CONTROLLER_VTS_2: Percent(97.4), "Table 10";
        /// Table 10 at 30 calls: executed calls and model requests per episode.
        BASELINE_CALLS_30: Decimal(18.9, 1), "Table 10";
        BASELINE_REQUESTS_30: Decimal(19.8, 1), "Table 10";
        CONTROLLER_CALLS_30: Decimal(29.9, 1), "Table 10";
        CONTROLLER_BY_CONTROLLER_30: Decimal(28.7, 1), "Table 10";
        CONTROLLER_REQUESTS_30: Decimal(2.2, 1), "Table 10";
    }
}

/// The policy pilot (Appendix J, Table 13).
pub(crate) mod pilot {
    use super::{Quote, Value::*};
    quotes! {
        /// Blocks, and the probes that succeed.
        BLOCKS: Count(192), "Appendix J, Table 13";
        PROBE_SUCCESSES: Count(127), "Appendix J";
        /// Success over every block: share and blocks.
        RETRY: Percent(67.7), "Table 13";
        RETRY_BLOCKS: Count(130), "Table 13";
        ROUTER: Percent(78.6), "Table 13";
        ROUTER_BLOCKS: Count(151), "Table 13";
        COMBINED: Percent(81.8), "Table 13";
        COMBINED_BLOCKS: Count(157), "Table 13";
        TRACE_SELECTOR: Percent(97.9), "Table 13";
        TRACE_SELECTOR_BLOCKS: Count(188), "Table 13";
        SWITCH: Percent(99.0), "Table 13";
        SWITCH_BLOCKS: Count(190), "Table 13";
        /// Blocks whose probe failed, and success after a failed probe.
        FAILED_PROBES: Count(65), "Appendix J";
        RETRY_AFTER_FAILED: Percent(24.6), "Table 13 (after-failed-probe columns)";
        RETRY_AFTER_FAILED_BLOCKS: Count(16), "Appendix J";
        CAP_AFTER_FAILED: Percent(41.5), "Table 13 (after-failed-probe columns)";
        ROUTER_AFTER_FAILED: Percent(61.5), "Table 13 (after-failed-probe columns)";
        ROUTER_AFTER_FAILED_BLOCKS: Count(40), "Appendix J";
        COMBINED_AFTER_FAILED: Percent(66.2), "Table 13 (after-failed-probe columns)";
        COMBINED_AFTER_FAILED_BLOCKS: Count(43), "Appendix J";
        SWITCH_AFTER_FAILED: Percent(98.5), "Table 13 (after-failed-probe columns)";
        SWITCH_AFTER_FAILED_BLOCKS: Count(64), "Appendix J";
        /// The practitioner's policy: keep a successful probe, act after a failure.
        COMBINED_POLICY: Percent(88.5), "Appendix J, Table 13";
        SWITCH_POLICY: Percent(99.5), "Appendix J, Table 13";
        /// The trace selector minus the switch.
        SELECTOR_MINUS_SWITCH: PpCi(-1.0, -2.6, 0.0), "Appendix J";
        /// Mean cost per 1,000 conditions with the probe charged, and the switch
        /// without a probe.
        SELECTOR_COST: Usd(4.49), "Appendix J";
        PROBE_AND_SWITCH_COST: Usd(4.62), "Appendix J";
        SWITCH_ALONE_COST: Usd(1.94), "Appendix J";
    }
}

/// ToolSandbox with distraction tools (Appendix K). The paper prints no ToolSandbox
/// number: its finding is a sentence, kept here paraphrased (not its wording) because a
/// section sets it beside the panel's contrasts; the section's agreement line is
/// computed from the tables, never from this text.
pub(crate) mod toolsandbox {
    use super::{Quote, Value::*};
    quotes! {
        /// A larger menu's cost in tokens is clearer than its cost in success.
        MENU_COSTS_TOKENS_MORE_THAN_SUCCESS: Text(
            "in ToolSandbox, offering the agent more tools raises the tokens an episode \
             uses more clearly than it lowers the episode's success"
        ), "Appendix K and the abstract";
    }
}

#[cfg(test)]
pub(crate) mod tests;
