//! `tbb show` for a played ToolSandbox scenario: its conversation as the agent saw it,
//! a live user's own exchanges, and its grade, read back from the stored transcripts
//! and the saved world into a [`ScenarioView`], rendered as text ([`text`]) or as one
//! self-contained HTML page ([`html`]).
//!
//! The grade is recomputed from the saved world (ToolSandbox's evaluator), as `apply`'s
//! regrade and `tbb certify` recompute it: no stored similarity is trusted.
//!
//! Owns: finding a scenario node by a prefix of its key, and the view both renderers
//! read.
//!
//! Never: runs a scenario or a tool, sends a request, or writes to the cache.

pub mod html;
pub mod text;

use petgraph::graph::NodeIndex;
use tbb_harness::transcript::{StoredOutcome, Transcript};
use tbb_provider::Message;

use super::ShowError;
use crate::pipeline::cache::Cache;
use crate::pipeline::dag::Work;
use crate::pipeline::scenarios::ScenarioPayload;
use crate::pipeline::Study;

/// The scenario node whose key, or whose grade node's key, starts with `prefix`: `None`
/// when no scenario node's does (the prefix may name one of tbb's own episodes).
pub fn locate(study: &Study, prefix: &str) -> Option<Result<NodeIndex, ShowError>> {
    let prefix = prefix.trim().to_ascii_lowercase();
    if prefix.is_empty() {
        return None;
    }
    let dag = &study.dag;
    let matching: Vec<NodeIndex> = dag
        .nodes()
        .filter_map(|(i, n)| match n.work {
            Work::Scenario { .. } => {
                let graded = dag
                    .scenario_grade_of(i)
                    .is_some_and(|g| dag.graph[g].key.starts_with(&prefix));
                (n.key.starts_with(&prefix) || graded).then_some(i)
            }
            _ => None,
        })
        .collect();
    match matching.as_slice() {
        [] => None,
        [one] => Some(Ok(*one)),
        many => Some(Err(ShowError::AmbiguousPrefix {
            prefix,
            count: many.len(),
            candidates: many
                .iter()
                .take(5)
                .map(|&i| format!("{}  {}", &dag.graph[i].key[..12], dag.graph[i].id()))
                .collect::<Vec<_>>()
                .join("\n"),
        })),
    }
}

/// A played scenario as both renderers read it.
#[derive(Debug, Clone)]
pub struct ScenarioView {
    /// The study's name.
    pub study: String,
    /// The scenario node's identity.
    pub id: String,
    /// The scenario node's key.
    pub key: String,
    /// What was played, by whom, at what cap (one sentence).
    pub about: String,
    /// The agent's requests, in order.
    pub agent: Vec<Exchange>,
    /// Messages the conversation ended with after the agent's last response.
    pub trailing: Vec<Message>,
    /// The live user's requests, in order; `None` for a scripted user.
    pub user: Option<Vec<Exchange>>,
    /// How the episode stopped, its tool calls and the further user turns.
    pub stopped: String,
    /// The grade from the saved world.
    pub grade: Grade,
}

/// One request and what came back.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The messages new in this request (the previous response, which comes back as
    /// the first of them, left out: it is shown as that request's response).
    pub messages: Vec<Message>,
    /// The response, or the failure.
    pub outcome: Reply,
}

/// What a request got.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A response.
    Response {
        /// The provider's finish reason as sent.
        finish: String,
        /// `(prompt, completion)` tokens, when the response reported usage.
        usage: Option<(u64, u64)>,
        /// Its text, when not empty.
        text: Option<String>,
        /// `(name, arguments)` of each tool call.
        calls: Vec<(String, String)>,
    },
    /// No response after retries.
    Failed {
        /// Attempts made.
        attempts: u32,
        /// The last error.
        error: String,
    },
}

/// What a response's usage reads as (`1200 prompt, 34 completion tokens`, or `no
/// usage`), each count written by `number`: the text prints it bare, the page with
/// thousands separators.
pub(crate) fn usage_phrase(usage: Option<(u64, u64)>, number: fn(u64) -> String) -> String {
    usage.map_or_else(
        || "no usage".to_string(),
        |(prompt, completion)| {
            format!(
                "{} prompt, {} completion tokens",
                number(prompt),
                number(completion)
            )
        },
    )
}

/// ToolSandbox's grade of the saved world.
#[derive(Debug, Clone)]
pub struct Grade {
    /// The similarity (0 when a minefield was hit).
    pub similarity: f64,
    /// The similarity is exactly 1.
    pub success: bool,
    /// A minefield was hit.
    pub minefield_hit: bool,
    /// ToolSandbox's turn count.
    pub turns: usize,
    /// Per milestone, in order: the message it was matched to and the similarity.
    pub milestones: Vec<Option<(i64, f64)>>,
}

/// The played scenario of node `run`, its grade recomputed from the saved world.
pub fn load(study: &Study, cache: &Cache, run: NodeIndex) -> Result<ScenarioView, ShowError> {
    let node = &study.dag.graph[run];
    let manifest = study.manifest.path.display().to_string();
    let unreadable = |why: String| ShowError::Unreadable {
        id: node.id(),
        why,
        manifest: manifest.clone(),
    };
    let data = study.toolsandbox().map_err(|e| unreadable(e.to_string()))?;
    let spec = data
        .spec(&study.manifest, &node.work)
        .ok_or_else(|| unreadable("not a scenario of this manifest".into()))?;
    let payloads = cache.payloads(&[&node.key])?;
    let Some(text) = payloads.get(&*node.key) else {
        return Err(ShowError::NotRun {
            id: node.id(),
            manifest,
        });
    };
    let payload: ScenarioPayload = crate::pipeline::rows::read(text).map_err(unreadable)?;
    let graded = tbb_harness::scenario::grade(spec.scenario, &payload.world)
        .map_err(|e| unreadable(e.to_string()))?;
    let categories: Vec<&str> = spec
        .scenario
        .categories
        .iter()
        .filter(|c| !c.is_distraction_count())
        .map(|c| c.name())
        .collect();
    Ok(ScenarioView {
        study: study.manifest.study.clone(),
        id: node.id(),
        key: node.key.to_string(),
        about: format!(
            "ToolSandbox scenario {} ({} distraction tools; {}), played by {} at a cap of {} tokens, repeat {}",
            spec.scenario.name,
            spec.scenario.distraction_tools,
            categories.join(", "),
            spec.config.name,
            spec.completion_cap,
            spec.repeat
        ),
        agent: exchanges(&payload.transcript),
        trailing: payload.transcript.trailing.clone(),
        user: payload.user_transcript.as_ref().map(exchanges),
        stopped: format!(
            "{}; {} tool calls, {} further user turns",
            tbb_core::compile::cell::level_name(&payload.stop),
            payload.calls,
            payload.user_turns
        ),
        grade: Grade {
            similarity: graded.similarity,
            success: graded.is_success(),
            minefield_hit: graded.minefield_hit,
            turns: graded.turn_count,
            milestones: graded
                .milestone_mapping
                .iter()
                .map(|m| m.as_ref().map(|m| (m.message_index, m.similarity)))
                .collect(),
        },
    })
}

/// A transcript's requests and their outcomes.
fn exchanges(transcript: &Transcript) -> Vec<Exchange> {
    transcript
        .requests
        .iter()
        .zip(&transcript.outcomes)
        .map(|(request, outcome)| Exchange {
            messages: request
                .appended
                .iter()
                .filter(|m| !matches!(m, Message::Assistant { .. }))
                .cloned()
                .collect(),
            outcome: match outcome {
                StoredOutcome::Response(r) => Reply::Response {
                    finish: r.finish_raw.clone(),
                    usage: r.usage.map(|u| (u.input_tokens, u.output_tokens)),
                    text: r.text.clone().filter(|t| !t.is_empty()),
                    calls: r
                        .tool_calls
                        .iter()
                        .map(|c| (c.name.clone(), c.arguments.clone()))
                        .collect(),
                },
                StoredOutcome::Failed { error, attempts } => Reply::Failed {
                    attempts: *attempts,
                    error: error.clone(),
                },
            },
        })
        .collect()
}

/// Who sent a message (`system`, `user`, `assistant`, `tool NAME`), its text and its
/// tool calls as `(name, arguments)`.
pub(crate) fn parts(m: &Message) -> (String, Option<&str>, Vec<(&str, &str)>) {
    match m {
        Message::System { content } => ("system".into(), Some(content), Vec::new()),
        Message::User { content } => ("user".into(), Some(content), Vec::new()),
        Message::Assistant {
            content,
            tool_calls,
        } => (
            "assistant".into(),
            content.as_deref(),
            tool_calls
                .iter()
                .map(|c| (c.name.as_str(), c.arguments.as_str()))
                .collect(),
        ),
        Message::Tool { name, content, .. } => (format!("tool {name}"), Some(content), Vec::new()),
    }
}
