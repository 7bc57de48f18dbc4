//! The rows the record writes, and oracle episodes for the first scenarios: a correct
//! sequence of calls, written from each scenario's milestones, must produce the rows
//! the milestones target (compared on their key columns; grading itself is the
//! evaluator's).

use serde_json::{json, Value};

use super::*;
use crate::context::INDEX;
use crate::scenario::Scenarios;

fn scenarios() -> &'static Scenarios {
    static S: std::sync::OnceLock<Scenarios> = std::sync::OnceLock::new();
    S.get_or_init(|| Scenarios::builtin().unwrap())
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

fn world(name: &str) -> (Context, Vec<String>) {
    let s = scenarios().get(name).unwrap();
    (s.starting_context.clone(), s.tool_allow_list.clone())
}

fn messages(ctx: &Context) -> Vec<Row> {
    ctx.get_database(Namespace::Sandbox, None, true).unwrap()
}

#[test]
fn a_call_and_its_answer() {
    let (mut ctx, allowed) = world("search_phone_number_with_name");
    let first = ctx.max_sandbox_message_index() + 1;
    let outcomes = agent_tool_calls(
        &mut ctx,
        Clock::EXPORT,
        &allowed,
        &[call(
            "call_1",
            "search_contacts",
            json!({"name": "Homer S"}),
        )],
    )
    .unwrap();
    assert!(outcomes[0].result.is_ok());
    let all = messages(&ctx);
    let asked = all.iter().find(|r| r[INDEX] == first).unwrap();
    assert_eq!(asked["sender"], "AGENT");
    assert_eq!(asked["recipient"], "EXECUTION_ENVIRONMENT");
    assert_eq!(
        asked["content"],
        "call_1_parameters = {'name': 'Homer S'}\ncall_1_response = search_contacts(**call_1_parameters)\nprint(repr(call_1_response))"
    );
    assert_eq!(asked["openai_tool_call_id"], "call_1");
    assert_eq!(asked["openai_function_name"], "search_contacts");
    assert_eq!(
        asked["visible_to"],
        json!(["AGENT", "EXECUTION_ENVIRONMENT"])
    );
    assert_eq!(asked["tool_trace"], Value::Null);
    assert_eq!(asked["conversation_active"], true);
    let answer = all.iter().find(|r| r[INDEX] == first + 1).unwrap();
    assert_eq!(answer["sender"], "EXECUTION_ENVIRONMENT");
    assert_eq!(answer["recipient"], "AGENT");
    assert_eq!(
        answer["content"],
        "[{'person_id': 'e3570ab6-0819-5032-be1e-2b366390c8ef', 'name': 'Homer S', 'phone_number': '+10000000000', 'relationship': 'boss', 'is_self': False}]"
    );
    assert_eq!(
        answer["tool_trace"],
        json!(["{\"tool_name\": \"search_contacts\", \"arguments\": {\"name\": \"Homer S\"}, \"result\": [{\"person_id\": \"e3570ab6-0819-5032-be1e-2b366390c8ef\", \"name\": \"Homer S\", \"phone_number\": \"+10000000000\", \"relationship\": \"boss\", \"is_self\": false}]}"])
    );
    assert_eq!(answer["tool_call_exception"], Value::Null);
    assert_eq!(
        answer["visible_to"],
        json!(["EXECUTION_ENVIRONMENT", "AGENT"])
    );
    // Upstream's trace gathering leaves a headguard at the call's index.
    let guards = ctx.tables()[&Namespace::Sandbox]
        .iter()
        .filter(|r| r[INDEX] == first && crate::context::is_headguard(r))
        .count();
    assert_eq!(guards, 1);
}

#[test]
fn a_refusal_is_the_exception_line_without_a_trace() {
    let (mut ctx, _) = world("cellular_off");
    let allowed = vec![
        "get_current_location".to_owned(),
        "set_location_service_status".to_owned(),
    ];
    agent_tool_calls(
        &mut ctx,
        Clock::EXPORT,
        &allowed,
        &[call(
            "c",
            "set_location_service_status",
            json!({"on": false}),
        )],
    )
    .unwrap();
    agent_tool_calls(
        &mut ctx,
        Clock::EXPORT,
        &allowed,
        &[call("d", "get_current_location", json!({}))],
    )
    .unwrap();
    let last = messages(&ctx).pop().unwrap();
    assert_eq!(
        last["content"],
        "PermissionError: Location service is not enabled."
    );
    assert_eq!(last["tool_call_exception"], last["content"]);
    assert_eq!(last["tool_trace"], Value::Null);
}

#[test]
fn calls_outside_the_allow_list_record_nothing() {
    let (mut ctx, allowed) = world("cellular_off");
    let before = ctx.clone();
    for name in ["set_wifi_status", "end_conversation"] {
        assert_eq!(
            agent_tool_calls(
                &mut ctx,
                Clock::EXPORT,
                &allowed,
                &[call("c", name, json!({}))]
            ),
            Err(RecordError::NotAllowed { tool: name.into() })
        );
    }
    assert_eq!(ctx, before);
}

/// upstream's `test_valid_parallel_tool_call` and `test_invalid_parallel_tool_call`.
#[test]
fn parallel_calls_run_in_every_order() {
    let (mut ctx, _) = world("cellular_off");
    let allowed: Vec<String> = ["search_contacts", "set_wifi_status", "search_holiday"]
        .map(String::from)
        .to_vec();
    let outcomes = agent_tool_calls(
        &mut ctx,
        Clock::EXPORT,
        &allowed,
        &[
            call("a", "search_contacts", json!({"name": "Tomas Haake"})),
            call(
                "b",
                "search_contacts",
                json!({"name": "Fredrik Thordendal"}),
            ),
        ],
    )
    .unwrap();
    assert_eq!(
        outcomes
            .iter()
            .map(|o| o.call_id.as_str())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    let all = messages(&ctx);
    assert!(all[all.len() - 2]["content"]
        .as_str()
        .unwrap()
        .contains("Tomas Haake"));
    assert!(all[all.len() - 1]["content"]
        .as_str()
        .unwrap()
        .contains("Fredrik Thordendal"));

    // Wifi off: turning it on and then searching succeeds in the order asked, but not
    // the other way round, so the request fails, and the world kept is that of the
    // failing order (search refused, then wifi turned on). Upstream's test asserts wifi
    // is off on the context it held before the call, which the permutations never
    // touched; the context they leave current has it on, as here.
    let (mut ctx, _) = world("cellular_off");
    crate::tools::execute(
        &mut ctx,
        Clock::EXPORT,
        "set_wifi_status",
        &json!({"on": false}),
    )
    .unwrap();
    let outcomes = agent_tool_calls(
        &mut ctx,
        Clock::EXPORT,
        &allowed,
        &[
            call("a", "set_wifi_status", json!({"on": true})),
            call("b", "search_holiday", json!({"holiday_name": "Christmas"})),
        ],
    )
    .unwrap();
    assert_eq!(outcomes[0].name, "search_holiday");
    assert!(outcomes[0].result.is_err());
    assert_eq!(outcomes[1].name, "set_wifi_status");
    let wifi = &ctx.get_database(Namespace::Setting, None, false).unwrap()[0]["wifi"];
    assert_eq!(wifi, true);
    let all = messages(&ctx);
    assert_eq!(all[all.len() - 2]["openai_function_name"], "search_holiday");
    assert_eq!(
        all[all.len() - 2]["tool_call_exception"],
        "ConnectionError: Wifi is not enabled"
    );
    assert_eq!(all[all.len() - 1]["content"], "None");
}

#[test]
fn the_user_ends_the_conversation() {
    let (mut ctx, _) = world("cellular_off");
    agent_to_user(&mut ctx, "Done.").unwrap();
    let call_index = ctx.max_sandbox_message_index() + 1;
    let outcome = user_ends_conversation(&mut ctx, Clock::EXPORT, "call_end").unwrap();
    assert_eq!(outcome.result, Ok(Value::Null));
    let all = messages(&ctx);
    let asked = all.iter().find(|r| r[INDEX] == call_index).unwrap();
    assert_eq!(asked["sender"], "USER");
    assert_eq!(asked["recipient"], "EXECUTION_ENVIRONMENT");
    assert_eq!(asked["openai_tool_call_id"], Value::Null);
    assert_eq!(asked["conversation_active"], false);
    let answer = all.last().unwrap();
    assert_eq!(answer["recipient"], "USER");
    assert_eq!(answer["content"], "None");
    assert_eq!(answer["conversation_active"], false);
    assert_eq!(
        answer["tool_trace"],
        json!(["{\"tool_name\": \"end_conversation\", \"arguments\": {}, \"result\": null}"])
    );
    assert!(user_ends_conversation(&mut ctx, Clock::EXPORT, "again")
        .unwrap()
        .result
        .is_err());
}

// Oracles. Each plays the agent correctly and checks the milestones' targets.

/// One step of an oracle episode.
enum Step {
    Calls(Vec<ToolCall>),
    Say(&'static str),
}

fn play(name: &str, steps: Vec<Step>) -> (Context, Context) {
    let (mut ctx, allowed) = world(name);
    let start = ctx.clone();
    for step in steps {
        match step {
            Step::Calls(calls) => {
                let outcomes = agent_tool_calls(&mut ctx, Clock::EXPORT, &allowed, &calls).unwrap();
                for o in outcomes {
                    assert!(
                        o.result.is_ok(),
                        "{name}: {} refused: {:?}",
                        o.name,
                        o.result
                    );
                }
            }
            Step::Say(text) => agent_to_user(&mut ctx, text).unwrap(),
        }
    }
    user_ends_conversation(&mut ctx, Clock::EXPORT, "end").unwrap();
    (start, ctx)
}

/// Whether `row` has the target's value in every column the target names.
fn matches(row: &Row, target: &Value) -> bool {
    let Some(target) = target.as_object() else {
        return false;
    };
    target.iter().all(|(k, want)| {
        let have = row.get(k).unwrap_or(&Value::Null);
        if k == "tool_trace" {
            return trace_matches(have, want);
        }
        // Replies are graded by similarity; the oracle's reply contains the target.
        if k == "content" {
            if let (Some(h), Some(w)) = (have.as_str(), want.as_str()) {
                return h.contains(w);
            }
        }
        have == want || (have.as_f64().is_some() && have.as_f64() == want.as_f64())
    })
}

/// The row's trace names the tool of the target (or one of its alternatives) with
/// every argument the target lists.
fn trace_matches(have: &Value, want: &Value) -> bool {
    let Some(trace) = have.get(0).and_then(Value::as_str) else {
        return false;
    };
    let trace: Value = serde_json::from_str(trace).unwrap();
    let want: Value = serde_json::from_str(want.as_str().unwrap()).unwrap();
    let options = match want {
        Value::Array(v) => v,
        one => vec![one],
    };
    options.iter().any(|o| {
        o["tool_name"] == trace["tool_name"]
            && o["arguments"]
                .as_object()
                .unwrap()
                .iter()
                .all(|(k, v)| trace["arguments"].get(k).unwrap_or(&Value::Null) == v)
    })
}

fn check_milestones(name: &str, start: &Context, end: &Context) {
    let scenario = scenarios().get(name).unwrap();
    let milestones = scenario.milestone_matcher["milestones"].as_array().unwrap();
    for (i, milestone) in milestones.iter().enumerate() {
        for c in milestone.as_array().unwrap() {
            let ns: Namespace = serde_json::from_value(c["namespace"].clone()).unwrap();
            let kind = c["constraint"].as_str().unwrap_or("tool_trace_dependant");
            let targets = c["target"].as_array().cloned().unwrap_or_default();
            let now = end.get_database(ns, None, false).unwrap();
            let before = start.get_database(ns, None, false).unwrap();
            let ok = match kind {
                "guardrail_similarity" => continue,
                "snapshot_similarity" if ns == Namespace::Sandbox => {
                    let all = end.get_database(ns, None, true).unwrap();
                    targets.iter().any(|t| all.iter().any(|r| matches(r, t)))
                }
                "snapshot_similarity" | "update_similarity" => {
                    targets.iter().all(|t| now.iter().any(|r| matches(r, t)))
                }
                "addition_similarity" => targets.iter().all(|t| {
                    now.iter().any(|r| matches(r, t)) && !before.iter().any(|r| matches(r, t))
                }),
                "removal_similarity" => targets.iter().all(|t| {
                    before.iter().any(|r| matches(r, t)) && !now.iter().any(|r| matches(r, t))
                }),
                other => panic!("{name}: no oracle check for {other}"),
            };
            assert!(ok, "{name}: milestone {i} ({kind} on {ns:?}) not reached");
        }
    }
}

fn oracle(name: &str, steps: Vec<Step>) {
    let (start, end) = play(name, steps);
    check_milestones(name, &start, &end);
    // The evaluator, fed the saved world, agrees: every milestone met, no minefield.
    let scenario = scenarios().get(name).unwrap();
    let milestones =
        crate::evaluation::MilestoneMatcher::from_json(&scenario.milestone_matcher).unwrap();
    let minefields =
        crate::evaluation::MilestoneMatcher::from_json(&scenario.minefield_matcher).unwrap();
    let graded = crate::evaluation::evaluate(&milestones, &minefields, &end).unwrap();
    assert!(
        graded.is_success(),
        "{name}: similarity {} ({:?})",
        graded.similarity,
        graded.milestone_mapping
    );
}

#[test]
fn oracle_cellular_off() {
    oracle(
        "cellular_off",
        vec![
            Step::Calls(vec![call(
                "c1",
                "set_cellular_service_status",
                json!({"on": false}),
            )]),
            Step::Say("Cellular service is turned off"),
        ],
    );
}

#[test]
fn oracle_get_cellular() {
    oracle(
        "get_cellular",
        vec![
            Step::Calls(vec![call("c1", "get_cellular_service_status", json!({}))]),
            Step::Say("Cellular service is on"),
        ],
    );
}

#[test]
fn oracle_wifi_off_and_get_wifi() {
    oracle(
        "wifi_off",
        vec![
            Step::Calls(vec![call("c1", "set_wifi_status", json!({"on": false}))]),
            Step::Say("Wifi is turned off"),
        ],
    );
    oracle(
        "get_wifi",
        vec![
            Step::Calls(vec![call("c1", "get_wifi_status", json!({}))]),
            Step::Say("Wifi is on"),
        ],
    );
}

#[test]
fn oracle_contact_searches() {
    oracle(
        "search_phone_number_with_name",
        vec![
            Step::Calls(vec![call(
                "c1",
                "search_contacts",
                json!({"name": "Homer S"}),
            )]),
            Step::Say("I found Homer S's phone number: +10000000000"),
        ],
    );
    oracle(
        "search_name_with_relationship",
        vec![
            Step::Calls(vec![call(
                "c1",
                "search_contacts",
                json!({"relationship": "boss"}),
            )]),
            Step::Say("Your boss is Homer S"),
        ],
    );
    oracle(
        "search_relationship_with_phone_number",
        vec![
            Step::Calls(vec![call(
                "c1",
                "search_contacts",
                json!({"phone_number": "+10000000000"}),
            )]),
            Step::Say("+10000000000 is your boss"),
        ],
    );
}

#[test]
fn oracle_contact_changes() {
    oracle(
        "add_contact_with_name_and_phone_number",
        vec![
            Step::Calls(vec![call(
                "c1",
                "add_contact",
                json!({"name": "Stephen Sondheim", "phone_number": "+19876543210"}),
            )]),
            Step::Say("Stephen Sondheim has been added to your contact"),
        ],
    );
    oracle(
        "remove_contact_with_id",
        vec![
            Step::Calls(vec![call(
                "c1",
                "remove_contact",
                json!({"person_id": "9e137f06-916a-5310-8174-cf0b7e9f7054"}),
            )]),
            Step::Say("9e137f06-916a-5310-8174-cf0b7e9f7054 has been removed from your contact"),
        ],
    );
    oracle(
        "update_contact_with_id_and_phone_number",
        vec![
            Step::Calls(vec![call(
                "c1",
                "modify_contact",
                json!({"person_id": "9e137f06-916a-5310-8174-cf0b7e9f7054", "phone_number": "+19876543210"}),
            )]),
            Step::Say("9e137f06-916a-5310-8174-cf0b7e9f7054's  phone number have been updated to +19876543210"),
        ],
    );
}

#[test]
fn oracle_messages() {
    oracle(
        "search_sender_phone_number_with_content",
        vec![
            Step::Calls(vec![call(
                "c1",
                "search_messages",
                json!({"content": "GPU"}),
            )]),
            Step::Say("+18307976530 asked you if you want some GPUs"),
        ],
    );
    oracle(
        "send_message_with_phone_number_and_content",
        vec![
            Step::Calls(vec![call(
                "c1",
                "send_message_with_phone_number",
                json!({"phone_number": "+12453344098", "content": "How's the new album coming along"}),
            )]),
            Step::Say("Your message to +12453344098 has been sent saying: How's the new album coming along"),
        ],
    );
}
