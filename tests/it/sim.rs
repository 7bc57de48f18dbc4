//! The simulated panel (`crates/agent/src/sim/`): it reads every request and observation
//! exactly, an error-free parameter set solves every core task (so failures in results
//! come from mechanisms, not from a broken agent), responses are deterministic, the
//! truncation mechanism behaves as the paper's panel does (more at 128 schemas than at
//! 8, mostly gone at a sixteenfold cap). That it cannot see the core is the crate graph's
//! job (`tests/it/wall.rs`).
//!
//! The tests drive the agent through the real episode loop (`tbb::harness::run_episode`)
//! and score it with the real grader: there is no second loop to drift from the
//! contract.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{json, Value as Json};

use tbb::compile::{compile, Cell, Encoding, Variant, Workflow};
use tbb::family::policy::op_phrase;
use tbb::family::{FactType, Family, FamilySet, Split};
use tbb::grade::trace::StopReason;
use tbb::harness::{run_episode, ArmForm, EpisodeSpec, Menu, Prompts};
use tbb::provider::chat::Sampling;
use tbb::provider::{Catalogue, ChatRequest, Finish, Message, ProviderKind, ToolSchema};
use tbb::sandbox::encoding::decode;
use tbb::sandbox::{Sandbox, StateChange};
use tbb_agent::sim::parse::{self, ArgValue, FieldType};
use tbb_agent::sim::{observe, Params, SimAgent};

fn families() -> &'static FamilySet {
    static SET: OnceLock<FamilySet> = OnceLock::new();
    SET.get_or_init(|| match FamilySet::load(Path::new("families")) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    })
}

fn catalogue() -> &'static Catalogue {
    static CAT: OnceLock<Catalogue> = OnceLock::new();
    CAT.get_or_init(
        || match Catalogue::load(Path::new("manifests/configurations.toml")) {
            Ok(c) => c,
            Err(e) => panic!("{e:?}"),
        },
    )
}

fn prompt(name: &str) -> String {
    match std::fs::read_to_string(Path::new("prompts").join(name)) {
        Ok(s) => s.trim_end().to_string(),
        Err(e) => panic!("prompts/{name}: {e}"),
    }
}

fn variant(f: &Family, cell: &Cell) -> Variant {
    match compile(f, cell) {
        Ok(v) => v,
        Err(e) => panic!("{}: {e}", f.name),
    }
}

fn first_cell(f: &Family) -> Cell {
    match f.split() {
        Split::Frontier => Cell::frontier(2),
        _ => Cell::new(8, Workflow::Low, Encoding::Raw),
    }
}

fn schemas(v: &Variant, operational_only: bool) -> Vec<ToolSchema> {
    v.menu
        .iter()
        .filter(|t| !operational_only || t.operational)
        .map(|t| ToolSchema {
            name: t.name.clone(),
            description: t.description.clone(),
            parameters: t.parameters.clone(),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Episodes through the real loop
// ---------------------------------------------------------------------------------------

/// How an episode ended, as these tests ask.
#[derive(Debug, Clone, PartialEq)]
enum Ending {
    Answer(String),
    Truncated { before_first_call: bool },
    CallLimit,
    TurnLimit,
    TwoCalls,
    Other(StopReason),
}

/// An episode of the real loop ([`tbb::harness::run_episode`]), reduced to what these
/// tests read, with the real grader's verdict.
#[derive(Debug, Clone)]
struct Episode {
    ending: Ending,
    calls: u32,
    changes: Vec<StateChange>,
    vts: bool,
}

struct Setup<'a> {
    system: &'a str,
    nudge: &'a str,
    cap: u32,
    routed: bool,
    /// The episode's repeat index: the harness derives the seed from the episode key.
    seed: u32,
    /// The episode budget (the frozen 128,000 unless a test lifts it).
    budget: u64,
}

/// The configuration the harness runs under (its sampling and retry settings); the
/// agent answering is the one given.
fn harness_config() -> &'static tbb::provider::Configuration {
    catalogue()
        .configurations
        .iter()
        .find(|c| c.provider == ProviderKind::Sim)
        .unwrap_or_else(|| panic!("the catalogue has no simulated configuration"))
}

fn run(agent: &SimAgent, v: &Variant, s: &Setup) -> Episode {
    let prompts = Prompts {
        base: s.system.to_string(),
        workflow: s.system.to_string(),
        interface_guide: s.system.to_string(),
        nudge: s.nudge.to_string(),
    };
    let spec = EpisodeSpec {
        arm: ArmForm {
            menu: if s.routed { Menu::Routed } else { Menu::Fixed },
            ..ArmForm::baseline()
        },
        completion_cap: s.cap,
        repeat: s.seed,
        episode_budget: s.budget,
        ..EpisodeSpec::frozen(v, harness_config())
    };
    let rt = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(rt) => rt,
        Err(e) => panic!("{e}"),
    };
    let e = rt.block_on(run_episode(agent, &spec, &prompts, None));
    let last = e.trace.turns.last().map(|t| &t.response);
    let ending = match e.trace.stop {
        StopReason::Answer => Ending::Answer(e.trace.final_answer.clone().unwrap_or_default()),
        StopReason::Truncated => Ending::Truncated {
            before_first_call: e.verdict.truncated_before_first_call,
        },
        StopReason::CallLimit => Ending::CallLimit,
        StopReason::TurnLimit => Ending::TurnLimit,
        StopReason::ContractBreak if last.is_some_and(|r| r.tool_calls.len() > 1) => {
            Ending::TwoCalls
        }
        other => Ending::Other(other),
    };
    // The state the calls left, replayed as the grader does.
    let mut sandbox = Sandbox::new(v);
    for call in e.trace.turns.iter().flat_map(|t| &t.executed) {
        sandbox.execute(&call.tool, &call.arguments);
    }
    Episode {
        ending,
        calls: e.verdict.calls,
        changes: sandbox.changes().to_vec(),
        vts: e.verdict.vts,
    }
}

/// Success by the real grader.
fn solved(_v: &Variant, e: &Episode) -> bool {
    e.vts
}

fn error_free() -> SimAgent {
    SimAgent::with_params("sim-test-oracle", Params::default())
}

// ---------------------------------------------------------------------------------------
// Reading requests and observations
// ---------------------------------------------------------------------------------------

#[test]
fn the_parser_recovers_every_family_request_exactly() {
    let set = families();
    assert!(set.families.len() >= 60);
    for f in &set.families {
        let v = variant(f, &first_cell(f));
        let req = match parse::parse(&v.user_request) {
            Ok(r) => r,
            Err(e) => panic!("{}: {e}\n{}", f.name, v.user_request),
        };
        let def = &f.intent.def;
        assert_eq!(req.route.workspace, f.route.workspace.name, "{}", f.name);
        assert_eq!(req.route.region, f.route.region.name, "{}", f.name);
        assert_eq!(req.route.collection, f.route.collection.name, "{}", f.name);
        assert_eq!(req.start_query, f.case_ref, "{}", f.name);
        let facts: Vec<&str> = def.facts.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(req.facts, facts, "{}", f.name);
        // Policy.
        assert_eq!(req.policy.otherwise, def.policy.otherwise, "{}", f.name);
        assert_eq!(req.policy.rules.len(), def.policy.rules.len(), "{}", f.name);
        for (got, want) in req.policy.rules.iter().zip(&def.policy.rules) {
            assert_eq!(got.label, want.label, "{}", f.name);
            assert_eq!(got.when.len(), want.when.len(), "{}", f.name);
            for (g, w) in got.when.iter().zip(&want.when) {
                assert_eq!(g.fact, w.fact, "{}", f.name);
                assert_eq!(g.op.phrase(), op_phrase(w.op), "{}", f.name);
                assert_eq!(g.value, w.value, "{}", f.name);
            }
        }
        // The parsed policy decides the family's facts as the family does.
        let decided = req
            .policy
            .decide(|k| f.facts.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()));
        assert_eq!(decided, f.decision, "{}", f.name);
        // State change.
        match (&req.state_change, &def.state_change) {
            (None, None) => {}
            (Some(got), Some(want)) => {
                assert_eq!(got.when, want.when, "{}", f.name);
                assert_eq!(got.tool, f.route.tool_name(&want.tool), "{}", f.name);
                let mut expected = Vec::new();
                if let Some(stage) = want.target_stage {
                    let holder = def
                        .facts
                        .iter()
                        .find(|x| x.stage == stage)
                        .map(|x| x.name.clone())
                        .unwrap_or_default();
                    expected.push(("id".to_string(), ArgValue::HolderId(holder)));
                }
                for (k, val) in &want.args {
                    let a = match val.strip_prefix("{fact:").and_then(|r| r.strip_suffix('}')) {
                        Some(fact) => ArgValue::FactValue(fact.to_string()),
                        None if val == "{case_ref}" => ArgValue::Literal(json!(f.case_ref)),
                        None => ArgValue::Literal(json!(val)),
                    };
                    expected.push((k.clone(), a));
                }
                assert_eq!(got.args, expected, "{}", f.name);
            }
            (got, want) => panic!("{}: state change {got:?} vs {want:?}", f.name),
        }
        // Answer schema.
        let types: Vec<(String, FieldType)> = def
            .facts
            .iter()
            .map(|x| {
                let t = match x.fact_type {
                    FactType::String => FieldType::String,
                    FactType::Integer => FieldType::Integer,
                    FactType::Boolean => FieldType::Boolean,
                    FactType::Date => FieldType::Date,
                };
                (x.name.clone(), t)
            })
            .collect();
        assert_eq!(req.schema.fields, types, "{}", f.name);
        assert!(
            req.schema.labels.contains(&def.policy.otherwise),
            "{}",
            f.name
        );
    }
}

#[test]
fn the_observation_reader_decodes_every_encoding() {
    let set = families();
    let mut checked = 0;
    for f in set.split(Split::Core) {
        for d in [
            Encoding::Raw,
            Encoding::Compact,
            Encoding::Typed,
            Encoding::Linked,
        ] {
            let v = variant(f, &Cell::new(8, Workflow::High, d));
            let mut sb = Sandbox::new(&v);
            for step in &v.reference_program.steps {
                let out = sb.execute(&step.call.tool, &step.call.arguments.to_string());
                let Ok(views) = decode(d, &out.observation) else {
                    continue; // a write result
                };
                let observe::Observation::Records {
                    objects, connector, ..
                } = observe::read(&out.observation)
                else {
                    panic!("{} {d:?}: not read as records: {}", f.name, out.observation)
                };
                assert_eq!(objects.len(), views.len());
                for (o, view) in objects.iter().zip(&views) {
                    assert_eq!(o.id, view.id);
                    assert_eq!(o.kind, view.kind);
                    assert_eq!(o.status, view.status);
                    assert_eq!(connector, view.connector);
                    let fields: BTreeMap<String, Json> = o.fields.iter().cloned().collect();
                    assert_eq!(fields, view.fields, "{} {d:?}", f.name);
                    let handoff = o
                        .handoff
                        .as_ref()
                        .map(|h| json!({"connector": h.connector, "query": h.query}));
                    assert_eq!(handoff, view.next_handoff, "{} {d:?}", f.name);
                    checked += 1;
                }
            }
            // Errors and misses are read as such.
            let miss = sb.execute(
                &v.reference_program.steps[0].call.tool,
                r#"{"query":"NO-SUCH-REF"}"#,
            );
            assert!(matches!(
                observe::read(&miss.observation),
                observe::Observation::Records { ref objects, .. } if objects.is_empty()
            ));
            let bad = sb.execute(
                &v.reference_program.steps[1].call.tool,
                r#"{"id":"rec_000000000000"}"#,
            );
            assert_eq!(
                observe::read(&bad.observation),
                observe::Observation::Error {
                    code: "not_found".into()
                }
            );
        }
    }
    assert!(checked > 36 * 4 * 6);
}

// ---------------------------------------------------------------------------------------
// Mechanisms, not luck
// ---------------------------------------------------------------------------------------

#[test]
fn an_error_free_agent_solves_every_core_task_at_every_capacity_cell() {
    let agent = error_free();
    assert!(agent.params().is_error_free());
    let (base, nudge) = (prompt("base.txt"), prompt("nudge.txt"));
    let mut n = 0;
    for f in families().split(Split::Core) {
        for cell in Cell::capacity() {
            let v = variant(f, &cell);
            for routed in [true, false] {
                let e = run(
                    &agent,
                    &v,
                    &Setup {
                        system: &base,
                        nudge: &nudge,
                        cap: 1024,
                        routed,
                        seed: 7,
                        budget: tbb::grade::EPISODE_BUDGET,
                    },
                );
                assert!(
                    solved(&v, &e),
                    "{} at {cell} (routed {routed}): {e:?}\nexpected {}",
                    f.name,
                    v.answer_text()
                );
                assert_eq!(e.calls, v.certified_min_calls, "{} at {cell}", f.name);
                n += 1;
            }
        }
    }
    assert_eq!(n, 36 * 12 * 2);
    // The held-out and frontier families at their study cells too (depths up to 30
    // calls), on the routed menu, with the episode budget lifted: at 30 calls the
    // growing transcript meets the frozen 128,000 tokens before the answer, which is
    // the frontier's finding, not an error of the agent.
    for f in families()
        .families
        .iter()
        .filter(|f| f.split() != Split::Core)
    {
        for cell in tbb::compile::study_cells(f.split()) {
            let v = variant(f, &cell);
            let e = run(
                &agent,
                &v,
                &Setup {
                    system: &base,
                    nudge: &nudge,
                    cap: 1024,
                    routed: true,
                    seed: 9,
                    budget: u64::MAX,
                },
            );
            assert!(solved(&v, &e), "{} at {cell}: {e:?}", f.name);
            assert_eq!(e.calls, v.certified_min_calls, "{} at {cell}", f.name);
        }
    }
}

#[test]
fn the_same_request_gives_the_same_response() {
    let f = families()
        .get("overdue-escalation-harbor")
        .unwrap_or_else(|| panic!("no harbor"));
    let v = variant(f, &Cell::new(128, Workflow::High, Encoding::Compact));
    let request = |seed| ChatRequest {
        model: "sim".into(),
        messages: vec![
            Message::System {
                content: prompt("base.txt"),
            },
            Message::User {
                content: v.user_request.clone(),
            },
        ],
        tools: schemas(&v, false),
        max_completion_tokens: 1024,
        sampling: Sampling {
            temperature: Some(0.0),
            seed: Some(seed),
            parallel_tool_calls: Some(false),
        },
    };
    for c in &catalogue().configurations {
        if c.provider != ProviderKind::Sim {
            continue;
        }
        let a = tbb::provider::sim_agent(c).unwrap_or_else(|e| panic!("{e}"));
        let b = tbb::provider::sim_agent(c).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.respond(&request(1)), b.respond(&request(1)), "{}", c.name);
        assert_eq!(a.respond(&request(1)), a.respond(&request(1)), "{}", c.name);
        let u = a
            .respond(&request(1))
            .usage
            .unwrap_or_else(|| panic!("usage"));
        assert!(
            u.input_tokens > 5_000,
            "{}: 128 schemas are many tokens",
            c.name
        );
    }
}

fn with(params: Params) -> SimAgent {
    SimAgent::with_params("sim-test-mechanism", params)
}

fn setup<'a>(system: &'a str, nudge: &'a str) -> Setup<'a> {
    Setup {
        system,
        nudge,
        cap: 1024,
        routed: true,
        seed: 3,
        budget: tbb::grade::EPISODE_BUDGET,
    }
}

fn harbor(cell: Cell) -> Variant {
    let f = families()
        .get("overdue-escalation-harbor")
        .unwrap_or_else(|| panic!("no harbor"));
    variant(f, &cell)
}

/// What each prompt asks, as the simulated agent understands it, file by file. The
/// repairs study's effects rest on it, so a rewritten prompt that no longer asks what
/// it did fails here first. A new file in `prompts/` fails until it is listed here.
#[test]
fn every_prompt_asks_the_simulated_agent_what_it_is_written_to_ask() {
    use tbb_agent::sim::instructions::{Explained, Instructions};
    let expected: BTreeMap<&str, Instructions> = [
        ("base.txt", Instructions::default()),
        ("nudge.txt", Instructions::default()),
        (
            "workflow.txt",
            Instructions {
                checks_per_call: 4,
                explained: Explained::default(),
            },
        ),
        (
            "interface_guide.txt",
            Instructions {
                checks_per_call: 0,
                explained: Explained::ALL,
            },
        ),
    ]
    .into_iter()
    .collect();
    let mut files: Vec<String> = std::fs::read_dir("prompts")
        .unwrap_or_else(|e| panic!("prompts/: {e}"))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".txt"))
        .collect();
    files.sort();
    let listed: Vec<&str> = expected.keys().copied().collect();
    assert_eq!(files, listed, "list what each prompt asks here");
    for (file, asked) in &expected {
        assert_eq!(Instructions::read(&prompt(file)), *asked, "prompts/{file}");
    }
}

/// Rewordings of the workflow prompt's instruction that mean the same ask the same,
/// and the same words without the instruction's meaning ask nothing.
#[test]
fn a_reworded_instruction_asks_the_same() {
    use tbb_agent::sim::instructions::Instructions;
    let workflow = prompt("workflow.txt");
    let original = "Before each tool request, check privately";
    assert!(
        workflow.contains(original),
        "prompts/workflow.txt changed its wording"
    );
    let asked = Instructions::read(&workflow);
    for reworded in [
        "Prior to calling any tool, check privately",
        "Before every tool call, verify privately",
        "Ahead of each function call, confirm privately",
        "Each time before you use a tool, make sure privately of",
    ] {
        let text = workflow.replacen(original, reworded, 1);
        assert_eq!(Instructions::read(&text), asked, "{reworded}");
    }
    for meaningless in [
        "After each tool request, check privately",
        "Before each answer, check privately",
    ] {
        let text = workflow.replacen(original, meaningless, 1);
        assert_eq!(
            Instructions::read(&text).checks_per_call,
            0,
            "{meaningless}"
        );
    }
}

/// Each error mechanism, switched on alone at full strength, produces its own failure;
/// together with the error-free test above, this shows the failures come from the
/// mechanisms.
#[test]
fn each_mechanism_alone_produces_its_failure() {
    let (base, nudge) = (prompt("base.txt"), prompt("nudge.txt"));
    let s = setup(&base, &nudge);
    let low = harbor(Cell::new(8, Workflow::Low, Encoding::Raw));
    let high = harbor(Cell::new(8, Workflow::High, Encoding::Raw));

    // Two calls in one response.
    let e = run(
        &with(Params {
            double_call: 1.0,
            ..Params::default()
        }),
        &low,
        &s,
    );
    assert_eq!(e.ending, Ending::TwoCalls);

    // An argument string that is not JSON, on every call: the agent never gets a record,
    // and the harness stops as soon as the calls left cannot complete the program.
    let e = run(
        &with(Params {
            invalid_json: 1.0,
            ..Params::default()
        }),
        &low,
        &s,
    );
    assert_eq!(e.ending, Ending::Other(StopReason::Infeasible), "{e:?}");

    // Stalls: empty responses until the turns run out.
    let e = run(
        &with(Params {
            stall: 1.0,
            ..Params::default()
        }),
        &low,
        &s,
    );
    assert_eq!((e.ending, e.calls), (Ending::TurnLimit, 0));

    // Formatting slips: the JSON is fenced or wrapped in prose.
    let e = run(
        &with(Params {
            format_slip: 1.0,
            ..Params::default()
        }),
        &low,
        &s,
    );
    let Ending::Answer(text) = &e.ending else {
        panic!("{e:?}")
    };
    assert!(serde_json::from_str::<Json>(text).is_err() && text.contains("\"decision\""));

    // An overeager writer makes a change nobody asked for (quayside decides "hold", so
    // its named update must not happen; the overeager agent makes it anyway).
    let quayside = variant(
        families()
            .get("overdue-escalation-quayside")
            .unwrap_or_else(|| panic!("no quayside")),
        &Cell::new(8, Workflow::Low, Encoding::Raw),
    );
    assert!(quayside.permitted_change.is_none());
    let careful = run(&with(Params::default()), &quayside, &s);
    assert!(solved(&quayside, &careful) && careful.changes.is_empty());
    let e = run(
        &with(Params {
            overeager_write: 1.0,
            ..Params::default()
        }),
        &quayside,
        &s,
    );
    assert_eq!(e.changes.len(), 1, "{e:?}");
    assert!(!solved(&quayside, &e));

    // Stale hits, never noticed: the superseded version's values are answered.
    let stale = Params {
        stale_confusion: 1.0,
        stale_recovery: 0.0,
        ..Params::default()
    };
    let e = run(&with(stale.clone()), &low, &s);
    assert!(
        matches!(e.ending, Ending::Answer(_)) && !solved(&low, &e),
        "{e:?}"
    );
    // ... and at W high the superseded record has no hand-off: the chain breaks early.
    let e = run(&with(stale), &high, &s);
    assert!(
        e.calls < high.certified_min_calls && !solved(&high, &e),
        "{e:?}"
    );

    // Dropped hand-offs answered at once: guesses for the missing facts.
    let drop = Params {
        handoff_reliability: 0.0,
        premature_share: 1.0,
        ..Params::default()
    };
    let e = run(&with(drop), &high, &s);
    assert_eq!(e.calls, 2, "{e:?}");
    assert!(!solved(&high, &e));
    // Dropped hand-offs that loop: repeated searches until the calls left cannot finish
    // the program, where the harness stops the episode as infeasible.
    let looping = Params {
        handoff_reliability: 0.0,
        premature_share: 0.0,
        loop_escape: 0.0,
        ..Params::default()
    };
    let e = run(&with(looping), &high, &s);
    assert_eq!(e.ending, Ending::Other(StopReason::Infeasible), "{e:?}");
    assert!(e.calls > 2, "{e:?}");

    // Compact rows, whose values stand columns away from their names, read a column
    // off, unnoticed: wrong facts.
    let compact = harbor(Cell::new(8, Workflow::Low, Encoding::Compact));
    let misread = Params {
        misread_per_position: 1.0,
        type_check: 0.0,
        ..Params::default()
    };
    let e = run(&with(misread.clone()), &compact, &s);
    assert!(
        matches!(e.ending, Ending::Answer(_)) && !solved(&compact, &e),
        "{e:?}"
    );
    // The same agent reads raw records correctly: there, every value stands beside its
    // name.
    assert!(solved(&low, &run(&with(misread), &low, &s)));
    // Noticed (the value has the wrong type): the record is read again, call after call.
    let noticed = Params {
        misread_per_position: 1.0,
        type_check: 1.0,
        ..Params::default()
    };
    let e = run(&with(noticed), &compact, &s);
    assert!(e.calls > compact.certified_min_calls, "{e:?}");

    // Near-miss connectors pull the first search off the route.
    let near = harbor(Cell {
        r: tbb::compile::Routing::High,
        ..Cell::new(8, Workflow::Low, Encoding::Raw)
    });
    let a = with(Params {
        near_miss_confusion: 1.0,
        ..Params::default()
    });
    let first = a.respond(&first_request(&near, &base, 1024));
    let route = &near.reference_program.steps[0].call.tool;
    assert_eq!(first.tool_calls.len(), 1);
    assert_ne!(&first.tool_calls[0].name, route);
    // ... and without near-misses on the menu nothing pulls it.
    let first = a.respond(&first_request(&low, &base, 1024));
    assert_eq!(
        &first.tool_calls[0].name,
        &low.reference_program.steps[0].call.tool
    );
}

fn first_request(v: &Variant, system: &str, cap: u32) -> ChatRequest {
    ChatRequest {
        model: "sim".into(),
        messages: vec![
            Message::System {
                content: system.to_string(),
            },
            Message::User {
                content: v.user_request.clone(),
            },
        ],
        tools: schemas(v, false),
        max_completion_tokens: cap,
        sampling: Sampling {
            temperature: Some(0.0),
            seed: Some(11),
            parallel_tool_calls: Some(false),
        },
    }
}

/// The agent is stateless: each request re-reads the whole conversation. How it
/// perceived a record (misreads included) is seeded by the result's place in the
/// conversation, so appending messages never changes what it took from earlier records.
#[test]
fn perception_is_stable_as_the_conversation_grows() {
    use tbb::provider::tokens;
    use tbb_agent::sim::agent::{read_conversation, State};
    use tbb_agent::sim::draws::Salts;
    use tbb_agent::sim::instructions::Instructions;
    use tbb_agent::sim::menu::Menu;
    let base = prompt("base.txt");
    let v = harbor(Cell::new(8, Workflow::High, Encoding::Raw));
    let params = Params {
        misread: 0.5,
        type_check: 0.0,
        ..Params::default()
    };
    let agent = with(params.clone());
    let req = parse::parse(&v.user_request).unwrap_or_else(|e| panic!("{e}"));
    let mut request = first_request(&v, &base, 1024);
    let mut sandbox = Sandbox::new(&v);
    let mut history: Vec<BTreeMap<String, Json>> = Vec::new();
    for _ in 0..6 {
        let r = agent.respond(&request);
        let Some(c) = r.tool_calls.first().cloned() else {
            break;
        };
        let out = sandbox.execute(&c.name, &c.arguments);
        request.messages.push(Message::Assistant {
            content: r.text.clone(),
            tool_calls: r.tool_calls.clone(),
        });
        request.messages.push(Message::Tool {
            call_id: c.id.clone(),
            name: c.name.clone(),
            content: out.observation,
        });
        let menu = Menu::new(&request.tools);
        let counts: Vec<u64> = request
            .messages
            .iter()
            .map(|m| match m {
                Message::System { content } | Message::User { content } => tokens::count(content),
                Message::Tool { content, .. } => tokens::count(content),
                Message::Assistant { .. } => 10,
            })
            .collect();
        let salts = Salts::of(&[7; 32], &request, params.run_variance);
        let conv = read_conversation(&request, &counts, menu.tokens());
        let st = State::build(
            &req,
            &conv,
            &menu,
            &params,
            Instructions::read(&base),
            salts,
        );
        history.push(
            st.facts
                .iter()
                .map(|(k, f)| (k.clone(), f.value.clone()))
                .collect(),
        );
    }
    assert!(history.len() >= 4);
    for pair in history.windows(2) {
        for (k, value) in &pair[0] {
            assert_eq!(pair[1].get(k), Some(value), "{k} changed on re-reading");
        }
    }
}

/// Reasoning spend per visible schema: a cut at the cap is reasoning-only when the spend
/// alone passes it, a cut inside the note or the call when it lands there; usage counts
/// reasoning in the output and reports it or not as configured.
#[test]
fn the_cap_cuts_reasoning_notes_and_calls() {
    let base = prompt("base.txt");
    let v = harbor(Cell::new(128, Workflow::Low, Encoding::Raw));
    let spend = |reasoning_base: f64, reports: bool| {
        with(Params {
            reasoning_base,
            reasoning_sigma: 0.0,
            reports_reasoning: reports,
            narration: 1.0,
            ..Params::default()
        })
    };
    let r = spend(5_000.0, true).respond(&first_request(&v, &base, 1024));
    assert_eq!(r.finish, Finish::Length);
    assert!(r.text.is_none() && r.tool_calls.is_empty());
    let u = r.usage.unwrap_or_else(|| panic!("usage"));
    assert_eq!((u.output_tokens, u.reasoning_tokens), (1024, Some(1024)));
    // The same request under a sixteenfold cap goes through.
    let r = spend(5_000.0, true).respond(&first_request(&v, &base, 16_384));
    assert_eq!(r.finish, Finish::ToolCalls);
    let u = r.usage.unwrap_or_else(|| panic!("usage"));
    assert!(u.output_tokens > 5_000 && u.reasoning_tokens == Some(5_000));
    // Just under the cap: the note is cut.
    let r = spend(1_000.0, false).respond(&first_request(&v, &base, 1024));
    assert_eq!(r.finish, Finish::Length);
    assert!(r.tool_calls.is_empty() && r.text.as_deref().is_some_and(|t| !t.is_empty()));
    let u = r.usage.unwrap_or_else(|| panic!("usage"));
    assert_eq!((u.output_tokens, u.reasoning_tokens), (1024, None));
    // No reasoning at all: a call, and the output is only what it wrote.
    let r = with(Params::default()).respond(&first_request(&v, &base, 1024));
    assert_eq!(r.finish, Finish::ToolCalls);
    let u = r.usage.unwrap_or_else(|| panic!("usage"));
    assert!(u.output_tokens > 0 && u.output_tokens < 40, "{u:?}");
    assert!(u.input_tokens > 10_000, "128 schemas: {u:?}");
}

/// The truncation-heavy configurations truncate far more at 128 schemas than at 8 under
/// the 1,024 cap, almost always before the first call, and hardly at all under 16,384;
/// the never-truncating ones never do.
#[test]
fn calibration_truncation_grows_with_the_menu_and_vanishes_at_a_sixteenfold_cap() {
    let (base, nudge) = (prompt("base.txt"), prompt("nudge.txt"));
    let fams: Vec<&Family> = families().split(Split::Core).collect();
    let cells = |v| {
        [Workflow::Low, Workflow::High]
            .into_iter()
            .map(move |w| Cell::new(v, w, Encoding::Raw))
    };
    let mut heavy_seen = 0;
    for c in &catalogue().configurations {
        if c.provider != ProviderKind::Sim {
            continue;
        }
        let agent = tbb::provider::sim_agent(c).unwrap_or_else(|e| panic!("{e}"));
        let p = agent.params().clone();
        // The mean spend of a first request at 128 schemas, deliberation spikes included.
        let spike = (p.reasoning_spike + 1.28 * p.spike_per_100_schemas).min(1.0);
        let first_spend = (p.reasoning_base + 128.0 * p.reasoning_per_schema)
            * (1.0 + spike * (p.spike_factor - 1.0));
        let measure = |v: u16, cap: u32| {
            let (mut n, mut cut, mut before) = (0, 0, 0);
            for f in &fams {
                for cell in cells(v) {
                    let var = variant(f, &cell);
                    let s = Setup {
                        cap,
                        seed: 5,
                        ..setup(&base, &nudge)
                    };
                    let e = run(&agent, &var, &s);
                    n += 1;
                    if let Ending::Truncated { before_first_call } = e.ending {
                        cut += 1;
                        before += usize::from(before_first_call);
                    }
                }
            }
            (100.0 * cut as f64 / n as f64, before, cut)
        };
        let (t128, before, cut128) = measure(128, 1024);
        let (t8, _, _) = measure(8, 1024);
        let (t128_hi, _, _) = measure(128, 16_384);
        println!(
            "{:<20} V=8 {t8:5.1}%  V=128 {t128:5.1}%  V=128 at 16,384 {t128_hi:4.1}%",
            c.name
        );
        if first_spend >= 800.0 {
            heavy_seen += 1;
            assert!(
                (20.0..=75.0).contains(&t128),
                "{}: {t128}% at V=128",
                c.name
            );
            assert!(t8 <= 10.0 && t8 < t128 / 4.0, "{}: {t8}% at V=8", c.name);
            assert!(t128_hi <= 2.0, "{}: {t128_hi}% at 16,384", c.name);
            assert!(
                before * 10 >= cut128 * 8,
                "{}: {before} of {cut128} before the first call",
                c.name
            );
        }
        if first_spend < 400.0 && p.reasoning_spike == 0.0 && p.reasoning_per_ktok == 0.0 {
            assert_eq!((t8, t128), (0.0, 0.0), "{} never truncates", c.name);
        }
    }
    assert!(
        heavy_seen >= 6,
        "the panel has {heavy_seen} truncation-heavy configurations"
    );
}

/// A panel configuration's parameters, as its catalogue entry gives them.
fn panel_params(name: &str) -> Params {
    let c = catalogue()
        .get(name)
        .unwrap_or_else(|| panic!("{name} is not in the catalogue"));
    let agent = tbb::provider::sim_agent(c).unwrap_or_else(|e| panic!("{e}"));
    agent.params().clone()
}

/// Calibration (the paper's sweep stratum M moves its menu contrast 2.8 pp from 1,024 to
/// 16,384 tokens, the crossover's S +1.4 from 1,024 to 4,096): `sim-aurora-lite`, which
/// the strata rules draw into both, deliberates at length now and then whatever the menu
/// (`reasoning_spike`, hardly any spend per schema), so it truncates alike at 8 and 128
/// schemas, at 1,024 and at 4,096 tokens alike, and not at 16,384; its menu penalty is
/// look-alike confusion, which no cap resolves. A larger cap then lifts both menus alike
/// and barely moves the menu contrast, which stays a loss without truncation.
#[test]
fn calibration_a_menu_independent_spike_leaves_the_menu_contrast_to_a_larger_cap() {
    let (base, nudge) = (prompt("base.txt"), prompt("nudge.txt"));
    let c = catalogue()
        .get("sim-aurora-lite")
        .unwrap_or_else(|| panic!("sim-aurora-lite is not in the catalogue"));
    let agent = tbb::provider::sim_agent(c).unwrap_or_else(|e| panic!("{e}"));
    let fams: Vec<&Family> = families().split(Split::Core).collect();
    // (truncated %, success %) on the routed menu over the four endpoint W × D cells.
    let measure = |v: u16, cap: u32| {
        let (mut n, mut cut, mut ok) = (0, 0, 0);
        for f in &fams {
            for w in [Workflow::Low, Workflow::High] {
                for d in [Encoding::Raw, Encoding::Compact] {
                    let var = variant(f, &Cell::new(v, w, d));
                    let s = Setup {
                        cap,
                        seed: 0,
                        ..setup(&base, &nudge)
                    };
                    let e = run(&agent, &var, &s);
                    n += 1;
                    cut += usize::from(matches!(e.ending, Ending::Truncated { .. }));
                    ok += usize::from(e.vts);
                }
            }
        }
        (100.0 * cut as f64 / n as f64, 100.0 * ok as f64 / n as f64)
    };
    let mut contrast = BTreeMap::new();
    for cap in [1024, 4096, 16_384] {
        let (t8, s8) = measure(8, cap);
        let (t128, s128) = measure(128, cap);
        println!("cap {cap:>6}: truncated V=8 {t8:4.1}% V=128 {t128:4.1}%; success V=8 {s8:5.1}% V=128 {s128:5.1}%");
        contrast.insert(cap, s128 - s8);
        match cap {
            1024 => {
                assert!((4.0..=20.0).contains(&t8), "{t8}% truncated at V=8");
                assert!((4.0..=20.0).contains(&t128), "{t128}% truncated at V=128");
                assert!((t128 - t8).abs() <= 6.0, "V=8 {t8}% against V=128 {t128}%");
            }
            4096 => assert!(t8 >= 3.0 && t128 >= 3.0, "{t8}% and {t128}% at 4,096"),
            _ => assert!(t8 <= 1.0 && t128 <= 1.0, "{t8}% and {t128}% at 16,384"),
        }
    }
    let (low, high) = (contrast[&1024], contrast[&16_384]);
    assert!(high <= -5.0, "the menu contrast at 16,384 is {high} pp");
    assert!(
        (high - low).abs() <= 6.0 && (contrast[&4096] - low).abs() <= 6.0,
        "a larger cap moves the menu contrast: {contrast:?}"
    );
}

/// Calibration (the paper's sentinel repeats disagree 12.1 %, the sweep's 17.5 %): repeats
/// of one task mostly agree, because a run's sampling redraws only `run_variance` of the
/// agent's choices. Redrawing every choice makes them disagree more; redrawing none
/// makes them identical.
#[test]
fn calibration_repeats_of_a_task_mostly_agree() {
    let (base, nudge) = (prompt("base.txt"), prompt("nudge.txt"));
    let fams: Vec<&Family> = families().split(Split::Core).collect();
    let cell = Cell::new(128, Workflow::High, Encoding::Raw);
    let disagreement = |run_variance: Option<f64>| {
        let (mut groups, mut disagree) = (0usize, 0usize);
        for name in [
            "sim-aurora-flash",
            "sim-cirrus-pro",
            "sim-fjord-pro",
            "sim-gale-swift",
        ] {
            let mut params = panel_params(name);
            if let Some(share) = run_variance {
                params.run_variance = share;
            }
            let agent = SimAgent::with_params(name, params);
            for f in &fams {
                let v = variant(f, &cell);
                let outcomes: Vec<bool> = (0..3)
                    .map(|repeat| {
                        let s = Setup {
                            seed: repeat,
                            ..setup(&base, &nudge)
                        };
                        run(&agent, &v, &s).vts
                    })
                    .collect();
                groups += 1;
                disagree += usize::from(outcomes.iter().any(|&o| o != outcomes[0]));
            }
        }
        100.0 * disagree as f64 / groups as f64
    };
    let panel = disagreement(None);
    let every_choice = disagreement(Some(1.0));
    println!("repeats disagree: panel {panel:.1}%, every choice redrawn {every_choice:.1}%");
    assert!((5.0..=30.0).contains(&panel), "{panel}%");
    assert!(every_choice > panel, "{every_choice}% against {panel}%");
    assert_eq!(
        disagreement(Some(0.0)),
        0.0,
        "no choice redrawn: repeats agree"
    );
}

/// Calibration (the paper's compact − raw, −3.7 pp; typed and linked nothing
/// detectable): the encoding effect of a configuration comes from where its values
/// stand. `sim-ember-pro` misreads with the positions between a value and its name, so
/// it loses on compact rows; the same agent with that sensitivity (and its sensitivity
/// to long observations) at zero reads compact and raw records alike, episode for
/// episode. Its draws are the task's alone here (`run_variance` 0), so the two cells
/// meet the same random numbers and only the reading differs.
#[test]
fn calibration_the_encoding_effect_comes_from_where_values_stand() {
    let (base, nudge) = (prompt("base.txt"), prompt("nudge.txt"));
    let fams: Vec<&Family> = families().split(Split::Core).collect();
    let reader = Params {
        run_variance: 0.0,
        ..panel_params("sim-ember-pro")
    };
    let twin = Params {
        misread_per_position: 0.0,
        misread_per_ktok_view: 0.0,
        ..reader.clone()
    };
    assert!(reader.misread_per_position > 0.0);
    let outcomes = |params: &Params, encoding| -> Vec<bool> {
        let agent = SimAgent::with_params("sim-ember-pro", params.clone());
        let mut out = Vec::new();
        for f in &fams {
            let v = variant(f, &Cell::new(8, Workflow::Low, encoding));
            for repeat in 0..2 {
                let s = Setup {
                    seed: repeat,
                    ..setup(&base, &nudge)
                };
                out.push(run(&agent, &v, &s).vts);
            }
        }
        out
    };
    let rate = |o: &[bool]| 100.0 * o.iter().filter(|&&x| x).count() as f64 / o.len() as f64;
    let (raw, compact) = (
        outcomes(&reader, Encoding::Raw),
        outcomes(&reader, Encoding::Compact),
    );
    let loss = rate(&raw) - rate(&compact);
    println!("sim-ember-pro: compact − raw {:.1} pp", -loss);
    assert!(loss >= 2.0, "compact rows cost {loss} pp");
    assert_eq!(
        outcomes(&twin, Encoding::Raw),
        outcomes(&twin, Encoding::Compact),
        "without its reading sensitivities the agent reads both layouts alike"
    );
}

/// Calibration (the paper's workflow prompt: an instruction, not a phrase): a rewording
/// of the workflow prompt's instruction with the same meaning gives the same episodes,
/// while the base prompt, which asks no check, gives others. `sim-fjord-pro` reasons
/// longer for each check it is asked (truncation at V = 128) and follows hand-offs
/// more carefully; its draws are the task's alone here, so only what the prompt asks
/// can differ.
#[test]
fn calibration_a_reworded_prompt_gives_the_same_episodes() {
    let (workflow, base, nudge) = (
        prompt("workflow.txt"),
        prompt("base.txt"),
        prompt("nudge.txt"),
    );
    let original = "Before each tool request, check privately";
    assert!(
        workflow.contains(original),
        "prompts/workflow.txt changed its wording"
    );
    let reworded = workflow.replacen(original, "Prior to calling any tool, check privately", 1);
    let agent = SimAgent::with_params(
        "sim-fjord-pro",
        Params {
            run_variance: 0.0,
            ..panel_params("sim-fjord-pro")
        },
    );
    let fams: Vec<&Family> = families().split(Split::Core).collect();
    let outcomes = |system: &str| -> Vec<(bool, u32)> {
        let mut out = Vec::new();
        for f in &fams {
            for w in [Workflow::Low, Workflow::High] {
                let v = variant(f, &Cell::new(128, w, Encoding::Raw));
                let s = Setup {
                    routed: false,
                    ..setup(system, &nudge)
                };
                let e = run(&agent, &v, &s);
                out.push((e.vts, e.calls));
            }
        }
        out
    };
    let asked = outcomes(&workflow);
    assert_eq!(
        outcomes(&reworded),
        asked,
        "a rewording changed the episodes"
    );
    let vts = |o: &[(bool, u32)]| o.iter().filter(|x| x.0).count();
    let unasked = outcomes(&base);
    println!(
        "sim-fjord-pro at V = 128: {} of {} with the workflow prompt, {} with the base prompt",
        vts(&asked),
        asked.len(),
        vts(&unasked)
    );
    assert!(
        vts(&unasked) >= vts(&asked) + asked.len() / 5,
        "the workflow prompt's checks should cost it at V = 128"
    );
}

/// The catalogue: 21 simulated configurations from 7 organizations of unequal size (so
/// weighting each organization equally is a real sensitivity analysis), each with its
/// own parameters, all buildable.
#[test]
fn the_catalogue_holds_the_simulated_panel() {
    let sims: Vec<_> = catalogue()
        .configurations
        .iter()
        .filter(|c| c.provider == ProviderKind::Sim)
        .collect();
    assert_eq!(sims.len(), 21);
    let orgs: std::collections::BTreeSet<&str> =
        sims.iter().map(|c| c.organization.as_str()).collect();
    assert_eq!(orgs.len(), 7);
    let sizes: std::collections::BTreeSet<usize> = orgs
        .iter()
        .map(|o| sims.iter().filter(|c| c.organization == *o).count())
        .collect();
    assert!(sizes.len() >= 3, "organization sizes {sizes:?}");
    for c in &sims {
        let org = c.organization.to_lowercase();
        assert!(
            c.name.starts_with(&format!("sim-{org}-")),
            "{} of {}",
            c.name,
            org
        );
    }
    let mut seen = Vec::new();
    for c in &sims {
        assert!(c.name.starts_with("sim-"), "{}", c.name);
        assert!(c.version.is_some() && c.api_key_env.is_none(), "{}", c.name);
        let a = tbb::provider::sim_agent(c).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !seen.contains(a.params()),
            "{} repeats another's parameters",
            c.name
        );
        seen.push(a.params().clone());
        assert!(tbb::provider::build(c).is_ok());
    }
    // A bad table is a configuration error, not a panic.
    let mut bad = sims[0].clone();
    bad.sim = toml::from_str("reasoning_bsae = 1.0").ok();
    assert!(matches!(
        tbb::provider::sim_agent(&bad),
        Err(tbb::provider::ProviderError::Config { .. })
    ));
}

// ---------------------------------------------------------------------------------------
// The panel through the harness
// ---------------------------------------------------------------------------------------

mod panel {
    use super::*;
    use tbb::grade::TerminalFlag;
    use tbb::harness::PromptVariant;
    use tbb::provider::Configuration;

    /// One scored condition, reduced.
    #[derive(Debug, Clone)]
    pub struct Row {
        pub config: String,
        pub family: String,
        pub cell: Cell,
        pub lane: Menu,
        pub cap: u32,
        pub prompt: PromptVariant,
        pub vts: bool,
        pub truncated: bool,
        pub before_first_call: bool,
        pub flag: Option<TerminalFlag>,
    }

    pub fn prompts() -> &'static Prompts {
        static P: OnceLock<Prompts> = OnceLock::new();
        P.get_or_init(|| match Prompts::load(Path::new("prompts")) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        })
    }

    pub fn sims() -> Vec<&'static Configuration> {
        catalogue()
            .configurations
            .iter()
            .filter(|c| c.provider == ProviderKind::Sim)
            .collect()
    }

    /// Runs `configs × families × cells × (lane, cap, prompt)` through the harness, in
    /// parallel over configurations.
    pub fn run_grid(
        configs: &[&'static Configuration],
        families: &[&'static Family],
        cells: &[Cell],
        arms: &[(Menu, u32, PromptVariant)],
    ) -> Vec<Row> {
        let variants: Vec<(&Family, Cell, Variant)> = families
            .iter()
            .flat_map(|f| cells.iter().map(move |c| (*f, *c, variant(f, c))))
            .collect();
        std::thread::scope(|s| {
            let handles: Vec<_> = configs
                .iter()
                .map(|config| {
                    let variants = &variants;
                    s.spawn(move || {
                        let rt = match tokio::runtime::Builder::new_current_thread().build() {
                            Ok(rt) => rt,
                            Err(e) => panic!("{e}"),
                        };
                        let provider = match tbb::provider::build(config) {
                            Ok(p) => p,
                            Err(e) => panic!("{e}"),
                        };
                        let mut rows = Vec::new();
                        for (f, cell, v) in variants {
                            for &(lane, cap, prompt) in arms {
                                let spec = EpisodeSpec {
                                    arm: ArmForm {
                                        menu: lane,
                                        prompt,
                                        ..ArmForm::baseline()
                                    },
                                    completion_cap: cap,
                                    ..EpisodeSpec::frozen(v, config)
                                };
                                let e = rt.block_on(run_episode(
                                    provider.as_ref(),
                                    &spec,
                                    prompts(),
                                    None,
                                ));
                                rows.push(Row {
                                    config: config.name.clone(),
                                    family: f.name.clone(),
                                    cell: *cell,
                                    lane,
                                    cap,
                                    prompt,
                                    vts: e.verdict.vts,
                                    truncated: e.verdict.truncated,
                                    before_first_call: e.verdict.truncated_before_first_call,
                                    flag: e.verdict.terminal_flag,
                                });
                            }
                        }
                        rows
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    }

    pub fn rate<'a>(rows: impl Iterator<Item = &'a Row>, f: impl Fn(&Row) -> bool) -> f64 {
        let (mut n, mut k) = (0usize, 0usize);
        for r in rows {
            n += 1;
            k += usize::from(f(r));
        }
        if n == 0 {
            f64::NAN
        } else {
            100.0 * k as f64 / n as f64
        }
    }

    pub fn flags(rows: &[&Row]) -> HashMap<String, usize> {
        let mut m = HashMap::new();
        for r in rows {
            let k = match r.flag {
                None => "success".to_string(),
                Some(f) => format!("{f:?}"),
            };
            *m.entry(k).or_insert(0) += 1;
        }
        m
    }
}

/// The whole panel through the harness on the 36 core families at the 8 endpoint cells:
/// outcomes are varied — successes, truncations (far more at 128 schemas), wrong
/// conclusions, call- and turn-limit endings, infeasibility stops, contract breaks.
#[test]
fn calibration_the_panel_through_the_harness_gives_varied_outcomes() {
    use panel::*;
    use tbb::grade::TerminalFlag;
    use tbb::harness::PromptVariant;
    let fams: Vec<&Family> = families().split(Split::Core).collect();
    let cells: Vec<Cell> = Cell::capacity().into_iter().take(8).collect();
    let rows = run_grid(
        &sims(),
        &fams,
        &cells,
        &[(Menu::Routed, 1024, PromptVariant::Base)],
    );
    assert_eq!(rows.len(), 21 * 36 * 8);
    let all: Vec<&Row> = rows.iter().collect();
    let f = flags(&all);
    let count = |flag: TerminalFlag| f.get(&format!("{flag:?}")).copied().unwrap_or(0);
    let vts = rate(rows.iter(), |r| r.vts);
    let t8 = rate(rows.iter().filter(|r| r.cell.v == 8), |r| r.truncated);
    let t128 = rate(rows.iter().filter(|r| r.cell.v == 128), |r| r.truncated);
    println!("VTS {vts:.1}%, truncated at V=8 {t8:.1}%, at V=128 {t128:.1}%, flags {f:?}");
    assert!((70.0..=95.0).contains(&vts), "VTS {vts}");
    assert!(
        t128 > 5.0 * t8.max(0.5) && t128 >= 8.0,
        "truncation {t8}% -> {t128}%"
    );
    for flag in [
        TerminalFlag::Truncation,
        TerminalFlag::WrongConclusion,
        TerminalFlag::BudgetOrCallLimit,
        TerminalFlag::TurnLimit,
        TerminalFlag::Infeasibility,
        TerminalFlag::ContractBreak,
    ] {
        assert!(count(flag) > 0, "no {flag:?} ending in {f:?}");
    }
    // Truncation at V=128 happens before the first call in the great majority.
    let cut: Vec<&Row> = rows
        .iter()
        .filter(|r| r.cell.v == 128 && r.truncated)
        .collect();
    let before = cut.iter().filter(|r| r.before_first_call).count();
    assert!(before * 10 >= cut.len() * 8, "{before} of {}", cut.len());
    // Every configuration is deterministic through the harness too.
    let again = run_grid(
        &sims()[..2],
        &fams[..3],
        &cells[4..6],
        &[(Menu::Routed, 1024, PromptVariant::Base)],
    );
    for r in &again {
        let first = rows
            .iter()
            .find(|x| x.config == r.config && x.family == r.family && x.cell == r.cell)
            .unwrap_or_else(|| panic!("row"));
        assert_eq!((first.vts, first.flag), (r.vts, r.flag));
    }
}

/// The whole panel on the 36 core families at the 12 capacity cells (routed, 1,024),
/// plus the fixed lane and a sixteenfold cap at the endpoint cells, printed as a table.
/// Run with `cargo test --release --test it -- --ignored --nocapture sim::panel_report`.
#[test]
#[ignore = "a report, not a check: prints the panel's effects"]
fn panel_report() {
    use panel::*;
    use tbb::harness::PromptVariant;
    let fams: Vec<&Family> = families().split(Split::Core).collect();
    let configs = sims();
    let started = std::time::Instant::now();
    let base = run_grid(
        &configs,
        &fams,
        &Cell::capacity(),
        &[
            (Menu::Routed, 1024, PromptVariant::Base),
            (Menu::Fixed, 1024, PromptVariant::Base),
            (Menu::Routed, 16384, PromptVariant::Base),
            (Menu::Routed, 1024, PromptVariant::Workflow),
            (Menu::Routed, 1024, PromptVariant::InterfaceGuide),
        ],
    );
    println!("{} episodes in {:?}", base.len(), started.elapsed());
    let endpoint = |r: &panel::Row| {
        r.cell.v != 32
            && r.cell.w != Workflow::Medium
            && matches!(r.cell.d, Encoding::Raw | Encoding::Linked)
    };
    println!(
        "{:<20} {:>5} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} | {:>5} {:>5} {:>5} {:>5} {:>5} | {:>6} {:>6} {:>6} {:>6}",
        "config", "vts", "dV", "dW", "dLnk", "dCmp", "dTyp", "dVfix", "tr8", "tr128", "bfc", "t8hi", "t128h", "dVhi", "wfP", "guide", "fix"
    );
    let mut all_flags: HashMap<String, usize> = HashMap::new();
    for c in &configs {
        let rows: Vec<&panel::Row> = base.iter().filter(|r| r.config == c.name).collect();
        let arm = |lane: Menu, cap: u32, p: PromptVariant| {
            rows.iter()
                .copied()
                .filter(move |r| r.lane == lane && r.cap == cap && r.prompt == p)
        };
        let main: Vec<&panel::Row> = arm(Menu::Routed, 1024, PromptVariant::Base).collect();
        let vts = rate(main.iter().copied(), |r| r.vts);
        let ep = |pred: &dyn Fn(&panel::Row) -> bool, rows: &[&panel::Row]| {
            rate(
                rows.iter().copied().filter(|r| endpoint(r) && pred(r)),
                |r| r.vts,
            )
        };
        let d_v = ep(&|r| r.cell.v == 128, &main) - ep(&|r| r.cell.v == 8, &main);
        let d_w =
            ep(&|r| r.cell.w == Workflow::High, &main) - ep(&|r| r.cell.w == Workflow::Low, &main);
        let d_l = ep(&|r| r.cell.d == Encoding::Linked, &main)
            - ep(&|r| r.cell.d == Encoding::Raw, &main);
        let at = |d: Encoding| {
            rate(
                main.iter()
                    .copied()
                    .filter(|r| r.cell.v == 8 && r.cell.w == Workflow::Low && r.cell.d == d),
                |r| r.vts,
            )
        };
        let d_c = at(Encoding::Compact) - at(Encoding::Raw);
        let d_t = at(Encoding::Typed) - at(Encoding::Raw);
        let fixed: Vec<&panel::Row> = arm(Menu::Fixed, 1024, PromptVariant::Base).collect();
        let d_vfix = ep(&|r| r.cell.v == 128, &fixed) - ep(&|r| r.cell.v == 8, &fixed);
        let hi: Vec<&panel::Row> = arm(Menu::Routed, 16384, PromptVariant::Base).collect();
        let tr = |rows: &[&panel::Row], v: u16| {
            rate(
                rows.iter()
                    .copied()
                    .filter(|r| endpoint(r) && r.cell.v == v),
                |r| r.truncated,
            )
        };
        let bfc = {
            let t: Vec<&&panel::Row> = main
                .iter()
                .filter(|r| r.cell.v == 128 && r.truncated)
                .collect();
            if t.is_empty() {
                f64::NAN
            } else {
                100.0 * t.iter().filter(|r| r.before_first_call).count() as f64 / t.len() as f64
            }
        };
        let d_vhi = ep(&|r| r.cell.v == 128, &hi) - ep(&|r| r.cell.v == 8, &hi);
        let wf = rate(arm(Menu::Routed, 1024, PromptVariant::Workflow), |r| r.vts);
        let guide = rate(
            arm(Menu::Routed, 1024, PromptVariant::InterfaceGuide),
            |r| r.vts,
        );
        let fix = rate(fixed.iter().copied(), |r| r.vts);
        println!(
            "{:<20} {:>5.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} | {:>5.1} {:>5.1} {:>5.0} {:>5.1} {:>5.1} | {:>6.1} {:>6.1} {:>6.1} {:>6.1}",
            c.name, vts, d_v, d_w, d_l, d_c, d_t, d_vfix, tr(&main, 8), tr(&main, 128), bfc, tr(&hi, 8), tr(&hi, 128), d_vhi, wf, guide, fix
        );
        let f = flags(&main);
        let mut fv: Vec<_> = f.iter().collect();
        fv.sort();
        println!("    {fv:?}");
        for (k, n) in f {
            *all_flags.entry(k).or_insert(0) += n;
        }
    }
    let main: Vec<&panel::Row> = base
        .iter()
        .filter(|r| r.lane == Menu::Routed && r.cap == 1024 && r.prompt == PromptVariant::Base)
        .collect();
    println!("pooled vts {:.1}", rate(main.iter().copied(), |r| r.vts));
    let ep = |pred: &dyn Fn(&panel::Row) -> bool| {
        rate(
            main.iter().copied().filter(|r| endpoint(r) && pred(r)),
            |r| r.vts,
        )
    };
    let at = |d: Encoding| {
        rate(
            main.iter()
                .copied()
                .filter(|r| r.cell.v == 8 && r.cell.w == Workflow::Low && r.cell.d == d),
            |r| r.vts,
        )
    };
    println!(
        "pooled contrasts: V {:.1}  W {:.1}  linked {:.1}  compact {:.1}  typed {:.1}",
        ep(&|r| r.cell.v == 128) - ep(&|r| r.cell.v == 8),
        ep(&|r| r.cell.w == Workflow::High) - ep(&|r| r.cell.w == Workflow::Low),
        ep(&|r| r.cell.d == Encoding::Linked) - ep(&|r| r.cell.d == Encoding::Raw),
        at(Encoding::Compact) - at(Encoding::Raw),
        at(Encoding::Typed) - at(Encoding::Raw),
    );
    println!(
        "pooled truncation V=8 {:.1}%  V=128 {:.1}%",
        rate(main.iter().copied().filter(|r| r.cell.v == 8), |r| r
            .truncated),
        rate(main.iter().copied().filter(|r| r.cell.v == 128), |r| r
            .truncated)
    );
    let mut fv: Vec<_> = all_flags.into_iter().collect();
    fv.sort();
    println!("flags {fv:?}");
}

/// Prints the turns of episodes (env: SIM_CONFIG, SIM_FAMILIES=a,b, SIM_V, SIM_W, SIM_D,
/// SIM_LANE=fixed, SIM_ONLY_FAILED=1). For looking at what an agent does.
#[test]
#[ignore = "a debugging aid"]
fn show_episodes() {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let config = catalogue()
        .get(&env("SIM_CONFIG", "sim-dunlin-max"))
        .unwrap_or_else(|| panic!("no such configuration"));
    let w = match env("SIM_W", "low").as_str() {
        "high" => Workflow::High,
        "medium" => Workflow::Medium,
        _ => Workflow::Low,
    };
    let d = match env("SIM_D", "raw").as_str() {
        "compact" => Encoding::Compact,
        "typed" => Encoding::Typed,
        "linked" => Encoding::Linked,
        _ => Encoding::Raw,
    };
    let v: u16 = env("SIM_V", "8").parse().unwrap_or(8);
    let lane = if env("SIM_LANE", "routed") == "fixed" {
        Menu::Fixed
    } else {
        Menu::Routed
    };
    let only_failed = env("SIM_ONLY_FAILED", "0") == "1";
    let names = env("SIM_FAMILIES", "");
    let provider = tbb::provider::build(config).unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    for f in families().split(Split::Core) {
        if !names.is_empty() && !names.split(',').any(|n| n == f.name) {
            continue;
        }
        let var = variant(f, &Cell::new(v, w, d));
        let spec = EpisodeSpec {
            arm: ArmForm {
                menu: lane,
                ..ArmForm::baseline()
            },
            ..EpisodeSpec::frozen(&var, config)
        };
        let e = rt.block_on(run_episode(
            provider.as_ref(),
            &spec,
            panel::prompts(),
            None,
        ));
        if only_failed && e.verdict.vts {
            continue;
        }
        println!(
            "== {} vts={} flag={:?} unmet={:?} calls={} stop={:?}",
            f.name,
            e.verdict.vts,
            e.verdict.terminal_flag,
            e.verdict.first_unmet,
            e.verdict.calls,
            e.trace.stop
        );
        for t in &e.trace.turns {
            let raw = t.response.raw.clone().unwrap_or(Json::Null);
            println!(
                "  [{} r={} {}] {:?} {}",
                raw["why"].as_str().unwrap_or(""),
                raw["reasoning_tokens"],
                t.response.finish_reason_raw,
                t.response
                    .tool_calls
                    .iter()
                    .map(|c| format!("{} {}", c.name, c.arguments))
                    .collect::<Vec<_>>(),
                t.response.text.clone().unwrap_or_default()
            );
        }
        println!("  expected {}", var.answer_text());
    }
}
