//! The layouts of `variants.parquet`, `episodes.parquet` and `requests.parquet` (the
//! notebook contract of `docs/architecture.md`, "The table contract": stable snake_case
//! column names).

use arrow_array::RecordBatch;
use serde::Serialize;

use super::{StoreError, TableBuilder};
use tbb_core::compile::cell::level_name;
use tbb_core::compile::Variant;
use tbb_harness::arm::name_of;
use tbb_harness::{Actor, Delivery, Episode, EpisodeSpec};

/// `variants.parquet`: one row per compiled variant.
pub fn variants(variants: &[&Variant]) -> Result<RecordBatch, StoreError> {
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

/// The tools the variant's reference program calls, each without its connector
/// prefix (`nwf_euw_recv_read_invoice` → `read_invoice`), sorted and joined by `+`:
/// the discovery study's required-tool cluster. A tool the menu does not list keeps
/// its full name.
pub fn required_tool_kinds(v: &Variant) -> String {
    let mut kinds: Vec<String> = v
        .required_tools()
        .into_iter()
        .map(|name| {
            v.tool(&name)
                .and_then(|t| name.strip_prefix(&format!("{}_", t.connector)))
                .map_or_else(|| name.clone(), str::to_string)
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds.join("+")
}

/// One row of `episodes.parquet`: one scored condition.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct EpisodeRow {
    /// Study (manifest) name.
    pub study: String,
    /// Configuration name.
    pub configuration: String,
    /// Its organization.
    pub organization: String,
    /// Its model.
    pub model: String,
    /// Its provider route.
    pub route: String,
    /// The design block the episode belongs to (`main` when the manifest has none).
    #[serde(default)]
    pub block: String,
    /// The arm's name in the manifest.
    #[serde(default)]
    pub arm: String,
    /// The arm's menu component (`routed`, `fixed`): the capacity tables' lane.
    pub lane: String,
    /// The arm's prompt component as a repair (`none`, `workflow_prompt`,
    /// `interface_guide`).
    pub repair: String,
    /// The arm's delivery component (`native`).
    #[serde(default)]
    pub delivery: String,
    /// The arm's actor component (`model`).
    #[serde(default)]
    pub actor: String,
    /// Completion cap.
    pub completion_cap: u32,
    /// Repeat index.
    pub repeat: u32,
    /// The order the arms of this condition ran in, in this repeat: names joined by
    /// `>` when they ran one after another, by `|` when side by side.
    #[serde(default)]
    pub schedule: String,
    /// This arm's place (from 1) in `schedule` when the arms ran one after another;
    /// null when they ran side by side.
    #[serde(default)]
    pub schedule_position: Option<u32>,
    /// The variant.
    pub variant_id: String,
    /// Family.
    pub family: String,
    /// Intent.
    pub intent: String,
    /// Record domain (accounting, email, file, calendar).
    pub domain: String,
    /// Menu size.
    pub v: u32,
    /// Workflow level.
    pub w: String,
    /// Encoding.
    pub d: String,
    /// Routing difficulty.
    pub r: String,
    /// Frontier depth.
    pub depth: Option<u32>,
    /// Verified task success.
    pub vts: bool,
    /// The nine obligations.
    pub ok: [bool; 9],
    /// First unmet obligation.
    pub first_unmet: Option<String>,
    /// Terminal flag.
    pub terminal_flag: Option<String>,
    /// Some response ended at the cap.
    pub truncated: bool,
    /// ... before any call was executed.
    pub truncated_before_first_call: bool,
    /// Executed calls.
    pub calls: u32,
    /// Of which the public-handoff controller issued (0 unless `actor = controller`).
    #[serde(default)]
    pub calls_by_controller: u32,
    /// Model requests.
    pub requests: u32,
    /// Tool schemas sent over the episode's requests, summed over requests. The routed
    /// lane's narrowing makes it smaller than `requests × v`; the fixed lane's equals it.
    pub schema_exposures: u64,
    /// Turns (requests answered).
    pub turns: u32,
    /// Prompt tokens over the episode.
    pub prompt_tokens: u64,
    /// Completion tokens over the episode.
    pub completion_tokens: u64,
    /// Reasoning tokens over the episode (reported or derived; 0 when unknown).
    pub reasoning_tokens: u64,
    /// Prompt + completion.
    pub total_tokens: u64,
    /// Tokens × frozen prices.
    pub cost_usd: f64,
    /// Wall time (excluded from determinism checks).
    pub wall_ms: u64,
    /// Provider failure after retries, or a response without valid usage.
    pub infra_failure: bool,
    /// Its cause (`rate_limited`, `server_error`, `timeout`, `transport`, `auth`,
    /// `context_exceeded`, `other_status`, `bad_body`, `bad_usage`, `config`); null when none.
    pub infra_error: Option<String>,
    /// The last HTTP status seen for the failing request; null when none came.
    pub infra_http_status: Option<u32>,
    /// Attempts made for the failing request, retries included.
    pub infra_attempts: Option<u32>,
    /// The temperature the wire body carried; null when not sent.
    pub sent_temperature: Option<f64>,
    /// The seed the wire body carried (after the API's range reduction); null when not
    /// sent.
    pub sent_seed: Option<u64>,
    /// `parallel_tool_calls` as the wire body carried it (Anthropic: the negation of
    /// `disable_parallel_tool_use`); null when not sent.
    pub sent_parallel_tool_calls: Option<bool>,
    /// Why the harness stopped.
    pub stop_reason: String,
    /// The episode's content key ([`tbb_harness::episode_key`]): what the episode is
    /// (configuration, variant, arm, prompts, cap, repeat), not where the design puts
    /// it. The same column, with this meaning, in every table with a row per episode
    /// or per request (`requests`, `frontier_paths`, `certificates`): the key to join
    /// them on.
    pub episode_key: String,
    /// The key of the execute node that ran the episode, which addresses its stored
    /// transcript (`tbb show` takes it); `requests` has the same column.
    pub transcript_ref: String,
    /// The key of the grade node that graded it (`certificates` has the same column).
    pub node_key: String,
    /// The attempt that ran the episode: 1, or more once `tbb apply --retry-infra`
    /// reran it after an infrastructure failure. Placed at publication, like `arm`
    /// ([`EpisodeRow::place`]); never stored with the row. The `attempt` column of
    /// `episodes.parquet` is there only when some episode of the study was retried
    /// ([`episodes`]).
    #[serde(skip, default = "first_attempt")]
    pub attempt: u32,
}

fn first_attempt() -> u32 {
    1
}

impl EpisodeRow {
    /// The layout of the row a grade node stores in the cache (its JSON): bump it when
    /// a field is added, removed, renamed or retyped, so that every grade node reruns
    /// instead of leaving rows that no longer deserialise (`pipeline::rows`). It enters
    /// every grade node's key, so a bump also changes every key downstream (the
    /// provenance of each analysis table). A new required field may leave it: the plan
    /// finds the old rows unreadable ("missing field") and regrades them from their
    /// stored transcripts, with no provider request and every key as it was;
    /// `episode_key` was added so.
    pub const ROW_VERSION: u32 = 1;

    /// The episode's row of `episodes.parquet`, with its place in the design blank
    /// ([`EpisodeRow::place`] fills it at publication).
    pub fn of_episode(
        episode: &Episode,
        study: &str,
        spec: &EpisodeSpec<'_>,
        transcript_ref: &str,
        node_key: &str,
    ) -> EpisodeRow {
        let v = spec.variant;
        let verdict = &episode.verdict;
        let usage: Vec<&tbb_core::grade::trace::Usage> = episode
            .trace
            .turns
            .iter()
            .map(|t| &t.response.usage)
            .collect();
        let prompt_tokens = usage
            .iter()
            .map(|u| u.input_tokens)
            .fold(0, u64::saturating_add);
        let completion_tokens = usage
            .iter()
            .map(|u| u.output_tokens)
            .fold(0, u64::saturating_add);
        EpisodeRow {
            study: study.into(),
            configuration: spec.config.name.clone(),
            organization: spec.config.organization.clone(),
            model: spec.config.model.clone(),
            route: spec.config.route(),
            arm: String::new(),
            lane: spec.arm.menu.name(),
            repair: spec.arm.prompt.repair_name().into(),
            delivery: name_of(&Delivery::NAMES, spec.arm.delivery),
            actor: name_of(&Actor::NAMES, spec.arm.actor),
            block: String::new(),
            schedule: String::new(),
            schedule_position: None,
            completion_cap: spec.completion_cap,
            repeat: spec.repeat,
            variant_id: v.variant_id.clone(),
            family: v.family.clone(),
            intent: v.intent.clone(),
            domain: level_name(&v.domain),
            v: u32::from(v.cell.v),
            w: level_name(&v.cell.w),
            d: level_name(&v.cell.d),
            r: level_name(&v.cell.r),
            depth: v.cell.depth.map(u32::from),
            vts: verdict.vts,
            ok: verdict.obligations.in_order().map(|(_, ok)| ok),
            first_unmet: verdict.first_unmet.map(|o| format!("{o:?}")),
            terminal_flag: verdict.terminal_flag.map(|f| level_name(&f)),
            truncated: verdict.truncated,
            truncated_before_first_call: verdict.truncated_before_first_call,
            calls: verdict.calls,
            calls_by_controller: episode
                .trace
                .executed_calls()
                .filter(|c| !c.by.is_model())
                .count() as u32,
            requests: episode.transcript.requests.len() as u32,
            schema_exposures: episode.schema_exposures(),
            turns: verdict.requests,
            prompt_tokens,
            completion_tokens,
            reasoning_tokens: usage
                .iter()
                .filter_map(|u| u.reasoning_tokens)
                .fold(0, u64::saturating_add),
            total_tokens: prompt_tokens.saturating_add(completion_tokens),
            cost_usd: spec
                .config
                .prices
                .cost_usd(prompt_tokens, completion_tokens),
            wall_ms: episode.wall_ms,
            infra_failure: verdict.infra_failure,
            infra_error: verdict.infra.as_ref().map(|i| level_name(&i.cause)),
            infra_http_status: verdict
                .infra
                .as_ref()
                .and_then(|i| i.http_status.map(u32::from)),
            infra_attempts: verdict.infra.as_ref().map(|i| i.attempts),
            sent_temperature: episode.transcript.wire_sampling.and_then(|s| s.temperature),
            sent_seed: episode.transcript.wire_sampling.and_then(|s| s.seed),
            sent_parallel_tool_calls: episode
                .transcript
                .wire_sampling
                .and_then(|s| s.parallel_tool_calls),
            stop_reason: level_name(&episode.trace.stop),
            episode_key: episode.key.clone(),
            transcript_ref: transcript_ref.into(),
            node_key: node_key.into(),
            attempt: 1,
        }
    }

    /// Puts the row in its place in the design: its block, its arm's name and its
    /// schedule, which the pipeline reads off the DAG at publication so that renaming a
    /// block or an arm relabels cached rows without rerunning them.
    pub fn place(&mut self, place: Placement) {
        self.block = place.block;
        self.arm = place.arm;
        self.schedule = place.schedule;
        self.schedule_position = place.schedule_position;
        self.attempt = place.attempt;
    }
}

/// Where an episode sits in the design ([`EpisodeRow::place`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    /// The block's name.
    pub block: String,
    /// The arm's name.
    pub arm: String,
    /// The order the condition's arms ran in ([`EpisodeRow::schedule`]).
    pub schedule: String,
    /// This arm's place in it ([`EpisodeRow::schedule_position`]).
    pub schedule_position: Option<u32>,
    /// The attempt that ran it ([`EpisodeRow::attempt`]).
    pub attempt: u32,
}

/// `episodes.parquet`. Its last column, `attempt`, is there only when some episode was
/// retried (`tbb apply --retry-infra`): a study whose every episode ran once publishes
/// the table it always did, byte for byte, and a reader takes a missing `attempt`
/// column as 1 for every row.
pub fn episodes(rows: &[EpisodeRow]) -> Result<RecordBatch, StoreError> {
    let mut t = TableBuilder::new()
        .text("study", rows.iter().map(|r| &r.study))
        .text("configuration", rows.iter().map(|r| &r.configuration))
        .text("organization", rows.iter().map(|r| &r.organization))
        .text("model", rows.iter().map(|r| &r.model))
        .text("route", rows.iter().map(|r| &r.route))
        .text("block", rows.iter().map(|r| &r.block))
        .text("arm", rows.iter().map(|r| &r.arm))
        .text("lane", rows.iter().map(|r| &r.lane))
        .text("repair", rows.iter().map(|r| &r.repair))
        .text("delivery", rows.iter().map(|r| &r.delivery))
        .text("actor", rows.iter().map(|r| &r.actor))
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
        .text("domain", rows.iter().map(|r| &r.domain))
        .u32("v", rows.iter().map(|r| r.v))
        .text("w", rows.iter().map(|r| &r.w))
        .text("d", rows.iter().map(|r| &r.d))
        .text("r", rows.iter().map(|r| &r.r))
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
        .text_opt("first_unmet", rows.iter().map(|r| r.first_unmet.as_ref()))
        .text_opt(
            "terminal_flag",
            rows.iter().map(|r| r.terminal_flag.as_ref()),
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
        .text_opt("infra_error", rows.iter().map(|r| r.infra_error.as_ref()))
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
        .text("stop_reason", rows.iter().map(|r| &r.stop_reason))
        .text("episode_key", rows.iter().map(|r| &r.episode_key))
        .text("transcript_ref", rows.iter().map(|r| &r.transcript_ref))
        .text("node_key", rows.iter().map(|r| &r.node_key));
    if rows.iter().any(|r| r.attempt > 1) {
        t = t.u32("attempt", rows.iter().map(|r| r.attempt));
    }
    t.build("episodes")
}

/// What a row of `requests.parquet` copies from its episode's row: which episode it
/// belongs to and the episode's condition. Every request of an episode shares one
/// (behind an `Arc`), so the strings are not repeated per request.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeColumns {
    /// Study (manifest) name.
    pub study: String,
    /// The episode's content key ([`EpisodeRow::episode_key`]).
    pub episode_key: String,
    /// The key of the episode's execute node ([`EpisodeRow::transcript_ref`]).
    pub transcript_ref: String,
    /// Configuration name.
    pub configuration: String,
    /// Design block.
    pub block: String,
    /// Arm name.
    pub arm: String,
    /// The arm's menu component.
    pub lane: String,
    /// The arm's prompt component as a repair.
    pub repair: String,
    /// The arm's delivery component.
    pub delivery: String,
    /// The arm's actor component.
    pub actor: String,
    /// Completion cap.
    pub completion_cap: u32,
    /// Repeat index.
    pub repeat: u32,
    /// The order the arms of the condition ran in.
    pub schedule: String,
    /// This arm's place in `schedule`, when ordered.
    pub schedule_position: Option<u32>,
    /// The variant.
    pub variant_id: String,
    /// Family.
    pub family: String,
    /// Menu size.
    pub v: u32,
    /// Workflow level.
    pub w: String,
    /// Encoding.
    pub d: String,
    /// Routing difficulty.
    pub r: String,
    /// Frontier depth.
    pub depth: Option<u32>,
}

impl EpisodeColumns {
    /// The columns of `row`'s episode. The one place where a request row takes its
    /// episode's keys and condition: a new condition column of [`EpisodeRow`] is
    /// copied here (and written in [`requests`]).
    pub fn of(row: &EpisodeRow) -> EpisodeColumns {
        EpisodeColumns {
            study: row.study.clone(),
            episode_key: row.episode_key.clone(),
            transcript_ref: row.transcript_ref.clone(),
            configuration: row.configuration.clone(),
            block: row.block.clone(),
            arm: row.arm.clone(),
            lane: row.lane.clone(),
            repair: row.repair.clone(),
            delivery: row.delivery.clone(),
            actor: row.actor.clone(),
            completion_cap: row.completion_cap,
            repeat: row.repeat,
            schedule: row.schedule.clone(),
            schedule_position: row.schedule_position,
            variant_id: row.variant_id.clone(),
            family: row.family.clone(),
            v: row.v,
            w: row.w.clone(),
            d: row.d.clone(),
            r: row.r.clone(),
            depth: row.depth,
        }
    }
}

/// One row of `requests.parquet`: one provider request of a graded episode.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    /// The episode's columns, shared by its requests.
    pub episode: std::sync::Arc<EpisodeColumns>,
    /// The request's own columns.
    pub request: RequestColumns,
}

/// The columns of one request, read off its episode's transcript and trace
/// (`crate::requests` reads them and defines each).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestColumns {
    /// The request's place in the episode, from 0.
    pub turn: u32,
    /// Tool schemas the request carried.
    pub visible_schemas: u32,
    /// Prompt tokens; null when no usage came (a failed request, or usage that is
    /// missing or not counts).
    pub prompt_tokens: Option<u64>,
    /// Of which served from a cache; null as `prompt_tokens`.
    pub cached_tokens: Option<u64>,
    /// Completion tokens, reasoning included; null as `prompt_tokens`.
    pub completion_tokens: Option<u64>,
    /// Reasoning tokens, when the provider reported them (or its client derived them).
    pub reasoning_tokens: Option<u64>,
    /// `reported`, `derived` or `unknown`; null as `prompt_tokens`.
    pub reasoning_source: Option<&'static str>,
    /// Normalised finish reason; null for a failed request.
    pub finish_reason: Option<&'static str>,
    /// The provider's own finish reason; null for a failed request.
    pub finish_reason_raw: Option<String>,
    /// What the response holds; null for a failed request.
    pub response_kind: Option<&'static str>,
    /// The harness executed this response's tool call.
    pub executed_call: bool,
    /// Calls executed in the episode so far, this response's included.
    pub cumulative_calls: u32,
    /// Provider attempts of the request, retries included; null when the transcript
    /// predates per-request attempts and the request succeeded.
    pub attempts: Option<u32>,
    /// The infrastructure cause when this request ended the episode as an
    /// infrastructure failure.
    pub infra_cause: Option<String>,
    /// Wall time of the request (excluded from determinism checks).
    pub wall_ms: u64,
    /// Reported prompt + completion tokens of the episode so far, this request's
    /// included.
    pub cumulative_tokens: u64,
}

/// `requests.parquet`.
pub fn requests(rows: &[RequestRow]) -> Result<RecordBatch, StoreError> {
    fn e(r: &RequestRow) -> &EpisodeColumns {
        &r.episode
    }
    fn q(r: &RequestRow) -> &RequestColumns {
        &r.request
    }
    TableBuilder::new()
        .text("study", rows.iter().map(|r| &e(r).study))
        .text("episode_key", rows.iter().map(|r| &e(r).episode_key))
        .text("transcript_ref", rows.iter().map(|r| &e(r).transcript_ref))
        .text("configuration", rows.iter().map(|r| &e(r).configuration))
        .text("block", rows.iter().map(|r| &e(r).block))
        .text("arm", rows.iter().map(|r| &e(r).arm))
        .text("lane", rows.iter().map(|r| &e(r).lane))
        .text("repair", rows.iter().map(|r| &e(r).repair))
        .text("delivery", rows.iter().map(|r| &e(r).delivery))
        .text("actor", rows.iter().map(|r| &e(r).actor))
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
        .text("w", rows.iter().map(|r| &e(r).w))
        .text("d", rows.iter().map(|r| &e(r).d))
        .text("r", rows.iter().map(|r| &e(r).r))
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
            rows.iter().map(|r| q(r).reasoning_source),
        )
        .text_opt("finish_reason", rows.iter().map(|r| q(r).finish_reason))
        .text_opt(
            "finish_reason_raw",
            rows.iter().map(|r| q(r).finish_reason_raw.as_ref()),
        )
        .text_opt("response_kind", rows.iter().map(|r| q(r).response_kind))
        .bool("executed_call", rows.iter().map(|r| q(r).executed_call))
        .u32(
            "cumulative_calls",
            rows.iter().map(|r| q(r).cumulative_calls),
        )
        .u32_opt("attempts", rows.iter().map(|r| q(r).attempts))
        .text_opt(
            "infra_cause",
            rows.iter().map(|r| q(r).infra_cause.as_ref()),
        )
        .u64("wall_ms", rows.iter().map(|r| q(r).wall_ms))
        .u64(
            "cumulative_tokens",
            rows.iter().map(|r| q(r).cumulative_tokens),
        )
        .build("requests")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{read_table, write_table, Provenance};
    use tbb_core::compile::{compile, Cell};
    use tbb_core::family::FamilySet;

    #[test]
    fn the_variants_table_round_trips_with_its_columns_and_provenance() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../families");
        let set = FamilySet::load(&root).unwrap_or_else(|e| panic!("{e}"));
        let compiled: Vec<Variant> = set
            .families
            .iter()
            .take(3)
            .flat_map(|f| {
                Cell::capacity()
                    .into_iter()
                    .filter_map(move |c| compile(f, &c).ok())
            })
            .collect();
        let refs: Vec<&Variant> = compiled.iter().collect();
        let batch = match variants(&refs) {
            Ok(b) => b,
            Err(e) => panic!("{e}"),
        };
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("variants.parquet");
        let provenance = Provenance {
            manifest_hash: "m".into(),
            lockfile_hash: "l".into(),
            node_key: "n".into(),
        };
        if let Err(e) = write_table(&path, &batch, &provenance) {
            panic!("{e}");
        }
        let (back, meta) = read_table(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.iter().map(RecordBatch::num_rows).sum::<usize>(), 36);
        assert_eq!(back[0].schema(), batch.schema());
        for column in [
            "variant_id",
            "family",
            "intent",
            "domain",
            "v",
            "w",
            "d",
            "r",
            "depth",
            "certified_min_calls",
            "call_limit",
            "turn_limit",
            "menu_size",
            "n_operational_tools",
            "answer_json",
            "sources_json",
            "variant_hash",
            "required_tool_kinds",
        ] {
            assert!(batch.schema().field_with_name(column).is_ok(), "{column}");
        }
        assert!(meta.contains(&("tbb.manifest_hash".to_string(), "m".to_string())));
        // The same rows give the same bytes.
        let again = dir.path().join("again.parquet");
        let _ = write_table(&again, &batch, &provenance);
        assert_eq!(std::fs::read(&path).ok(), std::fs::read(&again).ok());
    }
}
