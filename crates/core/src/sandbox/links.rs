//! What an episode has been shown, and the equality links of the linked encoding.
//!
//! Owns the ledger of every value the sandbox has returned in a record observation (a
//! search listing or a read) and the rule that turns equalities with that ledger into
//! `links`. A link ties one value of the returned objects to an equal value the episode
//! saw earlier (in an earlier call, or in an earlier object of the same observation):
//! a read's id to the search hit that listed it, a commitment's `invoice_ref` to the
//! invoice whose reference a search showed, a search hit's reference to the hand-off
//! that named it, or any other equal field value.
//!
//! Locations are named the same way on both ends: a record field by its name, and the
//! envelope by compact's `@` names (`@id`, `@next_handoff.query`), which no field can
//! take. Only strings and numbers are linked (booleans and nulls match too much to
//! mean anything). For each returned location and each earlier (record, location) it
//! equals, one link, to the first call that showed it; links are listed in object,
//! location and ledger order, so they depend only on the episode's observations.
//!
//! Never: reads the variant, the answer or anything the episode was not shown. The
//! ledger is filled whatever the encoding (so every encoding sees the same episode), but
//! only the linked encoding prints links.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use serde_json::{json, Value as Json};

use super::encoding::View;

/// The envelope location of a record's id.
pub const ID: &str = "@id";
/// The envelope location of a record's hand-off query.
pub const HANDOFF_QUERY: &str = "@next_handoff.query";
/// The search-listing field that carries a record's reference.
const REFERENCE: &str = "reference";

/// What an equality means, named in each linked observation's `relation_dictionary`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// Both ends are the id of one record: the record was shown before.
    SameRecord,
    /// Both records carry the same reference: versions of one record, or the same case
    /// in two places.
    SameReference,
    /// A record's reference equals a hand-off query: this is the record the hand-off named.
    HandoffTarget,
    /// A field holds the reference or the id of another record.
    RefersTo,
    /// Any other pair of equal values.
    SameValue,
}

impl Relation {
    fn between(from: &str, to: &str) -> Relation {
        let pair = |a: &str, b: &str| (from == a && to == b) || (from == b && to == a);
        if from == ID && to == ID {
            Relation::SameRecord
        } else if from == REFERENCE && to == REFERENCE {
            Relation::SameReference
        } else if pair(REFERENCE, HANDOFF_QUERY) {
            Relation::HandoffTarget
        } else if [from, to].iter().any(|l| *l == ID || *l == REFERENCE) {
            Relation::RefersTo
        } else {
            Relation::SameValue
        }
    }

    /// The relation's description in the `relation_dictionary`.
    pub fn description(self) -> &'static str {
        match self {
            Relation::SameRecord => "both ends are the id of the same record, shown earlier",
            Relation::SameReference => {
                "both records carry this reference: two versions of one record, or one case in two places"
            }
            Relation::HandoffTarget => {
                "this record's reference is the query of an earlier record's next_handoff"
            }
            Relation::RefersTo => "the field holds the reference or id of the record at `to`",
            Relation::SameValue => "the two fields hold equal values",
        }
    }

    /// The relation's name in links.
    pub fn name(self) -> &'static str {
        match self {
            Relation::SameRecord => "same_record",
            Relation::SameReference => "same_reference",
            Relation::HandoffTarget => "handoff_target",
            Relation::RefersTo => "refers_to",
            Relation::SameValue => "same_value",
        }
    }
}

/// One link of a linked observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// JSON pointer into this observation (`/objects/0/fields/invoice_ref`).
    pub from: String,
    /// The 1-based index of the call whose observation showed the other end.
    pub call: usize,
    /// The record holding the other end.
    pub record: String,
    /// Its location: a field name, [`ID`] or [`HANDOFF_QUERY`].
    pub location: String,
    /// What the equality means.
    pub relation: Relation,
}

impl Link {
    /// The link as it appears in an observation.
    pub fn to_json(&self) -> Json {
        json!({
            "from": self.from,
            "to": { "call": self.call, "record": self.record, "field": self.location },
            "relation": self.relation.name(),
        })
    }
}

/// One shown value.
#[derive(Debug, Clone)]
struct Entry {
    call: usize,
    record: String,
    location: String,
}

/// Every linkable value the episode has been shown, indexed by value.
#[derive(Debug, Clone, Default)]
pub struct Shown {
    entries: Vec<Entry>,
    by_value: HashMap<String, Vec<usize>>,
}

/// The linkable locations of one object: (pointer, location, value key).
fn locations(i: usize, v: &View) -> Vec<(String, String, String)> {
    let mut out = vec![(
        format!("/objects/{i}/id"),
        ID.to_string(),
        key(&json!(v.id)),
    )];
    for (name, value) in &v.fields {
        if value.is_string() || value.is_number() {
            out.push((
                format!("/objects/{i}/fields/{name}"),
                name.clone(),
                key(value),
            ));
        }
    }
    if let Some(query) = v.next_handoff.as_ref().and_then(|h| h.get("query")) {
        if query.is_string() {
            out.push((
                format!("/objects/{i}/next_handoff/query"),
                HANDOFF_QUERY.to_string(),
                key(query),
            ));
        }
    }
    out
}

/// Equal JSON scalars have equal canonical text.
fn key(value: &Json) -> String {
    value.to_string()
}

impl Shown {
    /// The links of an observation of `views` returned by call `call` (1-based), against
    /// everything shown before it; then adds the views to the ledger.
    pub fn observe(&mut self, call: usize, views: &[View]) -> Vec<Link> {
        let mut links = Vec::new();
        for (i, v) in views.iter().enumerate() {
            let mine = locations(i, v);
            for (pointer, location, value) in &mine {
                let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
                for &e in self.by_value.get(value).into_iter().flatten() {
                    let entry = &self.entries[e];
                    // One link per earlier (record, location), to the first call that
                    // showed it; the ledger is in call order.
                    if !seen.insert((&entry.record, &entry.location)) {
                        continue;
                    }
                    links.push(Link {
                        from: pointer.clone(),
                        call: entry.call,
                        record: entry.record.clone(),
                        location: entry.location.clone(),
                        relation: Relation::between(location, &entry.location),
                    });
                }
            }
            // Later objects of this observation link to this one.
            for (_, location, value) in mine {
                self.by_value
                    .entry(value)
                    .or_default()
                    .push(self.entries.len());
                self.entries.push(Entry {
                    call,
                    record: v.id.clone(),
                    location,
                });
            }
        }
        links
    }
}

/// The relations a set of links uses, each once, in a stable order.
pub fn relations(links: &[Link]) -> BTreeSet<Relation> {
    links.iter().map(|l| l.relation).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn view(id: &str, fields: &[(&str, Json)], handoff: Option<&str>) -> View {
        View {
            id: id.into(),
            kind: "k".into(),
            version: 2,
            status: "current".into(),
            updated_on: "2026-05-10".into(),
            fields: fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
            next_handoff: handoff.map(|q| json!({"connector": "c", "query": q})),
            connector: "c".into(),
        }
    }

    fn names(links: &[Link]) -> Vec<(String, usize, String, String, &'static str)> {
        links
            .iter()
            .map(|l| {
                (
                    l.from.clone(),
                    l.call,
                    l.record.clone(),
                    l.location.clone(),
                    l.relation.name(),
                )
            })
            .collect()
    }

    /// A two-record chain, by hand: search, read, search the hand-off, read.
    #[test]
    fn a_chain_links_each_step_to_what_came_before() {
        let mut shown = Shown::default();
        let hit = view("rec_a", &[("reference", json!("INV-1"))], None);
        assert!(shown.observe(1, &[hit]).is_empty());
        let invoice = view(
            "rec_a",
            &[("currency", json!("EUR")), ("flag", json!(true))],
            Some("COM-9"),
        );
        assert_eq!(
            names(&shown.observe(2, &[invoice])),
            vec![(
                "/objects/0/id".into(),
                1,
                "rec_a".into(),
                ID.into(),
                "same_record"
            )]
        );
        let next = view("rec_b", &[("reference", json!("COM-9"))], None);
        assert_eq!(
            names(&shown.observe(3, &[next])),
            vec![(
                "/objects/0/fields/reference".into(),
                2,
                "rec_a".into(),
                HANDOFF_QUERY.into(),
                "handoff_target"
            )]
        );
        let commitment = view(
            "rec_b",
            &[("currency", json!("EUR")), ("invoice_ref", json!("INV-1"))],
            None,
        );
        assert_eq!(
            names(&shown.observe(4, &[commitment])),
            vec![
                (
                    "/objects/0/id".into(),
                    3,
                    "rec_b".into(),
                    ID.into(),
                    "same_record"
                ),
                (
                    "/objects/0/fields/currency".into(),
                    2,
                    "rec_a".into(),
                    "currency".into(),
                    "same_value"
                ),
                (
                    "/objects/0/fields/invoice_ref".into(),
                    1,
                    "rec_a".into(),
                    "reference".into(),
                    "refers_to"
                ),
            ]
        );
    }

    #[test]
    fn objects_of_one_observation_link_to_earlier_ones_once_per_record() {
        let mut shown = Shown::default();
        let a = view("rec_a", &[("reference", json!("X"))], None);
        let b = view("rec_b", &[("reference", json!("X"))], None);
        let links = shown.observe(1, &[a.clone(), b]);
        assert_eq!(
            names(&links),
            vec![(
                "/objects/1/fields/reference".into(),
                1,
                "rec_a".into(),
                "reference".into(),
                "same_reference"
            )]
        );
        // Shown twice, linked once, to the first call.
        shown.observe(2, &[a]);
        let c = view("rec_c", &[("other", json!("X"))], None);
        let targets: Vec<(usize, String)> = shown
            .observe(3, &[c])
            .iter()
            .map(|l| (l.call, l.record.clone()))
            .collect();
        assert_eq!(targets, vec![(1, "rec_a".into()), (1, "rec_b".into())]);
    }
}
