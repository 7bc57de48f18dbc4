//! The view model of one stored episode ([`EpisodeView`]) and how it is built from a
//! payload: the trace rebuilt from the transcript, the verdict graded again, and the
//! headroom left against each limit. The renderings ([`super::text`], [`super::html`])
//! read only this model.
//!
//! Never: trusts a stored verdict, or decides anything a verdict does not already say.

use std::collections::HashMap;

use petgraph::graph::NodeIndex;

use crate::pipeline::dag::Work;
use crate::pipeline::{ExecutePayload, Study};
use tbb_core::compile::Variant;
use tbb_core::grade::trace::{FinishReason, InfraFailure, Issuer, Limits, StopReason, Trace};
use tbb_core::grade::{grade_with_budget, Impossible, Obligation, TerminalFlag, Verdict};
use tbb_core::sandbox::Sandbox;
use tbb_harness::transcript::StoredOutcome;
use tbb_provider::Message;

use super::{unreadable, ShowError, Sources};

/// One stored episode, as `tbb show` presents it.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeView {
    /// The study.
    pub study: String,
    /// The execute node's identity.
    pub id: String,
    /// The episode's key (the execute node's; `transcript_ref`).
    pub key: String,
    /// The grade node's key (`node_key`).
    pub grade_key: String,
    /// Where it sits and what it is: `(name, value)` — configuration, model, block,
    /// arm and its components, cap, repeat, variant, family and cell.
    pub identity: Vec<(&'static str, String)>,
    /// The system prompt's file name (`prompts/<name>`); empty when none was sent.
    pub system_prompt: String,
    /// Its text.
    pub system_text: String,
    /// The user request, as sent.
    pub user_request: String,
    /// Every request, in order.
    pub exchanges: Vec<Exchange>,
    /// The verdict.
    pub verdict: VerdictView,
    /// The limits, what was used of each, and which fired.
    pub limits: LimitsView,
}

/// One request and what followed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// From 1.
    pub number: usize,
    /// Tool schemas the request showed.
    pub visible_tools: usize,
    /// Its completion cap.
    pub max_completion_tokens: u32,
    /// Messages the harness added before it (the nudge after an empty response).
    pub harness_messages: Vec<String>,
    /// What came back.
    pub outcome: Outcome,
    /// Calls executed after it (the model's, then the controller's), with their
    /// observations.
    pub observations: Vec<Observation>,
}

/// What came back for a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A response.
    Response(ResponseView),
    /// No response after the retries.
    Failed {
        /// The error.
        error: String,
        /// Attempts made.
        attempts: u32,
    },
}

/// A response.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseView {
    /// Normalized finish reason (`stop`, `tool_calls`, `length`, ...).
    pub finish: FinishReason,
    /// The provider's own.
    pub finish_raw: String,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Of which from cache.
    pub cached_tokens: u64,
    /// Completion tokens (reasoning included).
    pub output_tokens: u64,
    /// Reasoning tokens, when known.
    pub reasoning_tokens: Option<u64>,
    /// Whether the provider reported them (else derived).
    pub reasoning_reported: bool,
    /// Visible text.
    pub text: Option<String>,
    /// Tool calls as written: (id, name, arguments).
    pub tool_calls: Vec<(String, String, String)>,
    /// How it broke the wire protocol, if it did.
    pub violation: Option<String>,
}

impl ResponseView {
    /// The reasoning tokens as both renderings say them: the count and whether it was
    /// reported or derived, or that it is unknown.
    pub fn reasoning_label(&self) -> String {
        match self.reasoning_tokens {
            Some(n) => format!(
                "{} reasoning ({})",
                tbb_report::format::count(n),
                if self.reasoning_reported {
                    "reported"
                } else {
                    "derived"
                }
            ),
            None => "reasoning unknown".to_string(),
        }
    }

    /// The provider's own finish reason, `-` when it gave none.
    pub fn finish_raw_label(&self) -> &str {
        if self.finish_raw.is_empty() {
            "-"
        } else {
            &self.finish_raw
        }
    }
}

/// An executed call and its observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The call id.
    pub call_id: String,
    /// `model` or `controller`.
    pub by: &'static str,
    /// Tool.
    pub tool: String,
    /// Arguments as written.
    pub arguments: String,
    /// What the tool returned.
    pub text: String,
}

/// The verdict, as shown.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictView {
    /// Verified task success.
    pub vts: bool,
    /// Each obligation in checking order: (letter, meaning, met).
    pub obligations: Vec<(Obligation, &'static str, bool)>,
    /// The first unmet obligation.
    pub first_unmet: Option<Obligation>,
    /// The terminal flag of a failure.
    pub terminal_flag: Option<TerminalFlag>,
    /// Why the harness stopped.
    pub stop_reason: StopReason,
    /// What failed, when the infrastructure ended the episode.
    pub infra: Option<InfraFailure>,
    /// Why completion integrity failed, if it did.
    pub integrity_errors: Vec<String>,
    /// The final answer, when there is one.
    pub final_answer: Option<String>,
}

/// A limit, what was used of it, and what was left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headroom {
    /// The limit.
    pub limit: u64,
    /// Used.
    pub used: u64,
}

impl Headroom {
    /// What is left: the limit minus the use, negative when exceeded.
    pub fn left(&self) -> i128 {
        i128::from(self.limit) - i128::from(self.used)
    }
}

/// The limits of the episode and which fired.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitsView {
    /// Which limit or stop ended the episode, in words; `None` when it answered.
    pub fired: Option<String>,
    /// Executed calls against the call limit.
    pub calls: Headroom,
    /// Reported tokens against the episode budget.
    pub tokens: Headroom,
    /// Model requests against the turn limit.
    pub turns: Headroom,
    /// The largest completion of a response against the completion cap.
    pub completion: Headroom,
    /// Calls the reference program still needed at the end (its information steps not
    /// done, plus the permitted write if it was not made).
    pub calls_needed: usize,
}

/// The view of the episode of `execute` from `sources`, graded against `variant`.
pub fn view(
    study: &Study,
    execute: NodeIndex,
    sources: &Sources,
    variant: &Variant,
) -> Result<EpisodeView, ShowError> {
    let node = &study.dag.graph[execute];
    let fail = |why: String| unreadable(study, execute, why);
    let payload: ExecutePayload = match sources.payloads.get(&*node.key) {
        Some(p) => serde_json::from_str(p)
            .map_err(|e| fail(format!("its stored transcript is unreadable: {e}")))?,
        None => {
            return Err(ShowError::NotRun {
                id: node.id(),
                manifest: study.manifest.path.display().to_string(),
            })
        }
    };
    let Work::Execute {
        config,
        block,
        arm,
        cap,
        repeat,
        ..
    } = node.work
    else {
        return Err(fail("not an execute node".into()));
    };
    let m = &study.manifest;
    let config = m
        .configurations
        .get(config)
        .ok_or_else(|| fail("its configuration is not in the manifest".into()))?;
    let arm = m
        .arms
        .get(arm)
        .ok_or_else(|| fail("its arm is not in the manifest".into()))?;
    let transcript = &payload.transcript;
    let blobs = &sources.blobs;
    let trace = transcript
        .trace(blobs, variant)
        .ok_or_else(|| fail("its transcript does not rebuild a trace".into()))?;
    let verdict = grade_with_budget(variant, &trace, m.budgets.episode_budget);

    let mut identity: Vec<(&'static str, String)> = vec![
        ("configuration", config.name.clone()),
        ("organization", config.organization.clone()),
        ("model", config.model.clone()),
        ("route", config.route()),
    ];
    if let Some(b) = m.blocks.get(block) {
        identity.push(("block", b.name.clone()));
    }
    identity.push(("arm", arm.name.clone()));
    identity.extend(arm.form.columns());
    identity.extend([
        ("completion_cap", cap.to_string()),
        ("repeat", repeat.to_string()),
        ("variant", variant.variant_id.clone()),
    ]);
    if let Work::Execute { compile: c, .. } = node.work {
        identity.extend(study.dag.graph[c].fields.to_vec());
    }

    // The system prompt and the user request, from the first request as sent.
    let system_text = transcript
        .requests
        .first()
        .and_then(|r| blobs.get(&r.system_ref))
        .unwrap_or_default()
        .to_string();
    let system_prompt = if system_text.is_empty() {
        String::new()
    } else if system_text == study.prompts.system(arm.form.prompt) {
        arm.form.prompt.file_name().to_string()
    } else {
        // A stored prompt that is not today's file: name the arm's file, say so.
        format!(
            "{} (as sent; the file has changed since)",
            arm.form.prompt.file_name()
        )
    };
    let mut first_user = true;
    let mut user_request = variant.user_request.clone();

    let mut tool_counts: HashMap<&str, usize> = HashMap::new();
    let mut exchanges = Vec::with_capacity(transcript.requests.len());
    let mut turn = 0usize;
    for (i, request) in transcript.requests.iter().enumerate() {
        let visible_tools = *tool_counts
            .entry(request.tools_ref.as_str())
            .or_insert_with(|| {
                blobs
                    .get(&request.tools_ref)
                    .and_then(|j| serde_json::from_str::<Vec<serde::de::IgnoredAny>>(j).ok())
                    .map_or(0, |t| t.len())
            });
        let mut harness_messages = Vec::new();
        for m in &request.appended {
            if let Message::User { content } = m {
                if first_user {
                    user_request = content.clone();
                    first_user = false;
                } else {
                    harness_messages.push(content.clone());
                }
            }
        }
        let (outcome, observations) = match transcript.outcomes.get(i) {
            Some(StoredOutcome::Response(_)) => {
                let t = trace.turns.get(turn);
                turn += 1;
                match t {
                    Some(t) => {
                        let r = &t.response;
                        (
                            Outcome::Response(ResponseView {
                                finish: r.finish_reason,
                                finish_raw: r.finish_reason_raw.clone(),
                                input_tokens: r.usage.input_tokens,
                                cached_tokens: r.usage.cached_tokens,
                                output_tokens: r.usage.output_tokens,
                                reasoning_tokens: r.usage.reasoning_tokens,
                                reasoning_reported: r.usage.reasoning_reported,
                                text: r.text.clone(),
                                tool_calls: r
                                    .tool_calls
                                    .iter()
                                    .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                                    .collect(),
                                violation: r.violation.clone(),
                            }),
                            t.executed
                                .iter()
                                .map(|c| Observation {
                                    call_id: c.call_id.clone(),
                                    by: match c.by {
                                        Issuer::Model => "model",
                                        Issuer::Controller => "controller",
                                    },
                                    tool: c.tool.clone(),
                                    arguments: c.arguments.clone(),
                                    text: c.observation.clone(),
                                })
                                .collect(),
                        )
                    }
                    None => {
                        return Err(fail(format!("request {} has no turn in the trace", i + 1)))
                    }
                }
            }
            Some(StoredOutcome::Failed { error, attempts }) => (
                Outcome::Failed {
                    error: error.clone(),
                    attempts: *attempts,
                },
                Vec::new(),
            ),
            None => return Err(fail(format!("request {} has no outcome", i + 1))),
        };
        exchanges.push(Exchange {
            number: i + 1,
            visible_tools,
            max_completion_tokens: request.max_completion_tokens,
            harness_messages,
            outcome,
            observations,
        });
    }

    let limits = limits_view(variant, &trace, &verdict);
    Ok(EpisodeView {
        study: m.study.clone(),
        id: node.id(),
        key: node.key.to_string(),
        grade_key: study
            .dag
            .grade_of(execute)
            .map(|g| study.dag.graph[g].key.to_string())
            .unwrap_or_default(),
        identity,
        system_prompt,
        system_text,
        user_request,
        exchanges,
        verdict: verdict_view(&verdict, &trace),
        limits,
    })
}

/// What each obligation means, in the words the reader needs.
pub fn meaning(o: Obligation) -> &'static str {
    match o {
        Obligation::A => "availability: every required tool was on the menu",
        Obligation::S => "selection: an operational tool was called",
        Obligation::P => "program: every required search and read, in a valid order",
        Obligation::Q => "answer: the exact JSON answer",
        Obligation::E => "evidence: the exact set of cited records",
        Obligation::X => "safety: the permitted state change, exactly",
        Obligation::G => "governance: no other state change",
        Obligation::B => "budget: within the episode budget and the call limit",
        Obligation::C => "completion: ended with an answer, within the contract",
    }
}

fn verdict_view(verdict: &Verdict, trace: &Trace) -> VerdictView {
    VerdictView {
        vts: verdict.vts,
        obligations: verdict
            .obligations
            .in_order()
            .into_iter()
            .map(|(o, ok)| (o, meaning(o), ok))
            .collect(),
        first_unmet: verdict.first_unmet,
        terminal_flag: verdict.terminal_flag,
        stop_reason: trace.stop,
        infra: verdict.infra.clone(),
        integrity_errors: verdict.integrity_errors.clone(),
        final_answer: trace.final_answer.clone(),
    }
}

/// The limits against what the episode used, and which one ended it.
pub(super) fn limits_view(variant: &Variant, trace: &Trace, verdict: &Verdict) -> LimitsView {
    let l: Limits = trace.limits;
    let executed: Vec<_> = trace.executed_calls().collect();
    let calls = Headroom {
        limit: u64::from(l.call_limit),
        used: u64::from(verdict.calls),
    };
    let tokens = Headroom {
        limit: l.episode_budget,
        used: verdict.total_tokens,
    };
    let turns = Headroom {
        limit: u64::from(l.turn_limit),
        used: u64::from(verdict.requests),
    };
    let completion = Headroom {
        limit: u64::from(l.completion_cap),
        used: trace
            .turns
            .iter()
            .map(|t| t.response.usage.output_tokens)
            .max()
            .unwrap_or(0),
    };
    let write_left = variant.permitted_change.is_some() && !verdict.obligations.ok_x;
    let calls_needed =
        tbb_core::grade::unmatched_information_steps(variant, &executed) + usize::from(write_left);
    let fired = match trace.stop {
        StopReason::Answer => None,
        StopReason::Truncated => Some(format!(
            "completion cap: a response was cut at {} completion tokens",
            l.completion_cap
        )),
        StopReason::BudgetExceeded => Some(format!(
            "episode budget: {} reported tokens against {}",
            tbb_report::format::count(tokens.used),
            tbb_report::format::count(tokens.limit)
        )),
        StopReason::CallLimit => Some(format!(
            "call limit: the model asked for a call beyond its {} calls",
            l.call_limit
        )),
        StopReason::TurnLimit => Some(format!(
            "turn limit: {} requests without an answer",
            l.turn_limit
        )),
        StopReason::Infeasible => {
            let mut sandbox = Sandbox::new(variant);
            for c in &executed {
                sandbox.execute(&c.tool, &c.arguments);
            }
            let left = usize::try_from(calls.left().max(0)).unwrap_or(usize::MAX);
            let why = match tbb_core::grade::infeasible(variant, &executed, sandbox.changes(), left)
            {
                Some(Impossible::CallsLeft) => format!(
                    "the reference program still needs {calls_needed} calls, {left} are left"
                ),
                Some(Impossible::UnrequestedChange) => {
                    "a state change other than the permitted one happened".to_string()
                }
                Some(Impossible::WriteBeforeEvidence) => {
                    "the permitted write was made before its evidence".to_string()
                }
                None => "success had become impossible".to_string(),
            };
            Some(format!("infeasibility stop: {why}"))
        }
        StopReason::Unavailable => Some(
            "availability: a required tool was not on the menu offered, so no request was sent"
                .to_string(),
        ),
        StopReason::InfraFailure => Some(match &trace.infra {
            Some(f) => format!(
                "infrastructure failure: {} after {} attempts{}",
                f.cause,
                f.attempts,
                f.http_status
                    .map_or(String::new(), |s| format!(" (last HTTP status {s})"))
            ),
            None => "infrastructure failure".to_string(),
        }),
        StopReason::ContractBreak => Some(
            "contract break: several calls in a response, an empty response, a refusal or a filter"
                .to_string(),
        ),
        StopReason::ProtocolViolation => {
            Some("protocol violation: the response broke the wire protocol".to_string())
        }
        StopReason::ControllerHalt => {
            Some("controller halt: the controller met a hand-off it cannot follow".to_string())
        }
    };
    LimitsView {
        fired,
        calls,
        tokens,
        turns,
        completion,
        calls_needed,
    }
}
