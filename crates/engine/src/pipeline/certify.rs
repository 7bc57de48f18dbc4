//! Certification: every episode of a study re-derived offline from its saved responses.
//!
//! For each execute node of the study's DAG (the one `tbb plan` and `tbb apply` build
//! from the manifest), the episode runs again through the real episode loop
//! ([`tbb_harness::run_episode`], the same call apply makes) against a
//! [`Replay`] of its stored transcript: the sandbox executes every call again, the
//! grader grades the new trace, and no stored stop reason, verdict or count is
//! trusted. The replay refuses any request that is not the recorded one (the first
//! differing JSON path is the certificate's first difference). The row the replayed
//! episode gives is then compared, field by typed field, with the row stored by its
//! grade node — both placed in the design as publication places them (study name,
//! block, arm, schedule) — every field but a live route's measured `wall_ms`, the only
//! one that measures the machine rather than the episode (a simulated configuration's
//! is modelled from its tokens, so it is compared too).
//!
//! A study's ToolSandbox episodes are certified as ToolSandbox's rows are re-graded:
//! each saved world is graded again by the evaluator, without running a tool, and the
//! row compared with the stored one (`certify/scenarios.rs`).
//!
//! Owns: the check that a study has been applied and its cache is complete, the
//! conversion of a stored transcript into replay turns ([`replay_turns`]), the
//! certificates and `certificates.parquet`. The episode an execute node runs is the
//! DAG's mapping ([`ExecuteSpec`]), the one apply uses; progress is the caller's
//! reporter's ([`Stage::Certify`]).
//!
//! Never: sends a request to a provider, writes to the cache, or repairs a stored row;
//! a certificate that fails says which field and where.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow_array::RecordBatch;
use petgraph::graph::NodeIndex;
use serde_json::Value;
use thiserror::Error;

use super::apply::place_in_design;
use super::cache::{Cache, CacheError};
use super::dag::{ExecuteSpec, Node, Work};
use super::events::{Event, Stage};
use super::reporter::{Reporter, Silent};
use super::{ExecutePayload, Study};
use tbb_core::compile::{compile, Variant};
use tbb_core::grade::trace::{InfraCause, InfraFailure};
use tbb_harness::transcript::{StoredOutcome, Transcript};
use tbb_harness::{run_episode, EpisodeSpec};
use tbb_provider::replay::{Answer, ExpectedRequest, Replay, Turn};
use tbb_provider::{Configuration, Message, ProviderError, ToolSchema};
use tbb_tables::rows::EpisodeRow;
use tbb_tables::{write_table, Name, Provenance, StoreError, TableBuilder};

mod scenarios;

/// The file certification writes under `outputs/<study>/`.
pub const CERTIFICATES: &str = "certificates.parquet";

/// How to certify.
#[derive(Clone)]
pub struct Options {
    /// Only these configurations (all when empty).
    pub configurations: Vec<String>,
    /// What renders the progress ([`Silent`] by default).
    pub reporter: Arc<dyn Reporter>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            configurations: Vec::new(),
            reporter: Arc::new(Silent),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("configurations", &self.configurations)
            .finish_non_exhaustive()
    }
}

/// Why certification could not run (a failed certificate is not an error of this kind:
/// it is a result).
#[derive(Debug, Error, miette::Diagnostic)]
pub enum CertifyError {
    /// Nothing of the study is in the cache.
    #[error("study `{study}` has not been applied: its cache holds none of its {total} episodes")]
    #[diagnostic(
        code(tbb::certify::not_applied),
        help("run `tbb apply {manifest}` first (with the same --outputs), then certify")
    )]
    NotApplied {
        /// The study.
        study: String,
        /// Its manifest.
        manifest: String,
        /// Episodes it has.
        total: usize,
    },
    /// Some episodes are not in the cache.
    #[error("the cache of study `{study}` is incomplete: {missing} of its {total} episodes are not in it (the first: {first})")]
    #[diagnostic(
        code(tbb::certify::incomplete),
        help(
            "`tbb plan {manifest}` shows what is missing and why; `tbb apply {manifest}` runs it"
        )
    )]
    Incomplete {
        /// The study.
        study: String,
        /// Its manifest.
        manifest: String,
        /// Episodes missing.
        missing: usize,
        /// Episodes selected.
        total: usize,
        /// The identity of the first.
        first: String,
    },
    /// `--configurations` names one the manifest does not run.
    #[error("the manifest runs no configuration `{name}`")]
    #[diagnostic(code(tbb::certify::unknown_configuration), help("{help}"))]
    UnknownConfiguration {
        /// What was asked for.
        name: String,
        /// Did you mean, or the list.
        help: String,
    },
    /// The vendored ToolSandbox data do not read.
    #[error("cannot read the vendored ToolSandbox data: {detail}")]
    #[diagnostic(
        code(tbb::certify::toolsandbox_data),
        help("vendor/toolsandbox/ is built into tbb and pinned by hash: rebuild tbb from a clean checkout")
    )]
    ToolSandboxData {
        /// Why.
        detail: String,
    },
    /// The cache cannot be read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cache(#[from] CacheError),
    /// `certificates.parquet` cannot be written.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Store(#[from] StoreError),
    /// Some episodes do not re-derive: the command's verdict, after the table is
    /// written.
    #[error("{failed} of {checked} episodes do not re-derive from their saved responses; the first: {first}")]
    #[diagnostic(
        code(tbb::certify::failed),
        help("certificates.parquet lists every episode with its mismatched fields and first difference")
    )]
    Failed {
        /// Episodes that failed.
        failed: usize,
        /// Episodes checked.
        checked: usize,
        /// The first failure, as text.
        first: String,
    },
}

/// The certificate of one episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Certificate {
    /// The episode's identity in the DAG (its execute node's).
    pub id: String,
    /// Its grade node's key (`node_key` in `episodes.parquet`).
    pub node_key: String,
    /// Its content key (`episode_key` in `episodes.parquet`); null when the episode
    /// could not be specified (its variant did not compile).
    pub episode_key: Option<String>,
    /// Configuration.
    pub configuration: String,
    /// Design block.
    pub block: String,
    /// Arm name.
    pub arm: String,
    /// The variant.
    pub variant_id: String,
    /// The arm's menu component.
    pub lane: String,
    /// The arm's prompt component.
    pub repair: String,
    /// Completion cap.
    pub cap: u32,
    /// Repeat.
    pub repeat: u32,
    /// Whether the replayed episode gives the stored row exactly (`wall_ms` aside).
    pub passed: bool,
    /// Fields of the row that differ, in alphabetical order.
    pub mismatched: Vec<String>,
    /// What differs first: the replay's refusal of a request, or the first mismatched
    /// field with its replayed and stored values.
    pub first_difference: Option<String>,
}

/// Every certificate of a run, in DAG order.
#[derive(Debug, Clone, Default)]
pub struct Certification {
    /// The certificates.
    pub certificates: Vec<Certificate>,
}

impl Certification {
    /// Episodes checked.
    pub fn checked(&self) -> usize {
        self.certificates.len()
    }

    /// Episodes that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Certificate> {
        self.certificates.iter().filter(|c| !c.passed)
    }

    /// `certificates.parquet`.
    pub fn table(&self) -> Result<RecordBatch, StoreError> {
        let c = &self.certificates;
        TableBuilder::new()
            .text("episode", c.iter().map(|c| &c.id))
            .text("node_key", c.iter().map(|c| &c.node_key))
            .text_opt("episode_key", c.iter().map(|c| c.episode_key.as_ref()))
            .text("configuration", c.iter().map(|c| &c.configuration))
            .text("block", c.iter().map(|c| &c.block))
            .text("arm", c.iter().map(|c| &c.arm))
            .text("variant_id", c.iter().map(|c| &c.variant_id))
            .text("lane", c.iter().map(|c| &c.lane))
            .text("repair", c.iter().map(|c| &c.repair))
            .u32("cap", c.iter().map(|c| c.cap))
            .u32("repeat", c.iter().map(|c| c.repeat))
            .bool("passed", c.iter().map(|c| c.passed))
            .text("mismatched", c.iter().map(|c| c.mismatched.join(",")))
            .text_opt(
                "first_difference",
                c.iter().map(|c| c.first_difference.as_ref()),
            )
            .build("certificates")
    }

    /// The certification's verdict as an error when some episode failed.
    pub fn verdict(&self) -> Result<(), CertifyError> {
        let failed = self.failures().count();
        match self.failures().next() {
            None => Ok(()),
            Some(first) => Err(CertifyError::Failed {
                failed,
                checked: self.checked(),
                first: first.line(),
            }),
        }
    }
}

impl Certificate {
    /// One line: the episode and what differs.
    pub fn line(&self) -> String {
        format!(
            "{}: {}",
            self.id,
            self.first_difference.as_deref().unwrap_or("passed")
        )
    }
}

/// The episode an execute node runs, for `variant` ([`ExecuteSpec`], as apply runs it).
pub fn episode_spec<'a>(
    study: &'a Study,
    work: &Work,
    variant: &'a Variant,
) -> Option<EpisodeSpec<'a>> {
    let spec = ExecuteSpec::of(&study.manifest, work)?;
    Some(spec.spec(
        variant,
        &study.manifest.configurations[spec.config],
        &study.manifest.study,
    ))
}

/// One episode to certify.
struct Job {
    execute: NodeIndex,
    grade: NodeIndex,
    compile: NodeIndex,
}

/// Blobs of the cache, tool lists parsed once each.
struct Blobs {
    texts: HashMap<String, String>,
    tools: Mutex<HashMap<String, Arc<[ToolSchema]>>>,
}

impl Blobs {
    fn text(&self, r: &str) -> Result<&str, String> {
        self.texts
            .get(r)
            .map(String::as_str)
            .ok_or_else(|| format!("blob {r} is not in the cache"))
    }

    fn tools(&self, r: &str) -> Result<Arc<[ToolSchema]>, String> {
        if let Some(t) = lock(&self.tools).get(r) {
            return Ok(t.clone());
        }
        let parsed: Vec<ToolSchema> = serde_json::from_str(self.text(r)?)
            .map_err(|e| format!("blob {r} is not a tool list: {e}"))?;
        let parsed: Arc<[ToolSchema]> = Arc::from(parsed);
        lock(&self.tools).insert(r.to_string(), parsed.clone());
        Ok(parsed)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Certifies the study's episodes (those of `options.configurations`, or all) from the
/// cache. Fails only when it cannot run; failed certificates are in the result.
pub fn certify(
    study: &Study,
    cache: &Cache,
    options: &Options,
) -> Result<Certification, CertifyError> {
    let dag = &study.dag;
    let manifest_path = study.manifest.path.display().to_string();
    let names: Vec<&str> = study
        .manifest
        .configurations
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    for name in &options.configurations {
        if !names.contains(&name.as_str()) {
            let help = match tbb_core::family::closest(name, names.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!("the manifest runs: {}", names.join(", ")),
            };
            return Err(CertifyError::UnknownConfiguration {
                name: name.clone(),
                help,
            });
        }
    }
    let selected = |config: usize| {
        options.configurations.is_empty()
            || options
                .configurations
                .iter()
                .any(|n| study.manifest.configurations[config].name == *n)
    };
    let jobs: Vec<Job> = dag
        .nodes()
        .filter_map(|(i, n)| match n.work {
            Work::Execute {
                compile, config, ..
            } if selected(config) => {
                let grade = dag.grade_of(i)?;
                Some(Job {
                    execute: i,
                    grade,
                    compile,
                })
            }
            _ => None,
        })
        .collect();
    let scenario_jobs = scenarios::jobs(study, &selected);
    let missing_scenarios = scenario_jobs
        .iter()
        .filter(|j| {
            cache.get(&dag.graph[j.run].key).is_none()
                || cache.get(&dag.graph[j.grade].key).is_none()
        })
        .count();
    let missing: Vec<&Job> = jobs
        .iter()
        .filter(|j| {
            cache.get(&dag.graph[j.execute].key).is_none()
                || cache.get(&dag.graph[j.grade].key).is_none()
        })
        .collect();
    let total = jobs.len() + scenario_jobs.len();
    if total > 0 && missing.len() + missing_scenarios == total {
        return Err(CertifyError::NotApplied {
            study: study.manifest.study.clone(),
            manifest: manifest_path,
            total,
        });
    }
    let first_missing = missing
        .first()
        .map(|j| j.execute)
        .or_else(|| {
            scenario_jobs
                .iter()
                .map(|j| j.run)
                .find(|&r| cache.get(&dag.graph[r].key).is_none())
        })
        .or_else(|| {
            scenario_jobs
                .iter()
                .map(|j| j.grade)
                .find(|&g| cache.get(&dag.graph[g].key).is_none())
        });
    if let Some(first) = first_missing {
        return Err(CertifyError::Incomplete {
            study: study.manifest.study.clone(),
            manifest: manifest_path,
            missing: missing.len() + missing_scenarios,
            total,
            first: dag.graph[first].id(),
        });
    }

    // The variants, compiled again from the families (an execute key names its
    // compile node's key, so a cached episode's variant is this one).
    let mut compiles: Vec<NodeIndex> = jobs.iter().map(|j| j.compile).collect();
    compiles.sort();
    compiles.dedup();
    let variants: HashMap<NodeIndex, Result<Variant, String>> = compiles
        .into_iter()
        .map(|c| {
            let v = match &dag.graph[c].work {
                Work::Compile { family, cell } => {
                    compile(&study.families.families[*family], cell).map_err(|e| e.to_string())
                }
                _ => Err("not a compile node".to_string()),
            };
            (c, v)
        })
        .collect();

    let keys: Vec<&str> = jobs
        .iter()
        .flat_map(|j| {
            [
                dag.graph[j.execute].key.as_ref(),
                dag.graph[j.grade].key.as_ref(),
            ]
        })
        .collect();
    let payloads = cache.payloads(&keys)?;
    let blobs = Blobs {
        texts: cache.blobs()?,
        tools: Mutex::new(HashMap::new()),
    };

    let reporter = options.reporter.as_ref();
    reporter.event(&Event::StageStarted {
        stage: Stage::Certify,
        nodes: total as u64,
    });
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 64);
    let mut done: Vec<(usize, Certificate)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_time()
                        .build();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(k) else { break };
                        let certificate = match &runtime {
                            Ok(rt) => certify_one(study, job, &variants, &payloads, &blobs, rt),
                            Err(e) => {
                                failed(study, job, format!("cannot start the async runtime: {e}"))
                            }
                        };
                        reporter.event(&Event::NodeFinished {
                            stage: Stage::Certify,
                            node: &certificate.id,
                            ok: certificate.passed,
                        });
                        out.push((k, certificate));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(k, _)| *k);
    if done.len() != jobs.len() {
        // A worker panicked: the episodes it held are certified as failed, not lost.
        let have: std::collections::HashSet<usize> = done.iter().map(|(k, _)| *k).collect();
        for (k, job) in jobs.iter().enumerate() {
            if !have.contains(&k) {
                done.push((
                    k,
                    failed(
                        study,
                        job,
                        "the certification of this episode panicked".into(),
                    ),
                ));
            }
        }
        done.sort_by_key(|(k, _)| *k);
    }
    // ToolSandbox episodes: graded again from their saved worlds (no tool runs).
    let scenario_certificates = scenarios::certify(study, cache, &scenario_jobs, reporter)?;
    let offset = done.len();
    done.extend(
        scenario_certificates
            .into_iter()
            .enumerate()
            .map(|(k, c)| (offset + k, c)),
    );
    let passed = done.iter().filter(|(_, c)| c.passed).count() as u64;
    reporter.event(&Event::StageFinished {
        stage: Stage::Certify,
        done: passed,
        failed: done.len() as u64 - passed,
        verdicts: None,
    });
    reporter.event(&Event::Finished);
    Ok(Certification {
        certificates: done.into_iter().map(|(_, c)| c).collect(),
    })
}

/// Writes `certificates.parquet` into the study's outputs.
pub fn write(
    study: &Study,
    certification: &Certification,
) -> Result<std::path::PathBuf, CertifyError> {
    let path = study.outputs().join(CERTIFICATES);
    let provenance = Provenance {
        manifest_hash: study.manifest.content_hash.clone(),
        lockfile_hash: study.lockfile_hash.clone(),
        node_key: String::new(),
    };
    write_table(&path, &certification.table()?, &provenance)?;
    Ok(path)
}

/// A certificate that failed before any comparison.
fn failed(study: &Study, job: &Job, why: String) -> Certificate {
    let mut c = blank(study, job, None);
    c.first_difference = Some(why);
    c
}

/// A certificate with the episode's coordinates; `passed` is false until proven.
fn blank(study: &Study, job: &Job, variant_id: Option<&str>) -> Certificate {
    let dag = &study.dag;
    let execute: &Node = &dag.graph[job.execute];
    let mut c = Certificate {
        id: execute.id(),
        node_key: dag.graph[job.grade].key.to_string(),
        episode_key: None,
        configuration: String::new(),
        block: String::new(),
        arm: String::new(),
        variant_id: variant_id.unwrap_or_default().to_string(),
        lane: String::new(),
        repair: String::new(),
        cap: 0,
        repeat: 0,
        passed: false,
        mismatched: Vec::new(),
        first_difference: None,
    };
    if let Work::Execute {
        config,
        block,
        arm,
        cap,
        repeat,
        ..
    } = execute.work
    {
        let m = &study.manifest;
        c.configuration = m
            .configurations
            .get(config)
            .map_or_else(String::new, |c| c.name.clone());
        c.block = m
            .blocks
            .get(block)
            .map_or_else(String::new, |b| b.name.clone());
        if let Some(a) = m.arms.get(arm) {
            c.arm = a.name.clone();
            for (column, value) in a.form.columns() {
                match column {
                    "lane" => c.lane = value,
                    "repair" => c.repair = value,
                    _ => {}
                }
            }
        }
        c.cap = cap;
        c.repeat = repeat;
    }
    c
}

fn certify_one(
    study: &Study,
    job: &Job,
    variants: &HashMap<NodeIndex, Result<Variant, String>>,
    payloads: &HashMap<String, String>,
    blobs: &Blobs,
    runtime: &tokio::runtime::Runtime,
) -> Certificate {
    let dag = &study.dag;
    let execute = &dag.graph[job.execute];
    let grade = &dag.graph[job.grade];
    let variant = match variants.get(&job.compile) {
        Some(Ok(v)) => v,
        Some(Err(e)) => return failed(study, job, format!("its variant does not compile: {e}")),
        None => return failed(study, job, "its variant was not compiled".into()),
    };
    let mut certificate = blank(study, job, Some(&variant.variant_id));
    let Some(spec) = episode_spec(study, &execute.work, variant) else {
        certificate.first_difference = Some("not an execute node of this manifest".into());
        return certificate;
    };
    certificate.episode_key = Some(tbb_harness::episode_key(&spec, &study.prompts).to_string());
    let payload: ExecutePayload = match payloads.get(&*execute.key).map(|p| serde_json::from_str(p))
    {
        Some(Ok(p)) => p,
        Some(Err(e)) => {
            certificate.first_difference =
                Some(format!("its stored transcript is unreadable: {e}"));
            return certificate;
        }
        None => {
            certificate.first_difference = Some("its stored transcript is not in the cache".into());
            return certificate;
        }
    };
    let stored: EpisodeRow = match payloads.get(&*grade.key).map(|p| serde_json::from_str(p)) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            certificate.first_difference = Some(format!("its stored row is unreadable: {e}"));
            return certificate;
        }
        None => {
            certificate.first_difference = Some("its stored row is not in the cache".into());
            return certificate;
        }
    };
    let turns = match replay_turns(&payload.transcript, blobs, spec.config) {
        Ok(t) => t,
        Err(e) => {
            certificate.first_difference =
                Some(format!("its stored transcript cannot replay: {e}"));
            return certificate;
        }
    };
    let replay = Replay::new(turns, payload.transcript.wire_sampling, &spec.config.retry);
    let episode = runtime.block_on(run_episode(&replay, &spec, &study.prompts, None));
    let refused = replay.finish().err();

    let mut replayed = EpisodeRow::of_episode(
        &episode,
        &study.manifest.study,
        &spec,
        execute.key.clone(),
        grade.key.clone(),
    );
    let mut stored = stored;
    for row in [&mut replayed, &mut stored] {
        row.study = Name::new(&study.manifest.study);
        place_in_design(row, &study.manifest, &execute.work);
    }
    let differences = compare(&replayed, &stored, spec.config.wall_time_is_modelled());
    certificate.mismatched = differences.iter().map(|d| d.0.clone()).collect();
    certificate.first_difference = match (&refused, differences.first()) {
        (Some(e), _) => Some(format!("replay refused: {e}")),
        (None, Some((field, new, old))) => Some(format!("{field}: replayed {new}, stored {old}")),
        (None, None) if episode.key != payload.episode_key => Some(format!(
            "episode key: replayed {}, stored {}",
            episode.key, payload.episode_key
        )),
        (None, None) => None,
    };
    certificate.passed = certificate.first_difference.is_none();
    certificate
}

/// The fields of two rows that differ, in alphabetical order, with both values as JSON;
/// `wall_ms` is compared only when it is modelled (a simulated configuration's, from its
/// tokens); a measured one is left out (it measures the machine, not the episode).
pub fn compare<Row: serde::Serialize>(
    replayed: &Row,
    stored: &Row,
    wall_is_modelled: bool,
) -> Vec<(String, String, String)> {
    let (Ok(Value::Object(a)), Ok(Value::Object(b))) =
        (serde_json::to_value(replayed), serde_json::to_value(stored))
    else {
        return vec![("row".into(), "unserializable".into(), String::new())];
    };
    let mut out = Vec::new();
    for (field, new) in &a {
        if field == "wall_ms" && !wall_is_modelled {
            continue;
        }
        let old = b.get(field).unwrap_or(&Value::Null);
        if new != old {
            out.push((field.clone(), new.to_string(), old.to_string()));
        }
    }
    out
}

/// The replay turns of a stored transcript: each stored request with its messages, its
/// tool list from the blobs, and its recorded answer. A failed request answers with
/// the transcript's infrastructure failure (cause, last status, attempts); a response
/// ending the episode as a `bad_usage` failure takes that failure's attempts.
fn replay_turns(
    transcript: &Transcript,
    blobs: &Blobs,
    config: &Configuration,
) -> Result<Vec<Turn>, String> {
    if transcript.outcomes.len() != transcript.requests.len() {
        return Err(format!(
            "{} requests but {} outcomes",
            transcript.requests.len(),
            transcript.outcomes.len()
        ));
    }
    let last = transcript.requests.len().saturating_sub(1);
    let mut turns = Vec::with_capacity(transcript.requests.len());
    let first_system = transcript.requests.first().map(|r| r.system_ref.as_str());
    for (i, (stored, outcome)) in transcript
        .requests
        .iter()
        .zip(&transcript.outcomes)
        .enumerate()
    {
        if Some(stored.system_ref.as_str()) != first_system {
            return Err(format!(
                "request {} has another system prompt than the first",
                i + 1
            ));
        }
        let mut appended = Vec::with_capacity(stored.appended.len() + 1);
        if i == 0 {
            let system = blobs.text(&stored.system_ref)?;
            if !system.is_empty() {
                appended.push(Message::System {
                    content: system.to_string(),
                });
            }
        }
        appended.extend(stored.appended.iter().cloned());
        let infra = transcript.infra.as_ref().filter(|_| i == last);
        let answer = match outcome {
            StoredOutcome::Response(response) => Answer::Response {
                response: response.clone(),
                // An infrastructure failure recorded on a response (bad usage, or a
                // completion cut short of the cap) came after that request's retries.
                attempts: infra.map_or(1, |f| f.attempts),
            },
            StoredOutcome::Failed { error, .. } => {
                let infra = infra.ok_or_else(|| {
                    format!(
                        "request {} failed ({error}) but no infrastructure failure is recorded",
                        i + 1
                    )
                })?;
                Answer::Failure {
                    error: replayed_error(infra, &config.name),
                    attempts: infra.attempts,
                    last_status: infra.http_status,
                }
            }
        };
        turns.push(Turn {
            request: ExpectedRequest {
                model: stored.model.clone(),
                appended,
                tools: blobs.tools(&stored.tools_ref)?,
                max_completion_tokens: stored.max_completion_tokens,
                sampling: stored.sampling,
            },
            answer,
        });
    }
    Ok(turns)
}

/// A provider error of the recorded cause: what [`tbb_harness::infra_failure`]
/// turns back into the same cause and status.
fn replayed_error(infra: &InfraFailure, config: &str) -> ProviderError {
    let http = |status: u16| ProviderError::Http {
        status,
        body: infra.message.clone(),
        retry_after: None,
    };
    match infra.cause {
        InfraCause::RateLimited => http(429),
        InfraCause::ServerError => http(infra.http_status.unwrap_or(500)),
        InfraCause::Auth => match infra.http_status {
            Some(status) => http(status),
            None => ProviderError::MissingKey {
                config: config.to_string(),
                env: infra.message.clone(),
            },
        },
        InfraCause::OtherStatus | InfraCause::ContextExceeded => {
            http(infra.http_status.unwrap_or(400))
        }
        InfraCause::Timeout => ProviderError::Timeout(Duration::ZERO),
        InfraCause::Transport => ProviderError::Transport(infra.message.clone()),
        // A bad usage comes with a response, never as a failed request: replayed as a
        // bad body, the row comparison shows the difference.
        InfraCause::BadBody | InfraCause::BadUsage => ProviderError::Decode {
            status: infra.http_status,
            message: infra.message.clone(),
        },
        InfraCause::Config => ProviderError::Config {
            config: config.to_string(),
            message: infra.message.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use tbb_core::compile::Cell;
    use tbb_core::family::FamilySet;
    use tbb_harness::{Episode, Prompts};
    use tbb_provider::{BoxFuture, ChatRequest, ChatResponse, Finish, Provider, ToolCall, Usage};

    type Script = dyn Fn(usize) -> Result<ChatResponse, ProviderError> + Send + Sync;
    /// The infrastructure columns a case expects: cause, status, attempts.
    type Infra = (&'static str, Option<u32>, u32);

    /// Answers call `n` (over the whole episode, retries included) with `script(n)`.
    struct Scripted {
        script: Box<Script>,
        calls: AtomicUsize,
    }

    impl Provider for Scripted {
        fn chat<'a>(
            &'a self,
            _: &'a ChatRequest,
        ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
            let out = (self.script)(self.calls.fetch_add(1, Ordering::SeqCst));
            Box::pin(async move { out })
        }
    }

    fn root() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn variant() -> Variant {
        let set = FamilySet::load(&root().join("families")).unwrap_or_else(|e| panic!("{e}"));
        let family = &set.families[0];
        compile(family, &Cell::capacity()[0]).unwrap_or_else(|e| panic!("{e}"))
    }

    fn config() -> Configuration {
        toml::from_str(
            "name = \"scripted\"\norganization = \"test\"\nprovider = \"openai\"\nmodel = \"scripted-1\"\n\
             prices = { input_per_mtok = 1.0, output_per_mtok = 2.0 }\n\
             retry = { max_attempts = 3, base_delay_ms = 1, max_delay_ms = 1, retry_on = [\"server_error\", \"timeout\"] }\n",
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn first_call(v: &Variant) -> ChatResponse {
        let step = &v.reference_program.steps[0];
        ChatResponse {
            text: None,
            tool_calls: vec![ToolCall {
                id: "c0".into(),
                name: step.call.tool.clone(),
                arguments: step.call.arguments.to_string(),
            }],
            finish: Finish::ToolCalls,
            finish_raw: "tool_calls".into(),
            usage: Some(Usage {
                input_tokens: 900,
                cached_tokens: 0,
                output_tokens: 40,
                reasoning_tokens: None,
                reasoning_source: tbb_provider::ReasoningSource::Unknown,
            }),
            usage_error: None,
            violation: None,
            http_status: Some(200),
            raw: Value::Null,
        }
    }

    fn http(status: u16) -> ProviderError {
        ProviderError::Http {
            status,
            body: "no".into(),
            retry_after: None,
        }
    }

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
            .block_on(f)
    }

    /// Runs the episode live against `script`, then replays its transcript through the
    /// same loop: the two rows and the replay's verdict.
    fn live_and_replayed(script: Box<Script>) -> (EpisodeRow, EpisodeRow, Option<String>) {
        let v = variant();
        let config = config();
        let prompts = Prompts::load(&root().join("prompts")).unwrap_or_else(|e| panic!("{e}"));
        let spec = EpisodeSpec::frozen(&v, &config);
        let live: Episode = block_on(run_episode(
            &Scripted {
                script,
                calls: AtomicUsize::new(0),
            },
            &spec,
            &prompts,
            None,
        ));
        let blobs = Blobs {
            texts: live.blobs.blobs.clone().into_iter().collect(),
            tools: Mutex::new(HashMap::new()),
        };
        let turns =
            replay_turns(&live.transcript, &blobs, &config).unwrap_or_else(|e| panic!("{e}"));
        let replay = Replay::new(turns, live.transcript.wire_sampling, &config.retry);
        let again = block_on(run_episode(&replay, &spec, &prompts, None));
        let refused = replay.finish().err().map(|e| e.to_string());
        (
            EpisodeRow::of_episode(&live, "s", &spec, "x", "g"),
            EpisodeRow::of_episode(&again, "s", &spec, "x", "g"),
            refused,
        )
    }

    #[test]
    fn infrastructure_failures_replay_with_the_same_cause_status_and_attempts() {
        let v = variant();
        let answered = first_call(&v);
        let cases: Vec<(Box<Script>, Infra)> = vec![
            // Retries run out on 500s.
            (Box::new(|_| Err(http(500))), ("server_error", Some(500), 3)),
            // One call, then a 500 and timeouts: the cause is the timeout, the status
            // the 500 of an earlier attempt.
            (
                Box::new({
                    let answered = answered.clone();
                    move |n| match n {
                        0 => Ok(answered.clone()),
                        1 => Err(http(500)),
                        _ => Err(ProviderError::Timeout(Duration::from_secs(9))),
                    }
                }),
                ("timeout", Some(500), 3),
            ),
            // A 503, then a response without usage.
            (
                Box::new({
                    let answered = answered.clone();
                    move |n| match n {
                        0 => Err(http(503)),
                        _ => Ok(ChatResponse {
                            usage: None,
                            ..answered.clone()
                        }),
                    }
                }),
                ("bad_usage", Some(200), 2),
            ),
            // Not retried.
            (Box::new(|_| Err(http(401))), ("auth", Some(401), 1)),
        ];
        for (script, (cause, status, attempts)) in cases {
            let (live, replayed, refused) = live_and_replayed(script);
            assert_eq!(
                (
                    live.infra_error
                        .map(tbb_core::grade::trace::InfraCause::name),
                    live.infra_http_status,
                    live.infra_attempts
                ),
                (Some(cause), status, Some(attempts)),
                "the live episode is the failure this case is about"
            );
            assert_eq!(refused, None);
            assert_eq!(compare(&replayed, &live, false), Vec::new(), "{cause}");
        }
    }

    #[test]
    fn a_changed_response_shows_as_the_fields_it_changes() {
        let v = variant();
        let answered = first_call(&v);
        let (live, _, _) = live_and_replayed(Box::new(move |_| Ok(answered.clone())));
        let mut other = live.clone();
        other.prompt_tokens += 1;
        other.wall_ms += 5;
        let diff = compare(&other, &live, false);
        assert_eq!(
            diff.len(),
            1,
            "a measured wall_ms is not compared: {diff:?}"
        );
        assert_eq!(diff[0].0, "prompt_tokens");
        let diff = compare(&other, &live, true);
        let fields: Vec<&str> = diff.iter().map(|d| d.0.as_str()).collect();
        assert_eq!(fields, ["prompt_tokens", "wall_ms"], "a modelled one is");
    }
}
