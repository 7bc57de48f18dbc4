//! The effective turn count: upstream's `get_effective_turn_count`.
//!
//! Owns which messages count as turns: every message in the conversation except those
//! the system sends, those between the user and the execution environment (either way),
//! and the user simulator's few-shot examples (visible to the user alone). Polars decides
//! each condition with null as unknown and a filter drops unknown rows, so a message
//! without a sender, recipient or `visible_to` is not counted either. Never grades.

use serde_json::Value;

use crate::context::{Context, Namespace, Row};

use super::error::EvaluationError;

fn text<'a>(row: &'a Row, column: &str) -> Option<&'a str> {
    row.get(column).and_then(Value::as_str)
}

fn and(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn or(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

/// Whether `row` counts, in three-valued logic (`None` is null, which a filter drops).
fn counts(row: &Row) -> Option<bool> {
    let sender = text(row, "sender");
    let recipient = text(row, "recipient");
    let is = |v: Option<&str>, want: &str| v.map(|x| x == want);
    let not_system = sender.map(|s| s != "SYSTEM");
    let with_environment = or(
        and(is(sender, "USER"), is(recipient, "EXECUTION_ENVIRONMENT")),
        and(is(sender, "EXECUTION_ENVIRONMENT"), is(recipient, "USER")),
    );
    let not_few_shot = row
        .get("visible_to")
        .and_then(Value::as_array)
        .map(|v| !(v.len() == 1 && v[0] == "USER"));
    and(and(not_system, with_environment.map(|w| !w)), not_few_shot)
}

/// How many messages of `ctx`'s conversation are turns.
pub fn effective_turn_count(ctx: &Context) -> Result<usize, EvaluationError> {
    let messages = ctx.get_database(Namespace::Sandbox, None, true)?;
    Ok(messages.iter().filter(|r| counts(r) == Some(true)).count())
}
