//! `requests.parquet` through the binary: the smoke study's apply writes one row per
//! provider request of every episode, and each episode's rows add up to its row of
//! `episodes.parquet`.

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::{Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use assert_cmd::Command;
use tbb::store::read_table;

/// The columns that identify an episode's condition in both tables.
const CONDITION: [&str; 6] = [
    "block",
    "configuration",
    "variant_id",
    "arm",
    "completion_cap",
    "repeat",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn text(batch: &RecordBatch, name: &str, row: usize) -> Option<String> {
    let column = batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    if column.is_null(row) {
        return None;
    }
    let any = column.as_any();
    if let Some(a) = any.downcast_ref::<StringArray>() {
        return Some(a.value(row).to_string());
    }
    if let Some(a) = any.downcast_ref::<UInt32Array>() {
        return Some(a.value(row).to_string());
    }
    if let Some(a) = any.downcast_ref::<UInt64Array>() {
        return Some(a.value(row).to_string());
    }
    panic!("column {name} is {:?}", column.data_type())
}

fn number(batch: &RecordBatch, name: &str, row: usize) -> u64 {
    text(batch, name, row)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{name} of row {row} is not a number"))
}

fn condition(batch: &RecordBatch, row: usize) -> Vec<String> {
    CONDITION
        .iter()
        .map(|c| text(batch, c, row).unwrap_or_default())
        .collect()
}

/// What an episode's request rows add up to.
#[derive(Debug, Default, PartialEq)]
struct Sums {
    requests: u64,
    schemas: u64,
    last_cumulative_tokens: u64,
    turns: Vec<u64>,
}

#[test]
fn the_smoke_apply_writes_one_request_row_per_request_adding_up_to_its_episode() {
    let out = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    Command::cargo_bin("tbb")
        .unwrap_or_else(|e| panic!("{e}"))
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env_remove("TBB_FAMILIES")
        .env_remove("TBB_PROMPTS")
        .env_remove("TBB_CONFIGS")
        .arg("--outputs")
        .arg(out.path())
        .arg("--lockfiles")
        .arg(out.path())
        .args(["apply", "manifests/smoke.toml"])
        .assert()
        .success();
    let study = out.path().join("smoke");
    let (episodes, _) =
        read_table(&study.join("episodes.parquet")).unwrap_or_else(|e| panic!("{e}"));
    let (requests, meta) =
        read_table(&study.join("requests.parquet")).unwrap_or_else(|e| panic!("{e}"));
    for key in ["tbb.manifest_hash", "tbb.lockfile_hash", "tbb.node_key"] {
        assert!(
            meta.iter().any(|(k, v)| k == key && !v.is_empty()),
            "no {key} in {meta:?}"
        );
    }

    let mut from_requests: BTreeMap<Vec<String>, Sums> = BTreeMap::new();
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for b in &requests {
        for r in 0..b.num_rows() {
            let sums = from_requests.entry(condition(b, r)).or_default();
            sums.requests += 1;
            sums.schemas += number(b, "visible_schemas", r);
            sums.last_cumulative_tokens = number(b, "cumulative_tokens", r);
            sums.turns.push(number(b, "turn", r));
            let kind = text(b, "response_kind", r).unwrap_or_else(|| "null".into());
            *kinds.entry(kind).or_default() += 1;
        }
    }
    let mut from_episodes: BTreeMap<Vec<String>, Sums> = BTreeMap::new();
    let mut total_requests = 0;
    for b in &episodes {
        for r in 0..b.num_rows() {
            let n = number(b, "requests", r);
            total_requests += n;
            if n == 0 {
                continue;
            }
            let previous = from_episodes.insert(
                condition(b, r),
                Sums {
                    requests: n,
                    schemas: number(b, "schema_exposures", r),
                    last_cumulative_tokens: number(b, "total_tokens", r),
                    turns: (0..n).collect(),
                },
            );
            assert!(previous.is_none(), "two episodes share a condition");
        }
    }
    let rows: usize = requests.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows as u64, total_requests);
    assert!(total_requests > 288, "{total_requests} requests");
    assert_eq!(from_requests.len(), from_episodes.len());
    for (condition, expected) in &from_episodes {
        assert_eq!(
            from_requests.get(condition),
            Some(expected),
            "episode {condition:?}"
        );
    }
    // The smoke panel's truncation-heavy configuration spends its cap on reasoning.
    assert!(
        kinds.get("reasoning_only").is_some_and(|&n| n > 0),
        "{kinds:?}"
    );
    assert!(kinds.get("tool_call").is_some_and(|&n| n > 0), "{kinds:?}");
    assert!(kinds.get("answer").is_some_and(|&n| n > 0), "{kinds:?}");
}
