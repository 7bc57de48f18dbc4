//! The visible menu: operational tools plus distractors, nested across menu sizes.
//!
//! The distractor order is drawn once per (family, routing level) with ChaCha seeded from
//! the family's content hash, and a menu of size V takes its first V − |operational|
//! entries, so 8 ⊂ 32 ⊂ 128 by construction and the menu does not depend on W or D.
//! The presentation order sorts tools by a keyed hash of their names, so a tool keeps
//! its relative place across menu sizes and operational tools are not always first.

use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::Value as Json;

use super::cell::Routing;
use crate::family::{Connector, Family, Operation};

/// A tool as the variant defines it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tool {
    /// Full name.
    pub name: String,
    /// Public description, ending with the connector's coordinates.
    pub description: String,
    /// JSON Schema of the arguments, shared with the family's definition (a menu of
    /// 128 tools is drawn from thousands of candidates; copying each tree was most of
    /// a compile).
    pub parameters: Arc<Json>,
    /// What it does.
    pub op: Operation,
    /// The record kind it reads or writes.
    pub kind: Option<String>,
    /// Connector id (tool-name prefix).
    pub connector: String,
    /// Connector coordinates.
    pub workspace: String,
    /// Connector coordinates.
    pub region: String,
    /// Connector coordinates.
    pub collection: String,
    /// Whether it is one of the family's operational tools.
    pub operational: bool,
}

impl Tool {
    /// The schema as a model sees it: name, description and parameters only.
    pub fn wire_schema(&self) -> Json {
        serde_json::json!({
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        })
    }
}

/// Every tool of a connector.
pub fn connector_tools(conn: &Connector, operational: &[String]) -> Vec<Tool> {
    conn.collection
        .tools
        .iter()
        .map(|t| {
            let name = conn.tool_name(&t.suffix);
            Tool {
                description: format!(
                    "{} Connector coordinates: workspace={}; region={}; collection={}.",
                    t.description, conn.workspace.name, conn.region.name, conn.collection.name
                ),
                parameters: t.parameters.clone(),
                op: t.op,
                kind: t.kind.clone(),
                connector: conn.id(),
                workspace: conn.workspace.name.clone(),
                region: conn.region.name.clone(),
                collection: conn.collection.name.clone(),
                operational: operational.contains(&name),
                name,
            }
        })
        .collect()
}

/// The distractor draw order for a family at a routing level.
pub fn distractor_order(family: &Family, r: Routing) -> Vec<Tool> {
    let operational = family.operational_tools();
    let seed = |tag: &str| {
        let mut h = blake3::Hasher::new();
        h.update(b"tbb menu draw/1\0");
        h.update(&family.content_hash);
        h.update(tag.as_bytes());
        *h.finalize().as_bytes()
    };
    let route_extras: Vec<Tool> = connector_tools(&family.route, &operational)
        .into_iter()
        .filter(|t| !t.operational)
        .collect();
    let mut near = Vec::new();
    let mut far = route_extras;
    for (conn, shared) in family.candidate_connectors() {
        match shared {
            2 => near.extend(connector_tools(&conn, &operational)),
            _ => far.extend(connector_tools(&conn, &operational)),
        }
    }
    let mut far_rng = ChaCha8Rng::from_seed(seed("far"));
    far.shuffle(&mut far_rng);
    match r {
        Routing::Low => far,
        Routing::High => {
            let mut near_rng = ChaCha8Rng::from_seed(seed("near"));
            near.shuffle(&mut near_rng);
            near.extend(far);
            near
        }
    }
}

/// The visible menu of size `v`, in presentation order. `None` if the family cannot
/// fill it (validation makes that impossible for the paper's sizes).
pub fn menu(family: &Family, v: usize, r: Routing) -> Option<Vec<Tool>> {
    let operational = family.operational_tools();
    let mut tools: Vec<Tool> = connector_tools(&family.route, &operational)
        .into_iter()
        .filter(|t| t.operational)
        .collect();
    let need = v.checked_sub(tools.len())?;
    let order = distractor_order(family, r);
    if order.len() < need {
        return None;
    }
    tools.extend(order.into_iter().take(need));
    let place = |t: &Tool| {
        let mut h = blake3::Hasher::new();
        h.update(b"tbb menu place/1\0");
        h.update(&family.content_hash);
        h.update(t.name.as_bytes());
        *h.finalize().as_bytes()
    };
    tools.sort_by_cached_key(place);
    Some(tools)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::repository_family;

    #[test]
    fn high_routing_fills_a_small_menu_with_near_miss_connectors() {
        let f = repository_family("overdue-escalation-harbor");
        let route = f.route.id();
        let distractors = |r| -> Vec<Tool> {
            menu(f, 8, r)
                .unwrap_or_default()
                .into_iter()
                .filter(|t| !t.operational)
                .collect()
        };
        let shared = |t: &Tool| {
            usize::from(t.workspace == f.route.workspace.name)
                + usize::from(t.region == f.route.region.name)
                + usize::from(t.collection == f.route.collection.name)
        };
        let high = distractors(Routing::High);
        assert!(!high.is_empty());
        assert!(high.iter().all(|t| shared(t) == 2), "{high:?}");
        let low = distractors(Routing::Low);
        assert!(low.iter().all(|t| t.connector == route || shared(t) <= 1));
    }

    #[test]
    fn the_wire_schema_is_what_a_model_sees() {
        let f = repository_family("overdue-escalation-harbor");
        let tools: Vec<Json> = connector_tools(&f.route, &f.operational_tools())
            .iter()
            .filter(|t| t.operational)
            .map(Tool::wire_schema)
            .collect();
        insta::assert_json_snapshot!("harbor_operational_wire_schemas", tools);
    }
}
