//! `tbb apply --shard i/n` through the binary: the smoke study as three shard processes
//! at once into one outputs directory, then a merge that runs no episode and publishes
//! every file byte-identical to a one-process run; the same after one shard was skipped,
//! then killed after its first commit and run again; and three shards of a live route
//! with concurrency 2 never having more than 2 requests in flight at a loopback server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::common;

/// `tbb --outputs OUTPUTS --lockfiles LOCKFILES ARGS`, run from `dir` with the
/// repository's families and none of the caller's `TBB_*` overrides.
fn tbb(dir: &Path, outputs: &Path, lockfiles: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("tbb"));
    cmd.current_dir(dir)
        .env("TBB_FAMILIES", common::repo().join("families"))
        .env("NO_COLOR", "1")
        .env("COLUMNS", "1000")
        .env_remove("TBB_REPEATS")
        .env_remove("TBB_OUTPUTS")
        .env_remove("TBB_PROMPTS")
        .env_remove("TBB_LOCKFILES")
        .env_remove("TBB_CONFIGS")
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .arg("--outputs")
        .arg(outputs)
        .arg("--lockfiles")
        .arg(lockfiles)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn spawn(mut cmd: Command) -> Child {
    cmd.spawn().unwrap_or_else(|e| panic!("{e}"))
}

fn ok(out: Output) -> String {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn run(cmd: Command) -> String {
    ok(spawn(cmd)
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{e}")))
}

/// Every file under `dir` but the cache and the lock, by path relative to it.
fn published(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
        {
            let path = entry.path();
            let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            if relative == Path::new("cache") || relative == Path::new(".lock") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
                out.insert(relative, bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn assert_same_files(one: &Path, merged: &Path) {
    let (one, merged) = (published(one), published(merged));
    assert!(
        one.len() > 10,
        "the smoke study publishes its tables: {one:?}"
    );
    assert_eq!(
        one.keys().collect::<Vec<_>>(),
        merged.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &one {
        assert!(
            merged.get(path) == Some(bytes),
            "{} differs from the one-process run's",
            path.display()
        );
    }
}

/// The nodes of each kind `tbb plan` would run.
fn to_run(dir: &Path, outputs: &Path, lockfiles: &Path) -> BTreeMap<String, usize> {
    let plan: Value = serde_json::from_str(&run(tbb(
        dir,
        outputs,
        lockfiles,
        &["plan", "manifests/smoke.toml", "--json"],
    )))
    .unwrap_or_else(|e| panic!("{e}"));
    let mut counts = BTreeMap::new();
    for node in plan["nodes"].as_array().into_iter().flatten() {
        if node["action"] != "cached" && node["action"] != "orphan" {
            let kind = node["kind"].as_str().unwrap_or("?").to_string();
            *counts.entry(kind).or_default() += 1;
        }
    }
    counts
}

/// The smoke study applied in one process, which writes the lockfile the shards are
/// locked to.
struct Reference {
    dir: tempfile::TempDir,
}

impl Reference {
    fn new() -> Reference {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let r = Reference { dir };
        run(r.tbb(&r.outputs("one"), &["apply", "manifests/smoke.toml"]));
        r
    }

    fn outputs(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn tbb(&self, outputs: &Path, args: &[&str]) -> Command {
        tbb(
            &common::repo(),
            outputs,
            &self.dir.path().join("lockfiles"),
            args,
        )
    }

    fn shard(&self, outputs: &Path, shard: &str) -> Command {
        self.tbb(
            outputs,
            &[
                "apply",
                "manifests/smoke.toml",
                "--locked",
                "--shard",
                shard,
            ],
        )
    }

    /// The merge: runs no episode, publishes, and every file is the one-process run's.
    fn merge_and_compare(&self, outputs: &Path) {
        let lockfiles = self.dir.path().join("lockfiles");
        let left = to_run(&common::repo(), outputs, &lockfiles);
        for kind in ["compile", "execute", "grade"] {
            assert_eq!(
                left.get(kind),
                None,
                "the shards ran every {kind}: {left:?}"
            );
        }
        run(self.tbb(outputs, &["apply", "manifests/smoke.toml", "--locked"]));
        assert_same_files(&self.outputs("one/smoke"), &outputs.join("smoke"));
    }
}

#[test]
fn three_shards_at_once_then_a_merge_publish_what_one_process_does() {
    let r = Reference::new();
    let outputs = r.outputs("sharded");
    let shards: Vec<Child> = (0..3)
        .map(|i| spawn(r.shard(&outputs, &format!("{i}/3"))))
        .collect();
    for (i, child) in shards.into_iter().enumerate() {
        let stdout = ok(child.wait_with_output().unwrap_or_else(|e| panic!("{e}")));
        assert!(stdout.contains(&format!("Shard {i}/3: ")), "{stdout}");
    }
    // A shard publishes nothing and leaves the lockfile alone.
    assert_eq!(
        published(&outputs.join("smoke")).len(),
        0,
        "{:?}",
        published(&outputs.join("smoke")).keys()
    );
    r.merge_and_compare(&outputs);
}

#[test]
fn a_skipped_then_killed_shard_rerun_gives_the_same_files() {
    let r = Reference::new();
    let outputs = r.outputs("sharded");
    run(r.shard(&outputs, "0/3"));
    run(r.shard(&outputs, "2/3"));
    let lockfiles = r.dir.path().join("lockfiles");
    // Shard 1's episodes are what is left.
    let left = to_run(&common::repo(), &outputs, &lockfiles);
    let shard_one = run(r.tbb(
        &outputs,
        &["plan", "manifests/smoke.toml", "--shard", "1/3"],
    ));
    let line = shard_one
        .lines()
        .find(|l| l.starts_with("Shard 1/3: "))
        .unwrap_or_else(|| panic!("{shard_one}"));
    let executes = left.get("execute").copied().unwrap_or(0);
    assert!(executes > 0, "{left:?}");
    assert!(
        line.contains(&format!("{executes} of the {executes} episodes to run")),
        "{line}"
    );
    // Killed after its first commit (a nodes file of its own appears).
    let cache = outputs.join("smoke/cache");
    let nodes_files = || {
        std::fs::read_dir(&cache)
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        let name = e.file_name().to_string_lossy().to_string();
                        name.starts_with("nodes-") && name.ends_with(".parquet")
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    let before = nodes_files();
    let mut child = spawn(r.shard(&outputs, "1/3"));
    while nodes_files() == before && child.try_wait().ok().flatten().is_none() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    run(r.shard(&outputs, "1/3"));
    r.merge_and_compare(&outputs);
}

/// A loopback OpenAI-compatible server that answers every request with a final answer
/// after a pause, counting the requests in flight: returns its origin, the most it saw
/// at once and how many it answered.
fn counting_server() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let (counting, most, total) = (in_flight.clone(), peak.clone(), answered.clone());
    // Chat requests only: each shard's preflight lists models first, and is not one.
    let chat = move || {
        let (counting, most, total) = (counting.clone(), most.clone(), total.clone());
        async move {
            let now = counting.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            // Long enough for the shards' requests to overlap if they may.
            tokio::time::sleep(Duration::from_millis(40)).await;
            counting.fetch_sub(1, Ordering::SeqCst);
            total.fetch_add(1, Ordering::SeqCst);
            common::final_answer()
        }
    };
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(chat));
    (common::serve_on_loopback(app), peak, answered)
}

#[test]
fn shards_of_a_route_keep_its_concurrency_between_them() {
    let (origin, peak, answered) = counting_server();
    let dir = common::scratch();
    std::fs::write(
        dir.path().join("manifests/configurations.toml"),
        common::loopback_catalogue(&origin, 2),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // 12 cells × 4 repeats: 48 conditions of one episode, one request each.
    let manifest = dir.path().join("manifests/fanout.toml");
    std::fs::write(
        &manifest,
        "repeats = 4\n[study]\nname = \"fanout\"\ncatalogue = \"configurations.toml\"\n\
         [families]\nnames = [\"overdue-escalation-harbor\"]\n[cells]\npreset = \"capacity\"\n\
         [configurations]\nnames = [\"loopback\"]\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (outputs, lockfiles) = (dir.path().join("outputs"), dir.path().join("lockfiles"));
    // The lockfile the shards are locked to (its configuration names the server's port,
    // so it cannot be shipped with the test).
    let study = tbb::pipeline::Study::load(
        &manifest,
        &[],
        &tbb::pipeline::Paths {
            families: common::repo().join("families"),
            prompts: dir.path().join("prompts"),
            outputs: outputs.clone(),
            lockfiles: lockfiles.clone(),
            cache: None,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    tbb::pipeline::lockfile::write(&study.lockfile_path(), &study.lockfile_text)
        .unwrap_or_else(|e| panic!("{e}"));
    let shard = |i: u32| {
        spawn(tbb(
            dir.path(),
            &outputs,
            &lockfiles,
            &[
                "apply",
                "manifests/fanout.toml",
                "--locked",
                "--shard",
                &format!("{i}/3"),
            ],
        ))
    };
    let shards: Vec<Child> = (0..3).map(shard).collect();
    for child in shards {
        ok(child.wait_with_output().unwrap_or_else(|e| panic!("{e}")));
    }
    assert_eq!(
        answered.load(Ordering::SeqCst),
        48,
        "every episode ran once"
    );
    let most = peak.load(Ordering::SeqCst);
    assert!(
        most <= 2,
        "{most} requests in flight at once, over the route's 2"
    );
    // The merge runs nothing new.
    let out = run(tbb(
        dir.path(),
        &outputs,
        &lockfiles,
        &["apply", "manifests/fanout.toml", "--locked"],
    ));
    assert_eq!(answered.load(Ordering::SeqCst), 48, "{out}");
}
