//! A model in one flag (issue 29 §1), against the loopback OpenAI-compatible server of
//! [`crate::infra`]: `--model openai/<name>` with `OPENAI_BASE_URL` runs, publishes and
//! certifies, its key reaches the server and nothing else, the lockfile records the
//! flag, and a `--locked` run without it says so; a model whose key is not set is named
//! by the plan and refused by apply.

use std::path::Path;
use std::sync::atomic::Ordering;

use crate::common::{line_starting, one_cell_study, scratch, tbb_in};
use crate::infra::{flat, run, server, MODEL};

/// A key no file or output may hold.
const KEY: &str = "sk-model-flag-test-3f9c1e7a55d2";

/// The study `model`: one cell, two repeats, over a simulated configuration that
/// `--model` replaces.
fn study(dir: &Path) {
    std::fs::write(
        dir.join("manifests/model.toml"),
        format!(
            "repeats = 2\n{}",
            one_cell_study("model", "configurations.toml", &["sim-aurora-flash"], "")
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .unwrap_or_default()
                .windows(needle.len())
                .any(|w| w == needle)
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[test]
fn a_model_flag_runs_on_a_loopback_server_publishes_and_certifies() {
    let dir = scratch();
    study(dir.path());
    let server = server(None, false);
    let flag = format!("openai/{MODEL}");
    let name = format!("openai-{MODEL}");
    let tbb = |args: &[&str]| {
        let mut cmd = tbb_in(dir.path());
        cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.origin))
            .env("OPENAI_API_KEY", KEY)
            .args(args);
        run(&mut cmd)
    };
    let mut said = String::new();
    let (code, plan) = tbb(&["plan", "manifests/model.toml", "--model", &flag]);
    said.push_str(&plan);
    assert_eq!(code, Some(0), "{plan}");
    assert!(
        plan.contains(&format!("key: configuration `{name}`"))
            && plan.contains("OPENAI_API_KEY is set"),
        "{plan}"
    );
    assert!(
        !plan.contains("sim-aurora-flash"),
        "--model replaces the manifest's: {plan}"
    );
    // The catalogue lists neither prices nor a context window for it: the plan says
    // both are unknown rather than "≈$0.00 at the listed prices".
    assert!(
        plan.contains("provider requests of unknown cost (no listed prices).")
            && !plan.contains("≈$"),
        "{plan}"
    );
    assert!(
        plan.contains(&format!(
            "  ! {name} (--model {flag}, {}/v1) has no listed prices",
            server.origin
        )) && plan.contains(&format!(
            "  ! {name} has no context_window: its prompts are not checked"
        )) && plan.contains(&format!("add an entry named `{name}` on the same route")),
        "{plan}"
    );
    let (code, text) = tbb(&["apply", "manifests/model.toml", "--model", &flag]);
    said.push_str(&text);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Outputs:  outputs/model/"), "{text}");
    // The loopback model answers without the evidence: both episodes failed their task,
    // which no line may pass off as "0 failed".
    assert!(
        text.contains("episodes: 2 run: 0 verified successes, 2 task failures (")
            && text.contains("Episodes: 2 run: 0 verified successes, 2 task failures (")
            && text.contains("), 0 infrastructure failures.")
            && text.contains("nodes run, 0 cached, no node errors;")
            && !text.contains("0 failed"),
        "{text}"
    );
    assert!(dir.path().join("outputs/model/episodes.parquet").exists());
    // Two episodes, a tool call and an answer each, with the key on the wire.
    assert_eq!(server.chats.load(Ordering::SeqCst), 4, "{text}");
    let sent = server
        .authorization
        .lock()
        .map(|a| a.clone())
        .unwrap_or_default();
    assert_eq!(sent, Some(format!("Bearer {KEY}")));
    let lockfile =
        std::fs::read_to_string(dir.path().join("lockfiles/model.lock")).unwrap_or_default();
    assert!(
        lockfile.contains(&format!("added_by = \"--model {flag}\"")),
        "{lockfile}"
    );
    // The same flags agree everywhere.
    for command in ["apply", "certify", "reproduce"] {
        let mut args = vec![command, "manifests/model.toml", "--model", &flag];
        if command == "apply" {
            args.push("--locked");
        }
        let (code, text) = tbb(&args);
        said.push_str(&text);
        assert_eq!(code, Some(0), "{command}: {text}");
        if command == "apply" {
            assert!(
                text.contains("Episodes: 2 cached: 0 verified successes, 2 task failures ("),
                "{text}"
            );
        }
    }
    assert_eq!(server.chats.load(Ordering::SeqCst), 4, "nothing reran");
    // A locked run without the flag names what the lockfile has and how to fix it.
    let (code, text) = tbb(&["apply", "manifests/model.toml", "--locked"]);
    said.push_str(&text);
    assert_eq!(code, Some(2), "{text}");
    // miette wraps at the terminal's width, hyphens included: compared without spaces.
    let squeezed = |t: &str| flat(t).replace(' ', "");
    assert!(
        squeezed(&text).contains(&squeezed(&format!("names the configuration `{name}`")))
            && squeezed(&text).contains(&squeezed(&format!("pass `--model {flag}` again"))),
        "{text}"
    );
    // The key reached the server and nothing else: no output, lockfile, cache file,
    // transcript or log line holds it.
    assert!(!said.contains(KEY), "{said}");
    let leaked = files_holding(dir.path(), KEY.as_bytes());
    assert!(leaked.is_empty(), "the key is in {leaked:?}");
}

#[test]
fn a_model_without_its_key_is_named_by_the_plan_and_refused_by_apply() {
    let dir = scratch();
    study(dir.path());
    let tbb = |args: &[&str]| {
        let mut cmd = tbb_in(dir.path());
        cmd.env_remove("ANTHROPIC_API_KEY").args(args);
        run(&mut cmd)
    };
    let flag = "anthropic/claude-test-model";
    let (code, plan) = tbb(&["plan", "manifests/model.toml", "--model", flag]);
    assert_eq!(code, Some(0), "{plan}");
    assert!(
        plan.contains("key: configuration `anthropic-claude-test-model` (anthropic): ANTHROPIC_API_KEY is not set"),
        "{plan}"
    );
    // Apply refuses before anything is sent or written.
    let (code, text) = tbb(&["apply", "manifests/model.toml", "--model", flag]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("ANTHROPIC_API_KEY"), "{text}");
    assert!(!dir.path().join("outputs").exists());
    assert!(!dir.path().join("lockfiles/model.lock").exists());
}

#[test]
fn a_misspelt_model_flag_is_refused_with_the_providers_tbb_speaks() {
    let dir = scratch();
    study(dir.path());
    let (code, text) = run(tbb_in(dir.path()).args([
        "plan",
        "manifests/model.toml",
        "--model",
        "opnai/gpt-4.1-mini",
    ]));
    assert_eq!(code, Some(2), "{text}");
    assert!(flat(&text).contains("did you mean `openai`?"), "{text}");
}

#[test]
fn a_model_the_catalogue_has_runs_as_the_catalogue_has_it() {
    let dir = scratch();
    study(dir.path());
    // The shipped catalogue's `openai-gpt-4.1-mini` (disabled there) pins a dated model
    // and lists prices: the flag selects it as it is.
    let (code, plan) = plan_offline(dir.path(), &["openai/gpt-4.1-mini"]);
    assert_eq!(code, Some(0), "{plan}");
    assert!(
        plan.contains("key: configuration `openai-gpt-4.1-mini` (https://api.openai.com/v1): OPENAI_API_KEY is not set"),
        "{plan}"
    );
    assert!(!plan.contains("≈$0.00"), "the catalogue's prices: {plan}");
    assert!(
        !plan.contains("no listed prices") && !plan.contains("no context_window"),
        "{plan}"
    );
    // On another route it is another configuration, and the name is taken.
    let (code, text) = run(tbb_in(dir.path())
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .args([
            "plan",
            "manifests/model.toml",
            "--model",
            "openai/gpt-4.1-mini",
        ]));
    assert_eq!(code, Some(2), "{text}");
    assert!(
        flat(&text).contains("has already on another route"),
        "{text}"
    );
}

/// Issue 29: a `--model` configuration's requests read "≈$0.00 at the listed prices"
/// where it lists none, and nothing said its prompts go unchecked against a context
/// window. Beside a configuration the catalogue prices, the total says which part is
/// priced and which is not.
#[test]
fn a_plan_mixing_priced_and_unpriced_models_says_which_cost_is_unknown() {
    let dir = scratch();
    study(dir.path());
    let (code, plan) = plan_offline(
        dir.path(),
        &["openai/gpt-4.1-mini", "openai/unlisted-model"],
    );
    assert_eq!(code, Some(0), "{plan}");
    let summary = line_starting(&plan, "Plan: ");
    // Two episodes each, as many requests each: half of them priced.
    let requests = summary
        .split_once("; ≈")
        .and_then(|(_, t)| t.split_once(' '))
        .and_then(|(n, _)| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        summary.contains(&format!(
            "at the listed prices for ≈{} of them and an unknown cost for the ≈{} with no \
             listed prices.",
            requests / 2,
            requests / 2
        )),
        "{summary}"
    );
    // One note per configuration the catalogue does not list, and none for the one it
    // does.
    assert_eq!(plan.matches("has no listed prices").count(), 1, "{plan}");
    assert_eq!(plan.matches("has no context_window").count(), 1, "{plan}");
    assert!(
        plan.contains(
            "  ! openai-unlisted-model (--model openai/unlisted-model, openai) has no listed \
             prices: what its requests cost is unknown, not $0"
        ) && plan.contains(
            "  ! openai-unlisted-model has no context_window: its prompts are not checked \
             against the served model's context"
        ) && plan.contains(
            "to manifests/configurations.toml: --model openai/unlisted-model then runs that \
             entry"
        ),
        "{plan}"
    );
}

/// `tbb plan manifests/model.toml` with a `--model` flag per entry of `models`, where no
/// OpenAI route or key is set: the plan names what is missing instead of reaching out.
fn plan_offline(dir: &Path, models: &[&str]) -> (Option<i32>, String) {
    let mut cmd = tbb_in(dir);
    cmd.env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .args(["plan", "manifests/model.toml"]);
    for model in models {
        cmd.args(["--model", model]);
    }
    run(&mut cmd)
}
