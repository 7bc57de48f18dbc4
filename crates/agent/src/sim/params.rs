//! The mechanism parameters of a simulated agent: the `[configuration.sim]` table of a
//! catalogue entry, deserialized strictly (unknown keys are errors).
//!
//! Every field has a documented default; the defaults describe a careful agent that never
//! reasons visibly long enough to reach a cap and never errs, so a table lists only what
//! makes its configuration different. Probabilities must lie in `[0, 1]`; token amounts
//! and rates must be finite and non-negative.
//!
//! Each parameter is a configuration's sensitivity to something the request shows:
//! visible schemas, look-alike connectors, prompt tokens, hops followed, requested facts
//! per record, positions between a value and its name, the observation's tokens, and
//! what the system prompt asks ([`super::instructions`]); in natural-language tasks
//! ([`super::natural`]), tools whose words match the task's about as well as the best
//! one, and exceptions that name a setting. No parameter is keyed on a
//! pressure level or on a prompt file: the encodings and the prompts differ in effect
//! only through what they do to that text. Every value in the catalogue is
//! calibration: chosen so that the panel's effects fall near the paper's, not measured
//! from any model (docs/panel-vs-paper.md has the calibration table).

use serde::{Deserialize, Serialize};

/// Mechanism parameters (see the module docs of [`super`] for how each one acts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    // ---- runs ------------------------------------------------------------------------
    /// Share of the agent's choices that a run's sampling redraws; the rest follow from
    /// the task and are the same in every run of it ([`super::draws`]). Calibration,
    /// the same for the whole panel: at 0.3 the repeats of the sentinel, sweep and
    /// crossover studies disagree between the paper's figures for them
    /// (`docs/panel-vs-paper.md`). Default 0.3.
    pub run_variance: f64,

    // ---- reasoning spend -------------------------------------------------------------
    /// Reasoning tokens spent on every request before anything else. Default 0.
    pub reasoning_base: f64,
    /// Reasoning tokens per visible tool schema while the agent has not yet made a
    /// successful call (it is still scanning the menu for its tools). Default 0.
    pub reasoning_per_schema: f64,
    /// Share of the per-schema spend paid again on later requests, once a call has
    /// succeeded and the agent knows its tools. Default 0.25.
    pub menu_rescan: f64,
    /// Reasoning tokens per 1,000 prompt tokens (long contexts make it think longer).
    /// Default 0.
    pub reasoning_per_ktok: f64,
    /// Sigma of the lognormal noise (median 1) multiplying the reasoning spend.
    /// Default 0.3.
    pub reasoning_sigma: f64,
    /// Chance that a request's reasoning runs long (a deliberation spike). Default 0.
    pub reasoning_spike: f64,
    /// Added chance of a deliberation spike per 100 schemas the request makes the agent
    /// scan (the visible schemas, × `menu_rescan` once it knows its tools): a long menu
    /// invites comparing look-alike candidates at length. Default 0.
    pub spike_per_100_schemas: f64,
    /// Multiplier on the spend of a spiking request. Default 6.
    pub spike_factor: f64,
    /// Relative growth of the reasoning spend per thing the system prompt asks the agent
    /// to check before each call (the workflow prompt asks four: the spend is
    /// `× (1 + 4 × this)`). Default 0.
    pub reasoning_per_check: f64,
    /// Whether reasoning tokens count against the completion cap. Default true.
    pub reasoning_counts_against_cap: bool,
    /// Whether the usage reports reasoning tokens (`Reported`) or hides them inside the
    /// output count (`Unknown`). Default false.
    pub reports_reasoning: bool,

    // ---- route choice ----------------------------------------------------------------
    /// Chance, per visible near-miss connector (sharing two of the route's three
    /// coordinates), of searching that connector instead of the route. Default 0.
    pub near_miss_confusion: f64,
    /// Chance, per visible look-alike connector (same collection, sharing only that
    /// coordinate with the route), of searching it instead of the route. In a
    /// natural-language task, per other relevant tool scoring within a fifth of the best
    /// ([`super::natural::choose`]), of choosing it instead. Default 0.
    pub lookalike_confusion: f64,
    /// Chance, per 100 visible schemas, of searching some unrelated visible connector
    /// (attention diluted by a long menu); in a natural-language task, of choosing some
    /// tool other than the best and its look-alikes. Default 0.
    pub menu_dilution: f64,

    // ---- handoffs and versions --------------------------------------------------------
    /// Chance of following the first hand-off correctly when facts are still missing.
    /// Default 1.
    pub handoff_reliability: f64,
    /// Multiplier on the reliability for each further hop (below 1: long chains wear the
    /// agent down). Default 1.
    pub hop_decay: f64,
    /// Share of hand-off failures that answer at once, guessing the missing facts; the
    /// rest repeat the previous search (a wasted call). Default 0.5.
    pub premature_share: f64,
    /// Chance of reading a superseded search hit instead of the current one. Default 0.
    pub stale_confusion: f64,
    /// Chance, on each request, that an agent caught repeating a search instead of
    /// following a hand-off breaks out and follows it. Default 0.5.
    pub loop_escape: f64,
    /// Chance of noticing that the record just read is superseded (facts still missing,
    /// no hand-off to follow) and reading the current version; otherwise it answers with
    /// what it has. Default 1.
    pub stale_recovery: f64,

    // ---- record reading ---------------------------------------------------------------
    /// Misread chance per requested fact, whatever the observation looks like.
    /// Default 0.
    pub misread: f64,
    /// Added misread chance per position between a value and the name that explains it:
    /// 0 where the name stands beside the value (`"name": value`), the value's column
    /// (from 1) in a row whose names are listed once elsewhere (a compact row and its
    /// `field_dictionary`). Counting positions is where a value is paired with the
    /// wrong name: such a misread takes a neighbouring column. Default 0.
    pub misread_per_position: f64,
    /// Added misread chance per 1,000 tokens of the observation the value is read from
    /// (the records, dictionaries and links in view around it). Default 0.
    pub misread_per_ktok_view: f64,
    /// Growth of the misread chance per further requested fact held by the same record
    /// (a crowded record is harder to read). Default 0.
    pub crowding: f64,
    /// Relative reduction of misread and stale-hit chances per hand-off already followed
    /// (a long, structured chain makes the agent more careful). Default 0.
    pub hop_care: f64,
    /// Share of the misread chance removed when the system prompt explains where the
    /// observed layout keeps its values ([`super::instructions`]). Default 0.2.
    pub guide_relief: f64,
    /// Relative growth of the misread chance per 10,000 prompt tokens. Default 0.
    pub context_misread: f64,
    /// Chance of noticing that a value just read does not have the type the answer
    /// schema asks for (a misread that took a neighbouring column, say), and of reading
    /// the record again (a further call) instead of keeping it. Default 1.
    pub type_check: f64,

    // ---- stalls -----------------------------------------------------------------------
    /// Chance of an empty response (no text, no call). Default 0.
    pub stall: f64,
    /// Added stall chance per 10,000 prompt tokens. Default 0.
    pub stall_per_10k: f64,

    // ---- contract ---------------------------------------------------------------------
    /// Chance of emitting two tool calls in one response. Default 0.
    pub double_call: f64,
    /// Chance of writing an argument string that is not valid JSON. Default 0.
    pub invalid_json: f64,

    // ---- decision, writes and answer ---------------------------------------------------
    /// Chance, when about to answer, of making a state change the request did not ask
    /// for (the named write when its condition does not hold, or another write tool of
    /// the route). Default 0.
    pub overeager_write: f64,
    /// Chance of wrapping the JSON answer in a markdown fence or adding prose. Default 0.
    pub format_slip: f64,
    /// Chance of writing a short visible note (what it does next and what is still
    /// missing) before a tool call; a cap can then fall inside the note or the call.
    /// Default 0.
    pub narration: f64,
    /// Share of hand-off and stale errors that each thing the system prompt asks the
    /// agent to check before each call removes (with `n` checks, `1 − (1 − this)^n` of
    /// them). Default 0.
    pub care_per_check: f64,

    // ---- natural-language tasks ([`super::natural`]) -----------------------------------
    /// Chance that, when a tool's result is an exception naming a setting (`Cellular
    /// service is not enabled`, `… cannot be turned on in low battery mode`), the agent
    /// calls the visible tool that changes that setting and then retries the failed
    /// call; otherwise it reports the error to the user. Drawn once per setting named,
    /// so the disposition holds for the whole episode. Neutral (careful) value 1: it
    /// always recovers, and the settings a menu can change then decide the outcome.
    /// Default 1.
    pub recover_dependency: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            run_variance: 0.3,
            reasoning_base: 0.0,
            reasoning_per_schema: 0.0,
            menu_rescan: 0.25,
            reasoning_per_ktok: 0.0,
            reasoning_sigma: 0.3,
            reasoning_spike: 0.0,
            spike_per_100_schemas: 0.0,
            spike_factor: 6.0,
            reasoning_per_check: 0.0,
            reasoning_counts_against_cap: true,
            reports_reasoning: false,
            near_miss_confusion: 0.0,
            lookalike_confusion: 0.0,
            menu_dilution: 0.0,
            handoff_reliability: 1.0,
            hop_decay: 1.0,
            premature_share: 0.5,
            loop_escape: 0.5,
            stale_confusion: 0.0,
            stale_recovery: 1.0,
            misread: 0.0,
            misread_per_position: 0.0,
            misread_per_ktok_view: 0.0,
            crowding: 0.0,
            hop_care: 0.0,
            guide_relief: 0.2,
            context_misread: 0.0,
            type_check: 1.0,
            stall: 0.0,
            stall_per_10k: 0.0,
            double_call: 0.0,
            invalid_json: 0.0,
            overeager_write: 0.0,
            format_slip: 0.0,
            narration: 0.0,
            care_per_check: 0.0,
            recover_dependency: 1.0,
        }
    }
}

impl Params {
    /// Reads a `[configuration.sim]` table (absent: all defaults) and checks ranges.
    pub fn from_table(table: Option<&toml::Table>) -> Result<Params, String> {
        let params: Params = match table {
            None => Params::default(),
            Some(t) => t
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| format!("sim parameters: {}", e.message()))?,
        };
        params.validate()?;
        Ok(params)
    }

    /// Checks that probabilities are probabilities and amounts are amounts.
    pub fn validate(&self) -> Result<(), String> {
        match self.problems().into_iter().next() {
            Some((_, message)) => Err(message),
            None => Ok(()),
        }
    }

    /// The names of every parameter, as written in a `[configuration.sim]` table.
    pub fn names() -> Vec<String> {
        toml::Table::try_from(Params::default())
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Every parameter out of its range, by name, with what is wrong.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let probabilities = [
            ("menu_rescan", self.menu_rescan),
            ("run_variance", self.run_variance),
            ("reasoning_spike", self.reasoning_spike),
            ("spike_per_100_schemas", self.spike_per_100_schemas),
            ("near_miss_confusion", self.near_miss_confusion),
            ("lookalike_confusion", self.lookalike_confusion),
            ("menu_dilution", self.menu_dilution),
            ("handoff_reliability", self.handoff_reliability),
            ("hop_decay", self.hop_decay),
            ("premature_share", self.premature_share),
            ("loop_escape", self.loop_escape),
            ("stale_confusion", self.stale_confusion),
            ("stale_recovery", self.stale_recovery),
            ("misread", self.misread),
            ("misread_per_position", self.misread_per_position),
            ("hop_care", self.hop_care),
            ("guide_relief", self.guide_relief),
            ("type_check", self.type_check),
            ("narration", self.narration),
            ("stall", self.stall),
            ("stall_per_10k", self.stall_per_10k),
            ("double_call", self.double_call),
            ("invalid_json", self.invalid_json),
            ("overeager_write", self.overeager_write),
            ("format_slip", self.format_slip),
            ("care_per_check", self.care_per_check),
            ("recover_dependency", self.recover_dependency),
        ];
        for (name, p) in probabilities {
            if !(0.0..=1.0).contains(&p) {
                out.push((
                    name,
                    format!("sim parameter {name} = {p} must lie in [0, 1]"),
                ));
            }
        }
        let amounts = [
            ("reasoning_base", self.reasoning_base),
            ("reasoning_per_schema", self.reasoning_per_schema),
            ("reasoning_per_ktok", self.reasoning_per_ktok),
            ("reasoning_sigma", self.reasoning_sigma),
            ("spike_factor", self.spike_factor),
            ("reasoning_per_check", self.reasoning_per_check),
            ("misread_per_ktok_view", self.misread_per_ktok_view),
            ("crowding", self.crowding),
            ("context_misread", self.context_misread),
        ];
        for (name, x) in amounts {
            if !x.is_finite() || x < 0.0 {
                out.push((
                    name,
                    format!("sim parameter {name} = {x} must be finite and non-negative"),
                ));
            }
        }
        out
    }

    /// Checks a `[configuration.sim]` table key by key: unknown names (with the nearest
    /// known one), values of the wrong type, and values out of range, every one of them.
    /// Each problem is `(key, message)`.
    pub fn table_problems(table: &toml::Table) -> Vec<(String, String)> {
        let names = Params::names();
        let mut out = Vec::new();
        let mut known = toml::Table::new();
        for (key, value) in table {
            if !names.iter().any(|n| n == key) {
                let hint = nearest(key, &names)
                    .map(|n| format!("; did you mean `{n}`?"))
                    .unwrap_or_default();
                out.push((key.clone(), format!("unknown sim parameter `{key}`{hint}")));
                continue;
            }
            let one: toml::Table = [(key.clone(), value.clone())].into_iter().collect();
            match Params::try_from_table(one) {
                Ok(_) => {
                    known.insert(key.clone(), value.clone());
                }
                Err(e) => out.push((key.clone(), format!("sim parameter `{key}`: {e}"))),
            }
        }
        if let Ok(params) = Params::try_from_table(known) {
            for (name, message) in params.problems() {
                out.push((name.to_string(), message));
            }
        }
        out
    }

    fn try_from_table(table: toml::Table) -> Result<Params, String> {
        table
            .try_into()
            .map_err(|e: toml::de::Error| e.message().trim().to_string())
    }

    /// Whether any error mechanism is switched on (used by docs and tests).
    pub fn is_error_free(&self) -> bool {
        let zero = [
            self.near_miss_confusion,
            self.lookalike_confusion,
            self.menu_dilution,
            self.stale_confusion,
            self.misread,
            self.misread_per_position,
            self.misread_per_ktok_view,
            self.stall,
            self.stall_per_10k,
            self.double_call,
            self.invalid_json,
            self.overeager_write,
            self.format_slip,
        ];
        zero.iter().all(|&x| x == 0.0)
            && self.handoff_reliability == 1.0
            && self.hop_decay == 1.0
            && self.recover_dependency == 1.0
    }
}

/// The known name closest to `name` by edit distance, when close enough to be a typo.
/// (The family module has the same helper; providers must not depend on families.)
fn nearest<'a>(name: &str, options: &'a [String]) -> Option<&'a str> {
    let distance = |a: &str, b: &str| {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let next = (prev + usize::from(ca != *cb))
                    .min(row[j] + 1)
                    .min(row[j + 1] + 1);
                prev = row[j + 1];
                row[j + 1] = next;
            }
        }
        row[b.len()]
    };
    options
        .iter()
        .map(|o| (distance(o, name), o.as_str()))
        .min()
        .filter(|(d, _)| *d <= name.len().max(3) / 2 + 2)
        .map(|(_, o)| o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_error_free_and_valid() {
        let p = Params::from_table(None).unwrap_or_default();
        assert!(p.is_error_free());
        assert_eq!(p, Params::default());
    }

    #[test]
    fn unknown_keys_and_bad_ranges_are_errors() {
        let t: toml::Table = toml::from_str("reasoning_bse = 3.0").unwrap_or_default();
        let e = Params::from_table(Some(&t)).err().unwrap_or_default();
        assert!(e.contains("reasoning_bse"), "{e}");
        let t: toml::Table = toml::from_str("stall = 1.5").unwrap_or_default();
        assert!(Params::from_table(Some(&t)).is_err());
        let t: toml::Table = toml::from_str("reasoning_base = -1.0").unwrap_or_default();
        assert!(Params::from_table(Some(&t)).is_err());
        let t: toml::Table =
            toml::from_str("reasoning_per_schema = 6.5\nstall = 0.02\nreasoning_base = 150")
                .unwrap_or_default();
        let p = Params::from_table(Some(&t)).unwrap_or_default();
        assert_eq!(p.reasoning_per_schema, 6.5);
        assert_eq!(p.stall, 0.02);
        assert_eq!(p.reasoning_base, 150.0, "an integer is read as a float");
    }

    #[test]
    fn a_table_is_checked_key_by_key_and_every_problem_is_listed() {
        let t: toml::Table = toml::from_str(
            "reasoning_bse = 3.0\nstall = 1.5\nreasoning_base = -1.0\nmisread = \"x\"\nnarration = nan\nformat_slip = 0.1",
        )
        .unwrap_or_default();
        let problems = Params::table_problems(&t);
        let keys: std::collections::BTreeSet<&str> =
            problems.iter().map(|(k, _)| k.as_str()).collect();
        let expected = [
            "misread",
            "narration",
            "reasoning_base",
            "reasoning_bse",
            "stall",
        ];
        assert_eq!(keys, expected.into_iter().collect(), "{problems:?}");
        assert_eq!(problems.len(), 5, "{problems:?}");
        assert!(
            problems
                .iter()
                .any(|(_, m)| m.contains("did you mean `reasoning_base`?")),
            "{problems:?}"
        );
        assert!(Params::table_problems(&toml::Table::new()).is_empty());
        assert_eq!(Params::names().len(), 38);
    }
}
