//! The slow reference: episodes graded by upstream's own evaluator, graded again here.
//!
//! `reference_worlds.json` was made by `scripts/toolsandbox_reference.py` (run against an
//! apple/ToolSandbox checkout at commit 165848b with upstream's pinned environment:
//! polars 0.20.31, numpy 1.26.4, scipy 1.13.1, networkx 3.2.1, rouge-score 0.1.2 with
//! NLTK's Porter stemmer). Each case is a real scenario's starting world (or a bare one)
//! with a few hand-made messages, tool calls and world changes appended, both matchers
//! as upstream holds them after construction, and the `EvaluationResult` upstream's
//! `Evaluation.evaluate` returned, its floats printed with Python's `repr`, which
//! round-trips. The comparison is exact (see `close`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::context::{Context, Namespace, Row};

use super::{evaluate, MilestoneMatch, MilestoneMatcher};

const WORLDS: &str = include_str!("reference_worlds.json");

fn tables(v: &Value) -> BTreeMap<Namespace, Vec<Row>> {
    serde_json::from_value(v.clone()).unwrap()
}

/// The pinned floats are compared for equality to the bit.
fn close(ours: f64, upstream: f64) -> bool {
    ours == upstream
}

fn mapping(v: &Value, n: usize) -> Vec<Option<(i64, f64)>> {
    let mut out = vec![None; n];
    for entry in v.as_array().unwrap() {
        let e = entry.as_array().unwrap();
        out[e[0].as_u64().unwrap() as usize] =
            Some((e[1].as_i64().unwrap(), e[2].as_f64().unwrap()));
    }
    out
}

fn ours(m: &[Option<MilestoneMatch>]) -> Vec<Option<(i64, f64)>> {
    m.iter()
        .map(|x| x.map(|x| (x.message_index, x.similarity)))
        .collect()
}

#[test]
fn upstream_grades_are_reproduced() {
    let cases: Vec<Value> = serde_json::from_str(WORLDS).unwrap();
    assert!(cases.len() >= 12);
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["case"].as_str().unwrap();
        let ctx = Context::from_tables(tables(&case["tables"]));
        let milestones = MilestoneMatcher::from_json(&case["milestone_matcher"]).unwrap();
        let minefields = MilestoneMatcher::from_json(&case["minefield_matcher"]).unwrap();
        let got = evaluate(&milestones, &minefields, &ctx).unwrap();
        let want = &case["expected"];
        let f = |k: &str| want[k].as_f64().unwrap();
        let want_milestones = mapping(&want["milestone_mapping"], got.milestone_mapping.len());
        let want_minefields = mapping(&want["minefield_mapping"], got.minefield_mapping.len());
        let same = close(got.similarity, f("similarity"))
            && close(got.milestone_similarity, f("milestone_similarity"))
            && close(got.minefield_similarity, f("minefield_similarity"))
            && ours(&got.milestone_mapping) == want_milestones
            && ours(&got.minefield_mapping) == want_minefields
            && got.turn_count as u64 == want["turn_count"].as_u64().unwrap();
        if !same {
            failures.push(format!(
                "{name}:\n  ours {:?} {:?} {:?} {:?} {}\n  upstream {want}",
                got.similarity,
                ours(&got.milestone_mapping),
                got.minefield_similarity,
                ours(&got.minefield_mapping),
                got.turn_count
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
