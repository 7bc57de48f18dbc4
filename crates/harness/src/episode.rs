//! The episode loop as a small state machine: [`Step::Ask`] → [`Step::Read`] →
//! [`Step::Execute`] → [`Step::Ask`] … → [`Step::Stop`], each step a method of [`Run`]
//! that calls the arm's hooks ([`super::arm`]):
//!
//! - `Ask` asks the arm's **actor** for the next decision: under the public-handoff
//!   controller, the controller first (a call it issues itself, or a halt on a
//!   hand-off it cannot follow); then, for the model, it checks the turn limit,
//!   records the request — with the schemas the **menu** hook makes visible — and
//!   sends it under the route's limit and the retry policy;
//! - `Read` applies the contract to a response: the cap, the episode budget, a content
//!   filter, a protocol violation, several calls, an answer, an empty response (nudge);
//! - `Execute` enforces the call limit, runs the call in the sandbox (whose records
//!   reach the agent in the encoding the **delivery** hook chose), tells the **menu**
//!   hook which tool ran, and stops as infeasible as soon as success is impossible.
//!   The controller's calls take the same path and are recorded as its own.
//!
//! This is the only episode loop: `tbb apply`, `tbb run-episode`, the replay of saved
//! transcripts and the tests all run it. The contract it enforces is the module doc of
//! [`super`].
//!
//! Never: repairs arguments, retries a response it did not like, or shows a provider
//! anything but messages and tool schemas.

use std::time::Instant;

use tbb_agent::controller::{self, Decision};
use tbb_core::grade::trace::{
    ExecutedCall, InfraFailure, Issuer, Limits, RequestRecord, StopReason, Trace, Turn,
    TRACE_FORMAT,
};
use tbb_core::grade::{grade_with_budget, infeasible};
use tbb_core::sandbox::Sandbox;
use tbb_provider::chat::Sampling;
use tbb_provider::config::RequestField;
use tbb_provider::retry::RouteLimits;
use tbb_provider::{ChatRequest, ChatResponse, Message, Provider, ToolCall};

use super::arm::{Arm, MenuState};
use super::exchange::{self, Exchange, Route};
use super::transcript::{self, BlobStore, Transcript};
use super::{episode_key, response_record, Episode, EpisodeSpec, Prompts};

/// Where the loop is.
enum Step {
    /// Ask the actor for the next decision.
    Ask,
    /// Apply the contract to a response; `turn` is its record so far.
    Read(Box<(ChatResponse, Turn)>),
    /// Execute the response's one call.
    Execute(Box<(ChatResponse, ToolCall, Turn)>),
    /// The episode is over.
    Stop(StopReason),
}

/// One episode in progress.
struct Run<'a> {
    spec: &'a EpisodeSpec<'a>,
    provider: &'a dyn Provider,
    routes: Option<&'a RouteLimits>,
    nudge: &'a str,
    request: ChatRequest,
    menu: MenuState,
    tools_ref: String,
    trace: Trace,
    transcript: Transcript,
    blobs: BlobStore,
    sandbox: Sandbox<'a>,
    executed: Vec<ExecutedCall>,
    /// The text of each executed call's tool message (the delivered records).
    shown: Vec<String>,
    tokens: u64,
    attempts: u32,
    infra: Option<InfraFailure>,
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
    // The seed is the hash of the key's text, as it was when the key was a `String`.
    let key_text = key.text();
    let omit = &config.profile.omit;
    let seed = u64::from_le_bytes(
        blake3::hash(key_text.as_bytes()).as_bytes()[..8]
            .try_into()
            .unwrap_or([0; 8]),
    );
    let sampling = Sampling {
        temperature: (!omit.contains(&RequestField::Temperature))
            .then_some(config.profile.temperature),
        seed: (!omit.contains(&RequestField::Seed)).then_some(seed),
        parallel_tool_calls: (!omit.contains(&RequestField::ParallelToolCalls)).then_some(false),
    };
    let limits = Limits {
        completion_cap: spec.completion_cap,
        episode_budget: spec.episode_budget,
        call_limit: variant.call_limit,
        turn_limit: variant.turn_limit,
    };
    let mut menu = spec.arm.menu.start(variant);
    let full = variant.menu_names();
    let offered: Vec<String> = menu.visible().iter().map(|t| t.name.clone()).collect();
    let mut transcript = Transcript::new(&key_text);
    transcript.delivered_in = spec
        .arm
        .delivery
        .encoding()
        .filter(|&d| d != variant.cell.d);
    if offered != full {
        transcript.offered = Some(offered.clone());
    }
    let mut run = Run {
        spec,
        provider,
        routes,
        nudge: &prompts.nudge,
        request: ChatRequest {
            model: config.model.clone(),
            messages: vec![
                Message::System {
                    content: Arm::system_prompt(&spec.arm, prompts),
                },
                Message::User {
                    content: variant.user_request.clone(),
                },
            ],
            // The request holds the visible schemas from here on (a second copy of a
            // 128-schema menu per episode was a tenth of a live request's CPU).
            tools: menu.take_visible(),
            max_completion_tokens: spec.completion_cap,
            sampling,
        },
        tools_ref: String::new(),
        menu,
        trace: Trace {
            format: TRACE_FORMAT.into(),
            family: variant.family.clone(),
            cell: variant.cell,
            variant_id: variant.variant_id.clone(),
            menu: offered,
            limits,
            turns: Vec::new(),
            final_answer: None,
            stop: StopReason::Answer,
            infra: None,
        },
        transcript,
        blobs: BlobStore::default(),
        sandbox: match spec.arm.delivery.encoding() {
            Some(d) => Sandbox::new(variant).delivering(d),
            None => Sandbox::new(variant),
        },
        executed: Vec::new(),
        shown: Vec::new(),
        tokens: 0,
        attempts: 0,
        infra: None,
    };

    let offered = &run.trace.menu;
    let stop = if variant
        .required_tools()
        .iter()
        .any(|t| !offered.contains(t))
    {
        // No request is sent: the transcript holds no message.
        run.transcript.close(&[], StopReason::Unavailable, limits);
        StopReason::Unavailable
    } else {
        run.tools_ref = transcript::put_tools(&run.request.tools, &mut run.blobs);
        let mut step = Step::Ask;
        let stop = loop {
            step = match step {
                Step::Ask => run.ask().await,
                Step::Read(read) => {
                    let (response, turn) = *read;
                    run.read(response, turn)
                }
                Step::Execute(execute) => {
                    let (response, call, turn) = *execute;
                    run.execute(response, call, turn)
                }
                Step::Stop(stop) => break stop,
            };
        };
        run.transcript.close(&run.request.messages, stop, limits);
        stop
    };
    let mut trace = run.trace;
    let mut transcript = run.transcript;
    transcript.infra = run.infra.clone();
    trace.stop = stop;
    trace.infra = run.infra;
    let verdict = grade_with_budget(variant, &trace, spec.episode_budget);
    let wall_ms = if spec.config.wall_time_is_modelled() {
        transcript.wall_ms.iter().sum()
    } else {
        started.elapsed().as_millis() as u64
    };
    Episode {
        key,
        trace,
        verdict,
        transcript,
        blobs: run.blobs,
        omitted: omit.iter().copied().collect(),
        attempts: run.attempts,
        wall_ms,
    }
}

impl Run<'_> {
    /// The actor's next decision: the controller's, when the arm delegates and it has
    /// one; else the model's, within the turn limit (which counts model requests).
    async fn ask(&mut self) -> Step {
        if self.spec.arm.actor.delegates() {
            let steps: Vec<controller::Step<'_>> = self
                .executed
                .iter()
                .zip(&self.shown)
                .map(|(call, shown)| controller::Step {
                    by: match call.by {
                        Issuer::Model => controller::Issuer::Model,
                        Issuer::Controller => controller::Issuer::Controller,
                    },
                    tool: &call.tool,
                    observation: shown,
                })
                .collect();
            match controller::next(&self.request.tools, &steps) {
                Decision::Call { tool, arguments } => return self.delegate(tool, arguments),
                Decision::Halt(reason) => {
                    self.transcript.controller_halt = Some(reason);
                    return Step::Stop(StopReason::ControllerHalt);
                }
                Decision::AskModel => {}
            }
        }
        if self.trace.turns.len() as u32 >= self.spec.variant.turn_limit {
            return Step::Stop(StopReason::TurnLimit);
        }
        self.ask_model().await
    }

    /// Records the request and sends it to the configuration's provider.
    async fn ask_model(&mut self) -> Step {
        let route = Route {
            provider: self.provider,
            routes: self.routes,
            config: self.spec.config,
            completion_cap: self.spec.completion_cap,
        };
        let exchange = exchange::send(
            route,
            &self.request,
            &self.tools_ref,
            &mut self.transcript,
            &mut self.blobs,
            &mut self.attempts,
        )
        .await;
        match exchange {
            Exchange::Answered(sent) => {
                let turn = self.turn(&sent.response, sent.request_ref, sent.wall_ms);
                Step::Read(Box::new((sent.response, turn)))
            }
            Exchange::Failed { sent, infra } => {
                if let Some(sent) = sent {
                    let turn = self.turn(&sent.response, sent.request_ref, sent.wall_ms);
                    self.trace.turns.push(turn);
                }
                self.infra = Some(infra);
                Step::Stop(StopReason::InfraFailure)
            }
        }
    }

    fn turn(&self, response: &ChatResponse, request_ref: String, wall_ms: u64) -> Turn {
        Turn {
            request: RequestRecord {
                visible_tools: self.request.tools.iter().map(|t| t.name.clone()).collect(),
                body_ref: Some(request_ref),
            },
            response: response_record(response, wall_ms),
            executed: Vec::new(),
        }
    }

    /// The contract on a response with valid usage.
    fn read(&mut self, response: ChatResponse, turn: Turn) -> Step {
        if let Some(usage) = response.usage {
            self.tokens = self
                .tokens
                .saturating_add(usage.input_tokens)
                .saturating_add(usage.output_tokens);
        }
        if let Some(stop) =
            exchange::contract_stop(&response, self.tokens, self.spec.episode_budget)
        {
            self.trace.turns.push(turn);
            return Step::Stop(stop);
        }
        if let Some(call) = response.tool_calls.first().cloned() {
            return Step::Execute(Box::new((response, call, turn)));
        }
        self.trace.turns.push(turn);
        match response.text.filter(|t| !t.trim().is_empty()) {
            Some(answer) => {
                self.trace.final_answer = Some(answer);
                Step::Stop(StopReason::Answer)
            }
            None => {
                self.request.messages.push(Message::Assistant {
                    content: None,
                    tool_calls: Vec::new(),
                });
                self.request.messages.push(Message::User {
                    content: self.nudge.to_string(),
                });
                Step::Ask
            }
        }
    }

    /// The call limit, then the model's call.
    fn execute(&mut self, response: ChatResponse, call: ToolCall, turn: Turn) -> Step {
        self.trace.turns.push(turn);
        if self.executed.len() as u32 >= self.spec.variant.call_limit {
            return Step::Stop(StopReason::CallLimit);
        }
        self.request.messages.push(Message::Assistant {
            content: response.text,
            tool_calls: vec![call.clone()],
        });
        self.run_call(call, Issuer::Model)
    }

    /// The call limit, then a call the controller issues, shown to the model as an
    /// assistant call of its own with its result (so the model reads the records).
    fn delegate(&mut self, tool: String, arguments: String) -> Step {
        if self.executed.len() as u32 >= self.spec.variant.call_limit {
            return Step::Stop(StopReason::CallLimit);
        }
        let call = ToolCall {
            id: format!("controller-{}", self.executed.len()),
            name: tool,
            arguments,
        };
        self.transcript.controller_calls.push(call.id.clone());
        self.request.messages.push(Message::Assistant {
            content: None,
            tool_calls: vec![call.clone()],
        });
        self.run_call(call, Issuer::Controller)
    }

    /// The call in the sandbox, recorded under the last turn; the delivery, the menu
    /// hook, the infeasibility stop.
    fn run_call(&mut self, call: ToolCall, by: Issuer) -> Step {
        let variant = self.spec.variant;
        let result = self.sandbox.execute(&call.name, &call.arguments);
        let done = ExecutedCall {
            call_id: call.id.clone(),
            by,
            tool: call.name.clone(),
            arguments: call.arguments,
            observation: result.observation.clone(),
        };
        if let Some(turn) = self.trace.turns.last_mut() {
            turn.executed.push(done.clone());
        }
        self.executed.push(done);
        let shown = result.delivered.unwrap_or(result.observation);
        self.shown.push(shown.clone());
        self.request.messages.push(Message::Tool {
            call_id: call.id,
            name: call.name.clone(),
            content: shown,
        });
        if let Some(visible) = self.menu.after_call(&call.name) {
            self.request.tools = visible.to_vec();
            self.tools_ref = transcript::put_tools(visible, &mut self.blobs);
        }
        let refs: Vec<&ExecutedCall> = self.executed.iter().collect();
        let left = variant
            .call_limit
            .saturating_sub(self.executed.len() as u32) as usize;
        if infeasible(variant, &refs, self.sandbox.changes(), left).is_some() {
            return Step::Stop(StopReason::Infeasible);
        }
        Step::Ask
    }
}
