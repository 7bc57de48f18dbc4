//! The rows of `requests.parquet`: one per provider request of every graded episode,
//! derived from the episode's stored transcript and the trace rebuilt from it — the
//! trace the grader read ([`tbb_harness::transcript::Transcript::trace`]).
//!
//! Owns: what each column of [`RequestRow`] means and how it is read off a transcript.
//! The paper's reasoning-only first responses (Table 8: `turn == 0`, `v == 128`,
//! `finish_reason == "length"`, grouped by `response_kind`, on configurations whose
//! `reasoning_source` is `reported`) and its budget trajectories (Figure 9:
//! `cumulative_tokens` against `cumulative_calls` per episode) are read from them.
//!
//! Columns, per request `i` of an episode (the transcript's order; `turn = i`):
//! - `visible_schemas`: the tool schemas the request carried, counted from its stored
//!   tool list (the rule of [`tbb_harness::Episode::schema_exposures`], so the
//!   column sums to the episode's `schema_exposures`);
//! - `prompt_tokens`, `cached_tokens`, `completion_tokens`, `reasoning_tokens`: the
//!   response's usage; all null when no usage came (a request that failed after its
//!   retries, or a response whose usage is missing or not counts). `reasoning_tokens`
//!   is null when the provider did not report it; `reasoning_source` says `reported`
//!   (the usage payload carried it), `derived` (the wire client computed it from other
//!   reported figures) or `unknown`;
//! - `finish_reason` (normalised: `stop`, `tool_calls`, `length`, `content_filter`,
//!   `other`) and `finish_reason_raw` (the provider's own word): null for a failed
//!   request;
//! - `response_kind` ([`ResponseKind`]), null for a failed request;
//! - `executed_call`: the harness executed this response's tool call;
//!   `cumulative_calls`: calls executed in the episode so far, this one included;
//! - `attempts`: provider attempts of the request, retries included (the transcript's
//!   per-request count; for a transcript recorded before that count was kept, the
//!   failed request's own count, else null);
//! - `infra_cause`: on the request that ended the episode as an infrastructure failure
//!   (it failed after its retries, or its usage was missing or not counts), the cause
//!   (`rate_limited`, `server_error`, `timeout`, `transport`, `auth`, `context_exceeded`, `other_status`,
//!   `bad_body`, `bad_usage`, `config`); null elsewhere;
//! - `wall_ms`: the request's wall time (the only column that depends on the machine);
//! - `cumulative_tokens`: prompt + completion tokens reported over the episode so far,
//!   this request's included (a request without usage adds nothing). The last request's
//!   value is the episode's `total_tokens`.
//!
//! An episode that stopped before any request (the required tools unavailable) has no
//! row.
//!
//! Never: reads anything the grader did not also read (no variant, no answer, no
//! verdict), or decides how an episode ended: it reports what each response held.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tbb_core::grade::trace::{FinishReason, ResponseRecord, Trace};

use super::rows::{EpisodeColumns, RequestColumns, RequestRow};
use tbb_harness::transcript::{schema_count, BlobStore, StoredOutcome, Transcript};

/// What a response holds. "Visible text" is text with a non-whitespace character (the
/// test the harness uses to tell an answer from an empty response); "cut at the cap" is
/// the normalised finish reason `length`. The first rule that applies decides:
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseKind {
    /// Cut at the cap while writing a tool call: the response lists a call (the
    /// simulated panel and OpenAI-compatible routes give the call with its argument
    /// string cut where the cap fell; Anthropic a `tool_use` block with what of its
    /// input was parsed). Visible text before the call may be there too. Gemini drops
    /// a partial `functionCall` altogether, so a cut response with no text and no call
    /// whose usage reports fewer reasoning tokens than completion tokens is one too:
    /// visible tokens were charged, and partial text would have come back.
    CutInToolCall,
    /// Cut at the cap with visible text and no tool call.
    CutInText,
    /// Cut at the cap with no visible text and no tool call, and more than 0 completion
    /// tokens: every completion token it was charged is reasoning, reported as such or
    /// not (the cap was spent before any action).
    ReasoningOnly,
    /// Not cut, with at least one tool call (several calls and calls that break the wire
    /// protocol included: the finish reason and the episode's stop reason tell those
    /// apart).
    ToolCall,
    /// Not cut, with visible text and no tool call: the final answer.
    Answer,
    /// Neither visible text nor a tool call, and not reasoning-only: a stall (answered
    /// with the nudge), a filter that left nothing, or a cut at the cap after 0
    /// completion tokens.
    Empty,
}

// Its name in the table is its serde name.
tbb_core::level_names!(ResponseKind {
    CutInToolCall => "cut_in_tool_call",
    CutInText => "cut_in_text",
    ReasoningOnly => "reasoning_only",
    ToolCall => "tool_call",
    Answer => "answer",
    Empty => "empty",
});

impl ResponseKind {
    /// The kind of a response as the grader read it.
    pub fn of(response: &ResponseRecord) -> ResponseKind {
        let cut = response.finish_reason == FinishReason::Length;
        let call = !response.tool_calls.is_empty();
        let text = response
            .text
            .as_deref()
            .is_some_and(|t| !t.trim().is_empty());
        let usage = &response.usage;
        let visible_charged = usage
            .reasoning_tokens
            .is_some_and(|r| usage.output_tokens > r);
        match (cut, call, text) {
            (true, true, _) => ResponseKind::CutInToolCall,
            (true, false, true) => ResponseKind::CutInText,
            (true, false, false) if visible_charged => ResponseKind::CutInToolCall,
            (true, false, false) if usage.output_tokens > 0 => ResponseKind::ReasoningOnly,
            (false, true, _) => ResponseKind::ToolCall,
            (false, false, true) => ResponseKind::Answer,
            _ => ResponseKind::Empty,
        }
    }
}

/// Why an episode's request rows cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestsError {
    /// The transcript's requests and outcomes do not pair up.
    #[error("the transcript of episode {episode} has {requests} requests but {outcomes} outcomes")]
    Unpaired {
        /// The episode key.
        episode: String,
        /// Requests stored.
        requests: usize,
        /// Outcomes stored.
        outcomes: usize,
    },
    /// The trace is not the one the transcript rebuilds.
    #[error(
        "the trace of episode {episode} has {turns} turns but its transcript {responses} responses"
    )]
    TraceMismatch {
        /// The episode key.
        episode: String,
        /// Turns in the trace.
        turns: usize,
        /// Responses in the transcript.
        responses: usize,
    },
}

/// The requests of one episode, read off its transcript, before they meet the
/// episode's row (the cache stores them as this struct's JSON,
/// [`crate::stored_requests`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRequests {
    /// The episode's content key.
    pub episode_key: String,
    /// Each request's columns, in order.
    pub requests: Vec<RequestColumns>,
}

/// The rows of one episode: its columns beside each of its requests'.
pub fn rows(episode: &Arc<EpisodeColumns>, requests: EpisodeRequests) -> Vec<RequestRow> {
    requests
        .requests
        .into_iter()
        .map(|request| RequestRow {
            episode: episode.clone(),
            request,
        })
        .collect()
}

/// The columns of each request of one episode, from its transcript, the trace rebuilt
/// from that transcript, and the blobs the transcript refers to.
pub fn read(
    transcript: &Transcript,
    trace: &Trace,
    blobs: &BlobStore,
) -> Result<EpisodeRequests, RequestsError> {
    let n = transcript.requests.len();
    if transcript.outcomes.len() != n {
        return Err(RequestsError::Unpaired {
            episode: transcript.episode_key.clone(),
            requests: n,
            outcomes: transcript.outcomes.len(),
        });
    }
    let responses = transcript
        .outcomes
        .iter()
        .filter(|o| matches!(o, StoredOutcome::Response(_)))
        .count();
    if responses != trace.turns.len() {
        return Err(RequestsError::TraceMismatch {
            episode: transcript.episode_key.clone(),
            turns: trace.turns.len(),
            responses,
        });
    }
    // Per-request attempts, when the transcript kept them.
    let attempts = (transcript.attempts.len() == n).then_some(&transcript.attempts);
    let mut turns = trace.turns.iter();
    let mut calls: u32 = 0;
    let mut tokens: u64 = 0;
    let mut out = Vec::with_capacity(n);
    for (i, (request, outcome)) in transcript
        .requests
        .iter()
        .zip(&transcript.outcomes)
        .enumerate()
    {
        let last = i + 1 == n;
        let mut row = RequestColumns {
            turn: i as u32,
            visible_schemas: schema_count(&request.tools_ref, blobs),
            prompt_tokens: None,
            cached_tokens: None,
            completion_tokens: None,
            reasoning_tokens: None,
            reasoning_source: None,
            finish_reason: None,
            finish_reason_raw: None,
            response_kind: None,
            executed_call: false,
            cumulative_calls: calls,
            attempts: attempts.and_then(|a| a.get(i).copied()),
            infra_cause: trace.infra.as_ref().filter(|_| last).map(|f| f.cause),
            wall_ms: transcript.wall_ms.get(i).copied().unwrap_or(0),
            cumulative_tokens: tokens,
        };
        match outcome {
            StoredOutcome::Failed {
                attempts: failed, ..
            } => {
                row.attempts = row.attempts.or(Some(*failed));
            }
            StoredOutcome::Response(response) => {
                // Paired above: one turn per response, in order.
                let Some(turn) = turns.next() else {
                    break;
                };
                let record = &turn.response;
                if let Some(usage) = response.usage {
                    let read = &record.usage;
                    row.prompt_tokens = Some(read.input_tokens);
                    row.cached_tokens = Some(read.cached_tokens);
                    row.completion_tokens = Some(read.output_tokens);
                    row.reasoning_tokens = read.reasoning_tokens;
                    row.reasoning_source = Some(usage.reasoning_source);
                    tokens = tokens
                        .saturating_add(read.input_tokens)
                        .saturating_add(read.output_tokens);
                }
                row.finish_reason = Some(record.finish_reason);
                row.finish_reason_raw = Some(record.finish_reason_raw.clone());
                row.response_kind = Some(ResponseKind::of(record));
                row.executed_call = !turn.executed.is_empty();
                calls = calls.saturating_add(turn.executed.len() as u32);
                row.cumulative_calls = calls;
                row.cumulative_tokens = tokens;
            }
        }
        out.push(row);
    }
    Ok(EpisodeRequests {
        episode_key: transcript.episode_key.clone(),
        requests: out,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;
    use tbb_core::compile::{compile, Cell, Encoding, Variant, Workflow};
    use tbb_core::family::FamilySet;
    use tbb_provider::{
        BoxFuture, ChatRequest, ChatResponse, Configuration, Finish, Provider, ProviderError,
        ToolCall, Usage,
    };

    use super::*;
    use tbb_core::grade::trace::InfraCause;
    use tbb_harness::{run_episode, Episode, EpisodeSpec, Prompts, ReasoningSource};

    fn root() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn variant() -> Variant {
        let set = FamilySet::load(&root().join("families")).unwrap_or_else(|e| panic!("{e}"));
        let family = set
            .get("overdue-escalation-harbor")
            .unwrap_or_else(|| panic!("no harbor family"));
        compile(family, &Cell::new(8, Workflow::Low, Encoding::Raw))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Retries a server error once, at once; nothing else.
    fn config() -> Configuration {
        toml::from_str(
            r#"
name = "scripted"
organization = "test"
provider = "openai"
model = "scripted-1"
prices = { input_per_mtok = 1.0, output_per_mtok = 2.0 }
retry = { max_attempts = 2, base_delay_ms = 1, max_delay_ms = 1, retry_on = ["server_error"] }
"#,
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Answers the n-th call of `chat` with `script[n]`.
    struct Scripted {
        script: Vec<Result<ChatResponse, ProviderError>>,
        sent: Mutex<usize>,
    }

    impl Provider for Scripted {
        fn chat<'a>(
            &'a self,
            _request: &'a ChatRequest,
        ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
            let n = {
                let mut sent = self
                    .sent
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                *sent += 1;
                *sent - 1
            };
            let out = self
                .script
                .get(n)
                .cloned()
                .unwrap_or_else(|| Err(ProviderError::Transport("the script ran out".into())));
            Box::pin(async move { out })
        }
    }

    fn usage(input: u64, output: u64, reasoning: Option<u64>) -> Option<Usage> {
        Some(Usage {
            input_tokens: input,
            cached_tokens: input / 10,
            output_tokens: output,
            reasoning_tokens: reasoning,
            reasoning_source: if reasoning.is_some() {
                ReasoningSource::Reported
            } else {
                ReasoningSource::Unknown
            },
        })
    }

    fn response(
        text: Option<&str>,
        call: Option<(&str, &str)>,
        finish: Finish,
        usage: Option<Usage>,
    ) -> Result<ChatResponse, ProviderError> {
        Ok(ChatResponse {
            text: text.map(str::to_string),
            tool_calls: call
                .map(|(name, arguments)| ToolCall {
                    id: "c1".into(),
                    name: name.into(),
                    arguments: arguments.into(),
                })
                .into_iter()
                .collect(),
            finish,
            finish_raw: format!("raw-{finish:?}"),
            usage,
            usage_error: usage.is_none().then(|| "no usage".to_string()),
            violation: None,
            http_status: None,
            raw: json!({}),
        })
    }

    fn http(status: u16) -> Result<ChatResponse, ProviderError> {
        Err(ProviderError::Http {
            status,
            body: "no".into(),
            retry_after: None,
        })
    }

    /// Runs the real episode loop on the script and builds the rows as the table does:
    /// from the stored transcript and the trace rebuilt from it.
    fn run(script: Vec<Result<ChatResponse, ProviderError>>) -> (Episode, Vec<RequestRow>) {
        let v = variant();
        let config = config();
        let prompts = Prompts::load(&root().join("prompts")).unwrap_or_else(|e| panic!("{e}"));
        let provider = Scripted {
            script,
            sent: Mutex::new(0),
        };
        let spec = EpisodeSpec::frozen(&v, &config);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let episode = runtime.block_on(run_episode(&provider, &spec, &prompts, None));
        let trace = episode
            .transcript
            .trace(&episode.blobs, &v)
            .unwrap_or_else(|| panic!("the transcript rebuilds no trace"));
        let row = crate::EpisodeRow::of_episode(&episode, "unit", &spec, "exec-key", "grade-key");
        let columns = Arc::new(EpisodeColumns::of(&row));
        let rows = rows(
            &columns,
            read(&episode.transcript, &trace, &episode.blobs).unwrap_or_else(|e| panic!("{e}")),
        );
        // What the integration test checks over a whole study, on each episode here.
        assert_eq!(rows.len() as u32, row.requests);
        assert_eq!(
            rows.iter()
                .map(|r| u64::from(r.request.visible_schemas))
                .sum::<u64>(),
            row.schema_exposures
        );
        assert_eq!(
            rows.last().map_or(0, |r| r.request.cumulative_tokens),
            row.total_tokens
        );
        (episode, rows)
    }

    /// (kind, finish, prompt, completion, cumulative tokens, executed, cumulative calls,
    /// attempts, infra cause, visible schemas) of each row.
    type Seen = (
        Option<&'static str>,
        Option<&'static str>,
        Option<u64>,
        Option<u64>,
        u64,
        bool,
        u32,
        Option<u32>,
        Option<&'static str>,
        u32,
    );

    fn seen(rows: &[RequestRow]) -> Vec<Seen> {
        rows.iter()
            .map(|r| {
                let r = &r.request;
                (
                    r.response_kind.map(ResponseKind::name),
                    r.finish_reason.map(FinishReason::name),
                    r.prompt_tokens,
                    r.completion_tokens,
                    r.cumulative_tokens,
                    r.executed_call,
                    r.cumulative_calls,
                    r.attempts,
                    r.infra_cause.map(InfraCause::name),
                    r.visible_schemas,
                )
            })
            .collect()
    }

    const SEARCH: &str = "nwf_euw_recv_search";
    const ARGS: &str = r#"{"query":"INV-20417"}"#;

    /// An empty response (nudged), a tool call that needed a retry, then an answer; the
    /// routed menu narrows from 8 schemas to the 6 operational tools after the search.
    #[test]
    fn an_empty_response_a_retried_call_and_an_answer() {
        let (episode, rows) = run(vec![
            response(None, None, Finish::Stop, usage(1000, 5, None)),
            http(503),
            response(
                None,
                Some((SEARCH, ARGS)),
                Finish::ToolCalls,
                usage(1100, 40, None),
            ),
            response(
                Some("{\"decision\":\"hold\"}"),
                None,
                Finish::Stop,
                usage(1300, 60, None),
            ),
        ]);
        assert_eq!(
            episode.trace.stop,
            tbb_core::grade::trace::StopReason::Answer
        );
        let stop = || Some("stop");
        assert_eq!(
            seen(&rows),
            vec![
                (
                    Some("empty"),
                    stop(),
                    Some(1000),
                    Some(5),
                    1005,
                    false,
                    0,
                    Some(1),
                    None,
                    8
                ),
                (
                    Some("tool_call"),
                    Some("tool_calls"),
                    Some(1100),
                    Some(40),
                    2145,
                    true,
                    1,
                    Some(2),
                    None,
                    8
                ),
                (
                    Some("answer"),
                    stop(),
                    Some(1300),
                    Some(60),
                    3505,
                    false,
                    1,
                    Some(1),
                    None,
                    6
                ),
            ]
        );
        assert_eq!(
            rows.iter().map(|r| r.request.turn).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert_eq!(rows[0].request.cached_tokens, Some(100));
        assert_eq!(
            rows[0].request.reasoning_source,
            Some(ReasoningSource::Unknown)
        );
        assert_eq!(rows[0].request.reasoning_tokens, None);
        assert_eq!(
            rows[0].request.finish_reason_raw.as_deref(),
            Some("raw-Stop")
        );
        assert_eq!(rows[0].episode.episode_key, episode.key);
        assert_eq!(&*rows[0].episode.transcript_ref, "exec-key");
        assert_eq!(rows[0].episode.lane, tbb_harness::Menu::Routed);
        assert_eq!(rows[0].episode.v, 8);
    }

    /// Each way a first response can be cut at the cap ends the episode after one row.
    #[test]
    fn responses_cut_at_the_cap_by_where_the_cap_fell() {
        let cut = |text, call, reasoning| {
            let (_, rows) = run(vec![response(
                text,
                call,
                Finish::Length,
                usage(2000, 1024, reasoning),
            )]);
            assert_eq!(rows.len(), 1);
            let r = &rows[0].request;
            assert_eq!(
                (r.finish_reason, r.cumulative_tokens, r.executed_call),
                (Some(FinishReason::Length), 3024, false)
            );
            (
                r.response_kind.map(ResponseKind::name),
                r.reasoning_tokens,
                r.reasoning_source,
            )
        };
        assert_eq!(
            cut(None, None, Some(1024)),
            (
                Some("reasoning_only"),
                Some(1024),
                Some(ReasoningSource::Reported)
            )
        );
        // Reasoning the provider does not report: nothing visible, so still reasoning.
        assert_eq!(
            cut(None, None, None),
            (Some("reasoning_only"), None, Some(ReasoningSource::Unknown))
        );
        // Visible tokens charged but nothing shown (Gemini drops a partial call).
        assert_eq!(
            cut(None, None, Some(1000)),
            (
                Some("cut_in_tool_call"),
                Some(1000),
                Some(ReasoningSource::Reported)
            )
        );
        assert_eq!(
            cut(Some("I will look"), Some((SEARCH, r#"{"que"#)), Some(900)),
            (
                Some("cut_in_tool_call"),
                Some(900),
                Some(ReasoningSource::Reported)
            )
        );
        assert_eq!(
            cut(Some("The invoice is ov"), None, Some(1000)),
            (
                Some("cut_in_text"),
                Some(1000),
                Some(ReasoningSource::Reported)
            )
        );
        // Whitespace is not visible text.
        assert_eq!(
            cut(Some("  \n"), None, None),
            (Some("reasoning_only"), None, Some(ReasoningSource::Unknown))
        );
    }

    /// A request that fails after its retries: no usage, no kind, its attempts and
    /// cause; the tokens so far stay as they were.
    #[test]
    fn an_infrastructure_failure_after_a_call() {
        let (episode, rows) = run(vec![
            response(
                None,
                Some((SEARCH, ARGS)),
                Finish::ToolCalls,
                usage(1000, 30, None),
            ),
            http(500),
            http(500),
        ]);
        assert_eq!(
            episode.trace.stop,
            tbb_core::grade::trace::StopReason::InfraFailure
        );
        assert_eq!(
            seen(&rows),
            vec![
                (
                    Some("tool_call"),
                    Some("tool_calls"),
                    Some(1000),
                    Some(30),
                    1030,
                    true,
                    1,
                    Some(1),
                    None,
                    8
                ),
                (
                    None,
                    None,
                    None,
                    None,
                    1030,
                    false,
                    1,
                    Some(2),
                    Some("server_error"),
                    6
                ),
            ]
        );
        assert_eq!(rows[1].request.reasoning_source, None);
        assert_eq!(rows[1].request.finish_reason_raw, None);
    }

    /// A response whose usage is missing: an infrastructure failure (`bad_usage`) whose
    /// kind is still read off what it holds, with null tokens.
    #[test]
    fn a_response_without_usage() {
        let (_, rows) = run(vec![response(
            None,
            Some((SEARCH, ARGS)),
            Finish::ToolCalls,
            None,
        )]);
        assert_eq!(
            seen(&rows),
            vec![(
                Some("tool_call"),
                Some("tool_calls"),
                None,
                None,
                0,
                false,
                0,
                Some(1),
                Some("bad_usage"),
                8
            )]
        );
    }

    /// Transcripts recorded before per-request attempts: a failed request keeps its own
    /// count, a successful one has none.
    #[test]
    fn attempts_of_transcripts_that_predate_them() {
        let v = variant();
        let config = config();
        let prompts = Prompts::load(&root().join("prompts")).unwrap_or_else(|e| panic!("{e}"));
        let provider = Scripted {
            script: vec![
                response(
                    None,
                    Some((SEARCH, ARGS)),
                    Finish::ToolCalls,
                    usage(1000, 30, None),
                ),
                http(401),
            ],
            sent: Mutex::new(0),
        };
        let spec = EpisodeSpec::frozen(&v, &config);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let mut episode = runtime.block_on(run_episode(&provider, &spec, &prompts, None));
        episode.transcript.attempts.clear();
        let trace = episode
            .transcript
            .trace(&episode.blobs, &v)
            .unwrap_or_else(|| panic!("no trace"));
        let rows =
            read(&episode.transcript, &trace, &episode.blobs).unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(Option<u32>, Option<InfraCause>)> = rows
            .requests
            .iter()
            .map(|r| (r.attempts, r.infra_cause))
            .collect();
        assert_eq!(got, vec![(None, None), (Some(1), Some(InfraCause::Auth))]);
    }

    /// A trace that is not the transcript's is refused, not misread.
    #[test]
    fn a_trace_of_another_transcript_is_refused() {
        let (episode, _) = run(vec![response(
            None,
            Some((SEARCH, ARGS)),
            Finish::ToolCalls,
            usage(1000, 30, None),
        )]);
        let mut trace = episode.trace.clone();
        trace.turns.clear();
        let got = read(&episode.transcript, &trace, &episode.blobs);
        assert!(
            matches!(got, Err(RequestsError::TraceMismatch { .. })),
            "{got:?}"
        );
    }
}
