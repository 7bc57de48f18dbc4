//! ToolSandbox scenarios in a study: what a scenario node stores, how a played scenario
//! becomes its stored state and its row, and how a stored one is graded again.
//!
//! A scenario node plays one scenario with one configuration
//! ([`tbb_harness::scenario::run_scenario`]) and stores a [`ScenarioPayload`]: the saved
//! world (every table, every snapshot), the transcript and how the episode stopped. Its
//! grade node reads only that: ToolSandbox's evaluator over the saved world, so a stored
//! episode is graded again, by `apply` after a grader change or by `certify`, without
//! running a tool or asking a provider.
//!
//! Owns: the payload's layout, the one mapping from a scenario node to the
//! [`ScenarioSpec`] it plays ([`ToolSandboxData::spec`]), playing one node's scenario
//! in the task apply spawns for it ([`Play`]), the rows of a study's scenario
//! grade nodes in DAG order ([`rows`]), the request rows read off their transcripts
//! ([`request_rows`]) and the plan's estimate of their traffic ([`estimate`]).
//!
//! Never: schedules, commits or writes a file (apply, the committer and publish do).

use std::collections::HashMap;
use std::sync::Arc;

use petgraph::graph::NodeIndex;

use serde::{Deserialize, Serialize};
use tbb_core::grade::trace::{InfraFailure, StopReason};
use tbb_harness::scenario::{grade, ScenarioEpisode, ScenarioSpec};
use tbb_harness::transcript::{BlobStore, Transcript};
use tbb_provider::config::RequestField;
use tbb_tables::ScenarioEpisodeRow;
use tbb_toolsandbox::context::Context;
use tbb_toolsandbox::scenario::Scenarios;
use tbb_toolsandbox::tools::Registry;

use super::cache::{Cache, CacheError};
use super::dag::{Dag, Work};
use super::failure::NodeFailure;
use super::key::NodeKind;
use super::plan::Estimate;
use crate::manifest::Manifest;

/// What a scenario node records (the blobs its transcript refers to are stored once,
/// apart).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioPayload {
    /// The episode key (seed source).
    pub episode_key: String,
    /// The saved state: the world after the episode, every snapshot kept.
    pub world: Context,
    /// Every request and response.
    pub transcript: Transcript,
    /// Why it stopped.
    pub stop: StopReason,
    /// What failed, when the infrastructure ended it.
    pub infra: Option<InfraFailure>,
    /// Request fields the profile omitted.
    pub omitted: Vec<RequestField>,
    /// Provider attempts, retries included.
    pub attempts: u32,
    /// Wall time in milliseconds (never part of a result).
    pub wall_ms: u64,
    /// Tool calls the agent made.
    pub calls: u32,
    /// Messages the user said after its first.
    pub user_turns: u32,
    /// A live user's requests and responses (absent with the scripted user, so the
    /// payloads stored before live users existed read as they are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_transcript: Option<Transcript>,
}

impl ScenarioPayload {
    /// The layout of this row in the cache: bump it when a field is added, removed,
    /// renamed or retyped, so that every scenario node reruns.
    pub const ROW_VERSION: u32 = 1;

    /// The payload of a played scenario, and the blobs its transcript refers to.
    pub fn of(episode: ScenarioEpisode) -> (ScenarioPayload, BlobStore) {
        (
            ScenarioPayload {
                episode_key: episode.key,
                world: episode.world,
                transcript: episode.transcript,
                stop: episode.stop,
                infra: episode.infra,
                omitted: episode.omitted,
                attempts: episode.attempts,
                wall_ms: episode.wall_ms,
                calls: episode.calls,
                user_turns: episode.user_turns,
                user_transcript: episode.user_transcript,
            },
            episode.blobs,
        )
    }

    /// The episode as the harness gave it, without its blobs.
    fn into_episode(self, scenario: &str) -> ScenarioEpisode {
        ScenarioEpisode {
            key: self.episode_key,
            scenario: scenario.to_string(),
            world: self.world,
            transcript: self.transcript,
            blobs: BlobStore::default(),
            stop: self.stop,
            infra: self.infra,
            omitted: self.omitted,
            attempts: self.attempts,
            wall_ms: self.wall_ms,
            calls: self.calls,
            user_turns: self.user_turns,
            user_transcript: self.user_transcript,
        }
    }
}

/// The vendored ToolSandbox data a study with `[toolsandbox]` plays: its scenarios and
/// its tools' schemas, read once per command.
#[derive(Debug)]
pub struct ToolSandboxData {
    /// Every scenario of the export.
    pub scenarios: Scenarios,
    /// The tools' schemas.
    pub registry: Registry,
}

impl ToolSandboxData {
    /// Reads the vendored data (built into tbb).
    pub fn builtin() -> Result<Arc<ToolSandboxData>, NodeFailure> {
        let scenarios = Scenarios::builtin().map_err(|e| NodeFailure::internal(e.to_string()))?;
        let registry = Registry::builtin().map_err(|e| NodeFailure::internal(e.to_string()))?;
        Ok(Arc::new(ToolSandboxData {
            scenarios,
            registry,
        }))
    }

    /// [`ToolSandboxData::spec`] for a node apply plays or grades again, whose lack is
    /// the node's failure.
    pub fn node_spec<'a>(
        &'a self,
        manifest: &'a Manifest,
        work: &Work,
    ) -> Result<ScenarioSpec<'a>, NodeFailure> {
        self.spec(manifest, work)
            .ok_or_else(|| NodeFailure::internal("a scenario node names what the manifest lacks"))
    }

    /// What the scenario node `work` plays in the study of `manifest`: the one mapping
    /// from a scenario node to its episode, shared by apply and certification. `None`
    /// when it is not a scenario node or names what the manifest lacks.
    pub fn spec<'a>(&'a self, manifest: &'a Manifest, work: &Work) -> Option<ScenarioSpec<'a>> {
        let Work::Scenario {
            scenario,
            config,
            cap,
            repeat,
        } = *work
        else {
            return None;
        };
        let name = manifest.toolsandbox.as_ref()?.scenarios.get(scenario)?;
        Some(ScenarioSpec {
            scenario: self.scenarios.get(name)?,
            registry: &self.registry,
            config: manifest.configurations.get(config)?,
            completion_cap: cap,
            episode_budget: manifest.budgets.episode_budget,
            repeat,
            study: Some(&manifest.study),
            user: manifest.toolsandbox.as_ref()?.user.as_ref(),
        })
    }
}

/// A played scenario as a study keeps it: its stored state, its blobs and its row.
pub struct Played {
    /// What the scenario node stores.
    pub payload: ScenarioPayload,
    /// The blobs its transcript refers to.
    pub blobs: BlobStore,
    /// What the grade node stores.
    pub row: ScenarioEpisodeRow,
}

/// One scenario node to play, with everything its task needs, owned (it moves into
/// the task apply spawns for it).
pub struct Play {
    /// The vendored data.
    pub data: Arc<ToolSandboxData>,
    /// The study's manifest.
    pub manifest: Arc<Manifest>,
    /// The node's work (a [`Work::Scenario`]).
    pub work: Work,
    /// The agent's provider.
    pub provider: Arc<dyn tbb_provider::Provider>,
    /// A live user's provider, if the study has one.
    pub user: Option<Arc<dyn tbb_provider::Provider>>,
    /// The routes' in-flight limits, shared by every episode.
    pub routes: tbb_provider::retry::RouteLimits,
    /// The nudge prompt.
    pub nudge: String,
    /// The scenario node's key.
    pub run_key: Arc<str>,
    /// Its grade node's key.
    pub grade_key: Arc<str>,
}

impl Play {
    /// Plays the scenario through the harness's scenario loop and grades its world.
    pub async fn run(self) -> Result<Played, NodeFailure> {
        let spec = self.data.node_spec(&self.manifest, &self.work)?;
        let episode = tbb_harness::scenario::run_scenario(
            self.provider.as_ref(),
            &spec,
            &self.nudge,
            Some(&self.routes),
            self.user.as_deref(),
        )
        .await;
        played(episode, &spec, &self.run_key, &self.grade_key)
    }
}

/// Grades a played scenario from its saved world and makes its row.
pub fn played(
    episode: ScenarioEpisode,
    spec: &ScenarioSpec<'_>,
    run_key: &str,
    grade_key: &str,
) -> Result<Played, NodeFailure> {
    let study = spec.study.unwrap_or_default();
    let graded =
        grade(spec.scenario, &episode.world).map_err(|e| NodeFailure::internal(e.to_string()))?;
    let row = ScenarioEpisodeRow::of_episode(&episode, &graded, spec, study, run_key, grade_key);
    let (payload, blobs) = ScenarioPayload::of(episode);
    Ok(Played {
        payload,
        blobs,
        row,
    })
}

/// Grades a stored scenario again from its saved world alone (no tool runs, no
/// provider is asked): the row its grade node stores.
pub fn regrade(
    spec: &ScenarioSpec<'_>,
    run_id: &str,
    run_key: &str,
    payload: Option<&str>,
    grade_key: &str,
) -> Result<ScenarioEpisodeRow, NodeFailure> {
    let payload: ScenarioPayload = payload
        .ok_or_else(|| NodeFailure::internal(format!("{run_id} is not in the cache")))
        .and_then(|p| {
            super::rows::read(p).map_err(|detail| NodeFailure::StoredRowUnreadable {
                node: run_id.to_string(),
                detail,
            })
        })?;
    let episode = payload.into_episode(&spec.scenario.name);
    let graded =
        grade(spec.scenario, &episode.world).map_err(|e| NodeFailure::internal(e.to_string()))?;
    Ok(ScenarioEpisodeRow::of_episode(
        &episode,
        &graded,
        spec,
        spec.study.unwrap_or_default(),
        run_key,
        grade_key,
    ))
}

/// Every scenario grade node's row in DAG order: those `graded` in this command, the
/// others as the cache stores them. Returns the rows and the grade nodes that have
/// none (never graded, or a stored row that does not read).
pub fn rows(
    dag: &Dag,
    cache: &Cache,
    mut graded: HashMap<NodeIndex, ScenarioEpisodeRow>,
) -> Result<(Vec<ScenarioEpisodeRow>, Vec<NodeIndex>), CacheError> {
    let grades: Vec<NodeIndex> = dag
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::ScenarioGrade)
        .map(|(i, _)| i)
        .collect();
    let mut stored = super::rows::stored_rows::<ScenarioEpisodeRow>(
        cache,
        dag,
        grades.iter().copied().filter(|g| !graded.contains_key(g)),
    )?;
    let mut rows = Vec::with_capacity(grades.len());
    let mut missing = Vec::new();
    for g in grades {
        match graded
            .remove(&g)
            .or_else(|| stored.remove(&g).and_then(Result::ok))
        {
            Some(row) => rows.push(row),
            None => missing.push(g),
        }
    }
    Ok((rows, missing))
}

/// `toolsandbox_requests.parquet`: the requests of every played scenario of `rows` (in
/// their order), the agent's and then a live user's, read off the transcripts its
/// scenario node stored (every row's `transcript_ref` names that node).
pub fn request_rows(
    cache: &Cache,
    rows: &[ScenarioEpisodeRow],
) -> Result<Vec<tbb_tables::scenarios::ScenarioRequestRow>, NodeFailure> {
    use tbb_tables::scenarios::{ScenarioRequestRow, ScenarioRole};
    let keys: Vec<&str> = rows.iter().map(|r| r.transcript_ref.as_str()).collect();
    let mut out = Vec::new();
    // The transcripts only: a saved world is many times its transcript.
    let mut by_key: HashMap<String, (Transcript, Option<Transcript>)> =
        HashMap::with_capacity(keys.len());
    cache
        .for_each_payload(&keys, &mut |key, payload| {
            if let Ok(p) = super::rows::read::<ScenarioPayload>(payload) {
                by_key.insert(key.to_string(), (p.transcript, p.user_transcript));
            }
            Ok(())
        })
        .map_err(|e| NodeFailure::io(e.to_string()))?;
    for row in rows {
        let Some((agent, user)) = by_key.get(&row.transcript_ref) else {
            return Err(NodeFailure::internal(format!(
                "the stored transcript of {} does not read",
                row.transcript_ref
            )));
        };
        out.extend(ScenarioRequestRow::of_transcript(
            row,
            ScenarioRole::Agent,
            agent,
        ));
        if let Some(user) = user {
            out.extend(ScenarioRequestRow::of_transcript(
                row,
                ScenarioRole::User,
                user,
            ));
        }
    }
    Ok(out)
}

/// Adds to `e` the expected provider traffic of the scenario nodes `runs`: per episode,
/// a request per milestone and one to answer (the milestones are what the task needs
/// done), each prompt the system prompt, the conversation so far and the offered
/// schemas (4 bytes a token), growing by one exchange per request, and the paper's
/// median response; a live user answers once per episode, its prompt the conversation
/// it sees. An estimate for budgeting, as the families' ([`super::apply::estimate`]).
pub fn estimate(study: &super::Study, runs: &[&super::dag::Node], e: &mut Estimate) {
    if runs.is_empty() {
        return;
    }
    let Ok(data) = study.toolsandbox() else {
        return;
    };
    let user = study
        .manifest
        .toolsandbox
        .as_ref()
        .and_then(|t| t.user.as_ref());
    for node in runs {
        let Some(spec) = data.spec(&study.manifest, &node.work) else {
            continue;
        };
        let milestones = spec
            .scenario
            .milestone_matcher
            .get("milestones")
            .and_then(serde_json::Value::as_array)
            .map_or(1, |m| m.len() as u64);
        let requests = milestones + 1;
        let schemas: u64 = tbb_harness::scenario::offered_tools(spec.scenario, spec.registry)
            .iter()
            .map(|t| (t.name.len() + t.description.len() + t.parameters.to_string().len()) as u64)
            .sum();
        let opening: u64 =
            tbb_harness::scenario::live_user::user_view(&spec.scenario.starting_context)
                .iter()
                .map(|m| serde_json::to_string(m).map_or(0, |t| t.len() as u64))
                .sum();
        let base = (schemas + opening) / 4;
        e.add(
            spec.config,
            Estimate::conversation(base, requests),
            &study.manifest.unlisted,
        );
        if let Some(user) = user {
            e.add(
                user,
                (
                    1,
                    opening / 4 + Estimate::EXCHANGE_TOKENS,
                    Estimate::RESPONSE_TOKENS,
                ),
                &study.manifest.unlisted,
            );
        }
    }
}
