//! The rows of `variants.parquet`, `episodes.parquet` and `requests.parquet` (the
//! notebook contract of `docs/architecture.md`, "The table contract": stable snake_case
//! column names): [`VariantRow`], [`EpisodeRow`] and [`RequestRow`], each a
//! [`TableRow`] that writes its table and reads it back.
//!
//! Owns: each of the three tables' columns (name, order, type, nullability), the one
//! builder of an episode's row ([`EpisodeRow::of_episode`]), and writing the two large
//! tables a row group at a time ([`write_episodes`], [`requests_writer`]). Every level a
//! row carries (a cell's pressures, the domain and split, the arm's components, how the
//! episode ended, what each response was) is its factor's own type ([`crate::levels`]),
//! written as its name, so a misspelt or renamed level does not compile.
//!
//! Never: decides what an episode did (the harness and the grader do) or where a
//! table is written (the pipeline gives the path).

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{FieldRef, Schema};
use serde::{Deserialize, Serialize};

use super::{chunked, Name, Provenance, StoreError, TableRow};
use crate::levels::{
    Actor, Delivery, Domain, Encoding, FinishReason, InfraCause, Menu, Obligation, PromptVariant,
    ReasoningSource, ResponseKind, Routing, Split, StopReason, TerminalFlag, Workflow,
};
use tbb_core::compile::Variant;
use tbb_harness::{Episode, EpisodeSpec};

/// One row of `variants.parquet`: one compiled variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantRow {
    /// The variant's id.
    pub variant_id: String,
    /// Family.
    pub family: String,
    /// Intent.
    pub intent: String,
    /// Record domain.
    pub domain: Domain,
    /// The study the family belongs to.
    pub split: Split,
    /// Menu size.
    pub v: u32,
    /// Workflow level.
    pub w: Workflow,
    /// Encoding.
    pub d: Encoding,
    /// Routing difficulty.
    pub r: Routing,
    /// Frontier depth; null outside the frontier study.
    pub depth: Option<u32>,
    /// The reference program's certified minimum of calls.
    pub certified_min_calls: u32,
    /// The harness's call limit for the variant.
    pub call_limit: u32,
    /// The harness's turn limit for the variant.
    pub turn_limit: u32,
    /// Tools on the visible menu.
    pub menu_size: u32,
    /// Operational tools of the family.
    pub n_operational_tools: u32,
    /// The reference answer, as JSON.
    pub answer_json: String,
    /// The reference answer's sources, as JSON.
    pub sources_json: String,
    /// The variant's content hash.
    pub variant_hash: String,
    /// The discovery study's required-tool cluster ([`required_tool_kinds`]).
    pub required_tool_kinds: String,
}

impl TableRow for VariantRow {
    const TABLE: &'static str = "variants";
}

impl VariantRow {
    /// The row of a compiled variant.
    pub fn of(v: &Variant) -> VariantRow {
        VariantRow {
            variant_id: v.variant_id.clone(),
            family: v.family.clone(),
            intent: v.intent.clone(),
            domain: v.domain,
            split: v.split,
            v: u32::from(v.cell.v),
            w: v.cell.w,
            d: v.cell.d,
            r: v.cell.r,
            depth: v.cell.depth.map(u32::from),
            certified_min_calls: v.certified_min_calls,
            call_limit: v.call_limit,
            turn_limit: v.turn_limit,
            // A menu or a family has a few dozen tools at most.
            menu_size: v.menu.len() as u32,
            n_operational_tools: v.operational_tools.len() as u32,
            answer_json: v.answer().to_string(),
            sources_json: serde_json::json!(v.sources).to_string(),
            variant_hash: v.variant_hash.clone(),
            required_tool_kinds: required_tool_kinds(v),
        }
    }
}

/// `variants.parquet`: one row per compiled variant.
pub fn variants(variants: &[&Variant]) -> Result<RecordBatch, StoreError> {
    let rows: Vec<VariantRow> = variants.iter().map(|v| VariantRow::of(v)).collect();
    VariantRow::to_batch(&rows)
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

/// Defines [`EpisodeRow`] and [`Published`], the columns `episodes.parquet` holds,
/// from one list of fields, so that the row the cache stores and the row the table
/// holds cannot drift apart. They differ in two fields only: the row keeps its nine
/// obligations as one list `ok` (the layout every grade node has stored, which must not
/// change: `EpisodeRow::ROW_VERSION`) where the table has nine columns `ok_a` …
/// `ok_c`, and `attempt` is never stored and a column only when some episode was
/// retried ([`episodes`]). A field followed by `as "path"` is (de)serialised `with` that
/// module in both (a level named in rows otherwise than by serde,
/// [`crate::levels::by_row_name`]); one followed by `=> "path"`, in the table only
/// ([`key_column`]: the row the cache stores keeps its type's own serde).
macro_rules! episode_row {
    (
        $(#[$row_meta:meta])*
        before_obligations {
            $( $(#[$h_meta:meta])* $h:ident: $h_ty:ty $(as $h_with:literal)?, )*
        }
        after_obligations {
            $( $(#[$t_meta:meta])* $t:ident: $t_ty:ty $(as $t_with:literal)? $(=> $t_pub:literal)?, )*
        }
    ) => {
        $(#[$row_meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct EpisodeRow {
            $( $(#[$h_meta])* $(#[serde(with = $h_with)])? pub $h: $h_ty, )*
            /// The nine obligations, in the grader's order (`ok_a` … `ok_c`).
            pub ok: [bool; 9],
            $( $(#[$t_meta])* $(#[serde(with = $t_with)])? pub $t: $t_ty, )*
            /// The attempt that ran the episode: 1, or more once `tbb apply --retry-infra`
            /// reran it after an infrastructure failure. Placed at publication, like `arm`
            /// ([`EpisodeRow::place`]); never stored with the row. The `attempt` column of
            /// `episodes.parquet` is there only when some episode of the study was retried
            /// ([`episodes`]).
            #[serde(skip, default = "first_attempt")]
            pub attempt: u32,
        }

        /// The columns of one row of `episodes.parquet` but `attempt`, in order: the
        /// fields of [`EpisodeRow`] (documented there) with `ok` as nine columns.
        #[derive(Serialize, Deserialize)]
        struct Published {
            $( $(#[serde(with = $h_with)])? $h: $h_ty, )*
            ok_a: bool,
            ok_s: bool,
            ok_p: bool,
            ok_q: bool,
            ok_e: bool,
            ok_x: bool,
            ok_g: bool,
            ok_b: bool,
            ok_c: bool,
            $( $(#[serde(with = $t_with)])? $(#[serde(with = $t_pub)])? $t: $t_ty, )*
        }

        impl Published {
            fn of(row: &EpisodeRow) -> Published {
                let [ok_a, ok_s, ok_p, ok_q, ok_e, ok_x, ok_g, ok_b, ok_c] = row.ok;
                Published {
                    $( $h: row.$h.clone(), )*
                    ok_a, ok_s, ok_p, ok_q, ok_e, ok_x, ok_g, ok_b, ok_c,
                    $( $t: row.$t.clone(), )*
                }
            }

            fn into_row(self, attempt: u32) -> EpisodeRow {
                EpisodeRow {
                    $( $h: self.$h, )*
                    ok: [
                        self.ok_a, self.ok_s, self.ok_p, self.ok_q, self.ok_e, self.ok_x,
                        self.ok_g, self.ok_b, self.ok_c,
                    ],
                    $( $t: self.$t, )*
                    attempt,
                }
            }
        }
    };
}

episode_row! {
    /// One row of `episodes.parquet`: one scored condition.
    before_obligations {
        /// Study (manifest) name.
        study: Name,
        /// Configuration name.
        configuration: Name,
        /// Its organization.
        organization: Name,
        /// Its model.
        model: Name,
        /// Its provider route.
        route: Name,
        /// The weights' numeric format the route serves (the catalogue's
        /// `quantization`); null when the catalogue does not say. Rows stored before
        /// the field read as null, which they were: a configuration that names one has
        /// another identity, so its episodes are new.
        #[serde(default)]
        quantization: Option<Name>,
        /// The reasoning effort sent on every request (the catalogue's
        /// `profile.reasoning_effort`); null when none is sent (the provider's default).
        #[serde(default)]
        reasoning_effort: Option<Name>,
        /// The design block the episode belongs to (`main` when the manifest has none).
        #[serde(default)]
        block: Name,
        /// The arm's name in the manifest.
        #[serde(default)]
        arm: Name,
        /// The arm's menu component (`routed`, `fixed`, `router`, `retrieval_k<k>`): the
        /// capacity tables' lane.
        lane: Menu as "crate::levels::by_row_name",
        /// The arm's prompt component as a repair (`none`, `workflow_prompt`,
        /// `interface_guide`).
        repair: PromptVariant as "crate::levels::by_row_name",
        /// The arm's delivery component (`native`, `canonical`).
        #[serde(default)]
        delivery: Delivery,
        /// The arm's actor component (`model`, `controller`).
        #[serde(default)]
        actor: Actor,
        /// Completion cap.
        completion_cap: u32,
        /// Repeat index.
        repeat: u32,
        /// The order the arms of this condition ran in, in this repeat: names joined by
        /// `>` when they ran one after another, by `|` when side by side.
        #[serde(default)]
        schedule: Name,
        /// This arm's place (from 1) in `schedule` when the arms ran one after another;
        /// null when they ran side by side.
        #[serde(default)]
        schedule_position: Option<u32>,
        /// The variant.
        variant_id: Name,
        /// Family.
        family: Name,
        /// Intent.
        intent: Name,
        /// Record domain (accounting, email, file, calendar).
        domain: Domain,
        /// Menu size.
        v: u32,
        /// Workflow level.
        w: Workflow,
        /// Encoding.
        d: Encoding,
        /// Routing difficulty.
        r: Routing,
        /// Frontier depth.
        depth: Option<u32>,
        /// Verified task success.
        vts: bool,
    }
    after_obligations {
        /// First unmet obligation (`A` … `C`).
        first_unmet: Option<Obligation>,
        /// Terminal flag.
        terminal_flag: Option<TerminalFlag>,
        /// Some response ended at the cap.
        truncated: bool,
        /// ... before any call was executed.
        truncated_before_first_call: bool,
        /// Executed calls.
        calls: u32,
        /// Of which the public-handoff controller issued (0 unless `actor = controller`).
        #[serde(default)]
        calls_by_controller: u32,
        /// Model requests.
        requests: u32,
        /// Tool schemas sent over the episode's requests, summed over requests. The routed
        /// lane's narrowing makes it smaller than `requests × v`; the fixed lane's equals it.
        schema_exposures: u64,
        /// Turns (requests answered).
        turns: u32,
        /// Prompt tokens over the episode.
        prompt_tokens: u64,
        /// Completion tokens over the episode.
        completion_tokens: u64,
        /// Reasoning tokens over the episode (reported or derived; 0 when unknown).
        reasoning_tokens: u64,
        /// Prompt + completion.
        total_tokens: u64,
        /// Tokens × frozen prices.
        cost_usd: f64,
        /// Wall time (excluded from determinism checks).
        wall_ms: u64,
        /// Provider failure after retries, or a response without valid usage.
        infra_failure: bool,
        /// Its cause (`rate_limited`, `server_error`, `timeout`, `transport`, `auth`,
        /// `context_exceeded`, `other_status`, `bad_body`, `bad_usage`, `config`); null when none.
        infra_error: Option<InfraCause>,
        /// The last HTTP status seen for the failing request; null when none came.
        infra_http_status: Option<u32>,
        /// Attempts made for the failing request, retries included.
        infra_attempts: Option<u32>,
        /// The temperature the wire body carried; null when not sent.
        sent_temperature: Option<f64>,
        /// The seed the wire body carried (after the API's range reduction); null when not
        /// sent.
        sent_seed: Option<u64>,
        /// `parallel_tool_calls` as the wire body carried it (Anthropic: the negation of
        /// `disable_parallel_tool_use`); null when not sent.
        sent_parallel_tool_calls: Option<bool>,
        /// Why the harness stopped.
        stop_reason: StopReason,
        /// The episode's content key ([`tbb_harness::episode_key`]): what the episode is
        /// (configuration, variant, arm, prompts, cap, repeat), not where the design puts
        /// it. The same column, with this meaning, in every table with a row per episode
        /// or per request (`requests`, `frontier_paths`, `certificates`): the key to join
        /// them on.
        episode_key: tbb_harness::HexKey => "crate::rows::key_column",
        /// The key of the execute node that ran the episode, which addresses its stored
        /// transcript (`tbb show` takes it); `requests` has the same column. Shared with
        /// the DAG's node, not copied.
        transcript_ref: Arc<str>,
        /// The key of the grade node that graded it (`certificates` has the same column).
        /// Shared with the DAG's node, not copied.
        node_key: Arc<str>,
    }
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
        transcript_ref: impl Into<Arc<str>>,
        node_key: impl Into<Arc<str>>,
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
            configuration: Name::new(&spec.config.name),
            organization: Name::new(&spec.config.organization),
            model: Name::new(&spec.config.model),
            route: spec.config.route().into(),
            quantization: spec.config.quantization.as_deref().map(Name::new),
            reasoning_effort: spec
                .config
                .profile
                .reasoning_effort
                .map(|e| Name::new(e.name())),
            arm: Name::default(),
            lane: spec.arm.menu,
            repair: spec.arm.prompt,
            delivery: spec.arm.delivery,
            actor: spec.arm.actor,
            block: Name::default(),
            schedule: Name::default(),
            schedule_position: None,
            completion_cap: spec.completion_cap,
            repeat: spec.repeat,
            variant_id: Name::new(&v.variant_id),
            family: Name::new(&v.family),
            intent: Name::new(&v.intent),
            domain: v.domain,
            v: u32::from(v.cell.v),
            w: v.cell.w,
            d: v.cell.d,
            r: v.cell.r,
            depth: v.cell.depth.map(u32::from),
            vts: verdict.vts,
            ok: verdict.obligations.in_order().map(|(_, ok)| ok),
            first_unmet: verdict.first_unmet,
            terminal_flag: verdict.terminal_flag,
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
            infra_error: verdict.infra.as_ref().map(|i| i.cause),
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
            stop_reason: episode.trace.stop,
            episode_key: episode.key,
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
    pub block: Name,
    /// The arm's name.
    pub arm: Name,
    /// The order the condition's arms ran in ([`EpisodeRow::schedule`]).
    pub schedule: Name,
    /// This arm's place in it ([`EpisodeRow::schedule_position`]).
    pub schedule_position: Option<u32>,
    /// The attempt that ran it ([`EpisodeRow::attempt`]).
    pub attempt: u32,
}

impl TableRow for EpisodeRow {
    const TABLE: &'static str = "episodes";

    /// The columns every `episodes.parquet` has (`attempt` follows them when some
    /// episode was retried).
    fn fields() -> Result<Vec<FieldRef>, StoreError> {
        Published::fields()
    }

    /// The rows as one batch, with an `attempt` column when one of them was retried.
    fn to_batch(rows: &[EpisodeRow]) -> Result<RecordBatch, StoreError> {
        episodes_batch(rows, any_retried(rows))
    }

    /// The rows of a batch of `episodes.parquet`; without an `attempt` column every
    /// row's attempt is 1.
    fn from_batch(batch: &RecordBatch) -> Result<Vec<EpisodeRow>, StoreError> {
        let published = Published::from_batch(batch)?;
        let attempts: Vec<u32> = if batch.schema().column_with_name("attempt").is_some() {
            AttemptColumn::from_batch(batch)?
                .into_iter()
                .map(|a| a.attempt)
                .collect()
        } else {
            vec![first_attempt(); published.len()]
        };
        Ok(published
            .into_iter()
            .zip(attempts)
            .map(|(p, attempt)| p.into_row(attempt))
            .collect())
    }
}

impl TableRow for Published {
    const TABLE: &'static str = "episodes";
}

/// The `attempt` column of `episodes.parquet`, written only when some episode was
/// retried, so that a study whose every episode ran once publishes the table it
/// always did, byte for byte.
#[derive(Serialize, Deserialize)]
struct AttemptColumn {
    attempt: u32,
}

impl TableRow for AttemptColumn {
    const TABLE: &'static str = "episodes";
}

/// Whether the `attempt` column is written for `rows`: decided once for the whole
/// table, so that every chunk of it has the same columns.
fn any_retried(rows: &[EpisodeRow]) -> bool {
    rows.iter().any(|r| r.attempt > 1)
}

/// `rows` as a batch of `episodes.parquet`, with its `attempt` column or without.
fn episodes_batch(rows: &[EpisodeRow], with_attempt: bool) -> Result<RecordBatch, StoreError> {
    let batch = Published::to_batch_converted(rows, Published::of)?;
    if !with_attempt {
        return Ok(batch);
    }
    let attempts: Vec<AttemptColumn> = rows
        .iter()
        .map(|r| AttemptColumn { attempt: r.attempt })
        .collect();
    let attempt = AttemptColumn::to_batch(&attempts)?;
    let mut fields: Vec<FieldRef> = batch.schema().fields().iter().cloned().collect();
    fields.extend(attempt.schema().fields().iter().cloned());
    let mut columns = batch.columns().to_vec();
    columns.extend(attempt.columns().iter().cloned());
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|source| {
        StoreError::Arrow {
            table: EpisodeRow::TABLE.into(),
            source,
        }
    })
}

/// `episodes.parquet`, whole (its `attempt` column only when some episode was retried).
pub fn episodes(rows: &[EpisodeRow]) -> Result<RecordBatch, StoreError> {
    EpisodeRow::to_batch(rows)
}

/// Writes `episodes.parquet` of `rows` to `path` a row group at a time
/// ([`crate::chunked`]), byte for byte the file of [`episodes`].
pub fn write_episodes(
    path: &Path,
    rows: &[EpisodeRow],
    provenance: &Provenance,
) -> Result<(), StoreError> {
    let with_attempt = any_retried(rows);
    chunked::write_table_chunked(path, rows, provenance, |chunk| {
        episodes_batch(chunk, with_attempt)
    })
}

/// Defines [`EpisodeColumns`] and [`RequestColumns`], the two groups of a row of
/// `requests.parquet`, and the flat layout of that row (`PublishedRequest`: the
/// episode's columns, then the request's) with the two conversions and
/// [`EpisodeColumns::of`], from one list of fields: a new column is written once (an
/// episode column by the name of its [`EpisodeRow`] field). A field followed by `as "path"` is
/// (de)serialised `with` that module in the table ([`crate::levels::by_row_name`]).
///
/// Why a flat struct rather than `#[serde(flatten)]`: serde flattens through maps, which
/// built the capacity study's requests table 2.3 times and read it back 4 times slower
/// (measured on 81,648 rows), for the same bytes.
macro_rules! request_row {
    (
        $(#[$e_meta:meta])*
        episode {
            $( $(#[$ef_meta:meta])* $e:ident: $e_ty:ty $(as $e_with:literal)?, )*
        }
        $(#[$r_meta:meta])*
        request { $( $(#[$rf_meta:meta])* $r:ident: $r_ty:ty, )* }
    ) => {
        $(#[$e_meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct EpisodeColumns {
            $( $(#[$ef_meta])* pub $e: $e_ty, )*
        }

        $(#[$r_meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct RequestColumns {
            $( $(#[$rf_meta])* pub $r: $r_ty, )*
        }

        /// The columns of one row of `requests.parquet`, in order: its episode's
        /// ([`EpisodeColumns`]) and then its own ([`RequestColumns`]), each documented
        /// there.
        #[derive(Clone, Serialize, Deserialize)]
        struct PublishedRequest {
            $( $(#[serde(with = $e_with)])? $e: $e_ty, )*
            $( $r: $r_ty, )*
        }

        impl EpisodeColumns {
            /// The columns of `row`'s episode, each the episode row's field of its name:
            /// the one place where a request row takes its episode's keys and condition.
            pub fn of(row: &EpisodeRow) -> EpisodeColumns {
                EpisodeColumns { $( $e: row.$e.clone(), )* }
            }
        }

        impl From<RequestRow> for PublishedRequest {
            fn from(row: RequestRow) -> PublishedRequest {
                let e = &*row.episode;
                let q = row.request;
                PublishedRequest {
                    $( $e: e.$e.clone(), )*
                    $( $r: q.$r, )*
                }
            }
        }

        impl From<PublishedRequest> for RequestRow {
            fn from(p: PublishedRequest) -> RequestRow {
                RequestRow {
                    episode: Arc::new(EpisodeColumns { $( $e: p.$e, )* }),
                    request: RequestColumns { $( $r: p.$r, )* },
                }
            }
        }
    };
}

request_row! {
    /// What a row of `requests.parquet` copies from its episode's row: which episode it
    /// belongs to and the episode's condition. Every request of an episode shares one
    /// (behind an `Arc`), so the strings are not repeated per request.
    episode {
        /// Study (manifest) name.
        study: Name,
        /// The episode's content key ([`EpisodeRow::episode_key`]).
        episode_key: tbb_harness::HexKey as "crate::rows::key_column",
        /// The key of the episode's execute node ([`EpisodeRow::transcript_ref`]).
        transcript_ref: Arc<str>,
        /// Configuration name.
        configuration: Name,
        /// Design block.
        block: Name,
        /// Arm name.
        arm: Name,
        /// The arm's menu component.
        lane: Menu as "crate::levels::by_row_name",
        /// The arm's prompt component as a repair.
        repair: PromptVariant as "crate::levels::by_row_name",
        /// The arm's delivery component.
        delivery: Delivery,
        /// The arm's actor component.
        actor: Actor,
        /// Completion cap.
        completion_cap: u32,
        /// Repeat index.
        repeat: u32,
        /// The order the arms of the condition ran in.
        schedule: Name,
        /// This arm's place in `schedule`, when ordered.
        schedule_position: Option<u32>,
        /// The variant.
        variant_id: Name,
        /// Family.
        family: Name,
        /// Menu size.
        v: u32,
        /// Workflow level.
        w: Workflow,
        /// Encoding.
        d: Encoding,
        /// Routing difficulty.
        r: Routing,
        /// Frontier depth.
        depth: Option<u32>,
    }
    /// The columns of one request, read off its episode's transcript and trace
    /// (`crate::requests` reads them and defines each). The cache stores them as this
    /// struct's JSON ([`crate::stored_requests`]).
    request {
        /// The request's place in the episode, from 0.
        turn: u32,
        /// Tool schemas the request carried.
        visible_schemas: u32,
        /// Prompt tokens; null when no usage came (a failed request, or usage that is
        /// missing or not counts).
        prompt_tokens: Option<u64>,
        /// Of which served from a cache; null as `prompt_tokens`.
        cached_tokens: Option<u64>,
        /// Completion tokens, reasoning included; null as `prompt_tokens`.
        completion_tokens: Option<u64>,
        /// Reasoning tokens, when the provider reported them (or its client derived them).
        reasoning_tokens: Option<u64>,
        /// `reported`, `derived` or `unknown`; null as `prompt_tokens`.
        reasoning_source: Option<ReasoningSource>,
        /// Normalised finish reason; null for a failed request.
        finish_reason: Option<FinishReason>,
        /// The provider's own finish reason; null for a failed request.
        finish_reason_raw: Option<String>,
        /// What the response holds; null for a failed request.
        response_kind: Option<ResponseKind>,
        /// The harness executed this response's tool call.
        executed_call: bool,
        /// Calls executed in the episode so far, this response's included.
        cumulative_calls: u32,
        /// Provider attempts of the request, retries included; null when the transcript
        /// predates per-request attempts and the request succeeded.
        attempts: Option<u32>,
        /// The infrastructure cause when this request ended the episode as an
        /// infrastructure failure.
        infra_cause: Option<InfraCause>,
        /// Wall time of the request (excluded from determinism checks).
        wall_ms: u64,
        /// Reported prompt + completion tokens of the episode so far, this request's
        /// included.
        cumulative_tokens: u64,
    }
}

/// One row of `requests.parquet`: one provider request of a graded episode. Its
/// columns are its episode's and then its own, laid out flat (`PublishedRequest`,
/// defined with both groups by `request_row!`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "PublishedRequest", from = "PublishedRequest")]
pub struct RequestRow {
    /// The episode's columns, shared by its requests.
    pub episode: Arc<EpisodeColumns>,
    /// The request's own columns.
    pub request: RequestColumns,
}

impl TableRow for RequestRow {
    const TABLE: &'static str = "requests";

    /// The published layout's columns (a [`RequestRow`] is (de)serialised through it).
    fn fields() -> Result<Vec<FieldRef>, StoreError> {
        PublishedRequest::fields()
    }
}

impl TableRow for PublishedRequest {
    const TABLE: &'static str = "requests";
}

/// `requests.parquet`, whole.
pub fn requests(rows: &[RequestRow]) -> Result<RecordBatch, StoreError> {
    RequestRow::to_batch(rows)
}

/// The type of [`requests_writer`].
pub type RequestsWriter<'a> =
    chunked::ChunkedWriter<'a, RequestRow, fn(&[RequestRow]) -> Result<RecordBatch, StoreError>>;

/// The writer of `requests.parquet` at `path`, given its rows one at a time and writing
/// them a row group at a time ([`crate::chunked`]): byte for byte the file of
/// [`requests`] of the same rows.
pub fn requests_writer<'a>(path: &'a Path, provenance: &'a Provenance) -> RequestsWriter<'a> {
    chunked::ChunkedWriter::new(path, provenance, RequestRow::to_batch)
}

/// `episode_key` in a published table: its 64 hex digits.
///
/// serde_arrow finds a table's column types by deserialising every field from a stand-in
/// value, the empty text for a text column; here that reads as the zero key, so that
/// the episodes and requests tables have a schema. Only a published table reads through
/// this (tbb writes every key it publishes, and reads those tables back only in tests):
/// the cache's rows read through [`tbb_harness::HexKey`]'s own `Deserialize`, which
/// refuses the empty text like any other that is not a key.
pub mod key_column {
    use std::borrow::Cow;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use tbb_harness::HexKey;

    /// The key's 64 hex digits.
    pub fn serialize<S: Serializer>(key: &HexKey, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&key.text())
    }

    /// The key of a column's text; the empty text (the schema's stand-in) is the zero
    /// key.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<HexKey, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        if text.is_empty() {
            return Ok(HexKey::from([0; 32]));
        }
        HexKey::parse(&text)
            .ok_or_else(|| D::Error::custom(format!("{text:?} is not a key of 64 hex digits")))
    }
}

#[cfg(test)]
mod before;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{read_table, write_table, Provenance};
    use tbb_core::compile::{compile, Cell};
    use tbb_core::family::FamilySet;

    #[test]
    fn a_published_key_column_reads_a_key_and_the_schema_s_stand_in_and_refuses_other_text() {
        let read = |json: &str| {
            key_column::deserialize(&mut serde_json::Deserializer::from_str(json))
                .map_err(|e| e.to_string())
        };
        let key = "ab".repeat(32);
        assert_eq!(read(&format!("\"{key}\"")).map(|k| k.to_string()), Ok(key));
        assert_eq!(read("\"\""), Ok(tbb_harness::HexKey::from([0; 32])));
        let refused = read("\"k1\"").err().unwrap_or_default();
        assert!(
            refused.contains("\"k1\" is not a key of 64 hex digits"),
            "{refused}"
        );
        // The row the cache stores keeps the strict reading: no stand-in there.
        assert!(serde_json::from_str::<tbb_harness::HexKey>("\"\"").is_err());
    }

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
