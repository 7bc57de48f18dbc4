//! What the integration tests that drive the binary on a scratch study share: the
//! repository root, a scratch directory holding the shipped catalogue and system
//! prompts, and the `tbb` command run in it with the repository's families and none
//! of the caller's `TBB_*` overrides.
//!
//! `benches/live.rs` compiles this module too and uses part of it.
#![allow(dead_code)]

pub mod cache_files;
pub mod seaweed;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh directory with `manifests/configurations.toml` (the shipped catalogue) and
/// `prompts/` (every shipped system prompt); the test writes its manifests beside.
pub fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for sub in ["manifests", "prompts"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::copy(
        repo().join("manifests/configurations.toml"),
        dir.path().join("manifests/configurations.toml"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let prompts = std::fs::read_dir(repo().join("prompts")).unwrap_or_else(|e| panic!("{e}"));
    for entry in prompts {
        let from = entry.unwrap_or_else(|e| panic!("{e}")).path();
        if let Some(name) = from.file_name() {
            std::fs::copy(&from, dir.path().join("prompts").join(name))
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
    dir
}

/// `tbb` run in `dir`, reading the repository's families, with no colour and no
/// `TBB_REPEATS`, `TBB_OUTPUTS`, `TBB_PROMPTS`, `TBB_LOCKFILES`, `TBB_CONFIGS` or
/// `TBB_CACHE` from the caller.
pub fn tbb_in(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("tbb").unwrap_or_else(|e| panic!("{e}"));
    cmd.current_dir(dir)
        .env("TBB_FAMILIES", repo().join("families"))
        .env("NO_COLOR", "1")
        .env_remove("TBB_REPEATS")
        .env_remove("TBB_OUTPUTS")
        .env_remove("TBB_PROMPTS")
        .env_remove("TBB_LOCKFILES")
        .env_remove("TBB_CONFIGS")
        .env_remove("TBB_CACHE");
    cmd
}

/// The first line of `text` that starts with `prefix`; panics (showing `text`) when
/// none does.
pub fn line_starting<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starts with {prefix:?}:\n{text}"))
}

/// Serves `app` on 127.0.0.1 (a free port) from its own thread for the rest of the test
/// process; returns its origin (`http://127.0.0.1:PORT`).
pub fn serve_on_loopback(app: axum::Router) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let origin = format!(
        "http://{}",
        listener.local_addr().unwrap_or_else(|e| panic!("{e}"))
    );
    listener
        .set_nonblocking(true)
        .unwrap_or_else(|e| panic!("{e}"));
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        rt.block_on(async move {
            let listener =
                tokio::net::TcpListener::from_std(listener).unwrap_or_else(|e| panic!("{e}"));
            let _ = axum::serve(listener, app).await;
        });
    });
    origin
}

/// A chat completion that answers `{}` with `stop`: a final answer that ends the
/// episode at once (10 prompt tokens, 2 completion tokens).
pub fn final_answer() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({
        "id": "x",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "{}"}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    }))
}

/// A catalogue of one enabled live configuration, `loopback`, on the OpenAI-compatible
/// server at `origin` with `concurrency` requests in flight.
pub fn loopback_catalogue(origin: &str, concurrency: u32) -> String {
    format!(
        "[[configuration]]\nname = \"loopback\"\norganization = \"Test\"\n\
         provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{origin}/v1\"\n\
         prices = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\nenabled = true\n\
         concurrency = {concurrency}\ntimeout_ms = 10000\n"
    )
}

/// The manifest of a study of one family (`overdue-escalation-harbor`) at the cell
/// (8, low, raw) over `configurations`, reading the catalogue `catalogue` beside it,
/// with `extra` (a `[budgets]` table, say) appended. Its lines are fixed, so a test may
/// point at one: line 12 is the first of `extra`.
pub fn one_cell_study(
    study: &str,
    catalogue: &str,
    configurations: &[&str],
    extra: &str,
) -> String {
    let names: Vec<String> = configurations.iter().map(|c| format!("\"{c}\"")).collect();
    format!(
        "[study]\nname = \"{study}\"\ncatalogue = \"{catalogue}\"\n\
         [families]\nnames = [\"overdue-escalation-harbor\"]\n\
         [[cells.list]]\nv = 8\nw = \"low\"\nd = \"raw\"\n\
         [configurations]\nnames = [{}]\n{extra}",
        names.join(", ")
    )
}
