//! A dead server is not a finished study (issue 29 §2), against loopback servers this
//! test starts: a route that is down or refuses the key stops `apply` at its
//! preflight with nothing run; a server that dies midway trips the route's breaker,
//! which leaves the rest of its episodes planned; episodes that ended as infrastructure
//! failures make `apply` exit with its own code, and `--retry-infra` reruns exactly
//! those once the server is back.

use crate::common;

use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use common::{scratch, tbb_in};

/// `tbb apply`'s exit code when the preflight stops it.
const ROUTE_UNAVAILABLE: i32 = 4;
/// `tbb apply`'s exit code when episodes ended as infrastructure failures.
const INFRA_FAILURES: i32 = 5;

pub(crate) const MODEL: &str = "loopback-model";
const KEY_VARIABLE: &str = "TBB_TEST_INFRA_KEY";

/// A loopback OpenAI-compatible server and what it was asked.
pub(crate) struct Server {
    pub(crate) origin: String,
    /// Chat requests received (the paid ones).
    pub(crate) chats: Arc<AtomicUsize>,
    /// Chat requests still answered before the server fails every one with a 500
    /// (negative: no limit).
    pub(crate) answers_left: Arc<AtomicI64>,
    /// The `Authorization` header of the last chat request, if it had one.
    pub(crate) authorization: Arc<Mutex<Option<String>>>,
}

/// A server listing [`MODEL`] that answers chat requests like a model calling the
/// first tool, then answering, until `answers` requests are spent (`None`: forever);
/// it refuses every request with a 401 when `refuse_key`.
pub(crate) fn server(answers: Option<i64>, refuse_key: bool) -> Server {
    let chats = Arc::new(AtomicUsize::new(0));
    let authorization = Arc::new(Mutex::new(None));
    let answers_left = Arc::new(AtomicI64::new(answers.unwrap_or(-1)));
    let refused = || {
        (
            axum::http::StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": {"message": "Incorrect API key provided"}})),
        )
    };
    let models = move || async move {
        if refuse_key {
            return refused();
        }
        (
            axum::http::StatusCode::OK,
            axum::Json(json!({"object": "list", "data": [{"id": MODEL, "object": "model"}]})),
        )
    };
    let chat = {
        let (chats, answers_left) = (chats.clone(), answers_left.clone());
        let authorization = authorization.clone();
        move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let (chats, answers_left) = (chats.clone(), answers_left.clone());
            let seen = headers
                .get(axum::http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            *authorization.lock().unwrap_or_else(|e| e.into_inner()) = seen;
            async move {
                chats.fetch_add(1, Ordering::SeqCst);
                if refuse_key {
                    return refused();
                }
                let left = answers_left.load(Ordering::SeqCst);
                if left == 0 {
                    return (
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        axum::Json(json!({"error": {"message": "the model crashed"}})),
                    );
                }
                if left > 0 {
                    answers_left.fetch_sub(1, Ordering::SeqCst);
                }
                let request: Value = serde_json::from_slice(&body).unwrap_or_default();
                let answered = request["messages"]
                    .as_array()
                    .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
                let message = if answered {
                    json!({"role": "assistant", "content": "{\"status\": \"done\"}"})
                } else {
                    let tool = request["tools"][0]["function"]["name"].clone();
                    json!({"role": "assistant", "content": null,
                           "tool_calls": [{"id": "call_1", "type": "function",
                               "function": {"name": tool, "arguments": "{}"}}]})
                };
                let finish = if answered { "stop" } else { "tool_calls" };
                (
                    axum::http::StatusCode::OK,
                    axum::Json(
                        json!({"id": "c", "object": "chat.completion", "model": MODEL,
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 10,
                                  "total_tokens": 110}}),
                    ),
                )
            }
        }
    };
    let origin = common::serve_on_loopback(
        axum::Router::new()
            .route("/v1/models", axum::routing::get(models))
            .route("/v1/chat/completions", axum::routing::post(chat)),
    );
    Server {
        origin,
        chats,
        answers_left,
        authorization,
    }
}

/// The origin of a loopback port nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let origin = format!(
        "http://{}",
        listener.local_addr().unwrap_or_else(|e| panic!("{e}"))
    );
    drop(listener);
    origin
}

/// A scratch study `infra` of one cell, 8 episodes, on the configuration `loopback` at `origin`
/// (one request in flight, one attempt a request, the key in [`KEY_VARIABLE`]), with
/// `extra` lines in its catalogue entry.
fn study(dir: &Path, origin: &str, extra: &str) {
    let catalogue = format!(
        "[[configuration]]\nname = \"loopback\"\norganization = \"Test\"\n\
         provider = \"openai\"\nmodel = \"{MODEL}\"\nbase_url = \"{origin}/v1\"\n\
         api_key_env = \"{KEY_VARIABLE}\"\n\
         prices = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\n\
         concurrency = 1\ntimeout_ms = 5000\n{extra}\
         retry = {{ max_attempts = 1, base_delay_ms = 1, max_delay_ms = 1, retry_on = [] }}\n"
    );
    std::fs::write(dir.join("manifests/infra-catalogue.toml"), catalogue)
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        dir.join("manifests/infra.toml"),
        format!(
            "repeats = 8\n{}",
            common::one_cell_study("infra", "infra-catalogue.toml", &["loopback"], "")
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

fn tbb(dir: &Path) -> assert_cmd::Command {
    let mut cmd = tbb_in(dir);
    cmd.env(KEY_VARIABLE, "sk-test");
    cmd
}

/// Runs `cmd`; returns its exit code and its stdout and stderr together.
pub(crate) fn run(cmd: &mut assert_cmd::Command) -> (Option<i32>, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn a_route_that_is_down_stops_apply_at_its_preflight_with_nothing_run() {
    let dir = scratch();
    let origin = closed_port();
    study(dir.path(), &origin, "");
    let (code, text) = run(tbb(dir.path()).args(["apply", "manifests/infra.toml"]));
    assert_eq!(code, Some(ROUTE_UNAVAILABLE), "{text}");
    assert!(
        text.contains("`loopback`") && text.contains(&origin) && text.contains("is down"),
        "names the configuration, its route and the cause: {text}"
    );
    assert!(
        text.contains("start the server") && text.contains("pass --no-"),
        "says the fix: {text}"
    );
    assert!(
        !dir.path().join("lockfiles/infra.lock").exists(),
        "nothing is written"
    );
    let (code, plan) = run(tbb(dir.path()).args(["plan", "manifests/infra.toml"]));
    assert_eq!(code, Some(0), "{plan}");
    assert!(
        !plan.contains("No changes"),
        "everything is still to run: {plan}"
    );
}

#[test]
fn a_route_that_refuses_the_key_stops_apply_naming_the_key_variable() {
    let dir = scratch();
    let server = server(None, true);
    study(dir.path(), &server.origin, "");
    let (code, text) = run(tbb(dir.path()).args(["apply", "manifests/infra.toml"]));
    assert_eq!(code, Some(ROUTE_UNAVAILABLE), "{text}");
    assert!(
        text.contains("refuses the key") && text.contains(KEY_VARIABLE),
        "{text}"
    );
    assert_eq!(
        server.chats.load(Ordering::SeqCst),
        0,
        "no chat request was sent"
    );
    // --no-preflight sends them: each episode is an infrastructure failure, and apply
    // says so with its own exit code, the count and the cause.
    let (code, text) =
        run(tbb(dir.path()).args(["apply", "manifests/infra.toml", "--no-preflight"]));
    assert!(server.chats.load(Ordering::SeqCst) > 0, "{text}");
    assert_eq!(code, Some(INFRA_FAILURES), "{text}");
    assert!(
        text.contains("episodes ended as infrastructure failures (auth ×"),
        "{text}"
    );
}

#[test]
fn a_server_that_dies_midway_trips_the_breaker_and_the_rest_stay_planned() {
    let dir = scratch();
    // Two episodes' worth of answers (a tool call and an answer each), then 500s.
    let server = server(Some(4), false);
    study(dir.path(), &server.origin, "max_infra_failures = 2\n");
    let (code, text) = run(tbb(dir.path()).args(["apply", "manifests/infra.toml"]));
    assert_eq!(code, Some(INFRA_FAILURES), "{text}");
    assert!(
        text.contains(&format!("stopped route {}/v1", server.origin))
            && text.contains("2 episodes in a row ended as infrastructure failures"),
        "names the route: {text}"
    );
    assert!(
        text.contains("2 episodes ended as infrastructure failures (server_error ×2)"),
        "the count and the cause: {text}"
    );
    assert!(text.contains("the tables are not published"), "{text}");
    // The two that failed cost a request each; the stopped route sent nothing more.
    assert_eq!(server.chats.load(Ordering::SeqCst), 6, "{text}");
    let (code, plan) = run(tbb(dir.path()).args(["plan", "manifests/infra.toml"]));
    assert_eq!(code, Some(0), "{plan}");
    assert!(
        !plan.contains("No changes"),
        "the rest is still to run: {plan}"
    );
    // Once the server is back, the next apply runs the rest and publishes.
    server.answers_left.store(-1, Ordering::SeqCst);
    let (code, text) = run(tbb(dir.path()).args(["apply", "manifests/infra.toml"]));
    assert_eq!(code, Some(0), "{text}");
    assert!(
        dir.path().join("outputs/infra/episodes.parquet").exists(),
        "{text}"
    );
}

/// `text` with every run of whitespace and miette's margins made one space.
pub(crate) fn flat(text: &str) -> String {
    text.split_whitespace()
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `attempt` column of a published `episodes.parquet`, if it has one, and its
/// `infra_failure` column, row by row.
fn attempts_and_failures(path: &Path) -> (Option<Vec<u32>>, Vec<bool>) {
    use arrow_array::{BooleanArray, UInt32Array};
    let (batches, _) = tbb::tables::read_table(path).unwrap_or_else(|e| panic!("{e}"));
    let mut attempts: Option<Vec<u32>> = None;
    let mut failures = Vec::new();
    for b in &batches {
        if let Some(column) = b.column_by_name("attempt") {
            let column = column
                .as_any()
                .downcast_ref::<UInt32Array>()
                .unwrap_or_else(|| panic!("attempt is not u32"));
            attempts
                .get_or_insert_with(Vec::new)
                .extend(column.values());
        }
        let column = b
            .column_by_name("infra_failure")
            .and_then(|c| c.as_any().downcast_ref::<BooleanArray>().cloned())
            .unwrap_or_else(|| panic!("no infra_failure column"));
        failures.extend(column.iter().map(|v| v.unwrap_or(false)));
    }
    (attempts, failures)
}

#[test]
fn retry_infra_reruns_exactly_the_episodes_that_failed_and_their_rows_say_attempt_2() {
    let dir = scratch();
    // Two episodes' worth of answers, then 500s; the breaker never stops the route,
    // so the other six episodes each fail their one request.
    let server = server(Some(4), false);
    study(dir.path(), &server.origin, "max_infra_failures = 0\n");
    let (code, text) = run(tbb(dir.path()).args(["apply", "manifests/infra.toml"]));
    assert_eq!(code, Some(INFRA_FAILURES), "{text}");
    // miette wraps the help at the terminal's width.
    let flat = flat(&text);
    assert!(
        flat.contains("6 episodes ended as infrastructure failures")
            && flat.contains("`tbb apply manifests/infra.toml --retry-infra` reruns exactly those"),
        "names the retry command: {text}"
    );
    assert_eq!(server.chats.load(Ordering::SeqCst), 4 + 6, "{text}");
    let episodes = dir.path().join("outputs/infra/episodes.parquet");
    let (attempts, failures) = attempts_and_failures(&episodes);
    assert_eq!(attempts, None, "no retry, no attempt column");
    assert_eq!(failures.iter().filter(|f| **f).count(), 6);
    let lockfile = dir.path().join("lockfiles/infra.lock");
    let before = std::fs::read_to_string(&lockfile).unwrap_or_default();
    assert!(!before.contains("[[retry]]"), "{before}");

    // A plain apply does not rerun them: they are failures of their configuration.
    server.answers_left.store(-1, Ordering::SeqCst);
    let (code, text) = run(tbb(dir.path()).args(["apply", "manifests/infra.toml"]));
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(server.chats.load(Ordering::SeqCst), 10, "{text}");

    // --retry-infra reruns exactly the six: a tool call and an answer each.
    server.chats.store(0, Ordering::SeqCst);
    let (code, text) =
        run(tbb(dir.path()).args(["apply", "manifests/infra.toml", "--retry-infra"]));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("rerunning the 6 episodes"), "{text}");
    assert_eq!(server.chats.load(Ordering::SeqCst), 6 * 2, "{text}");
    let (attempts, failures) = attempts_and_failures(&episodes);
    let attempts = attempts.unwrap_or_else(|| panic!("no attempt column after a retry"));
    assert_eq!(
        attempts.iter().filter(|a| **a == 2).count(),
        6,
        "{attempts:?}"
    );
    assert_eq!(
        attempts.iter().filter(|a| **a == 1).count(),
        2,
        "{attempts:?}"
    );
    assert!(failures.iter().all(|f| !f), "{failures:?}");
    // The lockfile records the retry; every later command reads it and reruns nothing.
    let after = std::fs::read_to_string(&lockfile).unwrap_or_default();
    assert_eq!(after.matches("[[retry]]").count(), 6, "{after}");
    assert!(after.contains("attempt = 2"), "{after}");
    let (code, plan) = run(tbb(dir.path()).args(["plan", "manifests/infra.toml"]));
    assert_eq!(code, Some(0), "{plan}");
    assert!(plan.contains("No changes"), "{plan}");
    let (code, text) = run(tbb(dir.path()).args(["apply", "manifests/infra.toml", "--locked"]));
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(server.chats.load(Ordering::SeqCst), 12, "{text}");
    let (code, text) = run(tbb(dir.path()).args(["certify", "manifests/infra.toml"]));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("8 passed, 0 failed"), "{text}");
    let (code, text) = run(tbb(dir.path()).args(["reproduce", "manifests/infra.toml"]));
    assert_eq!(code, Some(0), "{text}");
}
