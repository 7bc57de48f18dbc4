//! The variant compiler: `(family, cell) -> Variant`, pure and deterministic.
//!
//! Owns: the record store and its lookups ([`store`]), the visible menu ([`menu`]), the
//! rendered request ([`request`]), the reference answer, the reference program and the
//! certified minimum ([`program`]), and the harness limits derived from it.
//!
//! What each pressure may change, and nothing else:
//! - V changes only the menu (nested across sizes);
//! - W (or a frontier depth) changes the chain layout, hence the store, the answer's
//!   `sources`, the reference program and the limits;
//! - D changes only how the sandbox encodes observations;
//! - R changes only which distractors fill the menu.
//!
//! Record ids, hand-off queries and every drawn value (superseded and other-route
//! values) are keyed by what decides which records exist: the family's content hash and
//! the chain length (set by W or a frontier depth), never by V, D or R. Matched siblings
//! that differ only in the menu or the encoding therefore hold the same records, the
//! same ids and the same answer, `sources` included; no answer carries over between
//! families, since the key holds the family's content hash. The menu draw is seeded from
//! the family alone.
//!
//! Never: I/O, clocks, global state, or anything a later stage computes.

pub mod cell;
pub mod menu;
pub mod program;
pub mod request;
pub mod store;

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::{json, Map, Value as Json};
use thiserror::Error;

pub use cell::{Cell, CellError, Encoding, Routing, Workflow};
pub use menu::Tool;
pub use program::{Call, Program, Step};
pub use store::{ChainLayout, Record, Status, Store};

use crate::family::{hex, Domain, Family, Operation, Split};

/// Extra calls the harness allows over the certified minimum.
pub const CALL_SLACK: u32 = 2;

/// Version of the compiler's output, part of every compile node's key: bump it whenever
/// a change to this module (or to the families' interpretation) changes any variant.
pub const CODE_VERSION: &str = "compile/2";
/// Extra turns over the call limit (one to answer, one spare).
pub const TURN_SLACK: u32 = 2;

/// Why a family cannot be compiled at a cell.
#[derive(Debug, Error)]
pub enum CompileError {
    /// The cell's levels are invalid.
    #[error(transparent)]
    Cell(#[from] CellError),
    /// The menu cannot be filled.
    #[error("family {family} cannot fill a menu of {v} tools ({operational} operational)")]
    Menu {
        /// Family.
        family: String,
        /// Menu size.
        v: u16,
        /// Number of operational tools.
        operational: usize,
    },
    /// A deep chain needs pure hand-off records.
    #[error("family {family} has no hop_kind, so it cannot compile at depth {depth}")]
    NoHopKind {
        /// Family.
        family: String,
        /// Depth.
        depth: u8,
    },
    /// The shortest-program search disagrees with the reference program: a bug in the
    /// compiler or an unusable family, never a user error.
    #[error("family {family} at {cell}: {detail}")]
    Uncertified {
        /// Family.
        family: String,
        /// Cell.
        cell: Cell,
        /// What disagreed.
        detail: String,
    },
}

/// The one state change a variant permits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpectedChange {
    /// Tool name.
    pub tool: String,
    /// Its operation.
    pub op: Operation,
    /// Target record id, for tools that take one.
    pub target: Option<String>,
    /// Arguments that must match exactly (besides `id`).
    pub args: BTreeMap<String, Json>,
}

/// The route, for display and tables.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Route {
    /// Connector id.
    pub connector: String,
    /// Workspace name.
    pub workspace: String,
    /// Region name.
    pub region: String,
    /// Collection name.
    pub collection: String,
}

/// A compiled variant.
#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    /// `v-` and 16 hex digits of the variant key.
    pub variant_id: String,
    /// Family name.
    pub family: String,
    /// Intent name.
    pub intent: String,
    /// Domain.
    pub domain: Domain,
    /// Split.
    pub split: Split,
    /// The cell.
    pub cell: Cell,
    /// The required route.
    pub route: Route,
    /// The rendered user message.
    pub user_request: String,
    /// Visible tools, in presentation order.
    pub menu: Vec<Tool>,
    /// Names of the operational tools.
    pub operational_tools: Vec<String>,
    /// The records.
    pub store: Store,
    /// How facts sit along the chain.
    pub layout: ChainLayout,
    /// Requested facts and their current values, in request order.
    pub facts: Vec<(String, Json)>,
    /// The decision label.
    pub decision: String,
    /// Ids of the records the answer must cite, in chain order.
    pub sources: Vec<String>,
    /// The reference program.
    pub reference_program: Program,
    /// Length of the shortest valid program.
    pub certified_min_calls: u32,
    /// Certified minimum + 2.
    pub call_limit: u32,
    /// Call limit + 2.
    pub turn_limit: u32,
    /// The permitted state change, if any.
    pub permitted_change: Option<ExpectedChange>,
    /// blake3 of the canonical JSON of everything above.
    pub variant_hash: String,
}

impl Variant {
    /// The reference answer as a JSON object.
    pub fn answer(&self) -> Json {
        let mut m = Map::new();
        m.insert("decision".into(), json!(self.decision));
        for (k, v) in &self.facts {
            m.insert(k.clone(), v.clone());
        }
        m.insert("sources".into(), json!(self.sources));
        Json::Object(m)
    }

    /// The reference answer as the raw JSON text an agent should return, with keys in
    /// schema order.
    pub fn answer_text(&self) -> String {
        let mut parts = vec![format!("\"decision\":{}", json!(self.decision))];
        for (k, v) in &self.facts {
            parts.push(format!("{}:{v}", json!(k)));
        }
        parts.push(format!("\"sources\":{}", json!(self.sources)));
        format!("{{{}}}", parts.join(","))
    }

    /// Names of the visible tools, in order.
    pub fn menu_names(&self) -> Vec<String> {
        self.menu.iter().map(|t| t.name.clone()).collect()
    }

    /// A visible tool by name.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.menu.iter().find(|t| t.name == name)
    }

    /// Tools the reference program uses (availability requires all of them).
    pub fn required_tools(&self) -> Vec<String> {
        let mut t: Vec<String> = self
            .reference_program
            .steps
            .iter()
            .map(|s| s.call.tool.clone())
            .collect();
        t.sort();
        t.dedup();
        t
    }
}

/// The cells a family of a split is compiled at by its studies: the capacity
/// factorial for core families, the frontier depths for frontier families, and both
/// for held-out families (the structural holdout uses their 2- and 30-call cells).
pub fn study_cells(split: Split) -> Vec<Cell> {
    let depths = || cell::FRONTIER_DEPTHS.iter().map(|&d| Cell::frontier(d));
    match split {
        Split::Core => Cell::capacity(),
        Split::Frontier => depths().collect(),
        Split::Holdout => Cell::capacity().into_iter().chain(depths()).collect(),
    }
}

/// The variant key: blake3 over the family's content hash and the canonical cell.
pub fn variant_key(family: &Family, cell: &Cell) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"tbb variant/1\0");
    h.update(family.content_hash());
    h.update(serde_json::to_string(cell).unwrap_or_default().as_bytes());
    *h.finalize().as_bytes()
}

/// The records key: blake3 over the family's content hash and the chain length, the
/// only inputs that change which records exist. It keys record ids and hand-off
/// references, so siblings that differ in V, D or R share them.
pub fn records_key(family: &Family, chain_length: usize) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"tbb records/1\0");
    h.update(family.content_hash());
    h.update(&(chain_length as u64).to_le_bytes());
    *h.finalize().as_bytes()
}

/// Compiles a family at a cell.
pub fn compile(family: &Family, cell: &Cell) -> Result<Variant, CompileError> {
    cell.validate()?;
    let cell = &cell.normalized();
    let def = &family.intent.def;
    let length = match cell.depth {
        Some(depth) => usize::from(depth / 2),
        None => match cell.w {
            Workflow::Low => 1,
            Workflow::Medium => 2,
            Workflow::High => 3,
        }
        .min(def.chain.len()),
    };
    if let Some(depth) = cell.depth {
        if length > def.chain.len() && def.hop_kind.is_none() {
            return Err(CompileError::NoHopKind {
                family: family.name.clone(),
                depth,
            });
        }
    }
    let key = variant_key(family, cell);
    let ids = store::Ids::new(records_key(family, length));
    let layout = ChainLayout::new(family, length);
    let mut seed = blake3::Hasher::new();
    seed.update(b"tbb store values/1\0");
    seed.update(family.content_hash());
    seed.update(&(length as u64).to_le_bytes());
    let mut rng = ChaCha8Rng::from_seed(*seed.finalize().as_bytes());
    let store = store::build(family, &layout, &ids, &mut rng);
    let menu =
        menu::menu(family, usize::from(cell.v), cell.r).ok_or_else(|| CompileError::Menu {
            family: family.name.clone(),
            v: cell.v,
            operational: def.operational_tools.len(),
        })?;
    let route_id = family.route.id();
    let chain: Vec<&Record> = (0..length)
        .filter_map(|p| {
            let reference = if p == 0 {
                family.case_ref.clone()
            } else {
                ids.reference(&route_id, &layout.kinds[p], p)
            };
            store
                .search(&route_id, &reference)
                .into_iter()
                .find(|r| r.status == Status::Current)
        })
        .collect();
    let uncertified = |detail: String| CompileError::Uncertified {
        family: family.name.clone(),
        cell: *cell,
        detail,
    };
    if chain.len() != length {
        return Err(uncertified("the route chain is incomplete".into()));
    }
    let sources: Vec<String> = layout
        .evidence_positions()
        .into_iter()
        .map(|p| chain[p].id.clone())
        .collect();

    // The reference program: search then read each chain record; the permitted write
    // after the calls that reveal its target id and the facts in its arguments.
    let search_tool = family.route.tool_name(
        family
            .route
            .collection
            .tools
            .iter()
            .find(|t| t.op == Operation::Search)
            .map_or("search", |t| t.suffix.as_str()),
    );
    let mut steps = Vec::new();
    for (p, record) in chain.iter().enumerate() {
        let read_suffix = family
            .route
            .collection
            .tools
            .iter()
            .find(|t| t.op == Operation::Read && t.kind.as_deref() == Some(&record.kind))
            .map(|t| t.suffix.clone())
            .ok_or_else(|| uncertified(format!("no read tool for kind {}", record.kind)))?;
        let after_search = if p == 0 { vec![] } else { vec![2 * p - 1] };
        steps.push(Step {
            call: Call {
                tool: search_tool.clone(),
                arguments: json!({ "query": record.reference }),
            },
            after: after_search,
        });
        steps.push(Step {
            call: Call {
                tool: family.route.tool_name(&read_suffix),
                arguments: json!({ "id": record.id }),
            },
            after: vec![2 * p],
        });
    }
    let fact_position = |name: &str| {
        def.facts
            .iter()
            .position(|f| f.name == name)
            .map(|i| layout.fact_position[i])
    };
    let mut permitted_change = None;
    let mut goal_write = None;
    if let Some(rule) = &family.permitted_change {
        let tool_def = family
            .route
            .collection
            .tools
            .iter()
            .find(|t| t.suffix == rule.tool)
            .ok_or_else(|| uncertified(format!("no tool {}", rule.tool)))?;
        let mut args = BTreeMap::new();
        let mut after = Vec::new();
        let mut fact_args = Vec::new();
        for (k, v) in &rule.args {
            let value = match v.strip_prefix("{fact:").and_then(|r| r.strip_suffix('}')) {
                Some(fact) => {
                    let p = fact_position(fact)
                        .ok_or_else(|| uncertified(format!("unknown fact {fact}")))?;
                    after.push(2 * p + 1);
                    fact_args.push(fact.to_string());
                    family.fact(fact).cloned().unwrap_or(Json::Null)
                }
                None if v == "{case_ref}" => json!(family.case_ref),
                None => json!(v),
            };
            args.insert(k.clone(), value);
        }
        let target = match rule.target_stage {
            Some(stage) => {
                let holder = def
                    .facts
                    .iter()
                    .find(|f| f.stage == stage)
                    .map(|f| f.name.as_str())
                    .unwrap_or_default();
                let p = fact_position(holder)
                    .ok_or_else(|| uncertified("no fact at the target stage".into()))?;
                after.push(2 * p);
                // Knowing which record holds the fact takes reading it.
                fact_args.push(holder.to_string());
                after.push(2 * p + 1);
                Some(chain[p].id.clone())
            }
            None => None,
        };
        after.sort_unstable();
        after.dedup();
        let mut arguments = Map::new();
        if let Some(id) = &target {
            arguments.insert("id".into(), json!(id));
        }
        for (k, v) in &args {
            arguments.insert(k.clone(), v.clone());
        }
        if tool_def.op == Operation::Send && !arguments.contains_key("body") {
            arguments.insert(
                "body".into(),
                json!(format!("{}: {}", family.case_ref, family.decision)),
            );
        }
        let call = Call {
            tool: family.route.tool_name(&rule.tool),
            arguments: Json::Object(arguments),
        };
        fact_args.sort();
        fact_args.dedup();
        goal_write = Some((call.clone(), fact_args, target.clone()));
        steps.push(Step { call, after });
        permitted_change = Some(ExpectedChange {
            tool: family.route.tool_name(&rule.tool),
            op: tool_def.op,
            target,
            args,
        });
    }
    let reference_program = Program { steps };
    let goal = program::Goal {
        route: route_id.clone(),
        facts: def.facts.iter().map(|f| f.name.clone()).collect(),
        write: goal_write,
    };
    let shortest = program::shortest_program(&store, &menu, &family.case_ref, &goal)
        .ok_or_else(|| uncertified("no program reaches the goal".into()))?;
    if shortest.len() != reference_program.steps.len() || !reference_program.is_well_formed() {
        return Err(uncertified(format!(
            "the shortest program has {} calls but the reference program has {}",
            shortest.len(),
            reference_program.steps.len()
        )));
    }
    let certified_min_calls = shortest.len() as u32;
    let call_limit = certified_min_calls + CALL_SLACK;
    let operational_tools = family.operational_tools();
    let mut variant = Variant {
        variant_id: format!("v-{}", hex(&key[..8])),
        family: family.name.clone(),
        intent: family.intent.name().to_string(),
        domain: family.domain(),
        split: family.split(),
        cell: *cell,
        route: Route {
            connector: route_id,
            workspace: family.route.workspace.name.clone(),
            region: family.route.region.name.clone(),
            collection: family.route.collection.name.clone(),
        },
        user_request: request::render(family),
        menu,
        operational_tools,
        store,
        layout,
        facts: family.facts.clone(),
        decision: family.decision.clone(),
        sources,
        reference_program,
        certified_min_calls,
        call_limit,
        turn_limit: call_limit + TURN_SLACK,
        permitted_change,
        variant_hash: String::new(),
    };
    let canonical = serde_json::to_vec(&variant).unwrap_or_default();
    variant.variant_hash = blake3::hash(&canonical).to_hex().to_string();
    Ok(variant)
}
