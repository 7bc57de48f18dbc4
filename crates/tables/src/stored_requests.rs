//! The request columns of one episode as the cache stores them beside its transcript,
//! so that `requests.parquet` and the analyses that read request rows are built from
//! them instead of from every transcript again.
//!
//! Owns: the stored layout (the JSON of [`EpisodeRequests`], its episode key and each
//! request's [`RequestColumns`] as they derive it, every level written as its name) with
//! its version, [`LAYOUT`], and the way back. A stored record of another layout is not
//! read: its episode's columns are read off its transcript again, as before they were
//! stored.
//!
//! Never: reads a transcript or decides what a column means (`crate::requests` does).

use super::requests::EpisodeRequests;

/// The layout of a stored record: bump it when [`EpisodeRequests`] or
/// [`crate::rows::RequestColumns`] (their fields, or a level's names) or what a column
/// means changes, so that records written before are read off their transcripts again.
pub const LAYOUT: u32 = 1;

/// The stored record of one episode's requests.
pub fn to_json(requests: &EpisodeRequests) -> String {
    // Numbers, booleans, strings and levels named by strings: serialising cannot fail.
    serde_json::to_string(requests).unwrap_or_default()
}

/// One episode's requests from their stored record; the error says what does not fit
/// (a record damaged, or a name the table does not know).
pub fn from_json(json: &str) -> Result<EpisodeRequests, String> {
    serde_json::from_str(json).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::levels::{FinishReason, InfraCause, ReasoningSource, ResponseKind};
    use crate::rows::RequestColumns;

    const SOURCES: [ReasoningSource; 3] = [
        ReasoningSource::Reported,
        ReasoningSource::Derived,
        ReasoningSource::Unknown,
    ];

    fn request(
        turn: u32,
        kind: Option<ResponseKind>,
        finish: Option<FinishReason>,
    ) -> RequestColumns {
        RequestColumns {
            turn,
            visible_schemas: 128,
            prompt_tokens: finish.map(|_| 1000 + u64::from(turn)),
            cached_tokens: finish.map(|_| 0),
            completion_tokens: finish.map(|_| 152),
            reasoning_tokens: None,
            reasoning_source: finish.map(|_| SOURCES[turn as usize % 3]),
            finish_reason: finish,
            finish_reason_raw: finish.map(|f| format!("raw {f}")),
            response_kind: kind,
            executed_call: turn.is_multiple_of(2),
            cumulative_calls: turn / 2,
            attempts: Some(1),
            infra_cause: kind.is_none().then_some(InfraCause::ServerError),
            wall_ms: 7,
            cumulative_tokens: 1152 * u64::from(turn),
        }
    }

    #[test]
    fn every_name_of_every_column_round_trips() {
        let finishes = FinishReason::ALL;
        let mut requests: Vec<RequestColumns> = ResponseKind::ALL
            .iter()
            .zip(finishes.iter().cycle())
            .enumerate()
            .map(|(i, (kind, finish))| request(i as u32, Some(*kind), Some(*finish)))
            .collect();
        requests.extend(
            finishes
                .iter()
                .map(|f| request(9, Some(ResponseKind::Empty), Some(*f))),
        );
        requests.extend(InfraCause::ALL.iter().map(|c| RequestColumns {
            infra_cause: Some(*c),
            ..request(10, None, None)
        }));
        let episode = EpisodeRequests {
            episode_key: "k".into(),
            requests,
        };
        assert_eq!(from_json(&to_json(&episode)), Ok(episode));
    }

    /// The record is the one layout 1 has always stored (each level by its name), so the
    /// records in every cache still read.
    #[test]
    fn the_stored_record_is_layout_1() {
        let episode = EpisodeRequests {
            episode_key: "k".into(),
            requests: vec![
                request(
                    1,
                    Some(ResponseKind::CutInToolCall),
                    Some(FinishReason::Length),
                ),
                request(2, None, None),
            ],
        };
        let layout_1 = concat!(
            r#"{"episode_key":"k","requests":[{"turn":1,"visible_schemas":128,"#,
            r#""prompt_tokens":1001,"cached_tokens":0,"completion_tokens":152,"#,
            r#""reasoning_tokens":null,"reasoning_source":"derived","finish_reason":"length","#,
            r#""finish_reason_raw":"raw length","response_kind":"cut_in_tool_call","#,
            r#""executed_call":false,"cumulative_calls":0,"attempts":1,"infra_cause":null,"#,
            r#""wall_ms":7,"cumulative_tokens":1152},{"turn":2,"visible_schemas":128,"#,
            r#""prompt_tokens":null,"cached_tokens":null,"completion_tokens":null,"#,
            r#""reasoning_tokens":null,"reasoning_source":null,"finish_reason":null,"#,
            r#""finish_reason_raw":null,"response_kind":null,"executed_call":true,"#,
            r#""cumulative_calls":1,"attempts":1,"infra_cause":"server_error","wall_ms":7,"#,
            r#""cumulative_tokens":2304}]}"#,
        );
        assert_eq!(to_json(&episode), layout_1);
        assert_eq!(from_json(layout_1), Ok(episode));
    }

    #[test]
    fn a_name_the_table_does_not_know_is_refused_naming_it() {
        let episode = EpisodeRequests {
            episode_key: "k".into(),
            requests: vec![request(
                0,
                Some(ResponseKind::Answer),
                Some(FinishReason::Stop),
            )],
        };
        let json = to_json(&episode).replace("\"stop\"", "\"halted\"");
        let why = from_json(&json).err().unwrap_or_default();
        assert!(why.contains("`halted`") && why.contains("`stop`"), "{why}");
    }
}
