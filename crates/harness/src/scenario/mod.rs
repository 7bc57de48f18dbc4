//! A ToolSandbox scenario played by a configuration: the second benchmark's episode.
//!
//! The agent meets the scenario through the same request machinery as tbb's own
//! families ([`super::exchange`]): the configuration's route, retries and in-flight
//! limit, the completion cap, the episode budget, the same transcript (so the requests
//! table, `tbb show` and replay read it as any episode's), and the same endings under the
//! contract (the cap, the budget, a content filter, a protocol violation, several calls
//! in one response, an infrastructure failure). What ToolSandbox owns stays its own:
//! upstream's system prompt and first user message, taken from the scenario's starting
//! world; the tool schemas as upstream presents them (the allow list, in its seeded
//! order, from the pinned `tools.json`); the tools' effects, written into the world as
//! upstream's roles write them ([`tbb_toolsandbox::record`]); the user ([`user`]); and
//! the limit on messages (`max_messages` rows added to the conversation).
//!
//! The episode's saved state is its world: every table with every snapshot. Grading
//! reads only that ([`tbb_toolsandbox::evaluation::evaluate`]), so a stored episode is
//! graded again without running a tool.
//!
//! Deliberate differences from upstream, each written down in `docs/toolsandbox.md`:
//! one call per response (upstream executes parallel calls in every order; the
//! contract sends `parallel_tool_calls = false` and ends the episode on several calls,
//! as for every benchmark here); a call to a tool the agent is not offered, or with
//! arguments that are not a JSON object, is answered with an error message and writes
//! nothing (upstream's agent crashes); an empty response gets the harness's nudge.
//!
//! Never: reads the scenario's milestones while playing, or repairs a call.

pub mod live_user;
pub mod user;

use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Value};
use tbb_core::grade::trace::{InfraFailure, Limits, StopReason};
use tbb_provider::chat::Sampling;
use tbb_provider::config::RequestField;
use tbb_provider::retry::RouteLimits;
use tbb_provider::{
    ChatRequest, Configuration, Message, Provider, ProviderKind, ToolCall, ToolSchema,
};
use tbb_toolsandbox::clock::Clock;
use tbb_toolsandbox::context::{Context, Namespace};
use tbb_toolsandbox::data::VendoredFile;
use tbb_toolsandbox::evaluation::{self, Evaluation, EvaluationError, MilestoneMatcher};
use tbb_toolsandbox::record::{self, RecordError};
use tbb_toolsandbox::scenario::{Category, Scenario};
use tbb_toolsandbox::tools::Registry;

use super::exchange::{self, Exchange, Route};
use super::transcript::{self, BlobStore, Transcript};
use user::{ScriptedUser, UserMove};

/// Version of the scenario loop, part of every scenario episode's key.
pub const SCENARIO_VERSION: &str = "toolsandbox-episode/1";

/// The user's tool, never offered to the agent.
const USER_TOOL: &str = "end_conversation";

/// What to play.
#[derive(Debug, Clone, Copy)]
pub struct ScenarioSpec<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The tools' schemas.
    pub registry: &'a Registry,
    /// The configuration.
    pub config: &'a Configuration,
    /// Completion cap per request.
    pub completion_cap: u32,
    /// Episode budget in reported tokens.
    pub episode_budget: u64,
    /// Repeat index (a different seed per repeat).
    pub repeat: u32,
    /// The study it belongs to (part of its key), `None` outside a study.
    pub study: Option<&'a str>,
    /// The configuration that plays the user ([`live_user`]); `None`: the scripted
    /// user ([`user`]).
    pub user: Option<&'a Configuration>,
}

/// A played scenario.
#[derive(Debug, Clone)]
pub struct ScenarioEpisode {
    /// Content key (scenario, data pin, configuration, cap, budget, repeat, study).
    pub key: String,
    /// The scenario's name.
    pub scenario: String,
    /// The saved state: the world after the episode, every snapshot kept.
    pub world: Context,
    /// Every request and response.
    pub transcript: Transcript,
    /// System prompts and menus the transcript refers to.
    pub blobs: BlobStore,
    /// Why it stopped.
    pub stop: StopReason,
    /// What failed, when the infrastructure ended it.
    pub infra: Option<InfraFailure>,
    /// Request fields the execution profile omitted.
    pub omitted: Vec<RequestField>,
    /// Provider attempts, retries included.
    pub attempts: u32,
    /// Wall time in milliseconds (never part of a result's identity).
    pub wall_ms: u64,
    /// Tool calls the agent made (each answered, executed or refused).
    pub calls: u32,
    /// Messages the user said after its first (facts of the scripted user, answers of
    /// a live one).
    pub user_turns: u32,
    /// A live user's requests and responses; `None` with the scripted user.
    pub user_transcript: Option<Transcript>,
}

/// A scenario that cannot be played or graded as exported.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    /// Its matchers do not read.
    #[error("scenario {scenario}: {source}")]
    Matcher {
        /// The scenario.
        scenario: String,
        /// Why.
        source: tbb_toolsandbox::evaluation::ModelError,
    },
    /// Grading failed on its saved world.
    #[error("scenario {scenario}: {source}")]
    Grade {
        /// The scenario.
        scenario: String,
        /// Why.
        source: EvaluationError,
    },
}

/// Grades a played scenario from its saved world alone.
pub fn grade(scenario: &Scenario, world: &Context) -> Result<Evaluation, ScenarioError> {
    let matcher = |v: &Value| {
        MilestoneMatcher::from_json(v).map_err(|source| ScenarioError::Matcher {
            scenario: scenario.name.clone(),
            source,
        })
    };
    let milestones = matcher(&scenario.milestone_matcher)?;
    let minefields = matcher(&scenario.minefield_matcher)?;
    evaluation::evaluate(&milestones, &minefields, world).map_err(|source| ScenarioError::Grade {
        scenario: scenario.name.clone(),
        source,
    })
}

/// The episode key: blake3 over the canonical JSON of what determines the episode.
pub fn scenario_key(spec: &ScenarioSpec<'_>) -> String {
    #[derive(Serialize)]
    struct KeyInput<'a> {
        code: String,
        completion_cap: u32,
        config: Configuration,
        data: &'static str,
        episode_budget: u64,
        kind: &'static str,
        repeat: u32,
        scenario: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        study: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        user: Option<Configuration>,
    }
    let input = KeyInput {
        code: code_version(spec.config),
        completion_cap: spec.completion_cap,
        config: Configuration {
            speed: None,
            ..spec.config.identity()
        },
        data: VendoredFile::Scenarios.pin(),
        episode_budget: spec.episode_budget,
        kind: SCENARIO_VERSION,
        repeat: spec.repeat,
        scenario: &spec.scenario.name,
        study: spec.study,
        user: spec.user.map(|u| Configuration {
            speed: None,
            ..u.identity()
        }),
    };
    // A `Value` writes an object's members in key order at every depth.
    let canonical = serde_json::to_value(&input)
        .map(|v| v.to_string())
        .unwrap_or_default();
    blake3::hash(canonical.as_bytes()).to_hex().to_string()
}

/// The code that decides a scenario episode: this loop's, and for a simulated
/// configuration the panel's answers to plain words (its behaviour is code, not data).
pub fn code_version(config: &Configuration) -> String {
    match config.provider {
        ProviderKind::Sim => format!(
            "{SCENARIO_VERSION}+{}+{}",
            tbb_agent::sim::CODE_VERSION,
            tbb_agent::sim::NATURAL_CODE_VERSION
        ),
        _ => SCENARIO_VERSION.to_string(),
    }
}

/// The agent's first messages: upstream's system prompt for the agent and the user's
/// messages to it since the first real one (the user simulator's few-shot examples,
/// visible to the user alone, are not the agent's).
fn opening(world: &Context) -> Vec<Message> {
    let rows = world
        .get_database(Namespace::Sandbox, None, true)
        .unwrap_or_default();
    let first_user = world.first_user_sandbox_message_index();
    let text = |r: &tbb_toolsandbox::context::Row| {
        r.get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let between = |r: &tbb_toolsandbox::context::Row, from: &str, to: &str| {
        r.get("sender").and_then(Value::as_str) == Some(from)
            && r.get("recipient").and_then(Value::as_str) == Some(to)
    };
    let mut messages: Vec<Message> = rows
        .iter()
        .filter(|r| between(r, "SYSTEM", "AGENT"))
        .map(|r| Message::System { content: text(r) })
        .take(1)
        .collect();
    messages.extend(
        rows.iter()
            .filter(|r| {
                between(r, "USER", "AGENT")
                    && r.get("sandbox_message_index").and_then(Value::as_i64) >= Some(first_user)
            })
            .map(|r| Message::User { content: text(r) }),
    );
    messages
}

/// The schemas the agent is offered: the allow list but the user's tool, in its order.
pub fn offered_tools(scenario: &Scenario, registry: &Registry) -> Vec<ToolSchema> {
    registry
        .schemas_for(&scenario.tool_allow_list)
        .filter_map(schema_of)
        .filter(|s| s.name != USER_TOOL)
        .collect()
}

/// The user's tools (`end_conversation`), offered to a live user after the agent speaks.
fn user_tools(registry: &Registry) -> Vec<ToolSchema> {
    registry
        .schemas_for(&[USER_TOOL.to_string()])
        .filter_map(schema_of)
        .collect()
}

/// A tool's schema as `tools.json` writes it (OpenAI's function format).
fn schema_of(s: &Value) -> Option<ToolSchema> {
    let f = &s["function"];
    Some(ToolSchema {
        name: f["name"].as_str()?.to_string(),
        description: f["description"].as_str().unwrap_or_default().to_string(),
        parameters: std::sync::Arc::new(f["parameters"].clone()),
    })
}

/// The seed of the agent's requests: the episode key's first 8 bytes as if no live user
/// played, so the agent's draws never depend on where the user is served. The user
/// reaches the agent through what it says; were its route (an address, a port) part of
/// the seed, a simulated agent would play differently against the same replies served
/// on another port. The episode key still names the user, so a new user is a new run.
fn agent_seed(spec: &ScenarioSpec<'_>) -> u64 {
    let key = scenario_key(&ScenarioSpec {
        user: None,
        ..*spec
    });
    u64::from_le_bytes(
        blake3::hash(key.as_bytes()).as_bytes()[..8]
            .try_into()
            .unwrap_or([0; 8]),
    )
}

/// Plays one scenario. Never panics and never fails: a failure of the world (a row it
/// refuses) ends the episode as a contract break and is kept in the transcript.
pub async fn run_scenario(
    provider: &dyn Provider,
    spec: &ScenarioSpec<'_>,
    nudge: &str,
    routes: Option<&RouteLimits>,
    user_provider: Option<&dyn Provider>,
) -> ScenarioEpisode {
    let started = Instant::now();
    let key = scenario_key(spec);
    let config = spec.config;
    let omit = &config.profile.omit;
    let seed = agent_seed(spec);
    let mut world = spec.scenario.starting_context.clone();
    let limit = world.max_sandbox_message_index() + i64::from(spec.scenario.max_messages);
    let multi_turn = spec
        .scenario
        .categories
        .contains(&Category::MultipleUserTurn);
    let mut user = ScriptedUser::new(&world, multi_turn);
    let mut live_user = match (spec.user, user_provider) {
        (Some(config), Some(p)) => Some(live_user::LiveUser::new(
            p,
            config,
            routes,
            spec.completion_cap,
            user_tools(spec.registry),
            &key,
        )),
        _ => None,
    };
    let tools = offered_tools(spec.scenario, spec.registry);
    let mut request = ChatRequest {
        model: config.model.clone(),
        messages: opening(&world),
        tools,
        max_completion_tokens: spec.completion_cap,
        sampling: Sampling {
            temperature: (!omit.contains(&RequestField::Temperature))
                .then_some(config.profile.temperature),
            seed: (!omit.contains(&RequestField::Seed)).then_some(seed),
            parallel_tool_calls: (!omit.contains(&RequestField::ParallelToolCalls))
                .then_some(false),
        },
    };
    let mut transcript = Transcript::new(&key);
    let mut blobs = BlobStore::default();
    let tools_ref = transcript::put_tools(&request.tools, &mut blobs);
    let route = Route {
        provider,
        routes,
        config,
        completion_cap: spec.completion_cap,
    };
    let mut attempts = 0;
    let mut tokens: u64 = 0;
    let mut infra = None;
    let mut calls = 0u32;
    let mut user_turns = 0u32;
    let stop = loop {
        if spec.user.is_some() && live_user.is_none() {
            infra = Some(InfraFailure {
                cause: tbb_core::grade::trace::InfraCause::Config,
                http_status: None,
                attempts: 0,
                message: "the user's configuration has no provider".into(),
            });
            break StopReason::InfraFailure;
        }
        if world.max_sandbox_message_index() >= limit {
            break StopReason::TurnLimit;
        }
        let sent = match exchange::send(
            route,
            &request,
            &tools_ref,
            &mut transcript,
            &mut blobs,
            &mut attempts,
        )
        .await
        {
            Exchange::Answered(sent) => sent,
            Exchange::Failed { infra: failure, .. } => {
                infra = Some(failure);
                break StopReason::InfraFailure;
            }
        };
        let response = sent.response;
        if let Some(usage) = response.usage {
            tokens = tokens
                .saturating_add(usage.input_tokens)
                .saturating_add(usage.output_tokens);
        }
        if let Some(stop) = exchange::contract_stop(&response, tokens, spec.episode_budget) {
            break stop;
        }
        if let Some(call) = response.tool_calls.first().cloned() {
            calls += 1;
            request.messages.push(Message::Assistant {
                content: response.text.clone(),
                tool_calls: vec![call.clone()],
            });
            match answer_call(&mut world, spec.scenario, &call) {
                Ok(shown) => request.messages.push(Message::Tool {
                    call_id: call.id,
                    name: call.name,
                    content: shown,
                }),
                Err(_) => break StopReason::ContractBreak,
            }
            continue;
        }
        match response.text.filter(|t| !t.trim().is_empty()) {
            Some(reply) => {
                if record::agent_to_user(&mut world, &reply).is_err() {
                    break StopReason::ContractBreak;
                }
                request.messages.push(Message::Assistant {
                    content: Some(reply),
                    tool_calls: Vec::new(),
                });
                let next = match live_user.as_mut() {
                    Some(live) => match live.after_reply(&world, &mut blobs).await {
                        Ok(next) => next,
                        Err(failure) => {
                            infra = Some(failure);
                            break StopReason::InfraFailure;
                        }
                    },
                    None => user.after_reply(),
                };
                match next {
                    UserMove::Say(fact) => {
                        if record::user_to_agent(&mut world, &fact).is_err() {
                            break StopReason::ContractBreak;
                        }
                        user_turns += 1;
                        request.messages.push(Message::User { content: fact });
                    }
                    UserMove::End => {
                        let id = format!("user-end-{}", world.max_sandbox_message_index() + 1);
                        if record::user_ends_conversation(&mut world, Clock::EXPORT, &id).is_err() {
                            break StopReason::ContractBreak;
                        }
                        break StopReason::Answer;
                    }
                }
            }
            None => {
                request.messages.push(Message::Assistant {
                    content: None,
                    tool_calls: Vec::new(),
                });
                request.messages.push(Message::User {
                    content: nudge.to_string(),
                });
            }
        }
    };
    let limits = Limits {
        completion_cap: spec.completion_cap,
        episode_budget: spec.episode_budget,
        call_limit: spec.scenario.max_messages,
        turn_limit: spec.scenario.max_messages,
    };
    transcript.close(&request.messages, stop, limits);
    transcript.infra = infra.clone();
    let wall_ms = if config.wall_time_is_modelled() {
        transcript.wall_ms.iter().sum()
    } else {
        started.elapsed().as_millis() as u64
    };
    ScenarioEpisode {
        key,
        scenario: spec.scenario.name.clone(),
        world,
        transcript,
        blobs,
        stop,
        infra,
        omitted: omit.iter().copied().collect(),
        attempts,
        wall_ms,
        calls,
        user_turns,
        user_transcript: live_user.map(|u| u.transcript),
    }
}

/// Runs one call in the world and returns what the agent is shown: the environment's
/// answer as upstream writes it (`repr` of the result, or the exception's line). A call
/// the world refuses to record (a tool not offered) or whose arguments are not a JSON
/// object is answered with an error and changes nothing. `Err` only when the world
/// refuses a row it should take.
fn answer_call(
    world: &mut Context,
    scenario: &Scenario,
    call: &ToolCall,
) -> Result<String, RecordError> {
    let arguments: Value = match serde_json::from_str(&call.arguments) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) | Err(_) => {
            return Ok(format!(
                "ValueError: the arguments of {} are not a JSON object: {}",
                call.name, call.arguments
            ))
        }
    };
    let allowed: Vec<String> = scenario
        .tool_allow_list
        .iter()
        .filter(|t| t.as_str() != USER_TOOL)
        .cloned()
        .collect();
    let recorded = record::ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        arguments,
    };
    let before = world.max_sandbox_message_index();
    match record::agent_tool_calls(world, Clock::EXPORT, &allowed, &[recorded]) {
        Ok(_) => {}
        Err(RecordError::NotAllowed { tool }) => {
            return Ok(format!("NameError: name '{tool}' is not defined"));
        }
        Err(e) => return Err(e),
    }
    // The environment's answer is the last message it wrote to the agent.
    let rows = world
        .get_database(Namespace::Sandbox, None, true)
        .unwrap_or_default();
    Ok(rows
        .iter()
        .rev()
        .filter(|r| r.get("sandbox_message_index").and_then(Value::as_i64) > Some(before))
        .find(|r| {
            r.get("sender").and_then(Value::as_str) == Some("EXECUTION_ENVIRONMENT")
                && r.get("recipient").and_then(Value::as_str) == Some("AGENT")
        })
        .and_then(|r| r.get("content").and_then(Value::as_str))
        .unwrap_or("None")
        .to_string())
}

/// A summary of a played scenario for people and notebooks.
pub fn summary(episode: &ScenarioEpisode, graded: &Evaluation) -> Value {
    json!({
        "scenario": episode.scenario,
        "key": episode.key,
        "stop_reason": episode.stop,
        "similarity": graded.similarity,
        "success": graded.is_success(),
        "minefield_hit": graded.minefield_hit,
        "turns": graded.turn_count,
        "calls": episode.calls,
        "user_turns": episode.user_turns,
        "milestones": graded
            .milestone_mapping
            .iter()
            .map(|m| m.as_ref().map(|m| json!({"message": m.message_index, "similarity": m.similarity})))
            .collect::<Vec<_>>(),
        "requests": episode.transcript.requests.len(),
        "prompt_tokens": usage_sum(episode, |u| u.input_tokens),
        "completion_tokens": usage_sum(episode, |u| u.output_tokens),
    })
}

fn usage_sum(episode: &ScenarioEpisode, f: impl Fn(&tbb_provider::Usage) -> u64) -> u64 {
    episode
        .transcript
        .outcomes
        .iter()
        .filter_map(|o| match o {
            transcript::StoredOutcome::Response(r) => r.usage.as_ref().map(&f),
            transcript::StoredOutcome::Failed { .. } => None,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tbb_toolsandbox::scenario::Scenarios;

    fn openai_at(url: &str) -> Configuration {
        tbb_provider::model::configuration("openai/user-model", Some(url), &|_| None)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_agents_seed_is_the_same_whichever_address_serves_the_user() {
        let scenarios = Scenarios::builtin().unwrap_or_else(|e| panic!("{e}"));
        let scenario = scenarios
            .get("cellular_off")
            .unwrap_or_else(|| panic!("the scenario is in the export"));
        let registry = Registry::builtin().unwrap_or_else(|e| panic!("{e}"));
        let agent = openai_at("http://127.0.0.1:8000/v1");
        let (here, there) = (
            openai_at("http://127.0.0.1:40001/v1"),
            openai_at("http://127.0.0.1:40002/v1"),
        );
        let spec = |user| ScenarioSpec {
            scenario,
            registry: &registry,
            config: &agent,
            completion_cap: 1024,
            episode_budget: 100_000,
            repeat: 0,
            study: Some("ts"),
            user,
        };
        // The user is part of what the episode is, so each address is its own run...
        assert_ne!(
            scenario_key(&spec(Some(&here))),
            scenario_key(&spec(Some(&there)))
        );
        // ...but the agent draws alike against either, and as without a live user.
        assert_eq!(
            agent_seed(&spec(Some(&here))),
            agent_seed(&spec(Some(&there)))
        );
        assert_eq!(agent_seed(&spec(Some(&here))), agent_seed(&spec(None)));
        // The repeat still moves it.
        let again = ScenarioSpec {
            repeat: 1,
            ..spec(None)
        };
        assert_ne!(agent_seed(&again), agent_seed(&spec(None)));
    }
}
