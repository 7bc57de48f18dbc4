//! The natural-language path: how a simulated agent acts on a request that is not tbb's
//! structured request — a user asking in plain words (`Turn off cellular service`,
//! `Send a message to Bart saying: Hey what's up`) with tools described by OpenAI-format
//! schemas, results written as Python values or exception lines.
//!
//! The agent reads the conversation as a task ([`task`]): every user message (later
//! ones add facts and answer its questions), and the calls made so far with their
//! results (the evidence, [`pyrepr`]). It chooses the tool the task asks for by lexical
//! match ([`choose`], over the vocabulary of [`words`]), fills its parameters by name
//! and type ([`fill`], from the shapes of [`extract`] and the times of [`time`]), and
//! when a value is missing calls the tool that produces it, or asks ([`plan`]). An
//! exception that names a setting sends it to the tool that changes the setting, then
//! back to the call that failed. It ends its turn with a short reply that carries the
//! result ([`reply`]).
//!
//! Every chance is a parameter of [`Params`] (`lookalike_confusion` and
//! `menu_dilution` in tool choice, `recover_dependency` for settings) and every draw a
//! named stream of [`crate::sim::draws`], so the path is as deterministic as tbb's own.
//! The reasoning spend, stalls, contract breaks and the cap are the sim's, unchanged
//! ([`super::SimAgent::respond`]).
//!
//! Never: reads anything but the request — not a scenario, a milestone or a tool's code
//! (this crate cannot reach them); nothing here is keyed on a benchmark, a scenario or
//! a number of distraction tools: a longer menu acts only through the mechanisms that
//! read the menu's length.

pub mod choose;
pub mod extract;
pub mod fill;
pub mod plan;
pub mod pyrepr;
pub mod reply;
pub mod task;
pub mod time;
pub mod words;

#[cfg(test)]
mod tests;

use serde_json::Value as Json;

use super::agent::Action;
use super::draws::Salts;
use super::params::Params;
use crate::ChatRequest;
use plan::{Planner, Step};
pub use task::Task;

/// The agent's next move on a natural-language task, and the note it may write first.
pub fn act(request: &ChatRequest, task: &Task, params: &Params, salts: Salts) -> (Action, String) {
    let step = Planner::new(&request.tools, task, params, salts).next();
    match step {
        Step::Call(i, args, why) => {
            let tool = request.tools[i].name.clone();
            let note = format!("Next I will {why}, using {tool}.");
            (
                Action::Call {
                    tool,
                    args: Json::Object(args),
                    why,
                },
                note,
            )
        }
        Step::Ask(_, p) => (
            Action::Answer {
                text: reply::question(&p),
                why: "ask for a missing value",
            },
            String::new(),
        ),
        Step::Say(text, why) => (Action::Answer { text, why }, String::new()),
    }
}
