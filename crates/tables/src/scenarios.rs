//! The rows of `toolsandbox_episodes.parquet`: one per ToolSandbox scenario a
//! configuration played ([`ScenarioEpisodeRow`]), and the one builder of such a row.
//!
//! Owns: the table's columns (name, order, type, nullability) and how a row is read off
//! a played scenario and its grade. A row is built from what the episode's saved state
//! holds (its world, its transcript and how it stopped), so grading a stored episode
//! again gives the same row without running a tool.
//!
//! Never: grades (the ToolSandbox evaluator does, in `tbb_toolsandbox::evaluation`),
//! plays a scenario, or decides where the table is written.

use serde::{Deserialize, Serialize};

use super::{Name, TableRow};
use crate::levels::{InfraCause, StopReason};
use tbb_harness::scenario::{ScenarioEpisode, ScenarioSpec};
use tbb_harness::transcript::StoredOutcome;
use tbb_toolsandbox::evaluation::Evaluation;
use tbb_toolsandbox::scenario::Category;

/// One row of `toolsandbox_episodes.parquet`: one scenario played by one configuration
/// at one cap and repeat, graded by ToolSandbox's evaluator from its saved world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioEpisodeRow {
    /// Study (manifest) name.
    pub study: String,
    /// Configuration name.
    pub configuration: Name,
    /// Its organization.
    pub organization: Name,
    /// Its model.
    pub model: Name,
    /// Its provider route.
    pub route: String,
    /// The scenario, as ToolSandbox names it (with its distraction suffix).
    pub scenario: Name,
    /// The scenario without distraction tools that this one extends: the unit its
    /// paired contrasts and cluster bootstraps are taken over.
    pub base_scenario: Name,
    /// Distraction tools appended to the menu (0, 3 or 10).
    pub distraction_tools: u32,
    /// Tool schemas offered to the agent.
    pub menu_size: u32,
    /// Upstream's categories of the scenario, snake case, comma-separated, without the
    /// distraction count (a column of its own).
    pub categories: String,
    /// Whether the scenario cannot be completed with the tools and information given
    /// (declining is right; reported apart).
    pub insufficient_information: bool,
    /// Whether the scenario needs the user to speak more than once.
    pub multiple_user_turn: bool,
    /// Completion cap.
    pub completion_cap: u32,
    /// Repeat index.
    pub repeat: u32,
    /// ToolSandbox's grade: the milestone similarity, 0 when a minefield was hit.
    pub similarity: f64,
    /// The similarity is exactly 1.
    pub success: bool,
    /// The mean similarity of the milestones alone.
    pub milestone_similarity: f64,
    /// A minefield was hit.
    pub minefield_hit: bool,
    /// Milestones of the scenario.
    pub milestones: u32,
    /// Milestones matched to some message.
    pub milestones_matched: u32,
    /// Per milestone, in index order, the sandbox message it was matched to and its
    /// similarity, as JSON (`[[3, 1.0], null, …]`).
    pub milestone_mapping_json: String,
    /// ToolSandbox's turn count.
    pub turns: u32,
    /// Tool calls the agent made.
    pub calls: u32,
    /// Model requests.
    pub requests: u32,
    /// Facts the scripted user released after its first message.
    pub user_turns: u32,
    /// Prompt tokens over the episode.
    pub prompt_tokens: u64,
    /// Completion tokens over the episode.
    pub completion_tokens: u64,
    /// Prompt + completion.
    pub total_tokens: u64,
    /// Tokens × the configuration's frozen prices: the agent's spend.
    pub cost_usd: f64,
    /// The live configuration that played the user; null when the user was scripted.
    pub user_configuration: Option<Name>,
    /// Requests the live user sent (0 for a scripted user).
    pub user_requests: u32,
    /// The live user's prompt tokens over the episode.
    pub user_prompt_tokens: u64,
    /// The live user's completion tokens over the episode.
    pub user_completion_tokens: u64,
    /// The live user's tokens × its configuration's frozen prices: the episode cost
    /// `cost_usd + user_cost_usd` in all.
    pub user_cost_usd: f64,
    /// Why the harness stopped.
    pub stop_reason: StopReason,
    /// Provider failure after retries, or a response without valid usage.
    pub infra_failure: bool,
    /// Its cause; null when none.
    pub infra_error: Option<InfraCause>,
    /// The episode's content key ([`tbb_harness::scenario::scenario_key`]); `requests`
    /// has the same column.
    pub episode_key: String,
    /// The key of the node that played it, which addresses its stored transcript and
    /// world (`tbb show` takes it).
    pub transcript_ref: String,
    /// The key of the node that graded it.
    pub node_key: String,
}

impl TableRow for ScenarioEpisodeRow {
    const TABLE: &'static str = "toolsandbox_episodes";
}

impl ScenarioEpisodeRow {
    /// The layout of the row a scenario grade node stores: bump it when a field is
    /// added, removed, renamed or retyped (it enters every such node's key). (2: the
    /// live user's configuration, requests, tokens and cost.)
    pub const ROW_VERSION: u32 = 2;

    /// The row of a played scenario graded as `graded`.
    pub fn of_episode(
        episode: &ScenarioEpisode,
        graded: &Evaluation,
        spec: &ScenarioSpec<'_>,
        study: &str,
        transcript_ref: &str,
        node_key: &str,
    ) -> ScenarioEpisodeRow {
        let scenario = spec.scenario;
        let config = spec.config;
        let (prompt_tokens, completion_tokens) = tokens(&episode.transcript);
        let (user_prompt_tokens, user_completion_tokens) =
            episode.user_transcript.as_ref().map_or((0, 0), tokens);
        let user = spec.user.filter(|_| episode.user_transcript.is_some());
        let mapping: Vec<Option<(i64, f64)>> = graded
            .milestone_mapping
            .iter()
            .map(|m| m.as_ref().map(|m| (m.message_index, m.similarity)))
            .collect();
        let categories: Vec<&str> = scenario
            .categories
            .iter()
            .filter(|c| !c.is_distraction_count())
            .map(|c| c.name())
            .collect();
        ScenarioEpisodeRow {
            study: study.into(),
            configuration: Name::new(&config.name),
            organization: Name::new(&config.organization),
            model: Name::new(&config.model),
            route: config.route(),
            scenario: Name::new(&scenario.name),
            base_scenario: Name::new(scenario.base_name()),
            distraction_tools: u32::from(scenario.distraction_tools),
            menu_size: tbb_harness::scenario::offered_tools(scenario, spec.registry).len() as u32,
            categories: categories.join(","),
            insufficient_information: scenario
                .categories
                .contains(&Category::InsufficientInformation),
            multiple_user_turn: scenario.categories.contains(&Category::MultipleUserTurn),
            completion_cap: spec.completion_cap,
            repeat: spec.repeat,
            similarity: graded.similarity,
            success: graded.is_success(),
            milestone_similarity: graded.milestone_similarity,
            minefield_hit: graded.minefield_hit,
            milestones: mapping.len() as u32,
            milestones_matched: mapping.iter().filter(|m| m.is_some()).count() as u32,
            milestone_mapping_json: serde_json::to_string(&mapping).unwrap_or_default(),
            turns: graded.turn_count as u32,
            calls: episode.calls,
            requests: episode.transcript.requests.len() as u32,
            user_turns: episode.user_turns,
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens.saturating_add(completion_tokens),
            cost_usd: config.prices.cost_usd(prompt_tokens, completion_tokens),
            user_configuration: user.map(|u| Name::new(&u.name)),
            user_requests: episode
                .user_transcript
                .as_ref()
                .map_or(0, |t| t.requests.len() as u32),
            user_prompt_tokens,
            user_completion_tokens,
            user_cost_usd: user.map_or(0.0, |u| {
                u.prices
                    .cost_usd(user_prompt_tokens, user_completion_tokens)
            }),
            stop_reason: episode.stop,
            infra_failure: episode.infra.is_some(),
            infra_error: episode.infra.as_ref().map(|i| i.cause),
            episode_key: episode.key.clone(),
            transcript_ref: transcript_ref.into(),
            node_key: node_key.into(),
        }
    }
}

/// The prompt and completion tokens a transcript's responses report.
fn tokens(transcript: &tbb_harness::transcript::Transcript) -> (u64, u64) {
    let usage = || {
        transcript.outcomes.iter().filter_map(|o| match o {
            StoredOutcome::Response(r) => r.usage,
            StoredOutcome::Failed { .. } => None,
        })
    };
    (
        usage().map(|u| u.input_tokens).fold(0, u64::saturating_add),
        usage()
            .map(|u| u.output_tokens)
            .fold(0, u64::saturating_add),
    )
}

/// Who sent a request of a ToolSandbox episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioRole {
    /// The configuration under test.
    Agent,
    /// A live configuration playing the user.
    User,
}

/// One row of `toolsandbox_requests.parquet`: one provider request of a played
/// ToolSandbox scenario, the agent's or a live user's, read off its stored transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioRequestRow {
    /// Study (manifest) name.
    pub study: String,
    /// Configuration name (the agent's).
    pub configuration: Name,
    /// The scenario, with its distraction suffix.
    pub scenario: Name,
    /// The scenario without distraction tools.
    pub base_scenario: Name,
    /// Distraction tools appended to the menu.
    pub distraction_tools: u32,
    /// Completion cap.
    pub completion_cap: u32,
    /// Repeat index.
    pub repeat: u32,
    /// Who sent it.
    pub role: ScenarioRole,
    /// Its place among that role's requests in the episode, from 0.
    pub request_index: u32,
    /// Prompt tokens; null when no response came.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens; null when no response came.
    pub completion_tokens: Option<u64>,
    /// Reasoning tokens, when reported or derived.
    pub reasoning_tokens: Option<u64>,
    /// The finish reason as the provider wrote it; null when no response came.
    pub finish: Option<String>,
    /// The tool the response called first; null when it called none.
    pub tool_call: Option<String>,
    /// Characters of the response's text.
    pub text_chars: u64,
    /// Provider attempts, retries included.
    pub attempts: u32,
    /// Wall time in milliseconds (modelled for a simulated configuration).
    pub wall_ms: u64,
    /// No response came after the retry policy.
    pub failed: bool,
    /// The episode's content key, as in `toolsandbox_episodes`.
    pub episode_key: String,
    /// The key of the node that played it, as in `toolsandbox_episodes`.
    pub transcript_ref: String,
}

impl TableRow for ScenarioRequestRow {
    const TABLE: &'static str = "toolsandbox_requests";
}

impl ScenarioRequestRow {
    /// The rows of `transcript`, the requests `role` sent in the episode of `episode`.
    pub fn of_transcript(
        episode: &ScenarioEpisodeRow,
        role: ScenarioRole,
        transcript: &tbb_harness::transcript::Transcript,
    ) -> Vec<ScenarioRequestRow> {
        transcript
            .outcomes
            .iter()
            .enumerate()
            .map(|(i, outcome)| {
                let response = match outcome {
                    StoredOutcome::Response(r) => Some(r),
                    StoredOutcome::Failed { .. } => None,
                };
                let usage = response.and_then(|r| r.usage);
                ScenarioRequestRow {
                    study: episode.study.clone(),
                    configuration: episode.configuration.clone(),
                    scenario: episode.scenario.clone(),
                    base_scenario: episode.base_scenario.clone(),
                    distraction_tools: episode.distraction_tools,
                    completion_cap: episode.completion_cap,
                    repeat: episode.repeat,
                    role,
                    request_index: i as u32,
                    prompt_tokens: usage.map(|u| u.input_tokens),
                    completion_tokens: usage.map(|u| u.output_tokens),
                    reasoning_tokens: usage.and_then(|u| u.reasoning_tokens),
                    finish: response.map(|r| r.finish_raw.clone()),
                    tool_call: response
                        .and_then(|r| r.tool_calls.first())
                        .map(|c| c.name.clone()),
                    text_chars: response
                        .and_then(|r| r.text.as_deref())
                        .map_or(0, |t| t.chars().count() as u64),
                    attempts: transcript.attempts.get(i).copied().unwrap_or(0),
                    wall_ms: transcript.wall_ms.get(i).copied().unwrap_or(0),
                    failed: response.is_none(),
                    episode_key: episode.episode_key.clone(),
                    transcript_ref: episode.transcript_ref.clone(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tbb_harness::transcript::Transcript;

    #[test]
    fn a_request_row_per_outcome_with_its_usage_and_first_call() {
        let mut transcript = Transcript::new("k");
        let response: tbb_harness::transcript::StoredOutcome = serde_json::from_value(
            serde_json::json!({"response": {
                "text": "Done", "tool_calls": [{"id": "c", "name": "search_contacts", "arguments": "{}"}],
                "finish": "tool_calls", "finish_raw": "tool_calls",
                "usage": {"input_tokens": 120, "cached_tokens": 0, "output_tokens": 30,
                          "reasoning_tokens": 10, "reasoning_source": "reported"},
                "usage_error": null, "violation": null, "raw": null}}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        transcript.outcomes.push(response);
        transcript.outcomes.push(StoredOutcome::Failed {
            error: "timeout".into(),
            attempts: 3,
        });
        transcript.attempts = vec![1, 3];
        transcript.wall_ms = vec![40, 900];
        let episode = ScenarioEpisodeRow {
            study: "s".into(),
            configuration: Name::new("c"),
            organization: Name::new("o"),
            model: Name::new("m"),
            route: "r".into(),
            scenario: Name::new("x_3_distraction_tools"),
            base_scenario: Name::new("x"),
            distraction_tools: 3,
            menu_size: 5,
            categories: String::new(),
            insufficient_information: false,
            multiple_user_turn: false,
            completion_cap: 1024,
            repeat: 0,
            similarity: 1.0,
            success: true,
            milestone_similarity: 1.0,
            minefield_hit: false,
            milestones: 1,
            milestones_matched: 1,
            milestone_mapping_json: "[]".into(),
            turns: 2,
            calls: 1,
            requests: 2,
            user_turns: 0,
            prompt_tokens: 120,
            completion_tokens: 30,
            total_tokens: 150,
            cost_usd: 0.0,
            user_configuration: None,
            user_requests: 0,
            user_prompt_tokens: 0,
            user_completion_tokens: 0,
            user_cost_usd: 0.0,
            stop_reason: StopReason::InfraFailure,
            infra_failure: true,
            infra_error: Some(InfraCause::Timeout),
            episode_key: "e".into(),
            transcript_ref: "t".into(),
            node_key: "n".into(),
        };
        let rows = ScenarioRequestRow::of_transcript(&episode, ScenarioRole::Agent, &transcript);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].prompt_tokens,
                rows[0].completion_tokens,
                rows[0].reasoning_tokens
            ),
            (Some(120), Some(30), Some(10))
        );
        assert_eq!(rows[0].tool_call.as_deref(), Some("search_contacts"));
        assert_eq!((rows[0].text_chars, rows[0].wall_ms), (4, 40));
        assert!(rows[1].failed && rows[1].prompt_tokens.is_none());
        assert_eq!((rows[1].request_index, rows[1].attempts), (1, 3));
        assert_eq!(rows[1].transcript_ref, "t");
    }
}
