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
fn normalized(v: &Variant, view: &View) -> Json {
    let identity = v
        .store
        .by_id(&view.id)
        .map(|r| (r.connector.clone(), r.kind.clone(), r.version));
    serde_json::json!([
        identity,
        view.kind,
        view.version,
        view.status,
        view.updated_on,
        view.fields
            .iter()
            .filter(|(k, _)| *k != "reference")
            .collect::<BTreeMap<_, _>>(),
        view.next_handoff.is_some()
    ])
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
                seen.push(Json::Array(
                    views.iter().map(|w| normalized(v, w)).collect(),
                ));
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
        let text = encode(d, tool, views);
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
/// type's fields, links resolve to equal values under a known relation; and a search
/// that matches nothing is a legal miss (an empty `objects` list, no error).
pub fn check_observations(v: &Variant) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut sandbox = Sandbox::new(v);
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
            for link in doc["links"].as_array().into_iter().flatten() {
                let at = |k: &str| link[k].as_str().and_then(|p| doc.pointer(p));
                let known = doc["relation_dictionary"]
                    .get(link["relation"].as_str().unwrap_or_default())
                    .is_some();
                if at("from").is_none() || at("from") != at("to") || !known {
                    out.push(finding(
                        "observations",
                        v,
                        format!("step {i}: link {link} does not resolve to equal values"),
                    ));
                }
            }
        }
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
