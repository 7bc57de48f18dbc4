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
//! execution profile; `reasoning_effort` when the configuration sets one. A seed above `i64::MAX` (the API's integer range) is sent modulo
//! 2^63.
//!
//! Parsed decisions:
//! - Empty `content` (`""` or `null`) is no text; content given as an array of text
//!   parts (some compatible servers) is concatenated.
//! - `arguments` is kept byte for byte. Arguments sent as a JSON object, array, number
//!   or boolean instead of a string are a protocol violation by the model
//!   ([`ChatResponse::violation`]): recorded (serialized, so the record can be read)
//!   and never executed — the harness ends the episode as an agent failure. Absent or
//!   null arguments are the empty string. A call without an id (some local servers)
//!   gets `call_<index>`.
//! - Usage: `prompt_tokens` and `completion_tokens` are required; every count present
//!   must be an integer from 0 to 2^53 ([`http::count_opt`]), else the response has no
//!   usage and [`ChatResponse::usage_error`] says why.
//! - `finish_reason` stop→Stop, length→Length, tool_calls→ToolCalls,
//!   content_filter→ContentFilter, else Other — except that `stop` with tool calls
//!   present (what several compatible servers send) is ToolCalls; `finish_raw` keeps
//!   the server's word.
//! - Reasoning tokens are Reported when `completion_tokens_details.reasoning_tokens`
//!   is present (0 included), else Unknown.

use reqwest::header::{HeaderName, AUTHORIZATION};
use reqwest::Url;
use serde_json::{json, Map, Value as Json};

use super::chat::{
    ChatRequest, ChatResponse, Finish, Message, ReasoningSource, Sampling, ToolCall, ToolSchema,
    Usage,
};
use super::config::{Configuration, MaxTokensField, ReasoningEffort};
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
    reasoning_effort: Option<ReasoningEffort>,
    client: http::Client,
    menus: http::RenderedMenus,
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
            reasoning_effort: config.profile.reasoning_effort,
            client: http::Client::new(config, headers, key)?,
            menus: http::RenderedMenus::default(),
        })
    }
}

impl Provider for OpenAi {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            // The body but its tool array, which is rendered once per menu and spliced in.
            let mut body = body_but_tools(request, self.max_tokens_field);
            if let Some(effort) = self.reasoning_effort {
                body.insert("reasoning_effort".into(), json!(effort.name()));
            }
            let bytes = self.menus.body(&body, &request.tools, tools)?;
            let (raw, status) = self
                .client
                .post_json(http::endpoint(&self.base, &["chat", "completions"]), bytes)
                .await?;
            let mut response = parse_response(raw).map_err(|e| e.at_status(status))?;
            response.http_status = Some(status);
            Ok(response)
        })
    }

    fn wire_sampling(&self, request: &ChatRequest) -> Sampling {
        // The tool array carries no sampling field: it is left out rather than built.
        sent_sampling(&Json::Object(body_but_tools(
            request,
            self.max_tokens_field,
        )))
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
        "is among them".to_string()
    } else if let Some(id) = ids.iter().find(|id| names_model_file(id, model)) {
        format!("is among them as `{id}` (the server lists its model file's path)")
    } else {
        "is not among them (some routes serve models they do not list)".to_string()
    };
    format!("reachable; {} models listed; `{model}` {found}", ids.len())
}

/// Whether a listed id is the path of the model file `model` names: llama.cpp's server
/// lists the path it was started with (`-m /models/qwen2.5-0.5b-q4_k_m.gguf`), where a
/// catalogue names the file, with or without `.gguf`, or its path.
fn names_model_file(id: &str, model: &str) -> bool {
    let file = |s: &str| -> String {
        let name = s.rsplit(['/', '\\']).next().unwrap_or(s);
        name.strip_suffix(".gguf").unwrap_or(name).to_string()
    };
    !model.is_empty() && file(id) == file(model)
}

/// The chat-completions body of a request.
pub fn request_body(request: &ChatRequest, max_tokens_field: MaxTokensField) -> Json {
    let mut body = body_but_tools(request, max_tokens_field);
    if !request.tools.is_empty() {
        body.insert("tools".into(), tools(&request.tools));
    }
    Json::Object(body)
}

/// The `tools` array of a body.
fn tools(tools: &[ToolSchema]) -> Json {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            })
        })
        .collect()
}

/// [`request_body`] without its `tools` member.
fn body_but_tools(request: &ChatRequest, max_tokens_field: MaxTokensField) -> Map<String, Json> {
    let messages: Vec<Json> = request.messages.iter().map(message).collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), Json::Array(messages));
    if !request.tools.is_empty() {
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
    body
}

/// The sampling fields a chat-completions body carries.
pub fn sent_sampling(body: &Json) -> Sampling {
    Sampling {
        temperature: body.get("temperature").and_then(Json::as_f64),
        seed: body.get("seed").and_then(Json::as_u64),
        parallel_tool_calls: body.get("parallel_tool_calls").and_then(Json::as_bool),
    }
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
    http::check_role(
        message.get("role"),
        "choices[0].message.role",
        "assistant",
        &raw,
    )?;
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
    let mut violation = None;
    let tool_calls: Vec<ToolCall> = message
        .get("tool_calls")
        .and_then(Json::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let (call, broke) = tool_call(i, c);
                    violation = violation.take().or(broke);
                    call
                })
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
    let (usage, usage_error) = http::read_usage(&raw, "usage", usage);
    Ok(ChatResponse {
        text,
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

/// A call, and the protocol violation its arguments are, if they are one.
fn tool_call(index: usize, call: &Json) -> (ToolCall, Option<String>) {
    let function = call.get("function").unwrap_or(&Json::Null);
    let id = match call.get("id").and_then(Json::as_str) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!("call_{index}"),
    };
    let name = function
        .get("name")
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_string();
    let (arguments, violation) = match function.get("arguments") {
        Some(Json::String(s)) => (s.clone(), None),
        None | Some(Json::Null) => (String::new(), None),
        Some(other) => (
            other.to_string(),
            Some(format!(
                "tool call {index} (`{name}`): `arguments` is a JSON {}, not a string",
                http::kind(other)
            )),
        ),
    };
    (
        ToolCall {
            id,
            name,
            arguments,
        },
        violation,
    )
}

fn usage(u: &Json) -> Result<Usage, String> {
    let reasoning = match http::details(u, "completion_tokens_details") {
        Some(d) => http::count_opt(d, "reasoning_tokens")?,
        None => None,
    };
    let cached = match http::details(u, "prompt_tokens_details") {
        Some(d) => http::count_opt(d, "cached_tokens")?,
        None => None,
    };
    Ok(Usage {
        input_tokens: http::count(u, "prompt_tokens")?,
        cached_tokens: cached.unwrap_or(0),
        output_tokens: http::count(u, "completion_tokens")?,
        reasoning_tokens: reasoning,
        reasoning_source: if reasoning.is_some() {
            ReasoningSource::Reported
        } else {
            ReasoningSource::Unknown
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_sent_is_the_request_body_with_each_menu_rendered_once() {
        http::splice_check::spliced_body_is_the_request_body(
            |r| body_but_tools(r, MaxTokensField::MaxTokens),
            tools,
            |r| request_body(r, MaxTokensField::MaxTokens),
        );
    }

    #[test]
    fn a_local_servers_model_path_matches_the_file_it_names() {
        let ids = vec!["/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf".to_string()];
        for model in [
            "qwen2.5-coder-0.5b-instruct-q4_k_m",
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "other/dir/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        ] {
            let line = listing(model, &ids);
            assert!(line.contains("is among them"), "{model}: {line}");
            assert!(!line.contains("not among"), "{model}: {line}");
        }
        assert!(listing("qwen2.5-coder-1.5b", &ids).contains("is not among them"));
        assert!(listing("", &ids).contains("is not among them"));
        assert!(listing("gpt-4o", &["gpt-4o".to_string()]).ends_with("`gpt-4o` is among them"));
    }

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
                parameters: json!({"type": "object", "additionalProperties": false}).into(),
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
        // An object where the string belongs is recorded, and flagged as a violation.
        assert_eq!(r.tool_calls[1].arguments, "{\"id\":\"rec_2\"}");
        assert_eq!(
            r.violation.as_deref(),
            Some("tool call 1 (`read`): `arguments` is a JSON object, not a string")
        );
        assert_eq!(r.usage_error, None);
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
    fn arguments_that_are_not_strings_are_violations_and_strings_are_not() {
        let body = |arguments: Json| {
            json!({"choices": [{"message": {"tool_calls": [
                {"id": "c", "function": {"name": "read", "arguments": arguments}}]},
                "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
        };
        for (arguments, kind) in [
            (json!({"id": "rec_1"}), Some("object")),
            (json!(["rec_1"]), Some("array")),
            (json!(7), Some("number")),
            (json!(true), Some("boolean")),
            (json!("{\"id\": rec_1"), None),
            (json!(null), None),
        ] {
            let r = parse_response(body(arguments.clone())).expect("parse");
            match kind {
                Some(kind) => assert!(
                    r.violation.as_deref().is_some_and(|v| v.contains(kind)),
                    "{arguments}: {:?}",
                    r.violation
                ),
                None => assert_eq!(r.violation, None, "{arguments}"),
            }
        }
    }

    #[test]
    fn usage_that_is_not_counts_is_no_usage_with_a_reason() {
        let body = |usage: Json| json!({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}], "usage": usage});
        for (usage, field) in [
            (
                json!({"prompt_tokens": -5, "completion_tokens": 1}),
                "prompt_tokens",
            ),
            (
                json!({"prompt_tokens": 9_007_199_254_740_993_u64, "completion_tokens": 1}),
                "prompt_tokens",
            ),
            (
                json!({"prompt_tokens": 10, "completion_tokens": 12.5}),
                "completion_tokens",
            ),
            (
                json!({"prompt_tokens": 10, "completion_tokens": "12"}),
                "completion_tokens",
            ),
            (json!({"prompt_tokens": 10}), "completion_tokens"),
            (
                json!({"prompt_tokens": 10, "completion_tokens": 1,
                    "completion_tokens_details": {"reasoning_tokens": -1}}),
                "reasoning_tokens",
            ),
            (
                json!({"prompt_tokens": 10, "completion_tokens": 1,
                    "prompt_tokens_details": {"cached_tokens": 0.5}}),
                "cached_tokens",
            ),
        ] {
            let r = parse_response(body(usage.clone())).expect("parse");
            assert_eq!(r.usage, None, "{usage}");
            assert!(
                r.usage_error.as_deref().is_some_and(|e| e.contains(field)),
                "{usage}: {:?}",
                r.usage_error
            );
        }
        // Null details are no details.
        let r = parse_response(body(json!({"prompt_tokens": 10, "completion_tokens": 1,
            "prompt_tokens_details": null, "completion_tokens_details": null})))
        .expect("parse");
        assert_eq!(r.usage.map(|u| u.input_tokens), Some(10));
    }

    #[test]
    fn bodies_without_choices_are_decode_errors() {
        for raw in [
            json!({}),
            json!({"choices": []}),
            json!({"error": {"message": "overloaded"}}),
        ] {
            assert!(matches!(
                parse_response(raw),
                Err(ProviderError::Decode { .. })
            ));
        }
    }

    #[test]
    fn a_message_in_another_role_than_the_assistants_is_a_bad_body() {
        let body = |role: Json| {
            json!({"choices": [{"message": {"role": role, "content": "{\"decision\": \"x\"}"},
                "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 1}})
        };
        for role in [
            json!("system"),
            json!("user"),
            json!("tool"),
            json!(null),
            json!(7),
        ] {
            match parse_response(body(role.clone())) {
                Err(ProviderError::Decode { message, .. }) => assert!(
                    message.contains("choices[0].message.role")
                        && message.contains("not \"assistant\""),
                    "{message}"
                ),
                other => panic!("role {role} was taken: {other:?}"),
            }
        }
        assert!(parse_response(body(json!("assistant"))).is_ok());
        // Compatible servers that leave the role out are still read.
        let bare = json!({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1}});
        assert!(parse_response(bare).is_ok());
    }
}
