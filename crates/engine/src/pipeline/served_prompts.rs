//! After an apply: did a server on this machine show its model the whole prompt? A
//! server can drop part of a request without saying so — llama.cpp leaves out a
//! request's tools when the model's chat template has no place for them, and Ollama
//! cuts the start of a prompt longer than its context — and the model then answers a
//! question it was never fully asked, which grades as the model's failure. The one
//! trace of it is the prompt token count the server reports: this check compares each
//! episode's first request, as the server counted it, with tbb's own offline count of
//! what that request holds, and names the configurations whose servers counted far
//! less.
//!
//! Owns: [`ShortPrompts`], [`check`] and its thresholds [`SHORT_FACTOR`] and
//! [`BYTES_PER_TOKEN_SUSPECT`].
//!
//! Never: changes a result or a key, or fails an apply: it only warns. Never looks at a
//! remote API (their counts are their own business and some leave cached tokens out) or
//! at a request without usage.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use petgraph::graph::NodeIndex;
use serde::Serialize;

use super::context::{first_request, first_request_bytes, FirstRequest};
use super::Study;
use tbb_core::compile::Variant;
use tbb_report::format::count;

/// A first request is short when the server counted fewer prompt tokens than this
/// share of tbb's o200k_base count of it. Served templates and open models' tokenizers
/// count 1.27–1.33 times o200k_base for the full prompt (docs/local-models.md), so a
/// count under 0.6 times it means that the server left out more than half of the
/// request. The tools are most of it: about three fifths at V = 8 (1,074 o200k_base
/// tokens for a first request of `manifests/local.toml`, 418–451 without the tools),
/// nearly all of it at V = 32.
pub const SHORT_FACTOR: f64 = 0.6;

/// A first request is counted exactly (in o200k_base tokens) only when the server
/// reported fewer than one token per this many bytes of its text. English and JSON run
/// at 3–4 bytes an o200k_base token, and a served template adds a quarter to a third
/// more tokens, so a server that saw the whole request counts well over one token per
/// four bytes and never needs the exact count; one that dropped the tools, which are
/// most of the bytes, counts far fewer.
pub const BYTES_PER_TOKEN_SUSPECT: u64 = 4;

/// One configuration whose server counted short first requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShortPrompts {
    /// The configuration.
    pub configuration: String,
    /// Its episodes (run in this apply, with a counted first request) that were short.
    pub short: usize,
    /// Its episodes run in this apply with a counted first request.
    pub episodes: usize,
    /// The smallest and largest first-request prompt counts the server reported for the
    /// short ones.
    pub reported: (u64, u64),
    /// tbb's o200k_base count of the same requests, smallest and largest: the system
    /// prompt, the user request and the opening menu.
    pub counted: (u64, u64),
    /// Of which the system prompt and the user request alone, smallest and largest.
    pub without_tools: (u64, u64),
    /// The most tools an opening menu of a short request showed.
    pub tools: usize,
}

impl fmt::Display for ShortPrompts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let span = |(lo, hi): (u64, u64)| {
            if lo == hi {
                count(lo)
            } else {
                format!("{}–{}", count(lo), count(hi))
            }
        };
        write!(
            f,
            "{}: the server counted {} prompt tokens for the first request of {} of {} episodes, where tbb counts {} (o200k_base) for its system prompt, user request and up to {} tools ({} without the tools). The model did not see the whole prompt, and those verdicts are not about the task as posed. A chat template with no place for tools does this (llama.cpp then leaves them out: serve the model with a template that has tools), and so does a server that cuts long prompts (Ollama: give it a larger context); see docs/local-models.md.",
            self.configuration,
            span(self.reported),
            self.short,
            self.episodes,
            span(self.counted),
            self.tools,
            span(self.without_tools),
        )
    }
}

/// One executed episode's first request: its configuration, variant node, arm, and the
/// prompt tokens the server reported for it.
#[derive(Debug, Clone, Copy)]
pub struct Reported {
    /// Index of the configuration in the manifest.
    pub config: usize,
    /// The episode's compile node.
    pub compile: NodeIndex,
    /// Index of the arm in the manifest.
    pub arm: usize,
    /// Prompt tokens the server reported for the first request.
    pub prompt_tokens: u64,
}

/// The configurations on this machine whose servers counted short first requests, in
/// manifest order. `variants` holds every compiled variant of the apply; an episode
/// whose variant is not there is skipped.
pub fn check(
    study: &Study,
    variants: &HashMap<NodeIndex, Arc<Variant>>,
    firsts: &[Reported],
) -> Vec<ShortPrompts> {
    let configs = &study.manifest.configurations;
    let mut bytes: HashMap<(NodeIndex, usize), u64> = HashMap::new();
    let mut counted: HashMap<(NodeIndex, usize), FirstRequest> = HashMap::new();
    let mut by_config: BTreeMap<usize, (usize, Vec<(u64, FirstRequest)>)> = BTreeMap::new();
    for r in firsts {
        if !configs.get(r.config).is_some_and(|c| c.is_local()) {
            continue;
        }
        let Some(variant) = variants.get(&r.compile) else {
            continue;
        };
        let entry = by_config.entry(r.config).or_default();
        entry.0 += 1;
        // Counting tokens first builds the tokenizer (tenths of a second of CPU, more
        // than a whole live study's other work); a byte count clears every healthy
        // request without it.
        let request_bytes = *bytes
            .entry((r.compile, r.arm))
            .or_insert_with(|| first_request_bytes(study, variant, r.arm));
        if r.prompt_tokens.saturating_mul(BYTES_PER_TOKEN_SUSPECT) >= request_bytes {
            continue;
        }
        let first = *counted
            .entry((r.compile, r.arm))
            .or_insert_with(|| first_request(study, variant, r.arm));
        let whole = first.conversation + first.menu;
        if (r.prompt_tokens as f64) < SHORT_FACTOR * whole as f64 {
            entry.1.push((r.prompt_tokens, first));
        }
    }
    by_config
        .into_iter()
        .filter(|(_, (_, short))| !short.is_empty())
        .map(|(config, (episodes, short))| {
            let range = |f: &dyn Fn(&(u64, FirstRequest)) -> u64| {
                let lo = short.iter().map(f).min().unwrap_or(0);
                let hi = short.iter().map(f).max().unwrap_or(0);
                (lo, hi)
            };
            ShortPrompts {
                configuration: configs[config].name.clone(),
                short: short.len(),
                episodes,
                reported: range(&|s| s.0),
                counted: range(&|s| s.1.conversation + s.1.menu),
                without_tools: range(&|s| s.1.conversation),
                tools: short.iter().map(|s| s.1.tools).max().unwrap_or(0),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_names_the_counts_and_the_likely_causes() {
        let w = ShortPrompts {
            configuration: "local-smollm2-135m".into(),
            short: 16,
            episodes: 16,
            reported: (479, 479),
            counted: (1_106, 3_204),
            without_tools: (352, 358),
            tools: 32,
        };
        let text = w.to_string();
        assert!(
            text.starts_with(
                "local-smollm2-135m: the server counted 479 prompt tokens for the first request of 16 of 16 episodes, where tbb counts 1,106–3,204 (o200k_base)"
            ),
            "{text}"
        );
        assert!(
            text.contains("up to 32 tools (352–358 without the tools)"),
            "{text}"
        );
        assert!(text.contains("llama.cpp then leaves them out"), "{text}");
    }
}
