//! Static checks: nested menus, matched variants that differ only in their pressure
//! (siblings that differ in V or D hold the same store and show the same provenance,
//! source, hash and tool blocks and answer at every prefix of the reference program),
//! and byte-identical regeneration.

use std::collections::{BTreeMap, BTreeSet};

use super::{finding, Finding};
use serde_json::Value as Json;

use crate::compile::{cell::MENU_SIZES, compile, menu::menu, Routing, Variant, Workflow};
use crate::family::Family;
use crate::sandbox::Sandbox;

/// Menus are nested (8 ⊂ 32 ⊂ 128) at both routing levels, keep their relative order,
/// and always hold every operational tool.
pub fn check_nested_menus(family: &Family) -> Vec<Finding> {
    let mut out = Vec::new();
    let fail = |detail: String| Finding {
        check: "nested_menus",
        family: family.name.clone(),
        cell: None,
        detail,
    };
    let operational = family.operational_tools();
    for r in [Routing::Low, Routing::High] {
        let mut smaller: Option<Vec<String>> = None;
        for v in MENU_SIZES {
            let Some(m) = menu(family, usize::from(v), r) else {
                out.push(fail(format!("no menu of {v} at routing {r:?}")));
                continue;
            };
            let names: Vec<String> = m.iter().map(|t| t.name.clone()).collect();
            let distinct: BTreeSet<&String> = names.iter().collect();
            if names.len() != usize::from(v) || distinct.len() != names.len() {
                out.push(fail(format!(
                    "menu {v} at {r:?} has {} tools, {} distinct",
                    names.len(),
                    distinct.len()
                )));
            }
            if let Some(missing) = operational.iter().find(|o| !distinct.contains(o)) {
                out.push(fail(format!(
                    "menu {v} at {r:?} lacks operational tool {missing}"
                )));
            }
            if let Some(s) = &smaller {
                let kept: Vec<&String> = names.iter().filter(|n| s.contains(n)).collect();
                if kept.len() != s.len() || kept.iter().zip(s).any(|(a, b)| *a != b) {
                    out.push(fail(format!(
                        "menu {v} at {r:?} does not contain the smaller menu in the same order"
                    )));
                }
            }
            smaller = Some(names);
        }
    }
    out
}

/// What must not change across variants that differ in V, D or R: the whole store,
/// ids and hand-off references included (they are keyed by the family and the chain
/// length only).
fn store_signature(v: &Variant) -> String {
    serde_json::to_string(&v.store.records).unwrap_or_default()
}

/// The four encoding-independent blocks of every observation along the reference
/// program, as bytes, plus the answer: what siblings that differ only in V or D must
/// share byte for byte.
fn shared_trace(v: &Variant) -> Vec<String> {
    let mut sandbox = Sandbox::new(v);
    let mut out = vec![v.answer_text()];
    for step in &v.reference_program.steps {
        let outcome = sandbox.execute(&step.call.tool, &step.call.arguments.to_string());
        let doc: Json = serde_json::from_str(&outcome.observation).unwrap_or(Json::Null);
        for block in ["provenance", "source", "hash", "tool"] {
            out.push(format!(
                "{block}:{}",
                doc.get(block).map(Json::to_string).unwrap_or_default()
            ));
        }
    }
    out
}

/// Matched variants differ only in their pressure.
pub fn check_matched(family: &Family, variants: &[Variant]) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(first) = variants.first() else {
        return out;
    };
    let stages = family.intent.def.chain.len();
    for v in variants {
        if v.user_request != first.user_request {
            out.push(finding(
                "matched",
                v,
                "the user request differs from another cell's",
            ));
        }
        if v.decision != first.decision || v.facts != first.facts {
            out.push(finding(
                "matched",
                v,
                "the answer's decision or facts differ from another cell's",
            ));
        }
        let expected_sources = match (v.cell.depth, v.cell.w) {
            (Some(_), _) | (None, Workflow::High) => stages,
            (None, Workflow::Medium) => stages.min(2),
            (None, Workflow::Low) => 1,
        };
        let expected_sources = expected_sources.min(v.layout.length);
        if v.sources.len() != expected_sources {
            out.push(finding(
                "matched",
                v,
                format!(
                    "sources has {} entries, expected {expected_sources}",
                    v.sources.len()
                ),
            ));
        }
        match compile(family, &v.cell) {
            Ok(again) => {
                let a = serde_json::to_string(v).unwrap_or_default();
                let b = serde_json::to_string(&again).unwrap_or_default();
                if a != b || again.variant_hash != v.variant_hash {
                    out.push(finding(
                        "regeneration",
                        v,
                        "recompiling gave a different variant",
                    ));
                }
            }
            Err(e) => out.push(finding("regeneration", v, e.to_string())),
        }
    }
    // Same workflow (or depth): only V, D and R differ, so the store's content, the
    // limits and the evidence count are shared.
    let mut by_chain: BTreeMap<(Option<u8>, Workflow), Vec<&Variant>> = BTreeMap::new();
    // Same menu size and routing: only W, D (or depth) differ, so the menu is shared.
    let mut by_menu: BTreeMap<(u16, Routing), Vec<&Variant>> = BTreeMap::new();
    for v in variants {
        by_chain
            .entry((v.cell.depth, v.cell.w))
            .or_default()
            .push(v);
        by_menu.entry((v.cell.v, v.cell.r)).or_default().push(v);
    }
    for group in by_chain.values() {
        let base = group[0];
        let sig = store_signature(base);
        let trace = shared_trace(base);
        for v in &group[1..] {
            if shared_trace(v) != trace {
                out.push(finding(
                    "siblings",
                    v,
                    format!(
                        "the answer or a provenance, source, hash or tool block along the reference program differs from the sibling at {}",
                        base.cell
                    ),
                ));
            }
            if store_signature(v) != sig {
                out.push(finding(
                    "matched",
                    v,
                    format!(
                        "the store's content differs from the matched variant at {}",
                        base.cell
                    ),
                ));
            }
            if v.certified_min_calls != base.certified_min_calls
                || v.sources.len() != base.sources.len()
            {
                out.push(finding(
                    "matched",
                    v,
                    format!(
                        "limits or evidence differ from the matched variant at {}",
                        base.cell
                    ),
                ));
            }
        }
    }
    for group in by_menu.values() {
        let base = group[0].menu_names();
        for v in &group[1..] {
            if v.menu_names() != base {
                out.push(finding(
                    "matched",
                    v,
                    format!(
                        "the menu differs from the matched variant at {}",
                        group[0].cell
                    ),
                ));
            }
        }
    }
    out
}
