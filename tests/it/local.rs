//! The local-model lane against a loopback server that behaves like llama.cpp's
//! `llama-server` where it matters to tbb: it lists its model by the file's path,
//! counts the prompt with its own (coarser) tokenizer, refuses a request whose prompt
//! plus `max_tokens` exceeds its context with llama.cpp's HTTP 400 body, and otherwise
//! calls the first listed tool, then answers.
//!
//! Covered: the plan's context-window warning (and the refusals it predicts, recorded
//! as `context_exceeded`), apply's warning when the server counted a prompt without its
//! tools, the local default timeout, `--configs` with a manifest, and
//! `tbb providers check` on a path-listed model.

use crate::common;

use std::path::Path;

use serde_json::{json, Value};

use common::{repo, scratch, tbb_in};

/// The server's context, in its own tokens.
const N_CTX: u64 = 4096;
const MODEL_PATH: &str = "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

/// The server's prompt count: a token per three bytes of JSON body where it refuses
/// whole requests (coarser than o200k_base, as small open models' tokenizers are on
/// JSON), per four where it serves until the context is full (so that a V = 32 prompt
/// fits its context with less room than the cap).
fn server_tokens(body: &[u8], overflow: Overflow) -> u64 {
    match overflow {
        Overflow::RefuseWholeRequest => body.len() as u64 / 3,
        Overflow::RefusePromptAlone => body.len() as u64 / 4,
    }
}

/// What a server does with a request that does not fit its context.
#[derive(Clone, Copy)]
enum Overflow {
    /// Refuses it when the prompt plus `max_tokens` exceed the context (vLLM, SGLang).
    RefuseWholeRequest,
    /// Refuses it only when the prompt alone exceeds the context, and otherwise serves
    /// it until the context is full (llama.cpp's server).
    RefusePromptAlone,
}

/// Whether the server's chat template shows the model the request's tools.
#[derive(Clone, Copy, PartialEq)]
enum Tools {
    Shown,
    /// Left out, as llama.cpp does when the model's template has no place for them: the
    /// prompt is the messages alone, and the model, offered no tools, answers in text.
    Dropped,
}

fn llama_like_server() -> String {
    server(N_CTX, Overflow::RefuseWholeRequest, false, Tools::Shown)
}

/// A server with `n_ctx` tokens of context that handles an overflow as `overflow` says;
/// when `flaky`, every other request (the first, the third, ...) gets an HTTP 503.
fn server(n_ctx: u64, overflow: Overflow, flaky: bool, tools: Tools) -> String {
    let requests = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let models = || async {
        axum::Json(json!({"object": "list",
            "data": [{"id": MODEL_PATH, "object": "model", "owned_by": "llamacpp"}]}))
    };
    let chat = move |body: axum::body::Bytes| {
        let requests = requests.clone();
        async move {
            let n = requests.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if flaky && n.is_multiple_of(2) {
                let busy = json!({"error": {"code": 503, "message": "Loading model"}});
                return (
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    axum::Json(busy),
                );
            }
            let request: Value = serde_json::from_slice(&body).unwrap_or_default();
            let prompt = if tools == Tools::Dropped {
                // The messages rendered as ChatML turns, a token per four bytes of text.
                let rendered: String = request["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|m| {
                        let text = m["content"].as_str().unwrap_or_default();
                        format!("<|im_start|>{}\n{text}<|im_end|>\n", m["role"])
                    })
                    .collect();
                rendered.len() as u64 / 4
            } else {
                server_tokens(&body, overflow)
            };
            let cap = request["max_tokens"].as_u64().unwrap_or(0);
            let refused = match overflow {
                Overflow::RefuseWholeRequest => prompt + cap > n_ctx,
                Overflow::RefusePromptAlone => prompt > n_ctx,
            };
            if refused {
                let refusal = json!({"error": {"code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt, "n_ctx": n_ctx}});
                return (axum::http::StatusCode::BAD_REQUEST, axum::Json(refusal));
            }
            if prompt + cap > n_ctx {
                // Served until the context is full: cut short of the cap.
                let room = n_ctx - prompt;
                return (
                    axum::http::StatusCode::OK,
                    axum::Json(json!({"id": "chatcmpl-1", "object": "chat.completion",
                        "model": MODEL_PATH,
                        "choices": [{"index": 0, "finish_reason": "length",
                            "message": {"role": "assistant", "content": "I will search the"}}],
                        "usage": {"prompt_tokens": prompt, "completion_tokens": room,
                                  "total_tokens": n_ctx}})),
                );
            }
            let answered = tools == Tools::Dropped
                || request["messages"]
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
                axum::Json(json!({"id": "chatcmpl-1", "object": "chat.completion",
                    "model": MODEL_PATH,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": 12,
                              "total_tokens": prompt + 12}})),
            )
        }
    };
    common::serve_on_loopback(
        axum::Router::new()
            .route("/v1/models", axum::routing::get(models))
            .route("/v1/chat/completions", axum::routing::post(chat)),
    )
}

/// The shipped local entry, enabled, pointed at `origin`, with this context window.
fn local_catalogue(dir: &Path, origin: &str, window: u64) {
    let shipped = std::fs::read_to_string(repo().join("manifests/configurations.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let at = shipped
        .find("name = \"local-qwen2.5-coder-0.5b\"")
        .unwrap_or_else(|| panic!("the shipped catalogue has the local entry"));
    let (head, entry) = shipped.split_at(at);
    let entry = entry
        .replacen("enabled = false", "enabled = true", 1)
        .replacen("http://127.0.0.1:8080/v1", &format!("{origin}/v1"), 1)
        .replacen(
            "context_window = 16384",
            &format!("context_window = {window}"),
            1,
        );
    // The other live entries stay disabled; the sim panel stays as shipped.
    std::fs::write(
        dir.join("manifests/configurations.toml"),
        format!("{head}{entry}"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::copy(
        repo().join("manifests/local.toml"),
        dir.join("manifests/local.toml"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Runs `cmd`, which must succeed, and returns its stderr.
fn stderr_of_success(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// Runs an apply whose episodes include infrastructure failures, which must exit with
/// its own code (5) having committed and published everything, and returns its stdout.
fn stdout_of_infra_failures(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("episodes ended as infrastructure failures (context_exceeded ×"),
        "{stderr}"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stdout(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_plan_warns_of_the_cells_a_local_context_cannot_hold_and_the_server_refuses_them() {
    let origin = llama_like_server();
    let dir = scratch();
    local_catalogue(dir.path(), &origin, N_CTX);

    let plan = stdout(tbb_in(dir.path()).args(["plan", "manifests/local.toml"]));
    assert!(
        plan.contains("configurations from manifests/configurations.toml"),
        "{plan}"
    );
    let warnings: Vec<&str> = plan
        .lines()
        .filter(|l| l.contains("context_window"))
        .collect();
    // Both arms at V = 32 (their first requests carry 32 schemas); nothing at V = 8.
    assert_eq!(warnings.len(), 2, "{plan}");
    for w in &warnings {
        assert!(w.contains("v=32"), "{w}");
        assert!(w.contains("the first request needs"), "{w}");
        assert!(w.contains("in 4 of 4 families"), "{w}");
    }

    let summary =
        stdout_of_infra_failures(tbb_in(dir.path()).args(["apply", "manifests/local.toml"]));
    // The server refused exactly the episodes the plan named: 4 families × 2 arms at
    // V = 32; every V = 8 episode ran.
    assert!(
        summary.contains("Episodes: 16 run: ") && summary.contains(", 8 infrastructure failures."),
        "{summary}"
    );
    let episodes = read_episodes(&dir.path().join("outputs/local/episodes.parquet"));
    assert_eq!(episodes.len(), 16);
    for (v, infra, cause, status) in &episodes {
        if *v == 32 {
            assert!(infra, "a V = 32 episode was not refused");
            assert_eq!(cause.as_deref(), Some("context_exceeded"));
            assert_eq!(*status, Some(400));
        } else {
            assert!(!infra, "a V = 8 episode was refused: {cause:?}");
        }
    }

    // llama.cpp serves a prompt that fits with less room than the cap until its context
    // is full: those completions, cut short of the cap, are the same failure, not the
    // model's truncation.
    let origin = server(4500, Overflow::RefusePromptAlone, false, Tools::Shown);
    local_catalogue(dir.path(), &origin, 4500);
    let plan = stdout(tbb_in(dir.path()).args([
        "plan",
        "manifests/local.toml",
        "--set",
        "study.name=\"local-llama\"",
    ]));
    assert_eq!(plan.matches("context_window 4,500").count(), 2, "{plan}");
    let summary = stdout_of_infra_failures(tbb_in(dir.path()).args([
        "apply",
        "manifests/local.toml",
        "--set",
        "study.name=\"local-llama\"",
    ]));
    assert!(
        summary.contains("Episodes: 16 run: ") && summary.contains(", 8 infrastructure failures."),
        "{summary}"
    );
    let episodes = read_episodes(&dir.path().join("outputs/local-llama/episodes.parquet"));
    for (v, infra, cause, status) in &episodes {
        if *v == 32 {
            assert_eq!(cause.as_deref(), Some("context_exceeded"));
            assert_ne!(*status, Some(400), "served, not refused");
        } else {
            assert!(!infra, "a V = 8 episode failed: {cause:?}");
        }
    }
    let certify = stdout(tbb_in(dir.path()).args([
        "certify",
        "manifests/local.toml",
        "--set",
        "study.name=\"local-llama\"",
    ]));
    assert!(certify.contains("16 passed, 0 failed"), "{certify}");

    // With a window that holds V = 32, the plan has nothing to say.
    local_catalogue(dir.path(), &origin, 16_384);
    let plan = stdout(tbb_in(dir.path()).args(["plan", "manifests/local.toml"]));
    assert!(!plan.contains("context_window"), "{plan}");
}

#[test]
fn apply_warns_when_the_server_counted_the_first_requests_without_their_tools() {
    let origin = server(16_384, Overflow::RefuseWholeRequest, false, Tools::Dropped);
    let dir = scratch();
    local_catalogue(dir.path(), &origin, 16_384);
    let stderr = stderr_of_success(tbb_in(dir.path()).args(["apply", "manifests/local.toml"]));
    let warning = stderr
        .lines()
        .find(|l| l.contains("the server counted"))
        .unwrap_or_else(|| panic!("no warning: {stderr}"));
    assert!(
        warning.starts_with("  ! local-qwen2.5-coder-0.5b: the server counted"),
        "{warning}"
    );
    assert!(
        warning.contains("for the first request of 16 of 16 episodes"),
        "{warning}"
    );
    assert!(warning.contains("up to 32 tools"), "{warning}");
    assert!(warning.contains("serve the model with a template that has tools"));

    // The same study against a server that shows the tools: nothing to say.
    let origin = server(16_384, Overflow::RefuseWholeRequest, false, Tools::Shown);
    local_catalogue(dir.path(), &origin, 16_384);
    let stderr = stderr_of_success(tbb_in(dir.path()).args([
        "apply",
        "manifests/local.toml",
        "--set",
        "study.name=\"shown\"",
    ]));
    assert!(!stderr.contains("the server counted"), "{stderr}");
}

#[test]
fn a_completion_cut_short_after_a_retry_is_certified_with_its_attempts() {
    // Every first attempt gets a 503 and its retry is served: the cut-short V = 32
    // episodes record their failure after 2 attempts, and certify must replay the same.
    let origin = server(4500, Overflow::RefusePromptAlone, true, Tools::Shown);
    let dir = scratch();
    local_catalogue(dir.path(), &origin, 4500);
    let path = dir.path().join("manifests/configurations.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let at = text
        .find("name = \"local-qwen2.5-coder-0.5b\"")
        .unwrap_or_else(|| panic!("the local entry"));
    let (head, entry) = text.split_at(at);
    let entry = entry.replacen(
        "concurrency = 1",
        "concurrency = 1\nretry = { max_attempts = 2, base_delay_ms = 1, max_delay_ms = 1, retry_on = [\"server_error\"] }",
        1,
    );
    std::fs::write(&path, format!("{head}{entry}")).unwrap_or_else(|e| panic!("{e}"));
    let summary =
        stdout_of_infra_failures(tbb_in(dir.path()).args(["apply", "manifests/local.toml"]));
    assert!(
        summary.contains("Episodes: 16 run: ") && summary.contains(", 8 infrastructure failures."),
        "{summary}"
    );
    let episodes = read_episodes(&dir.path().join("outputs/local/episodes.parquet"));
    for (v, _, cause, _) in &episodes {
        if *v == 32 {
            assert_eq!(cause.as_deref(), Some("context_exceeded"));
        }
    }
    let certify = stdout(tbb_in(dir.path()).args(["certify", "manifests/local.toml"]));
    assert!(certify.contains("16 passed, 0 failed"), "{certify}");
}

/// `(v, infra_failure, infra_error, http_status)` of every row of an episodes table.
fn read_episodes(path: &Path) -> Vec<(i64, bool, Option<String>, Option<i64>)> {
    use arrow_array::{
        Array, BooleanArray, Int32Array, Int64Array, StringArray, UInt16Array, UInt32Array,
    };
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{e}"));
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .unwrap_or_else(|e| panic!("{e}"));
    let int = |a: &dyn Array, i: usize| -> Option<i64> {
        if a.is_null(i) {
            return None;
        }
        let any = a.as_any();
        any.downcast_ref::<Int64Array>()
            .map(|x| x.value(i))
            .or_else(|| {
                any.downcast_ref::<Int32Array>()
                    .map(|x| i64::from(x.value(i)))
            })
            .or_else(|| {
                any.downcast_ref::<UInt16Array>()
                    .map(|x| i64::from(x.value(i)))
            })
            .or_else(|| {
                any.downcast_ref::<UInt32Array>()
                    .map(|x| i64::from(x.value(i)))
            })
    };
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.unwrap_or_else(|e| panic!("{e}"));
        let col = |name: &str| {
            batch
                .column_by_name(name)
                .unwrap_or_else(|| panic!("no column {name}"))
                .clone()
        };
        let (v, infra, cause, status) = (
            col("v"),
            col("infra_failure"),
            col("infra_error"),
            col("infra_http_status"),
        );
        let infra = infra
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap_or_else(|| panic!("infra_failure is not boolean"));
        let cause = cause
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap_or_else(|| panic!("infra_error is not a string"));
        for i in 0..batch.num_rows() {
            rows.push((
                int(v.as_ref(), i).unwrap_or_else(|| panic!("v is not an integer")),
                infra.value(i),
                (!cause.is_null(i)).then(|| cause.value(i).to_string()),
                int(status.as_ref(), i),
            ));
        }
    }
    rows
}

#[test]
fn a_route_on_this_machine_defaults_to_the_local_timeout() {
    let dir = scratch();
    local_catalogue(dir.path(), "http://127.0.0.1:8080", 16_384);
    let out = stdout(tbb_in(dir.path()).args(["configs", "--json"]));
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .clone()
    };
    let local = row("local-qwen2.5-coder-0.5b");
    assert_eq!(local["local"], true);
    assert_eq!(local["timeout_ms"], 900_000);
    assert_eq!(local["context_window"], 16_384);
    let remote = row("openai-gpt-4.1-mini");
    assert_eq!(remote["local"], false);
    assert_eq!(remote["timeout_ms"], 120_000);
}

#[test]
fn providers_check_finds_a_model_listed_by_its_file_path() {
    let origin = llama_like_server();
    let dir = scratch();
    local_catalogue(dir.path(), &origin, 16_384);
    let out = stdout(tbb_in(dir.path()).args(["providers", "check"]));
    let line = out
        .lines()
        .find(|l| l.starts_with("local-qwen2.5-coder-0.5b"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("ok: reachable"), "{line}");
    assert!(
        line.contains(&format!("is among them as `{MODEL_PATH}`")),
        "{line}"
    );
}

#[test]
fn configs_given_with_a_manifest_must_name_its_catalogue() {
    let dir = scratch();
    local_catalogue(dir.path(), "http://127.0.0.1:8080", 16_384);
    std::fs::write(dir.path().join("other.toml"), "").unwrap_or_else(|e| panic!("{e}"));
    let out = tbb_in(dir.path())
        .args(["plan", "manifests/local.toml", "--configs", "other.toml"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("reads its configurations from manifests/configurations.toml"),
        "{stderr}"
    );
    assert!(stderr.contains("--set study.catalogue=PATH"), "{stderr}");
    // The same file, named either way, is fine.
    stdout(tbb_in(dir.path()).args([
        "plan",
        "manifests/local.toml",
        "--configs",
        "./manifests/configurations.toml",
    ]));
    // An unknown configuration names the catalogue that was searched.
    let out = tbb_in(dir.path())
        .args([
            "plan",
            "manifests/local.toml",
            "--set",
            "configurations.names=[\"local-qwen2.5-coder-05b\"]",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the catalogue manifests/configurations.toml has none of that name"),
        "{stderr}"
    );
    assert!(
        stderr.contains("did you mean `local-qwen2.5-coder-0.5b`"),
        "{stderr}"
    );
}
