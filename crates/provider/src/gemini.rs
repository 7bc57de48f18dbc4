//! Gemini `generateContent`: `POST {base}/models/{model}:generateContent` with
//! `x-goog-api-key`, `GET {base}/models/{model}` for [`Provider::check`].
//!
//! Owns the translation [`request_body`] and [`parse_response`] (pure), and
//! [`gemini_schema`]; the HTTP part is thin.
//!
//! Sent: `systemInstruction` (every system message, joined by a blank line),
//! `contents` with roles `user` / `model` — user text as a `text` part, a model turn as
//! a `text` part (when non-empty) then `functionCall {name, args}` parts, tool results
//! as `functionResponse {name, response: {content: <observation>}}` parts; consecutive
//! contents of one role are merged (all responses to one turn's calls go in one
//! content, as the API requires). When tools are offered: `tools: [{functionDeclarations:
//! [{name, description, parameters}]}]` and `toolConfig: {functionCallingConfig: {mode:
//! "AUTO"}}`. `generationConfig: {maxOutputTokens, temperature, seed}`, the last two
//! when present; the seed is an int32 on this API, so it is sent modulo 2^31; with
//! `thinkingConfig: {thinkingLevel}` when the configuration sets a reasoning effort.
//! `parallel_tool_calls` has no Gemini equivalent and is not sent.
//!
//! Decisions:
//! - Schemas: Gemini's `parameters` takes an OpenAPI subset. [`gemini_schema`] keeps
//!   only `type, format, title, description, nullable, enum, items, properties,
//!   required, propertyOrdering, anyOf, minItems, maxItems, minProperties,
//!   maxProperties, minLength, maxLength, pattern, minimum, maximum, default, example`
//!   and drops every other key (`additionalProperties`, `$schema`, `$ref`, `$defs`,
//!   `const`, `oneOf`, `allOf`, `not`, `examples`, `exclusiveMinimum`, ...), recursing
//!   through `properties`, `items` and `anyOf`. A `type` list such as
//!   `["string", "null"]` becomes `type: "string", nullable: true`; a list of several
//!   non-null types is dropped.
//! - Call ids: Gemini usually gives none; the `i`-th call of a response is `call_<i>`
//!   (an `id` the API does give is kept and echoed back in `functionCall` and
//!   `functionResponse`). Gemini 3 models attach a `thoughtSignature` to function-call
//!   parts and reject a history that drops it; the chat types have no slot for it, so
//!   it rides in the call id after [`SIGNATURE_SEPARATOR`] (`call_0~ts~<signature>`)
//!   and is put back on the part when the turn is replayed. Signatures on text parts
//!   are optional for the API and are not replayed.
//! - A recorded call whose arguments are not a JSON object is replayed with `args: {}`
//!   (the wire cannot carry a raw string; the function response that follows still
//!   holds the sandbox's error for it); `arguments` of a `functionCall` is its
//!   `args` serialized (`{}` when the API omits them or sends null). `args` that are
//!   not an object (a string, array, number or boolean) are a protocol violation by the
//!   model ([`ChatResponse::violation`]): recorded serialized, never executed. Thought
//!   parts (`thought: true`) are not text.
//! - `finishReason` STOP→Stop (ToolCalls when a function call is present),
//!   MAX_TOKENS→Length, SAFETY/RECITATION/BLOCKLIST/PROHIBITED_CONTENT/SPII/
//!   IMAGE_SAFETY→ContentFilter, everything else (MALFORMED_FUNCTION_CALL, ...)→Other.
//!   A prompt blocked before any candidate (`promptFeedback.blockReason`) is
//!   ContentFilter with the block reason as `finish_raw`.
//! - Usage: input = `promptTokenCount` (cached included), cached =
//!   `cachedContentTokenCount`, output = `candidatesTokenCount + thoughtsTokenCount`,
//!   reasoning = `thoughtsTokenCount` (Reported when present, else Unknown).
//!   `promptTokenCount` is required, and every count present must be an integer from 0
//!   to 2^53, else the response has no usage ([`ChatResponse::usage_error`] says why).

use reqwest::header::HeaderName;
use reqwest::Url;
use serde_json::{json, Map, Value as Json};

use super::chat::{
    ChatRequest, ChatResponse, Finish, Message, ReasoningSource, Sampling, ToolCall, ToolSchema,
    Usage,
};
use super::config::{Configuration, ReasoningEffort};
use super::http;
use super::{BoxFuture, Provider, ProviderError};

/// The route when a configuration names none.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Separates a call id from the thought signature it carries.
pub const SIGNATURE_SEPARATOR: &str = "~ts~";

/// Schema keys Gemini's `parameters` accepts.
const SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "propertyOrdering",
    "anyOf",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "default",
    "example",
];

/// A client of the Gemini API.
#[derive(Debug)]
pub struct Gemini {
    model: String,
    reasoning_effort: Option<ReasoningEffort>,
    base: Url,
    client: http::Client,
    menus: http::RenderedMenus,
}

impl Gemini {
    /// A client for `config`; a missing key is [`ProviderError::MissingKey`].
    pub fn new(config: &Configuration, api_key: Option<String>) -> Result<Self, ProviderError> {
        let key = http::required_key(config, api_key)?;
        let base = http::base_url(config, DEFAULT_BASE_URL)?;
        let headers = vec![(
            HeaderName::from_static("x-goog-api-key"),
            http::secret_header(&config.name, "", &key)?,
        )];
        Ok(Gemini {
            model: config.model.clone(),
            reasoning_effort: config.profile.reasoning_effort,
            base,
            client: http::Client::new(config, headers, Some(key))?,
            menus: http::RenderedMenus::default(),
        })
    }
}

fn model_segment(model: &str) -> &str {
    model.strip_prefix("models/").unwrap_or(model)
}

impl Provider for Gemini {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            // The body but its tool array, which is rendered once per menu (the schema
            // reduction included) and spliced in.
            let mut body = body_but_tools(request);
            if let (Some(effort), Some(Json::Object(generation))) =
                (self.reasoning_effort, body.get_mut("generationConfig"))
            {
                generation.insert(
                    "thinkingConfig".into(),
                    json!({"thinkingLevel": effort.name()}),
                );
            }
            let bytes = self.menus.body(&body, &request.tools, tools)?;
            let method = format!("{}:generateContent", model_segment(&request.model));
            let (raw, status) = self
                .client
                .post_json(http::endpoint(&self.base, &["models", &method]), bytes)
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
            let url = http::endpoint(&self.base, &["models", model_segment(&self.model)]);
            let raw = self.client.get_json(url).await?;
            let name = raw
                .get("name")
                .and_then(Json::as_str)
                .ok_or_else(|| http::not_protocol("the model description has no `name`", &raw))?;
            let limit = raw
                .get("outputTokenLimit")
                .and_then(Json::as_u64)
                .map(|n| format!(", output limit {n} tokens"))
                .unwrap_or_default();
            Ok(format!("reachable; `{name}` is served{limit}"))
        })
    }
}

/// Whether a call id is one this client assigned (`call_<digits>`), as opposed to one
/// the API gave.
fn assigned(id: &str) -> bool {
    id.strip_prefix("call_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A call id split into the id proper and the thought signature it carries.
fn split_id(id: &str) -> (&str, Option<&str>) {
    match id.split_once(SIGNATURE_SEPARATOR) {
        Some((base, signature)) => (base, Some(signature)),
        None => (id, None),
    }
}

/// The `generateContent` body of a request.
pub fn request_body(request: &ChatRequest) -> Json {
    let mut body = body_but_tools(request);
    if !request.tools.is_empty() {
        body.insert("tools".into(), tools(&request.tools));
    }
    Json::Object(body)
}

/// The `tools` member of a body: one entry of every declaration.
fn tools(tools: &[ToolSchema]) -> Json {
    let declarations: Vec<Json> = tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": gemini_schema(&t.parameters)}))
        .collect();
    json!([{"functionDeclarations": declarations}])
}

/// [`request_body`] without its `tools` member.
fn body_but_tools(request: &ChatRequest) -> Map<String, Json> {
    let mut system: Vec<&str> = Vec::new();
    let mut contents: Vec<(&'static str, Vec<Json>)> = Vec::new();
    for m in &request.messages {
        let (role, parts) = match m {
            Message::System { content } => {
                system.push(content);
                continue;
            }
            Message::User { content } => ("user", vec![json!({"text": content})]),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut parts = Vec::new();
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    parts.push(json!({"text": text}));
                }
                for c in tool_calls {
                    let (id, signature) = split_id(&c.id);
                    let mut call = Map::new();
                    if !assigned(id) {
                        call.insert("id".into(), json!(id));
                    }
                    call.insert("name".into(), json!(c.name));
                    call.insert("args".into(), http::arguments_object(&c.arguments));
                    let mut part = Map::new();
                    part.insert("functionCall".into(), Json::Object(call));
                    if let Some(s) = signature {
                        part.insert("thoughtSignature".into(), json!(s));
                    }
                    parts.push(Json::Object(part));
                }
                ("model", parts)
            }
            Message::Tool {
                call_id,
                name,
                content,
            } => {
                let (id, _) = split_id(call_id);
                let mut response = Map::new();
                if !assigned(id) {
                    response.insert("id".into(), json!(id));
                }
                response.insert("name".into(), json!(name));
                response.insert("response".into(), json!({"content": content}));
                (
                    "user",
                    vec![json!({"functionResponse": Json::Object(response)})],
                )
            }
        };
        if parts.is_empty() {
            continue;
        }
        match contents.last_mut() {
            Some((last, previous)) if *last == role => previous.extend(parts),
            _ => contents.push((role, parts)),
        }
    }
    let mut body = Map::new();
    if !system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system.join("\n\n")}]}),
        );
    }
    let contents: Vec<Json> = contents
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    body.insert("contents".into(), Json::Array(contents));
    if !request.tools.is_empty() {
        body.insert(
            "toolConfig".into(),
            json!({"functionCallingConfig": {"mode": "AUTO"}}),
        );
    }
    let mut generation = Map::new();
    generation.insert(
        "maxOutputTokens".into(),
        json!(request.max_completion_tokens),
    );
    if let Some(t) = request.sampling.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(seed) = request.sampling.seed {
        generation.insert("seed".into(), json!(seed % (1u64 << 31)));
    }
    body.insert("generationConfig".into(), Json::Object(generation));
    body
}

/// A JSON Schema reduced to the keys Gemini accepts (see the module doc).
pub fn gemini_schema(schema: &Json) -> Json {
    let Json::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        if !SCHEMA_KEYS.contains(&key.as_str()) {
            continue;
        }
        let value = match (key.as_str(), value) {
            ("properties", Json::Object(props)) => Json::Object(
                props
                    .iter()
                    .map(|(name, s)| (name.clone(), gemini_schema(s)))
                    .collect(),
            ),
            ("items", s) => gemini_schema(s),
            ("anyOf", Json::Array(options)) => {
                Json::Array(options.iter().map(gemini_schema).collect())
            }
            ("type", Json::Array(types)) => {
                let named: Vec<&Json> = types
                    .iter()
                    .filter(|t| t.as_str() != Some("null"))
                    .collect();
                if named.len() < types.len() {
                    out.insert("nullable".into(), json!(true));
                }
                match named.as_slice() {
                    [one] => (*one).clone(),
                    _ => continue,
                }
            }
            (_, v) => v.clone(),
        };
        out.insert(key.clone(), value);
    }
    Json::Object(out)
}

/// The sampling fields a `generateContent` body carries (in `generationConfig`; the
/// API has no `parallel_tool_calls`).
pub fn sent_sampling(body: &Json) -> Sampling {
    let generation = body.get("generationConfig");
    let field = |name: &str| generation.and_then(|g| g.get(name));
    Sampling {
        temperature: field("temperature").and_then(Json::as_f64),
        seed: field("seed").and_then(Json::as_u64),
        parallel_tool_calls: None,
    }
}

/// The [`ChatResponse`] of a `generateContent` body; `raw` keeps the body.
pub fn parse_response(raw: Json) -> Result<ChatResponse, ProviderError> {
    let (usage, usage_error) = http::read_usage(&raw, "usageMetadata", usage);
    let candidate = raw
        .get("candidates")
        .and_then(Json::as_array)
        .and_then(|c| c.first());
    let Some(candidate) = candidate else {
        let blocked = raw
            .get("promptFeedback")
            .and_then(|f| f.get("blockReason"))
            .and_then(Json::as_str)
            .map(str::to_string);
        return match blocked {
            Some(reason) => Ok(ChatResponse {
                text: None,
                tool_calls: Vec::new(),
                finish: Finish::ContentFilter,
                finish_raw: reason,
                usage,
                usage_error,
                violation: None,
                http_status: None,
                raw,
            }),
            None => Err(http::not_protocol(
                "the response has no `candidates[0]`",
                &raw,
            )),
        };
    };
    http::check_role(
        candidate.get("content").and_then(|c| c.get("role")),
        "candidates[0].content.role",
        "model",
        &raw,
    )?;
    let parts = candidate
        .get("content")
        .and_then(|c| c.get("parts"))
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut violation = None;
    for part in parts {
        if let Some(call) = part.get("functionCall") {
            let mut id = match call.get("id").and_then(Json::as_str) {
                Some(id) if !id.is_empty() => id.to_string(),
                _ => format!("call_{}", tool_calls.len()),
            };
            if let Some(signature) = part.get("thoughtSignature").and_then(Json::as_str) {
                id.push_str(SIGNATURE_SEPARATOR);
                id.push_str(signature);
            }
            let name = call
                .get("name")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string();
            let arguments = match call.get("args") {
                None | Some(Json::Null) => "{}".to_string(),
                Some(args) => {
                    if !args.is_object() {
                        violation = violation.or(Some(format!(
                            "tool call {} (`{name}`): `args` is a JSON {}, not an object",
                            tool_calls.len(),
                            http::kind(args)
                        )));
                    }
                    args.to_string()
                }
            };
            tool_calls.push(ToolCall {
                id,
                name,
                arguments,
            });
        } else if part.get("thought").and_then(Json::as_bool) != Some(true) {
            if let Some(t) = part.get("text").and_then(Json::as_str) {
                text.push_str(t);
            }
        }
    }
    let finish_raw = candidate
        .get("finishReason")
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_string();
    let finish = match finish_raw.as_str() {
        "STOP" if !tool_calls.is_empty() => Finish::ToolCalls,
        "STOP" => Finish::Stop,
        "MAX_TOKENS" => Finish::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            Finish::ContentFilter
        }
        _ => Finish::Other,
    };
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

fn usage(u: &Json) -> Result<Usage, String> {
    let thoughts = http::count_opt(u, "thoughtsTokenCount")?;
    let candidates = http::count_opt(u, "candidatesTokenCount")?.unwrap_or(0);
    Ok(Usage {
        input_tokens: http::count(u, "promptTokenCount")?,
        cached_tokens: http::count_opt(u, "cachedContentTokenCount")?.unwrap_or(0),
        // Each count is at most 2^53, so the sum cannot overflow.
        output_tokens: candidates + thoughts.unwrap_or(0),
        reasoning_tokens: thoughts,
        reasoning_source: if thoughts.is_some() {
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
        http::splice_check::spliced_body_is_the_request_body(body_but_tools, tools, request_body);
    }
    use crate::chat::ToolSchema;

    #[test]
    fn schemas_lose_the_keys_gemini_rejects() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "id": {"type": "string", "description": "Record id.", "const": "x"},
                "additionalProperties": {"type": ["integer", "null"], "exclusiveMinimum": 0},
                "tags": {"type": "array", "items": {"type": "string", "additionalProperties": false}},
                "either": {"anyOf": [{"type": "string", "examples": ["a"]}, {"type": "integer"}]},
            },
            "required": ["id"],
        });
        assert_eq!(
            gemini_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Record id."},
                    "additionalProperties": {"type": "integer", "nullable": true},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                },
                "required": ["id"],
            })
        );
    }

    #[test]
    fn request_uses_contents_function_parts_and_generation_config() {
        let request = ChatRequest {
            model: "gemini-test".into(),
            messages: vec![
                Message::System {
                    content: "sys".into(),
                },
                Message::User {
                    content: "go".into(),
                },
                Message::Assistant {
                    content: None,
                    tool_calls: vec![
                        ToolCall {
                            id: format!("call_0{SIGNATURE_SEPARATOR}c2lnbmF0dXJl"),
                            name: "read".into(),
                            arguments: "{\"id\":\"rec_1\"}".into(),
                        },
                        ToolCall {
                            id: "fc_given".into(),
                            name: "read".into(),
                            arguments: "not json".into(),
                        },
                    ],
                },
                Message::Tool {
                    call_id: format!("call_0{SIGNATURE_SEPARATOR}c2lnbmF0dXJl"),
                    name: "read".into(),
                    content: "obs 1".into(),
                },
                Message::Tool {
                    call_id: "fc_given".into(),
                    name: "read".into(),
                    content: "obs 2".into(),
                },
            ],
            tools: vec![ToolSchema {
                name: "read".into(),
                description: "Read.".into(),
                parameters: json!({"type": "object", "additionalProperties": false}).into(),
            }],
            max_completion_tokens: 1024,
            sampling: Sampling {
                temperature: Some(0.0),
                seed: Some((1u64 << 31) + 5),
                parallel_tool_calls: Some(false),
            },
        };
        assert_eq!(
            request_body(&request),
            json!({
                "systemInstruction": {"parts": [{"text": "sys"}]},
                "contents": [
                    {"role": "user", "parts": [{"text": "go"}]},
                    {"role": "model", "parts": [
                        {"functionCall": {"name": "read", "args": {"id": "rec_1"}}, "thoughtSignature": "c2lnbmF0dXJl"},
                        {"functionCall": {"id": "fc_given", "name": "read", "args": {}}},
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "read", "response": {"content": "obs 1"}}},
                        {"functionResponse": {"id": "fc_given", "name": "read", "response": {"content": "obs 2"}}},
                    ]},
                ],
                "tools": [{"functionDeclarations": [{"name": "read", "description": "Read.", "parameters": {"type": "object"}}]}],
                "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
                "generationConfig": {"maxOutputTokens": 1024, "temperature": 0.0, "seed": 5},
            })
        );
        let mut bare = request.clone();
        bare.sampling = Sampling::default();
        assert_eq!(
            request_body(&bare)["generationConfig"],
            json!({"maxOutputTokens": 1024})
        );
    }

    #[test]
    fn response_parts_finish_reasons_and_usage_are_read() {
        let raw = json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "thinking...", "thought": true},
                {"text": "Reading."},
                {"functionCall": {"name": "read", "args": {"id": "rec_1"}}, "thoughtSignature": "c2ln"},
                {"functionCall": {"name": "read"}},
            ]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 120, "cachedContentTokenCount": 100,
                              "candidatesTokenCount": 30, "thoughtsTokenCount": 12},
        });
        let r = parse_response(raw.clone()).expect("parse");
        assert_eq!(r.text.as_deref(), Some("Reading."));
        assert_eq!(r.finish, Finish::ToolCalls);
        assert_eq!(
            r.tool_calls[0].id,
            format!("call_0{SIGNATURE_SEPARATOR}c2ln")
        );
        assert_eq!(r.tool_calls[0].arguments, "{\"id\":\"rec_1\"}");
        assert_eq!(
            (
                r.tool_calls[1].id.as_str(),
                r.tool_calls[1].arguments.as_str()
            ),
            ("call_1", "{}")
        );
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 120,
                cached_tokens: 100,
                output_tokens: 42,
                reasoning_tokens: Some(12),
                reasoning_source: ReasoningSource::Reported,
            })
        );
        assert_eq!(r.raw, raw);
        for (reason, finish) in [
            ("STOP", Finish::Stop),
            ("MAX_TOKENS", Finish::Length),
            ("SAFETY", Finish::ContentFilter),
            ("RECITATION", Finish::ContentFilter),
            ("BLOCKLIST", Finish::ContentFilter),
            ("PROHIBITED_CONTENT", Finish::ContentFilter),
            ("MALFORMED_FUNCTION_CALL", Finish::Other),
        ] {
            let r = parse_response(
                json!({"candidates": [{"content": {"role": "model"}, "finishReason": reason}]}),
            )
            .expect("parse");
            assert_eq!(
                (r.finish, r.text, r.usage),
                (finish, None, None),
                "{reason}"
            );
        }
        let blocked =
            parse_response(json!({"promptFeedback": {"blockReason": "SAFETY"}})).expect("parse");
        assert_eq!(
            (blocked.finish, blocked.finish_raw.as_str()),
            (Finish::ContentFilter, "SAFETY")
        );
        assert!(matches!(
            parse_response(json!({"candidates": []})),
            Err(ProviderError::Decode { .. })
        ));
    }

    #[test]
    fn a_message_in_another_role_than_the_models_is_a_bad_body() {
        let body = |role: &str| {
            json!({"candidates": [{"content": {"role": role, "parts": [{"text": "{}"}]},
                "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1}})
        };
        for role in ["system", "user", "assistant"] {
            match parse_response(body(role)) {
                Err(ProviderError::Decode { message, .. }) => assert!(
                    message.contains("candidates[0].content.role")
                        && message.contains("not \"model\""),
                    "{message}"
                ),
                other => panic!("role {role} was taken: {other:?}"),
            }
        }
        assert!(parse_response(body("model")).is_ok());
    }
}
