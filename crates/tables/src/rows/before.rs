//! The three tables as they were built column by column, by name, before their row
//! structs: each derived batch must be this batch, column for column (names, types,
//! nullability, values), which is what keeps every published byte unchanged.

use std::sync::Arc;

use arrow_array::RecordBatch;

use super::*;
use crate::{HexKey, TableBuilder};
use tbb_core::compile::cell::level_name;
use tbb_core::compile::{compile, Cell};
use tbb_core::family::FamilySet;

fn variants(variants: &[&Variant]) -> Result<RecordBatch, StoreError> {
    let json = |v: &serde_json::Value| v.to_string();
    TableBuilder::new()
        .text("variant_id", variants.iter().map(|v| &v.variant_id))
        .text("family", variants.iter().map(|v| &v.family))
        .text("intent", variants.iter().map(|v| &v.intent))
        .text("domain", variants.iter().map(|v| level_name(&v.domain)))
        .text("split", variants.iter().map(|v| level_name(&v.split)))
        .u32("v", variants.iter().map(|v| u32::from(v.cell.v)))
        .text("w", variants.iter().map(|v| level_name(&v.cell.w)))
        .text("d", variants.iter().map(|v| level_name(&v.cell.d)))
        .text("r", variants.iter().map(|v| level_name(&v.cell.r)))
        .u32_opt(
            "depth",
            variants.iter().map(|v| v.cell.depth.map(u32::from)),
        )
        .u32(
            "certified_min_calls",
            variants.iter().map(|v| v.certified_min_calls),
        )
        .u32("call_limit", variants.iter().map(|v| v.call_limit))
        .u32("turn_limit", variants.iter().map(|v| v.turn_limit))
        .u32("menu_size", variants.iter().map(|v| v.menu.len() as u32))
        .u32(
            "n_operational_tools",
            variants.iter().map(|v| v.operational_tools.len() as u32),
        )
        .text("answer_json", variants.iter().map(|v| json(&v.answer())))
        .text(
            "sources_json",
            variants.iter().map(|v| json(&serde_json::json!(v.sources))),
        )
        .text("variant_hash", variants.iter().map(|v| &v.variant_hash))
        .text(
            "required_tool_kinds",
            variants.iter().map(|v| required_tool_kinds(v)),
        )
        .build("variants")
}

fn episodes(rows: &[EpisodeRow]) -> Result<RecordBatch, StoreError> {
    let mut t = TableBuilder::new()
        .text("study", rows.iter().map(|r| &r.study))
        .text("configuration", rows.iter().map(|r| &r.configuration))
        .text("organization", rows.iter().map(|r| &r.organization))
        .text("model", rows.iter().map(|r| &r.model))
        .text("route", rows.iter().map(|r| &r.route))
        .text_opt("quantization", rows.iter().map(|r| r.quantization.as_ref()))
        .text_opt(
            "reasoning_effort",
            rows.iter().map(|r| r.reasoning_effort.as_ref()),
        )
        .text("block", rows.iter().map(|r| &r.block))
        .text("arm", rows.iter().map(|r| &r.arm))
        .text("lane", rows.iter().map(|r| r.lane.name()))
        .text("repair", rows.iter().map(|r| r.repair.repair_name()))
        .text("delivery", rows.iter().map(|r| level_name(&r.delivery)))
        .text("actor", rows.iter().map(|r| level_name(&r.actor)))
        .u32("completion_cap", rows.iter().map(|r| r.completion_cap))
        .u32("repeat", rows.iter().map(|r| r.repeat))
        .text("schedule", rows.iter().map(|r| &r.schedule))
        .u32_opt(
            "schedule_position",
            rows.iter().map(|r| r.schedule_position),
        )
        .text("variant_id", rows.iter().map(|r| &r.variant_id))
        .text("family", rows.iter().map(|r| &r.family))
        .text("intent", rows.iter().map(|r| &r.intent))
        .text("domain", rows.iter().map(|r| r.domain.name()))
        .u32("v", rows.iter().map(|r| r.v))
        .text("w", rows.iter().map(|r| r.w.name()))
        .text("d", rows.iter().map(|r| r.d.name()))
        .text("r", rows.iter().map(|r| r.r.name()))
        .u32_opt("depth", rows.iter().map(|r| r.depth))
        .bool("vts", rows.iter().map(|r| r.vts));
    for (i, name) in [
        "ok_a", "ok_s", "ok_p", "ok_q", "ok_e", "ok_x", "ok_g", "ok_b", "ok_c",
    ]
    .iter()
    .enumerate()
    {
        t = t.bool(name, rows.iter().map(|r| r.ok[i]));
    }
    t = t
        .text_opt(
            "first_unmet",
            rows.iter().map(|r| r.first_unmet.map(|o| format!("{o:?}"))),
        )
        .text_opt(
            "terminal_flag",
            rows.iter().map(|r| r.terminal_flag.map(TerminalFlag::name)),
        )
        .bool("truncated", rows.iter().map(|r| r.truncated))
        .bool(
            "truncated_before_first_call",
            rows.iter().map(|r| r.truncated_before_first_call),
        )
        .u32("calls", rows.iter().map(|r| r.calls))
        .u32(
            "calls_by_controller",
            rows.iter().map(|r| r.calls_by_controller),
        )
        .u32("requests", rows.iter().map(|r| r.requests))
        .u64("schema_exposures", rows.iter().map(|r| r.schema_exposures))
        .u32("turns", rows.iter().map(|r| r.turns))
        .u64("prompt_tokens", rows.iter().map(|r| r.prompt_tokens))
        .u64(
            "completion_tokens",
            rows.iter().map(|r| r.completion_tokens),
        )
        .u64("reasoning_tokens", rows.iter().map(|r| r.reasoning_tokens))
        .u64("total_tokens", rows.iter().map(|r| r.total_tokens))
        .f64("cost_usd", rows.iter().map(|r| r.cost_usd))
        .u64("wall_ms", rows.iter().map(|r| r.wall_ms))
        .bool("infra_failure", rows.iter().map(|r| r.infra_failure))
        .text_opt(
            "infra_error",
            rows.iter().map(|r| r.infra_error.map(InfraCause::name)),
        )
        .u32_opt(
            "infra_http_status",
            rows.iter().map(|r| r.infra_http_status),
        )
        .u32_opt("infra_attempts", rows.iter().map(|r| r.infra_attempts))
        .f64_opt("sent_temperature", rows.iter().map(|r| r.sent_temperature))
        .u64_opt("sent_seed", rows.iter().map(|r| r.sent_seed))
        .bool_opt(
            "sent_parallel_tool_calls",
            rows.iter().map(|r| r.sent_parallel_tool_calls),
        )
        .text("stop_reason", rows.iter().map(|r| r.stop_reason.name()))
        .text(
            "episode_key",
            rows.iter().map(|r| r.episode_key.to_string()),
        )
        .text("transcript_ref", rows.iter().map(|r| &r.transcript_ref))
        .text("node_key", rows.iter().map(|r| &r.node_key));
    if rows.iter().any(|r| r.attempt > 1) {
        t = t.u32("attempt", rows.iter().map(|r| r.attempt));
    }
    t.build("episodes")
}

fn requests(rows: &[RequestRow]) -> Result<RecordBatch, StoreError> {
    fn e(r: &RequestRow) -> &EpisodeColumns {
        &r.episode
    }
    fn q(r: &RequestRow) -> &RequestColumns {
        &r.request
    }
    TableBuilder::new()
        .text("study", rows.iter().map(|r| &e(r).study))
        .text(
            "episode_key",
            rows.iter().map(|r| e(r).episode_key.to_string()),
        )
        .text("transcript_ref", rows.iter().map(|r| &e(r).transcript_ref))
        .text("configuration", rows.iter().map(|r| &e(r).configuration))
        .text("block", rows.iter().map(|r| &e(r).block))
        .text("arm", rows.iter().map(|r| &e(r).arm))
        .text("lane", rows.iter().map(|r| e(r).lane.name()))
        .text("repair", rows.iter().map(|r| e(r).repair.repair_name()))
        .text("delivery", rows.iter().map(|r| level_name(&e(r).delivery)))
        .text("actor", rows.iter().map(|r| level_name(&e(r).actor)))
        .u32("completion_cap", rows.iter().map(|r| e(r).completion_cap))
        .u32("repeat", rows.iter().map(|r| e(r).repeat))
        .text("schedule", rows.iter().map(|r| &e(r).schedule))
        .u32_opt(
            "schedule_position",
            rows.iter().map(|r| e(r).schedule_position),
        )
        .text("variant_id", rows.iter().map(|r| &e(r).variant_id))
        .text("family", rows.iter().map(|r| &e(r).family))
        .u32("v", rows.iter().map(|r| e(r).v))
        .text("w", rows.iter().map(|r| e(r).w.name()))
        .text("d", rows.iter().map(|r| e(r).d.name()))
        .text("r", rows.iter().map(|r| e(r).r.name()))
        .u32_opt("depth", rows.iter().map(|r| e(r).depth))
        .u32("turn", rows.iter().map(|r| q(r).turn))
        .u32("visible_schemas", rows.iter().map(|r| q(r).visible_schemas))
        .u64_opt("prompt_tokens", rows.iter().map(|r| q(r).prompt_tokens))
        .u64_opt("cached_tokens", rows.iter().map(|r| q(r).cached_tokens))
        .u64_opt(
            "completion_tokens",
            rows.iter().map(|r| q(r).completion_tokens),
        )
        .u64_opt(
            "reasoning_tokens",
            rows.iter().map(|r| q(r).reasoning_tokens),
        )
        .text_opt(
            "reasoning_source",
            rows.iter()
                .map(|r| q(r).reasoning_source.map(|s| level_name(&s))),
        )
        .text_opt(
            "finish_reason",
            rows.iter()
                .map(|r| q(r).finish_reason.map(FinishReason::name)),
        )
        .text_opt(
            "finish_reason_raw",
            rows.iter().map(|r| q(r).finish_reason_raw.as_ref()),
        )
        .text_opt(
            "response_kind",
            rows.iter()
                .map(|r| q(r).response_kind.map(ResponseKind::name)),
        )
        .bool("executed_call", rows.iter().map(|r| q(r).executed_call))
        .u32(
            "cumulative_calls",
            rows.iter().map(|r| q(r).cumulative_calls),
        )
        .u32_opt("attempts", rows.iter().map(|r| q(r).attempts))
        .text_opt(
            "infra_cause",
            rows.iter().map(|r| q(r).infra_cause.map(InfraCause::name)),
        )
        .u64("wall_ms", rows.iter().map(|r| q(r).wall_ms))
        .u64(
            "cumulative_tokens",
            rows.iter().map(|r| q(r).cumulative_tokens),
        )
        .build("requests")
}

fn same(derived: &RecordBatch, built: &RecordBatch) {
    assert_eq!(derived.schema(), built.schema());
    for (i, (d, b)) in derived.columns().iter().zip(built.columns()).enumerate() {
        assert_eq!(
            d.to_data(),
            b.to_data(),
            "column {}",
            built.schema().field(i).name()
        );
    }
}

fn compiled() -> Vec<Variant> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../families");
    let set = FamilySet::load(&root).unwrap_or_else(|e| panic!("{e}"));
    set.families
        .iter()
        .take(3)
        .flat_map(|f| {
            Cell::capacity()
                .into_iter()
                .filter_map(move |c| compile(f, &c).ok())
        })
        .collect()
}

#[test]
fn the_variants_batch_is_the_one_built_by_name() {
    let compiled = compiled();
    let refs: Vec<&Variant> = compiled.iter().collect();
    let derived = super::variants(&refs).unwrap_or_else(|e| panic!("{e}"));
    let built = variants(&refs).unwrap_or_else(|e| panic!("{e}"));
    same(&derived, &built);
    let back = VariantRow::from_batch(&derived).unwrap_or_else(|e| panic!("{e}"));
    let rows: Vec<VariantRow> = refs.iter().map(|v| VariantRow::of(v)).collect();
    assert_eq!(back, rows);
}

/// Two rows unlike in every nullable column.
fn episode_rows() -> Vec<EpisodeRow> {
    let first = EpisodeRow {
        study: "s".into(),
        configuration: "c".into(),
        organization: "o".into(),
        model: "m".into(),
        route: "r".into(),
        quantization: Some("fp4".into()),
        reasoning_effort: Some("high".into()),
        block: "main".into(),
        arm: "a".into(),
        lane: Menu::Fixed,
        repair: PromptVariant::Base,
        delivery: Delivery::Native,
        actor: Actor::Model,
        completion_cap: 1024,
        repeat: 0,
        schedule: "a>b".into(),
        schedule_position: Some(1),
        variant_id: "v1".into(),
        family: "f".into(),
        intent: "i".into(),
        domain: Domain::Email,
        v: 8,
        w: Workflow::Low,
        d: Encoding::Raw,
        r: Routing::Low,
        depth: None,
        vts: true,
        ok: [true, false, true, true, false, true, true, true, false],
        first_unmet: None,
        terminal_flag: Some(TerminalFlag::WrongConclusion),
        truncated: false,
        truncated_before_first_call: false,
        calls: 3,
        calls_by_controller: 0,
        requests: 4,
        schema_exposures: 32,
        turns: 4,
        prompt_tokens: 100,
        completion_tokens: 20,
        reasoning_tokens: 0,
        total_tokens: 120,
        cost_usd: 0.25,
        wall_ms: 9,
        infra_failure: false,
        infra_error: None,
        infra_http_status: Some(503),
        infra_attempts: None,
        sent_temperature: Some(0.0),
        sent_seed: None,
        sent_parallel_tool_calls: Some(false),
        stop_reason: StopReason::Answer,
        episode_key: HexKey::from([1; 32]),
        transcript_ref: "t1".into(),
        node_key: "n1".into(),
        attempt: 1,
    };
    let second = EpisodeRow {
        schedule_position: None,
        depth: Some(30),
        w: Workflow::High,
        d: Encoding::Linked,
        r: Routing::High,
        lane: Menu::Retrieval { k: 8 },
        repair: PromptVariant::InterfaceGuide,
        delivery: Delivery::Canonical,
        actor: Actor::Controller,
        domain: Domain::Calendar,
        first_unmet: Some(Obligation::S),
        terminal_flag: None,
        infra_error: Some(InfraCause::Timeout),
        stop_reason: StopReason::InfraFailure,
        infra_http_status: None,
        infra_attempts: Some(3),
        sent_temperature: None,
        sent_seed: Some(u64::MAX),
        sent_parallel_tool_calls: None,
        cost_usd: f64::NAN,
        episode_key: HexKey::from([2; 32]),
        quantization: None,
        reasoning_effort: None,
        ..first.clone()
    };
    vec![first, second]
}

#[test]
fn the_episodes_batch_is_the_one_built_by_name_with_attempt_or_without() {
    let mut rows = episode_rows();
    same(
        &super::episodes(&rows).unwrap_or_else(|e| panic!("{e}")),
        &episodes(&rows).unwrap_or_else(|e| panic!("{e}")),
    );
    rows[1].attempt = 2;
    let derived = super::episodes(&rows).unwrap_or_else(|e| panic!("{e}"));
    same(&derived, &episodes(&rows).unwrap_or_else(|e| panic!("{e}")));
    let back = EpisodeRow::from_batch(&derived).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back[0], rows[0]);
    assert_eq!(back[1].attempt, 2);
    assert!(back[1].cost_usd.is_nan());
    let empty = super::episodes(&[]).unwrap_or_else(|e| panic!("{e}"));
    same(&empty, &episodes(&[]).unwrap_or_else(|e| panic!("{e}")));
}

#[test]
fn the_requests_batch_is_the_one_built_by_name() {
    let episodes = episode_rows();
    let columns: Vec<Arc<EpisodeColumns>> = episodes
        .iter()
        .map(|e| Arc::new(EpisodeColumns::of(e)))
        .collect();
    let request = |turn: u32, answered: bool| RequestColumns {
        turn,
        visible_schemas: 8,
        prompt_tokens: answered.then_some(100),
        cached_tokens: answered.then_some(0),
        completion_tokens: answered.then_some(20),
        reasoning_tokens: None,
        reasoning_source: answered.then_some(ReasoningSource::Unknown),
        finish_reason: answered.then_some(FinishReason::ToolCalls),
        finish_reason_raw: answered.then(|| "tool_use".to_string()),
        response_kind: answered.then_some(ResponseKind::ToolCall),
        executed_call: answered,
        cumulative_calls: turn,
        attempts: (!answered).then_some(4),
        infra_cause: (!answered).then_some(InfraCause::ServerError),
        wall_ms: 5,
        cumulative_tokens: 120 * u64::from(turn),
    };
    let rows = vec![
        RequestRow {
            episode: columns[0].clone(),
            request: request(0, true),
        },
        RequestRow {
            episode: columns[0].clone(),
            request: request(1, true),
        },
        RequestRow {
            episode: columns[1].clone(),
            request: request(0, false),
        },
    ];
    let derived = super::requests(&rows).unwrap_or_else(|e| panic!("{e}"));
    same(&derived, &requests(&rows).unwrap_or_else(|e| panic!("{e}")));
    let back = RequestRow::from_batch(&derived).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, rows);
    let empty = super::requests(&[]).unwrap_or_else(|e| panic!("{e}"));
    same(&empty, &requests(&[]).unwrap_or_else(|e| panic!("{e}")));
}
