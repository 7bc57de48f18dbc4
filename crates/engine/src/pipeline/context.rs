//! The plan's context-window check: for each configuration whose catalogue entry gives
//! the served model's `context_window`, the prompt tokens its requests will need, cell
//! by cell, against the window less the completion cap. A request that does not fit is
//! refused by the server (HTTP 400 on llama.cpp and vLLM) and the episode ends as an
//! infrastructure failure, so the plan says so before anything is sent. (llama.cpp
//! refuses only a prompt longer than its context; a prompt that fits with less room
//! than the cap is served until the context is full, and the harness records that
//! completion, cut short of the cap, as the same failure.)
//!
//! Two estimates per family, both offline and both under o200k_base scaled by
//! [`TEMPLATE_FACTOR`] (chat templates frame tools and turns, and open models'
//! tokenizers split JSON finer):
//! - the first request: system prompt, user request and the arm's opening menu;
//! - the longest request of a correct run: the reference program executed in the
//!   sandbox, each call's arguments and observation added to the conversation, the menu
//!   following the arm's hook. A real run that wanders is longer, so this is the least a
//!   correct episode needs (observations are counted as the family encodes them, also
//!   under canonical delivery).
//!
//! Owns: [`ContextWarning`] and [`warnings`]; [`first_request`] and
//! [`first_request_bytes`], which the served-prompt check after an apply shares.
//!
//! Never: sends a request, reads a key, or changes what runs: it only warns. Nothing of
//! it enters a node's key (the window is not part of a configuration's identity).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use petgraph::graph::NodeIndex;
use serde::{Deserialize, Serialize};

use super::dag::Work;
use super::Study;
use tbb_core::compile::Variant;
use tbb_core::grade::reference::reference_trace;
use tbb_harness::arm::Arm;
use tbb_provider::{tokens, Message, ToolSchema};
use tbb_report::format::count;

/// Served prompt tokens per o200k_base token. Measured with llama.cpp's server and
/// Qwen2.5-Coder's chat template: the first request of V = 8 took ≈1,400 prompt tokens
/// where o200k_base counts ≈1,106 (×1.27), of V = 32 ≈4,200 for ≈3,159 (×1.33); the
/// check rounds up to 4/3 so that it errs towards warning.
pub const TEMPLATE_FACTOR: f64 = 4.0 / 3.0;

/// How sure the check is that requests will not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fit {
    /// The first request does not fit: every episode fails at its first request.
    FirstRequest,
    /// The first request fits, but a correct run's longest request does not.
    CorrectRun,
}

/// One (configuration, cell, arm, cap) whose requests will not fit the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextWarning {
    /// Which estimate overflows.
    pub fit: Fit,
    /// The configuration.
    pub configuration: String,
    /// The cell (`v=32, w=low, d=raw, r=low`).
    pub cell: String,
    /// The arm.
    pub arm: String,
    /// The completion cap.
    pub completion_cap: u32,
    /// The configuration's `context_window`.
    pub context_window: u64,
    /// Estimated served prompt tokens of the first request (the largest family's).
    pub first_prompt_tokens: u64,
    /// Estimated served prompt tokens of a correct run's longest request (the largest
    /// family's).
    pub longest_prompt_tokens: u64,
    /// Families of the cell that overflow at this level.
    pub families: usize,
    /// Of those, the families whose prompt alone is larger than the window (every
    /// server refuses these; some serve the others until the context is full).
    pub prompt_alone: usize,
    /// Families of the cell.
    pub families_in_cell: usize,
}

impl fmt::Display for ContextWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, needs, when) = match self.fit {
            Fit::FirstRequest => ("the first request", self.first_prompt_tokens, "at once"),
            Fit::CorrectRun => (
                "a correct run's longest request",
                self.longest_prompt_tokens,
                "when they get that far",
            ),
        };
        let alone = if self.prompt_alone > 0 {
            format!(" (the prompt alone in {})", self.prompt_alone)
        } else {
            String::new()
        };
        write!(
            f,
            "{} at {} (arm {}, cap {}): {what} needs ≈{} prompt tokens + {} completion > context_window {} in {} of {} families{alone}; those episodes end {when} as infrastructure failures (context_exceeded: a server refuses the request, or stops the completion where its context ends). Give the server ≥ {} tokens of context and set context_window to match, or lower the cap.",
            self.configuration,
            self.cell,
            self.arm,
            count(u64::from(self.completion_cap)),
            count(needs),
            count(u64::from(self.completion_cap)),
            count(self.context_window),
            self.families,
            self.families_in_cell,
            count(needs + u64::from(self.completion_cap)),
        )
    }
}

/// Served prompt tokens, estimated from o200k_base tokens.
fn served(o200k: u64) -> u64 {
    (o200k as f64 * TEMPLATE_FACTOR).ceil() as u64
}

/// The first request of one variant under one arm, in o200k_base tokens (not scaled):
/// what a served prompt of it must at least hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstRequest {
    /// The system prompt and the user request.
    pub conversation: u64,
    /// The opening menu's tool schemas.
    pub menu: u64,
    /// How many tools the opening menu shows.
    pub tools: usize,
}

/// The opening messages of an episode of `variant` under `arm`.
fn opening(study: &Study, variant: &Variant, arm: usize) -> [Message; 2] {
    [
        Message::System {
            content: Arm::system_prompt(&study.manifest.arms[arm].form, &study.prompts),
        },
        Message::User {
            content: variant.user_request.clone(),
        },
    ]
}

fn menu_tokens(tools: &[ToolSchema]) -> u64 {
    tools.iter().map(tokens::tool).sum()
}

/// The first request's parts, counted offline.
pub fn first_request(study: &Study, variant: &Variant, arm: usize) -> FirstRequest {
    let menu = study.manifest.arms[arm].form.menu.start(variant);
    FirstRequest {
        conversation: opening(study, variant, arm)
            .iter()
            .map(tokens::message)
            .sum(),
        menu: menu_tokens(menu.visible()),
        tools: menu.visible().len(),
    }
}

/// The bytes of the first request's text: the system prompt, the user request and each
/// opening tool as offered ([`tokens::tool_text`]).
/// Cheap where [`first_request`] is not: counting tokens builds the tokenizer first.
pub fn first_request_bytes(study: &Study, variant: &Variant, arm: usize) -> u64 {
    let menu = study.manifest.arms[arm].form.menu.start(variant);
    let text: usize = opening(study, variant, arm)
        .iter()
        .map(|m| match m {
            Message::System { content } | Message::User { content } => content.len(),
            _ => 0,
        })
        .sum();
    let tools: usize = menu
        .visible()
        .iter()
        .map(|t| tokens::tool_text(t).len())
        .sum();
    (text + tools) as u64
}

/// `(first, longest)` estimated served prompt tokens of one variant under one arm.
pub fn prompt_tokens(study: &Study, variant: &Variant, arm: usize) -> (u64, u64) {
    let mut menu = study.manifest.arms[arm].form.menu.start(variant);
    let messages = opening(study, variant, arm);
    let conversation = |m: &[Message]| m.iter().map(tokens::message).sum::<u64>();
    let mut visible = menu_tokens(menu.visible());
    let first = conversation(&messages) + visible;
    let mut longest = first;
    let mut history = conversation(&messages);
    for turn in &reference_trace(variant).turns {
        for call in &turn.executed {
            history += tokens::count(&call.tool)
                + tokens::count(&call.arguments)
                + tokens::count(&call.observation);
            if let Some(now) = menu.after_call(&call.tool) {
                visible = menu_tokens(now);
            }
        }
        longest = longest.max(history + visible);
    }
    (served(first), served(longest))
}

/// The warnings of a study: every (configuration with a window, cell, arm, cap) whose
/// first request or whose correct run's longest request will not fit, in DAG order.
/// `variants` holds the compiled variants at hand; the others are compiled here.
pub fn warnings(study: &Study, variants: &HashMap<NodeIndex, Variant>) -> Vec<ContextWarning> {
    let dag = &study.dag;
    let configs = &study.manifest.configurations;
    if configs.iter().all(|c| c.context_window.is_none()) {
        return Vec::new();
    }
    type Group = (usize, String, usize, u32);
    let mut groups: BTreeMap<(usize, Group), Vec<(u64, u64)>> = BTreeMap::new();
    let mut order: HashMap<Group, usize> = HashMap::new();
    let mut measured: HashMap<(NodeIndex, usize), (u64, u64)> = HashMap::new();
    let mut seen: HashSet<(NodeIndex, usize, usize, u32)> = HashSet::new();
    let mut compiled: HashMap<NodeIndex, Option<Variant>> = HashMap::new();
    for (_, node) in dag.nodes() {
        let Work::Execute {
            compile,
            config,
            arm,
            cap,
            ..
        } = node.work
        else {
            continue;
        };
        // Repeats (and blocks) ask the same requests; one is enough.
        if configs[config].context_window.is_none() || !seen.insert((compile, config, arm, cap)) {
            continue;
        }
        let Work::Compile { cell, .. } = &dag.graph[compile].work else {
            continue;
        };
        let tokens = match measured.get(&(compile, arm)) {
            Some(&t) => t,
            None => {
                let variant = match variants.get(&compile) {
                    Some(v) => Some(v),
                    None => compiled
                        .entry(compile)
                        .or_insert_with(|| {
                            super::apply::compile_node(study, &dag.graph[compile]).ok()
                        })
                        .as_ref(),
                };
                // A variant that does not compile fails in apply, with its own error.
                let Some(variant) = variant else {
                    continue;
                };
                let t = prompt_tokens(study, variant, arm);
                measured.insert((compile, arm), t);
                t
            }
        };
        let group: Group = (config, cell.to_string(), arm, cap);
        let next = order.len();
        let at = *order.entry(group.clone()).or_insert(next);
        groups.entry((at, group)).or_default().push(tokens);
    }
    let mut out = Vec::new();
    for ((_, (config, cell, arm, cap)), families) in groups {
        let window = configs[config].context_window.unwrap_or(u64::MAX);
        let cap_tokens = u64::from(cap);
        let over = |t: u64| t.saturating_add(cap_tokens) > window;
        let first_over = families.iter().filter(|(f, _)| over(*f)).count();
        let longest_over = families.iter().filter(|(_, l)| over(*l)).count();
        let (fit, n, alone) = if first_over > 0 {
            let alone = families.iter().filter(|(f, _)| *f > window).count();
            (Fit::FirstRequest, first_over, alone)
        } else if longest_over > 0 {
            let alone = families.iter().filter(|(_, l)| *l > window).count();
            (Fit::CorrectRun, longest_over, alone)
        } else {
            continue;
        };
        out.push(ContextWarning {
            fit,
            configuration: configs[config].name.clone(),
            cell,
            arm: study.manifest.arms[arm].name.clone(),
            completion_cap: cap,
            context_window: window,
            first_prompt_tokens: families.iter().map(|t| t.0).max().unwrap_or(0),
            longest_prompt_tokens: families.iter().map(|t| t.1).max().unwrap_or(0),
            families: n,
            prompt_alone: alone,
            families_in_cell: families.len(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warning(fit: Fit) -> ContextWarning {
        ContextWarning {
            fit,
            configuration: "local-qwen".into(),
            cell: "v=32, w=low, d=raw, r=low".into(),
            arm: "baseline".into(),
            completion_cap: 1024,
            context_window: 4096,
            first_prompt_tokens: 4212,
            longest_prompt_tokens: 6100,
            families: 3,
            prompt_alone: 2,
            families_in_cell: 4,
        }
    }

    #[test]
    fn served_tokens_round_up_by_the_template_factor() {
        assert_eq!(served(0), 0);
        assert_eq!(served(3), 4);
        assert_eq!(served(1106), 1475);
        assert_eq!(served(3159), 4212);
    }

    #[test]
    fn a_warning_says_what_overflows_by_how_much_and_what_to_do() {
        let first = warning(Fit::FirstRequest).to_string();
        assert!(first.contains("the first request needs ≈4,212 prompt tokens + 1,024 completion > context_window 4,096 in 3 of 4 families (the prompt alone in 2)"), "{first}");
        assert!(
            first.contains("end at once as infrastructure failures (context_exceeded"),
            "{first}"
        );
        assert!(first.contains("≥ 5,236 tokens of context"), "{first}");
        let run = warning(Fit::CorrectRun).to_string();
        assert!(
            run.contains("a correct run's longest request needs ≈6,100"),
            "{run}"
        );
        assert!(run.contains("≥ 7,124 tokens"), "{run}");
    }
}
