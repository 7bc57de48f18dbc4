//! The episode loop under the frozen contract, driven by scripted in-process providers:
//! each ending of the contract, lanes, omissions and byte-exact transcript rebuilds.

use std::path::Path;
use std::sync::Mutex;

use serde_json::{json, Value};
use tbb::compile::{compile, Cell, Encoding, Variant, Workflow};
use tbb::family::FamilySet;
use tbb::grade::trace::{InfraCause, StopReason};
use tbb::grade::{grade, Obligation, TerminalFlag};
use tbb::harness::{run_episode, ArmForm, Episode, EpisodeSpec, Menu, Prompts};
use tbb::provider::{
    BoxFuture, ChatRequest, ChatResponse, Configuration, Finish, Message, Provider, ProviderError,
    ReasoningSource, ToolCall, Usage,
};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn variant(family: &str, cell: Cell) -> Variant {
    let set = FamilySet::load(&root().join("families")).expect("families load");
    compile(set.get(family).expect("family"), &cell).expect("compiles")
}

fn config(extra: &str) -> Configuration {
    let text = format!(
        "name = \"scripted\"\norganization = \"test\"\nprovider = \"openai\"\nmodel = \"scripted-1\"\nprices = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\nretry = {{ max_attempts = 1, base_delay_ms = 1, max_delay_ms = 1, retry_on = [] }}\n{extra}"
    );
    toml::from_str(&text).expect("config parses")
}

fn prompts() -> Prompts {
    Prompts::load(&root().join("prompts")).expect("prompts load")
}

/// A provider that answers each request with `script(request, turn)` and keeps every
/// request it saw.
struct Scripted<F> {
    script: F,
    seen: Mutex<Vec<ChatRequest>>,
}

impl<F> Scripted<F>
where
    F: Fn(&ChatRequest, usize) -> Result<ChatResponse, ProviderError> + Send + Sync,
{
    fn new(script: F) -> Self {
        Scripted {
            script,
            seen: Mutex::new(Vec::new()),
        }
    }
    fn requests(&self) -> Vec<ChatRequest> {
        self.seen.lock().expect("lock").clone()
    }
}

impl<F> Provider for Scripted<F>
where
    F: Fn(&ChatRequest, usize) -> Result<ChatResponse, ProviderError> + Send + Sync,
{
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        let turn = {
            let mut seen = self.seen.lock().expect("lock");
            seen.push(request.clone());
            seen.len() - 1
        };
        let out = (self.script)(request, turn);
        Box::pin(async move { out })
    }
}

fn usage() -> Option<Usage> {
    Some(Usage {
        input_tokens: 1000,
        cached_tokens: 0,
        output_tokens: 50,
        reasoning_tokens: None,
        reasoning_source: ReasoningSource::Unknown,
    })
}

fn call(id: usize, tool: &str, args: &Value) -> ChatResponse {
    ChatResponse {
        text: None,
        tool_calls: vec![ToolCall {
            id: format!("c{id}"),
            name: tool.into(),
            arguments: args.to_string(),
        }],
        finish: Finish::ToolCalls,
        finish_raw: "tool_calls".into(),
        usage: usage(),
        usage_error: None,
        violation: None,
        http_status: None,
        raw: json!({}),
    }
}

fn text(t: &str, finish: Finish) -> ChatResponse {
    ChatResponse {
        text: Some(t.into()),
        tool_calls: vec![],
        finish,
        finish_raw: format!("{finish:?}"),
        usage: usage(),
        usage_error: None,
        violation: None,
        http_status: None,
        raw: json!({}),
    }
}

/// Follows the reference program, then answers.
fn reference_script(
    v: &Variant,
) -> impl Fn(&ChatRequest, usize) -> Result<ChatResponse, ProviderError> + Send + Sync {
    let steps: Vec<(String, Value)> = v
        .reference_program
        .steps
        .iter()
        .map(|s| (s.call.tool.clone(), s.call.arguments.clone()))
        .collect();
    let answer = v.answer_text();
    move |_, turn| {
        Ok(match steps.get(turn) {
            Some((tool, args)) => call(turn, tool, args),
            None => text(&answer, Finish::Stop),
        })
    }
}

/// Runs an episode and checks that its stored transcript gives back the same trace
/// (and so the same verdict) offline.
async fn run(v: &Variant, cfg: &Configuration, lane: Menu, p: &dyn Provider) -> Episode {
    let spec = EpisodeSpec {
        arm: ArmForm {
            menu: lane,
            ..ArmForm::baseline()
        },
        ..EpisodeSpec::frozen(v, cfg)
    };
    let e = run_episode(p, &spec, &prompts(), None).await;
    let stored = serde_json::to_string(&e.transcript).expect("serialises");
    let back: tbb::harness::transcript::Transcript = serde_json::from_str(&stored).expect("parses");
    assert_eq!(
        back.trace(&e.blobs, v).as_ref(),
        Some(&e.trace),
        "the transcript rebuilds the trace"
    );
    e
}
const HARBOR: &str = "overdue-escalation-harbor";

#[tokio::test]
async fn the_reference_program_succeeds_and_regrades_identically() {
    let v = variant(HARBOR, Cell::new(128, Workflow::High, Encoding::Linked));
    let cfg = config("");
    let p = Scripted::new(reference_script(&v));
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert!(e.verdict.vts, "{:?}", e.verdict);
    assert_eq!(e.trace.stop, StopReason::Answer);
    assert_eq!(grade(&v, &e.trace), e.verdict);
    assert_eq!(e.verdict.calls, v.certified_min_calls);
    let requests = p.requests();
    // The system prompt, then the rendered request; native tools; the contract's settings.
    assert!(matches!(&requests[0].messages[0], Message::System { .. }));
    assert_eq!(
        requests[0].messages[1],
        Message::User {
            content: v.user_request.clone()
        }
    );
    assert_eq!(requests[0].max_completion_tokens, 1024);
    assert_eq!(requests[0].sampling.parallel_tool_calls, Some(false));
    assert!(requests[0].sampling.seed.is_some() && requests[0].sampling.temperature.is_some());
    assert!(e.omitted.is_empty());
}

#[tokio::test]
async fn the_routed_lane_narrows_to_operational_tools_after_the_first_operational_call() {
    let v = variant(HARBOR, Cell::new(128, Workflow::Low, Encoding::Raw));
    for (lane, later) in [
        (Menu::Routed, v.operational_tools.len()),
        (Menu::Fixed, 128),
    ] {
        let p = Scripted::new(reference_script(&v));
        let e = run(&v, &config(""), lane, &p).await;
        assert!(e.verdict.vts);
        let sizes: Vec<usize> = p.requests().iter().map(|r| r.tools.len()).collect();
        assert_eq!(sizes[0], 128);
        assert!(
            sizes[1..].iter().all(|&n| n == later),
            "{lane:?}: {sizes:?}"
        );
    }
}

#[tokio::test]
async fn schema_exposures_count_every_schema_sent() {
    let v = variant(HARBOR, Cell::new(128, Workflow::Low, Encoding::Raw));
    let cfg = config("");
    let mut by_lane = Vec::new();
    for lane in [Menu::Routed, Menu::Fixed] {
        let p = Scripted::new(reference_script(&v));
        let e = run(&v, &cfg, lane, &p).await;
        let spec = EpisodeSpec {
            arm: ArmForm {
                menu: lane,
                ..ArmForm::baseline()
            },
            ..EpisodeSpec::frozen(&v, &cfg)
        };
        let row = tbb::tables::EpisodeRow::of_episode(&e, "capacity", &spec, "b3:t", "k");
        let sent: usize = p.requests().iter().map(|r| r.tools.len()).sum();
        assert_eq!(row.schema_exposures, sent as u64, "{lane:?}");
        by_lane.push((row.requests, row.schema_exposures));
    }
    let full = |requests: u32| u64::from(requests) * 128;
    // Routed: narrowed after the first operational call, so fewer than requests × v.
    let (requests, routed) = by_lane[0];
    assert!(requests > 1 && routed < full(requests), "{by_lane:?}");
    // Fixed: the full menu with every request.
    let (requests, fixed) = by_lane[1];
    assert_eq!(fixed, full(requests));

    // A request whose send fails has no turn in the trace, but its schemas were sent.
    let first = v.reference_program.steps[0].call.clone();
    let p = Scripted::new(move |_, t| match t {
        0 => Ok(call(0, &first.tool, &first.arguments)),
        _ => Err(ProviderError::Http {
            status: 503,
            body: "down".into(),
            retry_after: None,
        }),
    });
    let e = run(&v, &cfg, Menu::Fixed, &p).await;
    assert_eq!(e.trace.stop, StopReason::InfraFailure);
    assert_eq!((p.requests().len(), e.trace.turns.len()), (2, 1));
    let spec = EpisodeSpec {
        arm: ArmForm {
            menu: Menu::Fixed,
            ..ArmForm::baseline()
        },
        ..EpisodeSpec::frozen(&v, &cfg)
    };
    let row = tbb::tables::EpisodeRow::of_episode(&e, "capacity", &spec, "b3:t", "k");
    assert_eq!((row.requests, row.schema_exposures), (2, 256));
}

#[tokio::test]
async fn omitted_request_fields_are_not_sent_and_are_recorded() {
    let v = variant(HARBOR, Cell::new(8, Workflow::Low, Encoding::Raw));
    let cfg = config("profile = { omit = [\"seed\", \"temperature\"] }");
    let p = Scripted::new(reference_script(&v));
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    let r = &p.requests()[0];
    assert_eq!((r.sampling.seed, r.sampling.temperature), (None, None));
    assert_eq!(r.sampling.parallel_tool_calls, Some(false));
    assert_eq!(e.omitted.len(), 2);
}

fn record(e: &Episode) -> (Option<Obligation>, Option<TerminalFlag>) {
    (e.verdict.first_unmet, e.verdict.terminal_flag)
}

#[tokio::test]
async fn each_ending_of_the_contract_gets_its_failure_record() {
    let v = variant(HARBOR, Cell::new(8, Workflow::High, Encoding::Raw));
    let cfg = config("");
    let first = v.reference_program.steps[0].call.clone();
    let steps = v.reference_program.steps.clone();

    // Cut at the cap before any call: reasoning only, every completion token spent.
    let cut = |output_tokens: u64| ChatResponse {
        text: None,
        finish: Finish::Length,
        usage: usage().map(|u| Usage { output_tokens, ..u }),
        ..text("", Finish::Length)
    };
    let cap = u64::from(EpisodeSpec::frozen(&v, &cfg).completion_cap);
    let p = Scripted::new(move |_, _| Ok(cut(cap)));
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(
        record(&e),
        (Some(Obligation::S), Some(TerminalFlag::Truncation))
    );
    assert!(e.verdict.truncated_before_first_call);
    assert_eq!(p.requests().len(), 1);

    // Stopped for length short of the cap: the server's context ended it, not the cap.
    // The model's record is not a truncation; the episode is an infrastructure failure.
    let p = Scripted::new(move |_, _| Ok(cut(cap - 1)));
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(e.trace.stop, StopReason::InfraFailure);
    let infra = e.trace.infra.as_ref().map(|i| i.cause);
    assert_eq!(infra, Some(InfraCause::ContextExceeded));
    assert_ne!(e.verdict.terminal_flag, Some(TerminalFlag::Truncation));
    assert_eq!(p.requests().len(), 1);

    // Two tool calls in one response: a contract break, neither executed.
    let p = Scripted::new(|_, _| {
        let mut r = call(0, &first.tool, &first.arguments);
        r.tool_calls.push(r.tool_calls[0].clone());
        Ok(r)
    });
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(
        record(&e),
        (Some(Obligation::S), Some(TerminalFlag::ContractBreak))
    );
    assert_eq!(e.verdict.calls, 0);

    // Repeating the first search wastes calls until the program cannot finish in time.
    let p = Scripted::new(|_, t| Ok(call(t, &first.tool, &first.arguments)));
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(e.trace.stop, StopReason::Infeasible);
    assert_eq!(
        record(&e),
        (Some(Obligation::P), Some(TerminalFlag::Infeasibility))
    );
    // 7 steps, limit 9: after 4 calls, 6 steps remain and 5 calls are left.
    assert_eq!(e.verdict.calls, 4);

    // After the whole program, repeating the write is a second state change: success
    // is impossible, and the episode stops right after it.
    let extra = steps.clone();
    let p = Scripted::new(move |_, t| {
        let s = &extra[t.min(extra.len() - 1)];
        Ok(call(t, &s.call.tool, &s.call.arguments))
    });
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(e.trace.stop, StopReason::Infeasible);
    assert_eq!(e.verdict.calls as usize, steps.len() + 1);
    assert_eq!(p.requests().len(), steps.len() + 1);
    assert_eq!(
        record(&e),
        (Some(Obligation::Q), Some(TerminalFlag::Infeasibility))
    );

    // After the whole program, more reads run into the call limit.
    let extra = steps.clone();
    let p = Scripted::new(move |_, t| {
        let s = extra.get(t).unwrap_or(&extra[extra.len() - 2]);
        Ok(call(t, &s.call.tool, &s.call.arguments))
    });
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(e.trace.stop, StopReason::CallLimit);
    assert_eq!(
        record(&e),
        (Some(Obligation::Q), Some(TerminalFlag::BudgetOrCallLimit))
    );

    // Empty responses are nudged, and use up the turn limit.
    let p = Scripted::new(|_, _| {
        Ok(ChatResponse {
            text: None,
            ..text("", Finish::Stop)
        })
    });
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(e.trace.stop, StopReason::TurnLimit);
    assert_eq!(p.requests().len() as u32, v.turn_limit);
    assert_eq!(
        record(&e),
        (Some(Obligation::S), Some(TerminalFlag::TurnLimit))
    );
    assert!(matches!(
        p.requests()[1].messages.last(),
        Some(Message::User { .. })
    ));

    // Reported usage over the budget.
    let p = Scripted::new(|_, t| {
        let mut r = call(t, &first.tool, &first.arguments);
        r.usage = Some(Usage {
            input_tokens: 130_000,
            ..usage().expect("usage")
        });
        Ok(r)
    });
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(e.trace.stop, StopReason::BudgetExceeded);
    assert_eq!(
        record(&e),
        (Some(Obligation::S), Some(TerminalFlag::BudgetOrCallLimit))
    );

    // A wrong answer.
    let p = Scripted::new(|_, _| Ok(text("{\"decision\": \"hold\"}", Finish::Stop)));
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(
        record(&e),
        (Some(Obligation::S), Some(TerminalFlag::WrongConclusion))
    );

    // Missing usage, and a failed request: infrastructure failures.
    let p = Scripted::new(|_, _| {
        Ok(ChatResponse {
            usage: None,
            ..text("{}", Finish::Stop)
        })
    });
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(e.trace.stop, StopReason::InfraFailure);
    assert!(e.verdict.infra_failure);
    assert_eq!(
        e.verdict.infra.as_ref().map(|i| (i.cause, i.attempts)),
        Some((InfraCause::BadUsage, 1))
    );
    let p = Scripted::new(|_, _| {
        Err(ProviderError::Http {
            status: 503,
            body: "down".into(),
            retry_after: None,
        })
    });
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert!(e.verdict.infra_failure);
    assert_eq!(
        record(&e),
        (Some(Obligation::S), Some(TerminalFlag::InfraFailure))
    );
    assert_eq!(
        e.verdict.infra.as_ref().map(|i| (i.cause, i.http_status)),
        Some((InfraCause::ServerError, Some(503)))
    );

    // Invalid argument strings are executed as written and never repaired.
    let bad = first.clone();
    let p = Scripted::new(move |_, t| {
        Ok(if t == 0 {
            ChatResponse {
                tool_calls: vec![ToolCall {
                    id: "x".into(),
                    name: bad.tool.clone(),
                    arguments: "{\"query\": ".into(),
                }],
                ..call(0, &bad.tool, &bad.arguments)
            }
        } else {
            text("{}", Finish::Stop)
        })
    });
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    assert_eq!(e.trace.turns[0].executed[0].arguments, "{\"query\": ");
    assert!(e.trace.turns[0].executed[0]
        .observation
        .contains("invalid_arguments"));
}

#[tokio::test]
async fn a_menu_without_a_required_tool_sends_nothing() {
    let mut v = variant(HARBOR, Cell::new(8, Workflow::Low, Encoding::Raw));
    let required = v.required_tools()[0].clone();
    v.menu.retain(|t| t.name != required);
    let p = Scripted::new(|_, _| Ok(text("{}", Finish::Stop)));
    let e = run(&v, &config(""), Menu::Routed, &p).await;
    assert!(p.requests().is_empty());
    assert_eq!(e.trace.stop, StopReason::Unavailable);
    assert_eq!(
        record(&e),
        (Some(Obligation::A), Some(TerminalFlag::Infeasibility))
    );
}

#[tokio::test]
async fn every_request_rebuilds_byte_for_byte_from_the_transcript() {
    for lane in [Menu::Routed, Menu::Fixed] {
        let v = variant(HARBOR, Cell::new(128, Workflow::High, Encoding::Compact));
        let p = Scripted::new(reference_script(&v));
        let e = run(&v, &config(""), lane, &p).await;
        let sent = p.requests();
        assert_eq!(e.transcript.requests.len(), sent.len());
        for (i, r) in sent.iter().enumerate() {
            let rebuilt = e.transcript.rebuild(i, &e.blobs).expect("rebuilds");
            assert_eq!(
                serde_json::to_string(&rebuilt).ok(),
                serde_json::to_string(r).ok()
            );
            assert_eq!(
                e.trace.turns[i].request.body_ref.as_ref(),
                e.transcript.body_refs().get(i)
            );
        }
        // Menus and the system prompt are stored once, not per request.
        assert!(e.blobs.blobs.len() <= 3, "{}", e.blobs.blobs.len());
    }
}

#[tokio::test]
async fn an_episode_transcript_costs_under_10_kib_compressed() {
    for (family, cell) in [
        (HARBOR, Cell::new(128, Workflow::High, Encoding::Linked)),
        (HARBOR, Cell::new(128, Workflow::High, Encoding::Compact)),
        (
            "customer-reply-routing-marigold",
            Cell::new(128, Workflow::High, Encoding::Raw),
        ),
    ] {
        let v = variant(family, cell);
        for lane in [Menu::Routed, Menu::Fixed] {
            let p = Scripted::new(reference_script(&v));
            let e = run(&v, &config(""), lane, &p).await;
            let stored = serde_json::to_vec(&e.transcript).expect("serialises");
            let compressed = zstd::bulk::compress(&stored, 3).expect("compresses");
            eprintln!(
                "{family} {lane:?}: {} bytes, {} compressed",
                stored.len(),
                compressed.len()
            );
            assert!(
                compressed.len() < 10 * 1024,
                "{family} {lane:?}: {} bytes raw, {} compressed",
                stored.len(),
                compressed.len()
            );
        }
    }
}

#[tokio::test]
async fn an_episode_row_fills_the_episodes_table_contract() {
    let v = variant(HARBOR, Cell::new(8, Workflow::High, Encoding::Raw));
    let cfg = config("");
    let p = Scripted::new(reference_script(&v));
    let e = run(&v, &cfg, Menu::Routed, &p).await;
    let spec = EpisodeSpec::frozen(&v, &cfg);
    let row =
        tbb::tables::EpisodeRow::of_episode(&e, "capacity", &spec, "b3:transcript", "node-key");
    assert!(row.vts && row.ok.iter().all(|&ok| ok));
    assert_eq!(row.total_tokens, row.prompt_tokens + row.completion_tokens);
    assert_eq!(row.calls, v.certified_min_calls);
    let batch = tbb::tables::rows::episodes(&[row]).expect("builds");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("episodes.parquet");
    tbb::tables::write_table(&path, &batch, &tbb::tables::Provenance::default()).expect("writes");
    let (back, _) = tbb::tables::read_table(&path).expect("reads");
    let columns = "study, configuration, organization, model, route, lane, repair, completion_cap, repeat, variant_id, family, intent, v, w, d, r, depth, vts, ok_a, ok_s, ok_p, ok_q, ok_e, ok_x, ok_g, ok_b, ok_c, first_unmet, terminal_flag, truncated, truncated_before_first_call, calls, requests, schema_exposures, turns, prompt_tokens, completion_tokens, reasoning_tokens, total_tokens, cost_usd, wall_ms, infra_failure, stop_reason, episode_key, transcript_ref, node_key";
    let schema = back[0].schema();
    for c in columns.split(", ") {
        assert!(schema.field_with_name(c).is_ok(), "missing column {c}");
    }
    assert_eq!(back[0].num_rows(), 1);
}

/// A script behind a box, so providers can hold one without a type parameter.
type BoxedScript =
    Box<dyn Fn(&ChatRequest, usize) -> Result<ChatResponse, ProviderError> + Send + Sync>;

/// Counts requests in flight; each takes a few milliseconds.
struct Slow {
    inner: Scripted<BoxedScript>,
    in_flight: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
}

impl Provider for Slow {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            let now = self.in_flight.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(now, SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let out = self.inner.chat(request).await;
            self.in_flight.fetch_sub(1, SeqCst);
            out
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_on_one_route_respect_its_concurrency_limit() {
    let v = variant(HARBOR, Cell::new(8, Workflow::Low, Encoding::Raw));
    let prompts = prompts();
    for limit in [1u32, 2] {
        let cfg = config(&format!("concurrency = {limit}"));
        let answer = v.answer_text();
        let provider = Slow {
            inner: Scripted::new(Box::new(move |_, _| Ok(text(&answer, Finish::Stop)))),
            in_flight: Default::default(),
            most: Default::default(),
        };
        let routes = tbb::provider::retry::RouteLimits::default();
        let spec = EpisodeSpec::frozen(&v, &cfg);
        let runs = (0..6).map(|_| run_episode(&provider, &spec, &prompts, Some(&routes)));
        futures_join_all(runs).await;
        assert_eq!(
            provider.most.load(std::sync::atomic::Ordering::SeqCst),
            limit as usize
        );
    }
}

/// Polls futures concurrently on the current task (no extra dependency needed).
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    let mut out: Vec<Option<F::Output>> = (0..set.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

#[test]
fn the_episode_key_ignores_concurrency_but_not_the_configuration() {
    let v = variant(HARBOR, Cell::new(8, Workflow::Low, Encoding::Raw));
    let p = prompts();
    let key = |extra: &str| tbb::harness::episode_key(&EpisodeSpec::frozen(&v, &config(extra)), &p);
    assert_eq!(key(""), key("concurrency = 16"));
    assert_ne!(key(""), key("profile = { omit = [\"seed\"] }"));
    assert_ne!(key(""), key("timeout_ms = 1000"));
}

/// The episode key as first written: blake3 of a `serde_json::Value`'s text.
fn episode_key_by_value(spec: &EpisodeSpec<'_>, p: &Prompts) -> String {
    let config = tbb::provider::Configuration {
        speed: None,
        ..spec.config.identity()
    };
    let mut input = json!({
        "kind": "episode/1",
        "variant": spec.variant.variant_hash,
        "config": config,
        "lane": spec.arm.menu,
        "prompt": tbb::harness::Arm::system_prompt(&spec.arm, p),
        "nudge": p.nudge,
        "completion_cap": spec.completion_cap,
        "episode_budget": spec.episode_budget,
        "repeat": spec.repeat,
    });
    if spec.arm.delivery != tbb::harness::Delivery::Native {
        input["delivery"] = json!(spec.arm.delivery);
    }
    if spec.arm.actor != tbb::harness::Actor::Model {
        input["actor"] = json!(spec.arm.actor);
    }
    blake3::hash(input.to_string().as_bytes())
        .to_hex()
        .to_string()
}

#[test]
fn the_episode_key_hashes_the_same_bytes_as_its_json_value() {
    let v = variant(HARBOR, Cell::new(8, Workflow::Low, Encoding::Raw));
    let p = prompts();
    let plain = config("");
    let timed = config(
        "speed = { first_token_ms = 5.0, prefill_tokens_per_second = 100.0, output_tokens_per_second = 10.0 }",
    );
    let arms = [
        ArmForm::baseline(),
        ArmForm {
            menu: Menu::Retrieval { k: 16 },
            prompt: tbb::harness::PromptVariant::Workflow,
            ..ArmForm::baseline()
        },
        ArmForm {
            delivery: tbb::harness::Delivery::Canonical,
            actor: tbb::harness::Actor::Controller,
            ..ArmForm::baseline()
        },
    ];
    let mut keys = std::collections::BTreeSet::new();
    // Alternating configurations, so that the per-thread memo misses and hits.
    for cfg in [&plain, &timed, &plain] {
        for arm in arms {
            for repeat in [0, 7] {
                let spec = EpisodeSpec {
                    arm,
                    repeat,
                    completion_cap: 256,
                    ..EpisodeSpec::frozen(&v, cfg)
                };
                let key = tbb::harness::episode_key(&spec, &p);
                assert_eq!(
                    key,
                    episode_key_by_value(&spec, &p),
                    "{arm:?} repeat {repeat}"
                );
                keys.insert(key);
            }
        }
    }
    // The speed stays out of the key; everything else varied gives a new key.
    assert_eq!(keys.len(), arms.len() * 2);
}

#[tokio::test]
async fn rows_record_the_sampling_fields_each_episode_sent() {
    let v = variant(HARBOR, Cell::new(8, Workflow::High, Encoding::Raw));
    let answer = tbb::grade::reference::reference_trace(&v)
        .final_answer
        .expect("the reference answers");
    // The simulated panel sends nothing over a wire: its row shows what its
    // configuration would send (every field, the profile omitting none).
    let catalogue = tbb::provider::Catalogue::load(&root().join("manifests/configurations.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let sim = catalogue
        .get("sim-dunlin-max")
        .expect("the simulated configuration");
    let provider = tbb::provider::build(sim).unwrap_or_else(|e| panic!("{e}"));
    let e = run(&v, sim, Menu::Routed, provider.as_ref()).await;
    let spec = EpisodeSpec::frozen(&v, sim);
    let row = tbb::tables::EpisodeRow::of_episode(&e, "s", &spec, "t", "n");
    let first = &e.transcript.wire_sampling;
    assert_eq!(
        (
            row.sent_temperature,
            row.sent_seed.is_some(),
            row.sent_parallel_tool_calls
        ),
        (Some(sim.profile.temperature), true, Some(false)),
        "{first:?}"
    );
    // A profile's omissions show as nulls.
    for (omit, expected) in [
        ("[]", (true, true, true)),
        ("[\"temperature\"]", (false, true, true)),
        ("[\"seed\", \"parallel_tool_calls\"]", (true, false, false)),
    ] {
        let cfg = config(&format!("profile = {{ omit = {omit} }}"));
        let reply = answer.clone();
        let p = Scripted::new(move |_, _| Ok(text(&reply, Finish::Stop)));
        let e = run(&v, &cfg, Menu::Routed, &p).await;
        let row =
            tbb::tables::EpisodeRow::of_episode(&e, "s", &EpisodeSpec::frozen(&v, &cfg), "t", "n");
        assert_eq!(
            (
                row.sent_temperature.is_some(),
                row.sent_seed.is_some(),
                row.sent_parallel_tool_calls.is_some()
            ),
            expected,
            "{omit}"
        );
        assert_eq!(row.sent_seed, p.requests()[0].sampling.seed);
    }
}
