//! `tbb show` end to end: a tiny simulated study applied in a scratch directory, then
//! episodes of each ending shown by key prefix and by selectors — a success, a
//! truncation at the completion cap, an infeasibility stop — and an infrastructure
//! failure against a loopback server that answers every request with HTTP 500; the
//! errors (unknown, ambiguous and malformed prefixes, selectors matching none or
//! many, a study not applied); the HTML page; and the report's links to the pages of
//! failing episodes. The text of one simulated episode is a snapshot.

use crate::common;

use std::path::Path;
use std::sync::OnceLock;

use arrow_array::{Array, BooleanArray, StringArray};

use common::{line_starting, scratch, tbb_in};

/// A tiny study: two families, four cells, a truncation-heavy configuration, one
/// that stops infeasible at large menus and a near-perfect one, two arms.
const SIM: &str = r#"
repeats = 1

[[arms]]
name = "routed"
menu = "routed"

[[arms]]
name = "fixed"
menu = "fixed"

[study]
name = "showcase"
catalogue = "configurations.toml"

[families]
names = ["overdue-escalation-harbor", "retention-purge-aurora", "vendor-bank-change-juniper"]

[[cells.list]]
v = 8
w = "low"
d = "raw"

[[cells.list]]
v = 128
w = "low"
d = "raw"

[[cells.list]]
v = 8
w = "high"
d = "linked"

[[cells.list]]
v = 128
w = "high"
d = "linked"

[configurations]
names = ["sim-aurora-flash", "sim-basalt-mini", "sim-dunlin-max"]

[budgets]
completion_caps = [1024]
episode_budget = 128000
call_slack = 2

[[analyses]]
kind = "truncation"

[[analyses]]
kind = "report"
"#;

/// One applied simulated study, shared by the tests (applying it is the slow part).
struct Applied {
    dir: tempfile::TempDir,
    rows: Vec<Row>,
}

/// What a test needs of an episode row.
#[derive(Debug, Clone)]
struct Row {
    key: String,
    configuration: String,
    vts: bool,
    first_unmet: Option<String>,
    terminal_flag: Option<String>,
    stop_reason: String,
}

fn applied() -> &'static Applied {
    static APPLIED: OnceLock<Applied> = OnceLock::new();
    APPLIED.get_or_init(|| {
        let dir = scratch();
        std::fs::write(dir.path().join("manifests/showcase.toml"), SIM)
            .unwrap_or_else(|e| panic!("{e}"));
        let out = tbb_in(dir.path())
            .args(["apply", "manifests/showcase.toml"])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rows = rows(&dir.path().join("outputs/showcase/episodes.parquet"));
        Applied { dir, rows }
    })
}

fn rows(path: &Path) -> Vec<Row> {
    let (batches, _) = tbb::tables::read_table(path).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    for b in batches {
        let text = |name: &str| {
            b.column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                .unwrap_or_else(|| panic!("episodes.parquet has a text column {name}"))
                .clone()
        };
        let (key, config, first, flag, stop) = (
            text("transcript_ref"),
            text("configuration"),
            text("first_unmet"),
            text("terminal_flag"),
            text("stop_reason"),
        );
        let vts = b
            .column_by_name("vts")
            .and_then(|c| c.as_any().downcast_ref::<BooleanArray>())
            .unwrap_or_else(|| panic!("episodes.parquet has vts"))
            .clone();
        let opt = |a: &StringArray, i: usize| (!a.is_null(i)).then(|| a.value(i).to_string());
        for i in 0..b.num_rows() {
            out.push(Row {
                key: key.value(i).to_string(),
                configuration: config.value(i).to_string(),
                vts: vts.value(i),
                first_unmet: opt(&first, i),
                terminal_flag: opt(&flag, i),
                stop_reason: stop.value(i).to_string(),
            });
        }
    }
    out
}

fn first_where(pred: impl Fn(&Row) -> bool, what: &str) -> Row {
    applied()
        .rows
        .iter()
        .find(|r| pred(r))
        .cloned()
        .unwrap_or_else(|| panic!("the showcase study has {what}"))
}

fn show(dir: &Path, args: &[&str]) -> String {
    let out = tbb_in(dir)
        .arg("show")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success(),
        "tbb show {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn show_fails(dir: &Path, args: &[&str]) -> String {
    let out = tbb_in(dir)
        .arg("show")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.status.code(),
        Some(2),
        "tbb show {args:?} is a user error: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The line of the verdict that lists obligation `o`.
fn obligation_line<'a>(text: &'a str, o: &str) -> &'a str {
    line_starting(text, &format!("  {o} "))
}

fn line_with<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("a line starts with {start:?}:\n{text}"))
}

const MANIFEST: &str = "manifests/showcase.toml";

#[test]
fn a_successful_episode_shows_every_obligation_met_and_the_headroom_left() {
    let a = applied();
    let row = first_where(|r| r.vts, "a success");
    let text = show(a.dir.path(), &[MANIFEST, &row.key[..10]]);
    assert!(text.contains(&format!("key {}", row.key)), "{text}");
    assert!(text.contains("System prompt: base.txt"), "{text}");
    assert!(text.contains("User request:"), "{text}");
    assert!(text.contains("Request 1: "), "{text}");
    assert!(text.contains("tools visible"), "{text}");
    assert!(text.contains("Tool call "), "{text}");
    assert!(text.contains("issued by the model"), "{text}");
    assert!(text.contains("Verdict: verified task success"), "{text}");
    for o in ["A", "S", "P", "Q", "E", "X", "G", "B", "C"] {
        assert!(obligation_line(&text, o).contains("met "), "{text}");
    }
    assert!(
        text.contains("first unmet: none; terminal flag: none"),
        "{text}"
    );
    assert!(
        text.contains("Limits: none fired (the episode answered)"),
        "{text}"
    );
    // An answered episode stays within its limits: calls and tokens left.
    assert!(line_with(&text, "calls ").contains(" left"), "{text}");
    assert!(line_with(&text, "tokens ").contains(" left"), "{text}");
    assert!(
        text.contains("calls the reference program still needed at the end: 0"),
        "{text}"
    );
}

#[test]
fn a_truncated_episode_names_the_completion_cap_and_its_first_unmet_obligation() {
    let a = applied();
    let row = first_where(
        |r| r.terminal_flag.as_deref() == Some("truncation"),
        "a truncated episode",
    );
    let text = show(a.dir.path(), &[MANIFEST, &row.key]);
    assert!(text.contains("finish length"), "{text}");
    assert!(
        text.contains("Limits: completion cap: a response was cut at 1024 completion tokens"),
        "{text}"
    );
    let first = row.first_unmet.clone().unwrap_or_default();
    assert!(
        text.contains(&format!("first unmet: {first}; terminal flag: truncation")),
        "{text}"
    );
    assert!(
        obligation_line(&text, &first).contains("UNMET (first)"),
        "{text}"
    );
    assert!(obligation_line(&text, "C").contains("unmet"), "{text}");
    // The largest completion is the cap itself: nothing left of it.
    assert!(
        line_with(&text, "largest completion").contains("none left"),
        "{text}"
    );
}

#[test]
fn an_infeasible_episode_names_the_trigger_and_the_calls_left() {
    let a = applied();
    let row = first_where(|r| r.stop_reason == "infeasible", "an infeasibility stop");
    let text = show(a.dir.path(), &[MANIFEST, &row.key]);
    assert!(text.contains("stop reason infeasible"), "{text}");
    assert!(text.contains("Limits: infeasibility stop: "), "{text}");
    assert!(
        text.contains(&format!(
            "terminal flag: {}",
            row.terminal_flag.clone().unwrap_or_default()
        )),
        "{text}"
    );
    let calls = line_with(&text, "calls ");
    assert!(calls.contains("(call limit)"), "{calls}");
    // When the trigger is the calls left, it says how many the program still needed.
    if text.contains("still needs") {
        assert!(text.contains(" are left"), "{text}");
    }
}

#[test]
fn selectors_find_the_same_episode_as_its_key() {
    let a = applied();
    let by_fields = show(
        a.dir.path(),
        &[
            MANIFEST,
            "--config",
            "sim-dunlin-max",
            "--family",
            "overdue-escalation-harbor",
            "--v",
            "8",
            "--w",
            "low",
            "--d",
            "raw",
            "--arm",
            "routed",
            "--repeat",
            "0",
        ],
    );
    let key = line_with(&by_fields, "key ")
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    assert_eq!(key.len(), 64, "{by_fields}");
    assert_eq!(show(a.dir.path(), &[MANIFEST, &key[..8]]), by_fields);
}

#[test]
fn unknown_ambiguous_and_malformed_prefixes_and_bad_selections_are_user_errors() {
    let a = applied();
    let dir = a.dir.path();
    // A prefix no key has: every key is hex, so a run of `f` then `0`s is unlikely;
    // pick one that provably matches nothing.
    let unknown = (0..4096u32)
        .map(|n| format!("{n:06x}"))
        .find(|p| !a.rows.iter().any(|r| r.key.starts_with(p.as_str())))
        .unwrap_or_else(|| panic!("some 6-digit prefix is free"));
    let err = show_fails(dir, &[MANIFEST, &unknown]);
    assert!(err.contains("has a key starting with"), "{err}");
    assert!(err.contains("transcript_ref"), "{err}");

    // One hex digit is shared by many of the study's episodes.
    let digit = &a.rows[0].key[..1];
    let err = show_fails(dir, &[MANIFEST, digit]);
    assert!(err.contains("episodes have a key starting with"), "{err}");
    assert!(err.contains("candidates"), "{err}");
    assert!(
        err.contains("execute[cfg="),
        "the candidates name their selectors: {err}"
    );

    let err = show_fails(dir, &[MANIFEST, "not-hex"]);
    assert!(err.contains("is not a key prefix"), "{err}");

    let err = show_fails(dir, &[MANIFEST, "--config", "sim-dunlin-maxx"]);
    assert!(err.contains("no episode of study"), "{err}");
    assert!(err.contains("did you mean cfg=sim-dunlin-max"), "{err}");

    let err = show_fails(dir, &[MANIFEST, "--config", "sim-dunlin-max"]);
    assert!(err.contains("episodes match cfg=sim-dunlin-max"), "{err}");

    let err = show_fails(dir, &[MANIFEST]);
    assert!(err.contains("name an episode"), "{err}");
}

#[test]
fn an_episode_not_yet_run_says_to_apply_first() {
    let dir = scratch();
    std::fs::write(dir.path().join("manifests/showcase.toml"), SIM)
        .unwrap_or_else(|e| panic!("{e}"));
    let err = show_fails(
        dir.path(),
        &[
            MANIFEST,
            "--config",
            "sim-dunlin-max",
            "--family",
            "overdue-escalation-harbor",
            "--v",
            "8",
            "--w",
            "low",
            "--arm",
            "routed",
        ],
    );
    assert!(err.contains("has not run yet"), "{err}");
    assert!(err.contains("tbb apply manifests/showcase.toml"), "{err}");
}

#[test]
fn the_html_page_is_self_contained_escaped_and_marks_the_first_unmet_obligation() {
    let a = applied();
    // A failure with calls, so the page has observations to collapse.
    let row = first_where(|r| r.stop_reason == "infeasible", "an infeasibility stop");
    let page = a.dir.path().join("page.html");
    let said = show(
        a.dir.path(),
        &[MANIFEST, &row.key[..12], "--html", &page.to_string_lossy()],
    );
    assert!(said.contains("Wrote"), "{said}");
    let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{e}"));
    assert!(html.starts_with("<!DOCTYPE html>"));
    for external in ["<script", "<link", "src=", "http://", "https://"] {
        assert!(!html.contains(external), "no {external} in the page");
    }
    assert!(
        html.contains("<details class=\"observation"),
        "observations collapse"
    );
    let first = row.first_unmet.clone().unwrap_or_default();
    assert!(
        html.contains(&format!(
            "<tr class=\"obligation unmet first-unmet\" id=\"first-unmet\" data-obligation=\"{first}\">"
        )),
        "the first unmet obligation is marked"
    );
    // Observations are JSON: their quotes are escaped, never raw inside a <pre>.
    let pre = html
        .split("<pre>")
        .nth(3)
        .unwrap_or_default()
        .split("</pre>")
        .next()
        .unwrap_or_default();
    assert!(!pre.contains('<') && !pre.contains('"'), "{pre}");

    // Without a path it goes under outputs/<study>/show/.
    let said = show(a.dir.path(), &[MANIFEST, &row.key[..12], "--html"]);
    let default = a
        .dir
        .path()
        .join("outputs/showcase/show")
        .join(format!("{}.html", &row.key[..12]));
    assert!(default.is_file(), "{said}");
}

#[test]
fn the_report_links_failing_episodes_of_each_configuration_to_their_pages() {
    let a = applied();
    let outputs = a.dir.path().join("outputs/showcase");
    let report =
        std::fs::read_to_string(outputs.join("report.html")).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.contains("id=\"failing-episodes\""), "a section");
    let (hrefs, index): (Vec<&str>, Vec<&str>) = report
        .split("class=\"episode-link\" href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .partition(|h| h.starts_with("episodes/"));
    assert!(!hrefs.is_empty());
    // The section also links the index of every episode, which lists every row.
    assert_eq!(index, ["episodes.html"]);
    let listing =
        std::fs::read_to_string(outputs.join("episodes.html")).unwrap_or_else(|e| panic!("{e}"));
    assert!(listing.contains(&format!("data-episodes=\"{}\"", a.rows.len())));
    for config in ["sim-aurora-flash", "sim-basalt-mini", "sim-dunlin-max"] {
        let failing = a
            .rows
            .iter()
            .filter(|r| r.configuration == config && !r.vts)
            .count();
        let linked = hrefs
            .iter()
            .filter(|h| {
                a.rows.iter().any(|r| {
                    r.configuration == config && h.ends_with(&format!("{}.html", &r.key[..12]))
                })
            })
            .count();
        assert_eq!(linked, failing.min(3), "{config}");
    }
    for h in &hrefs {
        let page = std::fs::read_to_string(outputs.join(h)).unwrap_or_else(|e| panic!("{h}: {e}"));
        assert!(
            page.contains("id=\"first-unmet\""),
            "{h} is a failing episode's page"
        );
    }
    let md = std::fs::read_to_string(outputs.join("report.md")).unwrap_or_else(|e| panic!("{e}"));
    assert!(md.contains("](episodes/"), "report.md links too");

    // A plan right after the apply is empty: the pages are the report's, recorded.
    let out = tbb_in(a.dir.path())
        .args(["plan", MANIFEST])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("nothing to run"), "{plan}");
}

#[test]
fn snapshot_of_a_simulated_episode() {
    let a = applied();
    let text = show(
        a.dir.path(),
        &[
            MANIFEST,
            "--config",
            "sim-dunlin-max",
            "--family",
            "overdue-escalation-harbor",
            "--v",
            "8",
            "--w",
            "low",
            "--arm",
            "routed",
        ],
    );
    insta::assert_snapshot!("show_sim_dunlin_max_harbor_v8_routed", text);
}

/// A loopback server that answers every request with HTTP 500.
fn failing_server() -> String {
    common::serve_on_loopback(axum::Router::new().fallback(|| async {
        (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "the model is on fire",
        )
    }))
}

#[test]
fn an_infrastructure_failure_shows_its_cause_status_and_attempts() {
    let origin = failing_server();
    let dir = scratch();
    let catalogue = dir.path().join("manifests/configurations.toml");
    let mut text = std::fs::read_to_string(&catalogue).unwrap_or_else(|e| panic!("{e}"));
    text.push_str(&format!(
        "\n[[configuration]]\nname = \"loopback-on-fire\"\norganization = \"Test\"\n\
         provider = \"openai\"\nmodel = \"on-fire-1\"\nbase_url = \"{origin}/v1\"\n\
         prices = {{ input_per_mtok = 0.0, output_per_mtok = 0.0 }}\nconcurrency = 1\n\
         retry = {{ max_attempts = 2, base_delay_ms = 1, max_delay_ms = 2, retry_on = [\"server_error\"] }}\n"
    ));
    std::fs::write(&catalogue, text).unwrap_or_else(|e| panic!("{e}"));
    let manifest = common::one_cell_study("fire", "configurations.toml", &["loopback-on-fire"], "");
    std::fs::write(dir.path().join("manifests/fire.toml"), manifest)
        .unwrap_or_else(|e| panic!("{e}"));
    let out = tbb_in(dir.path())
        .args(["apply", "manifests/fire.toml"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.status.code(),
        Some(5),
        "an infrastructure failure is a recorded result, and apply exits with its code: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = show(
        dir.path(),
        &["manifests/fire.toml", "--config", "loopback-on-fire"],
    );
    assert!(
        text.contains("Failed after 2 attempts"),
        "the request that failed: {text}"
    );
    assert!(text.contains("stop reason infra_failure"), "{text}");
    assert!(text.contains("terminal flag: infra_failure"), "{text}");
    assert!(
        text.contains(
            "Limits: infrastructure failure: server_error after 2 attempts (last HTTP status 500)"
        ),
        "{text}"
    );
    assert!(
        text.contains("infrastructure: server_error after 2 attempts, last HTTP status 500"),
        "{text}"
    );
    // Nothing was reported, so the whole budget is left.
    assert!(
        line_with(&text, "tokens ").contains("128,000 left"),
        "{text}"
    );
}

/// Every `href` of an HTML page.
fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn all_writes_the_page_of_every_selected_episode_its_verdict_keeps_where_the_index_links() {
    let a = applied();
    let outputs = a.dir.path().join("outputs/showcase");
    let config = "sim-aurora-flash";
    let (failing, passing): (Vec<&Row>, Vec<&Row>) = a
        .rows
        .iter()
        .filter(|r| r.configuration == config)
        .partition(|r| !r.vts);
    assert!(!failing.is_empty() && !passing.is_empty());
    // `--all --html` on the configuration's episodes, kept by one verdict filter.
    let show_all = |filter: &str, value: &str| {
        show(
            a.dir.path(),
            &[
                MANIFEST, "--config", config, "--all", "--html", filter, value,
            ],
        )
    };
    let said = show_all("--verdict", "fail");
    assert!(
        said.contains(&format!("Wrote {} episode pages", failing.len()))
            && said.contains(&format!("{} left out by --verdict/--flag", passing.len())),
        "{said}"
    );
    let page = |r: &Row| outputs.join("show").join(format!("{}.html", &r.key[..12]));
    for r in &failing {
        let html = std::fs::read_to_string(page(r)).unwrap_or_else(|e| panic!("{e}"));
        assert!(html.contains("id=\"first-unmet\""), "a failure's page");
        // Each link resolves inside the study: the report, the index, and the matched
        // episodes among the pages written.
        let links = hrefs(&html);
        assert!(links.iter().any(|h| h == "../episodes.html"), "{links:?}");
        for h in links {
            assert!(
                !h.contains(':') && page(r).parent().is_some_and(|d| d.join(&h).is_file()),
                "{h} resolves"
            );
        }
    }
    for r in &passing {
        assert!(!page(r).exists(), "a passing episode's page is not written");
    }
    // The index links every key; those without a published page to show/, which now
    // holds the failures' pages.
    let index =
        std::fs::read_to_string(outputs.join("episodes.html")).unwrap_or_else(|e| panic!("{e}"));
    for r in &failing {
        let shown = format!("href=\"show/{}.html\"", &r.key[..12]);
        let published = format!("href=\"episodes/{}.html\"", &r.key[..12]);
        assert!(
            index.contains(&shown) || index.contains(&published),
            "{}",
            r.key
        );
    }

    // By terminal flag.
    let truncated = a
        .rows
        .iter()
        .filter(|r| r.configuration == config && r.terminal_flag.as_deref() == Some("truncation"))
        .count();
    assert!(truncated > 1 && truncated < failing.len());
    let said = show_all("--flag", "truncation");
    assert!(
        said.contains(&format!("Wrote {truncated} episode pages")),
        "{said}"
    );

    // A path, a flag that does not exist, or --all without --html are refused.
    let said = show_fails(
        a.dir.path(),
        &[MANIFEST, "--all", "--html", "elsewhere.html"],
    );
    assert!(said.contains("without a path"), "{said}");
    let said = show_fails(
        a.dir.path(),
        &[MANIFEST, "--all", "--html", "--flag", "timeout"],
    );
    assert!(said.contains("truncation"), "{said}");
    let said = show_fails(a.dir.path(), &[MANIFEST, "--all"]);
    assert!(said.contains("--html"), "{said}");
}
