//! `tbb show`: one stored episode, read like a person reads it.
//!
//! Owns: finding an episode of a study ([`locate`]: a prefix of its key, or selectors on
//! its identity), the view model of one episode ([`EpisodeView`]: the system prompt by
//! name, the user request, every request with its visible tool count, every response
//! with its reasoning tokens, text, tool calls, finish reason and usage, every
//! observation with who issued the call, and the verdict with the limit that fired and
//! the headroom left against each limit), and its two renderings, plain text
//! ([`text`]) and one self-contained HTML page ([`html`]).
//!
//! An episode's key is its execute node's key: the `transcript_ref` column of
//! `episodes.parquet`, the name of its page (`episodes/<first 12 digits>.html`). A
//! prefix of its grade node's key (`node_key`) finds it too.
//!
//! The view is rebuilt the way `apply`'s regrade and `tbb certify` read an episode:
//! the stored [`ExecutePayload`] from the cache, its variant compiled again from the
//! families, the trace rebuilt from the transcript and its blobs
//! ([`crate::harness::transcript::Transcript::trace`]), and the verdict graded again
//! ([`tbb_core::grade::grade_with_budget`]) — no stored verdict is trusted.
//!
//! Never: runs an episode, sends a request, writes to the cache, or decides anything
//! a verdict does not already say (the headroom is the limits minus what the trace
//! used; the infeasibility trigger is the grader's own rule, asked again).

pub mod html;
pub mod text;

use std::collections::HashMap;

use petgraph::graph::NodeIndex;
use thiserror::Error;

use crate::harness::transcript::{BlobStore, StoredOutcome};
use crate::pipeline::cache::{Cache, CacheError};
use crate::pipeline::dag::Work;
use crate::pipeline::key::NodeKind;
use crate::pipeline::{ExecutePayload, Study};
use tbb_core::compile::{compile, Variant};
use tbb_core::grade::trace::{InfraFailure, Issuer, Limits, StopReason, Trace};
use tbb_core::grade::{grade_with_budget, Impossible, Obligation, Verdict};
use tbb_core::sandbox::Sandbox;
use tbb_provider::Message;

/// Version of what a shown episode looks like; the report's version must be bumped
/// with it, since the report publishes episode pages.
pub const VERSION: &str = "show/1";

/// Hex digits of an episode key in its page's file name.
pub const PAGE_PREFIX: usize = 12;

/// Candidates listed when a prefix or a selection matches several episodes.
const CANDIDATES: usize = 5;

/// Why an episode cannot be shown.
#[derive(Debug, Error, miette::Diagnostic)]
pub enum ShowError {
    /// Neither a key prefix nor a selector was given.
    #[error("name an episode: a prefix of its key, or selectors such as --config and --family")]
    #[diagnostic(
        code(tbb::show::nothing),
        help("the key is the `transcript_ref` column of episodes.parquet; `tbb dag {manifest}` lists the episodes")
    )]
    Nothing {
        /// The manifest.
        manifest: String,
    },
    /// The prefix is not hexadecimal.
    #[error("`{prefix}` is not a key prefix: an episode key is hexadecimal")]
    #[diagnostic(
        code(tbb::show::bad_prefix),
        help("the key is the `transcript_ref` column of episodes.parquet")
    )]
    BadPrefix {
        /// What was given.
        prefix: String,
    },
    /// No episode's key starts with the prefix.
    #[error("no episode of study `{study}` has a key starting with `{prefix}`")]
    #[diagnostic(
        code(tbb::show::unknown_prefix),
        help("the key is the `transcript_ref` column of episodes.parquet; or select the episode with --config, --family, --v, --w, --d, --arm, --repeat")
    )]
    UnknownPrefix {
        /// The study.
        study: String,
        /// What was given.
        prefix: String,
    },
    /// Several episodes' keys start with the prefix.
    #[error("{count} episodes have a key starting with `{prefix}`")]
    #[diagnostic(
        code(tbb::show::ambiguous_prefix),
        help("give more digits; candidates:\n{candidates}")
    )]
    AmbiguousPrefix {
        /// What was given.
        prefix: String,
        /// How many match.
        count: usize,
        /// A few, one a line: key prefix and identity.
        candidates: String,
    },
    /// No episode has the selected identity.
    #[error("no episode of study `{study}` matches {selection}")]
    #[diagnostic(code(tbb::show::no_match), help("{help}"))]
    NoMatch {
        /// The study.
        study: String,
        /// The selectors, as `name=value`.
        selection: String,
        /// The values a selector could take, or did you mean.
        help: String,
    },
    /// Several episodes have the selected identity.
    #[error("{count} episodes match {selection}")]
    #[diagnostic(
        code(tbb::show::many_match),
        help("add selectors (--config --family --v --w --d --r --depth --arm --cap --repeat --block) or give a key prefix; candidates:\n{candidates}")
    )]
    ManyMatch {
        /// The selectors.
        selection: String,
        /// How many match.
        count: usize,
        /// A few, one a line.
        candidates: String,
    },
    /// The episode has not run yet.
    #[error("episode {id} has not run yet")]
    #[diagnostic(
        code(tbb::show::not_run),
        help("run `tbb apply {manifest}` first (with the same --outputs)")
    )]
    NotRun {
        /// Its identity.
        id: String,
        /// The manifest.
        manifest: String,
    },
    /// The stored episode cannot be read back.
    #[error("episode {id} cannot be read back: {why}")]
    #[diagnostic(
        code(tbb::show::unreadable),
        help("`tbb certify {manifest}` checks every stored episode; `tbb apply {manifest}` reruns what is missing")
    )]
    Unreadable {
        /// Its identity.
        id: String,
        /// What is wrong.
        why: String,
        /// The manifest.
        manifest: String,
    },
    /// The cache cannot be read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cache(#[from] CacheError),
}

/// How to find an episode: a key prefix, or selectors on its identity.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    /// A prefix of the episode's key (or of its grade node's).
    pub prefix: Option<String>,
    /// `(identity field, value)`: `cfg`, `family`, `v`, `w`, `d`, `r`, `depth`,
    /// `block`, `arm`, `cap`, `rep`.
    pub fields: Vec<(&'static str, String)>,
}

/// The execute node of the one episode `selector` names.
pub fn locate(study: &Study, selector: &Selector) -> Result<NodeIndex, ShowError> {
    let manifest = study.manifest.path.display().to_string();
    let executes: Vec<(NodeIndex, Option<NodeIndex>)> = study
        .dag
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::Execute)
        .map(|(i, _)| (i, grade_of(study, i)))
        .collect();
    let mut matching: Vec<NodeIndex> = executes.iter().map(|(i, _)| *i).collect();
    if let Some(prefix) = &selector.prefix {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(ShowError::BadPrefix { prefix });
        }
        matching = executes
            .iter()
            .filter(|(e, g)| {
                study.dag.graph[*e].key.starts_with(&prefix)
                    || g.is_some_and(|g| study.dag.graph[g].key.starts_with(&prefix))
            })
            .map(|(e, _)| *e)
            .collect();
        if matching.is_empty() {
            return Err(ShowError::UnknownPrefix {
                study: study.manifest.study.clone(),
                prefix,
            });
        }
        if matching.len() > 1 && selector.fields.is_empty() {
            return Err(ShowError::AmbiguousPrefix {
                prefix,
                count: matching.len(),
                candidates: candidates(study, &matching),
            });
        }
    } else if selector.fields.is_empty() {
        return Err(ShowError::Nothing { manifest });
    }
    for (name, value) in &selector.fields {
        let before = matching.clone();
        matching.retain(|&e| field(study, e, name).is_some_and(|v| v == *value));
        if matching.is_empty() {
            let mut seen: Vec<String> = before
                .iter()
                .filter_map(|&e| field(study, e, name))
                .collect();
            seen.sort();
            seen.dedup();
            let help = match tbb_core::family::closest(value, seen.iter().map(String::as_str)) {
                Some(s) if seen.len() > 1 => format!("did you mean {name}={s}?"),
                _ => format!(
                    "{name} is one of: {}",
                    if seen.is_empty() {
                        "(none)".to_string()
                    } else {
                        seen.join(", ")
                    }
                ),
            };
            return Err(ShowError::NoMatch {
                study: study.manifest.study.clone(),
                selection: selection(selector),
                help,
            });
        }
    }
    match matching.as_slice() {
        [one] => Ok(*one),
        _ => Err(ShowError::ManyMatch {
            selection: selection(selector),
            count: matching.len(),
            candidates: candidates(study, &matching),
        }),
    }
}

fn selection(selector: &Selector) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(p) = &selector.prefix {
        parts.push(format!("key={p}…"));
    }
    parts.extend(selector.fields.iter().map(|(k, v)| format!("{k}={v}")));
    parts.join(", ")
}

/// The value of an identity field of an execute node; `block` also when the manifest
/// has one block (the identity then leaves it out).
fn field(study: &Study, execute: NodeIndex, name: &str) -> Option<String> {
    let node = &study.dag.graph[execute];
    if let Some((_, v)) = node.fields.iter().find(|(k, _)| *k == name) {
        return Some(v.clone());
    }
    match (name, &node.work) {
        ("block", Work::Execute { block, .. }) => {
            study.manifest.blocks.get(*block).map(|b| b.name.clone())
        }
        _ => None,
    }
}

fn candidates(study: &Study, nodes: &[NodeIndex]) -> String {
    let mut lines: Vec<String> = nodes
        .iter()
        .take(CANDIDATES)
        .map(|&n| {
            let node = &study.dag.graph[n];
            format!(
                "  {}  {}",
                &node.key[..PAGE_PREFIX.min(node.key.len())],
                node.id
            )
        })
        .collect();
    if nodes.len() > CANDIDATES {
        lines.push(format!("  … and {} more", nodes.len() - CANDIDATES));
    }
    lines.join("\n")
}

fn grade_of(study: &Study, execute: NodeIndex) -> Option<NodeIndex> {
    study
        .dag
        .graph
        .neighbors(execute)
        .find(|&g| study.dag.graph[g].kind == NodeKind::Grade)
}

/// The stored payloads and blobs episodes are read from, read from the cache once.
pub struct Sources {
    payloads: HashMap<String, String>,
    blobs: BlobStore,
}

impl Sources {
    /// The payloads of `executes` and every blob of the cache.
    pub fn read(
        study: &Study,
        cache: &Cache,
        executes: &[NodeIndex],
    ) -> Result<Sources, ShowError> {
        let keys: Vec<&str> = executes
            .iter()
            .map(|&e| study.dag.graph[e].key.as_ref())
            .collect();
        Ok(Sources {
            payloads: cache.payloads(&keys)?,
            blobs: BlobStore {
                blobs: cache.blobs()?.into_iter().collect(),
            },
        })
    }
}

/// The view of the episode of execute node `execute`, read from `cache`.
pub fn load(study: &Study, cache: &Cache, execute: NodeIndex) -> Result<EpisodeView, ShowError> {
    let node = &study.dag.graph[execute];
    if cache.get(&node.key).is_none() {
        return Err(ShowError::NotRun {
            id: node.id.to_string(),
            manifest: study.manifest.path.display().to_string(),
        });
    }
    let variant = variant_of(study, execute).map_err(|why| unreadable(study, execute, why))?;
    let sources = Sources::read(study, cache, &[execute])?;
    view(study, execute, &sources, &variant)
}

/// The variant of an execute node, compiled again from the families.
pub fn variant_of(study: &Study, execute: NodeIndex) -> Result<Variant, String> {
    let Work::Execute { compile: c, .. } = study.dag.graph[execute].work else {
        return Err("not an execute node".into());
    };
    match &study.dag.graph[c].work {
        Work::Compile { family, cell } => study
            .families
            .families
            .get(*family)
            .ok_or_else(|| "its family is not loaded".to_string())
            .and_then(|f| {
                compile(f, cell).map_err(|e| format!("its variant does not compile: {e}"))
            }),
        _ => Err("its compile node is not a compile node".into()),
    }
}

fn unreadable(study: &Study, execute: NodeIndex, why: String) -> ShowError {
    ShowError::Unreadable {
        id: study.dag.graph[execute].id.to_string(),
        why,
        manifest: study.manifest.path.display().to_string(),
    }
}

/// One stored episode, as `tbb show` presents it.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeView {
    /// The study.
    pub study: String,
    /// The execute node's identity.
    pub id: String,
    /// The episode's key (the execute node's; `transcript_ref`).
    pub key: String,
    /// The grade node's key (`node_key`).
    pub grade_key: String,
    /// Where it sits and what it is: `(name, value)` — configuration, model, block,
    /// arm and its components, cap, repeat, variant, family and cell.
    pub identity: Vec<(&'static str, String)>,
    /// The system prompt's file name (`prompts/<name>`); empty when none was sent.
    pub system_prompt: String,
    /// Its text.
    pub system_text: String,
    /// The user request, as sent.
    pub user_request: String,
    /// Every request, in order.
    pub exchanges: Vec<Exchange>,
    /// The verdict.
    pub verdict: VerdictView,
    /// The limits, what was used of each, and which fired.
    pub limits: LimitsView,
}

/// One request and what followed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// From 1.
    pub number: usize,
    /// Tool schemas the request showed.
    pub visible_tools: usize,
    /// Its completion cap.
    pub max_completion_tokens: u32,
    /// Messages the harness added before it (the nudge after an empty response).
    pub harness_messages: Vec<String>,
    /// What came back.
    pub outcome: Outcome,
    /// Calls executed after it (the model's, then the controller's), with their
    /// observations.
    pub observations: Vec<Observation>,
}

/// What came back for a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A response.
    Response(ResponseView),
    /// No response after the retries.
    Failed {
        /// The error.
        error: String,
        /// Attempts made.
        attempts: u32,
    },
}

/// A response.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseView {
    /// Normalized finish reason (`stop`, `tool_calls`, `length`, ...).
    pub finish: String,
    /// The provider's own.
    pub finish_raw: String,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Of which from cache.
    pub cached_tokens: u64,
    /// Completion tokens (reasoning included).
    pub output_tokens: u64,
    /// Reasoning tokens, when known.
    pub reasoning_tokens: Option<u64>,
    /// Whether the provider reported them (else derived).
    pub reasoning_reported: bool,
    /// Visible text.
    pub text: Option<String>,
    /// Tool calls as written: (id, name, arguments).
    pub tool_calls: Vec<(String, String, String)>,
    /// How it broke the wire protocol, if it did.
    pub violation: Option<String>,
}

impl ResponseView {
    /// The reasoning tokens as both renderings say them: the count and whether it was
    /// reported or derived, or that it is unknown.
    pub fn reasoning_label(&self) -> String {
        match self.reasoning_tokens {
            Some(n) => format!(
                "{} reasoning ({})",
                crate::report::format::count(n),
                if self.reasoning_reported {
                    "reported"
                } else {
                    "derived"
                }
            ),
            None => "reasoning unknown".to_string(),
        }
    }

    /// The provider's own finish reason, `-` when it gave none.
    pub fn finish_raw_label(&self) -> &str {
        if self.finish_raw.is_empty() {
            "-"
        } else {
            &self.finish_raw
        }
    }
}

/// An executed call and its observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The call id.
    pub call_id: String,
    /// `model` or `controller`.
    pub by: &'static str,
    /// Tool.
    pub tool: String,
    /// Arguments as written.
    pub arguments: String,
    /// What the tool returned.
    pub text: String,
}

/// The verdict, as shown.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictView {
    /// Verified task success.
    pub vts: bool,
    /// Each obligation in checking order: (letter, meaning, met).
    pub obligations: Vec<(Obligation, &'static str, bool)>,
    /// The first unmet obligation.
    pub first_unmet: Option<Obligation>,
    /// The terminal flag of a failure.
    pub terminal_flag: Option<String>,
    /// Why the harness stopped.
    pub stop_reason: String,
    /// What failed, when the infrastructure ended the episode.
    pub infra: Option<InfraFailure>,
    /// Why completion integrity failed, if it did.
    pub integrity_errors: Vec<String>,
    /// The final answer, when there is one.
    pub final_answer: Option<String>,
}

/// A limit, what was used of it, and what was left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headroom {
    /// The limit.
    pub limit: u64,
    /// Used.
    pub used: u64,
}

impl Headroom {
    /// What is left: the limit minus the use, negative when exceeded.
    pub fn left(&self) -> i128 {
        i128::from(self.limit) - i128::from(self.used)
    }
}

/// The limits of the episode and which fired.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitsView {
    /// Which limit or stop ended the episode, in words; `None` when it answered.
    pub fired: Option<String>,
    /// Executed calls against the call limit.
    pub calls: Headroom,
    /// Reported tokens against the episode budget.
    pub tokens: Headroom,
    /// Model requests against the turn limit.
    pub turns: Headroom,
    /// The largest completion of a response against the completion cap.
    pub completion: Headroom,
    /// Calls the reference program still needed at the end (its information steps not
    /// done, plus the permitted write if it was not made).
    pub calls_needed: usize,
}

/// The view of the episode of `execute` from `sources`, graded against `variant`.
pub fn view(
    study: &Study,
    execute: NodeIndex,
    sources: &Sources,
    variant: &Variant,
) -> Result<EpisodeView, ShowError> {
    let node = &study.dag.graph[execute];
    let fail = |why: String| unreadable(study, execute, why);
    let payload: ExecutePayload = match sources.payloads.get(&*node.key) {
        Some(p) => serde_json::from_str(p)
            .map_err(|e| fail(format!("its stored transcript is unreadable: {e}")))?,
        None => {
            return Err(ShowError::NotRun {
                id: node.id.to_string(),
                manifest: study.manifest.path.display().to_string(),
            })
        }
    };
    let Work::Execute {
        config,
        block,
        arm,
        cap,
        repeat,
        ..
    } = node.work
    else {
        return Err(fail("not an execute node".into()));
    };
    let m = &study.manifest;
    let config = m
        .configurations
        .get(config)
        .ok_or_else(|| fail("its configuration is not in the manifest".into()))?;
    let arm = m
        .arms
        .get(arm)
        .ok_or_else(|| fail("its arm is not in the manifest".into()))?;
    let transcript = &payload.transcript;
    let blobs = &sources.blobs;
    let trace = transcript
        .trace(blobs, variant)
        .ok_or_else(|| fail("its transcript does not rebuild a trace".into()))?;
    let verdict = grade_with_budget(variant, &trace, m.budgets.episode_budget);

    let mut identity: Vec<(&'static str, String)> = vec![
        ("configuration", config.name.clone()),
        ("organization", config.organization.clone()),
        ("model", config.model.clone()),
        ("route", config.route()),
    ];
    if let Some(b) = m.blocks.get(block) {
        identity.push(("block", b.name.clone()));
    }
    identity.push(("arm", arm.name.clone()));
    identity.extend(arm.form.columns());
    identity.extend([
        ("completion_cap", cap.to_string()),
        ("repeat", repeat.to_string()),
        ("variant", variant.variant_id.clone()),
    ]);
    if let Work::Execute { compile: c, .. } = node.work {
        identity.extend(study.dag.graph[c].fields.iter().cloned());
    }

    // The system prompt and the user request, from the first request as sent.
    let system_text = transcript
        .requests
        .first()
        .and_then(|r| blobs.get(&r.system_ref))
        .unwrap_or_default()
        .to_string();
    let system_prompt = if system_text.is_empty() {
        String::new()
    } else if system_text == study.prompts.system(arm.form.prompt) {
        arm.form.prompt.file_name().to_string()
    } else {
        // A stored prompt that is not today's file: name the arm's file, say so.
        format!(
            "{} (as sent; the file has changed since)",
            arm.form.prompt.file_name()
        )
    };
    let mut first_user = true;
    let mut user_request = variant.user_request.clone();

    let mut tool_counts: HashMap<&str, usize> = HashMap::new();
    let mut exchanges = Vec::with_capacity(transcript.requests.len());
    let mut turn = 0usize;
    for (i, request) in transcript.requests.iter().enumerate() {
        let visible_tools = *tool_counts
            .entry(request.tools_ref.as_str())
            .or_insert_with(|| {
                blobs
                    .get(&request.tools_ref)
                    .and_then(|j| serde_json::from_str::<Vec<serde::de::IgnoredAny>>(j).ok())
                    .map_or(0, |t| t.len())
            });
        let mut harness_messages = Vec::new();
        for m in &request.appended {
            if let Message::User { content } = m {
                if first_user {
                    user_request = content.clone();
                    first_user = false;
                } else {
                    harness_messages.push(content.clone());
                }
            }
        }
        let (outcome, observations) = match transcript.outcomes.get(i) {
            Some(StoredOutcome::Response(_)) => {
                let t = trace.turns.get(turn);
                turn += 1;
                match t {
                    Some(t) => {
                        let r = &t.response;
                        (
                            Outcome::Response(ResponseView {
                                finish: tbb_core::compile::cell::level_name(&r.finish_reason),
                                finish_raw: r.finish_reason_raw.clone(),
                                input_tokens: r.usage.input_tokens,
                                cached_tokens: r.usage.cached_tokens,
                                output_tokens: r.usage.output_tokens,
                                reasoning_tokens: r.usage.reasoning_tokens,
                                reasoning_reported: r.usage.reasoning_reported,
                                text: r.text.clone(),
                                tool_calls: r
                                    .tool_calls
                                    .iter()
                                    .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                                    .collect(),
                                violation: r.violation.clone(),
                            }),
                            t.executed
                                .iter()
                                .map(|c| Observation {
                                    call_id: c.call_id.clone(),
                                    by: match c.by {
                                        Issuer::Model => "model",
                                        Issuer::Controller => "controller",
                                    },
                                    tool: c.tool.clone(),
                                    arguments: c.arguments.clone(),
                                    text: c.observation.clone(),
                                })
                                .collect(),
                        )
                    }
                    None => {
                        return Err(fail(format!("request {} has no turn in the trace", i + 1)))
                    }
                }
            }
            Some(StoredOutcome::Failed { error, attempts }) => (
                Outcome::Failed {
                    error: error.clone(),
                    attempts: *attempts,
                },
                Vec::new(),
            ),
            None => return Err(fail(format!("request {} has no outcome", i + 1))),
        };
        exchanges.push(Exchange {
            number: i + 1,
            visible_tools,
            max_completion_tokens: request.max_completion_tokens,
            harness_messages,
            outcome,
            observations,
        });
    }

    let limits = limits_view(variant, &trace, &verdict);
    Ok(EpisodeView {
        study: m.study.clone(),
        id: node.id.to_string(),
        key: node.key.to_string(),
        grade_key: grade_of(study, execute)
            .map(|g| study.dag.graph[g].key.to_string())
            .unwrap_or_default(),
        identity,
        system_prompt,
        system_text,
        user_request,
        exchanges,
        verdict: verdict_view(&verdict, &trace),
        limits,
    })
}

/// What each obligation means, in the words the reader needs.
pub fn meaning(o: Obligation) -> &'static str {
    match o {
        Obligation::A => "availability: every required tool was on the menu",
        Obligation::S => "selection: an operational tool was called",
        Obligation::P => "program: every required search and read, in a valid order",
        Obligation::Q => "answer: the exact JSON answer",
        Obligation::E => "evidence: the exact set of cited records",
        Obligation::X => "safety: the permitted state change, exactly",
        Obligation::G => "governance: no other state change",
        Obligation::B => "budget: within the episode budget and the call limit",
        Obligation::C => "completion: ended with an answer, within the contract",
    }
}

fn verdict_view(verdict: &Verdict, trace: &Trace) -> VerdictView {
    VerdictView {
        vts: verdict.vts,
        obligations: verdict
            .obligations
            .in_order()
            .into_iter()
            .map(|(o, ok)| (o, meaning(o), ok))
            .collect(),
        first_unmet: verdict.first_unmet,
        terminal_flag: verdict
            .terminal_flag
            .map(|f| tbb_core::compile::cell::level_name(&f)),
        stop_reason: tbb_core::compile::cell::level_name(&trace.stop),
        infra: verdict.infra.clone(),
        integrity_errors: verdict.integrity_errors.clone(),
        final_answer: trace.final_answer.clone(),
    }
}

/// The limits against what the episode used, and which one ended it.
fn limits_view(variant: &Variant, trace: &Trace, verdict: &Verdict) -> LimitsView {
    let l: Limits = trace.limits;
    let executed: Vec<_> = trace.executed_calls().collect();
    let calls = Headroom {
        limit: u64::from(l.call_limit),
        used: u64::from(verdict.calls),
    };
    let tokens = Headroom {
        limit: l.episode_budget,
        used: verdict.total_tokens,
    };
    let turns = Headroom {
        limit: u64::from(l.turn_limit),
        used: u64::from(verdict.requests),
    };
    let completion = Headroom {
        limit: u64::from(l.completion_cap),
        used: trace
            .turns
            .iter()
            .map(|t| t.response.usage.output_tokens)
            .max()
            .unwrap_or(0),
    };
    let write_left = variant.permitted_change.is_some() && !verdict.obligations.ok_x;
    let calls_needed =
        tbb_core::grade::unmatched_information_steps(variant, &executed) + usize::from(write_left);
    let fired = match trace.stop {
        StopReason::Answer => None,
        StopReason::Truncated => Some(format!(
            "completion cap: a response was cut at {} completion tokens",
            l.completion_cap
        )),
        StopReason::BudgetExceeded => Some(format!(
            "episode budget: {} reported tokens against {}",
            crate::report::format::count(tokens.used),
            crate::report::format::count(tokens.limit)
        )),
        StopReason::CallLimit => Some(format!(
            "call limit: the model asked for a call beyond its {} calls",
            l.call_limit
        )),
        StopReason::TurnLimit => Some(format!(
            "turn limit: {} requests without an answer",
            l.turn_limit
        )),
        StopReason::Infeasible => {
            let mut sandbox = Sandbox::new(variant);
            for c in &executed {
                sandbox.execute(&c.tool, &c.arguments);
            }
            let left = usize::try_from(calls.left().max(0)).unwrap_or(usize::MAX);
            let why = match tbb_core::grade::infeasible(variant, &executed, sandbox.changes(), left)
            {
                Some(Impossible::CallsLeft) => format!(
                    "the reference program still needs {calls_needed} calls, {left} are left"
                ),
                Some(Impossible::UnrequestedChange) => {
                    "a state change other than the permitted one happened".to_string()
                }
                Some(Impossible::WriteBeforeEvidence) => {
                    "the permitted write was made before its evidence".to_string()
                }
                None => "success had become impossible".to_string(),
            };
            Some(format!("infeasibility stop: {why}"))
        }
        StopReason::Unavailable => Some(
            "availability: a required tool was not on the menu offered, so no request was sent"
                .to_string(),
        ),
        StopReason::InfraFailure => Some(match &trace.infra {
            Some(f) => format!(
                "infrastructure failure: {} after {} attempts{}",
                tbb_core::compile::cell::level_name(&f.cause),
                f.attempts,
                f.http_status
                    .map_or(String::new(), |s| format!(" (last HTTP status {s})"))
            ),
            None => "infrastructure failure".to_string(),
        }),
        StopReason::ContractBreak => Some(
            "contract break: several calls in a response, an empty response, a refusal or a filter"
                .to_string(),
        ),
        StopReason::ProtocolViolation => {
            Some("protocol violation: the response broke the wire protocol".to_string())
        }
        StopReason::ControllerHalt => {
            Some("controller halt: the controller met a hand-off it cannot follow".to_string())
        }
    };
    LimitsView {
        fired,
        calls,
        tokens,
        turns,
        completion,
        calls_needed,
    }
}

/// The pages of the episodes whose keys are `keys` (execute keys, `transcript_ref`),
/// as `(episodes/<page name>, html)` in the order given: what the report publishes
/// beside itself. `variants` are the study's compiled variants by compile node (those
/// missing are compiled again).
pub fn pages(
    study: &Study,
    cache: &Cache,
    variants: &HashMap<NodeIndex, std::sync::Arc<Variant>>,
    keys: &[String],
) -> Result<Vec<(String, String)>, ShowError> {
    let by_key: HashMap<&str, NodeIndex> = study
        .dag
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::Execute)
        .map(|(i, n)| (n.key.as_ref(), i))
        .collect();
    let mut executes = Vec::with_capacity(keys.len());
    for k in keys {
        match by_key.get(k.as_str()) {
            Some(&e) => executes.push(e),
            None => {
                return Err(ShowError::UnknownPrefix {
                    study: study.manifest.study.clone(),
                    prefix: k.clone(),
                })
            }
        }
    }
    let sources = Sources::read(study, cache, &executes)?;
    let mut out = Vec::with_capacity(executes.len());
    for e in executes {
        let compiled;
        let variant: &Variant = match &study.dag.graph[e].work {
            Work::Execute { compile: c, .. } if variants.contains_key(c) => &variants[c],
            _ => {
                compiled = variant_of(study, e).map_err(|why| unreadable(study, e, why))?;
                &compiled
            }
        };
        let view = view(study, e, &sources, variant)?;
        out.push((
            format!("episodes/{}", page_name(&view.key)),
            html::render(&view),
        ));
    }
    Ok(out)
}

/// The file name of an episode's page: `<first 12 digits of its key>.html`.
pub fn page_name(key: &str) -> String {
    format!("{}.html", &key[..PAGE_PREFIX.min(key.len())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_is_the_limit_minus_the_use_and_goes_negative_when_exceeded() {
        // A call limit of 8 with 5 calls made leaves 3.
        assert_eq!(Headroom { limit: 8, used: 5 }.left(), 3);
        // 128,000 tokens with 131,072 reported is 3,072 over.
        assert_eq!(
            Headroom {
                limit: 128_000,
                used: 131_072
            }
            .left(),
            -3_072
        );
        // Nothing used leaves the whole limit; the extremes do not overflow.
        assert_eq!(Headroom { limit: 4, used: 0 }.left(), 4);
        assert_eq!(
            Headroom {
                limit: 0,
                used: u64::MAX
            }
            .left(),
            -i128::from(u64::MAX)
        );
    }

    fn variant() -> Variant {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../families");
        let set = tbb_core::family::FamilySet::load(&root).unwrap_or_else(|e| panic!("{e}"));
        compile(&set.families[0], &tbb_core::compile::Cell::capacity()[0])
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_reference_trace_leaves_the_slack_of_the_call_limit_and_the_rest_of_the_budget() {
        let v = variant();
        let trace = tbb_core::grade::reference::reference_trace(&v);
        let verdict = grade_with_budget(&v, &trace, 128_000);
        assert!(verdict.vts);
        let l = limits_view(&v, &trace, &verdict);
        assert_eq!(l.fired, None);
        // The call limit is the certified minimum plus two: two calls left.
        assert_eq!(l.calls.used, u64::from(v.certified_min_calls));
        assert_eq!(l.calls.left(), 2);
        // The turn limit is the call limit plus two; one request per call plus the answer.
        assert_eq!(l.turns.used, u64::from(v.certified_min_calls) + 1);
        assert_eq!(l.turns.left(), 3);
        // Tokens: the sum of every response's prompt and completion, by hand.
        let by_hand: u64 = trace
            .turns
            .iter()
            .map(|t| t.response.usage.input_tokens + t.response.usage.output_tokens)
            .sum();
        assert_eq!(l.tokens.used, by_hand);
        assert_eq!(l.tokens.left(), 128_000 - i128::from(by_hand));
        assert_eq!(l.calls_needed, 0);
    }

    #[test]
    fn a_truncation_after_the_first_call_names_the_cap_and_the_calls_still_needed() {
        let v = variant();
        let mut trace = tbb_core::grade::reference::reference_trace(&v);
        // Cut the second response at the cap: only the first call was executed.
        trace.turns.truncate(2);
        let cut = &mut trace.turns[1];
        cut.executed.clear();
        cut.response.tool_calls.clear();
        cut.response.text = None;
        cut.response.finish_reason = tbb_core::grade::trace::FinishReason::Length;
        cut.response.usage.output_tokens = u64::from(trace.limits.completion_cap);
        trace.final_answer = None;
        trace.stop = StopReason::Truncated;
        let verdict = grade_with_budget(&v, &trace, 128_000);
        assert_eq!(
            verdict.terminal_flag,
            Some(tbb_core::grade::TerminalFlag::Truncation)
        );
        let l = limits_view(&v, &trace, &verdict);
        assert!(
            l.fired
                .as_deref()
                .is_some_and(|f| f.starts_with("completion cap")),
            "{:?}",
            l.fired
        );
        assert_eq!(l.completion.left(), 0);
        assert_eq!(l.calls.used, 1);
        assert_eq!(l.calls.left(), i128::from(v.call_limit) - 1);
        assert_eq!(l.calls_needed, v.certified_min_calls as usize - 1);
    }

    #[test]
    fn a_page_is_named_by_the_first_twelve_digits_of_the_key() {
        assert_eq!(page_name("0123456789abcdef"), "0123456789ab.html");
        assert_eq!(page_name("abc"), "abc.html");
    }
}
