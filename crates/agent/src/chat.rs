//! The chat types every provider speaks: what the harness sends (messages, tool
//! schemas, sampling settings, the completion cap) and what comes back (text, tool
//! calls, finish reason, usage, the raw body).
//!
//! These types are the whole of what an agent can see. The harness translates a
//! variant into them; wire clients translate them into each protocol's JSON and back.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A tool as offered to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// Function name.
    pub name: String,
    /// Public description.
    pub description: String,
    /// JSON Schema of the arguments, shared: every episode of a variant offers the
    /// same schemas, so a menu is copied by reference count, not tree by tree, and two
    /// menus built from one variant compare equal by address before content.
    pub parameters: Arc<Json>,
}

/// A tool call as a model wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Call id (the provider's, or one the client assigned when the protocol has none).
    pub id: String,
    /// Function name.
    pub name: String,
    /// The argument string exactly as produced (never repaired).
    pub arguments: String,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The system prompt.
    System {
        /// Text.
        content: String,
    },
    /// The user's request.
    User {
        /// Text.
        content: String,
    },
    /// A model turn.
    Assistant {
        /// Visible text, if any.
        content: Option<String>,
        /// Tool calls, if any.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of a tool call.
    Tool {
        /// The call answered.
        call_id: String,
        /// The tool's name (Gemini needs it).
        name: String,
        /// The observation text.
        content: String,
    },
}

/// Request settings the execution profile may omit; `None` means "not sent".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Sampling {
    /// Temperature.
    pub temperature: Option<f64>,
    /// Seed.
    pub seed: Option<u64>,
    /// `parallel_tool_calls` (OpenAI) / `disable_parallel_tool_use` (Anthropic).
    pub parallel_tool_calls: Option<bool>,
}

/// One request to a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model (provider's identifier, pinned version included).
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Visible tools, in menu order.
    pub tools: Vec<ToolSchema>,
    /// Completion cap for this request.
    pub max_completion_tokens: u32,
    /// Sampling settings.
    pub sampling: Sampling,
}

/// Normalized finish reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// Natural end of the message.
    Stop,
    /// Ended because it asked for tools.
    ToolCalls,
    /// Ended at the completion cap.
    Length,
    /// Refused or filtered.
    ContentFilter,
    /// Anything else (a malformed function call, an unknown reason).
    Other,
}

/// Where a reasoning-token count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningSource {
    /// The provider reported it.
    Reported,
    /// Computed from other reported figures.
    Derived,
    /// Not known.
    Unknown,
}

/// Normalized token usage of one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Prompt tokens served from a cache.
    pub cached_tokens: u64,
    /// Completion tokens, reasoning included.
    pub output_tokens: u64,
    /// Reasoning tokens, when known.
    pub reasoning_tokens: Option<u64>,
    /// Where the reasoning count came from.
    pub reasoning_source: ReasoningSource,
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Visible text, if any.
    pub text: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Normalized finish reason.
    pub finish: Finish,
    /// The provider's own finish reason.
    pub finish_raw: String,
    /// Usage; `None` when the provider sent none, or sent counts that are not counts.
    pub usage: Option<Usage>,
    /// Why `usage` is `None` although the body has a usage object (a count that is
    /// negative, fractional, above 2^53, not a number, or missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_error: Option<String>,
    /// How the model broke the wire protocol, when it did: tool-call arguments that are
    /// not a string (OpenAI-compatible), or input / args that are not an object
    /// (Anthropic, Gemini). The calls are still listed, with the offending value
    /// serialized so the record can be read, but the harness executes none of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<String>,
    /// The HTTP status the response came with (`None` for the simulated panel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The raw response body.
    pub raw: Json,
}
