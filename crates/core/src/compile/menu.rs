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
    /// JSON Schema of the arguments, shared with the family's definition rather than
    /// copied into every menu that shows the tool.
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
    (0..conn.collection.tools.len())
        .map(|i| connector_tool(conn, i, operational))
        .collect()
}

/// Tool `index` of a connector's collection.
fn connector_tool(conn: &Connector, index: usize, operational: &[String]) -> Tool {
    let t = &conn.collection.tools[index];
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
}

/// The distractor draw order for a family at a routing level, every candidate built:
/// what [`menu`] takes its distractors from, whole (for the test that holds the two
/// orders equal).
#[cfg(test)]
fn distractor_order(family: &Family, r: Routing) -> Vec<Tool> {
    let order = Distractors::new(family, r);
    let n = order.order.len();
    order.take(n)
}

/// The seed of one of a family's distractor shuffles (`tag`: "far" or "near").
fn draw_seed(family: &Family, tag: &str) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"tbb menu draw/1\0");
    h.update(family.content_hash());
    h.update(tag.as_bytes());
    *h.finalize().as_bytes()
}

/// The distractor order as references (connector, tool), so that a menu materialises
/// only the tools it takes: a family has thousands of candidates and a menu of 128
/// takes at most 128 (building every one was most of a compile). The shuffles see
/// slices of the same lengths in the same order as over whole tools, so the order is
/// the same permutation.
struct Distractors {
    operational: Vec<String>,
    /// The route's connector first, then the family's candidate connectors.
    connectors: Vec<Connector>,
    order: Vec<(usize, usize)>,
}

impl Distractors {
    fn new(family: &Family, r: Routing) -> Distractors {
        let operational = family.operational_tools();
        let mut connectors = vec![family.route.clone()];
        let route = &connectors[0];
        let mut far: Vec<(usize, usize)> = route
            .collection
            .tools
            .iter()
            .enumerate()
            .filter(|(_, t)| !operational.contains(&route.tool_name(&t.suffix)))
            .map(|(i, _)| (0, i))
            .collect();
        let mut near = Vec::new();
        for (conn, shared) in family.candidate_connectors() {
            let c = connectors.len();
            let tools = (0..conn.collection.tools.len()).map(|i| (c, i));
            match shared {
                2 => near.extend(tools),
                _ => far.extend(tools),
            }
            connectors.push(conn);
        }
        let mut far_rng = ChaCha8Rng::from_seed(draw_seed(family, "far"));
        far.shuffle(&mut far_rng);
        let order = match r {
            Routing::Low => far,
            Routing::High => {
                let mut near_rng = ChaCha8Rng::from_seed(draw_seed(family, "near"));
                near.shuffle(&mut near_rng);
                near.extend(far);
                near
            }
        };
        Distractors {
            operational,
            connectors,
            order,
        }
    }

    /// The first `n` distractors, built.
    fn take(&self, n: usize) -> Vec<Tool> {
        self.order
            .iter()
            .take(n)
            .map(|&(c, i)| connector_tool(&self.connectors[c], i, &self.operational))
            .collect()
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
    let order = Distractors::new(family, r);
    if order.order.len() < need {
        return None;
    }
    tools.extend(order.take(need));
    let place = |t: &Tool| {
        let mut h = blake3::Hasher::new();
        h.update(b"tbb menu place/1\0");
        h.update(family.content_hash());
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

    /// The order as it was first written: every candidate tool built, then shuffled.
    fn distractor_order_by_whole_tools(family: &Family, r: Routing) -> Vec<Tool> {
        let operational = family.operational_tools();
        let mut far: Vec<Tool> = connector_tools(&family.route, &operational)
            .into_iter()
            .filter(|t| !t.operational)
            .collect();
        let mut near = Vec::new();
        for (conn, shared) in family.candidate_connectors() {
            match shared {
                2 => near.extend(connector_tools(&conn, &operational)),
                _ => far.extend(connector_tools(&conn, &operational)),
            }
        }
        far.shuffle(&mut ChaCha8Rng::from_seed(draw_seed(family, "far")));
        match r {
            Routing::Low => far,
            Routing::High => {
                near.shuffle(&mut ChaCha8Rng::from_seed(draw_seed(family, "near")));
                near.extend(far);
                near
            }
        }
    }

    #[test]
    fn shuffling_references_draws_the_same_order_as_shuffling_tools() {
        for f in &crate::family::repository_families().families {
            for r in [Routing::Low, Routing::High] {
                assert_eq!(
                    distractor_order(f, r),
                    distractor_order_by_whole_tools(f, r),
                    "{} at {r:?}",
                    f.name
                );
            }
        }
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
