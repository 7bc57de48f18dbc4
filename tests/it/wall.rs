//! The walls are the crate graph. The agent crate (chat types, the simulated panel, the
//! router and the controller) and the provider crate must not depend, directly or
//! through another crate of ours, on the core crate (families, compiler, sandbox,
//! grader) or on anything that holds it; and inside the engine's half every crate may
//! use only the crates below it (`docs/architecture.md`, "The crates"): an analysis
//! cannot read a manifest, the harness cannot build a table row, the report cannot run
//! an analysis's pipeline. `cargo build` then refuses any source that crosses a wall;
//! these tests guard the manifests that make it so, reading the resolved graph from
//! `cargo metadata`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Every workspace crate with the workspace crates it depends on (all kinds: normal,
/// dev and build, on every target).
fn workspace_graph() -> BTreeMap<String, BTreeSet<String>> {
    graph_of(|_| true)
}

/// Every workspace crate with the workspace crates it depends on to build its library
/// and binaries (normal dependencies only; a test may use a crate its library may not,
/// as long as that crate is below it).
fn normal_graph() -> BTreeMap<String, BTreeSet<String>> {
    graph_of(|d| d["kind"].is_null())
}

fn graph_of(keep: impl Fn(&Value) -> bool) -> BTreeMap<String, BTreeSet<String>> {
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
                .filter(|d| keep(d))
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
        for forbidden in ["tbb-core", "tbb-toolsandbox", "tbb-engine", "tbb"] {
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

/// The arrows of `docs/architecture.md`: the workspace crates each crate's library may
/// use directly. The diagnostics crate is a leaf every crate may use.
const ARROWS: &[(&str, &[&str])] = &[
    ("tbb-diag", &[]),
    ("tbb-core", &["tbb-diag"]),
    ("tbb-toolsandbox", &[]),
    ("tbb-agent", &[]),
    ("tbb-provider", &["tbb-agent", "tbb-diag"]),
    (
        "tbb-harness",
        &[
            "tbb-core",
            "tbb-toolsandbox",
            "tbb-agent",
            "tbb-provider",
            "tbb-diag",
        ],
    ),
    (
        "tbb-tables",
        &["tbb-harness", "tbb-core", "tbb-toolsandbox", "tbb-diag"],
    ),
    ("tbb-analysis", &["tbb-tables", "tbb-diag"]),
    ("tbb-report", &["tbb-analysis", "tbb-tables", "tbb-diag"]),
    (
        "tbb-engine",
        &[
            "tbb-report",
            "tbb-analysis",
            "tbb-tables",
            "tbb-harness",
            "tbb-core",
            "tbb-toolsandbox",
            "tbb-provider",
            "tbb-agent",
            "tbb-diag",
        ],
    ),
];

#[test]
fn every_crate_uses_only_the_crates_below_it() {
    let normal = normal_graph();
    let all = workspace_graph();
    for (name, allowed) in ARROWS {
        let allowed: BTreeSet<String> = allowed.iter().map(|a| a.to_string()).collect();
        let Some(direct) = normal.get(*name) else {
            panic!("{name} is not in the workspace")
        };
        let extra: Vec<&String> = direct.difference(&allowed).collect();
        assert!(
            extra.is_empty(),
            "{name} depends on {extra:?}, which the arrows do not allow (allowed: {allowed:?})"
        );
        // Its tests may use more, but only crates its library can already reach: no
        // test dependency points up.
        let below: BTreeSet<String> = allowed
            .iter()
            .flat_map(|a| std::iter::once(a.clone()).chain(reach(&normal, a)))
            .collect();
        let upward: Vec<&String> = all[*name].difference(&below).collect();
        assert!(
            upward.is_empty(),
            "{name}'s tests depend on {upward:?}, which sit above it"
        );
    }
    let ours: BTreeSet<&str> = ARROWS.iter().map(|(n, _)| *n).chain(["tbb"]).collect();
    let unlisted: Vec<&String> = all.keys().filter(|k| !ours.contains(k.as_str())).collect();
    assert!(
        unlisted.is_empty(),
        "{unlisted:?} have no arrows: add them to ARROWS and docs/architecture.md"
    );
}

#[test]
fn the_analyses_cannot_reach_the_manifest_the_pipeline_or_the_report() {
    let graph = normal_graph();
    let analysis = reach(&graph, "tbb-analysis");
    for forbidden in ["tbb-engine", "tbb-report", "tbb"] {
        assert!(
            !analysis.contains(forbidden),
            "the analyses reach {forbidden}: {analysis:?}"
        );
    }
    let harness = reach(&graph, "tbb-harness");
    for forbidden in ["tbb-tables", "tbb-analysis", "tbb-report", "tbb-engine"] {
        assert!(
            !harness.contains(forbidden),
            "the harness reaches {forbidden}: {harness:?}"
        );
    }
}

/// The crates that make up a TOML stack; two versions of any of them mean two parsers
/// (and two renderers) that can disagree about the same file.
const TOML_STACK: [&str; 6] = [
    "toml",
    "toml_edit",
    "toml_datetime",
    "toml_parser",
    "toml_writer",
    "serde_spanned",
];

#[test]
fn the_workspace_builds_one_toml_stack() {
    // Regression: figment's unused `toml` feature built toml 0.8 (and toml_edit 0.22
    // was pinned to match it) beside the toml 0.9 that reads families and catalogues.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--workspace",
            "--duplicates",
            "--edges",
            "normal",
            "--prefix",
            "depth",
            "--format",
            "{p}",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("cargo tree: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Depth 0 lines are the duplicated crates; deeper ones are what pulls them in.
    let listing = String::from_utf8_lossy(&out.stdout);
    let twice: BTreeSet<&str> = listing
        .lines()
        .filter_map(|line| line.strip_prefix('0')?.split_whitespace().next())
        .filter(|name| TOML_STACK.contains(name))
        .collect();
    assert!(
        twice.is_empty(),
        "built in two versions: {twice:?}\n{listing}"
    );
}
