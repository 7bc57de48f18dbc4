//! The harness: runs one episode — a configuration meeting a variant — under the frozen
//! contract, and writes its trace and transcript.
//!
//! Owns: the episode loop ([`episode`], a state machine) and ToolSandbox's scenario
//! loop ([`scenario`]), which share the request machinery and the contract's endings
//! (`exchange`); the arms and the hooks their
//! components plug into it ([`arm`]), the system prompts ([`prompts`]), the
//! content-addressed transcripts ([`transcript`]), and the translation between a
//! variant and the providers' chat types (providers never see a variant).
//!
//! The contract, as enforced here:
//! - the system prompt of the episode's prompt variant, then the family's rendered
//!   request as the user message; tools through the provider's native interface with
//!   automatic tool choice; `parallel_tool_calls = false`, the temperature and a seed
//!   derived from the episode key, each unless the execution profile omits it (every
//!   omission is recorded in [`Episode::omitted`]);
//! - if a tool the reference program needs is not on the menu offered at the first
//!   request (after the router or the retrieval menu chose it), no request is sent and
//!   the episode stops as unavailable: zero tokens, availability (A) unmet, stop reason
//!   `unavailable`, counted as a failure (intention to treat);
//! - each request carries the completion cap; a response that ends at the cap ends the
//!   episode; so does reported usage (prompt + completion, summed) above the episode
//!   budget, a refusal or content filter, a response that breaks the wire protocol
//!   (tool-call arguments that are not a string, or input / args that are not an
//!   object: the model's protocol violation, an agent failure; nothing is executed), a
//!   response with several tool calls (a break of the contract: none of them is
//!   executed), a response without valid usage (missing, or counts that are negative,
//!   fractional, above 2^53 or not numbers: the budget cannot be enforced, an
//!   infrastructure failure with cause `bad_usage`), and a request that fails after the
//!   configuration's retries (an infrastructure failure whose cause, last HTTP status
//!   and attempts are recorded in the trace and the row);
//! - one tool call is executed as written — an invalid argument string is executed too
//!   and gets the sandbox's error observation; the harness never repairs it — unless it
//!   would exceed the call limit, which ends the episode;
//! - after each executed call, the episode stops as infeasible as soon as success is
//!   impossible ([`tbb_core::grade::infeasible`]): the calls left cannot complete what
//!   remains of the reference program, an unrequested state change happened, or the
//!   permitted write was made before its evidence;
//! - the sampling fields the first request's wire body actually carried are recorded
//!   (the transcript's `wire_sampling`, the row's `sent_*` columns);
//! - a response with text and no tool call is the final answer; a response with
//!   neither is answered with a fixed nudge (`prompts/nudge.txt`) and costs a turn; the
//!   turn limit ends the episode;
//! - the arm decides the rest ([`arm`]): the system prompt; the menu — *routed* shows
//!   the full menu until the first executed call to an operational tool and the
//!   operational tools from then on, *fixed* shows the full menu throughout, *router*
//!   shows the tools of the connector the request's route names (the full menu when
//!   the route is absent or ambiguous), *retrieval{k}* the k tools BM25 ranks highest
//!   against the request; how an observation is delivered; and who issues calls.
//!
//! Never: repairs arguments, retries a response it did not like, lets a provider see
//! anything but messages and tool schemas, or builds a table row (the tables crate
//! turns an [`Episode`] into one). Wall time is recorded but never used.

pub mod arm;
pub mod episode;
mod exchange;
pub mod hex_key;
pub mod prompts;
pub mod scenario;
pub mod transcript;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value as Json;

pub use arm::{Actor, Arm, ArmForm, Delivery, Menu};
pub use episode::run_episode;
pub use hex_key::HexKey;
pub use prompts::{PromptVariant, Prompts};
use tbb_core::compile::Variant;
use tbb_core::grade::trace::{FinishReason, InfraCause, InfraFailure, ResponseRecord, Trace};
use tbb_core::grade::{Verdict, EPISODE_BUDGET};
use tbb_provider::config::RequestField;
/// How a response's reasoning tokens were counted: a transcript's field, so the tables
/// name it through the harness.
pub use tbb_provider::ReasoningSource;
use tbb_provider::{ChatResponse, Configuration, Finish, ProviderError};
use transcript::{BlobStore, Transcript};

/// The frozen completion cap per request.
pub const COMPLETION_CAP: u32 = 1024;

/// Version of the episode loop, part of every execute node's key: bump it whenever a
/// change to the contract or the transcripts changes what an episode records.
/// (`execute/5`: a refusal that says the context was exceeded, and a completion cut short
/// of the cap, are `context_exceeded` infrastructure failures.)
pub const CODE_VERSION: &str = "execute/5";

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct EpisodeSpec<'a> {
    /// The variant.
    pub variant: &'a Variant,
    /// The configuration.
    pub config: &'a Configuration,
    /// The arm's components (prompt, menu, delivery, actor).
    pub arm: ArmForm,
    /// Completion cap per request.
    pub completion_cap: u32,
    /// Episode budget in reported tokens.
    pub episode_budget: u64,
    /// Repeat index (a different seed per repeat).
    pub repeat: u32,
    /// The study the episode belongs to: part of its key, so each study draws its own
    /// episodes as a real provider would, and a rerun of one study meets its own
    /// again. `None` for an episode outside any study.
    pub study: Option<&'a str>,
}

impl<'a> EpisodeSpec<'a> {
    /// The frozen contract: the baseline arm (base prompt, routed menu, native
    /// delivery, the model acting), cap 1,024, budget 128,000, repeat 0.
    pub fn frozen(variant: &'a Variant, config: &'a Configuration) -> EpisodeSpec<'a> {
        EpisodeSpec {
            variant,
            config,
            arm: ArmForm::baseline(),
            completion_cap: COMPLETION_CAP,
            episode_budget: EPISODE_BUDGET,
            repeat: 0,
            study: None,
        }
    }
}

/// A finished episode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Episode {
    /// Content key of the episode (variant, configuration, arm form, cap, budget,
    /// repeat, study): also the source of its seed.
    pub key: HexKey,
    /// The trace the grader read.
    pub trace: Trace,
    /// The verdict.
    pub verdict: Verdict,
    /// Every request and response.
    pub transcript: Transcript,
    /// System prompts and menus the transcript refers to.
    pub blobs: BlobStore,
    /// Request fields the execution profile omitted.
    pub omitted: Vec<RequestField>,
    /// Provider attempts over the episode (retries included).
    pub attempts: u32,
    /// Wall time of the episode in milliseconds (never part of a result's identity).
    pub wall_ms: u64,
}

/// Tool schemas sent over an episode, summed over the requests of its transcript, with
/// the tool lists read from `blobs` (the rule of [`Episode::schema_exposures`]; a
/// stored episode regraded from the cache counts with the cache's blobs).
pub fn schema_exposures(transcript: &transcript::Transcript, blobs: &transcript::BlobStore) -> u64 {
    transcript
        .requests
        .iter()
        .map(|r| u64::from(transcript::schema_count(&r.tools_ref, blobs)))
        .sum()
}

impl Episode {
    /// Tool schemas sent over the episode, summed over its requests.
    ///
    /// Counted from the transcript's requests, not from `trace.turns`: a request whose
    /// send failed (an infrastructure failure after retries) has no turn in the trace,
    /// yet its schemas were sent, and `requests` counts it too. Each stored request
    /// names its tool list by `tools_ref`, counted by [`transcript::schema_count`] (each
    /// list parsed at most once per process). A missing or malformed blob counts as no
    /// schemas.
    pub fn schema_exposures(&self) -> u64 {
        schema_exposures(&self.transcript, &self.blobs)
    }
}

/// The episode key: blake3 over the canonical JSON of everything that determines the
/// episode; the configuration enters as its [`Configuration::identity`]. The arm's name,
/// block and schedule are not in it: they say where an episode sits in the design,
/// not what it is.
pub fn episode_key(spec: &EpisodeSpec<'_>, prompts: &Prompts) -> HexKey {
    /// The key's input, serialised exactly as the JSON object it has always been
    /// (`serde_json::Value` writes an object's members in key order): the fields are
    /// declared in that order, and `config` is the text of a `Value`, so its own
    /// members are too. The configuration and the prompts are the bulk of it and the
    /// same for a whole study's episodes, so their JSON text is kept ([`KeyParts`]).
    #[derive(Serialize)]
    struct KeyInput<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        actor: Option<arm::Actor>,
        completion_cap: u32,
        config: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        delivery: Option<arm::Delivery>,
        episode_budget: u64,
        kind: &'static str,
        lane: arm::Menu,
        nudge: &'a RawValue,
        prompt: &'a RawValue,
        repeat: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        study: Option<&'a str>,
        variant: &'a str,
    }
    let prompt = Arm::system_prompt(&spec.arm, prompts);
    let parts = KeyParts::of(spec.config, &prompt, &prompts.nudge);
    // The menu keeps its old key name, `lane`, and components at their only variant
    // add nothing, so the baseline arms keep the seeds (and results) they had before
    // arms existed; a component's later variants enter the key by name.
    let input = KeyInput {
        actor: (spec.arm.actor != arm::Actor::Model).then_some(spec.arm.actor),
        completion_cap: spec.completion_cap,
        config: &parts.config,
        delivery: (spec.arm.delivery != arm::Delivery::Native).then_some(spec.arm.delivery),
        episode_budget: spec.episode_budget,
        kind: "episode/1",
        lane: spec.arm.menu,
        nudge: &parts.nudge,
        prompt: &parts.prompt,
        repeat: spec.repeat,
        study: spec.study,
        variant: &spec.variant.variant_hash,
    };
    // Serialising plain fields and JSON text cannot fail; one buffer is hashed at once
    // (blake3 is fastest on long inputs).
    let bytes = serde_json::to_vec(&input).unwrap_or_default();
    HexKey::from(blake3::hash(&bytes))
}

/// The JSON text of an episode key's large members, kept per thread for the last
/// configuration and prompts seen: a study's episodes come a configuration and an arm
/// at a time, and writing these was most of an episode key. Each is found by equality
/// with what it was made from, so a hit is exactly the text asked for.
struct KeyParts {
    source: Configuration,
    /// The configuration's identity, speed aside: a simulated agent's speed models its
    /// wall time only, never what it does, so it stays out of the episode's seed (a
    /// new speed gives the same episodes, retimed), while the execute node's key holds
    /// the whole configuration, so a new speed reruns.
    config: Arc<RawValue>,
    prompt: (String, Arc<RawValue>),
    nudge: (String, Arc<RawValue>),
}

/// The text of an episode key's configuration, prompt and nudge.
struct KeyTexts {
    config: Arc<RawValue>,
    prompt: Arc<RawValue>,
    nudge: Arc<RawValue>,
}

impl KeyParts {
    fn of(config: &Configuration, prompt: &str, nudge: &str) -> KeyTexts {
        thread_local! {
            static LAST: std::cell::RefCell<Option<KeyParts>> =
                const { std::cell::RefCell::new(None) };
        }
        let text = |s: &str| {
            (
                s.to_string(),
                raw(serde_json::to_string(s).unwrap_or_default()),
            )
        };
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            let parts = last.get_or_insert_with(|| KeyParts {
                source: config.clone(),
                config: config_text(config),
                prompt: text(prompt),
                nudge: text(nudge),
            });
            if parts.source != *config {
                parts.config = config_text(config);
                parts.source = config.clone();
            }
            if parts.prompt.0 != prompt {
                parts.prompt = text(prompt);
            }
            if parts.nudge.0 != nudge {
                parts.nudge = text(nudge);
            }
            KeyTexts {
                config: parts.config.clone(),
                prompt: parts.prompt.1.clone(),
                nudge: parts.nudge.1.clone(),
            }
        })
    }
}

/// The text of a configuration's identity (speed aside) as a `serde_json::Value`
/// writes it: members in key order, at every depth.
fn config_text(config: &Configuration) -> Arc<RawValue> {
    let identity = Configuration {
        speed: None,
        ..config.identity()
    };
    raw(serde_json::to_value(&identity)
        .unwrap_or(Json::Null)
        .to_string())
}

/// JSON text written by `serde_json` as a raw value (`null`, the default, should it
/// not parse, which its own output cannot fail to).
fn raw(json: String) -> Arc<RawValue> {
    Arc::from(RawValue::from_string(json).unwrap_or_default())
}

fn finish_reason(f: Finish) -> FinishReason {
    match f {
        Finish::Stop => FinishReason::Stop,
        Finish::ToolCalls => FinishReason::ToolCalls,
        Finish::Length => FinishReason::Length,
        Finish::ContentFilter => FinishReason::ContentFilter,
        Finish::Other => FinishReason::Other,
    }
}

/// What an error that ended a request amounts to: its cause (from the final error), the
/// last HTTP status seen over all attempts (`last_status`, else the final error's) and
/// the attempts made (`attempts` unless retries ran out, which say how many).
pub fn infra_failure(
    error: &ProviderError,
    attempts: u32,
    last_status: Option<u16>,
) -> InfraFailure {
    let (last, attempts) = match error {
        ProviderError::Exhausted { attempts, last } => (last.as_ref(), *attempts),
        other => (other, attempts),
    };
    let (cause, http_status) = match last {
        ProviderError::Http { status: 429, .. } => (InfraCause::RateLimited, Some(429)),
        ProviderError::Http { status, .. } if *status >= 500 => {
            (InfraCause::ServerError, Some(*status))
        }
        ProviderError::Http {
            status: status @ (401 | 403),
            ..
        } => (InfraCause::Auth, Some(*status)),
        ProviderError::Http {
            status: status @ (400 | 413),
            body,
            ..
        } if says_context_exceeded(body) => (InfraCause::ContextExceeded, Some(*status)),
        ProviderError::Http { status, .. } => (InfraCause::OtherStatus, Some(*status)),
        ProviderError::Timeout(_) => (InfraCause::Timeout, None),
        ProviderError::Transport(_) => (InfraCause::Transport, None),
        ProviderError::Decode { status, .. } => (InfraCause::BadBody, *status),
        ProviderError::MissingKey { .. } => (InfraCause::Auth, None),
        ProviderError::Config { .. } => (InfraCause::Config, None),
        // `Exhausted` never nests; if it did, its own count stands.
        ProviderError::Exhausted { .. } => (InfraCause::BadBody, None),
    };
    InfraFailure {
        cause,
        http_status: last_status.or(http_status),
        attempts,
        message: error.to_string(),
    }
}

/// Whether an error body says the request does not fit the model's context, in the
/// words of the servers and APIs tbb speaks to (matched case-insensitively).
fn says_context_exceeded(body: &str) -> bool {
    const WORDINGS: [&str; 7] = [
        "exceed_context_size",                  // llama.cpp's error type
        "available context size",               // llama.cpp's message
        "context_length_exceeded",              // OpenAI's code
        "maximum context length",               // OpenAI, vLLM
        "longer than the model's context",      // SGLang
        "prompt is too long",                   // Anthropic
        "exceeds the maximum number of tokens", // Gemini
    ];
    let body = body.to_ascii_lowercase();
    WORDINGS.iter().any(|w| body.contains(w))
}

pub(crate) fn response_record(r: &ChatResponse, wall_ms: u64) -> ResponseRecord {
    let usage = r.usage.unwrap_or(tbb_provider::Usage {
        input_tokens: 0,
        cached_tokens: 0,
        output_tokens: 0,
        reasoning_tokens: None,
        reasoning_source: ReasoningSource::Unknown,
    });
    ResponseRecord {
        finish_reason: finish_reason(r.finish),
        finish_reason_raw: r.finish_raw.clone(),
        usage: tbb_core::grade::trace::Usage {
            input_tokens: usage.input_tokens,
            cached_tokens: usage.cached_tokens,
            output_tokens: usage.output_tokens,
            reasoning_tokens: usage.reasoning_tokens,
            reasoning_reported: usage.reasoning_source == ReasoningSource::Reported,
        },
        text: r.text.clone(),
        tool_calls: r
            .tool_calls
            .iter()
            .map(|c| tbb_core::grade::trace::ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect(),
        raw: Some(r.raw.clone()),
        violation: r.violation.clone(),
        wall_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, body: &str) -> ProviderError {
        ProviderError::Http {
            status,
            body: body.into(),
            retry_after: None,
        }
    }

    #[test]
    fn a_prompt_too_long_for_the_context_is_its_own_cause_in_every_servers_words() {
        let refusals = [
            (
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4388,"n_ctx":4096}}"#,
            ),
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5412 tokens.","code":"context_length_exceeded"}}"#,
            ),
            (
                400,
                r#"{"object":"error","message":"The input (5000 tokens) is longer than the model's context length (4096 tokens)."}"#,
            ),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            ),
            (
                400,
                r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
            ),
            (413, "Maximum context length exceeded"),
        ];
        for (status, body) in refusals {
            let f = infra_failure(&http(status, body), 1, None);
            assert_eq!(f.cause, InfraCause::ContextExceeded, "{body}");
            assert_eq!(f.http_status, Some(status));
        }
        let other = infra_failure(&http(400, r#"{"error":"unknown field `seed`"}"#), 1, None);
        assert_eq!(other.cause, InfraCause::OtherStatus);
        // Only a refusal says so: a server error that mentions the context is a server error.
        let server = infra_failure(&http(500, "maximum context length"), 1, None);
        assert_eq!(server.cause, InfraCause::ServerError);
    }
}
