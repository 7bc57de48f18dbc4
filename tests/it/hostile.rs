//! Hostile input through the binary: files with an error far along an over-long line,
//! files too large to read, named pipes and damaged files in a study's cache, and
//! servers whose text and error bodies carry terminal controls. Each must end in a
//! normal diagnostic or a planned rerun, never a panic, a hang or a driven terminal.

use crate::common;

use std::path::Path;
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use common::{repo, scratch, tbb_in};

/// The exit code of a user error (src/cli/mod.rs, `exit_codes::USER_ERROR`).
const USER_ERROR: i32 = 2;

/// A column past miette's 65,535 limit on padding widths.
const FAR: usize = 70_000;

/// More than any diagnostic of one problem needs; far less than the over-long line.
const SMALL_REPORT: usize = 8_000;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// A normal usage-error diagnostic: exit code 2 (not a panic's 101), naming `file`,
/// small however long the line was.
fn assert_small_diagnostic(out: &Output, file: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(USER_ERROR), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(file), "the diagnostic names {file}: {err}");
    assert!(
        err.len() < SMALL_REPORT,
        "{} bytes of diagnostic for one problem",
        err.len()
    );
}

/// A copy of the repository's families under `dir/families`, with `edit` applied to
/// `core/overdue_escalation.toml`.
fn families_with(dir: &Path, edit: impl Fn(String) -> String) -> std::path::PathBuf {
    let root = dir.join("families");
    for split in ["core", "holdout", "frontier"] {
        let to = root.join(split);
        std::fs::create_dir_all(&to).unwrap_or_else(|e| panic!("{e}"));
        for entry in
            std::fs::read_dir(repo().join("families").join(split)).unwrap_or_else(|e| panic!("{e}"))
        {
            let from = entry.unwrap_or_else(|e| panic!("{e}")).path();
            let name = from.file_name().unwrap_or_default().to_owned();
            let text = std::fs::read_to_string(&from).unwrap_or_else(|e| panic!("{e}"));
            let text = if name == "overdue_escalation.toml" {
                edit(text)
            } else {
                text
            };
            std::fs::write(to.join(name), text).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    std::fs::copy(
        repo().join("families/catalogue.toml"),
        root.join("catalogue.toml"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    root
}

#[test]
fn a_manifest_error_past_column_65535_is_a_small_diagnostic() {
    let dir = scratch();
    let manifest = format!(
        "[study]\nname = \"far\"\ncatalogue = \"configurations.toml\"\n\n\
         [families]\nnames = [{}\"no-such-family\"]\n\n\
         [configurations]\nnames = [\"sim-aurora-flash\"]\n",
        " ".repeat(FAR)
    );
    std::fs::write(dir.path().join("manifests/far.toml"), manifest)
        .unwrap_or_else(|e| panic!("{e}"));
    let out = tbb_in(dir.path())
        .args(["manifest", "check", "manifests/far.toml"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_small_diagnostic(&out, "manifests/far.toml");
    assert!(stderr(&out).contains("no-such-family"), "{}", stderr(&out));
}

#[test]
fn a_catalogue_error_past_column_65535_is_a_small_diagnostic() {
    let dir = scratch();
    let catalogue = dir.path().join("manifests/configurations.toml");
    let mut text = std::fs::read_to_string(&catalogue).unwrap_or_else(|e| panic!("{e}"));
    text.push_str(&format!(
        "\n[[configuration]]\nname = \"far\"\norganization = \"Test\"\nprovider = \"sim\"\n\
         model = \"far-1\"\nprices = {{ input_per_mtok = 0.0, output_per_mtok = 0.0 }}\n\
         retry = {{ {}max_attempts = 0 }}\n",
        " ".repeat(FAR)
    ));
    std::fs::write(&catalogue, text).unwrap_or_else(|e| panic!("{e}"));
    let out = tbb_in(dir.path())
        .args(["configs", "--configs", "manifests/configurations.toml"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_small_diagnostic(&out, "configurations.toml");
}

#[test]
fn a_family_file_error_past_column_65535_is_a_small_diagnostic() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = families_with(dir.path(), |text| {
        format!("{text}\nunknown_key = [{}1, @]\n", " ".repeat(FAR))
    });
    let out = tbb_in(dir.path())
        .env("TBB_FAMILIES", &root)
        .args(["families"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_small_diagnostic(&out, "overdue_escalation.toml");
}

#[test]
fn an_oversized_family_file_or_template_is_refused_with_its_size_and_the_limit() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // Two megabytes of comment: valid TOML, refused before it is parsed.
    let root = families_with(dir.path(), |text| {
        format!("{text}\n# {}\n", "x".repeat(2 << 20))
    });
    let out = tbb_in(dir.path())
        .env("TBB_FAMILIES", &root)
        .args(["families"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(USER_ERROR), "{err}");
    assert!(err.contains("overdue_escalation.toml"), "{err}");
    assert!(
        err.contains(&format!(
            "is {} bytes",
            std::fs::metadata(root.join("core/overdue_escalation.toml"))
                .map(|m| m.len())
                .unwrap_or(0)
        )) && err.contains("limit of 1048576 bytes"),
        "the size and the limit: {err}"
    );

    // A template of 20,000 characters in a file under the limit: refused at its span.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = families_with(dir.path(), |text| {
        text.replacen(
            "template = \"\"\"",
            &format!("template = \"\"\"{} ", "very ".repeat(4_000)),
            1,
        )
    });
    let out = tbb_in(dir.path())
        .env("TBB_FAMILIES", &root)
        .args(["families"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(USER_ERROR), "{err}");
    assert!(
        err.contains("the template is ") && err.contains("bytes; the") && err.contains("16384"),
        "{err}"
    );
    assert!(err.len() < SMALL_REPORT, "{} bytes", err.len());
}

/// A scratch study of the smoke manifest, applied once.
fn applied_smoke() -> tempfile::TempDir {
    let dir = scratch();
    std::fs::copy(
        repo().join("manifests/smoke.toml"),
        dir.path().join("manifests/smoke.toml"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = tbb_in(dir.path())
        .args(["apply", "manifests/smoke.toml"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{}", stderr(&out));
    dir
}

/// Runs `tbb args` in `dir`, killed and failed if it has not ended within a minute: a
/// command blocked on a named pipe would otherwise hang the test run.
fn run_guarded(dir: &Path, args: &[&str]) -> Output {
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("tbb"))
        .current_dir(dir)
        .env("TBB_FAMILIES", repo().join("families"))
        .env("NO_COLOR", "1")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > Duration::from_secs(60) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("`tbb {}` did not end within a minute", args.join(" "));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("{e}"),
        }
    }
    child.wait_with_output().unwrap_or_else(|e| panic!("{e}"))
}

fn cache_files(dir: &Path, table: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("outputs/smoke/cache"))
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{table}-")) && n.ends_with(".parquet"))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_named_pipe_in_the_cache_is_a_damaged_entry_not_a_hang() {
    let dir = applied_smoke();
    let pipe = dir
        .path()
        .join("outputs/smoke/cache/blobs-99999999.parquet");
    // coreutils' mkfifo rather than libc's: the workspace forbids `unsafe`.
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap_or_else(|e| panic!("mkfifo: {e}"));
    assert!(made.success(), "mkfifo {}", pipe.display());
    for command in ["plan", "status"] {
        let out = run_guarded(dir.path(), &[command, "manifests/smoke.toml"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(USER_ERROR), "{command}: {err}");
        assert!(
            err.contains("blobs-99999999.parquet") && err.contains("named pipe"),
            "{command} names the pipe: {err}"
        );
    }
}

#[test]
fn a_damaged_cache_file_never_reads_complete() {
    let dir = applied_smoke();
    let plan = |dir: &Path| run_guarded(dir, &["plan", "manifests/smoke.toml"]);
    let clean = plan(dir.path());
    assert!(
        String::from_utf8_lossy(&clean.stdout).contains("No changes"),
        "{}",
        stderr(&clean)
    );
    let blobs = cache_files(dir.path(), "blobs");
    let blob = blobs.first().unwrap_or_else(|| panic!("no blobs file"));
    let original = std::fs::read(blob).unwrap_or_else(|e| panic!("{e}"));
    let damages: [(&str, Vec<u8>); 2] = [
        ("truncated", original[..original.len() / 2].to_vec()),
        ("bytes flipped", {
            let mut flipped = original.clone();
            for b in &mut flipped[original.len() / 4..original.len() / 4 + 64] {
                *b ^= 0xA5;
            }
            flipped
        }),
    ];
    for (damage, bytes) in damages {
        std::fs::write(blob, &bytes).unwrap_or_else(|e| panic!("{e}"));
        for command in ["plan", "status"] {
            let out = run_guarded(dir.path(), &[command, "manifests/smoke.toml"]);
            let (stdout, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
            assert!(
                !stdout.contains("No changes") && !stdout.contains("Complete"),
                "{damage} {command} reads complete:\n{stdout}\n{err}"
            );
            let named = err.contains(
                &blob
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .to_string(),
            );
            assert!(
                named && err.contains("damaged"),
                "{damage}: {command} names the damaged file: {stdout}\n{err}"
            );
        }
    }
}

/// Text a hostile server puts where tbb prints it: retitle the terminal (OSC), clear
/// it (CSI), ring it (BEL), go back to the start of the line (CR) and print a fake
/// success; then a C1 control and a right-to-left override.
const HOSTILE: &str =
    "\u{1b}]0;pwned\u{7}\u{1b}[2J\rvts=true PASSED\u{9b}31m\u{202e}desrever\u{7f}";

/// What a terminal would act on in `text` (the newline and the tab aside).
fn controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

fn assert_no_controls(out: &Output, what: &str) {
    let (stdout, err) = (String::from_utf8_lossy(&out.stdout), stderr(out));
    assert!(controls(&stdout).is_empty(), "{what} stdout: {stdout:?}");
    assert!(controls(&err).is_empty(), "{what} stderr: {err:?}");
}

/// A loopback OpenAI-compatible server that answers with [`HOSTILE`] as the model's
/// text, or, for the model `on-fire`, fails with it as the error body.
fn hostile_server() -> String {
    use axum::http::StatusCode;
    common::serve_on_loopback(
        axum::Router::new().fallback(|body: axum::body::Bytes| async move {
            let request: serde_json::Value =
                serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
            if request["model"] == "on-fire" {
                return (StatusCode::INTERNAL_SERVER_ERROR, HOSTILE.to_string());
            }
            let reply = serde_json::json!({
                "id": "x", "object": "chat.completion", "model": "hostile",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": HOSTILE}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            });
            (StatusCode::OK, reply.to_string())
        }),
    )
}

#[test]
fn model_text_and_error_bodies_never_reach_the_terminal_raw() {
    let origin = hostile_server();
    let dir = scratch();
    let catalogue = dir.path().join("manifests/configurations.toml");
    let mut text = std::fs::read_to_string(&catalogue).unwrap_or_else(|e| panic!("{e}"));
    for (name, model) in [
        ("loopback-hostile", "hostile"),
        ("loopback-on-fire", "on-fire"),
    ] {
        text.push_str(&format!(
            "\n[[configuration]]\nname = \"{name}\"\norganization = \"Test\"\n\
             provider = \"openai\"\nmodel = \"{model}\"\nbase_url = \"{origin}/v1\"\n\
             prices = {{ input_per_mtok = 0.0, output_per_mtok = 0.0 }}\nconcurrency = 1\n\
             retry = {{ max_attempts = 1, base_delay_ms = 1, max_delay_ms = 2, retry_on = [] }}\n"
        ));
    }
    std::fs::write(&catalogue, text).unwrap_or_else(|e| panic!("{e}"));

    for config in ["loopback-hostile", "loopback-on-fire"] {
        let out = tbb_in(dir.path())
            .args([
                "run-episode",
                "--config",
                config,
                "--family",
                "overdue-escalation-harbor",
                "--v",
                "8",
                "--w",
                "low",
                "--d",
                "raw",
            ])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_no_controls(&out, &format!("run-episode {config}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("\\x1b]0;pwned\\x07"),
            "run-episode {config} shows the escapes: {stdout}\n{}",
            stderr(&out)
        );
    }

    let manifest = common::one_cell_study(
        "hostile",
        "configurations.toml",
        &["loopback-hostile", "loopback-on-fire"],
        "",
    );
    std::fs::write(dir.path().join("manifests/hostile.toml"), manifest)
        .unwrap_or_else(|e| panic!("{e}"));
    let out = tbb_in(dir.path())
        .args(["apply", "manifests/hostile.toml"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_no_controls(&out, "apply");
    for config in ["loopback-hostile", "loopback-on-fire"] {
        let out = tbb_in(dir.path())
            .args(["show", "manifests/hostile.toml", "--config", config])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "{}", stderr(&out));
        assert_no_controls(&out, &format!("show {config}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("\\x1b[2J\\r"), "show {config}: {stdout}");
    }
}
