//! The wall around the agents is the crate graph: the agent crate (chat types, the
//! simulated panel, and later the router and the controller) and the provider crate
//! must not depend, directly or through another crate of ours, on the core crate
//! (families, compiler, sandbox, grader) or on the engine that holds it. `cargo build`
//! then refuses any source that names the core; this test guards the manifests that
//! make it so, reading the resolved graph from `cargo metadata`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Every workspace crate with the workspace crates it depends on (all kinds: normal,
/// dev and build, on every target).
fn workspace_graph() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("cargo metadata: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    let packages = meta["packages"].as_array().cloned().unwrap_or_default();
    let ours: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| d["name"].as_str())
                .filter(|d| ours.contains(*d))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().unwrap_or_default().to_string(), deps)
        })
        .collect()
}

/// Everything `from` reaches through the workspace graph.
fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(c) = todo.pop() {
        for d in graph.get(&c).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn the_agent_side_cannot_reach_the_core() {
    let graph = workspace_graph();
    for crate_name in [
        "tbb-core",
        "tbb-agent",
        "tbb-provider",
        "tbb-engine",
        "tbb-diag",
    ] {
        assert!(
            graph.contains_key(crate_name),
            "{crate_name} is not in the workspace"
        );
    }
    for blind in ["tbb-agent", "tbb-provider"] {
        let reached = reach(&graph, blind);
        for forbidden in ["tbb-core", "tbb-engine", "tbb"] {
            assert!(
                !reached.contains(forbidden),
                "{blind} reaches {forbidden}: {reached:?}"
            );
        }
    }
    assert!(reach(&graph, "tbb-agent").is_subset(&BTreeSet::from(["tbb-diag".to_string()])));
    let core = reach(&graph, "tbb-core");
    assert!(
        core.is_subset(&BTreeSet::from(["tbb-diag".to_string()])),
        "the core depends only on the diagnostics crate: {core:?}"
    );
}

#[test]
fn the_engine_is_where_core_and_agent_meet() {
    let graph = workspace_graph();
    let engine = reach(&graph, "tbb-engine");
    for needed in ["tbb-core", "tbb-agent", "tbb-provider"] {
        assert!(engine.contains(needed), "the engine must use {needed}");
    }
}
