//! The record store of a variant and the tool semantics over it.
//!
//! The store holds, for the route connector, the handoff chain's current records and
//! their superseded versions; for every other connector of the route's collection, a
//! mirror chain of valid-looking current records for that other workspace (same case
//! reference, other values). Connectors of other collections hold nothing the case's
//! references find: searching them is a legal miss.
//!
//! Every chain record after the first names the record before it: a field
//! `<previous kind>_ref` holding that record's reference (a commitment's `invoice_ref`),
//! on current and superseded versions alike, so a returned record can be tied to the
//! one the episode read before it (the linked encoding's links are built from such
//! equalities). Family validation reserves the `_ref` suffix for these fields.
//!
//! Lookups ([`Store::search`], [`Store::get`]) are the semantics the sandbox exposes and
//! the certified-minimum search executes; they live here so both use one definition.

use std::collections::{BTreeMap, HashMap};

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::{json, Value as Json};

use crate::family::{Connector, Family};

/// Whether a record version is the one in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// In force.
    Current,
    /// Replaced by a later version.
    Superseded,
}

/// Where a record points for the next current record.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Handoff {
    /// The connector id (tool-name prefix) to search.
    pub connector: String,
    /// The exact search query.
    pub query: String,
}

/// One stored record version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// Opaque id (keyed hash).
    pub id: String,
    /// Connector id it lives in.
    pub connector: String,
    /// Record kind.
    pub kind: String,
    /// The reference a search finds it by.
    pub reference: String,
    /// Version number (superseded 1, current 2).
    pub version: u32,
    /// Current or superseded.
    pub status: Status,
    /// Date of this version.
    pub updated_on: String,
    /// Field values (filler and facts).
    pub fields: BTreeMap<String, Json>,
    /// The next record of the chain, on current records that have one.
    pub next_handoff: Option<Handoff>,
}

/// All records of a variant, indexed for the two lookups tools perform.
#[derive(Debug, Clone, Serialize)]
pub struct Store {
    /// Records in construction order.
    pub records: Vec<Record>,
    #[serde(skip)]
    by_id: HashMap<String, usize>,
    #[serde(skip)]
    by_reference: HashMap<(String, String), Vec<usize>>,
    #[serde(skip)]
    by_query: HashMap<String, Vec<usize>>,
}

impl Store {
    /// Builds the indexes.
    pub fn new(records: Vec<Record>) -> Store {
        let mut by_id = HashMap::new();
        let mut by_reference: HashMap<(String, String), Vec<usize>> = HashMap::new();
        let mut by_query: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            by_id.insert(r.id.clone(), i);
            by_query.entry(r.reference.clone()).or_default().push(i);
            by_reference
                .entry((r.connector.clone(), r.reference.clone()))
                .or_default()
                .push(i);
        }
        Store {
            records,
            by_id,
            by_reference,
            by_query,
        }
    }

    /// Records of any connector whose reference equals `query`.
    pub fn with_reference(&self, query: &str) -> impl Iterator<Item = &Record> {
        self.by_query
            .get(query)
            .into_iter()
            .flatten()
            .map(|&i| &self.records[i])
    }

    /// Records of `connector` whose reference equals `query` exactly, in stored order.
    pub fn search(&self, connector: &str, query: &str) -> Vec<&Record> {
        self.by_reference
            .get(&(connector.to_string(), query.to_string()))
            .map(|ix| ix.iter().map(|&i| &self.records[i]).collect())
            .unwrap_or_default()
    }

    /// The record with this id in `connector`, if it is of `kind`.
    pub fn get(&self, connector: &str, kind: &str, id: &str) -> Option<&Record> {
        let r = &self.records[*self.by_id.get(id)?];
        (r.connector == connector && r.kind == kind).then_some(r)
    }

    /// The record with this id, anywhere.
    pub fn by_id(&self, id: &str) -> Option<&Record> {
        self.by_id.get(id).map(|&i| &self.records[i])
    }
}

/// How the facts are laid out along the chain for a given chain length.
#[derive(Debug, Clone, Serialize)]
pub struct ChainLayout {
    /// Number of records in the chain.
    pub length: usize,
    /// Kind of each record (0-based position).
    pub kinds: Vec<String>,
    /// For each fact (intent order), the 0-based position of the record holding it.
    pub fact_position: Vec<usize>,
}

impl ChainLayout {
    /// Stage `s` (1-based, of `stages`) sits at position `ceil((s-1)(k-1)/(S-1))`:
    /// k = 1 puts everything on one record, k = S gives one stage per record, longer
    /// chains spread the stages to the first, middle and last record with pure
    /// hand-off records (of the intent's hop kind) in between.
    pub fn new(family: &Family, length: usize) -> ChainLayout {
        let def = &family.intent.def;
        let stages = def.chain.len();
        let position = |stage: usize| -> usize {
            if stages <= 1 || length <= 1 {
                0
            } else {
                ((stage - 1) * (length - 1)).div_ceil(stages - 1)
            }
        };
        let mut kinds: Vec<Option<String>> = vec![None; length];
        for (i, kind) in def.chain.iter().enumerate() {
            let p = position(i + 1);
            if kinds[p].is_none() {
                kinds[p] = Some(kind.clone());
            }
        }
        let hop = def.hop_kind.clone().unwrap_or_else(|| def.chain[0].clone());
        ChainLayout {
            length,
            kinds: kinds
                .into_iter()
                .map(|k| k.unwrap_or_else(|| hop.clone()))
                .collect(),
            fact_position: def
                .facts
                .iter()
                .map(|f| position(f.stage as usize))
                .collect(),
        }
    }

    /// Positions of records that hold at least one fact, ascending.
    pub fn evidence_positions(&self) -> Vec<usize> {
        let mut p = self.fact_position.clone();
        p.sort_unstable();
        p.dedup();
        p
    }
}

/// Derives opaque identifiers from the records key
/// ([`crate::compile::records_key`]).
pub struct Ids {
    key: [u8; 32],
}

impl Ids {
    /// Ids keyed by a records key.
    pub fn new(key: [u8; 32]) -> Ids {
        Ids { key }
    }

    fn digest(&self, parts: &[&str]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.key);
        for p in parts {
            h.update(p.as_bytes());
            h.update(&[0]);
        }
        h.finalize()
    }

    /// A record id: `rec_` and 12 hex digits.
    pub fn record(&self, connector: &str, reference: &str, version: u32) -> String {
        let d = self.digest(&["record", connector, reference, &version.to_string()]);
        format!("rec_{}", crate::family::hex(&d.as_bytes()[..6]))
    }

    /// A hand-off reference: three letters of the kind and 8 hex digits.
    pub fn reference(&self, connector: &str, kind: &str, position: usize) -> String {
        let d = self.digest(&["reference", connector, kind, &position.to_string()]);
        let prefix: String = kind
            .chars()
            .filter(char::is_ascii_alphabetic)
            .take(3)
            .collect::<String>()
            .to_ascii_uppercase();
        format!(
            "{prefix}-{}",
            crate::family::hex(&d.as_bytes()[..4]).to_ascii_uppercase()
        )
    }
}

/// Builds the store of a variant.
pub fn build(family: &Family, layout: &ChainLayout, ids: &Ids, rng: &mut ChaCha8Rng) -> Store {
    let mut records = Vec::new();
    let facts = &family.intent.def.facts;
    let current: Vec<Json> = family.facts.iter().map(|(_, v)| v.clone()).collect();
    chain_records(
        family,
        &family.route,
        layout,
        ids,
        rng,
        &mut records,
        |rng, i| {
            // The route: current values on the current version, a differing alternative on
            // the superseded one.
            let stale = pick_other(rng, &facts[i].alternatives, &current[i]);
            (current[i].clone(), Some(stale))
        },
    );
    let mirrors: Vec<Connector> = family
        .candidate_connectors()
        .into_iter()
        .filter(|(c, _)| c.collection.name == family.route.collection.name)
        .map(|(c, _)| c)
        .collect();
    for conn in &mirrors {
        chain_records(family, conn, layout, ids, rng, &mut records, |rng, i| {
            (pick_other(rng, &facts[i].alternatives, &current[i]), None)
        });
    }
    Store::new(records)
}

/// The field of a chain record that holds the reference of the record before it.
pub fn back_reference_field(previous_kind: &str) -> String {
    format!("{previous_kind}_ref")
}

/// An alternative that differs from `current` (validation guarantees one exists).
fn pick_other(rng: &mut ChaCha8Rng, alternatives: &[Json], current: &Json) -> Json {
    let others: Vec<&Json> = alternatives.iter().filter(|a| *a != current).collect();
    if others.is_empty() {
        return current.clone();
    }
    others[rng.random_range(0..others.len())].clone()
}

/// Appends one connector's chain: for each position, the current record (with its
/// hand-off to the next) and, where the value source gives a stale value for a fact it
/// holds, a superseded version without hand-off.
fn chain_records(
    family: &Family,
    conn: &Connector,
    layout: &ChainLayout,
    ids: &Ids,
    rng: &mut ChaCha8Rng,
    out: &mut Vec<Record>,
    mut values: impl FnMut(&mut ChaCha8Rng, usize) -> (Json, Option<Json>),
) {
    let cid = conn.id();
    let refs: Vec<String> = (0..layout.length)
        .map(|p| {
            if p == 0 {
                family.case_ref.clone()
            } else {
                ids.reference(&cid, &layout.kinds[p], p)
            }
        })
        .collect();
    for p in 0..layout.length {
        let kind = &layout.kinds[p];
        let filler = conn
            .collection
            .kinds
            .iter()
            .find(|k| &k.name == kind)
            .map(|k| k.filler.clone())
            .unwrap_or_default();
        let mut fields = filler;
        if p > 0 {
            fields.insert(
                back_reference_field(&layout.kinds[p - 1]),
                json!(refs[p - 1]),
            );
        }
        let mut stale_fields = fields.clone();
        let mut has_stale = false;
        for (i, fact) in family.intent.def.facts.iter().enumerate() {
            if layout.fact_position[i] != p {
                continue;
            }
            let (now, before) = values(rng, i);
            fields.insert(fact.name.clone(), now);
            if let Some(b) = before {
                stale_fields.insert(fact.name.clone(), b);
                has_stale = true;
            }
        }
        let day = 10 + (p % 18);
        let current = Record {
            id: ids.record(&cid, &refs[p], 2),
            connector: cid.clone(),
            kind: kind.clone(),
            reference: refs[p].clone(),
            version: 2,
            status: Status::Current,
            updated_on: format!("2026-05-{day:02}"),
            fields,
            next_handoff: refs.get(p + 1).map(|q| Handoff {
                connector: cid.clone(),
                query: q.clone(),
            }),
        };
        let superseded = has_stale.then(|| Record {
            id: ids.record(&cid, &refs[p], 1),
            connector: cid.clone(),
            kind: kind.clone(),
            reference: refs[p].clone(),
            version: 1,
            status: Status::Superseded,
            updated_on: format!("2026-01-{day:02}"),
            fields: stale_fields,
            next_handoff: None,
        });
        // Which version a search lists first is drawn, so position is no cue.
        match superseded {
            Some(s) if rng.random_bool(0.5) => {
                out.push(s);
                out.push(current);
            }
            Some(s) => {
                out.push(current);
                out.push(s);
            }
            None => out.push(current),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{compile, Cell, Encoding, Workflow};
    use crate::family::repository_family;

    #[test]
    fn stages_spread_to_first_middle_and_last_record() {
        let f = repository_family("overdue-escalation-harbor");
        let positions = |k: usize| ChainLayout::new(f, k).evidence_positions();
        assert_eq!(positions(1), vec![0]);
        assert_eq!(positions(2), vec![0, 1]);
        assert_eq!(positions(3), vec![0, 1, 2]);
        assert_eq!(positions(7), vec![0, 3, 6]);
        assert_eq!(positions(15), vec![0, 7, 14]);
        let layout = ChainLayout::new(f, 7);
        assert_eq!(layout.kinds[0], "invoice");
        assert_eq!(layout.kinds[1], "routing_slip");
        assert_eq!(layout.kinds[3], "commitment");
        assert_eq!(layout.kinds[6], "contact");
    }

    #[test]
    fn a_search_lists_current_and_superseded_versions_and_other_routes_hold_decoys() {
        let f = repository_family("overdue-escalation-harbor");
        let v = match compile(f, &Cell::new(8, Workflow::Low, Encoding::Raw)) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        };
        let hits = v.store.search(&v.route.connector, &f.case_ref);
        let statuses: Vec<Status> = hits.iter().map(|r| r.status).collect();
        assert_eq!(hits.len(), 2);
        assert!(statuses.contains(&Status::Current) && statuses.contains(&Status::Superseded));
        let current = hits
            .iter()
            .find(|r| r.status == Status::Current)
            .map(|r| &r.fields);
        let stale = hits
            .iter()
            .find(|r| r.status == Status::Superseded)
            .map(|r| &r.fields);
        assert_ne!(current, stale);
        let decoys: Vec<&Record> = v
            .store
            .with_reference(&f.case_ref)
            .filter(|r| r.connector != v.route.connector)
            .collect();
        assert!(!decoys.is_empty());
        for d in decoys {
            for (name, value) in &f.facts {
                assert_ne!(d.fields.get(name), Some(value), "a decoy repeats {name}");
            }
        }
    }

    /// The issue's own example: the same family at (8, low, raw) and (128, low, linked)
    /// holds the same records, ids and sources; a deeper chain holds other ids.
    #[test]
    fn siblings_in_v_and_d_share_records_ids_and_sources() {
        let f = repository_family("overdue-escalation-harbor");
        let at = |v, w, d| match compile(f, &Cell::new(v, w, d)) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        };
        let small_raw = at(8, Workflow::Low, Encoding::Raw);
        let large_linked = at(128, Workflow::Low, Encoding::Linked);
        let records = |v: &crate::compile::Variant| serde_json::to_string(&v.store.records).ok();
        assert_eq!(records(&small_raw), records(&large_linked));
        assert_eq!(small_raw.sources, large_linked.sources);
        assert_eq!(small_raw.answer_text(), large_linked.answer_text());
        assert_ne!(small_raw.variant_id, large_linked.variant_id);
        let high = at(8, Workflow::High, Encoding::Raw);
        assert_ne!(high.sources[0], small_raw.sources[0]);
    }

    #[test]
    fn each_chain_record_names_the_one_before_it() {
        let f = repository_family("overdue-escalation-harbor");
        let v = match compile(f, &Cell::new(8, Workflow::High, Encoding::Raw)) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        };
        let route: Vec<&Record> = v
            .store
            .records
            .iter()
            .filter(|r| r.connector == v.route.connector)
            .collect();
        for r in &route {
            let before = route.iter().find(|p| {
                p.next_handoff
                    .as_ref()
                    .is_some_and(|h| h.query == r.reference)
            });
            let field = before.map(|p| back_reference_field(&p.kind));
            match (before, field) {
                (Some(p), Some(name)) => assert_eq!(r.fields.get(&name), Some(&json!(p.reference))),
                _ => assert!(r.fields.keys().all(|k| !k.ends_with("_ref")), "{r:?}"),
            }
        }
    }

    #[test]
    fn record_ids_are_keyed_by_their_key() {
        let a = Ids::new([1; 32]);
        let b = Ids::new([2; 32]);
        assert_ne!(a.record("c", "INV-1", 2), b.record("c", "INV-1", 2));
        assert_eq!(a.record("c", "INV-1", 2), a.record("c", "INV-1", 2));
        assert_ne!(a.record("c", "INV-1", 2), a.record("c", "INV-1", 1));
        assert!(a.record("c", "INV-1", 2).starts_with("rec_"));
    }
}
