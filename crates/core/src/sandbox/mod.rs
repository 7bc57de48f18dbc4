//! The sandbox: executes one tool call against a variant's state and returns the
//! observation in the variant's encoding.
//!
//! Owns: the mutable state of an episode (edits, deletions, every state change in
//! order), argument checking, observations and their encodings ([`encoding`]).
//!
//! Semantics (identical in every variant; only the encoding differs):
//! - a tool not on the variant's menu is an `unknown_tool` error; arguments that are not
//!   a JSON object matching the tool's schema are an `invalid_arguments` error; neither
//!   changes state;
//! - `search {query}` lists the connector's records whose reference equals the query
//!   (current and superseded versions, without fields); no match is a normal, legal
//!   miss with an empty `objects` list;
//! - `read {id}` returns the full record if the id is a record of the tool's kind in the
//!   tool's connector, else a `not_found` error;
//! - write tools (`update`, `delete`, `pay`, `send`) change state and record the change;
//!   an update's `field` must be a lowercase identifier (else `invalid_arguments`);
//!   those that target a record need it to exist in the tool's connector (else
//!   `not_found`, no change). A write tool's kind describes its usual target but does
//!   not restrict it: at low workflow depth one record carries what deeper chains
//!   spread over several kinds, and the request names its target by the fact it holds.
//!
//! - every record observation is entered in the episode's ledger of shown values
//!   ([`links`]); the linked encoding links returned values to earlier equal ones.
//!
//! Never: grades, decides what is permitted, or reads anything but the variant.

pub mod arguments;
pub mod encoding;
pub mod links;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

use crate::compile::{Encoding, Record, Status, Tool, Variant};
use crate::family::Operation;
use encoding::{encode, tool_block, View};
use links::Shown;

/// A change of state made by a write tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateChange {
    /// Tool name.
    pub tool: String,
    /// Operation.
    pub op: Operation,
    /// Target record id, for tools that take one.
    pub target: Option<String>,
    /// All arguments as given.
    pub args: Map<String, Json>,
    /// Index of the call that made it, counting every call this sandbox executed. Not
    /// part of the observation the agent sees.
    #[serde(skip)]
    pub call: usize,
}

/// Error codes of error observations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The tool is not on the menu.
    UnknownTool,
    /// Arguments are not valid JSON or do not fit the schema.
    InvalidArguments,
    /// The id names no record this tool can reach.
    NotFound,
}

/// How a call went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// Returned records or applied a change.
    Ok,
    /// A search that found nothing.
    Miss,
    /// An error observation.
    Error(ErrorCode),
}

/// The result of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The observation text returned to the agent.
    pub observation: String,
    /// How it went.
    pub status: CallStatus,
    /// The state change it made, if any.
    pub change: Option<StateChange>,
    /// The records it returned (ids and whether they were read in full).
    pub returned: Vec<String>,
    /// The same records in the delivery encoding, when the sandbox delivers in one
    /// other than the cell's ([`Sandbox::delivering`]): what the agent is shown. The
    /// trace and the grader keep `observation`.
    pub delivered: Option<String>,
}

/// An episode's sandbox.
#[derive(Debug, Clone)]
pub struct Sandbox<'v> {
    variant: &'v Variant,
    edits: BTreeMap<String, BTreeMap<String, Json>>,
    deleted: BTreeSet<String>,
    changes: Vec<StateChange>,
    calls: usize,
    shown: Shown,
    delivery: Option<Encoding>,
}

impl<'v> Sandbox<'v> {
    /// A fresh sandbox over a variant.
    pub fn new(variant: &'v Variant) -> Sandbox<'v> {
        Sandbox {
            variant,
            edits: BTreeMap::new(),
            deleted: BTreeSet::new(),
            changes: Vec::new(),
            calls: 0,
            shown: Shown::default(),
            delivery: None,
        }
    }

    /// The same sandbox, also encoding every list of records in `d` for the agent
    /// (canonical delivery): each [`Outcome::delivered`] holds that text when `d` is
    /// not the cell's encoding. What the sandbox does, and every `observation`, is
    /// unchanged, so the grader's replay (with [`Sandbox::new`]) still matches.
    pub fn delivering(mut self, d: Encoding) -> Sandbox<'v> {
        self.delivery = Some(d);
        self
    }

    /// Every state change so far, in order.
    pub fn changes(&self) -> &[StateChange] {
        &self.changes
    }

    /// Executes one call. Never panics, whatever the input.
    pub fn execute(&mut self, tool_name: &str, raw_arguments: &str) -> Outcome {
        self.calls += 1;
        let Some(tool) = self.variant.tool(tool_name) else {
            return error(
                None,
                ErrorCode::UnknownTool,
                &format!("no tool named `{tool_name}` is available"),
            );
        };
        let args = match arguments::check(&tool.parameters, raw_arguments) {
            Ok(a) => a,
            Err(msg) => return error(Some(tool), ErrorCode::InvalidArguments, &msg),
        };
        let text = |k: &str| {
            args.get(k)
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match tool.op {
            Operation::Search => {
                let query = text("query");
                let views: Vec<View> = self
                    .variant
                    .store
                    .search(&tool.connector, &query)
                    .into_iter()
                    .filter(|r| !self.deleted.contains(&r.id))
                    .map(summary)
                    .collect();
                let status = if views.is_empty() {
                    CallStatus::Miss
                } else {
                    CallStatus::Ok
                };
                self.records(tool, &views, status)
            }
            Operation::Read => match self.reachable(tool, &text("id")) {
                Some(r) => {
                    let view = self.full(r);
                    self.records(tool, &[view], CallStatus::Ok)
                }
                None => not_found(tool, &text("id")),
            },
            Operation::Update | Operation::Delete | Operation::Pay | Operation::Send => {
                let field = text("field");
                if tool.op == Operation::Update && !crate::family::is_field_name(&field) {
                    return error(
                        Some(tool),
                        ErrorCode::InvalidArguments,
                        "argument `field` must be a field name: lowercase letters, digits and _",
                    );
                }
                let target = (tool.op != Operation::Send).then(|| text("id"));
                if let Some(id) = &target {
                    let exists = self.variant.store.by_id(id).is_some_and(|r| {
                        r.connector == tool.connector && !self.deleted.contains(id)
                    });
                    if !exists {
                        return not_found(tool, id);
                    }
                }
                match (tool.op, &target) {
                    (Operation::Update, Some(id)) => {
                        self.edits.entry(id.clone()).or_default().insert(
                            text("field"),
                            args.get("value").cloned().unwrap_or(Json::Null),
                        );
                    }
                    (Operation::Delete, Some(id)) => {
                        self.deleted.insert(id.clone());
                    }
                    _ => {}
                }
                let change = StateChange {
                    tool: tool.name.clone(),
                    op: tool.op,
                    target: target.clone(),
                    args,
                    call: self.calls - 1,
                };
                self.changes.push(change.clone());
                let observation = json!({
                    "result": { "status": "applied", "change": change },
                    "tool": tool_block(tool),
                })
                .to_string();
                Outcome {
                    observation,
                    status: CallStatus::Ok,
                    change: Some(change),
                    returned: target.into_iter().collect(),
                    delivered: None,
                }
            }
        }
    }

    fn reachable(&self, tool: &Tool, id: &str) -> Option<&'v Record> {
        let kind = tool.kind.as_deref()?;
        self.variant
            .store
            .get(&tool.connector, kind, id)
            .filter(|r| !self.deleted.contains(&r.id))
    }

    fn full(&self, r: &Record) -> View {
        let mut fields = r.fields.clone();
        if let Some(edits) = self.edits.get(&r.id) {
            fields.extend(edits.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        View {
            fields,
            next_handoff: r.next_handoff.as_ref().map(|h| json!(h)),
            ..summary(r)
        }
    }

    fn records(&mut self, tool: &Tool, views: &[View], status: CallStatus) -> Outcome {
        let links = self.shown.observe(self.calls, views);
        let delivered = self
            .delivery
            .filter(|&d| d != self.variant.cell.d)
            .map(|d| encode(d, tool, views, &links));
        Outcome {
            observation: encode(self.variant.cell.d, tool, views, &links),
            status,
            change: None,
            returned: views.iter().map(|v| v.id.clone()).collect(),
            delivered,
        }
    }
}

/// A search hit: the record's identity, version and reference, no fields.
fn summary(r: &Record) -> View {
    View {
        id: r.id.clone(),
        kind: r.kind.clone(),
        version: u64::from(r.version),
        status: match r.status {
            Status::Current => "current",
            Status::Superseded => "superseded",
        }
        .to_string(),
        updated_on: r.updated_on.clone(),
        fields: BTreeMap::from([("reference".to_string(), json!(r.reference))]),
        next_handoff: None,
        connector: r.connector.clone(),
    }
}

fn not_found(tool: &Tool, id: &str) -> Outcome {
    let what = tool.kind.as_deref().unwrap_or("record");
    error(
        Some(tool),
        ErrorCode::NotFound,
        &format!("no {what} with id `{id}` in this connector"),
    )
}

fn error(tool: Option<&Tool>, code: ErrorCode, message: &str) -> Outcome {
    let mut m = Map::new();
    m.insert("error".into(), json!({ "code": code, "message": message }));
    if let Some(t) = tool {
        m.insert("tool".into(), tool_block(t));
    }
    Outcome {
        observation: Json::Object(m).to_string(),
        status: CallStatus::Error(code),
        delivered: None,
        change: None,
        returned: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{compile, Cell, Encoding, Workflow};
    use crate::family::repository_family;

    fn variant(d: Encoding) -> Variant {
        match compile(
            repository_family("overdue-escalation-harbor"),
            &Cell::new(8, Workflow::Low, d),
        ) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    fn invoice(v: &Variant) -> (String, String, String) {
        let read = &v.reference_program.steps[1].call;
        let update = v.permitted_change.as_ref().map(|c| c.tool.clone());
        (
            read.tool.clone(),
            read.arguments["id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            update.unwrap_or_default(),
        )
    }

    #[test]
    fn an_update_is_tracked_and_visible_to_later_reads() {
        let v = variant(Encoding::Raw);
        let (read, id, update) = invoice(&v);
        let mut sb = Sandbox::new(&v);
        let args = json!({"id": id, "field": "escalation", "value": "collections"}).to_string();
        let out = sb.execute(&update, &args);
        assert_eq!(
            out.status,
            CallStatus::Ok,
            "{update} {args}: {}",
            out.observation
        );
        assert_eq!(sb.changes().len(), 1);
        assert_eq!(sb.changes()[0].target.as_deref(), Some(id.as_str()));
        let seen = sb.execute(&read, &json!({ "id": id }).to_string());
        assert!(seen.observation.contains(r#""escalation":"collections""#));
    }

    #[test]
    fn errors_are_structured_and_change_nothing() {
        let v = variant(Encoding::Typed);
        let (read, _, update) = invoice(&v);
        let mut sb = Sandbox::new(&v);
        let cases = [
            ("no_such_tool", "{}".to_string(), ErrorCode::UnknownTool),
            (
                read.as_str(),
                "{\"id\": ".to_string(),
                ErrorCode::InvalidArguments,
            ),
            (
                read.as_str(),
                "{\"id\": 3}".to_string(),
                ErrorCode::InvalidArguments,
            ),
            (
                read.as_str(),
                "{\"id\": \"rec_000000000000\"}".to_string(),
                ErrorCode::NotFound,
            ),
            (
                update.as_str(),
                json!({"id": "rec_000000000000", "field": "a", "value": "b"}).to_string(),
                ErrorCode::NotFound,
            ),
            (
                update.as_str(),
                json!({"id": invoice(&v).1, "field": "@next_handoff", "value": "b"}).to_string(),
                ErrorCode::InvalidArguments,
            ),
            (
                update.as_str(),
                json!({"id": invoice(&v).1, "field": "a/b", "value": "b"}).to_string(),
                ErrorCode::InvalidArguments,
            ),
        ];
        for (tool, args, code) in cases {
            let out = sb.execute(tool, &args);
            assert_eq!(out.status, CallStatus::Error(code), "{tool} {args}");
            let doc: Json = serde_json::from_str(&out.observation).unwrap_or(Json::Null);
            assert_eq!(doc["error"]["code"], json!(code));
        }
        assert!(sb.changes().is_empty());
    }

    #[test]
    fn a_deleted_record_is_gone() {
        let v = variant(Encoding::Raw);
        let (read, id, _) = invoice(&v);
        let Some(delete) = v
            .menu
            .iter()
            .find(|t| t.op == Operation::Delete && t.connector == v.route.connector)
        else {
            return; // this menu offers no delete on the route; the audits cover the rest
        };
        let mut sb = Sandbox::new(&v);
        sb.execute(&delete.name, &json!({ "id": id }).to_string());
        let out = sb.execute(&read, &json!({ "id": id }).to_string());
        assert_eq!(out.status, CallStatus::Error(ErrorCode::NotFound));
    }

    #[test]
    fn one_read_in_each_encoding() {
        for d in [
            Encoding::Raw,
            Encoding::Compact,
            Encoding::Typed,
            Encoding::Linked,
        ] {
            let v = variant(d);
            let mut sb = Sandbox::new(&v);
            let mut last = String::new();
            for s in &v.reference_program.steps[..2] {
                last = sb
                    .execute(&s.call.tool, &s.call.arguments.to_string())
                    .observation;
            }
            let pretty: Json = serde_json::from_str(&last).unwrap_or(Json::Null);
            insta::assert_json_snapshot!(format!("harbor_read_{d:?}").to_lowercase(), pretty);
        }
    }
}
