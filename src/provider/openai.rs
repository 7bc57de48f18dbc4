//! OpenAI-compatible chat completions (OpenAI, vLLM, SGLang, llama.cpp, Ollama,
//! OpenRouter, ...): `POST {base}/chat/completions` with `Authorization: Bearer <key>`
//! (no header when the route needs no key), `GET {base}/models` for [`Provider::check`].
//!
//! Owns the translation [`request_body`] (a [`ChatRequest`] to the wire JSON) and
//! [`parse_response`] (the wire JSON to a [`ChatResponse`]); both are pure, the HTTP
//! part is thin.
//!
//! Sent: `model`, `messages` (system / user / assistant with `tool_calls` / tool with
//! `tool_call_id`), and when tools are offered `tools`, `tool_choice: "auto"` and
//! `parallel_tool_calls` (when the sampling settings carry it); `temperature` and
//! `seed` when present; the cap as `max_completion_tokens` or `max_tokens` per the
//! execution profile. A seed above `i64::MAX` (the API's integer range) is sent modulo
//! 2^63.
//!
//! Parsed decisions:
//! - Empty `content` (`""` or `null`) is no text; content given as an array of text
//!   parts (some compatible servers) is concatenated.
//! - `arguments` is kept byte for byte; a server that returns an object instead of a
//!   string (some local servers) has it serialized. A call without an id (some local
//!   servers) gets `call_<index>`.
//! - `finish_reason` stop→Stop, length→Length, tool_calls→ToolCalls,
//!   content_filter→ContentFilter, else Other — except that `stop` with tool calls
//!   present (what several compatible servers send) is ToolCalls; `finish_raw` keeps
//!   the server's word.
//! - Reasoning tokens are Reported when `completion_tokens_details.reasoning_tokens`
//!   is present (0 included), else Unknown.

use reqwest::header::{HeaderName, AUTHORIZATION};
use reqwest::Url;
use serde_json::{json, Map, Value as Json};

use super::chat::{ChatRequest, ChatResponse, Finish, Message, ReasoningSource, ToolCall, Usage};
use super::config::{Configuration, MaxTokensField};
use super::http::{self, Secret};
use super::{BoxFuture, Provider, ProviderError};

/// The route when a configuration names none.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A client of one OpenAI-compatible route.
#[derive(Debug)]
pub struct OpenAi {
    model: String,
    base: Url,
    max_tokens_field: MaxTokensField,
    client: http::Client,
}

impl OpenAi {
    /// A client for `config`; `api_key` may be `None` for local servers that need none.
    pub fn new(config: &Configuration, api_key: Option<String>) -> Result<Self, ProviderError> {
        let base = http::base_url(config, DEFAULT_BASE_URL)?;
        let key = api_key.map(Secret::new);
        let mut headers: Vec<(HeaderName, _)> = Vec::new();
        if let Some(k) = &key {
            headers.push((
                AUTHORIZATION,
                http::secret_header(&config.name, "Bearer ", k)?,
            ));
        }
        Ok(OpenAi {
            model: config.model.clone(),
            base,
            max_tokens_field: config.profile.max_tokens_field,
            client: http::Client::new(config, headers, key)?,
        })
    }
}

impl Provider for OpenAi {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let body = request_body(request, self.max_tokens_field);
            let raw = self
                .client
                .post_json(http::endpoint(&self.base, &["chat", "completions"]), &body)
                .await?;
            parse_response(raw)
        })
    }

    fn check<'a>(&'a self) -> BoxFuture<'a, Result<String, ProviderError>> {
        Box::pin(async move {
            let raw = self
                .client
                .get_json(http::endpoint(&self.base, &["models"]))
                .await?;
            let ids = model_ids(&raw)?;
            Ok(listing(&self.model, &ids))
        })
    }
}

/// The `id`s of a `{"data": [{"id": ...}]}` model listing (OpenAI and Anthropic).
pub(crate) fn model_ids(raw: &Json) -> Result<Vec<String>, ProviderError> {
    let data = raw
        .get("data")
        .and_then(Json::as_array)
        .ok_or_else(|| http::not_protocol("the model listing has no `data` array", raw))?;
    Ok(data
        .iter()
        .filter_map(|m| m.get("id").and_then(Json::as_str).map(str::to_string))
        .collect())
}

/// A one-line summary of a model listing.
pub(crate) fn listing(model: &str, ids: &[String]) -> String {
    let found = if ids.iter().any(|id| id == model) {
        "is among them"
    } else {
        "is not among them (some routes serve models they do not list)"
    };
    format!("reachable; {} models listed; `{model}` {found}", ids.len())
}

/// The chat-completions body of a request.
pub fn request_body(request: &ChatRequest, max_tokens_field: MaxTokensField) -> Json {
    let messages: Vec<Json> = request.messages.iter().map(message).collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), Json::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Json> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                })
            })
            .collect();
        body.insert("tools".into(), Json::Array(tools));
        body.insert("tool_choice".into(), json!("auto"));
        if let Some(parallel) = request.sampling.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
    }
    if let Some(t) = request.sampling.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(seed) = request.sampling.seed {
        body.insert("seed".into(), json!(seed % (1u64 << 63)));
    }
    let cap = match max_tokens_field {
        MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        MaxTokensField::MaxTokens => "max_tokens",
    };
    body.insert(cap.into(), json!(request.max_completion_tokens));
    Json::Object(body)
}

fn message(m: &Message) -> Json {
    match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut out = Map::new();
            out.insert("role".into(), json!("assistant"));
            let content = match content {
                Some(c) => json!(c),
                None if tool_calls.is_empty() => json!(""),
                None => Json::Null,
            };
            out.insert("content".into(), content);
            if !tool_calls.is_empty() {
                let calls: Vec<Json> = tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        })
                    })
                    .collect();
                out.insert("tool_calls".into(), Json::Array(calls));
            }
            Json::Object(out)
        }
        Message::Tool {
            call_id, content, ..
        } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
    }
}

/// The [`ChatResponse`] of a chat-completions body; `raw` keeps the body.
pub fn parse_response(raw: Json) -> Result<ChatResponse, ProviderError> {
    let choice = raw
        .get("choices")
        .and_then(Json::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| http::not_protocol("the response has no `choices[0]`", &raw))?;
    let message = choice.get("message").unwrap_or(&Json::Null);
    let text = match message.get("content") {
        Some(Json::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Json::Array(parts)) => {
            let joined: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Json::as_str))
                .collect();
            (!joined.is_empty()).then_some(joined)
        }
        _ => None,
    };
    let tool_calls: Vec<ToolCall> = message
        .get("tool_calls")
        .and_then(Json::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| tool_call(i, c))
                .collect()
        })
        .unwrap_or_default();
    let finish_raw = choice
        .get("finish_reason")
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_string();
    let finish = match finish_raw.as_str() {
        "stop" if !tool_calls.is_empty() => Finish::ToolCalls,
        "stop" => Finish::Stop,
        "length" => Finish::Length,
        "tool_calls" => Finish::ToolCalls,
        "content_filter" => Finish::ContentFilter,
        _ => Finish::Other,
    };
    let usage = raw.get("usage").filter(|u| u.is_object()).map(usage);
    Ok(ChatResponse {
        text,
        tool_calls,
        finish,
        finish_raw,
        usage,
        raw,
    })
}

fn tool_call(index: usize, call: &Json) -> ToolCall {
    let function = call.get("function").unwrap_or(&Json::Null);
    let id = match call.get("id").and_then(Json::as_str) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!("call_{index}"),
    };
    let arguments = match function.get("arguments") {
        Some(Json::String(s)) => s.clone(),
        None | Some(Json::Null) => String::new(),
        Some(other) => other.to_string(),
    };
    ToolCall {
        id,
        name: function
            .get("name")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string(),
        arguments,
    }
}

fn usage(u: &Json) -> Usage {
    let reasoning = u
        .get("completion_tokens_details")
        .and_then(|d| http::count_opt(d, "reasoning_tokens"));
    Usage {
        input_tokens: http::count(u, "prompt_tokens"),
        cached_tokens: u
            .get("prompt_tokens_details")
            .map(|d| http::count(d, "cached_tokens"))
            .unwrap_or(0),
        output_tokens: http::count(u, "completion_tokens"),
        reasoning_tokens: reasoning,
        reasoning_source: if reasoning.is_some() {
            ReasoningSource::Reported
        } else {
            ReasoningSource::Unknown
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::chat::{Sampling, ToolSchema};

    fn request(sampling: Sampling) -> ChatRequest {
        ChatRequest {
            model: "gpt-test".into(),
            messages: vec![
                Message::System {
                    content: "sys".into(),
                },
                Message::User {
                    content: "find it".into(),
                },
                Message::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "call_a".into(),
                        name: "search".into(),
                        arguments: "{\"query\": \"x\"}".into(),
                    }],
                },
                Message::Tool {
                    call_id: "call_a".into(),
                    name: "search".into(),
                    content: "rec_1".into(),
                },
            ],
            tools: vec![ToolSchema {
                name: "search".into(),
                description: "Search.".into(),
                parameters: json!({"type": "object", "additionalProperties": false}),
            }],
            max_completion_tokens: 1024,
            sampling,
        }
    }

    #[test]
    fn request_carries_tools_choice_and_the_profile_fields() {
        let full = Sampling {
            temperature: Some(0.0),
            seed: Some(7),
            parallel_tool_calls: Some(false),
        };
        let body = request_body(&request(full), MaxTokensField::MaxCompletionTokens);
        assert_eq!(
            body,
            json!({
                "model": "gpt-test",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "find it"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_a", "type": "function", "function": {"name": "search", "arguments": "{\"query\": \"x\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_a", "content": "rec_1"},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "search", "description": "Search.",
                    "parameters": {"type": "object", "additionalProperties": false}}}],
                "tool_choice": "auto",
                "parallel_tool_calls": false,
                "temperature": 0.0,
                "seed": 7,
                "max_completion_tokens": 1024,
            })
        );
        let bare = request_body(&request(Sampling::default()), MaxTokensField::MaxTokens);
        for absent in [
            "temperature",
            "seed",
            "parallel_tool_calls",
            "max_completion_tokens",
        ] {
            assert!(bare.get(absent).is_none(), "{absent}");
        }
        assert_eq!(bare["max_tokens"], json!(1024));
        let huge = Sampling {
            seed: Some(u64::MAX),
            ..Sampling::default()
        };
        assert_eq!(
            request_body(&request(huge), MaxTokensField::MaxTokens)["seed"],
            json!(i64::MAX as u64)
        );
    }

    #[test]
    fn response_tool_calls_finish_and_usage_are_read() {
        let raw = json!({
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"id\": \"rec_"}},
                {"type": "function", "function": {"name": "read", "arguments": {"id": "rec_2"}}},
            ]}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 50,
                      "prompt_tokens_details": {"cached_tokens": 64},
                      "completion_tokens_details": {"reasoning_tokens": 40}},
        });
        let r = parse_response(raw.clone()).expect("parse");
        assert_eq!(r.text, None);
        assert_eq!(r.finish, Finish::Length);
        assert_eq!(r.tool_calls[0].arguments, "{\"id\": \"rec_");
        assert_eq!(r.tool_calls[1].id, "call_1");
        assert_eq!(r.tool_calls[1].arguments, "{\"id\":\"rec_2\"}");
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 100,
                cached_tokens: 64,
                output_tokens: 50,
                reasoning_tokens: Some(40),
                reasoning_source: ReasoningSource::Reported,
            })
        );
        assert_eq!(r.raw, raw);
    }

    #[test]
    fn finish_reasons_map_and_stop_with_calls_is_tool_calls() {
        for (reason, calls, finish) in [
            ("stop", false, Finish::Stop),
            ("stop", true, Finish::ToolCalls),
            ("tool_calls", true, Finish::ToolCalls),
            ("length", false, Finish::Length),
            ("content_filter", false, Finish::ContentFilter),
            ("function_call", false, Finish::Other),
        ] {
            let calls = if calls {
                json!([{"id": "c", "function": {"name": "f", "arguments": "{}"}}])
            } else {
                json!(null)
            };
            let raw = json!({"choices": [{"message": {"content": "", "tool_calls": calls}, "finish_reason": reason}]});
            let r = parse_response(raw).expect("parse");
            assert_eq!(r.finish, finish, "{reason}");
            assert_eq!(r.finish_raw, reason);
            assert_eq!(r.text, None);
            assert_eq!(r.usage, None);
        }
        let no_details = json!({"choices": [{"message": {"content": "{\"a\":1}"}, "finish_reason": "stop"}],
                                "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
        let r = parse_response(no_details).expect("parse");
        assert_eq!(r.text.as_deref(), Some("{\"a\":1}"));
        let u = r.usage.expect("usage");
        assert_eq!(
            (u.reasoning_tokens, u.reasoning_source),
            (None, ReasoningSource::Unknown)
        );
    }

    #[test]
    fn bodies_without_choices_are_decode_errors() {
        for raw in [
            json!({}),
            json!({"choices": []}),
            json!({"error": {"message": "overloaded"}}),
        ] {
            assert!(matches!(parse_response(raw), Err(ProviderError::Decode(_))));
        }
    }
}
