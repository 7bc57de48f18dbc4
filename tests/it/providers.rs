//! The three wire clients against a loopback server: what each sends (tools, tool
//! choice, parallel calls, sampling fields, the cap field, the key header) and how each
//! reads what comes back (tool calls, answers, cuts at the cap, invalid arguments,
//! several calls, HTTP errors, HTML, timeouts, missing usage), retries through
//! `send_with_retry`, and whole episodes through the harness.
//!
//! Every test starts its own axum server on 127.0.0.1:0 that answers from a script and
//! records what it received; nothing leaves the machine. A distinctive fake key is used
//! throughout and must never appear in a response's `raw`, an error, or a trace.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Response, StatusCode, Uri};
use axum::Router;
use serde_json::{json, Value as Json};

use tbb::provider::anthropic::Anthropic;
use tbb::provider::chat::Sampling;
use tbb::provider::gemini::Gemini;
use tbb::provider::openai::OpenAi;
use tbb::provider::retry::send_with_retry;
use tbb::provider::{
    ChatRequest, ChatResponse, Configuration, Finish, Message, Provider, ProviderError,
    ReasoningSource, ToolCall, ToolSchema,
};

/// The fake key. Nothing the clients produce may contain it.
const KEY: &str = "sk-test-DO-NOT-LEAK-7f3a9c1e5b2d";

// ---------------------------------------------------------------------------------
// Loopback server
// ---------------------------------------------------------------------------------

/// One scripted reply.
#[derive(Debug, Clone)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

impl Reply {
    fn json(body: Json) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type", "application/json".into())],
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    fn raw(status: u16, content_type: &str, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("content-type", content_type.into())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    fn header(mut self, name: &'static str, value: &str) -> Reply {
        self.headers.push((name, value.into()));
        self
    }

    fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    headers: BTreeMap<String, String>,
    body: String,
}

impl Received {
    fn json(&self) -> Json {
        serde_json::from_str(&self.body).expect("the client sent JSON")
    }
}

type Script = Arc<dyn Fn(&Received, usize) -> Reply + Send + Sync>;

#[derive(Clone)]
struct ServerState {
    script: Script,
    received: Arc<Mutex<Vec<Received>>>,
}

/// A server on 127.0.0.1:0 answering every path from a script.
struct Loopback {
    origin: String,
    received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

async fn handle(
    State(state): State<ServerState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let received = Received {
        method: method.to_string(),
        path: uri.to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    v.to_str().unwrap_or("<binary>").to_string(),
                )
            })
            .collect(),
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let index = {
        let mut all = state.received.lock().expect("lock");
        all.push(received.clone());
        all.len() - 1
    };
    let reply = (state.script)(&received, index);
    tokio::time::sleep(reply.delay).await;
    let mut response =
        Response::builder().status(StatusCode::from_u16(reply.status).expect("status"));
    for (name, value) in &reply.headers {
        response = response.header(*name, value);
    }
    response.body(Body::from(reply.body)).expect("response")
}

impl Loopback {
    /// A server answering request `i` with `script(request, i)`.
    async fn start(script: impl Fn(&Received, usize) -> Reply + Send + Sync + 'static) -> Loopback {
        let received = Arc::new(Mutex::new(Vec::new()));
        let state = ServerState {
            script: Arc::new(script),
            received: received.clone(),
        };
        let app = Router::new().fallback(handle).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let origin = format!("http://{}", listener.local_addr().expect("address"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Loopback {
            origin,
            received,
            task,
        }
    }

    /// A server answering request `i` with `replies[i]`, the last one repeated.
    async fn replies(replies: Vec<Reply>) -> Loopback {
        Loopback::start(move |_, i| replies[i.min(replies.len() - 1)].clone()).await
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// ---------------------------------------------------------------------------------
// Protocols
// ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Proto {
    OpenAi,
    Anthropic,
    Gemini,
}

const MODEL: &str = "test-model-1";

impl Proto {
    fn kind(self) -> &'static str {
        match self {
            Proto::OpenAi => "openai",
            Proto::Anthropic => "anthropic",
            Proto::Gemini => "gemini",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Proto::Gemini => "/v1beta",
            _ => "/v1",
        }
    }

    fn chat_path(self) -> String {
        match self {
            Proto::OpenAi => "/v1/chat/completions".into(),
            Proto::Anthropic => "/v1/messages".into(),
            Proto::Gemini => format!("/v1beta/models/{MODEL}:generateContent"),
        }
    }

    /// A configuration of this protocol pointing at `server`; `extra` is more TOML.
    fn config(self, server: &Loopback, extra: &str) -> Configuration {
        let text = format!(
            "name = \"loopback-{kind}\"\norganization = \"test\"\nprovider = \"{kind}\"\nmodel = \"{MODEL}\"\n\
             base_url = \"{origin}{prefix}\"\napi_key_env = \"TBB_TEST_KEY\"\n\
             prices = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\ntimeout_ms = 5000\n\
             retry = {{ max_attempts = 3, base_delay_ms = 5, max_delay_ms = 3000, retry_on = [\"rate_limited\", \"server_error\", \"timeout\", \"transport\"] }}\n{extra}",
            kind = self.kind(),
            origin = server.origin,
            prefix = self.prefix(),
        );
        toml::from_str(&text).expect("configuration parses")
    }

    fn provider(self, config: &Configuration) -> Box<dyn Provider> {
        tbb::provider::install_crypto();
        let key = Some(KEY.to_string());
        match self {
            Proto::OpenAi => Box::new(OpenAi::new(config, key).expect("client")),
            Proto::Anthropic => Box::new(Anthropic::new(config, key).expect("client")),
            Proto::Gemini => Box::new(Gemini::new(config, key).expect("client")),
        }
    }

    /// The header carrying the key, and its expected value.
    fn key_header(self) -> (&'static str, String) {
        match self {
            Proto::OpenAi => ("authorization", format!("Bearer {KEY}")),
            Proto::Anthropic => ("x-api-key", KEY.to_string()),
            Proto::Gemini => ("x-goog-api-key", KEY.to_string()),
        }
    }

    /// A usage object: prompt tokens, output tokens (reasoning included), reasoning.
    fn usage(self, input: u64, output: u64, reasoning: u64) -> (&'static str, Json) {
        match self {
            Proto::OpenAi => (
                "usage",
                json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
                       "prompt_tokens_details": {"cached_tokens": 0},
                       "completion_tokens_details": {"reasoning_tokens": reasoning}}),
            ),
            Proto::Anthropic => (
                "usage",
                json!({"input_tokens": input, "output_tokens": output}),
            ),
            Proto::Gemini => {
                let mut u = json!({"promptTokenCount": input, "totalTokenCount": input + output});
                if output > reasoning {
                    u["candidatesTokenCount"] = json!(output - reasoning);
                }
                if reasoning > 0 {
                    u["thoughtsTokenCount"] = json!(reasoning);
                }
                ("usageMetadata", u)
            }
        }
    }

    /// A response body: optional text, calls `(id, name, args)`, the finish reason in the
    /// protocol's words, and usage.
    fn body(
        self,
        text: Option<&str>,
        calls: &[(&str, &str, Json)],
        finish: &str,
        usage: Option<(u64, u64, u64)>,
    ) -> Json {
        let mut body = match self {
            Proto::OpenAi => {
                let mut message = json!({"role": "assistant", "content": text});
                if !calls.is_empty() {
                    message["tool_calls"] = calls
                        .iter()
                        .map(|(id, name, args)| {
                            let arguments = match args {
                                Json::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
                        })
                        .collect();
                }
                json!({"id": "chatcmpl-1", "object": "chat.completion", "model": MODEL,
                       "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
            }
            Proto::Anthropic => {
                let mut content: Vec<Json> = Vec::new();
                if let Some(t) = text {
                    content.push(json!({"type": "text", "text": t}));
                }
                for (id, name, args) in calls {
                    content
                        .push(json!({"type": "tool_use", "id": id, "name": name, "input": args}));
                }
                json!({"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL,
                       "content": content, "stop_reason": finish, "stop_sequence": null})
            }
            Proto::Gemini => {
                let mut parts: Vec<Json> = Vec::new();
                if let Some(t) = text {
                    parts.push(json!({"text": t}));
                }
                for (_, name, args) in calls {
                    parts.push(json!({"functionCall": {"name": name, "args": args}}));
                }
                let mut content = json!({"role": "model"});
                if !parts.is_empty() {
                    content["parts"] = Json::Array(parts);
                }
                json!({"candidates": [{"content": content, "finishReason": finish, "index": 0}],
                       "modelVersion": MODEL})
            }
        };
        if let Some((input, output, reasoning)) = usage {
            let (name, u) = self.usage(input, output, reasoning);
            body[name] = u;
        }
        body
    }

    fn stop_reason(self, finish: Finish) -> &'static str {
        match (self, finish) {
            (Proto::OpenAi, Finish::Stop) => "stop",
            (Proto::OpenAi, Finish::ToolCalls) => "tool_calls",
            (Proto::OpenAi, _) => "length",
            (Proto::Anthropic, Finish::Stop) => "end_turn",
            (Proto::Anthropic, Finish::ToolCalls) => "tool_use",
            (Proto::Anthropic, _) => "max_tokens",
            (Proto::Gemini, Finish::Length) => "MAX_TOKENS",
            (Proto::Gemini, _) => "STOP",
        }
    }

    /// The id a client reports for the `i`-th call of a response scripted with `id`.
    fn reported_id(self, id: &str, i: usize) -> String {
        match self {
            Proto::Gemini => format!("call_{i}"),
            _ => id.to_string(),
        }
    }

    /// Tool results in a request body this client sent.
    fn tool_results(self, body: &Json) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            Proto::OpenAi => {
                for m in body["messages"].as_array().into_iter().flatten() {
                    if m["role"] == "tool" {
                        out.push(m["content"].as_str().unwrap_or("").to_string());
                    }
                }
            }
            Proto::Anthropic => {
                for m in body["messages"].as_array().into_iter().flatten() {
                    for b in m["content"].as_array().into_iter().flatten() {
                        if b["type"] == "tool_result" {
                            out.push(b["content"].as_str().unwrap_or("").to_string());
                        }
                    }
                }
            }
            Proto::Gemini => {
                for c in body["contents"].as_array().into_iter().flatten() {
                    for p in c["parts"].as_array().into_iter().flatten() {
                        if let Some(r) = p.get("functionResponse") {
                            out.push(r["response"]["content"].as_str().unwrap_or("").to_string());
                        }
                    }
                }
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------
// Requests and checks
// ---------------------------------------------------------------------------------

fn tools() -> Vec<ToolSchema> {
    ["search", "read"]
        .into_iter()
        .map(|name| ToolSchema {
            name: name.into(),
            description: format!("The {name} tool. Connector coordinates: workspace=w; region=r; collection=c."),
            parameters: json!({"type": "object", "properties": {"id": {"type": "string", "description": "Record id."}},
                               "required": ["id"], "additionalProperties": false}).into(),
        })
        .collect()
}

fn sampling() -> Sampling {
    Sampling {
        temperature: Some(0.0),
        seed: Some(42),
        parallel_tool_calls: Some(false),
    }
}

/// A request in the middle of an episode: one call made and answered.
fn request(sampling: Sampling) -> ChatRequest {
    ChatRequest {
        model: MODEL.into(),
        messages: vec![
            Message::System {
                content: "You are an agent.".into(),
            },
            Message::User {
                content: "Find invoice INV-7.".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "call_0".into(),
                    name: "search".into(),
                    arguments: "{\"id\":\"INV-7\"}".into(),
                }],
            },
            Message::Tool {
                call_id: "call_0".into(),
                name: "search".into(),
                content: "{\"results\": [{\"id\": \"rec_1\"}]}".into(),
            },
        ],
        tools: tools(),
        max_completion_tokens: 1024,
        sampling,
    }
}

/// Fails if the fake key occurs in `what`'s Debug form.
fn assert_no_key(what: &impl Debug) {
    let text = format!("{what:?}");
    assert!(!text.contains(KEY), "the key leaked into {text}");
}

fn assert_error_clean(error: &ProviderError) {
    assert_no_key(error);
    assert!(
        !error.to_string().contains(KEY),
        "the key leaked into {error}"
    );
}

async fn chat(proto: Proto, server: &Loopback, extra: &str) -> Result<ChatResponse, ProviderError> {
    chat_with(proto, &proto.config(server, extra)).await
}

async fn chat_with(proto: Proto, config: &Configuration) -> Result<ChatResponse, ProviderError> {
    let provider = proto.provider(config);
    let result = provider.chat(&request(sampling())).await;
    match &result {
        Ok(r) => assert_no_key(r),
        Err(e) => assert_error_clean(e),
    }
    result
}

// ---------------------------------------------------------------------------------
// Scenarios, each run for every protocol (see the `per_protocol!` list below)
// ---------------------------------------------------------------------------------

async fn normal_tool_call(proto: Proto) {
    let body = proto.body(
        None,
        &[("call_7", "read", json!({"id": "rec_1"}))],
        proto.stop_reason(Finish::ToolCalls),
        Some((1200, 30, 0)),
    );
    let server = Loopback::replies(vec![Reply::json(body.clone())]).await;
    let r = chat(proto, &server, "").await.expect("response");
    assert_eq!(r.finish, Finish::ToolCalls);
    assert_eq!(r.text, None);
    assert_eq!(
        r.tool_calls,
        vec![ToolCall {
            id: proto.reported_id("call_7", 0),
            name: "read".into(),
            arguments: "{\"id\":\"rec_1\"}".into(),
        }]
    );
    let usage = r.usage.expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (1200, 30));
    assert_eq!(r.raw, body);

    // What was sent.
    let received = server.received();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", proto.chat_path().as_str())
    );
    let (header, value) = proto.key_header();
    assert_eq!(
        sent.headers.get(header),
        Some(&value),
        "{proto:?} key header"
    );
    assert_eq!(
        sent.headers.get("content-type").map(String::as_str),
        Some("application/json")
    );
    let sent = sent.json();
    match proto {
        Proto::OpenAi => {
            assert_eq!(sent["model"], MODEL);
            assert_eq!(sent["tools"].as_array().map(Vec::len), Some(2));
            assert_eq!(sent["tools"][1]["function"]["name"], "read");
            assert_eq!(
                sent["tools"][1]["function"]["parameters"]["additionalProperties"],
                false
            );
            assert_eq!(sent["tool_choice"], "auto");
            assert_eq!(sent["parallel_tool_calls"], false);
            assert_eq!(sent["temperature"], 0.0);
            assert_eq!(sent["seed"], 42);
            assert_eq!(sent["max_completion_tokens"], 1024);
            assert!(sent.get("max_tokens").is_none());
            assert_eq!(
                sent["messages"][2]["tool_calls"][0]["function"]["arguments"],
                "{\"id\":\"INV-7\"}"
            );
            assert_eq!(sent["messages"][3]["tool_call_id"], "call_0");
        }
        Proto::Anthropic => {
            assert_eq!(sent["model"], MODEL);
            assert_eq!(sent["system"], "You are an agent.");
            assert_eq!(sent["tools"][1]["name"], "read");
            assert_eq!(
                sent["tools"][1]["input_schema"]["additionalProperties"],
                false
            );
            assert_eq!(
                sent["tool_choice"],
                json!({"type": "auto", "disable_parallel_tool_use": true})
            );
            assert_eq!(sent["temperature"], 0.0);
            assert!(sent.get("seed").is_none(), "Anthropic has no seed");
            assert_eq!(sent["max_tokens"], 1024);
            assert_eq!(
                sent["messages"][1]["content"][0]["input"],
                json!({"id": "INV-7"})
            );
            assert_eq!(sent["messages"][2]["content"][0]["tool_use_id"], "call_0");
            assert_eq!(
                server.received()[0]
                    .headers
                    .get("anthropic-version")
                    .map(String::as_str),
                Some("2023-06-01")
            );
        }
        Proto::Gemini => {
            assert!(sent.get("model").is_none(), "the model is in the path");
            assert_eq!(
                sent["systemInstruction"]["parts"][0]["text"],
                "You are an agent."
            );
            let declarations = &sent["tools"][0]["functionDeclarations"];
            assert_eq!(declarations[1]["name"], "read");
            assert!(declarations[1]["parameters"]
                .get("additionalProperties")
                .is_none());
            assert_eq!(declarations[1]["parameters"]["required"], json!(["id"]));
            assert_eq!(
                sent["toolConfig"],
                json!({"functionCallingConfig": {"mode": "AUTO"}})
            );
            assert_eq!(
                sent["generationConfig"],
                json!({"maxOutputTokens": 1024, "temperature": 0.0, "seed": 42})
            );
            assert_eq!(
                sent["contents"][1]["parts"][0]["functionCall"],
                json!({"name": "search", "args": {"id": "INV-7"}})
            );
            assert_eq!(
                sent["contents"][2]["parts"][0]["functionResponse"]["name"],
                "search"
            );
        }
    }
}

async fn profile_omissions_and_cap_field(proto: Proto) {
    let body = proto.body(
        Some("ok"),
        &[],
        proto.stop_reason(Finish::Stop),
        Some((10, 1, 0)),
    );
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let config = proto.config(&server, "profile = { max_tokens_field = \"max_tokens\" }");
    let provider = proto.provider(&config);
    provider
        .chat(&request(Sampling::default()))
        .await
        .expect("response");
    let sent = server.received()[0].json();
    for absent in [
        "temperature",
        "seed",
        "parallel_tool_calls",
        "reasoning_effort",
        "output_config",
    ] {
        assert!(sent.get(absent).is_none(), "{proto:?}: {absent} sent");
    }
    match proto {
        Proto::OpenAi => {
            assert_eq!(sent["max_tokens"], 1024);
            assert!(sent.get("max_completion_tokens").is_none());
            assert_eq!(sent["tool_choice"], "auto");
        }
        Proto::Anthropic => assert_eq!(sent["tool_choice"], json!({"type": "auto"})),
        Proto::Gemini => assert_eq!(sent["generationConfig"], json!({"maxOutputTokens": 1024})),
    }
}

/// A configuration's reasoning effort reaches the wire in its protocol's own field, and
/// nothing is sent without one (the last scenario's bodies).
async fn reasoning_effort_in_the_protocol_s_field(proto: Proto) {
    let body = proto.body(
        Some("ok"),
        &[],
        proto.stop_reason(Finish::Stop),
        Some((10, 1, 0)),
    );
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let config = proto.config(&server, "profile = { reasoning_effort = \"high\" }");
    let provider = proto.provider(&config);
    provider
        .chat(&request(Sampling::default()))
        .await
        .expect("response");
    let sent = server.received()[0].json();
    match proto {
        Proto::OpenAi => assert_eq!(sent["reasoning_effort"], "high"),
        Proto::Anthropic => assert_eq!(sent["output_config"], json!({"effort": "high"})),
        Proto::Gemini => assert_eq!(
            sent["generationConfig"]["thinkingConfig"],
            json!({"thinkingLevel": "high"})
        ),
    }
}

async fn final_json_answer(proto: Proto) {
    let answer = "{\"decision\": \"escalate\", \"sources\": [\"rec_1\"]}";
    let body = proto.body(
        Some(answer),
        &[],
        proto.stop_reason(Finish::Stop),
        Some((1500, 20, 0)),
    );
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let r = chat(proto, &server, "").await.expect("response");
    assert_eq!(r.finish, Finish::Stop);
    assert_eq!(r.text.as_deref(), Some(answer));
    assert!(r.tool_calls.is_empty());
}

async fn cut_at_the_cap_with_reasoning_only(proto: Proto) {
    let body = proto.body(
        None,
        &[],
        proto.stop_reason(Finish::Length),
        Some((1500, 1024, 1024)),
    );
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let r = chat(proto, &server, "").await.expect("response");
    assert_eq!(r.finish, Finish::Length);
    assert_eq!(r.text, None);
    assert!(r.tool_calls.is_empty());
    let usage = r.usage.expect("usage");
    assert_eq!(usage.output_tokens, 1024);
    match proto {
        // Anthropic counts thinking inside output_tokens and reports no split.
        Proto::Anthropic => assert_eq!(
            (usage.reasoning_tokens, usage.reasoning_source),
            (None, ReasoningSource::Unknown)
        ),
        _ => assert_eq!(
            (usage.reasoning_tokens, usage.reasoning_source),
            (Some(1024), ReasoningSource::Reported)
        ),
    }
}

async fn tool_call_cut_inside_its_arguments(proto: Proto) {
    let body = match proto {
        Proto::OpenAi => proto.body(
            None,
            &[("call_9", "read", json!("{\"id\": \"rec_"))],
            "length",
            Some((1500, 1024, 1000)),
        ),
        // Anthropic returns parsed input: a call cut by max_tokens carries what was parsed.
        Proto::Anthropic => proto.body(
            None,
            &[("toolu_9", "read", json!({}))],
            "max_tokens",
            Some((1500, 1024, 0)),
        ),
        // Gemini emits no partial function call: the cut response has no call at all.
        Proto::Gemini => proto.body(None, &[], "MAX_TOKENS", Some((1500, 1024, 1000))),
    };
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let r = chat(proto, &server, "").await.expect("response");
    assert_eq!(r.finish, Finish::Length);
    let arguments: Vec<&str> = r.tool_calls.iter().map(|c| c.arguments.as_str()).collect();
    match proto {
        Proto::OpenAi => assert_eq!(arguments, ["{\"id\": \"rec_"]),
        Proto::Anthropic => assert_eq!(arguments, ["{}"]),
        Proto::Gemini => assert!(arguments.is_empty()),
    }
}

async fn invalid_arguments_pass_through(proto: Proto) {
    // OpenAI returns the model's string; Anthropic and Gemini return parsed values, so
    // the worst they can hand over is arguments that are not an object — serialized
    // as they are, never coerced.
    let (args, expected) = match proto {
        Proto::OpenAi => (json!("{\"id\": rec_1,}"), "{\"id\": rec_1,}"),
        _ => (json!("{\"id\": rec_1,}"), "\"{\\\"id\\\": rec_1,}\""),
    };
    let body = proto.body(
        None,
        &[("call_3", "read", args)],
        proto.stop_reason(Finish::ToolCalls),
        Some((10, 5, 0)),
    );
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let r = chat(proto, &server, "").await.expect("response");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].arguments, expected);
    if proto == Proto::Gemini {
        // Gemini's own word for a call it could not form.
        let body = json!({"candidates": [{"content": {"role": "model"}, "finishReason": "MALFORMED_FUNCTION_CALL",
                                          "finishMessage": "Malformed function call: read(id=rec_1"}],
                          "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5}});
        let server = Loopback::replies(vec![Reply::json(body)]).await;
        let r = chat(proto, &server, "").await.expect("response");
        assert_eq!(
            (r.finish, r.finish_raw.as_str()),
            (Finish::Other, "MALFORMED_FUNCTION_CALL")
        );
        assert!(r.tool_calls.is_empty());
    }
}

async fn two_tool_calls_in_one_response(proto: Proto) {
    let body = proto.body(
        Some("Reading both."),
        &[
            ("call_a", "read", json!({"id": "rec_1"})),
            ("call_b", "read", json!({"id": "rec_2"})),
        ],
        proto.stop_reason(Finish::ToolCalls),
        Some((10, 5, 0)),
    );
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let r = chat(proto, &server, "").await.expect("response");
    assert_eq!(r.finish, Finish::ToolCalls);
    assert_eq!(r.text.as_deref(), Some("Reading both."));
    let calls: Vec<(String, String)> = r
        .tool_calls
        .iter()
        .map(|c| (c.id.clone(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            (
                proto.reported_id("call_a", 0),
                "{\"id\":\"rec_1\"}".to_string()
            ),
            (
                proto.reported_id("call_b", 1),
                "{\"id\":\"rec_2\"}".to_string()
            ),
        ]
    );
}

async fn rate_limited_then_served(proto: Proto) {
    let ok = proto.body(
        Some("done"),
        &[],
        proto.stop_reason(Finish::Stop),
        Some((10, 5, 0)),
    );
    let server = Loopback::replies(vec![
        Reply::raw(
            429,
            "application/json",
            "{\"error\": {\"message\": \"rate limited\"}}",
        )
        .header("retry-after", "1"),
        Reply::json(ok),
    ])
    .await;
    let config = proto.config(&server, "");
    let provider = proto.provider(&config);
    let started = Instant::now();
    let attempted = send_with_retry(provider.as_ref(), &config.retry, &request(sampling())).await;
    let waited = started.elapsed();
    let r = attempted.result.expect("served after the wait");
    assert_eq!(r.text.as_deref(), Some("done"));
    assert_eq!(attempted.attempts, 2);
    assert_eq!(server.received().len(), 2);
    assert!(
        waited >= Duration::from_secs(1),
        "{proto:?} waited only {waited:?}"
    );
    // Both attempts sent the same body.
    let received = server.received();
    assert_eq!(received[0].body, received[1].body);
}

async fn server_errors_are_retried_then_exhausted(proto: Proto) {
    let server = Loopback::replies(vec![Reply::raw(
        500,
        "application/json",
        "{\"error\": \"internal\"}",
    )])
    .await;
    let config = proto.config(&server, "");
    let provider = proto.provider(&config);
    let attempted = send_with_retry(provider.as_ref(), &config.retry, &request(sampling())).await;
    assert_eq!(attempted.attempts, 3);
    assert_eq!(server.received().len(), 3);
    match attempted.result {
        Err(ProviderError::Exhausted { attempts: 3, last }) => {
            assert_error_clean(&last);
            match *last {
                ProviderError::Http {
                    status: 500,
                    body,
                    retry_after: None,
                } => assert_eq!(body, "{\"error\": \"internal\"}"),
                other => panic!("{proto:?}: {other:?}"),
            }
        }
        other => panic!("{proto:?}: {other:?}"),
    }
}

async fn html_bodies(proto: Proto) {
    let page = format!(
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
        "gateway ".repeat(80)
    );
    let server = Loopback::replies(vec![Reply::raw(502, "text/html", &page)]).await;
    match chat(proto, &server, "").await {
        Err(ProviderError::Http {
            status: 502, body, ..
        }) => {
            assert!(body.starts_with("<!DOCTYPE html>"));
            assert!(
                body.chars().count() <= 301,
                "{proto:?}: {} chars",
                body.chars().count()
            );
        }
        other => panic!("{proto:?}: {other:?}"),
    }
    let server = Loopback::replies(vec![Reply::raw(200, "text/html", &page)]).await;
    match chat(proto, &server, "").await {
        Err(ProviderError::Decode { message, .. }) => {
            assert!(message.contains("<!DOCTYPE html>"), "{message}");
        }
        other => panic!("{proto:?}: {other:?}"),
    }
    let server = Loopback::replies(vec![Reply::raw(
        200,
        "application/json",
        "{\"choices\": [{\"message\": {\"content\": \"tr",
    )])
    .await;
    assert!(matches!(
        chat(proto, &server, "").await,
        Err(ProviderError::Decode { .. })
    ));
}

async fn slower_than_the_timeout(proto: Proto) {
    let body = proto.body(
        Some("late"),
        &[],
        proto.stop_reason(Finish::Stop),
        Some((10, 5, 0)),
    );
    let server = Loopback::replies(vec![Reply::json(body).after(Duration::from_secs(1))]).await;
    let started = Instant::now();
    let config = Configuration {
        timeout_ms: 200,
        ..proto.config(&server, "")
    };
    let result = chat_with(proto, &config).await;
    assert_eq!(
        result,
        Err(ProviderError::Timeout(Duration::from_millis(200))),
        "{proto:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{proto:?}: {:?}",
        started.elapsed()
    );
}

async fn connection_refused_is_transport(proto: Proto) {
    let server = Loopback::replies(vec![Reply::json(json!({}))]).await;
    let config = proto.config(&server, "");
    // A port that was free a moment ago and has nobody listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("address").port();
    drop(closed);
    let config = Configuration {
        base_url: Some(format!("http://127.0.0.1:{port}{}", proto.prefix())),
        ..config
    };
    let provider = proto.provider(&config);
    match provider.chat(&request(sampling())).await {
        Err(e @ ProviderError::Transport(_)) => assert_error_clean(&e),
        other => panic!("{proto:?}: {other:?}"),
    }
}

async fn missing_usage(proto: Proto) {
    let body = proto.body(
        Some("{\"decision\": \"none\"}"),
        &[],
        proto.stop_reason(Finish::Stop),
        None,
    );
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let r = chat(proto, &server, "").await.expect("response");
    assert_eq!(r.usage, None);
    assert_eq!(r.finish, Finish::Stop);
}

async fn echoed_keys_are_redacted(proto: Proto) {
    let echo = format!("{{\"error\": {{\"message\": \"Incorrect API key provided: {KEY}\"}}}}");
    let server = Loopback::replies(vec![Reply::raw(401, "application/json", &echo)]).await;
    match chat(proto, &server, "").await {
        Err(ProviderError::Http {
            status: 401, body, ..
        }) => assert!(body.contains("[redacted]"), "{body}"),
        other => panic!("{proto:?}: {other:?}"),
    }
    let mut body = proto.body(
        Some("fine"),
        &[],
        proto.stop_reason(Finish::Stop),
        Some((1, 1, 0)),
    );
    body["echo"] = json!(format!("you sent {KEY}"));
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let r = chat(proto, &server, "").await.expect("response");
    assert_eq!(r.raw["echo"], "you sent [redacted]");
}

async fn check_lists_the_model(proto: Proto) {
    let listing = match proto {
        Proto::Gemini => json!({"name": format!("models/{MODEL}"), "outputTokenLimit": 65536}),
        _ => json!({"data": [{"id": "other"}, {"id": MODEL}], "object": "list"}),
    };
    let server = Loopback::replies(vec![Reply::json(listing)]).await;
    let config = proto.config(&server, "");
    let message = proto.provider(&config).check().await.expect("check");
    assert!(message.contains(MODEL), "{message}");
    let received = server.received();
    assert_eq!(received[0].method, "GET");
    let expected = match proto {
        Proto::OpenAi => "/v1/models".to_string(),
        Proto::Anthropic => "/v1/models?limit=1000".to_string(),
        Proto::Gemini => format!("/v1beta/models/{MODEL}"),
    };
    assert_eq!(received[0].path, expected);
    let (header, value) = proto.key_header();
    assert_eq!(received[0].headers.get(header), Some(&value));

    let server = Loopback::replies(vec![Reply::raw(
        403,
        "application/json",
        "{\"error\": \"forbidden\"}",
    )])
    .await;
    let config = proto.config(&server, "");
    match proto.provider(&config).check().await {
        Err(e @ ProviderError::Http { status: 403, .. }) => assert_error_clean(&e),
        other => panic!("{proto:?}: {other:?}"),
    }
}

macro_rules! per_protocol {
    ($($scenario:ident),* $(,)?) => {
        mod openai { $( #[tokio::test] async fn $scenario() { super::$scenario(super::Proto::OpenAi).await } )* }
        mod anthropic { $( #[tokio::test] async fn $scenario() { super::$scenario(super::Proto::Anthropic).await } )* }
        mod gemini { $( #[tokio::test] async fn $scenario() { super::$scenario(super::Proto::Gemini).await } )* }
    };
}

per_protocol!(
    normal_tool_call,
    profile_omissions_and_cap_field,
    reasoning_effort_in_the_protocol_s_field,
    final_json_answer,
    cut_at_the_cap_with_reasoning_only,
    tool_call_cut_inside_its_arguments,
    invalid_arguments_pass_through,
    two_tool_calls_in_one_response,
    rate_limited_then_served,
    server_errors_are_retried_then_exhausted,
    html_bodies,
    slower_than_the_timeout,
    connection_refused_is_transport,
    missing_usage,
    echoed_keys_are_redacted,
    check_lists_the_model,
);

// ---------------------------------------------------------------------------------
// Protocol-specific details
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn openai_without_a_key_sends_no_authorization() {
    let body = Proto::OpenAi.body(Some("ok"), &[], "stop", Some((1, 1, 0)));
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let config = Proto::OpenAi.config(&server, "");
    tbb::provider::install_crypto();
    let provider = OpenAi::new(&config, None).expect("a local route needs no key");
    provider.chat(&request(sampling())).await.expect("response");
    assert!(!server.received()[0].headers.contains_key("authorization"));
}

#[tokio::test]
async fn anthropic_and_gemini_need_a_key() {
    let server = Loopback::replies(vec![Reply::json(json!({}))]).await;
    for proto in [Proto::Anthropic, Proto::Gemini] {
        let config = proto.config(&server, "");
        let error = match proto {
            Proto::Anthropic => Anthropic::new(&config, None).map(|_| ()),
            _ => Gemini::new(&config, None).map(|_| ()),
        };
        assert_eq!(
            error,
            Err(ProviderError::MissingKey {
                config: config.name.clone(),
                env: "TBB_TEST_KEY".into()
            })
        );
    }
}

#[tokio::test]
async fn bad_base_urls_are_configuration_errors() {
    let server = Loopback::replies(vec![Reply::json(json!({}))]).await;
    for proto in [Proto::OpenAi, Proto::Anthropic, Proto::Gemini] {
        for url in ["not a url", "ftp://example.test/v1"] {
            let config = Configuration {
                base_url: Some(url.into()),
                ..proto.config(&server, "")
            };
            let key = Some(KEY.to_string());
            let result = match proto {
                Proto::OpenAi => OpenAi::new(&config, key).map(|_| ()),
                Proto::Anthropic => Anthropic::new(&config, key).map(|_| ()),
                Proto::Gemini => Gemini::new(&config, key).map(|_| ()),
            };
            assert!(
                matches!(result, Err(ProviderError::Config { .. })),
                "{proto:?} {url}: {result:?}"
            );
        }
    }
}

#[tokio::test]
async fn clients_do_not_debug_print_the_key() {
    let server = Loopback::replies(vec![Reply::json(json!({}))]).await;
    tbb::provider::install_crypto();
    let config = Proto::OpenAi.config(&server, "");
    assert_no_key(&OpenAi::new(&config, Some(KEY.into())).expect("client"));
    let config = Proto::Anthropic.config(&server, "");
    assert_no_key(&Anthropic::new(&config, Some(KEY.into())).expect("client"));
    let config = Proto::Gemini.config(&server, "");
    assert_no_key(&Gemini::new(&config, Some(KEY.into())).expect("client"));
}

#[tokio::test]
async fn redirects_are_not_followed() {
    for proto in [Proto::OpenAi, Proto::Anthropic, Proto::Gemini] {
        let server = Loopback::replies(vec![Reply::raw(307, "text/plain", "moved")
            .header("location", "http://127.0.0.1:9/elsewhere")])
        .await;
        match chat(proto, &server, "").await {
            Err(ProviderError::Http { status: 307, .. }) => {}
            other => panic!("{proto:?}: {other:?}"),
        }
        assert_eq!(server.received().len(), 1);
    }
}

#[tokio::test]
async fn anthropic_replays_tool_results_in_one_user_message() {
    let body = Proto::Anthropic.body(Some("ok"), &[], "end_turn", Some((1, 1, 0)));
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let config = Proto::Anthropic.config(&server, "");
    let provider = Proto::Anthropic.provider(&config);
    let mut r = request(sampling());
    r.messages[2] = Message::Assistant {
        content: Some("Two reads.".into()),
        tool_calls: vec![
            ToolCall {
                id: "toolu_1".into(),
                name: "read".into(),
                arguments: "{\"id\":\"rec_1\"}".into(),
            },
            ToolCall {
                id: "toolu_2".into(),
                name: "read".into(),
                arguments: "{\"id\":\"rec_2\"}".into(),
            },
        ],
    };
    r.messages[3] = Message::Tool {
        call_id: "toolu_1".into(),
        name: "read".into(),
        content: "one".into(),
    };
    r.messages.push(Message::Tool {
        call_id: "toolu_2".into(),
        name: "read".into(),
        content: "two".into(),
    });
    provider.chat(&r).await.expect("response");
    let sent = server.received()[0].json();
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(
        sent["messages"][2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "one"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "two"},
        ])
    );
}

#[tokio::test]
async fn gemini_thought_signatures_ride_in_the_call_id_and_come_back() {
    let first = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "read", "args": {"id": "rec_1"}}, "thoughtSignature": "U0lHTkFUVVJF"}]},
        "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5}});
    let second = Proto::Gemini.body(Some("{}"), &[], "STOP", Some((20, 2, 0)));
    let server = Loopback::replies(vec![Reply::json(first), Reply::json(second)]).await;
    let config = Proto::Gemini.config(&server, "");
    let provider = Proto::Gemini.provider(&config);
    let mut r = request(sampling());
    let response = provider.chat(&r).await.expect("response");
    let call = response.tool_calls[0].clone();
    r.messages.push(Message::Assistant {
        content: None,
        tool_calls: vec![call.clone()],
    });
    r.messages.push(Message::Tool {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: "record".into(),
    });
    provider.chat(&r).await.expect("response");
    let sent = server.received()[1].json();
    assert_eq!(
        sent["contents"][3]["parts"][0],
        json!({"functionCall": {"name": "read", "args": {"id": "rec_1"}}, "thoughtSignature": "U0lHTkFUVVJF"})
    );
    assert_eq!(
        sent["contents"][4]["parts"][0],
        json!({"functionResponse": {"name": "read", "response": {"content": "record"}}})
    );
}

#[tokio::test]
async fn openai_stop_with_calls_from_compatible_servers_is_a_tool_call() {
    let body = Proto::OpenAi.body(
        None,
        &[("", "read", json!({"id": "rec_1"}))],
        "stop",
        Some((1, 1, 0)),
    );
    let server = Loopback::replies(vec![Reply::json(body)]).await;
    let r = chat(Proto::OpenAi, &server, "").await.expect("response");
    assert_eq!(
        (r.finish, r.finish_raw.as_str()),
        (Finish::ToolCalls, "stop")
    );
    assert_eq!(r.tool_calls[0].id, "call_0", "a missing id is assigned");
}

// ---------------------------------------------------------------------------------
// Whole episodes through the harness
// ---------------------------------------------------------------------------------

mod episodes {
    use std::sync::OnceLock;

    use tbb::compile::{compile, Cell, Encoding, Variant, Workflow};
    use tbb::family::FamilySet;
    use tbb::grade::reference::reference_trace;
    use tbb::grade::trace::{InfraCause, StopReason};
    use tbb::grade::{Obligation, TerminalFlag};
    use tbb::harness::{run_episode, Episode, EpisodeSpec, Prompts};
    use tbb::tables::rows::EpisodeRow;

    use super::*;

    const HARBOR: &str = "overdue-escalation-harbor";

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    fn variant() -> &'static Variant {
        static VARIANT: OnceLock<Variant> = OnceLock::new();
        VARIANT.get_or_init(|| {
            let set = FamilySet::load(&root().join("families")).expect("families load");
            let family = set.get(HARBOR).expect("the harbor family");
            compile(family, &Cell::new(8, Workflow::High, Encoding::Raw)).expect("compiles")
        })
    }

    /// The reference program's calls `(name, arguments)`, the observation each gets,
    /// and the reference answer.
    fn reference() -> (Vec<(String, Json)>, Vec<String>, String) {
        let trace = reference_trace(variant());
        let mut calls = Vec::new();
        let mut observations = Vec::new();
        for turn in &trace.turns {
            if let Some(call) = turn.response.tool_calls.first() {
                calls.push((
                    call.name.clone(),
                    serde_json::from_str(&call.arguments).expect("reference arguments are JSON"),
                ));
                observations.push(turn.executed[0].observation.clone());
            }
        }
        (
            calls,
            observations,
            trace.final_answer.expect("the reference answers"),
        )
    }

    /// The call id the script gives the `n`-th call of an episode.
    fn call_id(proto: Proto, n: usize) -> String {
        match proto {
            Proto::Anthropic => format!("toolu_{n:02}"),
            _ => format!("call_e2e_{n}"),
        }
    }

    /// Runs one episode of the harbor variant against `server`, writes everything it
    /// produced to a temporary directory and checks that the key is nowhere in it.
    async fn episode(proto: Proto, server: &Loopback, extra: &str) -> Episode {
        episode_with(proto, &episode_config(proto, server, extra))
            .await
            .0
    }

    /// The configuration [`episode`] runs: two attempts, short back-off.
    fn episode_config(proto: Proto, server: &Loopback, extra: &str) -> Configuration {
        Configuration {
            retry: tbb::provider::config::RetryPolicy {
                max_attempts: 2,
                base_delay_ms: 5,
                max_delay_ms: 50,
                ..proto.config(server, extra).retry
            },
            ..proto.config(server, extra)
        }
    }

    /// Runs one episode with `config`, checks that the key is in nothing it produced,
    /// and returns it with the episodes-table row a study would store for it.
    async fn episode_with(proto: Proto, config: &Configuration) -> (Episode, EpisodeRow) {
        let prompts = Prompts::load(&root().join("prompts")).expect("prompts load");
        let provider = proto.provider(config);
        let spec = EpisodeSpec::frozen(variant(), config);
        let episode = run_episode(provider.as_ref(), &spec, &prompts, None).await;
        let row =
            tbb::tables::EpisodeRow::of_episode(&episode, "loopback", &spec, "transcript", "node");
        let dir = tempfile::tempdir().expect("temporary directory");
        let files = [
            (
                "episode.json",
                serde_json::to_string_pretty(&episode).expect("episode serializes"),
            ),
            (
                "trace.json",
                serde_json::to_string_pretty(&episode.trace).expect("trace serializes"),
            ),
            (
                "transcript.json",
                serde_json::to_string_pretty(&episode.transcript).expect("transcript serializes"),
            ),
            (
                "verdict.json",
                serde_json::to_string_pretty(&episode.verdict).expect("verdict serializes"),
            ),
            ("debug.txt", format!("{episode:#?}")),
        ];
        for (name, text) in &files {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        for entry in std::fs::read_dir(dir.path()).expect("read dir") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("read back");
            assert!(
                !text.contains(KEY),
                "{proto:?}: the key is in {}",
                path.display()
            );
        }
        // What a regrade reads: the stored transcript rebuilds the trace, cause and
        // violations included.
        assert_eq!(
            episode.transcript.trace(&episode.blobs, variant()).as_ref(),
            Some(&episode.trace),
            "{proto:?}: the transcript rebuilds the trace"
        );
        // The row of the stored table, read back: its flag and cause columns agree.
        let batch = tbb::tables::rows::episodes(std::slice::from_ref(&row)).expect("table");
        assert_eq!(batch.num_rows(), 1);
        assert_eq!(
            row.infra_failure,
            row.terminal_flag == Some(TerminalFlag::InfraFailure),
            "{proto:?}: {row:?}"
        );
        assert_eq!(row.infra_failure, row.infra_error.is_some(), "{row:?}");
        (episode, row)
    }

    async fn follows_the_reference_program(proto: Proto) {
        let (calls, observations, answer) = reference();
        let script_calls = calls.clone();
        let server = Loopback::start(move |received, _| {
            let n = proto.tool_results(&received.json()).len();
            let mut body = match script_calls.get(n) {
                Some((name, args)) => proto.body(
                    None,
                    &[(call_id(proto, n).as_str(), name.as_str(), args.clone())],
                    proto.stop_reason(Finish::ToolCalls),
                    Some((2000, 40, 0)),
                ),
                None => proto.body(
                    Some(&answer),
                    &[],
                    proto.stop_reason(Finish::Stop),
                    Some((2500, 80, 0)),
                ),
            };
            if proto == Proto::Gemini && n < script_calls.len() {
                body["candidates"][0]["content"]["parts"][0]["thoughtSignature"] =
                    json!(format!("sig-{n}"));
            }
            // A server that echoes the key: the trace must still not contain it.
            body["service_note"] = json!(format!("authorized with {KEY}"));
            Reply::json(body)
        })
        .await;
        let (episode, row) = episode_with(proto, &episode_config(proto, &server, "")).await;
        let v = &episode.verdict;
        assert!(v.vts, "{proto:?}: {v:#?}");
        assert_eq!(
            (&row.infra_error, row.infra_http_status, row.infra_attempts),
            (&None, None, None)
        );
        assert_eq!((v.first_unmet, v.terminal_flag), (None, None));
        assert_eq!(episode.trace.stop, StopReason::Answer);
        assert_eq!(v.calls as usize, calls.len());
        // The observations the sandbox produced reached the model, in order.
        let received = server.received();
        assert_eq!(received.len(), calls.len() + 1);
        for (i, request) in received.iter().enumerate() {
            assert_eq!(
                proto.tool_results(&request.json()),
                observations[..i],
                "{proto:?}: request {i}"
            );
        }
        // Each body on the wire rebuilds byte for byte from the stored transcript: the
        // request from its deltas and blobs, the body by the client's pure translation.
        for (i, request) in received.iter().enumerate() {
            let rebuilt = episode
                .transcript
                .rebuild(i, &episode.blobs)
                .expect("the transcript rebuilds every request");
            let body = match proto {
                Proto::OpenAi => tbb::provider::openai::request_body(
                    &rebuilt,
                    tbb::provider::config::MaxTokensField::MaxCompletionTokens,
                ),
                Proto::Anthropic => tbb::provider::anthropic::request_body(&rebuilt),
                Proto::Gemini => tbb::provider::gemini::request_body(&rebuilt),
            };
            assert_eq!(
                serde_json::to_string(&body).expect("json"),
                request.body,
                "{proto:?}: request {i} does not rebuild byte for byte"
            );
        }
        if proto == Proto::Gemini {
            // Each replayed call carries the thought signature it came with.
            for (i, request) in received.iter().enumerate() {
                let signatures: Vec<String> = request.json()["contents"]
                    .as_array()
                    .expect("contents")
                    .iter()
                    .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                    .filter_map(|p| p["thoughtSignature"].as_str().map(str::to_string))
                    .collect();
                let expected: Vec<String> = (0..i).map(|n| format!("sig-{n}")).collect();
                assert_eq!(signatures, expected, "request {i}");
            }
        }
        let raw = &episode.trace.turns[0].response.raw;
        assert_eq!(
            raw.as_ref().map(|r| r["service_note"].clone()),
            Some(json!("authorized with [redacted]"))
        );
        // The contract's fields, as this protocol carries them, and the row records
        // exactly what the wire body carried.
        let first = received[0].json();
        let carried = if proto == Proto::Gemini {
            &first["generationConfig"]
        } else {
            &first
        };
        assert_eq!(row.sent_temperature, carried["temperature"].as_f64());
        assert_eq!(row.sent_seed, carried["seed"].as_u64());
        assert_eq!(
            row.sent_parallel_tool_calls,
            match proto {
                Proto::OpenAi => first["parallel_tool_calls"].as_bool(),
                Proto::Anthropic => first["tool_choice"]["disable_parallel_tool_use"]
                    .as_bool()
                    .map(|disable| !disable),
                Proto::Gemini => None,
            },
            "{proto:?}"
        );
        assert!(row.sent_temperature.is_some(), "{proto:?}");
        assert_eq!(
            row.sent_seed.is_some(),
            proto != Proto::Anthropic,
            "{proto:?}"
        );
        assert_eq!(
            row.sent_parallel_tool_calls,
            (proto != Proto::Gemini).then_some(false),
            "{proto:?}"
        );
        match proto {
            Proto::OpenAi => {
                assert_eq!(first["parallel_tool_calls"], false);
                assert_eq!(first["max_completion_tokens"], 1024);
                assert!(first["seed"].is_u64() && first["temperature"].is_number());
            }
            Proto::Anthropic => {
                assert_eq!(first["tool_choice"]["disable_parallel_tool_use"], true);
                assert_eq!(first["max_tokens"], 1024);
                assert!(first.get("seed").is_none() && first["temperature"].is_number());
            }
            Proto::Gemini => {
                let generation = &first["generationConfig"];
                assert_eq!(generation["maxOutputTokens"], 1024);
                assert!(generation["seed"].as_u64().is_some_and(|s| s < 1 << 31));
                assert!(generation["temperature"].is_number());
            }
        }
    }

    async fn profile_omissions_reach_the_wire(proto: Proto) {
        let answer = reference().2;
        let server = Loopback::start(move |_, _| {
            Reply::json(proto.body(
                Some(&answer),
                &[],
                proto.stop_reason(Finish::Stop),
                Some((100, 10, 0)),
            ))
        })
        .await;
        let config = episode_config(
            proto,
            &server,
            "profile = { omit = [\"temperature\", \"seed\", \"parallel_tool_calls\"] }",
        );
        let (episode, row) = episode_with(proto, &config).await;
        assert_eq!(episode.omitted.len(), 3);
        // The row shows the omissions: nothing of the three was sent.
        assert_eq!(
            (
                row.sent_temperature,
                row.sent_seed,
                row.sent_parallel_tool_calls
            ),
            (None, None, None),
            "{proto:?}"
        );
        let sent = server.received()[0].json();
        let sampling = if proto == Proto::Gemini {
            &sent["generationConfig"]
        } else {
            &sent
        };
        assert!(
            sampling.get("temperature").is_none() && sampling.get("seed").is_none(),
            "{proto:?}: {sent}"
        );
    }

    async fn cut_at_the_cap(proto: Proto) {
        let server = Loopback::replies(vec![Reply::json(proto.body(
            None,
            &[],
            proto.stop_reason(Finish::Length),
            Some((2000, 1024, 1024)),
        ))])
        .await;
        let episode = episode(proto, &server, "").await;
        let v = &episode.verdict;
        assert_eq!(
            (v.first_unmet, v.terminal_flag),
            (Some(Obligation::S), Some(TerminalFlag::Truncation)),
            "{proto:?}"
        );
        assert!(v.truncated && v.truncated_before_first_call && !v.infra_failure);
        assert_eq!(server.received().len(), 1);
    }

    async fn two_calls_break_the_contract(proto: Proto) {
        let (calls, _, _) = reference();
        let two: Vec<(String, &str, Json)> = calls
            .iter()
            .take(2)
            .enumerate()
            .map(|(i, (name, args))| (call_id(proto, i), name.as_str(), args.clone()))
            .collect();
        let two: Vec<(&str, &str, Json)> = two
            .iter()
            .map(|(id, n, a)| (id.as_str(), *n, a.clone()))
            .collect();
        let server = Loopback::replies(vec![Reply::json(proto.body(
            None,
            &two,
            proto.stop_reason(Finish::ToolCalls),
            Some((2000, 60, 0)),
        ))])
        .await;
        let episode = episode(proto, &server, "").await;
        let v = &episode.verdict;
        assert_eq!(
            (v.first_unmet, v.terminal_flag),
            (Some(Obligation::S), Some(TerminalFlag::ContractBreak)),
            "{proto:?}"
        );
        assert_eq!(episode.trace.stop, StopReason::ContractBreak);
        assert_eq!(v.calls, 0, "neither call is executed");
    }

    /// Asserts an infrastructure failure with this cause, last status and attempts, in
    /// the verdict, the trace and the row; and that the row counts as a failure.
    fn assert_infra(
        proto: Proto,
        (episode, row): &(Episode, EpisodeRow),
        cause: InfraCause,
        status: Option<u32>,
        attempts: u32,
    ) {
        let v = &episode.verdict;
        assert!(v.infra_failure && !v.vts, "{proto:?}: {v:#?}");
        assert_eq!(
            (v.first_unmet, v.terminal_flag),
            (Some(Obligation::S), Some(TerminalFlag::InfraFailure)),
            "{proto:?}"
        );
        assert_eq!(episode.trace.stop, StopReason::InfraFailure);
        let infra = episode
            .trace
            .infra
            .as_ref()
            .expect("the trace records the cause");
        assert_eq!(Some(infra), v.infra.as_ref());
        assert!(!infra.message.is_empty() && !infra.message.contains(KEY));
        assert_eq!(
            (
                row.terminal_flag,
                row.stop_reason,
                row.vts,
                row.infra_failure
            ),
            (
                Some(TerminalFlag::InfraFailure),
                StopReason::InfraFailure,
                false,
                true
            ),
            "{proto:?}"
        );
        assert_eq!(
            (row.infra_error, row.infra_http_status, row.infra_attempts),
            (Some(cause), status, Some(attempts)),
            "{proto:?}: {}",
            infra.message
        );
    }

    async fn exhausted_server_errors_are_infrastructure_failures(proto: Proto) {
        let echo = format!("{{\"error\": \"internal\", \"key\": \"{KEY}\"}}");
        let server = Loopback::replies(vec![Reply::raw(500, "application/json", &echo)]).await;
        let run = episode_with(proto, &episode_config(proto, &server, "")).await;
        assert_infra(proto, &run, InfraCause::ServerError, Some(500), 2);
        let episode = run.0;
        assert_eq!(episode.attempts, 2);
        assert_eq!(server.received().len(), 2);
        let transcript = serde_json::to_string(&episode.transcript).expect("transcript serializes");
        assert!(
            transcript.contains("[redacted]"),
            "the echoed key was recorded, redacted: {transcript}"
        );
    }

    async fn exhausted_rate_limits_are_infrastructure_failures(proto: Proto) {
        let server = Loopback::replies(vec![Reply::raw(
            429,
            "application/json",
            "{\"error\": {\"message\": \"slow down\"}}",
        )
        .header("retry-after", "0")])
        .await;
        let run = episode_with(proto, &episode_config(proto, &server, "")).await;
        assert_infra(proto, &run, InfraCause::RateLimited, Some(429), 2);
        assert_eq!(server.received().len(), 2);
    }

    async fn timeouts_are_infrastructure_failures(proto: Proto) {
        let body = proto.body(
            Some("late"),
            &[],
            proto.stop_reason(Finish::Stop),
            Some((10, 5, 0)),
        );
        let server = Loopback::replies(vec![Reply::json(body).after(Duration::from_secs(1))]).await;
        let config = Configuration {
            timeout_ms: 150,
            ..episode_config(proto, &server, "")
        };
        let run = episode_with(proto, &config).await;
        assert_infra(proto, &run, InfraCause::Timeout, None, 2);
        // A 500, then a timeout: the cause is the final one, the status the last seen.
        let late = proto.body(
            Some("late"),
            &[],
            proto.stop_reason(Finish::Stop),
            Some((10, 5, 0)),
        );
        let server = Loopback::replies(vec![
            Reply::raw(500, "application/json", "{\"error\": \"internal\"}"),
            Reply::json(late).after(Duration::from_secs(1)),
        ])
        .await;
        let config = Configuration {
            timeout_ms: 150,
            ..episode_config(proto, &server, "")
        };
        let run = episode_with(proto, &config).await;
        assert_infra(proto, &run, InfraCause::Timeout, Some(500), 2);
    }

    async fn refused_connections_are_infrastructure_failures(proto: Proto) {
        let server = Loopback::replies(vec![Reply::json(json!({}))]).await;
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = closed.local_addr().expect("address").port();
        drop(closed);
        let config = Configuration {
            base_url: Some(format!("http://127.0.0.1:{port}{}", proto.prefix())),
            ..episode_config(proto, &server, "")
        };
        let run = episode_with(proto, &config).await;
        assert_infra(proto, &run, InfraCause::Transport, None, 2);
    }

    async fn rejected_keys_are_infrastructure_failures(proto: Proto) {
        let server = Loopback::replies(vec![Reply::raw(
            401,
            "application/json",
            "{\"error\": \"bad key\"}",
        )])
        .await;
        let run = episode_with(proto, &episode_config(proto, &server, "")).await;
        assert_infra(proto, &run, InfraCause::Auth, Some(401), 1);
        assert_eq!(server.received().len(), 1, "a 401 is not retried");
        let server = Loopback::replies(vec![Reply::raw(404, "text/plain", "no such model")]).await;
        let run = episode_with(proto, &episode_config(proto, &server, "")).await;
        assert_infra(proto, &run, InfraCause::OtherStatus, Some(404), 1);
    }

    async fn bad_bodies_are_infrastructure_failures(proto: Proto) {
        let page = "<!DOCTYPE html><html><body>maintenance</body></html>";
        let server = Loopback::replies(vec![Reply::raw(200, "text/html", page)]).await;
        let run = episode_with(proto, &episode_config(proto, &server, "")).await;
        assert_infra(proto, &run, InfraCause::BadBody, Some(200), 1);
        assert!(run
            .0
            .verdict
            .infra
            .as_ref()
            .is_some_and(|i| i.message.contains("DOCTYPE")));
        // JSON, but not the protocol's.
        let server = Loopback::replies(vec![Reply::json(json!({"status": "ok"}))]).await;
        let run = episode_with(proto, &episode_config(proto, &server, "")).await;
        assert_infra(proto, &run, InfraCause::BadBody, Some(200), 1);
    }

    /// A tool-call response whose usage is replaced by `usage` (`None`: no usage).
    fn call_with_usage(proto: Proto, usage: Option<(&str, Json)>) -> Json {
        let (calls, _, _) = reference();
        let (name, args) = calls[0].clone();
        let mut body = proto.body(
            None,
            &[(call_id(proto, 0).as_str(), name.as_str(), args)],
            proto.stop_reason(Finish::ToolCalls),
            usage.is_some().then_some((2000, 40, 0)),
        );
        if let Some((field, value)) = usage {
            let object = if proto == Proto::Gemini {
                "usageMetadata"
            } else {
                "usage"
            };
            body[object][field] = value;
        }
        body
    }

    async fn missing_usage_is_an_infrastructure_failure(proto: Proto) {
        let server = Loopback::replies(vec![Reply::json(call_with_usage(proto, None))]).await;
        let run = episode_with(proto, &episode_config(proto, &server, "")).await;
        assert_infra(proto, &run, InfraCause::BadUsage, Some(200), 1);
        assert_eq!(run.0.verdict.calls, 0, "the call is not executed");
        assert_eq!(
            server.received().len(),
            1,
            "a response without usage is not retried"
        );
    }

    async fn usage_that_is_not_counts_is_an_infrastructure_failure(proto: Proto) {
        let (input, output) = match proto {
            Proto::OpenAi => ("prompt_tokens", "completion_tokens"),
            Proto::Anthropic => ("input_tokens", "output_tokens"),
            Proto::Gemini => ("promptTokenCount", "candidatesTokenCount"),
        };
        for (field, value) in [
            (input, json!(-5)),
            (output, json!(-1)),
            (input, json!(9_007_199_254_740_993_u64)),
            (input, json!(u64::MAX)),
            (input, json!(1e300)),
            (output, json!(12.5)),
            (input, json!(2000.0)),
            (output, json!("40")),
            (input, json!(null)),
        ] {
            let body = call_with_usage(proto, Some((field, value.clone())));
            let server = Loopback::replies(vec![Reply::json(body)]).await;
            let run = episode_with(proto, &episode_config(proto, &server, "")).await;
            assert_infra(proto, &run, InfraCause::BadUsage, Some(200), 1);
            let (episode, row) = &run;
            assert_eq!(episode.verdict.calls, 0, "{field} = {value}");
            // Never scored as 0 tokens of an agent result: the row is a failure with
            // its cause, whatever tokens it shows.
            assert!(!row.vts && row.infra_failure, "{field} = {value}");
            let message = &episode.verdict.infra.as_ref().expect("infra").message;
            assert!(
                message.contains(field),
                "{proto:?}: {field} = {value}: {message}"
            );
        }
    }

    async fn arguments_of_the_wrong_kind_are_protocol_violations(proto: Proto) {
        let (calls, _, _) = reference();
        let (name, args) = calls[0].clone();
        let mut body = proto.body(
            None,
            &[(call_id(proto, 0).as_str(), name.as_str(), args.clone())],
            proto.stop_reason(Finish::ToolCalls),
            Some((2000, 40, 0)),
        );
        // What each protocol must not carry where the arguments belong: OpenAI-compatible
        // servers send a string of JSON, the others an object.
        let wrong = match proto {
            Proto::OpenAi => {
                body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] =
                    args.clone();
                "object"
            }
            Proto::Anthropic => {
                body["content"][0]["input"] = json!(args.to_string());
                "string"
            }
            Proto::Gemini => {
                body["candidates"][0]["content"]["parts"][0]["functionCall"]["args"] =
                    json!([args.clone()]);
                "array"
            }
        };
        let server = Loopback::replies(vec![Reply::json(body)]).await;
        let (episode, row) = episode_with(proto, &episode_config(proto, &server, "")).await;
        let v = &episode.verdict;
        assert_eq!(
            episode.trace.stop,
            StopReason::ProtocolViolation,
            "{proto:?}"
        );
        assert_eq!(
            (v.first_unmet, v.terminal_flag),
            (Some(Obligation::S), Some(TerminalFlag::ContractBreak)),
            "{proto:?}"
        );
        assert!(!v.infra_failure && !v.vts);
        assert_eq!(v.calls, 0, "{proto:?}: the call is never executed");
        assert_eq!(server.received().len(), 1, "the episode ends there");
        let violation = episode.trace.turns[0].response.violation.as_deref();
        assert!(
            violation.is_some_and(|m| m.contains(wrong) && m.contains(&name)),
            "{proto:?}: {violation:?}"
        );
        assert_eq!(
            (row.stop_reason, row.terminal_flag, row.infra_error),
            (
                StopReason::ProtocolViolation,
                Some(TerminalFlag::ContractBreak),
                None
            )
        );
        // The recorded trace grades the same way again.
        assert_eq!(tbb::grade::grade(variant(), &episode.trace), *v);
    }

    /// The reference program's write as `(tool, arguments)`.
    fn reference_write() -> (String, Json) {
        let (calls, _, _) = reference();
        let tool = &variant().permitted_change.as_ref().expect("a write").tool;
        calls
            .into_iter()
            .find(|(name, _)| name == tool)
            .expect("the program makes the write")
    }

    /// One episode whose model makes `write` first and would then follow the program.
    async fn write_first(proto: Proto, write: (String, Json)) -> (Episode, EpisodeRow, usize) {
        let (calls, _, answer) = reference();
        let script: Vec<(String, Json)> = std::iter::once(write).chain(calls).collect();
        let server = Loopback::start(move |received, _| {
            let n = proto.tool_results(&received.json()).len();
            Reply::json(match script.get(n) {
                Some((name, args)) => proto.body(
                    None,
                    &[(call_id(proto, n).as_str(), name.as_str(), args.clone())],
                    proto.stop_reason(Finish::ToolCalls),
                    Some((2000, 40, 0)),
                ),
                None => proto.body(
                    Some(&answer),
                    &[],
                    proto.stop_reason(Finish::Stop),
                    Some((2500, 80, 0)),
                ),
            })
        })
        .await;
        let (episode, row) = episode_with(proto, &episode_config(proto, &server, "")).await;
        (episode, row, server.received().len())
    }

    async fn an_unrequested_write_stops_the_episode_at_once(proto: Proto) {
        let (tool, args) = reference_write();
        let unrequested = (
            tool,
            json!({"id": args["id"], "field": "status", "value": "paid"}),
        );
        for write in [unrequested, reference_write()] {
            let (episode, row, requests) = write_first(proto, write.clone()).await;
            let v = &episode.verdict;
            assert_eq!(episode.trace.stop, StopReason::Infeasible, "{write:?}");
            assert_eq!(
                (requests, v.calls),
                (1, 1),
                "{proto:?}: no request after the write {write:?}"
            );
            assert_eq!(v.terminal_flag, Some(TerminalFlag::Infeasibility));
            assert!(!v.vts && !v.infra_failure);
            assert!(!(v.obligations.ok_x && v.obligations.ok_g), "{v:#?}");
            assert_eq!(row.stop_reason, StopReason::Infeasible);
        }
    }

    per_protocol!(
        follows_the_reference_program,
        profile_omissions_reach_the_wire,
        cut_at_the_cap,
        two_calls_break_the_contract,
        exhausted_server_errors_are_infrastructure_failures,
        exhausted_rate_limits_are_infrastructure_failures,
        timeouts_are_infrastructure_failures,
        refused_connections_are_infrastructure_failures,
        rejected_keys_are_infrastructure_failures,
        bad_bodies_are_infrastructure_failures,
        missing_usage_is_an_infrastructure_failure,
        usage_that_is_not_counts_is_an_infrastructure_failure,
        arguments_of_the_wrong_kind_are_protocol_violations,
        an_unrequested_write_stops_the_episode_at_once,
    );
}
