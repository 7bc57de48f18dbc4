//! The conversation as upstream's roles write it into the `SANDBOX` table.
//!
//! Every message is one row with the next `sandbox_message_index`; `conversation_active`
//! is carried over from the message before unless a tool changed it. The shapes, from
//! upstream's `Message`, `OpenAIAPIAgent`, `OpenAIAPIUser` and `ExecutionEnvironment`
//! (columns not named are null):
//!
//! - a user's message to the agent: `sender USER`, `recipient AGENT`, `content`,
//!   `visible_to [USER, AGENT]`;
//! - an agent's message to the user: `sender AGENT`, `recipient USER`, `content`,
//!   `visible_to [AGENT, USER]`;
//! - an agent's tool call, one row per call of a (parallel) request: `sender AGENT`,
//!   `recipient EXECUTION_ENVIRONMENT`, `openai_tool_call_id` and
//!   `openai_function_name` from the call, `visible_to [AGENT, EXECUTION_ENVIRONMENT]`,
//!   and as `content` the Python code upstream runs:
//!   `{id}_parameters = {repr(arguments)}\n{id}_response = {tool}(**{id}_parameters)\nprint(repr({id}_response))`;
//! - the environment's answer to each call, after all calls of the request: `sender
//!   EXECUTION_ENVIRONMENT`, `recipient AGENT`, the call's `openai_tool_call_id` and
//!   `openai_function_name`, `visible_to [EXECUTION_ENVIRONMENT, AGENT]`, and either
//!   `content` = `repr(result)` with `tool_trace` = one string,
//!   `json.dumps({"tool_name", "arguments" (those passed), "result"})`, or, when the
//!   tool raised, `content` = `tool_call_exception` = the exception's line
//!   (`PermissionError: Location service is not enabled.`) and no trace;
//! - the user ending the conversation: `sender USER`, `recipient
//!   EXECUTION_ENVIRONMENT`, the code calling `end_conversation` (no call id or name
//!   stored), `visible_to [USER, EXECUTION_ENVIRONMENT]`; `end_conversation` sets that
//!   row's `conversation_active` false, and the answer (`EXECUTION_ENVIRONMENT` →
//!   `USER`, `content "None"`, its trace) carries it over.
//!
//! Parallel calls are executed as upstream's environment does: in every order
//! (`itertools.permutations`, lexicographic). If every order succeeds, the world and the
//! answers are those of the order requested; at the first order in which a call fails,
//! that order's world and answers (in that order) are kept. Upstream collects the traces
//! on the last call's row and then clears them; that leaves a headguard row at its
//! index, which is written here too, so saved tables match.
//!
//! Never: decides whether the agent may answer or when the episode ends; the caller
//! runs the roles and passes the allow list.

use serde_json::{json, Map, Value};

use crate::clock::Clock;
use crate::context::{Context, ContextError, Namespace, Row};
use crate::py;
use crate::tools::{self, ToolError};

/// A tool call as a model made it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The call's id (OpenAI's `tool_call.id`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The JSON object of keyword arguments.
    pub arguments: Value,
}

/// What one call answered, in the order the answers were written.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// Its value, or its refusal.
    pub result: Result<Value, ToolError>,
}

/// Why nothing was recorded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecordError {
    /// The agent called a tool it is not offered (upstream's agent raises `KeyError`
    /// before writing anything, and the episode stops).
    #[error("agent tool call {tool:?} is not a known allowed tool")]
    NotAllowed {
        /// The tool.
        tool: String,
    },
    /// The world refused a row.
    #[error(transparent)]
    Context(#[from] ContextError),
}

fn message(sender: &str, recipient: &str, content: &str) -> Row {
    let mut row = Row::new();
    row.insert("sender".into(), Value::from(sender));
    row.insert("recipient".into(), Value::from(recipient));
    row.insert("content".into(), Value::from(content));
    row.insert("visible_to".into(), json!([sender, recipient]));
    row
}

/// Records a user's message to the agent.
pub fn user_to_agent(ctx: &mut Context, content: &str) -> Result<(), RecordError> {
    ctx.add_to_database(Namespace::Sandbox, vec![message("USER", "AGENT", content)])?;
    Ok(())
}

/// Records an agent's message to the user.
pub fn agent_to_user(ctx: &mut Context, content: &str) -> Result<(), RecordError> {
    ctx.add_to_database(Namespace::Sandbox, vec![message("AGENT", "USER", content)])?;
    Ok(())
}

/// The Python code upstream writes for a call.
pub fn call_code(call: &ToolCall) -> String {
    let order = tools::param_order(&call.name);
    let id = &call.id;
    format!(
        "{id}_parameters = {}\n{id}_response = {}(**{id}_parameters)\nprint(repr({id}_response))",
        py::repr(&call.arguments, &order),
        call.name
    )
}

/// upstream's tool trace of a successful call.
pub fn tool_trace(call: &ToolCall, result: &Value) -> String {
    let mut order = vec!["tool_name", "arguments", "result"];
    order.extend(tools::param_order(&call.name));
    order.extend(tools::result_order(&call.name));
    let arguments = match &call.arguments {
        Value::Object(m) => Value::Object(m.clone()),
        _ => Value::Object(Map::new()),
    };
    let trace = json!({"tool_name": call.name, "arguments": arguments, "result": result});
    py::dumps(&trace, &order)
}

/// Runs calls in one order on `ctx`.
fn run_in_order(
    ctx: &mut Context,
    clock: Clock,
    calls: &[ToolCall],
    order: &[usize],
) -> Vec<(usize, Outcome)> {
    order
        .iter()
        .map(|&i| {
            let c = &calls[i];
            let result = tools::execute(ctx, clock, &c.name, &c.arguments);
            let outcome = Outcome {
                call_id: c.id.clone(),
                name: c.name.clone(),
                result,
            };
            (i, outcome)
        })
        .collect()
}

/// The next permutation in lexicographic order, or `false` after the last.
fn next_permutation(p: &mut [usize]) -> bool {
    let Some(i) = p.windows(2).rposition(|w| w[0] < w[1]) else {
        return false;
    };
    let Some(j) = p.iter().rposition(|&x| x > p[i]) else {
        return false;
    };
    p.swap(i, j);
    p[i + 1..].reverse();
    true
}

/// upstream's `respond_to_messages_set_all_order_permutations`: each outcome with the
/// index of its call.
fn execute_all_orders(
    ctx: &mut Context,
    clock: Clock,
    calls: &[ToolCall],
) -> Vec<(usize, Outcome)> {
    let mut order: Vec<usize> = (0..calls.len()).collect();
    if calls.len() <= 1 {
        return run_in_order(ctx, clock, calls, &order);
    }
    let original = ctx.clone();
    let mut requested: Option<(Context, Vec<(usize, Outcome)>)> = None;
    loop {
        let mut world = original.clone();
        let outcomes = run_in_order(&mut world, clock, calls, &order);
        if outcomes.iter().any(|(_, o)| o.result.is_err()) {
            *ctx = world;
            return outcomes;
        }
        if requested.is_none() {
            requested = Some((world, outcomes));
        }
        if !next_permutation(&mut order) {
            break;
        }
    }
    match requested {
        Some((world, outcomes)) => {
            *ctx = world;
            outcomes
        }
        None => Vec::new(),
    }
}

fn answer(from: &str, to: &str, call: &ToolCall, outcome: &Outcome, with_ids: bool) -> Row {
    let mut row = Row::new();
    row.insert("sender".into(), Value::from(from));
    row.insert("recipient".into(), Value::from(to));
    row.insert("visible_to".into(), json!([from, to]));
    if with_ids {
        row.insert(
            "openai_tool_call_id".into(),
            Value::from(outcome.call_id.as_str()),
        );
        row.insert(
            "openai_function_name".into(),
            Value::from(outcome.name.as_str()),
        );
    }
    match &outcome.result {
        Ok(value) => {
            let order = tools::result_order(&outcome.name);
            row.insert("content".into(), Value::from(py::repr(value, order)));
            row.insert("tool_trace".into(), json!([tool_trace(call, value)]));
        }
        Err(e) => {
            let line = e.to_string();
            row.insert("content".into(), Value::from(line.as_str()));
            row.insert("tool_call_exception".into(), Value::from(line));
        }
    }
    row
}

/// Clears the traces upstream gathers on the last call's row: the row is rewritten in
/// place, which leaves a headguard at its index.
fn clear_gathered_traces(ctx: &mut Context) -> Result<(), ContextError> {
    let mut last = ctx.get_database(Namespace::Sandbox, None, false)?;
    for row in &mut last {
        row.insert("tool_trace".into(), Value::Null);
    }
    ctx.update_database(Namespace::Sandbox, last)
}

fn record_calls(
    ctx: &mut Context,
    clock: Clock,
    calls: &[ToolCall],
    caller: &str,
    with_ids: bool,
) -> Result<Vec<Outcome>, RecordError> {
    let rows: Vec<Row> = calls
        .iter()
        .map(|c| {
            let mut row = message(caller, "EXECUTION_ENVIRONMENT", &call_code(c));
            if with_ids {
                row.insert("openai_tool_call_id".into(), Value::from(c.id.as_str()));
                row.insert("openai_function_name".into(), Value::from(c.name.as_str()));
            }
            row
        })
        .collect();
    ctx.add_to_database(Namespace::Sandbox, rows)?;
    let outcomes = execute_all_orders(ctx, clock, calls);
    if outcomes.iter().any(|(_, o)| o.result.is_ok()) {
        clear_gathered_traces(ctx)?;
    }
    let answers: Vec<Row> = outcomes
        .iter()
        .map(|(i, o)| answer("EXECUTION_ENVIRONMENT", caller, &calls[*i], o, with_ids))
        .collect();
    ctx.add_to_database(Namespace::Sandbox, answers)?;
    Ok(outcomes.into_iter().map(|(_, o)| o).collect())
}

/// Records an agent's tool calls (one request, perhaps parallel), runs them, and
/// records the environment's answers. A call to a tool outside `allow_list`, or to one
/// the agent is never offered (`end_conversation`), records nothing.
pub fn agent_tool_calls(
    ctx: &mut Context,
    clock: Clock,
    allow_list: &[String],
    calls: &[ToolCall],
) -> Result<Vec<Outcome>, RecordError> {
    if let Some(c) = calls
        .iter()
        .find(|c| c.name == "end_conversation" || !allow_list.contains(&c.name))
    {
        return Err(RecordError::NotAllowed {
            tool: c.name.clone(),
        });
    }
    record_calls(ctx, clock, calls, "AGENT", true)
}

/// Records the user ending the conversation through `end_conversation` (`call_id` is the
/// id of the user model's call, which only appears in the code).
pub fn user_ends_conversation(
    ctx: &mut Context,
    clock: Clock,
    call_id: &str,
) -> Result<Outcome, RecordError> {
    let call = ToolCall {
        id: call_id.into(),
        name: "end_conversation".into(),
        arguments: json!({}),
    };
    let mut outcomes = record_calls(ctx, clock, std::slice::from_ref(&call), "USER", false)?;
    Ok(outcomes.pop().unwrap_or(Outcome {
        call_id: call.id,
        name: call.name,
        result: Ok(Value::Null),
    }))
}

#[cfg(test)]
mod tests;
