//! The reference trace: the reference program executed in order, one call per turn,
//! then the reference answer — a trace that must grade VTS = true.
//!
//! Menu visibility follows the routed lane of the capacity study: the full menu until
//! the first executed call to an operational tool, then the operational tools only.
//!
//! Usage figures in it are estimates (4 bytes of request or response text per token),
//! marked as such by `finish_reason_raw = "reference"`; they only need to be plausible
//! for the budget check, never to stand in for a provider's counts.

use super::trace::{
    ExecutedCall, FinishReason, Limits, RequestRecord, ResponseRecord, StopReason, ToolCall, Trace,
    Turn, Usage, TRACE_FORMAT,
};
use crate::compile::Variant;
use crate::sandbox::Sandbox;

const BYTES_PER_TOKEN: u64 = 4;

/// Builds the reference trace of a variant.
pub fn reference_trace(variant: &Variant) -> Trace {
    let order: Vec<usize> = (0..variant.reference_program.steps.len()).collect();
    trace_in_order(variant, &order)
}

/// The trace of the reference program's steps executed in `order` (indices into the
/// program's steps; any subset or permutation), followed by the reference answer.
pub fn trace_in_order(variant: &Variant, order: &[usize]) -> Trace {
    let menu = variant.menu_names();
    let schema_bytes = |tools: &[&crate::compile::Tool]| -> u64 {
        tools
            .iter()
            .map(|t| t.wire_schema().to_string().len() as u64)
            .sum()
    };
    let full: Vec<&crate::compile::Tool> = variant.menu.iter().collect();
    let operational: Vec<&crate::compile::Tool> =
        variant.menu.iter().filter(|t| t.operational).collect();
    let mut visible = (menu.clone(), schema_bytes(&full));
    let mut context = variant.user_request.len() as u64;
    let mut sandbox = Sandbox::new(variant);
    let mut turns = Vec::new();
    let estimate = |bytes: u64| bytes.div_ceil(BYTES_PER_TOKEN);
    let response = |finish, text: Option<String>, calls: Vec<ToolCall>, input: u64, output: u64| {
        ResponseRecord {
            finish_reason: finish,
            finish_reason_raw: "reference".into(),
            usage: Usage {
                input_tokens: input,
                cached_tokens: 0,
                output_tokens: output,
                reasoning_tokens: None,
                reasoning_reported: false,
            },
            text,
            tool_calls: calls,
            raw: None,
            violation: None,
            wall_ms: 0,
        }
    };
    let steps = &variant.reference_program.steps;
    for (i, step) in order.iter().filter_map(|&i| steps.get(i)).enumerate() {
        let arguments = step.call.arguments.to_string();
        let outcome = sandbox.execute(&step.call.tool, &arguments);
        let id = format!("call_{i}");
        let call = ToolCall {
            id: id.clone(),
            name: step.call.tool.clone(),
            arguments: arguments.clone(),
        };
        let output = estimate((step.call.tool.len() + arguments.len()) as u64);
        turns.push(Turn {
            request: RequestRecord {
                visible_tools: visible.0.clone(),
                body_ref: None,
            },
            response: response(
                FinishReason::ToolCalls,
                None,
                vec![call],
                estimate(context + visible.1),
                output,
            ),
            executed: vec![ExecutedCall {
                call_id: id,
                by: super::trace::Issuer::Model,
                tool: step.call.tool.clone(),
                arguments: arguments.clone(),
                observation: outcome.observation.clone(),
            }],
        });
        context += (arguments.len() + outcome.observation.len()) as u64;
        if variant.operational_tools.contains(&step.call.tool) {
            visible = (
                operational.iter().map(|t| t.name.clone()).collect(),
                schema_bytes(&operational),
            );
        }
    }
    let answer = variant.answer_text();
    turns.push(Turn {
        request: RequestRecord {
            visible_tools: visible.0,
            body_ref: None,
        },
        response: response(
            FinishReason::Stop,
            Some(answer.clone()),
            vec![],
            estimate(context + visible.1),
            estimate(answer.len() as u64),
        ),
        executed: vec![],
    });
    Trace {
        format: TRACE_FORMAT.into(),
        family: variant.family.clone(),
        cell: variant.cell,
        variant_id: variant.variant_id.clone(),
        menu,
        limits: Limits::frozen(variant.call_limit, variant.turn_limit),
        turns,
        final_answer: Some(answer),
        stop: StopReason::Answer,
        infra: None,
    }
}
