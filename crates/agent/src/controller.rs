//! The public-handoff controller: a deterministic program that follows the hand-offs
//! the returned records name and issues those calls itself, so that the model is asked
//! only for what the controller cannot do (the first step, and the final answer from
//! the collected records).
//!
//! Owns: reading the public trail — the calls executed so far, who issued each, and
//! the observation text as the agent was shown it, in any of the four record
//! encodings — and the next decision ([`next`]):
//!
//! - the last observation is a search result that the controller can follow (exactly
//!   one `current` record, whose kind has a read tool on the same connector among the
//!   visible tools): read that record;
//! - the last observation is a read record with a `next_handoff {connector, query}`:
//!   search that connector (its `<connector>_search` tool) for that query;
//! - a read record without a hand-off ends the chain: ask the model;
//! - anything else the model did (an error, a change of state, a search the controller
//!   cannot follow) is the model's to handle: ask the model;
//! - a hand-off the controller itself is following that is invalid (no connector or no
//!   query, an empty query, a connector without a visible search tool) or that leads
//!   nowhere (its search returns no current record, or several, or a record whose kind
//!   has no read tool): halt, with the reason. The harness ends the episode there; the
//!   controller never guesses a call.
//!
//! The connector's tools are found by name (`<connector>_search`,
//! `<connector>_read_<kind>`): the connector code is printed in every observation's
//! `source` block and in each hand-off, and the tool names are the public menu.
//!
//! It reads what a model is shown and nothing else — this crate cannot name a compiled
//! variant, its reference program, its answer or the grader (see the crate doc):
//!
//! ```compile_fail
//! // The controller's crate cannot reach the core: naming a compiled variant (which
//! // holds the reference program and the answer) is a compile error here.
//! use tbb_core::compile::Variant;
//! fn peek(_: &Variant) {}
//! ```
//!
//! while the same shape naming this crate compiles:
//!
//! ```
//! use tbb_agent::controller::Decision;
//! fn peek(_: &Decision) {}
//! ```
//!
//! This file is deliberately independent of the simulated agents' own reading of the
//! observations (`crate::sim`): the controller is a repair, not part of the panel.
//!
//! Never: reads the system prompt or the model's text, issues a call that no record or
//! search result names, retries, or acts before the model has made a call.

use serde_json::{Map, Value as Json};

use crate::ToolSchema;

/// Who issued an executed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issuer {
    /// The model, through its provider.
    Model,
    /// The controller.
    Controller,
}

/// One executed call as the agent side saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<'a> {
    /// Who issued it.
    pub by: Issuer,
    /// Tool name.
    pub tool: &'a str,
    /// The observation text as delivered to the agent.
    pub observation: &'a str,
}

/// The controller's next decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Issue this call: tool name and argument string.
    Call {
        /// Tool name.
        tool: String,
        /// JSON arguments.
        arguments: String,
    },
    /// Nothing to follow: ask the model.
    AskModel,
    /// A hand-off the controller follows is invalid or leads nowhere: stop, with why.
    Halt(String),
}

/// The next decision after `steps`, with `tools` visible (see the module doc).
pub fn next(tools: &[ToolSchema], steps: &[Step<'_>]) -> Decision {
    let Some(last) = steps.last() else {
        return Decision::AskModel;
    };
    let ours = last.by == Issuer::Controller;
    let Some(observation) = Observation::parse(last.observation) else {
        return if ours {
            Decision::Halt(format!(
                "the result of `{}` is not a record list",
                last.tool
            ))
        } else {
            Decision::AskModel
        };
    };
    let has = |name: &str| tools.iter().any(|t| t.name == name);
    match observation.operation.as_str() {
        "search" => {
            let current: Vec<&Record> = observation
                .records
                .iter()
                .filter(|r| r.status == "current")
                .collect();
            let read = match current.as_slice() {
                [only] => {
                    let tool = format!("{}_read_{}", observation.connector, only.kind);
                    has(&tool).then(|| (tool, only.id.clone()))
                }
                _ => None,
            };
            match (read, ours) {
                (Some((tool, id)), _) => Decision::Call {
                    tool,
                    arguments: arguments("id", &id),
                },
                (None, false) => Decision::AskModel,
                (None, true) => Decision::Halt(match current.len() {
                    0 => format!(
                        "the hand-off search `{}` found no current record",
                        last.tool
                    ),
                    1 => format!(
                        "no visible tool reads the `{}` record the hand-off found",
                        current[0].kind
                    ),
                    n => format!(
                        "the hand-off search `{}` found {n} current records",
                        last.tool
                    ),
                }),
            }
        }
        "read" => match observation.records.as_slice() {
            [record] => match &record.handoff {
                None => Decision::AskModel,
                Some(handoff) => match follow(handoff, &has) {
                    // A bad hand-off in a record the model read is the model's to handle.
                    Decision::Halt(_) if !ours => Decision::AskModel,
                    decision => decision,
                },
            },
            _ if ours => Decision::Halt(format!(
                "the read `{}` returned {} records",
                last.tool,
                observation.records.len()
            )),
            _ => Decision::AskModel,
        },
        _ => Decision::AskModel,
    }
}

/// The search a hand-off names, or why it cannot be followed.
fn follow(handoff: &Json, has: &dyn Fn(&str) -> bool) -> Decision {
    let text = |key: &str| handoff.get(key).and_then(Json::as_str);
    match (text("connector"), text("query")) {
        (Some(connector), Some(query))
            if !connector.trim().is_empty() && !query.trim().is_empty() =>
        {
            let tool = format!("{connector}_search");
            if has(&tool) {
                Decision::Call {
                    tool,
                    arguments: arguments("query", query),
                }
            } else {
                Decision::Halt(format!(
                    "the hand-off names connector `{connector}`, which has no visible search tool"
                ))
            }
        }
        _ => Decision::Halt(format!(
            "the hand-off {handoff} has no connector or no query"
        )),
    }
}

fn arguments(key: &str, value: &str) -> String {
    let mut m = Map::new();
    m.insert(key.into(), Json::String(value.into()));
    Json::Object(m).to_string()
}

/// A returned record as the controller needs it.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    id: String,
    kind: String,
    status: String,
    handoff: Option<Json>,
}

/// An observation of records, decoded from any of the four encodings.
#[derive(Debug, Clone, PartialEq)]
struct Observation {
    /// `search`, `read`, ...
    operation: String,
    /// The connector code of `source`.
    connector: String,
    records: Vec<Record>,
}

impl Observation {
    /// `None` when the text is not an observation of records (an error, a change).
    fn parse(text: &str) -> Option<Observation> {
        let json: Json = serde_json::from_str(text).ok()?;
        let operation = json.pointer("/tool/operation")?.as_str()?.to_string();
        let connector = json.pointer("/source/connector")?.as_str()?.to_string();
        let objects = json.get("objects")?.as_array()?;
        // Compact rows are arrays named by the field dictionary; the other encodings
        // are objects (the kind is `kind` in raw, `type` in typed and linked).
        let dictionary: Vec<&str> = json
            .get("field_dictionary")
            .and_then(Json::as_array)
            .map(|d| d.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        let records = objects
            .iter()
            .map(|o| match o {
                Json::Array(row) => {
                    let column = |name: &str| {
                        dictionary
                            .iter()
                            .position(|d| *d == name)
                            .and_then(|i| row.get(i))
                    };
                    record(
                        column("@id"),
                        column("@kind"),
                        column("@status"),
                        column("@next_handoff"),
                    )
                }
                Json::Object(m) => record(
                    m.get("id"),
                    m.get("kind").or_else(|| m.get("type")),
                    m.get("status"),
                    m.get("next_handoff"),
                ),
                _ => None,
            })
            .collect::<Option<Vec<Record>>>()?;
        Some(Observation {
            operation,
            connector,
            records,
        })
    }
}

fn record(
    id: Option<&Json>,
    kind: Option<&Json>,
    status: Option<&Json>,
    handoff: Option<&Json>,
) -> Option<Record> {
    Some(Record {
        id: id?.as_str()?.to_string(),
        kind: kind?.as_str()?.to_string(),
        status: status?.as_str()?.to_string(),
        handoff: handoff.filter(|h| !h.is_null()).cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: String::new(),
            parameters: json!({}).into(),
        }
    }

    fn menu() -> Vec<ToolSchema> {
        ["c1_search", "c1_read_ticket", "c1_read_hop", "c2_search"]
            .map(tool)
            .to_vec()
    }

    fn raw(operation: &str, objects: Json) -> String {
        json!({
            "objects": objects,
            "source": {"connector": "c1", "records": []},
            "tool": {"name": "c1_x", "operation": operation},
        })
        .to_string()
    }

    fn step(by: Issuer, observation: &str) -> Step<'_> {
        Step {
            by,
            tool: "c1_x",
            observation,
        }
    }

    fn call(tool: &str, key: &str, value: &str) -> Decision {
        Decision::Call {
            tool: tool.into(),
            arguments: json!({ key: value }).to_string(),
        }
    }

    #[test]
    fn the_model_makes_the_first_call() {
        assert_eq!(next(&menu(), &[]), Decision::AskModel);
    }

    #[test]
    fn a_search_with_one_current_record_is_read_and_a_handoff_is_searched() {
        let hits = raw(
            "search",
            json!([
                {"id": "r1", "kind": "ticket", "status": "superseded"},
                {"id": "r2", "kind": "ticket", "status": "current"},
            ]),
        );
        let by_model = [step(Issuer::Model, &hits)];
        assert_eq!(next(&menu(), &by_model), call("c1_read_ticket", "id", "r2"));
        let read = raw(
            "read",
            json!([{"id": "r2", "kind": "ticket", "status": "current",
                    "next_handoff": {"connector": "c2", "query": "Q-9"}}]),
        );
        let steps = [step(Issuer::Model, &hits), step(Issuer::Controller, &read)];
        assert_eq!(next(&menu(), &steps), call("c2_search", "query", "Q-9"));
        // The end of the chain: the model answers.
        let last = raw(
            "read",
            json!([{"id": "r3", "kind": "ticket", "status": "current"}]),
        );
        assert_eq!(
            next(&menu(), &[step(Issuer::Controller, &last)]),
            Decision::AskModel
        );
    }

    #[test]
    fn compact_and_typed_records_are_read_the_same() {
        let compact = json!({
            "field_dictionary": ["@id", "@kind", "@version", "@status", "@updated_on", "x",
                                 "@next_handoff"],
            "objects": [["r2", "ticket", 1, "current", "2026-01-01", 3,
                         {"connector": "c2", "query": "Q-9"}]],
            "source": {"connector": "c1"},
            "tool": {"operation": "read"},
        })
        .to_string();
        let typed = json!({
            "objects": [{"id": "r2", "type": "ticket", "status": "current",
                         "next_handoff": {"connector": "c2", "query": "Q-9"}}],
            "source": {"connector": "c1"},
            "tool": {"operation": "read"},
        })
        .to_string();
        for text in [compact, typed] {
            assert_eq!(
                next(&menu(), &[step(Issuer::Model, &text)]),
                call("c2_search", "query", "Q-9")
            );
        }
    }

    #[test]
    fn an_invalid_or_empty_handoff_halts_and_never_guesses() {
        let read = |handoff: Json| {
            raw(
                "read",
                json!([{"id": "r2", "kind": "ticket", "status": "current",
                        "next_handoff": handoff}]),
            )
        };
        for bad in [
            json!({"connector": "c2", "query": ""}),
            json!({"connector": "c2"}),
            json!({"query": "Q-9"}),
            json!({"connector": "c9", "query": "Q-9"}),
            json!({}),
            json!("Q-9"),
        ] {
            let text = read(bad.clone());
            let d = next(&menu(), &[step(Issuer::Controller, &text)]);
            assert!(matches!(d, Decision::Halt(_)), "{bad}: {d:?}");
            // In a record the model read itself, it is the model's to handle.
            let d = next(&menu(), &[step(Issuer::Model, &text)]);
            assert_eq!(d, Decision::AskModel, "{bad}");
        }
        // A hand-off search that finds nothing, or two current records, halts too.
        for objects in [
            json!([]),
            json!([{"id": "a", "kind": "ticket", "status": "current"},
                   {"id": "b", "kind": "ticket", "status": "current"}]),
            json!([{"id": "a", "kind": "invoice", "status": "current"}]),
        ] {
            let text = raw("search", objects.clone());
            let d = next(&menu(), &[step(Issuer::Controller, &text)]);
            assert!(matches!(d, Decision::Halt(_)), "{objects}: {d:?}");
            // The same result of the model's own search is the model's to handle.
            let d = next(&menu(), &[step(Issuer::Model, &text)]);
            assert_eq!(d, Decision::AskModel, "{objects}");
        }
    }

    #[test]
    fn errors_and_changes_are_left_to_the_model() {
        for text in [
            json!({"error": {"code": "not_found"}}).to_string(),
            json!({"result": {"status": "applied"}, "tool": {"operation": "update"}}).to_string(),
            "not json".to_string(),
        ] {
            assert_eq!(
                next(&menu(), &[step(Issuer::Model, &text)]),
                Decision::AskModel
            );
        }
    }
}
