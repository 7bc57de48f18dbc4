//! The public-handoff controller over all 24 held-out intents at 30 required calls:
//! what it does depends on the public records only, it follows the hand-offs in order,
//! and it stops safely — a graded ending, no guessed call — on an invalid or empty
//! hand-off. Its calls run through the one episode loop; the model behind it is a
//! scripted provider that makes the reference program's next call whenever it is
//! asked (the first search; a change of state the decision calls for), then answers.

use std::path::Path;

use serde_json::{json, Value};
use tbb::compile::store::Handoff;
use tbb::compile::{compile, Cell, Encoding, Store, Variant};
use tbb::family::{FamilySet, Split};
use tbb::grade::trace::{Issuer, StopReason};
use tbb::grade::{grade_with_budget, Obligation, TerminalFlag};
use tbb::harness::{run_episode, Actor, ArmForm, Delivery, Episode, EpisodeSpec, Menu, Prompts};
use tbb::provider::{
    BoxFuture, ChatRequest, ChatResponse, Configuration, Finish, Message, Provider, ProviderError,
    ReasoningSource, ToolCall, Usage,
};
use tbb::sandbox::Sandbox;
use tbb_agent::controller::{self, Decision};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One variant of each of the 24 held-out intents at 30 required calls.
fn holdout_at_30(d: Encoding) -> Vec<Variant> {
    let set = FamilySet::load(&root().join("families")).expect("families load");
    let mut seen = std::collections::BTreeSet::new();
    let cell = Cell {
        d,
        ..Cell::frontier(30)
    };
    let variants: Vec<Variant> = set
        .families
        .iter()
        .filter(|f| f.split() == Split::Holdout && seen.insert(f.intent.name().to_string()))
        .map(|f| compile(f, &cell).expect("compiles"))
        .collect();
    assert_eq!(variants.len(), 24, "24 held-out intents");
    variants
}

fn config() -> Configuration {
    toml::from_str(
        "name = \"scripted\"\norganization = \"test\"\nprovider = \"openai\"\n\
         model = \"scripted-1\"\nprices = { input_per_mtok = 1.0, output_per_mtok = 2.0 }\n\
         retry = { max_attempts = 1, base_delay_ms = 1, max_delay_ms = 1, retry_on = [] }\n",
    )
    .expect("config parses")
}

/// A model that makes the reference program's next call (the one after as many calls
/// as the request shows results of), then answers with the reference answer.
struct ReferenceModel {
    steps: Vec<(String, String)>,
    answer: String,
}

impl ReferenceModel {
    fn of(v: &Variant) -> ReferenceModel {
        ReferenceModel {
            steps: v
                .reference_program
                .steps
                .iter()
                .map(|s| (s.call.tool.clone(), s.call.arguments.to_string()))
                .collect(),
            answer: v.answer_text(),
        }
    }
}

impl Provider for ReferenceModel {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        let done = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool { .. }))
            .count();
        let (text, tool_calls, finish) = match self.steps.get(done) {
            Some((name, arguments)) => {
                let call = ToolCall {
                    id: format!("m{done}"),
                    name: name.clone(),
                    arguments: arguments.clone(),
                };
                (None, vec![call], Finish::ToolCalls)
            }
            None => (Some(self.answer.clone()), vec![], Finish::Stop),
        };
        let response = ChatResponse {
            text,
            tool_calls,
            finish,
            finish_raw: format!("{finish:?}"),
            usage: Some(Usage {
                input_tokens: 1000,
                cached_tokens: 0,
                output_tokens: 50,
                reasoning_tokens: None,
                reasoning_source: ReasoningSource::Unknown,
            }),
            usage_error: None,
            violation: None,
            http_status: None,
            raw: json!({}),
        };
        Box::pin(async move { Ok(response) })
    }
}

fn controller_arm(delivery: Delivery) -> ArmForm {
    ArmForm {
        menu: Menu::Fixed,
        actor: Actor::Controller,
        delivery,
        ..ArmForm::baseline()
    }
}

fn run(v: &Variant, arm: ArmForm) -> Episode {
    let config = config();
    let spec = EpisodeSpec {
        arm,
        ..EpisodeSpec::frozen(v, &config)
    };
    let prompts = Prompts::load(&root().join("prompts")).expect("prompts load");
    let provider = ReferenceModel::of(v);
    let episode = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(run_episode(&provider, &spec, &prompts, None));
    // The stored transcript rebuilds the same trace, so `tbb certify` and a regrade
    // see what the loop saw.
    let rebuilt = episode
        .transcript
        .trace(&episode.blobs, v)
        .expect("the transcript rebuilds");
    assert_eq!(rebuilt, episode.trace, "{}", v.family);
    assert_eq!(
        grade_with_budget(v, &rebuilt, spec.episode_budget),
        episode.verdict
    );
    episode
}

/// The controller alone against a sandbox, after the model's first call: its calls.
fn controller_calls(v: &Variant, first: (&str, &str)) -> Vec<(String, String)> {
    let tools: Vec<tbb::provider::ToolSchema> = v
        .menu
        .iter()
        .map(|t| tbb::provider::ToolSchema {
            name: t.name.clone(),
            description: t.description.clone(),
            parameters: t.parameters.clone(),
        })
        .collect();
    let mut sandbox = Sandbox::new(v);
    let mut trail = vec![(
        controller::Issuer::Model,
        first.0.to_string(),
        sandbox.execute(first.0, first.1).observation,
    )];
    let mut calls = Vec::new();
    loop {
        let steps: Vec<controller::Step<'_>> = trail
            .iter()
            .map(|(by, tool, observation)| controller::Step {
                by: *by,
                tool,
                observation,
            })
            .collect();
        match controller::next(&tools, &steps) {
            Decision::Call { tool, arguments } => {
                let observation = sandbox.execute(&tool, &arguments).observation;
                calls.push((tool.clone(), arguments));
                trail.push((controller::Issuer::Controller, tool, observation));
            }
            Decision::AskModel | Decision::Halt(_) => return calls,
        }
        assert!(calls.len() < 100, "the controller does not stop");
    }
}

#[test]
fn the_controllers_calls_do_not_depend_on_the_hidden_program() {
    for v in holdout_at_30(Encoding::Raw) {
        let first = &v.reference_program.steps[0].call;
        let first = (first.tool.clone(), first.arguments.to_string());
        let calls = controller_calls(&v, (&first.0, &first.1));
        assert_eq!(calls.len(), 29, "{}", v.family);
        // Perturb everything hidden — the reference program, the answer, the cited
        // sources, which tools are operational, the certified minimum — and keep the
        // public records and the menu.
        let mut hidden = v.clone();
        hidden.reference_program.steps.reverse();
        for step in &mut hidden.reference_program.steps {
            step.call.arguments = json!({"id": "rec_000000000000"});
        }
        hidden.decision = "something_else".into();
        for (_, value) in &mut hidden.facts {
            *value = json!("perturbed");
        }
        hidden.sources.reverse();
        hidden.sources.push("rec_000000000000".into());
        hidden.operational_tools.clear();
        hidden.certified_min_calls = 2;
        hidden.permitted_change = None;
        assert_eq!(
            controller_calls(&hidden, (&first.0, &first.1)),
            calls,
            "{}",
            v.family
        );
    }
}

/// The hand-off of a record shown in an observation, read with the core's decoder.
fn handoff_in(observation: &str, d: Encoding) -> Option<Value> {
    tbb::sandbox::encoding::decode(d, observation)
        .ok()?
        .first()?
        .next_handoff
        .clone()
}

#[test]
fn the_controller_follows_the_handoffs_in_order_and_the_model_answers() {
    for d in [Encoding::Raw, Encoding::Compact] {
        for v in holdout_at_30(d) {
            let episode = run(&v, controller_arm(Delivery::Native));
            let calls: Vec<_> = episode.trace.executed_calls().collect();
            assert_eq!(episode.trace.stop, StopReason::Answer, "{}", v.family);
            assert!(episode.verdict.vts, "{}: {:?}", v.family, episode.verdict);
            // The model is asked for the first call and the answer, and once more
            // when the task ends in a change of state (which no hand-off names).
            let writes = v.reference_program.steps.len() - 30;
            assert_eq!(episode.trace.turns.len(), 2 + writes, "{}", v.family);
            assert_eq!(calls.len(), 30 + writes, "{}", v.family);
            let by_controller = calls.iter().filter(|c| c.by == Issuer::Controller).count();
            assert_eq!(by_controller, 29, "{}", v.family);
            assert!(calls[0].by == Issuer::Model);
            assert!(calls[1..30].iter().all(|c| c.by == Issuer::Controller));
            // Each search after a read asks for the query that read's hand-off named,
            // on its connector; each read reads what the search before it found.
            for pair in calls[..30].windows(2) {
                let args: Value = serde_json::from_str(&pair[1].arguments).expect("json");
                if let Some(handoff) = handoff_in(&pair[0].observation, d) {
                    assert_eq!(args["query"], handoff["query"], "{}", v.family);
                    assert_eq!(
                        pair[1].tool,
                        format!("{}_search", handoff["connector"].as_str().unwrap_or("")),
                    );
                } else {
                    assert!(pair[0].tool.ends_with("_search"), "{}", pair[0].tool);
                    assert!(pair[0]
                        .observation
                        .contains(args["id"].as_str().unwrap_or("?")));
                }
            }
            // The chain is the reference program, call for call.
            let reference: Vec<(String, Value)> = v
                .reference_program
                .steps
                .iter()
                .map(|s| (s.call.tool.clone(), s.call.arguments.clone()))
                .collect();
            let got: Vec<(String, Value)> = calls
                .iter()
                .map(|c| {
                    (
                        c.tool.clone(),
                        serde_json::from_str(&c.arguments).expect("json"),
                    )
                })
                .collect();
            assert_eq!(got, reference, "{}", v.family);
        }
    }
}

#[test]
fn canonical_delivery_shows_raw_records_and_grades_the_native_trace() {
    for v in holdout_at_30(Encoding::Compact).into_iter().take(4) {
        let native = run(&v, controller_arm(Delivery::Native));
        let canonical = run(&v, controller_arm(Delivery::Canonical));
        // The same calls and verdict; the agent was shown raw records, the trace keeps
        // the sandbox's compact ones.
        let calls = |e: &Episode| -> Vec<(String, String, String)> {
            e.trace
                .executed_calls()
                .map(|c| (c.tool.clone(), c.arguments.clone(), c.observation.clone()))
                .collect()
        };
        assert_eq!(calls(&native), calls(&canonical));
        assert_eq!(native.verdict, canonical.verdict);
        let shown: Vec<String> = canonical
            .transcript
            .requests
            .iter()
            .flat_map(|r| r.appended.iter())
            .filter_map(|m| match m {
                Message::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect();
        assert!(!shown.is_empty());
        // Every list of records (a change of state returns none) is raw.
        let lists: Vec<&String> = shown.iter().filter(|t| t.contains("\"objects\"")).collect();
        assert!(lists.len() >= 30);
        for text in lists {
            assert!(!text.contains("field_dictionary"), "{text}");
            assert!(tbb::sandbox::encoding::decode(Encoding::Raw, text).is_ok());
        }
        assert_eq!(canonical.transcript.delivered_in, Some(Encoding::Raw));
    }
}

#[test]
fn an_invalid_or_empty_handoff_halts_with_a_graded_ending_and_no_guessed_call() {
    type Breakage = fn(&mut Handoff);
    let breakages: [(&str, Breakage); 3] = [
        ("empty query", |h| h.query.clear()),
        ("unknown connector", |h| h.connector = "zzz_nowhere".into()),
        ("a query that finds nothing", |h| {
            h.query = "NO-SUCH-REFERENCE".into();
        }),
    ];
    for v in holdout_at_30(Encoding::Raw) {
        for (what, breakage) in breakages {
            // Break the hand-off of the record the chain reads fifth (call 10).
            let mut broken = v.clone();
            let target = serde_json::from_value::<Value>(
                broken.reference_program.steps[9].call.arguments.clone(),
            )
            .ok()
            .and_then(|a| a["id"].as_str().map(str::to_string))
            .expect("the tenth call reads a record");
            let mut records = broken.store.records.clone();
            let record = records
                .iter_mut()
                .find(|r| r.id == target)
                .expect("the record");
            breakage(record.next_handoff.as_mut().expect("it hands off"));
            broken.store = Store::new(records);
            let episode = run(&broken, controller_arm(Delivery::Native));
            let calls: Vec<_> = episode.trace.executed_calls().collect();
            assert_eq!(
                episode.trace.stop,
                StopReason::ControllerHalt,
                "{} ({what})",
                v.family
            );
            // Nothing was called on the broken hand-off's behalf, except the search
            // it names when that search is well-formed (and then finds nothing).
            let expected = if what == "a query that finds nothing" {
                11
            } else {
                10
            };
            assert_eq!(calls.len(), expected, "{} ({what})", v.family);
            assert_eq!(episode.trace.turns.len(), 1, "the model is not asked again");
            assert!(episode.transcript.controller_halt.is_some());
            assert!(!episode.verdict.vts);
            assert_eq!(
                episode.verdict.terminal_flag,
                Some(TerminalFlag::ContractBreak)
            );
            assert_eq!(episode.verdict.first_unmet, Some(Obligation::P));
        }
    }
}
