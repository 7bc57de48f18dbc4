//! The trace format: everything an episode did, as the harness writes it and the grader
//! reads it. JSON, `format = "tbb-trace/1"`.
//!
//! A trace names its family and cell (so the grader recompiles the variant and checks
//! `variant_id`), the menu the agent was offered, the limits in force, and one entry per
//! turn: the request (tools visible at that turn), the provider's response (normalized
//! finish reason, usage, text, tool calls, and the raw body) and the calls the harness
//! executed with their observations. `final_answer` is the text of the response that
//! ended the episode with an answer; `stop` says why the harness stopped, and `infra`,
//! when the harness (not the model) ended it, says what failed.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::compile::Cell;

/// The format tag this grader reads.
pub const TRACE_FORMAT: &str = "tbb-trace/1";

/// An episode's trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// Always [`TRACE_FORMAT`].
    pub format: String,
    /// Family name.
    pub family: String,
    /// The cell.
    pub cell: Cell,
    /// The compiled variant's id (checked against a fresh compile).
    pub variant_id: String,
    /// Tool names offered at the first request, after any retrieval (availability).
    pub menu: Vec<String>,
    /// Limits in force.
    pub limits: Limits,
    /// One entry per model request.
    pub turns: Vec<Turn>,
    /// The answer text, when the episode ended with one.
    pub final_answer: Option<String>,
    /// Why the harness stopped.
    pub stop: StopReason,
    /// What failed, when `stop` is [`StopReason::InfraFailure`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra: Option<InfraFailure>,
}

/// What ended an episode that the infrastructure, not the model, ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InfraCause {
    /// HTTP 429 (after the retries the configuration allows).
    RateLimited,
    /// HTTP 5xx (after retries).
    ServerError,
    /// No response within the configuration's timeout (after retries).
    Timeout,
    /// The connection failed (after retries).
    Transport,
    /// No usable credentials: HTTP 401 or 403, or the key variable is not set.
    Auth,
    /// The server refused the request because the prompt and the completion cap exceed
    /// the served model's context (an HTTP 400 or 413 whose body says so: llama.cpp,
    /// vLLM, SGLang, OpenAI, Anthropic and Gemini each word it their own way).
    ContextExceeded,
    /// Another non-success HTTP status (a 3xx, 400, 404, ...).
    OtherStatus,
    /// A success status whose body is not the protocol's JSON.
    BadBody,
    /// A response whose usage is missing, or not counts (negative, fractional, above
    /// 2^53, not a number): the budget cannot be enforced, and 0 tokens would be a lie.
    BadUsage,
    /// The configuration cannot be used.
    Config,
}

crate::level_names!(InfraCause {
    RateLimited => "rate_limited",
    ServerError => "server_error",
    Timeout => "timeout",
    Transport => "transport",
    Auth => "auth",
    ContextExceeded => "context_exceeded",
    OtherStatus => "other_status",
    BadBody => "bad_body",
    BadUsage => "bad_usage",
    Config => "config",
});

/// An infrastructure failure: its cause, the last HTTP status seen and the attempts
/// made for the request that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfraFailure {
    /// The cause.
    pub cause: InfraCause,
    /// The HTTP status of the last response received for the failing request, over all
    /// its attempts (a 500 then a timeout gives 500); `None` when no attempt got a
    /// response (timeouts, transport errors) or there is no HTTP (sim).
    pub http_status: Option<u16>,
    /// Attempts made for the failing request, retries included.
    pub attempts: u32,
    /// The error, as the provider reported it (never containing a key).
    pub message: String,
}

/// The harness limits of an episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Completion tokens per request.
    pub completion_cap: u32,
    /// Reported tokens (prompt + completion) over the episode.
    pub episode_budget: u64,
    /// Executed tool calls.
    pub call_limit: u32,
    /// Model requests.
    pub turn_limit: u32,
}

impl Limits {
    /// The frozen contract's limits for a variant's call and turn limits.
    pub fn frozen(call_limit: u32, turn_limit: u32) -> Limits {
        Limits {
            completion_cap: 1024,
            episode_budget: super::EPISODE_BUDGET,
            call_limit,
            turn_limit,
        }
    }
}

/// Why the harness stopped the episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The agent answered.
    Answer,
    /// A response ended at the completion cap.
    Truncated,
    /// Reported tokens exceeded the episode budget.
    BudgetExceeded,
    /// The agent asked for a call beyond the call limit.
    CallLimit,
    /// The turn limit was reached without an answer.
    TurnLimit,
    /// Success became impossible within the call limit.
    Infeasible,
    /// The required tools were not available; no request was sent.
    Unavailable,
    /// The agent broke another term of the contract (several tool calls in one
    /// response, an empty response, a refusal or content filter).
    ContractBreak,
    /// The model broke the wire protocol: tool-call arguments that are not a string
    /// (OpenAI-compatible) or input / args that are not an object (Anthropic, Gemini).
    /// Nothing of that response is executed.
    ProtocolViolation,
    /// The provider failed after retries, or sent a response without valid usage.
    InfraFailure,
    /// The public-handoff controller met a hand-off it cannot follow (invalid, or
    /// leading to no single current record) and stopped rather than guess a call.
    ControllerHalt,
}

crate::level_names!(StopReason {
    Answer => "answer",
    Truncated => "truncated",
    BudgetExceeded => "budget_exceeded",
    CallLimit => "call_limit",
    TurnLimit => "turn_limit",
    Infeasible => "infeasible",
    Unavailable => "unavailable",
    ContractBreak => "contract_break",
    ProtocolViolation => "protocol_violation",
    InfraFailure => "infra_failure",
    ControllerHalt => "controller_halt",
});

/// One model request and what followed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// The request.
    pub request: RequestRecord,
    /// The response.
    pub response: ResponseRecord,
    /// Calls the harness executed for this response, in order, then the calls the
    /// public-handoff controller issued before the next request.
    #[serde(default)]
    pub executed: Vec<ExecutedCall>,
}

/// What was sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Tool names visible in this request.
    pub visible_tools: Vec<String>,
    /// Content address of the full request body, when stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_ref: Option<String>,
}

/// Normalized finish reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end of the message.
    Stop,
    /// Ended because it asked for tools.
    ToolCalls,
    /// Ended at the completion cap.
    Length,
    /// Refused or filtered.
    ContentFilter,
    /// Anything else (malformed call, provider error).
    Other,
}

crate::level_names!(FinishReason {
    Stop => "stop",
    ToolCalls => "tool_calls",
    Length => "length",
    ContentFilter => "content_filter",
    Other => "other",
});

/// Token usage of one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Of which served from cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Completion tokens (reasoning included).
    pub output_tokens: u64,
    /// Reasoning tokens, when known.
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
    /// Whether the provider reported reasoning tokens (else derived or unknown).
    #[serde(default)]
    pub reasoning_reported: bool,
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseRecord {
    /// Normalized finish reason.
    pub finish_reason: FinishReason,
    /// The provider's own finish reason.
    #[serde(default)]
    pub finish_reason_raw: String,
    /// Usage.
    pub usage: Usage,
    /// Visible text, if any.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls requested.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// The raw provider body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Json>,
    /// How the response broke the wire protocol, when it did (see
    /// [`StopReason::ProtocolViolation`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<String>,
    /// Wall time of the request in milliseconds (never used in grading).
    #[serde(default)]
    pub wall_ms: u64,
}

/// A tool call as the model wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// The argument string, exactly as produced.
    pub arguments: String,
}

/// Who issued an executed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Issuer {
    /// The model, in the response of the turn the call is recorded under.
    #[default]
    Model,
    /// The harness's public-handoff controller, after that turn's response.
    Controller,
}

impl Issuer {
    /// Whether the model issued the call (the default, left out of the JSON so that a
    /// trace without a controller is byte-identical to one written before it existed).
    pub fn is_model(&self) -> bool {
        *self == Issuer::Model
    }
}

/// A call the harness executed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutedCall {
    /// Provider call id (the controller's own id for its calls).
    pub call_id: String,
    /// Who issued it.
    #[serde(default, skip_serializing_if = "Issuer::is_model")]
    pub by: Issuer,
    /// Tool name.
    pub tool: String,
    /// The argument string, exactly as produced.
    pub arguments: String,
    /// The observation returned.
    pub observation: String,
}

impl Trace {
    /// Reported tokens over the episode (prompt + completion).
    pub fn total_tokens(&self) -> u64 {
        self.turns
            .iter()
            .map(|t| {
                t.response
                    .usage
                    .input_tokens
                    .saturating_add(t.response.usage.output_tokens)
            })
            .fold(0, u64::saturating_add)
    }

    /// Executed calls over the episode.
    pub fn executed_calls(&self) -> impl Iterator<Item = &ExecutedCall> {
        self.turns.iter().flat_map(|t| t.executed.iter())
    }
}
