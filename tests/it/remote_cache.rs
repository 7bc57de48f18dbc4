//! A cache shared through a real S3-compatible server (SeaweedFS on 127.0.0.1,
//! `common::seaweed`): the smoke study applied with `--cache s3://…` from a fresh
//! outputs directory fills the store; a second fresh outputs directory applying
//! `--locked` with the same `--cache` runs no episode and publishes the same bytes as a
//! one-process local run, as does a merge of three shards that ran at once on three
//! machines sharing only the store. A store that cannot be used stops the command
//! before it runs anything, without showing a credential. Eight processes racing for
//! one claim (the lease a merge takes) have exactly one winner, whom the others name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::seaweed::{Seaweed, SECRET_KEY};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh outputs directory, with the repository's smoke lockfile beside it.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(dir.path().join("lockfiles")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::copy(
            root().join("lockfiles/smoke.lock"),
            dir.path().join("lockfiles/smoke.lock"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        Machine { dir }
    }

    fn study(&self) -> PathBuf {
        self.dir.path().join("outputs/smoke")
    }

    /// `tbb --outputs … --lockfiles … ARGS` from the repository root, with the
    /// server's environment when there is one.
    fn tbb(&self, server: Option<&Seaweed>, args: &[&str]) -> std::process::Output {
        self.tbb_with_cache_variable(server, None, args)
    }

    /// [`Machine::tbb`] with `TBB_CACHE` set to `cache`, if given.
    fn tbb_with_cache_variable(
        &self,
        server: Option<&Seaweed>,
        cache: Option<&str>,
        args: &[&str],
    ) -> std::process::Output {
        let mut cmd = assert_cmd::Command::cargo_bin("tbb").unwrap_or_else(|e| panic!("{e}"));
        cmd.current_dir(root())
            .env("NO_COLOR", "1")
            .env("COLUMNS", "1000")
            .env_remove("TBB_CACHE")
            .env_remove("TBB_REPEATS")
            .arg("--outputs")
            .arg(self.dir.path().join("outputs"))
            .arg("--lockfiles")
            .arg(self.dir.path().join("lockfiles"))
            .args(args);
        if let Some(server) = server {
            server.env(&mut cmd);
        }
        if let Some(cache) = cache {
            cmd.env("TBB_CACHE", cache);
        }
        cmd.output().unwrap_or_else(|e| panic!("{e}"))
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every published file of a study (all but its cache and its lock), by relative path.
fn published(study: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            let rel = path
                .strip_prefix(base)
                .unwrap_or_else(|e| panic!("{e}"))
                .to_string_lossy()
                .to_string();
            if rel == "cache" || rel == ".lock" {
                continue;
            }
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap_or_else(|e| panic!("{e}")));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(study, study, &mut out);
    out
}

/// The JSON events of an `apply --json` run's stderr that finished an episode.
fn episodes_run(stderr: &str) -> usize {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "node_finished" && e["stage"] == "episodes")
        .count()
}

#[test]
fn a_second_machine_applies_from_the_shared_cache_runs_no_episode_and_publishes_the_same_bytes() {
    let server = Seaweed::start();
    assert!(server.make_bucket("tbb-team"));
    let url = "s3://tbb-team/studies";

    let first = Machine::new();
    let out = first.tbb(
        Some(&server),
        &[
            "--cache",
            url,
            "apply",
            "manifests/smoke.toml",
            "--locked",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        episodes_run(&text(&out.stderr)) > 0,
        "the first machine runs the episodes"
    );

    let second = Machine::new();
    // `TBB_CACHE` stands for `--cache` (and the manifest loader knows it is tbb's).
    let plan =
        second.tbb_with_cache_variable(Some(&server), Some(url), &["plan", "manifests/smoke.toml"]);
    assert!(plan.status.success(), "{}", text(&plan.stderr));
    let said = text(&plan.stdout);
    assert!(
        said.contains("Shared cache s3://tbb-team/studies/smoke:")
            && said.contains(", 0 only in this machine's cache"),
        "{said}"
    );
    let out = second.tbb(
        Some(&server),
        &[
            "--cache",
            url,
            "apply",
            "manifests/smoke.toml",
            "--locked",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(episodes_run(&text(&out.stderr)), 0, "{}", text(&out.stderr));
    let summary: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert!(summary["cached"].as_u64().unwrap_or(0) > 0, "{summary}");

    assert_published_as_one_local_process(&[&first, &second]);
}

/// Each of `machines` published exactly the files, byte for byte, that the smoke study
/// applied `--locked` by one process without a shared cache publishes.
fn assert_published_as_one_local_process(machines: &[&Machine]) {
    let alone = Machine::new();
    let out = alone.tbb(None, &["apply", "manifests/smoke.toml", "--locked"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let expected = published(&alone.study());
    assert!(expected.keys().any(|k| k.ends_with(".parquet")));
    for machine in machines {
        let got = published(&machine.study());
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>()
        );
        for (name, bytes) in &expected {
            assert!(
                got.get(name) == Some(bytes),
                "{name} differs from the local run's"
            );
        }
    }
}

/// Three shards on three machines at once, sharing only the store, then a merge on a
/// fourth: the merge runs no episode and publishes what one process does.
#[test]
fn three_shards_on_three_machines_then_a_merge_on_a_fourth_publish_what_one_process_does() {
    let server = Seaweed::start();
    assert!(server.make_bucket("tbb-shards"));
    let url = "s3://tbb-shards/studies";
    let shards: Vec<Machine> = (0..3).map(|_| Machine::new()).collect();
    std::thread::scope(|scope| {
        let running: Vec<_> = shards
            .iter()
            .enumerate()
            .map(|(i, machine)| {
                let server = &server;
                scope.spawn(move || {
                    let shard = format!("{i}/3");
                    machine.tbb(
                        Some(server),
                        &[
                            "--cache",
                            url,
                            "apply",
                            "manifests/smoke.toml",
                            "--locked",
                            "--shard",
                            &shard,
                            "--json",
                        ],
                    )
                })
            })
            .collect();
        for (i, shard) in running.into_iter().enumerate() {
            let out = shard
                .join()
                .unwrap_or_else(|_| panic!("shard {i} panicked"));
            assert!(out.status.success(), "shard {i}: {}", text(&out.stderr));
            assert!(
                episodes_run(&text(&out.stderr)) > 0,
                "shard {i} runs its share"
            );
        }
    });
    for machine in &shards {
        assert!(
            !machine.study().join("episodes.parquet").exists(),
            "a shard publishes nothing"
        );
    }

    let merge = Machine::new();
    let out = merge.tbb(
        Some(&server),
        &[
            "--cache",
            url,
            "apply",
            "manifests/smoke.toml",
            "--locked",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(episodes_run(&text(&out.stderr)), 0, "{}", text(&out.stderr));

    assert_published_as_one_local_process(&[&merge]);
}

#[test]
fn a_store_that_cannot_be_used_stops_the_command_before_anything_runs_and_shows_no_secret() {
    let server = Seaweed::start();
    assert!(server.make_bucket("tbb-here"));
    let machine = Machine::new();
    let apply = |url: &str, secret: Option<&str>| {
        let mut cmd = assert_cmd::Command::cargo_bin("tbb").unwrap_or_else(|e| panic!("{e}"));
        cmd.current_dir(root())
            .env("NO_COLOR", "1")
            .env("COLUMNS", "1000")
            .arg("--outputs")
            .arg(machine.dir.path().join("outputs"))
            .arg("--lockfiles")
            .arg(machine.dir.path().join("lockfiles"))
            .args(["--cache", url, "apply", "manifests/smoke.toml", "--locked"]);
        server.env(&mut cmd);
        if let Some(secret) = secret {
            cmd.env("AWS_SECRET_ACCESS_KEY", secret);
        }
        cmd.output().unwrap_or_else(|e| panic!("{e}"))
    };
    let wrong = "wrong-secret-do-not-show-4711";
    for (url, secret, says) in [
        ("s3://tbb-missing/p", None, "does not exist"),
        ("s3://tbb-here/p", Some(wrong), "refused the credentials"),
    ] {
        let out = apply(url, secret);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("cannot reach the shared cache"), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        for secret in [SECRET_KEY, wrong] {
            assert!(!stderr.contains(secret) && !text(&out.stdout).contains(secret));
        }
        assert!(
            !machine.study().join("cache").exists(),
            "nothing ran before the store was checked"
        );
    }
    // A closed port: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut cmd = assert_cmd::Command::cargo_bin("tbb").unwrap_or_else(|e| panic!("{e}"));
    server.env(&mut cmd);
    let out = cmd
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{closed}"))
        .arg("--outputs")
        .arg(machine.dir.path().join("outputs"))
        .args(["--cache", "s3://tbb-here/p", "plan", "manifests/smoke.toml"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot reach the shared cache s3://tbb-here/p/smoke"),
        "{stderr}"
    );
    assert!(!stderr.contains(SECRET_KEY), "{stderr}");
}

/// Set in the environment of the child runs of
/// `eight_processes_racing_one_claim_have_exactly_one_winner_and_the_others_name_it`:
/// the directory whose `go` file starts the race. Never set in this process (a child
/// reads the store's credentials from its own environment).
const RACER: &str = "REMOTE_CACHE_TEST_RACER";

#[test]
fn eight_processes_racing_one_claim_have_exactly_one_winner_and_the_others_name_it() {
    if let Some(dir) = std::env::var_os(RACER) {
        let go = PathBuf::from(dir).join("go");
        while !go.exists() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let remote = tbb::pipeline::remote::Remote::connect("s3://tbb-race/p", "smoke")
            .unwrap_or_else(|e| panic!("{e}"));
        let me = format!("racer-{}", std::process::id());
        match remote.claim("lease", &me, 1_000, std::time::Duration::from_secs(60)) {
            Ok(tbb::pipeline::claims::Claim::Won { .. }) => println!("claim: won by {me}"),
            Ok(tbb::pipeline::claims::Claim::Held(h)) => println!("claim: held by {}", h.holder),
            Err(e) => panic!("{e}"),
        }
        return;
    }
    let server = Seaweed::start();
    assert!(server.make_bucket("tbb-race"));
    let start = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let this_test = format!(
        "{}::eight_processes_racing_one_claim_have_exactly_one_winner_and_the_others_name_it",
        module_path!().split_once("::").map_or("", |(_, m)| m)
    );
    let me = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let racers: Vec<std::process::Child> = (0..8)
        .map(|_| {
            let mut cmd = std::process::Command::new(&me);
            cmd.args([
                this_test.as_str(),
                "--exact",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(RACER, start.path())
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE")
            .stdout(std::process::Stdio::piped());
            for (k, v) in server.vars() {
                cmd.env(k, v);
            }
            cmd.spawn().unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    std::fs::write(start.path().join("go"), b"").unwrap_or_else(|e| panic!("{e}"));
    let said: Vec<String> = racers
        .into_iter()
        .map(|r| {
            let out = r.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
            assert!(out.status.success(), "{}", text(&out.stdout));
            text(&out.stdout)
                .lines()
                // The harness prints it after the test's name, on that line.
                .find_map(|l| l.split_once("claim: ").map(|(_, said)| said.to_string()))
                .unwrap_or_else(|| panic!("a racer said nothing: {}", text(&out.stdout)))
        })
        .collect();
    let winners: Vec<&String> = said.iter().filter(|s| s.starts_with("won by ")).collect();
    assert_eq!(winners.len(), 1, "{said:?}");
    let winner = winners[0].trim_start_matches("won by ");
    assert!(
        said.iter()
            .filter(|s| !s.starts_with("won"))
            .all(|s| s == &format!("held by {winner}")),
        "{said:?}"
    );
}
