//! The discovery study's menus on the repository's families: the router and the
//! retrieval menu see public text only, the router leaves absent and ambiguous routes
//! alone, an unavailable episode sends nothing and costs nothing, the manifest's `k`
//! is checked, and the study applies offline with an empty plan after it.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

use serde_json::json;
use tbb::compile::{compile, Cell, Encoding, Routing, Variant, Workflow};
use tbb::family::{FamilySet, Split};
use tbb::grade::trace::StopReason;
use tbb::grade::{Obligation, TerminalFlag};
use tbb::harness::{run_episode, ArmForm, Episode, EpisodeSpec, Menu, Prompts};
use tbb::provider::{
    BoxFuture, ChatRequest, ChatResponse, Configuration, Finish, Provider, ProviderError,
    ReasoningSource, ToolSchema, Usage,
};
use tbb::tables::analyses::discovery::{ClusterUnit, DiscoveryRow, RLevel, Statistic};
use tbb::tables::TableRow;
use tbb_agent::discovery::router::{self, Decision};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn families() -> FamilySet {
    FamilySet::load(&root().join("families")).expect("families load")
}

/// The discovery study's cells: the full 128-tool catalogue, W low, D raw.
fn cell(r: Routing) -> Cell {
    Cell {
        r,
        ..Cell::new(128, Workflow::Low, Encoding::Raw)
    }
}

fn core_variants(r: Routing) -> Vec<Variant> {
    let set = families();
    set.split(Split::Core)
        .map(|f| compile(f, &cell(r)).expect("compiles"))
        .collect()
}

fn harbor(r: Routing) -> Variant {
    let set = families();
    compile(
        set.get("overdue-escalation-harbor").expect("family"),
        &cell(r),
    )
    .expect("compiles")
}

fn visible(v: &Variant, menu: Menu) -> Vec<String> {
    menu.start(v)
        .visible()
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

fn available(v: &Variant, menu: Menu) -> bool {
    let offered = visible(v, menu);
    v.required_tools().iter().all(|t| offered.contains(t))
}

#[test]
fn the_router_and_the_retriever_take_public_text_and_schemas_only() {
    // Their signatures: the request's text and wire schemas in, positions out. The
    // agent crate cannot name a variant (tests/it/wall.rs), so no core type can reach them.
    let _: fn(&str, &[ToolSchema]) -> Decision = router::route;
    let _: fn(&str, &[ToolSchema], usize) -> Vec<usize> = tbb_agent::discovery::retrieve::top_k;
    // The hook hands them nothing of the ground truth: a variant whose operational
    // tools and flags are wiped gets the same menus.
    for r in [Routing::Low, Routing::High] {
        let v = harbor(r);
        let mut blind = v.clone();
        blind.operational_tools.clear();
        for t in &mut blind.menu {
            t.operational = false;
        }
        for menu in [
            Menu::Router,
            Menu::Retrieval { k: 8 },
            Menu::Retrieval { k: 32 },
        ] {
            assert_eq!(visible(&v, menu), visible(&blind, menu), "{menu:?}");
        }
    }
}

#[test]
fn the_router_keeps_exactly_the_routes_connector_even_among_near_misses() {
    for r in [Routing::Low, Routing::High] {
        for v in core_variants(r) {
            let kept = visible(&v, Menu::Router);
            let route = v
                .menu
                .iter()
                .find(|t| t.operational)
                .map(|t| t.connector.clone())
                .expect("an operational tool");
            let expected: Vec<String> = v
                .menu
                .iter()
                .filter(|t| t.connector == route)
                .map(|t| t.name.clone())
                .collect();
            assert_eq!(kept, expected, "{}", v.family);
            assert!(available(&v, Menu::Router), "{}", v.family);
        }
    }
}

#[test]
fn an_absent_or_ambiguous_route_leaves_the_menu_unchanged() {
    let v = harbor(Routing::High);
    let full = visible(&v, Menu::Fixed);
    let line = v
        .user_request
        .lines()
        .find(|l| l.starts_with("Required source route:"))
        .expect("a route line")
        .to_string();
    // Absent: the route line removed.
    let mut absent = v.clone();
    absent.user_request = v.user_request.replace(&line, "");
    assert_eq!(visible(&absent, Menu::Router), full);
    // Ambiguous: a second, near-miss route named beside it.
    let mut ambiguous = v.clone();
    ambiguous.user_request = v.user_request.replace(
        &line,
        &format!("{line}\n{}", line.replace("eu-west", "eu-central")),
    );
    assert_eq!(visible(&ambiguous, Menu::Router), full);
    // The same route twice is not ambiguous.
    let mut twice = v.clone();
    twice.user_request = v.user_request.replace(&line, &format!("{line}\n{line}"));
    assert_eq!(visible(&twice, Menu::Router), visible(&v, Menu::Router));
}

/// Calibration of the retriever on the repository's 36 core families at V = 128 (the
/// study's cells): how many keep every required tool in the top k. Near-miss
/// connectors (R high) repeat the route's tool descriptions under two of its three
/// coordinates, so BM25 ranks their copies beside the route's own tools. A change here
/// changes the discovery study's availability: update docs/discovery.md with it.
#[test]
fn retrieval_availability_on_the_core_families() {
    let count = |r: Routing, k: u16| {
        core_variants(r)
            .iter()
            .filter(|v| available(v, Menu::Retrieval { k }))
            .count()
    };
    assert_eq!((count(Routing::Low, 8), count(Routing::High, 8)), (29, 0));
    assert_eq!(
        (count(Routing::Low, 32), count(Routing::High, 32)),
        (36, 17)
    );
    // Retrieval keeps k schemas, in the menu's own order.
    let v = harbor(Routing::Low);
    let kept = visible(&v, Menu::Retrieval { k: 8 });
    assert_eq!(kept.len(), 8);
    let positions: Vec<usize> = kept
        .iter()
        .map(|n| {
            v.menu
                .iter()
                .position(|t| &t.name == n)
                .expect("on the menu")
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn the_core_families_fall_into_22_required_tool_clusters() {
    let mut kinds: Vec<String> = core_variants(Routing::Low)
        .iter()
        .map(tbb::tables::rows::required_tool_kinds)
        .collect();
    let high: Vec<String> = core_variants(Routing::High)
        .iter()
        .map(tbb::tables::rows::required_tool_kinds)
        .collect();
    // R changes no reference program: each family keeps its cluster.
    assert_eq!(kinds, high);
    assert!(kinds.contains(&"read_invoice+search+update_invoice".to_string()));
    kinds.sort();
    kinds.dedup();
    assert_eq!(kinds.len(), 22, "{kinds:?}");
}

/// A provider that records every request and answers with an empty text.
struct Recorder(Mutex<Vec<ChatRequest>>);

impl Provider for Recorder {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(request.clone());
        }
        Box::pin(async {
            Ok(ChatResponse {
                text: Some("{}".into()),
                tool_calls: vec![],
                finish: Finish::Stop,
                finish_raw: "stop".into(),
                usage: Some(Usage {
                    input_tokens: 1000,
                    cached_tokens: 0,
                    output_tokens: 10,
                    reasoning_tokens: None,
                    reasoning_source: ReasoningSource::Unknown,
                }),
                usage_error: None,
                violation: None,
                http_status: None,
                raw: json!({}),
            })
        })
    }
}

fn config() -> Configuration {
    toml::from_str(
        "name = \"recorder\"\norganization = \"test\"\nprovider = \"openai\"\nmodel = \"r-1\"\n\
         prices = { input_per_mtok = 1.0, output_per_mtok = 2.0 }\n\
         retry = { max_attempts = 1, base_delay_ms = 1, max_delay_ms = 1, retry_on = [] }\n",
    )
    .expect("config parses")
}

async fn run(v: &Variant, menu: Menu, p: &Recorder) -> Episode {
    let cfg = config();
    let spec = EpisodeSpec {
        arm: ArmForm {
            menu,
            ..ArmForm::baseline()
        },
        ..EpisodeSpec::frozen(v, &cfg)
    };
    let prompts = Prompts::load(&root().join("prompts")).expect("prompts load");
    let e = run_episode(p, &spec, &prompts, None).await;
    // Certification regrades from the stored transcript: it must give the same trace.
    let stored = serde_json::to_string(&e.transcript).expect("serialises");
    let back: tbb::harness::transcript::Transcript = serde_json::from_str(&stored).expect("parses");
    assert_eq!(back.trace(&e.blobs, v).as_ref(), Some(&e.trace));
    e
}

#[tokio::test]
async fn an_unavailable_retrieval_menu_sends_no_request_and_costs_nothing() {
    let v = harbor(Routing::High);
    let p = Recorder(Mutex::new(Vec::new()));
    let e = run(&v, Menu::Retrieval { k: 8 }, &p).await;
    assert!(p.0.lock().expect("lock").is_empty(), "a request was sent");
    assert_eq!(e.trace.stop, StopReason::Unavailable);
    assert_eq!(e.trace.menu.len(), 8);
    assert!(!e.verdict.vts && !e.verdict.obligations.ok_a);
    assert_eq!(e.verdict.first_unmet, Some(Obligation::A));
    let row = tbb::tables::EpisodeRow::of_episode(
        &e,
        "discovery",
        &EpisodeSpec::frozen(&v, &config()),
        "t",
        "n",
    );
    assert_eq!((row.requests, row.total_tokens, row.cost_usd), (0, 0, 0.0));
    assert_eq!(row.stop_reason, StopReason::Unavailable);
    assert_eq!(row.terminal_flag, Some(TerminalFlag::Infeasibility));
}

#[tokio::test]
async fn the_router_sends_its_narrowed_menu_from_the_first_request() {
    let v = harbor(Routing::High);
    let p = Recorder(Mutex::new(Vec::new()));
    let e = run(&v, Menu::Router, &p).await;
    let sent = p.0.lock().expect("lock").clone();
    assert_eq!(sent.len(), 1);
    let names: Vec<String> = sent[0].tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, visible(&v, Menu::Router));
    assert!(names.len() < 10);
    assert!(e.verdict.obligations.ok_a);
    assert_eq!(e.transcript.offered.as_ref(), Some(&names));
    // The fixed menu stores no offered list: its transcripts are as before.
    let fixed = run(&v, Menu::Fixed, &Recorder(Mutex::new(Vec::new()))).await;
    assert!(fixed.transcript.offered.is_none());
}

/// The shipped manifest, cut to four families (three intents, both write and no-write
/// clusters) and two configurations, in a scratch directory.
fn scratch_study() -> tempfile::TempDir {
    let dir = common::scratch();
    let text = std::fs::read_to_string(root().join("manifests/discovery.toml")).expect("read");
    let small = text
        .replace(
            "splits = [\"core\"]",
            "names = [\"overdue-escalation-harbor\", \"overdue-escalation-quayside\", \
             \"phishing-report-triage-kestrel\", \"retention-purge-aurora\"]",
        )
        .replace(
            "all_sim = true",
            "names = [\"sim-aurora-flash\", \"sim-dunlin-max\"]",
        )
        .replace("draws = 10000", "draws = 500");
    std::fs::write(dir.path().join("manifests/discovery.toml"), small).expect("write");
    dir
}

fn tbb(dir: &Path, args: &[&str]) -> std::process::Output {
    common::tbb_in(dir).args(args).output().expect("tbb runs")
}

#[test]
fn the_discovery_study_applies_offline_certifies_and_plans_empty() {
    let dir = scratch_study();
    let ok = |out: &std::process::Output| {
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{all}");
        all
    };
    let m = "manifests/discovery.toml";
    ok(&tbb(dir.path(), &["apply", m]));
    assert!(dir.path().join("lockfiles/discovery.lock").exists());
    let plan = ok(&tbb(dir.path(), &["plan", m]));
    assert!(plan.contains("No changes"), "{plan}");
    // Every verdict, availability included, re-derives from the stored responses.
    let certify = ok(&tbb(dir.path(), &["certify", m]));
    assert!(certify.contains("0 failed"), "{certify}");
    let outputs = dir.path().join("outputs/discovery");
    let (batches, _) =
        tbb::tables::read_table(&outputs.join("discovery.parquet")).expect("discovery table");
    let rows = DiscoveryRow::from_batches(&batches).expect("the discovery table's layout");
    // 4 arms × (8 statistics, or 7 when no R-high episode is available) × 3 units.
    assert!(rows.len() >= 4 * 7 * 3, "{}", rows.len());
    // Every arm has its R contrast of ITT success under the primary unit.
    let arms: BTreeSet<&str> = rows.iter().map(|r| r.arm.as_str()).collect();
    for arm in arms {
        assert!(
            rows.iter().any(|r| r.arm == arm
                && r.statistic == Statistic::IttSuccess
                && r.r == RLevel::HighMinusLow
                && r.cluster_unit == ClusterUnit::RequiredTools
                && r.p_value.is_some()),
            "{arm}"
        );
    }
    let report = std::fs::read_to_string(outputs.join("report.md")).expect("report");
    assert!(report.contains("## Discovery"), "{report}");
    assert!(report.contains("Paper"), "{report}");
    // `--locked` accepts the lockfile the apply wrote.
    ok(&tbb(dir.path(), &["apply", m, "--locked"]));
}
