//! The built-in simulated agents (`provider = "sim"`): in-process agents whose behaviour
//! is a set of mechanisms with parameters, so the whole pipeline runs offline and
//! deterministically.
//!
//! # The rule that keeps them honest
//!
//! A simulated agent sees exactly what a model sees — the [`ChatRequest`]: messages, tool
//! schemas, sampling settings and the completion cap — and acts only through the
//! [`Provider`] trait. It reads the route, start query, requested facts, decision
//! policy, state-change instruction and answer schema from the user message text
//! ([`parse`]), the tools from their public names and descriptions ([`menu`]), and
//! records from tool results by their JSON structure ([`observe`]). Nothing in this
//! module tree can name the compiler, the sandbox, the grader or the harness (this crate
//! does not depend on the crates that hold them; `tests/it/wall.rs` checks the crate
//! graph). Every input of a mechanism is something the request shows, and no parameter
//! is keyed on a pressure level or a prompt file: the four record encodings differ in
//! effect only through what they do to the text (how far a value stands from its name,
//! how many tokens surround it), and the prompts only through what they ask, read by
//! meaning ([`instructions`]).
//!
//! A request whose first user message is not tbb's structured request (`parse` fails)
//! is a task in plain words, read by [`natural`] from the same public text: every user
//! message, the schemas' names, descriptions and parameters, and results written as
//! Python values or exception lines. It draws nothing from the request's stream, so
//! tbb's own requests meet exactly the draws they met before.
//!
//! # Mechanisms (parameters in [`params::Params`])
//!
//! - **Reasoning spend.** Each request spends
//!   `(reasoning_base + reasoning_per_schema × visible schemas [× menu_rescan once a call
//!   has succeeded] + reasoning_per_ktok × prompt/1000) × lognormal(reasoning_sigma)`
//!   reasoning tokens (× `1 + reasoning_per_check × checks` when the system prompt asks
//!   for checks before each call;
//!   × `spike_factor` with chance `reasoning_spike` plus `spike_per_100_schemas` per
//!   100 schemas scanned, a deliberation spike that only a much larger cap holds). If
//!   they count against the cap and reach it, the response is cut with no text and no
//!   call (reasoning-only truncation); if reasoning plus what it writes passes the cap,
//!   the call's arguments or the text are cut where the cap falls. Finish `length`
//!   either way. A `narration` chance writes a short visible note before a call, so a
//!   cut can fall inside the note or inside the call. Usage reports reasoning
//!   (`Reported`) or hides it in the output count (`Unknown`) per `reports_reasoning`.
//! - **Route choice.** Tools whose declared coordinates equal the request's route are
//!   the route; a search no hand-off names may go instead to a near-miss connector
//!   (two shared coordinates; `near_miss_confusion` each), a look-alike (same
//!   collection; `lookalike_confusion` each) or, diluted by menu length, anything else
//!   (`menu_dilution` per 100 schemas). Once an error or an empty search has occurred,
//!   the agent checks coordinates and is no longer confused.
//! - **Hand-offs.** While facts are missing it follows `next_handoff`, hop `h` with
//!   probability `handoff_reliability × hop_decay^(h−1)` (drawn once per hop, so the
//!   difficulty persists across requests); a failure answers at once with guesses
//!   (`premature_share`) or repeats the previous search, breaking out of that loop with
//!   `loop_escape` per request (wasted calls: call-limit and infeasibility endings).
//! - **Versions.** It reads the `current` hit, except with `stale_confusion`
//!   (reduced by `hop_care` per hop followed); after a superseded read leaves facts
//!   missing it reads the current version with `stale_recovery`, else answers.
//! - **Reading.** Each requested fact is misread with chance `misread`, plus
//!   `misread_per_position` per position between the value and its name (0 where the
//!   name stands beside it; its column in a compact row, whose names are listed once in
//!   `field_dictionary`) and `misread_per_ktok_view` per 1,000 tokens of the
//!   observation; growing with the requested facts crowded in one record (`crowding`)
//!   and with the context (`context_misread` per 10k tokens), shrinking per hop followed
//!   (`hop_care`) and when the system prompt explains where the observed layout keeps
//!   its values (`guide_relief`). A misread in a row takes the neighbouring column (the
//!   count slipped by one); among named fields, a neighbouring field. A value whose JSON
//!   type does not fit the answer schema is noticed with `type_check` and the record
//!   read again.
//! - **Stalls.** An empty response with chance `stall + stall_per_10k × prompt/10k`.
//! - **Contract breaks.** Two tool calls in one response (`double_call`); an argument
//!   string that is not JSON (`invalid_json`).
//! - **Decision and writes.** The parsed policy decides on the facts in hand; the
//!   requested state change is made once when its condition holds; an overeager writer
//!   (`overeager_write`) makes an unrequested change before answering.
//! - **Answer.** Raw JSON in the schema's key order, with the ids of the records that
//!   supplied facts as `sources`; `format_slip` wraps it in a fence or prose.
//! - **Checks before each call.** A system prompt that asks for `n` checks before each
//!   call ([`instructions`]) multiplies the reasoning spend by `1 + reasoning_per_check ×
//!   n` and removes `1 − (1 − care_per_check)^n` of hand-off and stale errors.
//!
//! - **Natural-language tasks** ([`natural`]). The tool is chosen by lexical overlap
//!   between the user's words (and what they bring to mind, a small fixed vocabulary)
//!   and each schema's name, description and parameter names; a tool scoring within a
//!   fifth of the best is a look-alike pulling with `lookalike_confusion`, and a long
//!   menu dilutes attention towards any other tool with `menu_dilution` per 100
//!   schemas (drawn once per task). Arguments are filled by name and type from the
//!   user's words and earlier results; a missing value comes from a reading tool whose
//!   schema mentions it (a contact search for a phone number; the time tools for a
//!   timestamp), else the agent asks the user. An exception naming a setting sends it,
//!   with `recover_dependency` (drawn once per setting), to the tool that changes the
//!   setting and back to the failed call; otherwise it reports the error. It ends with
//!   a reply carrying the result, or says no tool can help when none is relevant. The
//!   reasoning spend, stalls, narration, contract breaks and the cap act as above (it
//!   counts as located once a call has returned something other than an exception).
//!
//! Workflow sensitivity of either sign comes out of these: `hop_decay` and looping
//! hand-offs cost more on longer chains; `crowding` and `hop_care` make a chain that
//! spreads the facts over several records easier than one crowded record.
//!
//! # Determinism and cost
//!
//! Each response is drawn from ChaCha streams ([`draws`]): the task's, seeded by the
//! configuration's name (not its parameters: a recalibration meets the same random
//! numbers) and the task it was given, and the run's, seeded by the name and the
//! sampling seed, a share `run_variance` of the values coming from the run's. A
//! request's draws are named by its turn, so the same request gives the same response.
//! How a record was perceived is named by the result's place in the conversation, so
//! the agent — stateless across calls, the messages are its state — re-derives the same
//! perception on every later request; a hand-off's disposition is named by its query.
//! No seed hashes the conversation beyond its first user message: a request costs a few
//! short hashes, not every message again. Token counts come from the real tokenizer
//! ([`crate::tokens`]): input = system, user and every message plus each schema's JSON;
//! output = what it writes plus the reasoning it spent. Each schema is read and counted once per process
//! ([`menu::info`]), each message once ([`tokens::count`], memoised by XXH3-128).

/// Version of the simulated agents' answers to tbb's own structured requests, part of
/// the key of every episode they run: bump it whenever a change to this module changes
/// any such response (including the mechanisms the natural-language path shares).
pub const CODE_VERSION: &str = "sim/4";

/// Version of the answers to plain-words requests ([`natural`]), part of the key of
/// every ToolSandbox episode beside [`CODE_VERSION`]: bump it whenever a change changes
/// any such response. Kept apart so that the natural-language path can change without
/// invalidating a single cached episode of tbb's own families, whose responses it never
/// touches (their draws and texts are those of `sim/4`, checked byte for byte).
pub const NATURAL_CODE_VERSION: &str = "sim-natural/1";

pub mod agent;
pub mod draws;
pub mod instructions;
pub mod mechanisms;
pub mod menu;
pub mod natural;
pub mod observe;
pub mod params;
pub mod parse;

use rand::RngExt;
use serde_json::json;

use crate::{
    tokens, BoxFuture, ChatRequest, ChatResponse, Finish, Message, Provider, ProviderError,
    ReasoningSource, ToolCall, Usage,
};
use agent::{Action, State};
use draws::{Draws, Salts};
use instructions::Instructions;
use mechanisms::SpendInputs;
use menu::Menu;
pub use params::Params;

/// One simulated configuration.
#[derive(Debug, Clone)]
pub struct SimAgent {
    name: String,
    params: Params,
    salt: [u8; 32],
}

impl SimAgent {
    /// Builds an agent from its parameters (a configuration's `[configuration.sim]`
    /// table, read by the provider crate; tests and benchmarks build them directly).
    pub fn with_params(name: &str, params: Params) -> SimAgent {
        // The name alone seeds the agent's draws, not its parameters: a recalibrated
        // configuration meets the same random numbers (common random numbers), so a
        // change in its results is the change of its mechanism, not a reshuffle.
        let mut h = blake3::Hasher::new();
        h.update(b"tbb sim agent/2\0");
        h.update(name.as_bytes());
        SimAgent {
            name: name.to_string(),
            params,
            salt: *h.finalize().as_bytes(),
        }
    }

    /// The mechanism parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Answers one request (synchronously; [`Provider::chat`] wraps this).
    pub fn respond(&self, request: &ChatRequest) -> ChatResponse {
        let p = &self.params;
        let menu = Menu::new(&request.tools);
        let message_tokens: Vec<u64> = request.messages.iter().map(tokens::message).collect();
        let prompt_tokens = message_tokens.iter().sum::<u64>() + menu.tokens();
        // The episode's draws: the task's and the run's ([`draws`]), so repeats differ
        // where the run redraws and the requests of one episode agree.
        let salts = Salts::of(&self.salt, request, p.run_variance);
        let turn = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count() as u64;
        let mut rng = salts.draws(&[b"request", request.model.as_bytes(), &turn.to_le_bytes()]);
        let conversation = agent::read_conversation(request, &message_tokens, menu.tokens());
        let asked = Instructions::read(&conversation.system);
        let parsed = conversation.request_text.map(parse::parse);

        let state = match &parsed {
            Some(Ok(req)) => Some(State::build(req, &conversation, &menu, p, asked, salts)),
            _ => None,
        };
        // A request that is not tbb's structured one is a task in plain words
        // ([`natural`]); it draws nothing from the request's stream, so tbb's own requests
        // meet every draw they met before.
        let task = match &parsed {
            Some(Err(_)) => Some(natural::Task::read(request)),
            _ => None,
        };
        let located = state.as_ref().is_some_and(|s| s.located)
            || task.as_ref().is_some_and(natural::Task::located);
        let calls_written = conversation.calls_written;
        let reasoning = mechanisms::reasoning_tokens(
            p,
            SpendInputs {
                schemas: request.tools.len(),
                prompt_tokens,
                located,
                asked,
            },
            &mut rng,
        );
        let stall_roll: f64 = rng.random();
        let narrate_roll: f64 = rng.random();
        let mut natural_note = String::new();
        let action = if stall_roll < mechanisms::stall_probability(p, prompt_tokens) {
            None
        } else {
            Some(match (&parsed, &state, &task) {
                (Some(Ok(_)), Some(state), _) => state.plan(&menu, p, &mut rng),
                (Some(Err(_)), _, Some(task)) => {
                    let (action, note) = natural::act(request, task, p, salts);
                    natural_note = note;
                    action
                }
                _ => Action::Answer {
                    text: "There is no task in this conversation.".into(),
                    why: "no user message",
                },
            })
        };
        let note = match (&action, &state) {
            (Some(Action::Call { tool, why, .. }), Some(state)) if narrate_roll < p.narration => {
                Some(state.note(tool, why))
            }
            (Some(Action::Call { .. }), None) if narrate_roll < p.narration => Some(natural_note),
            _ => None,
        };
        let draft = Draft {
            action,
            note,
            reasoning,
            prompt_tokens,
            calls_written,
        };
        self.compose(request, draft, &mut rng)
    }

    /// Writes the response: contract breaks, the cap, usage and the raw record.
    fn compose(&self, request: &ChatRequest, draft: Draft, rng: &mut Draws) -> ChatResponse {
        let p = &self.params;
        let Draft {
            action,
            note,
            reasoning,
            prompt_tokens,
            calls_written,
        } = draft;
        let (bad_json_roll, double_roll): (f64, f64) = (rng.random(), rng.random());
        let mut text: Option<String> = None;
        let mut calls: Vec<ToolCall> = Vec::new();
        let (kind, why) = match &action {
            None => ("stall", "empty response"),
            Some(Action::Answer { text: t, why }) => {
                text = Some(t.clone());
                ("answer", *why)
            }
            Some(Action::Call { tool, args, why }) => {
                text = note;
                let mut arguments = args.to_string();
                if bad_json_roll < p.invalid_json {
                    arguments.pop(); // drop the closing brace
                }
                calls.push(ToolCall {
                    id: format!("call_{}", calls_written + 1),
                    name: tool.clone(),
                    arguments: arguments.clone(),
                });
                if double_roll < p.double_call {
                    calls.push(ToolCall {
                        id: format!("call_{}", calls_written + 2),
                        name: tool.clone(),
                        arguments,
                    });
                }
                ("call", *why)
            }
        };
        let text_tokens = text.as_deref().map_or(0, tokens::count);
        let call_tokens: u64 = calls
            .iter()
            .map(|c| tokens::count(&c.name) + tokens::count(&c.arguments))
            .sum();
        let visible = text_tokens + call_tokens;
        let cap = u64::from(request.max_completion_tokens);
        let counted = if p.reasoning_counts_against_cap {
            reasoning
        } else {
            0
        };
        let mut reasoning_used = reasoning;
        let mut visible_used = visible;
        let mut cut = "none";
        if counted >= cap {
            reasoning_used = cap;
            visible_used = 0;
            text = None;
            calls.clear();
            cut = "reasoning";
        } else if counted + visible > cap {
            // The text comes first, then the call: the cap falls inside one of them.
            let keep = cap - counted;
            visible_used = keep;
            if keep < text_tokens || calls.is_empty() {
                if let Some(t) = &mut text {
                    *t = prefix(t, keep as f64 / text_tokens.max(1) as f64);
                }
                calls.clear();
                cut = "text";
            } else {
                let share = (keep - text_tokens) as f64 / call_tokens.max(1) as f64;
                calls.truncate(1);
                if let Some(c) = calls.first_mut() {
                    c.arguments = prefix(&c.arguments, share);
                }
                cut = "call";
            }
        }
        let finish = if cut != "none" {
            Finish::Length
        } else if !calls.is_empty() {
            Finish::ToolCalls
        } else {
            Finish::Stop
        };
        let finish_raw = match finish {
            Finish::Length => "length",
            Finish::ToolCalls => "tool_calls",
            _ => "stop",
        };
        let usage = Usage {
            input_tokens: prompt_tokens,
            cached_tokens: 0,
            output_tokens: reasoning_used + visible_used,
            reasoning_tokens: p.reports_reasoning.then_some(reasoning_used),
            reasoning_source: if p.reports_reasoning {
                ReasoningSource::Reported
            } else {
                ReasoningSource::Unknown
            },
        };
        let raw = json!({
            "object": "tbb.sim.response",
            "configuration": self.name,
            "model": request.model,
            "action": kind,
            "why": why,
            "reasoning_tokens": reasoning,
            "visible_tokens": visible,
            "cut": cut,
            "finish": finish_raw,
            "visible_schemas": request.tools.len(),
            "prompt_tokens": prompt_tokens,
        });
        ChatResponse {
            text,
            tool_calls: calls,
            finish,
            finish_raw: finish_raw.to_string(),
            usage: Some(usage),
            usage_error: None,
            violation: None,
            http_status: None,
            raw,
        }
    }
}

/// What the agent decided, before the cap and the contract have their say.
struct Draft {
    /// The move (`None`: a stall).
    action: Option<Action>,
    /// A visible note written before a call.
    note: Option<String>,
    /// Reasoning tokens spent.
    reasoning: u64,
    /// Prompt tokens of the request.
    prompt_tokens: u64,
    /// Tool calls already in the conversation (for fresh call ids).
    calls_written: usize,
}

/// The first `share` of a string, on a character boundary.
fn prefix(s: &str, share: f64) -> String {
    let mut end = ((s.len() as f64) * share.clamp(0.0, 1.0)).floor() as usize;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

impl Provider for SimAgent {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move { Ok(self.respond(request)) })
    }

    fn check<'a>(&'a self) -> BoxFuture<'a, Result<String, ProviderError>> {
        let name = self.name.clone();
        Box::pin(async move { Ok(format!("simulated agent {name}: nothing to reach")) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_respect_char_boundaries() {
        assert_eq!(prefix("héllo", 0.4), "h");
        assert_eq!(prefix("abcd", 0.5), "ab");
        assert_eq!(prefix("abcd", 2.0), "abcd");
    }
}
