//! Reading tool results by their JSON structure, as a model reads them.
//!
//! A tool result is one of:
//! - records: `objects` plus blocks that tell the layout — a `field_dictionary` with
//!   value rows (compact; envelope columns start with `@`), objects with a `payload`
//!   (raw), objects with `fields` and a `type` (typed; linked adds `links` and a
//!   `relation_dictionary`). The `tool` block names the operation (`search` hits carry
//!   only a `reference`; `read` returns the whole record) and `source.connector` the
//!   connector. A record may carry `next_handoff {connector, query}`.
//! - an applied change: `result.status = "applied"`;
//! - an error: `error.code` (`unknown_tool`, `invalid_arguments`, `not_found`).
//!
//! The reader keeps each record's values in the order the observation lays them out
//! (the whole row for compact), which is what a misread works on: a compact misread
//! takes a neighbouring column, another layout a neighbouring field. It also says how
//! far each value stands from its name ([`Object::positions`]), one of the structures
//! the misread chance grows with.

use serde_json::Value as Json;

/// The record layout of an observation, recognised from its structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Values under `payload`.
    Raw,
    /// A field dictionary and value rows.
    Compact,
    /// `type` and `fields`.
    Typed,
    /// Typed plus `links` and `relation_dictionary`.
    Linked,
}

/// A hand-off to the next record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    /// Connector prefix to search.
    pub connector: String,
    /// Exact query.
    pub query: String,
}

/// One returned record.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// Id.
    pub id: String,
    /// Kind (`kind`, `type` or `@kind`).
    pub kind: String,
    /// `current` or `superseded`.
    pub status: String,
    /// Field names and values, in layout order (envelope excluded).
    pub fields: Vec<(String, Json)>,
    /// For compact rows: the whole row, and the column of each entry of `fields`.
    pub row: Option<(Vec<Json>, Vec<usize>)>,
    /// Hand-off, if any.
    pub handoff: Option<Handoff>,
}

impl Object {
    /// Positions between field `i`'s value and the name that explains it: 0 where the
    /// name stands beside the value (`"name": value`); in a compact row, the value's
    /// column counted from 1, the positions a reader steps through in the row and again
    /// in `field_dictionary` to pair the two.
    pub fn positions(&self, i: usize) -> usize {
        match &self.row {
            Some((_, columns)) => columns.get(i).map_or(0, |c| c + 1),
            None => 0,
        }
    }

    /// A field's value.
    pub fn field(&self, name: &str) -> Option<&Json> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

/// What a tool result says.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// Records (possibly none: a legal miss).
    Records {
        /// `search` or `read`.
        operation: String,
        /// Connector the records come from.
        connector: String,
        /// Layout.
        layout: Layout,
        /// The records.
        objects: Vec<Object>,
    },
    /// A change was applied.
    Applied,
    /// An error observation.
    Error {
        /// Its code.
        code: String,
    },
    /// Not a shape the agent understands.
    Unreadable,
}

fn text(v: &Json) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn handoff(v: Option<&Json>) -> Option<Handoff> {
    let v = v?;
    Some(Handoff {
        connector: v.get("connector")?.as_str()?.to_string(),
        query: v.get("query")?.as_str()?.to_string(),
    })
}

/// Reads one tool result.
pub fn read(content: &str) -> Observation {
    let Ok(doc) = serde_json::from_str::<Json>(content) else {
        return Observation::Unreadable;
    };
    if let Some(code) = doc.get("error").and_then(|e| e.get("code")) {
        return Observation::Error { code: text(code) };
    }
    if doc.get("result").is_some() {
        return Observation::Applied;
    }
    let Some(objects) = doc.get("objects").and_then(Json::as_array) else {
        return Observation::Unreadable;
    };
    let operation = text(&doc["tool"]["operation"]);
    let connector = text(&doc["source"]["connector"]);
    let layout = if doc.get("field_dictionary").is_some() {
        Layout::Compact
    } else if doc.get("links").is_some() || doc.get("relation_dictionary").is_some() {
        Layout::Linked
    } else if doc.get("type_dictionary").is_some() {
        Layout::Typed
    } else {
        Layout::Raw
    };
    let mut out = Vec::with_capacity(objects.len());
    match layout {
        Layout::Compact => {
            let dict: Vec<&str> = doc["field_dictionary"]
                .as_array()
                .map(|d| d.iter().map(|n| n.as_str().unwrap_or_default()).collect())
                .unwrap_or_default();
            let col = |name: &str| dict.iter().position(|n| *n == name);
            for o in objects {
                let Some(row) = o.as_array() else {
                    return Observation::Unreadable;
                };
                let cell = |name: &str| col(name).and_then(|i| row.get(i));
                let mut fields = Vec::new();
                let mut columns = Vec::new();
                for (i, (name, value)) in dict.iter().zip(row).enumerate() {
                    if !name.starts_with('@') && !value.is_null() {
                        fields.push((name.to_string(), value.clone()));
                        columns.push(i);
                    }
                }
                out.push(Object {
                    id: cell("@id").map(text).unwrap_or_default(),
                    kind: cell("@kind").map(text).unwrap_or_default(),
                    status: cell("@status").map(text).unwrap_or_default(),
                    fields,
                    row: Some((row.clone(), columns)),
                    handoff: handoff(cell("@next_handoff")),
                });
            }
        }
        Layout::Raw | Layout::Typed | Layout::Linked => {
            let (kind_key, fields_key) = if layout == Layout::Raw {
                ("kind", "payload")
            } else {
                ("type", "fields")
            };
            for o in objects {
                let fields = o
                    .get(fields_key)
                    .and_then(Json::as_object)
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default();
                out.push(Object {
                    id: text(&o["id"]),
                    kind: text(&o[kind_key]),
                    status: text(&o["status"]),
                    fields,
                    row: None,
                    handoff: handoff(o.get("next_handoff")),
                });
            }
        }
    }
    Observation::Records {
        operation,
        connector,
        layout,
        objects: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPACT: &str = r#"{"field_dictionary":["@id","@kind","@version","@status","@updated_on","channel","days_overdue","status","@next_handoff"],"objects":[["rec_1","invoice",2,"current","2026-05-10","portal",45,"overdue",{"connector":"nwf_euw_recv","query":"COM-1"}]],"source":{"connector":"nwf_euw_recv","records":["rec_1"]},"tool":{"name":"nwf_euw_recv_read_invoice","operation":"read"}}"#;
    const LINKED: &str = r#"{"links":[],"relation_dictionary":{},"objects":[{"id":"rec_1","type":"invoice","version":2,"status":"current","updated_on":"2026-05-10","fields":{"status":"overdue"},"source":{"connector":"c","record":"rec_1"}}],"source":{"connector":"c","records":["rec_1"]},"tool":{"operation":"read"},"type_dictionary":{"invoice":["status"]}}"#;

    #[test]
    fn compact_rows_are_read_by_the_dictionary() {
        let Observation::Records {
            operation,
            connector,
            layout,
            objects,
        } = read(COMPACT)
        else {
            panic!("not records")
        };
        assert_eq!(
            (operation.as_str(), connector.as_str(), layout),
            ("read", "nwf_euw_recv", Layout::Compact)
        );
        let o = &objects[0];
        assert_eq!(
            (o.id.as_str(), o.kind.as_str(), o.status.as_str()),
            ("rec_1", "invoice", "current")
        );
        assert_eq!(o.field("days_overdue"), Some(&serde_json::json!(45)));
        assert_eq!(o.field("status"), Some(&serde_json::json!("overdue")));
        assert_eq!(o.row.as_ref().map(|(_, c)| c.clone()), Some(vec![5, 6, 7]));
        assert_eq!((o.positions(0), o.positions(2)), (6, 8));
        assert_eq!(o.handoff.as_ref().map(|h| h.query.as_str()), Some("COM-1"));
    }

    #[test]
    fn linked_errors_and_writes() {
        let Observation::Records {
            layout, objects, ..
        } = read(LINKED)
        else {
            panic!("not records")
        };
        assert_eq!(layout, Layout::Linked);
        assert_eq!(
            objects[0].positions(0),
            0,
            "a keyed value stands beside its name"
        );
        assert_eq!(
            objects[0].field("status"),
            Some(&serde_json::json!("overdue"))
        );
        assert_eq!(
            read(r#"{"error":{"code":"not_found","message":"x"}}"#),
            Observation::Error {
                code: "not_found".into()
            }
        );
        assert_eq!(
            read(r#"{"result":{"status":"applied"}}"#),
            Observation::Applied
        );
        assert_eq!(read("not json"), Observation::Unreadable);
    }
}
