//! `requests.parquet` through the binary: the smoke study's apply writes one row per
//! provider request of every episode, each request joins its episode's row of
//! `episodes.parquet` on the episode's keys (`episode_key`, `transcript_ref`), with the
//! same condition, and each episode's rows add up to its row.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::{Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use assert_cmd::Command;
use tbb::tables::read_table;

/// The keys both tables name an episode by, with one meaning in each.
const KEYS: [&str; 2] = ["episode_key", "transcript_ref"];

/// The columns that place an episode in the design, copied into its requests' rows.
const CONDITION: [&str; 9] = [
    "study",
    "block",
    "configuration",
    "variant_id",
    "arm",
    "lane",
    "completion_cap",
    "repeat",
    "schedule",
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

fn columns(batch: &RecordBatch, row: usize, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|c| text(batch, c, row).unwrap_or_default())
        .collect()
}

/// What an episode's request rows add up to, and the condition they carry.
#[derive(Debug, Default, PartialEq)]
struct Sums {
    condition: Vec<String>,
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
            let sums = from_requests.entry(columns(b, r, &KEYS)).or_default();
            let condition = columns(b, r, &CONDITION);
            assert!(
                sums.condition.is_empty() || sums.condition == condition,
                "two requests of one episode in different conditions"
            );
            sums.condition = condition;
            sums.requests += 1;
            sums.schemas += number(b, "visible_schemas", r);
            sums.last_cumulative_tokens = number(b, "cumulative_tokens", r);
            sums.turns.push(number(b, "turn", r));
            let kind = text(b, "response_kind", r).unwrap_or_else(|| "null".into());
            *kinds.entry(kind).or_default() += 1;
        }
    }
    let mut from_episodes: BTreeMap<Vec<String>, Sums> = BTreeMap::new();
    let mut episode_keys = std::collections::BTreeSet::new();
    let mut total_requests = 0;
    for b in &episodes {
        for r in 0..b.num_rows() {
            let n = number(b, "requests", r);
            total_requests += n;
            let keys = columns(b, r, &KEYS);
            assert!(
                episode_keys.insert(keys.clone()),
                "two episodes share {keys:?}"
            );
            if n == 0 {
                continue;
            }
            from_episodes.insert(
                keys,
                Sums {
                    condition: columns(b, r, &CONDITION),
                    requests: n,
                    schemas: number(b, "schema_exposures", r),
                    last_cumulative_tokens: number(b, "total_tokens", r),
                    turns: (0..n).collect(),
                },
            );
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

fn tbb(out: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("tbb")
        .unwrap_or_else(|e| panic!("{e}"))
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env_remove("TBB_FAMILIES")
        .env_remove("TBB_PROMPTS")
        .env_remove("TBB_CONFIGS")
        .arg("--outputs")
        .arg(out)
        .arg("--lockfiles")
        .arg(out)
        .args(args)
        .assert()
}

/// The cache files of one table (`blobs`, `requests`, ...).
fn cache_files(cache: &Path, table: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(cache)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{table}-")) && n.ends_with(".parquet"))
        })
        .collect()
}

#[test]
fn a_republished_requests_table_is_read_from_the_stored_requests_not_the_transcripts() {
    let out = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    tbb(out.path(), &["apply", "manifests/smoke.toml"]).success();
    let study = out.path().join("smoke");
    let cache = study.join("cache");
    let published = std::fs::read(study.join("requests.parquet")).ok();
    assert!(published.is_some());
    assert!(!cache_files(&cache, "requests").is_empty());
    // Without the blobs (the menus and prompts the transcripts refer to) no transcript
    // rebuilds its trace: only the stored requests can give the table again.
    for blobs in cache_files(&cache, "blobs") {
        std::fs::remove_file(blobs).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::remove_file(study.join("requests.parquet")).unwrap_or_else(|e| panic!("{e}"));
    tbb(out.path(), &["apply", "manifests/smoke.toml"]).success();
    assert!(
        std::fs::read(study.join("requests.parquet")).ok() == published,
        "the republished requests table differs from the one the episodes wrote"
    );
    // Reproduction reads the transcripts themselves, which now cannot rebuild.
    tbb(out.path(), &["reproduce", "manifests/smoke.toml"]).failure();
}

// ---------------------------------------------------------------------------------
// Cut first responses on the wire of each protocol, through to Table 8
// ---------------------------------------------------------------------------------

/// How a scripted first response is cut at the cap.
const CUTS: [&str; 3] = ["reasoning", "call", "text"];
/// The protocols tbb speaks (`crates/provider`).
const PROTOCOLS: [&str; 3] = ["openai", "anthropic", "gemini"];

/// The name of the first tool of a request body, in the protocol's shape.
fn first_tool(protocol: &str, request: &serde_json::Value) -> String {
    let tool = match protocol {
        "openai" => &request["tools"][0]["function"]["name"],
        "anthropic" => &request["tools"][0]["name"],
        _ => &request["tools"][0]["functionDeclarations"][0]["name"],
    };
    tool.as_str().unwrap_or("search").to_string()
}

/// A real response body of `protocol` cut at the cap (1,024 completion tokens) in the
/// way `cut` names, calling `tool` when it is cut inside a call.
fn cut_body(protocol: &str, cut: &str, tool: &str) -> serde_json::Value {
    use serde_json::json;
    match (protocol, cut) {
        ("openai", _) => {
            let (content, calls, reasoning) = match cut {
                "reasoning" => (json!(null), json!(null), 1024),
                "call" => (
                    json!(null),
                    json!([{"id": "call_1", "type": "function",
                            "function": {"name": tool, "arguments": "{\"query\": \"overdue inv"}}]),
                    990,
                ),
                _ => (
                    json!("I will first search the ledger for"),
                    json!(null),
                    1000,
                ),
            };
            let mut message = json!({"role": "assistant", "content": content});
            if !calls.is_null() {
                message["tool_calls"] = calls;
            }
            json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
                   "choices": [{"index": 0, "message": message, "finish_reason": "length"}],
                   "usage": {"prompt_tokens": 9000, "completion_tokens": 1024, "total_tokens": 10024,
                             "prompt_tokens_details": {"cached_tokens": 0},
                             "completion_tokens_details": {"reasoning_tokens": reasoning}}})
        }
        ("anthropic", _) => {
            // Anthropic reports no reasoning count: its configuration is not one of
            // Table 8's, whatever its responses hold.
            let content = match cut {
                "reasoning" => {
                    json!([{"type": "thinking", "thinking": "Which connector…", "signature": "sig"}])
                }
                "call" => json!([{"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}}]),
                _ => json!([{"type": "text", "text": "I will first search the ledger for"}]),
            };
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                   "content": content, "stop_reason": "max_tokens", "stop_sequence": null,
                   "usage": {"input_tokens": 9000, "output_tokens": 1024}})
        }
        _ => {
            // Gemini returns no partial functionCall: a call cut at the cap comes back
            // with no part, its visible tokens charged as candidates.
            let (parts, thoughts) = match cut {
                "reasoning" => (None, 1024),
                "call" => (None, 990),
                _ => (
                    Some(json!([{"text": "I will first search the ledger for"}])),
                    1000,
                ),
            };
            let mut content = json!({"role": "model"});
            if let Some(p) = parts {
                content["parts"] = p;
            }
            let mut usage = json!({"promptTokenCount": 9000, "totalTokenCount": 10024,
                                   "thoughtsTokenCount": thoughts});
            if thoughts < 1024 {
                usage["candidatesTokenCount"] = json!(1024 - thoughts);
            }
            json!({"candidates": [{"content": content, "finishReason": "MAX_TOKENS", "index": 0}],
                   "usageMetadata": usage, "modelVersion": "m"})
        }
    }
}

/// A loopback server on 127.0.0.1 answering `/<protocol>-<cut>/...` with that cut.
fn cutting_server() -> String {
    common::serve_on_loopback(axum::Router::new().fallback(
        |uri: axum::http::Uri, body: axum::body::Bytes| async move {
            let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let route = uri.path().trim_start_matches('/');
            let route = route.split('/').next().unwrap_or_default();
            let (protocol, cut) = route.split_once('-').unwrap_or(("openai", "text"));
            axum::Json(cut_body(protocol, cut, &first_tool(protocol, &request)))
        },
    ))
}

#[test]
fn cut_first_responses_of_every_protocol_are_classified_and_counted_in_table_8() {
    let origin = cutting_server();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut catalogue = String::new();
    for protocol in PROTOCOLS {
        for cut in CUTS {
            let prefix = if protocol == "gemini" { "v1beta" } else { "v1" };
            catalogue.push_str(&format!(
                "[[configuration]]\nname = \"{protocol}-{cut}\"\norganization = \"{protocol}\"\n\
                 provider = \"{protocol}\"\nmodel = \"m\"\nbase_url = \"{origin}/{protocol}-{cut}/{prefix}\"\n\
                 api_key_env = \"TBB_TEST_KEY\"\nenabled = true\ntimeout_ms = 10000\n\
                 prices = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\n\
                 retry = {{ max_attempts = 1, base_delay_ms = 1, max_delay_ms = 1, retry_on = [] }}\n\n"
            ));
        }
    }
    std::fs::write(dir.path().join("configurations.toml"), catalogue)
        .unwrap_or_else(|e| panic!("{e}"));
    // One family at V = 128 and at V = 8: the V = 8 first responses are cut too, and
    // left out of the table.
    let manifest = r#"
[study]
name = "cuts"
catalogue = "configurations.toml"

[families]
names = ["overdue-escalation-harbor"]

[[cells.list]]
v = 128
w = "low"
d = "raw"

[[cells.list]]
v = 8
w = "low"
d = "raw"

[configurations]
names = ["openai-reasoning", "openai-call", "openai-text",
         "anthropic-reasoning", "anthropic-call", "anthropic-text",
         "gemini-reasoning", "gemini-call", "gemini-text"]

[budgets]
completion_caps = [1024]

[[analyses]]
kind = "first_responses"
"#;
    std::fs::write(dir.path().join("cuts.toml"), manifest).unwrap_or_else(|e| panic!("{e}"));
    Command::cargo_bin("tbb")
        .unwrap_or_else(|e| panic!("{e}"))
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("TBB_TEST_KEY", "loopback-key")
        .env_remove("TBB_FAMILIES")
        .env_remove("TBB_PROMPTS")
        .env_remove("TBB_CONFIGS")
        .arg("--outputs")
        .arg(dir.path().join("outputs"))
        .arg("--lockfiles")
        .arg(dir.path())
        .args(["apply"])
        .arg(dir.path().join("cuts.toml"))
        .assert()
        .success();
    let study = dir.path().join("outputs/cuts");

    // Every episode's one request: the right kind, whatever the menu size.
    let (requests, _) =
        read_table(&study.join("requests.parquet")).unwrap_or_else(|e| panic!("{e}"));
    let mut seen: BTreeMap<(String, u64), (String, String, String)> = BTreeMap::new();
    for b in &requests {
        for r in 0..b.num_rows() {
            assert_eq!(number(b, "turn", r), 0, "a cut ends the episode");
            let config = text(b, "configuration", r).unwrap_or_default();
            let kind = text(b, "response_kind", r).unwrap_or_default();
            let finish = text(b, "finish_reason", r).unwrap_or_default();
            let source = text(b, "reasoning_source", r).unwrap_or_default();
            seen.insert(
                (config, number(b, "visible_schemas", r)),
                (finish, kind, source),
            );
        }
    }
    assert_eq!(seen.len(), 18, "9 configurations at V = 8 and V = 128");
    for protocol in PROTOCOLS {
        for (cut, kind) in CUTS
            .iter()
            .zip(["reasoning_only", "cut_in_tool_call", "cut_in_text"])
        {
            let source = if protocol == "anthropic" {
                "unknown"
            } else {
                "reported"
            };
            for v in [8, 128] {
                assert_eq!(
                    seen.get(&(format!("{protocol}-{cut}"), v)),
                    Some(&("length".to_string(), kind.to_string(), source.to_string())),
                    "{protocol} {cut} at V = {v}"
                );
            }
        }
    }

    // Table 8: the six reporting configurations (OpenAI and Gemini), one first response
    // each at V = 128, each cut; Anthropic's three are left out.
    let (table, _) =
        read_table(&study.join("first_responses.parquet")).unwrap_or_else(|e| panic!("{e}"));
    let t = &table[0];
    let configurations: Vec<String> = (0..t.num_rows())
        .map(|r| text(t, "configuration", r).unwrap_or_default())
        .collect();
    assert_eq!(
        configurations,
        [
            "all",
            "gemini-call",
            "gemini-reasoning",
            "gemini-text",
            "openai-call",
            "openai-reasoning",
            "openai-text"
        ]
    );
    let counts = |r: usize| -> Vec<u64> {
        [
            "configurations",
            "first_responses",
            "infra_failed",
            "cut",
            "reasoning_only",
            "cut_in_tool_call",
            "cut_in_text",
            "cut_empty",
            "never_truncating",
        ]
        .iter()
        .map(|c| number(t, c, r))
        .collect()
    };
    assert_eq!(counts(0), [6, 6, 0, 6, 2, 2, 2, 0, 0], "pooled");
    assert_eq!(counts(1), [1, 1, 0, 1, 0, 1, 0, 0, 0], "gemini-call");
    assert_eq!(counts(2), [1, 1, 0, 1, 1, 0, 0, 0, 0], "gemini-reasoning");
    assert_eq!(counts(6), [1, 1, 0, 1, 0, 0, 1, 0, 0], "openai-text");
}
