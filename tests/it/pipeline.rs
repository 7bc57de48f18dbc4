//! The experiment engine through the binary: `tbb plan`, `apply`, `status`, `explain`,
//! `dag`, on small studies in temporary directories (families from the repository;
//! manifests, catalogue, prompts, outputs and lockfiles copied or written per test).

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use common::{line_starting, repo};
use serde_json::Value;
use tbb::pipeline::lock::OutputsLock;
use tbb::tables::read_table;

/// Two families of two intents, two configurations (one truncates, one never does),
/// the capacity cells, two arms (the routed menu with the base and with the workflow
/// prompt): 96 episodes.
const TINY: &str = r#"
repeats = 1

[study]
name = "tiny"
catalogue = "configurations.toml"

[families]
names = ["overdue-escalation-harbor", "phishing-report-triage-kestrel"]

[cells]
preset = "capacity"

[configurations]
names = ["sim-aurora-flash", "sim-dunlin-max"]

[budgets]
completion_caps = [1024]

[[analyses]]
kind = "contrasts"
draws = 200
seed = 7
cluster_units = ["family", "configuration"]

[[analyses]]
kind = "costs"

[[analyses]]
kind = "report"

[[arms]]
name = "base"

[[arms]]
name = "workflow"
prompt = "workflow"
"#;

/// A study directory: `manifests/`, `prompts/`, and whatever tbb writes.
struct Study {
    dir: tempfile::TempDir,
    name: String,
}

impl Study {
    fn new(manifest: &str) -> Study {
        Study::named("tiny", manifest)
    }

    fn named(name: &str, manifest: &str) -> Study {
        let study = Study {
            dir: common::scratch(),
            name: name.to_string(),
        };
        study.write_manifest(manifest);
        study
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn manifest(&self) -> String {
        format!("manifests/{}.toml", self.name)
    }

    fn write_manifest(&self, text: &str) {
        std::fs::write(self.path(&self.manifest()), text).unwrap_or_else(|e| panic!("{e}"));
    }

    fn outputs(&self) -> PathBuf {
        self.path("outputs/tiny")
    }

    fn tbb(&self) -> Command {
        common::tbb_in(self.dir.path())
    }

    fn std_command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("tbb"));
        cmd.current_dir(self.dir.path())
            .env("TBB_FAMILIES", repo().join("families"))
            .env("NO_COLOR", "1")
            .args(args);
        cmd
    }

    fn plan(&self) -> Value {
        let out = self
            .tbb()
            .args(["plan", &self.manifest(), "--json"])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"))
    }

    fn plan_text(&self) -> String {
        let out = self
            .tbb()
            .args(["plan", &self.manifest()])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    fn apply(&self) -> Output {
        let out = self
            .tbb()
            .args(["apply", &self.manifest()])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.status.success(),
            "apply failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}

/// `(kind, id, why)` of every node the plan runs.
fn runs(plan: &Value) -> Vec<(String, String, Vec<String>)> {
    plan["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| {
            matches!(
                n["action"].as_str(),
                Some("create" | "update" | "incomplete")
            )
        })
        .map(|n| {
            (
                n["kind"].as_str().unwrap_or_default().to_string(),
                n["id"].as_str().unwrap_or_default().to_string(),
                n["why"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|w| w.as_str().map(str::to_string))
                    .collect(),
            )
        })
        .collect()
}

fn count(runs: &[(String, String, Vec<String>)], kind: &str) -> usize {
    runs.iter().filter(|(k, ..)| k == kind).count()
}

/// Every table of a study's outputs, by file name, as bytes.
fn tables(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .map(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            (name, std::fs::read(&p).unwrap_or_else(|e| panic!("{e}")))
        })
        .collect();
    out.sort();
    out
}

/// A table with wall times (episodes, requests) without them, as rows of text.
fn without_wall_times(dir: &Path, table: &str) -> Vec<String> {
    let (batches, _) = read_table(&dir.join(table)).unwrap_or_else(|e| panic!("{e}"));
    let mut rows = Vec::new();
    for b in &batches {
        let schema = b.schema();
        for r in 0..b.num_rows() {
            let mut row = Vec::new();
            for (i, f) in schema.fields().iter().enumerate() {
                if f.name() != "wall_ms" {
                    let value = arrow_cell(b.column(i), r);
                    row.push(format!("{}={value}", f.name()));
                }
            }
            rows.push(row.join(","));
        }
    }
    rows
}

/// The tables with a wall-time column.
const TIMED: [&str; 2] = ["episodes.parquet", "requests.parquet"];

/// Fails unless two studies' outputs hold the same tables: byte for byte, except the
/// episodes and requests tables, which must match wall times aside.
fn same_tables(a: &Path, b: &Path) {
    let (ta, tb) = (tables(a), tables(b));
    assert_eq!(
        ta.iter().map(|t| &t.0).collect::<Vec<_>>(),
        tb.iter().map(|t| &t.0).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in ta.iter().zip(&tb) {
        if !TIMED.contains(&name.as_str()) {
            assert!(x == y, "{name} differs between the two runs");
        }
    }
    same_episodes(a, b);
}

/// Fails naming the first differing row, without printing whole tables.
fn same_episodes(a: &Path, b: &Path) {
    for table in TIMED {
        let (x, y) = (without_wall_times(a, table), without_wall_times(b, table));
        assert_eq!(x.len(), y.len(), "{table}: row counts differ");
        if let Some((r, s)) = x.iter().zip(&y).find(|(r, s)| r != s) {
            panic!("{table} differs (wall times aside):\n{r}\n{s}");
        }
    }
}

fn arrow_cell(array: &arrow_array::ArrayRef, row: usize) -> String {
    use arrow_array::Array;
    if array.is_null(row) {
        return "null".into();
    }
    let any = array.as_any();
    if let Some(a) = any.downcast_ref::<arrow_array::StringArray>() {
        return a.value(row).to_string();
    }
    if let Some(a) = any.downcast_ref::<arrow_array::BooleanArray>() {
        return a.value(row).to_string();
    }
    if let Some(a) = any.downcast_ref::<arrow_array::UInt32Array>() {
        return a.value(row).to_string();
    }
    if let Some(a) = any.downcast_ref::<arrow_array::UInt64Array>() {
        return a.value(row).to_string();
    }
    if let Some(a) = any.downcast_ref::<arrow_array::Float64Array>() {
        return a.value(row).to_bits().to_string();
    }
    panic!("unexpected column type {:?}", array.data_type())
}

#[test]
fn a_plan_right_after_an_apply_has_nothing_to_run() {
    let s = Study::new(TINY);
    let first = runs(&s.plan());
    assert_eq!(count(&first, "compile"), 24);
    assert_eq!(count(&first, "execute"), 96);
    assert_eq!(count(&first, "grade"), 96);
    let out = s.apply();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Apply complete: 225 nodes run, 0 cached, no node errors;"),
        "{stdout}"
    );
    // The last lines say where the results are (as the command named them: the test
    // runs with the default, relative `outputs`).
    let last: Vec<&str> = stdout.trim_end().lines().rev().take(3).collect();
    assert_eq!(last[2], "Outputs:  outputs/tiny/", "{stdout}");
    assert_eq!(last[1], "Report:   outputs/tiny/report.html", "{stdout}");
    assert!(
        last[0].starts_with("Tables:   ")
            && last[0].contains("episodes, ")
            && last[0].ends_with("variants"),
        "{stdout}"
    );
    assert!(runs(&s.plan()).is_empty());
    assert!(s
        .plan_text()
        .contains("No changes: 225 nodes cached, nothing to run."));
    let status = s
        .tbb()
        .args(["status", &s.manifest()])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(String::from_utf8_lossy(&status.stdout).contains("Complete"));
    // The lockfile was written, and `--locked` accepts it.
    assert!(s.path("lockfiles/tiny.lock").is_file());
    s.tbb()
        .args(["apply", &s.manifest(), "--locked"])
        .assert()
        .success();
}

/// What the grader said of a published study's episodes: `(episodes, verified
/// successes, task failures, infrastructure failures, task failures by terminal flag)`.
type Verdicts = (u64, u64, u64, u64, std::collections::BTreeMap<String, u64>);

fn verdicts_of(episodes: &Path) -> Verdicts {
    let (batches, _) = read_table(episodes).unwrap_or_else(|e| panic!("{e}"));
    let mut v: Verdicts = Default::default();
    for b in &batches {
        let col = |name: &str| {
            b.column_by_name(name)
                .unwrap_or_else(|| panic!("no column {name}"))
                .clone()
        };
        let (vts, infra, flag) = (col("vts"), col("infra_failure"), col("terminal_flag"));
        for r in 0..b.num_rows() {
            v.0 += 1;
            if arrow_cell(&infra, r) == "true" {
                v.3 += 1;
            } else if arrow_cell(&vts, r) == "true" {
                v.1 += 1;
            } else {
                v.2 += 1;
                *v.4.entry(arrow_cell(&flag, r)).or_default() += 1;
            }
        }
    }
    v
}

/// Says `verdicts` as the end of the episodes stage and the summary do (`head` is
/// `episodes: 48 run` or `Episodes: 48 cached`, say), the terminal flags in any order
/// (theirs is the grader's).
fn assert_says(line: &str, head: &str, (_, vts, task, infra, flags): &Verdicts) {
    let plural =
        |n: &u64, one: &str, many: &str| format!("{n} {}", if *n == 1 { one } else { many });
    let start = format!(
        "{head}: {}, {}",
        plural(vts, "verified success", "verified successes"),
        plural(task, "task failure", "task failures"),
    );
    assert!(line.starts_with(&start), "{start}: {line}");
    for (flag, k) in flags {
        assert!(line.contains(&format!("{flag} ×{k}")), "{flag}: {line}");
    }
    let infra = format!(
        ", {}",
        plural(infra, "infrastructure failure", "infrastructure failures")
    );
    assert!(line.contains(&infra), "{infra}: {line}");
}

/// Issue 29: "episodes: 2 done, 0 failed" and "Apply complete: 12 run (0 failed)" read
/// as tasks that succeeded, where both episodes had failed theirs, and "analyses: 1/7
/// (10%)" as a tenth done. The end of the episodes stage (plain lines and `--json`
/// events) and the summary (text and `--json`) say as many verified successes, task
/// failures by terminal flag and infrastructure failures as the published table holds,
/// apart from node errors; cached episodes are said as cached; progress lines give the
/// true percentage.
#[test]
fn apply_says_what_the_episodes_came_to_apart_from_node_errors() {
    let s = Study::new(&TINY.replace(", \"phishing-report-triage-kestrel\"", ""));
    let out = s.apply();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let verdicts = verdicts_of(&s.outputs().join("episodes.parquet"));
    assert_eq!(verdicts.0, 48);
    assert!(
        verdicts.1 > 0 && verdicts.2 > 0,
        "a study of both: {verdicts:?}"
    );
    let stage = line_starting(&stderr, "episodes: 48 run");
    assert_says(stage, "episodes: 48 run", &verdicts);
    assert!(stage.ends_with("; no errors"), "{stage}");
    assert!(!stderr.contains("failed"), "{stderr}");
    assert!(
        stdout.contains("Apply complete: 117 nodes run, 0 cached, no node errors;"),
        "{stdout}"
    );
    let summary = line_starting(&stdout, "Episodes: ");
    assert_says(summary, "Episodes: 48 run", &verdicts);
    assert!(summary.ends_with("infrastructure failures."), "{summary}");
    // Progress at each tenth passed, with the true percentage (48 episodes: 5/48 is
    // 10%, 10/48 is 21%).
    let mut progress = 0;
    for line in stderr.lines().filter(|l| l.ends_with("%)")) {
        let (_, rest) = line.split_once(": ").unwrap_or_else(|| panic!("{line}"));
        let (fraction, percent) = rest.split_once(" (").unwrap_or_else(|| panic!("{line}"));
        let (done, nodes) = fraction.split_once('/').unwrap_or_else(|| panic!("{line}"));
        let number = |t: &str| {
            t.replace(',', "")
                .parse::<f64>()
                .unwrap_or_else(|e| panic!("{e}: {line}"))
        };
        let shown = number(percent.trim_end_matches("%)"));
        assert!(
            (shown - 100.0 * number(done) / number(nodes)).abs() <= 0.5,
            "{line}"
        );
        progress += 1;
    }
    assert!(
        progress > 0 && stderr.contains("episodes: 10/48 (21%)"),
        "{stderr}"
    );

    // With --json (another study name: the same episodes run again), the episodes
    // stage's end and the summary carry the counts.
    let out = s
        .tbb()
        .args([
            "apply",
            &s.manifest(),
            "--json",
            "--set",
            "study.name=\"tiny-json\"",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts = verdicts_of(&s.path("outputs/tiny-json/episodes.parquet"));
    let json = |tally: &Value| {
        let n = |k: &str| tally[k].as_u64().unwrap_or_else(|| panic!("{k}: {tally}"));
        let flags = tally["terminal_flags"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(f, k)| (f.clone(), k.as_u64().unwrap_or(0)))
            .collect();
        (
            n("episodes"),
            n("verified_successes"),
            n("task_failures"),
            n("infra_failures"),
            flags,
        )
    };
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json(&summary["episodes"]["run"]), verdicts, "{summary}");
    assert_eq!(summary["failed"], 0);
    let events = String::from_utf8_lossy(&out.stderr);
    let end: Value = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "stage_finished" && e["stage"] == "episodes")
        .unwrap_or_else(|| panic!("no end of the episodes stage: {events}"));
    assert_eq!(json(&end["verdicts"]["run"]), verdicts, "{end}");
    // Each finished episode is named by its execute node's identity (the one reporter
    // that shows node names is handed them).
    let named: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "node_finished" && e["stage"] == "episodes")
        .map(|e| e["node"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(named.len() as u64, verdicts.0, "{events}");
    assert!(
        named.iter().all(|n| n.starts_with("execute[cfg=")),
        "{named:?}"
    );

    // Nothing to run: the episodes are said as cached.
    let out = s.apply();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = line_starting(&stdout, "Episodes: ");
    assert_says(
        summary,
        "Episodes: 48 cached",
        &verdicts_of(&s.outputs().join("episodes.parquet")),
    );
}

#[test]
fn editing_one_prompt_reruns_exactly_its_episodes_and_the_analyses() {
    let s = Study::new(TINY);
    s.apply();
    let workflow = s.path("prompts/workflow.txt");
    let text = std::fs::read_to_string(&workflow).unwrap_or_default();
    std::fs::write(&workflow, format!("{}\nBe brief.\n", text.trim_end()))
        .unwrap_or_else(|e| panic!("{e}"));
    let plan = runs(&s.plan());
    assert_eq!(count(&plan, "compile"), 0);
    assert_eq!(count(&plan, "execute"), 48);
    assert_eq!(count(&plan, "grade"), 48);
    assert_eq!(count(&plan, "analysis"), 3);
    for (kind, id, why) in &plan {
        if kind == "execute" || kind == "grade" {
            assert!(id.contains("arm=workflow"), "{id}");
        }
        if kind == "execute" {
            assert_eq!(why, &["prompt prompts/workflow.txt changed"], "{id}");
        }
    }
    let text = s.plan_text();
    assert!(
        text.contains("~ 48 execute nodes: prompt prompts/workflow.txt changed"),
        "{text}"
    );
    // `--locked` refuses: the prompt's hash is in the lockfile.
    let locked = s
        .tbb()
        .args(["apply", &s.manifest(), "--locked"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(locked.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&locked.stderr).contains("would change"));
    // `explain` says why one of them reruns.
    let id = plan
        .iter()
        .find(|(k, ..)| k == "execute")
        .map(|(_, id, _)| id.clone())
        .unwrap_or_default();
    let explain = s
        .tbb()
        .args(["explain", &s.manifest(), &id])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        String::from_utf8_lossy(&explain.stdout).contains("~ prompt prompts/workflow.txt changed")
    );
    s.apply();
    assert!(runs(&s.plan()).is_empty());
}

#[test]
fn changing_one_configurations_cap_reruns_only_its_episodes() {
    let s = Study::new(TINY);
    s.apply();
    s.write_manifest(&TINY.replace(
        "completion_caps = [1024]",
        "completion_caps = [1024]\nconfiguration_caps = { sim-aurora-flash = [4096] }",
    ));
    let plan = runs(&s.plan());
    assert_eq!(count(&plan, "compile"), 0);
    assert_eq!(count(&plan, "execute"), 48);
    assert_eq!(count(&plan, "grade"), 48);
    for (kind, id, why) in &plan {
        if kind == "execute" {
            assert!(
                id.contains("cfg=sim-aurora-flash") && id.contains("cap=4096"),
                "{id}"
            );
            assert_eq!(why, &["completion_cap 1024 -> 4096"]);
        }
    }
    insta::assert_snapshot!("plan_after_a_cap_change", s.plan_text());
    s.apply();
    assert!(runs(&s.plan()).is_empty());
}

#[test]
fn changing_an_analysis_parameter_reruns_no_episode() {
    let s = Study::new(TINY);
    s.apply();
    s.write_manifest(&TINY.replace("draws = 200", "draws = 300"));
    let plan = runs(&s.plan());
    for kind in ["compile", "execute", "grade"] {
        assert_eq!(count(&plan, kind), 0, "{kind}");
    }
    let analyses: Vec<_> = plan.iter().filter(|(k, ..)| k == "analysis").collect();
    assert_eq!(analyses.len(), 2, "{analyses:?}");
    assert_eq!(analyses[0].1, "analysis[contrasts]");
    assert_eq!(analyses[0].2, ["draws 200 -> 300"]);
    assert_eq!(analyses[1].1, "analysis[report]");
    assert_eq!(analyses[1].2, ["upstream changed"]);
}

#[test]
fn a_deleted_table_is_regenerated_from_the_cache_without_running_an_episode() {
    let s = Study::new(TINY);
    s.apply();
    let path = s.outputs().join("episodes.parquet");
    let before = std::fs::read(&path).unwrap_or_default();
    std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let plan = runs(&s.plan());
    assert_eq!(plan.len(), 1, "{plan:?}");
    assert_eq!(plan[0].1, "table[episodes]");
    assert!(
        plan[0].2[0].contains("episodes.parquet is missing"),
        "{:?}",
        plan[0].2
    );
    let out = s.apply();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Apply complete: 1 node run"));
    // The cached rows, wall times included: the same bytes.
    assert!(
        std::fs::read(&path).unwrap_or_default() == before,
        "the regenerated table differs"
    );
}

#[test]
fn two_applies_from_scratch_give_identical_tables_wall_times_aside() {
    let a = Study::new(TINY);
    let b = Study::new(TINY);
    a.apply();
    b.apply();
    let ta = tables(&a.outputs());
    assert!(
        ta.len() >= 5,
        "{:?}",
        ta.iter().map(|t| &t.0).collect::<Vec<_>>()
    );
    same_tables(&a.outputs(), &b.outputs());
}

#[test]
fn a_saved_plan_runs_exactly_and_a_stale_one_is_refused() {
    let s = Study::new(TINY);
    s.tbb()
        .args(["plan", &s.manifest(), "-o", "plan.json"])
        .assert()
        .success();
    // Stale: a prompt changed after the plan was saved.
    let base = s.path("prompts/base.txt");
    let text = std::fs::read_to_string(&base).unwrap_or_default();
    std::fs::write(&base, format!("{} Be brief.\n", text.trim_end()))
        .unwrap_or_else(|e| panic!("{e}"));
    let stale = s
        .tbb()
        .args(["apply", "plan.json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stale.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&stale.stderr).contains("is stale"));
    assert!(
        !s.outputs().join("cache").exists(),
        "a refused plan writes nothing"
    );
    std::fs::write(&base, text).unwrap_or_else(|e| panic!("{e}"));
    s.tbb().args(["apply", "plan.json"]).assert().success();
    assert!(runs(&s.plan()).is_empty());
}

#[test]
fn the_dag_prints_as_dot_with_every_node() {
    let s = Study::new(TINY);
    let out = s
        .tbb()
        .args(["dag", &s.manifest(), "--dot"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let dot = String::from_utf8_lossy(&out.stdout);
    assert!(dot.starts_with("digraph tbb {"));
    assert_eq!(dot.matches("[label=").count(), 225);
    assert!(dot.contains("execute[cfg=sim-aurora-flash, family=overdue-escalation-harbor, v=8, w=low, d=raw, r=low, arm=base, cap=1024, rep=0]"));
}

#[test]
fn a_second_apply_on_locked_outputs_names_the_holder_and_waits_or_fails() {
    let s = Study::new(TINY);
    let held = OutputsLock::acquire(
        &s.outputs(),
        "tbb apply (held by the test)",
        None,
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = s
        .tbb()
        .args(["apply", &s.manifest(), "--lock-timeout", "0"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "pid {}, tbb apply (held by the test)",
            std::process::id()
        )),
        "{err}"
    );
    // Without a timeout it waits, says who for, and runs once the lock is free.
    let mut child = s
        .std_command(&["apply", &s.manifest()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().ok().flatten().is_none(),
        "apply did not wait for the lock"
    );
    drop(held);
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Blocking: waiting for lock on outputs/tiny (pid"),
        "{err}"
    );
}

/// A bigger study, so that an apply is still running when it is killed.
fn big() -> String {
    TINY.replace(
        r#"names = ["overdue-escalation-harbor", "phishing-report-triage-kestrel"]"#,
        r#"splits = ["core"]"#,
    )
    .replace(
        "name = \"workflow\"\nprompt = \"workflow\"",
        "name = \"fixed\"\nmenu = \"fixed\"",
    )
}

/// Waits until the running apply has committed an episode batch.
fn wait_for_a_committed_batch(s: &Study, child: &mut Child) {
    let started = Instant::now();
    loop {
        let batches = std::fs::read_dir(s.outputs().join("cache"))
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        e.file_name().to_string_lossy().starts_with("nodes-")
                            && e.file_name().to_string_lossy().ends_with(".parquet")
                    })
                    .count()
            })
            .unwrap_or(0);
        if batches >= 2 {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("apply ended ({status}) before it could be interrupted; make the study bigger");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no batch committed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn an_apply_killed_mid_run_loses_nothing_and_resumes_to_identical_tables() {
    let s = Study::new(&big());
    let mut child = s
        .std_command(&["apply", &s.manifest()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    wait_for_a_committed_batch(&s, &mut child);
    let _ = child.kill(); // SIGKILL
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(!status.success(), "apply finished before the kill");
    let cache =
        tbb::pipeline::Cache::open(&s.outputs().join("cache")).unwrap_or_else(|e| panic!("{e}"));
    let executes: Vec<_> = cache
        .latest_entries()
        .into_iter()
        .filter(|e| e.kind == tbb::pipeline::NodeKind::Execute)
        .collect();
    let committed: Vec<String> = cache
        .texts(&executes)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert!(!committed.is_empty());
    let plan = s.plan();
    let cached: std::collections::HashSet<&str> = plan["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["action"] == "cached")
        .filter_map(|n| n["id"].as_str())
        .collect();
    for id in &committed {
        assert!(cached.contains(id.as_str()), "committed node {id} was lost");
    }
    s.apply();
    assert!(runs(&s.plan()).is_empty());
    let whole = Study::new(&big());
    whole.apply();
    same_tables(&s.outputs(), &whole.outputs());
}

#[test]
fn ctrl_c_drains_the_nodes_in_flight_and_the_next_apply_resumes() {
    let s = Study::new(&big());
    let mut child = s
        .std_command(&["apply", &s.manifest()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    wait_for_a_committed_batch(&s, &mut child);
    let pid = child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status();
    assert!(sent.is_ok_and(|s| s.success()));
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted:"), "{err}");
    assert!(!runs(&s.plan()).is_empty());
    s.apply();
    assert!(runs(&s.plan()).is_empty());
}

fn fails_before_touching_outputs(s: &Study, expected: &[&str]) {
    for command in ["plan", "apply"] {
        let out = s
            .tbb()
            .args([command, &s.manifest()])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        for e in expected {
            assert!(err.contains(e), "{command}: expected `{e}` in:\n{err}");
        }
        assert!(!s.path("outputs").exists(), "{command} touched outputs/");
        assert!(!s.path("lockfiles").exists(), "{command} wrote a lockfile");
    }
}

#[test]
fn bad_input_is_a_diagnostic_with_exit_code_2_and_touches_nothing() {
    let malformed = Study::new("[study\nname = ");
    fails_before_touching_outputs(&malformed, &["is not valid TOML", "tiny.toml"]);

    let unknown = Study::new(&TINY.replace("sim-dunlin-max", "sim-dunlin-mx"));
    fails_before_touching_outputs(
        &unknown,
        &["sim-dunlin-mx", "did you mean `sim-dunlin-max`?"],
    );

    let cell = Study::new(&TINY.replace(
        "[cells]\npreset = \"capacity\"",
        "[[cells.list]]\nv = 7\nw = \"low\"\nd = \"raw\"",
    ));
    fails_before_touching_outputs(&cell, &["7"]);

    let keyed = Study::new(&TINY.replace(
        r#"names = ["sim-aurora-flash", "sim-dunlin-max"]"#,
        r#"names = ["sim-aurora-flash", "keyed-route"]"#,
    ));
    let mut catalogue =
        std::fs::read_to_string(keyed.path("manifests/configurations.toml")).unwrap_or_default();
    catalogue.push_str(
        r#"
[[configuration]]
name = "keyed-route"
organization = "Test"
provider = "openai"
model = "m"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "TBB_TEST_KEY_THAT_IS_NOT_SET"
prices = { input_per_mtok = 1.0, output_per_mtok = 1.0 }
enabled = true
"#,
    );
    std::fs::write(keyed.path("manifests/configurations.toml"), catalogue)
        .unwrap_or_else(|e| panic!("{e}"));
    let out = keyed
        .tbb()
        .env_remove("TBB_TEST_KEY_THAT_IS_NOT_SET")
        .args(["apply", &keyed.manifest()])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("TBB_TEST_KEY_THAT_IS_NOT_SET"), "{err}");
    assert!(!keyed.path("outputs").exists());
}

#[test]
fn tbb_report_writes_exactly_what_apply_published_under_the_same_lock() {
    let s = Study::new(TINY);
    s.apply();
    let html = std::fs::read_to_string(s.outputs().join("report.html")).unwrap_or_default();
    assert!(html.contains("<svg"), "the report has inline figures");
    let published = report_files(&s.outputs());
    let names: Vec<&str> = published.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"report.md") && names.contains(&"report.html"),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("episodes/")),
        "apply publishes the linked episode pages: {names:?}"
    );
    assert!(names.contains(&"episodes.html"), "{names:?}");
    // The index of every episode is rendered from the rows when the report is
    // published, never stored with the report's analysis (a row per episode would be
    // carried through the cache: +200 MiB at four repeats of the capacity study).
    let cache = tbb::pipeline::cache::Cache::open(&s.outputs().join("cache"))
        .unwrap_or_else(|e| panic!("{e}"));
    let analysis_entries: Vec<_> = cache
        .latest_entries()
        .into_iter()
        .filter(|e| e.kind == tbb::pipeline::key::NodeKind::Analysis)
        .collect();
    let analysis_texts = cache
        .texts(&analysis_entries)
        .unwrap_or_else(|e| panic!("{e}"));
    let analyses: Vec<&str> = analysis_texts.iter().map(|t| t.key.as_str()).collect();
    let stored = cache.payloads(&analyses).unwrap_or_else(|e| panic!("{e}"));
    assert!(!stored.is_empty());
    for payload in stored.values() {
        assert!(!payload.contains("episodes.html\",\""), "{payload:.300}");
    }
    let report = |s: &Study| {
        s.tbb()
            .args(["report", &s.manifest()])
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    // Right after apply, and after the report was deleted and overwritten: the same
    // bytes as apply's (failing episodes, node-key comments and all), nothing to plan.
    for damage in [false, true] {
        if damage {
            std::fs::remove_file(s.outputs().join("report.html")).unwrap_or_else(|e| panic!("{e}"));
            std::fs::remove_file(s.outputs().join("episodes.html"))
                .unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(s.outputs().join("report.md"), "edited\n")
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let out = report(&s);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("report.md, episodes.html, "), "{said}");
        assert!(
            report_files(&s.outputs()) == published,
            "tbb report wrote another report than apply"
        );
        assert!(runs(&s.plan()).is_empty(), "{:?}", runs(&s.plan()));
    }
    // Under the lock apply takes: refused with the message a second apply gets.
    let held = OutputsLock::acquire(
        &s.outputs(),
        "tbb apply (held by the test)",
        None,
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let refusal = |command: &str| {
        let out = s
            .tbb()
            .args([command, &s.manifest(), "--lock-timeout", "0"])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        err.lines()
            .find(|l| l.contains("are locked by"))
            .unwrap_or_else(|| panic!("{command}: {err}"))
            .to_string()
    };
    let by_report = refusal("report");
    assert!(
        by_report.contains(&format!(
            "pid {}, tbb apply (held by the test)",
            std::process::id()
        )),
        "{by_report}"
    );
    assert_eq!(by_report, refusal("apply"));
    drop(held);
    // What the report reads must run first: refused, and the report is left alone.
    s.write_manifest(&TINY.replace("draws = 200", "draws = 300"));
    let out = report(&s);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not up to date") && err.contains("analysis[contrasts]"),
        "{err}"
    );
    assert!(report_files(&s.outputs()) == published);
}

/// The report files a study published (every file but the tables, the cache and the
/// lock), by path relative to its outputs, as bytes.
fn report_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
        {
            let path = entry.path();
            let rel = path
                .strip_prefix(dir)
                .map(|p| p.to_string_lossy().to_string())
                .unwrap_or_default();
            if rel == "cache" || rel == ".lock" || rel.ends_with(".parquet") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((rel, std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"))));
            }
        }
    }
    out.sort();
    out
}

/// Every file a study published (tables and report), by relative path, as bytes.
fn published(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut all = report_files(dir);
    all.extend(tables(dir));
    all.sort();
    all
}

/// Rewrites the first grade row of the study's cache with `field` dropped from its JSON
/// (a row written before `field` existed, as after a layout change).
fn drop_field_from_a_stored_grade_row(s: &Study, field: &str) -> String {
    use arrow_array::{Array, RecordBatch, StringArray};
    let cache = s.outputs().join("cache");
    for entry in std::fs::read_dir(&cache)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
    {
        let path = entry.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if !name.starts_with("nodes-") {
            continue;
        }
        let (batches, _) = read_table(&path).unwrap_or_else(|e| panic!("{e}"));
        let schema = batches[0].schema();
        let batch = arrow_select::concat::concat_batches(&schema, &batches)
            .unwrap_or_else(|e| panic!("{e}"));
        let text = |c: &str| {
            batch
                .column_by_name(c)
                .and_then(|a| a.as_any().downcast_ref::<StringArray>())
                .cloned()
                .unwrap_or_else(|| panic!("no column {c}"))
        };
        let (kinds, ids, payloads) = (text("kind"), text("id"), text("payload"));
        let Some(row) = (0..batch.num_rows()).find(|&r| kinds.value(r) == "grade") else {
            continue;
        };
        let mut json: Value =
            serde_json::from_str(payloads.value(row)).unwrap_or_else(|e| panic!("{e}"));
        assert!(json.as_object_mut().and_then(|o| o.remove(field)).is_some());
        let edited: Vec<String> = (0..batch.num_rows())
            .map(|r| {
                if r == row {
                    json.to_string()
                } else {
                    payloads.value(r).to_string()
                }
            })
            .collect();
        let columns: Vec<Arc<dyn Array>> = schema
            .fields()
            .iter()
            .map(|f| {
                if f.name() == "payload" {
                    Arc::new(StringArray::from(edited.clone())) as Arc<dyn Array>
                } else {
                    batch
                        .column_by_name(f.name())
                        .cloned()
                        .unwrap_or_else(|| panic!())
                }
            })
            .collect();
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap_or_else(|e| panic!("{e}"));
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
        tbb::tables::write_cache_table(&path, &batch).unwrap_or_else(|e| panic!("{e}"));
        return ids.value(row).to_string();
    }
    panic!("no grade row in {}", cache.display());
}

#[test]
fn a_stored_row_that_no_longer_reads_is_a_planned_rerun_not_a_failure_of_its_dependants() {
    let s = Study::new(TINY);
    s.apply();
    let before = published(&s.outputs());
    let grade = drop_field_from_a_stored_grade_row(&s, "vts");
    let plan = runs(&s.plan());
    assert_eq!(plan.len(), 1, "{plan:?}");
    assert_eq!(plan[0].1, grade);
    assert_eq!(plan[0].2.len(), 1);
    assert!(
        plan[0].2[0].starts_with("stored row unreadable: missing field `vts`"),
        "{:?}",
        plan[0].2
    );
    assert!(s
        .plan_text()
        .contains("stored row unreadable: missing field `vts`"));
    // With a table to republish from the rows too (what failed every later apply: the
    // tables and analyses read the cached rows).
    std::fs::remove_file(s.outputs().join("episodes.parquet")).unwrap_or_else(|e| panic!("{e}"));
    let out = s.apply();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Apply complete: 2 nodes run, ") && stdout.contains("no node errors"),
        "{stdout}"
    );
    let after = published(&s.outputs());
    let differ: Vec<&str> = before
        .iter()
        .zip(&after)
        .filter(|(a, b)| a != b)
        .map(|(a, _)| a.0.as_str())
        .collect();
    assert_eq!(before.len(), after.len());
    assert!(
        differ.is_empty(),
        "differ from the first apply's: {differ:?}"
    );
    assert!(runs(&s.plan()).is_empty());
}

#[test]
fn a_failed_analysis_exits_1_names_its_cause_in_json_and_leaves_no_stale_report() {
    let s = Study::new(TINY);
    s.apply();
    assert!(s.outputs().join("report.md").is_file());
    // A new contrasts analysis, whose table is published; the report analysis then
    // cannot store its result (its cache directory is taken by a file: a damaged disk).
    s.write_manifest(&TINY.replace("draws = 200", "draws = 300"));
    let plan = s.plan();
    let report_key = plan["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|n| n["id"] == "analysis[report]")
        .and_then(|n| n["key"].as_str())
        .unwrap_or_else(|| panic!("no report analysis in {plan}"))
        .to_string();
    let blocker = s.outputs().join("cache/tables").join(&report_key);
    std::fs::create_dir_all(s.outputs().join("cache/tables")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&blocker, "not a directory").unwrap_or_else(|e| panic!("{e}"));
    let out = s
        .tbb()
        .args(["apply", &s.manifest(), "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON summary ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(summary["format"], "tbb-apply-summary/1");
    assert_eq!(summary["ok"], false);
    assert_eq!(summary["exit_code"], 1);
    let failures: Vec<(String, String, String)> = summary["failures"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let field = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            (field("node"), field("cause"), field("root_cause"))
        })
        .collect();
    assert_eq!(
        failures,
        [
            (
                "analysis[report]".to_string(),
                "io".to_string(),
                "io".to_string()
            ),
            (
                "table[report]".to_string(),
                "upstream_failed".to_string(),
                "io".to_string()
            ),
        ],
        "{summary}"
    );
    // The new contrasts table is published; no report from the old results beside it.
    let contrasts = tbb::tables::read_metadata(&s.outputs().join("contrasts.parquet"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(contrasts.iter().any(|(k, _)| k == "tbb.node_key"));
    for stale in ["report.md", "report.html"] {
        assert!(
            !s.outputs().join(stale).exists(),
            "{stale} was left beside the new tables"
        );
    }
    assert!(
        report_files(&s.outputs()).is_empty(),
        "{:?}",
        report_files(&s.outputs())
            .iter()
            .map(|f| &f.0)
            .collect::<Vec<_>>()
    );
    let removed: Vec<&str> = summary["removed"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        removed.contains(&"report.md") && removed.contains(&"report.html"),
        "{removed:?}"
    );
    // Once the disk is repaired, the next apply publishes the report.
    std::fs::remove_file(&blocker).unwrap_or_else(|e| panic!("{e}"));
    let out = s
        .tbb()
        .args(["apply", &s.manifest(), "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(0));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary["ok"], true);
    assert!(s.outputs().join("report.html").is_file());
    assert!(runs(&s.plan()).is_empty());
}

/// Two blocks: a counterbalanced crossover of two caps, repeated twice, and a second
/// block of other families on the fixed menu.
const BLOCKS: &str = r#"
[study]
name = "tiny"
catalogue = "configurations.toml"

[families]
names = ["overdue-escalation-harbor"]

[cells]
list = [{ v = 8, w = "low", d = "raw" }, { v = 128, w = "low", d = "raw" }]

[configurations]
names = ["sim-aurora-flash"]

[[arms]]
name = "low-cap"

[[arms]]
name = "high-cap"
completion_cap = 4096

[[arms]]
name = "fixed"
menu = "fixed"

[[blocks]]
name = "crossover"
arms = ["low-cap", "high-cap"]
repeats = 2
schedule = "counterbalanced"

[[blocks]]
name = "fixed-menu"
arms = ["fixed"]
[blocks.families]
names = ["phishing-report-triage-kestrel"]

[[analyses]]
kind = "costs"
"#;

/// Every value of some columns of a table, row by row.
fn columns(path: &Path, names: &[&str]) -> Vec<Vec<String>> {
    let (batches, _) = read_table(path).unwrap_or_else(|e| panic!("{e}"));
    let mut rows = Vec::new();
    for b in &batches {
        let schema = b.schema();
        let index: Vec<usize> = names
            .iter()
            .map(|n| {
                schema
                    .index_of(n)
                    .unwrap_or_else(|_| panic!("no column {n}"))
            })
            .collect();
        for r in 0..b.num_rows() {
            rows.push(index.iter().map(|&i| arrow_cell(b.column(i), r)).collect());
        }
    }
    rows
}

#[test]
fn two_blocks_with_counterbalanced_repeats_plan_and_apply() {
    let s = Study::new(BLOCKS);
    let plan = s.plan();
    let first = runs(&plan);
    // Crossover: 1 family × 2 cells × 2 arms × 2 repeats; fixed: 1 × 2 × 1 × 1.
    assert_eq!(count(&first, "execute"), 8 + 2);
    assert_eq!(count(&first, "compile"), 4);
    s.apply();
    assert_eq!(count(&runs(&s.plan()), "execute"), 0);
    let rows = columns(
        &s.outputs().join("episodes.parquet"),
        &[
            "block",
            "arm",
            "lane",
            "repair",
            "delivery",
            "actor",
            "completion_cap",
            "repeat",
            "schedule",
            "schedule_position",
            "family",
        ],
    );
    assert_eq!(rows.len(), 10);
    let row = |block: &str, arm: &str, repeat: &str| -> Vec<String> {
        rows.iter()
            .find(|r| r[0] == block && r[1] == arm && r[7] == repeat)
            .cloned()
            .unwrap_or_else(|| panic!("no row {block} {arm} {repeat}: {rows:?}"))
    };
    // Repeat 0 runs the listed order, repeat 1 the other.
    let r = row("crossover", "low-cap", "0");
    assert_eq!(
        r[2..10],
        [
            "routed",
            "none",
            "native",
            "model",
            "1024",
            "0",
            "low-cap>high-cap",
            "1"
        ]
    );
    let r = row("crossover", "high-cap", "0");
    assert_eq!(r[6..10], ["4096", "0", "low-cap>high-cap", "2"]);
    let r = row("crossover", "low-cap", "1");
    assert_eq!(r[8..10], ["high-cap>low-cap", "2"]);
    let r = row("crossover", "high-cap", "1");
    assert_eq!(r[8..10], ["high-cap>low-cap", "1"]);
    // A concurrent block has no positions.
    let r = row("fixed-menu", "fixed", "0");
    assert_eq!(r[2], "fixed");
    assert_eq!(
        r[8..11],
        ["fixed", "null", "phishing-report-triage-kestrel"]
    );

    // Renaming an arm relabels its rows and reruns nothing.
    s.write_manifest(
        &BLOCKS
            .replace("\"fixed\"]", "\"full-menu\"]")
            .replace("name = \"fixed\"", "name = \"full-menu\""),
    );
    s.apply();
    let plan = s.plan();
    assert_eq!(count(&runs(&plan), "execute"), 0);
    let arms: BTreeSet<String> = columns(&s.outputs().join("episodes.parquet"), &["arm"])
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert!(
        arms.contains("full-menu") && !arms.contains("fixed"),
        "{arms:?}"
    );
}

/// A loopback OpenAI-compatible server that answers every request with a final answer
/// after `delay`, recording each request's seed with when it arrived and when it was
/// answered.
#[allow(clippy::type_complexity)]
fn slow_answering_server(
    delay: Duration,
) -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<(u64, Instant, Instant)>>>,
) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    // The handler sleeps asynchronously, so one runtime thread still answers the
    // concurrent requests concurrently.
    // Chat requests only: apply's preflight lists models first, and is not one.
    let chat = move |body: axum::body::Bytes| {
        let log = log.clone();
        async move {
            let arrived = Instant::now();
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            tokio::time::sleep(delay).await;
            let seed = request["seed"].as_u64().unwrap_or(u64::MAX);
            if let Ok(mut l) = log.lock() {
                l.push((seed, arrived, Instant::now()));
            }
            common::final_answer()
        }
    };
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(chat));
    let origin = common::serve_on_loopback(app);
    (origin, seen)
}

#[test]
fn an_ordered_schedule_starts_an_arm_only_after_the_previous_arm_ended() {
    let (origin, seen) = slow_answering_server(Duration::from_millis(300));
    let s = Study::new(
        &BLOCKS
            .replace(
                r#"names = ["sim-aurora-flash"]"#,
                r#"names = ["loopback"]"#,
            )
            .replace(
                "[[blocks]]\nname = \"fixed-menu\"\narms = [\"fixed\"]\n[blocks.families]\nnames = [\"phishing-report-triage-kestrel\"]\n",
                "",
            ),
    );
    // Eight requests may be in flight at once: only the schedule keeps them apart.
    std::fs::write(
        s.path("manifests/configurations.toml"),
        common::loopback_catalogue(&origin, 8),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    s.apply();
    let rows = columns(
        &s.outputs().join("episodes.parquet"),
        &["v", "repeat", "schedule_position", "sent_seed", "arm"],
    );
    assert_eq!(rows.len(), 8);
    let log = seen.lock().map(|l| l.clone()).unwrap_or_default();
    assert_eq!(log.len(), 8);
    let timing = |seed: &str| {
        log.iter()
            .find(|(s, ..)| s.to_string() == seed)
            .map(|&(_, arrived, answered)| (arrived, answered))
            .unwrap_or_else(|| panic!("no request with seed {seed}"))
    };
    for first in rows.iter().filter(|r| r[2] == "1") {
        let second = rows
            .iter()
            .find(|r| r[0] == first[0] && r[1] == first[1] && r[2] == "2")
            .unwrap_or_else(|| panic!("no second arm for {first:?}"));
        let (_, first_answered) = timing(&first[3]);
        let (second_arrived, _) = timing(&second[3]);
        assert!(
            second_arrived >= first_answered,
            "{second:?} was sent before {first:?} was answered"
        );
    }
    // Counterbalanced: each arm runs first in one of the two repeats.
    let firsts: BTreeSet<(String, String)> = rows
        .iter()
        .filter(|r| r[2] == "1")
        .map(|r| (r[1].clone(), r[4].clone()))
        .collect();
    assert_eq!(firsts.len(), 2, "{firsts:?}");
}
