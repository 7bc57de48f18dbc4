//! `tbb certify` and `tbb reproduce` through the binary, on a fresh smoke apply: both
//! pass; one stored response rewritten in the cache makes certify fail on exactly that
//! episode; one value rewritten in a published table makes reproduce fail on exactly
//! that table; a study that was never applied, or only partly, is refused.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use assert_cmd::Command;
use serde_json::Value;

use crate::common::cache_files::{self, read, strings, write};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh outputs and lockfiles directory.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
        }
    }

    fn outputs(&self) -> PathBuf {
        self.dir.path().join("outputs")
    }

    /// `tbb --outputs … --lockfiles … ARGS`, run from the repository root.
    fn tbb(&self, args: &[&str]) -> std::process::Output {
        Command::cargo_bin("tbb")
            .unwrap_or_else(|e| panic!("{e}"))
            .current_dir(root())
            .env("NO_COLOR", "1")
            .env("COLUMNS", "1000")
            .arg("--outputs")
            .arg(self.outputs())
            .arg("--lockfiles")
            .arg(self.dir.path().join("lockfiles"))
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn applied() -> Scratch {
        let s = Scratch::new();
        let out = s.tbb(&["apply", "manifests/smoke.toml"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        s
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A diagnostic as one line: miette wraps at the terminal width, whatever it is.
fn flat(b: &[u8]) -> String {
    text(b)
        .lines()
        .map(|l| l.trim_start_matches(|c: char| c.is_whitespace() || c == '│'))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Rewrites the stored transcript of the first execute node, in cache file order, for
/// which `edit` changes something: the bytes the replay serves are the changed ones.
/// Returns the node's identity.
fn rewrite_one_transcript(outputs: &Path, edit: impl Fn(&mut Value) -> bool) -> String {
    cache_files::rewrite_one_payload(&outputs.join("smoke/cache"), "execute", |payload| {
        edit(&mut payload["transcript"])
    })
}

/// The failed rows of `certificates.parquet`: (episode, first difference).
fn failed_certificates(outputs: &Path) -> Vec<(String, String)> {
    let batch = read(&outputs.join("smoke/certificates.parquet"));
    let passed = batch
        .column_by_name("passed")
        .and_then(|c| c.as_any().downcast_ref::<BooleanArray>())
        .unwrap_or_else(|| panic!("no passed column"));
    let episodes = strings(&batch, "episode");
    let first = strings(&batch, "first_difference");
    assert_eq!(batch.num_rows(), 288, "one certificate per smoke episode");
    (0..batch.num_rows())
        .filter(|&r| !passed.value(r))
        .map(|r| (episodes.value(r).to_string(), first.value(r).to_string()))
        .collect()
}

#[test]
fn certify_passes_on_a_fresh_apply_and_fails_on_exactly_the_episode_whose_tool_call_changed() {
    let s = Scratch::applied();
    let out = s.tbb(&["certify", "manifests/smoke.toml"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("288 episodes checked, 288 passed, 0 failed"),
        "{stdout}"
    );
    assert_eq!(failed_certificates(&s.outputs()), Vec::new());
    // Each certificate names its episode by the keys `episodes.parquet` has for it.
    let keys = |table: &str| -> std::collections::BTreeSet<(String, String)> {
        let batch = read(&s.outputs().join(format!("smoke/{table}.parquet")));
        let (node, episode) = (strings(&batch, "node_key"), strings(&batch, "episode_key"));
        (0..batch.num_rows())
            .map(|i| (node.value(i).to_string(), episode.value(i).to_string()))
            .collect()
    };
    let certified = keys("certificates");
    assert_eq!(certified.len(), 288);
    assert_eq!(certified, keys("episodes"));

    // The first call of an episode that made more than one request now asks for
    // something else: the sandbox answers it differently, and the next request no
    // longer is the recorded one.
    let id = rewrite_one_transcript(&s.outputs(), |t| {
        let outcomes = t["outcomes"].as_array_mut();
        let Some(outcomes) = outcomes.filter(|o| o.len() > 1) else {
            return false;
        };
        match outcomes[0]["response"]["tool_calls"][0]["arguments"].as_str() {
            Some(_) => {
                outcomes[0]["response"]["tool_calls"][0]["arguments"] =
                    Value::String("{\"tampered\": true}".into());
                true
            }
            None => false,
        }
    });
    let out = s.tbb(&["certify", "manifests/smoke.toml"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("288 episodes checked, 287 passed, 1 failed"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("FAILED {id}: replay refused: request 2 differs from the recorded one at $.messages[2].tool_calls[0].arguments")), "{stdout}");
    let failed = failed_certificates(&s.outputs());
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].0, id);
    assert!(flat(&out.stderr).contains("1 of 288 episodes do not re-derive"));
}

#[test]
fn certify_fails_on_exactly_the_episode_whose_usage_changed_naming_the_fields() {
    let s = Scratch::applied();
    let id = rewrite_one_transcript(&s.outputs(), |t| {
        match t["outcomes"][0]["response"]["usage"]["output_tokens"].as_u64() {
            Some(n) => {
                t["outcomes"][0]["response"]["usage"]["output_tokens"] = Value::from(n + 7);
                true
            }
            None => false,
        }
    });
    let out = s.tbb(&[
        "certify",
        "manifests/smoke.toml",
        "--configurations",
        "sim-aurora-flash,sim-dunlin-max",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("287 passed, 1 failed"), "{stdout}");
    assert!(
        stdout.contains(&format!("FAILED {id}: completion_tokens: replayed ")),
        "{stdout}"
    );
    assert!(
        stdout.contains("mismatched fields: completion_tokens, cost_usd, total_tokens"),
        "{stdout}"
    );
    let failed = failed_certificates(&s.outputs());
    assert_eq!(
        failed.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(),
        [id.as_str()]
    );
}

#[test]
fn certify_refuses_a_study_never_applied_or_applied_in_part() {
    let s = Scratch::new();
    let out = s.tbb(&["certify", "manifests/smoke.toml"]);
    let stderr = flat(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("study `smoke` has not been applied"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tbb apply manifests/smoke.toml"),
        "{stderr}"
    );

    let s = Scratch::applied();
    let more =
        "configurations.names=[\"sim-aurora-flash\", \"sim-dunlin-max\", \"sim-basalt-mini\"]";
    let out = s.tbb(&["certify", "manifests/smoke.toml", "--set", more]);
    let stderr = flat(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "the cache of study `smoke` is incomplete: 144 of its 432 episodes are not in it (the first: execute[cfg=sim-basalt-mini,"
        ),
        "{stderr}"
    );

    let out = s.tbb(&[
        "certify",
        "manifests/smoke.toml",
        "--configurations",
        "sim-dunlin-mx",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the manifest runs no configuration `sim-dunlin-mx`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("did you mean `sim-dunlin-max`?"),
        "{stderr}"
    );

    // One configuration only: its episodes, all passing.
    let out = s.tbb(&[
        "certify",
        "manifests/smoke.toml",
        "--configurations",
        "sim-dunlin-max",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("144 episodes checked, 144 passed, 0 failed"),
        "{stdout}"
    );
}

#[test]
fn reproduce_passes_on_a_fresh_apply_and_fails_on_exactly_the_table_edited_by_hand() {
    let s = Scratch::applied();
    let out = s.tbb(&["reproduce", "manifests/smoke.toml"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        // 18 tables, report.md and .html, 9 figures, episodes.html and 18 episode
        // pages (the failures the report links and their matched episodes: 8 failing,
        // 10 passing).
        stdout.contains("48 files checked (48 byte-identical), 48 passed, 0 failed"),
        "{stdout}"
    );

    // One estimate of the contrasts table, rewritten.
    let contrasts = s.outputs().join("smoke/contrasts.parquet");
    let batch = read(&contrasts);
    let at = batch
        .schema()
        .index_of("estimate_pp")
        .unwrap_or_else(|e| panic!("{e}"));
    let old = batch
        .column(at)
        .as_any()
        .downcast_ref::<arrow_array::Float64Array>()
        .unwrap_or_else(|| panic!("estimate_pp is not f64"));
    let published = old.value(0);
    let mut values: Vec<Option<f64>> = old.iter().collect();
    values[0] = Some(published + 0.5);
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    columns[at] = Arc::new(arrow_array::Float64Array::from(values));
    write(
        &contrasts,
        &RecordBatch::try_new(batch.schema(), columns).unwrap_or_else(|e| panic!("{e}")),
    );
    // And one table written again unchanged by another writer: same values, other bytes.
    let truncation = s.outputs().join("smoke/truncation.parquet");
    write(&truncation, &read(&truncation));

    let out = s.tbb(&["reproduce", "manifests/smoke.toml"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!(
            "FAILED contrasts.parquet: column estimate_pp row 0: published {:?}, recomputed {published:?}",
            published + 0.5
        )),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("FAILED truncation.parquet: every typed field agrees, but the bytes differ"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("FAILED").count(), 2, "{stdout}");
    assert!(
        stdout.contains("48 files checked (46 byte-identical), 46 passed, 2 failed"),
        "{stdout}"
    );
    assert!(flat(&out.stderr).contains("2 of 48 published files do not reproduce"));
}

#[test]
fn reproduce_refuses_a_study_never_applied() {
    let s = Scratch::new();
    let out = s.tbb(&["reproduce", "manifests/smoke.toml"]);
    let stderr = flat(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("study `smoke` has not been applied"),
        "{stderr}"
    );
}

/// Each study draws its own episodes: `tbb run-episode --study smoke` reruns the smoke
/// study's episode (its key, so its seed), while the same episode outside any study, or
/// in another, is another draw.
#[test]
fn run_episode_with_its_study_reruns_that_studys_episode() {
    let s = Scratch::applied();
    let batch = read(&s.outputs().join("smoke/episodes.parquet"));
    let text_column = |name: &str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<arrow_array::StringArray>())
            .unwrap_or_else(|| panic!("episodes.parquet has a text column {name}"))
            .clone()
    };
    let v = batch
        .column_by_name("v")
        .and_then(|c| c.as_any().downcast_ref::<arrow_array::UInt32Array>())
        .unwrap_or_else(|| panic!("episodes.parquet has v"))
        .clone();
    let (config, family, w, d, lane, key) = (
        text_column("configuration"),
        text_column("family"),
        text_column("w"),
        text_column("d"),
        text_column("lane"),
        text_column("episode_key"),
    );
    let row = (0..batch.num_rows())
        .find(|&i| {
            config.value(i) == "sim-dunlin-max"
                && family.value(i) == "overdue-escalation-harbor"
                && v.value(i) == 8
                && w.value(i) == "low"
                && d.value(i) == "raw"
                && lane.value(i) == "routed"
        })
        .unwrap_or_else(|| panic!("the smoke study has the episode"));
    let published = key.value(row).to_string();
    let rerun = |extra: &[&str]| -> String {
        let mut args = vec![
            "run-episode",
            "--config",
            "sim-dunlin-max",
            "--family",
            "overdue-escalation-harbor",
            "--lane",
            "routed",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = s.tbb(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
        json["episode_key"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(rerun(&["--study", "smoke"]), published);
    assert_ne!(rerun(&[]), published, "outside any study: another draw");
    assert_ne!(
        rerun(&["--study", "capacity"]),
        published,
        "in another study: another draw"
    );
}
