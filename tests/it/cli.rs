//! End-to-end tests of the `tbb` binary: families listing, compilation, reference
//! traces, the grader's failure records under trace mutations, bad input, malformed
//! family files, and snapshots of the human-facing output.
//!
//! Everything runs against the repository's `families/` (or a temporary copy of it);
//! nothing touches the network beyond loopback servers on 127.0.0.1 that the tests
//! start themselves.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use assert_cmd::Command;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------
// Fixture
// ---------------------------------------------------------------------------------

/// The 12 capacity cells, in the order the study lists them.
const CAPACITY_CELLS: [(u16, &str, &str); 12] = [
    (8, "low", "raw"),
    (8, "low", "linked"),
    (8, "high", "raw"),
    (8, "high", "linked"),
    (128, "low", "raw"),
    (128, "low", "linked"),
    (128, "high", "raw"),
    (128, "high", "linked"),
    (32, "low", "raw"),
    (8, "medium", "raw"),
    (8, "low", "compact"),
    (8, "low", "typed"),
];

/// The family used for snapshots and the accounting side of the request snapshots.
const HARBOR: &str = "overdue-escalation-harbor";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn families_dir() -> PathBuf {
    root().join("families")
}

/// `tbb` run from the repository root against the repository's families.
fn tbb() -> Command {
    let mut cmd = Command::cargo_bin("tbb").expect("the tbb binary is built");
    cmd.current_dir(root())
        .env("TBB_FAMILIES", families_dir())
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100");
    cmd
}

/// Runs `tbb ARGS`, asserts success and returns stdout.
fn stdout_of(args: &[&str]) -> String {
    let out = tbb().args(args).output().expect("tbb runs");
    assert!(
        out.status.success(),
        "`tbb {}` failed ({}):\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// Runs `tbb ARGS`, asserts success and parses stdout as JSON.
fn json_of(args: &[&str]) -> Value {
    let text = stdout_of(args);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("`tbb {}` printed invalid JSON: {e}\n{text}", args.join(" ")))
}

/// Runs the command, asserts a non-zero exit without a panic and returns stderr.
fn failure_of(cmd: &mut Command) -> String {
    let out = cmd.output().expect("tbb runs");
    let stderr = String::from_utf8(out.stderr).expect("stderr is UTF-8");
    assert!(
        !out.status.success(),
        "expected a failure, got success; stdout:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!stderr.contains("panicked"), "tbb panicked:\n{stderr}");
    stderr
}

/// `tbb families --json`, run once per test binary.
fn families() -> &'static [Value] {
    static FAMILIES: OnceLock<Vec<Value>> = OnceLock::new();
    FAMILIES.get_or_init(|| match json_of(&["families", "--json"]) {
        Value::Array(rows) => rows,
        other => panic!("`tbb families --json` is not an array: {other}"),
    })
}

fn str_field<'a>(row: &'a Value, key: &str) -> &'a str {
    row[key]
        .as_str()
        .unwrap_or_else(|| panic!("`{key}` is not a string in {row}"))
}

/// The cell flags for `compile` and `reference-trace`.
fn cell_args(v: u16, w: &str, d: &str) -> Vec<String> {
    vec![
        "--v".into(),
        v.to_string(),
        "--w".into(),
        w.into(),
        "--d".into(),
        d.into(),
    ]
}

/// Writes the reference trace of FAMILY at the cell via `tbb reference-trace -o` and
/// returns it parsed.
fn reference_trace(family: &str, cell: &[String]) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trace.json");
    let mut args: Vec<&str> = vec!["reference-trace", family];
    args.extend(cell.iter().map(String::as_str));
    args.extend(["-o", path.to_str().expect("UTF-8 temp path")]);
    let printed = stdout_of(&args);
    assert!(
        printed.is_empty(),
        "with -o nothing goes to stdout, got:\n{printed}"
    );
    let text = std::fs::read_to_string(&path).expect("reference-trace wrote the file");
    serde_json::from_str(&text).expect("the reference trace is JSON")
}

/// Grades a trace file with `tbb grade --json`.
fn grade_file(path: &Path) -> Value {
    json_of(&["grade", path.to_str().expect("UTF-8 temp path"), "--json"])
}

/// Writes a trace to a temporary file and grades it.
fn grade(trace: &Value) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trace.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(trace).expect("serialise"),
    )
    .expect("write trace");
    grade_file(&path)
}

const OBLIGATION_KEYS: [&str; 9] = [
    "ok_a", "ok_s", "ok_p", "ok_q", "ok_e", "ok_x", "ok_g", "ok_b", "ok_c",
];

fn assert_vts(verdict: &Value, what: &str) {
    assert_eq!(verdict["vts"], json!(true), "{what}: {verdict:#}");
    assert_eq!(verdict["first_unmet"], Value::Null, "{what}: {verdict:#}");
    assert_eq!(verdict["terminal_flag"], Value::Null, "{what}: {verdict:#}");
    for k in OBLIGATION_KEYS {
        assert_eq!(
            verdict[k],
            json!(true),
            "{what}: `{k}` is not true: {verdict:#}"
        );
    }
    assert_eq!(
        verdict["integrity_errors"],
        json!([]),
        "{what}: {verdict:#}"
    );
}

/// Asserts the failure record (first unmet obligation, terminal flag).
fn assert_record(verdict: &Value, first_unmet: &str, terminal_flag: &str) {
    assert_eq!(verdict["vts"], json!(false), "{verdict:#}");
    assert_eq!(
        (
            verdict["first_unmet"].as_str(),
            verdict["terminal_flag"].as_str()
        ),
        (Some(first_unmet), Some(terminal_flag)),
        "failure record: {verdict:#}"
    );
    let key = format!("ok_{}", first_unmet.to_lowercase());
    assert_eq!(verdict[&key], json!(false), "{verdict:#}");
}

// ---------------------------------------------------------------------------------
// The mutation fixture: a family with a permitted state change at (8, high, raw).
// ---------------------------------------------------------------------------------

struct Fixture {
    family: String,
    /// The permitted write tool's full name.
    write_tool: String,
    trace: Value,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let row = families()
            .iter()
            .find(|r| r["state_change"].is_string())
            .expect("some family has a permitted state change");
        let family = str_field(row, "family").to_string();
        let write_tool = str_field(row, "state_change").to_string();
        let trace = reference_trace(&family, &cell_args(8, "high", "raw"));
        Fixture {
            family,
            write_tool,
            trace,
        }
    })
}

impl Fixture {
    fn turns(trace: &mut Value) -> &mut Vec<Value> {
        trace["turns"].as_array_mut().expect("turns is an array")
    }

    /// The index of the first turn whose executed call's tool satisfies `pred`.
    fn turn_calling(&self, pred: impl Fn(&str) -> bool) -> usize {
        self.trace["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .position(|t| {
                t["executed"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(|c| c["tool"].as_str().is_some_and(&pred)))
            })
            .expect("a turn calls such a tool")
    }

    fn first_search_turn(&self) -> usize {
        self.turn_calling(|t| t.ends_with("_search"))
    }

    fn first_read_turn(&self) -> usize {
        self.turn_calling(|t| t.contains("_read_"))
    }

    fn write_turn(&self) -> usize {
        self.turn_calling(|t| t == self.write_tool)
    }

    /// The answer the reference trace gives, parsed.
    fn answer(&self) -> serde_json::Map<String, Value> {
        let text = self.trace["final_answer"].as_str().expect("a final answer");
        match serde_json::from_str(text).expect("the reference answer is JSON") {
            Value::Object(m) => m,
            other => panic!("the reference answer is not an object: {other}"),
        }
    }

    /// Replaces the final answer in both `final_answer` and the last response's text.
    fn set_answer(trace: &mut Value, text: &str) {
        trace["final_answer"] = json!(text);
        let last = Fixture::turns(trace).last_mut().expect("a last turn");
        last["response"]["text"] = json!(text);
    }
}

// ---------------------------------------------------------------------------------
// 1. tbb families
// ---------------------------------------------------------------------------------

#[test]
fn families_json_lists_64_families_with_the_papers_split_and_intent_structure() {
    let rows = families();
    assert_eq!(rows.len(), 64);
    let mut splits: BTreeMap<&str, usize> = BTreeMap::new();
    let mut core_intents: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    let mut names = BTreeSet::new();
    for row in rows {
        let name = str_field(row, "family");
        assert!(names.insert(name), "family `{name}` is listed twice");
        let intent = str_field(row, "intent");
        let domain = str_field(row, "domain");
        let split = str_field(row, "split");
        assert!(
            ["core", "holdout", "frontier"].contains(&split),
            "{name}: split `{split}`"
        );
        assert!(
            ["accounting", "email", "file", "calendar"].contains(&domain),
            "{name}: domain `{domain}`"
        );
        let tools = row["operational_tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: operational_tools"));
        assert!(!tools.is_empty(), "{name}: no operational tools");
        assert!(
            tools.iter().all(Value::is_string),
            "{name}: operational tools are not all strings"
        );
        *splits.entry(split).or_default() += 1;
        if split == "core" {
            let entry = core_intents.entry(intent).or_insert((0, domain));
            entry.0 += 1;
            assert_eq!(entry.1, domain, "core intent `{intent}` spans two domains");
        }
    }
    assert_eq!(
        splits,
        BTreeMap::from([("core", 36), ("frontier", 4), ("holdout", 24)])
    );
    assert_eq!(core_intents.len(), 12, "core intents: {core_intents:?}");
    for (intent, (n, _)) in &core_intents {
        assert_eq!(*n, 3, "core intent `{intent}` has {n} families");
    }
    for domain in ["accounting", "email", "file", "calendar"] {
        let n = core_intents.values().filter(|(_, d)| *d == domain).count();
        assert!(n >= 2, "domain `{domain}` has {n} core intents");
    }
}

#[test]
fn families_text_ends_with_a_summary_line_counting_64_families() {
    let text = stdout_of(&["families"]);
    let last = text.lines().last().expect("some output");
    assert!(last.contains("64 families"), "last line: {last}");
    // One line per family between the header and the summary.
    assert_eq!(text.lines().count(), 64 + 2, "{text}");
}

// ---------------------------------------------------------------------------------
// 2. tbb compile
// ---------------------------------------------------------------------------------

fn compile_json(family: &str, v: u16, w: &str, d: &str) -> Value {
    let mut args = vec!["compile", family];
    let cell = cell_args(v, w, d);
    args.extend(cell.iter().map(String::as_str));
    args.push("--json");
    json_of(&args)
}

fn menu_set(variant: &Value) -> BTreeSet<String> {
    let menu = variant["menu"].as_array().expect("menu is an array");
    let set: BTreeSet<String> = menu
        .iter()
        .map(|t| t.as_str().expect("tool names are strings").to_string())
        .collect();
    assert_eq!(set.len(), menu.len(), "the menu repeats a tool: {menu:?}");
    set
}

#[test]
fn compile_json_has_the_variant_fields_and_limits_follow_the_certified_minimum() {
    let v = compile_json(HARBOR, 128, "high", "linked");
    assert!(str_field(&v, "variant_id").starts_with("v-"), "{v:#}");
    assert_eq!(menu_set(&v).len(), 128);
    let min = v["certified_min_calls"]
        .as_u64()
        .expect("certified_min_calls");
    assert!(min > 0);
    assert_eq!(v["call_limit"].as_u64(), Some(min + 2));
    assert_eq!(v["turn_limit"].as_u64(), Some(min + 4));
    let answer = v["answer"].as_object().expect("answer is an object");
    assert!(answer["decision"].is_string(), "{answer:?}");
    assert!(
        answer["sources"]
            .as_array()
            .is_some_and(|s| !s.is_empty() && s.iter().all(Value::is_string)),
        "{answer:?}"
    );
    let steps = v["reference_program"]["steps"]
        .as_array()
        .expect("reference_program.steps");
    assert_eq!(
        steps.len() as u64,
        min,
        "the reference program has the certified minimum of calls"
    );
    assert!(!str_field(&v, "user_request").is_empty());
}

#[test]
fn menus_nest_across_menu_sizes_and_always_hold_the_operational_tools() {
    let menus: Vec<(u16, BTreeSet<String>, Value)> = [8u16, 32, 128]
        .into_iter()
        .map(|size| {
            let v = compile_json(HARBOR, size, "high", "linked");
            (size, menu_set(&v), v)
        })
        .collect();
    for (size, menu, v) in &menus {
        assert_eq!(menu.len(), usize::from(*size));
        for t in v["operational_tools"]
            .as_array()
            .expect("operational_tools")
        {
            let t = t.as_str().expect("tool name");
            assert!(
                menu.contains(t),
                "V = {size}: operational tool `{t}` is missing"
            );
        }
    }
    assert!(
        menus[0].1.is_subset(&menus[1].1),
        "the V = 8 menu is not inside the V = 32 menu"
    );
    assert!(
        menus[1].1.is_subset(&menus[2].1),
        "the V = 32 menu is not inside the V = 128 menu"
    );
}

#[test]
fn compile_and_reference_trace_are_byte_for_byte_deterministic() {
    let args = [
        "compile", HARBOR, "--v", "128", "--w", "high", "--d", "linked", "--json",
    ];
    assert_eq!(stdout_of(&args), stdout_of(&args));
    let args = [
        "reference-trace",
        HARBOR,
        "--v",
        "32",
        "--w",
        "low",
        "--d",
        "raw",
    ];
    assert_eq!(stdout_of(&args), stdout_of(&args));
}

// ---------------------------------------------------------------------------------
// 3. Every family's reference trace grades VTS through the binary
// ---------------------------------------------------------------------------------

#[test]
fn every_familys_reference_trace_grades_vts_through_the_cli() {
    // One capacity cell per family, rotating through the 12; frontier families also at
    // depth 30 (the study's frontier cell: V = 8, w = high, raw).
    let mut jobs: Vec<(String, Vec<String>)> = Vec::new();
    for (i, row) in families().iter().enumerate() {
        let name = str_field(row, "family").to_string();
        let (v, w, d) = CAPACITY_CELLS[i % CAPACITY_CELLS.len()];
        jobs.push((name.clone(), cell_args(v, w, d)));
        if str_field(row, "split") == "frontier" {
            let mut cell = cell_args(8, "high", "raw");
            cell.extend(["--depth".to_string(), "30".to_string()]);
            jobs.push((name, cell));
        }
    }
    assert_eq!(jobs.len(), 64 + 4);
    // Two workers: the round trip is ~140 process spawns.
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(jobs.len().div_ceil(2))
            .map(|chunk| {
                s.spawn(move || {
                    let mut failures = Vec::new();
                    for (family, cell) in chunk {
                        let trace = reference_trace(family, cell);
                        let verdict = grade(&trace);
                        let ok = verdict["vts"] == json!(true)
                            && verdict["first_unmet"].is_null()
                            && verdict["terminal_flag"].is_null()
                            && OBLIGATION_KEYS.iter().all(|k| verdict[k] == json!(true));
                        if !ok {
                            failures.push(format!("{family} {}: {verdict}", cell.join(" ")));
                        }
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "reference traces that do not grade VTS:\n{}",
        failures.join("\n")
    );
}

#[test]
fn compile_all_compiles_and_grades_every_study_cell() {
    let cells_of = |split: &str| match split {
        "core" => 12,
        "holdout" => 12 + 4,
        "frontier" => 4,
        other => panic!("unknown split `{other}`"),
    };
    let expected: usize = families()
        .iter()
        .map(|r| cells_of(str_field(r, "split")))
        .sum();
    assert_eq!(expected, 832, "36 × 12 + 24 × 16 + 4 × 4");
    let text = stdout_of(&["compile", "--all"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.last().copied(),
        Some(
            format!("{expected} variants compiled; {expected} reference traces graded VTS = true")
                .as_str()
        )
    );
    // One line per family, each with its split's number of cells, all passing.
    assert_eq!(lines.len(), families().len() + 1, "{text}");
    for row in families() {
        let name = str_field(row, "family");
        let n = cells_of(str_field(row, "split"));
        let line = lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for `{name}`"));
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words.get(1), Some(&n.to_string().as_str()), "{line}");
        assert!(
            line.contains(&format!("reference VTS {n:>2}/{n}")),
            "{line}"
        );
    }
}

// ---------------------------------------------------------------------------------
// 4. Mutations of a reference trace: the exact failure record
// ---------------------------------------------------------------------------------

#[test]
fn fixture_reference_trace_grades_vts_and_has_the_turns_the_mutations_need() {
    let fx = fixture();
    assert_vts(&grade(&fx.trace), &fx.family);
    assert!(fx.first_search_turn() < fx.first_read_turn());
    assert!(fx.write_turn() > fx.first_read_turn());
}

#[test]
fn removing_a_required_tool_from_the_menu_fails_availability_as_infeasibility() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    let menu = trace["menu"].as_array_mut().expect("menu");
    let before = menu.len();
    menu.retain(|t| t.as_str() != Some(fx.write_tool.as_str()));
    assert_eq!(menu.len(), before - 1);
    assert_record(&grade(&trace), "A", "infeasibility");

    // As the harness would record it: no request sent, stop = unavailable.
    trace["turns"] = json!([]);
    trace["final_answer"] = Value::Null;
    trace["stop"] = json!("unavailable");
    let verdict = grade(&trace);
    assert_record(&verdict, "A", "infeasibility");
    assert_eq!(verdict["calls"], json!(0));
    assert_eq!(verdict["requests"], json!(0));
}

#[test]
fn deleting_the_first_read_fails_the_program_as_a_wrong_conclusion() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    Fixture::turns(&mut trace).remove(fx.first_read_turn());
    assert_record(&grade(&trace), "P", "wrong_conclusion");
}

#[test]
fn reading_before_searching_fails_the_program_as_a_wrong_conclusion() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    Fixture::turns(&mut trace).swap(fx.first_search_turn(), fx.first_read_turn());
    assert_record(&grade(&trace), "P", "wrong_conclusion");
}

#[test]
fn a_wrong_decision_fails_the_answer_as_a_wrong_conclusion() {
    let fx = fixture();
    let mut answer = fx.answer();
    let decision = answer["decision"].as_str().expect("decision").to_string();
    answer.insert("decision".into(), json!(format!("not-{decision}")));
    let mut trace = fx.trace.clone();
    Fixture::set_answer(&mut trace, &Value::Object(answer).to_string());
    let verdict = grade(&trace);
    assert_record(&verdict, "Q", "wrong_conclusion");
    assert_eq!(
        verdict["ok_e"],
        json!(true),
        "the sources are still right: {verdict:#}"
    );
}

#[test]
fn a_fenced_answer_fails_the_answer_as_a_wrong_conclusion() {
    let fx = fixture();
    let answer = fx.trace["final_answer"].as_str().expect("answer");
    let mut trace = fx.trace.clone();
    Fixture::set_answer(&mut trace, &format!("```json\n{answer}\n```"));
    assert_record(&grade(&trace), "Q", "wrong_conclusion");
}

#[test]
fn prose_before_the_json_answer_fails_the_answer() {
    let fx = fixture();
    let answer = fx.trace["final_answer"].as_str().expect("answer");
    let mut trace = fx.trace.clone();
    Fixture::set_answer(&mut trace, &format!("Here is the answer: {answer}"));
    assert_record(&grade(&trace), "Q", "wrong_conclusion");
}

#[test]
fn surrounding_whitespace_around_the_json_answer_still_passes() {
    let fx = fixture();
    let answer = fx.trace["final_answer"].as_str().expect("answer");
    let mut trace = fx.trace.clone();
    Fixture::set_answer(&mut trace, &format!("\n  {answer}\n"));
    assert_vts(&grade(&trace), "answer with surrounding whitespace");
}

#[test]
fn citing_a_different_record_fails_evidence_as_a_wrong_conclusion() {
    let fx = fixture();
    let mut answer = fx.answer();
    let sources = answer["sources"].as_array_mut().expect("sources");
    sources[0] = json!("rec_000000000000");
    let mut trace = fx.trace.clone();
    Fixture::set_answer(&mut trace, &Value::Object(answer).to_string());
    assert_record(&grade(&trace), "E", "wrong_conclusion");
}

#[test]
fn skipping_the_permitted_write_fails_safety_as_a_wrong_conclusion() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    Fixture::turns(&mut trace).remove(fx.write_turn());
    assert_record(&grade(&trace), "X", "wrong_conclusion");
}

#[test]
fn repeating_the_permitted_write_fails_governance_as_a_wrong_conclusion() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    let turns = Fixture::turns(&mut trace);
    let write = turns[fx.write_turn()].clone();
    turns.insert(fx.write_turn() + 1, write);
    let verdict = grade(&trace);
    assert_record(&verdict, "G", "wrong_conclusion");
    assert_eq!(verdict["ok_x"], json!(true), "{verdict:#}");
    assert_eq!(
        verdict["integrity_errors"],
        json!([]),
        "the duplicate replays as recorded: {verdict:#}"
    );
}

#[test]
fn reported_tokens_over_the_episode_budget_fail_the_budget() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    for turn in Fixture::turns(&mut trace) {
        turn["response"]["usage"]["input_tokens"] = json!(50_000);
    }
    assert_record(&grade(&trace), "B", "budget_or_call_limit");
}

/// The reference trace with `n` extra copies of the first search turn (repeating a
/// search replays to the same observation).
fn with_extra_searches(fx: &Fixture, n: usize) -> Value {
    let mut trace = fx.trace.clone();
    let search = fx.first_search_turn();
    let copy = trace["turns"][search].clone();
    for _ in 0..n {
        Fixture::turns(&mut trace).insert(search + 1, copy.clone());
    }
    trace
}

#[test]
fn extra_calls_within_the_call_limit_still_pass() {
    let fx = fixture();
    assert_vts(&grade(&with_extra_searches(fx, 1)), "one extra search");
}

#[test]
fn calls_beyond_the_call_limit_fail_the_budget() {
    let fx = fixture();
    let limit = fx.trace["limits"]["call_limit"]
        .as_u64()
        .expect("call_limit");
    let calls = fx.trace["turns"].as_array().expect("turns").len() as u64 - 1;
    let trace = with_extra_searches(fx, (limit - calls + 1) as usize);
    let verdict = grade(&trace);
    assert_record(&verdict, "B", "budget_or_call_limit");
    assert_eq!(verdict["calls"].as_u64(), Some(limit + 1));
}

/// B is judged against the variant's call limit and the frozen episode budget, never
/// against limits a trace claims for itself.
#[test]
fn claimed_limits_in_the_trace_do_not_lift_the_variants_limits() {
    let fx = fixture();
    let limit = fx.trace["limits"]["call_limit"]
        .as_u64()
        .expect("call_limit");
    let calls = fx.trace["turns"].as_array().expect("turns").len() as u64 - 1;
    let mut trace = with_extra_searches(fx, (limit - calls + 1) as usize);
    trace["limits"]["call_limit"] = json!(1000);
    trace["limits"]["turn_limit"] = json!(1000);
    assert_record(&grade(&trace), "B", "budget_or_call_limit");

    let mut trace = fx.trace.clone();
    for turn in Fixture::turns(&mut trace) {
        turn["response"]["usage"]["input_tokens"] = json!(50_000);
    }
    trace["limits"]["episode_budget"] = json!(1_000_000_000u64);
    assert_record(&grade(&trace), "B", "budget_or_call_limit");
}

#[test]
fn a_truncated_last_response_fails_the_answer_as_truncation() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    let last = Fixture::turns(&mut trace).last_mut().expect("a last turn");
    last["response"]["finish_reason"] = json!("length");
    last["response"]["text"] = Value::Null;
    trace["final_answer"] = Value::Null;
    trace["stop"] = json!("truncated");
    let verdict = grade(&trace);
    assert_record(&verdict, "Q", "truncation");
    assert_eq!(verdict["truncated"], json!(true));
    assert_eq!(verdict["truncated_before_first_call"], json!(false));
}

#[test]
fn a_tampered_observation_breaks_completion_integrity() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    let turn = fx.first_read_turn();
    let obs = Fixture::turns(&mut trace)[turn]["executed"][0]["observation"]
        .as_str()
        .expect("observation")
        .to_string();
    // Change one character inside the observation.
    let at = obs.find("rec_").expect("the observation names a record") + 4;
    let mut tampered = obs.clone();
    let c = if &obs[at..=at] == "0" { "1" } else { "0" };
    tampered.replace_range(at..=at, c);
    assert_ne!(tampered, obs);
    Fixture::turns(&mut trace)[turn]["executed"][0]["observation"] = json!(tampered);
    let verdict = grade(&trace);
    assert_record(&verdict, "C", "contract_break");
    let errors = verdict["integrity_errors"]
        .as_array()
        .expect("integrity_errors");
    assert!(!errors.is_empty(), "{verdict:#}");
}

#[test]
fn two_tool_calls_in_one_response_break_the_contract() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    let calls = Fixture::turns(&mut trace)[0]["response"]["tool_calls"]
        .as_array_mut()
        .expect("tool_calls");
    let mut second = calls[0].clone();
    second["id"] = json!("call_extra");
    calls.push(second);
    assert_record(&grade(&trace), "C", "contract_break");
}

#[test]
fn a_trace_for_another_variant_breaks_integrity() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    trace["variant_id"] = json!("v-0000000000000000");
    let verdict = grade(&trace);
    assert_record(&verdict, "C", "contract_break");
    assert!(
        verdict["integrity_errors"]
            .as_array()
            .is_some_and(|e| !e.is_empty()),
        "{verdict:#}"
    );
}

// ---------------------------------------------------------------------------------
// 5. Bad input never panics
// ---------------------------------------------------------------------------------

#[test]
fn garbage_inside_a_well_formed_trace_is_graded_not_panicked_on() {
    let fx = fixture();
    let first = fx.first_search_turn();
    let unknown_tool = |trace: &mut Value| {
        let turn = &mut Fixture::turns(trace)[first];
        turn["response"]["tool_calls"][0]["name"] = json!("no_such_tool");
        turn["executed"][0]["tool"] = json!("no_such_tool");
    };
    let bad_arguments = |trace: &mut Value| {
        let turn = &mut Fixture::turns(trace)[first];
        turn["response"]["tool_calls"][0]["arguments"] = json!("{\"query\": ");
        turn["executed"][0]["arguments"] = json!("{\"query\": ");
    };
    let bad_answer = |trace: &mut Value| Fixture::set_answer(trace, "{not json");
    type Mutation<'a> = &'a dyn Fn(&mut Value);
    let cases: [(&str, Vec<Mutation>); 4] = [
        ("unknown tool", vec![&unknown_tool]),
        ("invalid JSON arguments", vec![&bad_arguments]),
        ("malformed answer", vec![&bad_answer]),
        (
            "all three",
            vec![&unknown_tool, &bad_arguments, &bad_answer],
        ),
    ];
    for (what, mutations) in cases {
        let mut trace = fx.trace.clone();
        for m in mutations {
            m(&mut trace);
        }
        let verdict = grade(&trace);
        assert_eq!(verdict["vts"], json!(false), "{what}: {verdict:#}");
        assert!(
            verdict["first_unmet"].is_string() && verdict["terminal_flag"].is_string(),
            "{what}: {verdict:#}"
        );
    }
}

#[test]
fn a_trace_file_that_is_not_json_is_a_user_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("not-a-trace.json");
    std::fs::write(&path, "this is not JSON\n").expect("write");
    let stderr = failure_of(tbb().args(["grade", path.to_str().expect("UTF-8"), "--json"]));
    assert!(stderr.contains("not-a-trace.json"), "{stderr}");

    let missing = dir.path().join("missing-trace.json");
    let stderr = failure_of(tbb().args(["grade", missing.to_str().expect("UTF-8")]));
    assert!(stderr.contains("missing-trace.json"), "{stderr}");
}

#[test]
fn an_unknown_family_suggests_the_closest_name() {
    let stderr = failure_of(tbb().args(["compile", "overdue-escalation-harbour"]));
    assert!(stderr.contains("did you mean"), "{stderr}");
    assert!(stderr.contains(&format!("`{HARBOR}`")), "{stderr}");

    let stderr = failure_of(tbb().args(["compile", "zzzz"]));
    assert!(
        !stderr.contains("did you mean"),
        "no suggestion for a far-off name: {stderr}"
    );
}

#[test]
fn a_menu_size_outside_the_paper_lists_the_allowed_sizes() {
    let stderr = failure_of(tbb().args(["compile", HARBOR, "--v", "7"]));
    assert!(stderr.contains("8, 32, 128"), "{stderr}");
}

// ---------------------------------------------------------------------------------
// 6. Malformed family files
// ---------------------------------------------------------------------------------

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A copy of `families/` in a temporary directory with one edit to one file: the
/// first occurrence of `from` becomes `to`. Returns the directory, the families root,
/// the edited file, and the edited line (number, text).
struct BrokenFamilies {
    tmp: tempfile::TempDir,
    root: PathBuf,
    file: &'static str,
    line: (usize, String),
}

fn broken_families(file: &'static str, from: &str, to: &str) -> BrokenFamilies {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("families");
    copy_tree(&families_dir(), &root);
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).expect("read family file");
    let at = text
        .find(from)
        .unwrap_or_else(|| panic!("`{from}` is not in {file}"));
    let edited = format!("{}{to}{}", &text[..at], &text[at + from.len()..]);
    std::fs::write(&path, &edited).expect("write family file");
    // The edited line is the one holding the first character of `to` after any newlines.
    let start = at + (to.len() - to.trim_start_matches('\n').len());
    let number = edited[..start].matches('\n').count() + 1;
    let line = edited
        .lines()
        .nth(number - 1)
        .expect("the edited line")
        .to_string();
    BrokenFamilies {
        tmp,
        root,
        file,
        line: (number, line),
    }
}

impl BrokenFamilies {
    /// Runs `tbb --families ROOT families`, asserts it fails, and returns stderr.
    fn load(&self) -> String {
        failure_of(tbb().arg("--families").arg(&self.root).arg("families"))
    }

    fn assert_shows_the_file_and_line(&self, stderr: &str) {
        assert!(
            stderr.contains(self.file),
            "stderr does not name {}:\n{stderr}",
            self.file
        );
        let (n, text) = &self.line;
        assert!(
            stderr.contains(&format!("{n}:")),
            "stderr does not point at line {n}:\n{stderr}"
        );
        assert!(
            stderr.contains(&format!("{n} │ {text}")),
            "stderr does not show line {n} `{text}`:\n{stderr}"
        );
    }

    fn without_tmp(&self, stderr: &str) -> String {
        stderr.replace(&self.tmp.path().display().to_string(), "[TMP]")
    }
}

/// miette's message text with its wrapping undone (it wraps at 80 columns when stderr
/// is not a terminal, whatever `COLUMNS` says).
fn unwrapped(stderr: &str) -> String {
    stderr.replace("\n  │ ", " ")
}

#[test]
fn a_toml_syntax_error_names_the_file_and_shows_the_line() {
    let b = broken_families(
        "core/overdue_escalation.toml",
        "[[family]]\nname = \"overdue-escalation-harbor\"",
        "[[family]\nname = \"overdue-escalation-harbor\"",
    );
    let stderr = b.load();
    b.assert_shows_the_file_and_line(&stderr);
}

#[test]
fn a_decision_the_policy_does_not_give_is_reported_and_nothing_is_loaded() {
    let b = broken_families(
        "core/overdue_escalation.toml",
        "decision = \"escalate\"\nstate_change = \"update_invoice\"",
        "decision = \"hold\"\nstate_change = \"update_invoice\"",
    );
    let stderr = b.load();
    b.assert_shows_the_file_and_line(&stderr);
    assert!(
        unwrapped(&stderr).contains("the policy gives `escalate` on these facts, not `hold`"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was loaded"), "{stderr}");
    insta::assert_snapshot!("families_wrong_decision_stderr", b.without_tmp(&stderr));
}

#[test]
fn a_misspelt_key_names_the_file_and_shows_the_line() {
    let b = broken_families(
        "holdout/budget_overrun_alert.toml",
        "\ndecision = ",
        "\ndecison = ",
    );
    let stderr = b.load();
    b.assert_shows_the_file_and_line(&stderr);
    assert!(
        unwrapped(&stderr).contains("unknown field `decison`"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------
// 7. Snapshots of what people read
// ---------------------------------------------------------------------------------

#[test]
fn user_requests_of_two_domains_are_stable() {
    for family in [HARBOR, "room-conflict-resolution-tamarind"] {
        let v = compile_json(family, 8, "high", "raw");
        insta::assert_snapshot!(
            format!("user_request__{family}"),
            str_field(&v, "user_request")
        );
    }
}

#[test]
fn compile_text_output_is_stable() {
    let text = stdout_of(&[
        "compile", HARBOR, "--v", "8", "--w", "high", "--d", "linked",
    ]);
    insta::assert_snapshot!(
        "compile_text__overdue_escalation_harbor__v8_high_linked",
        text
    );
}

#[test]
fn grade_json_of_the_reference_trace_is_stable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trace.json");
    stdout_of(&[
        "reference-trace",
        HARBOR,
        "--v",
        "8",
        "--w",
        "high",
        "--d",
        "linked",
        "-o",
        path.to_str().expect("UTF-8"),
    ]);
    let text = stdout_of(&["grade", path.to_str().expect("UTF-8"), "--json"]);
    insta::assert_snapshot!(
        "grade_json__overdue_escalation_harbor__v8_high_linked",
        text
    );
}

#[test]
fn a_final_answer_that_is_not_the_last_responses_text_breaks_integrity() {
    let fx = fixture();
    let mut trace = fx.trace.clone();
    let last = Fixture::turns(&mut trace).last_mut().expect("a last turn");
    last["response"]["text"] = json!("something else");
    let verdict = grade(&trace);
    assert_record(&verdict, "C", "contract_break");
    assert!(!verdict["integrity_errors"]
        .as_array()
        .expect("errors")
        .is_empty());
}

#[test]
fn a_depth_cell_is_the_same_variant_whatever_workflow_level_is_given() {
    let id = |w: &str| {
        let out = tbb()
            .args([
                "compile",
                "board-meeting-prep-feldspar",
                "--depth",
                "30",
                "--w",
                w,
                "--json",
            ])
            .output()
            .expect("tbb runs");
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        v["variant_id"].clone()
    };
    assert_eq!(id("low"), id("high"));
}

#[test]
fn configs_json_lists_the_sim_panel_and_disabled_live_routes() {
    let rows = match json_of(&["configs", "--json"]) {
        Value::Array(rows) => rows,
        other => panic!("not an array: {other}"),
    };
    let sims: Vec<&Value> = rows.iter().filter(|r| r["provider"] == "sim").collect();
    let orgs: BTreeSet<&str> = sims.iter().map(|r| str_field(r, "organization")).collect();
    assert!(sims.len() >= 21 && orgs.len() >= 7);
    for r in &rows {
        for key in ["name", "organization", "provider", "model"] {
            assert!(r[key].is_string(), "{key} in {r}");
        }
    }
    for provider in ["openai", "anthropic", "gemini"] {
        assert!(
            rows.iter()
                .any(|r| r["provider"] == provider && r["enabled"] == false),
            "{provider}"
        );
    }
}

#[test]
fn run_episode_shows_the_controllers_calls_and_canonical_delivery_runs() {
    let args = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut a = vec![
            "run-episode",
            "--config",
            "sim-gale-swift",
            "--family",
            "document-lineage-trace-dolomite",
            "--depth",
            "30",
            "--lane",
            "fixed",
        ];
        a.extend_from_slice(extra);
        a
    };
    let text = stdout_of(&args(&["--actor", "controller"]));
    assert!(text.contains("+ 29 calls by the controller"), "{text}");
    let out = json_of(&args(&["--actor", "controller", "--json"]));
    assert_eq!(out["verdict"]["calls"], 30, "{out}");
    assert_eq!(out["usage"]["requests"], 2, "{out}");
    let out = json_of(&args(&[
        "--delivery",
        "canonical",
        "--d",
        "compact",
        "--json",
    ]));
    assert!(out["usage"]["requests"].as_u64().unwrap_or(0) > 2, "{out}");
}

/// The first request's visible tool names of `tbb run-episode ... --lane LANE` at V = 128.
fn first_menu_of_lane(lane: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("trace.json");
    let trace_arg = trace.to_string_lossy().to_string();
    stdout_of(&[
        "run-episode",
        "--config",
        "sim-dunlin-max",
        "--family",
        HARBOR,
        "--v",
        "128",
        "--w",
        "low",
        "--d",
        "raw",
        "--lane",
        lane,
        "--trace-out",
        &trace_arg,
    ]);
    let text = std::fs::read_to_string(&trace).expect("the trace is written");
    let trace: Value = serde_json::from_str(&text).expect("the trace is JSON");
    trace["turns"][0]["request"]["visible_tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no first request in {trace}"))
        .iter()
        .map(|t| t.as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn run_episode_runs_the_router_and_retrieval_menus_by_their_lane_names() {
    assert_eq!(first_menu_of_lane("fixed").len(), 128);
    assert_eq!(first_menu_of_lane("retrieval_k8").len(), 8);
    let routed = first_menu_of_lane("router");
    assert!(!routed.is_empty() && routed.len() < 128, "{routed:?}");
    let stderr = failure_of(tbb().args([
        "run-episode",
        "--config",
        "sim-dunlin-max",
        "--family",
        HARBOR,
        "--lane",
        "retrieval_k0",
    ]));
    assert!(stderr.contains("retrieval_k<k>"), "{stderr}");
}

#[test]
fn run_episode_json_holds_the_verdict_and_usage_totals() {
    let out = json_of(&[
        "run-episode",
        "--config",
        "sim-dunlin-max",
        "--family",
        HARBOR,
        "--v",
        "8",
        "--w",
        "high",
        "--d",
        "raw",
        "--json",
    ]);
    for key in ["vts", "ok_a", "ok_c", "first_unmet", "terminal_flag"] {
        assert!(out["verdict"].get(key).is_some(), "{key} in {out}");
    }
    let usage = &out["usage"];
    assert!(usage["total_tokens"].as_u64().unwrap_or(0) > 0, "{out}");
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(
            usage["input_tokens"].as_u64().unwrap_or(0)
                + usage["output_tokens"].as_u64().unwrap_or(0)
        )
    );
    // Deterministic: the same episode twice.
    let again = json_of(&[
        "run-episode",
        "--config",
        "sim-dunlin-max",
        "--family",
        HARBOR,
        "--v",
        "8",
        "--w",
        "high",
        "--d",
        "raw",
        "--json",
    ]);
    assert_eq!(out["verdict"], again["verdict"]);
    assert_eq!(out["episode_key"], again["episode_key"]);
}

#[test]
fn run_episode_traces_grade_like_the_harness_did() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trace.json");
    let path_text = path.to_string_lossy().to_string();
    let out = json_of(&[
        "run-episode",
        "--config",
        "sim-aurora-flash",
        "--family",
        HARBOR,
        "--v",
        "128",
        "--w",
        "high",
        "--d",
        "linked",
        "--json",
        "--trace-out",
        &path_text,
    ]);
    let graded = json_of(&["grade", &path_text, "--json"]);
    assert_eq!(out["verdict"], graded);
}

#[test]
fn an_unknown_configuration_is_answered_with_did_you_mean() {
    let stderr = failure_of(tbb().args([
        "run-episode",
        "--config",
        "sim-aurora-flsh",
        "--family",
        HARBOR,
    ]));
    assert!(
        stderr.contains("did you mean `sim-aurora-flash`"),
        "{stderr}"
    );
}

#[test]
fn providers_check_skips_disabled_routes_without_a_network_call() {
    let out = stdout_of(&["providers", "check"]);
    assert!(out.contains("skipped (disabled)"), "{out}");
    assert!(
        !out.contains("sim-"),
        "the simulated panel has nothing to check: {out}"
    );
}

#[test]
fn manifest_check_resolves_the_capacity_factorial_and_applies_overrides() {
    let out = json_of(&["manifest", "check", "manifests/capacity.toml", "--json"]);
    assert_eq!(out["episodes"], 18_144);
    assert_eq!(out["configurations"].as_array().map(Vec::len), Some(21));
    let out = json_of(&[
        "manifest",
        "check",
        "manifests/smoke.toml",
        "--set",
        "repeats=2",
        "--json",
    ]);
    assert_eq!(out["blocks"][0]["repeats"], 2);
    assert_eq!(out["episodes"], 576);
    let stderr = failure_of(tbb().args([
        "manifest",
        "check",
        "manifests/smoke.toml",
        "--set",
        "repeats=0",
    ]));
    assert!(stderr.contains("--set repeats"), "{stderr}");
}

// ---------------------------------------------------------------------------------
// Disabled configurations and infrastructure failures through the binary
// ---------------------------------------------------------------------------------

/// A loopback HTTP server on 127.0.0.1 answering every request with `status` and a
/// JSON `body`, counting the requests; it lives until the test process ends.
fn loopback(
    status: u16,
    body: &'static str,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().fallback(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            axum::http::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(axum::body::Body::from(body))
                .expect("response")
        }
    });
    let origin = common::serve_on_loopback(app);
    (origin, hits)
}

/// A catalogue with one disabled OpenAI-compatible configuration at `origin`.
fn disabled_catalogue(dir: &Path, origin: &str) -> PathBuf {
    let path = dir.join("configurations.toml");
    let text = format!(
        "[[configuration]]\nname = \"loopback-openai\"\norganization = \"Test\"\n\
         provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{origin}/v1\"\n\
         prices = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\nenabled = false\n\
         timeout_ms = 5000\n"
    );
    std::fs::write(&path, text).expect("write the catalogue");
    path
}

const EPISODE: [&str; 10] = [
    "run-episode",
    "--config",
    "loopback-openai",
    "--family",
    HARBOR,
    "--v",
    "8",
    "--w",
    "high",
    "--d",
];

#[test]
fn run_episode_refuses_a_disabled_configuration_without_allow_disabled() {
    let (origin, hits) = loopback(200, "{}");
    let dir = tempfile::tempdir().expect("tempdir");
    let catalogue = disabled_catalogue(dir.path(), &origin);
    let stderr = failure_of(
        tbb()
            .env("TBB_CONFIGS", &catalogue)
            .args(EPISODE)
            .arg("raw"),
    );
    assert!(
        stderr.contains("`loopback-openai` is disabled") && stderr.contains("--allow-disabled"),
        "{stderr}"
    );
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing was sent"
    );
    // The repository's own paid routes, too, before any key is looked for.
    let stderr = failure_of(tbb().env_remove("OPENAI_API_KEY").args([
        "run-episode",
        "--config",
        "openai-gpt-4.1-mini",
        "--family",
        HARBOR,
    ]));
    assert!(stderr.contains("--allow-disabled"), "{stderr}");
}

#[test]
fn run_episode_prints_the_cause_of_an_infrastructure_failure() {
    let (origin, hits) = loopback(401, "{\"error\": {\"message\": \"invalid key\"}}");
    let dir = tempfile::tempdir().expect("tempdir");
    let catalogue = disabled_catalogue(dir.path(), &origin);
    let out = tbb()
        .env("TBB_CONFIGS", &catalogue)
        .args(EPISODE)
        .args(["raw", "--allow-disabled", "--json"])
        .output()
        .expect("tbb runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["stop"], "infra_failure");
    assert_eq!(json["verdict"]["terminal_flag"], "infra_failure");
    assert_eq!(json["infra"]["cause"], "auth", "{json}");
    assert_eq!(json["infra"]["http_status"], 401);
    assert_eq!(json["infra"]["attempts"], 1);
    assert_eq!(json["verdict"]["infra"], json["infra"]);
    assert_eq!(json["sent"]["temperature"], 0.0, "{json}");
    assert_eq!(json["sent"]["parallel_tool_calls"], false);
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    let human = tbb()
        .env("TBB_CONFIGS", &catalogue)
        .args(EPISODE)
        .args(["raw", "--allow-disabled"])
        .output()
        .expect("tbb runs");
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        human.status.success(),
        "{}",
        String::from_utf8_lossy(&human.stderr)
    );
    assert!(
        text.contains("infrastructure failure: auth (last HTTP status 401, 1 attempt)"),
        "{text}"
    );
    assert!(text.contains("infra_failure"), "{text}");
}

/// Regression: `tbb apply missing.toml` said "cannot use the plan ...".
#[test]
fn a_missing_manifest_is_named_as_missing_by_every_command() {
    for command in [
        &["apply", "no/such/manifest.toml"][..],
        &["plan", "no/such/manifest.toml"],
        &["manifest", "check", "no/such/manifest.toml"],
    ] {
        let stderr = failure_of(tbb().args(command));
        assert!(
            stderr.contains("manifest no/such/manifest.toml does not exist"),
            "`tbb {}`:\n{stderr}",
            command.join(" ")
        );
        assert!(
            !stderr.contains("plan"),
            "`tbb {}`:\n{stderr}",
            command.join(" ")
        );
    }
}

/// A scratch directory holding the shipped catalogue (after `edit`), for manifests
/// written beside it, and the smoke manifest's text to derive them from.
fn scratch_study(edit: impl FnOnce(String) -> String) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let catalogue = std::fs::read_to_string(root().join("manifests/configurations.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.path().join("configurations.toml"), edit(catalogue))
        .unwrap_or_else(|e| panic!("{e}"));
    let smoke = std::fs::read_to_string(root().join("manifests/smoke.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    (dir, smoke)
}

#[test]
fn manifest_check_reports_nan_at_its_value_and_bounds_long_reports() {
    let (dir, smoke) = scratch_study(|catalogue| catalogue);
    let nan = dir.path().join("nan.toml");
    std::fs::write(&nan, smoke.replace("repeats = 1", "repeats = nan"))
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = failure_of(tbb().args(["manifest", "check"]).arg(&nan));
    assert!(
        stderr.contains("`repeats` = nan is not a finite number"),
        "{stderr}"
    );
    assert!(stderr.contains("repeats = nan"), "{stderr}");

    let entries: String = (0..1000)
        .map(|_| "[[cells.list]]\nv = 8\nw = \"low\"\nd = \"raw\"\n\n")
        .collect();
    let dup = dir.path().join("dup.toml");
    std::fs::write(
        &dup,
        smoke.replace("[cells]\npreset = \"capacity\"\n", &entries),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // The report's size, not its speed, is checked: a timed test fails on a loaded machine.
    let stderr = failure_of(tbb().args(["plan"]).arg(&dup));
    assert!(stderr.contains("999 problem(s)"), "{stderr}");
    assert!(stderr.contains("… and 949 more"), "{stderr}");
    assert!(stderr.len() < 100_000, "{} bytes of stderr", stderr.len());
}

/// Regression: a small study (V = 8 and V = 128 at one W/D) ran every episode and then
/// failed the contrasts node (exit 1, no report).
#[test]
fn a_subset_study_skips_the_analyses_it_cannot_feed_and_still_reports() {
    let (dir, smoke) = scratch_study(|catalogue| catalogue);
    let cells = "[[cells.list]]\nv = 8\nw = \"low\"\nd = \"raw\"\n\n[[cells.list]]\nv = 128\nw = \"low\"\nd = \"raw\"\n";
    let manifest = dir.path().join("small.toml");
    std::fs::write(
        &manifest,
        smoke.replace("[cells]\npreset = \"capacity\"\n", cells),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let m = manifest.to_string_lossy().into_owned();
    let outputs = dir.path().join("outputs").to_string_lossy().into_owned();
    let lockfiles = dir.path().join("lockfiles").to_string_lossy().into_owned();
    let check = stdout_of(&["manifest", "check", &m]);
    assert!(
        check.contains("analysis contrasts cannot run on this design"),
        "{check}"
    );
    assert!(!check.contains("analysis strata"), "{check}");
    let plan = stdout_of(&["plan", &m, "--outputs", &outputs]);
    assert!(
        plan.contains("! analysis contrasts is skipped: it needs all 12 capacity cells"),
        "{plan}"
    );
    stdout_of(&[
        "apply",
        &m,
        "--outputs",
        &outputs,
        "--lockfiles",
        &lockfiles,
    ]);
    let study = dir.path().join("outputs/smoke");
    let report = std::fs::read_to_string(study.join("report.md")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        report.contains(
            "Contrasts: skipped, the `contrasts` analysis cannot run on this study's design: \
             it needs all 12 capacity cells"
        ),
        "{report}"
    );
    assert!(study.join("strata.parquet").is_file());
    assert!(!study.join("contrasts.parquet").exists());
}

/// `tbb manifest check` rejects what apply would: an enabled live configuration whose
/// key variable is not set fails check (naming the variable), before any request.
#[test]
fn check_refuses_a_configuration_apply_could_not_build() {
    let (dir, smoke) = scratch_study(|catalogue| {
        let entry = "name = \"openai-gpt-4.1-mini\"";
        let start = catalogue
            .find(entry)
            .unwrap_or_else(|| panic!("no {entry}"));
        let (head, tail) = catalogue.split_at(start);
        let tail = tail
            .replacen("enabled = false", "enabled = true", 1)
            .replacen("OPENAI_API_KEY", "TBB_TEST_KEY_THAT_IS_NEVER_SET", 1);
        format!("{head}{tail}")
    });
    let manifest = dir.path().join("live.toml");
    std::fs::write(
        &manifest,
        smoke.replace(
            "names = [\"sim-aurora-flash\", \"sim-dunlin-max\"]",
            "names = [\"sim-aurora-flash\", \"openai-gpt-4.1-mini\"]",
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let m = manifest.to_string_lossy().into_owned();
    let stderr = failure_of(
        tbb()
            .env_remove("TBB_TEST_KEY_THAT_IS_NEVER_SET")
            .args(["manifest", "check", &m]),
    );
    assert!(
        stderr.contains("configuration `openai-gpt-4.1-mini` cannot run"),
        "{stderr}"
    );
    assert!(
        stderr.contains("TBB_TEST_KEY_THAT_IS_NEVER_SET"),
        "{stderr}"
    );
    assert!(!stderr.contains("sim-aurora-flash` cannot run"), "{stderr}");
}

/// A prompt directory plan and apply could not load fails check too.
#[test]
fn check_refuses_a_prompt_directory_apply_could_not_load() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let missing = dir.path().join("no-prompts").to_string_lossy().into_owned();
    let stderr = failure_of(tbb().args([
        "--prompts",
        &missing,
        "manifest",
        "check",
        "manifests/smoke.toml",
    ]));
    assert!(stderr.contains("no-prompts"), "{stderr}");
}

/// Regression: `tbb plan bad.toml 2>&1 | head -1` exited 101 (a panic in the error's
/// printing once `head` had closed the pipe) instead of the error's own exit code 2.
#[test]
fn a_closed_stderr_keeps_the_error_s_exit_code() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let manifest = dir.path().join("bad.toml");
    std::fs::write(&manifest, "study = 3\n").unwrap_or_else(|e| panic!("{e}"));
    // The reader is gone before tbb starts, so every write it makes fails with EPIPE.
    let (reader, writer) = std::io::pipe().unwrap_or_else(|e| panic!("{e}"));
    drop(reader);
    let status = std::process::Command::new(assert_cmd::cargo::cargo_bin("tbb"))
        .current_dir(dir.path())
        .env("TBB_FAMILIES", common::repo().join("families"))
        .arg("plan")
        .arg(&manifest)
        .stdout(writer.try_clone().unwrap_or_else(|e| panic!("{e}")))
        .stderr(writer)
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(2), "{status:?}");
}
