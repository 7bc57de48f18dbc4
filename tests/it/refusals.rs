//! What tbb refuses through the binary that it once accepted: catalogue names that are
//! not identifiers (they may end up in paths), limits out of their range (one wording
//! for the command line, the manifest and the catalogue), and a provider response in
//! another role than the assistant's (a protocol violation of the route, recorded as the
//! infrastructure failure `bad_body`, never graded as an answer).
//!
//! Every server here is a loopback one on 127.0.0.1.

use crate::common;

use std::path::Path;

use arrow_array::{Array, BooleanArray, StringArray};
use serde_json::{json, Value as Json};

use tbb::limits::{self, Limit};

const USAGE_ERROR: i32 = 2;
const HARBOR: &str = "overdue-escalation-harbor";

/// `tbb ARGS` run in `dir`: its exit code and stderr, asserting it did not panic; the
/// stderr is unwrapped (the report wraps long lines to the terminal's width, with a
/// gutter), so a message reads as one line.
fn refused(cmd: &mut assert_cmd::Command) -> (Option<i32>, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("tbb runs: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "tbb panicked:\n{stderr}");
    assert!(
        !out.status.success(),
        "expected a refusal; stdout:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let unwrapped = stderr.replace('│', " ");
    (
        out.status.code(),
        unwrapped.split_whitespace().collect::<Vec<_>>().join(" "),
    )
}

/// What every entry point says of `value` for `limit`.
fn wording(limit: &'static Limit, value: i64) -> String {
    match limit.check::<u64>(value) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("{value} is within {}", limit.name),
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

// ---------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------

#[test]
fn a_catalogue_name_that_is_not_an_identifier_is_refused_at_its_span() {
    for (name, why) in [
        ("", "it is empty"),
        ("../../../../etc/passwd", "it starts with `.`"),
    ] {
        let dir = common::scratch();
        let catalogue = dir.path().join("bad.toml");
        // The name's value starts on line 2, column 8.
        write(
            &catalogue,
            &format!(
                "[[configuration]]\nname = \"{name}\"\norganization = \"Test\"\nprovider = \"openai\"\n\
                 model = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
                 prices = {{ input_per_mtok = 0.0, output_per_mtok = 0.0 }}\n"
            ),
        );
        let (code, stderr) = refused(
            common::tbb_in(dir.path())
                .env("TBB_CONFIGS", &catalogue)
                .args(["configs"]),
        );
        assert_eq!(code, Some(USAGE_ERROR), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "configuration name `{name}` is not an identifier: {why}"
            )),
            "{stderr}"
        );
        assert!(stderr.contains("bad.toml:2:8"), "at the name: {stderr}");
        assert!(stderr.contains(tbb::names::RULE), "says the rule: {stderr}");
    }
}

#[test]
fn a_manifest_file_name_that_is_not_an_identifier_cannot_name_a_lockfile() {
    let dir = common::scratch();
    write(
        &dir.path().join("manifests/Wild Name.toml"),
        &common::one_cell_study("wild", "configurations.toml", &["sim-aurora-flash"], ""),
    );
    let (code, stderr) =
        refused(common::tbb_in(dir.path()).args(["plan", "manifests/Wild Name.toml"]));
    assert_eq!(code, Some(USAGE_ERROR), "{stderr}");
    assert!(
        stderr.contains("the manifest file name `Wild Name` is not an identifier"),
        "{stderr}"
    );
    assert!(stderr.contains("<name>.lock"), "{stderr}");
    assert_eq!(
        stderr.matches("is not an identifier").count(),
        1,
        "{stderr}"
    );
    assert!(!dir.path().join("outputs").exists(), "nothing was written");
}

// ---------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------

#[test]
fn command_line_limits_out_of_range_are_refused_before_anything_runs() {
    let dir = common::scratch();
    let episode = |extra: &[&str]| {
        let mut cmd = common::tbb_in(dir.path());
        cmd.args([
            "run-episode",
            "--config",
            "sim-aurora-flash",
            "--family",
            HARBOR,
        ])
        .args(extra);
        cmd
    };
    for (flag, value, limit, shown) in [
        ("--cap", "0", &limits::COMPLETION_CAP, 0),
        ("--cap", "2000000", &limits::COMPLETION_CAP, 2_000_000),
        ("--repeat=-1", "", &limits::REPEAT_INDEX, -1),
    ] {
        let args: Vec<&str> = [flag, value]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let (code, stderr) = refused(&mut episode(&args));
        assert_eq!(code, Some(USAGE_ERROR), "{stderr}");
        assert!(stderr.contains(&wording(limit, shown)), "{stderr}");
    }
    // A lock wait that is not a finite number of seconds (`inf` used to panic).
    for value in ["inf", "NaN", "-1"] {
        let (code, stderr) = refused(
            common::tbb_in(dir.path())
                .args(["apply", "manifests/none.toml"])
                .arg(format!("--lock-timeout={value}")),
        );
        assert_eq!(code, Some(USAGE_ERROR), "{stderr}");
        assert!(stderr.contains("lock timeout"), "{stderr}");
        assert!(stderr.contains("is out of range"), "{stderr}");
    }
}

#[test]
fn manifest_and_catalogue_limits_are_refused_at_their_spans_in_the_same_words() {
    let dir = common::scratch();
    let manifests = dir.path().join("manifests");
    write(
        &manifests.join("limits.toml"),
        &common::one_cell_study(
            "limits",
            "configurations.toml",
            &["sim-aurora-flash"],
            "[budgets]\ncompletion_caps = [0]\nepisode_budget = 0\n",
        ),
    );
    let (code, stderr) =
        refused(common::tbb_in(dir.path()).args(["manifest", "check", "manifests/limits.toml"]));
    assert_eq!(code, Some(USAGE_ERROR), "{stderr}");
    // Line 13 is `completion_caps = [0]`; its 0 is at column 20.
    assert!(
        stderr.contains(&wording(&limits::COMPLETION_CAP, 0)),
        "{stderr}"
    );
    assert!(stderr.contains("limits.toml:13:20"), "{stderr}");
    assert!(
        stderr.contains(&wording(&limits::EPISODE_BUDGET, 0)),
        "{stderr}"
    );
    // The command line's `--cap 0` says the same as the manifest's `[0]`.
    let (_, cli) = refused(common::tbb_in(dir.path()).args([
        "run-episode",
        "--config",
        "sim-aurora-flash",
        "--family",
        HARBOR,
        "--cap",
        "0",
    ]));
    assert!(cli.contains(&wording(&limits::COMPLETION_CAP, 0)), "{cli}");
    // An override is refused like the file's value, naming the override.
    let (_, set) = refused(common::tbb_in(dir.path()).args([
        "manifest",
        "check",
        "manifests/limits.toml",
        "--set",
        "repeats=0",
    ]));
    assert!(
        set.contains(&format!("--set repeats: {}", wording(&limits::REPEATS, 0))),
        "{set}"
    );

    let catalogue = dir.path().join("limits-catalogue.toml");
    write(
        &catalogue,
        "[[configuration]]\nname = \"tight\"\norganization = \"Test\"\nprovider = \"openai\"\n\
         model = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         prices = { input_per_mtok = 0.0, output_per_mtok = 0.0 }\nconcurrency = 0\n",
    );
    let (code, stderr) = refused(
        common::tbb_in(dir.path())
            .env("TBB_CONFIGS", &catalogue)
            .args(["configs"]),
    );
    assert_eq!(code, Some(USAGE_ERROR), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "configuration `tight`: {}",
            wording(&limits::CONCURRENCY, 0)
        )),
        "{stderr}"
    );
    assert!(stderr.contains("limits-catalogue.toml:8:15"), "{stderr}");
}

// ---------------------------------------------------------------------------------
// A response in another role than the assistant's
// ---------------------------------------------------------------------------------

const PROTOCOLS: [&str; 3] = ["openai", "anthropic", "gemini"];

/// A well-formed answer of `protocol` whose message is in the `system` role (`user`
/// for Gemini, whose assistant is `model`), holding what would pass for a final answer.
fn wrong_role_body(protocol: &str) -> Json {
    let answer = "{\"decision\": \"escalate\", \"sources\": []}";
    match protocol {
        "openai" => json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "system", "content": answer},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912}}),
        "anthropic" => json!({"id": "msg_1", "type": "message", "role": "system", "model": "m",
            "content": [{"type": "text", "text": answer}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 900, "output_tokens": 12}}),
        _ => json!({"candidates": [{"content": {"role": "user", "parts": [{"text": answer}]},
                                    "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 12,
                              "totalTokenCount": 912}}),
    }
}

/// A loopback server answering `/<protocol>/...` with [`wrong_role_body`].
fn wrong_role_server() -> String {
    common::serve_on_loopback(
        axum::Router::new().fallback(|uri: axum::http::Uri| async move {
            let protocol = uri
                .path()
                .trim_start_matches('/')
                .split('/')
                .next()
                .unwrap_or_default()
                .to_string();
            axum::Json(wrong_role_body(&protocol))
        }),
    )
}

fn column<'b, T: 'static>(batch: &'b arrow_array::RecordBatch, name: &str) -> &'b T {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .unwrap_or_else(|| panic!("column {name}"))
}

#[test]
fn a_response_in_another_role_is_recorded_as_a_bad_body_not_graded_as_an_answer() {
    let origin = wrong_role_server();
    let dir = common::scratch();
    let mut catalogue = String::new();
    for protocol in PROTOCOLS {
        let prefix = if protocol == "gemini" { "v1beta" } else { "v1" };
        catalogue.push_str(&format!(
            "[[configuration]]\nname = \"wrong-role-{protocol}\"\norganization = \"Test\"\n\
             provider = \"{protocol}\"\nmodel = \"m\"\nbase_url = \"{origin}/{protocol}/{prefix}\"\n\
             api_key_env = \"TBB_TEST_KEY\"\ntimeout_ms = 10000\n\
             prices = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\n\
             retry = {{ max_attempts = 1, base_delay_ms = 1, max_delay_ms = 1, retry_on = [] }}\n\n"
        ));
    }
    let configurations = PROTOCOLS.map(|p| format!("wrong-role-{p}"));
    let configurations: Vec<&str> = configurations.iter().map(String::as_str).collect();
    write(
        &dir.path().join("manifests/roles.toml"),
        &common::one_cell_study(
            "roles",
            "wrong-role.toml",
            &configurations,
            "[budgets]\ncompletion_caps = [1024]\n",
        ),
    );
    write(&dir.path().join("manifests/wrong-role.toml"), &catalogue);

    // One episode through `run-episode`: the failure, its cause and why.
    let out = common::tbb_in(dir.path())
        .env("TBB_TEST_KEY", "loopback-key")
        .env("TBB_CONFIGS", dir.path().join("manifests/wrong-role.toml"))
        .args([
            "run-episode",
            "--config",
            "wrong-role-openai",
            "--family",
            HARBOR,
            "--json",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let episode: Json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(episode["stop"], "infra_failure", "{episode}");
    assert_eq!(episode["infra"]["cause"], "bad_body", "{episode}");
    assert!(
        episode["infra"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("choices[0].message.role")),
        "{episode}"
    );
    assert_eq!(episode["verdict"]["vts"], false, "{episode}");
    assert_eq!(episode["verdict"]["terminal_flag"], "infra_failure");

    // Every protocol through a study: each episode's row records the failure, and
    // apply exits with its code for infrastructure failures (5).
    common::tbb_in(dir.path())
        .env("TBB_TEST_KEY", "loopback-key")
        .args(["apply", "manifests/roles.toml"])
        .assert()
        .code(5);
    let (batches, _) = tbb::tables::read_table(&dir.path().join("outputs/roles/episodes.parquet"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut seen = Vec::new();
    for b in &batches {
        let configuration = column::<StringArray>(b, "configuration");
        let infra = column::<StringArray>(b, "infra_error");
        let flag = column::<StringArray>(b, "terminal_flag");
        let vts = column::<BooleanArray>(b, "vts");
        for r in 0..b.num_rows() {
            assert!(!infra.is_null(r), "row {r} has no infrastructure failure");
            assert_eq!(infra.value(r), "bad_body");
            assert_eq!(flag.value(r), "infra_failure");
            assert!(!vts.value(r));
            seen.push(configuration.value(r).to_string());
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen,
        [
            "wrong-role-anthropic",
            "wrong-role-gemini",
            "wrong-role-openai"
        ]
    );
}
