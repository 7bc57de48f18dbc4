//! Grader audits: each kind of defect, planted in the reference trace, must give its
//! failure record (first unmet obligation, terminal flag).

use super::{finding, Finding};
use crate::compile::Variant;
use crate::family::Operation;
use crate::grade::reference::{reference_trace, trace_in_order};
use crate::grade::trace::{FinishReason, StopReason, Trace};
use crate::grade::{grade, Obligation, TerminalFlag};
use crate::sandbox::Sandbox;

/// A defective trace and the failure record it must get.
#[derive(Debug, Clone)]
pub struct Mutation {
    /// What was planted.
    pub name: &'static str,
    /// The trace.
    pub trace: Trace,
    /// The failure record it must get.
    pub expect: (Obligation, TerminalFlag),
}

fn step_index(v: &Variant, op: Operation) -> Option<usize> {
    v.reference_program
        .steps
        .iter()
        .position(|s| v.tool(&s.call.tool).is_some_and(|t| t.op == op))
}

/// The last turn (the answer) removed: used by mutations that end another way.
fn without_answer(mut t: Trace) -> Trace {
    t.turns.pop();
    t.final_answer = None;
    t
}

/// Every mutation that applies to this variant.
pub fn mutations(v: &Variant) -> Vec<Mutation> {
    use Obligation as O;
    use TerminalFlag as F;
    let reference = reference_trace(v);
    let n = v.reference_program.steps.len();
    let all: Vec<usize> = (0..n).collect();
    let mut out = Vec::new();
    let mut push = |name, trace, expect| {
        out.push(Mutation {
            name,
            trace,
            expect,
        });
    };

    let mut t = reference.clone();
    if let Some(required) = v.required_tools().first() {
        t.menu.retain(|m| m != required);
        push("altered availability", t, (O::A, F::Infeasibility));
        let mut t = reference.clone();
        t.menu.retain(|m| m != required);
        t.turns.clear();
        t.final_answer = None;
        t.stop = StopReason::Unavailable;
        push(
            "unavailable, stopped before any request",
            t,
            (O::A, F::Infeasibility),
        );
    }

    let last_read = v.reference_program.steps.iter().rposition(|s| {
        v.tool(&s.call.tool)
            .is_some_and(|t| t.op == Operation::Read)
    });
    if let Some(skip) = last_read {
        let order: Vec<usize> = all.iter().copied().filter(|&i| i != skip).collect();
        push(
            "missing required step",
            trace_in_order(v, &order),
            (O::P, F::WrongConclusion),
        );
    }
    if let (Some(search), Some(read)) = (
        step_index(v, Operation::Search),
        step_index(v, Operation::Read),
    ) {
        let mut order = all.clone();
        order.swap(search, read);
        push(
            "broken dependency order",
            trace_in_order(v, &order),
            (O::P, F::WrongConclusion),
        );
    }

    let answer = v.answer();
    let with_answer = |text: String| {
        let mut t = reference.clone();
        if let Some(last) = t.turns.last_mut() {
            last.response.text = Some(text.clone());
        }
        t.final_answer = Some(text);
        t
    };
    let mut altered = answer.clone();
    altered["decision"] = serde_json::json!(format!("not {}", v.decision));
    push(
        "altered answer",
        with_answer(altered.to_string()),
        (O::Q, F::WrongConclusion),
    );
    push(
        "fenced answer",
        with_answer(format!("```json\n{}\n```", v.answer_text())),
        (O::Q, F::WrongConclusion),
    );
    push(
        "prose around the answer",
        with_answer(format!("Here is the answer: {}", v.answer_text())),
        (O::Q, F::WrongConclusion),
    );
    if let Some(stale) = v.sources.first().and_then(|id| {
        let r = v.store.by_id(id)?;
        v.store
            .search(&r.connector, &r.reference)
            .into_iter()
            .find(|o| o.id != r.id)
            .map(|o| o.id.clone())
    }) {
        let mut wrong = answer.clone();
        wrong["sources"][0] = serde_json::json!(stale);
        push(
            "altered sources (a superseded version)",
            with_answer(wrong.to_string()),
            (O::E, F::WrongConclusion),
        );
    }

    if let Some(write) = v.permitted_change.as_ref().and_then(|p| {
        v.reference_program
            .steps
            .iter()
            .position(|s| s.call.tool == p.tool)
    }) {
        let order: Vec<usize> = all.iter().copied().filter(|&i| i != write).collect();
        let mut early = vec![write];
        early.extend(all.iter().copied().filter(|&i| i != write));
        push(
            "permitted write before its evidence",
            trace_in_order(v, &early),
            (O::X, F::WrongConclusion),
        );
        push(
            "missing permitted write",
            trace_in_order(v, &order),
            (O::X, F::WrongConclusion),
        );
        // A repeated delete finds nothing to delete and changes nothing, so only the
        // other writes make a second, unrequested change when repeated.
        if v.permitted_change
            .as_ref()
            .is_some_and(|p| p.op != Operation::Delete)
        {
            let mut twice = all.clone();
            twice.push(write);
            push(
                "unrequested write (the permitted one repeated)",
                trace_in_order(v, &twice),
                (O::G, F::WrongConclusion),
            );
        }
    }
    if let Some(t) = unrequested_write(v, &reference) {
        push(
            "unrequested write (another tool)",
            t,
            (O::G, F::WrongConclusion),
        );
    }

    let mut t = reference.clone();
    for turn in &mut t.turns {
        turn.response.usage.input_tokens = t.limits.episode_budget / 2;
    }
    push("exceeded episode budget", t, (O::B, F::BudgetOrCallLimit));
    let mut over = all.clone();
    let extra = (v.call_limit as usize + 1).saturating_sub(n);
    over.extend(std::iter::repeat_n(0, extra));
    push(
        "exceeded call limit",
        trace_in_order(v, &over),
        (O::B, F::BudgetOrCallLimit),
    );

    let mut t = without_answer(reference.clone());
    if let Some(last) = t.turns.last().cloned() {
        let mut cut = last;
        cut.executed.clear();
        cut.response.tool_calls.clear();
        cut.response.finish_reason = FinishReason::Length;
        cut.response.text = None;
        t.turns.push(cut);
    }
    t.stop = StopReason::Truncated;
    push("incomplete (truncated) ending", t, (O::Q, F::Truncation));
    let mut t = without_answer(reference.clone());
    t.turns.truncate(1);
    if let Some(first) = t.turns.first_mut() {
        first.executed.clear();
        first.response.tool_calls.clear();
        first.response.finish_reason = FinishReason::Length;
    }
    t.stop = StopReason::Truncated;
    push("truncated before the first call", t, (O::S, F::Truncation));

    let mut t = without_answer(trace_in_order(v, &all[..1]));
    t.stop = StopReason::Infeasible;
    push("infeasibility stop", t, (O::P, F::Infeasibility));

    let mut t = without_answer(reference.clone());
    let filler = t.turns.last().cloned();
    while let Some(mut turn) = filler
        .clone()
        .filter(|_| (t.turns.len() as u32) < t.limits.turn_limit)
    {
        turn.executed.clear();
        turn.response.tool_calls.clear();
        turn.response.finish_reason = FinishReason::Other;
        t.turns.push(turn);
    }
    t.stop = StopReason::TurnLimit;
    push("turn limit reached", t, (O::Q, F::TurnLimit));

    let mut t = reference.clone();
    if let Some(call) = t
        .turns
        .iter_mut()
        .flat_map(|x| x.executed.iter_mut())
        .next()
    {
        call.observation = call.observation.replacen('"', "'", 1);
    }
    push("tampered observation", t, (O::C, F::ContractBreak));
    let mut t = reference.clone();
    if let Some(first) = t.turns.first_mut() {
        let mut second = first.response.tool_calls[0].clone();
        second.id.push_str("_b");
        first.response.tool_calls.push(second);
    }
    push(
        "two tool calls in one response",
        t,
        (O::C, F::ContractBreak),
    );
    let mut t = without_answer(reference.clone());
    t.stop = StopReason::InfraFailure;
    push("infrastructure failure", t, (O::Q, F::InfraFailure));
    let mut t = without_answer(reference.clone());
    if let Some(last) = t.turns.last_mut() {
        last.response.violation = Some("`arguments` is a JSON object, not a string".into());
    }
    t.stop = StopReason::ProtocolViolation;
    push("protocol violation", t, (O::Q, F::ContractBreak));
    out
}

/// A write on a menu tool the request never asked for, when the menu offers one that
/// can act (a send, or a write on a connector that holds records).
fn unrequested_write(v: &Variant, reference: &Trace) -> Option<Trace> {
    let mut t = reference.clone();
    let permitted = v.permitted_change.as_ref();
    let is_permitted = |name: &str| permitted.is_some_and(|p| p.tool == name);
    let target = permitted.and_then(|p| p.target.as_deref());
    let writes = v
        .menu
        .iter()
        .filter(|x| x.op.is_write() && !is_permitted(&x.name));
    let (tool, args) = writes.into_iter().find_map(|tool| {
        if tool.op == Operation::Send {
            return Some((
                tool,
                serde_json::json!({"to": "a@b.example", "subject": "x", "body": "y"}),
            ));
        }
        let id = v
            .store
            .records
            .iter()
            .find(|r| r.connector == tool.connector && Some(r.id.as_str()) != target)?
            .id
            .clone();
        let args = match tool.op {
            Operation::Update => serde_json::json!({"id": id, "field": "note", "value": "x"}),
            Operation::Pay => serde_json::json!({"id": id, "amount": 1}),
            _ => serde_json::json!({"id": id}),
        };
        Some((tool, args))
    })?;
    // Replay the reference calls so the planted call's observation is the sandbox's.
    let mut sandbox = Sandbox::new(v);
    for call in reference.executed_calls() {
        sandbox.execute(&call.tool, &call.arguments);
    }
    let arguments = args.to_string();
    let outcome = sandbox.execute(&tool.name, &arguments);
    let mut turn = t.turns.first()?.clone();
    turn.response.tool_calls[0].name = tool.name.clone();
    turn.response.tool_calls[0].arguments = arguments.clone();
    turn.response.tool_calls[0].id = "call_planted".into();
    turn.executed = vec![crate::grade::trace::ExecutedCall {
        call_id: "call_planted".into(),
        by: crate::grade::trace::Issuer::Model,
        tool: tool.name.clone(),
        arguments,
        observation: outcome.observation,
    }];
    let at = t.turns.len() - 1;
    t.turns.insert(at, turn);
    Some(t)
}

/// Every mutation gets its failure record, and the unmutated reference passes.
pub fn check_mutations(v: &Variant) -> Vec<Finding> {
    let mut out = Vec::new();
    let reference = grade(v, &reference_trace(v));
    if !reference.vts {
        out.push(finding(
            "grader",
            v,
            format!("the reference trace fails at {:?}", reference.first_unmet),
        ));
    }
    for m in mutations(v) {
        let verdict = grade(v, &m.trace);
        let got = (verdict.first_unmet, verdict.terminal_flag);
        if verdict.vts || got != (Some(m.expect.0), Some(m.expect.1)) {
            out.push(finding(
                "grader",
                v,
                format!("{}: expected {:?}, got {:?}", m.name, m.expect, got),
            ));
        }
    }
    out
}
