//! Hand-computed tests: each column measure, each snapshot constraint, the matcher on a
//! graph where the greedy choice loses, minefields, the turn count and the model's
//! refusals. Worlds are built with the context's own operations.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::context::{Context, Namespace, Row, INDEX};

use super::constraints::{
    addition_similarity, guardrail_similarity, removal_similarity, snapshot_similarity,
    update_similarity,
};
use super::measures::{scores, Scores};
use super::model::*;
use super::tool_trace::tool_trace_dependant_similarity;
use super::{effective_turn_count, evaluate, EvaluationError, ModelError};

fn row(v: Value) -> Row {
    v.as_object().cloned().unwrap()
}

fn rows(v: Value) -> Vec<Row> {
    v.as_array().unwrap().iter().cloned().map(row).collect()
}

fn constraint(
    ns: Namespace,
    kind: ConstraintKind,
    reference: Option<i64>,
    target: Value,
    overrides: &[(&str, ColumnMeasure)],
) -> SnapshotConstraint {
    let target = if target.is_null() {
        None
    } else {
        Some(rows(target))
    };
    let overrides = overrides
        .iter()
        .map(|(k, m)| (k.to_string(), m.clone()))
        .collect();
    SnapshotConstraint::new(ns, kind, reference, target, overrides)
}

fn atol(pairs: &[(&str, f64)]) -> Tolerances {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// −log as polars computes it on `Float32`, then the mean of `n` columns of which only
/// this one is fractional, then `exp(−mean)`.
fn geo(similarity: f32, n: u32) -> f64 {
    let cost = -(similarity.ln() / std::f32::consts::E.ln());
    (-f64::from(cost) / f64::from(n)).exp()
}

// ------------------------------------------------------------------ column measures

#[test]
fn exact_match_is_null_aware() {
    let r = rows(json!([{"name": "Bart"}, {"name": null}, {"name": "Lisa"}]));
    let m = ColumnMeasure::ExactMatch;
    let s = scores(&m, Namespace::Contact, &r, "name", &json!("Bart")).unwrap();
    assert_eq!(s, Scores::Narrow(vec![Some(1.0), None, Some(0.0)]));
    let s = scores(&m, Namespace::Contact, &r, "name", &Value::Null).unwrap();
    assert_eq!(s, Scores::Narrow(vec![Some(0.0), Some(1.0), Some(0.0)]));
    let r = rows(json!([{"latitude": 37}]));
    let s = scores(&m, Namespace::Setting, &r, "latitude", &json!(37.0)).unwrap();
    assert_eq!(s, Scores::Narrow(vec![Some(1.0)]));
}

#[test]
fn close_uses_the_column_tolerance() {
    let r = rows(json!([{"latitude": 37.0}, {"latitude": 38.0}, {"latitude": null}]));
    let m = ColumnMeasure::Close {
        atol: atol(&[("latitude", 0.5)]),
    };
    let s = scores(&m, Namespace::Reminder, &r, "latitude", &json!(37.3)).unwrap();
    assert_eq!(s, Scores::Narrow(vec![Some(1.0), Some(0.0), Some(0.0)]));
    let refused = scores(&m, Namespace::Reminder, &r, "latitude", &json!("37"));
    assert!(matches!(refused, Err(EvaluationError::TargetType { .. })));
}

#[test]
fn one_is_a_wide_column_of_ones() {
    let r = rows(json!([{}, {"openai_tool_call_id": "x"}]));
    let s = scores(
        &ColumnMeasure::One,
        Namespace::Sandbox,
        &r,
        "openai_tool_call_id",
        &json!("y"),
    );
    assert_eq!(s.unwrap(), Scores::Wide(vec![Some(1.0), Some(1.0)]));
}

#[test]
fn contains_is_case_sensitive_and_null_aware() {
    let r = rows(json!([{"content": "wifi is off"}, {"content": null}, {"content": "OFF"}]));
    let s = scores(
        &ColumnMeasure::Contains,
        Namespace::Sandbox,
        &r,
        "content",
        &json!("off"),
    );
    assert_eq!(s.unwrap(), Scores::Narrow(vec![Some(1.0), None, Some(0.0)]));
}

#[test]
fn tool_trace_exact_match_checks_name_and_given_arguments() {
    let call = json!({"tool_name": "f", "arguments": {"a": 1.2, "b": "x"}, "result": null});
    let other = json!({"tool_name": "g", "arguments": {"a": 1}});
    let r = vec![
        row(json!({"tool_trace": [call.to_string()]})),
        row(json!({"tool_trace": null})),
        row(json!({"tool_trace": [other.to_string()]})),
    ];
    let golden = json!(
        r#"[{"tool_name": "f", "arguments": {"a": 1}}, {"tool_name": "h", "arguments": {}}]"#
    );
    let loose = ColumnMeasure::ToolTraceExactMatch {
        atol: Some(atol(&[("a", 0.5)])),
    };
    let s = scores(&loose, Namespace::Sandbox, &r, "tool_trace", &golden).unwrap();
    assert_eq!(s, Scores::Narrow(vec![Some(1.0), Some(0.0), Some(0.0)]));
    let strict = ColumnMeasure::ToolTraceExactMatch { atol: None };
    let s = scores(&strict, Namespace::Sandbox, &r, "tool_trace", &golden).unwrap();
    assert_eq!(s, Scores::Narrow(vec![Some(0.0), Some(0.0), Some(0.0)]));
    // An argument the call lacks is NOT_GIVEN, equal to nothing.
    let needs_c = json!(r#"{"tool_name": "f", "arguments": {"c": null}}"#);
    let s = scores(&strict, Namespace::Sandbox, &r[..1], "tool_trace", &needs_c).unwrap();
    assert_eq!(s, Scores::Narrow(vec![Some(0.0)]));
}

#[test]
fn rouge_l_narrows_to_f32_and_refuses_nulls() {
    let r = rows(json!([{"content": "I turned off cellular service"}]));
    let target = json!("Cellular service is turned off");
    let s = scores(
        &ColumnMeasure::RougeL,
        Namespace::Sandbox,
        &r,
        "content",
        &target,
    );
    assert_eq!(s.unwrap(), Scores::Narrow(vec![Some(0.4)]));
    let r = rows(json!([{"content": null}]));
    let s = scores(
        &ColumnMeasure::RougeL,
        Namespace::Sandbox,
        &r,
        "content",
        &target,
    );
    assert!(matches!(s, Err(EvaluationError::NotText { .. })));
}

// ------------------------------------------------------------------ snapshot constraints

fn contact(name: &str, phone: &str, relationship: Value) -> Value {
    json!({"person_id": format!("p-{name}"), "name": name, "phone_number": phone,
           "relationship": relationship, "is_self": false})
}

#[test]
fn snapshot_similarity_needs_equal_row_counts_and_assigns_rows() {
    let settings = rows(json!([{"cellular": false, "wifi": true}]));
    let c = |target| {
        constraint(
            Namespace::Setting,
            ConstraintKind::Snapshot,
            None,
            target,
            &[],
        )
    };
    assert_eq!(
        snapshot_similarity(
            &c(json!([{"cellular": false}])),
            &settings,
            c(json!([{"cellular": false}])).target.as_deref().unwrap()
        )
        .unwrap(),
        1.0
    );
    let t = rows(json!([{"cellular": true}]));
    assert_eq!(
        snapshot_similarity(&c(json!([{}])), &settings, &t).unwrap(),
        0.0
    );
    let two = rows(json!([{"cellular": false}, {"cellular": false}]));
    assert_eq!(
        snapshot_similarity(&c(json!([{}])), &settings, &two).unwrap(),
        0.0
    );
    // The best assignment crosses the rows.
    let book = rows(json!([
        contact("Lisa", "+1", json!("daughter")),
        contact("Bart", "+2", json!("son"))
    ]));
    let k = constraint(
        Namespace::Contact,
        ConstraintKind::Snapshot,
        None,
        json!([{}]),
        &[],
    );
    let t = rows(
        json!([{"name": "Bart", "relationship": "son"}, {"name": "Lisa", "relationship": "daughter"}]),
    );
    assert_eq!(snapshot_similarity(&k, &book, &t).unwrap(), 1.0);
}

#[test]
fn snapshot_similarity_is_the_geometric_mean_over_columns() {
    let message = rows(
        json!([{"sender": "AGENT", "recipient": "USER", "content": "I turned off cellular service"}]),
    );
    let t = rows(
        json!([{"sender": "AGENT", "recipient": "USER", "content": "Cellular service is turned off"}]),
    );
    let c = constraint(
        Namespace::Sandbox,
        ConstraintKind::Snapshot,
        None,
        json!([{}]),
        &[],
    );
    let s = snapshot_similarity(&c, &message, &t).unwrap();
    assert_eq!(s, geo(0.4, 3));
    assert!((s - 0.4f64.cbrt()).abs() < 1e-6);
}

#[test]
fn addition_requires_the_reference_and_scores_the_new_rows() {
    let homer = contact("Homer", "+0", Value::Null);
    let c = constraint(
        Namespace::Contact,
        ConstraintKind::Addition,
        Some(-1),
        json!([{"name": "Bart", "relationship": null}]),
        &[("relationship", ColumnMeasure::ExactMatch)],
    );
    let before = rows(json!([homer]));
    let after = rows(json!([homer, contact("Bart", "+2", Value::Null)]));
    // Homer's null relationship joins (both sides fill to ""), and so does the target's.
    assert_eq!(addition_similarity(&c, &after, &before).unwrap(), 1.0);
    let without_homer = rows(json!([contact("Bart", "+2", Value::Null)]));
    assert_eq!(
        addition_similarity(&c, &without_homer, &before).unwrap(),
        0.0
    );
    let two_new = rows(json!([
        homer,
        contact("Bart", "+2", Value::Null),
        contact("Lisa", "+3", Value::Null)
    ]));
    assert_eq!(addition_similarity(&c, &two_new, &before).unwrap(), 0.0);
}

#[test]
fn removal_is_addition_backwards() {
    let homer = contact("Homer", "+0", json!("self"));
    let bart = contact("Bart", "+2", json!("son"));
    let c = constraint(
        Namespace::Contact,
        ConstraintKind::Removal,
        Some(-1),
        json!([{"name": "Bart"}]),
        &[],
    );
    let before = rows(json!([homer, bart]));
    assert_eq!(
        removal_similarity(&c, &rows(json!([homer])), &before).unwrap(),
        1.0
    );
    assert_eq!(
        removal_similarity(&c, &rows(json!([bart])), &before).unwrap(),
        0.0
    );
}

#[test]
fn update_compares_the_changed_rows() {
    let homer = contact("Homer", "+0", json!("self"));
    let c = constraint(
        Namespace::Contact,
        ConstraintKind::Update,
        Some(-1),
        json!([{"name": "Bart", "phone_number": "+3"}]),
        &[],
    );
    let before = rows(json!([homer, contact("Bart", "+2", json!("son"))]));
    let after = rows(json!([homer, contact("Bart", "+3", json!("son"))]));
    assert_eq!(update_similarity(&c, &after, &before).unwrap(), 1.0);
    let wrong = rows(json!([homer, contact("Bart", "+4", json!("son"))]));
    assert_eq!(update_similarity(&c, &wrong, &before).unwrap(), 0.0);
    assert_eq!(
        update_similarity(&c, &rows(json!([homer])), &before).unwrap(),
        0.0
    );
}

#[test]
fn guardrail_is_row_for_row_equality() {
    let a = rows(json!([{"name": "A", "relationship": null}, {"name": "B"}]));
    let b = rows(json!([{"name": "A"}, {"name": "B", "relationship": null}]));
    assert_eq!(guardrail_similarity(Namespace::Contact, &a, &b), 1.0);
    let reordered = rows(json!([{"name": "B"}, {"name": "A"}]));
    assert_eq!(
        guardrail_similarity(Namespace::Contact, &a, &reordered),
        0.0
    );
}

#[test]
fn tool_trace_dependant_fills_content_and_arguments() {
    let trace = |name: &str, args: Value, result: Value| {
        json!({"tool_name": name, "arguments": args, "result": result}).to_string()
    };
    let diff = rows(
        json!([{"sender": "EXECUTION_ENVIRONMENT", "recipient": "AGENT",
        "tool_trace": [trace("timestamp_diff", json!({}), json!({"days": 19}))]}]),
    );
    let reply = rows(
        json!([{"sender": "AGENT", "recipient": "USER", "content": "It is 19 days till Christmas Day"}]),
    );
    let content = |template: &str| {
        constraint(
            Namespace::Sandbox,
            ConstraintKind::Snapshot,
            Some(0),
            json!([{"sender": "AGENT", "recipient": "USER", "content": template}]),
            &[],
        )
    };
    let c = content("It is {days} days till Christmas Day");
    assert_eq!(
        tool_trace_dependant_similarity(&c, FillTo::Content, Extractor::Days, &reply, &diff)
            .unwrap(),
        1.0
    );
    let c = content("It is {weeks} weeks");
    assert_eq!(
        tool_trace_dependant_similarity(&c, FillTo::Content, Extractor::Days, &reply, &diff)
            .unwrap(),
        0.0
    );
    assert!(matches!(
        tool_trace_dependant_similarity(&c, FillTo::Content, Extractor::Days, &[], &diff),
        Err(EvaluationError::NotOneMessage(0))
    ));

    let now = rows(
        json!([{"tool_trace": [trace("get_current_timestamp", json!({}), json!(1700000000.0))]}]),
    );
    let call = |t0: f64| {
        rows(
            json!([{"sender": "EXECUTION_ENVIRONMENT", "recipient": "AGENT",
        "tool_trace": [trace("timestamp_diff", json!({"timestamp_0": t0, "timestamp_1": 5}), json!({"days": 1}))]}]),
        )
    };
    let c = constraint(
        Namespace::Sandbox,
        ConstraintKind::Snapshot,
        Some(0),
        json!([{"sender": "EXECUTION_ENVIRONMENT", "recipient": "AGENT",
                "tool_trace": r#"{"tool_name": "timestamp_diff", "arguments": {}}"#}]),
        &[(
            "tool_trace",
            ColumnMeasure::ToolTraceExactMatch {
                atol: Some(atol(&[("timestamp_0", 1.0)])),
            },
        )],
    );
    let run = |t0| {
        tool_trace_dependant_similarity(
            &c,
            FillTo::ToolTrace,
            Extractor::ResultToTimestamp0,
            &call(t0),
            &now,
        )
        .unwrap()
    };
    assert_eq!(run(1700000000.4), 1.0);
    assert_eq!(run(1700000002.0), 0.0);
}

// ------------------------------------------------------------------ matcher and evaluate

fn headguard() -> Row {
    row(json!({INDEX: 0}))
}

/// A conversation with the settings of upstream's default device.
fn world() -> Context {
    let mut tables = BTreeMap::new();
    tables.insert(
        Namespace::Setting,
        vec![
            headguard(),
            row(json!({INDEX: 0, "device_id": "d",
        "cellular": true, "wifi": true, "location_service": true, "low_battery_mode": false,
        "latitude": 37.3, "longitude": -122.0})),
        ],
    );
    tables.insert(Namespace::Sandbox, vec![headguard()]);
    let mut ctx = Context::from_tables(tables);
    say(&mut ctx, "SYSTEM", "AGENT", "be helpful");
    say(&mut ctx, "USER", "AGENT", "turn wifi off");
    ctx
}

fn say(ctx: &mut Context, sender: &str, recipient: &str, content: &str) {
    let m = row(
        json!({"sender": sender, "recipient": recipient, "content": content, "visible_to": [sender, recipient]}),
    );
    ctx.add_to_database(Namespace::Sandbox, vec![m]).unwrap();
}

fn set_wifi(ctx: &mut Context, on: bool) {
    say(
        ctx,
        "AGENT",
        "EXECUTION_ENVIRONMENT",
        "set_wifi_status(...)",
    );
    let mut s = ctx.get_database(Namespace::Setting, None, false).unwrap();
    s[0].insert("wifi".into(), Value::Bool(on));
    ctx.update_database(Namespace::Setting, s).unwrap();
    say(ctx, "EXECUTION_ENVIRONMENT", "AGENT", "None");
}

fn reply(text: &str) -> SnapshotConstraint {
    constraint(
        Namespace::Sandbox,
        ConstraintKind::Snapshot,
        None,
        json!([{"sender": "AGENT", "recipient": "USER", "content": text}]),
        &[],
    )
}

fn wifi_is(on: bool) -> SnapshotConstraint {
    constraint(
        Namespace::Setting,
        ConstraintKind::Snapshot,
        None,
        json!([{"wifi": on}]),
        &[],
    )
}

fn spec(constraints: Vec<SnapshotConstraint>) -> MilestoneSpec {
    MilestoneSpec {
        constraints,
        guardrails: Guardrails::All,
    }
}

#[test]
fn the_best_matching_is_not_the_greedy_one() {
    // Messages: 2 "turning wifi off", 3–4 wifi off, 5 "wifi is off", 6–7 wifi on,
    // 8 "wifi is now off". Milestone 0 wants the reply "wifi is now off" (exact at 8,
    // ROUGE-L 6/7 at 5); milestone 1, no earlier, wants wifi off (4 to 6). Greedy 0→8
    // leaves milestone 1 at 0; the best is 0→5 (the geometric mean over three columns of
    // 1, 1 and 6/7) and 1→5.
    let mut ctx = world();
    say(&mut ctx, "AGENT", "USER", "turning wifi off");
    set_wifi(&mut ctx, false);
    say(&mut ctx, "AGENT", "USER", "wifi is off");
    set_wifi(&mut ctx, true);
    say(&mut ctx, "AGENT", "USER", "wifi is now off");
    let m = MilestoneMatcher::new(
        vec![
            spec(vec![reply("wifi is now off")]),
            spec(vec![wifi_is(false)]),
        ],
        None,
    )
    .unwrap();
    let e = evaluate(&m, &MilestoneMatcher::default(), &ctx).unwrap();
    let first = geo((6.0f64 / 7.0) as f32, 3);
    assert_eq!(
        e.milestone_mapping[0].map(|x| (x.message_index, x.similarity)),
        Some((5, first))
    );
    assert_eq!(e.milestone_mapping[1].map(|x| x.message_index), Some(5));
    assert_eq!(e.similarity, (first + 1.0) / 2.0);
    assert!((e.similarity - 0.974957).abs() < 1e-6);
    assert!(!e.is_success());
}

#[test]
fn a_minefield_with_any_similarity_zeroes_the_grade() {
    let mut ctx = world();
    set_wifi(&mut ctx, false);
    say(&mut ctx, "AGENT", "USER", "wifi is off");
    let milestones = MilestoneMatcher::new(
        vec![spec(vec![wifi_is(false)]), spec(vec![reply("wifi is off")])],
        None,
    )
    .unwrap();
    let clean = evaluate(&milestones, &MilestoneMatcher::default(), &ctx).unwrap();
    assert_eq!((clean.similarity, clean.minefield_hit), (1.0, false));
    assert!(clean.is_success());
    let mines =
        MilestoneMatcher::new(vec![spec(vec![reply("wifi is already off")])], None).unwrap();
    let hit = evaluate(&milestones, &mines, &ctx).unwrap();
    assert!(hit.minefield_hit && hit.minefield_similarity > 0.0);
    assert_eq!((hit.similarity, hit.milestone_similarity), (0.0, 1.0));
    let missed =
        MilestoneMatcher::new(vec![spec(vec![wifi_is(true), reply("wifi is off")])], None).unwrap();
    assert_eq!(
        evaluate(&milestones, &missed, &ctx).unwrap().similarity,
        1.0
    );
}

#[test]
fn no_milestones_score_one_and_unlinked_milestones_count_zero() {
    let ctx = world();
    let none = MilestoneMatcher::default();
    assert_eq!(evaluate(&none, &none, &ctx).unwrap().similarity, 1.0);
    // Three milestones, an edge between the first two only: the third is never matched.
    let m = MilestoneMatcher::new(
        vec![
            spec(vec![wifi_is(true)]),
            spec(vec![wifi_is(true)]),
            spec(vec![wifi_is(true)]),
        ],
        Some(vec![(0, 1)]),
    )
    .unwrap();
    let e = evaluate(&m, &none, &ctx).unwrap();
    assert_eq!(e.milestone_mapping[2], None);
    assert_eq!(e.similarity, 2.0 / 3.0);
}

#[test]
fn turns_exclude_system_environment_to_user_and_few_shot_messages() {
    let mut ctx = world(); // SYSTEM→AGENT (no), USER→AGENT (1)
    set_wifi(&mut ctx, false); // AGENT→ENV (2), ENV→AGENT (3)
    say(
        &mut ctx,
        "USER",
        "EXECUTION_ENVIRONMENT",
        "end_conversation()",
    ); // no
    say(&mut ctx, "EXECUTION_ENVIRONMENT", "USER", "None"); // no
    say(&mut ctx, "AGENT", "USER", "done"); // 4
    let few_shot = row(
        json!({"sender": "USER", "recipient": "AGENT", "content": "hi", "visible_to": ["USER"]}),
    );
    let unknown = row(json!({"sender": "AGENT", "recipient": "USER", "content": "?"}));
    ctx.add_to_database(Namespace::Sandbox, vec![few_shot, unknown])
        .unwrap(); // no, no
    assert_eq!(effective_turn_count(&ctx).unwrap(), 4);
}

// ------------------------------------------------------------------ the model

#[test]
fn guardrails_are_derived_as_upstream_does() {
    let m = MilestoneMatcher::new(
        vec![spec(vec![wifi_is(false)]), spec(vec![reply("done")])],
        None,
    )
    .unwrap();
    assert!(m.milestones()[0].constraints.len() == 1);
    let guards: Vec<(Namespace, Option<i64>)> = m.milestones()[1]
        .constraints
        .iter()
        .filter(|c| c.kind == ConstraintKind::Guardrail)
        .map(|c| (c.namespace, c.reference))
        .collect();
    // SETTING is constrained by the predecessor, SANDBOX never guarded.
    assert_eq!(
        guards,
        vec![
            (Namespace::Contact, Some(0)),
            (Namespace::Messaging, Some(0)),
            (Namespace::Reminder, Some(0))
        ]
    );
    let except = MilestoneSpec {
        constraints: vec![reply("done")],
        guardrails: Guardrails::Except(vec![Namespace::Contact]),
    };
    let m = MilestoneMatcher::new(vec![spec(vec![wifi_is(false)]), except], None).unwrap();
    assert_eq!(m.milestones()[1].constraints.len(), 3);
}

#[test]
fn the_scenario_format_is_read_and_bad_matchers_refused() {
    let good = json!({"milestones": [[
        {"namespace": "SANDBOX", "constraint": {"fn": "tool_trace_dependant_similarity", "kwargs": {"fill_to": "content", "extractor": "days_extractor"}},
         "reference_milestone": -1, "target": [{"content": "{days}"}],
         "columns": {"content": "column_contains_similarity",
                     "tool_trace": {"fn": "column_tool_trace_exact_match_similarity", "kwargs": {"atol_dict": {"t": "Infinity"}}}}}
    ]], "edge_list": [], "milestone_dag": "<networkx…>"});
    let m = MilestoneMatcher::from_json(&good).unwrap();
    let c = &m.milestones()[0].constraints[0];
    assert_eq!(c.measure("content"), ColumnMeasure::Contains);
    assert_eq!(c.measure("sender"), ColumnMeasure::ExactMatch);
    assert_eq!(
        c.measure("tool_trace"),
        ColumnMeasure::ToolTraceExactMatch {
            atol: Some(atol(&[("t", f64::INFINITY)]))
        }
    );
    assert_eq!(m.nodes(), &[0]);

    let with = |path: &str, value: Value| {
        let mut v = good.clone();
        *v.pointer_mut(path).unwrap() = value;
        MilestoneMatcher::from_json(&v)
    };
    assert_eq!(
        with("/milestones/0/0/columns/content", json!("column_fuzzy")),
        Err(ModelError::UnknownMeasure("column_fuzzy".into()))
    );
    assert_eq!(
        with("/milestones/0/0/constraint", json!("similar_enough")),
        Err(ModelError::UnknownConstraint("similar_enough".into()))
    );
    assert!(matches!(
        with("/milestones/0/0/reference_milestone", Value::Null),
        Err(ModelError::MissingReference { .. })
    ));
    assert_eq!(
        with(
            "/milestones/0/0/columns/content",
            json!({"fn": "column_close_similarity", "kwargs": {}})
        ),
        Err(ModelError::CloseWithoutTolerance("content".into()))
    );
    assert_eq!(
        with("/milestones/0/0/namespace", json!("SETTING")),
        Err(ModelError::ToolTraceOutsideSandbox(0))
    );
    let two =
        json!({"milestones": [[reply_json()], [reply_json()]], "edge_list": [[0, 1], [1, 0]]});
    assert_eq!(MilestoneMatcher::from_json(&two), Err(ModelError::Cycle));
    let far = json!({"milestones": [[reply_json()], [reply_json()]], "edge_list": [[0, 5]]});
    assert_eq!(
        MilestoneMatcher::from_json(&far),
        Err(ModelError::EdgeOutOfRange(0, 5, 2))
    );
    assert_eq!(
        MilestoneMatcher::from_json(&Value::Null).unwrap(),
        MilestoneMatcher::default()
    );
}

fn reply_json() -> Value {
    json!({"namespace": "SANDBOX", "constraint": "snapshot_similarity", "reference_milestone": null,
           "target": [{"sender": "AGENT"}], "columns": {}})
}
