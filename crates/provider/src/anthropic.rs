//! Anthropic Messages: `POST {base}/messages` with `x-api-key` and
//! `anthropic-version: 2023-06-01`, `GET {base}/models?limit=1000` for
//! [`Provider::check`].
//!
//! Owns the translation [`request_body`] and [`parse_response`] (pure); the HTTP part
//! is thin.
//!
//! Sent: `model`, `max_tokens` (the cap), `system` (every system message, joined by a
//! blank line, at top level), `messages` with content blocks — user text as a `text`
//! block, an assistant turn as a `text` block (when non-empty) then its `tool_use
//! {id, name, input}` blocks, tool results as `tool_result {tool_use_id, content}`
//! blocks; consecutive messages of one role (several tool results, a tool result then
//! a user message) are merged into one message so roles alternate. When tools are
//! offered: `tools: [{name, description, input_schema}]` and `tool_choice: {type:
//! "auto"}`, plus `disable_parallel_tool_use: !parallel_tool_calls` when the sampling
//! settings carry it. `temperature` when present. Never `seed` (the API has none) and
//! never `thinking` (so thinking stays disabled). `output_config: {effort}` when the
//! configuration sets a reasoning effort.
//!
//! Decisions:
//! - `input` is an object on the wire; a recorded call whose arguments are not a JSON
//!   object is replayed with `input: {}` (the wire cannot carry a raw string; the
//!   tool result that follows still holds the sandbox's error for it).
//!   Empty text blocks are rejected by the API, so they are not sent; an assistant turn
//!   with neither text nor calls is dropped.
//! - Thinking is not replayed: the chat types have no slot for thinking blocks, which
//!   stay in `raw`; the API accepts that while thinking is disabled.
//! - `arguments` of a `tool_use` is its `input` serialized (keys in sorted order — the
//!   API returns parsed input, so the model's own bytes are not available); a block
//!   without `input` gives an empty string. An `input` that is not an object (a string,
//!   array, number, boolean or null) is a protocol violation by the model
//!   ([`ChatResponse::violation`]): recorded serialized, never executed.
//! - Usage: `input_tokens` excludes cache reads and writes, so the normalized input is
//!   `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`, cached =
//!   `cache_read_input_tokens`; output = `output_tokens`, which includes any thinking.
//!   `input_tokens` and `output_tokens` are required, and every count present must be
//!   an integer from 0 to 2^53, else the response has no usage
//!   ([`ChatResponse::usage_error`] says why).
//!   Reasoning is `None` / Unknown: the API reports no thinking count, and counting
//!   thinking text would be wrong for summarized or redacted thinking.
//! - `stop_reason` end_turn/stop_sequence→Stop, max_tokens→Length, tool_use→ToolCalls,
//!   refusal→ContentFilter, else (pause_turn, model_context_window_exceeded, ...)
//!   Other.

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Url;
use serde_json::{json, Map, Value as Json};

use super::chat::{
    ChatRequest, ChatResponse, Finish, Message, ReasoningSource, Sampling, ToolCall, ToolSchema,
    Usage,
};
use super::config::{Configuration, ReasoningEffort};
use super::http;
use super::openai::{listing, model_ids};
use super::{BoxFuture, Provider, ProviderError};

/// The route when a configuration names none.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The API version sent with every request.
pub const API_VERSION: &str = "2023-06-01";

/// A client of the Anthropic Messages API.
#[derive(Debug)]
pub struct Anthropic {
    model: String,
    reasoning_effort: Option<ReasoningEffort>,
    base: Url,
    client: http::Client,
    menus: http::RenderedMenus,
}

impl Anthropic {
    /// A client for `config`; a missing key is [`ProviderError::MissingKey`].
    pub fn new(config: &Configuration, api_key: Option<String>) -> Result<Self, ProviderError> {
        let key = http::required_key(config, api_key)?;
        let base = http::base_url(config, DEFAULT_BASE_URL)?;
        let headers = vec![
            (
                HeaderName::from_static("x-api-key"),
                http::secret_header(&config.name, "", &key)?,
            ),
            (
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(API_VERSION),
            ),
        ];
        Ok(Anthropic {
            model: config.model.clone(),
            reasoning_effort: config.profile.reasoning_effort,
            base,
            client: http::Client::new(config, headers, Some(key))?,
            menus: http::RenderedMenus::default(),
        })
    }
}

impl Provider for Anthropic {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            // The body but its tool array, which is rendered once per menu and spliced in.
            let mut body = body_but_tools(request);
            if let Some(effort) = self.reasoning_effort {
                body.insert("output_config".into(), json!({"effort": effort.name()}));
            }
            let bytes = self.menus.body(&body, &request.tools, tools)?;
            let (raw, status) = self
                .client
                .post_json(http::endpoint(&self.base, &["messages"]), bytes)
                .await?;
            let mut response = parse_response(raw).map_err(|e| e.at_status(status))?;
            response.http_status = Some(status);
            Ok(response)
        })
    }

    fn wire_sampling(&self, request: &ChatRequest) -> Sampling {
        // The tool array carries no sampling field: it is left out rather than built.
        sent_sampling(&Json::Object(body_but_tools(request)))
    }

    fn check<'a>(&'a self) -> BoxFuture<'a, Result<String, ProviderError>> {
        Box::pin(async move {
            let mut url = http::endpoint(&self.base, &["models"]);
            url.query_pairs_mut().append_pair("limit", "1000");
            let raw = self.client.get_json(url).await?;
            Ok(listing(&self.model, &model_ids(&raw)?))
        })
    }
}

/// The sampling fields a Messages body carries (`parallel_tool_calls` as the negation
/// of `disable_parallel_tool_use`; never a seed).
pub fn sent_sampling(body: &Json) -> Sampling {
    Sampling {
        temperature: body.get("temperature").and_then(Json::as_f64),
        seed: None,
        parallel_tool_calls: body
            .get("tool_choice")
            .and_then(|c| c.get("disable_parallel_tool_use"))
            .and_then(Json::as_bool)
            .map(|disable| !disable),
    }
}

/// The Messages body of a request.
pub fn request_body(request: &ChatRequest) -> Json {
    let mut body = body_but_tools(request);
    if !request.tools.is_empty() {
        body.insert("tools".into(), tools(&request.tools));
    }
    Json::Object(body)
}

/// The `tools` array of a body.
fn tools(tools: &[ToolSchema]) -> Json {
    tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect()
}

/// [`request_body`] without its `tools` member.
fn body_but_tools(request: &ChatRequest) -> Map<String, Json> {
    let mut system: Vec<&str> = Vec::new();
    let mut messages: Vec<(&'static str, Vec<Json>)> = Vec::new();
    for m in &request.messages {
        let (role, blocks) = match m {
            Message::System { content } => {
                system.push(content);
                continue;
            }
            Message::User { content } => ("user", vec![json!({"type": "text", "text": content})]),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use", "id": c.id, "name": c.name,
                        "input": http::arguments_object(&c.arguments),
                    }));
                }
                ("assistant", blocks)
            }
            Message::Tool {
                call_id, content, ..
            } => (
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": call_id, "content": content})],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last, previous)) if *last == role => previous.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("max_tokens".into(), json!(request.max_completion_tokens));
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    let messages: Vec<Json> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    body.insert("messages".into(), Json::Array(messages));
    if !request.tools.is_empty() {
        let mut choice = Map::new();
        choice.insert("type".into(), json!("auto"));
        if let Some(parallel) = request.sampling.parallel_tool_calls {
            choice.insert("disable_parallel_tool_use".into(), json!(!parallel));
        }
        body.insert("tool_choice".into(), Json::Object(choice));
    }
    if let Some(t) = request.sampling.temperature {
        body.insert("temperature".into(), json!(t));
    }
    body
}

/// The [`ChatResponse`] of a Messages body; `raw` keeps the body.
pub fn parse_response(raw: Json) -> Result<ChatResponse, ProviderError> {
    http::check_role(raw.get("role"), "role", "assistant", &raw)?;
    let blocks = raw
        .get("content")
        .and_then(Json::as_array)
        .ok_or_else(|| http::not_protocol("the response has no `content` array", &raw))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut violation = None;
    for block in blocks {
        match block.get("type").and_then(Json::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Json::as_str).unwrap_or("")),
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string();
                let input = block.get("input");
                if let Some(other) = input.filter(|i| !i.is_object()) {
                    violation = violation.or(Some(format!(
                        "tool call {} (`{name}`): `input` is a JSON {}, not an object",
                        tool_calls.len(),
                        http::kind(other)
                    )));
                }
                tool_calls.push(ToolCall {
                    id: block
                        .get("id")
                        .and_then(Json::as_str)
                        .unwrap_or("")
                        .to_string(),
                    name,
                    arguments: input.map(Json::to_string).unwrap_or_default(),
                });
            }
            // thinking, redacted_thinking, server tools: kept in `raw` only.
            _ => {}
        }
    }
    let finish_raw = raw
        .get("stop_reason")
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_string();
    let finish = match finish_raw.as_str() {
        "end_turn" | "stop_sequence" => Finish::Stop,
        "max_tokens" => Finish::Length,
        "tool_use" => Finish::ToolCalls,
        "refusal" => Finish::ContentFilter,
        _ => Finish::Other,
    };
    let (usage, usage_error) = http::read_usage(&raw, "usage", |u| {
        let cached = http::count_opt(u, "cache_read_input_tokens")?.unwrap_or(0);
        let created = http::count_opt(u, "cache_creation_input_tokens")?.unwrap_or(0);
        Ok(Usage {
            // Each count is at most 2^53, so the sum cannot overflow.
            input_tokens: http::count(u, "input_tokens")? + cached + created,
            cached_tokens: cached,
            output_tokens: http::count(u, "output_tokens")?,
            reasoning_tokens: None,
            reasoning_source: ReasoningSource::Unknown,
        })
    });
    Ok(ChatResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        finish,
        finish_raw,
        usage,
        usage_error,
        violation,
        http_status: None,
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_sent_is_the_request_body_with_each_menu_rendered_once() {
        http::splice_check::spliced_body_is_the_request_body(body_but_tools, tools, request_body);
    }
    use crate::chat::ToolSchema;

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: arguments.into(),
        }
    }

    fn tool(id: &str, content: &str) -> Message {
        Message::Tool {
            call_id: id.into(),
            name: "read".into(),
            content: content.into(),
        }
    }

    #[test]
    fn request_hoists_system_merges_tool_results_and_never_sends_a_seed() {
        let request = ChatRequest {
            model: "claude-test".into(),
            messages: vec![
                Message::System {
                    content: "sys".into(),
                },
                Message::User {
                    content: "go".into(),
                },
                Message::Assistant {
                    content: Some("reading".into()),
                    tool_calls: vec![
                        call("toolu_1", "{\"id\":\"rec_1\"}"),
                        call("toolu_2", "{\"id\": \"rec_"),
                    ],
                },
                tool("toolu_1", "obs 1"),
                tool("toolu_2", "obs 2"),
                Message::User {
                    content: "and?".into(),
                },
                Message::Assistant {
                    content: Some(String::new()),
                    tool_calls: vec![],
                },
            ],
            tools: vec![ToolSchema {
                name: "read".into(),
                description: "Read.".into(),
                parameters: json!({"type": "object"}).into(),
            }],
            max_completion_tokens: 1024,
            sampling: Sampling {
                temperature: Some(0.0),
                seed: Some(7),
                parallel_tool_calls: Some(false),
            },
        };
        assert_eq!(
            request_body(&request),
            json!({
                "model": "claude-test",
                "max_tokens": 1024,
                "system": "sys",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "go"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "reading"},
                        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"id": "rec_1"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "obs 1"},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "obs 2"},
                        {"type": "text", "text": "and?"},
                    ]},
                ],
                "tools": [{"name": "read", "description": "Read.", "input_schema": {"type": "object"}}],
                "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
                "temperature": 0.0,
            })
        );
        let mut bare = request.clone();
        bare.sampling = Sampling::default();
        let body = request_body(&bare);
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
        assert!(body.get("temperature").is_none() && body.get("seed").is_none());
    }

    #[test]
    fn response_blocks_stop_reasons_and_usage_are_read() {
        let raw = json!({
            "type": "message", "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"id": "rec_1"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5, "output_tokens": 20},
        });
        let r = parse_response(raw.clone()).expect("parse");
        assert_eq!(r.text.as_deref(), Some("Reading."));
        assert_eq!(r.tool_calls, vec![call("toolu_1", "{\"id\":\"rec_1\"}")]);
        assert_eq!(r.finish, Finish::ToolCalls);
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 115,
                cached_tokens: 100,
                output_tokens: 20,
                reasoning_tokens: None,
                reasoning_source: ReasoningSource::Unknown,
            })
        );
        assert_eq!(r.raw, raw);
        for (reason, finish) in [
            ("end_turn", Finish::Stop),
            ("stop_sequence", Finish::Stop),
            ("max_tokens", Finish::Length),
            ("refusal", Finish::ContentFilter),
            ("pause_turn", Finish::Other),
        ] {
            let r = parse_response(json!({"content": [], "stop_reason": reason})).expect("parse");
            assert_eq!(
                (r.finish, r.text, r.usage),
                (finish, None, None),
                "{reason}"
            );
        }
        assert!(matches!(
            parse_response(json!({"type": "error"})),
            Err(ProviderError::Decode { .. })
        ));
    }

    #[test]
    fn a_message_in_another_role_than_the_assistants_is_a_bad_body() {
        let body = |role: &str| {
            json!({"type": "message", "role": role, "content": [{"type": "text", "text": "{}"}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 1}})
        };
        for role in ["system", "user"] {
            match parse_response(body(role)) {
                Err(ProviderError::Decode { message, .. }) => {
                    assert!(message.contains("not \"assistant\""), "{message}");
                }
                other => panic!("role {role} was taken: {other:?}"),
            }
        }
        assert!(parse_response(body("assistant")).is_ok());
    }
}
