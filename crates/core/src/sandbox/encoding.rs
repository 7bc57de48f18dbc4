//! Record encodings: raw, compact, typed, linked — and their decoders.
//!
//! An observation of records has nine top-level blocks at most. Five vary with the
//! encoding: `objects`, `field_dictionary`, `type_dictionary`, `relation_dictionary` and
//! `links`. Four are built once from the records and are byte-identical in every
//! encoding: `provenance` (JSON pointers `/<object index>/<field>` to the source field
//! `connector/record@vN#field`), `source` (connector and record ids), `hash` (blake3
//! of the canonical records) and `tool` (name, operation, coordinates).
//!
//! - raw: `objects: [{id, kind, version, status, updated_on, payload: {...}, next_handoff?}]`
//! - compact: `field_dictionary: [names]`, `objects: [[values in dictionary order]]`;
//!   the record envelope's columns are named with a leading `@` (`@id`, `@kind`, ...,
//!   `@next_handoff`) so that they can never collide with a field called `status`.
//! - typed: `type_dictionary: {kind: [field names]}`,
//!   `objects: [{id, type, version, status, updated_on, fields, source, next_handoff?}]`
//! - linked: typed plus `links: [{from, to: {call, record, field}, relation}]`, the
//!   equalities between the returned objects and what the episode was shown before
//!   ([`super::links`]), and a `relation_dictionary` describing each relation used.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

use super::links::{relations, Link};
use crate::compile::{Encoding, Tool};

/// What one returned object carries, independent of encoding. Decoding any encoding
/// yields these exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// Record id.
    pub id: String,
    /// Record kind.
    pub kind: String,
    /// Version.
    pub version: u64,
    /// `current` or `superseded`.
    pub status: String,
    /// Date of the version.
    pub updated_on: String,
    /// Fields.
    pub fields: BTreeMap<String, Json>,
    /// Hand-off `{connector, query}`, if any.
    pub next_handoff: Option<Json>,
    /// Connector the record lives in.
    #[serde(skip)]
    pub connector: String,
}

const ENVELOPE: [&str; 5] = ["@id", "@kind", "@version", "@status", "@updated_on"];
const HANDOFF_COLUMN: &str = "@next_handoff";

/// The four encoding-independent blocks.
pub fn shared_blocks(tool: &Tool, views: &[View]) -> Map<String, Json> {
    let mut provenance = Map::new();
    for (i, v) in views.iter().enumerate() {
        for f in v.fields.keys() {
            provenance.insert(
                format!("/{i}/{f}"),
                json!(format!("{}/{}@v{}#{}", v.connector, v.id, v.version, f)),
            );
        }
    }
    let canonical = serde_json::to_vec(views).unwrap_or_default();
    let mut m = Map::new();
    m.insert("provenance".into(), Json::Object(provenance));
    m.insert(
        "source".into(),
        json!({
            "connector": tool.connector,
            "records": views.iter().map(|v| v.id.clone()).collect::<Vec<_>>(),
        }),
    );
    m.insert(
        "hash".into(),
        json!(format!("b3:{}", &blake3::hash(&canonical).to_hex()[..32])),
    );
    m.insert("tool".into(), tool_block(tool));
    m
}

/// The `tool` block: identical in every observation of the tool, errors included.
pub fn tool_block(tool: &Tool) -> Json {
    json!({
        "name": tool.name,
        "operation": crate::compile::cell::level_name(&tool.op),
        "connector": {
            "workspace": tool.workspace,
            "region": tool.region,
            "collection": tool.collection,
        },
    })
}

/// Encodes objects; the result's shared blocks are those of [`shared_blocks`]. Only the
/// linked encoding prints `links` (computed by the caller from the episode's ledger).
pub fn encode(d: Encoding, tool: &Tool, views: &[View], links: &[Link]) -> String {
    let mut m = shared_blocks(tool, views);
    match d {
        Encoding::Raw => {
            let objects: Vec<Json> = views
                .iter()
                .map(|v| {
                    let mut o = header(v, "kind");
                    o.insert("payload".into(), json!(v.fields));
                    handoff(&mut o, v);
                    Json::Object(o)
                })
                .collect();
            m.insert("objects".into(), Json::Array(objects));
        }
        Encoding::Compact => {
            let names: BTreeSet<&String> = views.iter().flat_map(|v| v.fields.keys()).collect();
            let mut dictionary: Vec<String> = ENVELOPE
                .iter()
                .map(std::string::ToString::to_string)
                .collect();
            dictionary.extend(names.iter().map(|s| (*s).clone()));
            dictionary.push(HANDOFF_COLUMN.into());
            let rows: Vec<Json> = views
                .iter()
                .map(|v| {
                    let mut row = vec![
                        json!(v.id),
                        json!(v.kind),
                        json!(v.version),
                        json!(v.status),
                        json!(v.updated_on),
                    ];
                    row.extend(
                        names
                            .iter()
                            .map(|n| v.fields.get(*n).cloned().unwrap_or(Json::Null)),
                    );
                    row.push(v.next_handoff.clone().unwrap_or(Json::Null));
                    Json::Array(row)
                })
                .collect();
            m.insert("field_dictionary".into(), json!(dictionary));
            m.insert("objects".into(), Json::Array(rows));
        }
        Encoding::Typed | Encoding::Linked => {
            let mut types: BTreeMap<&str, BTreeSet<&String>> = BTreeMap::new();
            for v in views {
                types.entry(&v.kind).or_default().extend(v.fields.keys());
            }
            let objects: Vec<Json> = views
                .iter()
                .map(|v| {
                    let mut o = header(v, "type");
                    o.insert("fields".into(), json!(v.fields));
                    o.insert(
                        "source".into(),
                        json!({ "connector": v.connector, "record": v.id }),
                    );
                    handoff(&mut o, v);
                    Json::Object(o)
                })
                .collect();
            m.insert("type_dictionary".into(), json!(types));
            m.insert("objects".into(), Json::Array(objects));
            if d == Encoding::Linked {
                m.insert(
                    "links".into(),
                    Json::Array(links.iter().map(Link::to_json).collect()),
                );
                let dictionary: Map<String, Json> = relations(links)
                    .into_iter()
                    .map(|r| (r.name().to_string(), json!(r.description())))
                    .collect();
                m.insert("relation_dictionary".into(), Json::Object(dictionary));
            }
        }
    }
    Json::Object(m).to_string()
}

fn header(v: &View, kind_key: &str) -> Map<String, Json> {
    let mut o = Map::new();
    o.insert("id".into(), json!(v.id));
    o.insert(kind_key.into(), json!(v.kind));
    o.insert("version".into(), json!(v.version));
    o.insert("status".into(), json!(v.status));
    o.insert("updated_on".into(), json!(v.updated_on));
    o
}

fn handoff(o: &mut Map<String, Json>, v: &View) {
    if let Some(h) = &v.next_handoff {
        o.insert("next_handoff".into(), h.clone());
    }
}

/// Why an observation could not be decoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("cannot decode a {encoding:?} observation: {reason}")]
pub struct DecodeError {
    /// The encoding tried.
    pub encoding: Encoding,
    /// What was wrong.
    pub reason: String,
}

/// Decodes the objects of an observation in encoding `d`. The connector of each view is
/// taken from the `source` block.
pub fn decode(d: Encoding, text: &str) -> Result<Vec<View>, DecodeError> {
    let fail = |reason: &str| DecodeError {
        encoding: d,
        reason: reason.to_string(),
    };
    let doc: Json = serde_json::from_str(text).map_err(|e| fail(&e.to_string()))?;
    let connector = doc["source"]["connector"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let objects = doc["objects"]
        .as_array()
        .ok_or_else(|| fail("no objects"))?;
    let text_of = |v: &Json| {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| fail("not a string"))
    };
    let mut out = Vec::new();
    for o in objects {
        let view = match d {
            Encoding::Raw | Encoding::Typed | Encoding::Linked => {
                let (kind_key, fields_key) = if d == Encoding::Raw {
                    ("kind", "payload")
                } else {
                    ("type", "fields")
                };
                let fields = o[fields_key]
                    .as_object()
                    .ok_or_else(|| fail("fields are not an object"))?;
                View {
                    id: text_of(&o["id"])?,
                    kind: text_of(&o[kind_key])?,
                    version: o["version"].as_u64().ok_or_else(|| fail("version"))?,
                    status: text_of(&o["status"])?,
                    updated_on: text_of(&o["updated_on"])?,
                    fields: fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    next_handoff: o.get("next_handoff").cloned(),
                    connector: connector.clone(),
                }
            }
            Encoding::Compact => {
                let dict: Vec<&str> = doc["field_dictionary"]
                    .as_array()
                    .ok_or_else(|| fail("no field_dictionary"))?
                    .iter()
                    .filter_map(Json::as_str)
                    .collect();
                let row = o.as_array().ok_or_else(|| fail("row is not an array"))?;
                if row.len() != dict.len() {
                    return Err(fail("row length differs from the dictionary"));
                }
                let cell = |name: &str| dict.iter().position(|n| *n == name).map(|i| &row[i]);
                let get = |name: &str| cell(name).ok_or_else(|| fail(name));
                let mut fields = BTreeMap::new();
                for (name, value) in dict.iter().zip(row) {
                    if !name.starts_with('@') && !value.is_null() {
                        fields.insert(name.to_string(), value.clone());
                    }
                }
                View {
                    id: text_of(get("@id")?)?,
                    kind: text_of(get("@kind")?)?,
                    version: get("@version")?.as_u64().ok_or_else(|| fail("version"))?,
                    status: text_of(get("@status")?)?,
                    updated_on: text_of(get("@updated_on")?)?,
                    fields,
                    next_handoff: cell(HANDOFF_COLUMN).filter(|h| !h.is_null()).cloned(),
                    connector: connector.clone(),
                }
            }
        };
        out.push(view);
    }
    Ok(out)
}
