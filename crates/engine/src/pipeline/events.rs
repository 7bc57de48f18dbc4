//! What an apply or a certification says while it runs: stages starting and ending,
//! nodes ending, provider requests ending. The vocabulary between the pipeline, which
//! emits events, and a [`super::reporter::Reporter`], which renders them.
//!
//! Owns: the events and their JSON form (`tbb apply --json` writes one a line on
//! stderr: `{"event": "stage_started", "stage": "episodes", "nodes": 36288}`); new
//! events and fields may be added, existing ones keep their names.
//!
//! Never: carries a result (rows and payloads go to the committer, not here; the
//! episodes stage's end carries only the counts of its verdicts), or decides anything:
//! an event is said after the fact, and nothing listens back.

use serde::Serialize;

use super::verdicts::Verdicts;

/// A stage of a run, each with its own progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Compiling the variants.
    Compile,
    /// Running and grading episodes (and regrading cached ones).
    Episodes,
    /// Provider requests of live routes (an estimate of how many beforehand).
    Requests,
    /// Analyses and published tables.
    Analyses,
    /// Re-deriving stored episodes (`tbb certify`).
    Certify,
}

impl Stage {
    /// Its name, as bars and lines show it.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Compile => "compile",
            Stage::Episodes => "episodes",
            Stage::Requests => "requests",
            Stage::Analyses => "analyses",
            Stage::Certify => "certify",
        }
    }
}

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event<'a> {
    /// A stage starts with `nodes` to do (for [`Stage::Requests`], the plan's estimate).
    StageStarted {
        /// The stage.
        stage: Stage,
        /// Nodes it will run.
        nodes: u64,
    },
    /// A node of a stage ended.
    NodeFinished {
        /// The stage.
        stage: Stage,
        /// The node's identity.
        node: &'a str,
        /// Whether it succeeded (a failed node is reported in the summary).
        ok: bool,
    },
    /// A provider request (one attempt) ended, with the tokens it reported.
    RequestFinished {
        /// Prompt plus completion tokens (0 when it failed or reported none).
        tokens: u64,
    },
    /// A stage ended.
    StageFinished {
        /// The stage.
        stage: Stage,
        /// Nodes that succeeded (requests sent, for [`Stage::Requests`]).
        done: u64,
        /// Nodes that failed: tbb produced no result for them (an error, never an
        /// episode's verdict).
        failed: u64,
        /// For [`Stage::Episodes`], the grader's verdicts of the episodes it ran and
        /// regraded: verified successes, task failures and infrastructure failures
        /// (absent for the other stages).
        #[serde(skip_serializing_if = "Option::is_none")]
        verdicts: Option<&'a Verdicts>,
    },
    /// A route's breaker stopped it: `failures` episodes in a row ended as
    /// infrastructure failures, so its episodes not yet started will not start in
    /// this run (they stay planned, unrecorded).
    RouteStopped {
        /// The route (a base URL, or the provider's default).
        route: &'a str,
        /// The consecutive infrastructure failures that stopped it.
        failures: u32,
        /// The last one's cause, as the episode row names it, and its message.
        cause: &'a str,
    },
    /// A live episode's claim is held by another process sharing the cache (said once
    /// per holder): this apply leaves that process's episodes to it and reuses them
    /// once they are committed, or runs them if their claims expire.
    ClaimHeld {
        /// The first episode found held.
        node: &'a str,
        /// Who holds it (host, process and command).
        holder: &'a str,
    },
    /// Held claims could not be renewed in time and were taken over: their episodes may
    /// be paid for twice.
    ClaimsLost {
        /// How many.
        count: u64,
    },
    /// The shared cache's publishing lease is held by another apply: this one waits.
    LeaseHeld {
        /// Who holds it.
        holder: &'a str,
    },
    /// The run is over (completed or interrupted): nothing more will be reported.
    Finished,
}

impl Event<'_> {
    /// The event as one line of JSON.
    pub fn json(&self) -> String {
        // Plain data with string keys: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_tagged_json_objects_with_snake_case_names() {
        let verdicts = Verdicts {
            run: super::super::verdicts::Tally {
                episodes: 2,
                verified_successes: 0,
                task_failures: 2,
                infra_failures: 0,
                terminal_flags: [("truncation".to_string(), 2)].into(),
            },
            ..Verdicts::default()
        };
        let lines: Vec<String> = [
            Event::StageStarted {
                stage: Stage::Episodes,
                nodes: 3,
            },
            Event::NodeFinished {
                stage: Stage::Compile,
                node: "compile[family=f, v=8]",
                ok: false,
            },
            Event::RequestFinished { tokens: 12 },
            Event::StageFinished {
                stage: Stage::Analyses,
                done: 2,
                failed: 1,
                verdicts: None,
            },
            Event::StageFinished {
                stage: Stage::Episodes,
                done: 2,
                failed: 0,
                verdicts: Some(&verdicts),
            },
            Event::RouteStopped {
                route: "http://127.0.0.1:1/v1",
                failures: 8,
                cause: "server_error",
            },
            Event::ClaimHeld {
                node: "execute[x]",
                holder: "h pid 1",
            },
            Event::LeaseHeld { holder: "h pid 2" },
            Event::Finished,
        ]
        .iter()
        .map(Event::json)
        .collect();
        assert_eq!(
            lines,
            [
                r#"{"event":"stage_started","stage":"episodes","nodes":3}"#,
                r#"{"event":"node_finished","stage":"compile","node":"compile[family=f, v=8]","ok":false}"#,
                r#"{"event":"request_finished","tokens":12}"#,
                r#"{"event":"stage_finished","stage":"analyses","done":2,"failed":1}"#,
                concat!(
                    r#"{"event":"stage_finished","stage":"episodes","done":2,"failed":0,"#,
                    r#""verdicts":{"run":{"episodes":2,"verified_successes":0,"#,
                    r#""task_failures":2,"infra_failures":0,"#,
                    r#""terminal_flags":{"truncation":2}}}}"#
                ),
                r#"{"event":"route_stopped","route":"http://127.0.0.1:1/v1","failures":8,"cause":"server_error"}"#,
                r#"{"event":"claim_held","node":"execute[x]","holder":"h pid 1"}"#,
                r#"{"event":"lease_held","holder":"h pid 2"}"#,
                r#"{"event":"finished"}"#,
            ]
        );
    }
}
