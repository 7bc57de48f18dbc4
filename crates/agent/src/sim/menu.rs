//! Reading the tool menu: what each visible schema offers, from its public name and
//! description only.
//!
//! A tool name reads `<connector>_<operation>[_<kind>]`, where the operation is one of
//! `search`, `read`, `update`, `delete`, `pay`, `send`; a search or read description ends
//! with `Connector coordinates: workspace=W; region=R; collection=C.`. A tool that does
//! not read this way is still visible (it costs tokens and attention) but is never
//! chosen.
//!
//! Each schema is read once per process: [`info`] memoises by a hash of its name and
//! description (and checks the parameters for equality), including the tokens of the
//! schema's JSON, so a 128-schema request costs 128 lookups, not 128 tokenizations.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value as Json;

use super::parse::Route;
use crate::{tokens, ToolSchema};

/// What a tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolOp {
    /// Search by reference.
    Search,
    /// Read one record by id.
    Read,
    /// Set a field.
    Update,
    /// Delete a record.
    Delete,
    /// Make a payment.
    Pay,
    /// Send a message.
    Send,
}

impl ToolOp {
    fn from_word(w: &str) -> Option<ToolOp> {
        Some(match w {
            "search" => ToolOp::Search,
            "read" => ToolOp::Read,
            "update" => ToolOp::Update,
            "delete" => ToolOp::Delete,
            "pay" => ToolOp::Pay,
            "send" => ToolOp::Send,
            _ => return None,
        })
    }

    /// Whether it changes state.
    pub fn writes(self) -> bool {
        !matches!(self, ToolOp::Search | ToolOp::Read)
    }
}

/// One visible tool as the agent understands it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// Name.
    pub name: String,
    /// Connector prefix of the name (empty when the name does not parse).
    pub connector: String,
    /// Operation, when the name parses.
    pub op: Option<ToolOp>,
    /// The part after the operation (`invoice` in `..._read_invoice`).
    pub object: String,
    /// Declared coordinates, when the description has them.
    pub coords: Option<Route>,
    /// Parameters (JSON Schema), for building arguments and checking memo hits.
    pub parameters: Arc<Json>,
    /// Tokens of the schema's JSON.
    pub tokens: u64,
}

impl ToolInfo {
    /// Reads a schema (uncached).
    pub fn read(schema: &ToolSchema) -> ToolInfo {
        let (connector, op, object) = split_name(&schema.name);
        ToolInfo {
            name: schema.name.clone(),
            connector,
            op,
            object,
            coords: coordinates(&schema.description),
            parameters: schema.parameters.clone(),
            tokens: tokens::tool(schema),
        }
    }

    /// Names of required parameters with their JSON types.
    pub fn required(&self) -> Vec<(String, String)> {
        let props = &self.parameters["properties"];
        self.parameters["required"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter_map(Json::as_str)
                    .map(|k| {
                        let ty = props[k]["type"].as_str().unwrap_or("string").to_string();
                        (k.to_string(), ty)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Splits a tool name into connector prefix, operation and object
/// (`nwf_euw_recv_read_invoice` -> `nwf_euw_recv`, read, `invoice`).
pub fn split_name(name: &str) -> (String, Option<ToolOp>, String) {
    let segments: Vec<&str> = name.split('_').collect();
    let at = segments
        .iter()
        .enumerate()
        .skip(1)
        .find_map(|(i, s)| ToolOp::from_word(s).map(|op| (i, op)));
    match at {
        Some((i, op)) => (
            segments[..i].join("_"),
            Some(op),
            segments[i + 1..].join("_"),
        ),
        None => (String::new(), None, String::new()),
    }
}

/// `Connector coordinates: workspace=W; region=R; collection=C.`
pub fn coordinates(description: &str) -> Option<Route> {
    let at = description.find("Connector coordinates:")?;
    let rest = &description[at + "Connector coordinates:".len()..];
    let mut workspace = None;
    let mut region = None;
    let mut collection = None;
    for part in rest.trim().trim_end_matches('.').split(';') {
        let (k, v) = part.trim().split_once('=')?;
        let v = Some(v.trim().to_string());
        match k.trim() {
            "workspace" => workspace = v,
            "region" => region = v,
            "collection" => collection = v,
            _ => {}
        }
    }
    Some(Route {
        workspace: workspace?,
        region: region?,
        collection: collection?,
    })
}

fn cache() -> &'static Mutex<HashMap<u128, Arc<ToolInfo>>> {
    static CACHE: OnceLock<Mutex<HashMap<u128, Arc<ToolInfo>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The memoised reading of a schema.
pub fn info(schema: &ToolSchema) -> Arc<ToolInfo> {
    let mut text = Vec::with_capacity(schema.name.len() + 1 + schema.description.len());
    text.extend_from_slice(schema.name.as_bytes());
    text.push(0);
    text.extend_from_slice(schema.description.as_bytes());
    let key = crate::tokens::key(&text);
    if let Ok(c) = cache().lock() {
        if let Some(i) = c.get(&key) {
            if i.parameters == schema.parameters {
                return Arc::clone(i);
            }
        }
    }
    let fresh = Arc::new(ToolInfo::read(schema));
    if let Ok(mut c) = cache().lock() {
        c.insert(key, Arc::clone(&fresh));
    }
    fresh
}

/// The visible menu, read.
#[derive(Debug, Clone)]
pub struct Menu {
    /// Tools in menu order.
    pub tools: Vec<Arc<ToolInfo>>,
}

impl Menu {
    /// Reads the schemas of a request.
    pub fn new(schemas: &[ToolSchema]) -> Menu {
        Menu {
            tools: schemas.iter().map(info).collect(),
        }
    }

    /// Tokens of all schemas.
    pub fn tokens(&self) -> u64 {
        self.tools.iter().map(|t| t.tokens).sum()
    }

    /// A visible tool by name.
    pub fn get(&self, name: &str) -> Option<&ToolInfo> {
        self.tools.iter().find(|t| t.name == name).map(|t| &**t)
    }

    /// The search tool of a connector, if visible.
    pub fn search_of(&self, connector: &str) -> Option<&ToolInfo> {
        self.tools
            .iter()
            .find(|t| t.op == Some(ToolOp::Search) && t.connector == connector)
            .map(|t| &**t)
    }

    /// The read tool of a kind on a connector, if visible.
    pub fn read_of(&self, connector: &str, kind: &str) -> Option<&ToolInfo> {
        self.tools
            .iter()
            .find(|t| t.op == Some(ToolOp::Read) && t.connector == connector && t.object == kind)
            .map(|t| &**t)
    }

    /// Any visible read tool of a kind (the route's first).
    pub fn any_read_of(&self, kind: &str, prefer: &str) -> Option<&ToolInfo> {
        self.read_of(prefer, kind).or_else(|| {
            self.tools
                .iter()
                .find(|t| t.op == Some(ToolOp::Read) && t.object == kind)
                .map(|t| &**t)
        })
    }

    /// The search tools whose declared coordinates are exactly the route's.
    pub fn route_search(&self, route: &Route) -> Option<&ToolInfo> {
        self.tools
            .iter()
            .find(|t| t.op == Some(ToolOp::Search) && t.coords.as_ref() == Some(route))
            .map(|t| &**t)
    }

    /// Visible search tools of other connectors with how many coordinates each shares
    /// with the route.
    pub fn other_searches<'a>(
        &'a self,
        route: &'a Route,
    ) -> impl Iterator<Item = (&'a ToolInfo, usize)> + 'a {
        self.tools.iter().filter_map(move |t| {
            let c = t.coords.as_ref()?;
            (t.op == Some(ToolOp::Search) && c != route).then(|| (&**t, c.shared(route)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(name: &str, desc: &str) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: desc.into(),
            parameters: json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}).into(),
        }
    }

    #[test]
    fn names_and_coordinates_are_read() {
        let t = ToolInfo::read(&schema(
            "nwf_euw_recv_read_routing_slip",
            "Read one routing slip by id. Connector coordinates: workspace=northwind-finance; region=eu-west; collection=receivables.",
        ));
        assert_eq!(t.connector, "nwf_euw_recv");
        assert_eq!(t.op, Some(ToolOp::Read));
        assert_eq!(t.object, "routing_slip");
        let c = t.coords.clone().unwrap_or_else(|| panic!("no coordinates"));
        assert_eq!(c.region, "eu-west");
        assert_eq!(c.collection, "receivables");
        assert!(t.tokens > 20);
        assert_eq!(t.required(), [("id".to_string(), "string".to_string())]);
        let odd = ToolInfo::read(&schema("lookup", "No coordinates here."));
        assert_eq!((odd.op, odd.coords), (None, None));
    }

    #[test]
    fn memo_returns_the_same_reading() {
        let s = schema(
            "a_b_c_search",
            "Search. Connector coordinates: workspace=a; region=b; collection=c.",
        );
        let a = info(&s);
        let b = info(&s);
        assert!(Arc::ptr_eq(&a, &b));
        let mut other = s.clone();
        other.parameters = json!({"type": "object"}).into();
        assert_eq!(info(&other).parameters, json!({"type": "object"}).into());
    }
}
