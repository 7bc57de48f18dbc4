//! The request columns of one episode as the cache stores them beside its transcript,
//! so that `requests.parquet` and the analyses that read request rows are built from
//! them instead of from every transcript again.
//!
//! Owns: the stored layout (JSON of [`EpisodeRequests`], with its version,
//! [`LAYOUT`]) and the way back to the columns [`crate::requests::read`] gives. A
//! stored record of another layout is not read: its episode's columns are read off its
//! transcript again, as before they were stored.
//!
//! Never: reads a transcript or decides what a column means (`crate::requests` does).

use serde::{Deserialize, Serialize};

use super::requests::{finish_names, source_names, EpisodeRequests, ResponseKind};
use super::rows::RequestColumns;

/// The layout of a stored record: bump it when [`Stored`] or what a column means
/// changes, so that records written before are read off their transcripts again.
pub const LAYOUT: u32 = 1;

/// One episode's requests as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    episode_key: String,
    requests: Vec<StoredRequest>,
}

/// One request's columns as stored (the names, where the table holds one of a fixed
/// set, as text).
#[derive(Debug, Serialize, Deserialize)]
struct StoredRequest {
    turn: u32,
    visible_schemas: u32,
    prompt_tokens: Option<u64>,
    cached_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
    reasoning_source: Option<String>,
    finish_reason: Option<String>,
    finish_reason_raw: Option<String>,
    response_kind: Option<String>,
    executed_call: bool,
    cumulative_calls: u32,
    attempts: Option<u32>,
    infra_cause: Option<String>,
    wall_ms: u64,
    cumulative_tokens: u64,
}

/// The stored record of one episode's requests.
pub fn to_json(requests: &EpisodeRequests) -> String {
    let stored = Stored {
        episode_key: requests.episode_key.clone(),
        requests: requests
            .requests
            .iter()
            .map(|r| StoredRequest {
                turn: r.turn,
                visible_schemas: r.visible_schemas,
                prompt_tokens: r.prompt_tokens,
                cached_tokens: r.cached_tokens,
                completion_tokens: r.completion_tokens,
                reasoning_tokens: r.reasoning_tokens,
                reasoning_source: r.reasoning_source.map(str::to_string),
                finish_reason: r.finish_reason.map(str::to_string),
                finish_reason_raw: r.finish_reason_raw.clone(),
                response_kind: r.response_kind.map(str::to_string),
                executed_call: r.executed_call,
                cumulative_calls: r.cumulative_calls,
                attempts: r.attempts,
                infra_cause: r.infra_cause.clone(),
                wall_ms: r.wall_ms,
                cumulative_tokens: r.cumulative_tokens,
            })
            .collect(),
    };
    // Numbers, booleans and strings only: serialising cannot fail.
    serde_json::to_string(&stored).unwrap_or_default()
}

/// One episode's requests from their stored record; the error says what does not fit
/// (a record damaged, or a name the table does not know).
pub fn from_json(json: &str) -> Result<EpisodeRequests, String> {
    let stored: Stored = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let kinds: Vec<&'static str> = ResponseKind::ALL.iter().map(|k| k.name()).collect();
    let requests = stored
        .requests
        .into_iter()
        .map(|r| {
            Ok(RequestColumns {
                turn: r.turn,
                visible_schemas: r.visible_schemas,
                prompt_tokens: r.prompt_tokens,
                cached_tokens: r.cached_tokens,
                completion_tokens: r.completion_tokens,
                reasoning_tokens: r.reasoning_tokens,
                reasoning_source: known(r.reasoning_source, &source_names())?,
                finish_reason: known(r.finish_reason, &finish_names())?,
                finish_reason_raw: r.finish_reason_raw,
                response_kind: known(r.response_kind, &kinds)?,
                executed_call: r.executed_call,
                cumulative_calls: r.cumulative_calls,
                attempts: r.attempts,
                infra_cause: r.infra_cause,
                wall_ms: r.wall_ms,
                cumulative_tokens: r.cumulative_tokens,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(EpisodeRequests {
        episode_key: stored.episode_key,
        requests,
    })
}

/// The table's own name for `name`, which must be one of `names`.
pub(crate) fn known(
    name: Option<String>,
    names: &[&'static str],
) -> Result<Option<&'static str>, String> {
    match name {
        None => Ok(None),
        Some(name) => names
            .iter()
            .find(|n| **n == name)
            .map(|n| Some(*n))
            .ok_or_else(|| format!("`{name}` is none of {}", names.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(
        turn: u32,
        kind: Option<ResponseKind>,
        finish: Option<&'static str>,
    ) -> RequestColumns {
        RequestColumns {
            turn,
            visible_schemas: 128,
            prompt_tokens: finish.map(|_| 1000 + u64::from(turn)),
            cached_tokens: finish.map(|_| 0),
            completion_tokens: finish.map(|_| 152),
            reasoning_tokens: None,
            reasoning_source: finish.map(|_| source_names()[turn as usize % 3]),
            finish_reason: finish,
            finish_reason_raw: finish.map(|f| format!("raw {f}")),
            response_kind: kind.map(ResponseKind::name),
            executed_call: turn.is_multiple_of(2),
            cumulative_calls: turn / 2,
            attempts: Some(1),
            infra_cause: (kind.is_none()).then(|| "server_error".to_string()),
            wall_ms: 7,
            cumulative_tokens: 1152 * u64::from(turn),
        }
    }

    #[test]
    fn every_name_of_every_column_round_trips() {
        let finishes = finish_names();
        let mut requests: Vec<RequestColumns> = ResponseKind::ALL
            .iter()
            .zip(finishes.iter().cycle())
            .enumerate()
            .map(|(i, (kind, finish))| request(i as u32, Some(*kind), Some(finish)))
            .collect();
        requests.extend(
            finishes
                .iter()
                .map(|f| request(9, Some(ResponseKind::Empty), Some(f))),
        );
        requests.push(request(10, None, None));
        let episode = EpisodeRequests {
            episode_key: "k".into(),
            requests,
        };
        assert_eq!(from_json(&to_json(&episode)), Ok(episode));
    }

    #[test]
    fn a_name_the_table_does_not_know_is_refused_naming_it() {
        let episode = EpisodeRequests {
            episode_key: "k".into(),
            requests: vec![request(0, Some(ResponseKind::Answer), Some("stop"))],
        };
        let json = to_json(&episode).replace("\"stop\"", "\"halted\"");
        let why = from_json(&json).err().unwrap_or_default();
        assert!(why.contains("`halted` is none of stop"), "{why}");
    }
}
