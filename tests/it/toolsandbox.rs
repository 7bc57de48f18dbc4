//! ToolSandbox scenarios through the real binary: `tbb run-scenario` plays one against a
//! loopback OpenAI-compatible server that answers as a correct agent would, the saved
//! world grades 1.0, and `--grade` grades the saved world again without a tool or a
//! request.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow_array::Array;
use serde_json::{json, Value};

use super::common;

/// A chat completion with one tool call.
fn tool_call(name: &str, arguments: &str) -> Value {
    json!({
        "id": "x",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": name, "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}
    })
}

/// A chat completion with text.
fn reply(text: &str) -> Value {
    json!({
        "id": "x",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 350, "completion_tokens": 10, "total_tokens": 360}
    })
}

/// Serves `script` in order (the last again when it runs out), recording each request
/// body; returns the origin, the bodies and the request count.
fn scripted(script: Vec<Value>) -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
    let served = Arc::new(AtomicUsize::new(0));
    let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = bodies.clone();
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        let i = served.fetch_add(1, Ordering::SeqCst);
        if let Ok(v) = serde_json::from_slice::<Value>(&body) {
            seen.lock().unwrap().push(v);
        }
        let answer = script[i.min(script.len() - 1)].clone();
        async move { axum::Json(answer) }
    });
    (common::serve_on_loopback(app), bodies)
}

/// The stdout of a command that must have succeeded (its output in the message if not).
fn succeeded(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `tbb --configs CATALOGUE run-scenario ARGS --json` in `dir`: what it printed, after
/// checking that it succeeded.
fn play(dir: &std::path::Path, catalogue: &std::path::Path, args: &[&str]) -> Value {
    let out = common::tbb_in(dir)
        .arg("--configs")
        .arg(catalogue)
        .arg("run-scenario")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn a_scenario_played_correctly_grades_one_and_its_saved_world_grades_the_same() {
    let (origin, bodies) = scripted(vec![
        tool_call("set_cellular_service_status", r#"{"on": false}"#),
        reply("Cellular service is turned off"),
    ]);
    let dir = common::scratch();
    let catalogue = dir.path().join("configurations.toml");
    std::fs::write(&catalogue, common::loopback_catalogue(&origin, 1)).unwrap();
    let world = dir.path().join("world.json");
    let played = play(
        dir.path(),
        &catalogue,
        &[
            "--scenario",
            "cellular_off",
            "--config",
            "loopback",
            "--world-out",
            world.to_str().unwrap(),
        ],
    );
    assert_eq!(played["similarity"], 1.0, "{played}");
    assert_eq!(played["success"], true);
    assert_eq!(played["stop_reason"], "answer");
    assert_eq!(
        (played["calls"].as_u64(), played["requests"].as_u64()),
        (Some(1), Some(2))
    );

    // What the agent was shown: upstream's system prompt and user message, and the
    // allow list without the user's tool.
    let first = bodies.lock().unwrap()[0].clone();
    assert_eq!(first["messages"][0]["role"], "system");
    assert!(first["messages"][0]["content"]
        .as_str()
        .unwrap()
        .starts_with("Don't make assumptions about what values to plug into functions."));
    assert_eq!(first["messages"][1]["role"], "user");
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["set_cellular_service_status"]);
    assert_eq!(first["parallel_tool_calls"], false);
    // The second request carries the environment's answer to the call.
    let second = bodies.lock().unwrap()[1].clone();
    let tool_message = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert_eq!(tool_message["content"], "None");

    let requests_before = bodies.lock().unwrap().len();
    let regraded = common::tbb_in(dir.path())
        .args([
            "run-scenario",
            "--scenario",
            "cellular_off",
            "--json",
            "--grade",
        ])
        .arg(&world)
        .output()
        .unwrap();
    let stdout = succeeded(&regraded);
    let again: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(again["similarity"], played["similarity"]);
    assert_eq!(again["turns"], played["turns"]);
    assert_eq!(
        bodies.lock().unwrap().len(),
        requests_before,
        "grading sent a request"
    );
}

#[test]
fn a_wrong_call_grades_below_one_and_a_tool_not_offered_changes_nothing() {
    // Turns cellular service on (the milestone wants it off), then calls a tool the
    // scenario does not offer, then answers.
    let (origin, _) = scripted(vec![
        tool_call("set_cellular_service_status", r#"{"on": true}"#),
        tool_call("set_wifi_status", r#"{"on": false}"#),
        reply("Done"),
    ]);
    let dir = common::scratch();
    let catalogue = dir.path().join("configurations.toml");
    std::fs::write(&catalogue, common::loopback_catalogue(&origin, 1)).unwrap();
    let world = dir.path().join("world.json");
    let played = play(
        dir.path(),
        &catalogue,
        &[
            "--scenario",
            "cellular_off",
            "--config",
            "loopback",
            "--world-out",
            world.to_str().unwrap(),
        ],
    );
    assert!(played["similarity"].as_f64().unwrap() < 1.0, "{played}");
    assert_eq!(played["success"], false);
    assert_eq!(played["calls"], 2);
    // The refused call wrote nothing: wifi is still on in the saved world.
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&world).unwrap()).unwrap();
    let settings = saved["tables"]["SETTING"].as_array().unwrap();
    assert!(settings.iter().all(|r| r["wifi"] != false), "{settings:?}");
}

#[test]
fn scenarios_that_need_the_internet_and_unknown_names_are_refused() {
    let dir = common::scratch();
    let out = common::tbb_in(dir.path())
        .args([
            "run-scenario",
            "--scenario",
            "cellular_of",
            "--config",
            "sim-aurora-flash",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("did you mean `cellular_off`?"), "{stderr}");
    let out = common::tbb_in(dir.path())
        .args([
            "run-scenario",
            "--scenario",
            "find_current_city_insufficient_information",
            "--config",
            "sim-aurora-flash",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("needs the internet") || stderr.contains("internet"),
        "{stderr}"
    );
}

/// A study of three offline scenarios (one where declining is right) at 0, 3 and 10
/// distraction tools, played by two simulated configurations.
const STUDY: &str = r#"
[study]
name = "ts"
catalogue = "CATALOGUE"

[toolsandbox]
scenarios = ["cellular_off", "send_message_with_contact_content_cellular_off_multiple_user_turn", "find_days_till_holiday_insufficient_information"]
distraction_tools = [0, 3, 10]

[configurations]
names = ["sim-aurora-flash", "sim-dunlin-max"]

[budgets]
completion_caps = [1024]
"#;

/// `tbb --outputs <dir>/outputs --lockfiles <dir>/lockfiles ARGS` in `dir`.
fn tbb_study(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    common::tbb_in(dir)
        .arg("--outputs")
        .arg(dir.join("outputs"))
        .arg("--lockfiles")
        .arg(dir.join("lockfiles"))
        .args(args)
        .output()
        .unwrap()
}

fn study_manifest(dir: &std::path::Path) -> std::path::PathBuf {
    let catalogue = common::repo().join("manifests/configurations.toml");
    let manifest = dir.join("ts.toml");
    let text = STUDY.replace("CATALOGUE", &catalogue.display().to_string());
    std::fs::write(&manifest, text).unwrap();
    manifest
}

#[test]
fn a_toolsandbox_study_applies_plans_empty_after_and_certifies_from_the_saved_worlds() {
    let dir = common::scratch();
    let manifest = study_manifest(dir.path());
    let manifest = manifest.to_str().unwrap();
    let out = tbb_study(dir.path(), &["apply", manifest]);
    succeeded(&out);

    // One row per scenario, menu and configuration, each graded.
    let table =
        common::cache_files::read(&dir.path().join("outputs/ts/toolsandbox_episodes.parquet"));
    assert_eq!(table.num_rows(), 3 * 3 * 2);
    let bases = common::cache_files::strings(&table, "base_scenario");
    let distinct: std::collections::BTreeSet<&str> =
        (0..table.num_rows()).map(|r| bases.value(r)).collect();
    assert_eq!(distinct.len(), 3);
    // Their requests, one row each, as many as the episodes' rows count.
    let requests =
        common::cache_files::read(&dir.path().join("outputs/ts/toolsandbox_requests.parquet"));
    let counted: u64 = common::cache_files::numbers(&table, "requests")
        .iter()
        .sum();
    assert_eq!(requests.num_rows() as u64, counted);
    // A scripted user sends nothing and costs nothing.
    let user_configuration = table.column_by_name("user_configuration").unwrap();
    assert_eq!(user_configuration.null_count(), table.num_rows());
    // A study of scenarios alone publishes no table of tbb's own families, and no
    // index of their episodes.
    for file in [
        "variants.parquet",
        "episodes.parquet",
        "requests.parquet",
        "episodes.html",
    ] {
        assert!(
            !dir.path().join("outputs/ts").join(file).exists(),
            "{file} was published"
        );
    }

    // `tbb show` reads a played scenario back: its conversation and its grade, graded
    // again from the saved world.
    let refs = common::cache_files::strings(&table, "transcript_ref");
    let similarities = table
        .column_by_name("similarity")
        .and_then(|c| c.as_any().downcast_ref::<arrow_array::Float64Array>())
        .unwrap();
    let shown = tbb_study(dir.path(), &["show", manifest, &refs.value(0)[..12]]);
    let stdout = succeeded(&shown);
    assert!(
        stdout.contains("ToolSandbox scenario cellular_off"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "grade (from the saved world): similarity {}",
            similarities.value(0)
        )),
        "{stdout}"
    );
    // And as a page: the same grade first, a section per request the row counts, a
    // row per milestone.
    let page = dir.path().join("page.html");
    let shown = tbb_study(
        dir.path(),
        &[
            "show",
            manifest,
            &refs.value(0)[..12],
            "--html",
            page.to_str().unwrap(),
        ],
    );
    succeeded(&shown);
    let html = std::fs::read_to_string(&page).unwrap();
    let requests_of_row = common::cache_files::numbers(&table, "requests")[0];
    let milestones = common::cache_files::numbers(&table, "milestones")[0];
    assert!(
        html.contains(&format!(
            "<main class=\"scenario\" data-key=\"{}\" data-requests=\"{requests_of_row}\" data-user-requests=\"0\">",
            refs.value(0)
        )),
        "{html}"
    );
    assert_eq!(
        html.matches("<section class=\"exchange\"").count(),
        requests_of_row as usize
    );
    assert_eq!(
        html.matches("<tr class=\"milestone ").count(),
        milestones as usize
    );
    assert!(
        html.contains(&format!("Similarity {} (", similarities.value(0))),
        "{html}"
    );
    assert!(
        !html.contains("<script") && !html.contains("http"),
        "{html}"
    );

    let plan = tbb_study(dir.path(), &["plan", manifest]);
    let stdout = String::from_utf8_lossy(&plan.stdout);
    assert!(stdout.contains("No changes"), "{stdout}");

    let certify = tbb_study(dir.path(), &["certify", manifest]);
    let stdout = succeeded(&certify);
    assert!(
        stdout.contains("18 episodes checked, 18 passed, 0 failed"),
        "{stdout}"
    );

    // Every published table is rebuilt from the stored rows and transcripts, byte for
    // byte (toolsandbox_episodes, toolsandbox_requests and the analyses').
    let reproduce = tbb_study(dir.path(), &["reproduce", manifest]);
    let stdout = succeeded(&reproduce);
    assert!(stdout.contains(", 0 failed"), "{stdout}");

    // A stored grade that its saved world does not give is caught, on that episode.
    let forged = common::cache_files::rewrite_one_payload(
        &dir.path().join("outputs/ts/cache"),
        "scenario_grade",
        |row| {
            row["similarity"] = json!(0.123);
            true
        },
    );
    let certify = tbb_study(dir.path(), &["certify", manifest]);
    let stdout = String::from_utf8_lossy(&certify.stdout);
    let stderr = String::from_utf8_lossy(&certify.stderr);
    assert!(!certify.status.success(), "{stdout}");
    assert!(
        stdout.contains("18 episodes checked, 17 passed, 1 failed"),
        "{stdout}{stderr}"
    );
    let certificates =
        common::cache_files::read(&dir.path().join("outputs/ts/certificates.parquet"));
    let first = common::cache_files::strings(&certificates, "first_difference");
    let episodes = common::cache_files::strings(&certificates, "episode");
    let failed: Vec<(String, String)> = (0..certificates.num_rows())
        .filter(|&r| !arrow_array::Array::is_null(first, r))
        .map(|r| (episodes.value(r).to_string(), first.value(r).to_string()))
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        failed[0].0,
        forged.replace("scenario_grade[", "scenario["),
        "{failed:?}"
    );
    assert!(
        failed[0].1.starts_with("similarity: graded again"),
        "{failed:?}"
    );
}

#[test]
fn a_toolsandbox_manifest_refuses_unknown_and_online_scenarios_at_their_spans() {
    let dir = common::scratch();
    let manifest = study_manifest(dir.path());
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        r#"scenarios = ["cellular_off", "#,
        r#"scenarios = ["celular_off", "find_temperature", "#,
    );
    std::fs::write(&manifest, text).unwrap();
    let out = tbb_study(dir.path(), &["plan", manifest.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("unknown base scenario `celular_off`"),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean `cellular_off`?"), "{stderr}");
    assert!(
        stderr.contains("needs the internet") || stderr.contains("RapidAPI"),
        "{stderr}"
    );

    // A simulated configuration does not play the user.
    let text = std::fs::read_to_string(common::repo().join("manifests/toolsandbox.toml"))
        .unwrap()
        .replace(
            "catalogue = \"configurations.toml\"",
            &format!(
                "catalogue = \"{}\"",
                common::repo()
                    .join("manifests/configurations.toml")
                    .display()
            ),
        )
        .replace(
            "distraction_tools = [0, 3, 10]",
            "distraction_tools = [0, 3, 10]\nuser = \"sim-dunlin-max\"",
        );
    std::fs::write(&manifest, text).unwrap();
    let out = tbb_study(dir.path(), &["plan", manifest.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("the panel plays agents"), "{stderr}");
}

#[test]
fn a_live_user_is_asked_through_its_own_route_and_its_answer_reaches_the_agent() {
    let (agent, agent_bodies) = scripted(vec![
        reply("Whom should I write to, and what should it say?"),
        reply("Done."),
    ]);
    let (user, user_bodies) = scripted(vec![
        reply("To Fredrik Thordendal: How's the new album coming along."),
        tool_call("end_conversation", "{}"),
    ]);
    let dir = common::scratch();
    let catalogue = dir.path().join("configurations.toml");
    let user_entry = common::loopback_catalogue(&user, 1).replace("\"loopback\"", "\"user\"");
    std::fs::write(
        &catalogue,
        common::loopback_catalogue(&agent, 1) + "\n" + &user_entry,
    )
    .unwrap();
    let played = play(
        dir.path(),
        &catalogue,
        &[
            "--scenario",
            "send_message_with_contact_content_cellular_off_multiple_user_turn",
            "--config",
            "loopback",
            "--user",
            "user",
        ],
    );
    assert_eq!(played["stop_reason"], "answer", "{played}");
    assert_eq!(played["user_turns"], 1, "{played}");

    // The user was asked twice, after each of the agent's messages, as upstream's user
    // simulator is: its prompts as system messages, the agent as the other party, and
    // `end_conversation` offered.
    let asked = user_bodies.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    let messages = asked[0]["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(
        last["content"],
        "Whom should I write to, and what should it say?"
    );
    let tools: Vec<&str> = asked[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["end_conversation"]);
    // The agent heard the user's answer.
    let second = agent_bodies.lock().unwrap()[1].clone();
    let heard = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(heard["role"], "user");
    assert_eq!(
        heard["content"],
        "To Fredrik Thordendal: How's the new album coming along."
    );
}

#[test]
fn a_simulated_configuration_cannot_play_the_user() {
    let dir = common::scratch();
    let out = common::tbb_in(dir.path())
        .args([
            "run-scenario",
            "--scenario",
            "cellular_off",
            "--config",
            "sim-aurora-flash",
            "--user",
            "sim-dunlin-max",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("the panel plays agents"), "{stderr}");
}

#[test]
fn a_study_with_a_live_user_asks_it_through_its_route_and_certifies_from_the_saved_worlds() {
    let (user, user_bodies) = scripted(vec![tool_call("end_conversation", "{}")]);
    let dir = common::scratch();
    // The shipped catalogue (the simulated agents) and a live user beside them.
    let catalogue = dir.path().join("with-user.toml");
    let shipped =
        std::fs::read_to_string(common::repo().join("manifests/configurations.toml")).unwrap();
    let user_entry = common::loopback_catalogue(&user, 1).replace("\"loopback\"", "\"user\"");
    std::fs::write(&catalogue, shipped + "\n" + &user_entry).unwrap();
    let manifest = dir.path().join("ts.toml");
    let text = STUDY
        .replace("CATALOGUE", &catalogue.display().to_string())
        .replace(
            "distraction_tools = [0, 3, 10]",
            "distraction_tools = [0]\nuser = \"user\"",
        )
        .replace(
            "names = [\"sim-aurora-flash\", \"sim-dunlin-max\"]",
            "names = [\"sim-aurora-flash\"]",
        );
    std::fs::write(&manifest, text).unwrap();
    let manifest = manifest.to_str().unwrap();
    // The plan counts the user's requests, which cost money, beside the panel's.
    let plan = tbb_study(dir.path(), &["plan", manifest]);
    let stdout = String::from_utf8_lossy(&plan.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.contains("≈3 requests to live routes") || last.contains("≈3 provider requests"),
        "{stdout}"
    );
    let out = tbb_study(dir.path(), &["apply", manifest]);
    succeeded(&out);
    // Each of the three scenarios asked the user once: it ended the conversation.
    assert_eq!(user_bodies.lock().unwrap().len(), 3);
    let table =
        common::cache_files::read(&dir.path().join("outputs/ts/toolsandbox_episodes.parquet"));
    assert_eq!(table.num_rows(), 3);
    let certify = tbb_study(dir.path(), &["certify", manifest]);
    let stdout = String::from_utf8_lossy(&certify.stdout);
    assert!(
        stdout.contains("3 episodes checked, 3 passed, 0 failed"),
        "{stdout}{}",
        String::from_utf8_lossy(&certify.stderr)
    );
    // Certifying asked no one.
    assert_eq!(user_bodies.lock().unwrap().len(), 3);
    // The user's requests are rows of the requests table beside the agent's.
    let requests =
        common::cache_files::read(&dir.path().join("outputs/ts/toolsandbox_requests.parquet"));
    let roles = common::cache_files::strings(&requests, "role");
    let users = (0..requests.num_rows())
        .filter(|&r| roles.value(r) == "user")
        .count();
    assert_eq!(users, 3);
    // And the episode rows count the user's traffic and what it cost, apart from the
    // agent's: the tokens its request rows report, at its catalogue prices ($1 and $2
    // a million).
    let user_rows: Vec<usize> = (0..requests.num_rows())
        .filter(|&r| roles.value(r) == "user")
        .collect();
    let sum = |column: &str| -> u64 {
        let values = common::cache_files::numbers(&requests, column);
        user_rows.iter().map(|&r| values[r]).sum()
    };
    let (prompt, completion) = (sum("prompt_tokens"), sum("completion_tokens"));
    assert!(prompt > 0 && completion > 0, "{prompt} {completion}");
    let users = common::cache_files::strings(&table, "user_configuration");
    assert!((0..table.num_rows()).all(|r| users.value(r) == "user"));
    assert_eq!(
        common::cache_files::numbers(&table, "user_requests"),
        vec![1, 1, 1]
    );
    assert_eq!(
        common::cache_files::numbers(&table, "user_prompt_tokens")
            .iter()
            .sum::<u64>(),
        prompt
    );
    assert_eq!(
        common::cache_files::numbers(&table, "user_completion_tokens")
            .iter()
            .sum::<u64>(),
        completion
    );
    let costs = table
        .column_by_name("user_cost_usd")
        .and_then(|c| c.as_any().downcast_ref::<arrow_array::Float64Array>())
        .unwrap();
    let total: f64 = costs.values().iter().sum();
    let expected = (prompt as f64 * 1.0 + completion as f64 * 2.0) / 1e6;
    assert!((total - expected).abs() < 1e-12, "{total} {expected}");
    // `tbb show` prints the user's exchange after the agent's, and the page has it.
    let refs = common::cache_files::strings(&table, "transcript_ref");
    let shown = tbb_study(dir.path(), &["show", manifest, &refs.value(0)[..12]]);
    let stdout = String::from_utf8_lossy(&shown.stdout);
    assert!(
        stdout.contains("a live user was asked 1 times\n\nuser request 1\n"),
        "{stdout}"
    );
    assert!(stdout.contains("call end_conversation({})"), "{stdout}");
    let page = dir.path().join("page.html");
    let page_arg = page.to_str().unwrap();
    let shown = tbb_study(
        dir.path(),
        &["show", manifest, &refs.value(0)[..12], "--html", page_arg],
    );
    succeeded(&shown);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("data-user-requests=\"1\""), "{html}");
    assert!(html.contains("<h2 id=\"user-requests\">"), "{html}");
}
