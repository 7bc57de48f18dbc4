//! Replay: a [`Provider`] that answers each request of one episode from a stored
//! transcript, and refuses — loudly, with a typed [`ReplayError`] — a request that is
//! not the recorded one.
//!
//! Owns: the comparison of each request the episode loop sends with the one recorded
//! at that place (model, messages, tool schemas, completion cap, sampling: the whole
//! canonical request, from which every wire body is a pure function), the first JSON
//! path where they differ, and serving the recorded answer: the response whole, or the
//! infrastructure failure with its cause, last HTTP status and attempts.
//!
//! How a failure replays through the retry policy the loop applies
//! ([`crate::retry::send_with_retry`]): the recorded error is returned once, wrapped in
//! [`ProviderError::Exhausted`] with the recorded attempts, which no policy retries,
//! so the loop records the same attempts and cause. When the recorded last HTTP
//! status came from an earlier attempt (a 500, then a timeout), that attempt is
//! replayed first as an HTTP error with that status and a zero `Retry-After` (it was
//! retried then, so the same policy retries it now, without waiting). A response that
//! came after retries (`attempts > 1`) is preceded by as many failed attempts of a
//! class the policy retries — a 429 or 503 with a zero `Retry-After` when the policy
//! retries those, else a timeout, which waits the policy's backoff. The message of a
//! replayed failure is not the original text; no table carries it.
//!
//! A mismatch is kept in the provider ([`Replay::finish`] returns it) and the request
//! gets a [`ProviderError::Config`] naming it, which ends the episode: certification
//! of that episode fails with the mismatch, never with the failure the loop recorded.
//!
//! Never: reaches the network, changes a recorded answer, or lets a request that
//! differs from the recorded one get a response.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use thiserror::Error;

use crate::chat::Sampling;
use crate::config::{RetryPolicy, Retryable};
use crate::{BoxFuture, ChatRequest, ChatResponse, Message, Provider, ProviderError, ToolSchema};

/// A request as recorded: the messages it appended to the conversation (the first
/// request: all of them, the system prompt included) and everything else whole. The
/// request itself is the concatenation of the messages of every request up to it,
/// with this one's other fields.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedRequest {
    /// The model.
    pub model: String,
    /// Messages after those of the previous request.
    pub appended: Vec<Message>,
    /// Visible tools, shared between the requests (and episodes) that show them.
    pub tools: Arc<[ToolSchema]>,
    /// Completion cap.
    pub max_completion_tokens: u32,
    /// Sampling as sent.
    pub sampling: Sampling,
}

/// What came back for a recorded request.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A response, whole.
    Response {
        /// The response as the wire client parsed it (raw body included).
        response: ChatResponse,
        /// Attempts the request took (1 when it was answered at once).
        attempts: u32,
    },
    /// No response after the retry policy.
    Failure {
        /// The final error (never [`ProviderError::Exhausted`]: the attempts say how
        /// many there were).
        error: ProviderError,
        /// Attempts made.
        attempts: u32,
        /// The last HTTP status seen over the attempts.
        last_status: Option<u16>,
    },
}

/// One recorded exchange.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The request.
    pub request: ExpectedRequest,
    /// Its answer.
    pub answer: Answer,
}

/// Why a replay cannot go on: the episode no longer sends what was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReplayError {
    /// A request differs from the recorded one.
    #[error(
        "request {request} differs from the recorded one at {path}: sent {sent}, recorded {recorded}"
    )]
    Differs {
        /// The request, from 1.
        request: usize,
        /// The first JSON path of the canonical request where they differ.
        path: String,
        /// The value sent there (shortened).
        sent: String,
        /// The value recorded there (shortened).
        recorded: String,
    },
    /// The episode sent more requests than were recorded.
    #[error("request {request} was sent, but the transcript records {recorded} requests")]
    Extra {
        /// The request, from 1.
        request: usize,
        /// Requests recorded.
        recorded: usize,
    },
    /// The episode stopped before sending every recorded request.
    #[error("the episode sent {sent} requests, but the transcript records {recorded}")]
    Unused {
        /// Requests sent.
        sent: usize,
        /// Requests recorded.
        recorded: usize,
    },
}

/// A provider that replays one episode's transcript.
#[derive(Debug)]
pub struct Replay {
    turns: Vec<Turn>,
    /// Every turn's appended messages, concatenated: request `i`'s messages are
    /// `messages[..ends[i]]`.
    messages: Vec<Message>,
    ends: Vec<usize>,
    wire_sampling: Option<Sampling>,
    filler: Option<Retryable>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The next recorded turn.
    next: usize,
    /// Attempts already answered for the next turn.
    attempts: u32,
    /// Requests that got an answer.
    sent: usize,
    error: Option<ReplayError>,
}

impl Replay {
    /// A replay of `turns`. `wire_sampling` is what the first request's wire body
    /// carried (the loop asks for it once); `retry` is the policy the episode runs
    /// under, which decides how earlier attempts of a request are replayed.
    pub fn new(turns: Vec<Turn>, wire_sampling: Option<Sampling>, retry: &RetryPolicy) -> Replay {
        let mut messages = Vec::new();
        let mut ends = Vec::with_capacity(turns.len());
        for t in &turns {
            messages.extend(t.request.appended.iter().cloned());
            ends.push(messages.len());
        }
        let filler = [
            Retryable::RateLimited,
            Retryable::ServerError,
            Retryable::Timeout,
            Retryable::Transport,
        ]
        .into_iter()
        .find(|r| retry.retry_on.contains(r));
        Replay {
            turns,
            messages,
            ends,
            wire_sampling,
            filler,
            state: Mutex::new(State::default()),
        }
    }

    /// Requests recorded.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    /// Whether no request was recorded.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// After the episode: the first mismatch, or the recorded requests it never sent.
    pub fn finish(&self) -> Result<(), ReplayError> {
        let state = self.lock();
        if let Some(e) = &state.error {
            return Err(e.clone());
        }
        if state.next < self.turns.len() {
            return Err(ReplayError::Unused {
                sent: state.sent,
                recorded: self.turns.len(),
            });
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The request recorded at `index`, rebuilt whole.
    pub fn expected(&self, index: usize) -> Option<ChatRequest> {
        let turn = self.turns.get(index)?;
        Some(ChatRequest {
            model: turn.request.model.clone(),
            messages: self.messages[..self.ends[index]].to_vec(),
            tools: turn.request.tools.to_vec(),
            max_completion_tokens: turn.request.max_completion_tokens,
            sampling: turn.request.sampling,
        })
    }

    /// Whether `request` is the one recorded at `index` (compared field by field; the
    /// JSON path is only computed when they differ).
    fn matches(&self, index: usize, request: &ChatRequest) -> bool {
        let turn = &self.turns[index];
        request.model == turn.request.model
            && request.max_completion_tokens == turn.request.max_completion_tokens
            && request.sampling == turn.request.sampling
            && request.messages[..] == self.messages[..self.ends[index]]
            && request.tools[..] == turn.request.tools[..]
    }

    fn answer(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let mut state = self.lock();
        if let Some(e) = &state.error {
            return Err(stopped(e));
        }
        let index = state.next;
        let Some(turn) = self.turns.get(index) else {
            let e = ReplayError::Extra {
                request: index + 1,
                recorded: self.turns.len(),
            };
            state.error = Some(e.clone());
            return Err(stopped(&e));
        };
        if !self.matches(index, request) {
            let e = self.difference(index, request);
            state.error = Some(e.clone());
            return Err(stopped(&e));
        }
        // Earlier attempts of this request, replayed as failures the policy retries.
        let earlier = match &turn.answer {
            Answer::Response { attempts, .. } => self
                .filler
                .filter(|_| *attempts > 1)
                .map(|filler| (attempts - 1, filler_error(filler))),
            Answer::Failure {
                error, last_status, ..
            } => match last_status {
                Some(status) if error.status().is_none() => Some((1, zero_wait_http(*status))),
                _ => None,
            },
        };
        if let Some((count, error)) = earlier {
            if state.attempts < count {
                state.attempts += 1;
                return Err(error);
            }
        }
        state.next += 1;
        state.attempts = 0;
        state.sent += 1;
        match &turn.answer {
            Answer::Response { response, .. } => Ok(response.clone()),
            Answer::Failure {
                error, attempts, ..
            } => Err(ProviderError::Exhausted {
                attempts: *attempts,
                last: Box::new(error.clone()),
            }),
        }
    }

    fn difference(&self, index: usize, request: &ChatRequest) -> ReplayError {
        let sent = serde_json::to_value(request).unwrap_or(Value::Null);
        let recorded = self
            .expected(index)
            .and_then(|r| serde_json::to_value(r).ok())
            .unwrap_or(Value::Null);
        let (path, a, b) = first_difference(&sent, &recorded, "$".to_string())
            .unwrap_or_else(|| ("$".to_string(), Value::Null, Value::Null));
        ReplayError::Differs {
            request: index + 1,
            path,
            sent: excerpt(&a),
            recorded: excerpt(&b),
        }
    }
}

impl Provider for Replay {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        let answer = self.answer(request);
        Box::pin(async move { answer })
    }

    fn wire_sampling(&self, request: &ChatRequest) -> Sampling {
        self.wire_sampling.unwrap_or(request.sampling)
    }
}

/// The error a request gets once the replay has stopped: not retried by any policy.
fn stopped(e: &ReplayError) -> ProviderError {
    ProviderError::Config {
        config: "replay".into(),
        message: e.to_string(),
    }
}

fn zero_wait_http(status: u16) -> ProviderError {
    ProviderError::Http {
        status,
        body: "replayed: an earlier attempt of this request".into(),
        retry_after: Some(Duration::ZERO),
    }
}

fn filler_error(class: Retryable) -> ProviderError {
    match class {
        Retryable::RateLimited => zero_wait_http(429),
        Retryable::ServerError => zero_wait_http(503),
        Retryable::Timeout => ProviderError::Timeout(Duration::ZERO),
        Retryable::Transport => {
            ProviderError::Transport("replayed: an earlier attempt of this request".into())
        }
    }
}

/// The first JSON path where `a` and `b` differ (object keys in sorted order, array
/// items in order), with the two values there (`null` for a missing one).
pub fn first_difference(a: &Value, b: &Value, path: String) -> Option<(String, Value, Value)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => first_difference(u, v, p),
                    (u, v) => Some((
                        p,
                        u.cloned().unwrap_or(Value::Null),
                        v.cloned().unwrap_or(Value::Null),
                    )),
                }
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(u, v, format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            let n = x.len().min(y.len());
            (x.len() != y.len()).then(|| {
                (
                    format!("{path}[{n}]"),
                    x.get(n).cloned().unwrap_or(Value::Null),
                    y.get(n).cloned().unwrap_or(Value::Null),
                )
            })
        }
        _ => (a != b).then(|| (path, a.clone(), b.clone())),
    }
}

/// A value as compact JSON, cut to 120 characters.
fn excerpt(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(120) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{Finish, ToolCall};
    use crate::retry::send_with_retry;

    fn tools() -> Arc<[ToolSchema]> {
        Arc::from(vec![ToolSchema {
            name: "search".into(),
            description: "finds records".into(),
            parameters: serde_json::json!({"type": "object"}).into(),
        }])
    }

    fn response(arguments: &str) -> ChatResponse {
        ChatResponse {
            text: None,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "search".into(),
                arguments: arguments.into(),
            }],
            finish: Finish::ToolCalls,
            finish_raw: "tool_calls".into(),
            usage: None,
            usage_error: None,
            violation: None,
            http_status: None,
            raw: Value::Null,
        }
    }

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages,
            tools: tools().to_vec(),
            max_completion_tokens: 1024,
            sampling: Sampling::default(),
        }
    }

    fn script() -> Vec<Turn> {
        let expected = |appended| ExpectedRequest {
            model: "m".into(),
            appended,
            tools: tools(),
            max_completion_tokens: 1024,
            sampling: Sampling::default(),
        };
        vec![
            Turn {
                request: expected(vec![
                    Message::System {
                        content: "sys".into(),
                    },
                    Message::User {
                        content: "find it".into(),
                    },
                ]),
                answer: Answer::Response {
                    response: response("{\"q\":\"a\"}"),
                    attempts: 1,
                },
            },
            Turn {
                request: expected(vec![Message::Tool {
                    call_id: "c1".into(),
                    name: "search".into(),
                    content: "record 7".into(),
                }]),
                answer: Answer::Response {
                    response: response("{\"q\":\"b\"}"),
                    attempts: 1,
                },
            },
        ]
    }

    fn first_messages() -> Vec<Message> {
        vec![
            Message::System {
                content: "sys".into(),
            },
            Message::User {
                content: "find it".into(),
            },
        ]
    }

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
            .block_on(f)
    }

    #[test]
    fn the_recorded_requests_get_the_recorded_responses() {
        let replay = Replay::new(script(), None, &RetryPolicy::default());
        let mut messages = first_messages();
        let first = block_on(replay.chat(&request(messages.clone())));
        assert_eq!(first, Ok(response("{\"q\":\"a\"}")));
        messages.push(Message::Tool {
            call_id: "c1".into(),
            name: "search".into(),
            content: "record 7".into(),
        });
        let second = block_on(replay.chat(&request(messages)));
        assert_eq!(second, Ok(response("{\"q\":\"b\"}")));
        assert_eq!(replay.finish(), Ok(()));
    }

    #[test]
    fn a_request_that_differs_ends_the_replay_naming_the_request_and_the_path() {
        let replay = Replay::new(script(), None, &RetryPolicy::default());
        let mut messages = first_messages();
        assert!(block_on(replay.chat(&request(messages.clone()))).is_ok());
        messages.push(Message::Tool {
            call_id: "c1".into(),
            name: "search".into(),
            content: "record 8".into(),
        });
        let sent = block_on(replay.chat(&request(messages)));
        let expected = ReplayError::Differs {
            request: 2,
            path: "$.messages[2].content".into(),
            sent: "\"record 8\"".into(),
            recorded: "\"record 7\"".into(),
        };
        assert_eq!(
            sent,
            Err(ProviderError::Config {
                config: "replay".into(),
                message: expected.to_string()
            })
        );
        assert_eq!(replay.finish(), Err(expected));
        assert_eq!(
            replay.finish().map_err(|e| e.to_string()),
            Err("request 2 differs from the recorded one at $.messages[2].content: sent \"record 8\", recorded \"record 7\"".to_string())
        );
    }

    #[test]
    fn extra_and_missing_requests_are_errors() {
        let replay = Replay::new(script(), None, &RetryPolicy::default());
        assert!(block_on(replay.chat(&request(first_messages()))).is_ok());
        assert_eq!(
            replay.finish(),
            Err(ReplayError::Unused {
                sent: 1,
                recorded: 2
            })
        );
        let one = Replay::new(script()[..1].to_vec(), None, &RetryPolicy::default());
        assert!(block_on(one.chat(&request(first_messages()))).is_ok());
        assert!(block_on(one.chat(&request(first_messages()))).is_err());
        assert_eq!(
            one.finish(),
            Err(ReplayError::Extra {
                request: 2,
                recorded: 1
            })
        );
    }

    #[test]
    fn a_failure_replays_with_its_attempts_and_last_status_through_the_retry_policy() {
        // A 500, then timeouts until the fourth attempt: cause timeout, status 500.
        let mut turns = script();
        turns.truncate(1);
        turns[0].answer = Answer::Failure {
            error: ProviderError::Timeout(Duration::from_secs(30)),
            attempts: 4,
            last_status: Some(500),
        };
        let replay = Replay::new(turns, None, &RetryPolicy::default());
        let out = block_on(send_with_retry(
            &replay,
            &RetryPolicy::default(),
            &request(first_messages()),
        ));
        assert_eq!(out.last_status, Some(500));
        match out.result {
            Err(ProviderError::Exhausted { attempts, last }) => {
                assert_eq!(attempts, 4);
                assert_eq!(*last, ProviderError::Timeout(Duration::from_secs(30)));
            }
            other => panic!("expected the recorded failure, got {other:?}"),
        }
        assert_eq!(replay.finish(), Ok(()));
    }

    #[test]
    fn a_response_after_retries_takes_as_many_attempts() {
        let mut turns = script();
        turns.truncate(1);
        turns[0].answer = Answer::Response {
            response: response("{}"),
            attempts: 3,
        };
        let replay = Replay::new(turns, None, &RetryPolicy::default());
        let out = block_on(send_with_retry(
            &replay,
            &RetryPolicy::default(),
            &request(first_messages()),
        ));
        assert_eq!(out.attempts, 3);
        assert_eq!(out.result, Ok(response("{}")));
    }

    #[test]
    fn first_difference_walks_objects_by_key_and_arrays_by_index() {
        let a = serde_json::json!({"a": [1, {"b": 2}], "c": 3});
        let b = serde_json::json!({"a": [1, {"b": 2}, 4], "c": 3});
        assert_eq!(
            first_difference(&a, &b, "$".into()),
            Some(("$.a[2]".into(), Value::Null, serde_json::json!(4)))
        );
        assert_eq!(first_difference(&a, &a, "$".into()), None);
    }
}
