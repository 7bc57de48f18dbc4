//! Runtime checks of the certificate and the encodings: the certified minimum is the
//! shortest valid program, every dependency-valid order passes, and every encoding
//! decodes to the same facts at every prefix of the reference program.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;

use super::{finding, Finding};
use crate::compile::{Encoding, Variant};
use crate::family::Operation;
use crate::grade::{grade, reference::trace_in_order};
use crate::sandbox::encoding::{decode, encode, shared_blocks, View};
use crate::sandbox::Sandbox;

/// Programs up to this length are also certified by exhaustive search.
pub const BRUTE_FORCE_MAX: u32 = 4;
/// Orders checked per variant.
pub const MAX_ORDERS: usize = 24;

/// The certified minimum agrees with the reference program, every information step is
/// needed, and (for short programs) exhaustive search finds nothing shorter.
pub fn check_minimum(v: &Variant) -> Vec<Finding> {
    let mut out = Vec::new();
    let steps = &v.reference_program.steps;
    if steps.len() as u32 != v.certified_min_calls || !v.reference_program.is_well_formed() {
        out.push(finding(
            "certified_minimum",
            v,
            "the reference program is not a well-formed program of the certified length",
        ));
    }
    for skip in 0..steps.len() {
        let order: Vec<usize> = (0..steps.len()).filter(|&i| i != skip).collect();
        let verdict = grade(v, &trace_in_order(v, &order));
        if verdict.vts {
            out.push(finding(
                "certified_minimum",
                v,
                format!("the program passes without step {skip}, so the minimum is too high"),
            ));
        }
    }
    if v.certified_min_calls <= BRUTE_FORCE_MAX {
        match brute_force_minimum(v, v.certified_min_calls) {
            Some(n) if n == v.certified_min_calls as usize => {}
            Some(n) => out.push(finding(
                "certified_minimum",
                v,
                format!("exhaustive search found a program of {n} calls"),
            )),
            None => out.push(finding(
                "certified_minimum",
                v,
                "exhaustive search found no program within the certified minimum",
            )),
        }
    }
    out
}

/// The length of the shortest program (at most `max_len` calls) found by trying every
/// call an agent could make from what it has seen: each search tool with each query
/// seen, each read tool with each id seen, and the permitted write once its target is
/// known. Other writes are never tried: they can only add an unrequested change.
pub fn brute_force_minimum(v: &Variant, max_len: u32) -> Option<usize> {
    let start = Knowledge {
        queries: BTreeSet::from([first_query(v)]),
        ..Knowledge::default()
    };
    (0..=max_len as usize).find(|&depth| search(v, &Sandbox::new(v), &start, depth))
}

#[derive(Clone, Default)]
struct Knowledge {
    queries: BTreeSet<String>,
    ids: BTreeSet<String>,
    facts: BTreeSet<String>,
}

fn first_query(v: &Variant) -> String {
    v.reference_program.steps[0].call.arguments["query"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn goal(v: &Variant, sandbox: &Sandbox<'_>, k: &Knowledge) -> bool {
    let facts_done = v.facts.iter().all(|(f, _)| k.facts.contains(f));
    let changes = sandbox.changes();
    let write_done = match &v.permitted_change {
        None => changes.is_empty(),
        Some(p) => {
            changes.len() == 1
                && changes[0].tool == p.tool
                && changes[0].target == p.target
                && p.args
                    .iter()
                    .all(|(a, x)| changes[0].args.get(a) == Some(x))
        }
    };
    facts_done && write_done
}

fn search(v: &Variant, sandbox: &Sandbox<'_>, k: &Knowledge, depth: usize) -> bool {
    if goal(v, sandbox, k) {
        return true;
    }
    if depth == 0 {
        return false;
    }
    let write = v
        .reference_program
        .steps
        .iter()
        .find(|s| v.tool(&s.call.tool).is_some_and(|t| t.op.is_write()));
    for tool in &v.menu {
        let args: Vec<String> = match tool.op {
            Operation::Search => k
                .queries
                .iter()
                .map(|q| serde_json::json!({ "query": q }).to_string())
                .collect(),
            Operation::Read => k
                .ids
                .iter()
                .map(|id| serde_json::json!({ "id": id }).to_string())
                .collect(),
            _ => match write.filter(|w| w.call.tool == tool.name) {
                Some(w) => {
                    let target_known = w
                        .call
                        .arguments
                        .get("id")
                        .and_then(Json::as_str)
                        .is_none_or(|id| k.ids.contains(id));
                    if target_known {
                        vec![w.call.arguments.to_string()]
                    } else {
                        vec![]
                    }
                }
                None => vec![],
            },
        };
        for a in args {
            let mut next_box = sandbox.clone();
            let outcome = next_box.execute(&tool.name, &a);
            let mut next = k.clone();
            if let Ok(views) = decode(v.cell.d, &outcome.observation) {
                for view in views {
                    next.ids.insert(view.id.clone());
                    if let Some(q) = view.next_handoff.as_ref().and_then(|h| h["query"].as_str()) {
                        next.queries.insert(q.to_string());
                    }
                    if tool.op == Operation::Read
                        && view.status == "current"
                        && view.connector == v.route.connector
                    {
                        next.facts.extend(
                            v.facts
                                .iter()
                                .filter(|(f, _)| view.fields.contains_key(f))
                                .map(|(f, _)| f.clone()),
                        );
                    }
                }
            }
            if search(v, &next_box, &next, depth - 1) {
                return true;
            }
        }
    }
    false
}

/// Every dependency-valid order of the reference program grades VTS = true.
pub fn check_orders(v: &Variant) -> Vec<Finding> {
    let orders = v.reference_program.valid_orders(MAX_ORDERS);
    let mut out = Vec::new();
    if orders.is_empty() {
        out.push(finding(
            "alternative_orders",
            v,
            "the reference program has no valid order",
        ));
    }
    for order in orders {
        let verdict = grade(v, &trace_in_order(v, &order));
        if !verdict.vts {
            out.push(finding(
                "alternative_orders",
                v,
                format!("order {order:?} fails at {:?}", verdict.first_unmet),
            ));
        }
    }
    out
}

/// A decoded view with its keyed id replaced by what identifies the record across
/// matched variants.
/// A decoded object with its connector: matched D-siblings share the records and
/// their ids, so the views must be equal outright.
fn normalized(view: &View) -> Json {
    serde_json::json!([view.connector, view])
}

/// Every encoding decodes to the same facts at every prefix of the reference program:
/// across the D-siblings of each cell, and by re-encoding each observation in all four
/// encodings, whose shared blocks must be byte-identical.
pub fn check_encodings(variants: &[Variant]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Variant>> = BTreeMap::new();
    for v in variants {
        let key = format!(
            "{}/{:?}/{:?}/{:?}",
            v.cell.v, v.cell.w, v.cell.r, v.cell.depth
        );
        groups.entry(key).or_default().push(v);
    }
    for group in groups.values() {
        let mut per_encoding: Vec<(&Variant, Vec<Json>)> = Vec::new();
        for v in group {
            let mut sandbox = Sandbox::new(v);
            let mut seen = Vec::new();
            for (i, step) in v.reference_program.steps.iter().enumerate() {
                let outcome = sandbox.execute(&step.call.tool, &step.call.arguments.to_string());
                if v.tool(&step.call.tool).is_some_and(|t| t.op.is_write()) {
                    continue;
                }
                let views = match decode(v.cell.d, &outcome.observation) {
                    Ok(views) => views,
                    Err(e) => {
                        out.push(finding("encodings", v, format!("step {i}: {e}")));
                        continue;
                    }
                };
                for view in &views {
                    let stored = v.store.by_id(&view.id);
                    let is_read = v
                        .tool(&step.call.tool)
                        .is_some_and(|t| t.op == Operation::Read);
                    if is_read && stored.map(|r| &r.fields) != Some(&view.fields) {
                        out.push(finding(
                            "encodings",
                            v,
                            format!("step {i}: decoded fields differ from the record"),
                        ));
                    }
                }
                out.extend(reencode(v, i, &step.call.tool, &views));
                seen.push(Json::Array(views.iter().map(normalized).collect()));
            }
            per_encoding.push((v, seen));
        }
        if let Some((base, base_seen)) = per_encoding.first() {
            for (v, seen) in &per_encoding[1..] {
                if seen != base_seen {
                    out.push(finding(
                        "encodings",
                        v,
                        format!("decodes to other facts than the {:?} sibling", base.cell.d),
                    ));
                }
            }
        }
    }
    out
}

fn reencode(v: &Variant, step: usize, tool: &str, views: &[View]) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(tool) = v.tool(tool) else { return out };
    let blocks = serde_json::to_string(&shared_blocks(tool, views)).unwrap_or_default();
    for d in [
        Encoding::Raw,
        Encoding::Compact,
        Encoding::Typed,
        Encoding::Linked,
    ] {
        let text = encode(d, tool, views, &[]);
        let doc: Json = serde_json::from_str(&text).unwrap_or(Json::Null);
        for block in ["provenance", "source", "hash", "tool"] {
            let bytes = doc.get(block).map(Json::to_string).unwrap_or_default();
            let expected = serde_json::from_str::<Json>(&blocks)
                .ok()
                .and_then(|b| b.get(block).map(Json::to_string))
                .unwrap_or_default();
            if bytes != expected || !text.contains(&expected) {
                out.push(finding(
                    "encodings",
                    v,
                    format!("step {step}: the {block} block differs in {d:?}"),
                ));
            }
        }
        match decode(d, &text) {
            Ok(back) if back == views => {}
            Ok(_) => out.push(finding(
                "encodings",
                v,
                format!("step {step}: {d:?} does not round-trip"),
            )),
            Err(e) => out.push(finding("encodings", v, format!("step {step}: {e}"))),
        }
    }
    out
}

/// The structure of every observation along the reference program in the variant's own
/// encoding: provenance covers exactly the returned fields, type dictionaries cover each
/// type's fields, links are exactly the equalities with what was shown before
/// ([`check_links`]); and a search
/// that matches nothing is a legal miss (an empty `objects` list, no error).
pub fn check_observations(v: &Variant) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut sandbox = Sandbox::new(v);
    // (1-based call, decoded objects) of every record observation so far.
    let mut shown: Vec<(usize, Vec<View>)> = Vec::new();
    for (i, step) in v.reference_program.steps.iter().enumerate() {
        let outcome = sandbox.execute(&step.call.tool, &step.call.arguments.to_string());
        if v.tool(&step.call.tool).is_some_and(|t| t.op.is_write()) {
            continue;
        }
        let doc: Json = serde_json::from_str(&outcome.observation).unwrap_or(Json::Null);
        let Ok(views) = decode(v.cell.d, &outcome.observation) else {
            out.push(finding(
                "observations",
                v,
                format!("step {i} does not decode"),
            ));
            continue;
        };
        let provenance: BTreeSet<String> = doc["provenance"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let expected: BTreeSet<String> = views
            .iter()
            .enumerate()
            .flat_map(|(j, w)| w.fields.keys().map(move |f| format!("/{j}/{f}")))
            .collect();
        if provenance != expected {
            out.push(finding(
                "observations",
                v,
                format!("step {i}: provenance does not cover exactly the returned fields"),
            ));
        }
        if matches!(v.cell.d, Encoding::Typed | Encoding::Linked) {
            for w in &views {
                let declared: BTreeSet<&str> = doc["type_dictionary"][&w.kind]
                    .as_array()
                    .map(|a| a.iter().filter_map(Json::as_str).collect())
                    .unwrap_or_default();
                if w.fields.keys().any(|f| !declared.contains(f.as_str())) {
                    out.push(finding(
                        "observations",
                        v,
                        format!("step {i}: type_dictionary misses fields of {}", w.kind),
                    ));
                }
            }
        }
        if v.cell.d == Encoding::Linked {
            out.extend(check_links(v, i, &doc, &views, &shown));
        }
        shown.push((i + 1, views));
    }
    for tool in v
        .menu
        .iter()
        .filter(|t| t.op == Operation::Search && t.connector == v.route.connector)
    {
        let outcome = Sandbox::new(v).execute(&tool.name, r#"{"query":"NO-SUCH-REFERENCE"}"#);
        let doc: Json = serde_json::from_str(&outcome.observation).unwrap_or(Json::Null);
        let empty = doc["objects"].as_array().is_some_and(Vec::is_empty);
        if outcome.status != crate::sandbox::CallStatus::Miss
            || !empty
            || doc.get("error").is_some()
        {
            out.push(finding(
                "observations",
                v,
                "a search that matches nothing is not a legal miss",
            ));
        }
    }
    out
}

/// The linkable values of an object, recomputed here independently of the sandbox's
/// ledger: (pointer in its observation, location name, value).
fn linkable(i: usize, view: &View) -> Vec<(String, String, Json)> {
    let mut out = vec![(
        format!("/objects/{i}/id"),
        "@id".to_string(),
        Json::from(view.id.clone()),
    )];
    for (name, value) in &view.fields {
        if value.is_string() || value.is_number() {
            out.push((
                format!("/objects/{i}/fields/{name}"),
                name.clone(),
                value.clone(),
            ));
        }
    }
    if let Some(q) = view.next_handoff.as_ref().and_then(|h| h.get("query")) {
        if q.is_string() {
            out.push((
                format!("/objects/{i}/next_handoff/query"),
                "@next_handoff.query".to_string(),
                q.clone(),
            ));
        }
    }
    out
}

/// Links of one linked observation (call `step + 1`): every returned string or number
/// equal to a value shown earlier in the episode (or in an earlier object of this
/// observation) has a link from its pointer; every link's two ends hold equal values,
/// its target was really shown by the call it names, and its relation is described in
/// the `relation_dictionary`, which names no relation the links do not use.
fn check_links(
    v: &Variant,
    step: usize,
    doc: &Json,
    views: &[View],
    shown: &[(usize, Vec<View>)],
) -> Vec<Finding> {
    let mut out = Vec::new();
    let call = step + 1;
    let mut fail = |detail: String| out.push(finding("links", v, format!("step {step}: {detail}")));
    let earlier: Vec<(usize, &View, String, Json)> = shown
        .iter()
        .flat_map(|(c, vs)| vs.iter().map(move |w| (*c, w)))
        .chain(views.iter().map(|w| (call, w)))
        .flat_map(|(c, w)| {
            linkable(0, w)
                .into_iter()
                .map(move |(_, location, value)| (c, w, location, value))
        })
        .collect();
    let links: Vec<&Json> = doc["links"].as_array().into_iter().flatten().collect();
    let from: BTreeSet<&str> = links.iter().filter_map(|l| l["from"].as_str()).collect();
    for (i, view) in views.iter().enumerate() {
        // Candidates: earlier calls, and objects before this one in this observation.
        let before = |c: usize, w: &View| c < call || views[..i].iter().any(|x| std::ptr::eq(x, w));
        for (pointer, _, value) in linkable(i, view) {
            let seen = earlier
                .iter()
                .any(|(c, w, _, x)| before(*c, w) && *x == value);
            if seen && !from.contains(pointer.as_str()) {
                fail(format!(
                    "{pointer} equals a value shown before but has no link"
                ));
            }
        }
    }
    let dictionary = doc["relation_dictionary"].as_object();
    let mut used = BTreeSet::new();
    for link in &links {
        let relation = link["relation"].as_str().unwrap_or_default();
        used.insert(relation.to_string());
        if !dictionary.is_some_and(|d| d.contains_key(relation)) {
            fail(format!("link {link} uses an undescribed relation"));
        }
        let value = link["from"].as_str().and_then(|p| doc.pointer(p));
        let to = &link["to"];
        let target = earlier.iter().find(|(c, w, location, _)| {
            Some(*c as u64) == to["call"].as_u64()
                && to["record"].as_str() == Some(w.id.as_str())
                && to["field"].as_str() == Some(location.as_str())
        });
        match (value, target) {
            (Some(a), Some((_, _, _, b))) if a == b => {}
            _ => fail(format!("link {link} does not tie two equal shown values")),
        }
    }
    let described: BTreeSet<String> = dictionary
        .map(|d| d.keys().cloned().collect())
        .unwrap_or_default();
    if described != used {
        fail(format!(
            "relation_dictionary names {described:?} but the links use {used:?}"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{compile, Cell, Workflow};
    use crate::family::repository_family;

    /// The links check is not vacuous: along a deep linked chain it accepts the
    /// sandbox's links, and finds a dropped link and a link to the wrong call.
    #[test]
    fn the_links_check_finds_missing_and_misdirected_links() {
        let f = repository_family("overdue-escalation-harbor");
        let v = match compile(f, &Cell::new(8, Workflow::High, Encoding::Linked)) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        };
        let mut sandbox = Sandbox::new(&v);
        let mut shown: Vec<(usize, Vec<View>)> = Vec::new();
        let mut last = None;
        // Search and read the first two chain records: the second read carries a
        // same_record link and a refers_to link (its back-reference).
        for (i, step) in v.reference_program.steps[..4].iter().enumerate() {
            let text = sandbox
                .execute(&step.call.tool, &step.call.arguments.to_string())
                .observation;
            let doc: Json = serde_json::from_str(&text).unwrap_or(Json::Null);
            let views = decode(Encoding::Linked, &text).unwrap_or_default();
            assert!(check_links(&v, i, &doc, &views, &shown).is_empty(), "{doc}");
            last = Some((i, doc, views.clone()));
            shown.push((i + 1, views));
        }
        let Some((i, doc, views)) = last else {
            panic!("no observation")
        };
        shown.pop();
        let relations: BTreeSet<&str> = doc["links"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l["relation"].as_str())
            .collect();
        assert!(relations.contains("same_record") && relations.contains("refers_to"));

        let mut dropped = doc.clone();
        if let Some(links) = dropped["links"].as_array_mut() {
            links.retain(|l| l["relation"] != "refers_to");
        }
        let found = check_links(&v, i, &dropped, &views, &shown);
        assert!(
            found.iter().any(|f| f.detail.contains("has no link")),
            "{found:?}"
        );

        let mut misdirected = doc.clone();
        misdirected["links"][0]["to"]["call"] = Json::from(99);
        let found = check_links(&v, i, &misdirected, &views, &shown);
        assert!(
            found.iter().any(|f| f.detail.contains("does not tie")),
            "{found:?}"
        );
    }
}
