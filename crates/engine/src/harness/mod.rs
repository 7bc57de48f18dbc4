//! The harness: runs one episode — a configuration meeting a variant — under the frozen
//! contract, and writes its trace and transcript.
//!
//! Owns: the episode loop, the menu lanes, the system prompts ([`prompts`]), the
//! content-addressed transcripts ([`transcript`]), and the translation between a
//! variant and the providers' chat types (providers never see a variant).
//!
//! The contract, as enforced here:
//! - the system prompt of the episode's prompt variant, then the family's rendered
//!   request as the user message; tools through the provider's native interface with
//!   automatic tool choice; `parallel_tool_calls = false`, the temperature and a seed
//!   derived from the episode key, each unless the execution profile omits it (every
//!   omission is recorded in [`Episode::omitted`]);
//! - if a tool the reference program needs is not on the menu, no request is sent and
//!   the episode stops as unavailable;
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
//! - lanes: *routed* shows the full menu until the first executed call to an
//!   operational tool and the operational tools from then on; *fixed* shows the full
//!   menu throughout.
//!
//! Never: repairs arguments, retries a response it did not like, or lets a provider
//! see anything but messages and tool schemas. Wall time is recorded but never used.

pub mod prompts;
pub mod transcript;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::json;

pub use prompts::{PromptVariant, Prompts};
use tbb_core::compile::cell::level_name;
use tbb_core::compile::Variant;
use tbb_core::grade::trace::{
    ExecutedCall, FinishReason, InfraCause, InfraFailure, Limits, RequestRecord, ResponseRecord,
    StopReason, Trace, Turn, TRACE_FORMAT,
};
use tbb_core::grade::{grade_with_budget, infeasible, Verdict, EPISODE_BUDGET};
use tbb_core::sandbox::Sandbox;
use tbb_provider::chat::Sampling;
use tbb_provider::config::RequestField;
use tbb_provider::retry::{send_with_retry, RouteLimits};
use tbb_provider::{
    ChatRequest, ChatResponse, Configuration, Finish, Message, Provider, ProviderError,
    ReasoningSource, ToolSchema,
};
use transcript::{BlobStore, StoredOutcome, Transcript};

/// The frozen completion cap per request.
pub const COMPLETION_CAP: u32 = 1024;

/// Version of the episode loop, part of every execute node's key: bump it whenever a
/// change to the contract or the transcripts changes what an episode records.
pub const CODE_VERSION: &str = "execute/2";

/// Menu lanes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Full menu until the first operational call, then the operational tools only
    /// (oracle-assisted: the narrowing uses the ground truth).
    #[default]
    Routed,
    /// Full menu throughout.
    Fixed,
}

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct EpisodeSpec<'a> {
    /// The variant.
    pub variant: &'a Variant,
    /// The configuration.
    pub config: &'a Configuration,
    /// Menu lane.
    pub lane: Lane,
    /// System prompt variant.
    pub prompt: PromptVariant,
    /// Completion cap per request.
    pub completion_cap: u32,
    /// Episode budget in reported tokens.
    pub episode_budget: u64,
    /// Repeat index (a different seed per repeat).
    pub repeat: u32,
}

impl<'a> EpisodeSpec<'a> {
    /// The frozen contract: routed lane, base prompt, cap 1,024, budget 128,000, repeat 0.
    pub fn frozen(variant: &'a Variant, config: &'a Configuration) -> EpisodeSpec<'a> {
        EpisodeSpec {
            variant,
            config,
            lane: Lane::Routed,
            prompt: PromptVariant::Base,
            completion_cap: COMPLETION_CAP,
            episode_budget: EPISODE_BUDGET,
            repeat: 0,
        }
    }
}

/// A finished episode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Episode {
    /// Content key of the episode (variant, configuration, lane, prompt, cap, budget,
    /// repeat): also the source of its seed.
    pub key: String,
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

impl Episode {
    /// Tool schemas sent over the episode, summed over its requests.
    ///
    /// Counted from the transcript's requests, not from `trace.turns`: a request whose
    /// send failed (an infrastructure failure after retries) has no turn in the trace,
    /// yet its schemas were sent, and `requests` counts it too. Each stored request
    /// names its tool list by `tools_ref`; an episode has at most two lists (the full
    /// menu and, after the routed lane narrows, the operational tools), so each is
    /// parsed once. A missing or malformed blob counts as no schemas.
    pub fn schema_exposures(&self) -> u64 {
        let mut sizes: BTreeMap<&str, u64> = BTreeMap::new();
        self.transcript
            .requests
            .iter()
            .map(|r| {
                *sizes.entry(r.tools_ref.as_str()).or_insert_with(|| {
                    self.blobs
                        .get(&r.tools_ref)
                        .and_then(|json| {
                            serde_json::from_str::<Vec<serde::de::IgnoredAny>>(json).ok()
                        })
                        .map_or(0, |tools| tools.len() as u64)
                })
            })
            .sum()
    }

    /// The episode's row of `episodes.parquet`.
    pub fn row(
        &self,
        study: &str,
        repair: &str,
        spec: &EpisodeSpec<'_>,
        transcript_ref: &str,
        node_key: &str,
    ) -> crate::store::tables::EpisodeRow {
        let v = spec.variant;
        let verdict = &self.verdict;
        let usage: Vec<&tbb_core::grade::trace::Usage> =
            self.trace.turns.iter().map(|t| &t.response.usage).collect();
        let prompt_tokens = usage
            .iter()
            .map(|u| u.input_tokens)
            .fold(0, u64::saturating_add);
        let completion_tokens = usage
            .iter()
            .map(|u| u.output_tokens)
            .fold(0, u64::saturating_add);
        crate::store::tables::EpisodeRow {
            study: study.into(),
            configuration: spec.config.name.clone(),
            organization: spec.config.organization.clone(),
            model: spec.config.model.clone(),
            route: spec.config.route(),
            lane: level_name(&spec.lane),
            repair: repair.into(),
            completion_cap: spec.completion_cap,
            repeat: spec.repeat,
            variant_id: v.variant_id.clone(),
            family: v.family.clone(),
            intent: v.intent.clone(),
            domain: level_name(&v.domain),
            v: u32::from(v.cell.v),
            w: level_name(&v.cell.w),
            d: level_name(&v.cell.d),
            r: level_name(&v.cell.r),
            depth: v.cell.depth.map(u32::from),
            vts: verdict.vts,
            ok: verdict.obligations.in_order().map(|(_, ok)| ok),
            first_unmet: verdict.first_unmet.map(|o| format!("{o:?}")),
            terminal_flag: verdict.terminal_flag.map(|f| level_name(&f)),
            truncated: verdict.truncated,
            truncated_before_first_call: verdict.truncated_before_first_call,
            calls: verdict.calls,
            requests: self.transcript.requests.len() as u32,
            schema_exposures: self.schema_exposures(),
            turns: verdict.requests,
            prompt_tokens,
            completion_tokens,
            reasoning_tokens: usage
                .iter()
                .filter_map(|u| u.reasoning_tokens)
                .fold(0, u64::saturating_add),
            total_tokens: prompt_tokens.saturating_add(completion_tokens),
            cost_usd: spec
                .config
                .prices
                .cost_usd(prompt_tokens, completion_tokens),
            wall_ms: self.wall_ms,
            infra_failure: verdict.infra_failure,
            infra_error: verdict.infra.as_ref().map(|i| level_name(&i.cause)),
            infra_http_status: verdict
                .infra
                .as_ref()
                .and_then(|i| i.http_status.map(u32::from)),
            infra_attempts: verdict.infra.as_ref().map(|i| i.attempts),
            sent_temperature: self.transcript.wire_sampling.and_then(|s| s.temperature),
            sent_seed: self.transcript.wire_sampling.and_then(|s| s.seed),
            sent_parallel_tool_calls: self
                .transcript
                .wire_sampling
                .and_then(|s| s.parallel_tool_calls),
            stop_reason: level_name(&self.trace.stop),
            transcript_ref: transcript_ref.into(),
            node_key: node_key.into(),
        }
    }
}

/// The episode key: blake3 over the canonical JSON of everything that determines the
/// episode; the configuration enters as its [`Configuration::identity`].
pub fn episode_key(spec: &EpisodeSpec<'_>, prompts: &Prompts) -> String {
    let config = spec.config.identity();
    let input = json!({
        "kind": "episode/1",
        "variant": spec.variant.variant_hash,
        "config": config,
        "lane": spec.lane,
        "prompt": prompts.system(spec.prompt),
        "nudge": prompts.nudge,
        "completion_cap": spec.completion_cap,
        "episode_budget": spec.episode_budget,
        "repeat": spec.repeat,
    });
    blake3::hash(input.to_string().as_bytes())
        .to_hex()
        .to_string()
}

fn schemas(variant: &Variant, operational_only: bool) -> Vec<ToolSchema> {
    variant
        .menu
        .iter()
        .filter(|t| !operational_only || t.operational)
        .map(|t| ToolSchema {
            name: t.name.clone(),
            description: t.description.clone(),
            parameters: t.parameters.clone(),
        })
        .collect()
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

/// Runs one episode. Never panics and never fails: every provider failure becomes a
/// recorded ending of the episode.
pub async fn run_episode(
    provider: &dyn Provider,
    spec: &EpisodeSpec<'_>,
    prompts: &Prompts,
    routes: Option<&RouteLimits>,
) -> Episode {
    let started = Instant::now();
    let variant = spec.variant;
    let config = spec.config;
    let key = episode_key(spec, prompts);
    let omit = &config.profile.omit;
    let omitted: Vec<RequestField> = omit.iter().copied().collect();
    let seed = u64::from_le_bytes(
        blake3::hash(key.as_bytes()).as_bytes()[..8]
            .try_into()
            .unwrap_or([0; 8]),
    );
    let sampling = Sampling {
        temperature: (!omit.contains(&RequestField::Temperature))
            .then_some(config.profile.temperature),
        seed: (!omit.contains(&RequestField::Seed)).then_some(seed),
        parallel_tool_calls: (!omit.contains(&RequestField::ParallelToolCalls)).then_some(false),
    };
    let menu = variant.menu_names();
    let limits = Limits {
        completion_cap: spec.completion_cap,
        episode_budget: spec.episode_budget,
        call_limit: variant.call_limit,
        turn_limit: variant.turn_limit,
    };
    let mut trace = Trace {
        format: TRACE_FORMAT.into(),
        family: variant.family.clone(),
        cell: variant.cell,
        variant_id: variant.variant_id.clone(),
        menu: menu.clone(),
        limits,
        turns: Vec::new(),
        final_answer: None,
        stop: StopReason::Answer,
        infra: None,
    };
    let mut transcript = Transcript::new(&key);
    let mut blobs = BlobStore::default();
    let mut attempts = 0;
    let mut infra: Option<InfraFailure> = None;

    let offered: BTreeSet<&str> = menu.iter().map(String::as_str).collect();
    let stop = if variant
        .required_tools()
        .iter()
        .any(|t| !offered.contains(t.as_str()))
    {
        StopReason::Unavailable
    } else {
        let full = schemas(variant, false);
        let operational = schemas(variant, true);
        let full_ref = transcript::put_tools(&full, &mut blobs);
        let operational_ref = transcript::put_tools(&operational, &mut blobs);
        let operational_names: Vec<String> = operational.iter().map(|t| t.name.clone()).collect();
        let mut visible = (&menu, &full_ref);
        // One request object for the whole episode: messages are appended to it and the
        // tools swapped when the lane narrows, so nothing is copied per turn.
        let mut request = ChatRequest {
            model: config.model.clone(),
            messages: vec![
                Message::System {
                    content: prompts.system(spec.prompt).to_string(),
                },
                Message::User {
                    content: variant.user_request.clone(),
                },
            ],
            tools: full,
            max_completion_tokens: spec.completion_cap,
            sampling,
        };
        let mut sandbox = Sandbox::new(variant);
        let mut executed: Vec<ExecutedCall> = Vec::new();
        let mut tokens: u64 = 0;
        let stop = loop {
            if trace.turns.len() as u32 >= variant.turn_limit {
                break StopReason::TurnLimit;
            }
            let request_ref = transcript.record_request(&request, visible.1, &mut blobs);
            if transcript.wire_sampling.is_none() {
                transcript.wire_sampling = Some(provider.wire_sampling(&request));
            }
            let sent = Instant::now();
            let outcome = {
                let permit = match routes {
                    Some(r) => r.for_config(config).acquire_owned().await.ok(),
                    None => None,
                };
                let outcome = send_with_retry(provider, &config.retry, &request).await;
                drop(permit);
                outcome
            };
            attempts += outcome.attempts;
            let wall_ms = sent.elapsed().as_millis() as u64;
            transcript.wall_ms.push(wall_ms);
            let visible_names: Vec<String> = visible.0.clone();
            let response = match outcome.result {
                Ok(r) => r,
                Err(error) => {
                    transcript.outcomes.push(StoredOutcome::Failed {
                        error: error.to_string(),
                        attempts: outcome.attempts,
                    });
                    infra = Some(infra_failure(&error, outcome.attempts, outcome.last_status));
                    break StopReason::InfraFailure;
                }
            };
            transcript
                .outcomes
                .push(StoredOutcome::Response(response.clone()));
            let mut turn = Turn {
                request: RequestRecord {
                    visible_tools: visible_names,
                    body_ref: Some(request_ref),
                },
                response: response_record(&response, wall_ms),
                executed: Vec::new(),
            };
            let Some(usage) = response.usage else {
                trace.turns.push(turn);
                infra = Some(InfraFailure {
                    cause: InfraCause::BadUsage,
                    http_status: response.http_status,
                    attempts: outcome.attempts,
                    message: response
                        .usage_error
                        .clone()
                        .unwrap_or_else(|| "the response has no usage".to_string()),
                });
                break StopReason::InfraFailure;
            };
            tokens = tokens
                .saturating_add(usage.input_tokens)
                .saturating_add(usage.output_tokens);
            let stop = match response.finish {
                Finish::Length => Some(StopReason::Truncated),
                _ if tokens > spec.episode_budget => Some(StopReason::BudgetExceeded),
                Finish::ContentFilter => Some(StopReason::ContractBreak),
                _ if response.violation.is_some() => Some(StopReason::ProtocolViolation),
                _ if response.tool_calls.len() > 1 => Some(StopReason::ContractBreak),
                _ => None,
            };
            if let Some(stop) = stop {
                trace.turns.push(turn);
                break stop;
            }
            let text = response.text.clone().filter(|t| !t.trim().is_empty());
            let Some(call) = response.tool_calls.first() else {
                trace.turns.push(turn);
                match text {
                    Some(answer) => {
                        trace.final_answer = Some(answer);
                        break StopReason::Answer;
                    }
                    None => {
                        request.messages.push(Message::Assistant {
                            content: None,
                            tool_calls: Vec::new(),
                        });
                        request.messages.push(Message::User {
                            content: prompts.nudge.clone(),
                        });
                        continue;
                    }
                }
            };
            if executed.len() as u32 >= variant.call_limit {
                trace.turns.push(turn);
                break StopReason::CallLimit;
            }
            let result = sandbox.execute(&call.name, &call.arguments);
            let done = ExecutedCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                observation: result.observation.clone(),
            };
            turn.executed.push(done.clone());
            executed.push(done);
            trace.turns.push(turn);
            request.messages.push(Message::Assistant {
                content: response.text.clone(),
                tool_calls: vec![call.clone()],
            });
            request.messages.push(Message::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: result.observation,
            });
            if spec.lane == Lane::Routed
                && variant.operational_tools.contains(&call.name)
                && visible.1 != &operational_ref
            {
                visible = (&operational_names, &operational_ref);
                request.tools = operational.clone();
            }
            let refs: Vec<&ExecutedCall> = executed.iter().collect();
            let left = variant.call_limit.saturating_sub(executed.len() as u32) as usize;
            if infeasible(variant, &refs, sandbox.changes(), left).is_some() {
                break StopReason::Infeasible;
            }
        };
        transcript.close(&request.messages, stop, limits);
        stop
    };
    if stop == StopReason::Unavailable {
        transcript.close(&[], stop, limits);
    }
    transcript.infra = infra.clone();
    trace.stop = stop;
    trace.infra = infra;
    let verdict = grade_with_budget(variant, &trace, spec.episode_budget);
    Episode {
        key,
        trace,
        verdict,
        transcript,
        blobs,
        omitted,
        attempts,
        wall_ms: started.elapsed().as_millis() as u64,
    }
}
