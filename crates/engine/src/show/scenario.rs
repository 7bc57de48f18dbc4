//! `tbb show` for a played ToolSandbox scenario: its conversation as the agent saw it
//! and its grade, read back from the stored transcript and the saved world.
//!
//! The grade is recomputed from the saved world (ToolSandbox's evaluator), as `apply`'s
//! regrade and `tbb certify` recompute it: no stored similarity is trusted.
//!
//! Owns: finding a scenario node by a prefix of its key, and the episode's plain-text
//! rendering.
//!
//! Never: runs a scenario or a tool, sends a request, or writes to the cache.

use std::fmt::Write as _;

use petgraph::graph::NodeIndex;
use tbb_harness::transcript::StoredOutcome;
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
                .map(|&i| format!("{}  {}", &dag.graph[i].key[..12], dag.graph[i].id))
                .collect::<Vec<_>>()
                .join("\n"),
        })),
    }
}

/// The played scenario of node `run` as text: what it is, every request's new messages
/// and its response, and its grade from the saved world.
pub fn render(study: &Study, cache: &Cache, run: NodeIndex) -> Result<String, ShowError> {
    let node = &study.dag.graph[run];
    let manifest = study.manifest.path.display().to_string();
    let unreadable = |why: String| ShowError::Unreadable {
        id: node.id.to_string(),
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
            id: node.id.to_string(),
            manifest,
        });
    };
    let payload: ScenarioPayload = crate::pipeline::rows::read(text).map_err(unreadable)?;
    let graded = tbb_harness::scenario::grade(spec.scenario, &payload.world)
        .map_err(|e| unreadable(e.to_string()))?;

    let mut out = String::new();
    let _ = writeln!(out, "{}", node.id);
    let _ = writeln!(out, "key {}", node.key);
    let _ = writeln!(
        out,
        "ToolSandbox scenario {} ({} distraction tools; {}), played by {} at a cap of {} tokens, repeat {}",
        spec.scenario.name,
        spec.scenario.distraction_tools,
        spec.scenario
            .categories
            .iter()
            .filter(|c| !c.is_distraction_count())
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", "),
        spec.config.name,
        spec.completion_cap,
        spec.repeat
    );
    for (i, (request, outcome)) in payload
        .transcript
        .requests
        .iter()
        .zip(&payload.transcript.outcomes)
        .enumerate()
    {
        let _ = writeln!(out, "\nrequest {}", i + 1);
        // The previous response comes back as the first appended message: shown once.
        for m in request
            .appended
            .iter()
            .filter(|m| !matches!(m, Message::Assistant { .. }))
        {
            message(&mut out, m);
        }
        match outcome {
            StoredOutcome::Response(r) => {
                let usage = r.usage.map_or_else(
                    || "no usage".to_string(),
                    |u| {
                        format!(
                            "{} prompt, {} completion tokens",
                            u.input_tokens, u.output_tokens
                        )
                    },
                );
                let _ = writeln!(out, "  response ({}; {usage}):", r.finish_raw);
                if let Some(text) = r.text.as_deref().filter(|t| !t.is_empty()) {
                    indented(&mut out, text);
                }
                for call in &r.tool_calls {
                    let _ = writeln!(out, "    call {}({})", call.name, call.arguments);
                }
            }
            StoredOutcome::Failed { error, attempts } => {
                let _ = writeln!(out, "  no response after {attempts} attempts: {error}");
            }
        }
    }
    for m in &payload.transcript.trailing {
        message(&mut out, m);
    }
    let _ = writeln!(
        out,
        "\nstopped: {}; {} tool calls, {} further user turns",
        tbb_core::compile::cell::level_name(&payload.stop),
        payload.calls,
        payload.user_turns
    );
    if let Some(user) = &payload.user_transcript {
        let _ = writeln!(out, "a live user was asked {} times", user.requests.len());
    }
    let _ = writeln!(
        out,
        "grade (from the saved world): similarity {} ({}){}, {} turns",
        graded.similarity,
        if graded.is_success() {
            "success"
        } else {
            "failure"
        },
        if graded.minefield_hit {
            ", a minefield was hit"
        } else {
            ""
        },
        graded.turn_count
    );
    for (k, m) in graded.milestone_mapping.iter().enumerate() {
        let _ = match m {
            Some(m) => writeln!(
                out,
                "  milestone {k}: message {}, similarity {}",
                m.message_index, m.similarity
            ),
            None => writeln!(out, "  milestone {k}: not matched"),
        };
    }
    Ok(out)
}

fn message(out: &mut String, m: &Message) {
    match m {
        Message::System { content } => {
            let _ = writeln!(out, "  system:");
            indented(out, content);
        }
        Message::User { content } => {
            let _ = writeln!(out, "  user:");
            indented(out, content);
        }
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let _ = writeln!(out, "  assistant:");
            if let Some(text) = content {
                indented(out, text);
            }
            for call in tool_calls {
                let _ = writeln!(out, "    call {}({})", call.name, call.arguments);
            }
        }
        Message::Tool { name, content, .. } => {
            let _ = writeln!(out, "  tool {name}:");
            indented(out, content);
        }
    }
}

fn indented(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "    {line}");
    }
}
