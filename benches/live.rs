//! The harness's CPU per request over loopback HTTP, whole `tbb` process: for each wire
//! protocol (OpenAI chat completions, Anthropic Messages, Gemini generateContent) and
//! at V = 8 and V = 128, `tbb apply` runs a small study against an axum server on
//! 127.0.0.1 that answers instantly — a call to the first listed tool, then a final
//! answer — and the bench divides the `tbb` process's CPU time (user + system) by the
//! requests the server answered. Run with `cargo bench --bench live`
//! (`TBB_LIVE_REPEATS=n` for more or fewer episodes; `TBB_LIVE_BIN=path` measures
//! another build of `tbb`, e.g. the commit before a change; `TBB_LIVE_SERVE=dir` writes the
//! six studies under `dir` and serves until killed, for a profiler;
//! `TBB_LIVE_INSPECT=path/to/python` also runs the peer, inspect_ai, side by side: see
//! `scripts/inspect_peer.py`).
//!
//! How the server's CPU is kept out: `tbb` runs as a child process (the real binary,
//! `tbb apply` exactly as a user runs it) and the server stays in this process; after
//! each child is reaped, `getrusage(RUSAGE_CHILDREN)` has grown by that child's CPU and
//! by nothing else (only waited-for children count). That is simpler than re-executing
//! the bench as a server and exact to the microsecond, where `/proc/<pid>/stat` counts
//! in 10 ms ticks.
//!
//! Never: sends anything off the machine (the catalogue's routes point at the loopback
//! server; the key is a dummy in an environment variable of the child only).

// Test and bench code: a panic is the failure report, so unwrapping is allowed here
// (the workspace denies it in library code).
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The integration tests' loopback-server starter (and their other helpers, unused here).
#[path = "../tests/it/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::Uri;
use serde_json::{json, Value as Json};

/// The wire protocols, as a catalogue names them.
const PROTOCOLS: [&str; 3] = ["openai", "anthropic", "gemini"];

/// Six core families from six intents across the four domains (the smoke study's).
const FAMILIES: [&str; 6] = [
    "overdue-escalation-harbor",
    "vendor-bank-change-granite",
    "phishing-report-triage-kestrel",
    "customer-reply-routing-marigold",
    "retention-purge-aurora",
    "room-conflict-resolution-tamarind",
];

/// Requests answered, per protocol (index into [`PROTOCOLS`]), and the first OpenAI
/// request body seen for each menu size (what the inspect_ai peer is handed).
#[derive(Default)]
struct Counters {
    answered: [AtomicU64; 3],
    first_openai: Mutex<HashMap<usize, Bytes>>,
}

/// The first listed tool's name and whether the conversation already holds a tool
/// result, in each protocol's shape.
fn read_request(protocol: usize, body: &Json) -> (String, bool) {
    let name = |v: &Json| v.as_str().unwrap_or("missing").to_string();
    match protocol {
        0 => (
            name(&body["tools"][0]["function"]["name"]),
            body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool")),
        ),
        1 => (
            name(&body["tools"][0]["name"]),
            body["messages"].as_array().is_some_and(|m| {
                m.iter().any(|m| {
                    m["content"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
                })
            }),
        ),
        _ => (
            name(&body["tools"][0]["functionDeclarations"][0]["name"]),
            body["contents"].as_array().is_some_and(|c| {
                c.iter().any(|c| {
                    c["parts"]
                        .as_array()
                        .is_some_and(|p| p.iter().any(|p| p.get("functionResponse").is_some()))
                })
            }),
        ),
    }
}

/// The reply: a call to `tool`, or (after a tool result) the final answer. `prompt` is
/// the prompt's token count as a server would report it: a token per three bytes of the
/// request (tbb checks that a local server saw the whole prompt, and a fixed count
/// would look like one that did not).
fn reply(protocol: usize, tool: &str, answered: bool, prompt: u64) -> Json {
    match (protocol, answered) {
        (0, false) => json!({"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
                "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": tool, "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20}}),
        (0, true) => json!({"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "{}"}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}}),
        (1, false) => json!({"id": "msg", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": prompt, "output_tokens": 20}}),
        (1, true) => json!({"id": "msg", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "{}"}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": prompt, "output_tokens": 5}}),
        (_, false) => json!({"candidates": [{"index": 0, "finishReason": "STOP",
                "content": {"role": "model", "parts": [{"functionCall": {"name": tool, "args": {}}}]}}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": 20, "totalTokenCount": prompt + 20},
            "modelVersion": "m"}),
        (_, true) => json!({"candidates": [{"index": 0, "finishReason": "STOP",
                "content": {"role": "model", "parts": [{"text": "{}"}]}}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": 5, "totalTokenCount": prompt + 5},
            "modelVersion": "m"}),
    }
}

async fn answer(State(counters): State<Arc<Counters>>, uri: Uri, body: Bytes) -> axum::Json<Json> {
    let path = uri.path();
    let protocol = if path.ends_with("/chat/completions") {
        0
    } else if path.ends_with("/messages") {
        1
    } else {
        2
    };
    counters.answered[protocol].fetch_add(1, Ordering::Relaxed);
    let request: Json = serde_json::from_slice(&body).unwrap_or(Json::Null);
    if protocol == 0 {
        let tools = request["tools"].as_array().map_or(0, Vec::len);
        let mut first = counters
            .first_openai
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        first.entry(tools).or_insert_with(|| body.clone());
    }
    let (tool, answered) = read_request(protocol, &request);
    axum::Json(reply(protocol, &tool, answered, body.len() as u64 / 3))
}

/// Starts the server on its own thread; returns its origin.
fn serve(counters: Arc<Counters>) -> String {
    common::serve_on_loopback(axum::Router::new().fallback(answer).with_state(counters))
}

/// CPU seconds (user + system) of every reaped child so far: `cutime` and `cstime` of
/// `/proc/self/stat` (fields 16 and 17, in clock ticks of `getconf CLK_TCK`). Read from
/// procfs rather than `getrusage` so the workspace can forbid `unsafe`.
fn children_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_else(|e| panic!("{e}"));
    // The command name (field 2) may hold spaces; the fields after it are plain.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `after_name` starts at field 3 (state): field n is at index n - 3.
    let ticks = |n: usize| -> f64 {
        fields
            .get(n - 3)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no field {n} in /proc/self/stat: {stat}"))
    };
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .unwrap_or_else(|e| panic!("getconf: {e}"));
    let per_second: f64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("getconf CLK_TCK: {e}"));
    (ticks(16) + ticks(17)) / per_second
}

/// A study directory: the catalogue (one route of `protocol` at `origin`) and a
/// manifest of the six families at one cell of `v` schemas, fixed menu.
fn study(dir: &Path, protocol: &str, origin: &str, v: u32, repeats: u32) -> PathBuf {
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).unwrap_or_else(|e| panic!("{e}"));
    let prefix = if protocol == "gemini" { "v1beta" } else { "v1" };
    std::fs::write(
        manifests.join("configurations.toml"),
        format!(
            "[[configuration]]\nname = \"loopback-{protocol}\"\norganization = \"Bench\"\n\
             provider = \"{protocol}\"\nmodel = \"bench-model\"\nbase_url = \"{origin}/{prefix}\"\n\
             api_key_env = \"TBB_LIVE_BENCH_KEY\"\n\
             prices = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\nenabled = true\n\
             concurrency = 8\ntimeout_ms = 10000\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let families: Vec<String> = FAMILIES.iter().map(|f| format!("\"{f}\"")).collect();
    let manifest = manifests.join("live.toml");
    std::fs::write(
        &manifest,
        format!(
            "repeats = {repeats}\n\n[study]\nname = \"live\"\ncatalogue = \"configurations.toml\"\n\n\
             [families]\nnames = [{}]\n\n[cells]\nlist = [{{ v = {v}, w = \"low\", d = \"raw\" }}]\n\n\
             [configurations]\nnames = [\"loopback-{protocol}\"]\n\n\
             [[arms]]\nname = \"fixed\"\nmenu = \"fixed\"\n\n\
             [budgets]\ncompletion_caps = [1024]\nepisode_budget = 128000\ncall_slack = 2\n",
            families.join(", ")
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    manifest
}

/// The `tbb` measured: this build's, or the one `TBB_LIVE_BIN` names (to measure
/// another commit's build against the same server in the same run).
fn tbb_binary() -> PathBuf {
    std::env::var_os("TBB_LIVE_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tbb")), PathBuf::from)
}

/// One `tbb apply` of a fresh study: (requests answered, CPU seconds of the process).
fn run_tbb(counters: &Counters, origin: &str, protocol: usize, v: u32, repeats: u32) -> (u64, f64) {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let manifest = study(dir.path(), PROTOCOLS[protocol], origin, v, repeats);
    let requests = counters.answered[protocol].load(Ordering::Relaxed);
    let cpu = children_cpu();
    let status = Command::new(tbb_binary())
        .current_dir(dir.path())
        .env("TBB_FAMILIES", repo.join("families"))
        .env("TBB_PROMPTS", repo.join("prompts"))
        .env("TBB_LIVE_BENCH_KEY", "bench-dummy-key")
        .env("NO_COLOR", "1")
        .env_remove("TBB_REPEATS")
        .arg("--outputs")
        .arg(dir.path().join("outputs"))
        .arg("--lockfiles")
        .arg(dir.path().join("lockfiles"))
        .arg("apply")
        .arg(&manifest)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("cannot run tbb: {e}"));
    assert!(status.success(), "tbb apply failed: {status}");
    (
        counters.answered[protocol].load(Ordering::Relaxed) - requests,
        children_cpu() - cpu,
    )
}

/// One run of the inspect_ai peer (`scripts/inspect_peer.py` under the Python that
/// `TBB_LIVE_INSPECT` names) on `samples` samples of the OpenAI body tbb sent at menu
/// size `v`: (requests answered, CPU seconds of the Python process).
fn run_inspect(
    python: &Path,
    counters: &Counters,
    origin: &str,
    v: usize,
    samples: u32,
) -> (u64, f64) {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let body = {
        let first = counters
            .first_openai
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        first
            .get(&v)
            .cloned()
            .unwrap_or_else(|| panic!("tbb sent no OpenAI request with {v} tools"))
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let request = dir.path().join("request.json");
    std::fs::write(&request, &body).unwrap_or_else(|e| panic!("{e}"));
    let requests = counters.answered[0].load(Ordering::Relaxed);
    let cpu = children_cpu();
    let status = Command::new(python)
        .arg(repo.join("scripts/inspect_peer.py"))
        .arg("--base-url")
        .arg(format!("{origin}/v1"))
        .arg("--request")
        .arg(&request)
        .arg("--samples")
        .arg(samples.to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(status.success(), "the inspect_ai peer failed: {status}");
    (
        counters.answered[0].load(Ordering::Relaxed) - requests,
        children_cpu() - cpu,
    )
}

/// The median run of three by CPU time.
fn median(mut runs: Vec<(u64, f64)>) -> (u64, f64) {
    runs.sort_by(|a, b| a.1.total_cmp(&b.1));
    runs[runs.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let repeats: u32 = std::env::var("TBB_LIVE_REPEATS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(40);
    let counters = Arc::new(Counters::default());
    let origin = serve(counters.clone());
    if let Ok(dir) = std::env::var("TBB_LIVE_SERVE") {
        // For profiling: write the six study directories and serve until killed.
        for protocol in PROTOCOLS {
            for v in [8, 128] {
                let manifest = study(
                    &Path::new(&dir).join(format!("{protocol}-{v}")),
                    protocol,
                    &origin,
                    v,
                    repeats,
                );
                println!("{}", manifest.display());
            }
        }
        loop {
            std::thread::park();
        }
    }
    println!(
        "{}: tbb apply against a loopback server; {} families x {repeats} repeats, fixed menu; \
         CPU (user + system) of the tbb process per request, median of 3 runs",
        tbb_binary().display(),
        FAMILIES.len()
    );
    println!("| protocol | V | requests | CPU per run (s) | CPU per request (ms) |");
    println!("|---|---|---|---|---|");
    let mut tbb_openai = HashMap::new();
    for (p, protocol) in PROTOCOLS.iter().enumerate() {
        for v in [8, 128] {
            let (requests, cpu) = median(
                (0..3)
                    .map(|_| run_tbb(&counters, &origin, p, v, repeats))
                    .collect(),
            );
            let per_request = cpu * 1e3 / requests.max(1) as f64;
            if p == 0 {
                tbb_openai.insert(v, per_request);
            }
            println!("| {protocol} | {v} | {requests} | {cpu:.3} | {per_request:.3} |");
        }
    }
    // The peer, side by side on the same server and workload (the same bodies tbb sent,
    // as many samples as tbb had episodes), when a Python with inspect_ai is named.
    let Some(python) = std::env::var_os("TBB_LIVE_INSPECT").map(PathBuf::from) else {
        println!("(TBB_LIVE_INSPECT unset: the inspect_ai peer was not run)");
        return;
    };
    let samples = FAMILIES.len() as u32 * repeats;
    println!(
        "\ninspect_ai ({}) against the same server, {samples} samples of the body tbb sent, \
         median of 3 runs; CPU of the Python process per request",
        python.display()
    );
    println!("| peer | V | requests | CPU per run (s) | CPU per request (ms) | peer / tbb |");
    println!("|---|---|---|---|---|---|");
    for v in [8, 128] {
        let (requests, cpu) = median(
            (0..3)
                .map(|_| run_inspect(&python, &counters, &origin, v as usize, samples))
                .collect(),
        );
        let per_request = cpu * 1e3 / requests.max(1) as f64;
        println!(
            "| inspect_ai | {v} | {requests} | {cpu:.3} | {per_request:.3} | {:.0}x |",
            per_request / tbb_openai.get(&v).copied().unwrap_or(f64::NAN)
        );
    }
}
