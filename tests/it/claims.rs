//! Nobody pays twice, tried with real processes: applies on several "machines" (each its
//! own outputs directory) sharing one cache through a real S3-compatible server
//! (SeaweedFS on 127.0.0.1, `common::seaweed`), against a loopback provider that counts
//! the chat requests it answers.
//! - Two applies of a 48-episode live study started at once send 48 requests, not 96,
//!   and publish the same tables.
//! - Eight applies of a one-episode study started at once send one request.
//! - An episode whose claim a dead holder left is run once that claim expires.
//! - A merge finding the publishing lease held waits, naming the holder, and fails
//!   after `--lock-timeout`; it publishes once the lease is released.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::common;
use crate::common::seaweed::{Seaweed, ACCESS_KEY, SECRET_KEY};

/// The store's URL, under the bucket every test here makes.
const URL: &str = "s3://tbb-claims/team";

/// The cells of a one-episode study: (8, low, raw).
const ONE_CELL: &str = "[[cells.list]]\nv = 8\nw = \"low\"\nd = \"raw\"";

/// A SeaweedFS server on 127.0.0.1 with the bucket of [`URL`].
fn seaweed() -> Seaweed {
    let server = Seaweed::start();
    assert!(server.make_bucket("tbb-claims"));
    server
}

/// A loopback OpenAI-compatible server answering every chat request with a final
/// answer after `pause`; returns its origin and how many chat requests it answered.
fn counting_server(pause: Duration) -> (String, Arc<AtomicUsize>) {
    let answered = Arc::new(AtomicUsize::new(0));
    let total = answered.clone();
    let chat = move || {
        let total = total.clone();
        async move {
            tokio::time::sleep(pause).await;
            total.fetch_add(1, Ordering::SeqCst);
            common::final_answer()
        }
    };
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(chat));
    (common::serve_on_loopback(app), answered)
}

/// A scratch study folder whose catalogue has one live configuration on `origin`, and
/// the manifest `study.toml`: the capacity cells of one family, `repeats` times.
fn live_study(origin: &str, repeats: u32, cells: &str) -> tempfile::TempDir {
    let dir = common::scratch();
    std::fs::write(
        dir.path().join("manifests/configurations.toml"),
        common::loopback_catalogue(origin, 2),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        dir.path().join("manifests/study.toml"),
        format!(
            "repeats = {repeats}\n[study]\nname = \"shared\"\ncatalogue = \"configurations.toml\"\n\
             [families]\nnames = [\"overdue-escalation-harbor\"]\n{cells}\n\
             [configurations]\nnames = [\"loopback\"]\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    dir
}

/// `tbb --outputs <machine>/outputs --lockfiles <machine>/lockfiles --cache URL ARGS`,
/// run in `dir` with the store's credentials: a machine of its own sharing the store.
fn on_machine(dir: &Path, machine: &Path, server: &Seaweed, args: &[&str]) -> Command {
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
        .env_remove("TBB_CACHE")
        .env_remove("TBB_CLAIM_TTL")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .arg("--outputs")
        .arg(machine.join("outputs"))
        .arg("--lockfiles")
        .arg(machine.join("lockfiles"))
        .arg("--cache")
        .arg(URL)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in server.vars() {
        cmd.env(k, v);
    }
    cmd
}

fn spawn(mut cmd: Command) -> Child {
    cmd.spawn().unwrap_or_else(|e| panic!("{e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// The JSON summary an `apply --json` printed on stdout.
fn summary(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

/// The holders named by the `claim_held` events of an `apply --json` run's stderr.
fn held_by(out: &Output) -> Vec<String> {
    text(&out.stderr)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "claim_held")
        .map(|e| e["holder"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The published tables of a machine's study (Parquet files directly in its folder).
fn tables(machine: &Path) -> BTreeMap<String, Vec<u8>> {
    let study = machine.join("outputs/shared");
    std::fs::read_dir(&study)
        .unwrap_or_else(|e| panic!("{}: {e}", study.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .map(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().to_string());
            (
                name.unwrap_or_default(),
                std::fs::read(&p).unwrap_or_else(|e| panic!("{e}")),
            )
        })
        .collect()
}

/// The store as the library sees it, through the server's S3 API (no environment:
/// this process's tests share it).
fn store(server: &Seaweed) -> tbb::pipeline::remote::Remote {
    tbb::provider::install_crypto();
    let s3 = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name("tbb-claims")
        .with_endpoint(server.vars()[2].1.clone())
        .with_access_key_id(ACCESS_KEY)
        .with_secret_access_key(SECRET_KEY)
        .with_region("us-east-1")
        .with_allow_http(true)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    tbb::pipeline::remote::Remote::with_store(
        Arc::new(s3),
        &object_store::path::Path::from("team"),
        "shared",
        URL,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn machines(n: usize) -> Vec<tempfile::TempDir> {
    (0..n)
        .map(|_| tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// `apply manifests/study.toml --json` started on every machine at once; each must
/// succeed. Their outputs, in the machines' order.
fn apply_at_once(dir: &Path, machines: &[tempfile::TempDir], server: &Seaweed) -> Vec<Output> {
    let applies: Vec<Child> = machines
        .iter()
        .map(|m| {
            spawn(on_machine(
                dir,
                m.path(),
                server,
                &["apply", "manifests/study.toml", "--json"],
            ))
        })
        .collect();
    let outs: Vec<Output> = applies
        .into_iter()
        .map(|c| c.wait_with_output().unwrap_or_else(|e| panic!("{e}")))
        .collect();
    outs.iter().for_each(ok);
    outs
}

#[test]
fn two_machines_applying_one_live_study_at_once_pay_for_each_episode_once() {
    let server = seaweed();
    // 48 episodes of one request each, 2 at a time per machine, 150 ms a request: each
    // machine alone would take about 3.6 s, so the two overlap throughout.
    let (origin, answered) = counting_server(Duration::from_millis(150));
    let dir = live_study(&origin, 4, "[cells]\npreset = \"capacity\"");
    let machines = machines(2);
    let outs = apply_at_once(dir.path(), &machines, &server);
    assert_eq!(
        answered.load(Ordering::SeqCst),
        48,
        "each of the 48 episodes is paid for once between the two machines"
    );
    // Each ran some and took the rest from the other, and said whose they were.
    let elsewhere: Vec<u64> = outs
        .iter()
        .map(|o| summary(o)["ran_elsewhere"].as_u64().unwrap_or(0))
        .collect();
    assert!(elsewhere.iter().sum::<u64>() > 0, "{elsewhere:?}");
    let holders: Vec<String> = outs.iter().flat_map(held_by).collect();
    assert!(
        !holders.is_empty() && holders.iter().all(|h| h.contains(" pid ")),
        "{holders:?}"
    );
    // Both publish the same tables.
    let (a, b) = (tables(machines[0].path()), tables(machines[1].path()));
    assert!(a.contains_key("episodes.parquet"), "{:?}", a.keys());
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert!(
            b.get(name) == Some(bytes),
            "{name} differs between the machines"
        );
    }
}

#[test]
fn eight_machines_applying_a_one_episode_study_at_once_send_its_request_once() {
    let server = seaweed();
    let (origin, answered) = counting_server(Duration::from_millis(300));
    let dir = live_study(&origin, 1, ONE_CELL);
    let machines = machines(8);
    apply_at_once(dir.path(), &machines, &server);
    assert_eq!(answered.load(Ordering::SeqCst), 1);
}

#[test]
fn an_episode_a_dead_holder_claimed_runs_once_its_claim_expires() {
    let server = seaweed();
    let (origin, answered) = counting_server(Duration::from_millis(10));
    let dir = live_study(&origin, 1, ONE_CELL);
    let machine = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // The episode's execute key, as the study resolves it on this machine.
    let study = tbb::pipeline::Study::load(
        &dir.path().join("manifests/study.toml"),
        &[],
        &tbb::pipeline::Paths {
            families: common::repo().join("families"),
            prompts: dir.path().join("prompts"),
            outputs: machine.path().join("outputs"),
            lockfiles: machine.path().join("lockfiles"),
            cache: None,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let keys: Vec<String> = study
        .dag
        .nodes()
        .filter(|(_, n)| n.kind == tbb::pipeline::NodeKind::Execute)
        .map(|(_, n)| n.key.to_string())
        .collect();
    assert_eq!(keys.len(), 1);
    // A holder that died 1 s into a 4-second claim.
    let now = tbb::pipeline::episode_claims::now_ms();
    let dead = store(&server).claim(
        &format!("episodes/{}", keys[0]),
        "a dead host pid 1 (tbb apply)",
        now,
        Duration::from_secs(4),
    );
    assert!(
        matches!(dead, Ok(tbb::pipeline::claims::Claim::Won { .. })),
        "{dead:?}"
    );
    let out = spawn(on_machine(
        dir.path(),
        machine.path(),
        &server,
        &["apply", "manifests/study.toml", "--json"],
    ))
    .wait_with_output()
    .unwrap_or_else(|e| panic!("{e}"));
    ok(&out);
    assert_eq!(held_by(&out), ["a dead host pid 1 (tbb apply)"]);
    assert_eq!(
        answered.load(Ordering::SeqCst),
        1,
        "run once, after the wait"
    );
    assert!(
        tbb::pipeline::episode_claims::now_ms() >= now + 4_000,
        "it waited for the claim to expire"
    );
}

#[test]
fn a_merge_finding_the_publishing_lease_held_waits_naming_its_holder() {
    let server = seaweed();
    let (origin, _) = counting_server(Duration::from_millis(1));
    let dir = live_study(&origin, 1, ONE_CELL);
    let machines = machines(3);
    let apply = |m: &Path, args: &[&str]| {
        let mut all = vec!["apply", "manifests/study.toml"];
        all.extend_from_slice(args);
        spawn(on_machine(dir.path(), m, &server, &all))
    };
    ok(&apply(machines[0].path(), &[])
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{e}")));
    // Another merge holds the lease.
    let remote = store(&server);
    let holder = "another host pid 7 (tbb apply manifests/study.toml)";
    let Ok(tbb::pipeline::claims::Claim::Won { e_tag, .. }) = remote.claim(
        "lease",
        holder,
        tbb::pipeline::episode_claims::now_ms(),
        Duration::from_secs(600),
    ) else {
        panic!("the lease is free");
    };
    let refused = apply(machines[1].path(), &["--lock-timeout", "1"])
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let said = text(&refused.stderr);
    assert!(said.contains(holder), "{said}");
    assert!(said.contains("--lock-timeout"), "{said}");
    // A merge that may wait does, and publishes once the lease is released.
    let waiting = apply(machines[2].path(), &["--lock-timeout", "60"]);
    std::thread::sleep(Duration::from_secs(3));
    remote
        .release("lease", holder, &e_tag)
        .unwrap_or_else(|e| panic!("{e}"));
    let out = waiting.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    ok(&out);
    let said = text(&out.stderr);
    assert!(said.contains(&format!("held by {holder}")), "{said}");
    assert_eq!(tables(machines[0].path()), tables(machines[2].path()));
}
