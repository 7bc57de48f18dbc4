//! One request of an episode and the contract on its response, shared by every episode
//! loop (tbb's families in [`super::episode`], ToolSandbox's scenarios in
//! [`super::scenario`]): the request is recorded in the transcript, sent under the
//! route's limit and the configuration's retry policy, timed, and its response read for
//! the endings every benchmark shares.
//!
//! Owns: what a request's failure amounts to (an infrastructure failure after retries, a
//! response without valid usage, a completion a server cut short of the cap) and which
//! responses end an episode under the contract (the cap, the budget, a content filter, a
//! protocol violation, several calls in one response).
//!
//! Never: decides what a call does or what an answer means (the loops and their worlds
//! do), or retries a response it did not like.

use std::time::Instant;

use tbb_core::grade::trace::{InfraCause, InfraFailure, StopReason};
use tbb_provider::retry::{send_with_retry, RouteLimits};
use tbb_provider::{ChatRequest, ChatResponse, Configuration, Finish, Provider};

use super::infra_failure;
use super::transcript::{BlobStore, StoredOutcome, Transcript};

/// Where an episode's requests go.
#[derive(Clone, Copy)]
pub(crate) struct Route<'a> {
    /// The configuration's provider.
    pub provider: &'a dyn Provider,
    /// The routes' in-flight limits (none outside `tbb apply`).
    pub routes: Option<&'a RouteLimits>,
    /// The configuration.
    pub config: &'a Configuration,
    /// The completion cap of every request.
    pub completion_cap: u32,
}

/// A response and where it was recorded.
pub(crate) struct Sent {
    /// The response.
    pub response: ChatResponse,
    /// The body reference of its request in the transcript.
    pub request_ref: String,
    /// Its wall time (modelled for a simulated configuration).
    pub wall_ms: u64,
}

/// What one request came to.
pub(crate) enum Exchange {
    /// A response with valid usage: the loop applies the contract ([`contract_stop`]).
    Answered(Sent),
    /// The infrastructure ended the episode; `sent` is the response when one came (it is
    /// recorded, and its turn belongs in the trace).
    Failed {
        /// The response, when there was one.
        sent: Option<Sent>,
        /// What failed.
        infra: InfraFailure,
    },
}

/// Records `request` (whose tool menu is the blob `tools_ref`), sends it and records
/// its outcome, wall time and attempts; `attempts` grows by the attempts made.
pub(crate) async fn send(
    route: Route<'_>,
    request: &ChatRequest,
    tools_ref: &str,
    transcript: &mut Transcript,
    blobs: &mut BlobStore,
    attempts: &mut u32,
) -> Exchange {
    let request_ref = transcript.record_request(request, tools_ref, blobs);
    if transcript.wire_sampling.is_none() {
        transcript.wire_sampling = Some(route.provider.wire_sampling(request));
    }
    let sent = Instant::now();
    let outcome = {
        let permit = match route.routes {
            Some(r) => r.for_config(route.config).acquire_owned().await.ok(),
            None => None,
        };
        let outcome = send_with_retry(route.provider, &route.config.retry, request).await;
        drop(permit);
        outcome
    };
    *attempts += outcome.attempts;
    // A simulated configuration's time is modelled from the tokens (the same on every
    // machine); a live route's is measured.
    let measured = sent.elapsed().as_millis() as u64;
    let wall_ms = match &outcome.result {
        Ok(r) => r
            .usage
            .as_ref()
            .and_then(|u| {
                route
                    .config
                    .modelled_latency_ms(u.input_tokens, u.output_tokens)
            })
            .unwrap_or(measured),
        Err(_) => measured,
    };
    transcript.wall_ms.push(wall_ms);
    transcript.attempts.push(outcome.attempts);
    let response = match outcome.result {
        Ok(r) => r,
        Err(error) => {
            transcript.outcomes.push(StoredOutcome::Failed {
                error: error.to_string(),
                attempts: outcome.attempts,
            });
            return Exchange::Failed {
                sent: None,
                infra: infra_failure(&error, outcome.attempts, outcome.last_status),
            };
        }
    };
    transcript
        .outcomes
        .push(StoredOutcome::Response(response.clone()));
    let failure = if response.usage.is_none() {
        Some(InfraFailure {
            cause: InfraCause::BadUsage,
            http_status: response.http_status,
            attempts: outcome.attempts,
            message: response
                .usage_error
                .clone()
                .unwrap_or_else(|| "the response has no usage".to_string()),
        })
    } else {
        cut_short(&response, route.completion_cap).map(|message| InfraFailure {
            cause: InfraCause::ContextExceeded,
            http_status: response.http_status,
            attempts: outcome.attempts,
            message,
        })
    };
    let sent = Sent {
        response,
        request_ref,
        wall_ms,
    };
    match failure {
        Some(infra) => Exchange::Failed {
            sent: Some(sent),
            infra,
        },
        None => Exchange::Answered(sent),
    }
}

/// The ending the contract gives a response with valid usage, if any, once `tokens`
/// (the episode's reported usage so far, this response's included) is known: the cap,
/// the budget, a content filter, a protocol violation, several calls at once.
pub(crate) fn contract_stop(
    response: &ChatResponse,
    tokens: u64,
    episode_budget: u64,
) -> Option<StopReason> {
    match response.finish {
        Finish::Length => Some(StopReason::Truncated),
        _ if tokens > episode_budget => Some(StopReason::BudgetExceeded),
        Finish::ContentFilter => Some(StopReason::ContractBreak),
        _ if response.violation.is_some() => Some(StopReason::ProtocolViolation),
        _ if response.tool_calls.len() > 1 => Some(StopReason::ContractBreak),
        _ => None,
    }
}

/// Why a response that stopped for length is not a truncation at the cap: it spent
/// fewer completion tokens than the cap allows, so a limit of the server ended it —
/// llama.cpp serves a prompt that fits its context with less room than the cap and stops
/// where the context ends. The model was not given the cap the contract promises, so
/// the episode is the infrastructure's failure (`context_exceeded`), not the model's
/// truncation. `None` for every other response.
fn cut_short(response: &ChatResponse, completion_cap: u32) -> Option<String> {
    let usage = response.usage.as_ref()?;
    (response.finish == Finish::Length && usage.output_tokens < u64::from(completion_cap)).then(
        || {
            format!(
                "the completion stopped for length after {} of the {completion_cap} tokens the cap allows, with a prompt of {}: the server's context (or its own token limit) ended it",
                usage.output_tokens, usage.input_tokens
            )
        },
    )
}
